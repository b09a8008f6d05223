//! Branches (Paimon's `BranchManager`): `sys.create_branch`, `sys.delete_branch` and
//! `sys.fast_forward`. A branch keeps its own `schema/`, `snapshot/` and `tag/` under
//! `branch/branch-<name>/` and shares the table's data files and manifests, so creating one
//! copies only metadata files:
//!
//! * empty: the table's latest schema;
//! * from a tag: the tag, its snapshot and the schemas up to the snapshot's.
//!
//! `fast_forward` makes the main branch the branch: main's snapshots from the branch's earliest
//! on, its tags of those snapshots and its schemas from the branch's earliest snapshot's are
//! replaced by the branch's.

use datafusion::common::{plan_err, Result};

use crate::meta::TableMeta;
use crate::spec::{paths, Snapshot};

/// The directory of branch `name`, relative to the table.
fn branch_dir(name: &str) -> String {
    format!("branch/branch-{name}")
}

/// Paimon's rules for a branch name: not `main`, not blank, not only digits.
fn check_name(table: &str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return plan_err!("A branch of table {table} needs a name");
    }
    if name == "main" {
        return plan_err!("Branch name 'main' is the main branch of table {table}; choose another");
    }
    if name.chars().all(|c| c.is_ascii_digit()) {
        return plan_err!("Branch name '{name}' of table {table} cannot be only digits");
    }
    if name.contains('/') || name.contains('$') {
        return plan_err!("Branch name '{name}' of table {table} cannot hold '/' or '$'");
    }
    Ok(())
}

/// Whether branch `name` exists (has a schema).
async fn exists(main: &TableMeta, name: &str) -> Result<bool> {
    Ok(!main
        .io()
        .list_files(&format!("{}/schema", branch_dir(name)))
        .await?
        .is_empty())
}

/// Copies one file of the table (relative path) to another place in it.
async fn copy(main: &TableMeta, from: &str, to: &str) -> Result<()> {
    let bytes = main.io().read(from, "metadata file").await?;
    main.io().write(to, bytes.to_vec()).await?;
    Ok(())
}

/// `sys.create_branch(table, branch [, tag])`.
pub(crate) async fn create_branch(
    main: &TableMeta,
    table: &str,
    name: &str,
    tag: Option<&str>,
) -> Result<()> {
    check_name(table, name)?;
    if exists(main, name).await? {
        return plan_err!("Branch '{name}' of table {table} already exists");
    }
    let dir = branch_dir(name);
    match tag {
        None => {
            let latest = main.latest_schema().await?;
            let file = paths::schema_file(latest.id);
            copy(main, &file, &format!("{dir}/{file}")).await?;
        }
        Some(tag) => {
            let tag_file = paths::tag_file(tag);
            let bytes = match main.io().read(&tag_file, "tag").await {
                Ok(b) => b,
                Err(crate::Error::NotFound { .. }) => {
                    return plan_err!(
                        "Cannot create branch '{name}' of table {table}: tag '{tag}' does not exist"
                    )
                }
                Err(e) => return Err(e.into()),
            };
            let snapshot = Snapshot::from_json(&bytes, &main.io().display(&tag_file))?;
            // schemas first, the snapshot last: a half-made branch has no snapshot to read
            for id in main
                .schema_ids()
                .await?
                .into_iter()
                .filter(|id| *id <= snapshot.schema_id)
            {
                let file = paths::schema_file(id);
                copy(main, &file, &format!("{dir}/{file}")).await?;
            }
            main.io()
                .write(&format!("{dir}/{tag_file}"), bytes.to_vec())
                .await?;
            let snapshot_file = paths::snapshot_file(snapshot.id);
            main.io()
                .write(&format!("{dir}/{snapshot_file}"), snapshot.to_json().into_bytes())
                .await?;
        }
    }
    Ok(())
}

/// `sys.delete_branch(table, branches)`: several names comma-separated. The branch the table
/// falls back to (`scan.fallback-branch`) cannot be deleted.
pub(crate) async fn delete_branches(main: &TableMeta, table: &str, names: &[&str]) -> Result<()> {
    let fallback = main
        .latest_schema()
        .await?
        .options
        .get("scan.fallback-branch")
        .map(|b| b.trim().to_string());
    for name in names {
        if !exists(main, name).await? {
            return plan_err!("Branch '{name}' of table {table} does not exist");
        }
        if fallback.as_deref() == Some(*name) {
            return plan_err!(
                "Branch '{name}' is the fallback branch of table {table} (scan.fallback-branch): reset that option first"
            );
        }
    }
    for name in names {
        for (path, _) in main.io().list_recursive(&branch_dir(name)).await? {
            main.io().delete(&path).await?;
        }
    }
    Ok(())
}

/// `sys.fast_forward(table, branch)`.
pub(crate) async fn fast_forward(main: &TableMeta, table: &str, name: &str) -> Result<()> {
    check_name(table, name)?;
    if !exists(main, name).await? {
        return plan_err!("Branch '{name}' of table {table} does not exist");
    }
    let branch = main.on_branch(name);
    let branch_snapshots = branch.snapshot_ids().await?;
    let Some(&earliest) = branch_snapshots.first() else {
        return plan_err!("Branch '{name}' of table {table} has no snapshot to fast-forward to");
    };
    let from_schema = branch.snapshot(earliest).await?.schema_id;
    // main's later history goes: snapshots, then the tags of them, then schemas
    main.io().delete("snapshot/LATEST").await?;
    for id in main
        .snapshot_ids()
        .await?
        .into_iter()
        .filter(|id| *id >= earliest)
    {
        main.io().delete(&paths::snapshot_file(id)).await?;
    }
    for tag in main
        .tags()
        .await?
        .into_iter()
        .filter(|t| t.snapshot.id >= earliest)
    {
        main.io().delete(&paths::tag_file(&tag.name)).await?;
    }
    for id in main
        .schema_ids()
        .await?
        .into_iter()
        .filter(|id| *id >= from_schema)
    {
        main.io().delete(&paths::schema_file(id)).await?;
    }
    // the branch's, schemas first and the latest snapshot last
    for id in branch.schema_ids().await? {
        let file = paths::schema_file(id);
        copy(main, &format!("{}/{file}", branch_dir(name)), &file).await?;
    }
    for tag in branch.tags().await? {
        let file = paths::tag_file(&tag.name);
        copy(main, &format!("{}/{file}", branch_dir(name)), &file).await?;
    }
    for id in &branch_snapshots {
        let file = paths::snapshot_file(*id);
        copy(main, &format!("{}/{file}", branch_dir(name)), &file).await?;
    }
    if let Some(latest) = branch_snapshots.last() {
        main.io()
            .write("snapshot/LATEST", latest.to_string().into_bytes())
            .await?;
    }
    Ok(())
}
