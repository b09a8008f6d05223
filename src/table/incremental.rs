//! Resolving the `incremental-between` read options into the snapshot range an incremental
//! read covers (semantics.md §7.2; Java `AbstractDataTableScan.createIncrementalStartingScanner`,
//! `IncrementalDeltaStartingScanner`, `IncrementalDiffStartingScanner`).
//!
//! * `incremental-between = 'S,E'`: snapshots `S+1 ..= E`; `S = E` is empty; `E ≥ S`,
//!   `S ≥ earliest − 1` and `E ≤ latest` are required.
//! * `incremental-between = 'tagA,tagB'` (both tags exist): a diff of the two tagged snapshots,
//!   or with `incremental-between-tag-to-snapshot = true` the snapshot range between them.
//! * `incremental-between-timestamp = 't1,t2'` (epoch millis, or timestamps in the local time
//!   zone): from the latest snapshot
//!   committed at or before `t1` (else `earliest − 1`) to the latest committed at or before
//!   `t2`; empty when `t1 = t2`, `t1` is after the latest commit or `t2` before the earliest.
//! * `incremental-between-scan-mode`: `auto` is `changelog` when the table has a changelog
//!   producer, else `delta`. A diff whose start precedes the first snapshot compares with an
//!   empty state.
//!
//! Planning never writes: only snapshot and tag files are read.

use std::collections::BTreeMap;

use datafusion::common::{plan_datafusion_err, plan_err, Result};

use crate::meta::TableMeta;
use crate::scan::incremental::{ChangeMode, DiffEnds, IncrementalRange};
use crate::spec::options::{
    IncrementalScanMode, INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_SCAN_MODE,
    INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT, INCREMENTAL_BETWEEN_TIMESTAMP, SCAN_SNAPSHOT_ID, SCAN_TAG_NAME,
    SCAN_TIMESTAMP_MILLIS,
};
use crate::spec::{Snapshot, TableOptions};

/// The incremental read the options ask for, or None when no `incremental-between*` option
/// is set.
pub(crate) async fn resolve_incremental(
    meta: &TableMeta,
    table: &str,
    options: &BTreeMap<String, String>,
    table_options: &TableOptions,
) -> Result<Option<IncrementalRange>> {
    let key = match (
        options.contains_key(INCREMENTAL_BETWEEN),
        options.contains_key(INCREMENTAL_BETWEEN_TIMESTAMP),
    ) {
        (false, false) => return Ok(None),
        (true, true) => {
            return plan_err!(
                "Options '{INCREMENTAL_BETWEEN}' and '{INCREMENTAL_BETWEEN_TIMESTAMP}' of table {table} \
                 conflict: set only one of them"
            )
        }
        (true, false) => INCREMENTAL_BETWEEN,
        (false, true) => INCREMENTAL_BETWEEN_TIMESTAMP,
    };
    for time_travel in [
        SCAN_SNAPSHOT_ID,
        SCAN_TAG_NAME,
        SCAN_TIMESTAMP_MILLIS,
        "scan.timestamp",
    ] {
        if options.contains_key(time_travel) {
            return plan_err!(
                "Option '{key}' of table {table} conflicts with '{time_travel}': an incremental \
                 read covers a range of snapshots, not one; RESET one of them"
            );
        }
    }
    let resolver = Resolver {
        meta,
        table,
        mode: scan_mode(table, options, table_options)?,
        tag_to_snapshot: tag_to_snapshot(table, options)?,
    };
    let value = options[key].as_str();
    if key == INCREMENTAL_BETWEEN {
        resolver.between(value).await.map(Some)
    } else {
        resolver.between_timestamps(value).await.map(Some)
    }
}

/// The scan mode with `auto` resolved by the changelog producer.
fn scan_mode(
    table: &str,
    options: &BTreeMap<String, String>,
    table_options: &TableOptions,
) -> Result<ChangeMode> {
    let mode = match options.get(INCREMENTAL_BETWEEN_SCAN_MODE) {
        None => IncrementalScanMode::Auto,
        Some(v) => IncrementalScanMode::parse(v).ok_or_else(|| {
            plan_datafusion_err!(
                "Invalid value '{v}' for option '{INCREMENTAL_BETWEEN_SCAN_MODE}' of table {table}: \
                 expected auto, delta, changelog or diff"
            )
        })?,
    };
    Ok(match mode {
        IncrementalScanMode::Auto if table_options.changelog_producer.eq_ignore_ascii_case("none") => {
            ChangeMode::Delta
        }
        IncrementalScanMode::Auto | IncrementalScanMode::Changelog => ChangeMode::Changelog,
        IncrementalScanMode::Delta => ChangeMode::Delta,
        IncrementalScanMode::Diff => ChangeMode::Diff,
    })
}

