//! The diff of two merged states of one bucket (semantics.md §7.2, Java `DiffMerger`).
//!
//! Both inputs are merge-on-read outputs that keep retractions, so each holds every key at
//! most once, ascending by key. They are walked side by side like a merge join:
//!
//! | key present in | condition                          | output                         |
//! |----------------|------------------------------------|--------------------------------|
//! | start only     | start row is an add                | the start row as `-D`          |
//! | start only     | start row is a retraction          | nothing                        |
//! | end only       | —                                  | the end row, stored kind       |
//! | both           | values and add-ness equal          | nothing                        |
//! | both           | differ                             | the end row, stored kind       |
//!
//! When the end side holds only the files the end state adds, all newer than the start state
//! ([`StartOnly::Unchanged`], plan.rs `newer_files_only`), a key only in the start side is
//! unchanged rather than removed: it gives nothing, so the walk skips such keys by search, and
//! ends with the end side.
//!
//! Retract rows are dropped later for the plain table. Keys are compared in the merge's order
//! ([`keys`]). Values are compared only for keys both sides hold: the walk pairs them, and a
//! batch's pairs are compared a column at a time, in place, before the batch is built
//! ([`values`]), so the rows of keys one side lacks are never compared. Each side is read,
//! merged and its keys encoded on a task of its own, so the two states use two cores while
//! this stream walks them. Output rows are gathered a batch at a time: runs of consecutive
//! rows of one input batch as slices, scattered rows with `interleave`.

mod keys;
mod values;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int8Array, RecordBatch, RecordBatchOptions};
use arrow::buffer::ScalarBuffer;
use arrow::compute::{concat, interleave};
use arrow::datatypes::{Int8Type, SchemaRef};
use arrow::row::{RowConverter, SortField};
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::stream::BoxStream;
use futures::StreamExt;

use self::keys::KeyColumn;
use crate::merge::is_retract;
use crate::spec::row_kind;

/// Column roles of the read layout both inputs share.
#[derive(Debug, Clone)]
pub(super) struct DiffColumns {
    pub(super) keys: Vec<usize>,
    /// The table's columns other than the keys (the values compared).
    pub(super) values: Vec<usize>,
    pub(super) kind: usize,
}

/// What a key found only in the start side means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StartOnly {
    /// The end side is the whole end state: the key was removed (an add becomes `-D`).
    Removed,
    /// The end side is only the end state's newer files: the key did not change.
    Unchanged,
}

/// The diff of `before` and `after` (same schema) as a stream in that schema.
pub(super) fn diff_stream(
    before: SendableRecordBatchStream,
    after: SendableRecordBatchStream,
    columns: DiffColumns,
    start_only: StartOnly,
    batch_size: usize,
) -> Result<SendableRecordBatchStream> {
    let schema = before.schema();
    let state = DiffState {
        start_only,
        before: Side::new(encoded_side(before, &columns)?),
        after: Side::new(encoded_side(after, &columns)?),
        store: Vec::new(),
        picks: Vec::new(),
        kinds: Vec::new(),
        pairs: Vec::new(),
        columns,
        schema: Arc::clone(&schema),
        batch_size: batch_size.max(1),
    };
    let output = futures::stream::try_unfold(state, |mut state| async move {
        Ok(state.next_batch().await?.map(|batch| (batch, state)))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)))
}

/// A batch of one side with its keys and kinds.
type Encoded = (RecordBatch, KeyColumn, ScalarBuffer<i8>);

