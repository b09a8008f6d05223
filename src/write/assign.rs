//! The bucket assigners of a distributed write into a dynamic-bucket table (`bucket = -1`), as
//! Paimon's Flink sink runs them between the input and the writers:
//!
//! ```text
//! PaimonWriteExec        writes the rows of its buckets, keeps their HASH files
//!   RepartitionExec      hash of (partition columns, bucket)
//!     PaimonAssignExec   assigner i of n: the bucket of each of its keys (dynamic_bucket::AssignSlice)
//!       RepartitionExec  hash of (partition columns, assigner)
//!         PaimonBucketExec  each row's assigner: |hash(key) % n|
//! ```
//!
//! A key always reaches the same assigner, and an assigner opens only its own buckets, so a
//! partition is assigned by `n` tasks at once and every key keeps its bucket.
//!
//! Cross-partition upserts (a primary key without every partition key) reach their assigner by
//! key alone; each assigner keeps the global index of its keys (`cross_partition`), moves rows
//! as the merge engine says, and sends each row with its kind ([`MERGE_KIND_COLUMN`]) since a
//! moved key also deletes its old version.

use std::fmt;
use std::sync::Arc;

use std::collections::{BTreeMap, HashMap};

use arrow::array::{AsArray, Int32Array, Int8Array, RecordBatch, UInt32Array};
use arrow::compute::{cast, concat_batches, take, take_record_batch};
use arrow::datatypes::{DataType, Field, Int32Type, Int8Type, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result};
use datafusion::datasource::sink::DataSink;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::StreamExt;

use super::cross_partition::GlobalIndex;
use super::parallel::{paimon, properties, ASSIGNER_COLUMN, BUCKET_COLUMN};
use super::routing::RowRouting;
use super::sink::{PaimonSink, WriteKind, MERGE_KIND_COLUMN};
use crate::dynamic_bucket::{AssignSlice, BucketAssigner};
use crate::spec::bucket::hash_binary_row;
use crate::spec::BinaryRow;

/// Kind flag of a row an assigner adds (the delete of a moved key in its old partition): not
/// one of the statement's rows, so not counted.
const ADDED: i8 = 16;
/// Kind of a row an assigner sends only to be counted (the merge engine drops it).
const COUNT_ONLY: i8 = -1;

/// A cross-partition writer's rows from its assigners: without count-only rows, added rows
/// with their real kinds; and how many rows the statement took.
pub(super) fn unpack_assigned(
    batch: RecordBatch,
    kinds: Int8Array,
    buckets: Option<Int32Array>,
) -> Result<(RecordBatch, Int8Array, Option<Int32Array>, u64)> {
    let added = kinds.values().iter().filter(|k| **k >= ADDED).count();
    let taken = (kinds.len() - added) as u64;
    let kept: Vec<u32> = (0..kinds.len() as u32)
        .filter(|&i| kinds.value(i as usize) != COUNT_ONLY)
        .collect();
    let real = |k: i8| if k >= ADDED { k - ADDED } else { k };
    if kept.len() == kinds.len() {
        let kinds = Int8Array::from_iter_values(kinds.values().iter().map(|k| real(*k)));
        return Ok((batch, kinds, buckets, taken));
    }
    let kept = UInt32Array::from(kept);
    let kinds = Int8Array::from_iter_values(kept.values().iter().map(|&i| real(kinds.value(i as usize))));
    let buckets = match buckets {
        Some(b) => Some(take(&b, &kept, None)?.as_primitive::<Int32Type>().clone()),
        None => None,
    };
    Ok((take_record_batch(&batch, &kept)?, kinds, buckets, taken))
}

