//! Compaction of primary-key buckets (semantics.md §4, §5): the files of a bucket are merged
//! by the table's merge engine into new files at the top level and committed as one COMPACT
//! snapshot that replaces them.
//!
//! ```text
//! live files of each chosen (partition, bucket) ──► one sorted run per file ──► k-way merge
//!     (merge engine; deletes dropped: the output is the oldest data of the bucket, §4.5)
//!     ──► files of about `target-file-size` at level num-levels - 1 ──► COMPACT commit
//! ```
//!
//! What runs today is full compaction: it is what first-row tables need after every commit
//! (their batch reads skip level 0, §2.2) and what `CALL sys.compact` asks for. Reads give the
//! same rows before and after, for every engine.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{Int64Type, Int8Type};
use datafusion::common::{exec_datafusion_err, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

use crate::io::{write_data_file, DataFileRows};
use crate::merge::{merge_runs, MergeEngineSpec, MergeMetrics, MergeOptions};
use crate::meta::{CommitRequest, OverwriteScope, PartitionBucket, TableMeta};
use crate::scan::{read_file, FileToRead, ReadLayout};
use crate::spec::{
    paths, BinaryRow, FileKind, ManifestEntry, Snapshot, TableOptions, TableSchema, SEQUENCE_NUMBER,
    VALUE_KIND,
};

/// Paimon's `num-levels` default: `num-sorted-run.compaction-trigger` + 1.
const DEFAULT_NUM_LEVELS: i32 = 6;
/// Paimon's `target-file-size` default for primary-key tables (128 MiB).
const DEFAULT_TARGET_FILE_SIZE: usize = 128 << 20;
/// `file_source` of files written by compaction.
const FILE_SOURCE_COMPACT: i32 = 1;

/// Which buckets to compact.
#[derive(Debug, Clone)]
pub(crate) enum CompactScope {
    /// Every bucket of the table.
    All,
    /// The buckets of the partitions matching one of these `key = value` lists (values as
    /// they appear in partition directory names).
    Partitions(Vec<Vec<(String, String)>>),
    /// These (partition, bucket) pairs.
    Buckets(BTreeSet<PartitionBucket>),
}

/// A table to compact.
pub(crate) struct Compaction<'a> {
    pub table: &'a str,
    pub meta: &'a Arc<TableMeta>,
    pub schema: &'a Arc<TableSchema>,
    pub batch_size: usize,
}

