//! A [`PaimonTable`] as data, so that another process can open the very same read: the table
//! root, the snapshot (and the two states of a diff) as their JSON, the read schema, the view
//! and the incremental range. Nothing is resolved again on the other side: a session option or
//! a snapshot committed in between cannot change what is read. Used by the Ballista codecs
//! (`crate::distributed`), whose scheduler and executors rebuild tables and scans from it.

use std::sync::Arc;

use datafusion::common::{exec_datafusion_err, DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use super::provider::PaimonTable;
use crate::io::FileIO;
use crate::meta::TableMeta;
use crate::scan::incremental::{ChangeMode, DiffEnds, IncrementalRange};
use crate::scan::ReadView;
use crate::spec::{Snapshot, TableSchema};

/// Everything needed to open a [`PaimonTable`] read again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TableRecipe {
    /// URL of the table directory (`file:///wh/db.db/t`, `s3://bucket/wh/db.db/t`).
    location: String,
    name: String,
    snapshot: Option<Snapshot>,
    /// The read schema as its `schema-N` JSON.
    schema: String,
    view: String,
    incremental: Option<RangeRecipe>,
    allow_after_only: bool,
    read_optimized: bool,
    /// Scans in one partition (the seed of a `$changelog` normalize).
    #[serde(default)]
    single_partition: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RangeRecipe {
    start: i64,
    end: i64,
    mode: String,
    diff_start: Option<Snapshot>,
    diff_end: Option<Snapshot>,
    empty: bool,
}

impl TableRecipe {
    pub(crate) fn of(table: &PaimonTable) -> Self {
        TableRecipe {
            location: table.meta.io().root_url().to_string(),
            name: table.name.clone(),
            snapshot: table.snapshot.clone(),
            schema: table.schema.to_json(),
            view: view_name(table.view).to_string(),
            incremental: table.incremental.as_ref().map(|r| RangeRecipe {
                start: r.start,
                end: r.end,
                mode: r.mode.as_str().to_string(),
                diff_start: r.diff.as_ref().and_then(|d| d.start.clone()),
                diff_end: r.diff.as_ref().map(|d| d.end.clone()),
                empty: r.empty,
            }),
            allow_after_only: table.allow_after_only,
            read_optimized: table.read_optimized,
            single_partition: table.single_partition,
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a table recipe serializes")
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| exec_datafusion_err!("Invalid Paimon table recipe in a serialized plan: {e}"))
    }

    /// The table, its files read through the object stores of `runtime`, its scans in the
    /// shape Ballista distributes (see `PaimonTable::for_distribution`).
    pub(crate) fn open(&self, runtime: &RuntimeEnv) -> Result<PaimonTable> {
        let meta = open_meta(&self.location, runtime)?;
        let schema = TableSchema::from_json(self.schema.as_bytes(), &format!("{}/schema", self.location))?;
        let view = parse_view(&self.view)?;
        let table = PaimonTable::try_new(
            self.name.clone(),
            meta,
            self.snapshot.clone(),
            Arc::new(schema),
            view,
        )?;
        let incremental = match &self.incremental {
            None => None,
            Some(r) => Some(IncrementalRange {
                start: r.start,
                end: r.end,
                mode: parse_mode(&r.mode)?,
                diff: r.diff_end.clone().map(|end| DiffEnds {
                    start: r.diff_start.clone(),
                    end,
                }),
                empty: r.empty,
            }),
        };
        let table = PaimonTable {
            single_partition: self.single_partition,
            ..table
                .with_incremental(incremental)
                .with_after_only(self.allow_after_only)
                .for_distribution()
        };
        Ok(if self.read_optimized {
            table.read_optimized()
        } else {
            table
        })
    }
}

/// The files of the table at `location` (a URL), through the object stores of `runtime`.
pub(crate) fn open_meta(location: &str, runtime: &RuntimeEnv) -> Result<Arc<TableMeta>> {
    let url = url::Url::parse(location)
        .map_err(|e| exec_datafusion_err!("Invalid table location '{location}': {e}"))?;
    let store = runtime.object_store(ObjectStoreUrl::parse(&url[..url::Position::BeforePath])?)?;
    let root = Path::from_url_path(url.path()).map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(Arc::new(TableMeta::new(
        FileIO::new(store, root, location.to_string())
            .with_registry(Arc::clone(&runtime.object_store_registry)),
    )))
}

fn view_name(view: ReadView) -> &'static str {
    match view {
        ReadView::Table => "table",
        ReadView::AuditLog => "audit_log",
        ReadView::Binlog => "binlog",
        ReadView::Changelog => "changelog",
    }
}

fn parse_view(name: &str) -> Result<ReadView> {
    Ok(match name {
        "table" => ReadView::Table,
        "audit_log" => ReadView::AuditLog,
        "binlog" => ReadView::Binlog,
        "changelog" => ReadView::Changelog,
        other => {
            return Err(exec_datafusion_err!(
                "Unknown read view '{other}' in a table recipe"
            ))
        }
    })
}

fn parse_mode(name: &str) -> Result<ChangeMode> {
    Ok(match name {
        "delta" => ChangeMode::Delta,
        "changelog" => ChangeMode::Changelog,
        "diff" => ChangeMode::Diff,
        other => {
            return Err(exec_datafusion_err!(
                "Unknown change mode '{other}' in a table recipe"
            ))
        }
    })
}
