//! A write split over parallel writer tasks and one committer, as Paimon's Flink sink is
//! built (writers per bucket, one committer operator). A distributed INSERT, INSERT OVERWRITE,
//! DELETE, UPDATE or MERGE into a primary-key table runs as:
//!
//! ```text
//! PaimonCommitExec        1 task: one snapshot of every writer's files, exactly once
//!                         (commitUser + the statement's start), then one COMPACT snapshot
//!                         of the writers' compactions, then expiration
//!   CoalescePartitionsExec
//!     PaimonWriteExec     a task per partition: writes the level-0 (and input changelog)
//!                         files of the buckets routed to it, compacts those buckets (level 0,
//!                         lookup or full-compaction changelog); returns both as commit messages
//!       RepartitionExec   hash of (partition columns, bucket): each bucket in one writer
//!         PaimonBucketExec  Paimon's bucket of every row, as one more column
//!           input
//! ```
//!
//! [`FanOut`] says how a table's rows may be split: by Paimon bucket (fixed buckets), by
//! partition (dynamic buckets: one assigner per partition keeps a key in its bucket), by key
//! (postponed buckets: a key's versions keep their order), any way (bucket-unaware append
//! tables), or not at all. `distributed::ParallelWrites` builds the plan; the nodes know
//! nothing about Ballista.

use std::fmt;
use std::sync::Arc;

use arrow::array::{Int32Array, RecordBatch, UInt64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_datafusion_err, internal_err, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::{StreamExt, TryStreamExt};

use super::commit_message::MESSAGE_SCHEMA;
use super::routing::BucketMode;
use super::sink::{PaimonSink, WriteKind, WrittenFiles};
use crate::spec::bucket::fixed_buckets;

/// The column [`PaimonBucketExec`] appends: the row's Paimon bucket.
pub(crate) const BUCKET_COLUMN: &str = "__paimon_bucket";
/// The column [`PaimonBucketExec`] appends for dynamic-bucket tables: the row's assigner
/// (`write::assign`).
pub(crate) const ASSIGNER_COLUMN: &str = "__paimon_assigner";

/// How the rows of a write may be split over writer tasks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FanOut {
    /// Fixed buckets: by (these partition columns, Paimon's bucket).
    Buckets { partition_columns: Vec<usize> },
    /// Dynamic buckets: by (these partition columns, the key's assigner) to `assigners`
    /// bucket assigners (at most this many, else one per writer), then by (partition columns,
    /// bucket) to the writers.
    Assign {
        partition_columns: Vec<usize>,
        assigners: Option<usize>,
        /// Cross-partition upserts: a key may move between partitions, so rows reach their
        /// assigner by key alone, and the assigners keep the global index of their keys.
        cross_partition: bool,
    },
    /// By the hash of these input columns.
    Columns(Vec<usize>),
    /// Any split (bucket-unaware append tables: each writer writes its own files).
    Any,
    /// Not split into writers and a committer: metadata-only deletes and MERGE into an append
    /// table (it rewrites the files it read) keep their one-task sink.
    None,
}

impl PaimonSink {
    /// How this write's rows may be split over writer tasks.
    pub(crate) fn fan_out(&self) -> Result<FanOut> {
        if matches!(
            self.kind,
            WriteKind::Truncate | WriteKind::DropPartitions(_) | WriteKind::MergeRewrite(_)
        ) {
            return Ok(FanOut::None);
        }
        let routing = self.routing()?;
        Ok(match routing.buckets {
            BucketMode::Fixed(_) => FanOut::Buckets {
                partition_columns: routing.partition_columns,
            },
            BucketMode::Unaware => FanOut::Any,
            BucketMode::Postpone => FanOut::Columns(routing.key_columns),
            BucketMode::Dynamic => FanOut::Assign {
                partition_columns: routing.partition_columns,
                assigners: self.assigner_count()?,
                cross_partition: !self.cross_partition_keys().is_empty(),
            },
        })
    }

