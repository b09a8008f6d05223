//! Tags and rollback (format.md §3.6, §8.8): `CALL sys.create_tag`, `sys.delete_tag`,
//! `sys.rollback_to`.
//!
//! * A tag is the tagged snapshot's JSON in `tag/tag-<name>`, plus `tagCreateTime` (local time
//!   as Jackson's `[y, mo, d, h, mi, s, nanos]`) and, when given, `tagTimeRetained` (seconds).
//!   Expiration keeps every file a tag references.
//! * Deleting a tag removes its file only: files it alone kept alive become orphans
//!   (`remove_orphan_files` is not implemented yet).
//! * Rolling back to snapshot S (or to a tag, whose snapshot is restored if it expired): the
//!   newer snapshots' files go first (highest id first, `LATEST` rewritten), so a crash leaves
//!   orphans, never a snapshot without its files; then the data files they added that S does
//!   not use, the metadata only they used, and the tags of snapshots newer than S.

use std::collections::HashSet;

use chrono::{Datelike, Timelike};
use datafusion::common::{plan_datafusion_err, plan_err, Result};

use super::files::{Referenced, TableFiles};
use crate::meta::TableMeta;
use crate::spec::{paths, FileKind, Snapshot, TableSchema};

/// Checks a tag name: it becomes a file name, and digits alone would read as a snapshot id.
fn check_name(name: &str) -> Result<()> {
    if name.trim().is_empty() || name.chars().all(|c| c.is_ascii_digit()) {
        return plan_err!("Invalid tag name '{name}': it must not be blank or only digits");
    }
    if name.contains(['/', '\\']) || name.starts_with('.') {
        return plan_err!("Invalid tag name '{name}': it must not contain '/' or '\\' or start with '.'");
    }
    Ok(())
}

/// The JSON of a tag of `snapshot` created now.
fn tag_json(snapshot: &Snapshot, time_retained_ms: Option<i64>) -> Result<String> {
    let mut json: serde_json::Value = serde_json::from_str(&snapshot.to_json())
        .map_err(|e| plan_datafusion_err!("Cannot serialize snapshot {}: {e}", snapshot.id))?;
    let now = chrono::Local::now().naive_local();
    json["tagCreateTime"] = serde_json::json!([
        now.year(),
        now.month(),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.nanosecond()
    ]);
    if let Some(ms) = time_retained_ms {
        json["tagTimeRetained"] = serde_json::json!(ms as f64 / 1000.0);
    }
    Ok(serde_json::to_string_pretty(&json).expect("JSON values serialize"))
}

/// `sys.create_tag`: tags `snapshot_id` (the latest snapshot by default).
pub(crate) async fn create_tag(
    meta: &TableMeta,
    table: &str,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained_ms: Option<i64>,
) -> Result<i64> {
    check_name(name)?;
    write_tag(meta, table, name, snapshot_id, time_retained_ms).await
}

/// Writes tag `name` of `snapshot_id` (the latest by default) without checking the name:
/// automatic tags come from a period formatter and may be all digits (`20240101`), which a
/// user-chosen name may not.
pub(crate) async fn write_tag(
    meta: &TableMeta,
    table: &str,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained_ms: Option<i64>,
) -> Result<i64> {
    let snapshot = match snapshot_id {
        Some(id) => match meta.snapshot(id).await {
            Ok(s) => s,
            Err(crate::Error::NotFound { .. }) => {
                return plan_err!("Cannot create tag '{name}' of table {table}: snapshot {id} does not exist (it may have expired)")
            }
            Err(e) => return Err(e.into()),
        },
        None => meta
            .latest_snapshot()
            .await?
            .ok_or_else(|| plan_datafusion_err!("Cannot create tag '{name}': table {table} has no snapshot yet"))?,
    };
    let json = tag_json(&snapshot, time_retained_ms)?;
    if !meta
        .io()
        .create_new(&paths::tag_file(name), json.into_bytes())
        .await?
    {
        return plan_err!("Tag '{name}' of table {table} already exists");
    }
    Ok(snapshot.id)
}

/// `sys.delete_tag`: removes the tags `names` (comma-separated in the procedure).
pub(crate) async fn delete_tags(meta: &TableMeta, table: &str, names: &[&str]) -> Result<()> {
    for name in names {
        if !meta.io().exists(&paths::tag_file(name)).await? {
            return plan_err!("Tag '{name}' of table {table} does not exist");
        }
    }
    for name in names {
        meta.io().delete(&paths::tag_file(name)).await?;
    }
    Ok(())
}

