//! A cursor over the current batch of one sorted run.

use std::cmp::Ordering;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::{Int64Type, Int8Type};
use arrow::row::{Row, RowConverter, Rows};
use datafusion::common::{DataFusionError, Result};

use super::engine::Candidate;

/// The current batch of a run: its keys as `Rows`, its sequence numbers and row kinds, and the
/// position of the next unconsumed row.
///
/// A live cursor always has `pos < len` except transiently between `advance` returning `true`
/// and the refill of the cursor.
#[derive(Debug)]
pub(super) struct RunCursor {
    /// Index of the batch in the output builder's store.
    pub(super) batch: usize,
    rows: Rows,
    seqs: ScalarBuffer<i64>,
    kinds: ScalarBuffer<i8>,
    pos: usize,
    len: usize,
    /// Ascending positions `i` with `key[i] == key[i - 1]` (a run holding a key twice); usually
    /// empty.
    dups: Vec<usize>,
    /// Index into `dups` of the first duplicate position `> pos` (maintained lazily).
    next_dup: usize,
}

impl RunCursor {
    /// Converts the keys of a non-empty `batch` and validates the run's sort order within it.
    pub(super) fn try_new(
        batch: &RecordBatch,
        store_index: usize,
        converter: &RowConverter,
        key_columns: &[usize],
        seq_column: usize,
        kind_column: usize,
    ) -> Result<Self> {
        let len = batch.num_rows();
        debug_assert!(len > 0, "cursors are only built over non-empty batches");
        let keys = key_columns
            .iter()
            .map(|&i| column(batch, i).cloned())
            .collect::<Result<Vec<_>>>()?;
        let rows = converter.convert_columns(&keys)?;

        let seq = column(batch, seq_column)?;
        let seqs = seq
            .as_primitive_opt::<Int64Type>()
            .filter(|a| a.null_count() == 0)
            .ok_or_else(|| {
                DataFusionError::Execution(format!(
                    "merge: _SEQUENCE_NUMBER column must be non-null Int64, got {}",
                    seq.data_type()
                ))
            })?
            .values()
            .clone();
        let kind = column(batch, kind_column)?;
        let kinds = kind
            .as_primitive_opt::<Int8Type>()
            .filter(|a| a.null_count() == 0)
            .ok_or_else(|| {
                DataFusionError::Execution(format!(
                    "merge: _VALUE_KIND column must be non-null Int8, got {}",
                    kind.data_type()
                ))
            })?
            .values()
            .clone();

        let mut dups = Vec::new();
        for i in 1..len {
            match rows.row(i).cmp(&rows.row(i - 1)) {
                Ordering::Greater => {}
                Ordering::Equal => dups.push(i),
                Ordering::Less => {
                    return Err(DataFusionError::Execution(format!(
                        "merge: sorted run is not ordered by primary key (batch row {i})"
                    )))
                }
            }
        }

        Ok(Self {
            batch: store_index,
            rows,
            seqs,
            kinds,
            pos: 0,
            len,
            dups,
            next_dup: 0,
        })
    }

