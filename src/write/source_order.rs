//! Rows of one INSERT reach the sink in the order their source produced them.
//!
//! Within one statement a primary-key table gives each row the next sequence number in the
//! order the sink receives it, so of two rows with the same key the later one wins (spec §3.1).
//! DataFusion spreads a single-partition source (`VALUES`, `generate_series`, a memory table)
//! over the session's partitions with a round-robin repartition, so that a projection or filter
//! above it runs on several cores, and then merges the partitions again with
//! `CoalescePartitionsExec` because a sink takes one stream. The batches then reach the sink in
//! whichever order the cores finish them, and which of a statement's duplicate keys wins varies
//! from run to run.
//!
//! [`KeepSourceOrder`] removes those round-robin repartitions between a Paimon sink and its
//! source, on the chain of single-input operators that keep their input's order, together with
//! the coalesce that no longer merges anything. A source that is itself split (several files, or
//! one large file read in byte ranges) keeps its partitions: there the order is the files' and
//! no single order was given.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use super::PaimonSink;

/// The children change partitioning, so the parents' properties are computed again.
const RECOMPUTE: ReplaceChildrenOptions = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute);

/// Physical optimizer rule: the input of a Paimon sink keeps its single-partition source's
/// order (see the module comment). `PaimonSession` installs it in every session it registers.
#[derive(Debug, Default)]
pub struct KeepSourceOrder;

impl KeepSourceOrder {
    /// The rule's name, as `EXPLAIN VERBOSE` shows it.
    pub const NAME: &'static str = "paimon_keep_source_order";
}

impl PhysicalOptimizerRule for KeepSourceOrder {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            let Some(sink) = node.downcast_ref::<DataSinkExec>() else {
                return Ok(Transformed::no(node));
            };
            if !sink.sink().is::<PaimonSink>() {
                return Ok(Transformed::no(node));
            }
            match in_source_order(sink.input())? {
                Some(input) => {
                    let node = node.replace_children(vec![input], RECOMPUTE)?;
                    Ok(Transformed::new(node, true, TreeNodeRecursion::Jump))
                }
                None => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        Self::NAME
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` without the round-robin repartitions of a single partition on its chain of
/// order-keeping single-input operators (and without a coalesce left with one input
/// partition), or `None` when the chain has no such repartition.
fn in_source_order(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(repartition) = plan.downcast_ref::<RepartitionExec>() {
        let input = repartition.input();
        if matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
            && input.output_partitioning().partition_count() == 1
        {
            return Ok(Some(in_source_order(input)?.unwrap_or_else(|| Arc::clone(input))));
        }
    }
    let children = plan.children();
    let [child] = children.as_slice() else {
        return Ok(None);
    };
    let is_coalesce = plan.is::<CoalescePartitionsExec>();
    if !is_coalesce && !plan.maintains_input_order().first().copied().unwrap_or(false) {
        return Ok(None);
    }
    let Some(child) = in_source_order(child)? else {
        return Ok(None);
    };
    if is_coalesce && child.output_partitioning().partition_count() == 1 {
        return Ok(Some(child));
    }
    Ok(Some(Arc::clone(plan).replace_children(vec![child], RECOMPUTE)?))
}
