//! Row-level DELETE and UPDATE on append tables, as Paimon's Spark integration does them
//! (semantics.md §9): with `deletion-vectors.enabled` the matching rows are marked in deletion
//! vectors and the files stay; otherwise every file holding a matching row is rewritten
//! (copy-on-write). An UPDATE writes the new versions of the rows it marks into a new file of
//! the same partition and bucket, or rewrites them in place.
//!
//! ```text
//! live files (pruned by partition and value statistics)
//!   └─ each file read whole, rows positioned, its current vector applied
//!        predicate ─► matching live rows
//!          DV mode : positions ─► one new index file per touched bucket (all its vectors)
//!                    UPDATE   ─► new rows ─► new data file
//!          rewrite : surviving (and updated) rows ─► new data file; the old one is removed
//! commit (OVERWRITE, operation DELETE/UPDATE): fails cleanly if a concurrent commit removed a
//! file it read or changed the touched buckets' vectors
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use arrow::compute::kernels::zip::zip;
use arrow::compute::{and, cast, concat_batches, filter_record_batch, not, prep_null_mask_filter};
use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_datafusion_err, internal_err, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_optimizer::pruning::PruningPredicate;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use futures::TryStreamExt;

use super::commit_message::{WrittenFiles, MESSAGE_SCHEMA};
use crate::deletion_vector::{
    merged_positions, write_bucket_index, DeletionVectorIndex, DELETION_VECTORS_INDEX,
};
use crate::io::{write_data_file, DataFileRows};
use crate::meta::{CommitRequest, OverwriteScope, RowLevelBase, TableMeta};
use crate::scan::{load_file_schemas, prune_files, read_file, FileToRead, ReadLayout};
use crate::spec::{paths, BinaryRow, FileKind, IndexManifestEntry, ManifestEntry, TableOptions, TableSchema};

/// A row-level DELETE (`updates` = None) or UPDATE of an append table: one task that reads,
/// writes and commits, or (on a cluster) `parts` tasks that each take a share of the buckets and
/// return their files as commit messages for one [`AppendDmlCommitExec`].
#[derive(Debug)]
pub struct AppendDmlExec {
    job: Arc<Job>,
    /// `None`: the one task commits; `Some(n)`: n tasks, committed by the node above.
    parts: Option<usize>,
    properties: Arc<PlanProperties>,
}

/// What one statement changes, and how.
#[derive(Debug)]
pub(crate) struct Job {
    table: String,
    meta: Arc<TableMeta>,
    schema: Arc<TableSchema>,
    options: TableOptions,
    /// Which rows change, over the table's Arrow schema.
    predicate: Arc<dyn PhysicalExpr>,
    /// Prunes files by partition and value statistics.
    pruning: Option<Arc<PruningPredicate>>,
    /// UPDATE: the new value of every column, in schema order (unassigned columns are
    /// themselves), cast to the column's type.
    updates: Option<Vec<Arc<dyn PhysicalExpr>>>,
}

impl AppendDmlExec {
    pub(crate) fn new(
        table: String,
        meta: Arc<TableMeta>,
        schema: Arc<TableSchema>,
        options: TableOptions,
        predicate: Arc<dyn PhysicalExpr>,
        pruning: Option<Arc<PruningPredicate>>,
        updates: Option<Vec<Arc<dyn PhysicalExpr>>>,
    ) -> Self {
        let job = Job {
            table,
            meta,
            schema,
            options,
            predicate,
            pruning,
            updates,
        };
        Self::of(Arc::new(job), None)
    }

    /// `job` run by one committing task, or by `parts` tasks returning commit messages.
    pub(crate) fn of(job: Arc<Job>, parts: Option<usize>) -> Self {
        let (schema, partitions) = match parts {
            None => (count_schema(), 1),
            Some(n) => (Arc::clone(&MESSAGE_SCHEMA), n.max(1)),
        };
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        AppendDmlExec {
            job,
            parts,
            properties,
        }
    }

    pub(crate) fn job(&self) -> &Arc<Job> {
        &self.job
    }

    /// `Some(n)`: the statement runs as n tasks returning commit messages.
    pub(crate) fn parts(&self) -> Option<usize> {
        self.parts
    }
}

impl Job {
    /// A job from its parts (a decoded plan); pruning follows from the predicate.
    pub(crate) fn new(
        table: String,
        meta: Arc<TableMeta>,
        schema: Arc<TableSchema>,
        predicate: Arc<dyn PhysicalExpr>,
        updates: Option<Vec<Arc<dyn PhysicalExpr>>>,
    ) -> Result<Self> {
        let options = TableOptions::parse(&schema.options)?;
        let pruning = crate::scan::pruning_predicate(&schema, Some(&predicate));
        Ok(Job {
            table,
            meta,
            schema,
            options,
            predicate,
            pruning,
            updates,
        })
    }

