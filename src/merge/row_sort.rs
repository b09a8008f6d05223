//! Sorting the rows of a write buffer by key: a stable order of row indices, computed on every
//! core.
//!
//! Each row's key is reduced to the 16-byte [`sort_key`] the merge uses, so almost every
//! comparison is one `u128` comparison; ties on the row index keep the sort stable (a key's
//! records stay in arrival order). Keys of up to 15 bytes that differ in only a few bytes (integer
//! keys) are radix sorted on those bytes; others are sorted in chunks on their own threads, then
//! merged, ties going to the earlier chunk.

use std::cmp::Ordering;
use std::ops::Range;

use arrow::row::Rows;

use super::cursor::{cmp_sort_keys, sort_key, LONG};

/// Rows below this are sorted on the calling thread.
const PARALLEL_SORT_MIN_ROWS: usize = 64 * 1024;

/// Rows from which keys of up to 15 bytes are radix sorted ([`radix_sorted`]).
const RADIX_SORT_MIN_ROWS: usize = 4096;

/// Most differing key bytes a radix sort takes: each is two passes over the rows.
const RADIX_MAX_BYTES: usize = 6;

/// Row indices of `keys` in ascending key order; equal keys keep their index order.
pub(crate) fn stable_key_order(keys: &Rows) -> Vec<u32> {
    sorted_tags(keys).0.into_iter().map(|(_, i)| i).collect()
}

/// [`stable_key_order`] and the ranges of that order holding one key each (in order). The
/// groups come from the sort keys already in hand: one `u128` comparison per row for keys of
/// up to 15 bytes, instead of comparing the rows' bytes again.
pub(crate) fn stable_key_groups(keys: &Rows) -> (Vec<u32>, Vec<Range<usize>>) {
    let (tagged, exact) = sorted_tags(keys);
    let mut groups = Vec::new();
    let mut start = 0;
    for end in 1..=tagged.len() {
        let same = end < tagged.len() && {
            let (a, b) = (&tagged[end - 1], &tagged[end]);
            a.0 == b.0 && (exact || keys.row(a.1 as usize) == keys.row(b.1 as usize))
        };
        if !same {
            groups.push(start..end);
            start = end;
        }
    }
    (tagged.into_iter().map(|(_, i)| i).collect(), groups)
}

/// Rows tagged with their sort keys, sorted stably; `true` when no key is longer than 15
/// bytes, so equal tags mean equal keys.
fn sorted_tags(keys: &Rows) -> (Vec<(u128, u32)>, bool) {
    let mut tagged: Vec<(u128, u32)> = (0..keys.num_rows())
        .map(|i| (sort_key(keys.row(i).as_ref()), i as u32))
        .collect();
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
            cmp_sort_keys(a.0, b.0, || keys.row(a.1 as usize).cmp(&keys.row(b.1 as usize)))
                .then(a.1.cmp(&b.1))
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
    let (any, all) = tagged
        .iter()
        .fold((0u128, !0u128), |(any, all), (k, _)| (any | k, all & k));
    let differing = any ^ all;
    let bytes: Vec<u32> = (0..16).filter(|b| (differing >> (8 * b)) & 0xFF != 0).collect();
    if bytes.len() > RADIX_MAX_BYTES {
        return Err(tagged);
    }
    let mut from = tagged;
    let mut to = vec![(0u128, 0u32); from.len()];
    // least significant byte first
    for byte in bytes {
        let digit = |k: u128| ((k >> (8 * byte)) & 0xFF) as usize;
        let mut starts = [0usize; 256];
        for (k, _) in &from {
            starts[digit(*k)] += 1;
        }
        let mut sum = 0;
        for start in starts.iter_mut() {
            let count = *start;
            *start = sum;
            sum += count;
        }
        for entry in &from {
            let d = digit(entry.0);
            to[starts[d]] = *entry;
            starts[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    Ok(from)
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
        assert_eq!(stable_key_order(&keys), naive(&keys));

        // Short keys differing in all 8 bytes: the comparison sort, not the radix sort.
        let spread: ArrayRef =
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| {
                ((i % 1000) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as i64
            })));
        let keys = converter.convert_columns(&[spread]).unwrap();
        assert_eq!(stable_key_order(&keys), naive(&keys));
        // Below the radix threshold.
        let few: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|i| (i * 7919) % 100)));
        let keys = converter.convert_columns(&[few]).unwrap();
        assert_eq!(stable_key_order(&keys), naive(&keys));

        // Long string keys take the byte comparison.
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("a-rather-long-common-prefix-{}", (i * 31) % 500)),
        ));
        let converter = RowConverter::new(vec![SortField::new(DataType::Utf8)]).unwrap();
        let keys = converter.convert_columns(&[strings]).unwrap();
        assert_eq!(stable_key_order(&keys), naive(&keys));
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
            let (order, groups) = stable_key_groups(&keys);
            assert_eq!(order, naive(&keys));
            assert_eq!(groups, naive_groups(&keys, &order));
        }
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)]).unwrap();
        let none = converter.empty_rows(0, 0);
        assert_eq!(stable_key_groups(&none), (vec![], vec![]));
    }
}
