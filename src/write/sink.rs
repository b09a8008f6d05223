//! `PaimonSink`: the `DataSink` behind INSERT, INSERT OVERWRITE, DELETE and UPDATE.
//!
//! ```text
//! input batches ─► validate ─► partition + bucket per row ─► BucketBuffer per (partition, bucket)
//!     ─► (memory pool full: flush the largest buffer) ─► flush all: sort, fold, level-0 file
//!     ─► one commit (meta::commit): manifests, then snapshot-N created atomically
//! ```
//!
//! Nothing is written before execution: the sink is built at planning time and does all I/O in
//! `write_all`, so `EXPLAIN INSERT/DELETE/UPDATE` has no side effects.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, Int8Array, RecordBatch, UInt32Array};
use arrow::compute::{cast, take_record_batch};
use arrow::datatypes::Int8Type;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::{exec_datafusion_err, exec_err, not_impl_err, DataFusionError, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use futures::{StreamExt, TryStreamExt};

use super::buffer::BucketBuffer;
pub(crate) use super::commit_message::WrittenFiles;
use super::cross_partition::GlobalIndex;
use super::routing::{BucketMode, RowRouting};
use super::sink_metrics::SinkMetrics;
use crate::dynamic_bucket::{AssignOptions, BucketAssigner};
use crate::io::write_data_file;
use crate::merge::reduce::{GroupReducer, RetractPolicy};
use crate::merge::MergeEngineSpec;
use crate::meta::{OverwriteScope, PartitionBucket, TableMeta};
use crate::progress::StatementProgress;
use crate::spec::{paths, row_kind, BinaryRow, FileKind, ManifestEntry, TableOptions, TableSchema};

/// File name prefix of changelog files (data files start with `data`).
const CHANGELOG_PREFIX: &str = "changelog";

/// What a statement does to the table.
#[derive(Debug, Clone)]
pub(crate) enum WriteKind {
    /// INSERT (+I rows).
    Insert,
    /// INSERT OVERWRITE: +I rows replacing the scope.
    Overwrite(OverwriteScope),
    /// DELETE: -D rows carrying the stored values.
    Delete,
    /// UPDATE: +U rows with the new values.
    Update,
    /// DELETE without WHERE: remove every file (Paimon's truncate), counting the rows.
    Truncate,
    /// DELETE whose WHERE is only partition equalities: drop those partitions, counting the rows.
    DropPartitions(OverwriteScope),
    /// MERGE INTO a primary-key table: every row's kind (+I, +U, -D) in one more input column
    /// after the table's, [`MERGE_KIND_COLUMN`].
    Merge,
    /// MERGE INTO an append table that changes existing rows (`merge_append`): each row
    /// carries its address in the files read (NULL for inserts) before its kind; rows of
    /// touched files are rewritten, or changed rows marked in deletion vectors. The commit
    /// fails cleanly if another writer removed a file read or changed a touched vector.
    MergeRewrite(Arc<super::AppendMergeBase>),
}

/// The input column of a MERGE sink holding each row's kind (an `Int8`).
pub(crate) const MERGE_KIND_COLUMN: &str = "__paimon_merge_kind";

impl WriteKind {
    fn row_kind(&self) -> i8 {
        match self {
            WriteKind::Delete => row_kind::DELETE,
            WriteKind::Update => row_kind::UPDATE_AFTER,
            _ => row_kind::INSERT,
        }
    }

    pub(super) fn operation(&self) -> &'static str {
        match self {
            WriteKind::Insert => "WRITE",
            WriteKind::Overwrite(_) => "OVERWRITE",
            WriteKind::Delete => "DELETE",
            WriteKind::Update => "UPDATE",
            WriteKind::Truncate => "TRUNCATE",
            WriteKind::DropPartitions(_) => "DELETE",
            WriteKind::Merge | WriteKind::MergeRewrite(_) => "MERGE",
        }
    }
}

