//! Whether the two versions of a key found in both states differ, a column at a time.
//!
//! The diff compares values only for keys present on both sides, after the walk has paired
//! them, so the rows of keys only one side holds are never compared. Equality is the row
//! format's (the merge's): nulls equal each other, and floats compare by their bits in total
//! order, so `-0.0` differs from `0.0` and a NaN equals itself. Primitive, boolean, string and
//! binary columns are compared in place, where the rows sit in the walk's batches; other
//! columns are gathered first and compared by Arrow's `distinct` kernel (same semantics), or
//! as arrow rows when nested, which that kernel does not compare.

use arrow::array::{downcast_primitive, Array, ArrayRef, AsArray, RecordBatch};
use arrow::buffer::BooleanBuffer;
use arrow::compute::interleave;
use arrow::compute::kernels::cmp::distinct;
use arrow::datatypes::{ArrowNativeTypeOp, DataType};
use arrow::row::{RowConverter, SortField};
use datafusion::common::Result;

/// For each pair of rows (`before[i]`, `after[i]`), given as (batch index, row) into `store`,
/// whether any of `columns` differs.
///
/// Columns are compared one after another, each only for the pairs every earlier column
/// found equal: a changed key usually differs in its first value column already, so the
/// others are read for the few pairs still undecided, not for all.
pub(super) fn differing(
    store: &[RecordBatch],
    columns: &[usize],
    before: &[(usize, usize)],
    after: &[(usize, usize)],
) -> Result<BooleanBuffer> {
    let len = before.len();
    let mut differs = vec![false; len];
    // The pairs not yet found to differ (all of them before the first column), by index.
    let mut open: Option<Vec<usize>> = None;
    let (mut open_before, mut open_after) = (Vec::new(), Vec::new());
    for &c in columns {
        let (b, a) = match &open {
            None => (before, after),
            Some(open) if open.is_empty() => break,
            Some(open) => {
                open_before.clear();
                open_after.clear();
                open_before.extend(open.iter().map(|&i| before[i]));
                open_after.extend(open.iter().map(|&i| after[i]));
                (&open_before[..], &open_after[..])
            }
        };
        let column = column_differs(store, c, b, a)?;
        let indices = open.take().unwrap_or_else(|| (0..len).collect());
        let still_open: Vec<usize> = indices
            .into_iter()
            .zip(column.iter())
            .filter_map(|(i, differ)| {
                differs[i] |= differ;
                (!differ).then_some(i)
            })
            .collect();
        open = Some(still_open);
    }
    Ok(BooleanBuffer::from(differs))
}

/// Whether column `c` differs for each pair of rows of `store`.
fn column_differs(
    store: &[RecordBatch],
    c: usize,
    before: &[(usize, usize)],
    after: &[(usize, usize)],
) -> Result<BooleanBuffer> {
    let arrays: Vec<&dyn Array> = store.iter().map(|b| b.column(c).as_ref()).collect();
    match differing_in_place(&arrays, before, after) {
        Some(bits) => Ok(bits),
        None => {
            let (b, a) = (interleave(&arrays, before)?, interleave(&arrays, after)?);
            differing_gathered(&b, &a)
        }
    }
}

/// [`differing`] for one column of a type compared in place, else None.
fn differing_in_place(
    arrays: &[&dyn Array],
    before: &[(usize, usize)],
    after: &[(usize, usize)],
) -> Option<BooleanBuffer> {
    // one flag a pair: nullness differs, or both are set and `differ(x, y)` holds
    fn pairs<A: Array>(
        typed: &[&A],
        before: &[(usize, usize)],
        after: &[(usize, usize)],
        differ: impl Fn(&A, usize, &A, usize) -> bool,
    ) -> BooleanBuffer {
        BooleanBuffer::collect_bool(before.len(), |i| {
            let ((bs, br), (as_, ar)) = (before[i], after[i]);
            let (x, y) = (typed[bs], typed[as_]);
            match (x.is_valid(br), y.is_valid(ar)) {
                (true, true) => differ(x, br, y, ar),
                (x_set, y_set) => x_set != y_set,
            }
        })
    }
    macro_rules! primitive {
        ($t:ty) => {{
            let typed: Vec<_> = arrays.iter().map(|a| a.as_primitive::<$t>()).collect();
            Some(pairs(&typed, before, after, |x, i, y, j| {
                !x.value(i).is_eq(y.value(j))
            }))
        }};
    }
    macro_rules! bytes {
        ($cast:ident $(::<$o:ty>)?) => {{
            let typed: Vec<_> = arrays.iter().map(|a| a.$cast$(::<$o>)?()).collect();
            Some(pairs(&typed, before, after, |x, i, y, j| x.value(i) != y.value(j)))
        }};
    }
    downcast_primitive! {
        arrays.first()?.data_type() => (primitive),
        DataType::Boolean => bytes!(as_boolean),
        DataType::Utf8 => bytes!(as_string::<i32>),
        DataType::LargeUtf8 => bytes!(as_string::<i64>),
        DataType::Utf8View => bytes!(as_string_view),
        DataType::Binary => bytes!(as_binary::<i32>),
        DataType::LargeBinary => bytes!(as_binary::<i64>),
        DataType::BinaryView => bytes!(as_binary_view),
        _ => None,
    }
}

