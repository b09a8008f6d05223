//! Which rows of a chunk a newer run shadows: the keys of each run's rows checked against the
//! keys of the newer runs' rows, with one bit per row for the outcome.

use arrow::buffer::{BooleanBuffer, Buffer};

use crate::merge::cursor::{gallop, RunCursor};
use crate::merge::engine::{any_retract, is_retract};

/// One bit per row of a run's chunk, set while the row survives. Bits rather than `bool`s: the
/// filter kernel takes them as they are, and a word of 64 rows is cleared at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Keep {
    words: Vec<u64>,
    len: usize,
}

impl Keep {
    /// `len` rows, all kept.
    pub(super) fn all(len: usize) -> Self {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if len % 64 != 0 {
            if let Some(last) = words.last_mut() {
                *last = (1 << (len % 64)) - 1;
            }
        }
        Keep { words, len }
    }

    /// Drops row `i` if `shadowed` (no branch on it).
    #[inline]
    pub(super) fn clear_if(&mut self, i: usize, shadowed: bool) {
        self.words[i / 64] &= !(u64::from(shadowed) << (i % 64));
    }

    /// Drops the rows `64 * word + i` for the bits `i` set in `shadowed`.
    #[inline]
    fn clear_word(&mut self, word: usize, shadowed: u64) {
        self.words[word] &= !shadowed;
    }

    /// Rows kept.
    pub(super) fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Drops the rows whose kind (`kinds`, one per row) retracts. Most runs hold none: one pass
    /// that vectorizes finds out first.
    pub(super) fn drop_retracts(&mut self, kinds: &[i8]) {
        if !any_retract(kinds) {
            return;
        }
        for (word, kinds) in kinds.chunks(64).enumerate() {
            let retracts = kinds
                .iter()
                .enumerate()
                .fold(0u64, |bits, (i, &kind)| bits | u64::from(is_retract(kind)) << i);
            self.clear_word(word, retracts);
        }
    }

    /// `len` rows whose keys are `start, start + 1, ...` as bits of `shadowed` (one bit per key
    /// from its first): a row is kept unless its key's bit is set. A word of 64 rows at a time.
    pub(super) fn unshadowed_run(shadowed: &[u64], start: u64, len: usize) -> Self {
        let mut keep = Keep::all(len);
        for (word, bits) in keep.words.iter_mut().enumerate() {
            *bits &= !bits_from(shadowed, start + 64 * word as u64);
        }
        keep
    }

    /// `keys.len()` rows kept unless the bit of their key (its offset from the first key of
    /// `shadowed`) is set.
    pub(super) fn unshadowed_keys(shadowed: &[u64], keys: impl Iterator<Item = u64>) -> Self {
        let mut keep = Keep::all(0);
        for (i, at) in keys.enumerate() {
            if i % 64 == 0 {
                keep.words.push(0);
            }
            let bit = shadowed.get((at / 64) as usize).map_or(0, |w| w >> (at % 64) & 1);
            keep.words[i / 64] |= (1 - bit) << (i % 64);
            keep.len = i + 1;
        }
        keep
    }

    pub(super) fn into_buffer(self) -> BooleanBuffer {
        BooleanBuffer::new(Buffer::from_vec(self.words), 0, self.len)
    }

    #[cfg(test)]
    pub(super) fn to_bools(&self) -> Vec<bool> {
        (0..self.len)
            .map(|i| self.words[i / 64] >> (i % 64) & 1 == 1)
            .collect()
    }
}

