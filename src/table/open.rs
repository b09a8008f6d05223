//! Opening a table for a read: the session's read options pick either one snapshot (time
//! travel, `time_travel`) or the changes between two (`incremental`), and the read schema.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::common::Result;

use super::incremental::resolve_incremental;
use super::provider::PaimonTable;
use super::time_travel::{read_schema, resolve_snapshot};
use crate::meta::TableMeta;
use crate::scan::ReadView;
use crate::spec::options::{INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP};
use crate::spec::{TableOptions, TableSchema};

/// `name` (`db.table`, plus `$audit_log` / `$binlog` for the views) read as `options` say.
///
/// An incremental read uses the latest schema; its snapshot is the latest one, which only
/// DML consults.
pub(crate) async fn open_table(
    name: String,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
    view: ReadView,
) -> Result<PaimonTable> {
    open_table_with_latest(name, meta, options, view, None).await
}

/// As [`open_table`], given the table's latest schema when the caller has read it already
/// (the catalog, which lists the schemas to find out whether the table exists).
pub(crate) async fn open_table_with_latest(
    name: String,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
    view: ReadView,
    latest: Option<Arc<TableSchema>>,
) -> Result<PaimonTable> {
    let incremental = if [INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP]
        .iter()
        .any(|k| options.contains_key(*k))
    {
        let latest = match &latest {
            Some(latest) => Arc::clone(latest),
            None => meta.latest_schema().await?,
        };
        let table_options = TableOptions::parse(&latest.options)?;
        resolve_incremental(&meta, &name, options, &table_options).await?
    } else {
        None
    };
    let snapshot = resolve_snapshot(&meta, &name, options).await?;
    // the table changed under the session's view of it (rolled back, created again): its
    // schema is listed again
    let latest = match latest {
        Some(_) if meta.take_listing_contradicted() => Some(meta.latest_schema().await?),
        latest => latest,
    };
    let schema = read_schema(&meta, snapshot.as_ref(), options, latest).await?;
    let after_only = match options.get(crate::changelog::ALLOW_AFTER_ONLY).map(|v| v.trim()) {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => {
            return datafusion::common::plan_err!(
                "Option '{}' must be 'true' or 'false', got '{v}'",
                crate::changelog::ALLOW_AFTER_ONLY
            )
        }
    };
    let fallback = match incremental {
        None if view != ReadView::Changelog => {
            super::fallback::open(&name, &meta, options, snapshot.as_ref(), &schema).await?
        }
        _ => None,
    };
    let mut table = PaimonTable::try_new(name, meta, snapshot, schema, view)?
        .with_incremental(incremental)
        .with_after_only(after_only);
    table.time_travel = super::time_travel::time_travel_option(options).map(str::to_string);
    // read options that are table options too (Paimon's dynamic options)
    for (key, slot) in [
        (
            "deletion-vectors.merge-on-read",
            &mut table.options.dv_merge_on_read,
        ),
        ("blob-as-descriptor", &mut table.options.blob_as_descriptor),
        ("file-index.read.enabled", &mut table.options.file_index_read),
    ] {
        if let Some(v) = options.get(key) {
            *slot = match v.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return datafusion::common::plan_err!(
                        "Option '{key}' must be 'true' or 'false', got '{v}'"
                    )
                }
            };
        }
    }
    table.fallback = fallback.map(Arc::new);
    Ok(table)
}
