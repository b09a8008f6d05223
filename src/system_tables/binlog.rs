//! `t$binlog` (semantics.md §7.3): like `$audit_log`, but every data column is an array with
//! nullable elements. Batch reads give `[v]` per value; incremental reads pack a `-U` and the
//! row after it into one `+U` row `[before, after]` (the packing lives in the scan, which
//! knows where each split ends).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::BINLOG;
use crate::meta::TableMeta;
use crate::table::{open_table, ReadView};

/// `$binlog` of `table`; a `PaimonTable`, which refuses writes itself.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let name = format!("{table}${BINLOG}");
    Ok(Arc::new(open_table(name, meta, options, ReadView::Binlog).await?))
}