impl Compaction<'_> {
    /// Fully compacts the buckets of `scope` that need it (more than one file, or files below
    /// the top level) and commits the result as one COMPACT snapshot. Returns it, or `None`
    /// when nothing needed compacting.
    pub(crate) async fn full(&self, scope: &CompactScope) -> Result<Option<Snapshot>> {
        let Some(latest) = self.meta.latest_snapshot().await? else {
            return Ok(None);
        };
        let options = TableOptions::parse(&self.schema.options)?;
        let top = top_level(self.schema)?;
        let live = self.meta.live_files(&latest, |_| true).await?;
        let mut added = Vec::new();
        let mut compacted = Vec::new();
        for (group, entries) in &live.groups {
            if !self.in_scope(scope, group, &options)? {
                continue;
            }
            let done = entries.len() == 1 && entries[0].file.level == top;
            if entries.is_empty() || done {
                continue;
            }
            let outputs = self.compact_bucket(group, entries, &options, top).await?;
            compacted.extend(entries.iter().cloned());
            added.extend(outputs);
        }
        if compacted.is_empty() {
            return Ok(None);
        }
        let request = CommitRequest {
            added,
            overwrite: OverwriteScope::None,
            partition_types: self.schema.partition_types(),
            commit_user: uuid::Uuid::new_v4().to_string(),
            commit_identifier: i64::MAX,
            operation: Some("COMPACT".to_string()),
            compacted,
        };
        Ok(self.meta.commit(&request).await?)
    }

    fn in_scope(
        &self,
        scope: &CompactScope,
        group: &PartitionBucket,
        options: &TableOptions,
    ) -> Result<bool> {
        Ok(match scope {
            CompactScope::All => true,
            CompactScope::Buckets(wanted) => wanted.contains(group),
            CompactScope::Partitions(specs) => {
                let values = BinaryRow::decode(&group.0, &self.schema.partition_types())?.values;
                let path = paths::partition_path(
                    &self.schema.partition_keys,
                    &values,
                    &options.partition_default_name,
                );
                let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
                specs.iter().any(|spec| {
                    spec.iter()
                        .all(|(k, v)| parts.contains(&format!("{k}={v}").as_str()))
                })
            }
        })
    }

    /// Merges every file of one bucket into files at level `top`.
    async fn compact_bucket(
        &self,
        group: &PartitionBucket,
        entries: &[ManifestEntry],
        options: &TableOptions,
        top: i32,
    ) -> Result<Vec<ManifestEntry>> {
        let schema = self.schema;
        let layout = Arc::new(ReadLayout::new(schema.fields.clone(), true));
        let partition_values = BinaryRow::decode(&group.0, &schema.partition_types())?.values;
        let partition_path = paths::partition_path(
            &schema.partition_keys,
            &partition_values,
            &options.partition_default_name,
        );
        let dir = paths::bucket_path(
            options.data_file_path_directory.as_deref(),
            &partition_path,
            group.1,
        );

        let mut runs: Vec<SendableRecordBatchStream> = Vec::with_capacity(entries.len());
        // oldest files first: the merge breaks sequence-number ties by run order
        let mut ordered: Vec<&ManifestEntry> = entries.iter().collect();
        ordered.sort_by_key(|e| (e.file.max_sequence_number, e.file.min_sequence_number));
        for entry in ordered {
            let file = &entry.file;
            let path = match &file.external_path {
                Some(p) => {
                    object_store::path::Path::from(p.trim_start_matches("file://").trim_start_matches('/'))
                }
                None => self.meta.io().path(&format!("{dir}/{}", file.file_name)),
            };
            let file_schema = self.meta.schema(file.schema_id).await?;
            let stream = read_file(
                Arc::clone(self.meta.io().store()),
                FileToRead {
                    path,
                    size: file.file_size as u64,
                    need_sequence: true,
                },
                file_schema,
                Arc::clone(&layout),
                self.batch_size,
            )
            .await?;
            runs.push(Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(&layout.schema),
                stream,
            )));
        }
        let mut names: Vec<String> = schema.fields.iter().map(|f| f.name.clone()).collect();
        names.push(SEQUENCE_NUMBER.to_string());
        names.push(VALUE_KIND.to_string());
        let engine = MergeEngineSpec::new(
            self.table,
            schema,
            &names,
            layout.seq_index(),
            layout.kind_index(),
        )?;
        let key_columns = schema
            .trimmed_primary_keys()
            .iter()
            .map(|k| schema.fields.iter().position(|f| f.id == k.id))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                exec_datafusion_err!("Primary key of table {} is not among its columns", self.table)
            })?;
        let merge_options = MergeOptions {
            key_columns,
            seq_column: layout.seq_index(),
            kind_column: layout.kind_index(),
            // every file of the bucket is an input: deletes have nothing left to shadow
            keep_retracts: false,
            batch_size: self.batch_size,
        };
        let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
        let mut merged = merge_runs(Arc::clone(&layout.schema), runs, merge_options, metrics, &engine)?;

        let target = target_file_size(schema)?;
        let mut outputs = Vec::new();
        let mut pending: Vec<RecordBatch> = Vec::new();
        let mut pending_bytes = 0;
        while let Some(batch) = merged.next().await {
            let batch = batch?;
            pending_bytes += batch.get_array_memory_size();
            pending.push(batch);
            if pending_bytes >= target {
                outputs.push(
                    self.write(&dir, group, &std::mem::take(&mut pending), top)
                        .await?,
                );
                pending_bytes = 0;
            }
        }
        if !pending.is_empty() {
            outputs.push(self.write(&dir, group, &pending, top).await?);
        }
        Ok(outputs)
    }

    /// Writes merged rows (table columns + sequence + kind) as one file at `level`.
    async fn write(
        &self,
        dir: &str,
        group: &PartitionBucket,
        batches: &[RecordBatch],
        level: i32,
    ) -> Result<ManifestEntry> {
        let schema = self.schema;
        let all = concat_batches(&batches[0].schema(), batches)?;
        let n = schema.fields.len();
        let values = all.project(&(0..n).collect::<Vec<_>>())?;
        let values = RecordBatch::try_new(
            Arc::new(arrow::datatypes::Schema::new(
                schema
                    .fields
                    .iter()
                    .map(|f| f.to_arrow_field().with_nullable(true))
                    .collect::<Vec<_>>(),
            )),
            values.columns().to_vec(),
        )?;
        let seqs = all.column(n).as_primitive::<Int64Type>().clone();
        let kinds = all.column(n + 1).as_primitive::<Int8Type>().clone();
        let name = format!("data-{}-0.parquet", uuid::Uuid::new_v4());
        let rows = DataFileRows {
            values,
            kv: Some((seqs, kinds)),
        };
        let mut file = write_data_file(self.meta.io(), dir, name, schema, rows).await?;
        file.level = level;
        file.file_source = Some(FILE_SOURCE_COMPACT);
        let options = TableOptions::parse(&schema.options)?;
        Ok(ManifestEntry {
            kind: FileKind::Add,
            partition: group.0.clone(),
            bucket: group.1,
            total_buckets: options.bucket,
            file,
        })
    }
}

/// The top level of the LSM tree: `num-levels - 1`.
fn top_level(schema: &TableSchema) -> Result<i32> {
    let levels = match schema.options.get("num-levels") {
        Some(v) => v.trim().parse::<i32>().map_err(|_| {
            exec_datafusion_err!("Invalid value '{v}' for option 'num-levels': expected an integer")
        })?,
        None => match schema.options.get("num-sorted-run.compaction-trigger") {
            Some(v) => {
                v.trim().parse::<i32>().map_err(|_| {
                    exec_datafusion_err!(
                    "Invalid value '{v}' for option 'num-sorted-run.compaction-trigger': expected an integer"
                )
                })? + 1
            }
            None => DEFAULT_NUM_LEVELS,
        },
    };
    Ok((levels - 1).max(1))
}

/// `target-file-size` in bytes (as Arrow memory, a generous bound of the file size).
fn target_file_size(schema: &TableSchema) -> Result<usize> {
    match schema.options.get("target-file-size") {
        None => Ok(DEFAULT_TARGET_FILE_SIZE),
        Some(v) => parse_memory_size(v)
            .ok_or_else(|| exec_datafusion_err!("Invalid value '{v}' for option 'target-file-size'")),
    }
}

/// Paimon memory sizes: `128 mb`, `64MB`, `1 gb`, `1024` (bytes), `512 kb`.
pub(crate) fn parse_memory_size(text: &str) -> Option<usize> {
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