    /// Table name, its metadata, the schema it writes with, the predicate and the updates.
    #[allow(clippy::type_complexity)]
    pub(crate) fn parts(
        &self,
    ) -> (
        &str,
        &Arc<TableMeta>,
        &Arc<TableSchema>,
        &Arc<dyn PhysicalExpr>,
        Option<&[Arc<dyn PhysicalExpr>]>,
    ) {
        (
            &self.table,
            &self.meta,
            &self.schema,
            &self.predicate,
            self.updates.as_deref(),
        )
    }

    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    fn statement(&self) -> &'static str {
        if self.updates.is_some() {
            "UPDATE"
        } else {
            "DELETE"
        }
    }

    fn mode(&self) -> &'static str {
        if self.options.deletion_vectors {
            "deletion-vectors"
        } else {
            "copy-on-write"
        }
    }
}

/// DML statements report the rows they changed in one `count` column (as `DataSinkExec`).
fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("count", ArrowType::UInt64, false)]))
}

impl DisplayAs for AppendDmlExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "AppendDmlExec: table={}, statement={}, mode={}, predicate={}",
            self.job.table,
            self.job.statement(),
            self.job.mode(),
            self.job.predicate
        )?;
        match self.parts {
            Some(n) => write!(f, ", parts={n}"),
            None => Ok(()),
        }
    }
}

impl ExecutionPlan for AppendDmlExec {
    fn name(&self) -> &str {
        "AppendDmlExec"
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        f(&self.job.predicate)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            internal_err!("AppendDmlExec has no children")
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let partitions = self.parts.unwrap_or(1);
        if partition >= partitions {
            return internal_err!("AppendDmlExec has {partitions} partitions, asked for {partition}");
        }
        let job = Arc::clone(&self.job);
        let batch_size = context.session_config().batch_size();
        let Some(parts) = self.parts else {
            let stream = futures::stream::once(async move {
                let changes = job.changes(None, batch_size).await?;
                let count = job
                    .commit(changes, &uuid::Uuid::new_v4().to_string(), None)
                    .await?;
                Ok(RecordBatch::try_new(
                    count_schema(),
                    vec![Arc::new(UInt64Array::from(vec![count]))],
                )?)
            });
            return Ok(Box::pin(RecordBatchStreamAdapter::new(count_schema(), stream)));
        };
        let stream = futures::stream::once(async move {
            job.changes(Some((partition, parts)), batch_size)
                .await?
                .to_message_batch()
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&MESSAGE_SCHEMA),
            stream,
        )))
    }
}

/// How every file of one statement is read.
struct Reading<'a> {
    layout: Arc<ReadLayout>,
    vectors: &'a DeletionVectorIndex,
    dv_mode: bool,
    batch_size: usize,
}

/// What reading one file found.
#[derive(Default)]
struct FileOutcome {
    /// Positions of the live rows that match, ascending.
    matched: Vec<u64>,
    /// Copy-on-write: the file's surviving rows (updated where they match).
    rewritten: Vec<RecordBatch>,
    /// Deletion-vector UPDATE: the new versions of the matched rows.
    updated: Vec<RecordBatch>,
}

