//! The rows of a dense-key file ([`DenseKey`]) that a key predicate wants, found by subtraction.
//!
//! A dense file holds key `first + i` in row `i`, so `k BETWEEN a AND b` wants rows
//! `a - first ..= b - first` and `k IN (x, y)` rows `x - first` and `y - first`: no page index
//! and no decoding of the key column is needed to find them. When every conjunct of the pushed
//! filter is such a comparison of the key with an integer literal, the rows found are exactly
//! the matching rows. The reader then drops its row filter, and with it the only reason to
//! decode the key (the dense key is computed from row positions). Otherwise the rows found
//! only narrow the read and the row filter still runs.
//!
//! The plan's own filter stays above the scan either way (the pushed filter is reported
//! inexact), so this never decides which rows a query returns, only which it reads.

use std::ops::Range;
use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, InListExpr, Literal};
use datafusion::physical_expr::utils::split_conjunction;
use datafusion::physical_expr::PhysicalExpr;

use super::file_read::{integer, DenseKey};
use crate::format::ValueFilter;

/// The rows of a dense file a filter may want.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DenseRows {
    /// Ascending, disjoint row ranges.
    pub(crate) ranges: Vec<Range<usize>>,
    /// Whether these are exactly the rows the filter keeps (it needs no evaluation).
    pub(crate) exact: bool,
}

/// The rows of a dense file of `rows` rows that `filter` may keep, from its conjuncts on the
/// key alone; `None` when no conjunct bounds the key.
pub(crate) fn dense_rows(filter: &ValueFilter, dense: DenseKey, rows: usize) -> Option<DenseRows> {
    let key = filter.field_ids().iter().position(|id| *id == dense.field_id)?;
    let mut keys = KeySet::all();
    let mut exact = filter.field_ids().len() == 1;
    let mut bounded = false;
    for conjunct in split_conjunction(filter.expr()) {
        match KeySet::of(conjunct, key) {
            Some(set) => {
                keys = keys.intersect(set);
                bounded = true;
            }
            None => exact = false,
        }
    }
    bounded.then(|| DenseRows {
        ranges: keys.rows(i128::from(dense.first), rows),
        exact,
    })
}

/// A set of integer keys: an inclusive range, optionally only some listed keys within it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeySet {
    low: i128,
    high: i128,
    /// Only these keys (sorted, unique), when a conjunct listed them.
    listed: Option<Vec<i128>>,
}

impl KeySet {
    fn all() -> Self {
        KeySet {
            low: i128::MIN,
            high: i128::MAX,
            listed: None,
        }
    }

    fn range(low: i128, high: i128) -> Self {
        KeySet {
            low,
            high,
            listed: None,
        }
    }

    fn listed(mut keys: Vec<i128>) -> Self {
        keys.sort_unstable();
        keys.dedup();
        KeySet {
            listed: Some(keys),
            ..KeySet::all()
        }
    }

    /// The keys `expr` keeps, if it reads only the column at `key` of the filter's schema and
    /// in a form understood here: a comparison with an integer literal, an `IN` list of them,
    /// or an `OR` of those.
    fn of(expr: &Arc<dyn PhysicalExpr>, key: usize) -> Option<KeySet> {
        if let Some(in_list) = expr.downcast_ref::<InListExpr>() {
            if in_list.negated() || !is_key(in_list.expr(), key) {
                return None;
            }
            let keys = in_list.list().iter().map(literal).collect::<Option<Vec<_>>>()?;
            return Some(KeySet::listed(keys));
        }
        let binary = expr.downcast_ref::<BinaryExpr>()?;
        if *binary.op() == Operator::Or {
            // Only unions of listed keys (DataFusion turns short IN lists into ORs).
            let left = KeySet::of(binary.left(), key)?.listed_keys()?;
            let right = KeySet::of(binary.right(), key)?.listed_keys()?;
            return Some(KeySet::listed([left, right].concat()));
        }
        // `key op literal`, or `literal op key` read as `key op' literal`.
        let (op, value) = if is_key(binary.left(), key) {
            (*binary.op(), literal(binary.right())?)
        } else if is_key(binary.right(), key) {
            (binary.op().swap()?, literal(binary.left())?)
        } else {
            return None;
        };
        match op {
            Operator::Eq => Some(KeySet::listed(vec![value])),
            Operator::Lt => Some(KeySet::range(i128::MIN, value - 1)),
            Operator::LtEq => Some(KeySet::range(i128::MIN, value)),
            Operator::Gt => Some(KeySet::range(value + 1, i128::MAX)),
            Operator::GtEq => Some(KeySet::range(value, i128::MAX)),
            _ => None,
        }
    }

    /// The listed keys inside the range, if keys are listed.
    fn listed_keys(self) -> Option<Vec<i128>> {
        let (low, high) = (self.low, self.high);
        self.listed
            .map(|keys| keys.into_iter().filter(|k| (low..=high).contains(k)).collect())
    }

    fn intersect(self, other: KeySet) -> KeySet {
        let listed = match (self.listed, other.listed) {
            (Some(a), Some(b)) => Some(a.into_iter().filter(|k| b.binary_search(k).is_ok()).collect()),
            (a, b) => a.or(b),
        };
        KeySet {
            low: self.low.max(other.low),
            high: self.high.min(other.high),
            listed,
        }
    }

    /// The rows holding these keys in a file of `rows` rows whose row `i` holds `first + i`.
    fn rows(self, first: i128, rows: usize) -> Vec<Range<usize>> {
        let low = self.low.max(first);
        let high = self.high.min(first + rows as i128 - 1);
        if low > high {
            return Vec::new();
        }
        let row = |key: i128| (key - first) as usize;
        let Some(keys) = self.listed else {
            return vec![row(low)..row(high) + 1];
        };
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for key in keys.into_iter().filter(|k| (low..=high).contains(k)) {
            match ranges.last_mut() {
                Some(last) if last.end == row(key) => last.end += 1,
                _ => ranges.push(row(key)..row(key) + 1),
            }
        }
        ranges
    }
}

