//! Key groups turned into one row each, column by column: the part of the merge engines that
//! needs the values of the records (semantics.md §2, §3).
//!
//! The k-way merge ([`super::stream`]) and the write buffer find the *groups* (several records
//! of one key); a [`GroupReducer`] turns a whole batch of groups into one row per group:
//!
//! ```text
//! gathered members (groups contiguous, arrival order) ──► merge order per group
//!     (sequence.field, _SEQUENCE_NUMBER, retract before add) ──► engine: a Step per
//!     (record, column) ──► each column folds its steps (aggregate::FieldAggregator or a
//!     row selection) ──► one row per group + its row kind
//! ```
//!
//! Keys with a single record never get here: they pass through unchanged (semantics.md §2.0).

mod aggregation;
mod order;
mod partial_update;
mod pick;
mod select;
mod spec;

use std::fmt::Debug;
use std::sync::Arc;

use arrow::array::{AsArray, Int8Array, RecordBatch, UInt32Array};
use arrow::datatypes::Int8Type;
use datafusion::common::Result;

use crate::merge::row_sort::{stable_key_groups, KeyRanges, SortKeys};

pub(crate) use pick::PickReducer;
pub(crate) use spec::{EngineKind, MergeEngineSpec, RetractPolicy};

use super::engine::is_retract;

/// One row per group, in the input's schema.
#[derive(Debug)]
pub(crate) struct ReducedGroups {
    /// Row `g` is the result of group `g`.
    pub batch: RecordBatch,
    /// Whether group `g` produced a row at all (`false`: the engine dropped the key, e.g. every
    /// record was a retraction skipped by `ignore-delete`). The row of an absent group is
    /// arbitrary.
    pub present: Vec<bool>,
}

/// Folds groups of records of one key into one row per group.
pub(crate) trait GroupReducer: Send + Sync + Debug {
    /// `input` holds the records of every group, group `g` being rows
    /// `offsets[g]..offsets[g + 1]` in arrival order (run by run, oldest run first; for the
    /// write buffer, order of arrival). The result has one row per group with `input`'s schema,
    /// the `_SEQUENCE_NUMBER` of the newest record and the engine's row kind.
    fn reduce(&self, input: &RecordBatch, offsets: &[usize]) -> Result<ReducedGroups>;

    /// The reducer as one that picks a whole record per group (deduplicate, first-row), which
    /// a caller can apply without gathering the groups' records ([`PickReducer::winners`]).
    fn as_pick(&self) -> Option<&PickReducer> {
        None
    }
}

/// Rows of `reduced` to output: present, and not a retraction unless `keep_retracts`.
pub(crate) fn emitted(reduced: &ReducedGroups, kind_column: usize, keep_retracts: bool) -> Vec<bool> {
    let kinds = reduced.batch.column(kind_column).as_primitive::<Int8Type>();
    reduced
        .present
        .iter()
        .enumerate()
        .map(|(g, &present)| present && (keep_retracts || !is_retract(kinds.value(g))))
        .collect()
}

/// Folds a whole batch (the write buffer of one bucket): sorts it by key, keeps keys with a
/// single record as they are and reduces the others with `reducer`. Returns the rows in key
/// order; results that are retractions are kept (they are written to the file), keys the
/// engine drops are not.
pub(crate) fn fold_batch(
    batch: &RecordBatch,
    key_columns: &[usize],
    kind_column: usize,
    reducer: &dyn GroupReducer,
) -> Result<RecordBatch> {
    if batch.num_rows() == 0 {
        return Ok(batch.clone());
    }
    fold_batches(std::slice::from_ref(batch), key_columns, kind_column, reducer)
}

/// [`fold_batch`] of the rows of `batches` taken one after the other (one schema, at least
/// one batch), gathered in key order a column per core ([`crate::merge::gather`]).
pub(crate) fn fold_batches(
    batches: &[RecordBatch],
    key_columns: &[usize],
    kind_column: usize,
    reducer: &dyn GroupReducer,
) -> Result<RecordBatch> {
    let keys = SortKeys::of_batches(batches, key_columns)?;
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    // A stable sort keeps each key's records in arrival order.
    let (order, groups) = stable_key_groups(&keys);

    let mut sources: Vec<&RecordBatch> = batches.iter().collect();
    if let KeyRanges::Distinct(_) = groups {
        return crate::merge::gather::gather(&sources, order);
    }
    // Rows to output, numbered across `batches`; the row of group `g` is row `total + g`
    // (the reduced groups are gathered as a batch after them).
    let mut indices: Vec<u32> = Vec::new();
    let mut members: Vec<u32> = Vec::new();
    let mut offsets: Vec<usize> = vec![0];
    for run in groups.iter() {
        if run.len() == 1 {
            indices.push(order[run.start]);
        } else {
            indices.push((total + offsets.len() - 1) as u32);
            members.extend_from_slice(&order[run]);
            offsets.push(members.len());
        }
    }
    if members.is_empty() {
        return crate::merge::gather::gather(&sources, indices);
    }
    let gathered = crate::merge::gather::gather(&sources, members)?;
    let reduced = reducer.reduce(&gathered, &offsets)?;
    let emit = emitted(&reduced, kind_column, true);
    indices.retain(|&i| (i as usize) < total || emit[i as usize - total]);
    sources.push(&reduced.batch);
    crate::merge::gather::gather(&sources, indices)
}

