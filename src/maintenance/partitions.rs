//! Partition expiration (`partition.expiration-time`, `CALL sys.expire_partitions`): partitions
//! whose time is older than the expiration time are dropped by one OVERWRITE snapshot. Their
//! files go when that snapshot's predecessors expire. A partition's time is read from its
//! values (`partition.expiration-strategy` = `values-time`, the default) or is the creation
//! time of its newest live file (`update-time`).
//!
//! The time of a partition: `partition.timestamp-pattern` (e.g. `$dt $hour:00:00`, default: the
//! first partition column's value) parsed with `partition.timestamp-formatter` (Java pattern
//! letters `yyyy MM dd HH mm ss`; default `yyyy-MM-dd HH:mm:ss`, or `yyyy-MM-dd` for a date).
//! Values that do not parse are never expired.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use datafusion::common::{plan_err, Result, ScalarValue};

use crate::meta::{CommitRequest, OverwriteScope, TableMeta};
use crate::spec::{paths, BinaryRow, TableSchema};

/// How a partition's time is read from its values.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionTime {
    /// `partition.timestamp-pattern`.
    pub(crate) pattern: Option<String>,
    /// `partition.timestamp-formatter`.
    pub(crate) formatter: Option<String>,
    /// `partition.expiration-strategy` = `update-time`: the newest file's creation time
    /// instead of the values.
    pub(crate) update_time: bool,
}

impl PartitionTime {
    pub(crate) fn from_options(options: &BTreeMap<String, String>) -> Self {
        PartitionTime {
            pattern: options.get("partition.timestamp-pattern").cloned(),
            formatter: options.get("partition.timestamp-formatter").cloned(),
            update_time: options
                .get("partition.expiration-strategy")
                .is_some_and(|s| is_update_time(s)),
        }
    }

    /// The time of the partition with `values` for `keys`, if it parses.
    fn of(&self, keys: &[String], values: &[ScalarValue]) -> Option<NaiveDateTime> {
        let text_of = |v: &ScalarValue| paths::partition_value_text(v).unwrap_or_default();
        let text = match &self.pattern {
            None => text_of(values.first()?),
            Some(pattern) => {
                let mut text = pattern.clone();
                // Longest names first, so `$dt` does not replace part of `$dthour`.
                let mut order: Vec<usize> = (0..keys.len()).collect();
                order.sort_by_key(|&i| std::cmp::Reverse(keys[i].len()));
                for i in order {
                    text = text.replace(&format!("${}", keys[i]), &text_of(&values[i]));
                }
                text
            }
        };
        match &self.formatter {
            Some(java) => parse_with(&text, &java_to_chrono(java)),
            None => parse_with(&text, "%Y-%m-%d %H:%M:%S").or_else(|| parse_with(&text, "%Y-%m-%d")),
        }
    }
}

/// Whether a `partition.expiration-strategy` value names the update-time strategy.
pub(crate) fn is_update_time(strategy: &str) -> bool {
    strategy.trim().eq_ignore_ascii_case("update-time")
}

/// Java `DateTimeFormatter` letters to chrono's (the ones partition formats use).
fn java_to_chrono(java: &str) -> String {
    java.replace("yyyy", "%Y")
        .replace("MM", "%m")
        .replace("dd", "%d")
        .replace("HH", "%H")
        .replace("mm", "%M")
        .replace("ss", "%S")
}

fn parse_with(text: &str, format: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, format).ok().or_else(|| {
        chrono::NaiveDate::parse_from_str(text, format)
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
    })
}

/// Drops the partitions whose time is before `now - expiration_ms` (local time) with one
/// OVERWRITE snapshot; returns them as `k=v/...`, sorted.
pub(crate) async fn expire_partitions(
    meta: &TableMeta,
    schema: &TableSchema,
    table: &str,
    expiration_ms: i64,
    time: &PartitionTime,
    now: NaiveDateTime,
) -> Result<Vec<String>> {
    if schema.partition_keys.is_empty() {
        return plan_err!("Table {table} is not partitioned: it has no partitions to expire");
    }
    let Some(latest) = meta.latest_snapshot().await? else {
        return Ok(vec![]);
    };
    let types = schema.partition_types();
    let deadline = now - chrono::Duration::milliseconds(expiration_ms);
    let mut expired: BTreeMap<String, Vec<Option<ScalarValue>>> = BTreeMap::new();
    // The newest file creation time of every partition (local wall clock, stored as UTC).
    let mut last_update: BTreeMap<&[u8], i64> = BTreeMap::new();
    let live = meta.live_files(&latest, |_| true).await?;
    for ((partition, _), entries) in &live.groups {
        let newest = entries.iter().filter_map(|e| e.file.creation_time).max();
        let slot = last_update.entry(partition.as_slice()).or_insert(i64::MIN);
        *slot = (*slot).max(newest.unwrap_or(i64::MIN));
    }
    for (partition, updated) in last_update {
        let values = BinaryRow::decode(partition, &types)?.values;
        let partition_time = if time.update_time {
            chrono::DateTime::from_timestamp_millis(updated).map(|t| t.naive_utc())
        } else {
            time.of(&schema.partition_keys, &values)
        };
        if partition_time.is_some_and(|t| t < deadline) {
            let default_name = schema
                .options
                .get("partition.default-name")
                .map_or("__DEFAULT_PARTITION__", String::as_str);
            let name = paths::partition_path(&schema.partition_keys, &values, default_name);
            expired.insert(
                name.trim_end_matches('/').to_string(),
                values.into_iter().map(Some).collect(),
            );
        }
    }
    if expired.is_empty() {
        return Ok(vec![]);
    }
    let request = CommitRequest {
        added: vec![],
        overwrite: OverwriteScope::Partitions(expired.values().cloned().collect()),
        partition_types: types,
        commit_user: uuid::Uuid::new_v4().to_string(),
        commit_identifier: i64::MAX,
        operation: Some("EXPIRE_PARTITIONS".to_string()),
        compacted: vec![],
        changelog: vec![],
        index_added: vec![],
        index_removed: vec![],
        row_level: None,
    };
    meta.commit(&request).await?;
    Ok(expired.into_keys().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn partition_times() {
        let keys = vec!["dt".to_string(), "hour".to_string()];
        let v = |s: &str| ScalarValue::Utf8(Some(s.to_string()));
        let default = PartitionTime::default();
        assert_eq!(
            default.of(&keys, &[v("2024-01-02"), v("5")]),
            Some(at("2024-01-02 00:00:00"))
        );
        let compact = PartitionTime {
            pattern: None,
            formatter: Some("yyyyMMdd".into()),
            update_time: false,
        };
        assert_eq!(
            compact.of(&keys, &[v("20240102"), v("5")]),
            Some(at("2024-01-02 00:00:00"))
        );
        let hourly = PartitionTime {
            pattern: Some("$dt $hour:00:00".into()),
            formatter: Some("yyyyMMdd HH:mm:ss".into()),
            update_time: false,
        };
        assert_eq!(
            hourly.of(&keys, &[v("20240102"), v("05")]),
            Some(at("2024-01-02 05:00:00"))
        );
        assert_eq!(default.of(&keys, &[v("not a date"), v("5")]), None);
    }
}
