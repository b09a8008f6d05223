//! Table option values and option changes, checked as Java Paimon checks them.
//!
//! * Values: enumerations, booleans and integers of `CoreOptions` must parse (Java fails on
//!   the first read of a bad value; we fail at CREATE/ALTER so nothing bad is ever stored).
//!   Unknown keys are stored as given, as Paimon does.
//! * Changes (`ALTER TABLE … SET/RESET`): `SchemaManager.checkAlterTableOption` /
//!   `checkResetTableOption`, applied only when the table already has a snapshot
//!   (semantics.md §11: the bucket and merge engine of a table with data are fixed).

use std::collections::BTreeMap;

use datafusion::common::{config_err, plan_err, Result};

/// `merge-engine` values (semantics.md §2).
pub(crate) const MERGE_ENGINES: &[&str] = &["deduplicate", "partial-update", "aggregation", "first-row"];
/// `changelog-producer` values (semantics.md §6).
pub(crate) const CHANGELOG_PRODUCERS: &[&str] = &["none", "input", "lookup", "full-compaction"];
/// `file.format` values this crate reads and writes.
pub(crate) const FILE_FORMATS: &[&str] = &["parquet", "orc", "avro"];

/// Enumerated options: key and allowed values. Values are compared exactly (lower case), as
/// the reader (`TableOptions::parse`) does.
const ENUM_OPTIONS: &[(&str, &[&str])] = &[
    ("merge-engine", MERGE_ENGINES),
    ("changelog-producer", CHANGELOG_PRODUCERS),
    ("file.format", FILE_FORMATS),
    ("sequence.field.sort-order", &["ascending", "descending"]),
    ("partition.expiration-strategy", &["values-time", "update-time"]),
    ("type", &["table"]),
];

/// Other table options this crate reads (string, duration and list valued).
const OTHER_OPTIONS: &[&str] = &[
    "bucket-key",
    "record-level.expire-time",
    "record-level.time-field",
    "sequence.field",
    "partition.expiration-time",
    "partition.expiration-check-interval",
    "partition.timestamp-formatter",
    "partition.timestamp-pattern",
    "partition.default-name",
    "snapshot.time-retained",
    "changelog.time-retained",
    "changelog-producer.row-deduplicate-ignore-fields",
    "file.compression",
    "file.compression.zstd-level",
    "file.format.per.level",
    "target-file-size",
    "write-buffer-size",
    "page-size",
    "manifest.target-file-size",
    "manifest.full-compaction-threshold-size",
    "lookup.cache-max-memory-size",
    "dynamic-bucket.target-row-num",
    "postpone.default-bucket-num",
    "fields.default-aggregate-function",
    "tag.creation-period",
    "tag.creation-period-duration",
    "tag.creation-delay",
    "tag.period-formatter",
    "tag.automatic-creation",
    "tag.default-time-retained",
    "tag.batch.customized-name",
    "sink.watermark-time-zone",
    "data-file.path-directory",
    "data-file.external-paths",
    "data-file.external-paths.strategy",
    "data-file.external-paths.specific-fs",
    "data-file.external-paths.weights",
    "rowkind.field",
    "consumer.mode",
];

/// Whether `key` is a table option this crate knows (DDL stores unknown keys anyway).
pub(crate) fn is_known_table_option(key: &str) -> bool {
    BOOLEAN_OPTIONS.contains(&key)
        || INTEGER_OPTIONS.contains(&key)
        || OTHER_OPTIONS.contains(&key)
        || ENUM_OPTIONS.iter().any(|(k, _)| *k == key)
}

/// Boolean options of Java `CoreOptions` (`ConfigOption<Boolean>`), at the commit format.md
/// was written against. Java accepts `true`/`false` in any case.
const BOOLEAN_OPTIONS: &[&str] = &[
    "aggregation.remove-record-on-delete",
    "async-file-write",
    "auto-create",
    "blob-as-descriptor",
    "bucket-append-ordered",
    "changelog-producer.row-deduplicate",
    "commit.discard-duplicate-files",
    "commit.force-compact",
    "commit.force-create-snapshot",
    "compaction.force-rewrite-all-files",
    "compaction.force-up-level-0",
    "compaction.skip-expired-partitions",
    "consumer.changelog-only",
    "consumer.ignore-progress",
    "data-evolution.enabled",
    "data-file.thin-mode",
    "delete.force-produce-changelog",
    "deletion-vectors.bitmap64",
    "deletion-vectors.enabled",
    "deletion-vectors.merge-on-read",
    "deletion-vectors.modifiable",
    "dynamic-partition-overwrite",
    "end-input.check-partition-expire",
    "file-index.read.enabled",
    "file.suffix.include.compression",
    "force-lookup",
    "ignore-delete",
    "ignore-update-before",
    "index-file-in-data-file-dir",
    "key-value.sequence_number.enabled",
    "lookup-wait",
    "lookup.cache.bloom.filter.enabled",
    "lookup.remote-file.enabled",
    "manifest.delete-file-drop-stats",
    "metadata.stats-dense-store",
    "metastore.partitioned-table",
    "partial-update.remove-record-on-delete",
    "partition.legacy-name",
    "partition.timestamp-format.strict",
    "primary-key.nullable",
    "row-tracking.enabled",
    "scan.ignore-corrupt-files",
    "scan.ignore-lost-files",
    "scan.plan-sort-partition",
    "sequence.snapshot-ordering",
    "snapshot.clean-empty-directories",
    "snapshot.ignore-empty-commit",
    "streaming-read-append-overwrite",
    "streaming-read-overwrite",
    "table-read.sequence-number.enabled",
    "tag.automatic-completion",
    "tag.create-success-file",
    "tag.time-expire-enabled",
    "write-buffer-for-append",
    "write-buffer-spillable",
    "write-only",
];