    /// The number of dynamic-bucket assigners the table asks for, as Paimon's Flink sink
    /// counts them: `dynamic-bucket.initial-buckets` caps `dynamic-bucket.assigner-parallelism`
    /// (`None`: one per writer).
    fn assigner_count(&self) -> Result<Option<usize>> {
        let option = |key: &str| -> Result<Option<usize>> {
            match self.schema.options.get(key) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<usize>() {
                    Ok(n) if n > 0 => Ok(Some(n)),
                    _ => datafusion::common::exec_err!(
                        "Option '{key}' of table {} must be a positive integer, got '{v}'",
                        self.table
                    ),
                },
            }
        };
        let parallelism = option("dynamic-bucket.assigner-parallelism")?;
        Ok(match (option("dynamic-bucket.initial-buckets")?, parallelism) {
            (Some(initial), Some(p)) => Some(initial.min(p)),
            (Some(initial), None) => Some(initial),
            (None, p) => p,
        })
    }

    pub(super) fn table_name(&self) -> &str {
        &self.table
    }

    /// The same sink (same table, schema and write) with metrics of its own: the nodes of a
    /// parallel write share it.
    pub(crate) fn duplicate(&self) -> Result<PaimonSink> {
        PaimonSink::try_new(
            self.table.clone(),
            Arc::clone(&self.meta),
            Arc::clone(&self.schema),
            self.kind.clone(),
        )
    }
}

/// The sink a parallel-write node works for (it is a [`PaimonSink`]).
pub(super) fn paimon(sink: &Arc<dyn DataSink>) -> Result<&PaimonSink> {
    sink.downcast_ref::<PaimonSink>()
        .ok_or_else(|| exec_datafusion_err!("A parallel Paimon write needs a Paimon sink"))
}

pub(super) fn properties(schema: SchemaRef, partitions: usize) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(schema),
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Final,
        Boundedness::Bounded,
    ))
}

/// Appends [`BUCKET_COLUMN`], each row's bucket by Paimon's hash of its bucket key (the table's
/// columns come first in the input; a MERGE's kind column may follow). For a dynamic-bucket
/// table it appends [`ASSIGNER_COLUMN`] instead: the same hash of the primary key modulo the
/// number of assigners.
#[derive(Debug)]
pub struct PaimonBucketExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<dyn DataSink>,
    /// The bucket key (column, name and table type) and the bucket (or assigner) count,
    /// resolved once.
    keys: Arc<(Vec<(usize, String, DataType)>, i32)>,
    /// Dynamic buckets: how many assigners (0 for fixed buckets).
    assigners: usize,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl PaimonBucketExec {
    /// `assigners`: for a dynamic-bucket table, how many assigners (ignored for fixed buckets).
    pub(crate) fn try_new(
        input: Arc<dyn ExecutionPlan>,
        sink: Arc<dyn DataSink>,
        assigners: usize,
    ) -> Result<Self> {
        let table = paimon(&sink)?;
        let routing = table.routing()?;
        let (column, n, assigners) = match routing.buckets {
            BucketMode::Fixed(n) => (BUCKET_COLUMN, n, 0),
            BucketMode::Dynamic if assigners > 0 => (ASSIGNER_COLUMN, assigners as i32, assigners),
            _ => {
                return internal_err!(
                    "PaimonBucketExec runs for tables with fixed buckets, or dynamic buckets and assigners"
                )
            }
        };
        let mut fields: Vec<Arc<Field>> = input.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(column, DataType::Int32, false)));
        let schema = Arc::new(Schema::new(fields));
        let partitions = input.output_partitioning().partition_count();
        let properties = properties(Arc::clone(&schema), partitions);
        let columns = routing
            .bucket_columns
            .iter()
            .map(|&c| {
                let field = &table.schema.fields[c];
                (c, field.name.clone(), field.data_type.to_arrow())
            })
            .collect();
        Ok(PaimonBucketExec {
            input,
            sink,
            keys: Arc::new((columns, n)),
            assigners,
            schema,
            properties,
        })
    }

    pub(crate) fn sink(&self) -> &Arc<dyn DataSink> {
        &self.sink
    }

    /// How many assigners (dynamic buckets), 0 for fixed buckets.
    pub(crate) fn assigners(&self) -> usize {
        self.assigners
    }
}

