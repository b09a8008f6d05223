//! Reading manifest lists, manifests and index manifests, and folding ADD/DELETE entries
//! into the live file set of a snapshot (format.md §4.5).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use super::TableMeta;
use crate::deletion_vector::DeletionVectorIndex;
use crate::error::{Error, Result};
use crate::io::ByteLru;
use crate::spec::{paths, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta, Snapshot};

/// (serialized partition, bucket): the unit of an LSM tree.
pub(crate) type PartitionBucket = (Vec<u8>, i32);

/// The live data files of one snapshot, grouped by partition and bucket in a stable order.
#[derive(Debug, Default)]
pub(crate) struct LiveFiles {
    pub(crate) groups: BTreeMap<PartitionBucket, Vec<ManifestEntry>>,
}

impl LiveFiles {
    /// Every live entry.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.groups.values().flatten()
    }
}

/// How many manifests are read concurrently.
const MANIFEST_READ_CONCURRENCY: usize = 8;

impl TableMeta {
    async fn read_manifest_records<T>(
        &self,
        name: &str,
        what: &str,
        decode: fn(&apache_avro::types::Value, &str) -> Result<T>,
    ) -> Result<Vec<T>> {
        Ok(self.read_manifest_sized(name, what, decode).await?.0)
    }

    /// The records of a file of `manifest/` (Avro, ORC or Parquet: [`super::manifest_codec`]),
    /// and the file's size.
    async fn read_manifest_sized<T>(
        &self,
        name: &str,
        what: &str,
        decode: fn(&apache_avro::types::Value, &str) -> Result<T>,
    ) -> Result<(Vec<T>, usize)> {
        let file = paths::manifest_file(name);
        let shown = self.io.display(&file);
        let bytes = self.io.read(&file, what).await?;
        let size = bytes.len();
        Ok((decode_records(bytes, &shown, decode)?, size))
    }

    /// The records of a manifest list.
    pub(crate) async fn manifest_list(&self, name: &str) -> Result<Vec<ManifestFileMeta>> {
        self.read_manifest_cached(
            self.manifests.lists(),
            name,
            "manifest list",
            ManifestFileMeta::from_avro,
        )
        .await
    }

    /// The entries of a manifest file.
    pub(crate) async fn manifest(&self, name: &str) -> Result<Vec<ManifestEntry>> {
        self.read_manifest_cached(
            self.manifests.entries(),
            name,
            "manifest",
            ManifestEntry::from_avro,
        )
        .await
    }

    /// The records of an Avro file of `manifest/`, decoded once per catalog: these files are
    /// immutable (their names are unique). Keyed by the full URL: the cache is shared by the
    /// tables of a catalog.
    async fn read_manifest_cached<T: Clone>(
        &self,
        cache: &ByteLru<Arc<Vec<T>>>,
        name: &str,
        what: &str,
        decode: fn(&apache_avro::types::Value, &str) -> Result<T>,
    ) -> Result<Vec<T>> {
        let key = self.io.display(&paths::manifest_file(name));
        if let Some(records) = cache.get(&key) {
            return Ok(records.as_ref().clone());
        }
        let (records, size) = self.read_manifest_sized(name, what, decode).await?;
        cache.put(&key, Arc::new(records.clone()), size);
        Ok(records)
    }

    /// Keeps a manifest file this session has just written as if it had read it (decoded from
    /// the bytes written, so exactly what a read would give): the next statement's scan or
    /// commit finds it without fetching it.
    pub(super) fn remember_written<T: Clone>(
        &self,
        cache: &ByteLru<Arc<Vec<T>>>,
        name: &str,
        bytes: bytes::Bytes,
        decode: fn(&apache_avro::types::Value, &str) -> Result<T>,
    ) -> Result<()> {
        let file = paths::manifest_file(name);
        let key = self.io.display(&file);
        let size = bytes.len();
        if size > super::manifest_cache::SMALL_MANIFEST_BYTES {
            return Ok(()); // (the cache would not keep it)
        }
        let records = decode_records(bytes, &key, decode)?;
        cache.put(&key, Arc::new(records), size);
        Ok(())
    }

    /// The entries of an index manifest.
    pub(crate) async fn index_manifest(&self, name: &str) -> Result<Vec<IndexManifestEntry>> {
        self.read_manifest_records(name, "index manifest", IndexManifestEntry::from_avro)
            .await
    }

    /// The deletion vectors of a snapshot (none without an index manifest).
    pub(crate) async fn deletion_vectors(
        &self,
        snapshot: &Snapshot,
        dirs: &paths::IndexFileDirs,
    ) -> Result<DeletionVectorIndex> {
        match &snapshot.index_manifest {
            Some(name) => {
                DeletionVectorIndex::from_entries(&self.io, &self.index_manifest(name).await?, dirs)
            }
            None => Ok(DeletionVectorIndex::default()),
        }
    }

    /// Manifests of a snapshot's data files: base list then delta list.
    pub(crate) async fn data_manifests(&self, snapshot: &Snapshot) -> Result<Vec<ManifestFileMeta>> {
        let (base, delta) = futures::try_join!(
            self.manifest_list(&snapshot.base_manifest_list),
            self.manifest_list(&snapshot.delta_manifest_list)
        )?;
        Ok(base.into_iter().chain(delta).collect())
    }