/// The batches of `input` with their keys, encoded on a spawned task (aborted when the stream
/// is dropped) a couple of batches ahead of the walk.
fn encoded_side(
    mut input: SendableRecordBatchStream,
    columns: &DiffColumns,
) -> Result<BoxStream<'static, Result<Encoded>>> {
    let schema = input.schema();
    let converter = RowConverter::new(
        columns
            .keys
            .iter()
            .map(|c| SortField::new(schema.field(*c).data_type().clone()))
            .collect(),
    )?;
    let columns = columns.clone();
    let encode = move |batch: RecordBatch| -> Result<Encoded> {
        let key_columns: Vec<ArrayRef> = columns
            .keys
            .iter()
            .map(|c| Arc::clone(batch.column(*c)))
            .collect();
        let keys = KeyColumn::new(&key_columns, &converter)?;
        let kinds = batch
            .column(columns.kind)
            .as_primitive::<Int8Type>()
            .values()
            .clone();
        Ok((batch, keys, kinds))
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Encoded>>(2);
    let task = SpawnedTask::spawn(async move {
        while let Some(batch) = input.next().await {
            let item = batch.and_then(|b| encode(b));
            let failed = item.is_err();
            if tx.send(item).await.is_err() || failed {
                return;
            }
        }
    });
    let stream = futures::stream::unfold((rx, task), |(mut rx, task)| async move {
        rx.recv().await.map(|item| (item, (rx, task)))
    });
    Ok(stream.boxed())
}

/// One input with its current batch.
struct Side {
    input: BoxStream<'static, Result<Encoded>>,
    current: Option<Current>,
    pos: usize,
    done: bool,
}

/// The batch a side is walking: its index in the store, keys and kinds.
struct Current {
    store: usize,
    keys: KeyColumn,
    kinds: ScalarBuffer<i8>,
}

impl Side {
    fn new(input: BoxStream<'static, Result<Encoded>>) -> Self {
        Side {
            input,
            current: None,
            pos: 0,
            done: false,
        }
    }

    fn has_row(&self) -> bool {
        self.current.as_ref().is_some_and(|c| self.pos < c.kinds.len())
    }
}

/// A key both sides hold with the same add-ness: pending output row `pick` (the end row) is
/// kept only if its values differ from the start row at (store index, row) `before`.
struct Pair {
    pick: usize,
    before: (usize, usize),
}

struct DiffState {
    start_only: StartOnly,
    before: Side,
    after: Side,
    /// Batches the pending output rows point into (plus the current ones).
    store: Vec<RecordBatch>,
    /// Pending output rows: (store index, row).
    picks: Vec<(usize, usize)>,
    /// Kind of each pending output row.
    kinds: Vec<i8>,
    /// Pending output rows whose values are still to be compared.
    pairs: Vec<Pair>,
    columns: DiffColumns,
    schema: SchemaRef,
    batch_size: usize,
}

