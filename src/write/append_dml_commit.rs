//! The committer of a row-level DELETE or UPDATE of an append table split over tasks (a
//! cluster): each [`AppendDmlExec`] task rewrites or marks the files of its share of the
//! buckets and returns them as commit messages; this one task commits them as one snapshot,
//! exactly once (commit user and the statement's start, as `PaimonCommitExec`).
//!
//! ```text
//! AppendDmlCommitExec      1 task: one snapshot, exactly once
//!   CoalescePartitionsExec
//!     AppendDmlExec        parts=n: the buckets of part i (a stable hash of partition and bucket)
//! ```

use std::fmt;
use std::sync::Arc;

use arrow::array::{RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::TryStreamExt;

use super::append_dml::Job;
use super::commit_message::WrittenFiles;
use super::parallel::properties;

/// Commits the parts of an [`AppendDmlExec`](super::AppendDmlExec) as one snapshot.
#[derive(Debug)]
pub struct AppendDmlCommitExec {
    input: Arc<dyn ExecutionPlan>,
    job: Arc<Job>,
    commit_user: String,
    started_millis: i64,
    properties: Arc<PlanProperties>,
}

fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("count", DataType::UInt64, false)]))
}

impl AppendDmlCommitExec {
    pub(crate) fn new(
        input: Arc<dyn ExecutionPlan>,
        job: Arc<Job>,
        commit_user: String,
        started_millis: i64,
    ) -> Self {
        AppendDmlCommitExec {
            properties: properties(count_schema(), 1),
            input,
            job,
            commit_user,
            started_millis,
        }
    }

    /// A committer for a statement planned now, with a fresh commit user.
    pub(crate) fn for_new_statement(input: Arc<dyn ExecutionPlan>, job: Arc<Job>) -> Self {
        Self::new(
            input,
            job,
            uuid::Uuid::new_v4().to_string(),
            crate::meta::now_millis(),
        )
    }

    /// The statement, its commit user and its start (epoch millis).
    pub(crate) fn identity(&self) -> (&Arc<Job>, &str, i64) {
        (&self.job, &self.commit_user, self.started_millis)
    }
}

impl DisplayAs for AppendDmlCommitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AppendDmlCommitExec: table={}, commit_user={}",
            self.job.table(),
            self.commit_user
        )
    }
}

impl ExecutionPlan for AppendDmlCommitExec {
    fn name(&self) -> &str {
        "AppendDmlCommitExec"
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
            _ => internal_err!("AppendDmlCommitExec takes one input"),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("AppendDmlCommitExec has one partition, asked for {partition}");
        }
        let inputs = (0..self.input.output_partitioning().partition_count())
            .map(|p| self.input.execute(p, Arc::clone(&context)))
            .collect::<Result<Vec<_>>>()?;
        let job = Arc::clone(&self.job);
        let (user, started) = (self.commit_user.clone(), self.started_millis);
        let stream = futures::stream::once(async move {
            let mut changes = WrittenFiles::default();
            for input in inputs {
                let batches: Vec<RecordBatch> = input.try_collect().await?;
                for batch in &batches {
                    changes.add_message_batch(batch, job.table())?;
                }
            }
            log::info!(
                "Paimon commit of {} by {user} started: {} rows changed",
                job.table(),
                changes.rows
            );
            let count = job.commit(changes, &user, Some(started)).await?;
            log::info!("Paimon commit of {} by {user} done: {count} rows", job.table());
            Ok(RecordBatch::try_new(
                count_schema(),
                vec![Arc::new(UInt64Array::from(vec![count]))],
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(count_schema(), stream)))
    }
}
