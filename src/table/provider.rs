//! `PaimonTable`: a `TableProvider` reading one snapshot of a table with merge-on-read.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{internal_err, not_impl_err, plan_err, DFSchema, Result};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;

use datafusion::datasource::sink::DataSinkExec;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_plan::projection::ProjectionExec;

use crate::changelog::CHANGELOG_SNAPSHOT_ID;
use crate::merge::MergeEngineSpec;
use crate::meta::{OverwriteScope, TableMeta};
use crate::scan::incremental::IncrementalRange;
use crate::scan::{
    list_type, plan_scan, spread_over_partitions, PaimonScanExec, PlanRequest, ReadLayout, ReadView,
    ScanContext, StatsPruning,
};
use crate::spec::{MergeEngine, Snapshot, TableOptions, TableSchema};
use crate::write::WriteKind;

use super::origin::{ScanKind, ScanOrigin};
use super::writes::partition_equalities;

mod change_scans;

/// A table (or its `$audit_log` / `$binlog` view) pinned to one snapshot, or reading the
/// changes between two snapshots (`incremental-between*` read options).
#[derive(Debug, Clone)]
pub struct PaimonTable {
    pub(super) name: String,
    pub(super) meta: Arc<TableMeta>,
    pub(super) snapshot: Option<Snapshot>,
    pub(super) schema: Arc<TableSchema>,
    pub(super) options: TableOptions,
    pub(super) arrow_schema: SchemaRef,
    pub(super) view: ReadView,
    /// Reads the changes of this range instead of the snapshot.
    pub(super) incremental: Option<IncrementalRange>,
    /// `$changelog`: after-images are acceptable where the start state expired.
    pub(super) allow_after_only: bool,
    /// `$ro`: read the top level only, without merging (`scan::PlanRequest::read_optimized`).
    pub(super) read_optimized: bool,
    /// Scans have a single output partition: the start state of a `$changelog` read of a
    /// table rebuilt by the Ballista codecs (the normalize takes the whole change stream).
    pub(super) single_partition: bool,
    /// Rebuilt by the Ballista codecs on a scheduler: batch and incremental scans come as
    /// file groups Ballista narrows to each task's splits (`distributed::split_groups`).
    pub(super) distributed: bool,
    /// The Flink `CREATE TABLE` of the table (`SHOW CREATE TABLE`); `None` for system tables.
    pub(super) definition: Option<String>,
    /// `scan.fallback-branch`: batch reads take the partitions this table lacks from it.
    pub(super) fallback: Option<Arc<PaimonTable>>,
    /// Partitions (serialized) a scan leaves out: those of the main branch, when this table is
    /// read as another's fallback.
    pub(super) skip_partitions: Option<Arc<std::collections::HashSet<Vec<u8>>>>,
    /// The snapshot read was chosen by a time-travel option (`scan.snapshot-id`, ...), not as
    /// the latest one: row-level writes refuse it (`check_reads_latest`).
    pub(super) time_travel: Option<String>,
    /// A MERGE's read of an append table (`merge_target`): each file's first row address by
    /// file name; the last column (`write::ROW_ADDRESS_COLUMN`) holds each row's address.
    pub(super) row_addresses: Option<Arc<HashMap<String, i64>>>,
}

impl PaimonTable {
    /// A table read at `snapshot` (None: the table has no snapshot yet) with `schema`.
    pub(crate) fn try_new(
        name: String,
        meta: Arc<TableMeta>,
        snapshot: Option<Snapshot>,
        schema: Arc<TableSchema>,
        view: ReadView,
    ) -> Result<Self> {
        let options = TableOptions::parse(&schema.options)?;
        let mut fields: Vec<Field> = Vec::new();
        if view != ReadView::Table {
            fields.push(Field::new("rowkind", ArrowType::Utf8, false));
        }
        // Columns are reported nullable so that NOT NULL violations reach the sink, which
        // names the table and column; the sink enforces the Paimon schema's nullability.
        fields.extend(schema.fields.iter().map(|f| {
            let field = f.to_arrow_field().with_nullable(true);
            match view {
                ReadView::Binlog => field.with_data_type(list_type(&f.data_type.to_arrow())),
                _ => field,
            }
        }));
        if view == ReadView::Changelog {
            fields.push(Field::new(CHANGELOG_SNAPSHOT_ID, ArrowType::Int64, false));
        }
        let definition =
            (view == ReadView::Table).then(|| super::definition::create_table_statement(&name, &schema));
        Ok(PaimonTable {
            meta,
            snapshot,
            schema,
            options,
            arrow_schema: Arc::new(Schema::new(fields)),
            view,
            incremental: None,
            allow_after_only: false,
            read_optimized: false,
            single_partition: false,
            distributed: false,
            definition,
            fallback: None,
            skip_partitions: None,
            time_travel: None,
            row_addresses: None,
            name,
        })
    }

