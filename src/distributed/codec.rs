//! The two extension codecs (see the module docs of `distributed`). Payloads are JSON: a table
//! recipe, plus for scan nodes the `scan` arguments, with filters as `datafusion-proto` bytes.

use std::any::Any;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_datafusion_err, internal_err, not_impl_err, Result, TableReference};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::bytes::Serializeable;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use serde::{Deserialize, Serialize};

use datafusion::datasource::sink::{DataSink, DataSinkExec};

use super::dml_recipe::DmlRecipe;
use crate::changelog::ChangelogNormalizeExec;
use crate::compact::{CompactionJob, PaimonCompactCommitExec, PaimonCompactExec};
use crate::meta::OverwriteScope;
use crate::scan::{PaimonIncrementalScanExec, PaimonScanExec};
use crate::spec::TableSchema;
use crate::system_tables::ReadOnlyTable;
use crate::table::{open_meta, MergeTarget, PaimonTable, ScanKind, ScanOrigin, TableRecipe};
use crate::write::{
    AppendDmlCommitExec, AppendDmlExec, PaimonAssignExec, PaimonBucketExec, PaimonCommitExec, PaimonSink,
    PaimonWriteExec, WriteKind,
};

/// Encodes [`PaimonTable`] providers (the tables of `TableScan`s) for a Ballista scheduler;
/// everything else (extension nodes, other providers, file formats) goes to `inner`.
///
/// Provider payloads start with [`TABLE_MAGIC`], so decoding knows which codec wrote them.
#[derive(Debug)]
pub struct PaimonLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

/// Prefix of a Paimon table payload.
const TABLE_MAGIC: &[u8] = b"paimon-table:";

/// Prefix of a `CALL sys.compact` job's payload (a [`CompactRecipe`] as JSON).
const COMPACT_MAGIC: &[u8] = b"paimon-compact:";
/// A MERGE's target (`table::MergeTarget`) that writes rows with their kinds: the table's recipe.
const MERGE_MAGIC: &[u8] = b"paimon-merge:";

/// A [`CompactionJob`] as data.
#[derive(Debug, Serialize, Deserialize)]
struct CompactRecipe {
    location: String,
    table: String,
    schema: String,
    partitions: Option<Vec<Vec<(String, String)>>>,
}

impl CompactRecipe {
    fn of(job: &CompactionJob) -> Self {
        CompactRecipe {
            location: job.meta.io().root_url().to_string(),
            table: job.table.clone(),
            schema: job.schema.to_json(),
            partitions: job.partitions.clone(),
        }
    }

    fn open(self, ctx: &TaskContext) -> Result<CompactionJob> {
        let meta = open_meta(&self.location, ctx.runtime_env().as_ref())?;
        let schema = TableSchema::from_json(self.schema.as_bytes(), &format!("{}/schema", self.location))?;
        Ok(CompactionJob {
            table: self.table,
            meta,
            schema: Arc::new(schema),
            partitions: self.partitions,
        })
    }
}

/// Prefix of a metadata table's payload: its name, then its rows (read on the client when
/// the statement was planned, as a local session reads them) as an Arrow IPC stream.
const ROWS_MAGIC: &[u8] = b"paimon-rows:";

fn encode_rows(name: &str, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    buf.extend((name.len() as u32).to_le_bytes());
    buf.extend(name.as_bytes());
    let mut writer = arrow::ipc::writer::StreamWriter::try_new(&mut buf, schema)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()?;
    drop(writer);
    Ok(buf)
}

fn decode_rows(buf: &[u8], table_ref: &TableReference) -> Result<Arc<dyn TableProvider>> {
    let invalid = || exec_datafusion_err!("Invalid rows of system table {table_ref} in a serialized plan");
    let len = u32::from_le_bytes(
        buf.get(..4)
            .ok_or_else(invalid)?
            .try_into()
            .map_err(|_| invalid())?,
    ) as usize;
    let name = std::str::from_utf8(buf.get(4..4 + len).ok_or_else(invalid)?).map_err(|_| invalid())?;
    let reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(&buf[4 + len..]), None)?;
    let schema = reader.schema();
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let memory = datafusion::datasource::MemTable::try_new(schema, vec![batches])?;
    Ok(Arc::new(ReadOnlyTable::new(name.to_string(), Arc::new(memory))))
}

