//! `CREATE DATABASE [IF NOT EXISTS] db` (also `CREATE SCHEMA`): the directory `<wh>/db.db`.
//! Parsed by sqlparser itself.

use datafusion::common::Result;
use datafusion::sql::sqlparser::ast::{SchemaName, Statement};

use super::names::resolve_database;
use super::parser::{not_supported, DdlParser};
use crate::sql::PaimonSession;

/// A parsed `CREATE DATABASE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CreateDatabase {
    pub(crate) name: String,
    pub(crate) if_not_exists: bool,
}

/// Parses the whole statement with sqlparser's grammar.
pub(crate) fn parse(p: &mut DdlParser) -> Result<CreateDatabase> {
    let stmt = p.inner().parse_statement()?;
    p.expect_end()?;
    let (name, if_not_exists) = match stmt {
        Statement::CreateDatabase {
            db_name,
            if_not_exists,
            location: None,
            managed_location: None,
            or_replace: false,
            ..
        } => (db_name, if_not_exists),
        Statement::CreateSchema {
            schema_name: SchemaName::Simple(name),
            if_not_exists,
            with: None,
            options: None,
            ..
        } => (name, if_not_exists),
        other => return not_supported(&format!("{other}")),
    };
    Ok(CreateDatabase {
        name: resolve_database(&p.normalize_name(name)?)?,
        if_not_exists,
    })
}

/// Creates the database.
pub(crate) async fn execute(session: &PaimonSession, stmt: CreateDatabase) -> Result<()> {
    session
        .catalog()
        .create_database(&stmt.name, stmt.if_not_exists)
        .await
}
