//! The physical optimizer rule that turns a Paimon `DataSinkExec` (one task writing every file
//! and committing) into parallel writer tasks and one committer (`write::parallel`): how a
//! Ballista scheduler plans INSERT, INSERT OVERWRITE, DELETE, UPDATE and MERGE into a
//! primary-key table. It runs last, on the plan the scheduler will split into stages: the
//! hash repartition before the writers and the coalesce before the committer are where the
//! stages meet.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::config::ConfigOptions;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{Partitioning, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

use crate::write::{FanOut, PaimonBucketExec, PaimonCommitExec, PaimonSink, PaimonWriteExec};

/// Plans Paimon writes as parallel writers and one exactly-once committer.
#[derive(Debug, Default)]
pub struct ParallelWrites;

impl PhysicalOptimizerRule for ParallelWrites {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let writers = config.execution.target_partitions.max(1);
        plan.transform_up(|node| {
            let Some(exec) = node.downcast_ref::<DataSinkExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(sink) = exec.sink().downcast_ref::<PaimonSink>() else {
                return Ok(Transformed::no(node));
            };
            let fan_out = sink.fan_out()?;
            if fan_out == FanOut::None {
                return Ok(Transformed::no(node));
            }
            let sink: Arc<dyn DataSink> = Arc::new(sink.duplicate()?);
            // the sink's one-partition input, spread again
            let mut input = Arc::clone(exec.input());
            if let Some(coalesce) = input.downcast_ref::<CoalescePartitionsExec>() {
                input = Arc::clone(coalesce.input());
            }
            let column = |plan: &Arc<dyn ExecutionPlan>, i: usize| -> Arc<dyn PhysicalExpr> {
                Arc::new(Column::new(plan.schema().field(i).name(), i))
            };
            let routed: Arc<dyn ExecutionPlan> = match fan_out {
                FanOut::Buckets { partition_columns } => {
                    let bucketed: Arc<dyn ExecutionPlan> =
                        Arc::new(PaimonBucketExec::try_new(input, Arc::clone(&sink))?);
                    let bucket = bucketed.schema().fields().len() - 1;
                    let mut exprs: Vec<Arc<dyn PhysicalExpr>> =
                        partition_columns.iter().map(|&c| column(&bucketed, c)).collect();
                    exprs.push(column(&bucketed, bucket));
                    Arc::new(RepartitionExec::try_new(
                        bucketed,
                        Partitioning::Hash(exprs, writers),
                    )?)
                }
                FanOut::Columns(columns) => {
                    let exprs = columns.iter().map(|&c| column(&input, c)).collect();
                    Arc::new(RepartitionExec::try_new(
                        input,
                        Partitioning::Hash(exprs, writers),
                    )?)
                }
                FanOut::Any if input.output_partitioning().partition_count() >= writers => input,
                FanOut::Any => Arc::new(RepartitionExec::try_new(
                    input,
                    Partitioning::RoundRobinBatch(writers),
                )?),
                FanOut::Single if input.output_partitioning().partition_count() == 1 => input,
                FanOut::Single => Arc::new(CoalescePartitionsExec::new(input)),
                FanOut::None => unreachable!("checked above"),
            };
            let written = Arc::new(PaimonWriteExec::try_new(routed, Arc::clone(&sink))?);
            let messages = Arc::new(CoalescePartitionsExec::new(written));
            let commit = PaimonCommitExec::for_new_statement(messages, sink)?;
            Ok(Transformed::yes(Arc::new(commit) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "paimon_parallel_writes"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
