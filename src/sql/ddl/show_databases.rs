//! `SHOW DATABASES` (also `SHOW SCHEMAS`), which DataFusion does not support: the warehouse's
//! databases, re-listed first, as one `database_name` column in name order (Flink's output).
//! Parsed by sqlparser itself.

use std::sync::Arc;

use arrow::array::StringArray;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::CatalogProvider;
use datafusion::common::Result;
use datafusion::dataframe::DataFrame;
use datafusion::sql::sqlparser::ast::Statement;

use super::parser::{not_supported, DdlParser};
use crate::sql::PaimonSession;

/// Parses the whole statement with sqlparser's grammar; filters are not supported.
pub(crate) fn parse(p: &mut DdlParser) -> Result<()> {
    let stmt = p.inner().parse_statement()?;
    p.expect_end()?;
    match stmt {
        Statement::ShowDatabases { show_options, .. } | Statement::ShowSchemas { show_options, .. }
            if show_options.filter_position.is_none() && show_options.limit.is_none() =>
        {
            Ok(())
        }
        other => not_supported(&format!("{other}")),
    }
}

/// The database names as a one-column result.
pub(crate) async fn execute(session: &PaimonSession) -> Result<DataFrame> {
    session.catalog().refresh().await?;
    let names = session.catalog().schema_names();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "database_name",
        DataType::Utf8,
        false,
    )]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(names))])?;
    crate::sql::result_frame::result_frame(session.context(), &[batch])
}
