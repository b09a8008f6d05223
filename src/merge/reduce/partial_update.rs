//! The partial-update engine (semantics.md §2.3): non-NULL values overwrite, sequence groups
//! version their columns, aggregate functions inside groups, and the delete options.

use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::{exec_datafusion_err, DataFusionError, Result};

use super::order::{merge_order, SequenceFields};
use super::{assemble, kinds_of, ColumnFold, Folded, GroupReducer, ReducedGroups};
use crate::merge::aggregate::Step;
use crate::merge::engine::{is_retract, KIND_DELETE, KIND_INSERT};

/// `fields.<g1>[,<g2>…].sequence-group = <c1>,<c2>,…`.
#[derive(Debug, Clone)]
pub(crate) struct SequenceGroup {
    /// The ordering columns `g*` (layout indices), compared lexicographically, NULL lowest.
    pub ordering: Vec<usize>,
    /// The protected columns `c*` (layout indices), with whether each has an aggregate
    /// function (then it aggregates instead of being replaced).
    pub protected: Vec<(usize, bool)>,
    /// An ordering column is listed in `partial-update.remove-record-on-sequence-group`.
    pub removes_record: bool,
}

/// The partial-update merge function over whole batches of key groups.
#[derive(Debug)]
pub(crate) struct PartialUpdateReducer {
    pub table: String,
    pub names: Vec<String>,
    pub seq_column: usize,
    pub kind_column: usize,
    pub sequence_fields: Option<SequenceFields>,
    /// Per layout column; free and protected columns fold, ordering columns fold with
    /// `last_value` along Reset/Skip steps.
    pub folds: Vec<ColumnFold>,
    /// Layout columns that belong to no sequence group and are not key/system columns.
    pub free: Vec<usize>,
    pub groups: Vec<SequenceGroup>,
    pub remove_record_on_delete: bool,
    pub ignore_delete: bool,
}

impl PartialUpdateReducer {
    fn retract_error(&self) -> DataFusionError {
        exec_datafusion_err!(
            "Partial update can not accept delete records (table {}): set 'ignore-delete' to ignore them, \
             'partial-update.remove-record-on-delete' to remove the whole row, or sequence groups to retract \
             partial columns",
            self.table
        )
    }

    /// Whether this engine configuration accepts retract records at all.
    pub(crate) fn accepts_retracts(&self) -> bool {
        self.ignore_delete || self.remove_record_on_delete || !self.groups.is_empty()
    }
}

/// The ordering tuples of one sequence group as comparable rows, plus which are all NULL.
struct GroupOrdering {
    rows: Rows,
    all_null: Vec<bool>,
}

impl GroupOrdering {
    fn new(input: &RecordBatch, group: &SequenceGroup) -> Result<Self> {
        let options = arrow::compute::SortOptions {
            descending: false,
            nulls_first: true,
        };
        let converter = RowConverter::new(
            group
                .ordering
                .iter()
                .map(|&c| SortField::new_with_options(input.column(c).data_type().clone(), options))
                .collect(),
        )?;
        let columns: Vec<_> = group
            .ordering
            .iter()
            .map(|&c| Arc::clone(input.column(c)))
            .collect();
        let rows = converter.convert_columns(&columns)?;
        let all_null = (0..input.num_rows())
            .map(|r| group.ordering.iter().all(|&c| input.column(c).is_null(r)))
            .collect();
        Ok(GroupOrdering { rows, all_null })
    }

    /// Whether the tuple of `incoming` is at least the stored one (`None` = all NULL).
    fn not_older(&self, incoming: usize, stored: Option<usize>) -> bool {
        match stored {
            None => true,
            Some(s) => self.rows.row(incoming) >= self.rows.row(s),
        }
    }
}