impl DisplayAs for PaimonBucketExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = paimon(&self.sink).map(PaimonSink::table_name).unwrap_or("?");
        write!(f, "PaimonBucketExec: table={table}")
    }
}

impl ExecutionPlan for PaimonBucketExec {
    fn name(&self) -> &str {
        "PaimonBucketExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::try_new(
                input,
                Arc::clone(&self.sink),
                self.assigners,
            )?)),
            _ => internal_err!("PaimonBucketExec takes one input"),
        }
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let keys = Arc::clone(&self.keys);
        let schema = Arc::clone(&self.schema);
        let input = self.input.execute(partition, context)?;
        let stream = input.map(move |batch| {
            let batch = batch?;
            let (columns, n) = keys.as_ref();
            // Paimon hashes the bucket key in the table's types: cast as the writer will.
            let key_columns = columns
                .iter()
                .map(|(c, name, target)| {
                    let column = batch.column(*c);
                    let column = if column.data_type() == target {
                        Arc::clone(column)
                    } else {
                        cast(column, target)?
                    };
                    Ok((name.clone(), column))
                })
                .collect::<Result<Vec<_>>>()?;
            let keys = RecordBatch::try_from_iter(key_columns)?;
            let positions: Vec<usize> = (0..keys.num_columns()).collect();
            let buckets = fixed_buckets(&keys, &positions, *n)?;
            let mut columns = batch.columns().to_vec();
            columns.push(Arc::new(Int32Array::from(buckets)));
            Ok(RecordBatch::try_new(Arc::clone(&schema), columns)?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }
}

/// One writer task per partition: writes the files of the rows it gets (a set of whole
/// buckets) and returns them as commit messages ([`MESSAGE_SCHEMA`]); commits nothing.
#[derive(Debug)]
pub struct PaimonWriteExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<dyn DataSink>,
    properties: Arc<PlanProperties>,
}

impl PaimonWriteExec {
    pub(crate) fn try_new(input: Arc<dyn ExecutionPlan>, sink: Arc<dyn DataSink>) -> Result<Self> {
        paimon(&sink)?;
        let partitions = input.output_partitioning().partition_count();
        Ok(PaimonWriteExec {
            properties: properties(Arc::clone(&MESSAGE_SCHEMA), partitions),
            input,
            sink,
        })
    }

    pub(crate) fn sink(&self) -> &Arc<dyn DataSink> {
        &self.sink
    }
}

impl DisplayAs for PaimonWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = paimon(&self.sink).map(PaimonSink::table_name).unwrap_or("?");
        write!(f, "PaimonWriteExec: table={table}")
    }
}

impl ExecutionPlan for PaimonWriteExec {
    fn name(&self) -> &str {
        "PaimonWriteExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::try_new(input, Arc::clone(&self.sink))?)),
            _ => internal_err!("PaimonWriteExec takes one input"),
        }
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.sink.metrics()
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        // the bucket column, if routed by bucket, is the writer's no more, unless assigners
        // chose it (dynamic buckets)
        let input_schema = self.input.schema();
        let bucketed = input_schema
            .fields()
            .last()
            .is_some_and(|f| f.name() == BUCKET_COLUMN);
        let assigned = bucketed && paimon(&self.sink)?.routing()?.buckets == BucketMode::Dynamic;
        let rows: SendableRecordBatchStream = if bucketed && !assigned {
            let keep: Vec<usize> = (0..input_schema.fields().len() - 1).collect();
            let schema = Arc::new(input_schema.project(&keep)?);
            let stream = input.map(move |batch| Ok(batch?.project(&keep)?));
            Box::pin(RecordBatchStreamAdapter::new(schema, stream))
        } else {
            input
        };
        let sink = Arc::clone(&self.sink);
        let messages = futures::stream::once(async move {
            let sink = paimon(&sink)?;
            let mut written = sink.write_files(rows, assigned, &context).await?;
            // writers compact their own buckets, as Paimon's Flink writers do
            sink.compact_written(&mut written, &context).await?;
            written.to_message_batch()
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&MESSAGE_SCHEMA),
            messages,
        )))
    }
}

