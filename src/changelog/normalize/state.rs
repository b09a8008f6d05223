//! The per-key state of ChangelogNormalize and how one batch of delta rows folds into it
//! (semantics.md §7.6, extended to the table's merge engine).
//!
//! Keys and values are kept in Arrow's row format: one `OwnedRow` for the primary key, one for
//! the whole row (compared byte-wise for "unchanged"), and one for the `sequence.field` columns.
//! Every row's bytes are accounted to the DataFusion memory pool.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray, UInt32Array};
use arrow::compute::{interleave, take};
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::{exec_datafusion_err, HashMap, Result};
use datafusion::execution::memory_pool::MemoryReservation;

/// How rows fold, from the table's options.
#[derive(Debug, Clone)]
pub(crate) struct FoldRules {
    /// `merge-engine = first-row`: a key keeps its first row forever.
    pub(crate) first_row: bool,
    /// `ignore-delete` (and aliases): retractions change nothing.
    pub(crate) ignore_delete: bool,
    /// Positions of the `sequence.field` columns among the table columns.
    pub(crate) sequence_columns: Vec<usize>,
}

struct Stored {
    values: OwnedRow,
    sequence: Option<OwnedRow>,
}

/// Where an output row's values come from.
#[derive(Clone, Copy)]
enum Source {
    /// The input row at this index.
    Input(usize),
    /// The `n`-th before-image collected for this batch.
    Before(usize),
}

/// State: primary key -> the row the table holds for it.
pub(crate) struct NormalizeState {
    table: String,
    /// Positions of the key columns among the table columns.
    key_columns: Vec<usize>,
    rules: FoldRules,
    keys: RowConverter,
    values: RowConverter,
    sequence: Option<RowConverter>,
    /// Key row bytes -> stored row.
    rows: HashMap<Box<[u8]>, Stored>,
    /// Bytes the state holds; the reservation follows it after every batch.
    bytes: usize,
    reservation: MemoryReservation,
    /// Output schema: `rowkind`, the table columns, `snapshot_id`.
    output: SchemaRef,
}

impl NormalizeState {
    pub(crate) fn try_new(
        table: &str,
        output: SchemaRef,
        key_columns: Vec<usize>,
        rules: FoldRules,
        reservation: MemoryReservation,
    ) -> Result<Self> {
        let field = |i: usize| SortField::new(output.field(i + 1).data_type().clone());
        let table_columns = output.fields().len() - 2;
        let sequence = if rules.sequence_columns.is_empty() {
            None
        } else {
            Some(RowConverter::new(
                rules.sequence_columns.iter().map(|&c| field(c)).collect(),
            )?)
        };
        Ok(NormalizeState {
            table: table.to_string(),
            keys: RowConverter::new(key_columns.iter().map(|&c| field(c)).collect())?,
            values: RowConverter::new((0..table_columns).map(field).collect())?,
            sequence,
            key_columns,
            rules,
            rows: HashMap::default(),
            bytes: 0,
            reservation,
            output,
        })
    }

    /// Seeds the state with merged rows (table columns only); emits nothing.
    pub(crate) fn seed(&mut self, batch: &RecordBatch) -> Result<()> {
        let columns = batch.columns();
        let keys = self.convert_keys(columns)?;
        let values = self.values.convert_columns(columns)?;
        let sequence = self.convert_sequence(columns)?;
        for row in 0..batch.num_rows() {
            let stored = Stored {
                values: values.row(row).owned(),
                sequence: sequence.as_ref().map(|s| s.row(row).owned()),
            };
            self.insert(keys.row(row).as_ref(), stored);
        }
        self.account()
    }

