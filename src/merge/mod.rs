//! K-way merge of the sorted runs of a Paimon primary-key bucket (merge-on-read).
//!
//! # Input
//!
//! A bucket of a primary-key table holds several *sorted runs* (one per level-0 file, one per
//! higher level). Each run is a stream of `RecordBatch`es sorted ascending by primary key. Every
//! row also carries `_SEQUENCE_NUMBER` (Int64) and `_VALUE_KIND` (Int8: `0 = +I`, `1 = -U`,
//! `2 = +U`, `3 = -D`). Key order is Paimon's: signed numbers, strings and binary by unsigned
//! bytes — exactly the order of `arrow::row` rows with default sort options, which is what the
//! merge compares.
//!
//! # Algorithm
//!
//! * Every incoming batch has its key columns converted once into `arrow::row::Rows` by one
//!   `RowConverter` shared by all runs ([`cursor`]). Alongside, each row gets a 16-byte *sort
//!   key*: its first 15 bytes plus its length, an integer that orders rows exactly like their
//!   bytes whenever a row has at most 15 bytes (every fixed-width key up to `(Int64, Int32)`,
//!   short strings). Comparing two keys is then one `u128` comparison; only equal sort keys of
//!   longer rows fall back to comparing the `Row` bytes. The same pass checks that the batch is
//!   sorted and records keys the run repeats.
//! * A cursor per run points into its current batch; a loser tree ([`loser_tree`]) orders the
//!   cursors by `(current key, run index)`.
//! * **Bulk path.** Let `w` be the smallest cursor and `r` the runner-up (the best loser on
//!   `w`'s path of the tree). Every row of `w` strictly below `r`'s head key is the only record
//!   of its key in the whole bucket, so the merge gallops (exponential then binary search) over
//!   `w`'s rows for `r`'s key and emits that stretch as one index range, without per-row tree
//!   operations. A stretch stops before a key the same run repeats and before the last row of a
//!   batch (the run's next batch might repeat it); those rows take the slow path.
//! * **Slow path.** Otherwise the smallest record opens a *key group*; every record whose key
//!   equals it is fed to the merge engine ([`engine`]) as it reaches the top of the tree. When
//!   the next head has a different key the engine names the winner (or drops the key). For the
//!   `deduplicate` engine the record with the highest `(sequence number, run index)` wins.
//! * Output rows are collected as `(batch, row)` indices and materialized in batches of
//!   `batch_size` rows ([`builder`]): gathered with `arrow::compute::interleave` when the
//!   contiguous stretches are short, copied stretch by stretch (`MutableArrayData`) when they
//!   are long, and returned as a zero-copy slice when the whole batch is one stretch. After each
//!   output batch, input batches that no cursor still reads are released, so about two batches
//!   per run are held.
//! * Runs are polled asynchronously: the first batch of every run is awaited concurrently, later
//!   a run's next batch only when its cursor is exhausted ([`stream`]). Empty batches are skipped.
//!   Merging itself is a synchronous loop that only returns to the async driver to refill a
//!   cursor or to emit a batch.
//!
//! # Without key order
//!
//! A query's scan of a `deduplicate` table whose runs are in sequence order (no run's numbers
//! inside another's) needs neither the loser tree nor key groups: a record survives unless a
//! newer run holds its key. [`newest_run`] masks each run's rows by the newer runs' keys, a chunk
//! of keys at a time, and filters them with one kernel per run; its rows are not in key order.
//! When the oldest run's keys are dense (`lo..=hi`, one per row), its rows are instead masked by
//! a bitmap of the newer runs' keys, a word of 64 rows at a time, after the newer runs' own
//! survivors have come out.
//!
//! # Why retracts are dropped after the merge
//!
//! A `-D` or `-U` record in a newer run must still *shadow* older `+I`/`+U` records of the same
//! key in other runs. Filtering retractions per run before merging would resurrect those older
//! records, so retracts take part in the merge like any record, and only a retracting *winner*
//! is dropped (unless `keep_retracts`, used by `$audit_log`). A section with a single run has
//! nothing to shadow: [`drop_retracts`] filters it with one vectorized kernel instead.
//!
//! # What this module does not do
//!
//! * Engines that merge values (partial-update, aggregation, `sequence.field` ordering) only
//!   collect groups here; [`reduce`] computes their rows, a whole output batch at a time.
//! * No deletion vectors, no projection: callers read the key, sequence and kind columns (all
//!   columns for value-merging engines) and project afterwards.
//! * No spilling or memory accounting; the merge holds about two batches per run.
//! * It does not sort: unsorted runs are reported as an error, not repaired.

