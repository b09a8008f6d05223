//! Resolving the snapshot a batch read sees from the session's read options (semantics.md §7.5,
//! and Paimon's batch starting scanners): `scan.snapshot-id`, `scan.tag-name`,
//! `scan.timestamp-millis` / `scan.timestamp`, `scan.watermark`, `scan.version`, and `scan.mode`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use datafusion::common::{plan_datafusion_err, plan_err, Result};

use crate::meta::TableMeta;
use crate::spec::options::{SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS};
use crate::spec::Snapshot;

const SCAN_TIMESTAMP: &str = "scan.timestamp";
const SCAN_WATERMARK: &str = "scan.watermark";
const SCAN_VERSION: &str = "scan.version";
const SCAN_MODE: &str = "scan.mode";

/// The options that each pick one snapshot; at most one may be set.
const SELECTORS: [&str; 5] = [
    SCAN_SNAPSHOT_ID,
    SCAN_TAG_NAME,
    SCAN_TIMESTAMP_MILLIS,
    SCAN_TIMESTAMP,
    SCAN_WATERMARK,
];

/// The option of `options` that travels to a snapshot of the past (a selector or
/// `scan.version`), if any.
pub(crate) fn time_travel_option(options: &BTreeMap<String, String>) -> Option<&'static str> {
    SELECTORS
        .into_iter()
        .chain([SCAN_VERSION])
        .find(|k| options.contains_key(*k))
}

/// Whether a read with `options` reads the latest snapshot (no option selects another).
pub(crate) fn reads_latest_snapshot(options: &BTreeMap<String, String>) -> bool {
    time_travel_option(options).is_none() && !options.contains_key(SCAN_MODE)
}

