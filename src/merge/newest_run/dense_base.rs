//! Deduplicate over a dense oldest run (the base: keys `lo, lo + 1, …, hi` in row order, as a
//! bulk load of ids writes them), for reads that need no key order.
//!
//! ```text
//! newer runs, whole ──► their merge, as newest_of_ordered_runs (their survivors, which come
//!                       out first), setting each chunk's keys on the board ([`NewerKeys`])
//!                       from the chunk's own bitmap, a word at a time
//! base run ──► once the newer runs are spent: a row survives unless its key's bit is set
//!              (64 rows a word, from the bitmap as it is) ──► one filter kernel per batch
//!
//! or, in a piece that reads the newer runs for their keys only:
//! base run ──► a batch up to key k is masked as above once the board has every run marked
//!              through k; until then it is held back and the next batch is read (nothing
//!              waits). With no room to hold more (MAX_DEFERRED_BYTES, the memory pool) or no
//!              batch left, the runs the board lacks are read here until they pass k.
//! ```
//!
//! The base is the oldest run, so it shadows nothing: the newer runs' survivors are those of a
//! merge of the newer runs alone. A base row survives unless a newer run holds its key, newer
//! retractions included. The base's keys are never compared one by one: a batch of consecutive
//! keys (every batch, unless a deletion vector or a filter left gaps) is a slice of the bitmap.
//! The bitmap takes one bit per key of the section's span.

use std::collections::VecDeque;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{Int64Type, Int8Type, SchemaRef};
use datafusion::common::{exec_datafusion_err, Result};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{StreamExt, TryStreamExt};

use super::newer_keys::NewerKeys;
use super::{integer_keys, newest_of_runs_marking, Placeholders};
use crate::merge::{MergeMetrics, MergeOptions};

/// The largest span of base keys given a bitmap (64 Mi keys: 8 MiB).
pub(crate) const MAX_SPAN: u64 = 1 << 26;

/// The most bytes of base batches a piece reading the newer runs' keys holds back while the
/// board lacks their keys: at the start of a scan, about the time the piece reading the newer
/// runs whole takes to decode their first batches (dictionary pages included).
pub(crate) const MAX_DEFERRED_BYTES: usize = 32 << 20;

/// How the base's piece reads the newer runs, and where their keys are marked.
pub(crate) enum NewerRead {
    /// Whole: their survivors come out first, and their keys are published on the board as they
    /// are marked.
    Whole(Arc<NewerKeys>),
    /// Only the keys in the base's range, and only as far as the board lacks them; another
    /// piece outputs the survivors. `runs[i]`: the board's run of the `i`-th newer stream.
    ///
    /// A base batch whose keys the board does not cover yet is held back (`deferral`, at most
    /// [`MAX_DEFERRED_BYTES`]) while later ones are read, as the piece reading the newer runs
    /// whole soon covers it. Only when there is no room left, or no base batch left to read,
    /// does this piece read the keys the board lacks itself.
    KeysOnly {
        board: Arc<NewerKeys>,
        runs: Vec<usize>,
        deferral: MemoryReservation,
    },
}

impl NewerRead {
    /// The board the newer runs' keys are marked on.
    pub(crate) fn board(&self) -> &Arc<NewerKeys> {
        match self {
            NewerRead::Whole(board) | NewerRead::KeysOnly { board, .. } => board,
        }
    }
}

