//! Read-only metadata tables `<table>$<name>` (semantics.md §8, §7.1).
//!
//! Each builder reads the table's metadata at planning time and returns an in-memory table;
//! `$audit_log` and `$binlog` are scans of the table itself keeping retractions, with a
//! `rowkind` column (both also read incrementally with the `incremental-between*` options).
//! Tables that depend on a snapshot (`$files`, `$manifests`, `$partitions`, `$buckets`,
//! `$table_indexes`) honour the session's time-travel options like a normal read.
//! Value formats follow the reference fixtures written by pypaimon 2.1.0 (see [`format`]).

mod aggregation_fields;
mod audit_log;
mod binlog;
mod branches;
mod buckets;
mod consumers;
mod files;
mod format;
mod manifests;
mod options;
mod partitions;
mod read_only;
mod schemas;
mod snapshots;
mod statistics;
mod table_indexes;
mod tags;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::catalog::TableProvider;

use datafusion::common::{plan_err, Result, ScalarValue};
pub(crate) use read_only::ReadOnlyTable;

use crate::meta::TableMeta;
use crate::spec::{BinaryRow, DataType, ManifestEntry, Snapshot};
use crate::table::{open_table, ReadView};

/// `t$audit_log`.
pub(crate) const AUDIT_LOG: &str = "audit_log";
/// `t$binlog`.
pub(crate) const BINLOG: &str = "binlog";
/// `t$snapshots`.
pub(crate) const SNAPSHOTS: &str = "snapshots";
/// `t$schemas`.
pub(crate) const SCHEMAS: &str = "schemas";
/// `t$options`.
pub(crate) const OPTIONS: &str = "options";
/// `t$files`.
pub(crate) const FILES: &str = "files";
/// `t$manifests`.
pub(crate) const MANIFESTS: &str = "manifests";
/// `t$partitions`.
pub(crate) const PARTITIONS: &str = "partitions";
/// `t$buckets`.
pub(crate) const BUCKETS: &str = "buckets";
/// `t$changelog`.
pub(crate) const CHANGELOG: &str = "changelog";
/// `t$aggregation_fields`.
pub(crate) const AGGREGATION_FIELDS: &str = "aggregation_fields";
/// `t$statistics`.
pub(crate) const STATISTICS: &str = "statistics";
/// `t$branches`.
pub(crate) const BRANCHES: &str = "branches";
/// `t$ro`.
pub(crate) const READ_OPTIMIZED: &str = "ro";
/// `t$row_tracking`: the table's rows with their `_ROW_ID` and `_SEQUENCE_NUMBER`.
pub(crate) const ROW_TRACKING: &str = "row_tracking";
/// `t$consumers`.
pub(crate) const CONSUMERS: &str = "consumers";
/// `t$tags`.
pub(crate) const TAGS: &str = "tags";
/// `t$table_indexes`.
pub(crate) const TABLE_INDEXES: &str = "table_indexes";

/// Names of every supported system table.
pub(crate) const SYSTEM_TABLES: &[&str] = &[
    AUDIT_LOG,
    BINLOG,
    CHANGELOG,
    CONSUMERS,
    READ_OPTIMIZED,
    ROW_TRACKING,
    AGGREGATION_FIELDS,
    STATISTICS,
    BRANCHES,
    SNAPSHOTS,
    SCHEMAS,
    OPTIONS,
    FILES,
    MANIFESTS,
    PARTITIONS,
    BUCKETS,
    TAGS,
    TABLE_INDEXES,
];

/// Builds the system table `name` of `table`.
pub(crate) async fn load(
    name: &str,
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let provider = match name {
        // `$audit_log` and `$binlog` are PaimonTables, which refuse writes themselves.
        AUDIT_LOG => return audit_log::build(table, meta, options).await,
        BINLOG => return binlog::build(table, meta, options).await,
        CHANGELOG => {
            let name = format!("{table}${CHANGELOG}");
            return Ok(Arc::new(
                open_table(name, meta, options, ReadView::Changelog).await?,
            ));
        }
        SNAPSHOTS => snapshots::build(meta).await,
        SCHEMAS => schemas::build(meta).await,
        OPTIONS => options::build(meta).await,
        FILES => files::build(table, meta, options).await,
        MANIFESTS => manifests::build(table, meta, options).await,
        PARTITIONS => partitions::build(table, meta, options).await,
        BUCKETS => buckets::build(table, meta, options).await,
        TAGS => tags::build(meta).await,
        CONSUMERS => consumers::build(meta).await,
        AGGREGATION_FIELDS => aggregation_fields::build(meta).await,
        STATISTICS => statistics::build(table, meta, options).await,
        BRANCHES => branches::build(meta).await,
        READ_OPTIMIZED => {
            let name = format!("{table}${READ_OPTIMIZED}");
            let ro = open_table(name, meta, options, ReadView::Table)
                .await?
                .read_optimized();
            return Ok(Arc::new(ro));
        }
        ROW_TRACKING => {
            let name = format!("{table}${ROW_TRACKING}");
            let table = open_table(name, meta, options, ReadView::Table).await?;
            Ok(Arc::new(table.with_row_tracking()?) as Arc<dyn TableProvider>)
        }
        TABLE_INDEXES => table_indexes::build(table, meta, options).await,
        other => plan_err!(
            "Unknown system table '{other}' of table {table}; supported: {}",
            SYSTEM_TABLES.join(", ")
        ),
    }?;
    Ok(Arc::new(read_only::ReadOnlyTable::new(
        format!("{table}${name}"),
        provider,
    )))
}

/// The live files of one (partition, bucket), in manifest order.
pub(super) struct FileGroup {
    /// Serialized partition.
    pub(super) partition_bytes: Vec<u8>,
    /// Decoded partition values.
    pub(super) partition: Vec<ScalarValue>,
    pub(super) bucket: i32,
    pub(super) entries: Vec<ManifestEntry>,
}

/// The live data files of `snapshot` grouped by partition and bucket, sorted by partition
/// values (NULL first) then bucket.
pub(super) async fn live_groups(
    meta: &TableMeta,
    snapshot: &Snapshot,
    partition_types: &[DataType],
) -> Result<Vec<FileGroup>> {
    let live = meta.live_files(snapshot, |_| true).await?;
    let mut groups = Vec::with_capacity(live.groups.len());
    for ((partition_bytes, bucket), entries) in live.groups {
        let partition = BinaryRow::decode(&partition_bytes, partition_types)?.values;
        groups.push(FileGroup {
            partition_bytes,
            partition,
            bucket,
            entries,
        });
    }
    groups.sort_by(|a, b| partition_order(&a.partition, &b.partition).then(a.bucket.cmp(&b.bucket)));
    Ok(groups)
}

/// Orders partitions by their values, field by field, NULL first.
pub(super) fn partition_order(a: &[ScalarValue], b: &[ScalarValue]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}
