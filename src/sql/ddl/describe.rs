//! `DESCRIBE [TABLE] t` (also `DESC`): DataFusion's own output (`column_name`, `data_type`,
//! `is_nullable`), with each Paimon column's nullability as the table's schema declares it.
//!
//! Paimon tables report every column nullable to DataFusion, so that an INSERT of a NULL key
//! reaches the sink and fails there with a message naming the table and column rather than an
//! Arrow error about `column1`; DESCRIBE must still show the declared `NOT NULL` (primary-key
//! columns always are, format.md §2.6). Other tables are described exactly as DataFusion would.

use std::sync::Arc;

use arrow::datatypes::{Field, Schema};
use datafusion::common::{DFSchema, Result, TableReference};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{DescribeTable, LogicalPlan};
use datafusion::sql::sqlparser::keywords::Keyword;

use super::parser::{DdlParser, ObjectRef};
use crate::sql::PaimonSession;
use crate::table::PaimonTable;

/// Parses `DESCRIBE|DESC [TABLE] name` (the leading keyword already peeked).
pub(crate) fn parse(p: &mut DdlParser) -> Result<ObjectRef> {
    let _ = p.keyword(Keyword::DESCRIBE) || p.keyword(Keyword::DESC);
    p.keyword(Keyword::TABLE);
    let name = p.object_ref()?;
    p.expect_end()?;
    Ok(name)
}

pub(crate) async fn execute(session: &PaimonSession, name: ObjectRef) -> Result<DataFrame> {
    let reference = match name.parts.as_slice() {
        [t] => TableReference::bare(t.as_str()),
        [db, t] => TableReference::partial(db.as_str(), t.as_str()),
        [c, db, t] => TableReference::full(c.as_str(), db.as_str(), t.as_str()),
        _ => unreachable!("object_ref has one to three parts"),
    };
    let provider = session.context().table_provider(reference).await?;
    let schema = provider.schema();
    let schema = match (provider.as_ref() as &dyn std::any::Any).downcast_ref::<PaimonTable>() {
        Some(table) => {
            let declared = table.table_schema();
            let fields: Vec<Field> = schema
                .fields()
                .iter()
                .map(|f| {
                    let not_null = declared.fields.iter().any(|d| {
                        d.name == *f.name()
                            && !d.data_type.nullable
                            && d.data_type.to_arrow() == *f.data_type()
                    });
                    f.as_ref().clone().with_nullable(f.is_nullable() && !not_null)
                })
                .collect();
            Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
        }
        None => schema,
    };
    let output_schema = DFSchema::try_from(LogicalPlan::describe_schema())?;
    let plan = LogicalPlan::DescribeTable(DescribeTable {
        schema,
        output_schema: Arc::new(output_schema),
    });
    session.context().execute_logical_plan(plan).await
}