/// The committer: takes every writer's commit messages (one partition) and commits them as
/// one snapshot under `commit_user`, unless a snapshot of `commit_user` since `started_millis`
/// shows it already did (a retried task or stage); then what follows a write. Returns the
/// statement's row count, as `DataSinkExec` does.
#[derive(Debug)]
pub struct PaimonCommitExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<dyn DataSink>,
    commit_user: String,
    started_millis: i64,
    /// A MERGE: reports Spark's four counts, not DML's one.
    merge: bool,
    properties: Arc<PlanProperties>,
}

impl PaimonCommitExec {
    pub(crate) fn try_new(
        input: Arc<dyn ExecutionPlan>,
        sink: Arc<dyn DataSink>,
        commit_user: String,
        started_millis: i64,
        merge: bool,
    ) -> Result<Self> {
        paimon(&sink)?;
        let schema = if merge {
            super::merge_counts_schema()
        } else {
            count_schema()
        };
        Ok(PaimonCommitExec {
            properties: properties(schema, 1),
            input,
            sink,
            commit_user,
            started_millis,
            merge,
        })
    }

    /// A committer for a statement planned now, with a fresh commit user (`merge`: the
    /// statement is a MERGE).
    pub(crate) fn for_new_statement(
        input: Arc<dyn ExecutionPlan>,
        sink: Arc<dyn DataSink>,
        merge: bool,
    ) -> Result<Self> {
        Self::try_new(
            input,
            sink,
            uuid::Uuid::new_v4().to_string(),
            crate::meta::now_millis(),
            merge,
        )
    }

    /// Whether the statement is a MERGE (Spark's four counts).
    pub(crate) fn is_merge(&self) -> bool {
        self.merge
    }

    pub(crate) fn sink(&self) -> &Arc<dyn DataSink> {
        &self.sink
    }

    /// The commit user and the statement's start (epoch millis).
    pub(crate) fn commit_identity(&self) -> (&str, i64) {
        (&self.commit_user, self.started_millis)
    }
}

/// DML statements report the rows they took in one `count` column (as `DataSinkExec`).
fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("count", DataType::UInt64, false)]))
}

impl DisplayAs for PaimonCommitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = paimon(&self.sink).map(PaimonSink::table_name).unwrap_or("?");
        write!(
            f,
            "PaimonCommitExec: table={table}, commit_user={}",
            self.commit_user
        )
    }
}

impl ExecutionPlan for PaimonCommitExec {
    fn name(&self) -> &str {
        "PaimonCommitExec"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(Self::try_new(
                input,
                Arc::clone(&self.sink),
                self.commit_user.clone(),
                self.started_millis,
                self.merge,
            )?)),
            _ => internal_err!("PaimonCommitExec takes one input"),
        }
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.sink.metrics()
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("PaimonCommitExec has one partition, asked for {partition}");
        }
        let partitions = self.input.output_partitioning().partition_count();
        let inputs = (0..partitions)
            .map(|p| self.input.execute(p, Arc::clone(&context)))
            .collect::<Result<Vec<_>>>()?;
        let sink = Arc::clone(&self.sink);
        let (user, started, merge) = (self.commit_user.clone(), self.started_millis, self.merge);
        let stream = futures::stream::once(async move {
            let sink = paimon(&sink)?;
            let mut written = WrittenFiles::default();
            for input in inputs {
                let batches: Vec<RecordBatch> = input.try_collect().await?;
                for batch in &batches {
                    written.add_message_batch(batch, &sink.table)?;
                }
            }
            // (operators, and the cluster's fault test, see where a statement commits)
            log::info!(
                "Paimon commit of {} by {user} started: {} data files, {} compacted",
                sink.table,
                written.added.len(),
                written.compaction.before.len()
            );
            let merge_kinds = written.merge_kinds;
            let count = sink
                .commit_written(written, &user, Some(started), &context)
                .await?;
            log::info!("Paimon commit of {} by {user} done: {count} rows", sink.table);
            if merge {
                return super::merge_counts_batch(merge_kinds);
            }
            Ok(RecordBatch::try_new(
                count_schema(),
                vec![Arc::new(UInt64Array::from(vec![count]))],
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream)))
    }
}
