//! The write side of a [`PaimonTable`]: the sinks of INSERT and INSERT OVERWRITE, row-level
//! DELETE/UPDATE plans, and the checks they share. The `TableProvider` methods in
//! `provider.rs` call these.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::{not_impl_err, plan_err, DFSchema, Result};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::ExecutionPlan;

use super::provider::PaimonTable;
use crate::meta::OverwriteScope;
use crate::scan::ReadView;
use crate::spec::{MergeEngine, TableOptions};
use crate::write::{AppendDmlExec, PaimonSink, WriteKind};

impl PaimonTable {
    /// Row-level DELETE (`assignments` = None) or UPDATE of an append table: deletion
    /// vectors or copy-on-write (`write::AppendDmlExec`).
    pub(super) async fn append_dml(
        &self,
        state: &dyn Session,
        filters: &[Expr],
        assignments: Option<Vec<(String, Expr)>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.view != ReadView::Table || self.read_optimized {
            return plan_err!("Cannot write to system table {}", self.name);
        }
        let schema = self.meta.latest_schema().await?;
        let options = TableOptions::parse(&schema.options)?;
        // deletion vectors mark rows without writing data files; an UPDATE or a copy-on-write
        // DELETE writes new ones
        if assignments.is_some() || !options.deletion_vectors {
            let refusal = crate::spec::options::unsupported_for_new_files(&schema.options)
                .or_else(|| crate::spec::options::rewrites_lose_row_ids(&schema.options));
            if let Some(why) = refusal {
                return not_impl_err!("Writing to table {} is not supported: {why}", self.name);
            }
        }
        let arrow_schema = schema.arrow_schema();
        let df_schema = DFSchema::try_from(arrow_schema.as_ref().clone())?;
        let predicate = match conjunction(filters.to_vec()) {
            Some(expr) => state.create_physical_expr(expr, &df_schema)?,
            None => state.create_physical_expr(datafusion::logical_expr::lit(true), &df_schema)?,
        };
        let pruning = crate::scan::pruning_predicate(&schema, Some(&predicate));
        let updates = match assignments {
            None => None,
            Some(assignments) => {
                let bucket_keys: Vec<String> = schema
                    .options
                    .get("bucket-key")
                    .map(|k| k.split(',').map(|c| c.trim().to_string()).collect())
                    .unwrap_or_default();
                let mut exprs: Vec<Arc<dyn datafusion::physical_expr::PhysicalExpr>> = Vec::new();
                for (column, _) in &assignments {
                    if schema.partition_keys.contains(column) || bucket_keys.contains(column) {
                        return plan_err!(
                            "Cannot update partition or bucket-key column '{column}' of table {}",
                            self.name
                        );
                    }
                }
                for (i, field) in arrow_schema.fields().iter().enumerate() {
                    exprs.push(match assignments.iter().find(|(c, _)| c == field.name()) {
                        Some((_, e)) => {
                            let physical = state.create_physical_expr(e.clone(), &df_schema)?;
                            Arc::new(CastExpr::new(physical, field.data_type().clone(), None))
                        }
                        None => Arc::new(Column::new(field.name(), i)),
                    });
                }
                Some(exprs)
            }
        };
        Ok(Arc::new(AppendDmlExec::new(
            self.name.clone(),
            Arc::clone(&self.meta),
            schema,
            options,
            predicate,
            pruning,
            updates,
        )))
    }

    /// A sink for this table with its latest schema; refuses `$audit_log` and append tables
    /// for row-level DML.
    pub(super) async fn sink(&self, kind: WriteKind) -> Result<Arc<PaimonSink>> {
        if self.view != ReadView::Table || self.read_optimized {
            return plan_err!("Cannot write to system table {}", self.name);
        }
        let schema = self.meta.latest_schema().await?;
        if !schema.has_primary_key() && matches!(kind, WriteKind::Delete | WriteKind::Update) {
            return not_impl_err!(
                "Row-level DELETE and UPDATE on append table {} are not supported: it has no primary key",
                self.name
            );
        }
        check_row_level_dml(&self.name, &schema, &kind)?;
        if matches!(kind, WriteKind::Delete | WriteKind::Update) {
            // (their rows are read through this table: they must be today's)
            self.check_reads_latest(
                match kind {
                    WriteKind::Delete => "DELETE FROM",
                    _ => "UPDATE",
                },
                false,
            )
            .await?;
        }
        Ok(Arc::new(PaimonSink::try_new(
            self.name.clone(),
            Arc::clone(&self.meta),
            schema,
            kind,
        )?))
    }