/// Writes rows into one table and commits them as one snapshot.
#[derive(Debug)]
pub(crate) struct PaimonSink {
    pub(super) table: String,
    pub(super) meta: Arc<TableMeta>,
    pub(super) schema: Arc<TableSchema>,
    pub(super) options: TableOptions,
    pub(super) kind: WriteKind,
    pub(super) input_schema: SchemaRef,
    /// The merge engine (primary-key tables): folds the buffer and says what happens to
    /// retractions.
    pub(super) engine: Option<MergeEngineSpec>,
    /// `rowkind.field`: the STRING column holding each row's kind.
    pub(super) rowkind_column: Option<usize>,
    /// What a MERGE sink takes: the table's columns and [`MERGE_KIND_COLUMN`].
    pub(super) merge_schema: Option<SchemaRef>,
    pub(super) metrics: SinkMetrics,
}

/// Default `write-buffer-size` of Paimon (256 MiB): the largest buffer is flushed as its own
/// level-0 file beyond it (or when the memory pool refuses more), so an INSERT's memory stays
/// bounded whatever its size.
const WRITE_BUFFER_SIZE: usize = 256 << 20;

impl PaimonSink {
    pub(crate) fn try_new(
        table: String,
        meta: Arc<TableMeta>,
        schema: Arc<TableSchema>,
        kind: WriteKind,
    ) -> Result<Self> {
        let options = TableOptions::parse(&schema.options)?;
        if let Some(why) = crate::spec::options::unsupported_for_new_files(&schema.options) {
            return not_impl_err!("Writing to table {table} is not supported: {why}");
        }
        // All nullable: NOT NULL is enforced by `validate` with a message naming the column.
        let input_schema = Arc::new(arrow::datatypes::Schema::new(
            schema
                .fields
                .iter()
                .map(|f| f.to_arrow_field().with_nullable(true))
                .collect::<Vec<_>>(),
        ));
        let engine = if schema.has_primary_key() {
            let columns = schema.fields.iter().map(|f| f.name.as_str());
            Some(MergeEngineSpec::for_columns(&table, &schema, columns)?)
        } else {
            None
        };
        let rowkind_column = match schema.options.get("rowkind.field") {
            Some(name) => Some(schema.fields.iter().position(|f| &f.name == name.trim()).ok_or_else(|| {
                exec_datafusion_err!("Row kind field '{name}' (option 'rowkind.field') is not a column of table {table}")
            })?),
            None => None,
        };
        let merge_schema = matches!(kind, WriteKind::Merge | WriteKind::MergeRewrite(_)).then(|| {
            let mut fields: Vec<arrow::datatypes::FieldRef> = input_schema.fields().iter().cloned().collect();
            fields.push(Arc::new(arrow::datatypes::Field::new(
                MERGE_KIND_COLUMN,
                arrow::datatypes::DataType::Int8,
                false,
            )));
            Arc::new(arrow::datatypes::Schema::new(fields))
        });
        let sink = PaimonSink {
            table,
            meta,
            schema,
            options,
            kind,
            input_schema,
            engine,
            rowkind_column,
            merge_schema,
            metrics: SinkMetrics::new(),
        };
        sink.routing()?;
        Ok(sink)
    }

    /// What the sink was built from: the table's name, files and schema, and the write.
    #[cfg(feature = "ballista")]
    pub(crate) fn parts(&self) -> (&str, &Arc<TableMeta>, &Arc<TableSchema>, &WriteKind) {
        (&self.table, &self.meta, &self.schema, &self.kind)
    }