/// Whether each row of `before` differs from the same row of `after` (equal lengths).
fn differing_gathered(before: &ArrayRef, after: &ArrayRef) -> Result<BooleanBuffer> {
    if before.data_type().is_nested() {
        differing_rows(before, after)
    } else {
        Ok(distinct(before, after)?.values().clone())
    }
}

/// [`differing_gathered`] for a nested column, through its rows.
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

    /// [`differing`] of row i of `before` and row i of `after`, each column compared in
    /// place and gathered (the fallback), which must agree. The rows sit in a store of two
    /// batches, the pairs crossing them both ways.
    fn compared(before: Vec<ArrayRef>, after: Vec<ArrayRef>) -> Vec<bool> {
        let len = before[0].len();
        let batch = |columns: Vec<ArrayRef>| {
            RecordBatch::try_new(
                Arc::new(arrow::datatypes::Schema::new(
                    columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            arrow::datatypes::Field::new(format!("c{i}"), c.data_type().clone(), true)
                        })
                        .collect::<Vec<_>>(),
                )),
                columns,
            )
            .unwrap()
        };
        let store = [batch(before.clone()), batch(after.clone())];
        let columns: Vec<usize> = (0..before.len()).collect();
        // even pairs before -> after, odd pairs the other way round (differ is symmetric)
        let (b, a): (Vec<_>, Vec<_>) = (0..len)
            .map(|i| {
                if i % 2 == 0 {
                    ((0, i), (1, i))
                } else {
                    ((1, i), (0, i))
                }
            })
            .unzip();
        let in_place = bits(&differing(&store, &columns, &b, &a).unwrap());
        let mut gathered = BooleanBuffer::new_unset(len);
        for (x, y) in before.iter().zip(&after) {
            gathered = &gathered | &differing_gathered(x, y).unwrap();
        }
        assert_eq!(in_place, bits(&gathered), "in place and gathered agree");
        in_place
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
        assert_eq!(compared(before, after), [true, false, true, false, true, false]);
    }

    /// Booleans, string and binary views, large strings and decimals compare in place as
    /// `distinct` compares them: per row (equal, differ, null and value, both null).
    #[test]
    fn every_in_place_type_agrees_with_distinct() {
        use arrow::array::{
            BinaryViewArray, BooleanArray, Decimal128Array, LargeStringArray, StringViewArray,
        };
        let cases: Vec<(ArrayRef, ArrayRef)> = vec![
            (
                Arc::new(BooleanArray::from(vec![Some(true), Some(true), None, None])),
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    Some(false),
                    Some(false),
                    None,
                ])),
            ),
            (
                Arc::new(StringViewArray::from(vec![
                    Some("a long string over 12 bytes"),
                    Some("b"),
                    None,
                    None,
                ])),
                Arc::new(StringViewArray::from(vec![
                    Some("a long string over 12 bytes"),
                    Some("B"),
                    Some(""),
                    None,
                ])),
            ),
            (
                Arc::new(LargeStringArray::from(vec![Some("a"), Some("b"), None, None])),
                Arc::new(LargeStringArray::from(vec![
                    Some("a"),
                    Some("bb"),
                    Some("x"),
                    None,
                ])),
            ),
            (
                Arc::new(BinaryViewArray::from(vec![
                    Some(&b"a"[..]),
                    Some(b"b"),
                    None,
                    None,
                ])),
                Arc::new(BinaryViewArray::from(vec![
                    Some(&b"a"[..]),
                    Some(b"c"),
                    Some(b""),
                    None,
                ])),
            ),
            (
                Arc::new(Decimal128Array::from(vec![Some(10), Some(11), None, None])),
                Arc::new(Decimal128Array::from(vec![Some(10), Some(12), Some(0), None])),
            ),
        ];
        for (before, after) in cases {
            let what = before.data_type().clone();
            assert!(
                differing_in_place(&[before.as_ref()], &[(0, 0)], &[(0, 0)]).is_some(),
                "{what}"
            );
            assert_eq!(
                compared(vec![before], vec![after]),
                [false, true, true, false],
                "{what}"
            );
        }
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
        assert_eq!(compared(before, after), [false, false, true, true, true]);
    }
}
