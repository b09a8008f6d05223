//! `scan.fallback-branch`: a batch read of a table takes every partition its main branch has
//! no live file in from the fallback branch instead (Paimon's `FallbackReadFileStoreTable`,
//! typically a streaming-written `rt` branch under a batch-written main table). A partition is
//! read wholly from one branch, never merged across them.
//!
//! ```text
//! main snapshot ──► partitions P ──► main scan (its own files)
//!                                └─► fallback scan, every partition except P ──► union
//! ```
//!
//! The fallback branch has its own schema and table kind (it may be a primary-key table under
//! an append table); its columns match the main table's by position and type, as Java checks,
//! and come out under the main table's names.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_err, Column, Result};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::ExecutionPlan;

use super::provider::PaimonTable;
use super::time_travel::{read_schema, resolve_snapshot};
use crate::meta::TableMeta;
use crate::scan::ReadView;
use crate::spec::{Snapshot, TableSchema};

/// The option naming the fallback branch.
pub(crate) const FALLBACK_BRANCH: &str = "scan.fallback-branch";

/// The fallback branch of the table `name` read at `snapshot` with `schema`, when the schema
/// names one (and the table is not a branch itself).
pub(super) async fn open(
    name: &str,
    meta: &Arc<TableMeta>,
    options: &BTreeMap<String, String>,
    snapshot: Option<&Snapshot>,
    schema: &TableSchema,
) -> Result<Option<PaimonTable>> {
    let Some(branch) = schema
        .options
        .get(FALLBACK_BRANCH)
        .map(|b| b.trim())
        .filter(|b| !b.is_empty())
    else {
        return Ok(None);
    };
    if meta.io().branch().is_some() {
        return Ok(None);
    }
    let fallback_name = format!("{name}$branch_{branch}");
    let fallback_meta = Arc::new(meta.on_branch(branch));
    if fallback_meta.latest_schema_if_any().await?.is_none() {
        return plan_err!(
            "Option '{FALLBACK_BRANCH}' of table {name} names branch '{branch}', which does not exist"
        );
    }
    let options = fallback_options(&fallback_meta, options, snapshot).await?;
    let fallback_snapshot = resolve_snapshot(&fallback_meta, &fallback_name, &options).await?;
    let fallback_schema = read_schema(&fallback_meta, fallback_snapshot.as_ref(), &options, None).await?;
    check_compatible(name, branch, schema, &fallback_schema)?;
    Ok(Some(PaimonTable::try_new(
        fallback_name,
        fallback_meta,
        fallback_snapshot,
        fallback_schema,
        ReadView::Table,
    )?))
}

/// The read options of the fallback branch: a snapshot id of the main branch means nothing
/// there, so it becomes the main snapshot's commit time (the fallback's newest snapshot at or
/// before it, or its first one), as Java translates it. Other options apply as they are.
async fn fallback_options(
    fallback: &TableMeta,
    options: &BTreeMap<String, String>,
    snapshot: Option<&Snapshot>,
) -> Result<BTreeMap<String, String>> {
    let mut options = options.clone();
    options.remove("branch");
    if options.remove(crate::spec::options::SCAN_SNAPSHOT_ID).is_some() {
        if let Some(snapshot) = snapshot {
            let at = fallback.snapshot_at_or_before(snapshot.time_millis).await?;
            let id = match at {
                Some(s) => s.id,
                None => fallback.earliest_snapshot_id().await?.unwrap_or(1),
            };
            options.insert(crate::spec::options::SCAN_SNAPSHOT_ID.to_string(), id.to_string());
        }
    }
    Ok(options)
}

/// The two branches must have the same number of columns, of the same types position by
/// position (nullability aside), as Java requires.
fn check_compatible(name: &str, branch: &str, main: &TableSchema, fallback: &TableSchema) -> Result<()> {
    let same = main.fields.len() == fallback.fields.len()
        && main
            .fields
            .iter()
            .zip(&fallback.fields)
            .all(|(m, f)| m.data_type.to_arrow() == f.data_type.to_arrow());
    if same {
        Ok(())
    } else {
        plan_err!(
            "Table {name} and its fallback branch '{branch}' ({FALLBACK_BRANCH}) have different columns: \
             both need the same column types in the same order"
        )
    }
}

/// The batch scan of `main`, plus `fallback`'s scan of every partition `main` has no live
/// file in.
pub(super) async fn scan(
    main: &PaimonTable,
    fallback: &PaimonTable,
    state: &dyn Session,
    projection: Option<&Vec<usize>>,
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let mut present = HashSet::new();
    if let Some(snapshot) = &main.snapshot {
        let live = main.meta.live_files(snapshot, |_| true).await?;
        present.extend(
            live.groups
                .keys()
                .filter(|(_, bucket)| *bucket != -2)
                .map(|(partition, _)| partition.clone()),
        );
    }
    let main_plan = main.batch_scan(state, projection, filters, limit).await?;
    let mut other = fallback.clone();
    other.skip_partitions = Some(Arc::new(present));
    let renamed = rename_columns(main, fallback, filters)?;
    let fallback_plan = other.batch_scan(state, projection, &renamed, limit).await?;
    // the fallback's columns under the main table's names
    let schema = main_plan.schema();
    let exprs = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let source = fallback_plan.schema().field(i).name().clone();
            (
                Arc::new(PhysicalColumn::new(&source, i)) as Arc<dyn datafusion::physical_expr::PhysicalExpr>,
                f.name().clone(),
            )
        })
        .collect::<Vec<_>>();
    let fallback_plan = Arc::new(ProjectionExec::try_new(exprs, fallback_plan)?);
    UnionExec::try_new(vec![main_plan, fallback_plan])
}

/// `filters` over the main table's columns, as filters over the fallback's (same positions).
fn rename_columns(main: &PaimonTable, fallback: &PaimonTable, filters: &[Expr]) -> Result<Vec<Expr>> {
    let names: BTreeMap<&str, &str> = main
        .schema
        .fields
        .iter()
        .zip(&fallback.schema.fields)
        .map(|(m, f)| (m.name.as_str(), f.name.as_str()))
        .collect();
    filters
        .iter()
        .map(|filter| {
            filter
                .clone()
                .transform(|e| match e {
                    Expr::Column(c) => match names.get(c.name.as_str()) {
                        Some(to) if *to != c.name => Ok(Transformed::yes(Expr::Column(Column::new(
                            c.relation.clone(),
                            *to,
                        )))),
                        _ => Ok(Transformed::no(Expr::Column(c))),
                    },
                    other => Ok(Transformed::no(other)),
                })
                .map(|t| t.data)
        })
        .collect()
}