/// Drops, in each run (`keys[r]`, sorted, oldest run first), the rows whose key a newer run
/// holds, for keys that are exact [`crate::merge::cursor::sort_key`]s or narrow integer keys:
/// equal keys are then equal rows. From the newest run down, each run is checked against the
/// union of the newer runs' keys, then merged into it: one linear pass each, with no branch on
/// the comparisons. `seen` and its spare are buffers reused across chunks.
pub(super) fn clear_shared_exact<K: Copy + Ord>(runs: &[&[K]], keeps: &mut [Keep], seen: &mut [Vec<K>; 2]) {
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
            keep.clear_if(i, a == b);
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

/// [`clear_shared_exact`] for narrow keys that lie close together (dense integer keys, the
/// usual ids): one bit per possible key between the chunk's smallest and largest, so each key
/// is one independent bit test and set instead of a step of a merge that waits on the previous
/// one. `false` (nothing done) when the keys are too sparse for that.
///
/// Then `bits` holds, from the chunk's smallest key on, the keys of every run but the oldest;
/// `mark_oldest` adds the oldest run's too (every key of the chunk, for a board).
pub(super) fn clear_shared_dense(
    runs: &[&[u64]],
    keeps: &mut [Keep],
    bits: &mut Vec<u64>,
    mark_oldest: bool,
) -> bool {
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
        if r < newest && consecutive(keys) {
            // keys k, k+1, ...: the run's bitmap is the newer keys' bits from k on, a word at
            // a time (an id range a bulk load wrote, the usual oldest run)
            let start = keys.first().map_or(0, |key| key - lo);
            for word in 0..keys.len().div_ceil(64) {
                keeps[r].clear_word(word, bits_from(bits, start + 64 * word as u64));
            }
        } else if r < newest {
            // 64 tests make one word of the run's bitmap
            for (word, keys) in keys.chunks(64).enumerate() {
                let shadowed = keys.iter().enumerate().fold(0u64, |shadowed, (i, &key)| {
                    let at = key - lo;
                    shadowed | (bits[(at / 64) as usize] >> (at % 64) & 1) << i
                });
                keeps[r].clear_word(word, shadowed);
            }
        }
        if r > 0 || mark_oldest {
            for key in keys.iter() {
                let at = key - lo;
                bits[(at / 64) as usize] |= 1 << (at % 64);
            }
        }
    }
    true
}

/// Whether each key is one more than the one before it (no gaps, no repeats). One pass without
/// early exit, which vectorizes.
fn consecutive(keys: &[u64]) -> bool {
    keys.windows(2)
        .fold(true, |ok, pair| ok & (pair[1] == pair[0].wrapping_add(1)))
}

/// The 64 bits of `bits` from bit `start` on (zeros past its end).
#[inline]
fn bits_from(bits: &[u64], start: u64) -> u64 {
    let (word, shift) = ((start / 64) as usize, (start % 64) as u32);
    let low = bits.get(word).map_or(0, |w| w >> shift);
    let high = match shift {
        0 => 0,
        _ => bits.get(word + 1).map_or(0, |w| w << (64 - shift)),
    };
    low | high
}

