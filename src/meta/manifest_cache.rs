//! Decoded manifests of one catalog (session), shared by every table read through it: manifest
//! files are immutable (their names are unique), so a long session (the REPL, a service, a
//! writer committing every few seconds) decodes each once instead of at every query and
//! commit, as Java Paimon's catalog caches small manifest files. Bounded by the bytes of the
//! files cached; past the bound the least recently used go. Per catalog, never process-wide:
//! two warehouses may hold files of the same name.

use std::sync::Arc;

use crate::io::ByteLru;
use crate::spec::ManifestEntry;

/// Bytes of manifest files kept decoded (Java's `cache.manifest.small-file-memory` is 128 MB
/// of decoded pages; ours counts the files, whose decoded entries take a few times more).
pub(crate) const DEFAULT_MANIFEST_CACHE_BYTES: usize = 32 << 20;
/// Larger manifests are not cached (Java's `cache.manifest.small-file-threshold`).
pub(crate) const SMALL_MANIFEST_BYTES: usize = 1 << 20;

/// Manifest path (table-relative, prefixed by the table root) -> its entries, weighed by the
/// bytes of the manifest file.
pub(crate) type ManifestCache = ByteLru<Arc<Vec<ManifestEntry>>>;

/// A manifest cache of `capacity` bytes of files, each at most [`SMALL_MANIFEST_BYTES`].
pub(crate) fn manifest_cache(capacity: usize) -> ManifestCache {
    ByteLru::new(capacity, SMALL_MANIFEST_BYTES)
}
