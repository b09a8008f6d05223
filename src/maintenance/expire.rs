//! Snapshot expiration (format.md §8.7).
//!
//! ```text
//! [E, end) expire, with end = the first id in [min, maxX) whose successor is younger than
//!   now - snapshot.time-retained, else maxX, where
//!   min  = max(L - num-retained.max + 1, E), maxX = min(L - num-retained.min + 1, E + expire.limit,
//!          the snapshot before the lowest nextSnapshot of any live consumer)
//! deleted: the snapshot files first (EARLIEST moves to `end`), then the data files that the delta
//!   lists of (E, end] DELETE, the changelog files of [E, end), and the manifests, manifest lists,
//!   index manifests and index files that only expiring snapshots reference
//! ```
//!
//! Nothing a retained snapshot or a tag uses is deleted. Snapshot files go first so that a crash
//! part-way leaves unreferenced files (orphans), never a snapshot whose files are gone.
//!
//! When `changelog.num-retained.*` or `changelog.time-retained` keep changes longer than
//! snapshots (the changelog lifecycle is *decoupled*, as in Java), an expiring snapshot leaves
//! its JSON as `changelog/changelog-<id>` and keeps what its changes are read from: its
//! changelog files and changelog manifests (tables with a producer), or its delta manifests and
//! the APPEND files its delta deletes (tables without one). [`super::changelog_expire`] deletes
//! them when the changelog expires.

use std::collections::{BTreeMap, HashSet};

use datafusion::common::{exec_datafusion_err, exec_err, Result};

use super::files::{Referenced, TableFiles};
use crate::meta::TableMeta;
use crate::spec::{paths, ManifestEntry, Snapshot, TableSchema};

/// Retention settings (Paimon's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ExpireOptions {
    /// `snapshot.num-retained.min` (10).
    pub(crate) retain_min: i64,
    /// `snapshot.num-retained.max` (`i32::MAX`).
    pub(crate) retain_max: i64,
    /// `snapshot.time-retained` in millis (1 h).
    pub(crate) time_retained_ms: i64,
    /// `snapshot.expire.limit` (50).
    pub(crate) limit: i64,
    /// `changelog.num-retained.min`, `.max` and `changelog.time-retained` in millis, where set
    /// (unset: the snapshot value).
    pub(crate) changelog_retain_min: Option<i64>,
    pub(crate) changelog_retain_max: Option<i64>,
    pub(crate) changelog_time_retained_ms: Option<i64>,
}

impl ExpireOptions {
    pub(crate) fn parse(table: &str, options: &BTreeMap<String, String>) -> Result<Self> {
        let int = |key: &str, default: i64| -> Result<i64> {
            match options.get(key) {
                None => Ok(default),
                Some(v) => v.trim().parse::<i64>().map_err(|_| {
                    exec_datafusion_err!("Option '{key}' of table {table} must be an integer, got '{v}'")
                }),
            }
        };
        let retain_min = int("snapshot.num-retained.min", 10)?;
        let retain_max = int("snapshot.num-retained.max", i64::from(i32::MAX))?;
        if retain_min < 1 || retain_max < retain_min {
            return exec_err!(
                "Table {table}: 'snapshot.num-retained.min' ({retain_min}) must be at least 1 and at most 'snapshot.num-retained.max' ({retain_max})"
            );
        }
        let time_retained_ms = match options.get("snapshot.time-retained") {
            None => 3_600_000,
            Some(v) => parse_duration_ms(v).ok_or_else(|| {
                exec_datafusion_err!(
                    "Option 'snapshot.time-retained' of table {table} must be a duration such as '1 h' or '30 min', got '{v}'"
                )
            })?,
        };
        let optional_int =
            |key: &str| -> Result<Option<i64>> { options.get(key).map(|_| int(key, 0)).transpose() };
        let changelog_time_retained_ms = match options.get("changelog.time-retained") {
            None => None,
            Some(v) => Some(parse_duration_ms(v).ok_or_else(|| {
                exec_datafusion_err!(
                    "Option 'changelog.time-retained' of table {table} must be a duration such as '1 d', got '{v}'"
                )
            })?),
        };
        Ok(ExpireOptions {
            retain_min,
            retain_max,
            time_retained_ms,
            limit: int("snapshot.expire.limit", 50)?.max(1),
            changelog_retain_min: optional_int("changelog.num-retained.min")?,
            changelog_retain_max: optional_int("changelog.num-retained.max")?,
            changelog_time_retained_ms,
        })
    }

    /// Changelog retention: (min, max, time in millis), snapshot values where unset.
    pub(crate) fn changelog(&self) -> (i64, i64, i64) {
        (
            self.changelog_retain_min.unwrap_or(self.retain_min),
            self.changelog_retain_max.unwrap_or(self.retain_max),
            self.changelog_time_retained_ms.unwrap_or(self.time_retained_ms),
        )
    }

