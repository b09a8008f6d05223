//! The physical optimizer rule that turns a Paimon `DataSinkExec` (one task writing every file
//! and committing) into parallel writer tasks and one committer (`write::parallel`): how a
//! Ballista scheduler plans INSERT, INSERT OVERWRITE, DELETE, UPDATE and MERGE into a
//! primary-key table, and DELETE and UPDATE of an append table (`write::append_dml_commit`). It runs last, on the plan the scheduler will split into stages: the
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

use crate::table::MergeSinkExec;
use crate::write::{
    AppendDmlCommitExec, AppendDmlExec, FanOut, PaimonAssignExec, PaimonBucketExec, PaimonCommitExec,
    PaimonSink, PaimonWriteExec,
};

/// `plan` hash-partitioned into `tasks` by (`partition_columns`, its last column).
fn by_last_column(
    plan: Arc<dyn ExecutionPlan>,
    partition_columns: &[usize],
    tasks: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = plan.schema();
    let column = |i: usize| -> Arc<dyn PhysicalExpr> { Arc::new(Column::new(schema.field(i).name(), i)) };
    let mut exprs: Vec<Arc<dyn PhysicalExpr>> = partition_columns.iter().map(|&c| column(c)).collect();
    exprs.push(column(schema.fields().len() - 1));
    Ok(Arc::new(RepartitionExec::try_new(
        plan,
        Partitioning::Hash(exprs, tasks),
    )?))
}

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
            // a DELETE or UPDATE of an append table: parts of its buckets, one commit
            if let Some(exec) = node.downcast_ref::<AppendDmlExec>() {
                if exec.parts().is_some() {
                    return Ok(Transformed::no(node));
                }
                let job = Arc::clone(exec.job());
                let parts = Arc::new(AppendDmlExec::of(Arc::clone(&job), Some(writers)));
                let messages = Arc::new(CoalescePartitionsExec::new(parts));
                let commit = AppendDmlCommitExec::for_new_statement(messages, job);
                return Ok(Transformed::yes(Arc::new(commit) as Arc<dyn ExecutionPlan>));
            }
            // an INSERT, INSERT OVERWRITE, DELETE or UPDATE, or a MERGE (Spark's counts)
            let (sink, input, merge) = if let Some(exec) = node.downcast_ref::<DataSinkExec>() {
                match exec.sink().downcast_ref::<PaimonSink>() {
                    Some(sink) => (sink, exec.input(), false),
                    None => return Ok(Transformed::no(node)),
                }
            } else if let Some(exec) = node.downcast_ref::<MergeSinkExec>() {
                (exec.sink().as_ref(), exec.input(), true)
            } else {
                return Ok(Transformed::no(node));
            };
            let fan_out = sink.fan_out()?;
            if fan_out == FanOut::None {
                return Ok(Transformed::no(node));
            }
            let sink: Arc<dyn DataSink> = Arc::new(sink.duplicate()?);
            // the sink's one-partition input, spread again
            let mut input = Arc::clone(input);
            if let Some(coalesce) = input.downcast_ref::<CoalescePartitionsExec>() {
                input = Arc::clone(coalesce.input());
            }
            let column = |plan: &Arc<dyn ExecutionPlan>, i: usize| -> Arc<dyn PhysicalExpr> {
                Arc::new(Column::new(plan.schema().field(i).name(), i))
            };
            let routed: Arc<dyn ExecutionPlan> = match fan_out {
                FanOut::Buckets { partition_columns } => {
                    let bucketed: Arc<dyn ExecutionPlan> =
                        Arc::new(PaimonBucketExec::try_new(input, Arc::clone(&sink), 0)?);
                    by_last_column(bucketed, &partition_columns, writers)?
                }
                FanOut::Assign {
                    partition_columns,
                    assigners,
                    cross_partition,
                } => {
                    // as Paimon's Flink sink: by key hash to the assigners, by bucket to the writers
                    let assigners = assigners.unwrap_or(writers).min(writers);
                    let keyed: Arc<dyn ExecutionPlan> =
                        Arc::new(PaimonBucketExec::try_new(input, Arc::clone(&sink), assigners)?);
                    // (a key that may change partitions goes by its key alone)
                    let by = if cross_partition {
                        &[][..]
                    } else {
                        &partition_columns[..]
                    };
                    let keyed = by_last_column(keyed, by, writers)?;
                    let assigned: Arc<dyn ExecutionPlan> =
                        Arc::new(PaimonAssignExec::try_new(keyed, Arc::clone(&sink), assigners)?);
                    by_last_column(assigned, &partition_columns, writers)?
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
                FanOut::None => unreachable!("checked above"),
            };
            let written = Arc::new(PaimonWriteExec::try_new(routed, Arc::clone(&sink))?);
            let messages = Arc::new(CoalescePartitionsExec::new(written));
            let commit = PaimonCommitExec::for_new_statement(messages, sink, merge)?;
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
