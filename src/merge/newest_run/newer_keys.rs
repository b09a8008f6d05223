//! The keys the newer runs of one section hold over its dense oldest run, one bit per key of the
//! oldest run's span, shared by the pieces the section is cut into (`scan::parallel`).
//!
//! ```text
//! piece reading the newer runs whole ── marks each chunk's keys, then publishes, per run,
//!                                       "every key of this run up to k is marked"
//!                                                   │
//! other pieces (the oldest run below it) ── before masking a batch of the oldest run up to key
//!         k: every newer run published past k? use the bits : hold the batch back and read
//!         on; out of room to hold more, or of batches: read the runs' own keys in the
//!         piece's range until past k, marking them too
//! ```
//!
//! The piece reading the newer runs whole passes through the whole key span while it decodes
//! them, faster than a piece reading only the oldest run walks its part of that span, so the
//! other pieces mostly find their keys marked already and decode none of them a second time.
//! At the start, while the piece reading them whole decodes the newer runs' first batches, the
//! others read their oldest run ahead of the board and mask it once it catches up. Nobody waits
//! on anybody: a piece whose keys are not marked yet, and that cannot read further ahead, reads
//! them itself, so the answer does not depend on how the partitions are scheduled, or whether
//! they share a process.
//! Every bit set and every progress published is a fact about the files, true for any later
//! read of the same section too.

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::common::{exec_datafusion_err, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};

use super::dense_base::MAX_SPAN;
use super::shadow::Keep;

/// The marked keys of one section's newer runs (see the module comment).
pub(crate) struct NewerKeys {
    lo: i64,
    hi: i64,
    /// One bit per key of `lo..=hi`; allocated by the first mark.
    bits: Mutex<Vec<u64>>,
    /// The sequence numbers of each newer run, which tell a piece's run (some of its files)
    /// which run of the section it is.
    runs: Vec<RangeInclusive<i64>>,
    /// Per newer run: every key of it up to this one is marked (`i64::MIN`: none yet).
    marked_through: Vec<AtomicI64>,
    /// The bits' bytes, charged to the memory pool of the first read that executes ([`charge`]).
    ///
    /// [`charge`]: NewerKeys::charge
    charged: OnceLock<MemoryReservation>,
}

impl std::fmt::Debug for NewerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NewerKeys({}..={}, {} runs)",
            self.lo,
            self.hi,
            self.runs.len()
        )
    }
}

impl NewerKeys {
    /// For an oldest run whose keys lie in `span`, and newer runs with these sequence numbers.
    pub(crate) fn new(span: RangeInclusive<i64>, runs: Vec<RangeInclusive<i64>>) -> Result<Self> {
        let (lo, hi) = (*span.start(), *span.end());
        if hi.checked_sub(lo).is_none_or(|w| w as u64 >= MAX_SPAN) {
            return Err(exec_datafusion_err!(
                "dense base run of keys {lo}..={hi}: span too wide"
            ));
        }
        Ok(NewerKeys {
            lo,
            hi,
            bits: Mutex::new(Vec::new()),
            marked_through: runs.iter().map(|_| AtomicI64::new(i64::MIN)).collect(),
            runs,
            charged: OnceLock::new(),
        })
    }

    /// Words of the bitmap (one bit per key of the span).
    fn words(&self) -> usize {
        ((self.hi - self.lo) as u64 + 1).div_ceil(64) as usize
    }

    /// Charges the bits to `pool`, once whichever piece of the section executes first: they are
    /// allocated by the first mark and live as long as the board. The charge is taken whatever
    /// the pool's room (at most 8 MiB, [`MAX_SPAN`]): the pieces cannot read without the board,
    /// and the pool's other consumers then see it taken.
    pub(crate) fn charge(&self, pool: &Arc<dyn MemoryPool>) {
        self.charged.get_or_init(|| {
            let reservation =
                MemoryConsumer::new(format!("PaimonScan newer keys of {}..={}", self.lo, self.hi))
                    .register(pool);
            reservation.grow(self.words() * std::mem::size_of::<u64>());
            reservation
        });
    }

    /// The span of keys the bits cover.
    pub(crate) fn span(&self) -> RangeInclusive<i64> {
        self.lo..=self.hi
    }

    /// Which newer run holds the record of sequence number `seq`.
    pub(crate) fn run_of(&self, seq: i64) -> Option<usize> {
        self.runs.iter().position(|r| r.contains(&seq))
    }

    /// The bits, allocated by the first mark.
    fn bits_to_mark(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        let mut bits = self.bits.lock().expect("newer keys");
        if bits.is_empty() {
            bits.resize(self.words(), 0);
        }
        bits
    }

