//! Sorting the rows of a write buffer by key: a stable order of row indices, computed on every
//! core.
//!
//! Each row's key is reduced to the 16-byte [`sort_key`] the merge uses, so almost every
//! comparison is one `u128` comparison; ties on the row index keep the sort stable (a key's
//! records stay in arrival order). Keys of up to 15 bytes that differ in only a few bytes (integer
//! keys) are radix sorted on those bytes: keys differing in at most four are packed with their row
//! index into one `u64`, scattered once by their top bits into buckets that fit in cache, and
//! each bucket is finished there. Others are sorted in chunks on their own threads, then merged,
//! ties going to the earlier chunk.
//!
//! A key of one non-null integer column skips the row format: its sort keys come straight from
//! its values ([`integer_sort_keys`]).

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::Result;

use super::cursor::{cmp_sort_keys, integer_sort_keys, sort_key, LONG};

/// Rows below this are sorted on the calling thread.
const PARALLEL_SORT_MIN_ROWS: usize = 64 * 1024;

/// Rows from which keys of up to 15 bytes are radix sorted ([`radix_sorted`]).
const RADIX_SORT_MIN_ROWS: usize = 4096;

/// Most differing key bytes a radix sort takes: each is two passes over the rows.
const RADIX_MAX_BYTES: usize = 6;

/// Most differing key bytes that fit beside a row index in one `u64` ([`packed_order`]).
const PACKED_MAX_BYTES: usize = 4;

/// The keys of rows to sort.
pub(crate) enum SortKeys {
    /// Keys in the row format.
    Rows(Rows),
    /// The [`sort_key`]s of a key of one non-null integer column, computed from its values:
    /// exact (equal sort keys mean equal keys), and no rows are built.
    Integers(Vec<u128>),
}

impl SortKeys {
    /// The keys (`key_columns`) of the rows of `batches` taken one after the other (at least
    /// one batch).
    pub(crate) fn of_batches(batches: &[RecordBatch], key_columns: &[usize]) -> Result<Self> {
        let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let columns = |batch: &RecordBatch| -> Vec<_> {
            key_columns.iter().map(|&i| Arc::clone(batch.column(i))).collect()
        };
        let mut tags = Vec::with_capacity(total);
        if batches.iter().all(|b| integer_sort_keys(&columns(b), &mut tags)) {
            return Ok(SortKeys::Integers(tags));
        }
        let converter = RowConverter::new(
            key_columns
                .iter()
                .map(|&i| SortField::new(batches[0].column(i).data_type().clone()))
                .collect(),
        )?;
        let mut keys = converter.empty_rows(total, total * 8);
        for batch in batches {
            converter.append(&mut keys, &columns(batch))?;
        }
        Ok(SortKeys::Rows(keys))
    }

    fn len(&self) -> usize {
        match self {
            SortKeys::Rows(rows) => rows.num_rows(),
            SortKeys::Integers(tags) => tags.len(),
        }
    }

    #[inline]
    fn tag(&self, i: usize) -> u128 {
        match self {
            SortKeys::Rows(rows) => sort_key(rows.row(i).as_ref()),
            SortKeys::Integers(tags) => tags[i],
        }
    }

    /// Whether rows `a` and `b`, whose sort keys are equal, hold equal keys.
    fn same_key(&self, a: usize, b: usize, exact: bool) -> bool {
        match self {
            SortKeys::Rows(rows) => exact || rows.row(a) == rows.row(b),
            SortKeys::Integers(_) => true,
        }
    }

    fn cmp_rows(&self, a: usize, b: usize) -> Ordering {
        match self {
            SortKeys::Rows(rows) => rows.row(a).cmp(&rows.row(b)),
            SortKeys::Integers(tags) => tags[a].cmp(&tags[b]),
        }
    }
}

/// The ranges of a stable key order that hold one key each, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyRanges {
    /// Every key once: range `i` is `i..i + 1` (a write of distinct keys builds no list).
    Distinct(usize),
    /// The ranges, some longer than one row.
    Ranges(Vec<Range<usize>>),
}

