//! Where ChangelogNormalize keeps its per-key state: primary key -> the row the table holds.
//!
//! Millions of keys live here, so no entry owns an allocation (one per key made `malloc`,
//! `free` and page faults the larger part of a normalize). Key bytes and row bytes (Arrow's row
//! format) are appended to two byte arenas, a slot per key records where its bytes are, and a
//! hash table of slot ids ([`super::key_index`], built for prefetching) finds a key by the hash
//! kept in its slot (growing the table never rehashes a key). A row replaced by a longer one,
//! or a removed key, leaves garbage behind, reclaimed by compacting the arenas in place once it
//! is half of them.
//!
//! Capacity grows in [`RowStore::reserve`] only, whose [`RowStore::bytes_after_reserve`] tells
//! the caller beforehand what the memory pool must grant: growth is asked for, never found
//! afterwards. A batch may still outgrow what it reserved when merged rows are longer than
//! their inputs; the caller accounts [`RowStore::allocated_bytes`] after every batch.

use std::hash::BuildHasher;

use hashbrown::DefaultHashBuilder;

use super::key_index::{prefetch, KeyIndex};

pub(super) type SlotId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotState {
    /// Unused; listed in `free`, not in the index.
    Free,
    /// Holds a row changed since the last spill (or never spilled).
    Dirty,
    /// Holds a row read back from the spill and unchanged since: a spill need not write it.
    Clean,
    /// Removed since the last spill, which may still hold the key: a tombstone for the next
    /// spill, and a key known absent without reading the spill.
    Gone,
}

/// Keys up to this long live in their slot: a lookup then reads one slot, not a slot and the
/// key arena (integer keys are 5 or 9 bytes in row format).
const INLINE_KEY: usize = 16;

#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    /// The key itself when it is at most [`INLINE_KEY`] bytes, else its offset in the key
    /// arena (first 8 bytes).
    key: [u8; INLINE_KEY],
    value_at: usize,
    key_len: u32,
    /// Length of the row bytes at `value_at`.
    row_len: u32,
    /// Length of the `sequence.field` row bytes right after the row (0: none).
    sequence_len: u32,
    state: SlotState,
}

impl Slot {
    fn key_at(&self) -> usize {
        usize::from_le_bytes(self.key[..8].try_into().expect("8 bytes"))
    }

    fn key<'a>(&'a self, arena: &'a [u8]) -> &'a [u8] {
        let len = self.key_len as usize;
        if len <= INLINE_KEY {
            &self.key[..len]
        } else {
            let at = self.key_at();
            &arena[at..at + len]
        }
    }

    fn value_len(&self) -> usize {
        self.row_len as usize + self.sequence_len as usize
    }
}

/// What the store knows of a key.
pub(super) enum Found {
    Live(SlotId),
    Gone(SlotId),
    Absent,
}

pub(super) struct RowStore {
    hasher: DefaultHashBuilder,
    index: KeyIndex,
    slots: Vec<Slot>,
    free: Vec<SlotId>,
    keys: Vec<u8>,
    values: Vec<u8>,
    /// Bytes of `keys` and `values` no slot refers to any more.
    garbage_keys: usize,
    garbage_values: usize,
    /// A spill exists: removed keys stay as tombstones until the next spill.
    tombstones: bool,
}

impl RowStore {
    pub(super) fn new() -> RowStore {
        RowStore {
            hasher: DefaultHashBuilder::default(),
            index: KeyIndex::default(),
            slots: Vec::new(),
            free: Vec::new(),
            keys: Vec::new(),
            values: Vec::new(),
            garbage_keys: 0,
            garbage_values: 0,
            tombstones: false,
        }
    }

    pub(super) fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    pub(super) fn find(&self, hash: u64, key: &[u8]) -> Found {
        let (slots, keys) = (&self.slots, &self.keys);
        let found = self.index.find(hash, |id| {
            let slot = &slots[id as usize];
            slot.hash == hash && slot.key(keys) == key
        });
        match found {
            None => Found::Absent,
            Some(id) if self.slots[id as usize].state == SlotState::Gone => Found::Gone(id),
            Some(id) => Found::Live(id),
        }
    }

