//! Expiration of long-lived changelogs (`changelog/changelog-<id>`), after snapshot expiration,
//! as Java's `ExpireChangelogImpl` does.
//!
//! ```text
//! L = latest snapshot, C = earliest long-lived changelog, Cl = latest long-lived changelog
//! min  = max(L - changelog.num-retained.max + 1, C)
//! maxX = min(L - changelog.num-retained.min + 1, lowest consumer need, C + snapshot.expire.limit, Cl)
//! end  = the first id in [min, maxX] whose changelog is younger than now - changelog.time-retained,
//!        else maxX; changelogs [C, end) expire
//! deleted per changelog: its changelog files, the files its delta deletes (not re-added), then
//!   its manifest lists and manifests unless changelog `end`, the earliest snapshot or a tag
//!   uses them, then `changelog-<id>`; `changelog/EARLIEST` moves to `end`
//! ```

use std::collections::HashSet;

use datafusion::common::Result;

use super::expire::{oldest_consumer_need, ExpireOptions};
use super::files::{Referenced, TableFiles};
use crate::meta::TableMeta;
use crate::spec::{paths, Snapshot, TableSchema};

/// Expires the long-lived changelogs `options` allows at `now_ms`; returns how many.
pub(crate) async fn expire_changelogs(
    meta: &TableMeta,
    schema: &TableSchema,
    options: ExpireOptions,
    now_ms: i64,
) -> Result<usize> {
    let (_, _, time_retained_ms) = options.changelog();
    expire_changelogs_older_than(meta, schema, options, now_ms - time_retained_ms, false).await
}

/// Expiration with an explicit time threshold (`sys.expire_changelogs(older_than => …)`): a
/// changelog goes only when it was committed before `older_than_ms`. `all` expires every
/// long-lived changelog (`delete_all => true`).
pub(crate) async fn expire_changelogs_older_than(
    meta: &TableMeta,
    schema: &TableSchema,
    options: ExpireOptions,
    older_than_ms: i64,
    all: bool,
) -> Result<usize> {
    let now_ms = chrono::Utc::now().timestamp_millis();
    let changelogs = meta.long_lived_changelog_ids().await?;
    let (Some(&earliest), Some(&latest_changelog)) = (changelogs.first(), changelogs.last()) else {
        return Ok(0);
    };
    let snapshots = meta.snapshot_ids().await?;
    let (Some(&earliest_snapshot), Some(&latest)) = (snapshots.first(), snapshots.last()) else {
        return Ok(0);
    };
    let (retain_min, retain_max, _) = options.changelog();
    let min = (latest - retain_max + 1).max(earliest);
    let mut max_exclusive = (latest - retain_min + 1)
        .min(earliest + options.limit)
        .min(latest_changelog);
    if let Some(needed) = oldest_consumer_need(meta, schema, now_ms).await? {
        max_exclusive = max_exclusive.min(needed);
    }
    let older_than = older_than_ms;
    let mut end = max_exclusive;
    for id in min..=max_exclusive {
        if changelogs.binary_search(&id).is_ok()
            && meta.long_lived_changelog(id).await?.time_millis >= older_than
        {
            end = id;
            break;
        }
    }
    if all {
        end = latest_changelog + 1;
    }
    if end <= earliest {
        return Ok(0);
    }
    let files = TableFiles::new(meta, schema)?;
    // What must survive: changelog (or snapshot) `end`, the earliest snapshot and every tag.
    let mut keep = Referenced::default();
    let boundary = match changelogs.binary_search(&end) {
        Ok(_) => meta.long_lived_changelog(end).await?,
        Err(_) => meta.snapshot(end.max(earliest_snapshot)).await?,
    };
    files.collect(&boundary, &mut keep).await?;
    files
        .collect(&meta.snapshot(earliest_snapshot).await?, &mut keep)
        .await?;
    let mut tagged_files: HashSet<String> = HashSet::new();
    for tag in meta.tags().await? {
        files.collect(&tag.snapshot, &mut keep).await?;
        for e in meta.live_files(&tag.snapshot, |_| true).await?.entries() {
            tagged_files.extend(files.data_path(e)?);
        }
    }
    let expiring: Vec<Snapshot> = futures::future::try_join_all(
        changelogs
            .iter()
            .filter(|id| **id < end)
            .map(|id| meta.long_lived_changelog(*id)),
    )
    .await?;
    let mut data_files: Vec<String> = Vec::new();
    let mut drop = Referenced::default();
    for changelog in &expiring {
        if let Some(list) = &changelog.changelog_manifest_list {
            if meta.io().exists(&paths::manifest_file(list)).await? {
                for e in meta.changelog_entries(changelog).await? {
                    data_files.extend(files.data_path(&e)?);
                }
            }
        }
        if meta
            .io()
            .exists(&paths::manifest_file(&changelog.delta_manifest_list))
            .await?
        {
            data_files.extend(files.deleted_by_delta(changelog, |_| false).await?);
        }
        // Index manifests stay with snapshot expiration (Java's ChangelogDeletion).
        let mut lists = Referenced::default();
        files.collect_parts(changelog, true, true, &mut lists).await?;
        drop.manifests.extend(lists.manifests);
    }
    for path in data_files.iter().filter(|p| !tagged_files.contains(*p)) {
        meta.io().delete_data_file(path).await?;
    }
    for name in drop.manifests.difference(&keep.manifests) {
        meta.io().delete(&paths::manifest_file(name)).await?;
    }
    for changelog in &expiring {
        meta.io().delete(&paths::changelog_file(changelog.id)).await?;
    }
    meta.io()
        .write("changelog/EARLIEST", end.to_string().into_bytes())
        .await?;
    Ok(expiring.len())
}
