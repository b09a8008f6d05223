//! `--format json` / `nd-json` with MAP columns whose keys are not strings: Arrow's JSON writer
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
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{internal_datafusion_err, Column, Result};
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::functions_nested::expr_fn::map_entries;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

/// DataFusion's planner, plus the map projection while `json` is set.
#[derive(Debug, Default)]
pub struct JsonMapsPlanner {
    json: Arc<AtomicBool>,
}

impl JsonMapsPlanner {
    /// The switch the runner flips to the current output format before each statement.
    pub fn switch(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.json)
    }

    /// `builder` with this planner.
    pub fn install(self: Arc<Self>, builder: SessionStateBuilder) -> SessionStateBuilder {
        builder.with_query_planner(self)
    }
}

#[async_trait]
impl QueryPlanner for JsonMapsPlanner {
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
        DefaultPhysicalPlanner::default()
            .create_physical_plan(&plan, state)
            .await
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