    /// `$ro`: the read-optimized view (top-level files, no merge; read-only).
    pub(crate) fn read_optimized(self) -> Self {
        PaimonTable {
            read_optimized: true,
            definition: None,
            ..self
        }
    }

    /// `$row_tracking`: the table's columns, then each row's `_ROW_ID` and `_SEQUENCE_NUMBER`
    /// (tables with `row-tracking.enabled`).
    pub(crate) fn with_row_tracking(self) -> Result<Self> {
        let enabled = self
            .schema
            .options
            .get("row-tracking.enabled")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if !enabled {
            return datafusion::common::plan_err!(
                "Table {} does not track rows: $row_tracking needs 'row-tracking.enabled' = 'true'",
                self.name.split('$').next().unwrap_or(&self.name)
            );
        }
        let mut schema = (*self.schema).clone();
        let bigint = crate::spec::parse_type_string("BIGINT NOT NULL")?;
        for (id, name) in [
            (crate::spec::ROW_ID_FIELD_ID, crate::spec::ROW_ID),
            (
                crate::spec::SEQUENCE_NUMBER_FIELD_ID,
                crate::spec::SEQUENCE_NUMBER,
            ),
        ] {
            schema.fields.push(crate::spec::DataField {
                id,
                name: name.to_string(),
                data_type: bigint.clone(),
                description: None,
            });
        }
        let mut table =
            PaimonTable::try_new(self.name, self.meta, self.snapshot, Arc::new(schema), self.view)?
                .with_incremental(self.incremental);
        table.definition = None;
        Ok(table)
    }

    /// `$changelog` in the degraded after-only mode (see `changelog::ALLOW_AFTER_ONLY`).
    pub(crate) fn with_after_only(self, allow: bool) -> Self {
        PaimonTable {
            allow_after_only: allow,
            ..self
        }
    }

    /// Reads the changes of `range` instead of the snapshot (DML still uses the snapshot).
    pub(crate) fn with_incremental(self, range: Option<IncrementalRange>) -> Self {
        PaimonTable {
            incremental: range,
            ..self
        }
    }

    /// `db.table` (plus `$audit_log` / `$binlog` for the views).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The snapshot read, if any.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// Read layout and output mapping for a projection of the provider schema; `all_columns`
    /// reads every column whatever the projection (diffs compare whole rows).
    fn layout_for(
        &self,
        projection: Option<&Vec<usize>>,
        all_columns: bool,
    ) -> (ReadLayout, Vec<usize>, Vec<usize>, SchemaRef) {
        let offset = usize::from(self.view != ReadView::Table);
        let all: Vec<usize> = (0..self.arrow_schema.fields().len()).collect();
        let projection = projection.unwrap_or(&all);
        let wanted: Vec<usize> = projection
            .iter()
            .filter(|i| **i >= offset)
            .map(|i| i - offset)
            // `$changelog`'s snapshot id is not a stored column
            .filter(|i| *i < self.schema.fields.len())
            .collect();
        let is_pk = self.schema.has_primary_key();
        let key_names: Vec<String> = self
            .schema
            .trimmed_primary_keys()
            .iter()
            .map(|f| f.name.clone())
            .collect();
        // Engines that merge values need every column (sequence fields and groups, aggregates).
        let merges_values = all_columns
            || is_pk
                && (matches!(
                    self.options.merge_engine,
                    MergeEngine::PartialUpdate | MergeEngine::Aggregation
                ) || !self.options.sequence_fields.is_empty());
        // Layout: the wanted columns plus (for PK tables) the key columns, in schema order.
        let layout_fields: Vec<usize> = (0..self.schema.fields.len())
            .filter(|i| {
                merges_values
                    || wanted.contains(i)
                    || (is_pk && key_names.contains(&self.schema.fields[*i].name))
            })
            .collect();
        let layout = ReadLayout::new(
            layout_fields
                .iter()
                .map(|i| self.schema.fields[*i].clone())
                .collect(),
            is_pk,
        );
        let pos = |field_index: usize| {
            layout_fields
                .iter()
                .position(|x| *x == field_index)
                .expect("wanted columns are in the layout")
        };
        let output_columns: Vec<usize> = wanted.iter().map(|i| pos(*i)).collect();
        let key_indices: Vec<usize> = if is_pk {
            key_names
                .iter()
                .filter_map(|k| self.schema.fields.iter().position(|f| &f.name == k))
                .map(pos)
                .collect()
        } else {
            vec![]
        };
        let output_schema = Arc::new(
            self.arrow_schema
                .project(projection)
                .expect("projection indices come from DataFusion"),
        );
        (layout, output_columns, key_indices, output_schema)
    }
}

