//! `t$audit_log` (semantics.md §7.1): the table's rows with a first column `rowkind`,
//! retractions kept. Batch reads merge the snapshot; with `incremental-between*` options it
//! reads the changes between two snapshots, every kind as stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::AUDIT_LOG;
use crate::meta::TableMeta;
use crate::table::{open_table, ReadView};

/// `$audit_log` of `table`; a `PaimonTable`, which refuses writes itself.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let name = format!("{table}${AUDIT_LOG}");
    Ok(Arc::new(
        open_table(name, meta, options, ReadView::AuditLog).await?,
    ))
}
