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
//!   each run's rows up to the frontier, one bit each (`shadow::Keep`)
//!     minus the keys the newer runs' rows up to the frontier hold: dense integer keys by a
//!     bitmap of the chunk's key span, other exact sort keys by a linear merge against the
//!     union of the newer runs' keys, long keys by galloping searches
//!     minus retractions, unless kept
//!   ──► one filter kernel per run, over the columns the caller reads ──► its batch of the chunk
//! ```
//!
//! A key of one integer column stays as its values (`KeyForm::Narrow`): 8 bytes a row where a
//! sort key takes 16, and no conversion between the two.
//!
//! Within a chunk rows come out run by run, not in key order, so a diff or a compaction, which
//! need key order, merge with [`super::stream`] instead. A sorted run holds each key at most once
//! (semantics.md §4); should a batch repeat a key, its later record wins, as in the merge.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{new_null_array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::compute::{cast, FilterBuilder};
use arrow::datatypes::{DataType, Int64Type, SchemaRef};
use arrow::row::RowConverter;
use datafusion::common::{exec_datafusion_err, internal_datafusion_err, Result, ScalarValue};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use self::shadow::{clear_shared, clear_shared_dense, clear_shared_exact, Keep};
use super::cursor::{partition_point, KeyForm, RunCursor, LONG};
use super::stream::next_non_empty;
use super::{MergeMetrics, MergeOptions};

mod dense_base;
mod newer_keys;
mod shadow;

pub(crate) use dense_base::{newest_over_dense_base, NewerRead, MAX_SPAN as MAX_DENSE_BASE_SPAN};
pub(crate) use newer_keys::NewerKeys;

/// More runs than this are merged instead: the runs are compared pairwise, which the merge's
/// loser tree outgrows.
pub(crate) const MAX_RUNS: usize = 8;

/// Keeps, for every key, its record in the newest of `runs` (ordered oldest first, each run's
/// sequence numbers above the previous run's), and drops retracting winners unless
/// `options.keep_retracts`. Output rows are not in key order (see the module comment).
///
/// `read_columns`: the columns the caller reads (`None`: all). The others come out as
/// placeholders (nulls, or zeros where the schema forbids nulls) rather than filtered: a
/// `count(*)` filters no column, and the key, decoded for the merge only, is not filtered.
pub(crate) fn newest_of_ordered_runs(
    schema: SchemaRef,
    runs: Vec<SendableRecordBatchStream>,
    options: MergeOptions,
    metrics: MergeMetrics,
    read_columns: Option<&[usize]>,
) -> Result<SendableRecordBatchStream> {
    newest_of_runs_marking(schema, runs, options, metrics, read_columns, None)
}