    /// The key at the cursor position.
    #[inline]
    pub(super) fn current(&self) -> Row<'_> {
        self.rows.row(self.pos)
    }

    /// The key at an arbitrary row of the current batch.
    #[inline]
    pub(super) fn key(&self, row: usize) -> Row<'_> {
        self.rows.row(row)
    }

    /// The first key of the batch.
    pub(super) fn first(&self) -> Row<'_> {
        self.rows.row(0)
    }

    /// The last key of the batch.
    pub(super) fn last(&self) -> Row<'_> {
        self.rows.row(self.len - 1)
    }

    #[inline]
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    pub(super) fn kinds(&self) -> &[i8] {
        &self.kinds
    }

    /// The record at the cursor position.
    #[inline]
    pub(super) fn candidate(&self, run: usize) -> Candidate {
        Candidate {
            batch: self.batch,
            row: self.pos,
            run,
            seq: self.seqs[self.pos],
            kind: self.kinds[self.pos],
        }
    }

    /// Moves to the next row; returns `true` if the batch is exhausted (needs a refill).
    #[inline]
    pub(super) fn advance(&mut self) -> bool {
        self.pos += 1;
        self.pos == self.len
    }

    /// Skips to `pos` (`pos < len`).
    #[inline]
    pub(super) fn skip_to(&mut self, pos: usize) {
        debug_assert!(pos < self.len);
        self.pos = pos;
    }

    /// Exclusive end of the rows from the cursor position that may be emitted without looking
    /// at the next row of the run: each row in `[pos, limit)` is followed, within this batch,
    /// by a strictly greater key. The last row of a batch never qualifies (the next batch of
    /// the run might repeat its key).
    #[inline]
    pub(super) fn safe_limit(&mut self) -> usize {
        while self.next_dup < self.dups.len() && self.dups[self.next_dup] <= self.pos {
            self.next_dup += 1;
        }
        self.dups.get(self.next_dup).copied().unwrap_or(self.len) - 1
    }

    /// The first row in `[lo, hi)` whose key is `>= bound`, or `hi`. Gallops from `lo` so a
    /// short stretch costs a few comparisons, then binary-searches.
    #[inline]
    pub(super) fn gallop_lower_bound(&self, lo: usize, hi: usize, bound: &Row<'_>) -> usize {
        if lo >= hi || self.rows.row(lo) >= *bound {
            return lo;
        }
        // invariant: key[below] < bound
        let mut below = lo;
        let mut step = 1;
        let mut above = hi; // exclusive upper end of the search; key[above] >= bound or above == hi
        loop {
            let probe = below + step;
            if probe >= hi {
                break;
            }
            if self.rows.row(probe) < *bound {
                below = probe;
                step *= 2;
            } else {
                above = probe;
                break;
            }
        }
        // first index in (below, above) with key >= bound, else above
        let (mut l, mut r) = (below + 1, above);
        while l < r {
            let mid = l + (r - l) / 2;
            if self.rows.row(mid) < *bound {
                l = mid + 1;
            } else {
                r = mid;
            }
        }
        l
    }
}

fn column(batch: &RecordBatch, index: usize) -> Result<&arrow::array::ArrayRef> {
    if index >= batch.num_columns() {
        return Err(DataFusionError::Execution(format!(
            "merge: column index {index} out of range for a batch with {} columns",
            batch.num_columns()
        )));
    }
    Ok(batch.column(index))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, Int8Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::row::{RowConverter, SortField};

    use super::RunCursor;

    fn cursor(keys: &[i32]) -> datafusion::common::Result<(RunCursor, RowConverter)> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, false),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
        ]));
        let n = keys.len();
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(keys.to_vec())),
                Arc::new(Int64Array::from(vec![1i64; n])),
                Arc::new(Int8Array::from(vec![0i8; n])),
            ],
        )?;
        let conv = RowConverter::new(vec![SortField::new(DataType::Int32)])?;
        let c = RunCursor::try_new(&batch, 0, &conv, &[0], 1, 2)?;
        Ok((c, conv))
    }

    #[test]
    fn gallop_finds_lower_bound() {
        let keys: Vec<i32> = (0..100).map(|i| i * 2).collect();
        let (c, _conv) = cursor(&keys).expect("cursor");
        let (probe, _c2) = cursor(&(-5..=205).collect::<Vec<_>>()).expect("cursor");
        for lo in [0usize, 1, 7, 50, 99] {
            for hi in [lo, lo + 1, 60, 100] {
                if hi < lo || hi > 100 {
                    continue;
                }
                for b in 0..probe.len {
                    let bound = probe.key(b);
                    let expected = (lo..hi).find(|&i| c.key(i) >= bound).unwrap_or(hi);
                    assert_eq!(c.gallop_lower_bound(lo, hi, &bound), expected);
                }
            }
        }
    }

    #[test]
    fn safe_limit_stops_before_duplicates_and_last_row() {
        let (mut c, _conv) = cursor(&[1, 2, 3, 3, 4, 5, 5, 5, 6]).expect("cursor");
        let expect = [2, 2, 2, 5, 5, 5, 6, 8, 8];
        for (pos, limit) in expect.iter().enumerate() {
            c.skip_to(pos);
            assert_eq!(c.safe_limit(), *limit, "pos {pos}");
        }
    }

    #[test]
    fn unsorted_batch_is_an_error() {
        let err = cursor(&[1, 3, 2]).expect_err("unsorted");
        assert!(err.to_string().contains("not ordered"), "{err}");
    }
}