#[async_trait]
impl TableProvider for PaimonTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.arrow_schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// `SHOW CREATE TABLE`: the Flink statement that creates this table (not for system tables).
    fn get_table_definition(&self) -> Option<&str> {
        self.definition.as_deref()
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        // Filters only prune files; DataFusion re-applies them after the merge.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let kind = match insert_op {
            InsertOp::Append => WriteKind::Insert,
            InsertOp::Overwrite => WriteKind::Overwrite(OverwriteScope::Table),
            InsertOp::Replace => return not_impl_err!("REPLACE INTO table {} is not supported", self.name),
        };
        Ok(Arc::new(DataSinkExec::new(
            input,
            self.sink(kind).await? as _,
            None,
        )))
    }

    async fn delete_from(&self, state: &dyn Session, filters: Vec<Expr>) -> Result<Arc<dyn ExecutionPlan>> {
        // Without WHERE, Paimon truncates: one OVERWRITE snapshot removing every file.
        let kind = if filters.is_empty() {
            WriteKind::Truncate
        } else if let Some(spec) = partition_equalities(&self.schema, &filters) {
            // Deleting whole partitions is metadata-only: they are dropped (semantics.md §9).
            WriteKind::DropPartitions(OverwriteScope::Partitions(vec![spec]))
        } else {
            WriteKind::Delete
        };
        if matches!(kind, WriteKind::Delete) && !self.schema.has_primary_key() {
            return self.append_dml(state, &filters, None).await;
        }
        let sink = self.sink(kind).await?;
        let rows = self.matching_rows(state, &filters).await?;
        Ok(Arc::new(DataSinkExec::new(rows, sink as _, None)))
    }

    /// `TRUNCATE TABLE`: as Paimon truncates, one OVERWRITE snapshot removing every file.
    async fn truncate(&self, state: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        self.delete_from(state, vec![]).await
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !self.schema.has_primary_key() {
            return self.append_dml(state, &filters, Some(assignments)).await;
        }
        let sink = self.sink(WriteKind::Update).await?;
        for (column, _) in &assignments {
            if self.schema.primary_keys.contains(column) || self.schema.partition_keys.contains(column) {
                return plan_err!(
                    "Cannot update primary key or partition column '{column}' of table {}",
                    self.name
                );
            }
        }
        let rows = self.matching_rows(state, &filters).await?;
        let df_schema = DFSchema::try_from(self.arrow_schema.as_ref().clone())?;
        let mut exprs: Vec<(Arc<dyn datafusion::physical_expr::PhysicalExpr>, String)> = Vec::new();
        for (i, field) in self.arrow_schema.fields().iter().enumerate() {
            let expr: Arc<dyn datafusion::physical_expr::PhysicalExpr> =
                match assignments.iter().find(|(c, _)| c == field.name()) {
                    Some((_, e)) => {
                        let physical = state.create_physical_expr(e.clone(), &df_schema)?;
                        Arc::new(CastExpr::new(physical, field.data_type().clone(), None))
                    }
                    None => Arc::new(Column::new(field.name(), i)),
                };
            exprs.push((expr, field.name().clone()));
        }
        let projected = Arc::new(ProjectionExec::try_new(exprs, rows)?);
        Ok(Arc::new(DataSinkExec::new(projected, sink as _, None)))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.view == ReadView::Changelog {
            return self.changelog_scan(state, projection, filters).await;
        }
        let plan = match &self.incremental {
            Some(range) => {
                self.incremental_scan(state, range, projection, filters, limit)
                    .await?
            }
            None => match &self.fallback {
                Some(fallback) => {
                    super::fallback::scan(self, fallback, state, projection, filters, limit).await?
                }
                None => self.batch_scan(state, projection, filters, limit).await?,
            },
        };
        #[cfg(feature = "ballista")]
        if self.distributed && plan.properties().partitioning.partition_count() > 1 {
            let store = crate::distributed::store_url(self.meta.io().root_url())?;
            return Ok(crate::distributed::split_groups(
                plan,
                None,
                state.task_ctx(),
                store,
            ));
        }
        Ok(plan)
    }
}