/// Keeps, for every key, its record in the newest run that holds it, as
/// [`newest_of_ordered_runs`] does for `base` followed by `newer`, where `base` is the oldest
/// run and every key of it lies in `span` (the caller knows it from the files' statistics,
/// and the board covers it). Output: the newer runs' survivors (unless they are read for their
/// keys only), then the base's, not in key order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn newest_over_dense_base(
    schema: SchemaRef,
    base: SendableRecordBatchStream,
    span: RangeInclusive<i64>,
    newer: Vec<SendableRecordBatchStream>,
    read: NewerRead,
    options: MergeOptions,
    metrics: MergeMetrics,
    read_columns: Option<&[usize]>,
) -> Result<SendableRecordBatchStream> {
    let &[key] = options.key_columns.as_slice() else {
        return Err(exec_datafusion_err!("a dense base run needs a single key column"));
    };
    let board = Arc::clone(read.board());
    let (board_span, (lo, hi)) = (board.span(), (*span.start(), *span.end()));
    if !board_span.contains(&lo) || !board_span.contains(&hi) {
        return Err(exec_datafusion_err!(
            "dense base run of keys {lo}..={hi} outside the span of its section's newer keys"
        ));
    }
    let mut masker = BaseMasker {
        span,
        board: Arc::clone(&board),
        placeholders: Placeholders::new(&schema, read_columns),
        options: options.clone(),
        metrics: metrics.clone(),
    };
    if let NewerRead::KeysOnly { runs, deferral, .. } = read {
        if runs.len() != newer.len() {
            return Err(exec_datafusion_err!(
                "newer runs and their places on the board differ"
            ));
        }
        let own = newer.into_iter().zip(runs).map(|(run, board_run)| OwnKeys {
            run: Some(run),
            through: i64::MIN,
            board_run,
        });
        let piece = KeysPiece {
            base: Some(base),
            key,
            own: own.collect(),
            masker,
            deferred: VecDeque::new(),
            deferral,
        };
        let output = futures::stream::try_unfold(piece, |mut piece| async move {
            Ok(piece.next_batch().await?.map(|batch| (batch, piece)))
        });
        return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)));
    };
    // every record of a newer run shadows the base's record of its key, whatever its kind: the
    // merge of the newer runs marks them all
    let newer = newest_of_runs_marking(
        Arc::clone(&schema),
        newer,
        options,
        metrics,
        read_columns,
        Some(board),
    )?;
    // (`chain` polls the base only once the newer runs are spent: the bitmap is complete)
    let base = base
        .map(move |batch| {
            let batch = batch?;
            let keys = integer_keys(batch.column(key))?;
            masker.mask(&batch, keys.as_primitive::<Int64Type>().values())
        })
        .try_filter_map(|batch| futures::future::ready(Ok(batch)));
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, newer.chain(base))))
}

/// A piece reading the newer runs for their keys only (see the module comment).
struct KeysPiece {
    /// `None` once spent.
    base: Option<SendableRecordBatchStream>,
    key: usize,
    own: Vec<OwnKeys>,
    masker: BaseMasker,
    /// Base batches read ahead of the board, oldest first: each with its keys (as Int64) and
    /// the bytes `deferral` holds for it.
    deferred: VecDeque<(RecordBatch, ArrayRef, usize)>,
    deferral: MemoryReservation,
}

impl KeysPiece {
    /// The next masked base batch; `None` when the base is spent.
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let (batch, keys) = match self.take_covered() {
                Some(deferred) => deferred,
                None => {
                    let next = match self.base.as_mut() {
                        Some(base) => base.next().await.transpose()?,
                        None => None,
                    };
                    let Some(batch) = next else {
                        self.base = None;
                        // nothing left to read ahead: the keys the board still lacks are read here
                        let Some(last) = self.deferred.back().map(|(_, keys, _)| last_of(keys)) else {
                            return Ok(None);
                        };
                        self.read_own_through(last).await?;
                        continue;
                    };
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let keys = integer_keys(batch.column(self.key))?;
                    let last = last_of(&keys);
                    if !(self.deferred.is_empty() && self.covered(last)) {
                        self.defer(batch, keys, last).await?;
                        continue;
                    }
                    (batch, keys)
                }
            };
            if let Some(out) = self
                .masker
                .mask(&batch, keys.as_primitive::<Int64Type>().values())?
            {
                return Ok(Some(out));
            }
        }
    }

    /// The oldest batch held back, once the board covers it.
    fn take_covered(&mut self) -> Option<(RecordBatch, ArrayRef)> {
        let (_, keys, _) = self.deferred.front()?;
        if !self.covered(last_of(keys)) {
            return None;
        }
        let (batch, keys, held) = self.deferred.pop_front()?;
        self.deferral.shrink(held);
        Some((batch, keys))
    }

    /// Holds `batch` (keys `keys`, up to `last`) back until the board covers it. With no room
    /// to read further ahead, the keys the board lacks through it are read here instead, which
    /// covers the batches held back before it too.
    async fn defer(&mut self, batch: RecordBatch, keys: ArrayRef, last: i64) -> Result<()> {
        let size = self.masker.placeholders.bytes_read(&batch) + keys.get_array_memory_size();
        let room = self.deferral.size() + size <= MAX_DEFERRED_BYTES && self.deferral.try_grow(size).is_ok();
        if room {
            self.deferred.push_back((batch, keys, size));
        } else {
            self.read_own_through(last).await?;
            self.deferred.push_back((batch, keys, 0));
        }
        Ok(())
    }

    /// Whether every newer run's keys up to `last` are marked.
    fn covered(&self, last: i64) -> bool {
        let board = &self.masker.board;
        self.own
            .iter()
            .all(|run| run.through >= last || board.marked_through(run.board_run, last))
    }

    async fn read_own_through(&mut self, last: i64) -> Result<()> {
        for run in self.own.iter_mut() {
            run.mark_through(&self.masker.board, last, self.key).await?;
        }
        Ok(())
    }
}

