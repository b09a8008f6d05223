//! Decoded manifests (and schema files) of one catalog (session), shared by every table read
//! through it: manifest
//! files are immutable (their names are unique), so a long session (the REPL, a service, a
//! writer committing every few seconds) decodes each once instead of at every query and
//! commit, as Java Paimon's catalog caches small manifest files. Bounded by the bytes of the
//! files cached; past the bound the least recently used go. Per catalog, never process-wide:
//! two warehouses may hold files of the same name.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::io::ByteLru;
use crate::spec::{ManifestEntry, ManifestFileMeta, Snapshot, TableSchema};

/// How long a session trusts what it learnt of a table's schema directory (its latest schema),
/// before it lists it again. Within it, a statement finds a newer schema with one HEAD of the
/// next id instead of a LIST. (Java's catalog trusts its cached tables longer,
/// `cache.expiration-interval`, 10 minutes, without looking for new schemas.) The bound covers
/// a table dropped and created again, or fast-forwarded, by another process meanwhile, whose
/// schema files keep their ids.
pub(crate) const METADATA_TRUST: Duration = Duration::from_secs(60);

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
    /// By schema directory: its latest schema when listed, and when.
    latest_schemas: ByteLru<(Arc<TableSchema>, Instant)>,
    /// By snapshot directory: the latest snapshot this session read or committed, and the
    /// version of its file, so the next statement can confirm it with two HEADs.
    known_latest: ByteLru<KnownLatest>,
}

/// The latest snapshot a session knows of a table: one, with the version of its file, or none
/// (a table it created).
pub(crate) type KnownLatest = Option<(Arc<Snapshot>, FileVersion)>;

/// What tells one version of a file from another of the same name: a snapshot file is created
/// once, but a table rolled back, or dropped and created again, writes `snapshot-<id>` anew.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileVersion {
    e_tag: Option<String>,
    size: u64,
    last_modified: Option<chrono::DateTime<chrono::Utc>>,
}

impl FileVersion {
    /// The version a GET or HEAD saw.
    pub(crate) fn seen(meta: &object_store::ObjectMeta) -> Self {
        FileVersion {
            e_tag: meta.e_tag.clone(),
            size: meta.size,
            last_modified: Some(meta.last_modified),
        }
    }

    /// The version a PUT of `size` bytes created, known by the entity tag the store returned
    /// (without one, nothing later matches it: the file is read again).
    pub(crate) fn written(e_tag: Option<String>, size: u64) -> Self {
        FileVersion {
            e_tag,
            size,
            last_modified: None,
        }
    }

    /// Whether `now` (a HEAD of the same name) is this version: equal entity tags where the
    /// store gives them (a content hash on S3; inode, size and time on a local disk), else
    /// equal size and modification time.
    pub(crate) fn is(&self, now: &object_store::ObjectMeta) -> bool {
        match (&self.e_tag, &now.e_tag) {
            (Some(a), Some(b)) => a == b,
            _ => self.size == now.size && self.last_modified == Some(now.last_modified),
        }
    }
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

    /// The latest schema of the schema directory `dir` as listed less than [`METADATA_TRUST`]
    /// ago.
    pub(crate) fn trusted_latest_schema(&self, dir: &str) -> Option<Arc<TableSchema>> {
        self.latest_schemas
            .get(dir)
            .filter(|(_, at)| at.elapsed() < METADATA_TRUST)
            .map(|(schema, _)| schema)
    }

    pub(crate) fn note_latest_schema(&self, dir: &str, schema: &Arc<TableSchema>) {
        self.latest_schemas
            .put(dir, (Arc::clone(schema), Instant::now()), 1024);
    }

    /// The latest snapshot this session knows of the snapshot directory `dir`.
    pub(crate) fn known_latest_snapshot(&self, dir: &str) -> Option<KnownLatest> {
        self.known_latest.get(dir)
    }

    /// Records `snapshot` (its file at `version`) as the latest of the table whose snapshot
    /// directory is `snapshots` and schema directory `schemas`. False when that contradicts the
    /// latest this session knew before (a lower id, or the same id committed at another time:
    /// the table was rolled back, created again or fast-forwarded meanwhile); the schema
    /// listing is then forgotten.
    pub(crate) fn note_latest(
        &self,
        snapshots: &str,
        schemas: &str,
        snapshot: Snapshot,
        version: FileVersion,
    ) -> bool {
        let consistent = match self.known_latest.get(snapshots) {
            Some(Some((seen, _))) => {
                snapshot.id > seen.id || (snapshot.id == seen.id && snapshot.time_millis == seen.time_millis)
            }
            _ => true,
        };
        if !consistent {
            self.latest_schemas.remove(schemas);
        }
        self.known_latest
            .put(snapshots, Some((Arc::new(snapshot), version)), 4096);
        consistent
    }

    /// Records that the snapshot directory `dir` holds no snapshot (a table this session has
    /// just created).
    pub(crate) fn note_no_snapshot(&self, dir: &str) {
        self.known_latest.put(dir, None, 64);
    }

    /// Forgets what was learnt of schema and snapshot directories (after DDL and procedures of
    /// this session: a dropped table, a fast-forward).
    pub(crate) fn forget_listings(&self) {
        self.latest_schemas.clear();
        self.known_latest.clear();
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
        latest_schemas: ByteLru::new(1 << 20, 1024),
        known_latest: ByteLru::new(4 << 20, 4096),
    }
}
