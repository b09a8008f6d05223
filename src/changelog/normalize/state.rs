//! The per-key state of ChangelogNormalize and how one batch of delta rows folds into it
//! (semantics.md §7.6, extended to the table's merge engine).
//!
//! Keys and values are kept in Arrow's row format: one `OwnedRow` for the primary key, one for
//! the whole row (compared byte-wise for "unchanged"), and one for the `sequence.field` columns.
//! Every row's bytes are accounted to the DataFusion memory pool. When the pool refuses more,
//! the whole in-memory state is written to a B-tree on local disk ([`super::spill`]) and
//! memory starts empty again; before a batch is folded, its keys that are on disk and not in
//! memory are read back. Memory stays within the pool (plus the spill's fixed page cache).
//!
//! Deduplicate and first-row decide from the stored row and the delta row alone. Partial-update
//! and aggregation merge values: each delta row is folded into the stored row of its key by the
//! table's own reducer ([`crate::merge::reduce`]), the stored row taking the place of the older
//! record, so the changes are those a lookup producer derives from the same rows. Rows of one
//! batch are folded in waves (the n-th row of every key in wave n), one reducer call per wave.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int64Array, Int8Array, RecordBatch, StringArray, UInt32Array};
use arrow::compute::{interleave, take};
use arrow::datatypes::{DataType, Field, Int8Type, Schema, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::hash_map::Entry;
use datafusion::common::{exec_datafusion_err, HashMap, HashSet, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::memory_pool::MemoryReservation;

use super::spill::{decode_value, encode_value, SpilledState};

use crate::merge::engine::is_retract;
use crate::merge::reduce::GroupReducer;
use crate::spec::{row_kind, SEQUENCE_NUMBER, VALUE_KIND};

/// How rows fold, from the table's options.
#[derive(Debug, Clone)]
pub(crate) struct FoldRules {
    /// `merge-engine = first-row`: a key keeps its first row forever.
    pub(crate) first_row: bool,
    /// `ignore-delete` (and aliases): retractions change nothing.
    pub(crate) ignore_delete: bool,
    /// Positions of the `sequence.field` columns among the table columns (deduplicate and
    /// first-row; a reducer orders by them itself).
    pub(crate) sequence_columns: Vec<usize>,
    /// The table's reducer, for engines that merge values (partial-update, aggregation); its
    /// layout is the table columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`.
    pub(crate) reducer: Option<Arc<dyn GroupReducer>>,
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
    /// The `n`-th merged after-image collected for this batch.
    After(usize),
}

/// Output rows of one batch: where each comes from, its row kind and the input row that caused
/// it, plus the before- and after-images they refer to.
#[derive(Default)]
struct Changes {
    out: Vec<(Source, &'static str, usize)>,
    before: Vec<OwnedRow>,
    after: Vec<OwnedRow>,
}

impl Changes {
    fn input(&mut self, row: usize, kind: &'static str) {
        self.out.push((Source::Input(row), kind, row));
    }

    fn before(&mut self, values: OwnedRow, kind: &'static str, cause: usize) {
        self.before.push(values);
        self.out
            .push((Source::Before(self.before.len() - 1), kind, cause));
    }

    fn after(&mut self, values: OwnedRow, kind: &'static str, cause: usize) {
        self.after.push(values);
        self.out.push((Source::After(self.after.len() - 1), kind, cause));
    }
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
    /// Key row bytes -> stored row (the state, or with a spill its most recent part).
    rows: HashMap<Box<[u8]>, Stored>,
    /// Keys removed since the last spill that the spill may still hold.
    gone: HashSet<Box<[u8]>>,
    /// Keys read back from the spill and unchanged since: a spill need not write them again.
    clean: HashSet<Box<[u8]>>,
    /// Bytes `rows`, `gone` and `clean` hold; the reservation follows it after every batch.
    bytes: usize,
    reservation: MemoryReservation,
    /// Where the state spills when the pool refuses; `None` keeps it in memory or fails.
    disk: Option<Arc<DiskManager>>,
    spilled: Option<SpilledState>,
    /// Output schema: `rowkind`, the table columns, `snapshot_id`.
    output: SchemaRef,
    /// The reducer's layout: table columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`.
    merge_layout: SchemaRef,
}

impl NormalizeState {
    pub(crate) fn try_new(
        table: &str,
        output: SchemaRef,
        key_columns: Vec<usize>,
        rules: FoldRules,
        reservation: MemoryReservation,
        disk: Option<Arc<DiskManager>>,
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
        let mut layout: Vec<Field> = output.fields()[1..=table_columns]
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        layout.push(Field::new(SEQUENCE_NUMBER, DataType::Int64, false));
        layout.push(Field::new(VALUE_KIND, DataType::Int8, false));
        Ok(NormalizeState {
            merge_layout: Arc::new(Schema::new(layout)),
            table: table.to_string(),
            keys: RowConverter::new(key_columns.iter().map(|&c| field(c)).collect())?,
            values: RowConverter::new((0..table_columns).map(field).collect())?,
            sequence,
            key_columns,
            rules,
            rows: HashMap::default(),
            gone: HashSet::default(),
            clean: HashSet::default(),
            bytes: 0,
            reservation,
            disk,
            spilled: None,
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
        let table_columns: Vec<ArrayRef> = batch.columns()[1..batch.num_columns() - 1].to_vec();
        self.load_spilled(&table_columns)?;
        let mut changes = match self.rules.reducer.clone() {
            Some(reducer) => self.fold_merging(batch, &table_columns, reducer.as_ref())?,
            None => self.fold_picking(batch, &table_columns)?,
        };
        self.account()?;
        if changes.out.is_empty() {
            return Ok(None);
        }
        // Changes in the order of the rows that caused them (waves reorder them).
        changes.out.sort_by_key(|(_, _, cause)| *cause);
        self.assemble(batch, &table_columns, changes).map(Some)
    }

    /// Deduplicate and first-row: the stored row or the delta row wins whole.
    fn fold_picking(&mut self, batch: &RecordBatch, table_columns: &[ArrayRef]) -> Result<Changes> {
        let kinds = batch.column(0).as_string::<i32>();
        let keys = self.convert_keys(table_columns)?;
        let values = self.values.convert_columns(table_columns)?;
        let sequence = self.convert_sequence(table_columns)?;
        let mut changes = Changes::default();
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
                changes.before(stored.values, "-D", row);
                continue;
            }
            let new_values = values.row(row);
            let new_stored = || Stored {
                values: new_values.owned(),
                sequence: new_sequence.map(|s| s.owned()),
            };
            match self.rows.get_mut(key.as_ref()) {
                None => {
                    changes.input(row, "+I");
                    self.insert(key.as_ref(), new_stored());
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
                    // One lookup: the new row replaces the stored one in its slot, and the
                    // stored one becomes the before-image (moved, not copied).
                    let new = new_stored();
                    let added = stored_size(key.as_ref().len(), &new);
                    let old = std::mem::replace(stored, new);
                    self.bytes = self.bytes + added - stored_size(key.as_ref().len(), &old);
                    if !self.clean.is_empty() && self.clean.remove(key.as_ref()) {
                        self.bytes -= gone_size(key.as_ref().len());
                    }
                    changes.before(old.values, "-U", row);
                    changes.input(row, "+U");
                }
            }
        }
        Ok(changes)
    }

    /// Partial-update and aggregation: every delta row of a stored key is merged with the
    /// stored row by `reducer`; a new key takes its first row as it is (a key with a single
    /// record is never reduced, as on read).
    fn fold_merging(
        &mut self,
        batch: &RecordBatch,
        table_columns: &[ArrayRef],
        reducer: &dyn GroupReducer,
    ) -> Result<Changes> {
        let kinds = batch.column(0).as_string::<i32>();
        let keys = self.convert_keys(table_columns)?;
        let values = self.values.convert_columns(table_columns)?;
        let kind_of = |row: usize| match kinds.value(row) {
            "-U" => row_kind::UPDATE_BEFORE,
            "+U" => row_kind::UPDATE_AFTER,
            "-D" => row_kind::DELETE,
            _ => row_kind::INSERT,
        };
        // Wave n holds the n-th row of every key, so each reducer call sees a key once.
        let mut waves: Vec<Vec<usize>> = Vec::new();
        let mut occurrences: HashMap<&[u8], usize> = HashMap::default();
        for row in 0..batch.num_rows() {
            if self.rules.ignore_delete && is_retract(kind_of(row)) {
                continue;
            }
            let n = occurrences.entry(keys.row(row).data()).or_insert(0);
            if waves.len() == *n {
                waves.push(Vec::new());
            }
            waves[*n].push(row);
            *n += 1;
        }
        let mut changes = Changes::default();
        for wave in waves {
            let mut merging: Vec<usize> = Vec::with_capacity(wave.len());
            for row in wave {
                let key = keys.row(row);
                if self.rows.contains_key(key.as_ref()) {
                    merging.push(row);
                } else if !is_retract(kind_of(row)) {
                    changes.input(row, "+I");
                    let stored = Stored {
                        values: values.row(row).owned(),
                        sequence: None,
                    };
                    self.insert(key.as_ref(), stored);
                }
                // A retraction of a key the table does not hold changes nothing.
            }
            if merging.is_empty() {
                continue;
            }
            let stored: Vec<OwnedRow> = merging
                .iter()
                .map(|&row| self.rows[keys.row(row).as_ref()].values.clone())
                .collect();
            let merged = self.merge_pairs(table_columns, &stored, &merging, &kind_of, reducer)?;
            let merged_kinds = merged
                .batch
                .column(table_columns.len() + 1)
                .as_primitive::<Int8Type>();
            let merged_values = self
                .values
                .convert_columns(&merged.batch.columns()[..table_columns.len()])?;
            for (g, (&row, old)) in merging.iter().zip(stored).enumerate() {
                let key = keys.row(row);
                if !merged.present[g] || is_retract(merged_kinds.value(g)) {
                    self.remove(key.as_ref());
                    changes.before(old, "-D", row);
                    continue;
                }
                let new = merged_values.row(g);
                if old.row() == new {
                    continue; // an update that changes nothing is not emitted
                }
                changes.before(old, "-U", row);
                changes.after(new.owned(), "+U", row);
                let stored = Stored {
                    values: new.owned(),
                    sequence: None,
                };
                self.insert(key.as_ref(), stored);
            }
        }
        Ok(changes)
    }

    /// Reduces the groups [stored row g, delta row `rows[g]`] in the reducer's layout; the
    /// stored row is the older record (sequence 0, `+I`).
    fn merge_pairs(
        &self,
        table_columns: &[ArrayRef],
        stored: &[OwnedRow],
        rows: &[usize],
        kind_of: &dyn Fn(usize) -> i8,
        reducer: &dyn GroupReducer,
    ) -> Result<crate::merge::reduce::ReducedGroups> {
        let stored_columns = self.values.convert_rows(stored.iter().map(|r| r.row()))?;
        let indices: Vec<(usize, usize)> = rows
            .iter()
            .enumerate()
            .flat_map(|(g, &row)| [(0, g), (1, row)])
            .collect();
        let mut columns = stored_columns
            .iter()
            .zip(table_columns)
            .map(|(old, new)| Ok(interleave(&[old.as_ref(), new.as_ref()], &indices)?))
            .collect::<Result<Vec<ArrayRef>>>()?;
        columns.push(Arc::new(Int64Array::from_iter_values(
            indices.iter().map(|&(source, _)| source as i64),
        )));
        columns.push(Arc::new(Int8Array::from_iter_values(indices.iter().map(
            |&(source, row)| {
                if source == 0 {
                    row_kind::INSERT
                } else {
                    kind_of(row)
                }
            },
        ))));
        let pairs = RecordBatch::try_new(Arc::clone(&self.merge_layout), columns)?;
        let offsets: Vec<usize> = (0..=rows.len()).map(|g| 2 * g).collect();
        reducer.reduce(&pairs, &offsets)
    }

    /// Output rows from input rows, before- and after-images, gathered with `interleave`.
    fn assemble(
        &self,
        batch: &RecordBatch,
        table_columns: &[ArrayRef],
        changes: Changes,
    ) -> Result<RecordBatch> {
        let before_columns = self.values.convert_rows(changes.before.iter().map(|r| r.row()))?;
        let after_columns = self.values.convert_rows(changes.after.iter().map(|r| r.row()))?;
        let out = &changes.out;
        let indices: Vec<(usize, usize)> = out
            .iter()
            .map(|(source, _, _)| match source {
                Source::Input(i) => (0, *i),
                Source::Before(i) => (1, *i),
                Source::After(i) => (2, *i),
            })
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.output.fields().len());
        columns.push(Arc::new(StringArray::from_iter_values(
            out.iter().map(|(_, k, _)| *k),
        )));
        for ((input, prior), merged) in table_columns.iter().zip(&before_columns).zip(&after_columns) {
            columns.push(interleave(
                &[input.as_ref(), prior.as_ref(), merged.as_ref()],
                &indices,
            )?);
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
        // (both sets are empty until the state spills: skip hashing the key for them)
        if !self.gone.is_empty() && self.gone.remove(key) {
            self.bytes -= gone_size(key.len());
        }
        if !self.clean.is_empty() && self.clean.remove(key) {
            self.bytes -= gone_size(key.len());
        }
        let size = stored_size(key.len(), &stored);
        // (one lookup; the key is mostly new here, so its allocation is rarely wasted)
        match self.rows.entry(key.into()) {
            Entry::Occupied(mut slot) => {
                let old = slot.insert(stored);
                self.bytes -= stored_size(key.len(), &old);
            }
            Entry::Vacant(slot) => {
                slot.insert(stored);
            }
        }
        self.bytes += size;
    }

    fn remove(&mut self, key: &[u8]) -> Stored {
        let stored = self.rows.remove(key).expect("the key is present");
        self.bytes -= stored_size(key.len(), &stored);
        if self.clean.remove(key) {
            self.bytes -= gone_size(key.len());
        }
        if self.spilled.is_some() && self.gone.insert(key.into()) {
            self.bytes += gone_size(key.len());
        }
        stored
    }

    /// Reads the keys of a batch that only the spill holds back into memory.
    fn load_spilled(&mut self, table_columns: &[ArrayRef]) -> Result<()> {
        let Some(spilled) = &self.spilled else {
            return Ok(());
        };
        let keys = self.convert_keys(table_columns)?;
        let mut wanted: Vec<&[u8]> = keys
            .iter()
            .map(|k| k.data())
            .filter(|k| !self.rows.contains_key(*k) && !self.gone.contains(*k))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut loaded: Vec<(Box<[u8]>, Stored)> = Vec::new();
        let values = self.values.parser();
        let sequence = self.sequence.as_ref().map(RowConverter::parser);
        let mut corrupt = false;
        spilled.read(wanted.into_iter(), |key, value| match decode_value(value) {
            Some((row, seq)) => loaded.push((
                key.into(),
                Stored {
                    values: values.parse(row).owned(),
                    sequence: match (&sequence, seq) {
                        (Some(parser), Some(seq)) => Some(parser.parse(seq).owned()),
                        _ => None,
                    },
                },
            )),
            None => corrupt = true,
        })?;
        if corrupt {
            return Err(exec_datafusion_err!(
                "ChangelogNormalize of table {} read a damaged entry of its spilled state",
                self.table
            ));
        }
        for (key, stored) in loaded {
            self.insert(&key, stored);
            self.bytes += gone_size(key.len());
            self.clean.insert(key);
        }
        Ok(())
    }

    /// Writes the in-memory state to the spill (creating it) and empties memory.
    fn spill(&mut self) -> Result<()> {
        if self.spilled.is_none() {
            let Some(disk) = &self.disk else {
                return Err(exec_datafusion_err!(
                    "ChangelogNormalize of table {} cannot spill its state: no disk manager",
                    self.table
                ));
            };
            self.spilled = Some(SpilledState::create(disk, &self.table)?);
        }
        let spilled = self.spilled.as_ref().expect("created above");
        // Sorted keys make the B-tree inserts sequential.
        let clean = &self.clean;
        let mut keys: Vec<&Box<[u8]>> = self
            .rows
            .keys()
            .filter(|k| !clean.contains(*k))
            .chain(self.gone.iter())
            .collect();
        keys.sort_unstable();
        let rows = &self.rows;
        spilled.write(keys.into_iter().map(|key| {
            let value = rows
                .get(key)
                .map(|s| encode_value(s.values.as_ref(), s.sequence.as_ref().map(|q| q.as_ref())));
            (key.as_ref(), value)
        }))?;
        self.rows = HashMap::default();
        self.gone = HashSet::default();
        self.clean = HashSet::default();
        self.bytes = 0;
        Ok(())
    }

    /// Brings the memory reservation to the state's size (once per batch, not per row).
    fn account(&mut self) -> Result<()> {
        let reserved = self.reservation.size();
        if self.bytes > reserved {
            let grown = self.reservation.try_grow(self.bytes - reserved);
            if grown.is_ok() {
                return Ok(());
            }
            if self.disk.as_ref().is_some_and(|d| d.tmp_files_enabled()) {
                self.spill()?;
                self.reservation.shrink(self.reservation.size());
                return Ok(());
            }
            grown.map_err(|e| {
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

/// Bytes a key in a set (tombstones, clean keys) takes: the key plus the set entry.
fn gone_size(key_len: usize) -> usize {
    key_len + std::mem::size_of::<Box<[u8]>>()
}

/// Bytes a stored key takes: its row bytes plus the map entry.
fn stored_size(key_len: usize, stored: &Stored) -> usize {
    key_len
        + stored.values.as_ref().len()
        + stored.sequence.as_ref().map_or(0, |s| s.as_ref().len())
        + std::mem::size_of::<(Box<[u8]>, Stored)>()
}

#[cfg(test)]
mod tests {
    use arrow::array::Int64Array;
    use datafusion::execution::disk_manager::DiskManagerBuilder;
    use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryConsumer, MemoryPool};
    use rand::{Rng, SeedableRng};

    use super::*;

    fn output() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("rowkind", DataType::Utf8, false),
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
            Field::new("ts", DataType::Int64, true),
            Field::new("snapshot_id", DataType::Int64, false),
        ]))
    }

    fn state(pool_bytes: usize, sequence: bool) -> (NormalizeState, Arc<dyn MemoryPool>) {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(pool_bytes));
        let reservation = MemoryConsumer::new("test").register(&pool);
        let disk = Arc::new(DiskManagerBuilder::default().build().expect("disk manager"));
        let rules = FoldRules {
            first_row: false,
            ignore_delete: false,
            sequence_columns: if sequence { vec![2] } else { vec![] },
            reducer: None,
        };
        let state = NormalizeState::try_new("db.t", output(), vec![0], rules, reservation, Some(disk))
            .expect("state");
        (state, pool)
    }

    /// Random upserts, late rows and deletes over `keys` keys, in batches.
    fn batches(keys: i64, batches: usize, rows: usize) -> Vec<RecordBatch> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        (0..batches)
            .map(|b| {
                let mut kind = Vec::with_capacity(rows);
                let mut k = Vec::with_capacity(rows);
                let mut v = Vec::with_capacity(rows);
                let mut ts = Vec::with_capacity(rows);
                for _ in 0..rows {
                    kind.push(match rng.random_range(0..10) {
                        0 => "-D",
                        1..=4 => "+I",
                        _ => "+U",
                    });
                    k.push(rng.random_range(0..keys));
                    v.push(rng.random_range(0..3));
                    ts.push(rng.random_range(0..100));
                }
                RecordBatch::try_new(
                    output(),
                    vec![
                        Arc::new(StringArray::from(kind)),
                        Arc::new(Int64Array::from(k)),
                        Arc::new(Int64Array::from(v)),
                        Arc::new(Int64Array::from(ts)),
                        Arc::new(Int64Array::from(vec![b as i64 + 2; rows])),
                    ],
                )
                .expect("batch")
            })
            .collect()
    }

    fn seed(keys: i64) -> RecordBatch {
        let table = Schema::new(output().fields()[1..4].to_vec());
        RecordBatch::try_new(
            Arc::new(table),
            vec![
                Arc::new(Int64Array::from_iter_values(0..keys / 2)),
                Arc::new(Int64Array::from_iter_values((0..keys / 2).map(|k| k % 3))),
                Arc::new(Int64Array::from(vec![50; (keys / 2) as usize])),
            ],
        )
        .expect("seed")
    }

    fn run(state: &mut NormalizeState, keys: i64, input: &[RecordBatch]) -> Vec<RecordBatch> {
        state.seed(&seed(keys)).expect("seed");
        input
            .iter()
            .filter_map(|b| state.fold(b).expect("fold"))
            .collect()
    }

    #[test]
    fn a_spilling_state_emits_what_an_unbounded_one_emits() {
        for sequence in [false, true] {
            let keys = 20_000;
            let input = batches(keys, 30, 2_000);
            let (mut unbounded, _) = state(usize::MAX, sequence);
            let expected = run(&mut unbounded, keys, &input);
            assert!(unbounded.spilled.is_none());

            let limit = 256 << 10;
            let (mut small, pool) = state(limit, sequence);
            let actual = run(&mut small, keys, &input);
            assert!(small.spilled.is_some(), "a 256 KiB pool makes the state spill");
            assert!(pool.reserved() <= limit);
            let rows = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
            assert!(rows(&expected) > 10_000, "the input makes many changes");
            assert_eq!(
                concat_batches_of(&expected),
                concat_batches_of(&actual),
                "sequence = {sequence}"
            );
        }
    }

    fn concat_batches_of(batches: &[RecordBatch]) -> RecordBatch {
        arrow::compute::concat_batches(&output(), batches).expect("concat")
    }

    #[test]
    fn without_a_disk_the_pool_limit_is_an_error_naming_the_table() {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 10));
        let reservation = MemoryConsumer::new("test").register(&pool);
        let rules = FoldRules {
            first_row: false,
            ignore_delete: false,
            sequence_columns: vec![],
            reducer: None,
        };
        let mut state =
            NormalizeState::try_new("db.t", output(), vec![0], rules, reservation, None).expect("state");
        let err = state.seed(&seed(10_000)).expect_err("over the pool");
        assert!(err.to_string().contains("db.t"), "{err}");
    }
}