/// The snapshot to read: the one the options select, else the latest (None: empty table).
pub(crate) async fn resolve_snapshot(
    meta: &TableMeta,
    table: &str,
    options: &BTreeMap<String, String>,
) -> Result<Option<Snapshot>> {
    // Options that change what a batch read returns and that this crate does not implement:
    // an error, never a read that silently ignores them.
    for key in ["scan.file-creation-time-millis", "scan.creation-time-millis"] {
        if options.contains_key(key) {
            return plan_err!("Option '{key}' is not supported by batch reads of table {table}");
        }
    }
    // (option `branch` is taken by the catalog, which opens the branch's metadata)
    let options = with_version_resolved(meta, table, options).await?;
    let chosen: Vec<&str> = SELECTORS
        .into_iter()
        .filter(|k| options.contains_key(*k))
        .collect();
    if chosen.len() > 1 {
        return plan_err!(
            "Options {} of table {table} conflict: set only one of them",
            chosen.join(" and ")
        );
    }
    let mode = options.get(SCAN_MODE).map(|m| m.trim().to_ascii_lowercase());
    let needs = |allowed: &[&str], mode: &str| -> Result<()> {
        match chosen.first() {
            Some(k) if allowed.contains(k) => Ok(()),
            Some(k) => plan_err!("Option '{k}' of table {table} cannot be used with scan.mode '{mode}'"),
            None if allowed.is_empty() => Ok(()),
            None => plan_err!(
                "scan.mode '{mode}' of table {table} needs one of {}",
                allowed.join(", ")
            ),
        }
    };
    match mode.as_deref() {
        None | Some("default") => {}
        Some(m @ ("latest-full" | "full" | "latest")) => needs(&[], m)?,
        Some(m @ "from-snapshot") => needs(&[SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_WATERMARK], m)?,
        Some(m @ "from-snapshot-full") => needs(&[SCAN_SNAPSHOT_ID], m)?,
        Some(m @ "from-timestamp") => needs(&[SCAN_TIMESTAMP_MILLIS, SCAN_TIMESTAMP], m)?,
        Some(m @ "incremental") => needs(&[], m)?,
        Some(m @ "compacted-full") => {
            needs(&[], m)?;
            return latest_compacted(meta, &options, None).await;
        }
        Some(m @ ("from-file-creation-time" | "from-creation-timestamp")) => {
            return plan_err!("scan.mode '{m}' is not supported by batch reads of table {table}")
        }
        Some(m) => {
            return plan_err!(
                "Invalid value '{m}' for option '{SCAN_MODE}' of table {table}: expected default, \
                 latest-full, latest, from-snapshot, from-snapshot-full, from-timestamp, \
                 compacted-full or incremental"
            )
        }
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
    let millis = match (options.get(SCAN_TIMESTAMP_MILLIS), options.get(SCAN_TIMESTAMP)) {
        (Some(v), _) => Some(v.trim().parse::<i64>().map_err(|_| {
            plan_datafusion_err!(
                "Invalid value '{v}' for option '{SCAN_TIMESTAMP_MILLIS}': expected epoch milliseconds"
            )
        })?),
        (None, Some(v)) => Some(super::incremental::parse_time(v).ok_or_else(|| {
            plan_datafusion_err!(
                "Invalid value '{v}' for option '{SCAN_TIMESTAMP}' of table {table}: expected \
                 'yyyy-MM-dd HH:mm:ss[.SSS]' (local time)"
            )
        })?),
        (None, None) => None,
    };
    if let Some(millis) = millis {
        return match meta.snapshot_at_or_before(millis).await? {
            Some(s) => Ok(Some(s)),
            None => plan_err!("Table {table} has no snapshot committed at or before {millis}"),
        };
    }
    if let Some(v) = options.get(SCAN_WATERMARK) {
        let watermark: i64 = v.trim().parse().map_err(|_| {
            plan_datafusion_err!(
                "Invalid value '{v}' for option '{SCAN_WATERMARK}' of table {table}: expected an integer"
            )
        })?;
        return match earliest_with_watermark(meta, watermark).await? {
            Some(s) => Ok(Some(s)),
            None => plan_err!("Table {table} has no snapshot with a watermark at or after {watermark}"),
        };
    }
    Ok(meta.latest_snapshot().await?)
}

/// `scan.version` (SQL `VERSION AS OF`) as the option it stands for, as Paimon's
/// `TimeTravelUtil` reads it: a tag of that name, else `watermark-<w>`, else a snapshot id.
async fn with_version_resolved<'a>(
    meta: &TableMeta,
    table: &str,
    options: &'a BTreeMap<String, String>,
) -> Result<Cow<'a, BTreeMap<String, String>>> {
    let Some(version) = options.get(SCAN_VERSION).map(|v| v.trim().to_string()) else {
        return Ok(Cow::Borrowed(options));
    };
    let mut resolved = options.clone();
    resolved.remove(SCAN_VERSION);
    let (key, value) = match meta.tag(&version).await {
        Ok(_) => (SCAN_TAG_NAME, version),
        Err(crate::Error::NotFound { .. }) => match version.strip_prefix("watermark-") {
            Some(w) => (SCAN_WATERMARK, w.to_string()),
            None if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => {
                (SCAN_SNAPSHOT_ID, version)
            }
            None => {
                return plan_err!(
                    "Version '{version}' of table {table} is neither a tag, a watermark-<n> nor a snapshot id"
                )
            }
        },
        Err(e) => return Err(e.into()),
    };
    resolved.insert(key.to_string(), value);
    Ok(Cow::Owned(resolved))
}

/// The earliest snapshot whose watermark is at least `watermark` (snapshots without one are
/// skipped), as Paimon's `StaticFromWatermarkStartingScanner`.
async fn earliest_with_watermark(meta: &TableMeta, watermark: i64) -> Result<Option<Snapshot>> {
    Ok(first_with_watermark(meta.snapshots().await?, watermark))
}

/// Of `snapshots` (in id order), the first whose watermark is at least `watermark`; Java's
/// `Long.MIN_VALUE` means none.
fn first_with_watermark(snapshots: Vec<Snapshot>, watermark: i64) -> Option<Snapshot> {
    snapshots
        .into_iter()
        .find(|s| s.watermark.is_some_and(|w| w != i64::MIN && w >= watermark))
}

/// `scan.mode = compacted-full`: the latest COMPACT snapshot, else the latest. With producer
/// `full-compaction` or `full-compaction.delta-commits = N` only a full compaction's counts: a
/// COMPACT snapshot whose commit identifier is a multiple of N (1 by default) or a batch
/// commit's (Paimon's `FullCompactedStartingScanner`). Only snapshots up to `up_to`, if given.
pub(crate) async fn latest_compacted(
    meta: &TableMeta,
    options: &BTreeMap<String, String>,
    up_to: Option<i64>,
) -> Result<Option<Snapshot>> {
    let schema = meta.latest_schema().await?;
    let option = |k: &str| options.get(k).or_else(|| schema.options.get(k)).map(|v| v.trim());
    let delta_commits = option("full-compaction.delta-commits").and_then(|v| v.parse::<i64>().ok());
    let full_only = delta_commits.is_some() || option("changelog-producer") == Some("full-compaction");
    let every = delta_commits.unwrap_or(1).max(1);
    let mut snapshots = meta.snapshots().await?;
    snapshots.retain(|s| up_to.is_none_or(|last| s.id <= last));
    Ok(pick_compacted(snapshots, full_only.then_some(every)))
}

