//! Decoded manifests (and schema files) of one catalog (session), shared by every table read
//! through it: manifest
//! files are immutable (their names are unique), so a long session (the REPL, a service, a
//! writer committing every few seconds) decodes each once instead of at every query and
//! commit, as Java Paimon's catalog caches small manifest files. Bounded by the bytes of the
//! files cached; past the bound the least recently used go. Per catalog, never process-wide:
//! two warehouses may hold files of the same name.

use std::sync::Arc;

use crate::io::ByteLru;
use crate::spec::{ManifestEntry, ManifestFileMeta, TableSchema};

/// Bytes of manifest files kept decoded (Java's `cache.manifest.small-file-memory` is 128 MB
/// of decoded pages; ours counts the files, whose decoded entries take a few times more).
pub(crate) const DEFAULT_MANIFEST_CACHE_BYTES: usize = 32 << 20;
/// Larger manifests are not cached (Java's `cache.manifest.small-file-threshold`).
pub(crate) const SMALL_MANIFEST_BYTES: usize = 1 << 20;

/// Decoded manifests and manifest lists by path (table-relative, prefixed by the table root),
/// each weighed by the bytes of its file. Manifest lists are immutable too (a commit writes new
/// ones), and every query reads the two of its snapshot.
#[derive(Debug)]
pub(crate) struct ManifestCache {
    entries: ByteLru<Arc<Vec<ManifestEntry>>>,
    lists: ByteLru<Arc<Vec<ManifestFileMeta>>>,
    schemas: ByteLru<Arc<TableSchema>>,
}

impl ManifestCache {
    /// The entries of manifest files.
    pub(crate) fn entries(&self) -> &ByteLru<Arc<Vec<ManifestEntry>>> {
        &self.entries
    }

    /// The records of manifest lists.
    pub(crate) fn lists(&self) -> &ByteLru<Arc<Vec<ManifestFileMeta>>> {
        &self.lists
    }

    /// Decoded schema files, by location, size and last modification: a schema file is never
    /// changed, but a table dropped and created again writes its `schema-0` anew.
    pub(crate) fn schemas(&self) -> &ByteLru<Arc<TableSchema>> {
        &self.schemas
    }

    /// Bytes of the files cached now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.entries.bytes() + self.lists.bytes()
    }
}

/// A manifest cache of `capacity` bytes of manifest files, each at most
/// [`SMALL_MANIFEST_BYTES`], and a quarter of that for manifest lists.
pub(crate) fn manifest_cache(capacity: usize) -> ManifestCache {
    ManifestCache {
        entries: ByteLru::new(capacity, SMALL_MANIFEST_BYTES),
        lists: ByteLru::new(capacity / 4, SMALL_MANIFEST_BYTES),
        schemas: ByteLru::new(capacity / 16, SMALL_MANIFEST_BYTES),
    }
}
