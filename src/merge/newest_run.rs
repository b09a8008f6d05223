//! Deduplicate without key order, for reads that do not need it (a query's scan).
//!
//! When the runs of a section are ordered by sequence number (every number of a run above every
//! number of the runs before it), a key's newest record is its record in the newest run that
//! holds the key. A record then survives unless a newer run holds its key: no loser tree and no
//! per-key groups are needed. The runs advance together, a chunk of keys at a time:
//!
//! ```text
//! runs (oldest .. newest), the current batch of each
//!   frontier = the smallest last key of those batches: every record of a key up to the
//!              frontier is in them (later batches of a run hold greater keys only)
//!   each run's rows up to the frontier
//!     minus the keys the newer runs' rows up to the frontier hold: dense integer keys by a
//!     bitmap of the chunk's key span, other exact sort keys by a linear merge against the
//!     union of the newer runs' keys, long keys by galloping searches
//!     minus retractions, unless kept
//!   ──► one filter kernel per run ──► its batch of the chunk
//! ```
//!
//! Within a chunk rows come out run by run, not in key order, so a diff or a compaction, which
//! need key order, merge with [`super::stream`] instead. A sorted run holds each key at most once
//! (semantics.md §4); should a batch repeat a key, its later record wins, as in the merge.

use std::collections::VecDeque;
use std::time::Instant;

use arrow::array::{BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::BooleanBuffer;
use arrow::compute::FilterBuilder;
use arrow::datatypes::SchemaRef;
use arrow::row::RowConverter;
use datafusion::common::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use super::cursor::{gallop, partition_point, RunCursor, LONG};
use super::engine::is_retract;
use super::stream::next_non_empty;
use super::{MergeMetrics, MergeOptions};

/// More runs than this are merged instead: the runs are compared pairwise, which the merge's
/// loser tree outgrows.
pub(crate) const MAX_RUNS: usize = 8;

/// Keeps, for every key, its record in the newest of `runs` (ordered oldest first, each run's
/// sequence numbers above the previous run's), and drops retracting winners unless
/// `options.keep_retracts`. Output rows are not in key order (see the module comment).
pub(crate) fn newest_of_ordered_runs(
    schema: SchemaRef,
    runs: Vec<SendableRecordBatchStream>,
    options: MergeOptions,
    metrics: MergeMetrics,
) -> Result<SendableRecordBatchStream> {
    let converter = super::validate(&schema, &options)?;
    let state = NewestRuns {
        fronts: runs.iter().map(|_| None).collect(),
        spent: runs.iter().map(|_| None).collect(),
        runs: runs.into_iter().map(Some).collect(),
        converter,
        options,
        metrics,
        ready: VecDeque::new(),
        seen: [Vec::new(), Vec::new()],
        seen_narrow: [Vec::new(), Vec::new()],
        narrow: Vec::new(),
        bits: Vec::new(),
    };
    let output = futures::stream::try_unfold(state, |mut state| async move {
        Ok(state.next_batch().await?.map(|batch| (batch, state)))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)))
}

/// The current batch of a run and how far it is consumed.
struct Front {
    batch: RecordBatch,
    cursor: RunCursor,
    pos: usize,
}

struct NewestRuns {
    /// Input runs, oldest first; `None` once exhausted.
    runs: Vec<Option<SendableRecordBatchStream>>,
    /// The current batch of each run; `None` before the first and after the last.
    fronts: Vec<Option<Front>>,
    /// A run's consumed cursor, until its next batch is checked against it (and reuses it).
    spent: Vec<Option<RunCursor>>,
    converter: RowConverter,
    options: MergeOptions,
    metrics: MergeMetrics,
    /// Output batches of the last chunk not yet returned.
    ready: VecDeque<RecordBatch>,
    /// Buffers of [`clear_shared_exact`].
    seen: [Vec<u128>; 2],
    /// The same for keys narrowed to `u64` ([`narrow_keys`]), and the narrowed keys.
    seen_narrow: [Vec<u64>; 2],
    narrow: Vec<Vec<u64>>,
    /// The bitmap of [`clear_shared_dense`].
    bits: Vec<u64>,
}

