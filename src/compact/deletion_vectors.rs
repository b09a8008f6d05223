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

use std::collections::HashSet;

use datafusion::common::Result;

use super::unit::UnitResult;
use crate::deletion_vector::{
    merged_positions, write_bucket_index, DeletionVectorIndex, DELETION_VECTORS_INDEX,
};
use crate::meta::{PartitionBucket, TableMeta};
use crate::spec::{FileKind, IndexManifestEntry, ManifestEntry};

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
    dirs: &crate::spec::paths::IndexFileDirs,
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
    let kept_files: Vec<&str> = files
        .iter()
        .map(|e| e.file.file_name.as_str())
        .filter(|name| !removed.contains(name))
        .collect();
    let added = unit
        .deleted_rows
        .iter()
        .map(|(n, r)| (n.clone(), r.clone()))
        .collect();
    let positions = merged_positions(meta.io().store(), &kept_files, vectors, added).await?;
    if positions.is_empty() {
        return Ok(had_index.then(|| {
            IndexChange::Remove(IndexManifestEntry {
                kind: FileKind::Delete,
                partition: group.0.clone(),
                bucket: group.1,
                index_type: DELETION_VECTORS_INDEX.to_string(),
                file_name: String::new(),
                file_size: 0,
                row_count: 0,
                dv_ranges: None,
                external_path: None,
            })
        }));
    }
    let entry = write_bucket_index(meta.io(), &group.0, group.1, positions, dirs).await?;
    Ok(Some(IndexChange::Replace(entry)))
}
