//! Writing manifests, manifest lists and snapshots: the metadata half of a commit
//! (format.md §4.6, §8). Data files must already be written; the snapshot is created last and
//! atomically, so a failure anywhere leaves the table at its previous snapshot.

use std::cmp::Ordering;

use apache_avro::Schema;
use datafusion::common::ScalarValue;

use super::manifest_merge::{ManifestMergeOptions, MergeTarget};
use super::TableMeta;
use crate::error::{Error, Result};
use crate::spec::manifest_write::{INDEX_MANIFEST_SCHEMA, MANIFEST_LIST_SCHEMA, MANIFEST_SCHEMA};
use crate::spec::{
    paths, BinaryRow, DataType, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats,
    Snapshot, TableSchema,
};

/// Min and max of one partition column over the entries, and its null count.
fn column_bounds(
    values: impl Iterator<Item = ScalarValue>,
) -> (Option<ScalarValue>, Option<ScalarValue>, i64) {
    let (mut min, mut max, mut nulls): (Option<ScalarValue>, Option<ScalarValue>, i64) = (None, None, 0);
    for v in values {
        if v.is_null() {
            nulls += 1;
            continue;
        }
        if min
            .as_ref()
            .is_none_or(|m| v.partial_cmp(m) == Some(Ordering::Less))
        {
            min = Some(v.clone());
        }
        if max
            .as_ref()
            .is_none_or(|m| v.partial_cmp(m) == Some(Ordering::Greater))
        {
            max = Some(v);
        }
    }
    (min, max, nulls)
}

impl TableMeta {
    /// Writes one manifest file with `entries` and returns its manifest-list record.
    pub(crate) async fn write_manifest(
        &self,
        entries: &[ManifestEntry],
        schema_id: i64,
        partition_types: &[DataType],
    ) -> Result<ManifestFileMeta> {
        let (name, size, bytes) = self
            .write_manifest_file(
                "manifest",
                &MANIFEST_SCHEMA,
                entries.iter().map(ManifestEntry::to_avro),
            )
            .await?;
        // (only a cache: a file it cannot decode is fetched when needed, and fails then)
        let _ = self.remember_written(self.manifests.entries(), &name, bytes, ManifestEntry::from_avro);
        let file = paths::manifest_file(&name);

        let partitions = entries
            .iter()
            .map(|e| BinaryRow::decode(&e.partition, partition_types))
            .collect::<Result<Vec<_>>>()?;
        let mut mins = Vec::new();
        let mut maxs = Vec::new();
        let mut nulls = Vec::new();
        for (i, t) in partition_types.iter().enumerate() {
            let typed_null = ScalarValue::try_from(&t.to_arrow()).map_err(|e| Error::corrupt(&file, e))?;
            let (min, max, n) = column_bounds(partitions.iter().filter_map(|p| p.values.get(i).cloned()));
            mins.push(min.unwrap_or_else(|| typed_null.clone()));
            maxs.push(max.unwrap_or(typed_null));
            nulls.push(Some(n));
        }
        let range =
            |f: &dyn Fn(&ManifestEntry) -> i32| (entries.iter().map(f).min(), entries.iter().map(f).max());
        let (min_bucket, max_bucket) = range(&|e| e.bucket);
        let (min_level, max_level) = range(&|e| e.file.level);
        Ok(ManifestFileMeta {
            file_name: name,
            file_size: size,
            num_added_files: entries.iter().filter(|e| e.kind == FileKind::Add).count() as i64,
            num_deleted_files: entries.iter().filter(|e| e.kind == FileKind::Delete).count() as i64,
            partition_stats: SimpleStats {
                min_values: BinaryRow::encode(&mins)?,
                max_values: BinaryRow::encode(&maxs)?,
                null_counts: Some(nulls),
            },
            schema_id,
            min_bucket,
            max_bucket,
            min_level,
            max_level,
            // (only when every entry has row ids, as Java's writer)
            min_row_id: entries
                .iter()
                .map(|e| e.file.first_row_id)
                .collect::<Option<Vec<_>>>()
                .and_then(|ids| ids.into_iter().min()),
            max_row_id: entries
                .iter()
                .map(|e| e.file.first_row_id.map(|f| f + e.file.row_count - 1))
                .collect::<Option<Vec<_>>>()
                .and_then(|ids| ids.into_iter().max()),
        })
    }

