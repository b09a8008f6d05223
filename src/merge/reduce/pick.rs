//! deduplicate and first-row as reducers: the result is one of the group's records, taken
//! whole (its own sequence number and kind). The k-way merge normally decides these engines
//! without values ([`crate::merge::engine`]); the reducer is needed when `sequence.field`
//! orders the records, and in the write buffer.

use arrow::array::RecordBatch;
use arrow::array::UInt32Array;
use arrow::compute::take_record_batch;
use datafusion::common::Result;

use super::order::{merge_order, SequenceFields};
use super::{kinds_of, GroupReducer, ReducedGroups};
use crate::merge::engine::is_retract;

/// Picks the newest (deduplicate) or oldest (first-row) record of each group.
#[derive(Debug, Clone)]
pub(crate) struct PickReducer {
    /// first-row: the oldest add wins; deduplicate: the newest record wins.
    pub first: bool,
    /// Skip retractions (`ignore-delete`; first-row always skips them when reading).
    pub ignore_delete: bool,
    pub seq_column: usize,
    pub kind_column: usize,
    pub sequence_fields: Option<SequenceFields>,
}

impl GroupReducer for PickReducer {
    fn reduce(&self, input: &RecordBatch, offsets: &[usize]) -> Result<ReducedGroups> {
        let order = merge_order(
            input,
            offsets,
            self.seq_column,
            self.kind_column,
            self.sequence_fields.as_ref(),
        )?;
        let kinds = kinds_of(input, self.kind_column).values();
        let skip_retracts = self.ignore_delete || self.first;
        let mut winners = Vec::with_capacity(offsets.len().saturating_sub(1));
        let mut present = Vec::with_capacity(winners.capacity());
        for window in offsets.windows(2) {
            let members = &order[window[0]..window[1]];
            let eligible = |&&row: &&u32| !(skip_retracts && is_retract(kinds[row as usize]));
            let winner = if self.first {
                members.iter().find(eligible)
            } else {
                members.iter().rev().find(eligible)
            };
            present.push(winner.is_some());
            winners.push(winner.copied().unwrap_or(members[0]));
        }
        let batch = take_record_batch(input, &UInt32Array::from(winners))?;
        Ok(ReducedGroups { batch, present })
    }
}