impl Job {
    /// What the statement changes in the buckets of part `part` of `parts` (all of them for
    /// `None`): the files written and the files and vectors replaced, not committed.
    pub(crate) async fn changes(
        &self,
        part: Option<(usize, usize)>,
        batch_size: usize,
    ) -> Result<WrittenFiles> {
        let Some(snapshot) = self.meta.latest_snapshot().await? else {
            return Ok(WrittenFiles::default());
        };
        let live = self.meta.live_files(&snapshot, |_| true).await?;
        let vectors = self
            .meta
            .deletion_vectors(&snapshot, &paths::IndexFileDirs::of(&self.schema))
            .await?;
        let index_entries = match &snapshot.index_manifest {
            Some(name) => self.meta.index_manifest(name).await?,
            None => vec![],
        };
        let dv_mode = self.options.deletion_vectors;
        let reading = Reading {
            layout: Arc::new(ReadLayout::new(self.schema.fields.clone(), false)),
            vectors: &vectors,
            dv_mode,
            batch_size,
        };
        let mut file_schemas = HashMap::new();
        let mut base = RowLevelBase {
            statement: self.statement().to_string(),
            ..Default::default()
        };
        let (mut added, mut index_added) = (Vec::new(), Vec::new());
        let mut count = 0u64;
        for (group, entries) in &live.groups {
            if part.is_some_and(|(part, parts)| crate::compact::part_of(group, parts) != part) {
                continue;
            }
            let (partition, bucket) = group;
            let partition_values = BinaryRow::decode(partition, &self.schema.partition_types())?.values;
            let mut files: Vec<&ManifestEntry> = entries.iter().collect();
            load_file_schemas(&self.meta, &files, &mut file_schemas).await?;
            if let Some(p) = &self.pruning {
                files = prune_files(p, &self.schema, &partition_values, files, &file_schemas)?;
            }
            let dir = paths::bucket_path(
                self.options.data_file_path_directory.as_deref(),
                &paths::partition_path(
                    &self.schema.partition_keys,
                    &partition_values,
                    &self.options.partition_default_name,
                ),
                *bucket,
            );
            let mut new_positions: BTreeMap<String, Vec<u64>> = BTreeMap::new();
            let mut updated: Vec<RecordBatch> = Vec::new();
            for entry in files {
                let file_schema = file_schemas
                    .get(&entry.file.schema_id)
                    .cloned()
                    .ok_or_else(|| exec_datafusion_err!("Schema {} is not loaded", entry.file.schema_id))?;
                let outcome = self.read_file(entry, &dir, file_schema, &reading).await?;
                if outcome.matched.is_empty() {
                    continue;
                }
                count += outcome.matched.len() as u64;
                if dv_mode {
                    new_positions.insert(entry.file.file_name.clone(), outcome.matched);
                    updated.extend(outcome.updated);
                    base.marked.push(entry.clone());
                } else {
                    base.rewritten.push(entry.clone());
                    for file in self.write_rows(&dir, outcome.rewritten).await? {
                        added.push(self.add_entry(partition, *bucket, file));
                    }
                }
            }
            for file in self.write_rows(&dir, updated).await? {
                added.push(self.add_entry(partition, *bucket, file));
            }
            if !new_positions.is_empty() {
                let in_bucket = |e: &&IndexManifestEntry| {
                    e.kind == FileKind::Add
                        && e.index_type == DELETION_VECTORS_INDEX
                        && e.partition == *partition
                        && e.bucket == *bucket
                };
                base.index_files.extend(
                    index_entries
                        .iter()
                        .filter(in_bucket)
                        .map(|e| e.file_name.clone()),
                );
                let entry = self
                    .bucket_index_file(partition, *bucket, entries, &vectors, new_positions)
                    .await?;
                index_added.push(entry);
            }
        }
        Ok(WrittenFiles {
            rows: count,
            added,
            index_added,
            row_level: Some(base),
            ..Default::default()
        })
    }

    /// Commits `changes` (of every part) as one snapshot as `commit_user`; with
    /// `exactly_once_since`, not again if `commit_user` committed since then (a retried commit
    /// task). Returns the rows changed.
    pub(crate) async fn commit(
        &self,
        changes: WrittenFiles,
        commit_user: &str,
        exactly_once_since: Option<i64>,
    ) -> Result<u64> {
        let count = changes.rows;
        if count == 0 {
            return Ok(0);
        }
        if let Some(since) = exactly_once_since {
            if self.meta.committed_by(commit_user, since).await?.is_some() {
                return Ok(count);
            }
        }
        let mut base = changes.row_level.unwrap_or_default();
        base.statement = self.statement().to_string();
        let request = CommitRequest {
            added: changes.added,
            overwrite: OverwriteScope::None,
            partition_types: self.schema.partition_types(),
            commit_user: commit_user.to_string(),
            commit_identifier: i64::MAX,
            operation: Some(self.statement().to_string()),
            compacted: vec![],
            changelog: vec![],
            index_added: changes.index_added,
            index_removed: vec![],
            row_level: Some(base),
        };
        self.meta
            .commit(&request)
            .await
            .map_err(|e| exec_datafusion_err!("{} on table {} failed: {e}", self.statement(), self.table))?;
        Ok(count)
    }