    /// Writes a manifest list; returns its name and size.
    pub(crate) async fn write_manifest_list(&self, metas: &[ManifestFileMeta]) -> Result<(String, i64)> {
        let (name, size, bytes) = self
            .write_manifest_file(
                "manifest-list",
                &MANIFEST_LIST_SCHEMA,
                metas.iter().map(ManifestFileMeta::to_avro),
            )
            .await?;
        let _ = self.remember_written(self.manifests.lists(), &name, bytes, ManifestFileMeta::from_avro);
        Ok((name, size))
    }

    /// Writes `records` as a new file `<prefix>-<uuid>-0` in `manifest/`, in the table's
    /// `manifest.format`; returns its name, size and bytes.
    async fn write_manifest_file(
        &self,
        prefix: &str,
        schema: &Schema,
        records: impl IntoIterator<Item = apache_avro::types::Value>,
    ) -> Result<(String, i64, bytes::Bytes)> {
        let name = format!("{prefix}-{}-0", uuid::Uuid::new_v4());
        let file = paths::manifest_file(&name);
        let format = self.manifest_format().await?;
        let bytes = bytes::Bytes::from(format.encode(
            schema,
            records.into_iter().collect(),
            &self.io.display(&file),
        )?);
        let size = bytes.len() as i64;
        self.io.write(&file, bytes.clone()).await?;
        Ok((name, size, bytes))
    }

    /// Creates `snapshot-<id>` atomically, then updates the `LATEST` hint.
    ///
    /// Returns `Error::CommitConflict` if another writer created that snapshot first.
    pub(crate) async fn publish_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        let file = paths::snapshot_file(snapshot.id);
        let json = snapshot.to_json().into_bytes();
        let size = json.len() as u64;
        let Some(e_tag) = self.io.try_create(&file, json).await? else {
            return Err(Error::CommitConflict {
                snapshot_id: snapshot.id,
            });
        };
        self.note_committed_snapshot(snapshot, super::manifest_cache::FileVersion::written(e_tag, size));
        // The hint is best effort: readers verify it (format.md §3.5).
        let _ = self
            .io
            .write("snapshot/LATEST", snapshot.id.to_string().into_bytes())
            .await;
        Ok(())
    }

    /// Writes a schema file if it does not exist yet (table creation).
    pub(crate) async fn create_schema_file(&self, id: i64, json: String) -> Result<bool> {
        self.io
            .create_new(&paths::schema_file(id), json.into_bytes())
            .await
    }
}

/// What a commit replaces besides adding its files.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OverwriteScope {
    /// Plain append: nothing is removed.
    None,
    /// Every live file of the table is removed (INSERT OVERWRITE without PARTITION, TRUNCATE).
    Table,
    /// Live files of partitions matching any of these specs are removed; a spec has one entry
    /// per partition column, `None` matching any value.
    Partitions(Vec<Vec<Option<ScalarValue>>>),
}

