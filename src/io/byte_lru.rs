//! A map of decoded immutable files bounded by the bytes they take, the least recently used
//! dropped first; entries bigger than a per-entry limit are not kept. Shared by a catalog's
//! caches (manifests, Parquet footers), one instance per catalog: two warehouses may hold files
//! of the same name.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug)]
struct Entries<V> {
    /// key -> (value, bytes, last use)
    map: HashMap<String, (V, usize, u64)>,
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
pub(crate) struct ByteLru<V> {
    capacity: usize,
    max_entry: usize,
    entries: Mutex<Entries<V>>,
}

impl<V: Clone> ByteLru<V> {
    /// At most `capacity` bytes in all, entries of at most `max_entry` bytes.
    pub(crate) fn new(capacity: usize, max_entry: usize) -> Self {
        ByteLru {
            capacity,
            max_entry,
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                bytes: 0,
                clock: 0,
            }),
        }
    }

    /// Bytes of the entries kept now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.entries.lock().expect("cache lock").bytes
    }

    pub(crate) fn get(&self, key: &str) -> Option<V> {
        let mut entries = self.entries.lock().expect("cache lock");
        entries.clock += 1;
        let now = entries.clock;
        let (value, _, used) = entries.map.get_mut(key)?;
        *used = now;
        Some(value.clone())
    }

    /// Forgets the entry of `key`, if any.
    pub(crate) fn remove(&self, key: &str) {
        let mut entries = self.entries.lock().expect("cache lock");
        if let Some((_, bytes, _)) = entries.map.remove(key) {
            entries.bytes -= bytes;
        }
    }

    /// Forgets every entry.
    pub(crate) fn clear(&self) {
        let mut entries = self.entries.lock().expect("cache lock");
        entries.map.clear();
        entries.bytes = 0;
    }

    /// Keeps `value`, which takes `bytes`, unless it is too big.
    pub(crate) fn put(&self, key: &str, value: V, bytes: usize) {
        if bytes > self.max_entry || bytes > self.capacity {
            return;
        }
        let mut entries = self.entries.lock().expect("cache lock");
        entries.clock += 1;
        let now = entries.clock;
        if let Some((_, old, _)) = entries.map.insert(key.to_string(), (value, bytes, now)) {
            entries.bytes -= old;
        }
        entries.bytes += bytes;
        while entries.bytes > self.capacity {
            let Some(oldest) = entries
                .map
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((_, bytes, _)) = entries.map.remove(&oldest) {
                entries.bytes -= bytes;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_entries_go_beyond_the_capacity() {
        let cache = ByteLru::new(100, 60);
        cache.put("a", 1, 40);
        cache.put("b", 2, 40);
        assert_eq!(cache.get("a"), Some(1)); // b is now the least recently used
        cache.put("c", 3, 40);
        assert!(cache.get("a").is_some() && cache.get("c").is_some());
        assert!(cache.get("b").is_none());
        cache.put("big", 4, 61);
        assert!(cache.get("big").is_none());
        cache.put("a", 5, 10);
        assert_eq!(cache.get("a"), Some(5));
    }
}
