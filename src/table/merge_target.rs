//! The target of a `MERGE INTO` (`sql::merge`): a table provider DataFusion inserts the
//! statement's rows into, with the table's columns and one more, each row's kind (+I, +U, -D).
//! Its sink writes them like any write to the table, in one commit.

use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{not_impl_err, plan_err, Result};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{Distribution, EquivalenceProperties, Partitioning};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, PlanProperties};
use futures::StreamExt;

use super::writes::check_row_level_dml;
use super::PaimonTable;
use crate::write::{AppendMergeBase, WriteKind, MERGE_KIND_COLUMN, ROW_ADDRESS_COLUMN};

/// A table as the target of one MERGE.
#[derive(Debug)]
pub(crate) struct MergeTarget {
    table: PaimonTable,
    schema: SchemaRef,
    kind: WriteKind,
    /// The rows a MERGE that changes an append table reads (`with_row_addresses`).
    rows: Option<Arc<dyn TableProvider>>,
}

impl PaimonTable {
    /// A row-level write (`statement`) reads the table as it is: not a snapshot of the past
    /// the session travelled to with a `scan.*` option (it would write stale rows back), nor
    /// (`ranges`: for a statement that reads the table through SQL) a range of changes. UPDATE
    /// and DELETE read the latest state under an incremental read option. (A table that moved
    /// on since the statement was planned is another writer's commit, not time travel.)
    pub(crate) async fn check_reads_latest(&self, statement: &str, ranges: bool) -> Result<()> {
        if ranges && self.incremental.is_some() {
            return plan_err!(
                "{statement} {} reads the table as it is, but this session reads a range of changes: RESET the session's incremental-between options first",
                self.name
            );
        }
        match &self.time_travel {
            Some(option) => plan_err!(
                "{statement} {} reads the table as it is, but this session reads snapshot {} by '{option}': RESET paimon.{option} first",
                self.name,
                self.snapshot.as_ref().map_or("none".to_string(), |s| s.id.to_string())
            ),
            None => Ok(()),
        }
    }

    /// The schema this table is read with.
    pub(crate) fn schema_ref(&self) -> &crate::spec::TableSchema {
        &self.schema
    }

    /// The merge engine of this table.
    pub(crate) fn engine_kind(&self) -> crate::spec::MergeEngine {
        self.options.merge_engine
    }

    /// This table as the target of a MERGE whose clauses delete rows (`deletes`): refused
    /// where our DELETE would be (an engine that cannot delete by key). Updates go to every
    /// engine, which applies its own semantics to them (first-row keeps the first row,
    /// aggregation aggregates the values set). An append table whose content the MERGE
    /// rewrites (`rewrite`) replaces every file of the snapshot read.
    pub(crate) async fn merge_target(&self, deletes: bool, rewrite: bool) -> Result<MergeTarget> {
        if self.view != crate::scan::ReadView::Table || self.read_optimized {
            return plan_err!("Cannot MERGE INTO system table {}", self.name);
        }
        self.check_reads_latest("MERGE INTO", true).await?;
        let kind = if self.schema.has_primary_key() {
            if deletes {
                check_row_level_dml(&self.name, &self.schema, &WriteKind::Delete)?;
            }
            WriteKind::Merge
        } else if rewrite {
            if let Some(why) = crate::spec::options::rewrites_lose_row_ids(&self.schema.options) {
                return not_impl_err!("MERGE INTO table {} is not supported: {why}", self.name);
            }
            if let Some(why) = crate::spec::options::unsupported_for_new_files(&self.schema.options) {
                return not_impl_err!("MERGE INTO table {} is not supported: {why}", self.name);
            }
            let files = match &self.snapshot {
                Some(snapshot) => self
                    .meta
                    .live_files(snapshot, |_| true)
                    .await?
                    .entries()
                    .cloned()
                    .collect(),
                None => vec![],
            };
            WriteKind::MergeRewrite(Arc::new(AppendMergeBase {
                files,
                snapshot_id: self.snapshot.as_ref().map(|s| s.id),
                deletion_vectors: self.options.deletion_vectors,
            }))
        } else {
            WriteKind::Merge
        };
        let mut fields: Vec<Field> = self
            .arrow_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        let rows = match &kind {
            WriteKind::MergeRewrite(base) => {
                fields.push(Field::new(ROW_ADDRESS_COLUMN, DataType::Int64, true));
                Some(Arc::new(self.with_row_addresses(base)?) as Arc<dyn TableProvider>)
            }
            _ => None,
        };
        fields.push(Field::new(MERGE_KIND_COLUMN, DataType::Int8, false));
        Ok(MergeTarget {
            table: self.clone(),
            schema: Arc::new(Schema::new(fields)),
            kind,
            rows,
        })
    }

    /// This table read with each row's address in the files of `base` as a last column
    /// (`ROW_ADDRESS_COLUMN`), for a MERGE that changes rows of an append table.
    fn with_row_addresses(&self, base: &AppendMergeBase) -> Result<PaimonTable> {
        let mut schema = (*self.schema).clone();
        schema.fields.push(crate::spec::DataField {
            id: crate::spec::ROW_ID_FIELD_ID,
            name: ROW_ADDRESS_COLUMN.to_string(),
            data_type: crate::spec::parse_type_string("BIGINT NOT NULL")?,
            description: None,
        });
        let mut table = PaimonTable::try_new(
            self.name.clone(),
            Arc::clone(&self.meta),
            self.snapshot.clone(),
            Arc::new(schema),
            self.view,
        )?;
        table.definition = None;
        table.row_addresses = Some(Arc::new(base.first_addresses()));
        Ok(table)
    }
}

