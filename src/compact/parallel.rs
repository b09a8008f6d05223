//! `CALL sys.compact` as a plan a cluster runs in parallel: buckets split into parts by a stable
//! hash of (partition, bucket), one compaction task per part writing its files, and one task
//! committing every part's result as one COMPACT snapshot, exactly once (commit user and the
//! statement's start, as parallel writes do).
//!
//! ```text
//! PaimonCompactCommitExec      1 task: one COMPACT snapshot; `result` = true
//!   CoalescePartitionsExec
//!     PaimonCompactExec         a task per part: compacts its buckets, returns the files
//!       DataSourceExec          one row per part (the part's number), which Ballista narrows
//!                               to each task like any memory source
//! ```
//!
//! [`CompactionJob`] is the table provider whose scan is this plan: the SQL layer reads it on a
//! Ballista session, so the statement's logical plan can travel to the scheduler.

use std::fmt;
use std::sync::{Arc, LazyLock};

use arrow::array::{Array, AsArray, BinaryBuilder, BooleanArray, Int64Array, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_err, internal_err, Result};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::{CompactOutcome, CompactScope, Compaction};
use crate::meta::TableMeta;
use crate::spec::TableSchema;

/// One table's full compaction, as data every node of the plan carries.
#[derive(Debug, Clone)]
pub struct CompactionJob {
    pub(crate) table: String,
    pub(crate) meta: Arc<TableMeta>,
    pub(crate) schema: Arc<TableSchema>,
    /// `key=value` lists of the partitions to compact; `None` for all.
    pub(crate) partitions: Option<Vec<Vec<(String, String)>>>,
}

impl CompactionJob {
    fn scope(&self) -> CompactScope {
        match &self.partitions {
            None => CompactScope::All,
            Some(specs) => CompactScope::Partitions(specs.clone()),
        }
    }

    fn compaction<'a>(&'a self, context: &TaskContext) -> Compaction<'a> {
        Compaction::in_task(&self.table, &self.meta, &self.schema, context)
    }
}

/// A procedure's one-row `result` column.
fn result_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("result", DataType::Boolean, false)]))
}

static MESSAGE_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("kind", DataType::Utf8, false),
        Field::new("entry", DataType::Binary, false),
    ]))
});

static PART_SCHEMA: LazyLock<SchemaRef> =
    LazyLock::new(|| Arc::new(Schema::new(vec![Field::new("part", DataType::Int64, false)])));

fn properties(schema: SchemaRef, partitions: usize) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(schema),
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Final,
        Boundedness::Bounded,
    ))
}

impl CompactOutcome {
    fn to_message_batch(&self) -> Result<RecordBatch> {
        let mut kinds = StringBuilder::new();
        let mut entries = BinaryBuilder::new();
        for (kind, bytes) in self.message_rows()? {
            kinds.append_value(kind);
            entries.append_value(bytes);
        }
        Ok(RecordBatch::try_new(
            Arc::clone(&MESSAGE_SCHEMA),
            vec![Arc::new(kinds.finish()), Arc::new(entries.finish())],
        )?)
    }

    fn add_message_batch(&mut self, batch: &RecordBatch, table: &str) -> Result<()> {
        let what = format!("a compaction message of table {table}");
        let (Some(kinds), Some(entries)) = (
            batch.column(0).as_string_opt::<i32>(),
            batch.column(1).as_binary_opt::<i32>(),
        ) else {
            return exec_err!("{what} has columns of the wrong types");
        };
        for i in 0..batch.num_rows() {
            let kind = kinds.value(i);
            if !self.add_message_row(kind, entries.value(i), &what)? {
                return exec_err!("{what} has an unknown kind '{kind}'");
            }
        }
        Ok(())
    }
}

