//! The keys of one side's batch, in the form the diff's walk compares.
//!
//! A key of one integer column (the common `BIGINT id`) is kept as its values, encoded to
//! order as their rows do ([`integer_narrow_keys`]): eight bytes a row, one pass to build, and
//! one integer comparison a step. Any other key, or a batch with a null key, is converted to
//! arrow rows. A narrow key and a row key still compare exactly, through the merge's sort keys
//! ([`narrow_sort_key`] is the [`sort_key`] of the value's row, and at most 9 bytes long, so
//! it is exact).

use std::cmp::Ordering;

use arrow::array::ArrayRef;
use arrow::row::{RowConverter, Rows};
use datafusion::common::Result;

use crate::merge::{gallop, integer_narrow_keys, narrow_sort_key, sort_key};

pub(super) enum KeyColumn {
    Narrow { values: Vec<u64>, width: u32 },
    Rows(Rows),
}

impl KeyColumn {
    /// The keys of `columns` (the key columns of one batch).
    pub(super) fn new(columns: &[ArrayRef], converter: &RowConverter) -> Result<Self> {
        let mut values = Vec::new();
        Ok(match integer_narrow_keys(columns, &mut values) {
            Some(width) => KeyColumn::Narrow { values, width },
            None => KeyColumn::Rows(converter.convert_columns(columns)?),
        })
    }

    /// Compares key `row` of this batch with key `other_row` of `other`.
    #[inline]
    pub(super) fn cmp(&self, row: usize, other: &KeyColumn, other_row: usize) -> Ordering {
        match (self, other) {
            (KeyColumn::Narrow { values: a, .. }, KeyColumn::Narrow { values: b, .. }) => {
                a[row].cmp(&b[other_row])
            }
            (KeyColumn::Rows(a), KeyColumn::Rows(b)) => a.row(row).cmp(&b.row(other_row)),
            (KeyColumn::Narrow { values, width }, KeyColumn::Rows(rows)) => {
                narrow_sort_key(values[row], *width).cmp(&sort_key(rows.row(other_row).data()))
            }
            (KeyColumn::Rows(_), KeyColumn::Narrow { .. }) => other.cmp(other_row, self, row).reverse(),
        }
    }

    /// The first row in `from..to` whose key is not below key `other_row` of `other` (or `to`),
    /// searched from `from` outwards: runs of keys the other side lacks are usually short.
    pub(super) fn seek(&self, from: usize, to: usize, other: &KeyColumn, other_row: usize) -> usize {
        gallop(from, to, |row| self.cmp(row, other, other_row) == Ordering::Less)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int16Array, Int64Array};
    use arrow::datatypes::DataType;
    use arrow::row::SortField;
    use std::sync::Arc;

    fn keys(column: ArrayRef) -> (KeyColumn, KeyColumn) {
        let converter = RowConverter::new(vec![SortField::new(column.data_type().clone())]).unwrap();
        let narrow = KeyColumn::new(&[Arc::clone(&column)], &converter).unwrap();
        let rows = KeyColumn::Rows(converter.convert_columns(&[column]).unwrap());
        (narrow, rows)
    }

    /// Narrow keys compare with row keys of the same type as their rows would, for both
    /// signs, the type's extremes and two widths; a null key (rows only) sorts first.
    #[test]
    fn narrow_and_row_keys_compare_alike() {
        let cases: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![i64::MIN, -7, -1, 0, 1, 7, i64::MAX])),
            Arc::new(Int16Array::from(vec![i16::MIN, -300, -1, 0, 1, 300, i16::MAX])),
        ];
        for column in cases {
            let (narrow, rows) = keys(column);
            assert!(matches!(narrow, KeyColumn::Narrow { .. }));
            for i in 0..7 {
                for j in 0..7 {
                    let expected = i.cmp(&j);
                    assert_eq!(narrow.cmp(i, &narrow, j), expected, "narrow {i} {j}");
                    assert_eq!(narrow.cmp(i, &rows, j), expected, "narrow/rows {i} {j}");
                    assert_eq!(rows.cmp(i, &narrow, j), expected, "rows/narrow {i} {j}");
                }
            }
        }
        let with_null: ArrayRef = Arc::new(Int64Array::from(vec![None, Some(i64::MIN)]));
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)]).unwrap();
        let null_rows = KeyColumn::new(&[with_null], &converter).unwrap();
        assert!(matches!(null_rows, KeyColumn::Rows(_)));
        let (narrow, _) = keys(Arc::new(Int64Array::from(vec![i64::MIN])));
        assert_eq!(null_rows.cmp(0, &narrow, 0), Ordering::Less);
        assert_eq!(null_rows.cmp(1, &narrow, 0), Ordering::Equal);
    }

    #[test]
    fn seek_finds_the_first_key_not_below() {
        let (narrow, rows) = keys(Arc::new(Int64Array::from(vec![1, 3, 5, 7, 9, 11, 13])));
        let (probe, _) = keys(Arc::new(Int64Array::from(vec![0, 5, 6, 14])));
        for side in [&narrow, &rows] {
            assert_eq!(side.seek(0, 7, &probe, 0), 0);
            assert_eq!(side.seek(0, 7, &probe, 1), 2);
            assert_eq!(side.seek(0, 7, &probe, 2), 3);
            assert_eq!(side.seek(4, 7, &probe, 2), 4);
            assert_eq!(side.seek(0, 7, &probe, 3), 7);
        }
    }
}