impl KeyRanges {
    /// The ranges in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        let (distinct, ranges) = match self {
            KeyRanges::Distinct(n) => (0..*n, &[][..]),
            KeyRanges::Ranges(ranges) => (0..0, ranges.as_slice()),
        };
        distinct.map(|i| i..i + 1).chain(ranges.iter().cloned())
    }
}

/// Row indices of `keys` in ascending key order; equal keys keep their index order.
pub(crate) fn stable_key_order(keys: &SortKeys) -> Vec<u32> {
    match packed_order(keys) {
        Some(packed) => packed.into_iter().map(|p| p as u32).collect(),
        None => sorted_tags(keys).0.into_iter().map(|(_, i)| i).collect(),
    }
}

/// [`stable_key_order`] and the ranges of that order holding one key each (in order). The
/// groups come from the sort keys already in hand: one integer comparison per row for keys of
/// up to 15 bytes, instead of comparing the rows' bytes again.
pub(crate) fn stable_key_groups(keys: &SortKeys) -> (Vec<u32>, KeyRanges) {
    if let Some(packed) = packed_order(keys) {
        let groups = ranges_of_equal(packed.len(), |a, b| packed[a] >> 32 == packed[b] >> 32);
        return (packed.into_iter().map(|p| p as u32).collect(), groups);
    }
    let (tagged, exact) = sorted_tags(keys);
    let groups = ranges_of_equal(tagged.len(), |a, b| {
        let (a, b) = (&tagged[a], &tagged[b]);
        a.0 == b.0 && keys.same_key(a.1 as usize, b.1 as usize, exact)
    });
    (tagged.into_iter().map(|(_, i)| i).collect(), groups)
}

/// The ranges of `0..len` whose neighbours are `equal`; a first pass finds whether there are
/// any, so that distinct keys build no list.
fn ranges_of_equal(len: usize, equal: impl Fn(usize, usize) -> bool) -> KeyRanges {
    if !(1..len).any(|end| equal(end - 1, end)) {
        return KeyRanges::Distinct(len);
    }
    let mut groups = Vec::new();
    let mut start = 0;
    for end in 1..=len {
        if end == len || !equal(end - 1, end) {
            groups.push(start..end);
            start = end;
        }
    }
    KeyRanges::Ranges(groups)
}

/// The rows in stable key order as one `u64` each, the bytes in which their sort keys differ
/// above the row index (so the index breaks ties), when keys are exact (up to 15 bytes) and
/// differ in at most [`PACKED_MAX_BYTES`] bytes: a million distinct `BIGINT`s differ in 3.
/// A radix pass then moves 8 bytes a row instead of the 32 of a tagged row.
fn packed_order(keys: &SortKeys) -> Option<Vec<u64>> {
    let n = keys.len();
    if n > u32::MAX as usize {
        return None;
    }
    let (differing, any_long) = match keys {
        SortKeys::Integers(tags) => differing_bits(tags.iter().copied()),
        SortKeys::Rows(_) => differing_bits((0..n).map(|i| keys.tag(i))),
    };
    let bytes = bytes_of(differing);
    if any_long || bytes.len() > PACKED_MAX_BYTES {
        return None;
    }
    let (mut packed, differing) = match (bytes.first(), bytes.last()) {
        // Differing bytes side by side (integer keys): one shift and mask a row.
        (Some(&low), Some(&high)) if (high - low + 1) as usize == bytes.len() => {
            let mask = u64::MAX >> (64 - 8 * bytes.len());
            let pack = |k: u128| ((k >> (8 * low)) as u64) & mask;
            (packed_rows(keys, pack), pack(differing))
        }
        _ => {
            let pack = |k: u128| -> u64 {
                bytes
                    .iter()
                    .enumerate()
                    .fold(0, |p, (j, b)| p | ((((k >> (8 * b)) & 0xFF) as u64) << (8 * j)))
            };
            (packed_rows(keys, pack), pack(differing))
        }
    };
    if n < RADIX_SORT_MIN_ROWS {
        // every value is distinct (the index), so an unstable sort is stable here
        packed.sort_unstable();
        return Some(packed);
    }
    Some(packed_radix(packed, differing))
}

