//! The compaction and changelog options of a table (semantics.md §5, §6, §11), parsed once.

use std::collections::BTreeMap;

use datafusion::common::{exec_datafusion_err, Result};

use super::levels::PickOptions;
use super::lookup::{DiskLimits, DEFAULT_CACHE_BYTES, DEFAULT_RETENTION};
use crate::spec::{parse_memory_size, MergeEngine, TableOptions, TableSchema};

/// Paimon's `target-file-size` default for primary-key tables (128 MiB).
const DEFAULT_TARGET_FILE_SIZE: usize = 128 << 20;

/// Where a table's changelog comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Producer {
    None,
    Input,
    Lookup,
    FullCompaction,
}

/// Everything compaction needs to know about a table.
#[derive(Debug, Clone)]
pub(crate) struct CompactSettings {
    pub producer: Producer,
    pub engine: MergeEngine,
    /// Lookup compaction (§5.4): producer lookup, first-row, deletion vectors, `force-lookup`.
    pub lookup: bool,
    /// `deletion-vectors.enabled`.
    pub deletion_vectors: bool,
    /// `write-only`: writers never compact.
    pub write_only: bool,
    /// `full-compaction.delta-commits`.
    pub delta_commits: Option<i64>,
    pub pick: PickOptions,
    /// `target-file-size` in bytes.
    pub target_file_size: usize,
    /// `changelog-producer.row-deduplicate`.
    pub row_deduplicate: bool,
    /// `changelog-producer.row-deduplicate-ignore-fields`.
    pub row_deduplicate_ignore: Vec<String>,
    /// `sequence.field` is set.
    pub has_sequence_field: bool,
    /// `lookup.cache-max-memory-size` in bytes.
    pub lookup_cache_bytes: usize,
    /// `lookup.cache-max-disk-size` and `lookup.cache-file-retention`.
    pub lookup_disk: DiskLimits,
}

impl CompactSettings {
    pub(crate) fn new(schema: &TableSchema) -> Result<Self> {
        let options = TableOptions::parse(&schema.options)?;
        let o = &schema.options;
        let producer = match options.changelog_producer.as_str() {
            "input" => Producer::Input,
            "lookup" => Producer::Lookup,
            "full-compaction" => Producer::FullCompaction,
            _ => Producer::None,
        };
        let trigger = int(o, "num-sorted-run.compaction-trigger")?.unwrap_or(5).max(1);
        Ok(CompactSettings {
            producer,
            engine: options.merge_engine,
            lookup: producer == Producer::Lookup
                || options.merge_engine == MergeEngine::FirstRow
                || options.deletion_vectors
                || flag(o, "force-lookup"),
            deletion_vectors: options.deletion_vectors,
            write_only: flag(o, "write-only"),
            delta_commits: int(o, "full-compaction.delta-commits")?,
            pick: PickOptions {
                trigger: trigger as usize,
                max_size_amplification_percent: int(o, "compaction.max-size-amplification-percent")?
                    .unwrap_or(200),
                size_ratio: int(o, "compaction.size-ratio")?.unwrap_or(1),
                max_level: options.max_level,
            },
            target_file_size: match o.get("target-file-size") {
                None => DEFAULT_TARGET_FILE_SIZE,
                Some(v) => parse_memory_size(v).ok_or_else(|| {
                    exec_datafusion_err!("Invalid value '{v}' for option 'target-file-size'")
                })?,
            },
            row_deduplicate: flag(o, "changelog-producer.row-deduplicate"),
            row_deduplicate_ignore: o
                .get("changelog-producer.row-deduplicate-ignore-fields")
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            has_sequence_field: !options.sequence_fields.is_empty(),
            // the lookup cache options fall back to Paimon's defaults when unreadable
            lookup_cache_bytes: o
                .get("lookup.cache-max-memory-size")
                .and_then(|v| parse_memory_size(v))
                .unwrap_or(DEFAULT_CACHE_BYTES),
            lookup_disk: DiskLimits {
                max_bytes: o
                    .get("lookup.cache-max-disk-size")
                    .and_then(|v| parse_memory_size(v))
                    .map_or(u64::MAX, |b| b as u64),
                retention: o
                    .get("lookup.cache-file-retention")
                    .and_then(|v| crate::maintenance::expire::parse_duration_ms(v))
                    .map_or(DEFAULT_RETENTION, |ms| {
                        std::time::Duration::from_millis(ms.max(0) as u64)
                    }),
            },
        })
    }
}

fn flag(options: &BTreeMap<String, String>, key: &str) -> bool {
    options
        .get(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn int(options: &BTreeMap<String, String>, key: &str) -> Result<Option<i64>> {
    options
        .get(key)
        .map(|v| {
            v.trim().parse::<i64>().map_err(|_| {
                exec_datafusion_err!("Invalid value '{v}' for option '{key}': expected an integer")
            })
        })
        .transpose()
}