impl DiffState {
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let inputs_ended =
                !self.before.has_row() && !self.after.has_row() && self.before.done && self.after.done;
            // A batch also ends where the end side's batch does, once half full: output rows
            // are then mostly one run of one input batch, a slice rather than a copy.
            let at_end_side_boundary =
                !self.after.has_row() && self.picks.len() >= (self.batch_size / 2).max(1);
            if self.picks.len() >= self.batch_size
                || at_end_side_boundary
                || (inputs_ended && !self.picks.is_empty())
            {
                let batch = self.emit()?;
                if batch.num_rows() > 0 {
                    return Ok(Some(batch));
                }
                continue;
            }
            self.refill(false).await?;
            let after_ended = self.after.done && !self.after.has_row();
            if after_ended && self.start_only == StartOnly::Unchanged {
                // The rest of the start side is unchanged: no need to read it.
                self.before.done = true;
                self.before.current = None;
            } else {
                self.refill(true).await?;
            }
            if !self.before.has_row() && !self.after.has_row() {
                if self.picks.is_empty() {
                    return Ok(None);
                }
                continue;
            }
            self.walk();
        }
    }

    /// Loads the next non-empty batch of a side whose current batch is used up.
    async fn refill(&mut self, before: bool) -> Result<()> {
        let side = if before { &mut self.before } else { &mut self.after };
        while !side.done && !side.has_row() {
            match side.input.next().await {
                None => side.done = true,
                Some(item) => {
                    let (batch, keys, kinds) = item?;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    side.current = Some(Current {
                        store: self.store.len(),
                        keys,
                        kinds,
                    });
                    self.store.push(batch);
                    side.pos = 0;
                }
            }
        }
        Ok(())
    }

    /// Compares keys until a side's batch ends or the output is full.
    fn walk(&mut self) {
        while self.picks.len() < self.batch_size {
            let (b, a) = (self.before.has_row(), self.after.has_row());
            if !b && !a {
                return;
            }
            if b && a {
                let bc = self.before.current.as_ref().expect("has a row");
                let ac = self.after.current.as_ref().expect("has a row");
                let (bp, ap) = (self.before.pos, self.after.pos);
                match bc.keys.cmp(bp, &ac.keys, ap) {
                    std::cmp::Ordering::Less if self.start_only == StartOnly::Unchanged => {
                        // Unchanged keys give nothing: skip to the end side's key.
                        self.before.pos = bc.keys.seek(bp + 1, bc.kinds.len(), &ac.keys, ap);
                    }
                    std::cmp::Ordering::Less => self.before_only(),
                    std::cmp::Ordering::Greater => self.after_only(),
                    std::cmp::Ordering::Equal => {
                        let same_addness = is_retract(bc.kinds[bp]) == is_retract(ac.kinds[ap]);
                        let before = (bc.store, bp);
                        self.before.pos += 1;
                        if same_addness {
                            self.pairs.push(Pair {
                                pick: self.picks.len(),
                                before,
                            });
                        }
                        self.after_only();
                    }
                }
            } else if b {
                // The other side is used up only when it is done; else refill first.
                if !self.after.done {
                    return;
                }
                self.before_only();
            } else {
                if !self.before.done {
                    return;
                }
                self.after_only();
            }
        }
    }

    /// A key only in the start side: when removed, an add becomes `-D` with the start values.
    fn before_only(&mut self) {
        let c = self.before.current.as_ref().expect("has a row");
        let kind = c.kinds[self.before.pos];
        if self.start_only == StartOnly::Removed && !is_retract(kind) {
            self.picks.push((c.store, self.before.pos));
            self.kinds.push(row_kind::DELETE);
        }
        self.before.pos += 1;
    }

    /// A key new or changed in the end state: its end row as stored.
    fn after_only(&mut self) {
        let c = self.after.current.as_ref().expect("has a row");
        self.picks.push((c.store, self.after.pos));
        self.kinds.push(c.kinds[self.after.pos]);
        self.after.pos += 1;
    }

    /// Drops the paired rows whose values did not change, builds the rest, then keeps only
    /// the batches still being read.
    fn emit(&mut self) -> Result<RecordBatch> {
        self.drop_unchanged()?;
        let batch = match self.picks.is_empty() {
            true => RecordBatch::new_empty(Arc::clone(&self.schema)),
            false => {
                let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
                let runs = contiguous_runs(&self.picks);
                for c in 0..self.schema.fields().len() {
                    if c == self.columns.kind {
                        columns.push(Arc::new(Int8Array::from(std::mem::take(&mut self.kinds))));
                        continue;
                    }
                    columns.push(gather(&self.store, c, &self.picks, &runs)?);
                }
                let options = RecordBatchOptions::new().with_row_count(Some(self.picks.len()));
                RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options)?
            }
        };
        self.picks.clear();
        self.kinds.clear();
        let old = std::mem::take(&mut self.store);
        for side in [&mut self.before, &mut self.after] {
            match &mut side.current {
                Some(c) if side.pos < c.kinds.len() => {
                    let kept = old[c.store].clone();
                    c.store = self.store.len();
                    self.store.push(kept);
                }
                _ => side.current = None,
            }
        }
        Ok(batch)
    }

    /// Removes from the pending rows the paired ones whose values equal their start row,
    /// compared in place in the stored batches.
    fn drop_unchanged(&mut self) -> Result<()> {
        let pairs = std::mem::take(&mut self.pairs);
        if pairs.is_empty() {
            return Ok(());
        }
        let starts: Vec<(usize, usize)> = pairs.iter().map(|p| p.before).collect();
        let ends: Vec<(usize, usize)> = pairs.iter().map(|p| self.picks[p.pick]).collect();
        let differ = values::differing(&self.store, &self.columns.values, &starts, &ends)?;
        if differ.count_set_bits() == pairs.len() {
            return Ok(());
        }
        let mut keep = vec![true; self.picks.len()];
        for (pair, differs) in pairs.iter().zip(differ.iter()) {
            keep[pair.pick] = differs;
        }
        let mut kept = keep.iter();
        self.picks.retain(|_| *kept.next().expect("one flag a row"));
        let mut kept = keep.iter();
        self.kinds.retain(|_| *kept.next().expect("one flag a row"));
        Ok(())
    }
}

