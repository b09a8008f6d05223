//! The hash index of the normalize state: a key's hash -> its slot id.
//!
//! Most lookups of a normalize miss every cache: millions of keys, visited in an order no cache
//! predicts. A lookup through a general-purpose table costs three misses (its control bytes,
//! the bucket holding the slot id, the slot); here an entry holds the slot id and a 32-bit tag
//! of the hash side by side in 8 bytes, so a lookup costs one miss for the entry plus one for
//! the slot, and both can be prefetched: a batch's hashes are known before its rows are
//! folded, so the fold asks for the entries of rows a few steps ahead ([`KeyIndex::prefetch`])
//! and, once those have arrived, for their slots ([`KeyIndex::first_candidate`]).
//!
//! Open addressing with linear probing over a power-of-two number of buckets, at most 3/4 of
//! them used (live entries plus the markers of removed ones). An entry is
//! `tag << 32 | slot id`; tags are odd, so the tag of a used entry is never 0, and the two
//! entries with tag 0 mark an empty bucket (0) and a removed entry (1).

use super::store::SlotId;

const EMPTY: u64 = 0;
const REMOVED: u64 = 1;
const MIN_BUCKETS: usize = 8;
/// Linear probing visits one 64-byte line for up to 8 entries.
const PROBES_PER_PREFETCH: usize = 8;

#[inline]
fn tag(hash: u64) -> u64 {
    (hash >> 32) | 1
}

#[inline]
fn entry(hash: u64, id: SlotId) -> u64 {
    tag(hash) << 32 | u64::from(id)
}

#[inline]
fn id_of(entry: u64) -> SlotId {
    entry as u32
}

/// Items a table of `buckets` holds before it grows.
fn capacity_of(buckets: usize) -> usize {
    buckets / 4 * 3
}

/// The bucket count for `items` items.
fn buckets_for(items: usize) -> usize {
    let mut buckets = MIN_BUCKETS;
    while capacity_of(buckets) < items {
        buckets *= 2;
    }
    buckets
}

#[derive(Default)]
pub(super) struct KeyIndex {
    /// `buckets` entries, a power of two (or none before the first insert).
    entries: Vec<u64>,
    live: usize,
    removed: usize,
}

impl KeyIndex {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.live
    }

    /// Bytes allocated.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<u64>()
    }

    /// Bytes allocated once `additional` more entries were reserved.
    pub(super) fn bytes_after_reserve(&self, additional: usize) -> usize {
        match self.buckets_after_reserve(additional) {
            Some(buckets) => buckets * std::mem::size_of::<u64>(),
            None => self.allocated_bytes(),
        }
    }

    /// The new bucket count if reserving `additional` entries rebuilds the table.
    fn buckets_after_reserve(&self, additional: usize) -> Option<usize> {
        let used = self.live + self.removed + additional;
        if !self.entries.is_empty() && used <= capacity_of(self.entries.len()) {
            return None;
        }
        // Markers of removed entries vanish in a rebuild; grow for the live ones, and at
        // least double when the table is already full of them.
        // Never shrinks: the memory was granted, and the rows to come will want it.
        let wanted = self.live + additional;
        let mut buckets = buckets_for(wanted).max(self.entries.len());
        if buckets == self.entries.len() && wanted > capacity_of(buckets) / 2 {
            buckets *= 2;
        }
        Some(buckets)
    }

    /// Makes room for `additional` more entries; `hash_of` gives a stored slot's hash (entries
    /// keep only 32 bits of it).
    pub(super) fn reserve(&mut self, additional: usize, hash_of: impl Fn(SlotId) -> u64) {
        let Some(buckets) = self.buckets_after_reserve(additional) else {
            return;
        };
        let old = std::mem::replace(&mut self.entries, vec![EMPTY; buckets]);
        self.removed = 0;
        let mask = buckets - 1;
        for e in old.into_iter().filter(|&e| e >> 32 != 0) {
            let id = id_of(e);
            let mut at = hash_of(id) as usize & mask;
            while self.entries[at] != EMPTY {
                at = (at + 1) & mask;
            }
            self.entries[at] = e;
        }
    }

    /// `(position, entry)` of the buckets a lookup of `hash` visits: from its home bucket up to
    /// the first empty one.
    #[inline]
    fn probe(&self, hash: u64) -> impl Iterator<Item = (usize, u64)> + '_ {
        let mask = self.entries.len().wrapping_sub(1);
        let home = hash as usize & mask;
        (0..self.entries.len())
            .map(move |i| (home + i) & mask)
            .map(|at| (at, self.entries[at]))
            .take_while(|&(_, e)| e != EMPTY)
    }

    /// The slot of the entry with `hash` for which `is_key` holds.
    #[inline]
    pub(super) fn find(&self, hash: u64, mut is_key: impl FnMut(SlotId) -> bool) -> Option<SlotId> {
        let tag = tag(hash);
        self.probe(hash)
            .find(|&(_, e)| e >> 32 == tag && is_key(id_of(e)))
            .map(|(_, e)| id_of(e))
    }

    /// Adds an entry for a key the index does not hold.
    pub(super) fn insert_unique(&mut self, hash: u64, id: SlotId, hash_of: impl Fn(SlotId) -> u64) {
        self.reserve(1, hash_of);
        let mask = self.entries.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            match self.entries[at] {
                EMPTY => break,
                REMOVED => {
                    self.removed -= 1;
                    break;
                }
                _ => at = (at + 1) & mask,
            }
        }
        self.entries[at] = entry(hash, id);
        self.live += 1;
    }

    /// Removes the entry of slot `id` (stored under `hash`).
    pub(super) fn remove(&mut self, hash: u64, id: SlotId) {
        let wanted = entry(hash, id);
        let found = self.probe(hash).find(|&(_, e)| e == wanted).map(|(at, _)| at);
        if let Some(at) = found {
            self.entries[at] = REMOVED;
            self.live -= 1;
            self.removed += 1;
        }
    }

    /// Empties the index, keeping its memory.
    pub(super) fn clear(&mut self) {
        self.entries.fill(EMPTY);
        (self.live, self.removed) = (0, 0);
    }

    /// Asks the CPU to load the entries a lookup of `hash` reads first.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        if !self.entries.is_empty() {
            let at = hash as usize & (self.entries.len() - 1);
            prefetch(&self.entries[at]);
        }
    }

    /// The slot of the first entry whose tag matches `hash` among the first few probed: almost
    /// always the key's own slot, worth prefetching once [`Self::prefetch`] brought the entries.
    #[inline]
    pub(super) fn first_candidate(&self, hash: u64) -> Option<SlotId> {
        let tag = tag(hash);
        self.probe(hash)
            .take(PROBES_PER_PREFETCH)
            .find(|&(_, e)| e >> 32 == tag)
            .map(|(_, e)| id_of(e))
    }
}

