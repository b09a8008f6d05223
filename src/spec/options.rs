//! Table option keys and the typed view of the options a reader needs (format.md §9).

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// `bucket`: N > 0 fixed, -1 dynamic/unaware, -2 postpone.
pub const BUCKET: &str = "bucket";
/// `merge-engine`.
pub const MERGE_ENGINE: &str = "merge-engine";
/// `changelog-producer`.
pub const CHANGELOG_PRODUCER: &str = "changelog-producer";
/// `partition.default-name`.
pub const PARTITION_DEFAULT_NAME: &str = "partition.default-name";
/// `file.format`.
pub const FILE_FORMAT: &str = "file.format";
/// `deletion-vectors.enabled`.
pub const DELETION_VECTORS_ENABLED: &str = "deletion-vectors.enabled";
/// `data-file.path-directory`.
pub const DATA_FILE_PATH_DIRECTORY: &str = "data-file.path-directory";
/// `sequence.field`.
pub const SEQUENCE_FIELD: &str = "sequence.field";
/// Read option: snapshot to read.
pub const SCAN_SNAPSHOT_ID: &str = "scan.snapshot-id";
/// Read option: tag to read.
pub const SCAN_TAG_NAME: &str = "scan.tag-name";
/// Read option: read the latest snapshot committed at or before this time.
pub const SCAN_TIMESTAMP_MILLIS: &str = "scan.timestamp-millis";

/// Read option: changes between two snapshots (`'S,E'`, start exclusive) or two tags.
pub const INCREMENTAL_BETWEEN: &str = "incremental-between";
/// Read option: changes between two commit times (`'t1,t2'`, epoch millis).
pub const INCREMENTAL_BETWEEN_TIMESTAMP: &str = "incremental-between-timestamp";
/// Read option: which files an incremental read uses (`auto`, `delta`, `changelog`, `diff`).
pub const INCREMENTAL_BETWEEN_SCAN_MODE: &str = "incremental-between-scan-mode";
/// Read option: read two tags as the snapshot range between them instead of a diff.
pub const INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT: &str = "incremental-between-tag-to-snapshot";

/// Default directory name for NULL partition values.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";

/// The merge engine of a primary-key table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeEngine {
    /// Newest record wins.
    Deduplicate,
    /// Non-null fields overwrite.
    PartialUpdate,
    /// Per-field aggregation.
    Aggregation,
    /// Oldest record wins.
    FirstRow,
}

impl MergeEngine {
    /// The option value.
    pub fn as_str(&self) -> &'static str {
        match self {
            MergeEngine::Deduplicate => "deduplicate",
            MergeEngine::PartialUpdate => "partial-update",
            MergeEngine::Aggregation => "aggregation",
            MergeEngine::FirstRow => "first-row",
        }
    }
}

/// `incremental-between-scan-mode` (semantics.md §7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrementalScanMode {
    /// `changelog` if the table has a changelog producer, else `delta`.
    Auto,
    /// The new data files of APPEND snapshots, read raw.
    Delta,
    /// The changelog files of APPEND and COMPACT snapshots, read raw.
    Changelog,
    /// The merged state of the end snapshot compared with the start snapshot.
    Diff,
}

impl IncrementalScanMode {
    /// Parses the option value (case-insensitive); None for an unknown mode.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(IncrementalScanMode::Auto),
            "delta" => Some(IncrementalScanMode::Delta),
            "changelog" => Some(IncrementalScanMode::Changelog),
            "diff" => Some(IncrementalScanMode::Diff),
            _ => None,
        }
    }

    /// The option value.
    pub fn as_str(&self) -> &'static str {
        match self {
            IncrementalScanMode::Auto => "auto",
            IncrementalScanMode::Delta => "delta",
            IncrementalScanMode::Changelog => "changelog",
            IncrementalScanMode::Diff => "diff",
        }
    }
}

/// Options a reader acts on, parsed once per schema version.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// The `bucket` option.
    pub bucket: i32,
    /// The merge engine.
    pub merge_engine: MergeEngine,
    /// The changelog producer (`none`, `input`, `lookup`, `full-compaction`).
    pub changelog_producer: String,
    /// Directory value for NULL partitions.
    pub partition_default_name: String,
    /// Data file format.
    pub file_format: String,
    /// Deletion-vectors mode.
    pub deletion_vectors: bool,
    /// `deletion-vectors.merge-on-read`: batch reads of a deletion-vector table also merge
    /// level 0 instead of skipping it.
    pub dv_merge_on_read: bool,
    /// The top LSM level, `num-levels - 1` (`num-levels` defaults to
    /// `num-sorted-run.compaction-trigger + 1`, i.e. 6).
    pub max_level: i32,
    /// Extra directory between table root and partition path.
    pub data_file_path_directory: Option<String>,
    /// User sequence fields.
    pub sequence_fields: Vec<String>,
    /// `blob-as-descriptor`: BLOB columns read as serialized blob descriptors (where the bytes
    /// are) instead of their bytes.
    pub blob_as_descriptor: bool,
    /// `file-index.read.enabled` (default true): append-table reads skip files by their file
    /// indexes.
    pub file_index_read: bool,
    /// `blob-descriptor-field`: BLOB columns stored inline as descriptors of bytes elsewhere.
    pub blob_descriptor_fields: Vec<String>,
}