    /// Whether changes are kept longer than snapshots (Java's `isChangelogDecoupled`).
    pub(crate) fn changelog_decoupled(&self) -> bool {
        let (min, max, time) = self.changelog();
        max > self.retain_max || min > self.retain_min || time > self.time_retained_ms
    }
}

/// Paimon durations: `1 h`, `30min`, `10 s`, `100 ms`, `2 d`, `1000` (millis).
pub(crate) fn parse_duration_ms(text: &str) -> Option<i64> {
    let text = text.trim().to_ascii_lowercase();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// Expires the snapshots `options` allows at time `now_ms`; returns how many were expired.
pub(crate) async fn expire_snapshots(
    meta: &TableMeta,
    schema: &TableSchema,
    options: ExpireOptions,
    now_ms: i64,
) -> Result<usize> {
    expire_older_than(meta, schema, options, now_ms - options.time_retained_ms).await
}

/// Expiration with an explicit time threshold: a snapshot goes only when its successor was
/// committed before `older_than_ms` (`sys.expire_snapshots(older_than => …)`).
pub(crate) async fn expire_older_than(
    meta: &TableMeta,
    schema: &TableSchema,
    options: ExpireOptions,
    older_than_ms: i64,
) -> Result<usize> {
    let (Some(earliest), Some(latest)) = (
        meta.earliest_snapshot_id_for_commit().await?,
        meta.latest_snapshot_id().await?,
    ) else {
        return Ok(0);
    };
    match expire_range(meta, schema, options, older_than_ms, earliest, latest).await {
        // Every writer expires after its commits: another process expiring the same snapshots
        // at the same time deletes what this one is reading. Deletes are idempotent and
        // whatever this run left is that one's to delete, so the race is not an error.
        Err(e)
            if crate::error::is_not_found(&e)
                && meta.earliest_snapshot_id().await?.unwrap_or(i64::MAX) > earliest =>
        {
            Ok(0)
        }
        other => other,
    }
}

async fn expire_range(
    meta: &TableMeta,
    schema: &TableSchema,
    options: ExpireOptions,
    older_than_ms: i64,
    earliest: i64,
    latest: i64,
) -> Result<usize> {
    let min = (latest - options.retain_max + 1).max(earliest);
    let mut max_exclusive = (latest - options.retain_min + 1).min(earliest + options.limit);
    if let Some(needed) = oldest_consumer_need(meta, schema, chrono::Utc::now().timestamp_millis()).await? {
        max_exclusive = max_exclusive.min(needed);
    }
    if max_exclusive <= earliest {
        return Ok(0);
    }
    let mut end = max_exclusive;
    for id in min..max_exclusive {
        let successor = meta.snapshot(id + 1).await?;
        if successor.time_millis > older_than_ms {
            end = id;
            break;
        }
    }
    if end <= earliest {
        return Ok(0);
    }
    Expiration {
        meta,
        files: TableFiles::new(meta, schema)?,
        decoupled: options.changelog_decoupled(),
        produces_changelog: produces_changelog(schema),
    }
    .run(earliest, end)
    .await?;
    Ok((end - earliest) as usize)
}

/// Whether the table writes changelog files (`changelog-producer` other than `none`).
pub(super) fn produces_changelog(schema: &TableSchema) -> bool {
    schema
        .options
        .get("changelog-producer")
        .is_some_and(|p| !p.trim().eq_ignore_ascii_case("none"))
}

/// The oldest snapshot a live consumer still needs: the one before its `nextSnapshot` (a tailing
/// read of a `none` table rebuilds its normalize state from it when it resumes). Consumers
/// whose file is older than `consumer.expiration-time` are removed instead (Paimon).
pub(super) async fn oldest_consumer_need(
    meta: &TableMeta,
    schema: &TableSchema,
    now_ms: i64,
) -> Result<Option<i64>> {
    let expiration = match schema.options.get("consumer.expiration-time") {
        None => None,
        Some(v) => Some(parse_duration_ms(v).ok_or_else(|| {
            exec_datafusion_err!(
                "Option 'consumer.expiration-time' must be a duration such as '1 d', got '{v}'"
            )
        })?),
    };
    let mut oldest: Option<i64> = None;
    for consumer in meta.consumers().await? {
        let stale = match (expiration, consumer.modified_millis) {
            (Some(ttl), Some(modified)) => modified < now_ms - ttl,
            _ => false,
        };
        if stale {
            meta.delete_consumer(&consumer.id).await?;
            continue;
        }
        let need = (consumer.next_snapshot - 1).max(1);
        oldest = Some(oldest.map_or(need, |o: i64| o.min(need)));
    }
    Ok(oldest)
}

struct Expiration<'a> {
    meta: &'a TableMeta,
    files: TableFiles<'a>,
    /// Changes outlive snapshots: see the module comment.
    decoupled: bool,
    produces_changelog: bool,
}

