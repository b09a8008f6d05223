//! `CALL sys.remove_orphan_files`: deletes data, changelog, manifest and index files that no
//! snapshot, tag or in-flight commit references (format.md §8.7: a crash part-way through a
//! commit, an expiration or a rollback leaves such files).
//!
//! Snapshots and tags of every branch count (`branch/branch-<name>/`): they share the table's
//! data files and manifests.
//!
//! Only files older than a threshold (a day by default, as in Paimon) are considered: a commit
//! writes its files before the snapshot that references them, so a young unreferenced file may
//! belong to a commit in flight.

use std::collections::HashSet;

use datafusion::common::Result;

use super::files::{Referenced, TableFiles};
use crate::meta::TableMeta;
use crate::spec::TableSchema;

/// Files not referenced by any snapshot or tag and written before `older_than_ms`; deleted
/// unless `dry_run`. Returns their paths relative to the table root, sorted.
pub(crate) async fn remove_orphan_files(
    meta: &TableMeta,
    schema: &TableSchema,
    older_than_ms: i64,
    dry_run: bool,
) -> Result<Vec<String>> {
    let files = TableFiles::new(meta, schema)?;
    let mut referenced = Referenced::default();
    let mut data: HashSet<String> = HashSet::new();
    let mut snapshots = meta.snapshots().await?;
    snapshots.extend(meta.tags().await?.into_iter().map(|t| t.snapshot));
    // branches share the table's data files and manifests: what theirs reference stays
    for dir in meta.io().list_dirs("branch").await? {
        if let Some(branch) = dir.strip_prefix("branch-") {
            let branch = meta.on_branch(branch);
            snapshots.extend(branch.snapshots().await?);
            snapshots.extend(branch.tags().await?.into_iter().map(|t| t.snapshot));
        }
    }
    for snapshot in &snapshots {
        files.collect(snapshot, &mut referenced).await?;
        for e in meta.live_files(snapshot, |_| true).await?.entries() {
            data.extend(files.data_path(e)?);
        }
        for e in meta.changelog_entries(snapshot).await? {
            data.extend(files.data_path(&e)?);
        }
    }
    let mut orphans = Vec::new();
    for (path, modified) in meta.io().list_recursive("").await? {
        if modified >= older_than_ms {
            continue;
        }
        let name = path.rsplit('/').next().unwrap_or(&path);
        let kept = if let Some(rest) = path.strip_prefix("manifest/") {
            rest.contains('/') || referenced.manifests.contains(rest)
        } else if let Some(rest) = path.strip_prefix("index/") {
            rest.contains('/') || referenced.index_files.contains(&path)
        } else if path.split('/').any(|part| part.starts_with("bucket-")) && name.starts_with("index-") {
            // an index file beside the data (`index-file-in-data-file-dir`)
            referenced.index_files.contains(&path)
        } else if path.split('/').any(|part| part.starts_with("bucket-"))
            && (name.starts_with("data-") || name.starts_with("changelog-"))
        {
            data.contains(&path)
        } else {
            // snapshot/, schema/, tag/, consumer/, hints and anything unknown
            true
        };
        if !kept {
            orphans.push(path);
        }
    }
    orphans.sort();
    if !dry_run {
        for path in &orphans {
            meta.io().delete(path).await?;
        }
    }
    Ok(orphans)
}