/// Replaces each row's [`ASSIGNER_COLUMN`] with its dynamic bucket ([`BUCKET_COLUMN`]).
#[derive(Debug)]
pub struct PaimonAssignExec {
    input: Arc<dyn ExecutionPlan>,
    sink: Arc<dyn DataSink>,
    /// How many assigners share the keys (`|hash % assigners|` picks one).
    assigners: usize,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl PaimonAssignExec {
    pub(crate) fn try_new(
        input: Arc<dyn ExecutionPlan>,
        sink: Arc<dyn DataSink>,
        assigners: usize,
    ) -> Result<Self> {
        paimon(&sink)?;
        let input_schema = input.schema();
        let fields = input_schema.fields();
        if fields.last().is_none_or(|f| f.name() != ASSIGNER_COLUMN) || assigners == 0 {
            return internal_err!(
                "PaimonAssignExec needs rows with their assigner and at least one assigner"
            );
        }
        let table = paimon(&sink)?;
        let cross_partition = !table.cross_partition_keys().is_empty();
        let mut fields: Vec<Arc<Field>> = if cross_partition {
            // the table's columns, each row's kind
            let mut table_fields = fields[..table.schema.fields.len()].to_vec();
            table_fields.push(Arc::new(Field::new(MERGE_KIND_COLUMN, DataType::Int8, false)));
            table_fields
        } else {
            fields[..fields.len() - 1].to_vec()
        };
        fields.push(Arc::new(Field::new(BUCKET_COLUMN, DataType::Int32, false)));
        let schema = Arc::new(Schema::new(fields));
        let partitions = input.output_partitioning().partition_count();
        Ok(PaimonAssignExec {
            properties: properties(Arc::clone(&schema), partitions),
            input,
            sink,
            assigners,
            schema,
        })
    }

    pub(crate) fn sink(&self) -> &Arc<dyn DataSink> {
        &self.sink
    }

    pub(crate) fn assigners(&self) -> usize {
        self.assigners
    }
}

impl DisplayAs for PaimonAssignExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = paimon(&self.sink).map(PaimonSink::table_name).unwrap_or("?");
        write!(f, "PaimonAssignExec: table={table}, assigners={}", self.assigners)
    }
}

impl ExecutionPlan for PaimonAssignExec {
    fn name(&self) -> &str {
        "PaimonAssignExec"
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
            (Some(input), true) => Ok(Arc::new(Self::try_new(
                input,
                Arc::clone(&self.sink),
                self.assigners,
            )?)),
            _ => internal_err!("PaimonAssignExec takes one input"),
        }
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.sink.metrics()
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let state = Assigning {
            sink: Arc::clone(&self.sink),
            schema: Arc::clone(&self.schema),
            of: self.assigners as i32,
            cross_partition: !paimon(&self.sink)?.cross_partition_keys().is_empty(),
            opened: None,
            global: HashMap::new(),
            context: Arc::clone(&context),
        };
        let stream = futures::stream::try_unfold((input, state), |(mut input, mut state)| async move {
            match input.next().await {
                None => Ok(None),
                Some(batch) => {
                    let assigned = state.assign(&batch?).await?;
                    Ok(Some((assigned, (input, state))))
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }
}

/// One assigner task's state: the index slices it loaded, opened at its first batch.
struct Assigning {
    sink: Arc<dyn DataSink>,
    schema: SchemaRef,
    of: i32,
    /// Cross-partition upserts: rows may move, and go out with their kinds.
    cross_partition: bool,
    opened: Option<(BucketAssigner, RowRouting)>,
    /// Cross-partition upserts: the global index of each assigner's keys this task serves.
    global: HashMap<i32, GlobalIndex>,
    context: Arc<TaskContext>,
}

impl Assigning {
    async fn assign(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let table = paimon(&self.sink)?;
        if self.opened.is_none() {
            self.opened = Some((table.bucket_assigner().await?, table.routing()?));
        }
        let last = batch.num_columns() - 1;
        let ids = batch.column(last).as_primitive::<Int32Type>().clone();
        // the table's columns in the table's types, as the writer will see them (a MERGE's
        // kind column may follow them)
        let fields = table.schema.fields.len();
        let rows = table.validate(&batch.project(&(0..fields).collect::<Vec<_>>())?)?;
        if self.cross_partition {
            return self.assign_moving(&rows, batch, &ids).await;
        }
        let buckets = self.buckets(&rows, &ids).await?;
        let mut out = batch.columns()[..last].to_vec();
        out.push(Arc::new(Int32Array::from(buckets)));
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), out)?)
    }