impl PaimonLogicalCodec {
    /// Paimon tables first, then `inner` (Ballista's own codec, say).
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        PaimonLogicalCodec { inner }
    }
}

impl LogicalExtensionCodec for PaimonLogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn datafusion::datasource::file_format::FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn datafusion::datasource::file_format::FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        if let Some(rows) = buf.strip_prefix(ROWS_MAGIC) {
            return decode_rows(rows, table_ref);
        }
        if let Some(job) = buf.strip_prefix(COMPACT_MAGIC) {
            let job: CompactRecipe = serde_json::from_slice(job).map_err(|e| {
                exec_datafusion_err!("Invalid compaction of {table_ref} in a serialized plan: {e}")
            })?;
            return Ok(Arc::new(job.open(ctx)?));
        }
        if let Some(recipe) = buf.strip_prefix(MERGE_MAGIC) {
            let table = TableRecipe::from_bytes(recipe)?.open(ctx.runtime_env().as_ref())?;
            return Ok(Arc::new(MergeTarget::writing_kinds(table)));
        }
        let Some(recipe) = buf.strip_prefix(TABLE_MAGIC) else {
            return self.inner.try_decode_table_provider(buf, table_ref, schema, ctx);
        };
        let recipe = TableRecipe::from_bytes(recipe)?;
        Ok(Arc::new(recipe.open(ctx.runtime_env().as_ref())?))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(job) = node.downcast_ref::<CompactionJob>() {
            buf.extend_from_slice(COMPACT_MAGIC);
            buf.extend(serde_json::to_vec(&CompactRecipe::of(job)).expect("a compaction recipe serializes"));
            return Ok(());
        }
        if let Some(table) = node.downcast_ref::<MergeTarget>().and_then(MergeTarget::sendable) {
            buf.extend_from_slice(MERGE_MAGIC);
            buf.extend(TableRecipe::of(table).to_bytes());
            return Ok(());
        }
        if let Some(system) = node.downcast_ref::<ReadOnlyTable>() {
            if let Some((name, schema, batches)) = system.rows() {
                buf.extend_from_slice(ROWS_MAGIC);
                buf.extend(encode_rows(name, &schema, &batches)?);
                return Ok(());
            }
        }
        let Some(table) = (node.as_ref() as &dyn Any).downcast_ref::<PaimonTable>() else {
            return self
                .inner
                .try_encode_table_provider(table_ref, node, buf)
                .map_err(|e| {
                    e.context(format!(
                        "Table {table_ref} cannot be sent to Ballista: of the Paimon catalog, tables, \
                         their views and metadata tables are distributable, and MERGE into \
                         primary-key tables and inserting MERGEs; table functions other than \
                         paimon_incremental_query (generate_series, ...) and MERGE that changes \
                         rows of an append table are not"
                    ))
                });
        };
        buf.extend_from_slice(TABLE_MAGIC);
        buf.extend(TableRecipe::of(table).to_bytes());
        Ok(())
    }
}

/// A node of ours as data.
#[derive(Debug, Serialize, Deserialize)]
enum NodeRecipe {
    Scan(ScanRecipe),
    /// `ChangelogNormalizeExec`: rebuilt over its decoded children (the start state's scan,
    /// if seeded, and the delta scan).
    Normalize {
        table: String,
        schema: String,
        #[serde(default = "one")]
        partitions: usize,
    },
    /// `DataSinkExec` writing to a Paimon table: rebuilt over its decoded input. The executor
    /// running it writes the files and commits, as a local statement would.
    Sink(SinkRecipe),
    /// The nodes of a parallel write (`write::parallel`, `write::assign`), each over its
    /// decoded input.
    Bucket {
        sink: SinkRecipe,
        /// dynamic buckets: how many assigners (0 for fixed buckets)
        assigners: usize,
    },
    Assign {
        sink: SinkRecipe,
        assigners: usize,
    },
    Writer(SinkRecipe),
    Commit {
        sink: SinkRecipe,
        commit_user: String,
        started_millis: i64,
        /// a MERGE (Spark's four counts)
        #[serde(default)]
        merge: bool,
    },
    /// The nodes of a parallel `CALL sys.compact` (`compact::parallel`).
    Compact {
        job: CompactRecipe,
        parts: usize,
    },
    CompactCommit {
        job: CompactRecipe,
        commit_user: String,
        started_millis: i64,
    },
    /// The nodes of a DELETE or UPDATE of an append table (`write::AppendDmlExec`, one task
    /// for `parts` = None, and `write::AppendDmlCommitExec`).
    AppendDml {
        job: DmlRecipe,
        parts: Option<usize>,
    },
    AppendDmlCommit {
        job: DmlRecipe,
        commit_user: String,
        started_millis: i64,
    },
}