/// The row kinds of a batch as a slice (the kind column is non-null Int8).
pub(super) fn kinds_of(batch: &RecordBatch, kind_column: usize) -> &Int8Array {
    batch.column(kind_column).as_primitive::<Int8Type>()
}

/// Sets the `_SEQUENCE_NUMBER` and `_VALUE_KIND` of each result row: the sequence number of
/// the newest record of the group (`newest[g]`) and the engine's `kinds[g]`.
pub(super) fn with_seq_and_kind(
    columns: &mut [arrow::array::ArrayRef],
    input: &RecordBatch,
    seq_column: usize,
    kind_column: usize,
    newest: &[u32],
    kinds: Vec<i8>,
) -> Result<()> {
    let newest = UInt32Array::from(newest.to_vec());
    columns[seq_column] = arrow::compute::take(input.column(seq_column), &newest, None)?;
    columns[kind_column] = Arc::new(Int8Array::from(kinds));
    Ok(())
}

#[cfg(test)]
mod tests;

/// How one layout column of a value-merging engine gets its result.
#[derive(Debug, Clone)]
pub(crate) enum ColumnFold {
    /// Primary-key, `_SEQUENCE_NUMBER` and `_VALUE_KIND` columns: taken from the newest record
    /// (the last two are then overwritten by [`with_seq_and_kind`]).
    Newest,
    /// Folded by an aggregator along the per-record steps the engine computed.
    Fold(Arc<dyn crate::merge::aggregate::FieldAggregator>),
}

/// Builds the result columns of value-merging engines: `steps[c]` holds the step of every
/// position of `order` for column `c` (empty for [`ColumnFold::Newest`] columns).
pub(super) fn fold_columns(
    input: &RecordBatch,
    folds: &[ColumnFold],
    order: &[u32],
    offsets: &[usize],
    steps: &[Vec<crate::merge::aggregate::Step>],
    newest: &[u32],
    field_name: impl Fn(usize) -> String,
) -> Result<Vec<arrow::array::ArrayRef>> {
    let newest_indices = UInt32Array::from(newest.to_vec());
    folds
        .iter()
        .enumerate()
        .map(|(c, fold)| match fold {
            ColumnFold::Newest => Ok(arrow::compute::take(input.column(c), &newest_indices, None)?),
            ColumnFold::Fold(aggregator) => {
                let groups = crate::merge::aggregate::Groups {
                    order,
                    offsets,
                    steps: &steps[c],
                };
                aggregator
                    .fold(input.column(c), groups)
                    .map_err(|e| e.context(format!("merging field '{}'", field_name(c))))
            }
        })
        .collect()
}

/// What value-merging engines fold: per column its [`ColumnFold`] and the step of every
/// position of `order` (groups delimited by `offsets`).
pub(super) struct Folded<'a> {
    pub folds: &'a [ColumnFold],
    pub names: &'a [String],
    pub order: &'a [u32],
    pub offsets: &'a [usize],
    pub steps: &'a [Vec<crate::merge::aggregate::Step>],
}

/// The result batch of a value-merging engine: every column folded, then the sequence number
/// of each group's newest record and the engine's row kinds.
pub(super) fn assemble(
    input: &RecordBatch,
    folded: Folded<'_>,
    (seq_column, kind_column): (usize, usize),
    newest: &[u32],
    kinds: Vec<i8>,
) -> Result<RecordBatch> {
    let mut columns = fold_columns(
        input,
        folded.folds,
        folded.order,
        folded.offsets,
        folded.steps,
        newest,
        |c| folded.names[c].clone(),
    )?;
    with_seq_and_kind(&mut columns, input, seq_column, kind_column, newest, kinds)?;
    Ok(RecordBatch::try_new(input.schema(), columns)?)
}
