//! The physical optimizer rule that splits a `$changelog` normalize of a `none` table by key
//! (`ChangelogNormalizeExec::spread`): on a cluster it runs as one task per group of keys
//! instead of one task taking the whole change stream. The state of a key lives in one bucket,
//! so groups normalize independently, and the result is the one-task plan's.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::config::ConfigOptions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::changelog::ChangelogNormalizeExec;

/// Spreads changelog normalizes over `target_partitions` partitions by key.
#[derive(Debug, Default)]
pub struct SpreadNormalize;

impl PhysicalOptimizerRule for SpreadNormalize {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let n = config.execution.target_partitions;
        plan.transform_up(|node| {
            let Some(normalize) = node.downcast_ref::<ChangelogNormalizeExec>() else {
                return Ok(Transformed::no(node));
            };
            Ok(match normalize.spread(n)? {
                Some(spread) => Transformed::yes(spread),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "paimon_spread_normalize"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
