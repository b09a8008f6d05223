//! Writing manifests, manifest lists and snapshots: the metadata half of a commit
//! (format.md §4.6, §8). Data files must already be written; the snapshot is created last and
//! atomically, so a failure anywhere leaves the table at its previous snapshot.

use std::cmp::Ordering;

use apache_avro::{Codec, Schema, Writer};
use datafusion::common::ScalarValue;

use super::TableMeta;
use crate::error::{Error, Result};
use crate::spec::manifest_write::{MANIFEST_LIST_SCHEMA, MANIFEST_SCHEMA};
use crate::spec::{paths, BinaryRow, DataType, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats, Snapshot};

fn avro_bytes(schema: &Schema, records: impl IntoIterator<Item = apache_avro::types::Value>, path: &str) -> Result<Vec<u8>> {
    let codec = Codec::Zstandard(Default::default());
    let mut writer = Writer::with_codec(schema, Vec::new(), codec);
    for r in records {
        writer.append(r).map_err(|e| Error::corrupt(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::corrupt(path, e))
}

/// Min and max of one partition column over the entries, and its null count.
fn column_bounds(values: impl Iterator<Item = ScalarValue>) -> (Option<ScalarValue>, Option<ScalarValue>, i64) {
    let (mut min, mut max, mut nulls): (Option<ScalarValue>, Option<ScalarValue>, i64) = (None, None, 0);
    for v in values {
        if v.is_null() {
            nulls += 1;
            continue;
        }
        if min.as_ref().is_none_or(|m| v.partial_cmp(m) == Some(Ordering::Less)) {
            min = Some(v.clone());
        }
        if max.as_ref().is_none_or(|m| v.partial_cmp(m) == Some(Ordering::Greater)) {
            max = Some(v);
        }
    }
    (min, max, nulls)
}

impl TableMeta {
    /// Writes one manifest file with `entries` and returns its manifest-list record.
    pub(crate) async fn write_manifest(&self, entries: &[ManifestEntry], schema_id: i64, partition_types: &[DataType]) -> Result<ManifestFileMeta> {
        let name = format!("manifest-{}-0", uuid::Uuid::new_v4());
        let file = paths::manifest_file(&name);
        let bytes = avro_bytes(&MANIFEST_SCHEMA, entries.iter().map(ManifestEntry::to_avro), &file)?;
        let size = bytes.len() as i64;
        self.io.write(&file, bytes).await?;

        let partitions = entries.iter().map(|e| BinaryRow::decode(&e.partition, partition_types)).collect::<Result<Vec<_>>>()?;
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
        let range = |f: &dyn Fn(&ManifestEntry) -> i32| {
            (entries.iter().map(f).min(), entries.iter().map(f).max())
        };
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
            min_row_id: None,
            max_row_id: None,
        })
    }

    /// Writes a manifest list; returns its name and size.
    pub(crate) async fn write_manifest_list(&self, metas: &[ManifestFileMeta]) -> Result<(String, i64)> {
        let name = format!("manifest-list-{}-0", uuid::Uuid::new_v4());
        let file = paths::manifest_file(&name);
        let bytes = avro_bytes(&MANIFEST_LIST_SCHEMA, metas.iter().map(ManifestFileMeta::to_avro), &file)?;
        let size = bytes.len() as i64;
        self.io.write(&file, bytes).await?;
        Ok((name, size))
    }

    /// Creates `snapshot-<id>` atomically, then updates the `LATEST` hint.
    ///
    /// Returns `Error::CommitConflict` if another writer created that snapshot first.
    pub(crate) async fn publish_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        let file = paths::snapshot_file(snapshot.id);
        if !self.io.create_new(&file, snapshot.to_json().into_bytes()).await? {
            return Err(Error::CommitConflict { snapshot_id: snapshot.id });
        }
        // The hint is best effort: readers verify it (format.md §3.5).
        let _ = self.io.write("snapshot/LATEST", snapshot.id.to_string().into_bytes()).await;
        Ok(())
    }

    /// Writes a schema file if it does not exist yet (table creation).
    pub(crate) async fn create_schema_file(&self, id: i64, json: String) -> Result<bool> {
        self.io.create_new(&paths::schema_file(id), json.into_bytes()).await
    }
}