impl PaimonTable {
    /// Merge-on-read of the snapshot.
    pub(super) async fn batch_scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (layout, output_columns, key_indices, output_schema) = self.layout_for(projection, false);
        let Some(snapshot) = &self.snapshot else {
            return Ok(Arc::new(EmptyExec::new(output_schema)));
        };
        let predicate = self.pruning_predicate(state, filters)?;
        let plan = plan_scan(PlanRequest {
            meta: &self.meta,
            snapshot,
            schema: &self.schema,
            options: &self.options,
            predicate: predicate.clone(),
            read_optimized: self.read_optimized,
            skip_partitions: self.skip_partitions.as_deref(),
        })
        .await?;
        let mut plan = plan;
        if let Some(addresses) = &self.row_addresses {
            super::merge_target::address_rows(&self.name, addresses, &mut plan.splits)?;
        }
        let pruning = crate::scan::pruning_predicate(&self.schema, predicate.as_ref())
            .map(|p| Arc::new(StatsPruning::new(&self.schema, p)));
        // Other views keep retractions or reshape values: their rows stay as read.
        let value_filter = match (&predicate, self.view) {
            (Some(p), ReadView::Table) => crate::format::ValueFilter::new(&self.schema, p).map(Arc::new),
            _ => None,
        };
        // Every view: a key's versions pass or fail together, so no view loses a change.
        let key_filter = match &predicate {
            Some(p) if self.schema.has_primary_key() => {
                crate::format::ValueFilter::on_keys(&self.schema, p).map(Arc::new)
            }
            _ => None,
        };
        let ctx = ScanContext {
            table_io: self.meta.io().clone(),
            engine: self.merge_engine(&layout)?,
            lookup_read: crate::scan::lookup_read(&self.schema, &self.options),
            layout: Arc::new(layout),
            file_schemas: plan.file_schemas,
            key_indices,
            output_columns,
            with_rowkind: self.view != ReadView::Table && projection.is_none_or(|p| p.contains(&0)),
            keep_retracts: self.view != ReadView::Table,
            lists: self.view == ReadView::Binlog,
            with_snapshot_id: self.view == ReadView::Changelog,
            output_schema,
            pruning,
            value_filter,
            key_filter,
            merge_key_filter: None,
            blobs: crate::scan::BlobRead::of(&self.schema, &self.options),
            table: Arc::clone(&self.schema),
            predicate,
        };
        let target_partitions = self.target_partitions(state);
        let first_key = self.schema.trimmed_primary_keys().first().map(|f| (*f).clone());
        let splits = spread_over_partitions(plan.splits, target_partitions, &ctx, first_key.as_ref()).await?;
        Ok(Arc::new(
            PaimonScanExec::new(
                self.name.clone(),
                Some(snapshot.id),
                if self.schema.has_primary_key() {
                    self.options.merge_engine.as_str()
                } else {
                    "none (append table)"
                },
                ctx,
                splits,
                target_partitions,
                limit,
                plan.files_pruned,
            )
            .with_files_skipped_by_index(plan.index_pruned)
            .with_origin(self.origin(ScanKind::Batch, None, projection, filters, limit)),
        ))
    }

    /// This read and the scan's arguments, for a node to remember (`origin.rs`).
    fn origin(
        &self,
        kind: ScanKind,
        range: Option<&IncrementalRange>,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Arc<dyn std::any::Any + Send + Sync> {
        let mut table = self.clone();
        if let Some(range) = range {
            table.incremental = Some(range.clone());
        }
        Arc::new(ScanOrigin {
            table,
            kind,
            projection: projection.cloned(),
            filters: filters.to_vec(),
            limit,
        })
    }

    /// Output partitions of a scan: the session's target, or one (`single_partition`, and
    /// `$changelog` reads of distributed tables).
    fn target_partitions(&self, state: &dyn Session) -> usize {
        if self.single_partition || (self.distributed && self.view == ReadView::Changelog) {
            1
        } else {
            state.config().target_partitions()
        }
    }

    /// Scans in the shape Ballista distributes (see the field).
    #[cfg(feature = "ballista")]
    pub(crate) fn for_distribution(self) -> Self {
        PaimonTable {
            distributed: true,
            ..self
        }
    }

    /// The node `origin` describes, planned again (in another process) through `state`.
    #[cfg(feature = "ballista")]
    pub(crate) async fn rescan(
        &self,
        state: &dyn Session,
        origin: &ScanOrigin,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = origin.projection.as_ref();
        match (origin.kind, &self.incremental) {
            (ScanKind::Batch, _) => {
                self.batch_scan(state, projection, &origin.filters, origin.limit)
                    .await
            }
            (ScanKind::Incremental, Some(range)) => {
                self.incremental_scan(state, range, projection, &origin.filters, origin.limit)
                    .await
            }
            (ScanKind::Incremental, None) => {
                internal_err!("incremental scan of {} without a range", self.name)
            }
        }
    }

    /// The table's metadata.
    pub(crate) fn meta(&self) -> &Arc<TableMeta> {
        &self.meta
    }

    /// The read schema.
    pub(crate) fn table_schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    /// The pushed-down filters usable for pruning, over the table's stored columns.
    fn pruning_predicate(
        &self,
        state: &dyn Session,
        filters: &[Expr],
    ) -> Result<Option<Arc<dyn datafusion::physical_expr::PhysicalExpr>>> {
        if self.view == ReadView::Binlog {
            // `$binlog` columns are arrays: their filters say nothing about stored values.
            return Ok(None);
        }
        let table_schema = self.schema.arrow_schema();
        // Filters on `rowkind` (audit log) are not about stored columns; skip them for pruning.
        let usable: Vec<Expr> = filters
            .iter()
            .filter(|f| {
                f.column_refs()
                    .iter()
                    .all(|c| table_schema.index_of(c.name()).is_ok())
            })
            .cloned()
            .collect();
        Ok(match conjunction(usable) {
            Some(expr) => {
                let df_schema = DFSchema::try_from(table_schema.as_ref().clone())?;
                state.create_physical_expr(expr, &df_schema).ok()
            }
            None => None,
        })
    }

    /// The merge engine over `layout` (primary-key tables).
    fn merge_engine(&self, layout: &ReadLayout) -> Result<Option<Arc<MergeEngineSpec>>> {
        if !self.schema.has_primary_key() {
            return Ok(None);
        }
        let columns = layout.fields.iter().map(|f| f.name.as_str());
        let spec = MergeEngineSpec::for_columns(&self.name, &self.schema, columns)?;
        Ok(Some(Arc::new(spec)))
    }
}

/// `plan` with only the columns `projection` picks (all when None), by index.
pub(crate) fn project(
    plan: Arc<dyn ExecutionPlan>,
    projection: Option<&Vec<usize>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Some(projection) = projection else {
        return Ok(plan);
    };
    let schema = plan.schema();
    let exprs = projection
        .iter()
        .map(|&i| {
            let name = schema.field(i).name().clone();
            (
                Arc::new(Column::new(&name, i)) as Arc<dyn datafusion::physical_expr::PhysicalExpr>,
                name,
            )
        })
        .collect::<Vec<_>>();
    Ok(Arc::new(ProjectionExec::try_new(exprs, plan)?))
}