    /// `INSERT OVERWRITE t PARTITION (p = v, ...) <input>`: `input` yields every table column
    /// in table order, the spec's values included. The spec may leave partition columns out
    /// (Flink's dynamic partitions). As Paimon's commit does, a table with
    /// `dynamic-partition-overwrite` (the default) replaces only the partitions the rows go to,
    /// whatever the spec says, and nothing when there are none; with it off, every partition
    /// matching the spec is replaced, rows or not.
    pub async fn overwrite_partition(
        &self,
        input: Arc<dyn ExecutionPlan>,
        spec: &[(String, datafusion::common::ScalarValue)],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.meta.latest_schema().await?;
        if let Some((k, _)) = spec.iter().find(|(k, _)| !schema.partition_keys.contains(k)) {
            return plan_err!("Column '{k}' is not a partition column of table {}", self.name);
        }
        let mut values = Vec::with_capacity(schema.partition_keys.len());
        for key in &schema.partition_keys {
            let value = match spec.iter().find(|(k, _)| k == key) {
                Some((_, v)) => {
                    let target = schema
                        .field(key)
                        .map(|f| f.data_type.to_arrow())
                        .expect("partition keys are columns");
                    Some(v.cast_to(&target)?)
                }
                None => None,
            };
            values.push(value);
        }
        let kind = WriteKind::Overwrite(OverwriteScope::Partitions(vec![values]));
        Ok(Arc::new(DataSinkExec::new(
            input,
            self.sink(kind).await? as _,
            None,
        )))
    }

    /// The merged rows matching `filters` (all rows when empty), in table-column order.
    pub(super) async fn matching_rows(
        &self,
        state: &dyn Session,
        filters: &[Expr],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let scan = self.batch_scan(state, None, filters, None).await?;
        let Some(predicate) = conjunction(filters.to_vec()) else {
            return Ok(scan);
        };
        let df_schema = DFSchema::try_from(self.arrow_schema.as_ref().clone())?;
        let predicate = state.create_physical_expr(predicate, &df_schema)?;
        Ok(Arc::new(FilterExec::try_new(predicate, scan)?))
    }
}

/// Row-level DELETE needs an upsert-deletable engine, UPDATE deduplicate or partial-update
/// (semantics.md §9, Java `PrimaryKeyTableUtils.validatePKUpsertDeletable`).
pub(super) fn check_row_level_dml(
    table: &str,
    schema: &crate::spec::TableSchema,
    kind: &WriteKind,
) -> Result<()> {
    let option = |k: &str| {
        schema
            .options
            .get(k)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    };
    let engine = TableOptions::parse(&schema.options)?.merge_engine;
    match kind {
        WriteKind::Delete => {
            let deletable = match engine {
                MergeEngine::Deduplicate => true,
                MergeEngine::PartialUpdate => {
                    option("partial-update.remove-record-on-delete")
                        || schema
                            .options
                            .contains_key("partial-update.remove-record-on-sequence-group")
                }
                MergeEngine::Aggregation => option("aggregation.remove-record-on-delete"),
                MergeEngine::FirstRow => false,
            };
            if !deletable {
                return plan_err!(
                    "DELETE is not supported on table {table}: merge-engine '{}' cannot delete rows by key",
                    engine.as_str()
                );
            }
        }
        WriteKind::Update if !matches!(engine, MergeEngine::Deduplicate | MergeEngine::PartialUpdate) => {
            return plan_err!(
                "UPDATE is not supported on table {table}: merge-engine '{}' only allows INSERT",
                engine.as_str()
            );
        }
        _ => {}
    }
    Ok(())
}

/// `p1 = v1 AND p2 = v2 ...` over partition columns only, as a partition spec.
pub(super) fn partition_equalities(
    schema: &crate::spec::TableSchema,
    filters: &[Expr],
) -> Option<Vec<Option<datafusion::common::ScalarValue>>> {
    use datafusion::logical_expr::{BinaryExpr, Operator};
    if schema.partition_keys.is_empty() {
        return None;
    }
    let mut spec: Vec<Option<datafusion::common::ScalarValue>> = vec![None; schema.partition_keys.len()];
    let mut conjuncts = Vec::new();
    for f in filters {
        conjuncts.extend(
            datafusion::logical_expr::utils::split_conjunction(f)
                .into_iter()
                .cloned(),
        );
    }
    for c in conjuncts {
        let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) = c
        else {
            return None;
        };
        let (column, value) = match (left.as_ref(), right.as_ref()) {
            (Expr::Column(col), Expr::Literal(v, _)) | (Expr::Literal(v, _), Expr::Column(col)) => (col, v),
            _ => return None,
        };
        let i = schema.partition_keys.iter().position(|k| k == &column.name)?;
        let target = schema.field(&column.name)?.data_type.to_arrow();
        spec[i] = Some(value.cast_to(&target).ok()?);
    }
    Some(spec)
}