impl GroupReducer for PartialUpdateReducer {
    fn reduce(&self, input: &RecordBatch, offsets: &[usize]) -> Result<ReducedGroups> {
        let order = merge_order(
            input,
            offsets,
            self.seq_column,
            self.kind_column,
            self.sequence_fields.as_ref(),
        )?;
        let kinds = kinds_of(input, self.kind_column).values();
        let orderings = self
            .groups
            .iter()
            .map(|g| GroupOrdering::new(input, g))
            .collect::<Result<Vec<_>>>()?;
        let columns = input.num_columns();
        let mut steps: Vec<Vec<Step>> = self
            .folds
            .iter()
            .map(|f| match f {
                ColumnFold::Fold(_) => vec![Step::Skip; order.len()],
                ColumnFold::Newest => Vec::new(),
            })
            .collect();
        let group_count = offsets.len().saturating_sub(1);
        let mut newest = Vec::with_capacity(group_count);
        let mut result_kinds = Vec::with_capacity(group_count);
        let mut present = Vec::with_capacity(group_count);
        let mut stored: Vec<Option<usize>> = vec![None; self.groups.len()];
        for window in offsets.windows(2) {
            stored.iter_mut().for_each(|s| *s = None);
            let (mut removed, mut saw_add) = (false, false);
            for pos in window[0]..window[1] {
                let row = order[pos] as usize;
                let kind = kinds[row];
                let mut set = |c: usize, step: Step| {
                    if let Some(s) = steps[c].get_mut(pos) {
                        *s = step;
                    }
                };
                if !is_retract(kind) {
                    saw_add = true;
                    removed = false;
                    for &c in &self.free {
                        set(c, Step::Add);
                    }
                    for (g, group) in self.groups.iter().enumerate() {
                        let ordering = &orderings[g];
                        if ordering.all_null[row] {
                            continue;
                        }
                        if ordering.not_older(row, stored[g]) {
                            stored[g] = Some(row);
                            for &c in &group.ordering {
                                set(c, Step::Reset);
                            }
                            for &(c, aggregated) in &group.protected {
                                set(c, if aggregated { Step::Add } else { Step::Reset });
                            }
                        } else {
                            for &(c, aggregated) in &group.protected {
                                if aggregated {
                                    set(c, Step::AddReversed);
                                }
                            }
                        }
                    }
                    continue;
                }
                if self.ignore_delete {
                    continue;
                }
                if self.groups.is_empty() {
                    if !self.remove_record_on_delete {
                        return Err(self.retract_error());
                    }
                    if kind == KIND_DELETE {
                        removed = true;
                        (0..columns).for_each(|c| set(c, Step::Reset));
                    }
                    continue;
                }
                let mut remove_row = false;
                for (g, group) in self.groups.iter().enumerate() {
                    let ordering = &orderings[g];
                    if ordering.all_null[row] {
                        continue;
                    }
                    if ordering.not_older(row, stored[g]) {
                        if kind == KIND_DELETE && group.removes_record {
                            remove_row = true;
                            break;
                        }
                        stored[g] = Some(row);
                        for &c in &group.ordering {
                            set(c, Step::Reset);
                        }
                        for &(c, aggregated) in &group.protected {
                            set(c, if aggregated { Step::Retract } else { Step::SetNull });
                        }
                    } else {
                        for &(c, aggregated) in &group.protected {
                            if aggregated {
                                set(c, Step::Retract);
                            }
                        }
                    }
                }
                if remove_row {
                    // the row becomes the -D record's own values
                    removed = true;
                    (0..columns).for_each(|c| set(c, Step::Reset));
                    for (g, s) in stored.iter_mut().enumerate() {
                        *s = (!orderings[g].all_null[row]).then_some(row);
                    }
                }
            }
            let last = order[window[1] - 1];
            newest.push(last);
            present.push(saw_add || !self.ignore_delete);
            result_kinds.push(if removed || !saw_add {
                KIND_DELETE
            } else {
                KIND_INSERT
            });
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
        Ok(ReducedGroups { batch, present })
    }
}
