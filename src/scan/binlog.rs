//! Row shaping for `$binlog` (semantics.md §7.3): every value becomes an array.
//!
//! * Batch reads wrap each value in a one-element array: `[v]`.
//! * Incremental reads pack an update: a `-U` row and the row right after it (expected to be
//!   its `+U`) become one row `[before, after]` with the second row's kind, as Java's
//!   `PackChangelogReader` does. A `-U` that ends its split stays `-U [v]`. Pairs may straddle
//!   batches: the [`ChangelogPacker`] carries one pending `-U` row to the next batch.
//!
//! Arrays are built a batch at a time: one `interleave` per column over the pending row and
//! the batch, plus an offsets buffer.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::OffsetBuffer;
use arrow::compute::interleave;
use arrow::datatypes::{DataType, Field, Int8Type};
use datafusion::common::Result;

use super::exec::ScanContext;
use super::stream::rowkind_strings;
use crate::spec::row_kind;

/// The `$binlog` type of a column of type `data_type`: an array with nullable elements.
pub(crate) fn list_type(data_type: &DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(data_type.clone(), true)))
}

/// `[v]` for every value of `column` (zero-copy: the column becomes the list values).
pub(crate) fn single_value_lists(column: &ArrayRef) -> ArrayRef {
    let field = Arc::new(Field::new_list_field(column.data_type().clone(), true));
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(1, column.len()));
    Arc::new(ListArray::new(field, offsets, Arc::clone(column), None))
}

/// Packs `-U`/`+U` pairs of one split into `$binlog` rows (shaped output batches).
pub(crate) struct ChangelogPacker {
    ctx: Arc<ScanContext>,
    /// A `-U` row (one-row slice in the read layout) waiting for the row after it.
    pending: Option<RecordBatch>,
}

impl ChangelogPacker {
    pub(crate) fn new(ctx: Arc<ScanContext>) -> Self {
        ChangelogPacker { ctx, pending: None }
    }

    /// Packs the rows of `batch` (read layout) after the pending row; None when every row is
    /// held back (a lone trailing `-U`).
    pub(crate) fn pack(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        let pending = self.pending.take();
        let sources: Vec<&RecordBatch> = pending.iter().chain(std::iter::once(batch)).collect();
        let elements: Vec<(usize, usize)> = sources
            .iter()
            .enumerate()
            .flat_map(|(s, b)| (0..b.num_rows()).map(move |r| (s, r)))
            .collect();
        let kinds: Vec<i8> = sources.iter().flat_map(|b| self.kinds(b)).collect();
        let mut indices = Vec::with_capacity(elements.len());
        let mut lengths = Vec::with_capacity(elements.len());
        let mut out_kinds = Vec::with_capacity(elements.len());
        let mut i = 0;
        while i < elements.len() {
            if kinds[i] == row_kind::UPDATE_BEFORE {
                if i + 1 == elements.len() {
                    let (s, r) = elements[i];
                    self.pending = Some(sources[s].slice(r, 1));
                    break;
                }
                indices.extend_from_slice(&elements[i..i + 2]);
                lengths.push(2);
                out_kinds.push(kinds[i + 1]);
                i += 2;
            } else {
                indices.push(elements[i]);
                lengths.push(1);
                out_kinds.push(kinds[i]);
                i += 1;
            }
        }
        if lengths.is_empty() {
            return Ok(None);
        }
        self.build(&sources, &indices, lengths, out_kinds).map(Some)
    }

    /// Ends the split: a held-back `-U` is output alone.
    pub(crate) fn finish(&mut self) -> Result<Option<RecordBatch>> {
        let Some(pending) = self.pending.take() else {
            return Ok(None);
        };
        let kinds = self.kinds(&pending);
        single_row_lists(&self.ctx, &pending, kinds).map(Some)
    }

    fn kinds(&self, batch: &RecordBatch) -> Vec<i8> {
        if self.ctx.layout.with_system_columns {
            let k = batch
                .column(self.ctx.layout.kind_index())
                .as_primitive::<Int8Type>();
            k.values().to_vec()
        } else {
            vec![row_kind::INSERT; batch.num_rows()]
        }
    }

    fn build(
        &self,
        sources: &[&RecordBatch],
        indices: &[(usize, usize)],
        lengths: Vec<usize>,
        kinds: Vec<i8>,
    ) -> Result<RecordBatch> {
        let rows = lengths.len();
        let offsets = OffsetBuffer::from_lengths(lengths);
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.ctx.output_schema.fields().len());
        if self.ctx.with_rowkind {
            columns.push(rowkind_strings(kinds.into_iter()));
        }
        for c in &self.ctx.output_columns {
            let arrays: Vec<&dyn Array> = sources.iter().map(|b| b.column(*c).as_ref()).collect();
            let values = interleave(&arrays, indices)?;
            let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
            columns.push(Arc::new(ListArray::new(field, offsets.clone(), values, None)));
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.ctx.output_schema),
            columns,
            &options,
        )?)
    }
}

/// `[v]` rows of `batch` with the given kinds.
fn single_row_lists(ctx: &ScanContext, batch: &RecordBatch, kinds: Vec<i8>) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(ctx.output_schema.fields().len());
    if ctx.with_rowkind {
        columns.push(rowkind_strings(kinds.into_iter()));
    }
    columns.extend(
        ctx.output_columns
            .iter()
            .map(|c| single_value_lists(batch.column(*c))),
    );
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(&ctx.output_schema),
        columns,
        &options,
    )?)
}