/// The last of a batch's keys (Int64); `i64::MIN` for none (batches held back are not empty).
fn last_of(keys: &ArrayRef) -> i64 {
    let keys = keys.as_primitive::<Int64Type>().values();
    keys.last().copied().unwrap_or(i64::MIN)
}

/// A piece's own reader of one newer run's keys in its range, read only as far as the board
/// lacks them.
struct OwnKeys {
    /// `None` once spent.
    run: Option<SendableRecordBatchStream>,
    /// Every key of the run in the piece's range up to this one is marked.
    through: i64,
    board_run: usize,
}

impl OwnKeys {
    /// Makes sure every key of the run up to `last` (within the piece's range) is marked.
    async fn mark_through(&mut self, board: &NewerKeys, last: i64, key: usize) -> Result<()> {
        while self.through < last && !board.marked_through(self.board_run, last) {
            let Some(run) = self.run.as_mut() else {
                return Ok(());
            };
            match run.next().await.transpose()? {
                Some(batch) => {
                    let keys = integer_keys(batch.column(key))?;
                    let keys = keys.as_primitive::<Int64Type>().values();
                    board.mark(keys);
                    self.through = keys.last().copied().unwrap_or(self.through);
                }
                None => {
                    self.run = None;
                    self.through = i64::MAX;
                }
            }
        }
        Ok(())
    }
}

/// Filters the base's batches by the board: a row survives unless a newer run holds its key.
struct BaseMasker {
    span: RangeInclusive<i64>,
    board: Arc<NewerKeys>,
    placeholders: Placeholders,
    options: MergeOptions,
    metrics: MergeMetrics,
}

impl BaseMasker {
    /// The surviving rows of `batch`, whose keys are `keys`; `None` if none survives.
    fn mask(&mut self, batch: &RecordBatch, keys: &[i64]) -> Result<Option<RecordBatch>> {
        let start = Instant::now();
        let rows = batch.num_rows();
        // (a batch of consecutive keys lies in the span if its ends do; other batches are
        // checked key by key, as an out-of-order run would otherwise index past the bitmap)
        let consecutive = match (keys.first(), keys.last()) {
            (Some(&first), Some(&last)) => last.checked_sub(first) == Some(rows as i64 - 1),
            _ => true,
        };
        let stray = match consecutive {
            true => [keys.first(), keys.last()]
                .into_iter()
                .flatten()
                .find(|k| !self.span.contains(k)),
            false => keys.iter().find(|k| !self.span.contains(k)),
        };
        if let Some(stray) = stray {
            let (lo, hi) = (self.span.start(), self.span.end());
            return Err(exec_datafusion_err!(
                "the dense oldest run holds key {stray}, outside its files' key range {lo}..={hi}"
            ));
        }
        let mut keep = self.board.unshadowed(keys);
        let survivors = keep.count();
        if !self.options.keep_retracts {
            let kinds = batch.column(self.options.kind_column).as_primitive::<Int8Type>();
            keep.drop_retracts(kinds.values());
        }
        let kept = keep.count();
        let metrics = &self.metrics;
        metrics.input_rows.add(rows);
        metrics.rows_merged_away.add(rows - survivors);
        metrics.retracts_dropped.add(survivors - kept);
        metrics.output_rows.add(kept);
        let out = match kept {
            0 => None,
            _ => Some(self.placeholders.filter_rows(batch, keep, kept)?),
        };
        metrics.merge_time.add_elapsed(start);
        Ok(out)
    }
}
