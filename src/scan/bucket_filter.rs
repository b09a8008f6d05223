//! Bucket pruning, as Paimon's `BucketSelector`: when the pushed-down filters pin every
//! bucket-key column to literals (`k = 7`, `k IN (1, 2)`, and conjunctions of them), only the
//! buckets those keys hash to can hold matching rows, so the others are not read at all.
//!
//! A row's bucket is `abs(hash(BinaryRow(bucket key)) % total_buckets)` (format.md §5.8), with
//! the key encoded in the column's own type: a literal is cast to the column type first, and
//! one that cannot be cast exactly disables pruning rather than risk a wrong bucket.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use arrow::datatypes::DataType as ArrowType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column, InListExpr, Literal};
use datafusion::physical_expr::utils::split_conjunction;
use datafusion::physical_expr::PhysicalExpr;

use crate::spec::bucket::fixed_bucket;
use crate::spec::{BinaryRow, TableSchema};

/// Java's `BucketSelector` gives up beyond this many key combinations.
const MAX_KEY_COMBINATIONS: usize = 1000;

/// The bucket-key combinations a filter allows, and the buckets they map to per bucket count.
#[derive(Debug)]
pub(crate) struct BucketFilter {
    /// Every allowed bucket key, as an encoded BinaryRow.
    keys: Vec<Vec<u8>>,
    /// total_buckets -> selected buckets (files of rescaled partitions differ in bucket count).
    selected: Mutex<HashMap<i32, Vec<bool>>>,
}