impl Expiration<'_> {
    async fn run(&self, earliest: i64, end: i64) -> Result<()> {
        let meta = self.meta;
        // Snapshots earliest ..= end, each read once.
        let snapshots: Vec<Snapshot> =
            futures::future::try_join_all((earliest..=end).map(|id| meta.snapshot(id))).await?;
        let (expiring, end_snapshot) = snapshots.split_at(snapshots.len() - 1);
        // What must survive: snapshot `end` and every tag.
        let mut keep = Referenced::default();
        let mut tagged_files: HashSet<String> = HashSet::new();
        self.files.collect(&end_snapshot[0], &mut keep).await?;
        for tag in meta.tags().await? {
            self.files.collect(&tag.snapshot, &mut keep).await?;
            for e in meta.live_files(&tag.snapshot, |_| true).await?.entries() {
                tagged_files.extend(self.files.data_path(e)?);
            }
        }
        // What the expiring snapshots leave behind (read before anything is deleted).
        let mut data_files: Vec<String> = Vec::new();
        let mut drop = Referenced::default();
        // Decoupled: the changelog lists (and without a producer the data lists) stay for the
        // long-lived changelog.
        let data_lists = !self.decoupled || self.produces_changelog;
        for snapshot in expiring {
            self.files
                .collect_parts(snapshot, data_lists, !self.decoupled, &mut drop)
                .await?;
            if !self.decoupled {
                for e in meta.changelog_entries(snapshot).await? {
                    data_files.extend(self.files.data_path(&e)?);
                }
            }
        }
        // Without a producer, the changes of a long-lived changelog are its APPEND files.
        let keeps_append_files = self.decoupled && !self.produces_changelog;
        // A file a snapshot's delta DELETEs is used by no later snapshot: look at (E, end].
        for snapshot in &snapshots[1..] {
            let appended = |e: &ManifestEntry| e.file.file_source.unwrap_or(0) == 0;
            let deleted = self
                .files
                .deleted_by_delta(snapshot, |e| keeps_append_files && appended(e))
                .await?;
            data_files.extend(deleted);
        }
        for (id, snapshot) in (earliest..end).zip(expiring) {
            if self.decoupled {
                meta.write_long_lived_changelog(snapshot).await?;
            }
            meta.io().delete(&paths::snapshot_file(id)).await?;
            let _ = meta
                .io()
                .write("snapshot/EARLIEST", (id + 1).to_string().into_bytes())
                .await;
        }
        for path in data_files.iter().filter(|p| !tagged_files.contains(*p)) {
            meta.io().delete_data_file(path).await?;
        }
        for name in drop.manifests.difference(&keep.manifests) {
            meta.io().delete(&paths::manifest_file(name)).await?;
        }
        for path in drop.index_files.difference(&keep.index_files) {
            meta.io().delete(path).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1 h"), Some(3_600_000));
        assert_eq!(parse_duration_ms("30min"), Some(1_800_000));
        assert_eq!(parse_duration_ms("10 s"), Some(10_000));
        assert_eq!(parse_duration_ms("250"), Some(250));
        assert_eq!(parse_duration_ms("2 d"), Some(172_800_000));
        assert_eq!(parse_duration_ms("soon"), None);
    }

    #[test]
    fn options_default_to_paimons_and_are_checked() {
        let o = ExpireOptions::parse("t", &BTreeMap::new()).unwrap();
        assert_eq!(
            o,
            ExpireOptions {
                retain_min: 10,
                retain_max: i32::MAX as i64,
                time_retained_ms: 3_600_000,
                limit: 50,
                changelog_retain_min: None,
                changelog_retain_max: None,
                changelog_time_retained_ms: None,
            }
        );
        let mut m = BTreeMap::new();
        m.insert("snapshot.num-retained.max".into(), "3".into());
        m.insert("snapshot.num-retained.min".into(), "5".into());
        assert!(ExpireOptions::parse("t", &m).is_err());
        assert!(!o.changelog_decoupled());
    }

    #[test]
    fn changelog_retention_beyond_snapshots_is_decoupled() {
        let mut m = BTreeMap::new();
        m.insert("snapshot.num-retained.max".into(), "20".into());
        m.insert("changelog.num-retained.max".into(), "100".into());
        let o = ExpireOptions::parse("t", &m).unwrap();
        assert_eq!(o.changelog(), (10, 100, 3_600_000));
        assert!(o.changelog_decoupled());
        m.insert("changelog.num-retained.max".into(), "20".into());
        m.insert("changelog.time-retained".into(), "2 h".into());
        assert!(ExpireOptions::parse("t", &m).unwrap().changelog_decoupled());
        m.insert("changelog.time-retained".into(), "1 h".into());
        assert!(!ExpireOptions::parse("t", &m).unwrap().changelog_decoupled());
    }
}
