//! `PaimonIncrementalScanExec`: the plan node of an incremental read. `EXPLAIN` shows the
//! snapshot range (start exclusive, end inclusive), the mode and the change splits.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::progress::StatementProgress;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};

use super::plan::ChangeSplit;
use super::stream::changes_partition_stream;
use super::IncrementalRange;
#[cfg(feature = "ballista")]
use crate::scan::exec::partition_fingerprint;
use crate::scan::exec::{distribute, ReadView, ScanContext};
use crate::scan::metrics::ScanMetrics;

/// Reads the changes of a Paimon table between two snapshots.
#[derive(Debug)]
pub struct PaimonIncrementalScanExec {
    table_name: String,
    range: IncrementalRange,
    view: ReadView,
    ctx: Arc<ScanContext>,
    /// Splits of each output partition.
    partitions: Vec<Vec<ChangeSplit>>,
    limit: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
    /// What built this node (`table::ScanOrigin`), so a plan codec can rebuild it elsewhere.
    origin: Option<Arc<dyn Any + Send + Sync>>,
}

impl PaimonIncrementalScanExec {
    pub(crate) fn new(
        table_name: String,
        range: IncrementalRange,
        view: ReadView,
        ctx: ScanContext,
        splits: Vec<ChangeSplit>,
        target_partitions: usize,
        limit: Option<usize>,
    ) -> Self {
        let partitions = distribute(splits, target_partitions.max(1), ChangeSplit::row_count);
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&ctx.output_schema)),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        PaimonIncrementalScanExec {
            table_name,
            range,
            view,
            ctx: Arc::new(ctx),
            partitions,
            limit,
            metrics: ExecutionPlanMetricsSet::new(),
            properties,
            origin: None,
        }
    }

    /// Records what built this node (see the `origin` field).
    pub(crate) fn with_origin(mut self, origin: Arc<dyn Any + Send + Sync>) -> Self {
        self.origin = Some(origin);
        self
    }

    #[cfg(feature = "ballista")]
    pub(crate) fn origin(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.origin.as_ref()
    }

    /// See [`partition_fingerprint`].
    #[cfg(feature = "ballista")]
    pub(crate) fn layout_fingerprint(&self) -> u32 {
        partition_fingerprint(&self.partitions)
    }

    fn split_summary(&self) -> String {
        let mut all: Vec<&ChangeSplit> = self.partitions.iter().flatten().collect();
        all.sort_by(|a, b| {
            a.partition_path
                .cmp(&b.partition_path)
                .then(a.bucket.cmp(&b.bucket))
        });
        all.iter().map(|s| s.summary()).collect::<Vec<_>>().join(", ")
    }
}

impl DisplayAs for PaimonIncrementalScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let range = format!("({}, {}]", self.range.start, self.range.end);
        let mode = self.range.mode.as_str();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let projection: Vec<&str> = self
                    .ctx
                    .output_schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                write!(
                    f,
                    "PaimonIncrementalScanExec: table={}, incremental={range}, mode={mode}, projection=[{}], splits=[{}]",
                    self.table_name,
                    projection.join(", "),
                    self.split_summary()
                )?;
                if let Some(l) = self.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "table={}", self.table_name)?;
                writeln!(f, "incremental={range}")?;
                writeln!(f, "mode={mode}")?;
                write!(
                    f,
                    "splits={}",
                    self.partitions.iter().map(Vec::len).sum::<usize>()
                )
            }
        }
    }
}

impl ExecutionPlan for PaimonIncrementalScanExec {
    fn name(&self) -> &str {
        "PaimonIncrementalScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let Some(splits) = self.partitions.get(partition) else {
            return internal_err!(
                "PaimonIncrementalScanExec has no partition {partition} (it has {})",
                self.partitions.len()
            );
        };
        let batch_size = context.session_config().batch_size();
        let metrics = ScanMetrics::new(&self.metrics, partition, StatementProgress::of(&context));
        Ok(changes_partition_stream(
            Arc::clone(&self.ctx),
            self.view,
            splits.clone(),
            batch_size,
            metrics,
            self.limit,
        ))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
