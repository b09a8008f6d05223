//! Resolving `[catalog.][database.]table` names against the session.

use datafusion::common::{plan_err, Result};

use super::parser::ObjectRef;
use crate::sql::{PaimonSession, DEFAULT_CATALOG};

/// A table of the warehouse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableName {
    pub(crate) database: String,
    pub(crate) table: String,
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.database, self.table)
    }
}

/// The session's current database (`datafusion.catalog.default_schema`, `default` unless
/// changed).
pub(crate) fn current_database(session: &PaimonSession) -> String {
    let state = session.context().state_ref();
    let state = state.read();
    state.config_options().catalog.default_schema.clone()
}

/// Whether unquoted identifiers are lower-cased (`datafusion.sql_parser.enable_ident_normalization`).
pub(crate) fn normalizes_identifiers(session: &PaimonSession) -> bool {
    let state = session.context().state_ref();
    let state = state.read();
    state.config_options().sql_parser.enable_ident_normalization
}

/// `t`, `db.t` or `paimon.db.t`; unqualified names are in the current database. A catalog
/// registered by `CREATE CATALOG` for this warehouse stands for `paimon`.
pub(crate) fn resolve_table(session: &PaimonSession, name: &ObjectRef) -> Result<TableName> {
    resolve_table_in(&current_database(session), &without_alias(session, name, 3))
}

/// `name` with a leading catalog that is another name of this session's warehouse read as
/// `paimon`, when `name` has `parts` parts.
fn without_alias(session: &PaimonSession, name: &ObjectRef, parts: usize) -> ObjectRef {
    match name.parts.first() {
        Some(catalog) if name.parts.len() == parts && catalog != DEFAULT_CATALOG => {
            let mut parts = name.parts.clone();
            if session.catalog().is_named(catalog) {
                parts[0] = DEFAULT_CATALOG.to_string();
            }
            ObjectRef { parts }
        }
        _ => name.clone(),
    }
}

/// Like [`resolve_table`], with the current database given.
pub(crate) fn resolve_table_in(current_database: &str, name: &ObjectRef) -> Result<TableName> {
    let (database, table) = match name.parts.as_slice() {
        [t] => (current_database.to_string(), t.clone()),
        [db, t] => (db.clone(), t.clone()),
        [catalog, db, t] => {
            check_catalog(catalog)?;
            (db.clone(), t.clone())
        }
        _ => return plan_err!("Invalid table name '{}'", name.parts.join(".")),
    };
    Ok(TableName { database, table })
}

/// `db` or `paimon.db`.
pub(crate) fn resolve_database(name: &ObjectRef) -> Result<String> {
    match name.parts.as_slice() {
        [db] => Ok(db.clone()),
        [catalog, db] => {
            check_catalog(catalog)?;
            Ok(db.clone())
        }
        _ => plan_err!("Invalid database name '{}'", name.parts.join(".")),
    }
}

fn check_catalog(catalog: &str) -> Result<()> {
    if catalog != DEFAULT_CATALOG {
        return plan_err!(
            "Catalog '{catalog}' does not exist: Paimon DDL applies to catalog '{DEFAULT_CATALOG}'"
        );
    }
    Ok(())
}