/// Drops every row `i` of `a_rows` whose key a row of `b_rows` (of `b`'s batch) holds, from
/// `keep` (row `i` at `i - a_rows.start`). Both are sorted by key: the shorter is walked, and
/// the longer searched by galloping from where the last search ended.
pub(super) fn clear_shared(
    a: &RunCursor,
    a_rows: std::ops::Range<usize>,
    b: &RunCursor,
    b_rows: std::ops::Range<usize>,
    keep: &mut Keep,
) {
    if a_rows.len() <= b_rows.len() {
        let mut j = b_rows.start;
        for i in a_rows.clone() {
            j = gallop(j, b_rows.end, |j| b.cmp_rows(j, a, i).is_lt());
            if j == b_rows.end {
                return;
            }
            keep.clear_if(i - a_rows.start, b.cmp_rows(j, a, i).is_eq());
        }
    } else {
        let mut i = a_rows.start;
        for j in b_rows {
            i = gallop(i, a_rows.end, |i| a.cmp_rows(i, b, j).is_lt());
            if i == a_rows.end {
                return;
            }
            keep.clear_if(i - a_rows.start, a.cmp_rows(i, b, j).is_eq());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{clear_shared_dense, clear_shared_exact, Keep};
    use crate::spec::row_kind;

    /// The two ways of clearing shadowed narrow keys agree: the bitmap and the merge.
    #[test]
    fn dense_and_merged_clearing_agree() {
        let runs: [&[u64]; 3] = [&[1, 2, 3, 5, 8, 13], &[2, 3, 4, 13], &[3, 5, 14]];
        let fresh = || runs.iter().map(|r| Keep::all(r.len())).collect::<Vec<_>>();
        let mut dense = fresh();
        assert!(clear_shared_dense(&runs, &mut dense, &mut Vec::new(), false));
        let mut merged = fresh();
        clear_shared_exact(&runs, &mut merged, &mut [Vec::new(), Vec::new()]);
        assert_eq!(dense, merged);
        assert_eq!(
            dense.iter().map(Keep::to_bools).collect::<Vec<_>>(),
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
            &mut [Keep::all(2), Keep::all(1)],
            &mut Vec::new(),
            false
        ));
    }

    /// Which rows survive, naively: those whose key no newer run holds.
    fn survivors(runs: &[&[u64]]) -> Vec<Vec<bool>> {
        runs.iter()
            .enumerate()
            .map(|(r, keys)| {
                keys.iter()
                    .map(|k| !runs[r + 1..].iter().any(|newer| newer.contains(k)))
                    .collect()
            })
            .collect()
    }

    /// Runs of consecutive keys take their bits a word at a time: at every offset from the
    /// chunk's smallest key (word-aligned or not) they agree with a naive check, and a run
    /// that repeats a key is not taken for consecutive.
    #[test]
    fn consecutive_runs_match_a_naive_check() {
        for offset in [0u64, 1, 63, 64, 65, 100] {
            let older: Vec<u64> = (offset..offset + 300).collect();
            let middle: Vec<u64> = (offset + 50..offset + 170).collect();
            let newest: Vec<u64> = (0..200).map(|i| i * 4).collect();
            let runs: [&[u64]; 3] = [&older, &middle, &newest];
            let naive = survivors(&runs);
            let mut dense: Vec<Keep> = runs.iter().map(|r| Keep::all(r.len())).collect();
            assert!(clear_shared_dense(&runs, &mut dense, &mut Vec::new(), false));
            let bools: Vec<Vec<bool>> = dense.iter().map(Keep::to_bools).collect();
            assert_eq!(bools, naive, "offset {offset}");
        }
        assert!(super::consecutive(&[4, 5, 6, 7]));
        assert!(super::consecutive(&[9]));
        assert!(!super::consecutive(&[4, 5, 5, 7]));
        assert!(!super::consecutive(&[4, 6, 7]));
    }

    /// Runs longer than a word: the bitmap and the merge agree with a naive check, across
    /// word boundaries and with a partial last word.
    #[test]
    fn clearing_across_words_matches_a_naive_check() {
        let older: Vec<u64> = (0..300).map(|i| i * 3).collect();
        let middle: Vec<u64> = (0..150).map(|i| i * 5 + 1).collect();
        let newest: Vec<u64> = (0..200).map(|i| i * 4).collect();
        let runs: [&[u64]; 3] = [&older, &middle, &newest];
        let naive = survivors(&runs);
        let fresh = || runs.iter().map(|r| Keep::all(r.len())).collect::<Vec<_>>();
        let mut dense = fresh();
        assert!(clear_shared_dense(&runs, &mut dense, &mut Vec::new(), false));
        let mut merged = fresh();
        clear_shared_exact(&runs, &mut merged, &mut [Vec::new(), Vec::new()]);
        for keeps in [dense, merged] {
            let bools: Vec<Vec<bool>> = keeps.iter().map(Keep::to_bools).collect();
            assert_eq!(bools, naive);
            let counts: Vec<usize> = keeps.iter().map(Keep::count).collect();
            let expected: Vec<usize> = naive.iter().map(|k| k.iter().filter(|b| **b).count()).collect();
            assert_eq!(counts, expected);
        }
    }

    /// Retractions are dropped word by word; a run without any is left alone.
    #[test]
    fn retractions_are_dropped() {
        let mut kinds = vec![row_kind::INSERT; 130];
        for i in [0, 63, 64, 129] {
            kinds[i] = row_kind::DELETE;
        }
        kinds[70] = row_kind::UPDATE_BEFORE;
        kinds[71] = row_kind::UPDATE_AFTER;
        let mut keep = Keep::all(130);
        keep.clear_if(5, true);
        keep.drop_retracts(&kinds);
        let expected: Vec<bool> = (0..130).map(|i| ![0, 5, 63, 64, 70, 129].contains(&i)).collect();
        assert_eq!(keep.to_bools(), expected);
        assert_eq!(keep.count(), 124);
        let mut untouched = Keep::all(3);
        untouched.drop_retracts(&[row_kind::INSERT; 3]);
        assert_eq!(untouched, Keep::all(3));
        assert_eq!(untouched.into_buffer().count_set_bits(), 3);
    }
}