pub(crate) mod aggregate;
mod builder;
mod cursor;
pub(crate) mod engine;
pub(crate) mod gather;
mod loser_tree;
mod newest_run;
pub(crate) mod reduce;
pub(crate) mod row_sort;
mod stream;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::buffer::BooleanBuffer;
use arrow::compute::filter_record_batch;
use arrow::datatypes::{DataType, Int8Type, SchemaRef};
use arrow::row::{RowConverter, SortField};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, Time};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

pub(crate) use cursor::{gallop, integer_narrow_keys, narrow_sort_key, partition_point, sort_key};
pub(crate) use engine::{any_retract, is_retract, Collect, Deduplicate, FirstRow, MergeFunction};
pub(crate) use newest_run::{
    newest_of_ordered_runs, newest_over_dense_base, NewerKeys, NewerRead, MAX_DENSE_BASE_SPAN,
    MAX_RUNS as MAX_UNORDERED_RUNS,
};
pub(crate) use reduce::{fold_batch, EngineKind, MergeEngineSpec};

/// Which rows a merged key produces.
#[derive(Debug, Clone)]
pub(crate) struct MergeOptions {
    /// Indices of the key columns in the input schema.
    pub key_columns: Vec<usize>,
    /// Index of `_SEQUENCE_NUMBER` (Int64, non-null).
    pub seq_column: usize,
    /// Index of `_VALUE_KIND` (Int8, non-null).
    pub kind_column: usize,
    /// Output retract winners too (`$audit_log`).
    pub keep_retracts: bool,
    /// Maximum number of output rows per batch.
    pub batch_size: usize,
}

/// Metrics of the merges of one output partition. The names start with `merge_` so they sit
/// next to the scan's own metrics (`output_rows`, `bytes_scanned`, ...) without clashing.
#[derive(Debug, Clone)]
pub(crate) struct MergeMetrics {
    /// Time spent merging, excluding the time spent waiting for (and decoding) input.
    pub merge_time: Time,
    /// Rows read from all runs.
    pub input_rows: Count,
    /// Rows the merges produced.
    pub output_rows: Count,
    /// Records superseded by another record of the same key.
    pub rows_merged_away: Count,
    /// Keys dropped because their winning record is a retraction.
    pub retracts_dropped: Count,
}

impl MergeMetrics {
    /// Registers the merge metrics of `partition` in `metrics`.
    pub(crate) fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            merge_time: MetricBuilder::new(metrics).subset_time("merge_time", partition),
            input_rows: MetricBuilder::new(metrics).counter("merge_input_rows", partition),
            output_rows: MetricBuilder::new(metrics).counter("merge_output_rows", partition),
            rows_merged_away: MetricBuilder::new(metrics).counter("merge_rows_merged_away", partition),
            retracts_dropped: MetricBuilder::new(metrics).counter("merge_retracts_dropped", partition),
        }
    }
}

/// Merges sorted runs into one stream ordered by key with one row per key (the winner of the
/// `deduplicate` engine). Output schema == input schema (all runs share `schema`).
pub(crate) fn merge_sorted_runs(
    schema: SchemaRef,
    runs: Vec<SendableRecordBatchStream>,
    options: MergeOptions,
    metrics: MergeMetrics,
) -> Result<SendableRecordBatchStream> {
    let engine = Deduplicate::new(options.keep_retracts);
    merge_sorted_runs_with(schema, runs, options, metrics, engine, None)
}

/// Merges sorted runs with a table's merge engine.
pub(crate) fn merge_runs(
    schema: SchemaRef,
    runs: Vec<SendableRecordBatchStream>,
    options: MergeOptions,
    metrics: MergeMetrics,
    engine: &MergeEngineSpec,
    run_levels: Option<Vec<i32>>,
) -> Result<SendableRecordBatchStream> {
    let keep_retracts = options.keep_retracts;
    match engine.kind {
        EngineKind::Deduplicate { ignore_delete } => {
            let engine = Deduplicate::with_ignore_delete(keep_retracts, ignore_delete);
            merge_sorted_runs_with(schema, runs, options, metrics, engine, None)
        }
        EngineKind::FirstRow => {
            merge_sorted_runs_with(schema, runs, options, metrics, FirstRow::default(), None)
        }
        EngineKind::Reduce => {
            let reducer = Some(Arc::clone(&engine.reducer));
            merge_sorted_runs_with(
                schema,
                runs,
                options,
                metrics,
                Collect::new(keep_retracts).with_run_levels(run_levels),
                reducer,
            )
        }
    }
}