/// One commit of new data files.
#[derive(Debug, Clone)]
pub(crate) struct CommitRequest {
    /// ADD entries of the files this commit wrote.
    pub(crate) added: Vec<ManifestEntry>,
    pub(crate) overwrite: OverwriteScope,
    pub(crate) partition_types: Vec<DataType>,
    pub(crate) commit_user: String,
    pub(crate) commit_identifier: i64,
    /// Logical operation recorded in the snapshot (`WRITE`, `DELETE`, `UPDATE`, `OVERWRITE`).
    pub(crate) operation: Option<String>,
    /// Files a compaction replaces (DELETE entries; the commit kind becomes COMPACT). Each must
    /// still be live when the commit lands, otherwise it fails with `CompactionConflict`.
    pub(crate) compacted: Vec<ManifestEntry>,
    /// Changelog files produced with this commit (input, lookup or full-compaction producer),
    /// listed in the snapshot's changelog manifest list.
    pub(crate) changelog: Vec<ManifestEntry>,
    /// Index files written with this commit. Each replaces the previous file of its
    /// (partition, bucket, index type) in the index manifest.
    pub(crate) index_added: Vec<IndexManifestEntry>,
    /// Index files dropped without a replacement, matched by (partition, bucket, index type):
    /// a bucket whose deletion vectors all went with their data files.
    pub(crate) index_removed: Vec<IndexManifestEntry>,
    /// A row-level DELETE or UPDATE on an append table: what it read must be unchanged when
    /// it lands (see [`RowLevelBase`]).
    pub(crate) row_level: Option<RowLevelBase>,
}

/// What a row-level DELETE or UPDATE of an append table based its result on. Files it rewrote
/// (copy-on-write) are removed with DELETE entries; files it marked in deletion vectors stay.
/// Either must still be live, and the deletion-vector index files of the buckets it touched
/// must be the ones it read, otherwise the commit fails with `RowLevelConflict` (its vectors
/// would drop rows deleted concurrently, or point at files compacted away).
#[derive(Debug, Clone, Default)]
pub(crate) struct RowLevelBase {
    /// `DELETE` or `UPDATE`.
    pub(crate) statement: String,
    /// Files rewritten without (or with updated) matching rows: removed by this commit.
    pub(crate) rewritten: Vec<ManifestEntry>,
    /// Files whose new deletion vectors this commit writes.
    pub(crate) marked: Vec<ManifestEntry>,
    /// Names of the DELETION_VECTORS index files of the touched buckets when they were read.
    pub(crate) index_files: Vec<String>,
}

/// Bounded retries when another writer wins the race for the next snapshot id.
const MAX_COMMIT_ATTEMPTS: usize = 10;

impl TableMeta {
    /// Commits `req` as the next snapshot: manifests first, the snapshot last and atomically.
    ///
    /// When another writer creates the same snapshot id first, the attempt's metadata is
    /// discarded and the commit is redone on top of the new latest snapshot (an overwrite then
    /// also removes what that writer added). Returns None for an empty append (skipped, as
    /// Paimon skips empty batch commits).
    pub(crate) async fn commit(&self, req: &CommitRequest) -> Result<Option<Snapshot>> {
        if req.added.is_empty()
            && req.index_added.is_empty()
            && req.index_removed.is_empty()
            && req.compacted.is_empty()
            && req.changelog.is_empty()
            && req.overwrite == OverwriteScope::None
            && req.row_level.is_none()
        {
            return Ok(None);
        }
        let mut last_conflict = 0;
        for attempt in 0..MAX_COMMIT_ATTEMPTS {
            match self.try_commit(req).await {
                Err(Error::CommitConflict { snapshot_id }) => {
                    last_conflict = snapshot_id;
                    // Java's defaults: `commit.min-retry-wait` 10 ms doubling up to
                    // `commit.max-retry-wait` 10 s, so a writer that keeps losing to busy peers
                    // waits for them to finish instead of running out of attempts.
                    let backoff = (10u64 << attempt.min(10)).min(10_000);
                    let jitter = uuid::Uuid::new_v4().as_u128() as u64 % backoff.max(1);
                    tokio::time::sleep(std::time::Duration::from_millis(backoff + jitter)).await;
                }
                other => return other.map(Some),
            }
        }
        Err(Error::CommitConflict {
            snapshot_id: last_conflict,
        })
    }