/// Of `snapshots` (in id order), the latest COMPACT one, only full compactions every
/// `full_every` commits when given; else the latest.
fn pick_compacted(mut snapshots: Vec<Snapshot>, full_every: Option<i64>) -> Option<Snapshot> {
    let at = snapshots.iter().rposition(|s| {
        s.commit_kind == "COMPACT"
            && full_every.is_none_or(|n| s.commit_identifier % n == 0 || s.commit_identifier == i64::MAX)
    });
    match at {
        Some(at) => Some(snapshots.swap_remove(at)),
        None => snapshots.pop(),
    }
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
    let time_travel = SELECTORS
        .iter()
        .chain([&SCAN_VERSION])
        .any(|k| options.contains_key(*k));
    Ok(match (snapshot, latest) {
        (Some(s), _) if time_travel => meta.schema(s.schema_id).await?,
        // a schema added after the caller read the latest one, and data written with it
        (Some(s), Some(latest)) if s.schema_id > latest.id => meta.latest_schema_confirmed().await?,
        (_, Some(latest)) => latest,
        (_, None) => meta.latest_schema().await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(id: i64, kind: &str, commit_identifier: i64, watermark: Option<i64>) -> Snapshot {
        let json = format!(
            r#"{{"version":3,"id":{id},"schemaId":0,"baseManifestList":"b","deltaManifestList":"d","commitUser":"u","commitIdentifier":{commit_identifier},"commitKind":"{kind}","timeMillis":0,"watermark":{}}}"#,
            watermark.map_or("null".to_string(), |w| w.to_string())
        );
        Snapshot::from_json(json.as_bytes(), "snapshot").expect("snapshot json")
    }

    fn ids(s: Option<Snapshot>) -> Option<i64> {
        s.map(|s| s.id)
    }

    /// Paimon's CompactedStartingScanner / FullCompactedStartingScanner: the latest COMPACT
    /// snapshot, with full compaction only those every N commits (or batch commits); else the
    /// latest snapshot.
    #[test]
    fn compacted_full_picks_the_latest_qualifying_compact_snapshot() {
        let history = || {
            vec![
                snapshot(1, "APPEND", 1, None),
                snapshot(2, "COMPACT", 2, None),
                snapshot(3, "COMPACT", 3, None),
                snapshot(4, "APPEND", 4, None),
            ]
        };
        assert_eq!(ids(pick_compacted(history(), None)), Some(3));
        assert_eq!(ids(pick_compacted(history(), Some(2))), Some(2));
        assert_eq!(ids(pick_compacted(history(), Some(5))), Some(4));
        let batch = vec![
            snapshot(1, "COMPACT", i64::MAX, None),
            snapshot(2, "APPEND", i64::MAX, None),
        ];
        assert_eq!(ids(pick_compacted(batch, Some(3))), Some(1));
        assert_eq!(ids(pick_compacted(Vec::new(), None)), None);
    }

    /// StaticFromWatermarkStartingScanner: the earliest snapshot whose watermark reaches w;
    /// snapshots without one (or with Java's Long.MIN_VALUE) never qualify.
    #[test]
    fn watermark_picks_the_earliest_snapshot_reaching_it() {
        let history = || {
            vec![
                snapshot(1, "APPEND", 1, None),
                snapshot(2, "APPEND", 2, Some(i64::MIN)),
                snapshot(3, "APPEND", 3, Some(10)),
                snapshot(4, "APPEND", 4, Some(20)),
            ]
        };
        assert_eq!(ids(first_with_watermark(history(), -100)), Some(3));
        assert_eq!(ids(first_with_watermark(history(), 10)), Some(3));
        assert_eq!(ids(first_with_watermark(history(), 11)), Some(4));
        assert_eq!(ids(first_with_watermark(history(), 21)), None);
    }
}