/// [`newest_of_ordered_runs`], marking every key of every run on `board` as the chunks pass
/// (run `i` being the board's run `i`), and publishing after each chunk how far each run is
/// marked: the newer runs over a dense oldest run ([`dense_base`]). A chunk whose keys took a
/// bitmap is marked from it a word at a time.
fn newest_of_runs_marking(
    schema: SchemaRef,
    runs: Vec<SendableRecordBatchStream>,
    options: MergeOptions,
    metrics: MergeMetrics,
    read_columns: Option<&[usize]>,
    board: Option<Arc<NewerKeys>>,
) -> Result<SendableRecordBatchStream> {
    let converter = super::validate(&schema, &options)?;
    if board.is_some() && options.key_columns.len() != 1 {
        return Err(exec_datafusion_err!(
            "newer runs marked on a board need a single key column"
        ));
    }
    let placeholders = Placeholders::new(&schema, read_columns);
    let state = NewestRuns {
        fronts: runs.iter().map(|_| None).collect(),
        spent: runs.iter().map(|_| None).collect(),
        runs: runs.into_iter().map(Some).collect(),
        converter,
        options,
        metrics,
        ready: VecDeque::new(),
        scratch: Scratch::default(),
        placeholders,
        board,
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

/// Buffers reused across chunks.
#[derive(Default)]
struct Scratch {
    /// The union of newer runs' keys and its spare ([`clear_shared_exact`]).
    seen: [Vec<u128>; 2],
    /// The same for narrowed keys, and the narrowed keys ([`narrow_keys`]).
    seen_narrow: [Vec<u64>; 2],
    narrow: Vec<Vec<u64>>,
    /// The bitmap of [`clear_shared_dense`].
    bits: Vec<u64>,
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
    scratch: Scratch,
    placeholders: Placeholders,
    /// Where every key is marked ([`newest_of_runs_marking`]).
    board: Option<Arc<NewerKeys>>,
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
                // every row of the run went through a chunk before: all its keys are marked
                if let Some(board) = &self.board {
                    board.publish(run, i64::MAX);
                }
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
                KeyForm::Narrow,
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
        let live: Vec<usize> = (0..self.fronts.len())
            .filter(|&run| self.fronts[run].is_some())
            .collect();
        if live.is_empty() {
            return Ok(false);
        }
        let narrow = live.iter().all(|&run| {
            self.fronts[run]
                .as_ref()
                .is_some_and(|f| f.cursor.narrow().is_some())
        });
        if !narrow {
            for &run in &live {
                if let Some(front) = self.fronts[run].as_mut() {
                    front.cursor.widen();
                }
            }
        }
        let fronts: Vec<&Front> = live.iter().filter_map(|&run| self.fronts[run].as_ref()).collect();
        let mark_all = self.board.is_some();
        let Shadowed {
            ends,
            keeps,
            frontier,
            bitmap_from,
        } = match narrow {
            true => shadow_narrow(&fronts, &mut self.scratch, mark_all)?,
            false => shadow_sorted(&fronts, &mut self.scratch),
        };
        if let Some(board) = &self.board {
            let key = self.options.key_columns[0];
            let key_at = |(front, row): (usize, usize)| key_at(&fronts[front].batch, key, row);
            match bitmap_from {
                Some(first) => board.mark_bits(key_at(first)?, &self.scratch.bits),
                None => {
                    for (front, &end) in fronts.iter().zip(&ends) {
                        let keys = integer_keys(&front.batch.column(key).slice(front.pos, end - front.pos))?;
                        board.mark(keys.as_primitive::<Int64Type>().values());
                    }
                }
            }
            let through = key_at(frontier)?;
            for &run in &live {
                board.publish(run, through);
            }
        }
        // Each run's filter: kept unless shadowed, and unless a retraction the view drops.
        let keep_retracts = self.options.keep_retracts;
        let (mut shadowed, mut dropped) = (0, 0);
        for ((run, end), mut keep) in live.into_iter().zip(ends).zip(keeps) {
            let front = self.fronts[run].as_mut().expect("a live run has a front");
            let (pos, rows) = (front.pos, end - front.pos);
            front.pos = end;
            let survivors = keep.count();
            shadowed += rows - survivors;
            if !keep_retracts {
                keep.drop_retracts(&front.cursor.kinds()[pos..end]);
            }
            let kept = keep.count();
            dropped += survivors - kept;
            if kept == 0 {
                continue;
            }
            let batch = front.batch.slice(pos, rows);
            self.ready
                .push_back(self.placeholders.filter_rows(&batch, keep, kept)?);
        }
        self.metrics.rows_merged_away.add(shadowed);
        self.metrics.retracts_dropped.add(dropped);
        Ok(true)
    }
}

/// What a chunk's shadowing found: each run's rows up to the frontier (the end of each), and
/// which of them no newer run shadows.
struct Shadowed {
    ends: Vec<usize>,
    keeps: Vec<Keep>,
    /// The frontier's row: (front, row) of the largest key every run is decided through.
    frontier: (usize, usize),
    /// When the keys took a bitmap ([`clear_shared_dense`], in `Scratch::bits`): the row of its
    /// first key.
    bitmap_from: Option<(usize, usize)>,
}

/// For runs whose keys are all narrow ([`RunCursor::narrow`]). `mark_all`: a bitmap also
/// takes the oldest run's keys, so it holds every key of the chunk.
fn shadow_narrow(fronts: &[&Front], scratch: &mut Scratch, mark_all: bool) -> Result<Shadowed> {
    let keys: Vec<&[u64]> = fronts
        .iter()
        .map(|f| &f.cursor.narrow().expect("narrow keys")[f.pos..])
        .collect();
    let (frontier_front, frontier) = keys
        .iter()
        .enumerate()
        .filter_map(|(front, keys)| Some((front, *keys.last()?)))
        .min_by_key(|&(_, key)| key)
        .ok_or_else(|| internal_datafusion_err!("a chunk of runs without rows left"))?;
    let keys: Vec<&[u64]> = keys
        .into_iter()
        .map(|keys| &keys[..keys.partition_point(|&key| key <= frontier)])
        .collect();
    let ends: Vec<usize> = fronts.iter().zip(&keys).map(|(f, k)| f.pos + k.len()).collect();
    let mut keeps = new_keeps(fronts, &ends);
    let dense = clear_shared_dense(&keys, &mut keeps, &mut scratch.bits, mark_all);
    if !dense {
        clear_shared_exact(&keys, &mut keeps, &mut scratch.seen_narrow);
    }
    let first = keys
        .iter()
        .enumerate()
        .filter_map(|(front, keys)| Some((front, *keys.first()?)))
        .min_by_key(|&(_, key)| key)
        .map(|(front, _)| (front, fronts[front].pos));
    Ok(Shadowed {
        ends,
        keeps,
        frontier: (frontier_front, fronts[frontier_front].cursor.len() - 1),
        bitmap_from: first.filter(|_| dense),
    })
}

/// [`shadow_narrow`] for runs compared by sort keys (never by a bitmap).
fn shadow_sorted(fronts: &[&Front], scratch: &mut Scratch) -> Shadowed {
    let (mut frontier_front, mut frontier) = (0, fronts[0]);
    for (i, front) in fronts.iter().enumerate().skip(1) {
        let (a, b) = (&front.cursor, &frontier.cursor);
        if a.cmp_rows(a.len() - 1, b, b.len() - 1).is_lt() {
            (frontier_front, frontier) = (i, front);
        }
    }
    let (bound, bound_row) = (&frontier.cursor, frontier.cursor.len() - 1);
    let ends: Vec<usize> = fronts
        .iter()
        .map(|f| {
            partition_point(f.pos, f.cursor.len(), |row| {
                !f.cursor.cmp_rows(row, bound, bound_row).is_gt()
            })
        })
        .collect();
    let mut keeps = new_keeps(fronts, &ends);
    let sort_keys: Vec<&[u128]> = fronts
        .iter()
        .zip(&ends)
        .map(|(f, end)| &f.cursor.sort_keys()[f.pos..*end])
        .collect();
    // (narrowed keys are exact: checked first, they halve the width of each comparison)
    if narrow_keys(&sort_keys, &mut scratch.narrow) {
        let narrow: Vec<&[u64]> = scratch.narrow.iter().map(Vec::as_slice).collect();
        if !clear_shared_dense(&narrow, &mut keeps, &mut scratch.bits, false) {
            clear_shared_exact(&narrow, &mut keeps, &mut scratch.seen_narrow);
        }
    } else if sort_keys.iter().all(|keys| keys.iter().all(|k| k & LONG != LONG)) {
        clear_shared_exact(&sort_keys, &mut keeps, &mut scratch.seen);
    } else {
        for (older, (a, keep)) in fronts.iter().zip(keeps.iter_mut()).enumerate() {
            let a_rows = a.pos..ends[older];
            for (newer, b) in fronts.iter().enumerate().skip(older + 1) {
                clear_shared(&a.cursor, a_rows.clone(), &b.cursor, b.pos..ends[newer], keep);
            }
        }
    }
    Shadowed {
        ends,
        keeps,
        frontier: (frontier_front, bound_row),
        bitmap_from: None,
    }
}

/// The key of `batch`'s row `row`, as Int64 (an integer key of any width).
fn key_at(batch: &RecordBatch, key: usize, row: usize) -> Result<i64> {
    let keys = integer_keys(&batch.column(key).slice(row, 1))?;
    Ok(keys.as_primitive::<Int64Type>().value(0))
}

/// Every row of each run up to its end kept, except a key the run repeats: its later record
/// wins.
fn new_keeps(fronts: &[&Front], ends: &[usize]) -> Vec<Keep> {
    fronts
        .iter()
        .zip(ends)
        .map(|(front, &end)| {
            let mut keep = Keep::all(end - front.pos);
            for &dup in front.cursor.duplicates() {
                if dup > front.pos && dup < end {
                    keep.clear_if(dup - 1 - front.pos, true);
                }
            }
            keep
        })
        .collect()
}

/// Stand-ins for the columns a reader of the output does not read, one per column, sliced to
/// each batch: the longest built so far.
struct Placeholders {
    schema: SchemaRef,
    /// By column: `None` for a column that is read.
    slots: Vec<Option<Option<ArrayRef>>>,
}

impl Placeholders {
    fn new(schema: &SchemaRef, read_columns: Option<&[usize]>) -> Self {
        let slots = (0..schema.fields().len())
            .map(|i| match read_columns {
                Some(read) if !read.contains(&i) => Some(None),
                _ => None,
            })
            .collect();
        Placeholders {
            schema: Arc::clone(schema),
            slots,
        }
    }

    /// A placeholder of `rows` rows for `column`, if it is not read.
    fn get(&mut self, column: usize, rows: usize) -> Result<Option<ArrayRef>> {
        let Some(slot) = &mut self.slots[column] else {
            return Ok(None);
        };
        if let Some(array) = slot.as_ref().filter(|a| a.len() >= rows) {
            return Ok(Some(array.slice(0, rows)));
        }
        let field = self.schema.field(column);
        let array = match field.is_nullable() {
            true => new_null_array(field.data_type(), rows),
            false => ScalarValue::new_zero(field.data_type())?.to_array_of_size(rows)?,
        };
        Ok(Some(Arc::clone(slot.insert(array))))
    }

    /// The bytes of `batch`'s columns that are read and hold values: what the batch holds
    /// beyond the shared placeholders and null columns of its reader.
    fn bytes_read(&self, batch: &RecordBatch) -> usize {
        batch
            .columns()
            .iter()
            .zip(&self.slots)
            .filter(|(column, slot)| slot.is_none() && column.null_count() < column.len())
            .map(|(column, _)| column.get_array_memory_size())
            .sum()
    }

    /// The rows of `batch` that `keep` marks (`kept` of them). A column that is not read
    /// becomes a placeholder, and a column of nulls only (a field the read does not decode) is
    /// sliced: both keep a shared buffer. No filter is built unless a column needs one.
    fn filter_rows(&mut self, batch: &RecordBatch, keep: Keep, kept: usize) -> Result<RecordBatch> {
        let options = RecordBatchOptions::new().with_row_count(Some(kept));
        let rows = keep.len();
        let mut predicate = None;
        let mut keep = Some(keep);
        let mut columns = Vec::with_capacity(batch.num_columns());
        for (i, column) in batch.columns().iter().enumerate() {
            if let Some(placeholder) = self.get(i, kept)? {
                columns.push(placeholder);
                continue;
            }
            if kept == rows {
                columns.push(Arc::clone(column));
                continue;
            }
            if column.null_count() == column.len() {
                columns.push(column.slice(0, kept));
                continue;
            }
            let predicate = predicate.get_or_insert_with(|| {
                let keep = keep.take().expect("one filter").into_buffer();
                FilterBuilder::new(&BooleanArray::new(keep, None))
                    .optimize()
                    .build()
            });
            columns.push(predicate.filter(column)?);
        }
        Ok(RecordBatch::try_new_with_options(
            batch.schema(),
            columns,
            &options,
        )?)
    }
}

/// Narrows exact sort keys to `u64`s that order (and tell apart) the rows the same way, into
/// `out` (one vector per run), when every row has the same length of at most 9 bytes and the
/// same first byte (a non-null `BIGINT` key is a 9-byte row whose first byte marks it valid):
/// the rest of the row then fits bytes 1..=8 of the sort key. Half the width per comparison.
/// (A chunk whose keys are all one integer column is held narrow already: [`shadow_narrow`].)
fn narrow_keys(runs: &[&[u128]], out: &mut Vec<Vec<u64>>) -> bool {
    let Some(&first) = runs.iter().find_map(|keys| keys.first()) else {
        return false;
    };
    // the first byte and the length tag, which must be equal for all
    const FIXED: u128 = (0xFF << 120) | 0xFF;
    if first & 0xFF > 9 {
        return false;
    }
    if !runs
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

/// A key column as Int64 (an integer key of any width).
fn integer_keys(column: &ArrayRef) -> Result<ArrayRef> {
    if column.null_count() > 0 {
        return Err(exec_datafusion_err!("a primary key column holds NULL"));
    }
    Ok(cast(column, &DataType::Int64)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{new_null_array, Array, Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::{Keep, Placeholders};

    /// Values are filtered; a column of nulls only is sliced, sharing its buffer; a column
    /// not read becomes a placeholder (zeros where nulls are not allowed).
    #[test]
    fn filtering_slices_columns_of_nulls_and_skips_columns_not_read() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
            Field::new("seq", DataType::Int64, false),
            Field::new("w", DataType::Int64, true),
        ]));
        let nulls = new_null_array(&DataType::Int64, 5);
        let values = || Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![values(), Arc::clone(&nulls), values(), values()],
        )
        .unwrap();
        let mut keep = Keep::all(5);
        keep.clear_if(1, true);
        keep.clear_if(3, true);
        let mut placeholders = Placeholders::new(&schema, Some(&[0, 1]));
        let kept = placeholders.filter_rows(&batch, keep, 3).unwrap();
        assert_eq!(
            kept.column(0).as_ref(),
            &Int64Array::from(vec![1, 3, 5]) as &dyn Array
        );
        assert_eq!((kept.column(1).len(), kept.column(1).null_count()), (3, 3));
        assert_eq!(
            kept.column(1).to_data().buffers()[0].as_ptr(),
            nulls.to_data().buffers()[0].as_ptr()
        );
        assert_eq!(
            kept.column(2).as_ref(),
            &Int64Array::from(vec![0, 0, 0]) as &dyn Array
        );
        assert_eq!((kept.column(3).len(), kept.column(3).null_count()), (3, 3));
        // every row kept: the columns read are the batch's own
        let all = placeholders.filter_rows(&batch, Keep::all(5), 5).unwrap();
        assert_eq!(all.column(0).as_ref(), batch.column(0).as_ref());
        assert_eq!(all.column(2).len(), 5);
    }
}
