//! `PaimonStreamTable`: the provider behind `paimon_stream(...)`.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{plan_err, Result};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::exec::PaimonStreamExec;
use super::options::StreamOptions;
use crate::table::{project, PaimonTable};

/// A tailing read of one table (its `$changelog` view) with fixed options.
#[derive(Debug)]
pub(crate) struct PaimonStreamTable {
    changelog: Arc<PaimonTable>,
    options: StreamOptions,
}

impl PaimonStreamTable {
    pub(crate) fn new(changelog: PaimonTable, options: StreamOptions) -> Self {
        PaimonStreamTable {
            changelog: Arc::new(changelog),
            options,
        }
    }
}

#[async_trait]
impl TableProvider for PaimonStreamTable {
    fn schema(&self) -> SchemaRef {
        self.changelog.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(session) = state.as_any().downcast_ref::<SessionState>() else {
            return plan_err!("paimon_stream needs a DataFusion SessionState to plan its reads");
        };
        let schema = self.schema();
        let options = StreamOptions {
            latest_at_plan: Some(self.changelog.meta().latest_snapshot_id().await?.unwrap_or(0)),
            ..self.options.clone()
        };
        let plan: Arc<dyn ExecutionPlan> = Arc::new(PaimonStreamExec::new(
            Arc::clone(&self.changelog),
            session.clone(),
            options,
            Arc::clone(&schema),
        ));
        project(plan, projection)
    }
}
