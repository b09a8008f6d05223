//! The write buffer of one (partition, bucket): rows in arrival order with their sequence
//! numbers and kinds, sorted by key and folded per key by the table's merge engine when
//! flushed into one level-0 file (semantics.md §3.4).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, Int8Array, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType as ArrowType, Field, Int64Type, Int8Type, Schema};
use datafusion::common::Result;

use crate::io::DataFileRows;
use crate::merge::gather::gather;
use crate::merge::reduce::{fold_batches, GroupReducer};
use crate::merge::row_sort::{stable_key_order, SortKeys};
use crate::spec::{SEQUENCE_NUMBER, VALUE_KIND};

/// Buffered rows of one bucket.
#[derive(Debug)]
pub(crate) struct BucketBuffer {
    batches: Vec<RecordBatch>,
    seqs: Vec<ArrayRef>,
    kinds: Vec<ArrayRef>,
    rows: usize,
    bytes: usize,
}

impl BucketBuffer {
    pub(crate) fn new() -> Self {
        BucketBuffer {
            batches: vec![],
            seqs: vec![],
            kinds: vec![],
            rows: 0,
            bytes: 0,
        }
    }

    pub(crate) fn push(&mut self, batch: RecordBatch, seqs: Int64Array, kinds: Int8Array) {
        self.rows += batch.num_rows();
        self.bytes +=
            batch.get_array_memory_size() + seqs.get_array_memory_size() + kinds.get_array_memory_size();
        self.batches.push(batch);
        self.seqs.push(Arc::new(seqs));
        self.kinds.push(Arc::new(kinds));
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Takes the buffered rows, leaving the buffer empty.
    pub(crate) fn take(&mut self) -> BucketBuffer {
        std::mem::replace(self, BucketBuffer::new())
    }

    /// Rows for a primary-key file: sorted by key, one row per key, the records of a key
    /// folded by the table's merge engine (`reducer`, over the layout table columns +
    /// `_SEQUENCE_NUMBER` + `_VALUE_KIND`); a key with one record keeps it unchanged.
    pub(crate) fn into_pk_rows(
        self,
        key_columns: &[usize],
        reducer: &dyn GroupReducer,
    ) -> Result<Option<DataFileRows>> {
        let Some(batches) = self.with_sequences_and_kinds()? else {
            return Ok(None);
        };
        let value_count = batches[0].num_columns() - 2;
        let folded = fold_batches(&batches, key_columns, value_count + 1, reducer)?;
        Ok(Some(split_sequences_and_kinds(folded)?))
    }

    /// The raw records for an `input` changelog file (semantics.md §6.2): every buffered
    /// record with its own kind, sorted by key (a stable sort keeps each key's records in
    /// arrival, i.e. sequence, order).
    pub(crate) fn input_changelog_rows(&self, key_columns: &[usize]) -> Result<Option<DataFileRows>> {
        let Some(batches) = self.with_sequences_and_kinds()? else {
            return Ok(None);
        };
        let order = stable_key_order(&SortKeys::of_batches(&batches, key_columns)?);
        let sorted = gather(&batches.iter().collect::<Vec<_>>(), order)?;
        Ok(Some(split_sequences_and_kinds(sorted)?))
    }

    /// Each buffered batch with its `_SEQUENCE_NUMBER` and `_VALUE_KIND` columns appended
    /// (no copy of the rows); `None` when the buffer is empty.
    fn with_sequences_and_kinds(&self) -> Result<Option<Vec<RecordBatch>>> {
        let Some(first) = self.batches.first() else {
            return Ok(None);
        };
        let mut fields: Vec<Field> = first
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false));
        fields.push(Field::new(VALUE_KIND, ArrowType::Int8, false));
        let schema = Arc::new(Schema::new(fields));
        let batches = self
            .batches
            .iter()
            .zip(self.seqs.iter().zip(&self.kinds))
            .map(|(batch, (seqs, kinds))| {
                let mut columns = batch.columns().to_vec();
                columns.extend([Arc::clone(seqs), Arc::clone(kinds)]);
                RecordBatch::try_new(Arc::clone(&schema), columns)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Some(batches))
    }

    /// Rows for an append file, in arrival order.
    pub(crate) fn into_append_rows(self) -> Result<Option<DataFileRows>> {
        let Some(first) = self.batches.first() else {
            return Ok(None);
        };
        let values = concat_batches(&first.schema(), &self.batches)?;
        Ok(Some(DataFileRows { values, kv: None }))
    }
}

/// Table columns, then `_SEQUENCE_NUMBER` and `_VALUE_KIND` split off as a file's rows.
fn split_sequences_and_kinds(rows: RecordBatch) -> Result<DataFileRows> {
    let value_count = rows.num_columns() - 2;
    let seqs = rows.column(value_count).as_primitive::<Int64Type>().clone();
    let kinds = rows.column(value_count + 1).as_primitive::<Int8Type>().clone();
    Ok(DataFileRows {
        values: rows.project(&(0..value_count).collect::<Vec<_>>())?,
        kv: Some((seqs, kinds)),
    })
}