/// `picks` as runs of consecutive rows of one stored batch: (store index, first row, length).
fn contiguous_runs(picks: &[(usize, usize)]) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &(store, row) in picks {
        match runs.last_mut() {
            Some((s, first, len)) if *s == store && *first + *len == row => *len += 1,
            _ => runs.push((store, row, 1)),
        }
    }
    runs
}

/// Column `c` of the rows `picks` (as `runs`) of the stored batches. Output rows mostly come in
/// long runs of one input batch (a newer state's rows, every one changed): those are sliced and
/// concatenated, a copy per run rather than a lookup per row; scattered rows are interleaved.
fn gather(
    store: &[RecordBatch],
    c: usize,
    picks: &[(usize, usize)],
    runs: &[(usize, usize, usize)],
) -> Result<ArrayRef> {
    if let [(s, first, len)] = runs[..] {
        return Ok(store[s].column(c).slice(first, len));
    }
    if runs.len() * 8 <= picks.len() {
        let slices: Vec<ArrayRef> = runs
            .iter()
            .map(|&(s, first, len)| store[s].column(c).slice(first, len))
            .collect();
        let slices: Vec<&dyn Array> = slices.iter().map(|a| a.as_ref()).collect();
        return Ok(concat(&slices)?);
    }
    let arrays: Vec<&dyn Array> = store.iter().map(|b| b.column(c).as_ref()).collect();
    Ok(interleave(&arrays, picks)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::util::pretty::pretty_format_batches;
    use futures::TryStreamExt;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("v", DataType::Utf8, true),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
        ]))
    }

    /// One batch per inner slice of `(k, v, kind)` rows.
    fn input(batches: &[&[(i32, &str, i8)]]) -> SendableRecordBatchStream {
        let batches: Vec<Result<RecordBatch>> = batches
            .iter()
            .map(|rows| {
                let columns: Vec<ArrayRef> = vec![
                    Arc::new(rows.iter().map(|r| Some(r.0)).collect::<Int32Array>()),
                    Arc::new(rows.iter().map(|r| Some(r.1)).collect::<StringArray>()),
                    Arc::new(Int64Array::from(vec![0; rows.len()])),
                    Arc::new(rows.iter().map(|r| Some(r.2)).collect::<Int8Array>()),
                ];
                Ok(RecordBatch::try_new(schema(), columns).unwrap())
            })
            .collect();
        Box::pin(RecordBatchStreamAdapter::new(
            schema(),
            futures::stream::iter(batches),
        ))
    }

    async fn diff(before: &[&[(i32, &str, i8)]], after: &[&[(i32, &str, i8)]], batch_size: usize) -> String {
        diff_as(before, after, StartOnly::Removed, batch_size).await
    }

    async fn diff_as(
        before: &[&[(i32, &str, i8)]],
        after: &[&[(i32, &str, i8)]],
        start_only: StartOnly,
        batch_size: usize,
    ) -> String {
        let columns = DiffColumns {
            keys: vec![0],
            values: vec![0, 1],
            kind: 3,
        };
        let stream = diff_stream(input(before), input(after), columns, start_only, batch_size).unwrap();
        let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
        assert!(batches.iter().all(|b| b.num_rows() <= batch_size));
        let projected: Vec<RecordBatch> = batches.iter().map(|b| b.project(&[0, 1, 3]).unwrap()).collect();
        pretty_format_batches(&projected).unwrap().to_string()
    }

    #[tokio::test]
    async fn keys_removed_added_changed_and_unchanged() {
        let before: &[&[(i32, &str, i8)]] = &[&[(1, "a", 0), (2, "b", 0), (3, "c", 0)], &[(5, "e", 3)]];
        let after: &[&[(i32, &str, i8)]] = &[&[(1, "A", 0)], &[(2, "b", 2), (3, "c", 3), (4, "d", 0)]];
        let expected = "\
+---+---+-------------+
| k | v | _VALUE_KIND |
+---+---+-------------+
| 1 | A | 0           |
| 3 | c | 3           |
| 4 | d | 0           |
+---+---+-------------+";
        for batch_size in [1, 2, 100] {
            assert_eq!(
                diff(before, after, batch_size).await,
                expected,
                "batch size {batch_size}"
            );
        }
    }

    #[tokio::test]
    async fn start_only_adds_become_deletes() {
        let before: &[&[(i32, &str, i8)]] = &[&[(1, "a", 0), (2, "b", 1), (7, "g", 2)]];
        let expected = "\
+---+---+-------------+
| k | v | _VALUE_KIND |
+---+---+-------------+
| 1 | a | 3           |
| 7 | g | 3           |
+---+---+-------------+";
        assert_eq!(diff(before, &[], 1).await, expected);
        assert_eq!(diff(before, &[], 10).await, expected);
    }

    #[tokio::test]
    async fn empty_inputs_give_no_rows() {
        assert_eq!(diff(&[], &[], 8).await, "++\n++");
        let same: &[&[(i32, &str, i8)]] = &[&[(1, "a", 0)], &[(2, "b", 3)]];
        assert_eq!(diff(same, same, 8).await, "++\n++");
    }

    /// The end side holds only newer files: keys it lacks are unchanged, the rest compare as
    /// before (an unchanged value, a changed one, a new key, a deletion of an add and of a key
    /// that was already deleted).
    #[tokio::test]
    async fn newer_files_only_leave_other_keys_unchanged() {
        let before: &[&[(i32, &str, i8)]] = &[
            &[(1, "a", 0), (2, "b", 0), (3, "c", 0)],
            &[(5, "e", 3), (6, "f", 0)],
            &[(9, "i", 0)],
        ];
        let after: &[&[(i32, &str, i8)]] = &[
            &[(2, "b", 2), (3, "C", 2)],
            &[(4, "d", 0), (5, "e", 3), (6, "f", 3)],
        ];
        let expected = "\
+---+---+-------------+
| k | v | _VALUE_KIND |
+---+---+-------------+
| 3 | C | 2           |
| 4 | d | 0           |
| 6 | f | 3           |
+---+---+-------------+";
        for batch_size in [1, 2, 100] {
            assert_eq!(
                diff_as(before, after, StartOnly::Unchanged, batch_size).await,
                expected,
                "batch size {batch_size}"
            );
        }
        assert_eq!(diff_as(before, &[], StartOnly::Unchanged, 4).await, "++\n++");
    }
}