fn is_key(expr: &Arc<dyn PhysicalExpr>, key: usize) -> bool {
    expr.downcast_ref::<Column>().is_some_and(|c| c.index() == key)
}

fn literal(expr: &Arc<dyn PhysicalExpr>) -> Option<i128> {
    expr.downcast_ref::<Literal>()
        .and_then(|l| integer(l.value()))
        .map(i128::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TableSchema;
    use datafusion::common::ScalarValue;
    use datafusion::physical_expr::expressions::{col, in_list, lit};
    use datafusion::physical_plan::expressions::binary;

    fn table() -> TableSchema {
        let json = r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"BIGINT NOT NULL"},{"id":1,"name":"v","type":"INT"}],"highestFieldId":1,"partitionKeys":[],"primaryKeys":["k"],"options":{},"timeMillis":0}"#;
        TableSchema::from_json(json.as_bytes(), "schema-0").unwrap()
    }

    fn cmp(column: &str, op: Operator, value: ScalarValue) -> Arc<dyn PhysicalExpr> {
        let arrow = table().arrow_schema();
        binary(col(column, &arrow).unwrap(), op, lit(value), &arrow).unwrap()
    }

    fn k(op: Operator, value: i64) -> Arc<dyn PhysicalExpr> {
        cmp("k", op, ScalarValue::Int64(Some(value)))
    }

    fn both(a: Arc<dyn PhysicalExpr>, op: Operator, b: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(a, op, b))
    }

    /// Rows of a file holding keys 100..=199 that `predicate` wants.
    fn rows_of(predicate: Arc<dyn PhysicalExpr>) -> Option<DenseRows> {
        let filter = ValueFilter::new(&table(), &predicate)?;
        dense_rows(
            &filter,
            DenseKey {
                field_id: 0,
                first: 100,
            },
            100,
        )
    }

    fn exact(ranges: Vec<Range<usize>>) -> Option<DenseRows> {
        Some(DenseRows { ranges, exact: true })
    }

    #[test]
    fn comparisons_with_the_key_are_row_ranges() {
        use Operator::*;
        let between = both(k(GtEq, 120), And, k(LtEq, 129));
        assert_eq!(rows_of(between), exact(vec![20..30]));
        assert_eq!(rows_of(k(Gt, 197)), exact(vec![98..100]));
        assert_eq!(rows_of(k(Lt, 102)), exact(vec![0..2]));
        assert_eq!(rows_of(k(Eq, 150)), exact(vec![50..51]));
        // `literal op key` reads the other way round: 105 > k is k < 105.
        let flipped = binary(
            lit(ScalarValue::Int64(Some(105))),
            Gt,
            col("k", &table().arrow_schema()).unwrap(),
            &table().arrow_schema(),
        )
        .unwrap();
        assert_eq!(rows_of(flipped), exact(vec![0..5]));
        // Outside the file, or an empty range: no rows.
        assert_eq!(rows_of(k(Gt, 500)), exact(vec![]));
        assert_eq!(rows_of(both(k(Gt, 150), And, k(Lt, 140))), exact(vec![]));
        // Bounds at the ends of i64 do not overflow.
        assert_eq!(rows_of(k(Gt, i64::MAX)), exact(vec![]));
        assert_eq!(rows_of(k(Lt, i64::MIN)), exact(vec![]));
    }

    #[test]
    fn listed_keys_are_single_rows() {
        use Operator::*;
        let arrow = table().arrow_schema();
        let list = [150, 90, 151, 199, 150, 300]
            .map(|v| lit(ScalarValue::Int64(Some(v))))
            .to_vec();
        let listed = in_list(col("k", &arrow).unwrap(), list, &false, &arrow).unwrap();
        assert_eq!(rows_of(Arc::clone(&listed)), exact(vec![50..52, 99..100]));
        // An OR of equalities is a list too, and a range narrows it.
        let ors = both(both(k(Eq, 110), Or, k(Eq, 120)), Or, k(Eq, 130));
        assert_eq!(rows_of(both(ors, And, k(Gt, 115))), exact(vec![20..21, 30..31]));
        let negated = in_list(
            col("k", &arrow).unwrap(),
            vec![lit(ScalarValue::Int64(Some(150)))],
            &true,
            &arrow,
        )
        .unwrap();
        assert_eq!(rows_of(negated), None);
    }

    #[test]
    fn other_conjuncts_keep_the_row_filter() {
        use Operator::*;
        let value = cmp("v", Eq, ScalarValue::Int32(Some(1)));
        // The key range narrows the read; the value conjunct still needs evaluating.
        let mixed = both(k(GtEq, 190), And, Arc::clone(&value));
        assert_eq!(
            rows_of(mixed),
            Some(DenseRows {
                ranges: vec![90..100],
                exact: false
            })
        );
        // Nothing on the key alone, or a form not understood: nothing found.
        assert_eq!(rows_of(value), None);
        assert_eq!(rows_of(both(k(Eq, 110), Or, k(Gt, 190))), None);
        assert_eq!(rows_of(k(NotEq, 110)), None);
        let null = cmp("k", Eq, ScalarValue::Int64(None));
        assert_eq!(rows_of(null), None);
        // A conjunct not understood next to one that is: narrowed, not exact.
        assert_eq!(
            rows_of(both(k(Lt, 103), And, k(NotEq, 101))),
            Some(DenseRows {
                ranges: vec![0..3],
                exact: false
            })
        );
    }
}