    /// The bucket of every row of `rows` (table columns, table types), row `i` owned by
    /// assigner `ids[i]`.
    async fn buckets(&mut self, rows: &RecordBatch, ids: &Int32Array) -> Result<Vec<i32>> {
        let table = paimon(&self.sink)?;
        let (assigner, routing) = self.opened.as_mut().expect("opened before assigning");
        let columns = |indices: &[usize]| -> Vec<&dyn arrow::array::Array> {
            indices.iter().map(|&c| rows.column(c).as_ref()).collect()
        };
        let (partition_columns, key_columns) = (
            columns(&routing.partition_columns),
            columns(&routing.bucket_columns),
        );
        let mut buckets = Vec::with_capacity(rows.num_rows());
        let (mut partition, mut key) = (Vec::new(), Vec::new());
        for row in 0..rows.num_rows() {
            BinaryRow::encode_columns(&partition_columns, row, &mut partition)?;
            BinaryRow::encode_columns(&key_columns, row, &mut key)?;
            let slice = AssignSlice {
                id: ids.value(row),
                of: self.of,
            };
            assigner.load_slice(&table.meta, &partition, slice).await?;
            buckets.push(assigner.assign_in(&partition, slice, hash_binary_row(&key[4..]))?);
        }
        Ok(buckets)
    }

    /// A cross-partition upsert's rows: each assigner's keys looked up in its global index and
    /// moved (or doubled with a delete in the old partition, or dropped) as the merge engine
    /// says, then given their buckets in the partitions they go to, with their kinds.
    async fn assign_moving(
        &mut self,
        rows: &RecordBatch,
        batch: &RecordBatch,
        ids: &Int32Array,
    ) -> Result<RecordBatch> {
        let sink = Arc::clone(&self.sink);
        let table = paimon(&sink)?;
        let given = match table.kind {
            WriteKind::Merge => Some(
                cast(batch.column(rows.num_columns()), &DataType::Int8)?
                    .as_primitive::<Int8Type>()
                    .clone(),
            ),
            _ => None,
        };
        let (kinds, keep) = table.row_kinds(rows, given)?;
        let all: Vec<u32> = (0..rows.num_rows() as u32).collect();
        let keep = keep.unwrap_or(all);
        // rows the engine drops still count as the statement's
        let mut dropped = rows.num_rows() - keep.len();
        // the kept rows of each assigner, in input order
        let mut by_id: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
        for row in keep {
            by_id.entry(ids.value(row as usize)).or_default().push(row);
        }
        let mut parts = Vec::with_capacity(by_id.len());
        for (id, picked) in by_id {
            let picked = UInt32Array::from(picked);
            let sub = take_record_batch(rows, &picked)?;
            let sub_kinds = take(&kinds, &picked, None)?.as_primitive::<Int8Type>().clone();
            if !self.global.contains_key(&id) {
                let slice = AssignSlice { id, of: self.of };
                let index = GlobalIndex::load(
                    &table.table,
                    &table.meta,
                    &table.schema,
                    table.options.merge_engine,
                    Some(slice),
                    &self.context,
                )
                .await?;
                self.global.insert(id, index);
            }
            let index = self.global.get_mut(&id).expect("loaded above");
            let (moved, moved_kinds, added) = index.apply(&sub, &sub_kinds)?;
            dropped += sub.num_rows() + added.len() - moved.num_rows();
            let mut moved_kinds: Vec<i8> = moved_kinds.values().to_vec();
            for i in added {
                moved_kinds[i] += ADDED;
            }
            let moved_ids = Int32Array::from(vec![id; moved.num_rows()]);
            let buckets = self.buckets(&moved, &moved_ids).await?;
            let mut columns = moved.columns().to_vec();
            columns.push(Arc::new(Int8Array::from(moved_kinds)));
            columns.push(Arc::new(Int32Array::from(buckets)));
            parts.push(RecordBatch::try_new(Arc::clone(&self.schema), columns)?);
        }
        if dropped > 0 {
            // copies of a row, only to be counted (the writer writes none of them)
            let copies = take_record_batch(rows, &UInt32Array::from(vec![0u32; dropped]))?;
            let mut columns = copies.columns().to_vec();
            columns.push(Arc::new(Int8Array::from(vec![COUNT_ONLY; dropped])));
            columns.push(Arc::new(Int32Array::from(vec![0; dropped])));
            parts.push(RecordBatch::try_new(Arc::clone(&self.schema), columns)?);
        }
        Ok(concat_batches(&self.schema, &parts)?)
    }
}