    /// Folds one batch of delta rows (`rowkind`, table columns, `snapshot_id`) and returns the
    /// changes they make, if any.
    pub(crate) fn fold(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        let kinds = batch.column(0).as_string::<i32>();
        let table_columns: Vec<ArrayRef> = batch.columns()[1..batch.num_columns() - 1].to_vec();
        let keys = self.convert_keys(&table_columns)?;
        let values = self.values.convert_columns(&table_columns)?;
        let sequence = self.convert_sequence(&table_columns)?;

        let mut out: Vec<(Source, &'static str, usize)> = Vec::new();
        let mut before: Vec<OwnedRow> = Vec::new();
        for row in 0..batch.num_rows() {
            let key = keys.row(row);
            let new_sequence = sequence.as_ref().map(|s| s.row(row));
            let retract = matches!(kinds.value(row), "-U" | "-D");
            let older = |stored: &Stored| match (&stored.sequence, new_sequence) {
                (Some(old), Some(new)) => new < old.row(),
                _ => false,
            };
            if retract {
                if self.rules.ignore_delete {
                    continue;
                }
                let Some(stored) = self.rows.get(key.as_ref()) else {
                    continue;
                };
                if older(stored) {
                    // A late retraction loses to the stored row: nothing changes.
                    continue;
                }
                let stored = self.remove(key.as_ref());
                before.push(stored.values);
                out.push((Source::Before(before.len() - 1), "-D", row));
                continue;
            }
            let new_values = values.row(row);
            match self.rows.get(key.as_ref()) {
                None => {
                    out.push((Source::Input(row), "+I", row));
                }
                Some(stored) => {
                    if self.rules.first_row {
                        continue;
                    }
                    // A late row (`sequence.field`) loses and an identical row changes nothing:
                    // no update is emitted for either (Flink's rule for unchanged rows).
                    if older(stored) || stored.values.row() == new_values {
                        continue;
                    }
                    before.push(stored.values.clone());
                    out.push((Source::Before(before.len() - 1), "-U", row));
                    out.push((Source::Input(row), "+U", row));
                }
            }
            let stored = Stored {
                values: new_values.owned(),
                sequence: new_sequence.map(|s| s.owned()),
            };
            self.insert(key.as_ref(), stored);
        }
        self.account()?;
        if out.is_empty() {
            return Ok(None);
        }
        self.assemble(batch, &table_columns, before, &out).map(Some)
    }

    /// Output rows from input rows and before-images, gathered with `interleave`.
    fn assemble(
        &self,
        batch: &RecordBatch,
        table_columns: &[ArrayRef],
        before: Vec<OwnedRow>,
        out: &[(Source, &'static str, usize)],
    ) -> Result<RecordBatch> {
        let before_columns = self.values.convert_rows(before.iter().map(|r| r.row()))?;
        let indices: Vec<(usize, usize)> = out
            .iter()
            .map(|(source, _, _)| match source {
                Source::Input(i) => (0, *i),
                Source::Before(i) => (1, *i),
            })
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.output.fields().len());
        columns.push(Arc::new(StringArray::from_iter_values(
            out.iter().map(|(_, k, _)| *k),
        )));
        for (input, prior) in table_columns.iter().zip(&before_columns) {
            columns.push(interleave(&[input.as_ref(), prior.as_ref()], &indices)?);
        }
        // A change belongs to the snapshot of the delta row that caused it.
        let causes = UInt32Array::from_iter_values(out.iter().map(|(_, _, cause)| *cause as u32));
        let snapshot_ids = batch.column(batch.num_columns() - 1);
        let ids = take(snapshot_ids.as_ref(), &causes, None)?;
        columns.push(ids);
        Ok(RecordBatch::try_new(Arc::clone(&self.output), columns)?)
    }

    fn convert_keys(&self, columns: &[ArrayRef]) -> Result<arrow::row::Rows> {
        let keys: Vec<ArrayRef> = self
            .key_columns
            .iter()
            .map(|&c| Arc::clone(&columns[c]))
            .collect();
        Ok(self.keys.convert_columns(&keys)?)
    }

    fn convert_sequence(&self, columns: &[ArrayRef]) -> Result<Option<arrow::row::Rows>> {
        let Some(converter) = &self.sequence else {
            return Ok(None);
        };
        let seq: Vec<ArrayRef> = self
            .rules
            .sequence_columns
            .iter()
            .map(|&c| Arc::clone(&columns[c]))
            .collect();
        Ok(Some(converter.convert_columns(&seq)?))
    }

    /// Stores `stored` for `key`; an existing key keeps its allocation.
    fn insert(&mut self, key: &[u8], stored: Stored) {
        let size = stored_size(key.len(), &stored);
        match self.rows.get_mut(key) {
            Some(slot) => {
                let old = std::mem::replace(slot, stored);
                self.bytes -= stored_size(key.len(), &old);
            }
            None => {
                self.rows.insert(key.into(), stored);
            }
        }
        self.bytes += size;
    }

    fn remove(&mut self, key: &[u8]) -> Stored {
        let stored = self.rows.remove(key).expect("the key is present");
        self.bytes -= stored_size(key.len(), &stored);
        stored
    }

    /// Brings the memory reservation to the state's size (once per batch, not per row).
    fn account(&mut self) -> Result<()> {
        let reserved = self.reservation.size();
        if self.bytes > reserved {
            self.reservation.try_grow(self.bytes - reserved).map_err(|e| {
                exec_datafusion_err!(
                    "ChangelogNormalize of table {} needs more memory for its per-key state than the memory pool grants ({e}); narrow the snapshot range or raise the memory limit",
                    self.table
                )
            })?;
        } else {
            self.reservation.shrink(reserved - self.bytes);
        }
        Ok(())
    }
}

/// Bytes a stored key takes: its row bytes plus the map entry.
fn stored_size(key_len: usize, stored: &Stored) -> usize {
    key_len
        + stored.values.as_ref().len()
        + stored.sequence.as_ref().map_or(0, |s| s.as_ref().len())
        + std::mem::size_of::<(Box<[u8]>, Stored)>()
}