/// `sys.rename_tag`: tag `from` becomes tag `to` (written first, so a failure never loses it).
pub(crate) async fn rename_tag(meta: &TableMeta, table: &str, from: &str, to: &str) -> Result<()> {
    check_name(to)?;
    let bytes = match meta.io().read(&paths::tag_file(from), "tag").await {
        Ok(bytes) => bytes,
        Err(crate::Error::NotFound { .. }) => {
            return plan_err!("Tag '{from}' of table {table} does not exist")
        }
        Err(e) => return Err(e.into()),
    };
    if !meta.io().create_new(&paths::tag_file(to), bytes.to_vec()).await? {
        return plan_err!("Tag '{to}' of table {table} already exists");
    }
    meta.io().delete(&paths::tag_file(from)).await?;
    Ok(())
}

/// What `sys.rollback_to` goes back to.
pub(crate) enum RollbackTarget<'a> {
    Snapshot(i64),
    Tag(&'a str),
}

/// `sys.rollback_to`: makes snapshot S (or the tag's snapshot) the latest again; returns S.
pub(crate) async fn rollback_to(
    meta: &TableMeta,
    schema: &TableSchema,
    table: &str,
    target: RollbackTarget<'_>,
) -> Result<i64> {
    let target = match target {
        RollbackTarget::Snapshot(id) => match meta.snapshot(id).await {
            Ok(s) => s,
            Err(crate::Error::NotFound { .. }) => {
                return plan_err!("Cannot roll table {table} back to snapshot {id}: it does not exist (it may have expired; roll back to a tag instead)")
            }
            Err(e) => return Err(e.into()),
        },
        RollbackTarget::Tag(name) => match meta.tag(name).await {
            Ok(tag) => tag.snapshot,
            Err(_) => return plan_err!("Cannot roll table {table} back to tag '{name}': it does not exist"),
        },
    };
    let s = target.id;
    let latest = meta.latest_snapshot_id().await?.unwrap_or(0);
    let files = TableFiles::new(meta, schema)?;
    // What stays: snapshot S and every tag of a snapshot up to S.
    let mut keep = Referenced::default();
    files.collect(&target, &mut keep).await?;
    let mut kept_data: HashSet<String> = HashSet::new();
    for e in meta.live_files(&target, |_| true).await?.entries() {
        kept_data.extend(files.data_path(e)?);
    }
    let tags = meta.tags().await?;
    for tag in tags.iter().filter(|t| t.snapshot.id <= s) {
        files.collect(&tag.snapshot, &mut keep).await?;
        for e in meta.live_files(&tag.snapshot, |_| true).await?.entries() {
            kept_data.extend(files.data_path(e)?);
        }
    }
    // What goes: the newer snapshots, read before anything is deleted.
    let mut drop = Referenced::default();
    let mut added: Vec<String> = Vec::new();
    for id in s + 1..=latest {
        let snapshot = match meta.snapshot(id).await {
            Ok(snapshot) => snapshot,
            Err(crate::Error::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        files.collect(&snapshot, &mut drop).await?;
        for e in meta.delta_entries(&snapshot).await? {
            if e.kind == FileKind::Add {
                added.extend(files.data_path(&e)?);
            }
        }
        for e in meta.changelog_entries(&snapshot).await? {
            added.extend(files.data_path(&e)?);
        }
    }
    // A tag of an expired snapshot: restore the snapshot file first.
    if !meta.io().exists(&paths::snapshot_file(s)).await? {
        meta.io()
            .write(&paths::snapshot_file(s), target.to_json().into_bytes())
            .await?;
    }
    for id in (s + 1..=latest).rev() {
        meta.io().delete(&paths::snapshot_file(id)).await?;
    }
    meta.io()
        .write("snapshot/LATEST", s.to_string().into_bytes())
        .await?;
    if meta.earliest_snapshot_id().await? == Some(s) {
        let _ = meta
            .io()
            .write("snapshot/EARLIEST", s.to_string().into_bytes())
            .await;
    }
    for tag in tags.iter().filter(|t| t.snapshot.id > s) {
        meta.io().delete(&paths::tag_file(&tag.name)).await?;
    }
    for path in added.iter().filter(|p| !kept_data.contains(*p)) {
        meta.io().delete_data_file(path).await?;
    }
    for name in drop.manifests.difference(&keep.manifests) {
        meta.io().delete(&paths::manifest_file(name)).await?;
    }
    for path in drop.index_files.difference(&keep.index_files) {
        meta.io().delete(path).await?;
    }
    Ok(s)
}
