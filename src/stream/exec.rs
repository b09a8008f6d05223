//! `PaimonStreamExec`: the unbounded plan node of a tailing read.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result};
use datafusion::execution::context::SessionState;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};

use super::options::StreamOptions;
use super::tail::Tail;
use crate::table::PaimonTable;

/// Follows a table: its changes snapshot after snapshot, never ending by itself.
pub struct PaimonStreamExec {
    table: Arc<PaimonTable>,
    session: SessionState,
    options: StreamOptions,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for PaimonStreamExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaimonStreamExec")
            .field("table", &self.table.name())
            .field("options", &self.options)
            .finish()
    }
}

impl PaimonStreamExec {
    pub(crate) fn new(
        table: Arc<PaimonTable>,
        session: SessionState,
        options: StreamOptions,
        schema: SchemaRef,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Unbounded {
                requires_infinite_memory: false,
            },
        ));
        PaimonStreamExec {
            table,
            session,
            options,
            properties,
        }
    }
}

impl DisplayAs for PaimonStreamExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "PaimonStreamExec: table={}, start={:?}, normalize={}, consumer={}, discovery_interval={}ms",
            self.table.name(),
            self.options.start,
            !self.table.has_changelog_producer(),
            self.options.consumer_id.as_deref().unwrap_or("none"),
            self.options.discovery_interval_ms
        )
    }
}

impl ExecutionPlan for PaimonStreamExec {
    fn name(&self) -> &str {
        "PaimonStreamExec"
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
        if partition != 0 {
            return internal_err!("PaimonStreamExec has one partition, not {partition}");
        }
        let schema = self.schema();
        let tail = Tail::new(
            Arc::clone(&self.table),
            self.session.clone(),
            context,
            self.options.clone(),
            Arc::clone(&schema),
        );
        let stream = futures::stream::try_unfold(tail, |mut tail| async move {
            let batch = tail.next_batch().await?;
            Ok(Some((batch, tail)))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}
