//! The small results of statements our SQL layer runs itself (procedures, `SHOW DATABASES`,
//! `INSERT OVERWRITE ... PARTITION`) as a `VALUES` plan rather than an in-memory table: any
//! session can run it, a Ballista one included (its scheduler cannot receive an in-memory
//! table, so the statement would succeed and its result fail).

use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{lit, EmptyRelation, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;

/// One non-null string column `name` holding `values`, as [`result_frame`].
pub(crate) fn string_column<S: AsRef<str>>(
    ctx: &SessionContext,
    name: &str,
    values: &[S],
) -> Result<DataFrame> {
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
        name,
        arrow::datatypes::DataType::Utf8,
        false,
    )]));
    let column = arrow::array::StringArray::from_iter_values(values.iter().map(AsRef::as_ref));
    result_frame(ctx, &[RecordBatch::try_new(schema, vec![Arc::new(column)])?])
}

/// `batches` (one schema; a handful of rows) as a data frame of literal rows.
pub(crate) fn result_frame(ctx: &SessionContext, batches: &[RecordBatch]) -> Result<DataFrame> {
    let Some(first) = batches.first() else {
        return datafusion::common::internal_err!("A statement result needs its schema");
    };
    let schema = first.schema();
    let df_schema = Arc::new(DFSchema::try_from(schema.as_ref().clone())?);
    let mut rows: Vec<Vec<Expr>> = Vec::new();
    for batch in batches {
        for i in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .map(|c| Ok(lit(ScalarValue::try_from_array(c, i)?)))
                    .collect::<Result<Vec<_>>>()?,
            );
        }
    }
    let plan = if rows.is_empty() {
        LogicalPlan::EmptyRelation(EmptyRelation {
            produce_one_row: false,
            schema: df_schema,
        })
    } else {
        let values = LogicalPlanBuilder::values_with_schema(rows, &df_schema)?.build()?;
        // the columns keep the result's names
        let named: Vec<Expr> = values
            .schema()
            .columns()
            .into_iter()
            .zip(schema.fields())
            .map(|(c, f)| Expr::Column(c).alias(f.name()))
            .collect();
        LogicalPlanBuilder::from(values).project(named)?.build()?
    };
    Ok(DataFrame::new(ctx.state(), plan))
}
