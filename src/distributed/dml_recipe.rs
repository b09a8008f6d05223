//! A row-level DELETE or UPDATE of an append table (`write::AppendDmlExec`'s job) as data, for
//! the physical codec: the table, the schema it writes with, and its predicate and updates as
//! `datafusion-proto` plans (a filter and a projection over an empty input of the table's
//! schema), which carry physical expressions without a protobuf dependency of our own.

use std::sync::Arc;

use datafusion::common::{internal_err, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::physical_plan::DefaultPhysicalExtensionCodec;
use serde::{Deserialize, Serialize};

use crate::spec::TableSchema;
use crate::table::open_meta;
use crate::write::AppendDmlJob;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct DmlRecipe {
    /// URL of the table directory.
    location: String,
    table: String,
    /// The schema the statement writes with, as its `schema-N` JSON.
    schema: String,
    /// A `FilterExec` of the predicate.
    predicate: Vec<u8>,
    /// A `ProjectionExec` of every column's new value (an UPDATE).
    updates: Option<Vec<u8>>,
}

impl DmlRecipe {
    pub(super) fn of(job: &AppendDmlJob) -> Result<Self> {
        let (table, meta, schema, predicate, updates) = job.parts();
        let arrow = schema.arrow_schema();
        let empty = Arc::new(EmptyExec::new(Arc::clone(&arrow)));
        let codec = DefaultPhysicalExtensionCodec {};
        let filter = Arc::new(FilterExec::try_new(Arc::clone(predicate), empty.clone())?);
        let predicate = physical_plan_to_bytes_with_extension_codec(filter, &codec)?.to_vec();
        let updates = match updates {
            None => None,
            Some(exprs) => {
                let named = exprs
                    .iter()
                    .zip(arrow.fields())
                    .map(|(e, f)| (Arc::clone(e), f.name().clone()))
                    .collect::<Vec<_>>();
                let projection = Arc::new(ProjectionExec::try_new(named, empty)?);
                Some(physical_plan_to_bytes_with_extension_codec(projection, &codec)?.to_vec())
            }
        };
        Ok(DmlRecipe {
            location: meta.io().root_url().to_string(),
            table: table.to_string(),
            schema: schema.to_json(),
            predicate,
            updates,
        })
    }

    pub(super) fn open(self, ctx: &TaskContext) -> Result<Arc<AppendDmlJob>> {
        let meta = open_meta(&self.location, ctx.runtime_env().as_ref())?;
        let schema = TableSchema::from_json(self.schema.as_bytes(), &format!("{}/schema", self.location))?;
        let codec = DefaultPhysicalExtensionCodec {};
        let plan = |bytes: &[u8]| physical_plan_from_bytes_with_extension_codec(bytes, ctx, &codec);
        let filter = plan(&self.predicate)?;
        let Some(filter) = filter.downcast_ref::<FilterExec>() else {
            return internal_err!(
                "The predicate of a DELETE or UPDATE of {} did not decode",
                self.table
            );
        };
        let updates: Option<Vec<Arc<dyn PhysicalExpr>>> = match &self.updates {
            None => None,
            Some(bytes) => {
                let projection = plan(bytes)?;
                let Some(projection) = projection.downcast_ref::<ProjectionExec>() else {
                    return internal_err!("The new values of an UPDATE of {} did not decode", self.table);
                };
                Some(projection.expr().iter().map(|e| Arc::clone(&e.expr)).collect())
            }
        };
        Ok(Arc::new(AppendDmlJob::new(
            self.table,
            meta,
            Arc::new(schema),
            Arc::clone(filter.predicate()),
            updates,
        )?))
    }
}