    /// Sets the bit of every key of `keys` within the span.
    pub(super) fn mark(&self, keys: &[i64]) {
        let mut bits = self.bits_to_mark();
        let (lo, hi) = (self.lo, self.hi);
        for &key in keys {
            if key >= lo && key <= hi {
                let at = (key - lo) as u64;
                bits[(at / 64) as usize] |= 1 << (at % 64);
            }
        }
    }

    /// Sets the bit of key `first + i` for every bit `i` set in `bits`, within the span: a
    /// chunk's bitmap ([`super::shadow::clear_shared_dense`]), a word at a time.
    pub(super) fn mark_bits(&self, first: i64, bits: &[u64]) {
        let mut board = self.bits_to_mark();
        let span_bits = (self.hi - self.lo) as i128 + 1;
        // the board's bit of `bits`' bit 0 (may lie before the span)
        let start = i128::from(first) - i128::from(self.lo);
        for (i, &word) in bits.iter().enumerate() {
            let at = start + 64 * i as i128;
            if word == 0 || at + 64 <= 0 || at >= span_bits {
                continue;
            }
            let (index, shift) = (at.div_euclid(64), at.rem_euclid(64) as u32);
            // the word's low bits land in board word `index`, its high bits in the next
            if index >= 0 {
                board[index as usize] |= word << shift;
            }
            if shift > 0 && index + 1 < board.len() as i128 {
                board[(index + 1) as usize] |= word >> (64 - shift);
            }
        }
        // (keys past the span in its last word are never asked for; kept clear all the same)
        let tail = (span_bits % 64) as u32;
        if let (Some(last), true) = (board.last_mut(), tail > 0) {
            *last &= (1 << tail) - 1;
        }
    }

    /// Every key of newer run `run` up to `key` is marked (`i64::MAX`: all of them).
    pub(super) fn publish(&self, run: usize, key: i64) {
        self.marked_through[run].fetch_max(key, Ordering::Release);
    }

    /// Whether every key of newer run `run` up to `key` is marked.
    pub(super) fn marked_through(&self, run: usize, key: i64) -> bool {
        self.marked_through[run].load(Ordering::Acquire) >= key
    }

    /// Which of the oldest run's rows with these keys (ascending, within the span) no newer run
    /// holds, from the bits as they are.
    pub(super) fn unshadowed(&self, keys: &[i64]) -> Keep {
        let bits = self.bits.lock().expect("newer keys");
        let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
            return Keep::all(0);
        };
        if bits.is_empty() {
            return Keep::all(keys.len());
        }
        match last.checked_sub(first) == Some(keys.len() as i64 - 1) {
            // consecutive keys (a sorted run repeats none): a slice of the bitmap
            true => Keep::unshadowed_run(&bits, (first - self.lo) as u64, keys.len()),
            false => Keep::unshadowed_keys(&bits, keys.iter().map(|k| (k - self.lo) as u64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryPool};

    use super::NewerKeys;

    /// The bits are charged once, whichever piece executes first, even past the pool's room,
    /// and released with the board.
    #[test]
    fn the_bits_are_charged_to_the_pool_once() {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(100));
        // keys 0..=999: 16 words of 64 bits
        let board = NewerKeys::new(0..=999, vec![1..=1]).unwrap();
        board.charge(&pool);
        board.charge(&pool);
        assert_eq!(pool.reserved(), 16 * 8);
        board.mark(&[3, 999]);
        assert_eq!(pool.reserved(), 16 * 8, "marking allocates what was charged");
        drop(board);
        assert_eq!(pool.reserved(), 0);
    }

    /// A chunk's bitmap marks the keys its bits stand for, wherever it starts: before the span,
    /// inside it (on a word boundary or not) or across its end, as marking each key does.
    #[test]
    fn marking_from_a_bitmap_matches_marking_each_key() {
        let span = 10..=1009;
        // bits 0, 1, 63, 64, 100 and 127..=191 of a three-word bitmap
        let mut bits = vec![0u64; 3];
        let set: Vec<i64> = [0, 1, 63, 64, 100].into_iter().chain(127..=191).collect();
        for &i in &set {
            bits[(i / 64) as usize] |= 1 << (i % 64);
        }
        for first in [
            -200, -130, -64, 9, 10, 11, 73, 74, 500, 900, 1000, 1009, 1010, 5000,
        ] {
            let (by_bits, by_key) = (
                NewerKeys::new(span.clone(), vec![]).unwrap(),
                NewerKeys::new(span.clone(), vec![]).unwrap(),
            );
            by_bits.mark_bits(first, &bits);
            let keys: Vec<i64> = set.iter().map(|i| first + i).collect();
            by_key.mark(&keys);
            let (a, b) = (by_bits.bits.lock().unwrap(), by_key.bits.lock().unwrap());
            assert_eq!(*a, *b, "bitmap from key {first}");
        }
    }
}