    /// Prefetches what looking up the keys of `hashes[row + 8]` and `hashes[row + 16]` will
    /// read: called once per row of a batch, it hides most of a lookup's cache misses (the
    /// entry 16 rows ahead, then its slot 8 rows ahead, once the entry has arrived).
    #[inline]
    pub(super) fn prefetch_ahead(&self, hashes: &[u64], row: usize) {
        if let Some(&hash) = hashes.get(row + 16) {
            self.index.prefetch(hash);
        }
        if let Some(&hash) = hashes.get(row + 8) {
            if let Some(id) = self.index.first_candidate(hash) {
                if let Some(slot) = self.slots.get(id as usize) {
                    prefetch(slot);
                }
            }
        }
    }

    /// The live row of `key`, if the store holds one.
    pub(super) fn live(&self, hash: u64, key: &[u8]) -> Option<SlotId> {
        match self.find(hash, key) {
            Found::Live(id) => Some(id),
            _ => None,
        }
    }

    pub(super) fn key(&self, id: SlotId) -> &[u8] {
        self.slots[id as usize].key(&self.keys)
    }

    pub(super) fn row(&self, id: SlotId) -> &[u8] {
        let slot = &self.slots[id as usize];
        &self.values[slot.value_at..slot.value_at + slot.row_len as usize]
    }

    pub(super) fn sequence(&self, id: SlotId) -> Option<&[u8]> {
        let slot = &self.slots[id as usize];
        (slot.sequence_len > 0).then(|| {
            let at = slot.value_at + slot.row_len as usize;
            &self.values[at..at + slot.sequence_len as usize]
        })
    }

