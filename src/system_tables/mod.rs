//! Read-only metadata tables `<table>$<name>` (semantics.md §8, §7.1).
//!
//! Each builder reads the table's metadata at planning time and returns an in-memory table;
//! `$audit_log` is the merge-on-read scan keeping retractions, with a `rowkind` column.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};

use crate::meta::TableMeta;
use crate::table::{resolve_snapshot, PaimonTable};

/// `t$audit_log`.
pub(crate) const AUDIT_LOG: &str = "audit_log";

/// Names of every supported system table.
pub(crate) const SYSTEM_TABLES: &[&str] = &[AUDIT_LOG];

/// Builds the system table `name` of `table`.
pub(crate) async fn load(name: &str, table: &str, meta: Arc<TableMeta>, options: &BTreeMap<String, String>) -> Result<Arc<dyn TableProvider>> {
    match name {
        AUDIT_LOG => audit_log(table, meta, options).await,
        other => plan_err!(
            "Unknown system table '{other}' of table {table}; supported: {}",
            SYSTEM_TABLES.join(", ")
        ),
    }
}

async fn audit_log(table: &str, meta: Arc<TableMeta>, options: &BTreeMap<String, String>) -> Result<Arc<dyn TableProvider>> {
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    let schema = match &snapshot {
        Some(s) => meta.schema(s.schema_id).await?,
        None => meta.latest_schema().await?,
    };
    Ok(Arc::new(PaimonTable::try_new(format!("{table}${AUDIT_LOG}"), meta, snapshot, schema, true)?))
}