/// Each row as its packed sort key (`pack` of its tag) above its index, in row order; integer
/// keys are read straight from their tags.
fn packed_rows(keys: &SortKeys, pack: impl Fn(u128) -> u64) -> Vec<u64> {
    match keys {
        SortKeys::Integers(tags) => tags
            .iter()
            .enumerate()
            .map(|(i, &k)| (pack(k) << 32) | i as u64)
            .collect(),
        SortKeys::Rows(_) => (0..keys.len())
            .map(|i| (pack(keys.tag(i)) << 32) | i as u64)
            .collect(),
    }
}

/// Rows of a bucket from which [`packed_radix`] sorts it by digits; smaller ones are
/// comparison sorted.
const BUCKET_RADIX_MIN_ROWS: usize = 256;

/// Packed rows sorted by the key above their low 32 bits, where the keys differ only in the
/// bits of `differing`. A first stable pass over the top eight of those bits scatters the rows
/// into 256 buckets of neighbouring keys; each bucket (a few thousand rows for a million
/// keys) then fits in cache and is sorted there, least significant digit first, on the bits
/// left. Every pass over the whole buffer scatters to random places in memory, so one such
/// pass instead of three roughly halves the sort (this machine: 16 ms to 10 ms for a million
/// keys).
fn packed_radix(rows: Vec<u64>, differing: u64) -> Vec<u64> {
    if differing == 0 {
        return rows; // one key: the row order is the order
    }
    let (low, high) = (differing.trailing_zeros(), 64 - differing.leading_zeros());
    let top = (high - low).min(8);
    let top_shift = 32 + high - top;
    let bucket = |row: &u64| ((row >> top_shift) & 0xFF) as usize;
    let mut bounds = [0usize; 257];
    for row in &rows {
        bounds[bucket(row) + 1] += 1;
    }
    for b in 1..bounds.len() {
        bounds[b] += bounds[b - 1];
    }
    let mut sorted = vec![0u64; rows.len()];
    let mut next = bounds;
    for row in &rows {
        let slot = &mut next[bucket(row)];
        sorted[*slot] = *row;
        *slot += 1;
    }
    let digits = byte_digits(32 + low, high - low - top);
    let mut scratch = rows;
    for b in 0..256 {
        let range = bounds[b]..bounds[b + 1];
        if range.len() < BUCKET_RADIX_MIN_ROWS {
            sorted[range].sort_unstable();
        } else if !digits.is_empty() {
            let (rows, scratch) = (&mut sorted[range.clone()], &mut scratch[range]);
            lsd_radix(rows, scratch, &digits);
        }
    }
    sorted
}

/// Digits `(shift, width)` of at most eight bits covering `bits` bits from bit `low`, as even
/// as can be (twelve bits: two of six), least significant first.
fn byte_digits(low: u32, bits: u32) -> Vec<(u32, u32)> {
    let passes = bits.div_ceil(8);
    let width = if passes == 0 { 0 } else { bits.div_ceil(passes) };
    (0..passes)
        .map(|p| (low + p * width, width.min(bits - p * width)))
        .collect()
}

/// `rows` sorted stably by `digits` (see [`byte_digits`]), least significant first, through
/// `scratch` of the same length.
fn lsd_radix(rows: &mut [u64], scratch: &mut [u64], digits: &[(u32, u32)]) {
    let (mut from, mut to) = (rows, scratch);
    for &(shift, width) in digits {
        scatter_by(from, to, |row| ((row >> shift) & ((1 << width) - 1)) as usize);
        std::mem::swap(&mut from, &mut to);
    }
    if digits.len() % 2 == 1 {
        // the last pass wrote to the scratch
        to.copy_from_slice(from);
    }
}