#[async_trait]
impl TableProvider for CompactionJob {
    fn schema(&self) -> SchemaRef {
        result_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let parts = state.config().target_partitions().max(1);
        let rows = (0..parts)
            .map(|p| {
                RecordBatch::try_new(
                    Arc::clone(&PART_SCHEMA),
                    vec![Arc::new(Int64Array::from(vec![p as i64]))],
                )
                .map(|b| vec![b])
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let source = MemorySourceConfig::try_new_exec(&rows, Arc::clone(&PART_SCHEMA), None)?;
        let job = Arc::new(self.clone());
        let compact = Arc::new(PaimonCompactExec::new(source, Arc::clone(&job), parts));
        let commit =
            PaimonCompactCommitExec::for_new_statement(Arc::new(CoalescePartitionsExec::new(compact)), job);
        Ok(Arc::new(commit))
    }
}

/// Compacts the parts named by its input rows (each row a part number of `parts`).
#[derive(Debug)]
pub struct PaimonCompactExec {
    input: Arc<dyn ExecutionPlan>,
    job: Arc<CompactionJob>,
    parts: usize,
    properties: Arc<PlanProperties>,
}

impl PaimonCompactExec {
    pub(crate) fn new(input: Arc<dyn ExecutionPlan>, job: Arc<CompactionJob>, parts: usize) -> Self {
        let partitions = input.output_partitioning().partition_count();
        PaimonCompactExec {
            input,
            job,
            parts,
            properties: properties(Arc::clone(&MESSAGE_SCHEMA), partitions),
        }
    }

    pub(crate) fn job(&self) -> (&Arc<CompactionJob>, usize) {
        (&self.job, self.parts)
    }
}

impl DisplayAs for PaimonCompactExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PaimonCompactExec: table={}, parts={}",
            self.job.table, self.parts
        )
    }
}

impl ExecutionPlan for PaimonCompactExec {
    fn name(&self) -> &str {
        "PaimonCompactExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::new(input, Arc::clone(&self.job), self.parts))),
            _ => internal_err!("PaimonCompactExec takes one input"),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let (job, parts) = (Arc::clone(&self.job), self.parts);
        let stream = futures::stream::once(async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let mut outcome = CompactOutcome::default();
            let compaction = job.compaction(&context);
            for batch in &batches {
                let Some(numbers) = batch.column(0).as_primitive_opt::<Int64Type>() else {
                    return internal_err!("PaimonCompactExec takes part numbers");
                };
                for part in numbers.iter().flatten() {
                    if let Some(done) = compaction.full_part(&job.scope(), part as usize, parts).await? {
                        outcome.before.extend(done.before);
                        outcome.after.extend(done.after);
                        outcome.changelog.extend(done.changelog);
                        outcome.index_added.extend(done.index_added);
                        outcome.index_removed.extend(done.index_removed);
                    }
                }
            }
            outcome.to_message_batch()
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&MESSAGE_SCHEMA),
            stream,
        )))
    }
}

/// Commits every part's compaction as one COMPACT snapshot, exactly once.
#[derive(Debug)]
pub struct PaimonCompactCommitExec {
    input: Arc<dyn ExecutionPlan>,
    job: Arc<CompactionJob>,
    commit_user: String,
    started_millis: i64,
    properties: Arc<PlanProperties>,
}

impl PaimonCompactCommitExec {
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        job: Arc<CompactionJob>,
        commit_user: String,
        started_millis: i64,
    ) -> Self {
        PaimonCompactCommitExec {
            input,
            job,
            commit_user,
            started_millis,
            properties: properties(result_schema(), 1),
        }
    }

    fn for_new_statement(input: Arc<dyn ExecutionPlan>, job: Arc<CompactionJob>) -> Self {
        Self::new(
            input,
            job,
            uuid::Uuid::new_v4().to_string(),
            crate::meta::now_millis(),
        )
    }

    pub(crate) fn job(&self) -> (&Arc<CompactionJob>, &str, i64) {
        (&self.job, &self.commit_user, self.started_millis)
    }
}

impl DisplayAs for PaimonCompactCommitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PaimonCompactCommitExec: table={}, commit_user={}",
            self.job.table, self.commit_user
        )
    }
}

impl ExecutionPlan for PaimonCompactCommitExec {
    fn name(&self) -> &str {
        "PaimonCompactCommitExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::new(
                input,
                Arc::clone(&self.job),
                self.commit_user.clone(),
                self.started_millis,
            ))),
            _ => internal_err!("PaimonCompactCommitExec takes one input"),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("PaimonCompactCommitExec has one partition, asked for {partition}");
        }
        let inputs = (0..self.input.output_partitioning().partition_count())
            .map(|p| self.input.execute(p, Arc::clone(&context)))
            .collect::<Result<Vec<_>>>()?;
        let job = Arc::clone(&self.job);
        let (user, started) = (self.commit_user.clone(), self.started_millis);
        let stream = futures::stream::once(async move {
            let mut outcome = CompactOutcome::default();
            for mut input in inputs {
                while let Some(batch) = input.next().await {
                    outcome.add_message_batch(&batch?, &job.table)?;
                }
            }
            job.compaction(&context)
                .commit_full(outcome, &user, started)
                .await?;
            Ok(RecordBatch::try_new(
                result_schema(),
                vec![Arc::new(BooleanArray::from(vec![true])) as Arc<dyn Array>],
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(result_schema(), stream)))
    }
}
