//! Filters that arrive while the plan runs: a hash join's dynamic filter on the keys its build
//! side holds (DataFusion fills it in once the build side is read). A `MERGE INTO t USING s
//! ON t.id = s.id`, or any join probing a primary-key table by its key, then reads only the
//! buckets and files that can hold those keys.
//!
//! The join still applies its own condition to every row, so narrowing here only has to keep
//! every row the filter lets through: whatever the scan returns for other keys is dropped
//! above it. Two rules keep merges exact all the same:
//! * only conjuncts on primary-key columns narrow the read (a key's versions pass or fail
//!   together, so no older version can resurface), and only on primary-key tables;
//! * buckets cut into pieces over a dense oldest run share state between their pieces
//!   (`NewerRuns`), so their files are left alone; every other split is narrowed by itself.
//!
//! The filter is taken as it stands when the partition's stream is first polled, as
//! DataFusion's Parquet scan takes it: a probe side is polled once the build side is done, so
//! the filter is complete then in a `CollectLeft` join; in a partitioned join some partitions
//! may see it earlier and narrow less, never wrongly.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, DynamicFilterPhysicalExpr, Literal};
use datafusion::physical_expr::split_conjunction;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;

use super::bucket_filter::BucketFilter;
use super::exec::ScanContext;
use super::row_selection::{KeyUnit, StatsPruning};
use super::split::{NewerRuns, Split, SplitFile};

/// Whether a filter pushed into a scan of `ctx` is one to narrow it with at run time.
pub(crate) fn accepts(ctx: &ScanContext, filter: &Arc<dyn PhysicalExpr>) -> bool {
    ctx.table.has_primary_key()
        && !ctx.with_snapshot_id
        && filter.downcast_ref::<DynamicFilterPhysicalExpr>().is_some()
}

/// The splits of one partition narrowed by `filters` as they stand now, with the context
/// their files are read with (row groups and pages pruned by the filters too, and merged
/// runs' keys filtered in the reader before the merge), and the number of files left out.
pub(crate) fn narrow(
    ctx: &Arc<ScanContext>,
    filters: &[Arc<dyn PhysicalExpr>],
    splits: Vec<Split>,
) -> (Arc<ScanContext>, Vec<Split>, usize) {
    let Some(runtime) = current_key_predicate(ctx, filters) else {
        return (Arc::clone(ctx), splits, 0);
    };
    let table = &ctx.table;
    let combined = match &ctx.predicate {
        Some(p) => Arc::new(BinaryExpr::new(
            Arc::clone(p),
            Operator::And,
            Arc::clone(&runtime),
        )) as Arc<dyn PhysicalExpr>,
        None => Arc::clone(&runtime),
    };
    let mut narrowed = ScanContext::clone(ctx);
    if let Some(p) = super::plan::pruning_predicate(table, Some(&combined)) {
        narrowed.pruning = Some(Arc::new(StatsPruning::new(table, p)));
    }
    if let Some(f) = crate::format::ValueFilter::on_keys(table, &combined) {
        narrowed.merge_key_filter = Some(Arc::new(f));
    }
    let buckets = BucketFilter::new(table, Some(&runtime));
    let files = narrowed.pruning.clone();
    let mut left_out = 0;
    let mut kept = Vec::with_capacity(splits.len());
    for mut split in splits {
        if let Some(b) = &buckets {
            if matches!(split.newer_runs, NewerRuns::InRange) && !b.matches(split.bucket, split.total_buckets)
            {
                left_out += split.file_count();
                continue;
            }
        }
        if let (Some(pruning), NewerRuns::InRange) = (&files, &split.newer_runs) {
            left_out += prune_split_files(pruning, &mut split);
            if split.sections.is_empty() {
                continue;
            }
        }
        kept.push(split);
    }
    (Arc::new(narrowed), kept, left_out)
}

/// The conjuncts of `filters` (snapshotted) on primary-key columns only, over the table's
/// columns; `None` while they say nothing.
fn current_key_predicate(
    ctx: &ScanContext,
    filters: &[Arc<dyn PhysicalExpr>],
) -> Option<Arc<dyn PhysicalExpr>> {
    let table_schema = ctx.table.arrow_schema();
    let keys = ctx.table.trimmed_primary_keys();
    let mut conjuncts: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
    for filter in filters {
        let Ok(now) = snapshot_physical_expr(Arc::clone(filter)) else {
            continue;
        };
        for conjunct in split_conjunction(&now) {
            if is_true(conjunct) {
                continue;
            }
            // columns by name onto the table's, and only key columns
            let mut only_keys = true;
            let mut any_column = false;
            let remapped = Arc::clone(conjunct).transform(|e| {
                let Some(column) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                any_column = true;
                match table_schema.index_of(column.name()) {
                    Ok(i) if keys.iter().any(|k| k.name == column.name()) => Ok(Transformed::yes(Arc::new(
                        Column::new(column.name(), i),
                    )
                        as Arc<dyn PhysicalExpr>)),
                    _ => {
                        only_keys = false;
                        Ok(Transformed::no(e))
                    }
                }
            });
            if let (Ok(remapped), true, true) = (remapped, only_keys, any_column) {
                conjuncts.push(remapped.data);
            }
        }
    }
    conjuncts
        .into_iter()
        .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::And, b)) as Arc<dyn PhysicalExpr>)
}

fn is_true(expr: &Arc<dyn PhysicalExpr>) -> bool {
    expr.downcast_ref::<Literal>()
        .is_some_and(|l| l.value() == &ScalarValue::Boolean(Some(true)))
}

/// Drops the files of `split` whose first-key range the predicate rules out (runs and
/// sections left empty go too); returns how many went.
fn prune_split_files(pruning: &StatsPruning, split: &mut Split) -> usize {
    let Some((name, _, key_type)) = &pruning.first_key else {
        return 0;
    };
    let unit = |f: &SplitFile| KeyUnit {
        rows: 0..0,
        min: f.min_key.first().and_then(|v| v.cast_to(key_type).ok()),
        max: f.max_key.first().and_then(|v| v.cast_to(key_type).ok()),
    };
    let mut dropped = 0;
    for section in &mut split.sections {
        for run in section.iter_mut() {
            let units: Vec<KeyUnit> = run.iter().map(unit).collect();
            let Some(keep) = pruning.may_match_units(name, &units, key_type) else {
                continue;
            };
            let before = run.len();
            let mut keep = keep.into_iter();
            run.retain(|_| keep.next().unwrap_or(true));
            dropped += before - run.len();
        }
        section.retain(|run| !run.is_empty());
    }
    split.sections.retain(|s| !s.is_empty());
    dropped
}