fn tag_to_snapshot(table: &str, options: &BTreeMap<String, String>) -> Result<bool> {
    match options
        .get(INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT)
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => plan_err!(
            "Invalid value '{other}' for option '{INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT}' of table {table}: \
             expected true or false"
        ),
    }
}

/// Splits `'a,b'` into its two trimmed parts.
fn two_parts<'a>(table: &str, key: &str, value: &'a str, hint: &str) -> Result<(&'a str, &'a str)> {
    match value.split(',').map(str::trim).collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok((a, b)),
        _ => plan_err!(
            "Invalid value '{value}' for option '{key}' of table {table}: expected 'start,end' ({hint})"
        ),
    }
}

struct Resolver<'a> {
    meta: &'a TableMeta,
    table: &'a str,
    mode: ChangeMode,
    tag_to_snapshot: bool,
}

impl Resolver<'_> {
    /// `incremental-between`: two tags, else two snapshot ids.
    async fn between(&self, value: &str) -> Result<IncrementalRange> {
        let hint = "two snapshot ids or two tag names";
        let (a, b) = two_parts(self.table, INCREMENTAL_BETWEEN, value, hint)?;
        if let (Some(start), Some(end)) = (self.tag(a).await?, self.tag(b).await?) {
            return self.between_tags(a, b, start, end).await;
        }
        let (Ok(start), Ok(end)) = (a.parse::<i64>(), b.parse::<i64>()) else {
            return plan_err!(
                "Invalid value '{value}' for option '{INCREMENTAL_BETWEEN}' of table {}: '{a}' and '{b}' \
                 are neither two tags nor two snapshot ids",
                self.table
            );
        };
        self.between_ids(start, end).await
    }

    async fn tag(&self, name: &str) -> Result<Option<Snapshot>> {
        match self.meta.tag(name).await {
            Ok(t) => Ok(Some(t.snapshot)),
            Err(crate::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Two tags: a diff of their snapshots (the scan mode is ignored), or their snapshot
    /// range with `incremental-between-tag-to-snapshot`.
    async fn between_tags(
        &self,
        a: &str,
        b: &str,
        start: Snapshot,
        end: Snapshot,
    ) -> Result<IncrementalRange> {
        if self.tag_to_snapshot {
            return self.between_ids(start.id, end.id).await;
        }
        if end.id < start.id {
            return plan_err!(
                "Option '{INCREMENTAL_BETWEEN}' of table {}: end tag '{b}' (snapshot {}) must not be older \
                 than start tag '{a}' (snapshot {})",
                self.table,
                end.id,
                start.id
            );
        }
        let (s, e) = (start.id, end.id);
        if s == e {
            return Ok(IncrementalRange::empty(s, e, ChangeMode::Diff));
        }
        Ok(diff(s, e, Some(start), end))
    }

    /// Snapshot ids `(start, end]`.
    async fn between_ids(&self, start: i64, end: i64) -> Result<IncrementalRange> {
        if end < start {
            return plan_err!(
                "Option '{INCREMENTAL_BETWEEN}' of table {}: ending snapshot id {end} must be >= starting \
                 snapshot id {start}",
                self.table
            );
        }
        let (Some(earliest), Some(latest)) = (
            self.meta.earliest_snapshot_id().await?,
            self.meta.latest_snapshot_id().await?,
        ) else {
            return Ok(IncrementalRange::empty(start, end, self.mode));
        };
        if start == end {
            return Ok(IncrementalRange::empty(start, end, self.mode));
        }
        // Changes (not a diff) can also come from long-lived changelogs of expired snapshots.
        let first = if self.mode == ChangeMode::Diff {
            earliest
        } else {
            self.meta.earliest_changes_id().await?.unwrap_or(earliest)
        };
        if start < first - 1 || end > latest {
            return plan_err!(
                "Option '{INCREMENTAL_BETWEEN}' of table {}: snapshot range ({start}, {end}] is out of the \
                 available range: the start must be >= {} and the end <= {latest}",
                self.table,
                first - 1
            );
        }
        self.range(start, end, earliest, false).await
    }

    /// `incremental-between-timestamp`: commit times `(t1, t2]`.
    async fn between_timestamps(&self, value: &str) -> Result<IncrementalRange> {
        let key = INCREMENTAL_BETWEEN_TIMESTAMP;
        let hint = "two epoch milliseconds or timestamps";
        let (a, b) = two_parts(self.table, key, value, hint)?;
        let (Some(t1), Some(t2)) = (parse_time(a), parse_time(b)) else {
            return plan_err!(
                "Invalid value '{value}' for option '{key}' of table {}: expected {hint} \
                 ('yyyy-MM-dd HH:mm:ss[.SSS]', local time)",
                self.table
            );
        };
        if t2 < t1 {
            return plan_err!(
                "Option '{key}' of table {}: ending timestamp {t2} must be >= starting timestamp {t1}",
                self.table
            );
        }
        let snapshots = self.meta.snapshots().await?;
        let (Some(earliest), Some(latest)) = (snapshots.first(), snapshots.last()) else {
            return Ok(IncrementalRange::empty(0, 0, self.mode));
        };
        let at_or_before = |t: i64| snapshots.iter().rev().find(|s| s.time_millis <= t);
        let start = match at_or_before(t1) {
            Some(s) if earliest.time_millis <= t1 => s.id,
            _ => earliest.id - 1,
        };
        let end = at_or_before(t2).map_or(latest.id, |s| s.id);
        if t1 == t2 || t1 > latest.time_millis || t2 < earliest.time_millis {
            return Ok(IncrementalRange::empty(start, start, self.mode));
        }
        self.range(start, end, earliest.id, true).await
    }

    /// A checked, non-empty range; loads the two states of a diff.
    ///
    /// A diff starting before snapshot 1 compares with an empty state. A start state that has
    /// expired is unknown: by ids that is an error; by time the earliest snapshot stands in
    /// for it, as in Java's `IncrementalDiffStartingScanner.betweenTimestamps`.
    async fn range(&self, start: i64, end: i64, earliest: i64, by_time: bool) -> Result<IncrementalRange> {
        if start == end {
            return Ok(IncrementalRange::empty(start, end, self.mode));
        }
        if self.mode != ChangeMode::Diff {
            return Ok(IncrementalRange {
                start,
                end,
                mode: self.mode,
                diff: None,
                empty: false,
            });
        }
        let from = if start < 1 {
            None
        } else if start >= earliest {
            Some(self.meta.snapshot(start).await?)
        } else if by_time {
            Some(self.meta.snapshot(earliest).await?)
        } else {
            return plan_err!(
                "Option '{INCREMENTAL_BETWEEN}' of table {}: snapshot {start} has expired, so a diff \
                 has no start state; start at {earliest} or later",
                self.table
            );
        };
        Ok(diff(start, end, from, self.meta.snapshot(end).await?))
    }
}

/// Epoch milliseconds, or a timestamp `yyyy-MM-dd[ HH:mm:ss[.SSS]]` in the local time zone
/// (Java parses `incremental-between-timestamp` the same two ways).
/// Epoch milliseconds, or a local timestamp `yyyy-MM-dd HH:mm:ss[.SSS]` (also with `T`, to the
/// minute, or a date alone) as epoch milliseconds.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(millis) = text.parse::<i64>() {
        return Some(millis);
    }
    let naive = ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
        .or_else(|| {
            let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
            date.and_hms_opt(0, 0, 0)
        })?;
    use chrono::TimeZone;
    let local = chrono::Local.from_local_datetime(&naive).earliest()?;
    Some(local.timestamp_millis())
}

fn diff(start: i64, end: i64, from: Option<Snapshot>, to: Snapshot) -> IncrementalRange {
    IncrementalRange {
        start,
        end,
        mode: ChangeMode::Diff,
        diff: Some(DiffEnds { start: from, end: to }),
        empty: false,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_are_millis_or_local_timestamps() {
        assert_eq!(parse_time("1795982953868"), Some(1795982953868));
        assert_eq!(parse_time("-5"), Some(-5));
        let day = parse_time("2024-01-02").expect("a date");
        assert_eq!(parse_time("2024-01-02 00:00:00"), Some(day));
        assert_eq!(parse_time("2024-01-02T00:00:00.250"), Some(day + 250));
        assert_eq!(parse_time("2024-01-02 01:30"), Some(day + 90 * 60 * 1000));
        assert_eq!(parse_time("yesterday"), None);
    }
}
