//! Whether the two versions of a key found in both states differ, a column at a time.
//!
//! The diff compares values only for keys present on both sides, after the walk has paired
//! them, so the rows of keys only one side holds are never compared. Equality is the row
//! format's (the merge's): nulls equal each other, and floats compare by their bits in total
//! order, so `-0.0` differs from `0.0` and a NaN equals itself. Arrow's `distinct` kernel has
//! those semantics; nested columns, which it does not compare, are compared as arrow rows.

use arrow::array::{Array, ArrayRef};
use arrow::buffer::BooleanBuffer;
use arrow::compute::kernels::cmp::distinct;
use arrow::row::{RowConverter, SortField};
use datafusion::common::Result;

/// For each of the pairs (`before[c][i]`, `after[c][i]`) over all columns `c`, whether any
/// column differs. Every array of both sides has the same length.
pub(super) fn differing(before: &[ArrayRef], after: &[ArrayRef], len: usize) -> Result<BooleanBuffer> {
    let mut any = BooleanBuffer::new_unset(len);
    for (b, a) in before.iter().zip(after) {
        let column = if b.data_type().is_nested() {
            differing_rows(b, a)?
        } else {
            distinct(b, a)?.values().clone()
        };
        any = &any | &column;
    }
    Ok(any)
}

/// [`differing`] for one column the comparison kernels do not take, through its rows.
fn differing_rows(before: &ArrayRef, after: &ArrayRef) -> Result<BooleanBuffer> {
    let converter = RowConverter::new(vec![SortField::new(before.data_type().clone())])?;
    let b = converter.convert_columns(std::slice::from_ref(before))?;
    let a = converter.convert_columns(std::slice::from_ref(after))?;
    Ok(BooleanBuffer::collect_bool(before.len(), |i| {
        b.row(i) != a.row(i)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int32Array, ListArray, StringArray};
    use arrow::datatypes::Int32Type;
    use std::sync::Arc;

    fn bits(buffer: &BooleanBuffer) -> Vec<bool> {
        buffer.iter().collect()
    }

    /// Nulls equal nulls; a null differs from a value; floats compare by bits (signed zeros
    /// differ, a NaN equals itself); a pair differs when any column does.
    #[test]
    fn pairs_differ_when_any_column_differs() {
        let before: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![
                Some(1),
                None,
                None,
                Some(4),
                Some(5),
                Some(6),
            ])),
            Arc::new(StringArray::from(vec!["a", "b", "c", "d", "e", "f"])),
            Arc::new(Float64Array::from(vec![0.0, 1.0, 1.0, f64::NAN, 2.0, 3.0])),
        ];
        let after: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![
                Some(1),
                None,
                Some(3),
                Some(4),
                Some(5),
                Some(6),
            ])),
            Arc::new(StringArray::from(vec!["a", "b", "c", "d", "E", "f"])),
            Arc::new(Float64Array::from(vec![-0.0, 1.0, 1.0, f64::NAN, 2.0, 3.0])),
        ];
        let diff = differing(&before, &after, 6).unwrap();
        assert_eq!(bits(&diff), [true, false, true, false, true, false]);
    }

    /// A list column goes through rows: equal lists (and two null lists) are equal; a changed
    /// element, a longer list, or a null against a value differ.
    #[test]
    fn nested_columns_compare_as_rows() {
        let list = |rows: Vec<Option<Vec<Option<i32>>>>| -> ArrayRef {
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(rows))
        };
        let before = vec![list(vec![
            Some(vec![Some(1), Some(2)]),
            None,
            Some(vec![Some(1)]),
            Some(vec![Some(1), None]),
            None,
        ])];
        let after = vec![list(vec![
            Some(vec![Some(1), Some(2)]),
            None,
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(1), Some(3)]),
            Some(vec![]),
        ])];
        assert_eq!(
            bits(&differing(&before, &after, 5).unwrap()),
            [false, false, true, true, true]
        );
    }
}
