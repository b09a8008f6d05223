//! Deletion vectors kept by compaction of `deletion-vectors.enabled` tables (semantics.md §10).
//!
//! ```text
//! unit of a bucket ─► rows of files outside the unit replaced by newer versions (lookup)
//! bucket vectors   = vectors of the bucket's surviving files ∪ those rows
//!                  ─► one new index file replacing the bucket's DELETION_VECTORS entries
//!                     (no file, and the entries dropped, once no vector is left)
//! ```
//!
//! Files a unit rewrites take their vectors with them; a file moved up a level keeps its own.

use std::collections::{BTreeMap, HashSet};

use datafusion::common::Result;

use super::unit::UnitResult;
use crate::deletion_vector::{encode_index_file, DeletionVectorIndex, DELETION_VECTORS_INDEX};
use crate::meta::{PartitionBucket, TableMeta};
use crate::spec::{paths, FileKind, IndexManifestEntry, ManifestEntry};

/// How a bucket's index manifest entries change.
pub(super) enum IndexChange {
    /// A new index file replaces the bucket's entries.
    Replace(IndexManifestEntry),
    /// The bucket's entries go (no vector left).
    Remove(IndexManifestEntry),
}

/// The bucket's vectors after `unit` ran over it; `None` when they did not change.
/// `files` are the bucket's live files before the unit, `had_index` whether the index
/// manifest holds vectors of this bucket.
pub(super) async fn bucket_vectors(
    meta: &TableMeta,
    group: &PartitionBucket,
    files: &[ManifestEntry],
    vectors: &DeletionVectorIndex,
    had_index: bool,
    unit: &UnitResult,
) -> Result<Option<IndexChange>> {
    let kept: HashSet<&str> = unit.after.iter().map(|e| e.file.file_name.as_str()).collect();
    let removed: HashSet<&str> = unit
        .before
        .iter()
        .map(|e| e.file.file_name.as_str())
        .filter(|name| !kept.contains(name))
        .collect();
    let drops_a_vector = removed.iter().any(|name| vectors.get(name).is_some());
    if unit.deleted_rows.is_empty() && !drops_a_vector {
        return Ok(None);
    }
    let mut positions: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for entry in files {
        let name = entry.file.file_name.as_str();
        if removed.contains(name) {
            continue;
        }
        if let Some(dv) = vectors.get(name) {
            let vector = dv.load(meta.io().store()).await?;
            positions.insert(name.to_string(), vector.positions().to_vec());
        }
    }
    for (name, rows) in &unit.deleted_rows {
        let all = positions.entry(name.clone()).or_default();
        all.extend(rows);
        all.sort_unstable();
        all.dedup();
    }
    let entry = |kind: FileKind, file_name: String, file_size: i64, ranges| IndexManifestEntry {
        kind,
        partition: group.0.clone(),
        bucket: group.1,
        index_type: DELETION_VECTORS_INDEX.to_string(),
        file_name,
        file_size,
        row_count: positions.len() as i64,
        dv_ranges: ranges,
        external_path: None,
    };
    if positions.is_empty() {
        return Ok(had_index.then(|| IndexChange::Remove(entry(FileKind::Delete, String::new(), 0, None))));
    }
    let vectors: Vec<(String, Vec<u64>)> = positions.clone().into_iter().collect();
    let (bytes, ranges) = encode_index_file(&vectors)?;
    let name = format!("index-{}-0", uuid::Uuid::new_v4());
    let size = bytes.len() as i64;
    meta.io().write(&paths::index_file(&name), bytes).await?;
    Ok(Some(IndexChange::Replace(entry(
        FileKind::Add,
        name,
        size,
        Some(ranges),
    ))))
}