/// Rows tagged with their sort keys, sorted stably; `true` when no key is longer than 15
/// bytes, so equal tags mean equal keys.
fn sorted_tags(keys: &SortKeys) -> (Vec<(u128, u32)>, bool) {
    let mut tagged: Vec<(u128, u32)> = (0..keys.len()).map(|i| (keys.tag(i), i as u32)).collect();
    let exact = tagged.iter().all(|(k, _)| k & 0xFF != LONG);
    if exact && tagged.len() >= RADIX_SORT_MIN_ROWS {
        match radix_sorted(tagged) {
            Ok(sorted) => return (sorted, exact),
            Err(unsorted) => tagged = unsorted,
        }
    }
    let cmp = |a: &(u128, u32), b: &(u128, u32)| -> Ordering {
        if exact {
            a.cmp(b)
        } else {
            cmp_sort_keys(a.0, b.0, || keys.cmp_rows(a.1 as usize, b.1 as usize)).then(a.1.cmp(&b.1))
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads <= 1 || tagged.len() < PARALLEL_SORT_MIN_ROWS {
        tagged.sort_unstable_by(cmp);
        return (tagged, exact);
    }
    let chunk = tagged.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for part in tagged.chunks_mut(chunk) {
            scope.spawn(move || part.sort_unstable_by(cmp));
        }
    });
    // Merge the sorted chunks pairwise until one is left.
    let mut runs: Vec<Vec<(u128, u32)>> = tagged.chunks(chunk).map(<[_]>::to_vec).collect();
    while runs.len() > 1 {
        let mut next = Vec::with_capacity(runs.len().div_ceil(2));
        let mut it = runs.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(merge(a, b, cmp)),
                None => next.push(a),
            }
        }
        runs = next;
    }
    (runs.pop().unwrap_or_default(), exact)
}

/// `tagged` (in row order) sorted by key with a least-significant-digit radix sort over the
/// bytes in which the keys differ: stable, so equal keys keep their row order. Integer keys
/// differ in a few low bytes (a million BIGINT keys in 3), making this a few linear passes
/// instead of a comparison sort; keys that differ in more than [`RADIX_MAX_BYTES`] bytes are
/// handed back for the comparison sort.
fn radix_sorted(tagged: Vec<(u128, u32)>) -> Result<Vec<(u128, u32)>, Vec<(u128, u32)>> {
    let bytes = bytes_of(differing_bits(tagged.iter().map(|(k, _)| *k)).0);
    if bytes.len() > RADIX_MAX_BYTES {
        return Err(tagged);
    }
    let shifts: Vec<u32> = bytes.iter().map(|b| 8 * b).collect();
    Ok(radix_by(tagged, &shifts, |(k, _), shift| {
        ((k >> shift) & 0xFF) as usize
    }))
}

/// The bits in which some of the sort keys `tags` differ, and whether any key is longer than
/// 15 bytes (its tag byte is `LONG`, 0xFF; the tags of shorter rows, their lengths up to 15,
/// never OR up to it).
fn differing_bits(tags: impl Iterator<Item = u128>) -> (u128, bool) {
    let (any, all) = tags.fold((0u128, !0u128), |(any, all), k| (any | k, all & k));
    (any ^ all, any & 0xFF == LONG)
}

/// The bytes (0 = least significant) holding some of the bits of `differing`.
fn bytes_of(differing: u128) -> Vec<u32> {
    (0..16).filter(|b| (differing >> (8 * b)) & 0xFF != 0).collect()
}

/// `from` sorted by a least-significant-digit radix sort: one stable counting pass per
/// byte `digit(row, shift)` for each of `shifts`, least significant first.
fn radix_by<T: Copy + Default>(mut from: Vec<T>, shifts: &[u32], digit: impl Fn(&T, u32) -> usize) -> Vec<T> {
    let mut to = vec![T::default(); from.len()];
    for &shift in shifts {
        scatter_by(&from, &mut to, |row| digit(row, shift));
        std::mem::swap(&mut from, &mut to);
    }
    from
}

/// One stable counting pass of a radix sort: the rows of `from` placed in `to` (as long) in
/// the order of their `digit` (below 256), equal digits keeping their order.
fn scatter_by<T: Copy>(from: &[T], to: &mut [T], digit: impl Fn(&T) -> usize) {
    let mut starts = [0usize; 256];
    for row in from {
        starts[digit(row)] += 1;
    }
    let mut sum = 0;
    for start in starts.iter_mut() {
        let count = *start;
        *start = sum;
        sum += count;
    }
    for row in from {
        let slot = &mut starts[digit(row)];
        to[*slot] = *row;
        *slot += 1;
    }
}