    async fn try_commit(&self, req: &CommitRequest) -> Result<Snapshot> {
        let latest = self.latest_snapshot_confirmed().await?;
        let base_id = latest.as_ref().map_or(0, |l| l.id);
        match self.try_commit_on(req, latest).await {
            // Another process's expiration deleted what this attempt read (its base snapshot's
            // manifests, or files of it) because newer snapshots exist now: a lost race like a
            // conflict, redone on the new latest. A file missing under a still-latest snapshot
            // is a damaged table, and the error stays.
            Err(Error::NotFound { .. }) if self.moved_past(base_id).await? => Err(Error::CommitConflict {
                snapshot_id: base_id + 1,
            }),
            other => other,
        }
    }

    async fn try_commit_on(&self, req: &CommitRequest, latest: Option<Snapshot>) -> Result<Snapshot> {
        let schema = self.latest_schema_confirmed().await?;
        let mut delta: Vec<ManifestEntry> = Vec::new();
        if !req.compacted.is_empty() {
            let live = match &latest {
                Some(l) => self.live_files(l, |_| true).await?,
                None => Default::default(),
            };
            for input in &req.compacted {
                let still_live = live
                    .groups
                    .get(&(input.partition.clone(), input.bucket))
                    .is_some_and(|files| {
                        files.iter().any(|e| {
                            e.file.file_name == input.file.file_name && e.file.level == input.file.level
                        })
                    });
                if !still_live {
                    return Err(Error::CompactionConflict {
                        what: format!("bucket {}", input.bucket),
                        file: input.file.file_name.clone(),
                    });
                }
                delta.push(ManifestEntry {
                    kind: FileKind::Delete,
                    ..input.clone()
                });
            }
        }
        if let Some(base) = &req.row_level {
            self.check_row_level_base(latest.as_ref(), base).await?;
            delta.extend(base.rewritten.iter().map(|e| ManifestEntry {
                kind: FileKind::Delete,
                ..e.clone()
            }));
        }
        if req.overwrite != OverwriteScope::None {
            if let Some(l) = &latest {
                let live = self.live_files(l, |_| true).await?;
                for e in live.entries() {
                    if self.overwritten(&req.overwrite, &e.partition, &req.partition_types)? {
                        delta.push(ManifestEntry {
                            kind: FileKind::Delete,
                            ..e.clone()
                        });
                    }
                }
            }
        }
        delta.extend(req.added.iter().cloned());
        let next_row_id = match super::row_tracking::enabled(&schema) {
            true => Some(super::row_tracking::assign(
                &mut delta,
                latest.as_ref().map_or(1, |l| l.id + 1),
                latest.as_ref().and_then(|l| l.next_row_id),
            )),
            false => latest.as_ref().and_then(|l| l.next_row_id),
        };
        let mut written: Vec<String> = Vec::new();
        let result = self
            .write_snapshot_metadata(latest.as_ref(), &delta, &schema, req, next_row_id, &mut written)
            .await;
        if result.is_err() {
            // Metadata of a lost or failed attempt is unreferenced: remove it (best effort).
            for name in written {
                let _ = self.io.delete(&paths::manifest_file(&name)).await;
            }
        }
        result
    }