    /// Stores `row` for a key the store does not hold live (`found` is what [`Self::find`]
    /// said of it: absent, or a tombstone whose slot is reused).
    pub(super) fn insert(
        &mut self,
        found: Found,
        hash: u64,
        key: &[u8],
        row: &[u8],
        sequence: Option<&[u8]>,
        state: SlotState,
    ) {
        let value_at = self.push_value(row, sequence);
        let lengths = (row.len() as u32, sequence.map_or(0, <[u8]>::len) as u32);
        if let Found::Gone(id) = found {
            let slot = &mut self.slots[id as usize];
            (slot.value_at, slot.row_len, slot.sequence_len) = (value_at, lengths.0, lengths.1);
            slot.state = state;
            return;
        }
        let mut key_bytes = [0; INLINE_KEY];
        if key.len() <= INLINE_KEY {
            key_bytes[..key.len()].copy_from_slice(key);
        } else {
            key_bytes[..8].copy_from_slice(&self.keys.len().to_le_bytes());
            self.keys.extend_from_slice(key);
        }
        let slot = Slot {
            hash,
            key: key_bytes,
            value_at,
            key_len: key.len() as u32,
            row_len: lengths.0,
            sequence_len: lengths.1,
            state,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as SlotId
            }
        };
        let slots = &self.slots;
        self.index.insert_unique(hash, id, |i| slots[i as usize].hash);
    }

    /// Replaces the row of a live key (in place when it fits); the key becomes dirty.
    pub(super) fn replace(&mut self, id: SlotId, row: &[u8], sequence: Option<&[u8]>) {
        let new_len = row.len() + sequence.map_or(0, <[u8]>::len);
        let slot = self.slots[id as usize];
        let value_at = if new_len <= slot.value_len() {
            let at = slot.value_at;
            self.values[at..at + row.len()].copy_from_slice(row);
            if let Some(sequence) = sequence {
                self.values[at + row.len()..at + new_len].copy_from_slice(sequence);
            }
            self.garbage_values += slot.value_len() - new_len;
            at
        } else {
            self.garbage_values += slot.value_len();
            self.push_value(row, sequence)
        };
        let slot = &mut self.slots[id as usize];
        slot.value_at = value_at;
        slot.row_len = row.len() as u32;
        slot.sequence_len = sequence.map_or(0, <[u8]>::len) as u32;
        slot.state = SlotState::Dirty;
    }

    /// Removes a live key: a tombstone while a spill exists, otherwise its slot is freed.
    pub(super) fn remove(&mut self, id: SlotId) {
        let slot = self.slots[id as usize];
        self.garbage_values += slot.value_len();
        let s = &mut self.slots[id as usize];
        (s.row_len, s.sequence_len) = (0, 0);
        if self.tombstones {
            s.state = SlotState::Gone;
            return;
        }
        s.state = SlotState::Free;
        if slot.key_len as usize > INLINE_KEY {
            self.garbage_keys += slot.key_len as usize;
        }
        self.index.remove(slot.hash, id);
        self.free.push(id);
    }

    /// The slots a spill must write, by key: changed rows and tombstones.
    pub(super) fn unspilled(&self) -> Vec<SlotId> {
        let mut ids: Vec<SlotId> = (0..self.slots.len() as SlotId)
            .filter(|&id| matches!(self.slots[id as usize].state, SlotState::Dirty | SlotState::Gone))
            .collect();
        // Sorted keys make the spill's B-tree inserts sequential.
        ids.sort_unstable_by(|&a, &b| self.key(a).cmp(self.key(b)));
        ids
    }

    pub(super) fn is_gone(&self, id: SlotId) -> bool {
        self.slots[id as usize].state == SlotState::Gone
    }

    /// Empties the store after a spill, keeping its capacity (and so its reservation) for the
    /// rows to come; from now on removals leave tombstones.
    pub(super) fn clear_spilled(&mut self) {
        self.index.clear();
        self.slots.clear();
        self.free.clear();
        self.keys.clear();
        self.values.clear();
        (self.garbage_keys, self.garbage_values) = (0, 0);
        self.tombstones = true;
    }

    /// Empties the store and releases its memory.
    pub(super) fn release(&mut self) {
        let tombstones = self.tombstones;
        *self = RowStore::new();
        self.tombstones = tombstones;
    }

    /// Bytes the store has allocated.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.keys.capacity()
            + self.values.capacity()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.free.capacity() * std::mem::size_of::<SlotId>()
            + self.index.allocated_bytes()
    }

    /// What [`Self::allocated_bytes`] will be after `reserve(rows, key_bytes, value_bytes)`.
    pub(super) fn bytes_after_reserve(&self, rows: usize, key_bytes: usize, value_bytes: usize) -> usize {
        vec_capacity_after(&self.keys, key_bytes)
            + vec_capacity_after(&self.values, value_bytes)
            + vec_capacity_after(&self.slots, rows) * std::mem::size_of::<Slot>()
            + self.free.capacity() * std::mem::size_of::<SlotId>()
            + self.index.bytes_after_reserve(rows)
    }

    /// Makes room for `rows` more keys with `key_bytes` and `value_bytes` of bytes, so that
    /// storing them allocates nothing.
    pub(super) fn reserve(&mut self, rows: usize, key_bytes: usize, value_bytes: usize) {
        self.keys.reserve(key_bytes);
        self.values.reserve(value_bytes);
        self.slots.reserve(rows);
        let slots = &self.slots;
        self.index.reserve(rows, |i| slots[i as usize].hash);
    }

    /// Whether compacting would free at least half of the arenas.
    pub(super) fn wants_compaction(&self) -> bool {
        let garbage = self.garbage_keys + self.garbage_values;
        garbage > 1 << 20 && 2 * garbage >= self.keys.len() + self.values.len()
    }

    /// Moves every live byte down over the garbage, in place (no second arena).
    pub(super) fn compact(&mut self) {
        let mut ids: Vec<SlotId> = (0..self.slots.len() as SlotId)
            .filter(|&id| self.slots[id as usize].state != SlotState::Free)
            .collect();
        ids.sort_unstable_by_key(|&id| self.slots[id as usize].value_at);
        let mut to = 0;
        for &id in &ids {
            let slot = &mut self.slots[id as usize];
            let len = slot.value_len();
            self.values.copy_within(slot.value_at..slot.value_at + len, to);
            slot.value_at = to;
            to += len;
        }
        self.values.truncate(to);
        ids.retain(|&id| self.slots[id as usize].key_len as usize > INLINE_KEY);
        ids.sort_unstable_by_key(|&id| self.slots[id as usize].key_at());
        let mut to = 0;
        for &id in &ids {
            let slot = &mut self.slots[id as usize];
            let (at, len) = (slot.key_at(), slot.key_len as usize);
            self.keys.copy_within(at..at + len, to);
            slot.key[..8].copy_from_slice(&to.to_le_bytes());
            to += len;
        }
        self.keys.truncate(to);
        (self.garbage_keys, self.garbage_values) = (0, 0);
    }

    fn push_value(&mut self, row: &[u8], sequence: Option<&[u8]>) -> usize {
        let at = self.values.len();
        self.values.extend_from_slice(row);
        if let Some(sequence) = sequence {
            self.values.extend_from_slice(sequence);
        }
        at
    }
}

