//! `PaimonScanExec`: the merge-on-read scan of one table snapshot.
//!
//! ```text
//!  split (partition, bucket) ──► sections ──► 1 run : read files, drop -U/-D rows
//!                                        └──► n runs: k-way merge by key (newest sequence wins)
//!                         ──► project ──► limit ──► output partition
//! ```
//!
//! Splits are spread over output partitions by row count so every core works. Value filters
//! are never applied here: DataFusion re-applies every pushed filter above this node, after the
//! merge, so an older version of a row can never resurface.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::progress::StatementProgress;

use arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use futures::StreamExt;

use super::metrics::{RequestGauges, ScanMetrics};
use super::read_layout::ReadLayout;
use super::row_selection::StatsPruning;
use super::split::{NewerRuns, Split};
use super::stream::partition_stream;
use crate::io::FileIO;
use crate::merge::MergeEngineSpec;
use crate::spec::TableSchema;

/// Which rows a read returns, and in which shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadView {
    /// The table itself: add rows (`+I`, `+U`) only.
    Table,
    /// `$audit_log`: retractions kept, `rowkind` column first.
    AuditLog,
    /// `$binlog`: like `$audit_log`, every value an array; incremental reads pack updates.
    Binlog,
    /// `$changelog`: like `$audit_log`, plus a last column `snapshot_id` naming the snapshot
    /// each change belongs to (`changelog::CHANGELOG_SNAPSHOT_ID`).
    Changelog,
}

/// What every partition of a scan shares.
#[derive(Debug, Clone)]
pub(crate) struct ScanContext {
    pub(crate) table_io: FileIO,
    pub(crate) layout: Arc<ReadLayout>,
    /// The merge engine (primary-key tables).
    pub(crate) engine: Option<Arc<MergeEngineSpec>>,
    /// Merge in lookup mode (`plan::lookup_read`).
    pub(crate) lookup_read: bool,
    /// Schemas the files were written with, by id.
    pub(crate) file_schemas: HashMap<i64, Arc<TableSchema>>,
    /// Key column indices in the layout (primary-key tables).
    pub(crate) key_indices: Vec<usize>,
    /// Layout columns that make up the output, in order.
    pub(crate) output_columns: Vec<usize>,
    /// Prepend a `rowkind` column (`$audit_log`, `$binlog`).
    pub(crate) with_rowkind: bool,
    /// Keep keys whose newest record is a retraction (`$audit_log`, `$binlog`, diffs).
    pub(crate) keep_retracts: bool,
    /// Output every value as an array (`$binlog`).
    pub(crate) lists: bool,
    /// Append the id of the snapshot each change belongs to (`$changelog` raw reads): the
    /// input batches then carry it as a last column after the layout's.
    pub(crate) with_snapshot_id: bool,
    pub(crate) output_schema: SchemaRef,
    /// Row groups and pages of Parquet files that the pushed-down predicate rules out are
    /// skipped (`row_selection`).
    pub(crate) pruning: Option<Arc<StatsPruning>>,
    /// The pushed-down predicate, evaluated in the Parquet reader of files read without a
    /// merge (plain table reads only).
    pub(crate) value_filter: Option<Arc<crate::format::ValueFilter>>,
    /// The pushed-down predicate's conjuncts on primary-key columns, evaluated in the Parquet
    /// reader of merged runs too (`ValueFilter::on_keys`).
    pub(crate) key_filter: Option<Arc<crate::format::ValueFilter>>,
    /// The static predicate and a join's runtime filter on the keys (`runtime_filter`), for
    /// merged runs only: there it saves merge work, while rows read without a merge go
    /// straight to the join, which filters them anyway for less than a filter in the reader.
    pub(crate) merge_key_filter: Option<Arc<crate::format::ValueFilter>>,
    /// How `BLOB` columns read (`blob-descriptor-field`, `blob-as-descriptor`).
    pub(crate) blobs: super::evolution::BlobRead,
    /// The table's schema and the pushed-down predicate over its columns (what `pruning` and
    /// the filters were built from), so a filter that arrives at run time (a join's dynamic
    /// filter, `runtime_filter`) can be added to it.
    pub(crate) table: Arc<TableSchema>,
    pub(crate) predicate: Option<Arc<dyn PhysicalExpr>>,
}

/// Merge-on-read scan of a Paimon table snapshot.
#[derive(Debug)]
pub struct PaimonScanExec {
    table_name: String,
    snapshot_id: Option<i64>,
    merge_engine: &'static str,
    ctx: Arc<ScanContext>,
    /// Splits of each output partition.
    partitions: Vec<Vec<Split>>,
    limit: Option<usize>,
    files_pruned: usize,
    /// Of `files_pruned`, those skipped by their file index (`file_index`).
    files_skipped_by_index: usize,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
    /// What built this node (`table::ScanOrigin`), so a plan codec can rebuild it elsewhere.
    origin: Option<Arc<dyn Any + Send + Sync>>,
    /// Dynamic filters a join above pushed here (`runtime_filter`): each partition narrows
    /// its splits by them when it starts.
    runtime_filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The statement's requests, registered at the first partition's start.
    requests: std::sync::OnceLock<RequestGauges>,
}