    async fn write_snapshot_metadata(
        &self,
        latest: Option<&Snapshot>,
        delta: &[ManifestEntry],
        schema: &TableSchema,
        req: &CommitRequest,
        next_row_id: Option<i64>,
        written: &mut Vec<String>,
    ) -> Result<Snapshot> {
        let (schema_id, merge_options) = (schema.id, &schema.options);
        let mut base: Vec<ManifestFileMeta> = match latest {
            Some(l) => self.data_manifests(l).await?,
            None => vec![],
        };
        base.retain(|m| m.num_added_files + m.num_deleted_files > 0);
        let mut target = MergeTarget {
            schema_id,
            partition_types: &req.partition_types,
            written,
        };
        let deleting = delta.iter().filter(|e| e.kind == FileKind::Delete).count();
        let base = self
            .merge_manifests(
                base,
                deleting,
                ManifestMergeOptions::parse(merge_options)?,
                &mut target,
            )
            .await?;
        let manifest = self
            .write_manifest(delta, schema_id, &req.partition_types)
            .await?;
        written.push(manifest.file_name.clone());
        let (base_list, base_size) = self.write_manifest_list(&base).await?;
        written.push(base_list.clone());
        let (delta_list, delta_size) = self.write_manifest_list(std::slice::from_ref(&manifest)).await?;
        written.push(delta_list.clone());
        let changelog = if req.changelog.is_empty() {
            None
        } else {
            let manifest = self
                .write_manifest(&req.changelog, schema_id, &req.partition_types)
                .await?;
            written.push(manifest.file_name.clone());
            let (list, _) = self.write_manifest_list(std::slice::from_ref(&manifest)).await?;
            written.push(list.clone());
            let rows: i64 = req.changelog.iter().map(|e| e.file.row_count).sum();
            Some((list, rows))
        };
        let index_manifest = self.next_index_manifest(latest, req, written).await?;
        let added: i64 = delta
            .iter()
            .filter(|e| e.kind == FileKind::Add)
            .map(|e| e.file.row_count)
            .sum();
        let deleted: i64 = delta
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(|e| e.file.row_count)
            .sum();
        let kind = if !req.compacted.is_empty() {
            "COMPACT"
        } else if delta.iter().any(|e| e.kind == FileKind::Delete) || req.row_level.is_some() {
            // A row-level change removes files or adds deletion vectors (format.md §3.2).
            "OVERWRITE"
        } else {
            "APPEND"
        };
        let snapshot = SnapshotBuilder {
            id: latest.map_or(1, |l| l.id + 1),
            schema_id,
            base: (base_list, base_size),
            delta: (delta_list, delta_size),
            kind,
            total: latest.and_then(|l| l.total_record_count).unwrap_or(0) + added - deleted,
            delta_count: added - deleted,
            watermark: latest.and_then(|l| l.watermark),
            index_manifest,
            changelog,
            next_row_id,
        }
        .build(req);
        self.publish_snapshot(&snapshot).await?;
        Ok(snapshot)
    }
}

impl TableMeta {
    /// Fails with `RowLevelConflict` unless every file `base` read is still live and the
    /// touched buckets' deletion-vector index files are the ones it read.
    async fn check_row_level_base(&self, latest: Option<&Snapshot>, base: &RowLevelBase) -> Result<()> {
        let conflict = |what: String| Error::RowLevelConflict {
            statement: base.statement.clone(),
            what,
        };
        let Some(latest) = latest else {
            return match base.rewritten.iter().chain(&base.marked).next() {
                Some(e) => Err(conflict(format!("data file {}", e.file.file_name))),
                None => Ok(()),
            };
        };
        let live = self.live_files(latest, |_| true).await?;
        for e in base.rewritten.iter().chain(&base.marked) {
            let still_live = live
                .groups
                .get(&(e.partition.clone(), e.bucket))
                .is_some_and(|files| files.iter().any(|f| f.file.file_name == e.file.file_name));
            if !still_live {
                return Err(conflict(format!("data file {}", e.file.file_name)));
            }
        }
        if base.marked.is_empty() {
            return Ok(());
        }
        let buckets: std::collections::HashSet<(&[u8], i32)> = base
            .marked
            .iter()
            .map(|e| (e.partition.as_slice(), e.bucket))
            .collect();
        let mut now: Vec<String> = match &latest.index_manifest {
            Some(name) => self
                .index_manifest(name)
                .await?
                .into_iter()
                .filter(|e| {
                    e.kind == FileKind::Add
                        && e.index_type == crate::deletion_vector::DELETION_VECTORS_INDEX
                        && buckets.contains(&(e.partition.as_slice(), e.bucket))
                })
                .map(|e| e.file_name)
                .collect(),
            None => vec![],
        };
        let mut read = base.index_files.clone();
        now.sort();
        read.sort();
        if now != read {
            return Err(conflict(
                "the deletion vectors of the touched buckets".to_string(),
            ));
        }
        Ok(())
    }