    fn add_entry(&self, partition: &[u8], bucket: i32, file: crate::spec::DataFileMeta) -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Add,
            partition: partition.to_vec(),
            bucket,
            total_buckets: self.options.bucket,
            file,
        }
    }

    /// Reads `entry` whole, positions its rows and finds the live ones that match.
    async fn read_file(
        &self,
        entry: &ManifestEntry,
        dir: &str,
        file_schema: Arc<TableSchema>,
        reading: &Reading<'_>,
    ) -> Result<FileOutcome> {
        let Reading {
            layout,
            vectors,
            dv_mode,
            batch_size,
        } = reading;
        let io = self.meta.io();
        let path = io.data_file_path(dir, &entry.file.file_name, entry.file.external_path.as_deref());
        let deleted: Vec<u64> = match vectors.get(&entry.file.file_name) {
            Some(dv) => dv.load(io.store()).await?.positions().to_vec(),
            None => vec![],
        };
        // Read without the vector, so positions are the file's; deleted rows are masked below.
        let file = FileToRead::whole(path?, entry.file.file_size.max(0) as u64, false, None);
        let mut stream = Box::pin(
            read_file(
                Arc::clone(io.store()),
                file,
                file_schema,
                Arc::clone(layout),
                *batch_size,
            )
            .await?,
        );
        let mut outcome = FileOutcome::default();
        let mut offset = 0u64;
        let mut next_deleted = 0usize;
        while let Some(batch) = stream.try_next().await? {
            let rows = batch.num_rows() as u64;
            let alive: BooleanArray = (offset..offset + rows)
                .map(|p| {
                    while next_deleted < deleted.len() && deleted[next_deleted] < p {
                        next_deleted += 1;
                    }
                    Some(deleted.get(next_deleted) != Some(&p))
                })
                .collect();
            let matches = self.predicate.evaluate(&batch)?.into_array(batch.num_rows())?;
            let matches = matches
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| exec_datafusion_err!("The {} predicate is not boolean", self.statement()))?;
            // NULL does not match.
            let matches = if matches.null_count() > 0 {
                prep_null_mask_filter(matches)
            } else {
                matches.clone()
            };
            let hit = and(&matches, &alive)?;
            outcome.matched.extend(
                hit.iter()
                    .enumerate()
                    .filter(|(_, h)| *h == Some(true))
                    .map(|(i, _)| offset + i as u64),
            );
            offset += rows;
            let new_rows = match &self.updates {
                Some(updates) => Some(self.updated(&batch, updates, &hit)?),
                None => None,
            };
            if *dv_mode {
                if let Some(new_rows) = new_rows {
                    outcome.updated.push(filter_record_batch(&new_rows, &hit)?);
                }
            } else {
                // Surviving rows: live, and either not matching or updated in place.
                let keep = match &new_rows {
                    Some(_) => alive.clone(),
                    None => and(&alive, &not(&hit)?)?,
                };
                let source = new_rows.as_ref().unwrap_or(&batch);
                outcome.rewritten.push(filter_record_batch(source, &keep)?);
            }
        }
        Ok(outcome)
    }

    /// `batch` with every column replaced by its update where `hit` is set.
    fn updated(
        &self,
        batch: &RecordBatch,
        updates: &[Arc<dyn PhysicalExpr>],
        hit: &BooleanArray,
    ) -> Result<RecordBatch> {
        let columns = updates
            .iter()
            .zip(batch.columns())
            .map(|(expr, old)| -> Result<ArrayRef> {
                let new = expr.evaluate(batch)?.into_array(batch.num_rows())?;
                let new = if new.data_type() == old.data_type() {
                    new
                } else {
                    cast(&new, old.data_type())?
                };
                Ok(zip(hit, &new, old)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(batch.schema(), columns)?)
    }

    /// Writes `batches` as one new level-0 file of `dir` (none if they hold no row).
    async fn write_rows(
        &self,
        dir: &str,
        batches: Vec<RecordBatch>,
    ) -> Result<Vec<crate::spec::DataFileMeta>> {
        let Some(first) = batches.first() else {
            return Ok(vec![]);
        };
        let values = concat_batches(&first.schema(), &batches)?;
        if values.num_rows() == 0 {
            return Ok(vec![]);
        }
        let rows = DataFileRows { values, kv: None };
        Ok(write_data_file(self.meta.io(), dir, "data", 0, &self.schema, rows).await?)
    }

    /// One index file with every vector of the bucket: the current vectors of its live files
    /// plus the new positions. It replaces the bucket's DELETION_VECTORS entries.
    async fn bucket_index_file(
        &self,
        partition: &[u8],
        bucket: i32,
        files: &[ManifestEntry],
        vectors: &DeletionVectorIndex,
        new_positions: BTreeMap<String, Vec<u64>>,
    ) -> Result<IndexManifestEntry> {
        let io = self.meta.io();
        let names: Vec<&str> = files.iter().map(|e| e.file.file_name.as_str()).collect();
        let added = new_positions.into_iter().collect();
        let positions = merged_positions(io.store(), &names, vectors, added).await?;
        write_bucket_index(
            io,
            partition,
            bucket,
            positions,
            &paths::IndexFileDirs::of(&self.schema),
        )
        .await
    }
}