fn one() -> usize {
    1
}

/// A `PaimonSink` as data.
#[derive(Debug, Serialize, Deserialize)]
struct SinkRecipe {
    /// URL of the table directory.
    location: String,
    table: String,
    /// The schema the sink writes with, as its `schema-N` JSON.
    schema: String,
    kind: WriteRecipe,
}

/// A [`WriteKind`] as data; partition values as `datafusion-proto` literal bytes.
#[derive(Debug, Serialize, Deserialize)]
enum WriteRecipe {
    Insert,
    Overwrite(ScopeRecipe),
    Delete,
    Update,
    Truncate,
    DropPartitions(ScopeRecipe),
    Merge,
}

#[derive(Debug, Serialize, Deserialize)]
enum ScopeRecipe {
    None,
    Table,
    Partitions(Vec<Vec<Option<Vec<u8>>>>),
}

impl SinkRecipe {
    /// The recipe of a Paimon sink; `None` for other sinks.
    fn of(sink: &dyn DataSink) -> Result<Option<Self>> {
        let Some(sink) = sink.downcast_ref::<PaimonSink>() else {
            return Ok(None);
        };
        let (table, meta, schema, kind) = sink.parts();
        Ok(Some(SinkRecipe {
            location: meta.io().root_url().to_string(),
            table: table.to_string(),
            schema: schema.to_json(),
            kind: WriteRecipe::of(kind)?,
        }))
    }

    fn open(self, ctx: &TaskContext) -> Result<Arc<dyn DataSink>> {
        let meta = open_meta(&self.location, ctx.runtime_env().as_ref())?;
        let schema = TableSchema::from_json(self.schema.as_bytes(), &format!("{}/schema", self.location))?;
        Ok(Arc::new(PaimonSink::try_new(
            self.table,
            meta,
            Arc::new(schema),
            self.kind.kind(ctx)?,
        )?))
    }
}

fn one_input(node: &str, inputs: &[Arc<dyn ExecutionPlan>]) -> Result<Arc<dyn ExecutionPlan>> {
    match inputs {
        [input] => Ok(Arc::clone(input)),
        _ => internal_err!("{node} takes one input, got {}", inputs.len()),
    }
}

impl WriteRecipe {
    fn of(kind: &WriteKind) -> Result<Self> {
        Ok(match kind {
            WriteKind::Insert => WriteRecipe::Insert,
            WriteKind::Overwrite(scope) => WriteRecipe::Overwrite(ScopeRecipe::of(scope)?),
            WriteKind::Delete => WriteRecipe::Delete,
            WriteKind::Update => WriteRecipe::Update,
            WriteKind::Truncate => WriteRecipe::Truncate,
            WriteKind::DropPartitions(scope) => WriteRecipe::DropPartitions(ScopeRecipe::of(scope)?),
            WriteKind::Merge => WriteRecipe::Merge,
            WriteKind::MergeRewrite(_) => {
                return datafusion::common::not_impl_err!(
                    "MERGE INTO an append table does not run on a cluster yet"
                )
            }
        })
    }

    fn kind(&self, ctx: &TaskContext) -> Result<WriteKind> {
        Ok(match self {
            WriteRecipe::Insert => WriteKind::Insert,
            WriteRecipe::Overwrite(scope) => WriteKind::Overwrite(scope.scope(ctx)?),
            WriteRecipe::Delete => WriteKind::Delete,
            WriteRecipe::Update => WriteKind::Update,
            WriteRecipe::Truncate => WriteKind::Truncate,
            WriteRecipe::DropPartitions(scope) => WriteKind::DropPartitions(scope.scope(ctx)?),
            WriteRecipe::Merge => WriteKind::Merge,
        })
    }
}

