//! `last_value` and `last_non_null_value` for columns of any type: the result of a group is
//! one of its input values, so folding only tracks *which* row holds the accumulator and the
//! column is built with one `take`. Partial-update uses this for its free columns and for
//! protected columns without aggregate function.

use arrow::array::{Array, ArrayRef, UInt32Array};
use arrow::compute::take;
use datafusion::common::Result;

use crate::merge::aggregate::{FieldAggregator, Groups, Step};

/// Which value of the group survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Select {
    /// The newest value, NULL included (`last_value`).
    LastValue,
    /// The newest non-NULL value (`last_non_null_value`, partial-update's default).
    LastNonNull,
}

impl FieldAggregator for Select {
    fn name(&self) -> &'static str {
        match self {
            Select::LastValue => "last_value",
            Select::LastNonNull => "last_non_null_value",
        }
    }

    fn supports_retract(&self) -> bool {
        true
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let mut sources: Vec<Option<u32>> = Vec::with_capacity(groups.len());
        for g in 0..groups.len() {
            // the row holding the accumulator; None = NULL
            let mut acc: Option<usize> = None;
            for (row, step) in groups.members(g) {
                let value_null = input.is_null(row);
                let acc_null = acc.is_none_or(|r| input.is_null(r));
                acc = match (self, step) {
                    (_, Step::Skip) => acc,
                    (_, Step::Reset) => Some(row),
                    (_, Step::SetNull) => None,
                    (Select::LastValue, Step::Add) => Some(row),
                    (Select::LastValue, Step::AddReversed) => acc,
                    (Select::LastValue, Step::Retract) => None,
                    (Select::LastNonNull, Step::Add) if !value_null => Some(row),
                    (Select::LastNonNull, Step::AddReversed) if acc_null && !value_null => Some(row),
                    (Select::LastNonNull, Step::Retract) if !value_null => None,
                    (Select::LastNonNull, _) => acc,
                };
            }
            sources.push(acc.map(|r| r as u32));
        }
        Ok(take(input, &UInt32Array::from(sources), None)?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, StringArray};

    use super::Select;
    use crate::merge::aggregate::{FieldAggregator, Groups, Step};

    fn fold(
        mode: Select,
        values: Vec<Option<&str>>,
        steps: Vec<Step>,
        offsets: Vec<usize>,
    ) -> Vec<Option<String>> {
        let input: ArrayRef = Arc::new(StringArray::from(values));
        let order: Vec<u32> = (0..steps.len() as u32).collect();
        let groups = Groups {
            order: &order,
            offsets: &offsets,
            steps: &steps,
        };
        let out = mode.fold(&input, groups).expect("fold");
        let out = out.as_any().downcast_ref::<StringArray>().expect("strings");
        out.iter().map(|v| v.map(str::to_string)).collect()
    }

    #[test]
    fn last_non_null_keeps_older_value_over_null() {
        use Step::*;
        let out = fold(
            Select::LastNonNull,
            vec![Some("a"), None, Some("b"), None, Some("x"), Some("y")],
            vec![Add, Add, Add, Add, Add, Retract],
            vec![0, 2, 4, 6],
        );
        assert_eq!(out, vec![Some("a".into()), Some("b".into()), None]);
    }

    #[test]
    fn last_value_takes_null_and_reset_set_null_skip() {
        use Step::*;
        let out = fold(
            Select::LastValue,
            vec![Some("a"), None, Some("b"), Some("c"), Some("d"), Some("e")],
            vec![Add, Add, Reset, Skip, SetNull, AddReversed],
            vec![0, 2, 4, 6],
        );
        assert_eq!(out, vec![None, Some("b".into()), None]);
    }

    #[test]
    fn reversed_add_only_fills_a_null_accumulator() {
        use Step::*;
        let out = fold(
            Select::LastNonNull,
            vec![Some("new"), Some("old"), None, Some("old")],
            vec![Add, AddReversed, Add, AddReversed],
            vec![0, 2, 4],
        );
        assert_eq!(out, vec![Some("new".into()), Some("old".into())]);
    }
}