/// Gives every file of `splits` its first row address (the scan adds each row's position in
/// the file, as it does to a row-tracking file's first row id).
pub(super) fn address_rows(
    table: &str,
    addresses: &std::collections::HashMap<String, i64>,
    splits: &mut [crate::scan::Split],
) -> Result<()> {
    for file in splits
        .iter_mut()
        .flat_map(|s| s.sections.iter_mut())
        .flatten()
        .flatten()
    {
        let Some(first) = addresses.get(&file.file_name) else {
            return datafusion::common::exec_err!(
                "MERGE INTO {table}: file {} was not live when the statement was planned",
                file.file_name
            );
        };
        file.first_row_id = Some(*first);
    }
    Ok(())
}

impl MergeTarget {
    /// The target's rows with their addresses, for a MERGE that changes rows of an append
    /// table; `None` for the other MERGEs (they read the table itself).
    pub(crate) fn addressed_rows(&self) -> Option<Arc<dyn TableProvider>> {
        self.rows.clone()
    }

    /// The table, when this MERGE can be planned on another process from it alone (it writes
    /// rows with their kinds; a MERGE that rewrites append files carries what it read).
    pub(crate) fn sendable(&self) -> Option<&PaimonTable> {
        matches!(self.kind, WriteKind::Merge).then_some(&self.table)
    }

    /// The target of a MERGE into `table` that writes rows with their kinds (as
    /// [`PaimonTable::merge_target`] plans it for primary-key tables), for a decoded plan.
    pub(crate) fn writing_kinds(table: PaimonTable) -> MergeTarget {
        let mut fields: Vec<Field> = table
            .arrow_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        fields.push(Field::new(MERGE_KIND_COLUMN, DataType::Int8, false));
        MergeTarget {
            table,
            schema: Arc::new(Schema::new(fields)),
            kind: WriteKind::Merge,
            rows: None,
        }
    }

    /// Whether the MERGE marks changed rows in deletion vectors (an append table with
    /// `deletion-vectors.enabled`) rather than rewriting their files.
    pub(crate) fn marks_rows(&self) -> bool {
        matches!(&self.kind, WriteKind::MergeRewrite(base) if base.deletion_vectors)
    }
}

#[async_trait]
impl TableProvider for MergeTarget {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan_err!(
            "The MERGE target of table {} is written, never read",
            self.table.name
        )
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let sink = self.table.sink(self.kind.clone()).await?;
        Ok(Arc::new(MergeSinkExec::new(input, sink)))
    }
}

use crate::write::merge_counts_schema;

/// The DML node's output schema for a MERGE (see [`MergeSinkExec`]).
pub(crate) fn merge_output_schema() -> Result<datafusion::common::DFSchemaRef> {
    Ok(Arc::new(datafusion::common::DFSchema::try_from(
        merge_counts_schema().as_ref().clone(),
    )?))
}

/// Writes a MERGE's rows through the table's sink and reports what they were: each row's kind
/// is counted on its way to the sink (one pass over the kind column per batch).
#[derive(Debug)]
pub(crate) struct MergeSinkExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<crate::write::PaimonSink>,
    properties: Arc<PlanProperties>,
}

impl MergeSinkExec {
    pub(crate) fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    pub(crate) fn sink(&self) -> &Arc<crate::write::PaimonSink> {
        &self.sink
    }
}

impl MergeSinkExec {
    fn new(input: Arc<dyn ExecutionPlan>, sink: Arc<crate::write::PaimonSink>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(merge_counts_schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        MergeSinkExec {
            input,
            sink,
            properties,
        }
    }
}

impl DisplayAs for MergeSinkExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "MergeSinkExec: ")?;
        DisplayAs::fmt_as(self.sink.as_ref(), t, f)
    }
}

impl ExecutionPlan for MergeSinkExec {
    fn name(&self) -> &str {
        "MergeSinkExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> Result<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> Result<datafusion::common::tree_node::TreeNodeRecursion> {
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match &children[..] {
            [input] => Ok(Arc::new(MergeSinkExec::new(
                Arc::clone(input),
                Arc::clone(&self.sink),
            ))),
            _ => datafusion::common::internal_err!("MergeSinkExec has one child"),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return datafusion::common::internal_err!(
                "MergeSinkExec has one partition, asked for {partition}"
            );
        }
        let input = self.input.execute(0, Arc::clone(&context))?;
        let input_schema = input.schema();
        let counts = Arc::new(std::sync::Mutex::new([0u64; 3]));
        let counted = {
            let counts = Arc::clone(&counts);
            input.map(move |batch| {
                let batch = batch?;
                let kinds = batch.column(batch.num_columns() - 1);
                let kinds = arrow::compute::cast(kinds, &DataType::Int8)?;
                let mut c = counts.lock().expect("counts lock is never poisoned");
                crate::write::count_merge_kinds(kinds.as_primitive::<arrow::datatypes::Int8Type>(), &mut c);
                Ok(batch)
            })
        };
        let counted: SendableRecordBatchStream =
            Box::pin(RecordBatchStreamAdapter::new(input_schema, counted));
        let sink = Arc::clone(&self.sink);
        let stream = futures::stream::once(async move {
            datafusion::datasource::sink::DataSink::write_all(sink.as_ref(), counted, &context).await?;
            let [updated, deleted, inserted] = *counts.lock().expect("counts lock is never poisoned");
            crate::write::merge_counts_batch([updated, deleted, inserted])
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            merge_counts_schema(),
            stream,
        )))
    }
}
