//! The CLI's query planner: DataFusion's, plus two things only a terminal program needs.
//!
//! 1. The root of every plan reports when its first result batch appears, so the REPL's
//!    status line (`progress_line.rs`) is erased before results are printed. The root is made
//!    single-partition (as `execute_stream` would), so that report happens in the printing
//!    task, the one that draws the status line.
//! 2. `--format json` / `nd-json` with MAP columns whose keys are not strings: Arrow's JSON writer
//! refuses them ("Only UTF8 keys supported"), and a JSON object cannot have such keys anyway.
//! While a JSON format is selected, a query's top-level map columns with non-string keys are
//! printed as their list of entries, `[{"key": 1, "value": "a"}, ...]` (DataFusion's
//! `map_entries`), so the output is complete instead of failing. Other formats are unchanged.
//!
//! Done at the root of the physical plan (`OutputWatchExec`), batch by batch, so maps nested
//! in structs and lists are handled too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_datafusion_err, Result};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use futures::StreamExt;

use crate::json_entries::{convert_batch, convert_schema, needs_entries};
use crate::progress_line::StatusLine;

/// DataFusion's planner, plus the map projection while `json` is set and the output watch.
#[derive(Debug, Default)]
pub struct CliPlanner {
    json: Arc<AtomicBool>,
    status: Arc<StatusLine>,
}

impl CliPlanner {
    /// The switch the runner flips to the current output format before each statement.
    pub fn switch(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.json)
    }

    /// The REPL's status line, erased when a plan's output starts.
    pub fn status_line(&self) -> Arc<StatusLine> {
        Arc::clone(&self.status)
    }

    /// `builder` with this planner.
    pub fn install(self: Arc<Self>, builder: SessionStateBuilder) -> SessionStateBuilder {
        builder.with_query_planner(self)
    }
}

#[async_trait]
impl QueryPlanner for CliPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn datafusion::catalog::Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let state = session
            .as_any()
            .downcast_ref::<SessionState>()
            .ok_or_else(|| internal_datafusion_err!("paimon-sql plans with a SessionState"))?;
        let plan = DefaultPhysicalPlanner::default()
            .create_physical_plan(logical_plan, state)
            .await?;
        let plan: Arc<dyn ExecutionPlan> = if plan.properties().partitioning.partition_count() > 1 {
            Arc::new(CoalescePartitionsExec::new(plan))
        } else {
            plan
        };
        let json = self.json.load(Ordering::Relaxed);
        Ok(Arc::new(OutputWatchExec::new(
            plan,
            Arc::clone(&self.status),
            json,
        )))
    }
}

/// Passes its single input partition through; the first batch (or the end) tells the status
/// line that output starts. For JSON output it also turns maps with non-string keys into
/// their entries (`json_entries.rs`).
#[derive(Debug)]
struct OutputWatchExec {
    input: Arc<dyn ExecutionPlan>,
    status: Arc<StatusLine>,
    json: bool,
    /// The output schema, when JSON output changes it.
    converted: Option<SchemaRef>,
    properties: Arc<PlanProperties>,
}

impl OutputWatchExec {
    fn new(input: Arc<dyn ExecutionPlan>, status: Arc<StatusLine>, json: bool) -> Self {
        let schema = input.schema();
        let converted = (json && schema.fields().iter().any(|f| needs_entries(f.data_type())))
            .then(|| convert_schema(&schema));
        let properties = match &converted {
            None => Arc::clone(input.properties()),
            Some(schema) => {
                let inner = input.properties();
                Arc::new(PlanProperties::new(
                    EquivalenceProperties::new(Arc::clone(schema)),
                    inner.partitioning.clone(),
                    inner.emission_type,
                    inner.boundedness,
                ))
            }
        };
        OutputWatchExec {
            input,
            status,
            json,
            converted,
            properties,
        }
    }
}

impl DisplayAs for OutputWatchExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "OutputWatchExec")
    }
}

impl ExecutionPlan for OutputWatchExec {
    fn name(&self) -> &str {
        "OutputWatchExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| internal_datafusion_err!("OutputWatchExec has one child"))?;
        Ok(Arc::new(OutputWatchExec::new(
            input,
            Arc::clone(&self.status),
            self.json,
        )))
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let converted = self.converted.clone();
        let schema = converted.clone().unwrap_or_else(|| input.schema());
        let status = Arc::clone(&self.status);
        let watched = input
            .map(move |batch| match (&converted, batch) {
                (Some(schema), Ok(batch)) => convert_batch(&batch, schema),
                (_, other) => other,
            })
            .inspect(move |_| status.output_starts())
            .chain(
                futures::stream::once({
                    let status = Arc::clone(&self.status);
                    async move {
                        status.output_starts();
                        Ok(RecordBatch::new_empty(Arc::new(Schema::empty())))
                    }
                })
                .filter(|_| futures::future::ready(false)),
            );
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, watched)))
    }
}