    /// The index manifest of the next snapshot: the previous one's entries, minus HASH entries
    /// of overwritten partitions and entries replaced by `req.index_added`, plus those. The
    /// previous name is reused when nothing changes (format.md §4.8).
    async fn next_index_manifest(
        &self,
        latest: Option<&Snapshot>,
        req: &CommitRequest,
        written: &mut Vec<String>,
    ) -> Result<Option<String>> {
        let previous_name = latest.and_then(|l| l.index_manifest.clone());
        let overwrites = req.overwrite != OverwriteScope::None;
        if req.index_added.is_empty()
            && req.index_removed.is_empty()
            && (!overwrites || previous_name.is_none())
        {
            return Ok(previous_name);
        }
        let previous = match &previous_name {
            Some(name) => self.index_manifest(name).await?,
            None => vec![],
        };
        let replaced = |e: &IndexManifestEntry| {
            req.index_added
                .iter()
                .chain(&req.index_removed)
                .any(|n| n.index_type == e.index_type && n.partition == e.partition && n.bucket == e.bucket)
        };
        let mut entries = Vec::with_capacity(previous.len() + req.index_added.len());
        for e in previous {
            if e.kind != FileKind::Add || replaced(&e) {
                continue;
            }
            if e.index_type == crate::dynamic_bucket::HASH_INDEX
                && self.overwritten(&req.overwrite, &e.partition, &req.partition_types)?
            {
                continue;
            }
            entries.push(e);
        }
        entries.extend(req.index_added.iter().cloned());
        if entries.is_empty() {
            return Ok(None);
        }
        let (name, _, _) = self
            .write_manifest_file(
                "index-manifest",
                &INDEX_MANIFEST_SCHEMA,
                entries.iter().map(IndexManifestEntry::to_avro),
            )
            .await?;
        written.push(name.clone());
        Ok(Some(name))
    }

    /// Whether `partition` falls in an overwrite scope.
    fn overwritten(&self, scope: &OverwriteScope, partition: &[u8], types: &[DataType]) -> Result<bool> {
        Ok(match scope {
            OverwriteScope::None => false,
            OverwriteScope::Table => true,
            OverwriteScope::Partitions(specs) => {
                let values = BinaryRow::decode(partition, types)?.values;
                specs.iter().any(|spec| {
                    spec.iter()
                        .zip(&values)
                        .all(|(want, have)| want.as_ref().is_none_or(|w| w == have))
                })
            }
        })
    }
}

struct SnapshotBuilder {
    id: i64,
    schema_id: i64,
    base: (String, i64),
    delta: (String, i64),
    kind: &'static str,
    total: i64,
    delta_count: i64,
    watermark: Option<i64>,
    index_manifest: Option<String>,
    /// Changelog manifest list and its row count.
    changelog: Option<(String, i64)>,
    /// Row tracking: the first row id of the next commit's rows.
    next_row_id: Option<i64>,
}

impl SnapshotBuilder {
    fn build(self, req: &CommitRequest) -> Snapshot {
        Snapshot {
            version: Some(3),
            id: self.id,
            schema_id: self.schema_id,
            base_manifest_list: self.base.0,
            delta_manifest_list: self.delta.0,
            changelog_manifest_list: self.changelog.as_ref().map(|(list, _)| list.clone()),
            index_manifest: self.index_manifest,
            commit_user: req.commit_user.clone(),
            commit_identifier: req.commit_identifier,
            commit_kind: self.kind.to_string(),
            time_millis: chrono::Utc::now().timestamp_millis(),
            total_record_count: Some(self.total),
            delta_record_count: Some(self.delta_count),
            changelog_record_count: self.changelog.as_ref().map(|(_, rows)| *rows),
            watermark: self.watermark,
            statistics: None,
            next_row_id: self.next_row_id,
            operation: req.operation.clone(),
            writer_version: Some(concat!("datafusion-paimon-", env!("CARGO_PKG_VERSION")).to_string()),
        }
    }
}
