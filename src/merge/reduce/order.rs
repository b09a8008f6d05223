//! Merge order of the records of one key (semantics.md §3): ascending by the user sequence
//! fields (if any), then `_SEQUENCE_NUMBER`, then retractions before adds, then arrival.

use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::SortOptions;
use arrow::datatypes::Int64Type;
use arrow::row::{RowConverter, SortField};
use datafusion::common::Result;

use super::kinds_of;
use crate::merge::engine::is_retract;

/// `sequence.field` columns and `sequence.field.sort-order`.
#[derive(Debug, Clone)]
pub(crate) struct SequenceFields {
    /// Column indices in the merge layout, compared in this order.
    pub columns: Vec<usize>,
    /// `sequence.field.sort-order = descending`: the smallest value is the newest.
    pub descending: bool,
}

impl SequenceFields {
    /// Row encoding of the sequence fields whose byte order is the merge order: NULL is always
    /// the oldest value, in both sort orders (Java's comparator with `nullIsLast = false`).
    pub(crate) fn converter(&self, input: &RecordBatch) -> Result<RowConverter> {
        let options = SortOptions {
            descending: self.descending,
            // row bytes order = sort order, and NULL must come first in it either way
            nulls_first: true,
        };
        Ok(RowConverter::new(
            self.columns
                .iter()
                .map(|&c| SortField::new_with_options(input.column(c).data_type().clone(), options))
                .collect(),
        )?)
    }
}

/// Positions of the input rows, group after group, each group sorted into merge order (the
/// oldest record first).
pub(crate) fn merge_order(
    input: &RecordBatch,
    offsets: &[usize],
    seq_column: usize,
    kind_column: usize,
    sequence_fields: Option<&SequenceFields>,
) -> Result<Vec<u32>> {
    let rows = (0..input.num_rows() as u32).collect();
    order_members(input, rows, offsets, seq_column, kind_column, sequence_fields)
}

/// [`merge_order`] for groups whose records are the rows `members` of `input` (group `g`
/// being `members[offsets[g]..offsets[g + 1]]`, in arrival order) rather than consecutive rows:
/// returns `members` with each group sorted, oldest first. No record is copied.
pub(crate) fn order_members(
    input: &RecordBatch,
    members: Vec<u32>,
    offsets: &[usize],
    seq_column: usize,
    kind_column: usize,
    sequence_fields: Option<&SequenceFields>,
) -> Result<Vec<u32>> {
    let seqs = input.column(seq_column).as_primitive::<Int64Type>().values();
    let kinds = kinds_of(input, kind_column).values();
    let user = match sequence_fields {
        Some(fields) => {
            let converter = fields.converter(input)?;
            let columns: Vec<_> = fields
                .columns
                .iter()
                .map(|&c| Arc::clone(input.column(c)))
                .collect();
            Some(converter.convert_columns(&columns)?)
        }
        None => None,
    };
    let mut order = members;
    for window in offsets.windows(2) {
        let members = &mut order[window[0]..window[1]];
        // stable: equal records keep arrival order, so the later arrival is the newer
        members.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            let by_user = match &user {
                Some(rows) => rows.row(a).cmp(&rows.row(b)),
                None => std::cmp::Ordering::Equal,
            };
            by_user
                .then(seqs[a].cmp(&seqs[b]))
                .then(is_retract(kinds[b]).cmp(&is_retract(kinds[a])))
        });
    }
    Ok(order)
}