    /// Reads the given manifests (concurrently, results in list order).
    pub(crate) async fn read_manifests(&self, metas: &[ManifestFileMeta]) -> Result<Vec<Vec<ManifestEntry>>> {
        let names: Vec<String> = metas.iter().map(|m| m.file_name.clone()).collect();
        futures::stream::iter(names.into_iter().map(|n| async move { self.manifest(&n).await }))
            .buffered(MANIFEST_READ_CONCURRENCY)
            .try_collect()
            .await
    }

    /// The latest snapshot and its live files. Another process's expiration may delete the
    /// manifests of what was the latest snapshot while they are read, once newer snapshots
    /// exist: then the newer latest is read instead. A manifest missing under the latest
    /// snapshot is a damaged table, and its error stays.
    pub(crate) async fn latest_live_files(&self) -> Result<Option<(Snapshot, LiveFiles)>> {
        self.live_files_of_latest(false).await
    }

    /// [`Self::latest_live_files`] of the snapshot a write builds on
    /// ([`Self::latest_snapshot_for_write`]).
    pub(crate) async fn latest_live_files_for_write(&self) -> Result<Option<(Snapshot, LiveFiles)>> {
        self.live_files_of_latest(true).await
    }

    async fn live_files_of_latest(&self, for_write: bool) -> Result<Option<(Snapshot, LiveFiles)>> {
        let mut attempts = 0;
        loop {
            let latest = match for_write && attempts == 0 {
                true => self.latest_snapshot_for_write().await?,
                false => self.latest_snapshot().await?,
            };
            let Some(latest) = latest else {
                return Ok(None);
            };
            match self.live_files(&latest, |_| true).await {
                Ok(live) => return Ok(Some((latest, live))),
                Err(Error::NotFound { .. }) if attempts < 10 && self.moved_past(latest.id).await? => {
                    attempts += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The live data files of a snapshot, reading only manifests that `keep` accepts.
    pub(crate) async fn live_files(
        &self,
        snapshot: &Snapshot,
        keep: impl Fn(&ManifestFileMeta) -> bool,
    ) -> Result<LiveFiles> {
        let metas: Vec<ManifestFileMeta> = self
            .data_manifests(snapshot)
            .await?
            .into_iter()
            .filter(keep)
            .collect();
        let manifests = self.read_manifests(&metas).await?;
        fold_entries(manifests.into_iter().zip(&metas), |dangling, first| {
            Error::corrupt(
                self.io.display(&paths::snapshot_file(snapshot.id)),
                format!(
                    "{dangling} DELETE manifest entries have no matching ADD (the first in manifest {})",
                    self.io.display(&paths::manifest_file(&first.file_name))
                ),
            )
        })
    }

    /// Entries of this snapshot's delta manifests (ADD and DELETE, in order).
    pub(crate) async fn delta_entries(&self, snapshot: &Snapshot) -> Result<Vec<ManifestEntry>> {
        let metas = self.manifest_list(&snapshot.delta_manifest_list).await?;
        Ok(self.read_manifests(&metas).await?.into_iter().flatten().collect())
    }

    /// Entries of this snapshot's changelog manifests (ADD entries of `changelog-*` files, in
    /// order); empty when the snapshot produced no changelog (format.md §3.4).
    pub(crate) async fn changelog_entries(&self, snapshot: &Snapshot) -> Result<Vec<ManifestEntry>> {
        let Some(list) = &snapshot.changelog_manifest_list else {
            return Ok(vec![]);
        };
        let metas = self.manifest_list(list).await?;
        Ok(self.read_manifests(&metas).await?.into_iter().flatten().collect())
    }
}

/// Replays entries in order: ADD inserts an identity, DELETE removes it.
fn fold_entries<'m>(
    manifests: impl Iterator<Item = (Vec<ManifestEntry>, &'m ManifestFileMeta)>,
    dangling_error: impl FnOnce(usize, &ManifestFileMeta) -> Error,
) -> Result<LiveFiles> {
    let mut live: HashMap<_, ManifestEntry> = HashMap::new();
    let mut order = Vec::new();
    let mut dangling = 0usize;
    let mut first_dangling: Option<&ManifestFileMeta> = None;
    for (entries, manifest) in manifests {
        for e in entries {
            let id = e.identity();
            match e.kind {
                FileKind::Add => {
                    order.push(id.clone());
                    live.insert(id, e);
                }
                FileKind::Delete => {
                    if live.remove(&id).is_none() {
                        dangling += 1;
                        first_dangling.get_or_insert(manifest);
                    }
                }
            }
        }
    }
    if let Some(first) = first_dangling {
        return Err(dangling_error(dangling, first));
    }
    let mut out = LiveFiles::default();
    for id in order {
        if let Some(e) = live.remove(&id) {
            out.groups
                .entry((e.partition.clone(), e.bucket))
                .or_default()
                .push(e);
        }
    }
    Ok(out)
}

/// The records of the `manifest/` file `bytes` (shown as `shown` in errors), each decoded.
fn decode_records<T>(
    bytes: bytes::Bytes,
    shown: &str,
    decode: fn(&apache_avro::types::Value, &str) -> Result<T>,
) -> Result<Vec<T>> {
    super::manifest_codec::decode(bytes, shown)?
        .iter()
        .map(|v| decode(v, shown))
        .collect()
}
