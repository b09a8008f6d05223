//! The merge state machine: a synchronous inner loop over the cursors that stops whenever a
//! cursor needs its next batch or an output batch is full, and an async outer loop that
//! fetches batches and emits output.

use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::row::{OwnedRow, RowConverter};
use datafusion::common::Result;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;

use super::builder::{GroupOutput, OutputBuilder};
use super::cursor::{KeyForm, RunCursor, LONG};
use super::engine::{MergeFunction, Outcome};
use super::loser_tree::{Leaf, LoserTree};
use super::reduce::GroupReducer;
use super::{MergeMetrics, MergeOptions};

/// Strict order of cursors for the loser tree: by current key, then by run index; finished
/// cursors (whose sort key is `u128::MAX`) sort last.
///
/// Decided on the cached sort keys; only equal keys of rows longer than 15 bytes, and finished
/// cursors (`u128::MAX` is a "long" key), need the cursors ([`cursor_gt_slow`]).
#[inline(always)]
fn leaf_gt(cursors: &[Option<RunCursor>], a: Leaf, b: Leaf) -> bool {
    let equal = a.key == b.key;
    if equal && a.key & LONG == LONG {
        return cursor_gt_slow(cursors, a.index, b.index);
    }
    // no branch on the (unpredictable) outcome
    (a.key > b.key) | (equal & (a.index > b.index))
}

#[cold]
#[inline(never)]
fn cursor_gt_slow(cursors: &[Option<RunCursor>], a: usize, b: usize) -> bool {
    match (&cursors[a], &cursors[b]) {
        (None, _) => true,
        (_, None) => false,
        (Some(ca), Some(cb)) => match ca.cmp_head(cb) {
            std::cmp::Ordering::Equal => a > b,
            ordering => ordering == std::cmp::Ordering::Greater,
        },
    }
}

/// Where the key of the pending group lives.
#[derive(Debug)]
enum GroupKey {
    /// Row `pos` of cursor `run`'s current batch.
    Cursor { run: usize, pos: usize },
    /// Copied out because that batch was replaced while the group was still open.
    Owned(OwnedRow),
}

/// A key group whose records have not all been seen yet.
#[derive(Debug)]
struct Group {
    key: GroupKey,
    size: usize,
}

/// Why the synchronous loop stopped.
enum Progress {
    /// Cursor `run` consumed its batch; fetch the run's next batch, then replay the tree.
    NeedRefill(usize),
    /// The output batch is full.
    Full,
    /// All runs are exhausted.
    Done,
}

pub(super) struct MergeStream<F: MergeFunction> {
    /// Input runs; `None` once exhausted.
    runs: Vec<Option<SendableRecordBatchStream>>,
    /// Cursor over the current batch of each run; `None` once the run is exhausted.
    cursors: Vec<Option<RunCursor>>,
    /// Built by the first `next_batch` call, after the first batch of every run arrived.
    tree: Option<LoserTree>,
    converter: RowConverter,
    builder: OutputBuilder,
    engine: F,
    group: Option<Group>,
    options: MergeOptions,
    metrics: MergeMetrics,
    // counters accumulated locally and published once per output batch
    input_rows: usize,
    merged_away: usize,
    dropped: usize,
}

/// Next non-empty batch of a run; sets the run to `None` at its end.
pub(super) async fn next_non_empty(
    run: &mut Option<SendableRecordBatchStream>,
) -> Result<Option<RecordBatch>> {
    while let Some(stream) = run.as_mut() {
        match stream.next().await {
            Some(Ok(batch)) if batch.num_rows() == 0 => continue,
            Some(Ok(batch)) => return Ok(Some(batch)),
            Some(Err(e)) => return Err(e),
            None => *run = None,
        }
    }
    Ok(None)
}

impl<F: MergeFunction> MergeStream<F> {
    pub(super) fn new(
        runs: Vec<SendableRecordBatchStream>,
        converter: RowConverter,
        options: MergeOptions,
        metrics: MergeMetrics,
        engine: F,
        reducer: Option<Arc<dyn GroupReducer>>,
    ) -> Self {
        let cursors = runs.iter().map(|_| None).collect();
        let reducer = reducer.map(|reducer| GroupOutput {
            reducer,
            kind_column: options.kind_column,
            keep_retracts: options.keep_retracts,
        });
        Self {
            runs: runs.into_iter().map(Some).collect(),
            cursors,
            tree: None,
            converter,
            builder: OutputBuilder::new(options.batch_size.max(1), reducer),
            engine,
            group: None,
            options,
            metrics,
            input_rows: 0,
            merged_away: 0,
            dropped: 0,
        }
    }