    pub(super) fn routing(&self) -> Result<RowRouting> {
        let index = |name: &str| {
            self.schema
                .fields
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| exec_datafusion_err!("Column '{name}' of table {} does not exist", self.table))
        };
        let key_columns = self
            .schema
            .trimmed_primary_keys()
            .iter()
            .map(|f| index(&f.name))
            .collect::<Result<Vec<_>>>()?;
        let partition_columns = self
            .schema
            .partition_keys
            .iter()
            .map(|k| index(k))
            .collect::<Result<Vec<_>>>()?;
        let bucket = self.options.bucket;
        let bucket_key = self.schema.bucket_key();
        let buckets = match (self.schema.has_primary_key(), bucket) {
            (_, n) if n > 0 => {
                if bucket_key.is_empty() {
                    return exec_err!("Table {} has 'bucket' = '{n}' but no 'bucket-key': a bucketed append table needs one", self.table);
                }
                BucketMode::Fixed(n)
            }
            (false, -1) => BucketMode::Unaware,
            (true, -2) => BucketMode::Postpone,
            (true, -1) => {
                if !self.cross_partition_keys().is_empty() && matches!(self.kind, WriteKind::Overwrite(_)) {
                    return exec_err!(
                        "INSERT OVERWRITE of cross-partition upsert table {} is not supported yet: its primary key does not contain partition key(s) {}",
                        self.table,
                        self.cross_partition_keys().join(", ")
                    );
                }
                BucketMode::Dynamic
            }
            (_, other) => {
                return exec_err!(
                    "Writing to table {} with 'bucket' = '{other}' is not supported",
                    self.table
                )
            }
        };
        let bucket_columns = if buckets == BucketMode::Dynamic {
            // The HASH index hashes the trimmed primary key, whatever 'bucket-key' says.
            key_columns.clone()
        } else {
            bucket_key.iter().map(|k| index(k)).collect::<Result<Vec<_>>>()?
        };
        Ok(RowRouting {
            key_columns,
            partition_columns,
            bucket_columns,
            buckets,
        })
    }

    /// Casts input columns to the table's types and rejects NULLs in NOT NULL columns.
    pub(super) fn validate(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        if batch.num_columns() != self.schema.fields.len() {
            return exec_err!(
                "Table {} has {} columns but the input has {}",
                self.table,
                self.schema.fields.len(),
                batch.num_columns()
            );
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
        for (field, column) in self.schema.fields.iter().zip(batch.columns()) {
            let target = field.data_type.to_arrow();
            let column = if column.data_type() == &target {
                Arc::clone(column)
            } else {
                cast(column, &target)?
            };
            if !field.data_type.nullable && column.null_count() > 0 {
                let what = if self.schema.primary_keys.contains(&field.name) {
                    "Primary key column"
                } else {
                    "Column"
                };
                return exec_err!("{what} '{}' of table {} must not be NULL", field.name, self.table);
            }
            columns.push(column);
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.input_schema), columns)?)
    }

    /// The row kind of every row, and the rows that reach the writer: the pre-writer filter of
    /// semantics.md §1.3 drops retractions per `ignore-delete` / `ignore-update-before`, and
    /// engines that cannot take a retraction fail the statement (§1.4).
    pub(super) fn row_kinds(
        &self,
        batch: &RecordBatch,
        given: Option<Int8Array>,
    ) -> Result<(Int8Array, Option<Vec<u32>>)> {
        let n = batch.num_rows();
        let kinds: Int8Array = match self.rowkind_column {
            _ if given.is_some() => given.expect("checked"),
            None => Int8Array::from(vec![self.kind.row_kind(); n]),
            Some(c) => {
                let column = cast(batch.column(c), &arrow::datatypes::DataType::Utf8)?;
                let strings = column.as_string::<i32>();
                let mut kinds = Vec::with_capacity(n);
                for value in strings.iter() {
                    let kind = match value.map(str::trim) {
                        Some("+I") => row_kind::INSERT,
                        Some("-U") => row_kind::UPDATE_BEFORE,
                        Some("+U") => row_kind::UPDATE_AFTER,
                        Some("-D") => row_kind::DELETE,
                        other => {
                            return exec_err!(
                                "Invalid row kind {} in column '{}' (option 'rowkind.field') of table {}: expected +I, -U, +U or -D",
                                other.map_or("NULL".to_string(), |v| format!("'{v}'")),
                                self.schema.fields[c].name,
                                self.table
                            )
                        }
                    };
                    kinds.push(kind);
                }
                Int8Array::from(kinds)
            }
        };
        let Some(engine) = &self.engine else {
            if self.rowkind_column.is_some() && kinds.values().iter().any(|&k| crate::merge::is_retract(k)) {
                return exec_err!(
                    "Append table {} cannot take retract rows (-U/-D) in 'rowkind.field'",
                    self.table
                );
            }
            return Ok((kinds, None));
        };
        let mut dropped = false;
        for &kind in kinds.values() {
            let policy = match kind {
                row_kind::DELETE => &engine.on_delete,
                row_kind::UPDATE_BEFORE => &engine.on_update_before,
                _ => continue,
            };
            match policy {
                RetractPolicy::Accept => {}
                RetractPolicy::Drop => dropped = true,
                RetractPolicy::Reject(message) => return exec_err!("{message}"),
            }
        }
        if !dropped {
            return Ok((kinds, None));
        }
        let keep: Vec<u32> = kinds
            .values()
            .iter()
            .enumerate()
            .filter(|(_, &kind)| {
                let policy = match kind {
                    row_kind::DELETE => &engine.on_delete,
                    row_kind::UPDATE_BEFORE => &engine.on_update_before,
                    _ => return true,
                };
                *policy != RetractPolicy::Drop
            })
            .map(|(row, _)| row as u32)
            .collect();
        Ok((kinds, Some(keep)))
    }

    pub(super) fn dynamic_partition_overwrite(&self) -> bool {
        !self.schema.partition_keys.is_empty()
            && self
                .schema
                .options
                .get("dynamic-partition-overwrite")
                .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
    }

    /// Partition keys that are not part of the primary key (Paimon's cross-partition upsert).
    pub(super) fn cross_partition_keys(&self) -> Vec<String> {
        self.schema
            .partition_keys
            .iter()
            .filter(|p| !self.schema.primary_keys.contains(p))
            .cloned()
            .collect()
    }

    /// Next sequence number of every bucket that already holds files.
    async fn next_sequences(&self) -> Result<HashMap<PartitionBucket, i64>> {
        let mut next = HashMap::new();
        if let Some((_, live)) = self.meta.latest_live_files_for_write().await? {
            for (group, entries) in &live.groups {
                let max = entries
                    .iter()
                    .map(|e| e.file.max_sequence_number)
                    .max()
                    .unwrap_or(-1);
                next.insert(group.clone(), max + 1);
            }
        }
        Ok(next)
    }

    /// Writes one buffer as a level-0 file (plus, for `changelog-producer = input`, a
    /// changelog file of the raw records) and returns their manifest entries.
    async fn flush(
        meta: Arc<TableMeta>,
        schema: Arc<TableSchema>,
        options: TableOptions,
        key_columns: Vec<usize>,
        reducer: Option<Arc<dyn GroupReducer>>,
        group: PartitionBucket,
        buffer: BucketBuffer,
    ) -> Result<Vec<ManifestEntry>> {
        let input_changelog = match &reducer {
            Some(_) if options.changelog_producer == "input" => buffer.input_changelog_rows(&key_columns)?,
            _ => None,
        };
        let rows = match &reducer {
            Some(reducer) => buffer.into_pk_rows(&key_columns, reducer.as_ref())?,
            None => buffer.into_append_rows()?,
        };
        let Some(rows) = rows else { return Ok(vec![]) };
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
        let mut written = Vec::with_capacity(2);
        for (prefix, rows) in [("data", Some(rows)), (CHANGELOG_PREFIX, input_changelog)] {
            let Some(rows) = rows else { continue };
            let files = write_data_file(meta.io(), &dir, prefix, 0, &schema, rows).await?;
            written.extend(files.into_iter().map(|file| ManifestEntry {
                kind: FileKind::Add,
                partition: group.0.clone(),
                bucket: group.1,
                total_buckets: options.bucket,
                file,
            }));
        }
        Ok(written)
    }

    fn spawn_flush(
        &self,
        routing: &RowRouting,
        group: PartitionBucket,
        buffer: BucketBuffer,
    ) -> SpawnedTask<Result<Vec<ManifestEntry>>> {
        let (meta, schema, options) = (
            Arc::clone(&self.meta),
            Arc::clone(&self.schema),
            self.options.clone(),
        );
        let keys = routing.key_columns.clone();
        let reducer = self.engine.as_ref().map(|e| Arc::clone(&e.reducer));
        SpawnedTask::spawn(Self::flush(meta, schema, options, keys, reducer, group, buffer))
    }
}