/// [`merge_sorted_runs`] with an explicit merge engine (`options.keep_retracts` is then up to
/// the engine) and, for engines answering [`engine::Outcome::Reduce`], the reducer of groups.
pub(crate) fn merge_sorted_runs_with<F: MergeFunction>(
    schema: SchemaRef,
    runs: Vec<SendableRecordBatchStream>,
    options: MergeOptions,
    metrics: MergeMetrics,
    engine: F,
    reducer: Option<Arc<dyn reduce::GroupReducer>>,
) -> Result<SendableRecordBatchStream> {
    let converter = validate(&schema, &options)?;
    if runs.is_empty() {
        let empty = futures::stream::empty::<Result<RecordBatch>>();
        return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, empty)));
    }
    let state = stream::MergeStream::new(runs, converter, options, metrics, engine, reducer);
    let output = futures::stream::try_unfold(state, |mut state| async move {
        Ok(state.next_batch().await?.map(|batch| (batch, state)))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)))
}

/// Checks the options against the schema and builds the key `RowConverter`.
fn validate(schema: &SchemaRef, options: &MergeOptions) -> Result<RowConverter> {
    let fields = schema.fields();
    let field = |index: usize, what: &str| {
        fields.get(index).ok_or_else(|| {
            DataFusionError::Plan(format!(
                "merge: {what} column index {index} out of range ({} columns)",
                fields.len()
            ))
        })
    };
    if options.key_columns.is_empty() {
        return Err(DataFusionError::Plan(
            "merge: a primary-key merge needs at least one key column".into(),
        ));
    }
    let seq = field(options.seq_column, "sequence")?;
    if seq.data_type() != &DataType::Int64 {
        return Err(DataFusionError::Plan(format!(
            "merge: sequence column {} must be Int64, is {}",
            seq.name(),
            seq.data_type()
        )));
    }
    let kind = field(options.kind_column, "row kind")?;
    if kind.data_type() != &DataType::Int8 {
        return Err(DataFusionError::Plan(format!(
            "merge: row kind column {} must be Int8, is {}",
            kind.name(),
            kind.data_type()
        )));
    }
    let sort_fields = options
        .key_columns
        .iter()
        .map(|&i| Ok(SortField::new(field(i, "key")?.data_type().clone())))
        .collect::<Result<Vec<_>>>()?;
    Ok(RowConverter::new(sort_fields)?)
}

/// Single-run case: no merge needed, but drop retract rows (`-U`, `-D`) with a vectorized
/// filter. Returns the batch itself (no copy) if it has no retracts.
///
/// Only valid for a run that holds each key once (a Paimon data file does); a run that may
/// repeat keys needs [`merge_sorted_runs`] even alone.
pub(crate) fn drop_retracts(batch: &RecordBatch, kind_column: usize) -> Result<RecordBatch> {
    let column = batch.columns().get(kind_column).ok_or_else(|| {
        DataFusionError::Execution(format!(
            "drop_retracts: kind column {kind_column} out of range ({} columns)",
            batch.num_columns()
        ))
    })?;
    let kinds = column.as_primitive_opt::<Int8Type>().ok_or_else(|| {
        DataFusionError::Execution(format!(
            "drop_retracts: _VALUE_KIND must be Int8, is {}",
            column.data_type()
        ))
    })?;
    let values = kinds.values();
    // most batches hold no retraction (a compacted run at the top level holds none)
    if !any_retract(values) {
        return Ok(batch.clone());
    }
    // a null kind cannot be a retraction; keep such rows rather than guess
    let keep = BooleanBuffer::collect_bool(values.len(), |i| !is_retract(values[i]));
    let keep = match kinds.nulls() {
        Some(nulls) => &keep | &!nulls.inner(),
        None => keep,
    };
    if keep.count_set_bits() == batch.num_rows() {
        return Ok(batch.clone());
    }
    Ok(filter_record_batch(batch, &BooleanArray::new(keep, None))?)
}

/// [`drop_retracts`] over a whole stream (a section with a single sorted run whose keys are
/// known to be unique), skipping batches that become empty; counts the rows it drops.
pub(crate) fn drop_retracts_stream(
    input: SendableRecordBatchStream,
    kind_column: usize,
    dropped: Count,
) -> SendableRecordBatchStream {
    let schema = Arc::clone(&input.schema());
    let output = input.filter_map(move |batch| {
        let result = batch.and_then(|b| {
            let kept = drop_retracts(&b, kind_column)?;
            dropped.add(b.num_rows() - kept.num_rows());
            Ok(kept)
        });
        futures::future::ready(match result {
            Ok(b) if b.num_rows() == 0 => None,
            other => Some(other),
        })
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, output))
}