impl NewestRuns {
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                self.metrics.output_rows.add(batch.num_rows());
                return Ok(Some(batch));
            }
            self.refill().await?;
            let start = Instant::now();
            let more = self.chunk();
            self.metrics.merge_time.add_elapsed(start);
            if !more? {
                return Ok(None);
            }
        }
    }

    /// Gives every run whose batch is consumed its next non-empty batch.
    async fn refill(&mut self) -> Result<()> {
        for run in 0..self.runs.len() {
            if self.fronts[run].as_ref().is_some_and(|f| f.pos < f.cursor.len()) {
                continue;
            }
            if let Some(front) = self.fronts[run].take() {
                self.spent[run] = Some(front.cursor);
            }
            let Some(batch) = next_non_empty(&mut self.runs[run]).await? else {
                continue;
            };
            let o = &self.options;
            let cursor = RunCursor::try_new(
                &batch,
                &self.converter,
                &o.key_columns,
                o.seq_column,
                o.kind_column,
                self.spent[run].take(),
                false,
            )
            .map_err(|e| e.context(format!("sorted run {run}")))?;
            self.metrics.input_rows.add(batch.num_rows());
            self.fronts[run] = Some(Front {
                batch,
                cursor,
                pos: 0,
            });
        }
        Ok(())
    }

    /// Decides the rows of every key up to the frontier into `ready`; `false` when every run
    /// is exhausted.
    fn chunk(&mut self) -> Result<bool> {
        let live: Vec<(usize, &Front)> = self
            .fronts
            .iter()
            .enumerate()
            .filter_map(|(run, f)| f.as_ref().map(|f| (run, f)))
            .collect();
        let Some(&(_, mut frontier)) = live.first() else {
            return Ok(false);
        };
        for &(_, front) in &live[1..] {
            let (a, b) = (&front.cursor, &frontier.cursor);
            if a.cmp_rows(a.len() - 1, b, b.len() - 1).is_lt() {
                frontier = front;
            }
        }
        let (bound, bound_row) = (&frontier.cursor, frontier.cursor.len() - 1);
        // each live run's rows up to the frontier: [pos, end)
        let ends: Vec<usize> = live
            .iter()
            .map(|(_, f)| {
                partition_point(f.pos, f.cursor.len(), |row| {
                    !f.cursor.cmp_rows(row, bound, bound_row).is_gt()
                })
            })
            .collect();
        let mut keeps: Vec<Vec<bool>> = live
            .iter()
            .zip(&ends)
            .map(|((_, f), end)| vec![true; end - f.pos])
            .collect();
        for ((_, front), (end, keep)) in live.iter().zip(ends.iter().zip(keeps.iter_mut())) {
            // a key the run repeats: its later record wins
            for &dup in front.cursor.duplicates() {
                if dup > front.pos && dup < *end {
                    keep[dup - 1 - front.pos] = false;
                }
            }
        }
        let sort_keys: Vec<&[u128]> = live
            .iter()
            .zip(&ends)
            .map(|((_, f), end)| &f.cursor.sort_keys()[f.pos..*end])
            .collect();
        // (narrowed keys are exact: checked first, it saves the common case a pass; a key of
        // one integer column has the same first byte and length in every sort key)
        let fixed = live.iter().all(|(_, f)| f.cursor.has_integer_key());
        if narrow_keys(&sort_keys, fixed, &mut self.narrow) {
            let narrow: Vec<&[u64]> = self.narrow.iter().map(Vec::as_slice).collect();
            if !clear_shared_dense(&narrow, &mut keeps, &mut self.bits) {
                clear_shared_exact(&narrow, &mut keeps, &mut self.seen_narrow);
            }
        } else if sort_keys.iter().all(|keys| keys.iter().all(|k| k & LONG != LONG)) {
            clear_shared_exact(&sort_keys, &mut keeps, &mut self.seen);
        } else {
            for (older, ((_, a), keep)) in live.iter().zip(keeps.iter_mut()).enumerate() {
                let a_rows = a.pos..ends[older];
                for (newer, (_, b)) in live.iter().enumerate().skip(older + 1) {
                    clear_shared(&a.cursor, a_rows.clone(), &b.cursor, b.pos..ends[newer], keep);
                }
            }
        }
        // One pass per run builds its filter's bitmap: kept unless shadowed, and unless a
        // retraction the view drops.
        let keep_retracts = self.options.keep_retracts;
        let (mut shadowed, mut dropped) = (0, 0);
        let runs: Vec<usize> = live.iter().map(|(run, _)| *run).collect();
        for ((run, end), keep) in runs.into_iter().zip(ends).zip(keeps) {
            let front = self.fronts[run].as_mut().expect("a live run has a front");
            let (pos, rows) = (front.pos, end - front.pos);
            front.pos = end;
            let survivors = keep.iter().filter(|k| **k).count();
            shadowed += rows - survivors;
            let mask = if keep_retracts {
                BooleanBuffer::from(keep)
            } else {
                let kinds = &front.cursor.kinds()[pos..end];
                BooleanBuffer::collect_bool(rows, |i| keep[i] & !is_retract(kinds[i]))
            };
            let kept = mask.count_set_bits();
            dropped += survivors - kept;
            if kept == 0 {
                continue;
            }
            let batch = front.batch.slice(pos, rows);
            self.ready.push_back(match kept == rows {
                true => batch,
                false => filter_rows(&batch, mask, kept)?,
            });
        }
        self.metrics.rows_merged_away.add(shadowed);
        self.metrics.retracts_dropped.add(dropped);
        Ok(true)
    }
}

