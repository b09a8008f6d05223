//! Metadata of one table on disk: schemas, snapshots, tags, manifests.
//!
//! [`TableMeta`] is the single entry point; it caches immutable files (schemas, manifests are
//! never rewritten) and always re-reads mutable ones (hint files, directory listings).

mod commit;
mod consumers;
mod manifest_cache;
mod manifest_codec;
mod manifest_merge;
mod manifests;
mod row_tracking;
mod schemas;
mod snapshots;

pub(crate) use commit::{CommitRequest, OverwriteScope, RowLevelBase};
pub(crate) use consumers::valid_consumer_id;
pub(crate) use manifest_cache::{manifest_cache, ManifestCache, DEFAULT_MANIFEST_CACHE_BYTES};
pub(crate) use manifest_codec::ManifestFormat;
pub(crate) use manifests::{LiveFiles, PartitionBucket};
pub(crate) use snapshots::now_millis;

use std::sync::Arc;

use dashmap::DashMap;

use crate::io::FileIO;
use crate::spec::TableSchema;

/// Metadata access for the table rooted at `io`.
#[derive(Debug)]
pub(crate) struct TableMeta {
    io: FileIO,
    schemas: DashMap<i64, Arc<TableSchema>>,
    /// Decoded manifests, shared with the other tables of the catalog when it has a cache.
    manifests: Arc<ManifestCache>,
    /// The newest schema this handle has loaded: its options say how manifests are written.
    latest_schema: std::sync::RwLock<Option<Arc<TableSchema>>>,
    /// Set when the latest snapshot contradicted what the session saw before (see
    /// `ManifestCache::note_latest`): a schema taken from its listing may be stale.
    listing_contradicted: std::sync::atomic::AtomicBool,
    /// The latest snapshot found ahead of the statement's read of it
    /// ([`TableMeta::find_latest_snapshot_ahead`]), taken once.
    found_ahead: std::sync::Mutex<Option<crate::error::Result<Option<crate::spec::Snapshot>>>>,
    /// The same snapshot once more, with when it was found, for the statement's write
    /// ([`TableMeta::latest_snapshot_for_write`]).
    found_ahead_for_write: std::sync::Mutex<Option<(Option<crate::spec::Snapshot>, std::time::Instant)>>,
    /// The latest schema the catalog found when it resolved this handle's table for a
    /// statement, taken once by the statement's next [`TableMeta::latest_schema`] (its sink).
    schema_found_ahead: std::sync::Mutex<Option<(Arc<TableSchema>, std::time::Instant)>>,
}

impl TableMeta {
    pub(crate) fn new(io: FileIO) -> Self {
        Self::with_manifest_cache(io, Arc::new(manifest_cache(DEFAULT_MANIFEST_CACHE_BYTES)))
    }

    /// Metadata whose decoded manifests go to (and come from) `manifests`.
    pub(crate) fn with_manifest_cache(io: FileIO, manifests: Arc<ManifestCache>) -> Self {
        TableMeta {
            io,
            schemas: DashMap::new(),
            manifests,
            latest_schema: std::sync::RwLock::new(None),
            listing_contradicted: std::sync::atomic::AtomicBool::new(false),
            found_ahead: std::sync::Mutex::new(None),
            found_ahead_for_write: std::sync::Mutex::new(None),
            schema_found_ahead: std::sync::Mutex::new(None),
        }
    }

    /// Whether a latest snapshot this handle read contradicted the session's earlier view of
    /// the table (then a schema taken from that view is read again); clears it.
    pub(crate) fn take_listing_contradicted(&self) -> bool {
        let contradicted = self
            .listing_contradicted
            .swap(false, std::sync::atomic::Ordering::Relaxed);
        if contradicted {
            // schema files of the same ids may hold other schemas now
            self.schemas.clear();
            self.schema_found_ahead
                .lock()
                .expect("lock is never poisoned")
                .take();
        }
        contradicted
    }

    pub(crate) fn io(&self) -> &FileIO {
        &self.io
    }

    /// The metadata of this table's branch `name` (sharing the decoded manifests).
    pub(crate) fn on_branch(&self, name: &str) -> TableMeta {
        TableMeta::with_manifest_cache(self.io.on_branch(name), Arc::clone(&self.manifests))
    }

    /// How this table's manifests are written (`manifest.format`), from the newest schema this
    /// handle has loaded, or from the latest one (a committer loads it before writing anyway).
    pub(crate) async fn manifest_format(&self) -> crate::error::Result<ManifestFormat> {
        let known = self.latest_schema.read().ok().and_then(|s| s.clone());
        let schema = match known {
            Some(schema) => schema,
            None => self.latest_schema().await?,
        };
        ManifestFormat::of_options(&schema.options)
    }
}
