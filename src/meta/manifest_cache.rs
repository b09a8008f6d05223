//! Decoded manifests of one catalog (session), shared by every table read through it: manifest
//! files are immutable (their names are unique), so a long session (the REPL, a service, a
//! writer committing every few seconds) decodes each once instead of at every query and
//! commit, as Java Paimon's catalog caches small manifest files. Bounded by the bytes of the
//! files cached; past the bound the least recently used go. Per catalog, never process-wide:
//! two warehouses may hold files of the same name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::spec::ManifestEntry;

/// Bytes of manifest files kept decoded (Java's `cache.manifest.small-file-memory` is 128 MB
/// of decoded pages; ours counts the files, whose decoded entries take a few times more).
pub(crate) const DEFAULT_MANIFEST_CACHE_BYTES: usize = 32 << 20;
/// Larger manifests are not cached (Java's `cache.manifest.small-file-threshold`).
pub(crate) const SMALL_MANIFEST_BYTES: usize = 1 << 20;

#[derive(Debug, Default)]
struct Cached {
    files: HashMap<String, (Arc<Vec<ManifestEntry>>, usize, u64)>,
    bytes: usize,
    clock: u64,
}

/// Manifest path (table-relative, prefixed by the table root) -> its entries.
#[derive(Debug)]
pub(crate) struct ManifestCache {
    capacity: usize,
    cached: Mutex<Cached>,
}

impl ManifestCache {
    pub(crate) fn new(capacity: usize) -> Self {
        ManifestCache {
            capacity,
            cached: Mutex::new(Cached::default()),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<Vec<ManifestEntry>>> {
        let mut cached = self.cached.lock().expect("manifest cache lock");
        cached.clock += 1;
        let now = cached.clock;
        let (entries, _, used) = cached.files.get_mut(key)?;
        *used = now;
        Some(Arc::clone(entries))
    }

    /// Keeps `entries`, decoded from a file of `file_bytes`, if the file is small enough.
    pub(crate) fn put(&self, key: &str, entries: Arc<Vec<ManifestEntry>>, file_bytes: usize) {
        if file_bytes > SMALL_MANIFEST_BYTES || file_bytes > self.capacity {
            return;
        }
        let mut cached = self.cached.lock().expect("manifest cache lock");
        cached.clock += 1;
        let now = cached.clock;
        if let Some((_, old, _)) = cached.files.insert(key.to_string(), (entries, file_bytes, now)) {
            cached.bytes -= old;
        }
        cached.bytes += file_bytes;
        while cached.bytes > self.capacity {
            let Some(oldest) = cached
                .files
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((_, bytes, _)) = cached.files.remove(&oldest) {
                cached.bytes -= bytes;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_files_go_beyond_the_capacity() {
        let cache = ManifestCache::new(100);
        cache.put("a", Arc::new(vec![]), 40);
        cache.put("b", Arc::new(vec![]), 40);
        assert!(cache.get("a").is_some()); // b is now the least recently used
        cache.put("c", Arc::new(vec![]), 40);
        assert!(cache.get("a").is_some() && cache.get("c").is_some());
        assert!(cache.get("b").is_none());
        cache.put("huge", Arc::new(vec![]), 101);
        assert!(cache.get("huge").is_none());
    }
}