/// A hint to load `value`'s cache line; no effect on what the program computes.
#[inline(always)]
pub(super) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing the program sees; SSE is part of the
    // x86_64 baseline; the address comes from a live reference.
    #[allow(unused_unsafe)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed hash (splitmix64); every fourth one has its low bits cleared, so that hashes
    /// sharing a home bucket make long probe sequences.
    fn hash(i: u32) -> u64 {
        let mut z = u64::from(i).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let h = z ^ (z >> 31);
        if i % 4 == 0 {
            h & !0x7
        } else {
            h
        }
    }

    #[test]
    fn finds_what_it_holds_through_inserts_removes_and_growth() {
        let mut index = KeyIndex::default();
        let mut model = std::collections::HashSet::new();
        for round in 0..4u32 {
            for i in 0..20_000u32 {
                let id = (i * 7 + round) % 30_000;
                if (i + round) % 3 == 0 {
                    if model.remove(&id) {
                        index.remove(hash(id), id);
                    }
                } else if model.insert(id) {
                    index.insert_unique(hash(id), id, hash);
                }
            }
            assert_eq!(index.len(), model.len());
            for id in 0..30_000u32 {
                let found = index.find(hash(id), |s| s == id);
                assert_eq!(found.is_some(), model.contains(&id), "slot {id}, round {round}");
            }
        }
        index.clear();
        assert_eq!(index.len(), 0);
        assert_eq!(index.find(hash(1), |_| true), None);
    }

    #[test]
    fn reserving_predicts_the_allocation_and_inserts_then_allocate_nothing() {
        let mut index = KeyIndex::default();
        let mut next = 0u32;
        for n in [1usize, 5, 6, 100, 1_000, 40_000] {
            let predicted = index.bytes_after_reserve(n);
            index.reserve(n, hash);
            assert_eq!(index.allocated_bytes(), predicted, "reserving {n}");
            for _ in 0..n {
                index.insert_unique(hash(next), next, hash);
                next += 1;
            }
            assert_eq!(index.allocated_bytes(), predicted, "inserting {n}");
        }
        // Removed entries' markers count as used until a rebuild drops them.
        for id in 0..next / 2 {
            index.remove(hash(id), id);
        }
        let predicted = index.bytes_after_reserve(next as usize);
        index.reserve(next as usize, hash);
        assert_eq!(index.allocated_bytes(), predicted);
        for id in 0..next {
            assert_eq!(index.find(hash(id), |s| s == id).is_some(), id >= next / 2);
        }
    }
}