impl ScopeRecipe {
    fn of(scope: &OverwriteScope) -> Result<Self> {
        Ok(match scope {
            OverwriteScope::None => ScopeRecipe::None,
            OverwriteScope::Table => ScopeRecipe::Table,
            OverwriteScope::Partitions(specs) => ScopeRecipe::Partitions(
                specs
                    .iter()
                    .map(|spec| {
                        spec.iter()
                            .map(|v| match v {
                                Some(v) => Ok(Some(Expr::Literal(v.clone(), None).to_bytes()?.to_vec())),
                                None => Ok(None),
                            })
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    fn scope(&self, ctx: &TaskContext) -> Result<OverwriteScope> {
        Ok(match self {
            ScopeRecipe::None => OverwriteScope::None,
            ScopeRecipe::Table => OverwriteScope::Table,
            ScopeRecipe::Partitions(specs) => OverwriteScope::Partitions(
                specs
                    .iter()
                    .map(|spec| {
                        spec.iter()
                            .map(|v| match v {
                                None => Ok(None),
                                Some(bytes) => match Expr::from_bytes_with_ctx(bytes, ctx)? {
                                    Expr::Literal(value, _) => Ok(Some(value)),
                                    other => {
                                        internal_err!("A partition value must be a literal, got {other}")
                                    }
                                },
                            })
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }
}

/// A scan node as data: how to plan it again, and what it must come out as.
#[derive(Debug, Serialize, Deserialize)]
struct ScanRecipe {
    table: TableRecipe,
    incremental: bool,
    projection: Option<Vec<usize>>,
    /// Each pushed-down filter as `datafusion-proto` bytes.
    filters: Vec<Vec<u8>>,
    limit: Option<usize>,
    partitions: usize,
    fingerprint: u32,
    /// The scan came as split groups (`split_groups.rs`), narrowed by Ballista to these
    /// partitions of it.
    #[serde(default)]
    groups: Option<Vec<usize>>,
}

/// Encodes `PaimonScanExec` and `PaimonIncrementalScanExec` for Ballista executors. Other
/// nodes fail to encode here: compose it after Ballista's own codec
/// (`ComposedPhysicalExtensionCodec`, as [`super::with_paimon_codecs`] does).
#[derive(Debug, Default)]
pub struct PaimonPhysicalCodec;

impl PhysicalExtensionCodec for PaimonPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let recipe: NodeRecipe = serde_json::from_slice(buf)
            .map_err(|e| exec_datafusion_err!("Invalid Paimon node in a serialized plan: {e}"))?;
        let recipe = match recipe {
            NodeRecipe::Scan(scan) => scan,
            NodeRecipe::Sink(sink) => {
                let input = one_input("DataSinkExec", inputs)?;
                return Ok(Arc::new(DataSinkExec::new(input, sink.open(ctx)?, None)));
            }
            NodeRecipe::Bucket { sink, assigners } => {
                let input = one_input("PaimonBucketExec", inputs)?;
                return Ok(Arc::new(PaimonBucketExec::try_new(
                    input,
                    sink.open(ctx)?,
                    assigners,
                )?));
            }
            NodeRecipe::Assign { sink, assigners } => {
                let input = one_input("PaimonAssignExec", inputs)?;
                return Ok(Arc::new(PaimonAssignExec::try_new(
                    input,
                    sink.open(ctx)?,
                    assigners,
                )?));
            }
            NodeRecipe::Writer(sink) => {
                let input = one_input("PaimonWriteExec", inputs)?;
                return Ok(Arc::new(PaimonWriteExec::try_new(input, sink.open(ctx)?)?));
            }
            NodeRecipe::Commit {
                sink,
                commit_user,
                started_millis,
                merge,
            } => {
                let input = one_input("PaimonCommitExec", inputs)?;
                return Ok(Arc::new(PaimonCommitExec::try_new(
                    input,
                    sink.open(ctx)?,
                    commit_user,
                    started_millis,
                    merge,
                )?));
            }
            NodeRecipe::Compact { job, parts } => {
                let input = one_input("PaimonCompactExec", inputs)?;
                return Ok(Arc::new(PaimonCompactExec::new(
                    input,
                    Arc::new(job.open(ctx)?),
                    parts,
                )));
            }
            NodeRecipe::AppendDml { job, parts } => {
                return Ok(Arc::new(AppendDmlExec::of(job.open(ctx)?, parts)));
            }
            NodeRecipe::AppendDmlCommit {
                job,
                commit_user,
                started_millis,
            } => {
                let input = one_input("AppendDmlCommitExec", inputs)?;
                return Ok(Arc::new(AppendDmlCommitExec::new(
                    input,
                    job.open(ctx)?,
                    commit_user,
                    started_millis,
                )));
            }
            NodeRecipe::CompactCommit {
                job,
                commit_user,
                started_millis,
            } => {
                let input = one_input("PaimonCompactCommitExec", inputs)?;
                return Ok(Arc::new(PaimonCompactCommitExec::new(
                    input,
                    Arc::new(job.open(ctx)?),
                    commit_user,
                    started_millis,
                )));
            }
            NodeRecipe::Normalize {
                table,
                schema,
                partitions,
            } => {
                let schema = TableSchema::from_json(schema.as_bytes(), &format!("{table}/schema"))?;
                let (seed, changes) = match inputs {
                    [changes] => (None, Arc::clone(changes)),
                    [seed, changes] => (Some(Arc::clone(seed)), Arc::clone(changes)),
                    _ => {
                        return internal_err!(
                            "ChangelogNormalizeExec takes one or two inputs, got {}",
                            inputs.len()
                        )
                    }
                };
                // split by key: as many partitions as its (possibly narrowed) children have
                let partitions = if partitions > 1 {
                    changes.properties().partitioning.partition_count()
                } else {
                    1
                };
                return Ok(Arc::new(ChangelogNormalizeExec::with_partitions(
                    &table, &schema, seed, changes, partitions,
                )?));
            }
        };
        let table = recipe.table.open(ctx.runtime_env().as_ref())?;
        let filters = recipe
            .filters
            .iter()
            .map(|bytes| Expr::from_bytes_with_ctx(bytes, ctx))
            .collect::<Result<Vec<_>>>()?;
        let origin = ScanOrigin {
            table: table.clone(),
            kind: if recipe.incremental {
                ScanKind::Incremental
            } else {
                ScanKind::Batch
            },
            projection: recipe.projection.clone(),
            filters,
            limit: recipe.limit,
        };
        let state = SessionStateBuilder::new()
            .with_config(ctx.session_config().clone())
            .with_runtime_env(ctx.runtime_env())
            .with_default_features()
            .build();
        // Planning reads the table's manifests; decoding is synchronous, so it blocks this
        // worker thread (executors run on a multi-threaded Tokio runtime).
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| exec_datafusion_err!("Decoding a Paimon scan needs a Tokio runtime"))?;
        let plan = tokio::task::block_in_place(|| handle.block_on(table.rescan(&state, &origin)))?;
        let (partitions, fingerprint) = layout(&plan)?;
        if partitions != recipe.partitions || fingerprint != recipe.fingerprint {
            return internal_err!(
                "The scan of {} planned differently on this executor ({partitions} partitions, \
                 fingerprint {fingerprint:08x}) than on the scheduler ({} partitions, fingerprint {:08x}); \
                 refusing to read other rows than planned",
                table.name(),
                recipe.partitions,
                recipe.fingerprint
            );
        }
        if let Some(group) = recipe.groups.iter().flatten().find(|g| **g >= partitions) {
            return internal_err!(
                "The scan of {} has {partitions} partitions on this executor, but its task reads partition {group}",
                table.name()
            );
        }
        Ok(match &recipe.groups {
            Some(groups) => {
                let store = super::store_url(table.meta().io().root_url())?;
                super::split_groups(plan, Some(groups), state.task_ctx(), store)
            }
            None => plan,
        })
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let write = if let Some(exec) = node.downcast_ref::<DataSinkExec>() {
            SinkRecipe::of(exec.sink())?.map(NodeRecipe::Sink)
        } else if let Some(exec) = node.downcast_ref::<PaimonBucketExec>() {
            SinkRecipe::of(exec.sink().as_ref())?.map(|sink| NodeRecipe::Bucket {
                sink,
                assigners: exec.assigners(),
            })
        } else if let Some(exec) = node.downcast_ref::<PaimonAssignExec>() {
            SinkRecipe::of(exec.sink().as_ref())?.map(|sink| NodeRecipe::Assign {
                sink,
                assigners: exec.assigners(),
            })
        } else if let Some(exec) = node.downcast_ref::<PaimonWriteExec>() {
            SinkRecipe::of(exec.sink().as_ref())?.map(NodeRecipe::Writer)
        } else if let Some(exec) = node.downcast_ref::<PaimonCommitExec>() {
            let (user, started) = exec.commit_identity();
            SinkRecipe::of(exec.sink().as_ref())?.map(|sink| NodeRecipe::Commit {
                sink,
                commit_user: user.to_string(),
                started_millis: started,
                merge: exec.is_merge(),
            })
        } else if let Some(exec) = node.downcast_ref::<PaimonCompactExec>() {
            let (job, parts) = exec.job();
            Some(NodeRecipe::Compact {
                job: CompactRecipe::of(job),
                parts,
            })
        } else if let Some(exec) = node.downcast_ref::<PaimonCompactCommitExec>() {
            let (job, user, started) = exec.job();
            Some(NodeRecipe::CompactCommit {
                job: CompactRecipe::of(job),
                commit_user: user.to_string(),
                started_millis: started,
            })
        } else if let Some(exec) = node.downcast_ref::<AppendDmlExec>() {
            Some(NodeRecipe::AppendDml {
                job: DmlRecipe::of(exec.job())?,
                parts: exec.parts(),
            })
        } else if let Some(exec) = node.downcast_ref::<AppendDmlCommitExec>() {
            let (job, user, started) = exec.identity();
            Some(NodeRecipe::AppendDmlCommit {
                job: DmlRecipe::of(job)?,
                commit_user: user.to_string(),
                started_millis: started,
            })
        } else {
            None
        };
        if let Some(recipe) = write {
            buf.extend(serde_json::to_vec(&recipe).expect("a sink recipe serializes"));
            return Ok(());
        }
        if let Some(normalize) = node.downcast_ref::<ChangelogNormalizeExec>() {
            let (table, schema, partitions) = normalize.table();
            let recipe = NodeRecipe::Normalize {
                table: table.to_string(),
                schema: schema.to_json(),
                partitions,
            };
            buf.extend(serde_json::to_vec(&recipe).expect("a node recipe serializes"));
            return Ok(());
        }
        let (node, groups) = match super::split_groups::as_split_groups(&node) {
            Some((source, groups)) => (Arc::clone(source.scan()), Some(groups)),
            None => (node, None),
        };
        let origin = scan_origin(&node)?;
        let (partitions, fingerprint) = layout(&node)?;
        let filters = origin
            .filters
            .iter()
            .map(|f| Ok(f.to_bytes()?.to_vec()))
            .collect::<Result<Vec<_>>>()?;
        let recipe = ScanRecipe {
            table: TableRecipe::of(&origin.table),
            incremental: origin.kind == ScanKind::Incremental,
            projection: origin.projection.clone(),
            filters,
            limit: origin.limit,
            partitions,
            fingerprint,
            groups,
        };
        buf.extend(serde_json::to_vec(&NodeRecipe::Scan(recipe)).expect("a scan recipe serializes"));
        Ok(())
    }
}

/// What built a scan node of ours; an error naming any other node.
fn scan_origin(node: &Arc<dyn ExecutionPlan>) -> Result<&ScanOrigin> {
    let any = node.as_ref() as &dyn Any;
    let origin = if let Some(scan) = any.downcast_ref::<PaimonScanExec>() {
        scan.origin()
    } else if let Some(scan) = any.downcast_ref::<PaimonIncrementalScanExec>() {
        scan.origin()
    } else {
        return not_impl_err!(
            "{} cannot be sent to a Ballista executor: datafusion-paimon does not distribute \
             tailing reads, DELETE or UPDATE of append tables, or MERGE INTO yet; run the \
             statement in a local session",
            node.name()
        );
    };
    origin
        .and_then(|o| o.downcast_ref::<ScanOrigin>())
        .ok_or_else(|| exec_datafusion_err!("{} was not built by a Paimon table scan", node.name()))
}

/// Partition count and split fingerprint of a scan node of ours.
fn layout(node: &Arc<dyn ExecutionPlan>) -> Result<(usize, u32)> {
    let any = node.as_ref() as &dyn Any;
    let fingerprint = if let Some(scan) = any.downcast_ref::<PaimonScanExec>() {
        scan.layout_fingerprint()
    } else if let Some(scan) = any.downcast_ref::<PaimonIncrementalScanExec>() {
        scan.layout_fingerprint()
    } else {
        return internal_err!("{} is not a Paimon scan node", node.name());
    };
    Ok((node.properties().partitioning.partition_count(), fingerprint))
}