async fn join(task: SpawnedTask<Result<Vec<ManifestEntry>>>) -> Result<Vec<ManifestEntry>> {
    task.join()
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
}

impl DisplayAs for PaimonSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PaimonSink: table={}, operation={}",
            self.table,
            self.kind.operation()
        )
    }
}

#[async_trait]
impl DataSink for PaimonSink {
    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.snapshot())
    }

    fn schema(&self) -> &SchemaRef {
        self.merge_schema.as_ref().unwrap_or(&self.input_schema)
    }

    async fn write_all(&self, data: SendableRecordBatchStream, context: &Arc<TaskContext>) -> Result<u64> {
        let written = self.write_files(data, false, context).await?;
        let commit_user = uuid::Uuid::new_v4().to_string();
        self.commit_written(written, &commit_user, None, context).await
    }
}

impl PaimonSink {
    /// The write half of a statement: routes `data` to buckets, writes level-0 (and input
    /// changelog) files, and returns them uncommitted. A distributed INSERT runs this in
    /// every writer task, over the rows routed to its buckets.
    /// With `assigned`, the input's last column holds each row's dynamic bucket, chosen by a
    /// distributed write's assigners (`write::assign`).
    pub(crate) async fn write_files(
        &self,
        mut data: SendableRecordBatchStream,
        assigned: bool,
        context: &Arc<TaskContext>,
    ) -> Result<WrittenFiles> {
        let started = Instant::now();
        let progress = StatementProgress::of(context);
        let routing = self.routing()?;
        let mut next_seq = if self.schema.has_primary_key() {
            self.next_sequences().await?
        } else {
            HashMap::new()
        };
        let mut assigner = match routing.buckets {
            BucketMode::Dynamic => Some(self.bucket_assigner().await?),
            _ => None,
        };
        // Cross-partition upsert: where every key lives, so a row for it can follow the engine.
        // (a distributed write's assigners keep it: `write::assign`)
        let mut global_index =
            if routing.buckets == BucketMode::Dynamic && !self.cross_partition_keys().is_empty() && !assigned
            {
                Some(
                    GlobalIndex::load(
                        &self.table,
                        &self.meta,
                        &self.schema,
                        self.options.merge_engine,
                        None,
                        context,
                    )
                    .await?,
                )
            } else {
                None
            };
        let mut buffers: HashMap<PartitionBucket, BucketBuffer> = HashMap::new();
        let write_buffer_size = match self.schema.options.get("write-buffer-size") {
            None => WRITE_BUFFER_SIZE,
            Some(v) => crate::spec::parse_memory_size(v).filter(|n| *n > 0).ok_or_else(|| {
                exec_datafusion_err!(
                    "Option 'write-buffer-size' of table {} must be a memory size such as '256 mb', got '{v}'",
                    self.table
                )
            })?,
        };
        let reservation =
            MemoryConsumer::new(format!("PaimonSink[{}]", self.table)).register(context.memory_pool());
        let mut flushed: Vec<ManifestEntry> = Vec::new();
        let mut count: u64 = 0;
        // Metadata-only deletes count the matching rows but write none.
        let truncate = matches!(self.kind, WriteKind::Truncate | WriteKind::DropPartitions(_));
        // a cross-partition write's rows from its assigners carry their kinds (`write::assign`)
        let cross_assigned = assigned && !self.cross_partition_keys().is_empty();
        let kinds_given = matches!(self.kind, WriteKind::Merge) || cross_assigned;
        let mut append_marks = super::merge_append::AppendMergeMarks::default();
        let mut merge_kinds = [0u64; 3];
        while let Some(batch) = data.next().await {
            let batch = batch?;
            count += batch.num_rows() as u64;
            if let Some(p) = &progress {
                p.add_rows_written(batch.num_rows());
            }
            if truncate || batch.num_rows() == 0 {
                continue;
            }
            let (batch, buckets) = if assigned {
                let last = batch.num_columns().saturating_sub(1);
                let buckets = cast(batch.column(last), &arrow::datatypes::DataType::Int32)?
                    .as_primitive::<arrow::datatypes::Int32Type>()
                    .clone();
                (batch.project(&(0..last).collect::<Vec<_>>())?, Some(buckets))
            } else {
                (batch, None)
            };
            // a MERGE's rows carry their kinds in a last column
            // (as a cross-partition write's rows from its assigners: some moved, some deletes)
            let (batch, given_kinds) = match &self.kind {
                _ if kinds_given => {
                    let last = batch.num_columns().saturating_sub(1);
                    let kinds = cast(batch.column(last), &arrow::datatypes::DataType::Int8)?
                        .as_primitive::<Int8Type>()
                        .clone();
                    super::count_merge_kinds(&kinds, &mut merge_kinds);
                    (batch.project(&(0..last).collect::<Vec<_>>())?, Some(kinds))
                }
                // an append table's rows to write, as inserts; the files and rows they came
                // from are noted for the commit
                WriteKind::MergeRewrite(base) => (append_marks.take(&batch, base)?, None),
                _ => (batch, None),
            };
            // a cross-partition write's rows from its assigners: some only counted, some added
            let (batch, given_kinds, buckets) = match given_kinds {
                Some(kinds) if cross_assigned => {
                    let rows = batch.num_rows() as u64;
                    let (batch, kinds, buckets, taken) =
                        super::assign::unpack_assigned(batch, kinds, buckets)?;
                    count = count - rows + taken;
                    (batch, Some(kinds), buckets)
                }
                given => (batch, given, buckets),
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let batch = self.validate(&batch)?;
            let (kinds, keep) = self.row_kinds(&batch, given_kinds)?;
            let (batch, kinds, buckets) = match keep {
                None => (batch, kinds, buckets),
                Some(rows) => {
                    let rows = UInt32Array::from(rows);
                    let kinds = arrow::compute::take(&kinds, &rows, None)?
                        .as_primitive::<Int8Type>()
                        .clone();
                    let buckets = match buckets {
                        Some(b) => Some(
                            arrow::compute::take(&b, &rows, None)?
                                .as_primitive::<arrow::datatypes::Int32Type>()
                                .clone(),
                        ),
                        None => None,
                    };
                    (take_record_batch(&batch, &rows)?, kinds, buckets)
                }
            };
            let (batch, kinds) = match global_index.as_mut() {
                Some(index) => {
                    let (batch, kinds, _) = index.apply(&batch, &kinds)?;
                    (batch, kinds)
                }
                None => (batch, kinds),
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let (targets, row_target) = routing
                .route(
                    &batch,
                    buckets.as_ref(),
                    assigner.as_mut(),
                    &self.meta,
                    &self.table,
                )
                .await?;
            // One target takes the whole batch: no list of its rows.
            let mut target_rows: Vec<Vec<u32>> = vec![Vec::new(); targets.len()];
            if targets.len() > 1 {
                for (row, target) in row_target.iter().enumerate() {
                    target_rows[*target as usize].push(row as u32);
                }
            }
            for (group, rows) in targets.iter().zip(target_rows) {
                let count = if targets.len() == 1 {
                    batch.num_rows()
                } else {
                    rows.len()
                };
                let start = *next_seq.entry(group.clone()).or_insert(0);
                next_seq.insert(group.clone(), start + count as i64);
                let (part, part_kinds) = if count == batch.num_rows() {
                    // The whole batch goes to one bucket.
                    (batch.clone(), kinds.clone())
                } else {
                    let rows = UInt32Array::from(rows);
                    let part = take_record_batch(&batch, &rows)?;
                    let part_kinds = arrow::compute::take(&kinds, &rows, None)?
                        .as_primitive::<Int8Type>()
                        .clone();
                    (part, part_kinds)
                };
                let n = part.num_rows();
                let seqs = Int64Array::from_iter_values(start..start + n as i64);
                let buffer = buffers.entry(group.clone()).or_insert_with(BucketBuffer::new);
                let before = buffer.bytes();
                buffer.push(part, seqs, part_kinds);
                let grown = buffer.bytes() - before;
                if reservation.try_grow(grown).is_err() || reservation.size() > write_buffer_size {
                    // Memory is short: write the largest buffer out as its own level-0 file.
                    let largest = buffers
                        .iter()
                        .max_by_key(|(_, b)| b.bytes())
                        .map(|(g, _)| g.clone());
                    if let Some(g) = largest {
                        let buffer = buffers.get_mut(&g).expect("largest buffer exists").take();
                        reservation.shrink(buffer.bytes().min(reservation.size()));
                        let files = join(self.spawn_flush(&routing, g, buffer)).await?;
                        if let Some(p) = &progress {
                            p.add_files_written(files.len());
                        }
                        flushed.extend(files);
                    }
                }
            }
        }
        // Flush every bucket in parallel: sorting and Parquet encoding are CPU-bound.
        let tasks: Vec<_> = buffers
            .into_iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(g, b)| self.spawn_flush(&routing, g, b))
            .collect();
        let parallelism = context.session_config().target_partitions().max(1);
        let written: Vec<Vec<ManifestEntry>> = futures::stream::iter(tasks)
            .map(join)
            .buffer_unordered(parallelism)
            .try_collect()
            .await?;
        reservation.free();
        if let Some(p) = &progress {
            p.add_files_written(written.iter().map(Vec::len).sum());
        }
        flushed.extend(written.into_iter().flatten());
        let (changelog, flushed): (Vec<ManifestEntry>, Vec<ManifestEntry>) = flushed
            .into_iter()
            .partition(|e| e.file.file_name.starts_with(CHANGELOG_PREFIX));
        self.metrics.rows_written.add(count as usize);
        self.metrics.record_files(&flushed, &changelog);
        let index_added = match &assigner {
            Some(a) => a.write_index_files(&self.meta).await?,
            None => vec![],
        };
        self.metrics.write_time.add_elapsed(started);
        Ok(WrittenFiles {
            rows: count,
            merge_kinds,
            added: flushed,
            changelog,
            index_added,
            append_marks: matches!(self.kind, WriteKind::MergeRewrite(_)).then_some(append_marks),
            compaction: Default::default(),
            row_level: None,
        })
    }

    /// The dynamic-bucket assigner of this write, from the latest snapshot's index (none for an
    /// INSERT OVERWRITE: it replaces the partitions it writes, keys included).
    pub(super) async fn bucket_assigner(&self) -> Result<BucketAssigner> {
        let options = AssignOptions::parse(&self.table, &self.schema)?;
        let latest = self.meta.latest_snapshot_for_write().await?;
        let fresh = matches!(self.kind, WriteKind::Overwrite(_));
        BucketAssigner::open(&self.meta, latest.as_ref(), options, fresh).await
    }
}