/// The capacity `Vec::<T>::reserve(additional)` leaves: amortized doubling, and at least the
/// standard library's smallest non-zero capacity (8 for bytes, 4 for elements up to 1 KiB).
fn vec_capacity_after<T>(v: &Vec<T>, additional: usize) -> usize {
    let (len, capacity) = (v.len(), v.capacity());
    if len + additional <= capacity {
        return capacity;
    }
    let smallest = match std::mem::size_of::<T>() {
        1 => 8,
        n if n <= 1024 => 4,
        _ => 1,
    };
    (len + additional).max(2 * capacity).max(smallest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every third key is too long to live in its slot.
    fn key(i: u64) -> Vec<u8> {
        let mut k = i.to_be_bytes().to_vec();
        if i % 3 == 0 {
            k.extend_from_slice(&[7; 12]);
        }
        k
    }

    #[test]
    fn rows_replace_remove_and_compact_without_losing_a_key() {
        let mut store = RowStore::new();
        let mut model = std::collections::HashMap::new();
        for round in 0..6u64 {
            store.reserve(10_000, 40_000, 400_000);
            for i in 0..10_000u64 {
                let k = key(i * 7 % 13_000);
                let hash = store.hash(&k);
                // rows of varying length, so replacements both fit and move
                let row = vec![(i % 251) as u8; ((i + round) % 37) as usize + 1];
                match (round + i) % 5 {
                    0 => {
                        if let Found::Live(id) = store.find(hash, &k) {
                            store.remove(id);
                        }
                        model.remove(&k);
                    }
                    _ => {
                        match store.find(hash, &k) {
                            Found::Live(id) => store.replace(id, &row, Some(&[1, 2])),
                            found => store.insert(found, hash, &k, &row, Some(&[1, 2]), SlotState::Dirty),
                        }
                        model.insert(k, row);
                    }
                }
            }
            if store.wants_compaction() || round == 3 {
                store.compact();
            }
            for (k, row) in &model {
                let id = store.live(store.hash(k), k).expect("a stored key is found");
                assert_eq!(store.row(id), row.as_slice());
                assert_eq!(store.sequence(id), Some(&[1u8, 2][..]));
                assert_eq!(store.key(id), k.as_slice());
            }
            let live = (0..13_000u64).filter(|&i| store.live(store.hash(&key(i)), &key(i)).is_some());
            assert_eq!(live.count(), model.len());
        }
    }

    #[test]
    fn reserving_predicts_the_allocation() {
        let mut store = RowStore::new();
        for n in [1usize, 5, 100, 1_000, 50_000] {
            let predicted = store.bytes_after_reserve(n, 20 * n, 30 * n);
            store.reserve(n, 20 * n, 30 * n);
            assert_eq!(store.allocated_bytes(), predicted, "reserving {n}");
            for i in 0..n as u64 {
                let k = key(i + 1_000_000 * n as u64);
                let hash = store.hash(&k);
                let found = store.find(hash, &k);
                store.insert(found, hash, &k, &[0; 30], None, SlotState::Dirty);
            }
            assert_eq!(
                store.allocated_bytes(),
                predicted,
                "storing {n} allocates nothing"
            );
        }
    }

    #[test]
    fn after_a_spill_removed_keys_are_tombstones_until_the_next() {
        let mut store = RowStore::new();
        let k = key(1);
        let hash = store.hash(&k);
        store.insert(Found::Absent, hash, &k, b"row", None, SlotState::Dirty);
        assert_eq!(store.unspilled().len(), 1);
        store.clear_spilled();
        assert!(matches!(store.find(hash, &k), Found::Absent));
        store.insert(Found::Absent, hash, &k, b"row", None, SlotState::Clean);
        assert!(store.unspilled().is_empty(), "a clean row is not written again");
        let Found::Live(id) = store.find(hash, &k) else {
            panic!("live")
        };
        store.remove(id);
        assert!(matches!(store.find(hash, &k), Found::Gone(_)));
        assert_eq!(store.unspilled(), vec![id]);
        assert!(store.is_gone(id));
    }
}
