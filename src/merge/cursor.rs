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
    /// The [`sort_key`] of every row; empty in a narrow cursor until [`RunCursor::widen`].
    sort_keys: Vec<u128>,
    /// A narrow cursor's keys ([`KeyForm::Narrow`]): the values of a one-column integer key,
    /// encoded to order as their rows do ([`integer_narrow_keys`]); else empty.
    narrow: Vec<u64>,
    /// The byte width of the narrow keys' type.
    width: u32,
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

/// How a [`RunCursor`] holds its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyForm {
    /// Rows and their sort keys: a merge that keeps keys as rows (an open group of the ordered
    /// merge) needs them.
    Rows,
    /// A key of one non-null integer column as its encoded values only
    /// ([`integer_narrow_keys`]), without rows or sort keys until [`RunCursor::widen`]; other
    /// keys as rows and sort keys. For the newest-run merge, which compares slices of keys:
    /// the loser tree's stepping (`advance`, `skip_to`) reads sort keys.
    Narrow,
}

impl RunCursor {
    /// Converts the keys of a non-empty `batch` and validates the run's sort order within it
    /// and against `previous`, the run's preceding (exhausted) cursor, whose allocations are
    /// reused. `batch` is the new cursor's store index; set it once the batch is stored.
    ///
    /// `form` says how the keys are held (see [`KeyForm`]).
    pub(super) fn try_new(
        batch: &RecordBatch,
        converter: &RowConverter,
        key_columns: &[usize],
        seq_column: usize,
        kind_column: usize,
        previous: Option<RunCursor>,
        form: KeyForm,
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
        let (previous_rows, mut sort_keys, mut narrow, mut dups, previous_last) = match previous {
            None => (None, Vec::new(), Vec::new(), Vec::new(), None),
            Some(previous) => {
                let last = previous.len - 1;
                let last_sort_key = previous.sort_key(last);
                // the bytes only matter for a long key (see `cmp_sort_keys`)
                let last_row = (last_sort_key & 0xFF == LONG)
                    .then(|| previous.rows.as_ref().map(|rows| rows.row(last).owned()))
                    .flatten();
                (
                    previous.rows,
                    previous.sort_keys,
                    previous.narrow,
                    previous.dups,
                    Some((last_sort_key, last_row)),
                )
            }
        };
        sort_keys.clear();
        narrow.clear();
        dups.clear();
        let width = match form {
            KeyForm::Narrow => integer_narrow_keys(&keys, &mut narrow),
            KeyForm::Rows => None,
        };
        let rows = if width.is_some() {
            None
        } else {
            sort_keys.reserve(len);
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
        let width = width.unwrap_or(0);
        let first_sort_key = match width {
            0 => sort_keys[0],
            _ => narrow_sort_key(narrow[0], width),
        };
        if let Some((last_sort_key, last_row)) = previous_last {
            let ordering = cmp_sort_keys(first_sort_key, last_sort_key, || match (&rows, &last_row) {
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
        if width > 0 {
            if !strictly_increasing(&narrow) {
                for i in 1..len {
                    match narrow[i].cmp(&narrow[i - 1]) {
                        Ordering::Greater => {}
                        Ordering::Equal => dups.push(i),
                        Ordering::Less => return Err(unordered(i)),
                    }
                }
            }
        } else if !strictly_increasing(&sort_keys) {
            for i in 1..len {
                let ordering = cmp_sort_keys(sort_keys[i], sort_keys[i - 1], || match &rows {
                    Some(rows) => rows.row(i).cmp(&rows.row(i - 1)),
                    None => Ordering::Equal,
                });
                match ordering {
                    Ordering::Greater => {}
                    Ordering::Equal => dups.push(i),
                    Ordering::Less => return Err(unordered(i)),
                }
            }
        }

        Ok(Self {
            batch: usize::MAX,
            head: first_sort_key,
            rows,
            sort_keys,
            narrow,
            width,
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

    /// The [`sort_key`] of every row of the batch (see [`RunCursor::widen`]).
    #[inline]
    pub(super) fn sort_keys(&self) -> &[u128] {
        &self.sort_keys
    }

    /// The [`sort_key`] of `row`, in either form.
    fn sort_key(&self, row: usize) -> u128 {
        match self.width {
            0 => self.sort_keys[row],
            width => narrow_sort_key(self.narrow[row], width),
        }
    }

    /// A narrow cursor's keys ([`KeyForm::Narrow`]); `None` for others.
    #[inline]
    pub(super) fn narrow(&self) -> Option<&[u64]> {
        (self.width > 0).then_some(self.narrow.as_slice())
    }

    /// Gives a narrow cursor the sort keys every cursor has otherwise, for the comparisons
    /// that need them (a chunk that mixes narrow cursors with others).
    pub(super) fn widen(&mut self) {
        if self.width > 0 && self.sort_keys.is_empty() {
            let width = self.width;
            self.sort_keys
                .extend(self.narrow.iter().map(|&n| narrow_sort_key(n, width)));
        }
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
pub(crate) fn gallop(lo: usize, hi: usize, below: impl Fn(usize) -> bool) -> usize {
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

/// Runs `$emit` (an expression of `$encoded: u64` and `$width: u32`) over the values of a
/// non-null integer column `$key`, each encoded to order as its row does (the value big-endian
/// with the sign bit flipped), extending `$out`; `Some(width)`, or `None` (nothing pushed) for
/// other columns.
macro_rules! encode_integers {
    ($key:expr, $out:expr, |$encoded:ident, $width:ident| $emit:expr) => {{
        use arrow::datatypes::{DataType as T, *};
        macro_rules! push {
            ($type:ty, $w:expr, |$v:ident| $encode:expr) => {{
                let $width: u32 = $w;
                let values = $key.as_primitive::<$type>().values();
                $out.extend(values.iter().map(|&$v| {
                    let $encoded: u64 = $encode;
                    $emit
                }));
                Some($width)
            }};
        }
        match $key.data_type() {
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
            _ => None,
        }
    }};
}

/// The [`sort_key`] of a row of `width + 1` bytes: 0x01 (valid), then `encoded` (`width`
/// bytes), as [`integer_narrow_keys`] encodes a value.
#[inline]
pub(crate) fn narrow_sort_key(encoded: u64, width: u32) -> u128 {
    (1u128 << 120) | (u128::from(encoded) << (120 - 8 * width)) | u128::from(width + 1)
}

/// The [`sort_key`]s of a key of one non-null integer column, computed from its values as
/// they would be from its rows, into `out`; `false` (nothing pushed) for other keys. Skips the
/// row conversion and a pass over the row bytes: a `BIGINT` key's sort key is one shift and
/// one `or`.
pub(super) fn integer_sort_keys(keys: &[arrow::array::ArrayRef], out: &mut Vec<u128>) -> bool {
    let [key] = keys else { return false };
    if key.null_count() > 0 {
        return false;
    }
    out.reserve(key.len());
    encode_integers!(key, out, |encoded, width| narrow_sort_key(encoded, width)).is_some()
}

/// The keys of a one-column non-null integer key as `u64`s that order as their rows do, into
/// `out`, and the type's byte width; `None` (nothing pushed) for other keys. Half the bytes of
/// a sort key, and consecutive integers stay consecutive (dense keys index a bitmap).
pub(crate) fn integer_narrow_keys(keys: &[arrow::array::ArrayRef], out: &mut Vec<u64>) -> Option<u32> {
    let [key] = keys else { return None };
    if key.null_count() > 0 {
        return None;
    }
    out.reserve(key.len());
    encode_integers!(key, out, |encoded, _width| encoded)
}

/// Whether every key is smaller than the next. Compares all pairs without stopping early,
/// which vectorizes; a few thousand keys a batch.
fn strictly_increasing<K: Copy + Ord>(keys: &[K]) -> bool {
    keys.windows(2).fold(true, |ok, pair| ok & (pair[0] < pair[1]))
}

/// A batch whose row `row` has a smaller key than the row before it.
fn unordered(row: usize) -> DataFusionError {
    DataFusionError::Execution(format!(
        "merge: sorted run is not ordered by primary key (batch row {row})"
    ))
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

    use super::{gallop, KeyForm, RunCursor};

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
        let c = RunCursor::try_new(&batch, &conv, &[0], 1, 2, None, KeyForm::Rows)?;
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

    /// A narrow cursor holds the encoded values, finds duplicates and disorder as a cursor of
    /// rows does, and once widened has the same sort keys.
    #[test]
    fn narrow_cursors_agree_with_cursors_of_rows() {
        let keys = [-5, -1, 0, 0, 7, 1 << 20];
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, false),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
        ]));
        let batch = |keys: &[i32]| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Int32Array::from(keys.to_vec())),
                    Arc::new(Int64Array::from(vec![1i64; keys.len()])),
                    Arc::new(Int8Array::from(vec![0i8; keys.len()])),
                ],
            )
            .unwrap()
        };
        let conv = RowConverter::new(vec![SortField::new(DataType::Int32)]).unwrap();
        let rows = RunCursor::try_new(&batch(&keys), &conv, &[0], 1, 2, None, KeyForm::Rows).unwrap();
        let mut narrow = RunCursor::try_new(&batch(&keys), &conv, &[0], 1, 2, None, KeyForm::Narrow).unwrap();
        let encoded: Vec<u64> = keys.iter().map(|&k| u64::from(k as u32 ^ 0x8000_0000)).collect();
        assert_eq!(narrow.narrow(), Some(encoded.as_slice()));
        assert!(narrow.sort_keys().is_empty());
        assert_eq!(narrow.duplicates(), rows.duplicates());
        assert_eq!(narrow.head_sort_key(), rows.head_sort_key());
        narrow.widen();
        assert_eq!(narrow.sort_keys(), rows.sort_keys());
        assert!(rows.narrow().is_none());
        // the next batch of the run is checked against the last key of the narrow cursor
        let err = RunCursor::try_new(&batch(&[3]), &conv, &[0], 1, 2, Some(narrow), KeyForm::Narrow)
            .expect_err("behind the previous batch");
        assert!(err.to_string().contains("not ordered"), "{err}");
        let err = RunCursor::try_new(&batch(&[1, 0]), &conv, &[0], 1, 2, None, KeyForm::Narrow)
            .expect_err("unsorted");
        assert!(err.to_string().contains("batch row 1"), "{err}");
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
