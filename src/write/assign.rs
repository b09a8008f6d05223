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

use std::fmt;
use std::sync::Arc;

use arrow::array::{AsArray, Int32Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
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

use super::parallel::{paimon, properties, ASSIGNER_COLUMN, BUCKET_COLUMN};
use super::routing::RowRouting;
use super::sink::PaimonSink;
use crate::dynamic_bucket::{AssignSlice, BucketAssigner};
use crate::spec::bucket::hash_binary_row;
use crate::spec::BinaryRow;

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
        let mut fields: Vec<Arc<Field>> = fields[..fields.len() - 1].to_vec();
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
        let input = self.input.execute(partition, context)?;
        let state = Assigning {
            sink: Arc::clone(&self.sink),
            schema: Arc::clone(&self.schema),
            of: self.assigners as i32,
            opened: None,
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
    opened: Option<(BucketAssigner, RowRouting)>,
}

impl Assigning {
    async fn assign(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let table = paimon(&self.sink)?;
        if self.opened.is_none() {
            self.opened = Some((table.bucket_assigner().await?, table.routing()?));
        }
        let (assigner, routing) = self.opened.as_mut().expect("opened above");
        let last = batch.num_columns() - 1;
        let ids = batch.column(last).as_primitive::<Int32Type>().clone();
        // the table's columns in the table's types, as the writer will see them (a MERGE's
        // kind column may follow them)
        let fields = table.schema.fields.len();
        let rows = table.validate(&batch.project(&(0..fields).collect::<Vec<_>>())?)?;
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
        let mut out = batch.columns()[..last].to_vec();
        out.push(Arc::new(Int32Array::from(buckets)));
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), out)?)
    }
}