impl BucketFilter {
    /// The filter for `predicate` over `schema`'s columns, if it pins every bucket-key column
    /// (tables with a fixed bucket count only; dynamic and postpone buckets are not hashed).
    pub(crate) fn new(schema: &TableSchema, predicate: Option<&Arc<dyn PhysicalExpr>>) -> Option<Self> {
        let predicate = predicate?;
        // Another bucket function puts keys in other buckets than the hash below says.
        if !crate::spec::options::default_bucket_function(&schema.options) {
            return None;
        }
        let bucket_key = schema.bucket_key();
        if bucket_key.is_empty() {
            return None;
        }
        let arrow_schema = schema.arrow_schema();
        let mut allowed: BTreeMap<&str, Vec<ScalarValue>> = BTreeMap::new();
        for conjunct in split_conjunction(predicate) {
            let Some(((column, cast), values)) = pinned_values(conjunct) else {
                continue;
            };
            if !bucket_key.iter().any(|k| k == column) {
                continue;
            }
            let field = arrow_schema.field_with_name(column).ok()?;
            if cast.is_some_and(|to| !keeps_values_apart(field.data_type(), to)) {
                continue;
            }
            let mut cast = Vec::with_capacity(values.len());
            for value in values {
                if value.is_null() {
                    continue; // `k = NULL` matches nothing
                }
                let value = exact_cast(&value, field.data_type())?;
                if !cast.contains(&value) {
                    cast.push(value);
                }
            }
            // Several conjuncts on one column: only values all of them allow.
            match allowed.get_mut(column) {
                Some(previous) => previous.retain(|v| cast.contains(v)),
                None => {
                    allowed.insert(column, cast);
                }
            }
        }
        // Every bucket-key column, in bucket-key order.
        let per_column: Vec<&Vec<ScalarValue>> = bucket_key
            .iter()
            .map(|k| allowed.get(k.as_str()))
            .collect::<Option<_>>()?;
        let combinations = per_column
            .iter()
            .try_fold(1usize, |n, v| n.checked_mul(v.len()))?;
        if combinations > MAX_KEY_COMBINATIONS {
            return None;
        }
        let mut keys = Vec::with_capacity(combinations);
        let mut row = vec![0usize; per_column.len()];
        for _ in 0..combinations {
            let values: Vec<ScalarValue> = row.iter().zip(&per_column).map(|(i, v)| v[*i].clone()).collect();
            keys.push(BinaryRow::encode(&values).ok()?);
            // Next combination, odometer style.
            for (digit, values) in row.iter_mut().zip(&per_column).rev() {
                *digit += 1;
                if *digit < values.len() {
                    break;
                }
                *digit = 0;
            }
        }
        Some(BucketFilter {
            keys,
            selected: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `bucket` (of `total_buckets`) may hold matching rows.
    pub(crate) fn matches(&self, bucket: i32, total_buckets: i32) -> bool {
        if total_buckets <= 0 || bucket < 0 {
            return true;
        }
        let mut selected = self
            .selected
            .lock()
            .expect("bucket filter lock is never poisoned");
        let buckets = selected.entry(total_buckets).or_insert_with(|| {
            let mut buckets = vec![false; total_buckets as usize];
            for key in &self.keys {
                buckets[fixed_bucket(key, total_buckets) as usize] = true;
            }
            buckets
        });
        buckets.get(bucket as usize).copied().unwrap_or(true)
    }
}

/// `column = literal`, `literal = column`, `column IN (literals)`, or an OR of those over one
/// column (DataFusion turns short IN lists into ORs): the column and its values.
fn pinned_values(expr: &Arc<dyn PhysicalExpr>) -> Option<(Pinned<'_>, Vec<ScalarValue>)> {
    if let Some(binary) = expr.downcast_ref::<BinaryExpr>() {
        if *binary.op() == Operator::Or {
            let (left, mut values) = pinned_values(binary.left())?;
            let (right, more) = pinned_values(binary.right())?;
            if left != right {
                return None;
            }
            values.extend(more);
            return Some((left, values));
        }
        if *binary.op() != Operator::Eq {
            return None;
        }
        let (column, literal) = match (column_name(binary.left()), literal_value(binary.right())) {
            (Some(c), Some(l)) => (c, l),
            _ => (column_name(binary.right())?, literal_value(binary.left())?),
        };
        return Some((column, vec![literal]));
    }
    let in_list = expr.downcast_ref::<InListExpr>()?;
    if in_list.negated() {
        return None;
    }
    let column = column_name(in_list.expr())?;
    let values = in_list
        .list()
        .iter()
        .map(literal_value)
        .collect::<Option<Vec<_>>>()?;
    Some((column, values))
}

/// A column a conjunct pins, and the type a cast around it gives.
type Pinned<'a> = (&'a str, Option<&'a ArrowType>);

/// The column `expr` is, and the type a cast around it gives (as a join's key comparison
/// casts: `CAST(k AS BIGINT) = 7`).
fn column_name(expr: &Arc<dyn PhysicalExpr>) -> Option<Pinned<'_>> {
    if let Some(c) = expr.downcast_ref::<Column>() {
        return Some((c.name(), None));
    }
    let cast = expr.downcast_ref::<CastExpr>()?;
    let column = cast.expr().downcast_ref::<Column>()?;
    Some((column.name(), Some(cast.cast_type())))
}

/// Whether casting `from` to `to` keeps distinct values distinct (an integer widened, a
/// string retyped), so a value pinned after the cast pins the column.
fn keeps_values_apart(from: &ArrowType, to: &ArrowType) -> bool {
    let string = |t: &ArrowType| matches!(t, ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View);
    let width = |t: &ArrowType| match t {
        ArrowType::Int8 => Some(1),
        ArrowType::Int16 => Some(2),
        ArrowType::Int32 => Some(4),
        ArrowType::Int64 => Some(8),
        _ => None,
    };
    from == to
        || (string(from) && string(to))
        || matches!((width(from), width(to)), (Some(a), Some(b)) if a <= b)
}

fn literal_value(expr: &Arc<dyn PhysicalExpr>) -> Option<ScalarValue> {
    expr.downcast_ref::<Literal>().map(|l| l.value().clone())
}

/// `value` as `target`, only if the cast loses nothing (it round-trips).
fn exact_cast(value: &ScalarValue, target: &arrow::datatypes::DataType) -> Option<ScalarValue> {
    if value.data_type() == *target {
        return Some(value.clone());
    }
    let cast = value.cast_to(target).ok()?;
    (cast.cast_to(&value.data_type()).ok()? == *value).then_some(cast)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::DataType as ArrowType;
    use datafusion::physical_expr::expressions::{col, in_list, lit};
    use datafusion::physical_plan::expressions::binary;

    fn schema(options: &str) -> TableSchema {
        let json = format!(
            r#"{{"version":3,"id":0,"fields":[{{"id":0,"name":"k","type":"BIGINT NOT NULL"}},{{"id":1,"name":"p","type":"STRING NOT NULL"}},{{"id":2,"name":"v","type":"INT"}}],"highestFieldId":2,"partitionKeys":["p"],"primaryKeys":["p","k"],"options":{{{options}}},"timeMillis":0}}"#
        );
        TableSchema::from_json(json.as_bytes(), "schema-0").unwrap()
    }

    fn eq(schema: &TableSchema, column: &str, value: ScalarValue) -> Arc<dyn PhysicalExpr> {
        let arrow = schema.arrow_schema();
        binary(col(column, &arrow).unwrap(), Operator::Eq, lit(value), &arrow).unwrap()
    }

    #[test]
    fn pins_buckets_of_equalities_and_in_lists() {
        let table = schema(r#""bucket":"2""#);
        // format.md §5.8: BIGINT keys 1 and 2 land in bucket 0, 3 in bucket 1 (of 2).
        let filter = BucketFilter::new(&table, Some(&eq(&table, "k", ScalarValue::Int64(Some(3))))).unwrap();
        assert_eq!((filter.matches(0, 2), filter.matches(1, 2)), (false, true));
        let arrow = table.arrow_schema();
        let list = in_list(
            col("k", &arrow).unwrap(),
            vec![lit(1i64), lit(2i64)],
            &false,
            &arrow,
        )
        .unwrap();
        let filter = BucketFilter::new(&table, Some(&list)).unwrap();
        assert_eq!((filter.matches(0, 2), filter.matches(1, 2)), (true, false));
        let or = binary(
            eq(&table, "k", ScalarValue::Int64(Some(1))),
            Operator::Or,
            eq(&table, "k", ScalarValue::Int64(Some(3))),
            &arrow,
        )
        .unwrap();
        let filter = BucketFilter::new(&table, Some(&or)).unwrap();
        assert_eq!((filter.matches(0, 2), filter.matches(1, 2)), (true, true));
        let mixed = binary(
            eq(&table, "k", ScalarValue::Int64(Some(1))),
            Operator::Or,
            eq(&table, "v", ScalarValue::Int32(Some(3))),
            &arrow,
        )
        .unwrap();
        assert!(BucketFilter::new(&table, Some(&mixed)).is_none());
        // A literal of another integer type is cast to the column's type first.
        let filter = BucketFilter::new(&table, Some(&eq(&table, "k", ScalarValue::Int32(Some(3))))).unwrap();
        assert_eq!((filter.matches(0, 2), filter.matches(1, 2)), (false, true));
        // Another bucket count (a rescaled partition) is hashed again.
        assert!((0..5).filter(|b| filter.matches(*b, 5)).count() == 1);
    }

    #[test]
    fn sees_through_casts_that_keep_values_apart() {
        let table = schema(r#""bucket":"2""#);
        let arrow = table.arrow_schema();
        let cast_to = |t: ArrowType| {
            datafusion::physical_expr::expressions::cast(col("k", &arrow).unwrap(), &arrow, t).unwrap()
        };
        // as a join's dynamic filter compares the key: CAST(k AS BIGINT) IN (3)
        let list = in_list(cast_to(ArrowType::Int64), vec![lit(3i64)], &false, &arrow).unwrap();
        let filter = BucketFilter::new(&table, Some(&list)).unwrap();
        assert_eq!((filter.matches(0, 2), filter.matches(1, 2)), (false, true));
        // a cast to text is not trusted to keep keys apart
        let text = in_list(cast_to(ArrowType::Utf8), vec![lit("3")], &false, &arrow).unwrap();
        assert!(BucketFilter::new(&table, Some(&text)).is_none());
        assert!(keeps_values_apart(&ArrowType::Int32, &ArrowType::Int64));
        assert!(!keeps_values_apart(&ArrowType::Int64, &ArrowType::Int32));
        assert!(!keeps_values_apart(&ArrowType::Utf8, &ArrowType::Int64));
        assert!(!keeps_values_apart(&ArrowType::Float64, &ArrowType::Int64));
        assert!(keeps_values_apart(&ArrowType::Utf8, &ArrowType::Utf8View));
    }

    #[test]
    fn other_bucket_functions_are_not_pruned_by_the_default_hash() {
        for function in ["mod", "hive"] {
            let table = schema(&format!(r#""bucket":"2","bucket-function.type":"{function}""#));
            assert!(BucketFilter::new(&table, Some(&eq(&table, "k", ScalarValue::Int64(Some(3))))).is_none());
        }
        let table = schema(r#""bucket":"2","bucket-function.type":"default""#);
        assert!(BucketFilter::new(&table, Some(&eq(&table, "k", ScalarValue::Int64(Some(3))))).is_some());
    }

    #[test]
    fn needs_every_bucket_key_column_pinned() {
        let table = schema(r#""bucket":"2""#);
        assert!(BucketFilter::new(&table, Some(&eq(&table, "v", ScalarValue::Int32(Some(3))))).is_none());
        let arrow = table.arrow_schema();
        let range = binary(col("k", &arrow).unwrap(), Operator::Lt, lit(3i64), &arrow).unwrap();
        assert!(BucketFilter::new(&table, Some(&range)).is_none());
        // A lossy literal (3.5 for a BIGINT key) disables pruning.
        let lossy = binary(
            datafusion::physical_expr::expressions::cast(
                col("k", &arrow).unwrap(),
                &arrow,
                ArrowType::Float64,
            )
            .unwrap(),
            Operator::Eq,
            lit(3.5f64),
            &arrow,
        )
        .unwrap();
        assert!(BucketFilter::new(&table, Some(&lossy)).is_none());
        assert!(exact_cast(&ScalarValue::Float64(Some(3.5)), &ArrowType::Int64).is_none());
    }

    #[test]
    fn contradicting_conjuncts_select_no_bucket() {
        let table = schema(r#""bucket":"2""#);
        let arrow = table.arrow_schema();
        let both = binary(
            eq(&table, "k", ScalarValue::Int64(Some(1))),
            Operator::And,
            eq(&table, "k", ScalarValue::Int64(Some(3))),
            &arrow,
        )
        .unwrap();
        let filter = BucketFilter::new(&table, Some(&both)).unwrap();
        assert_eq!((filter.matches(0, 2), filter.matches(1, 2)), (false, false));
    }
}