/// Integer options of Java `CoreOptions` that matter to this crate or are commonly set.
const INTEGER_OPTIONS: &[&str] = &[
    "bucket",
    "changelog.num-retained.max",
    "changelog.num-retained.min",
    "commit.max-retries",
    "compaction.max-size-amplification-percent",
    "compaction.min.file-num",
    "compaction.size-ratio",
    "dynamic-bucket.assigner-parallelism",
    "dynamic-bucket.initial-buckets",
    "dynamic-bucket.max-buckets",
    "full-compaction.delta-commits",
    "lookup-compact.max-interval",
    "manifest.merge-min-count",
    "num-levels",
    "num-sorted-run.compaction-trigger",
    "num-sorted-run.stop-trigger",
    "read.batch-size",
    "snapshot.expire.limit",
    "snapshot.num-retained.max",
    "snapshot.num-retained.min",
    "sort-spill-threshold",
    "tag.num-retained-max",
    "write.batch-size",
];

/// Integer options that must be positive: how many bucket assigners a distributed write into a
/// dynamic-bucket table runs (`write::assign`).
const POSITIVE_OPTIONS: &[&str] = &[
    "dynamic-bucket.assigner-parallelism",
    "dynamic-bucket.initial-buckets",
];

/// Options that can never change once a table has data (Java `@Immutable` options).
const IMMUTABLE_OPTIONS: &[&str] = &[
    "type",
    "bucket-key",
    "bucket-function.type",
    "data-file.path-directory",
    "merge-engine",
    "sequence.snapshot-ordering",
    "aggregation.remove-record-on-delete",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group",
    "rowkind.field",
    "primary-key",
    "primary-key.nullable",
    "partition",
    "dynamic-bucket.initial-buckets",
    "force-lookup",
    "row-tracking.enabled",
    "data-evolution.enabled",
    "index-file-in-data-file-dir",
    "blob-field",
    "blob-descriptor-field",
    "blob-view-field",
    "pk-clustering-override",
];

/// Checks every known option's value; the error names the key.
pub(crate) fn check_values(options: &BTreeMap<String, String>) -> Result<()> {
    for (key, value) in options {
        let key = key.as_str();
        if let Some((_, allowed)) = ENUM_OPTIONS.iter().find(|(k, _)| *k == key) {
            if !allowed.contains(&value.as_str()) {
                return config_err!(
                    "Invalid value '{value}' for option '{key}': expected one of {}",
                    allowed.join(", ")
                );
            }
        } else if BOOLEAN_OPTIONS.contains(&key) || is_field_boolean(key) {
            parse_bool(key, value)?;
        } else if INTEGER_OPTIONS.contains(&key) {
            let n = parse_int(key, value)?;
            if n <= 0 && POSITIVE_OPTIONS.contains(&key) {
                return config_err!(
                    "Invalid value '{value}' for option '{key}': expected a positive integer"
                );
            }
        }
    }
    Ok(())
}

/// `fields.<f>.ignore-retract` and `fields.<f>.distinct` are booleans too.
fn is_field_boolean(key: &str) -> bool {
    key.starts_with("fields.") && (key.ends_with(".ignore-retract") || key.ends_with(".distinct"))
}

/// A boolean option value (`true`/`false`, any case, as Java's `Options`).
pub(crate) fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => config_err!("Invalid value '{value}' for option '{key}': expected true or false"),
    }
}

/// An integer option value.
pub(crate) fn parse_int(key: &str, value: &str) -> Result<i64> {
    match value.trim().parse::<i32>() {
        Ok(v) => Ok(v as i64),
        Err(_) => config_err!("Invalid value '{value}' for option '{key}': expected an integer"),
    }
}

