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
//! Done in the query planner, after the logical optimizer (which must not change a plan's
//! schema): the plan gets a final projection before it becomes a physical plan.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::Schema;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_datafusion_err, Column, Result};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::functions_nested::expr_fn::map_entries;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use futures::StreamExt;

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
        let plan = if self.json.load(Ordering::Relaxed) {
            entries_for_maps(logical_plan)?
        } else {
            logical_plan.clone()
        };
        let plan = DefaultPhysicalPlanner::default()
            .create_physical_plan(&plan, state)
            .await?;
        let plan: Arc<dyn ExecutionPlan> = if plan.properties().partitioning.partition_count() > 1 {
            Arc::new(CoalescePartitionsExec::new(plan))
        } else {
            plan
        };
        Ok(Arc::new(OutputWatchExec::new(plan, Arc::clone(&self.status))))
    }
}

/// Passes its single input partition through; the first batch (or the end) tells the status
/// line that output starts.
#[derive(Debug)]
struct OutputWatchExec {
    input: Arc<dyn ExecutionPlan>,
    status: Arc<StatusLine>,
}

impl OutputWatchExec {
    fn new(input: Arc<dyn ExecutionPlan>, status: Arc<StatusLine>) -> Self {
        OutputWatchExec { input, status }
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
        self.input.properties()
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
        Ok(Arc::new(OutputWatchExec::new(input, Arc::clone(&self.status))))
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
        let schema = input.schema();
        let status = Arc::clone(&self.status);
        let watched = input.inspect(move |_| status.output_starts()).chain(
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

/// Whether Arrow's JSON writer refuses this type: a map whose keys are not strings.
fn needs_entries(data_type: &DataType) -> bool {
    match data_type {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) => fields.first().is_some_and(|key| {
                !matches!(
                    key.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                )
            }),
            _ => false,
        },
        _ => false,
    }
}

/// `plan` with its map columns of non-string keys replaced by their entries (same names).
fn entries_for_maps(plan: &LogicalPlan) -> Result<LogicalPlan> {
    let schema = plan.schema();
    if !schema.fields().iter().any(|f| needs_entries(f.data_type())) {
        return Ok(plan.clone());
    }
    let columns: Vec<Expr> = schema
        .iter()
        .map(|(qualifier, field)| {
            let column = Expr::Column(Column::from((qualifier, field)));
            if needs_entries(field.data_type()) {
                map_entries(column).alias(field.name())
            } else {
                column
            }
        })
        .collect();
    LogicalPlanBuilder::from(plan.clone()).project(columns)?.build()
}