    /// Produces the next output batch, or `None` at the end.
    pub(super) async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.tree.is_none() {
            // first batch of every run, fetched concurrently
            let firsts = futures::future::try_join_all(self.runs.iter_mut().map(next_non_empty)).await?;
            let start = Instant::now();
            for (run, batch) in firsts.into_iter().enumerate() {
                if let Some(batch) = batch {
                    self.install(run, batch)?;
                }
            }
            let cursors = &self.cursors;
            let keys: Vec<u128> = cursors
                .iter()
                .map(|c| c.as_ref().map_or(u128::MAX, RunCursor::head_sort_key))
                .collect();
            self.tree = Some(LoserTree::new(&keys, |a, b| leaf_gt(cursors, a, b)));
            self.metrics.merge_time.add_elapsed(start);
        }
        loop {
            let start = Instant::now();
            let progress = self.run_sync();
            self.metrics.merge_time.add_elapsed(start);
            match progress? {
                Progress::NeedRefill(run) => self.refill(run).await?,
                Progress::Full => {
                    // every row of the batch may have been a dropped group: then keep merging
                    if let Some(batch) = self.flush()? {
                        return Ok(Some(batch));
                    }
                }
                Progress::Done => {
                    return self.flush();
                }
            }
        }
    }

    /// Builds the pending output rows into a batch and publishes the counters.
    fn flush(&mut self) -> Result<Option<RecordBatch>> {
        let start = Instant::now();
        let live = self.cursors.iter_mut().flatten().map(|c| &mut c.batch);
        let batch = self.builder.build(live)?;
        let m = &self.metrics;
        m.input_rows.add(std::mem::take(&mut self.input_rows));
        m.rows_merged_away.add(std::mem::take(&mut self.merged_away));
        m.retracts_dropped.add(std::mem::take(&mut self.dropped));
        if let Some(batch) = &batch {
            m.output_rows.add(batch.num_rows());
        }
        m.merge_time.add_elapsed(start);
        Ok(batch)
    }

    /// Makes `batch` the current batch of `run`'s cursor, checking that the run stays sorted.
    fn install(&mut self, run: usize, batch: RecordBatch) -> Result<()> {
        let mut cursor = RunCursor::try_new(
            &batch,
            &self.converter,
            &self.options.key_columns,
            self.options.seq_column,
            self.options.kind_column,
            self.cursors[run].take(),
            KeyForm::Rows,
        )
        .map_err(|e| e.context(format!("sorted run {run}")))?;
        self.input_rows += batch.num_rows();
        cursor.batch = self.builder.push_batch(batch);
        self.cursors[run] = Some(cursor);
        Ok(())
    }

    /// Replaces the exhausted batch of `run` by the run's next batch (or finishes the cursor),
    /// then restores the tree.
    async fn refill(&mut self, run: usize) -> Result<()> {
        // The open group's key may live in the batch being replaced: copy it out (once per
        // batch at most).
        if let Some(group) = &mut self.group {
            if let GroupKey::Cursor { run: r, pos } = group.key {
                if r == run {
                    let cursor = self.cursors[run]
                        .as_ref()
                        .expect("a cursor needing a refill is live");
                    group.key = GroupKey::Owned(cursor.key(pos).owned());
                }
            }
        }
        let next = next_non_empty(&mut self.runs[run]).await?;
        let start = Instant::now();
        match next {
            Some(batch) => self.install(run, batch)?,
            // the old batch stays in the builder until the next flush
            None => self.cursors[run] = None,
        }
        let cursors = &self.cursors;
        let key = cursors[run].as_ref().map_or(u128::MAX, RunCursor::head_sort_key);
        self.tree
            .as_mut()
            .expect("the tree is built before any refill")
            .replay(key, |a, b| leaf_gt(cursors, a, b));
        self.metrics.merge_time.add_elapsed(start);
        Ok(())
    }

    /// Merges until a cursor needs a new batch, the output batch is full, or all runs are done.
    fn run_sync(&mut self) -> Result<Progress> {
        let Self {
            cursors,
            tree,
            builder,
            engine,
            group,
            merged_away,
            dropped,
            ..
        } = self;
        let tree = tree.as_mut().expect("the tree is built before merging");
        // Set when a bulk stretch ended at a key equal to another run's head: the next step
        // opens a group for that key, so the bulk attempt (runner-up, gallop) can be skipped.
        let mut group_follows = false;
        loop {
            if let Some(open) = group {
                // continue the open group while the smallest head has the group's key
                let w = tree.winner();
                let same_key = match &cursors[w] {
                    None => false,
                    Some(head) => match &open.key {
                        GroupKey::Cursor { run, pos } => {
                            let owner = cursors[*run]
                                .as_ref()
                                .expect("a group key's cursor is live until refilled");
                            owner.cmp_row_to_head(*pos, head).is_eq()
                        }
                        GroupKey::Owned(key) => key.row() == head.current(),
                    },
                };
                if same_key {
                    let head = cursors[w].as_mut().expect("checked above");
                    engine.add(head.candidate(w));
                    open.size += 1;
                    if head.advance() {
                        return Ok(Progress::NeedRefill(w));
                    }
                    let key = head.head_sort_key();
                    tree.replay(key, |a, b| leaf_gt(cursors, a, b));
                    continue;
                }
                *merged_away += open.size - 1;
                *group = None;
                match engine.finish() {
                    Outcome::Keep(winner) => builder.push_row(winner.batch, winner.row),
                    Outcome::Drop => *dropped += 1,
                    Outcome::Reduce => match engine.group() {
                        // a lone record passes through unchanged (semantics.md §2.0)
                        [single] if engine.keep_single(single.kind) => {
                            builder.push_row(single.batch, single.row)
                        }
                        [_] => *dropped += 1,
                        members => builder.push_group(members),
                    },
                }
                continue;
            }

            if builder.is_full() {
                return Ok(Progress::Full);
            }
            let w = tree.winner();
            let Some(head) = cursors[w].as_mut() else {
                return Ok(Progress::Done);
            };

            // Bulk path: rows of the winning run strictly below every other run's head key
            // (and followed by a greater key in the same run) are the only record of their key.
            let pos = head.pos();
            let limit = head.safe_limit().min(pos + builder.capacity());
            if pos < limit && !std::mem::take(&mut group_follows) {
                let runner_up = tree.runner_up(|a, b| leaf_gt(cursors, a, b));
                let head = cursors[w].as_ref().expect("checked above");
                let other = runner_up.and_then(|r| cursors[r].as_ref());
                let end = match other {
                    Some(other) => head.gallop_lower_bound(pos, limit, other),
                    None => limit,
                };
                if end > pos {
                    group_follows =
                        end < limit && other.is_some_and(|other| head.cmp_row_to_head(end, other).is_eq());
                    let batch = head.batch;
                    let kinds = &head.kinds()[pos..end];
                    let mut kept_from = pos;
                    for (i, &kind) in kinds.iter().enumerate() {
                        if !engine.keep_single(kind) {
                            builder.push_range(batch, kept_from, pos + i);
                            kept_from = pos + i + 1;
                            *dropped += 1;
                        }
                    }
                    builder.push_range(batch, kept_from, end);
                    // end <= safe_limit < len: the cursor stays live
                    let head = cursors[w].as_mut().expect("checked above");
                    head.skip_to(end);
                    let key = head.head_sort_key();
                    tree.replay(key, |a, b| leaf_gt(cursors, a, b));
                    continue;
                }
            }

            // Slow path: open a group with the smallest record.
            let head = cursors[w].as_mut().expect("checked above");
            engine.start(head.candidate(w));
            *group = Some(Group {
                key: GroupKey::Cursor { run: w, pos },
                size: 1,
            });
            if head.advance() {
                return Ok(Progress::NeedRefill(w));
            }
            let key = head.head_sort_key();
            tree.replay(key, |a, b| leaf_gt(cursors, a, b));
        }
    }

    #[cfg(test)]
    pub(super) fn stored_batches(&self) -> usize {
        self.builder.stored_batches()
    }

    #[cfg(test)]
    pub(super) fn live_cursors(&self) -> usize {
        self.cursors.iter().flatten().count()
    }
}
