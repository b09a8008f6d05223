//! `DROP TABLE [IF EXISTS] [db.]t`: deletes the table directory. Parsed by sqlparser itself.

use datafusion::common::Result;
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};

use super::names::{resolve_table, TableName};
use super::parser::{not_supported, DdlParser, ObjectRef};
use crate::sql::PaimonSession;

/// A parsed `DROP TABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DropTable {
    pub(crate) names: Vec<ObjectRef>,
    pub(crate) if_exists: bool,
}

/// Parses the whole statement with sqlparser's grammar.
pub(crate) fn parse(p: &mut DdlParser) -> Result<DropTable> {
    let stmt = p.inner().parse_statement()?;
    p.expect_end()?;
    match stmt {
        Statement::Drop {
            object_type: ObjectType::Table,
            if_exists,
            names,
            temporary: false,
            ..
        } => {
            let names = names
                .into_iter()
                .map(|n| p.normalize_name(n))
                .collect::<Result<_>>()?;
            Ok(DropTable { names, if_exists })
        }
        other => not_supported(&format!("{other}")),
    }
}

/// Drops the tables, in order.
pub(crate) async fn execute(session: &PaimonSession, stmt: DropTable) -> Result<()> {
    let tables = stmt
        .names
        .iter()
        .map(|n| resolve_table(session, n))
        .collect::<Result<Vec<TableName>>>()?;
    for t in tables {
        session
            .catalog()
            .drop_table(&t.database, &t.table, stmt.if_exists)
            .await?;
    }
    Ok(())
}