/// The boolean option `key`, or `default` when absent (values are checked before).
pub(crate) fn bool_option(options: &BTreeMap<String, String>, key: &str, default: bool) -> Result<bool> {
    options.get(key).map_or(Ok(default), |v| parse_bool(key, v))
}

/// Java `SchemaManager.checkAlterTableOption`, for a table with at least one snapshot.
pub(crate) fn check_alter(options: &BTreeMap<String, String>, key: &str, new_value: &str) -> Result<()> {
    if IMMUTABLE_OPTIONS.contains(&key) {
        return plan_err!("Cannot change option '{key}' of a table with data");
    }
    let old_value = options.get(key).map(String::as_str);
    match key {
        "bucket" => {
            let old = old_value.map_or(Ok(-1), |v| parse_int(key, v))?;
            let new = parse_int(key, new_value)?;
            if old == -1 {
                return plan_err!("Cannot change option 'bucket' of a table with data when it is -1 (dynamic or unaware bucket mode)");
            }
            if new == -1 {
                return plan_err!("Cannot change option 'bucket' of a table with data to -1");
            }
        }
        "deletion-vectors.enabled" => check_deletion_vectors_change(options, old_value, new_value)?,
        "ignore-delete" | "ignore-update-before" => {
            let old = old_value.map_or(Ok(false), |v| parse_bool(key, v))?;
            if old && !parse_bool(key, new_value)? {
                return plan_err!("Cannot change option '{key}' of a table with data from true to false");
            }
        }
        _ => {}
    }
    Ok(())
}

/// Java `SchemaManager.checkResetTableOption`, for a table with at least one snapshot.
pub(crate) fn check_reset(options: &BTreeMap<String, String>, key: &str) -> Result<()> {
    if IMMUTABLE_OPTIONS.contains(&key) {
        return plan_err!("Cannot reset option '{key}' of a table with data");
    }
    match key {
        "bucket" => plan_err!("Cannot reset option 'bucket' of a table with data"),
        "deletion-vectors.enabled" => {
            check_deletion_vectors_change(options, options.get(key).map(String::as_str), "false")
        }
        _ => Ok(()),
    }
}

/// Turning deletion vectors on or off needs `deletion-vectors.modifiable = true`.
fn check_deletion_vectors_change(
    options: &BTreeMap<String, String>,
    old: Option<&str>,
    new: &str,
) -> Result<()> {
    const KEY: &str = "deletion-vectors.enabled";
    if bool_option(options, "deletion-vectors.modifiable", false)? {
        return Ok(());
    }
    let old = old.map_or(Ok(false), |v| parse_bool(KEY, v))?;
    let new = parse_bool(KEY, new)?;
    if old != new {
        return plan_err!(
            "Cannot change option '{KEY}' of a table with data from {old} to {new}: set 'deletion-vectors.modifiable' = 'true' to allow it"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn checks_values_naming_the_key() {
        assert!(check_values(&opts(&[
            ("bucket", "2"),
            ("merge-engine", "first-row"),
            ("x.unknown", "y")
        ]))
        .is_ok());
        let err = check_values(&opts(&[("merge-engine", "newest")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("'merge-engine'") && err.contains("newest"), "{err}");
        let err = check_values(&opts(&[("ignore-delete", "yes")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("'ignore-delete'"), "{err}");
        assert!(check_values(&opts(&[("ignore-delete", "TRUE")])).is_ok());
        let err = check_values(&opts(&[("bucket", "two")])).unwrap_err().to_string();
        assert!(err.contains("'bucket'"), "{err}");
        assert!(check_values(&opts(&[("fields.v.ignore-retract", "maybe")])).is_err());
    }

    #[test]
    fn alter_rules_follow_java() {
        let o = opts(&[("bucket", "2")]);
        assert!(check_alter(&o, "bucket", "4").is_ok());
        assert!(check_alter(&o, "bucket", "-1").is_err());
        assert!(check_alter(&opts(&[]), "bucket", "4").is_err());
        assert!(check_alter(&o, "merge-engine", "first-row").is_err());
        assert!(check_alter(&opts(&[("ignore-delete", "true")]), "ignore-delete", "false").is_err());
        assert!(check_alter(&o, "snapshot.num-retained.max", "5").is_ok());
        assert!(check_reset(&o, "bucket").is_err());
        assert!(check_reset(&o, "write-only").is_ok());
        assert!(check_alter(&o, "deletion-vectors.enabled", "true").is_err());
        assert!(check_alter(
            &opts(&[("deletion-vectors.modifiable", "true")]),
            "deletion-vectors.enabled",
            "true"
        )
        .is_ok());
    }
}
