//! deduplicate and first-row as reducers: the result is one of the group's records, taken
//! whole (its own sequence number and kind). The k-way merge normally decides these engines
//! without values ([`crate::merge::engine`]); the reducer is needed when `sequence.field`
//! orders the records, and in the write buffer.

use arrow::array::RecordBatch;
use arrow::array::UInt32Array;
use arrow::compute::take_record_batch;
use datafusion::common::Result;

use super::order::{order_members, SequenceFields};
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

impl PickReducer {
    /// The record each group picks, as a row of `input`: group `g` is the rows
    /// `members[offsets[g]..offsets[g + 1]]` of `input`, in arrival order. Also whether the
    /// group picked one at all (see [`ReducedGroups::present`]; an absent group names its
    /// first member). A caller that outputs whole records takes them from `input` itself: no
    /// member needs copying first.
    pub(crate) fn winners(
        &self,
        input: &RecordBatch,
        members: Vec<u32>,
        offsets: &[usize],
    ) -> Result<(Vec<u32>, Vec<bool>)> {
        let order = order_members(
            input,
            members,
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
        Ok((winners, present))
    }
}

impl GroupReducer for PickReducer {
    fn reduce(&self, input: &RecordBatch, offsets: &[usize]) -> Result<ReducedGroups> {
        let rows = (0..input.num_rows() as u32).collect();
        let (winners, present) = self.winners(input, rows, offsets)?;
        let batch = take_record_batch(input, &UInt32Array::from(winners))?;
        Ok(ReducedGroups { batch, present })
    }

    fn as_pick(&self) -> Option<&PickReducer> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, Int8Array, RecordBatch, StringArray, UInt32Array};
    use arrow::compute::take_record_batch;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::PickReducer;
    use crate::merge::reduce::GroupReducer;
    use crate::spec::row_kind::{DELETE, INSERT, UPDATE_AFTER};

    /// Picking among rows named by `members` gives the rows that reducing the gathered
    /// members gives, for deduplicate and first-row, with and without skipping retractions.
    #[test]
    fn winners_among_members_match_the_reduction_of_gathered_members() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
            Field::new("v", DataType::Utf8, true),
        ]));
        let seqs = vec![4i64, 9, 1, 7, 7, 3, 2];
        let kinds = vec![INSERT, DELETE, INSERT, UPDATE_AFTER, DELETE, INSERT, DELETE];
        let values: Vec<String> = (0..seqs.len()).map(|i| format!("row {i}")).collect();
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(seqs)),
                Arc::new(Int8Array::from(kinds)),
                Arc::new(StringArray::from(values)),
            ],
        )
        .unwrap();
        // groups in arrival order: {5, 1, 3}, {0, 4}, {2}, {6}
        let members = vec![5u32, 1, 3, 0, 4, 2, 6];
        let offsets = [0, 3, 5, 6, 7];
        for (first, ignore_delete) in [(false, false), (false, true), (true, true)] {
            let pick = PickReducer {
                first,
                ignore_delete,
                seq_column: 0,
                kind_column: 1,
                sequence_fields: None,
            };
            let (winners, present) = pick.winners(&batch, members.clone(), &offsets).unwrap();
            let gathered = take_record_batch(&batch, &UInt32Array::from(members.clone())).unwrap();
            let reduced = pick.reduce(&gathered, &offsets).unwrap();
            let picked = take_record_batch(&batch, &UInt32Array::from(winners.clone())).unwrap();
            assert_eq!(
                picked, reduced.batch,
                "first {first}, ignore-delete {ignore_delete}"
            );
            assert_eq!(
                present, reduced.present,
                "first {first}, ignore-delete {ignore_delete}"
            );
        }
        // deduplicate: the highest sequence number wins; a tie goes to the later arrival
        let dedup = PickReducer {
            first: false,
            ignore_delete: false,
            seq_column: 0,
            kind_column: 1,
            sequence_fields: None,
        };
        let (winners, present) = dedup.winners(&batch, members, &offsets).unwrap();
        assert_eq!(winners, vec![1, 4, 2, 6]);
        assert_eq!(present, vec![true; 4]);
    }
}