/// The diff against a model over random states: integer keys (compared as narrow keys) and
/// string keys (as rows), split into batches at random, in both start-only modes.
#[cfg(test)]
mod model_tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use futures::TryStreamExt;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    /// key → (value, kind); a value of `None` is a null.
    type State = BTreeMap<i64, (Option<i64>, i8)>;

    fn schema(string_key: bool) -> SchemaRef {
        let key = if string_key {
            DataType::Utf8
        } else {
            DataType::Int64
        };
        Arc::new(Schema::new(vec![
            Field::new("k", key, false),
            Field::new("v", DataType::Int64, true),
            Field::new("_VALUE_KIND", DataType::Int8, false),
        ]))
    }

    /// Keys as strings keep their order when zero-padded.
    fn key_string(k: i64) -> String {
        format!("key-{k:06}")
    }

    fn input(state: &State, string_key: bool, rng: &mut StdRng) -> SendableRecordBatchStream {
        let rows: Vec<_> = state.iter().collect();
        let mut batches = Vec::new();
        let mut start = 0;
        while start < rows.len() {
            let end = (start + rng.random_range(0..40)).min(rows.len());
            let part = &rows[start..end];
            let key: ArrayRef = if string_key {
                Arc::new(StringArray::from_iter_values(
                    part.iter().map(|(k, _)| key_string(**k)),
                ))
            } else {
                Arc::new(Int64Array::from_iter_values(part.iter().map(|(k, _)| **k)))
            };
            let columns: Vec<ArrayRef> = vec![
                key,
                Arc::new(part.iter().map(|(_, (v, _))| *v).collect::<Int64Array>()),
                Arc::new(part.iter().map(|(_, (_, kind))| *kind).collect::<Int8Array>()),
            ];
            batches.push(Ok(RecordBatch::try_new(schema(string_key), columns).unwrap()));
            start = end;
        }
        Box::pin(RecordBatchStreamAdapter::new(
            schema(string_key),
            futures::stream::iter(batches),
        ))
    }

    fn random_row(rng: &mut StdRng) -> (Option<i64>, i8) {
        let value = (rng.random_range(0..6) > 0).then(|| rng.random_range(0..3));
        let kind = [row_kind::INSERT, row_kind::UPDATE_AFTER, row_kind::DELETE][rng.random_range(0..3)];
        (value, kind)
    }

    /// The model's rows: (key, value, kind) in key order.
    fn model(before: &State, after: &State, start_only: StartOnly) -> Vec<(i64, Option<i64>, i8)> {
        let keys: std::collections::BTreeSet<i64> = before.keys().chain(after.keys()).copied().collect();
        let mut out = Vec::new();
        for k in keys {
            match (before.get(&k), after.get(&k)) {
                (Some(&(v, kind)), None) => {
                    if start_only == StartOnly::Removed && !is_retract(kind) {
                        out.push((k, v, row_kind::DELETE));
                    }
                }
                (None, Some(&(v, kind))) => out.push((k, v, kind)),
                (Some(&(bv, bk)), Some(&(av, ak))) => {
                    if bv != av || is_retract(bk) != is_retract(ak) {
                        out.push((k, av, ak));
                    }
                }
                (None, None) => unreachable!(),
            }
        }
        out
    }

    #[tokio::test]
    async fn matches_a_model() {
        for seed in 0..300u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let (mut before, mut after) = (State::new(), State::new());
            for k in 0..rng.random_range(0..150) {
                let row = random_row(&mut rng);
                match rng.random_range(0..4) {
                    0 => {
                        before.insert(k, row);
                    }
                    1 => {
                        after.insert(k, row);
                    }
                    2 => {
                        before.insert(k, row);
                        after.insert(k, row);
                    }
                    _ => {
                        before.insert(k, row);
                        after.insert(k, random_row(&mut rng));
                    }
                }
            }
            let string_key = seed % 2 == 1;
            for start_only in [StartOnly::Removed, StartOnly::Unchanged] {
                let batch_size = rng.random_range(1..50);
                let columns = DiffColumns {
                    keys: vec![0],
                    values: vec![0, 1],
                    kind: 2,
                };
                let stream = diff_stream(
                    input(&before, string_key, &mut rng),
                    input(&after, string_key, &mut rng),
                    columns,
                    start_only,
                    batch_size,
                )
                .unwrap();
                let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
                let mut got = Vec::new();
                for batch in &batches {
                    assert!(batch.num_rows() > 0 && batch.num_rows() <= batch_size);
                    let values = batch.column(1).as_primitive::<arrow::datatypes::Int64Type>();
                    let kinds = batch.column(2).as_primitive::<Int8Type>();
                    for row in 0..batch.num_rows() {
                        let key = if string_key {
                            let k = batch.column(0).as_string::<i32>().value(row);
                            k["key-".len()..].parse().unwrap()
                        } else {
                            batch
                                .column(0)
                                .as_primitive::<arrow::datatypes::Int64Type>()
                                .value(row)
                        };
                        got.push((
                            key,
                            values.is_valid(row).then(|| values.value(row)),
                            kinds.value(row),
                        ));
                    }
                }
                assert_eq!(
                    got,
                    model(&before, &after, start_only),
                    "seed {seed}, {start_only:?}, batch size {batch_size}"
                );
            }
        }
    }
}