/// The rows of `batch` that `keep` marks (`kept` of them). A column of nulls only (a field the
/// read does not decode) is sliced rather than filtered: it keeps its shared buffer.
fn filter_rows(batch: &RecordBatch, keep: BooleanBuffer, kept: usize) -> Result<RecordBatch> {
    let predicate = FilterBuilder::new(&BooleanArray::new(keep, None))
        .optimize()
        .build();
    let columns = batch
        .columns()
        .iter()
        .map(|column| match column.null_count() == column.len() {
            true => Ok(column.slice(0, kept)),
            false => predicate.filter(column),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(kept));
    Ok(RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &options,
    )?)
}

/// Clears `keeps[r][i]` where key `i` of run `r` is held by a newer run, for keys that are all
/// exact [`super::cursor::sort_key`]s (`runs[r]`, sorted, oldest run first): equal sort keys are
/// then equal keys. From the newest run down, each run is checked against the union of the newer
/// runs' keys, then merged into it: one linear pass each, with no branch on the comparisons.
/// `seen` and its spare are buffers reused across chunks.
fn clear_shared_exact<K: Copy + Ord>(runs: &[&[K]], keeps: &mut [Vec<bool>], seen: &mut [Vec<K>; 2]) {
    let Some((newest, older)) = runs.split_last() else {
        return;
    };
    let [union, spare] = seen;
    union.clear();
    union.extend_from_slice(newest);
    for (r, keys) in older.iter().enumerate().rev() {
        let keep = &mut keeps[r];
        let (mut i, mut j) = (0, 0);
        while i < keys.len() && j < union.len() {
            let (a, b) = (keys[i], union[j]);
            keep[i] &= a != b;
            i += usize::from(a <= b);
            j += usize::from(b <= a);
        }
        if r == 0 {
            break;
        }
        // union ∪ keys, in order (a key in both once)
        spare.clear();
        spare.reserve(union.len() + keys.len());
        let (mut i, mut j) = (0, 0);
        while i < keys.len() && j < union.len() {
            let (a, b) = (keys[i], union[j]);
            spare.push(a.min(b));
            i += usize::from(a <= b);
            j += usize::from(b <= a);
        }
        spare.extend_from_slice(&keys[i..]);
        spare.extend_from_slice(&union[j..]);
        std::mem::swap(union, spare);
    }
}

/// Narrows exact sort keys to `u64`s that order (and tell apart) the rows the same way, into
/// `out` (one vector per run), when every row has the same length of at most 9 bytes and the
/// same first byte (a non-null `BIGINT` key is a 9-byte row whose first byte marks it valid):
/// the rest of the row then fits bytes 1..=8 of the sort key. Half the width per comparison.
///
/// `fixed`: the caller knows every key to have the same first byte and length (skips checking).
fn narrow_keys(runs: &[&[u128]], fixed: bool, out: &mut Vec<Vec<u64>>) -> bool {
    let Some(&first) = runs.iter().find_map(|keys| keys.first()) else {
        return false;
    };
    // the first byte and the length tag, which must be equal for all
    const FIXED: u128 = (0xFF << 120) | 0xFF;
    if first & 0xFF > 9 {
        return false;
    }
    if !fixed
        && !runs
            .iter()
            .all(|keys| keys.iter().all(|k| k & FIXED == first & FIXED))
    {
        return false;
    }
    // right-aligned, so that consecutive integer keys narrow to consecutive numbers
    let shift = 8 * (9 - (first & 0xFF) as u32);
    out.resize_with(runs.len(), Vec::new);
    for (keys, narrow) in runs.iter().zip(out.iter_mut()) {
        narrow.clear();
        narrow.extend(
            keys.iter()
                .map(|k| ((k >> 56) as u64).checked_shr(shift).unwrap_or(0)),
        );
    }
    true
}