impl PaimonScanExec {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        table_name: String,
        snapshot_id: Option<i64>,
        merge_engine: &'static str,
        ctx: ScanContext,
        splits: Vec<Split>,
        target_partitions: usize,
        limit: Option<usize>,
        files_pruned: usize,
    ) -> Self {
        let partitions = distribute(splits, target_partitions.max(1), Split::row_count);
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&ctx.output_schema)),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        PaimonScanExec {
            table_name,
            snapshot_id,
            merge_engine,
            ctx: Arc::new(ctx),
            partitions,
            limit,
            files_pruned,
            files_skipped_by_index: 0,
            metrics: ExecutionPlanMetricsSet::new(),
            properties,
            origin: None,
            runtime_filters: Vec::new(),
            requests: std::sync::OnceLock::new(),
        }
    }

    /// Records how many of the pruned files their file index skipped, for `EXPLAIN`.
    pub(crate) fn with_files_skipped_by_index(mut self, files: usize) -> Self {
        self.files_skipped_by_index = files;
        self
    }

    /// Records what built this node (see the `origin` field).
    pub(crate) fn with_origin(mut self, origin: Arc<dyn Any + Send + Sync>) -> Self {
        self.origin = Some(origin);
        self
    }

    #[cfg(feature = "ballista")]
    pub(crate) fn origin(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.origin.as_ref()
    }

    /// See [`partition_fingerprint`].
    #[cfg(feature = "ballista")]
    pub(crate) fn layout_fingerprint(&self) -> u32 {
        partition_fingerprint(&self.partitions)
    }

    fn split_summary(&self) -> String {
        let mut all: Vec<&Split> = self.partitions.iter().flatten().collect();
        all.sort_by(|a, b| {
            let lower = |s: &Split| s.key_range.as_ref().and_then(|r| r.lower.clone());
            a.partition_path
                .cmp(&b.partition_path)
                .then(a.bucket.cmp(&b.bucket))
                .then_with(|| match (lower(a), lower(b)) {
                    (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                    (x, y) => x.is_some().cmp(&y.is_some()),
                })
                .then_with(|| {
                    let first = |s: &Split| s.row_piece.as_ref().map(|r| r.start);
                    first(a).cmp(&first(b))
                })
        });
        all.iter()
            .map(|s| {
                let keys = s
                    .key_range
                    .as_ref()
                    .map(|r| format!(" keys={}", r.display()))
                    .unwrap_or_default();
                let rows = s
                    .row_piece
                    .as_ref()
                    .map(|r| format!(" rows=[{}, {})", r.start, r.end))
                    .unwrap_or_default();
                let newer = match s.newer_runs {
                    NewerRuns::InRange => "",
                    NewerRuns::Whole(_) => " newer_runs=whole",
                    NewerRuns::KeysOnly(_) => " newer_runs=keys",
                    NewerRuns::Only(_) => " newer_runs=only",
                };
                format!(
                    "{}bucket-{}{keys}{rows}{newer}: files={} runs={}",
                    s.partition_path,
                    s.bucket,
                    s.file_count(),
                    s.run_count()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A fingerprint of what every output partition of a scan reads (its splits, files, key
/// ranges and deletion vectors): two plans with the same fingerprint produce the same rows per
/// partition. A codec checks it after rebuilding a scan node in another process.
#[cfg(feature = "ballista")]
pub(crate) fn partition_fingerprint<T: fmt::Debug>(partitions: &[Vec<T>]) -> u32 {
    crc32fast::hash(format!("{partitions:?}").as_bytes())
}

/// Spreads splits over at most `n` partitions (always at least one), largest first onto the
/// least loaded one.
pub(crate) fn distribute<T>(mut splits: Vec<T>, n: usize, rows: impl Fn(&T) -> i64) -> Vec<Vec<T>> {
    let count = n.min(splits.len()).max(1);
    let mut parts: Vec<(i64, Vec<T>)> = (0..count).map(|_| (0, Vec::new())).collect();
    splits.sort_by_key(|s| std::cmp::Reverse(rows(s)));
    for s in splits {
        let target = parts
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("at least one partition");
        target.0 += rows(&s);
        target.1.push(s);
    }
    parts.into_iter().map(|(_, s)| s).collect()
}

impl DisplayAs for PaimonScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let projection: Vec<&str> = self
            .ctx
            .output_schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        let snapshot = self
            .snapshot_id
            .map(|s| s.to_string())
            .unwrap_or_else(|| "none".into());
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "PaimonScanExec: table={}, snapshot={}, merge_engine={}, projection=[{}], splits=[{}]",
                    self.table_name,
                    snapshot,
                    self.merge_engine,
                    projection.join(", "),
                    self.split_summary()
                )?;
                if self.files_pruned > 0 {
                    write!(f, ", files_pruned={}", self.files_pruned)?;
                }
                if self.files_skipped_by_index > 0 {
                    write!(f, ", files_skipped_by_index={}", self.files_skipped_by_index)?;
                }
                if let Some(filter) = &self.ctx.value_filter {
                    // evaluated in the Parquet reader of files read without a merge
                    write!(f, ", row_filter=[{filter}]")?;
                }
                if let Some(filter) = &self.ctx.key_filter {
                    // evaluated in the Parquet reader of merged runs too
                    write!(f, ", key_filter=[{filter}]")?;
                }
                if let Some(l) = self.limit {
                    write!(f, ", limit={l}")?;
                }
                if !self.runtime_filters.is_empty() {
                    let filters: Vec<String> = self.runtime_filters.iter().map(|e| e.to_string()).collect();
                    write!(f, ", runtime_filter=[{}]", filters.join(" AND "))?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "table={}", self.table_name)?;
                writeln!(f, "snapshot={snapshot}")?;
                write!(
                    f,
                    "splits={}",
                    self.partitions.iter().map(Vec::len).sum::<usize>()
                )
            }
        }
    }
}

impl ExecutionPlan for PaimonScanExec {
    fn name(&self) -> &str {
        "PaimonScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    /// The runtime filters: a join computes its dynamic filter only when a node below shows it.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for filter in &self.runtime_filters {
            if f(filter)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let Some(splits) = self.partitions.get(partition) else {
            return internal_err!(
                "PaimonScanExec has no partition {partition} (it has {})",
                self.partitions.len()
            );
        };
        let batch_size = context.session_config().batch_size();
        let metrics = ScanMetrics::new(&self.metrics, partition, StatementProgress::of(&context));
        let memory = Arc::clone(context.memory_pool());
        let requests = self
            .requests
            .get_or_init(|| RequestGauges::new(&self.metrics))
            .clone();
        let io = self.ctx.table_io.clone();
        if self.runtime_filters.is_empty() {
            let stream = partition_stream(
                Arc::clone(&self.ctx),
                splits.clone(),
                batch_size,
                metrics,
                self.limit,
                memory,
            );
            return Ok(requests.at_end(io, stream));
        }
        // Narrowed when first polled: by then the join above has filled its filter in.
        let (ctx, filters, splits, limit) = (
            Arc::clone(&self.ctx),
            self.runtime_filters.clone(),
            splits.clone(),
            self.limit,
        );
        let pruned = MetricBuilder::new(&self.metrics).counter("files_pruned_at_run_time", partition);
        let stream = futures::stream::once(async move {
            let (ctx, splits, left_out) = super::runtime_filter::narrow(&ctx, &filters, splits);
            pruned.add(left_out);
            partition_stream(ctx, splits, batch_size, metrics, limit, memory)
        })
        .flatten();
        let stream = Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream));
        Ok(requests.at_end(io, stream))
    }

    /// Keeps the dynamic filters a join pushes down (`runtime_filter`). Nothing is claimed
    /// as applied: the join and every filter above still evaluate their own conditions.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .iter()
            .map(|f| Arc::clone(&f.filter))
            .collect();
        let no = vec![PushedDown::No; filters.len()];
        let accepted: Vec<Arc<dyn PhysicalExpr>> = filters
            .into_iter()
            .filter(|f| phase == FilterPushdownPhase::Post && super::runtime_filter::accepts(&self.ctx, f))
            .collect();
        if accepted.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(no));
        }
        let node = PaimonScanExec {
            table_name: self.table_name.clone(),
            snapshot_id: self.snapshot_id,
            merge_engine: self.merge_engine,
            ctx: Arc::clone(&self.ctx),
            partitions: self.partitions.clone(),
            limit: self.limit,
            files_pruned: self.files_pruned,
            files_skipped_by_index: self.files_skipped_by_index,
            metrics: ExecutionPlanMetricsSet::new(),
            properties: Arc::clone(&self.properties),
            origin: self.origin.clone(),
            runtime_filters: self.runtime_filters.iter().cloned().chain(accepted).collect(),
            requests: std::sync::OnceLock::new(),
        };
        Ok(FilterPushdownPropagation::with_parent_pushdown_result(no).with_updated_node(Arc::new(node)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// Rows stored in the files read: at least the rows a merge returns (inexact), which is
    /// what the planner weighs join sides by and what sizes a normalize's state.
    fn statistics_from_inputs(
        &self,
        _inputs: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let splits: Vec<&Split> = match args.partition() {
            None => self.partitions.iter().flatten().collect(),
            Some(p) => self.partitions.get(p).into_iter().flatten().collect(),
        };
        let rows: i64 = splits.iter().map(|s| s.row_count()).sum();
        let mut statistics = Statistics::new_unknown(&self.schema());
        statistics.num_rows = match self.limit {
            Some(limit) => Precision::Inexact((rows.max(0) as usize).min(limit)),
            None => Precision::Inexact(rows.max(0) as usize),
        };
        Ok(Arc::new(statistics))
    }
}
