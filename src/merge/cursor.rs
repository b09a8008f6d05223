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
    /// The keys as rows; `None` when not needed and the sort keys are exact (see `try_new`).
    rows: Option<Rows>,
    /// The [`sort_key`] of every row.
    sort_keys: Vec<u128>,
    /// `sort_keys[pos]` (while `pos < len`), kept inline for the tree's comparisons.
    head: u128,
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
    /// Converts the keys of a non-empty `batch` and validates the run's sort order within it
    /// and against `previous`, the run's preceding (exhausted) cursor, whose allocations are
    /// reused. `batch` is the new cursor's store index; set it once the batch is stored.
    ///
    /// Without `rows_needed`, a key of one integer column gets its sort keys straight from its
    /// values and no `Rows` ([`integer_sort_keys`]): the row bytes are then never needed, since
    /// such sort keys are exact. A merge that keeps keys as rows (an open group of the ordered
    /// merge) needs them.
    pub(super) fn try_new(
        batch: &RecordBatch,
        converter: &RowConverter,
        key_columns: &[usize],
        seq_column: usize,
        kind_column: usize,
        previous: Option<RunCursor>,
        rows_needed: bool,
    ) -> Result<Self> {
        let len = batch.num_rows();
        if len == 0 {
            return Err(DataFusionError::Internal(
                "merge: cursors are only built over non-empty batches".into(),
            ));
        }
        let keys = key_columns
            .iter()
            .map(|&i| column(batch, i).cloned())
            .collect::<Result<Vec<_>>>()?;
        let (previous_rows, mut sort_keys, mut dups, previous_last) = match previous {
            None => (None, Vec::new(), Vec::new(), None),
            Some(previous) => {
                let last = previous.len - 1;
                let last_sort_key = previous.sort_keys[last];
                // the bytes only matter for a long key (see `cmp_sort_keys`)
                let last_row = (last_sort_key & 0xFF == LONG)
                    .then(|| previous.rows.as_ref().map(|rows| rows.row(last).owned()))
                    .flatten();
                (
                    previous.rows,
                    previous.sort_keys,
                    previous.dups,
                    Some((last_sort_key, last_row)),
                )
            }
        };
        sort_keys.clear();
        dups.clear();
        sort_keys.reserve(len);
        let rows = if !rows_needed && integer_sort_keys(&keys, &mut sort_keys) {
            None
        } else {
            let rows = match previous_rows {
                Some(mut rows) => {
                    rows.clear();
                    converter.append(&mut rows, &keys)?;
                    rows
                }
                None => converter.convert_columns(&keys)?,
            };
            sort_keys.extend(rows.iter().map(|row| sort_key(row.data())));
            Some(rows)
        };
        if let Some((last_sort_key, last_row)) = previous_last {
            let ordering = cmp_sort_keys(sort_keys[0], last_sort_key, || match (&rows, &last_row) {
                (Some(rows), Some(last)) => rows.row(0).cmp(&last.row()),
                _ => Ordering::Equal,
            });
            if ordering.is_lt() {
                return Err(DataFusionError::Execution(
                    "merge: sorted run is not ordered by primary key across batches".into(),
                ));
            }
        }

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

        // Differing sort keys order their rows exactly, so strictly increasing sort keys mean
        // sorted without duplicates; otherwise look at every pair (ties may need the bytes).
        let strictly_increasing = sort_keys.windows(2).all(|w| w[0] < w[1]);
        if !strictly_increasing {
            for i in 1..len {
                let ordering = cmp_sort_keys(sort_keys[i], sort_keys[i - 1], || match &rows {
                    Some(rows) => rows.row(i).cmp(&rows.row(i - 1)),
                    None => Ordering::Equal,
                });
                match ordering {
                    Ordering::Greater => {}
                    Ordering::Equal => dups.push(i),
                    Ordering::Less => {
                        return Err(DataFusionError::Execution(format!(
                            "merge: sorted run is not ordered by primary key (batch row {i})"
                        )))
                    }
                }
            }
        }

        Ok(Self {
            batch: usize::MAX,
            head: sort_keys[0],
            rows,
            sort_keys,
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
        self.key(self.pos)
    }

    /// The [`sort_key`] of the key at the cursor position.
    #[inline]
    pub(super) fn head_sort_key(&self) -> u128 {
        self.head
    }

    /// Compares the head keys of two cursors.
    #[inline]
    pub(super) fn cmp_head(&self, other: &RunCursor) -> Ordering {
        cmp_sort_keys(self.head, other.head, || self.current().cmp(&other.current()))
    }

    /// Compares the key at `row` of this cursor's batch with the head key of `other`.
    #[inline]
    pub(super) fn cmp_row_to_head(&self, row: usize, other: &RunCursor) -> Ordering {
        cmp_sort_keys(self.sort_keys[row], other.head, || {
            self.key(row).cmp(&other.current())
        })
    }

    /// The key at an arbitrary row of the current batch.
    #[inline]
    pub(super) fn key(&self, row: usize) -> Row<'_> {
        // Only cursors built with `rows_needed` are asked for rows; the others have exact sort
        // keys, which `cmp_sort_keys` never falls back from.
        self.rows
            .as_ref()
            .expect("key rows are converted for every merge that reads them")
            .row(row)
    }

    /// Compares the key at `row` with the key at `other_row` of `other`'s batch.
    #[inline]
    pub(super) fn cmp_rows(&self, row: usize, other: &RunCursor, other_row: usize) -> Ordering {
        cmp_sort_keys(self.sort_keys[row], other.sort_keys[other_row], || {
            self.key(row).cmp(&other.key(other_row))
        })
    }

    /// The [`sort_key`] of every row of the batch.
    #[inline]
    pub(super) fn sort_keys(&self) -> &[u128] {
        &self.sort_keys
    }

    /// Whether the key is one integer column whose sort keys came from its values
    /// ([`integer_sort_keys`]): each then has the same first byte and length tag.
    #[inline]
    pub(super) fn has_integer_key(&self) -> bool {
        self.rows.is_none()
    }

    /// Rows in the batch.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Ascending positions `i` whose key repeats the key at `i - 1` (usually none).
    pub(super) fn duplicates(&self) -> &[usize] {
        &self.dups
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
        match self.sort_keys.get(self.pos) {
            Some(&head) => {
                self.head = head;
                false
            }
            None => true,
        }
    }

    /// Skips to `pos` (`pos < len`).
    #[inline]
    pub(super) fn skip_to(&mut self, pos: usize) {
        self.head = self.sort_keys[pos];
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

    /// The first row in `[lo, hi)` whose key is `>=` the head key of `bound`, or `hi`. Scans
    /// the first few rows (stretches are often short; measured fewer mispredicted branches than
    /// galloping from the start), then gallops and binary-searches.
    #[inline]
    pub(super) fn gallop_lower_bound(&self, lo: usize, hi: usize, bound: &RunCursor) -> usize {
        const SCAN: usize = 8;
        let below_bound = |i: usize| self.cmp_row_to_head(i, bound) == Ordering::Less;
        let scan_end = hi.min(lo + SCAN);
        let mut i = lo;
        while i < scan_end && below_bound(i) {
            i += 1;
        }
        if i < scan_end || i == hi {
            return i;
        }
        gallop(i, hi, below_bound)
    }
}

/// The first index in `[lo, hi)` where `below` is false (`below` holds for a prefix), or `hi`:
/// exponential steps from `lo`, then a binary search.
#[inline]
pub(super) fn gallop(lo: usize, hi: usize, below: impl Fn(usize) -> bool) -> usize {
    if lo >= hi || !below(lo) {
        return lo;
    }
    // invariant: below(last_below); !below(above) or above == hi
    let (mut last_below, mut step) = (lo, 1);
    let mut above = hi;
    while last_below + step < hi {
        let probe = last_below + step;
        if below(probe) {
            last_below = probe;
            step *= 2;
        } else {
            above = probe;
            break;
        }
    }
    partition_point(last_below + 1, above, below)
}

/// The first index in `from..to` where `below` is false (`below` holds for a prefix), or `to`:
/// a binary search over positions, for predicates that compare rows rather than slice items.
#[inline]
pub(crate) fn partition_point(from: usize, to: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (from, to);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Marks a [`sort_key`] of a row longer than 15 bytes (not exact).
pub(crate) const LONG: u128 = 0xFF;

/// An integer that orders row bytes like `memcmp`, exactly for rows of at most 15 bytes.
///
/// Layout (big-endian): the first 15 bytes of the row, zero-padded, then one tag byte: the row
/// length if it is `<= 15`, else [`LONG`]. Keys of different rows compare like their bytes:
///
/// * if the 15-byte prefixes differ, the first difference is a real byte of both rows, or a
///   padding zero of the shorter row against a non-zero byte of the longer one, in which case
///   the shorter row is a proper prefix of the longer and sorts first too;
/// * if the prefixes are equal and one row is short, it is a prefix of the other row: the
///   shorter row has the smaller tag and sorts first;
/// * equal keys mean equal rows unless the tag is [`LONG`] (both rows longer than 15 bytes and
///   sharing 15 bytes); then compare the bytes ([`cmp_sort_keys`]).
///
/// Fixed-width keys fit: a non-null Int32 row is 5 bytes, Int64 9, (Int32, Int32) 10, a short
/// string 10.
#[inline]
pub(crate) fn sort_key(data: &[u8]) -> u128 {
    let len = data.len();
    if let Some(chunk) = data.first_chunk::<16>() {
        return (u128::from_be_bytes(*chunk) & !0xFF) | LONG;
    }
    // Short rows: two overlapping loads instead of a variable-length copy. `high`/`low` are the
    // first/last 8 of the 16 bytes; byte 15 is zero (padding) here.
    let padded = if len >= 8 {
        let high = be_u64(&data[..8]);
        // `tail` holds data[len - 8..]; shift out the bytes that overlap `high`
        let tail = be_u64(&data[len - 8..]);
        let low = tail.checked_shl(8 * (16 - len) as u32).unwrap_or(0);
        (u128::from(high) << 64) | u128::from(low)
    } else if len >= 4 {
        // the same with 4-byte loads: `tail` holds data[len - 4..]
        let head = u64::from(be_u32(&data[..4]));
        let tail = u64::from(be_u32(&data[len - 4..]));
        let low = (tail << (8 * (8 - len))) & 0xFFFF_FFFF;
        u128::from((head << 32) | low) << 64
    } else {
        let mut high = 0u64;
        for (i, &byte) in data.iter().enumerate() {
            high |= u64::from(byte) << (56 - 8 * i);
        }
        u128::from(high) << 64
    };
    padded | len as u128
}

/// The [`sort_key`]s of a key of one non-null integer column, computed from its values as
/// they would be from its rows (a valid marker byte, then the value big-endian with the sign bit
/// flipped), into `out`; `false` (nothing pushed) for other keys. Skips the row conversion and
/// a pass over the row bytes: a `BIGINT` key's sort key is one shift and one `or`.
pub(super) fn integer_sort_keys(keys: &[arrow::array::ArrayRef], out: &mut Vec<u128>) -> bool {
    use arrow::datatypes::{DataType as T, *};
    let [key] = keys else { return false };
    if key.null_count() > 0 {
        return false;
    }
    /// A sort key of a row of `width + 1` bytes: 0x01, then `encoded` (`width` bytes).
    #[inline]
    fn fixed(encoded: u64, width: u32) -> u128 {
        (1u128 << 120) | (u128::from(encoded) << (120 - 8 * width)) | u128::from(width + 1)
    }
    macro_rules! push {
        ($type:ty, $width:expr, |$v:ident| $encode:expr) => {{
            let values = key.as_primitive::<$type>().values();
            out.extend(values.iter().map(|&$v| fixed($encode, $width)));
            true
        }};
    }
    match key.data_type() {
        T::Int8 => push!(Int8Type, 1, |v| u64::from(v as u8 ^ 0x80)),
        T::Int16 => push!(Int16Type, 2, |v| u64::from(v as u16 ^ 0x8000)),
        T::Int32 => push!(Int32Type, 4, |v| u64::from(v as u32 ^ 0x8000_0000)),
        T::Date32 => push!(Date32Type, 4, |v| u64::from(v as u32 ^ 0x8000_0000)),
        T::Int64 => push!(Int64Type, 8, |v| v as u64 ^ (1 << 63)),
        T::Timestamp(TimeUnit::Second, _) => push!(TimestampSecondType, 8, |v| v as u64 ^ (1 << 63)),
        T::Timestamp(TimeUnit::Millisecond, _) => {
            push!(TimestampMillisecondType, 8, |v| v as u64 ^ (1 << 63))
        }
        T::Timestamp(TimeUnit::Microsecond, _) => {
            push!(TimestampMicrosecondType, 8, |v| v as u64 ^ (1 << 63))
        }
        T::Timestamp(TimeUnit::Nanosecond, _) => {
            push!(TimestampNanosecondType, 8, |v| v as u64 ^ (1 << 63))
        }
        T::UInt8 => push!(UInt8Type, 1, |v| u64::from(v)),
        T::UInt16 => push!(UInt16Type, 2, |v| u64::from(v)),
        T::UInt32 => push!(UInt32Type, 4, |v| u64::from(v)),
        T::UInt64 => push!(UInt64Type, 8, |v| v),
        _ => false,
    }
}

/// Compares two rows by their [`sort_key`]s, falling back to `bytes` (comparing the rows'
/// bytes) only for long rows with equal keys.
#[inline]
pub(crate) fn cmp_sort_keys(a: u128, b: u128, bytes: impl FnOnce() -> Ordering) -> Ordering {
    match a.cmp(&b) {
        Ordering::Equal if a & 0xFF == LONG => bytes(),
        ordering => ordering,
    }
}

#[inline]
fn be_u32(bytes: &[u8]) -> u32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(bytes);
    u32::from_be_bytes(buf)
}

#[inline]
fn be_u64(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(bytes);
    u64::from_be_bytes(buf)
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

    use super::{gallop, RunCursor};

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
        let c = RunCursor::try_new(&batch, &conv, &[0], 1, 2, None, true)?;
        Ok((c, conv))
    }

    #[test]
    fn gallop_finds_lower_bound() {
        let keys: Vec<i32> = (0..100).map(|i| i * 2).collect();
        let (c, _conv) = cursor(&keys).expect("cursor");
        let (mut probe, _c2) = cursor(&(-5..=205).collect::<Vec<_>>()).expect("cursor");
        for lo in [0usize, 1, 7, 50, 99] {
            for hi in [lo, lo + 1, 60, 100] {
                if hi < lo || hi > 100 {
                    continue;
                }
                for b in 0..probe.len {
                    probe.skip_to(b);
                    let bound = probe.key(b);
                    let expected = (lo..hi).find(|&i| c.key(i) >= bound).unwrap_or(hi);
                    assert_eq!(c.gallop_lower_bound(lo, hi, &probe), expected);
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

    /// Sort keys computed from integer values equal those of the values' rows, for every type
    /// with that path, at the extremes and in between; other keys take the rows' path.
    #[test]
    fn integer_sort_keys_equal_the_sort_keys_of_their_rows() {
        use arrow::array::{
            ArrayRef, Date32Array, Int16Array, StringArray, TimestampMicrosecondArray, UInt16Array,
            UInt64Array, UInt8Array,
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int8Array::from(vec![i8::MIN, -1, 0, 1, i8::MAX])),
            Arc::new(Int16Array::from(vec![i16::MIN, -300, 0, 300, i16::MAX])),
            Arc::new(Int32Array::from(vec![i32::MIN, -70_000, -1, 0, 1, i32::MAX])),
            Arc::new(Date32Array::from(vec![-719_162, 0, 20_000])),
            Arc::new(Int64Array::from(vec![
                i64::MIN,
                -(1 << 40),
                -1,
                0,
                1,
                1 << 40,
                i64::MAX,
            ])),
            Arc::new(
                TimestampMicrosecondArray::from(vec![-1, 0, 1_700_000_000_000_000]).with_timezone("UTC"),
            ),
            Arc::new(UInt8Array::from(vec![0, 7, u8::MAX])),
            Arc::new(UInt16Array::from(vec![0, 7, u16::MAX])),
            Arc::new(UInt64Array::from(vec![0, 1 << 40, u64::MAX])),
        ];
        for column in columns {
            let converter = RowConverter::new(vec![SortField::new(column.data_type().clone())]).unwrap();
            let rows = converter.convert_columns(&[Arc::clone(&column)]).unwrap();
            let from_rows: Vec<u128> = rows.iter().map(|row| super::sort_key(row.data())).collect();
            let mut direct = Vec::new();
            assert!(
                super::integer_sort_keys(&[Arc::clone(&column)], &mut direct),
                "{}",
                column.data_type()
            );
            assert_eq!(direct, from_rows, "{}", column.data_type());
        }
        let mut out = Vec::new();
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        let nullable: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let two: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![1])),
            Arc::new(Int32Array::from(vec![1])),
        ];
        assert!(!super::integer_sort_keys(&[strings], &mut out));
        assert!(!super::integer_sort_keys(&[nullable], &mut out));
        assert!(!super::integer_sort_keys(&two, &mut out));
        assert!(out.is_empty());
    }

    /// Sort keys must order byte strings exactly like comparing the bytes.
    #[test]
    fn sort_key_order_matches_byte_order() {
        let mut samples: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![1], vec![1, 0], vec![255]];
        let mut state = 7u64;
        for _ in 0..300 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (state >> 59) as usize; // 0..32
            let mut v: Vec<u8> = (0..len).map(|i| ((state >> (i % 7 * 8)) & 3) as u8).collect();
            if state & 1 == 0 && !v.is_empty() {
                v[0] = 0;
            }
            samples.push(v);
        }
        for a in &samples {
            for b in &samples {
                let (ka, kb) = (super::sort_key(a), super::sort_key(b));
                let got = super::cmp_sort_keys(ka, kb, || a.cmp(b));
                assert_eq!(got, a.cmp(b), "{a:?} vs {b:?}");
                if a.len() <= 15 && b.len() <= 15 {
                    assert_eq!(ka.cmp(&kb), a.cmp(b), "short {a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn unsorted_batch_is_an_error() {
        let err = cursor(&[1, 3, 2]).expect_err("unsorted");
        assert!(err.to_string().contains("not ordered"), "{err}");
    }

    #[test]
    fn gallop_finds_the_end_of_the_prefix() {
        let values = [1, 2, 3, 5, 8, 13, 21, 34, 55];
        for target in 0..60 {
            let expected = values.partition_point(|v| *v < target);
            for lo in 0..=expected {
                let found = gallop(lo, values.len(), |i| values[i] < target);
                assert_eq!(found, expected, "target {target} from {lo}");
            }
        }
        assert_eq!(gallop(3, 3, |_| true), 3);
    }
}
