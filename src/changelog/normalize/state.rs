//! The per-key state of ChangelogNormalize and how one batch of delta rows folds into it
//! (semantics.md §7.6, extended to the table's merge engine).
//!
//! Keys and rows are kept in Arrow's row format in a [`RowStore`] (byte arenas, no allocation
//! per key): the primary key, the whole row (compared byte-wise for "unchanged") and the
//! `sequence.field` columns. The store's memory is reserved in the DataFusion memory pool
//! before a batch is folded. When the pool refuses more, the changed part of the state is
//! written to a B-tree on local disk ([`super::spill`]) and the store starts empty again in the
//! memory it had; before a batch is folded, its keys that are on disk and not in memory are
//! read back. Memory stays within the pool (plus the spill's fixed page cache).
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
use arrow::row::{RowConverter, RowParser, Rows, SortField};
use datafusion::common::{exec_datafusion_err, HashMap, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::memory_pool::MemoryReservation;

use super::spill::{decode_value, encode_value, SpilledState};
use super::store::{Found, RowStore, SlotState};

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

/// Row-format rows copied out of the store, one after the other in one buffer.
#[derive(Default)]
struct RowBuffer {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl RowBuffer {
    fn push(&mut self, row: &[u8]) -> usize {
        self.data.extend_from_slice(row);
        self.ends.push(self.data.len());
        self.ends.len() - 1
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Decodes the rows back into columns.
    fn columns(&self, converter: &RowConverter, parser: &RowParser) -> Result<Vec<ArrayRef>> {
        let rows = (0..self.ends.len()).map(|i| parser.parse(self.get(i)));
        Ok(converter.convert_rows(rows)?)
    }
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
    before: RowBuffer,
    after: RowBuffer,
}

impl Changes {
    fn input(&mut self, row: usize, kind: &'static str) {
        self.out.push((Source::Input(row), kind, row));
    }

    fn before(&mut self, values: &[u8], kind: &'static str, cause: usize) {
        let n = self.before.push(values);
        self.out.push((Source::Before(n), kind, cause));
    }

    fn after(&mut self, values: &[u8], kind: &'static str, cause: usize) {
        let n = self.after.push(values);
        self.out.push((Source::After(n), kind, cause));
    }
}

/// A batch's keys, rows and sequence values in row format, with the keys' hashes.
struct EncodedBatch {
    keys: Rows,
    hashes: Vec<u64>,
    values: Rows,
    sequence: Option<Rows>,
}

/// State: primary key -> the row the table holds for it.
pub(crate) struct NormalizeState {
    table: String,
    /// Positions of the key columns among the table columns.
    key_columns: Vec<usize>,
    rules: FoldRules,
    keys: RowConverter,
    values: RowConverter,
    values_parser: RowParser,
    sequence: Option<RowConverter>,
    /// Key -> stored row (the state, or with a spill its most recent part).
    store: RowStore,
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
        let values = RowConverter::new((0..table_columns).map(field).collect())?;
        Ok(NormalizeState {
            merge_layout: Arc::new(Schema::new(layout)),
            table: table.to_string(),
            keys: RowConverter::new(key_columns.iter().map(|&c| field(c)).collect())?,
            values_parser: values.parser(),
            values,
            sequence,
            key_columns,
            rules,
            store: RowStore::new(),
            reservation,
            disk,
            spilled: None,
            output,
        })
    }

    /// Sizes the state for `keys` keys up front (from the start state's row count) if the pool
    /// grants it, sparing the hash table its rehashes as it grows.
    pub(crate) fn expect_keys(&mut self, keys: usize) {
        let needed = self.store.bytes_after_reserve(keys, 0, 0);
        if self.grow_to(needed) {
            self.store.reserve(keys, 0, 0);
        }
    }

    /// Seeds the state with merged rows (table columns only); emits nothing.
    pub(crate) fn seed(&mut self, batch: &RecordBatch) -> Result<()> {
        self.in_slices(batch, |state, slice| {
            let Some(encoded) = state.encode_with_room(slice.columns())? else {
                return Ok(None);
            };
            state.seed_encoded(slice.num_rows(), &encoded);
            Ok(Some(()))
        })
        .map(|_| ())
    }

    fn seed_encoded(&mut self, rows: usize, encoded: &EncodedBatch) {
        for row in 0..rows {
            self.store.prefetch_ahead(&encoded.hashes, row);
            let key = encoded.keys.row(row);
            let hash = encoded.hashes[row];
            let values = encoded.values.row(row).data();
            let sequence = encoded.sequence.as_ref().map(|s| s.row(row));
            let sequence = sequence.as_ref().map(|s| s.data());
            match self.store.find(hash, key.data()) {
                Found::Live(id) => self.store.replace(id, values, sequence),
                found => self
                    .store
                    .insert(found, hash, key.data(), values, sequence, SlotState::Dirty),
            }
        }
    }

    /// Folds one batch of delta rows (`rowkind`, table columns, `snapshot_id`) and returns the
    /// changes they make, if any.
    pub(crate) fn fold(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        let changes = self.in_slices(batch, |state, slice| {
            let table_columns: Vec<ArrayRef> = slice.columns()[1..slice.num_columns() - 1].to_vec();
            let Some(encoded) = state.encode_with_room(&table_columns)? else {
                return Ok(None);
            };
            state.load_spilled(&encoded)?;
            let mut changes = match state.rules.reducer.clone() {
                Some(reducer) => state.fold_merging(slice, &table_columns, &encoded, reducer.as_ref())?,
                None => state.fold_picking(slice, &encoded)?,
            };
            if changes.out.is_empty() {
                return Ok(Some(None));
            }
            // Changes in the order of the rows that caused them (waves reorder them).
            changes.out.sort_by_key(|(_, _, cause)| *cause);
            state
                .assemble(slice, &table_columns, changes)
                .map(|b| Some(Some(b)))
        })?;
        let changes: Vec<RecordBatch> = changes.into_iter().flatten().collect();
        match changes.len() {
            0 => Ok(None),
            1 => Ok(changes.into_iter().next()),
            _ => Ok(Some(arrow::compute::concat_batches(&self.output, &changes)?)),
        }
    }

    /// Runs `step` over `batch`, whole if the memory pool grants the room for it, otherwise
    /// over ever smaller slices (a batch larger than the whole pool still goes through); the
    /// state's reservation is brought up to date after every slice. `step` returns `None` when
    /// it got no room.
    fn in_slices<T>(
        &mut self,
        batch: &RecordBatch,
        mut step: impl FnMut(&mut Self, &RecordBatch) -> Result<Option<T>>,
    ) -> Result<Vec<T>> {
        let mut done = Vec::new();
        let (mut start, mut len) = (0, batch.num_rows().max(1));
        while start < batch.num_rows() {
            let slice = if start == 0 && len >= batch.num_rows() {
                batch.clone()
            } else {
                batch.slice(start, len.min(batch.num_rows() - start))
            };
            match step(self, &slice)? {
                Some(out) => {
                    done.push(out);
                    start += slice.num_rows();
                    self.account()?;
                }
                None if slice.num_rows() > 1 => len = slice.num_rows() / 2,
                None => return Err(self.out_of_memory()),
            }
        }
        Ok(done)
    }

    /// Deduplicate and first-row: the stored row or the delta row wins whole.
    fn fold_picking(&mut self, batch: &RecordBatch, encoded: &EncodedBatch) -> Result<Changes> {
        let kinds = batch.column(0).as_string::<i32>();
        let mut changes = Changes::default();
        let store = &mut self.store;
        for row in 0..batch.num_rows() {
            store.prefetch_ahead(&encoded.hashes, row);
            let key = encoded.keys.row(row);
            let hash = encoded.hashes[row];
            let new_sequence = encoded.sequence.as_ref().map(|s| s.row(row));
            let new_sequence = new_sequence.as_ref().map(|s| s.data());
            // Row-format bytes compare as the values do.
            let older = |store: &RowStore, id| match (store.sequence(id), new_sequence) {
                (Some(old), Some(new)) => new < old,
                _ => false,
            };
            if matches!(kinds.value(row), "-U" | "-D") {
                if self.rules.ignore_delete {
                    continue;
                }
                let Some(id) = store.live(hash, key.data()) else {
                    continue;
                };
                if older(store, id) {
                    // A late retraction loses to the stored row: nothing changes.
                    continue;
                }
                changes.before(store.row(id), "-D", row);
                store.remove(id);
                continue;
            }
            let new_values = encoded.values.row(row);
            match store.find(hash, key.data()) {
                Found::Live(id) => {
                    if self.rules.first_row {
                        continue;
                    }
                    // A late row (`sequence.field`) loses and an identical row changes nothing:
                    // no update is emitted for either (Flink's rule for unchanged rows).
                    if older(store, id) || store.row(id) == new_values.data() {
                        continue;
                    }
                    changes.before(store.row(id), "-U", row);
                    changes.input(row, "+U");
                    store.replace(id, new_values.data(), new_sequence);
                }
                found => {
                    changes.input(row, "+I");
                    store.insert(
                        found,
                        hash,
                        key.data(),
                        new_values.data(),
                        new_sequence,
                        SlotState::Dirty,
                    );
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
        encoded: &EncodedBatch,
        reducer: &dyn GroupReducer,
    ) -> Result<Changes> {
        let kinds = batch.column(0).as_string::<i32>();
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
            let n = occurrences.entry(encoded.keys.row(row).data()).or_insert(0);
            if waves.len() == *n {
                waves.push(Vec::new());
            }
            waves[*n].push(row);
            *n += 1;
        }
        let mut changes = Changes::default();
        for wave in waves {
            let mut merging: Vec<usize> = Vec::with_capacity(wave.len());
            let mut stored = RowBuffer::default();
            for row in wave {
                let key = encoded.keys.row(row);
                let hash = encoded.hashes[row];
                match self.store.find(hash, key.data()) {
                    Found::Live(id) => {
                        merging.push(row);
                        stored.push(self.store.row(id));
                    }
                    // A retraction of a key the table does not hold changes nothing.
                    _ if is_retract(kind_of(row)) => {}
                    found => {
                        changes.input(row, "+I");
                        let values = encoded.values.row(row);
                        self.store
                            .insert(found, hash, key.data(), values.data(), None, SlotState::Dirty);
                    }
                }
            }
            if merging.is_empty() {
                continue;
            }
            let merged = self.merge_pairs(table_columns, &stored, &merging, &kind_of, reducer)?;
            let merged_kinds = merged
                .batch
                .column(table_columns.len() + 1)
                .as_primitive::<Int8Type>();
            let merged_values = self
                .values
                .convert_columns(&merged.batch.columns()[..table_columns.len()])?;
            for (g, &row) in merging.iter().enumerate() {
                let key = encoded.keys.row(row);
                let id = self
                    .store
                    .live(encoded.hashes[row], key.data())
                    .expect("a merged key is stored");
                let old = stored.get(g);
                if !merged.present[g] || is_retract(merged_kinds.value(g)) {
                    changes.before(old, "-D", row);
                    self.store.remove(id);
                    continue;
                }
                let new = merged_values.row(g);
                if old == new.data() {
                    continue; // an update that changes nothing is not emitted
                }
                changes.before(old, "-U", row);
                changes.after(new.data(), "+U", row);
                self.store.replace(id, new.data(), None);
            }
        }
        Ok(changes)
    }

    /// Reduces the groups [stored row g, delta row `rows[g]`] in the reducer's layout; the
    /// stored row is the older record (sequence 0, `+I`).
    fn merge_pairs(
        &self,
        table_columns: &[ArrayRef],
        stored: &RowBuffer,
        rows: &[usize],
        kind_of: &dyn Fn(usize) -> i8,
        reducer: &dyn GroupReducer,
    ) -> Result<crate::merge::reduce::ReducedGroups> {
        let stored_columns = stored.columns(&self.values, &self.values_parser)?;
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
        let before_columns = changes.before.columns(&self.values, &self.values_parser)?;
        let after_columns = changes.after.columns(&self.values, &self.values_parser)?;
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

    /// Encodes the key, the row and the sequence columns of `columns` (table columns).
    fn encode(&self, columns: &[ArrayRef]) -> Result<EncodedBatch> {
        let pick = |positions: &[usize]| -> Vec<ArrayRef> {
            positions.iter().map(|&c| Arc::clone(&columns[c])).collect()
        };
        let keys = self.keys.convert_columns(&pick(&self.key_columns))?;
        let hashes = keys.iter().map(|k| self.store.hash(k.data())).collect();
        let sequence = match &self.sequence {
            Some(converter) => Some(converter.convert_columns(&pick(&self.rules.sequence_columns))?),
            None => None,
        };
        Ok(EncodedBatch {
            keys,
            hashes,
            values: self.values.convert_columns(columns)?,
            sequence,
        })
    }

    /// Reads the keys of a batch that only the spill holds back into memory (after
    /// [`Self::make_room`], whose spill may have just moved them there).
    fn load_spilled(&mut self, encoded: &EncodedBatch) -> Result<()> {
        let Some(spilled) = &self.spilled else {
            return Ok(());
        };
        let mut wanted: Vec<&[u8]> = encoded
            .keys
            .iter()
            .zip(&encoded.hashes)
            .filter(|(k, &h)| matches!(self.store.find(h, k.data()), Found::Absent))
            .map(|(k, _)| k.data())
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        wanted.sort_unstable();
        wanted.dedup();
        // (key, row, sequence) of every key found, as indices into two buffers.
        let (mut keys, mut values) = (RowBuffer::default(), RowBuffer::default());
        let mut found: Vec<(usize, usize, Option<usize>)> = Vec::new();
        let mut corrupt = false;
        spilled.read(wanted.into_iter(), |key, value| match decode_value(value) {
            Some((row, sequence)) => {
                found.push((keys.push(key), values.push(row), sequence.map(|s| values.push(s))))
            }
            None => corrupt = true,
        })?;
        if corrupt {
            return Err(exec_datafusion_err!(
                "ChangelogNormalize of table {} read a damaged entry of its spilled state",
                self.table
            ));
        }
        // Room for them: asked of the pool, but a refusal waits for the batch's end (`account`),
        // as spilling now would drop the rows just loaded for this batch.
        let needed = self
            .store
            .bytes_after_reserve(found.len(), keys.data.len(), values.data.len());
        let _ = self.grow_to(needed);
        self.store
            .reserve(found.len(), keys.data.len(), values.data.len());
        for (k, r, s) in found {
            let key = keys.get(k);
            let hash = self.store.hash(key);
            let sequence = s.map(|s| values.get(s));
            self.store.insert(
                Found::Absent,
                hash,
                key,
                values.get(r),
                sequence,
                SlotState::Clean,
            );
        }
        Ok(())
    }

    /// Encodes `columns` (table columns) once the pool granted the memory storing every row may
    /// take, spilling first if it refused; `None` if it still refuses with the state spilled.
    fn encode_with_room(&mut self, columns: &[ArrayRef]) -> Result<Option<EncodedBatch>> {
        let encoded = self.encode(columns)?;
        Ok(self.make_room(&encoded)?.then_some(encoded))
    }

    /// Asks the pool for the memory storing `batch` may take, spilling first if it refuses;
    /// false if it refuses even then.
    fn make_room(&mut self, batch: &EncodedBatch) -> Result<bool> {
        if self.store.wants_compaction() {
            self.store.compact();
        }
        let rows = batch.keys.num_rows();
        let key_bytes = batch.keys.size();
        let value_bytes = batch.values.size() + batch.sequence.as_ref().map_or(0, Rows::size);
        let needed = self.store.bytes_after_reserve(rows, key_bytes, value_bytes);
        if !self.grow_to(needed) {
            self.spill()?;
            let needed = self.store.bytes_after_reserve(rows, key_bytes, value_bytes);
            if !self.grow_to(needed) {
                return Ok(false);
            }
        }
        self.store.reserve(rows, key_bytes, value_bytes);
        Ok(true)
    }

    /// Grows the reservation to `bytes` if the pool grants it.
    fn grow_to(&mut self, bytes: usize) -> bool {
        let reserved = self.reservation.size();
        bytes <= reserved || self.reservation.try_grow(bytes - reserved).is_ok()
    }

    fn out_of_memory(&self) -> datafusion::error::DataFusionError {
        exec_datafusion_err!(
            "ChangelogNormalize of table {} needs more memory for its per-key state than the memory pool grants; narrow the snapshot range or raise the memory limit",
            self.table
        )
    }

    /// Writes the changed part of the state to the spill (creating it) and empties the store,
    /// which keeps its memory for the rows to come.
    fn spill(&mut self) -> Result<()> {
        if !self.disk.as_ref().is_some_and(|d| d.tmp_files_enabled()) {
            return Err(self.out_of_memory());
        }
        if self.spilled.is_none() {
            let disk = self.disk.as_ref().expect("checked above");
            self.spilled = Some(SpilledState::create(disk, &self.table)?);
        }
        let spilled = self.spilled.as_ref().expect("created above");
        let store = &self.store;
        spilled.write(store.unspilled().into_iter().map(|id| {
            let value = (!store.is_gone(id)).then(|| encode_value(store.row(id), store.sequence(id)));
            (store.key(id), value)
        }))?;
        self.store.clear_spilled();
        Ok(())
    }

    /// Brings the reservation to what the store holds once a batch is folded: merged rows can
    /// outgrow what was reserved for the batch.
    fn account(&mut self) -> Result<()> {
        let bytes = self.store.allocated_bytes();
        if self.grow_to(bytes) {
            return Ok(());
        }
        self.spill()?;
        self.store.release();
        self.reservation.shrink(self.reservation.size());
        Ok(())
    }
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