fn merge<T: Copy>(a: Vec<T>, b: Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        // Ties take from `a`, the earlier chunk (their indices are smaller anyway).
        if cmp(&b[j], &a[i]).is_lt() {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::datatypes::DataType;
    use arrow::row::{RowConverter, SortField};

    use super::*;

    fn naive(keys: &Rows) -> Vec<u32> {
        let mut order: Vec<u32> = (0..keys.num_rows() as u32).collect();
        order.sort_by(|&a, &b| keys.row(a as usize).cmp(&keys.row(b as usize)));
        order
    }

    #[test]
    fn sorts_stably_like_a_row_sort_on_every_thread_count_path() {
        let n = PARALLEL_SORT_MIN_ROWS as i64 * 2 + 17;
        let ints: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 1000)));
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)]).unwrap();
        let keys = converter.convert_columns(&[ints]).unwrap();
        assert_eq!(stable_key_order(&SortKeys::Rows(keys.clone())), naive(&keys));

        // Short keys differing in all 8 bytes: the comparison sort, not the radix sort.
        let spread: ArrayRef =
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| {
                ((i % 1000) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64
            })));
        let keys = converter.convert_columns(&[spread]).unwrap();
        assert_eq!(stable_key_order(&SortKeys::Rows(keys.clone())), naive(&keys));
        // Below the radix threshold.
        let few: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|i| (i * 7919) % 100)));
        let keys = converter.convert_columns(&[few]).unwrap();
        assert_eq!(stable_key_order(&SortKeys::Rows(keys.clone())), naive(&keys));

        // Long string keys take the byte comparison.
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("a-rather-long-common-prefix-{}", (i * 31) % 500)),
        ));
        let converter = RowConverter::new(vec![SortField::new(DataType::Utf8)]).unwrap();
        let keys = converter.convert_columns(&[strings]).unwrap();
        assert_eq!(stable_key_order(&SortKeys::Rows(keys.clone())), naive(&keys));
    }

    /// Groups as a byte comparison of neighbours in the sorted order finds them.
    fn naive_groups(keys: &Rows, order: &[u32]) -> Vec<Range<usize>> {
        let mut groups: Vec<Range<usize>> = Vec::new();
        for i in 0..order.len() {
            match groups.last_mut() {
                Some(g) if keys.row(order[i - 1] as usize) == keys.row(order[i] as usize) => g.end += 1,
                _ => groups.push(i..i + 1),
            }
        }
        groups
    }

    #[test]
    fn groups_hold_equal_keys_for_short_and_long_keys() {
        let ints: ArrayRef = Arc::new(Int64Array::from_iter_values((0..5000).map(|i| (i * 7919) % 1200)));
        // long keys sharing their first 15 bytes, and equal long keys
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..5000).map(|i| format!("a-rather-long-common-prefix-{}", (i * 31) % 900)),
        ));
        // short keys of different lengths (the length byte differs too)
        let short: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..5000).map(|i| format!("k{}", (i * 31) % 900)),
        ));
        for (column, data_type) in [
            (ints, DataType::Int64),
            (strings, DataType::Utf8),
            (short, DataType::Utf8),
        ] {
            let converter = RowConverter::new(vec![SortField::new(data_type)]).unwrap();
            let keys = converter.convert_columns(&[column]).unwrap();
            let (order, groups) = stable_key_groups(&SortKeys::Rows(keys.clone()));
            assert_eq!(order, naive(&keys));
            assert_eq!(groups.iter().collect::<Vec<_>>(), naive_groups(&keys, &order));
        }
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)]).unwrap();
        let none = converter.empty_rows(0, 0);
        assert_eq!(
            stable_key_groups(&SortKeys::Rows(none)),
            (vec![], KeyRanges::Distinct(0))
        );
    }

    /// Sorts and groups the integer sort keys of `values` and checks both against a naive
    /// sort of their rows; returns the rows, the order and the groups.
    fn sorts_like_rows(
        integers: &SortKeys,
        values: Vec<i64>,
        converter: &RowConverter,
        case: &str,
    ) -> (Rows, Vec<u32>, KeyRanges) {
        let rows = converter
            .convert_columns(&[Arc::new(Int64Array::from(values)) as ArrayRef])
            .unwrap();
        let (order, groups) = stable_key_groups(integers);
        assert_eq!(order, naive(&rows), "{case}");
        assert_eq!(
            groups.iter().collect::<Vec<_>>(),
            naive_groups(&rows, &order),
            "{case}"
        );
        (rows, order, groups)
    }

    /// Integer keys through every path: packed (up to 4 differing bytes), the tagged radix sort
    /// (5 or 6), the comparison sort (more), each below and above the radix threshold, from one
    /// batch and from several, as integers and as rows: one order and one grouping.
    #[test]
    fn integer_keys_sort_and_group_alike_on_every_path() {
        use arrow::datatypes::{Field, Schema};
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)]).unwrap();
        let spans: [i64; 4] = [900, 1 << 38, 1 << 46, i64::MAX];
        for span in spans {
            for n in [1000i64, 3 * RADIX_SORT_MIN_ROWS as i64 + 5] {
                // duplicates (every key about 3 times) and negative keys
                let values: Vec<i64> = (0..n)
                    .map(|i| ((i % (n / 3)) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64 % span)
                    .collect();
                let batches: Vec<RecordBatch> = values
                    .chunks(700)
                    .map(|c| {
                        RecordBatch::try_new(
                            Arc::clone(&schema),
                            vec![Arc::new(Int64Array::from(c.to_vec()))],
                        )
                        .unwrap()
                    })
                    .collect();
                let integers = SortKeys::of_batches(&batches, &[0]).unwrap();
                assert!(matches!(integers, SortKeys::Integers(_)));
                let (rows, order, groups) =
                    sorts_like_rows(&integers, values, &converter, &format!("span {span}, {n} rows"));
                assert_eq!(stable_key_groups(&SortKeys::Rows(rows)), (order.clone(), groups));
                assert_eq!(stable_key_order(&integers), order);
            }
        }
    }

    /// Non-negative integer keys, which the packed path sorts: keys differing in fewer bits
    /// than one bucket digit, in a few, in all 32, in bytes apart, and crowded into one bucket
    /// by an outlier. Each sorts and groups as the rows do.
    #[test]
    fn packed_keys_sort_alike_for_every_digit_plan() {
        use arrow::datatypes::{Field, Schema};
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)]).unwrap();
        let n = 200_000i64;
        let scramble = |i: i64| (i * 7919) % n;
        let plans: [(&str, Box<dyn Fn(i64) -> i64>); 6] = [
            ("bucket digit only", Box::new(move |i| scramble(i) % 100)),
            ("eleven bits", Box::new(move |i| scramble(i) % 1500)),
            ("seventeen bits", Box::new(move |i| scramble(i) / 2)),
            (
                "thirty-two bits",
                Box::new(move |i| (scramble(i) * 21_467) % (1 << 32)),
            ),
            (
                "bytes apart",
                Box::new(move |i| scramble(i) % 900 + ((i % 3) << 40)),
            ),
            (
                "one crowded bucket",
                Box::new(move |i| if i == 7 { 1 << 30 } else { scramble(i) % 5000 }),
            ),
        ];
        for (plan, key) in plans {
            let values: Vec<i64> = (0..n).map(&key).collect();
            let batch = RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(Int64Array::from(values.clone()))],
            )
            .unwrap();
            let integers = SortKeys::of_batches(&[batch], &[0]).unwrap();
            assert!(packed_order(&integers).is_some(), "{plan}");
            sorts_like_rows(&integers, values, &converter, plan);
        }
        assert_eq!(byte_digits(40, 12), vec![(40, 6), (46, 6)]);
        assert_eq!(byte_digits(32, 17), vec![(32, 6), (38, 6), (44, 5)]);
        assert!(byte_digits(32, 0).is_empty());
    }
}
