//! `DROP DATABASE [IF EXISTS] db [RESTRICT | CASCADE]` (also `DROP SCHEMA`). Parsed by
//! sqlparser itself.

use datafusion::common::{plan_err, Result};
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};

use super::names::{current_database, resolve_database};
use super::parser::{not_supported, DdlParser};
use crate::sql::PaimonSession;

/// A parsed `DROP DATABASE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DropDatabase {
    pub(crate) names: Vec<String>,
    pub(crate) if_exists: bool,
    pub(crate) cascade: bool,
}

/// Parses the whole statement with sqlparser's grammar.
pub(crate) fn parse(p: &mut DdlParser) -> Result<DropDatabase> {
    let stmt = p.inner().parse_statement()?;
    p.expect_end()?;
    match stmt {
        Statement::Drop {
            object_type: ObjectType::Database | ObjectType::Schema,
            if_exists,
            names,
            cascade,
            ..
        } => {
            let names = names
                .into_iter()
                .map(|n| resolve_database(&p.normalize_name(n)?))
                .collect::<Result<_>>()?;
            Ok(DropDatabase {
                names,
                if_exists,
                cascade,
            })
        }
        other => not_supported(&format!("{other}")),
    }
}

/// Drops the databases; like Flink, the current database cannot be dropped.
pub(crate) async fn execute(session: &PaimonSession, stmt: DropDatabase) -> Result<()> {
    let current = current_database(session);
    for name in &stmt.names {
        if *name == current {
            return plan_err!("Cannot drop database {name}: it is the current database");
        }
        session
            .catalog()
            .drop_database(name, stmt.if_exists, stmt.cascade)
            .await?;
    }
    Ok(())
}