impl TableOptions {
    /// Parses the options map; an invalid value names its key.
    pub fn parse(options: &BTreeMap<String, String>) -> Result<Self> {
        let get = |k: &str| options.get(k).map(|s| s.trim().to_string());
        let invalid = |key: &str, value: &str, reason: &str| Error::InvalidOption {
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        };
        let bucket = match get(BUCKET) {
            None => -1,
            Some(v) => v
                .parse::<i32>()
                .map_err(|_| invalid(BUCKET, &v, "expected an integer"))?,
        };
        let merge_engine = match get(MERGE_ENGINE).as_deref() {
            None | Some("deduplicate") => MergeEngine::Deduplicate,
            Some("partial-update") => MergeEngine::PartialUpdate,
            Some("aggregation") => MergeEngine::Aggregation,
            Some("first-row") => MergeEngine::FirstRow,
            Some(other) => {
                return Err(invalid(
                    MERGE_ENGINE,
                    other,
                    "expected deduplicate, partial-update, aggregation or first-row",
                ))
            }
        };
        let bool_opt = |k: &str| -> Result<bool> {
            match get(k).map(|v| v.to_ascii_lowercase()).as_deref() {
                None | Some("false") => Ok(false),
                Some("true") => Ok(true),
                Some(other) => Err(invalid(k, other, "expected true or false")),
            }
        };
        Ok(TableOptions {
            bucket,
            merge_engine,
            changelog_producer: get(CHANGELOG_PRODUCER).unwrap_or_else(|| "none".into()),
            partition_default_name: get(PARTITION_DEFAULT_NAME)
                .unwrap_or_else(|| DEFAULT_PARTITION_NAME.into()),
            file_format: get(FILE_FORMAT).unwrap_or_else(|| "parquet".into()),
            deletion_vectors: bool_opt(DELETION_VECTORS_ENABLED)?,
            dv_merge_on_read: bool_opt("deletion-vectors.merge-on-read")?,
            max_level: {
                let int = |key: &str| -> Result<Option<i64>> {
                    get(key)
                        .map(|v| {
                            v.parse::<i64>()
                                .map_err(|_| invalid(key, &v, "expected an integer"))
                        })
                        .transpose()
                };
                let trigger = int("num-sorted-run.compaction-trigger")?.unwrap_or(5).max(1);
                (int("num-levels")?.unwrap_or(trigger + 1) - 1).max(1) as i32
            },
            data_file_path_directory: get(DATA_FILE_PATH_DIRECTORY).filter(|s| !s.is_empty()),
            sequence_fields: get(SEQUENCE_FIELD)
                .map(|s| {
                    s.split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            blob_as_descriptor: bool_opt("blob-as-descriptor")?,
            file_index_read: match get("file-index.read.enabled") {
                None => true,
                Some(_) => bool_opt("file-index.read.enabled")?,
            },
            blob_descriptor_fields: get("blob-descriptor-field")
                .or_else(|| get("blob.stored-descriptor-fields"))
                .map(|s| {
                    s.split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// Whether the table's buckets come from Paimon's default bucket function (a hash of the
/// bucket key's binary row); `bucket-function.type` may choose another (`mod`, `hive`).
pub fn default_bucket_function(options: &BTreeMap<String, String>) -> bool {
    options
        .get("bucket-function.type")
        .is_none_or(|v| v.trim().eq_ignore_ascii_case("default"))
}

/// The option of a table under which this crate cannot write new data files, and why, if any:
/// a table Java Paimon created with one is refused rather than written wrongly.
/// * `bucket-function.type` other than `default`: rows would land in other buckets than
///   Paimon's writers put them in.
///
/// Row-tracking tables take new rows (the commit gives them row ids, `meta::row_tracking`), but
/// not rewrites of stored rows: see [`rewrites_lose_row_ids`].
pub fn unsupported_for_new_files(options: &BTreeMap<String, String>) -> Option<String> {
    if !default_bucket_function(options) {
        return Some(format!(
            "bucket-function.type = '{}' (rows would land in other buckets than Paimon's writers choose)",
            options["bucket-function.type"].trim()
        ));
    }
    None
}

/// Why rows of this table cannot be rewritten (compaction, UPDATE, a copy-on-write DELETE), if
/// they cannot: `row-tracking.enabled` rows keep their row ids through a rewrite in Paimon (the
/// rewritten file stores `_ROW_ID` and `_SEQUENCE_NUMBER`), which this crate does not write.
pub fn rewrites_lose_row_ids(options: &BTreeMap<String, String>) -> Option<String> {
    options
        .get("row-tracking.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        .then(|| "row-tracking.enabled = true (rewritten rows must keep their row ids)".to_string())
}

/// Paimon memory sizes: `128 mb`, `64MB`, `1 gb`, `1024` (bytes), `512 kb`.
pub fn parse_memory_size(text: &str) -> Option<usize> {
    let text = text.trim().to_ascii_lowercase();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: usize = number.parse().ok()?;
    let factor = match unit.trim() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::parse_memory_size;

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("128 mb"), Some(128 << 20));
        assert_eq!(parse_memory_size("64MB"), Some(64 << 20));
        assert_eq!(parse_memory_size("1024"), Some(1024));
        assert_eq!(parse_memory_size("2 kb"), Some(2048));
        assert_eq!(parse_memory_size("x"), None);
    }
}
