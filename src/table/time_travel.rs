//! Resolving the snapshot a batch read sees from the session's read options
//! (`scan.snapshot-id`, `scan.tag-name`, `scan.timestamp-millis`; semantics.md §7.5).

use std::collections::BTreeMap;

use datafusion::common::{plan_datafusion_err, plan_err, Result};

use crate::meta::TableMeta;
use crate::spec::options::{SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS};
use crate::spec::Snapshot;

/// The snapshot to read: the one the options select, else the latest (None: empty table).
pub(crate) async fn resolve_snapshot(
    meta: &TableMeta,
    table: &str,
    options: &BTreeMap<String, String>,
) -> Result<Option<Snapshot>> {
    let chosen: Vec<&str> = [SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS]
        .into_iter()
        .filter(|k| options.contains_key(*k))
        .collect();
    if chosen.len() > 1 {
        return plan_err!(
            "Options {} of table {table} conflict: set only one of them",
            chosen.join(" and ")
        );
    }
    if let Some(v) = options.get(SCAN_SNAPSHOT_ID) {
        let id: i64 = v.trim().parse().map_err(|_| {
            plan_datafusion_err!(
                "Invalid value '{v}' for option '{SCAN_SNAPSHOT_ID}': expected a snapshot id"
            )
        })?;
        return match meta.snapshot(id).await {
            Ok(s) => Ok(Some(s)),
            Err(crate::Error::NotFound { .. }) => match meta.earliest_snapshot_id().await? {
                Some(earliest) if (1..earliest).contains(&id) => plan_err!(
                    "Snapshot {id} of table {table} has expired: the earliest snapshot is {earliest}"
                ),
                _ => plan_err!("Snapshot {id} of table {table} does not exist"),
            },
            Err(e) => Err(e.into()),
        };
    }
    if let Some(tag) = options.get(SCAN_TAG_NAME) {
        return match meta.tag(tag.trim()).await {
            Ok(t) => Ok(Some(t.snapshot)),
            Err(crate::Error::NotFound { .. }) => {
                plan_err!("Tag '{}' of table {table} does not exist", tag.trim())
            }
            Err(e) => Err(e.into()),
        };
    }
    if let Some(v) = options.get(SCAN_TIMESTAMP_MILLIS) {
        let millis: i64 = v.trim().parse().map_err(|_| {
            plan_datafusion_err!(
                "Invalid value '{v}' for option '{SCAN_TIMESTAMP_MILLIS}': expected epoch milliseconds"
            )
        })?;
        return match meta.snapshot_at_or_before(millis).await? {
            Some(s) => Ok(Some(s)),
            None => plan_err!("Table {table} has no snapshot committed at or before {millis}"),
        };
    }
    Ok(meta.latest_snapshot().await?)
}

/// The schema a read of `snapshot` answers with, as Java: a time-travel read uses the schema
/// of the snapshot it reads; a read of the latest state uses the latest schema, which ALTER
/// TABLE may have moved past the latest snapshot's (new columns read as NULL, changed options
/// apply; format.md §6.6).
/// `latest`: the latest schema, when the caller has read it already.
pub(crate) async fn read_schema(
    meta: &TableMeta,
    snapshot: Option<&Snapshot>,
    options: &BTreeMap<String, String>,
    latest: Option<std::sync::Arc<crate::spec::TableSchema>>,
) -> Result<std::sync::Arc<crate::spec::TableSchema>> {
    let time_travel = [SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS]
        .iter()
        .any(|k| options.contains_key(*k));
    Ok(match (snapshot, latest) {
        (Some(s), _) if time_travel => meta.schema(s.schema_id).await?,
        (_, Some(latest)) => latest,
        (_, None) => meta.latest_schema().await?,
    })
}
