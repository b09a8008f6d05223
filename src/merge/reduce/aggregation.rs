//! The aggregation engine (semantics.md §2.4): every non-key column folds with its aggregate
//! function; retractions retract (or are ignored per column); a removing `-D` restarts the row.

use arrow::array::RecordBatch;
use datafusion::common::Result;

use super::order::{merge_order, SequenceFields};
use super::{assemble, kinds_of, ColumnFold, Folded, GroupReducer, ReducedGroups};
use crate::merge::aggregate::Step;
use crate::merge::engine::{is_retract, KIND_DELETE, KIND_INSERT};

/// The aggregation merge function over whole batches of key groups.
#[derive(Debug)]
pub(crate) struct AggregationReducer {
    pub names: Vec<String>,
    pub seq_column: usize,
    pub kind_column: usize,
    pub sequence_fields: Option<SequenceFields>,
    /// Per layout column: key and system columns are `Newest`, every other column folds.
    pub folds: Vec<ColumnFold>,
    /// Per layout column: `fields.<f>.ignore-retract`.
    pub ignore_retract: Vec<bool>,
    /// `aggregation.remove-record-on-delete`.
    pub remove_record_on_delete: bool,
}

impl GroupReducer for AggregationReducer {
    fn reduce(&self, input: &RecordBatch, offsets: &[usize]) -> Result<ReducedGroups> {
        let order = merge_order(
            input,
            offsets,
            self.seq_column,
            self.kind_column,
            self.sequence_fields.as_ref(),
        )?;
        let kinds = kinds_of(input, self.kind_column).values();
        let steps: Vec<Vec<Step>> = self
            .folds
            .iter()
            .enumerate()
            .map(|(c, fold)| match fold {
                ColumnFold::Newest => Vec::new(),
                ColumnFold::Fold(_) => order
                    .iter()
                    .map(|&row| {
                        let kind = kinds[row as usize];
                        if !is_retract(kind) {
                            Step::Add
                        } else if kind == KIND_DELETE && self.remove_record_on_delete {
                            Step::Reset
                        } else if self.ignore_retract[c] {
                            Step::Skip
                        } else {
                            Step::Retract
                        }
                    })
                    .collect(),
            })
            .collect();
        let mut newest = Vec::with_capacity(offsets.len().saturating_sub(1));
        let mut result_kinds = Vec::with_capacity(newest.capacity());
        for window in offsets.windows(2) {
            let last = order[window[1] - 1];
            newest.push(last);
            let removing = self.remove_record_on_delete && kinds[last as usize] == KIND_DELETE;
            result_kinds.push(if removing { KIND_DELETE } else { KIND_INSERT });
        }
        let batch = assemble(
            input,
            Folded {
                folds: &self.folds,
                names: &self.names,
                order: &order,
                offsets,
                steps: &steps,
            },
            (self.seq_column, self.kind_column),
            &newest,
            result_kinds,
        )?;
        let present = vec![true; newest.len()];
        Ok(ReducedGroups { batch, present })
    }
}