/// [`clear_shared_exact`] for narrowed keys that lie close together (dense integer keys,
/// the usual ids): one bit per possible key between the chunk's smallest and largest, so each
/// key is one independent bit test and set instead of a step of a merge that waits on the
/// previous one. `false` (nothing done) when the keys are too sparse for that.
fn clear_shared_dense(runs: &[&[u64]], keeps: &mut [Vec<bool>], bits: &mut Vec<u64>) -> bool {
    let lo = runs.iter().filter_map(|keys| keys.first()).min();
    let hi = runs.iter().filter_map(|keys| keys.last()).max();
    let (Some(&lo), Some(&hi)) = (lo, hi) else {
        return true;
    };
    let rows: u64 = runs.iter().map(|keys| keys.len() as u64).sum();
    let span = hi - lo + 1;
    if span > 8 * rows + 1024 {
        return false;
    }
    bits.clear();
    bits.resize(span.div_ceil(64) as usize, 0);
    let newest = runs.len() - 1;
    for (r, keys) in runs.iter().enumerate().rev() {
        if r < newest {
            for (keep, key) in keeps[r].iter_mut().zip(keys.iter()) {
                let at = key - lo;
                *keep &= bits[(at / 64) as usize] >> (at % 64) & 1 == 0;
            }
        }
        if r > 0 {
            for key in keys.iter() {
                let at = key - lo;
                bits[(at / 64) as usize] |= 1 << (at % 64);
            }
        }
    }
    true
}

/// Clears `keep[i - a_rows.start]` for every row `i` of `a_rows` whose key a row of `b_rows`
/// (of `b`'s batch) holds. Both are sorted by key: the shorter is walked, and the longer searched
/// by galloping from where the last search ended.
fn clear_shared(
    a: &RunCursor,
    a_rows: std::ops::Range<usize>,
    b: &RunCursor,
    b_rows: std::ops::Range<usize>,
    keep: &mut [bool],
) {
    if a_rows.len() <= b_rows.len() {
        let mut j = b_rows.start;
        for i in a_rows.clone() {
            j = gallop(j, b_rows.end, |j| b.cmp_rows(j, a, i).is_lt());
            if j == b_rows.end {
                return;
            }
            if b.cmp_rows(j, a, i).is_eq() {
                keep[i - a_rows.start] = false;
            }
        }
    } else {
        let mut i = a_rows.start;
        for j in b_rows {
            i = gallop(i, a_rows.end, |i| a.cmp_rows(i, b, j).is_lt());
            if i == a_rows.end {
                return;
            }
            if a.cmp_rows(i, b, j).is_eq() {
                keep[i - a_rows.start] = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{new_null_array, Array, Int64Array, RecordBatch};
    use arrow::buffer::BooleanBuffer;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::{clear_shared_dense, clear_shared_exact, filter_rows};

    /// Values are filtered; a column of nulls only is sliced, sharing its buffer.
    #[test]
    fn filtering_slices_columns_of_nulls() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
        ]));
        let nulls = new_null_array(&DataType::Int64, 5);
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5])),
                Arc::clone(&nulls),
            ],
        )
        .unwrap();
        let keep = BooleanBuffer::from(vec![true, false, true, false, true]);
        let kept = filter_rows(&batch, keep, 3).unwrap();
        assert_eq!(
            kept.column(0).as_ref(),
            &Int64Array::from(vec![1, 3, 5]) as &dyn Array
        );
        assert_eq!((kept.column(1).len(), kept.column(1).null_count()), (3, 3));
        assert_eq!(
            kept.column(1).to_data().buffers()[0].as_ptr(),
            nulls.to_data().buffers()[0].as_ptr()
        );
    }

    /// The two ways of clearing shadowed narrowed keys agree: the bitmap and the merge.
    #[test]
    fn dense_and_merged_clearing_agree() {
        let runs: [&[u64]; 3] = [&[1, 2, 3, 5, 8, 13], &[2, 3, 4, 13], &[3, 5, 14]];
        let fresh = || runs.iter().map(|r| vec![true; r.len()]).collect::<Vec<_>>();
        let mut dense = fresh();
        assert!(clear_shared_dense(&runs, &mut dense, &mut Vec::new()));
        let mut merged = fresh();
        clear_shared_exact(&runs, &mut merged, &mut [Vec::new(), Vec::new()]);
        assert_eq!(dense, merged);
        assert_eq!(
            dense,
            vec![
                vec![true, false, false, false, true, false],
                vec![true, false, true, true],
                vec![true, true, true]
            ]
        );
        // keys a billion apart are too sparse for a bitmap
        let sparse: [&[u64]; 2] = [&[0, 1 << 30], &[1 << 30]];
        assert!(!clear_shared_dense(
            &sparse,
            &mut [vec![true; 2], vec![true]],
            &mut Vec::new()
        ));
    }
}
