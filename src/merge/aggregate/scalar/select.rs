//! Functions whose result is one of the group's input values: `last_value`,
//! `last_non_null_value`, `first_value`, `first_non_null_value`, `primary-key`, `max`, `min`,
//! `bool_and` (= `min` over BOOLEAN) and `bool_or` (= `max` over BOOLEAN).
//!
//! The fold tracks which input row holds each group's accumulator (`None` = NULL) and builds
//! the result with one `take`, so the value-picking functions work on any column type; `max`
//! and `min` compare with a comparator built once per call for the array's concrete type.

use std::cmp::Ordering;

use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::{DataType as ArrowType, *};
use datafusion::common::Result;

use super::super::{FieldAggregator, Groups, Step};
use super::{retract_unsupported, unexpected_array, unsupported_type};
use crate::spec::{DataType, TypeKind};

/// How the accumulator row is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The newest value, NULL included (`last_value`; also `primary-key` except on retract).
    Last,
    /// The newest non-NULL value.
    LastNonNull,
    /// The first value folded in this merge, NULL included.
    First,
    /// The first non-NULL value folded in this merge.
    FirstNonNull,
    /// Java `FieldPrimaryKeyAgg`: the input value, for adds and retracts alike.
    PrimaryKey,
    /// The larger non-NULL value (`max`, `bool_or`).
    Max,
    /// The smaller non-NULL value (`min`, `bool_and`).
    Min,
}

/// Builds the function `name` if it is one of this file's.
pub(super) fn create(
    name: &str,
    field: &str,
    data_type: &DataType,
) -> Option<Result<Box<dyn FieldAggregator>>> {
    let (name, rule): (&'static str, Rule) = match name {
        "last_value" => ("last_value", Rule::Last),
        "last_non_null_value" => ("last_non_null_value", Rule::LastNonNull),
        "first_value" => ("first_value", Rule::First),
        "first_non_null_value" => ("first_non_null_value", Rule::FirstNonNull),
        "first_not_null_value" => ("first_not_null_value", Rule::FirstNonNull),
        "primary-key" => ("primary-key", Rule::PrimaryKey),
        "max" => ("max", Rule::Max),
        "min" => ("min", Rule::Min),
        "bool_and" => ("bool_and", Rule::Min),
        "bool_or" => ("bool_or", Rule::Max),
        _ => return None,
    };
    let accepted = match name {
        // Java TypeCheckUtils.isComparable: everything but nested types, variant and blob.
        "max" | "min" => data_type
            .is_atomic()
            .then_some(())
            .ok_or("a comparable (atomic) type"),
        "bool_and" | "bool_or" => (data_type.kind == TypeKind::Boolean)
            .then_some(())
            .ok_or("type BOOLEAN"),
        _ => Ok(()),
    };
    Some(match accepted {
        Ok(()) => Ok(Box::new(SelectAgg {
            name,
            field: field.to_string(),
            rule,
        })),
        Err(expected) => Err(unsupported_type(name, field, data_type, expected)),
    })
}

#[derive(Debug)]
struct SelectAgg {
    name: &'static str,
    field: String,
    rule: Rule,
}

/// Java's `compare` of the values of one type (`InternalRowUtils.compare`).
trait JavaOrd: Copy {
    fn java_cmp(self, other: Self) -> Ordering;
}

macro_rules! java_ord_via_ord {
    ($($t:ty),*) => {$(
        impl JavaOrd for $t {
            fn java_cmp(self, other: Self) -> Ordering {
                self.cmp(&other)
            }
        }
    )*};
}
java_ord_via_ord!(i8, i16, i32, i64, i128);

macro_rules! java_ord_float {
    ($($t:ty),*) => {$(
        /// `Float.compare` / `Double.compare`: -0.0 < 0.0 and every NaN above +inf.
        impl JavaOrd for $t {
            fn java_cmp(self, other: Self) -> Ordering {
                match (self.is_nan(), other.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    (false, false) => self.total_cmp(&other),
                }
            }
        }
    )*};
}
java_ord_float!(f32, f64);

fn primitive_cmp<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> impl Fn(usize, usize) -> Ordering + '_
where
    T::Native: JavaOrd,
{
    move |i, j| a.value(i).java_cmp(a.value(j))
}

/// Runs `$body` with `$cmp` bound to a comparator of the rows of `$input`, monomorphised per
/// concrete array type; unknown types yield an error.
macro_rules! with_comparator {
    ($self:expr, $input:expr, |$cmp:ident| $body:expr) => {{
        let input: &dyn Array = $input;
        match input.data_type() {
            ArrowType::Boolean => {
                let a = input.as_boolean();
                let $cmp = |i: usize, j: usize| a.value(i).cmp(&a.value(j));
                $body
            }
            ArrowType::Utf8 => {
                let a = input.as_string::<i32>();
                let $cmp = |i: usize, j: usize| a.value(i).cmp(a.value(j));
                $body
            }
            ArrowType::LargeUtf8 => {
                let a = input.as_string::<i64>();
                let $cmp = |i: usize, j: usize| a.value(i).cmp(a.value(j));
                $body
            }
            ArrowType::Binary => {
                let a = input.as_binary::<i32>();
                let $cmp = |i: usize, j: usize| a.value(i).cmp(a.value(j));
                $body
            }
            ArrowType::LargeBinary => {
                let a = input.as_binary::<i64>();
                let $cmp = |i: usize, j: usize| a.value(i).cmp(a.value(j));
                $body
            }
            ArrowType::FixedSizeBinary(_) => {
                let a = input.as_fixed_size_binary();
                let $cmp = |i: usize, j: usize| a.value(i).cmp(a.value(j));
                $body
            }
            ArrowType::Int8 => with_comparator!(@prim input, Int8Type, $cmp, $body),
            ArrowType::Int16 => with_comparator!(@prim input, Int16Type, $cmp, $body),
            ArrowType::Int32 => with_comparator!(@prim input, Int32Type, $cmp, $body),
            ArrowType::Int64 => with_comparator!(@prim input, Int64Type, $cmp, $body),
            ArrowType::Float32 => with_comparator!(@prim input, Float32Type, $cmp, $body),
            ArrowType::Float64 => with_comparator!(@prim input, Float64Type, $cmp, $body),
            ArrowType::Decimal128(..) => with_comparator!(@prim input, Decimal128Type, $cmp, $body),
            ArrowType::Date32 => with_comparator!(@prim input, Date32Type, $cmp, $body),
            ArrowType::Date64 => with_comparator!(@prim input, Date64Type, $cmp, $body),
            ArrowType::Time32(TimeUnit::Second) => {
                with_comparator!(@prim input, Time32SecondType, $cmp, $body)
            }
            ArrowType::Time32(TimeUnit::Millisecond) => {
                with_comparator!(@prim input, Time32MillisecondType, $cmp, $body)
            }
            ArrowType::Time64(TimeUnit::Microsecond) => {
                with_comparator!(@prim input, Time64MicrosecondType, $cmp, $body)
            }
            ArrowType::Time64(TimeUnit::Nanosecond) => {
                with_comparator!(@prim input, Time64NanosecondType, $cmp, $body)
            }
            ArrowType::Timestamp(TimeUnit::Second, _) => {
                with_comparator!(@prim input, TimestampSecondType, $cmp, $body)
            }
            ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
                with_comparator!(@prim input, TimestampMillisecondType, $cmp, $body)
            }
            ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
                with_comparator!(@prim input, TimestampMicrosecondType, $cmp, $body)
            }
            ArrowType::Timestamp(TimeUnit::Nanosecond, _) => {
                with_comparator!(@prim input, TimestampNanosecondType, $cmp, $body)
            }
            other => Err(unexpected_array($self.name, &$self.field, other)),
        }
    }};
    (@prim $input:ident, $t:ty, $cmp:ident, $body:expr) => {{
        let $cmp = primitive_cmp($input.as_primitive::<$t>());
        $body
    }};
}

impl FieldAggregator for SelectAgg {
    fn name(&self) -> &'static str {
        self.name
    }

    fn supports_retract(&self) -> bool {
        matches!(self.rule, Rule::Last | Rule::LastNonNull | Rule::PrimaryKey)
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let sources = match self.rule {
            Rule::Max | Rule::Min => {
                with_comparator!(self, input.as_ref(), |cmp| self.select(input, groups, cmp))?
            }
            _ => self.select(input, groups, |_, _| Ordering::Equal)?,
        };
        Ok(take(input.as_ref(), &sources, None)?)
    }
}

impl SelectAgg {
    /// The source row of every group's result (NULL = no row).
    fn select<C>(&self, input: &ArrayRef, groups: Groups<'_>, cmp: C) -> Result<UInt32Array>
    where
        C: Fn(usize, usize) -> Ordering,
    {
        let nulls = input.logical_nulls();
        let value = |row: usize| nulls.as_ref().is_none_or(|n| n.is_valid(row)).then_some(row);
        let mut sources: Vec<Option<u32>> = Vec::with_capacity(groups.len());
        for g in 0..groups.len() {
            // the row holding the accumulator, only when its value is not NULL
            let mut acc: Option<usize> = None;
            // Java's `initialized` of first_value / first_non_null_value, fresh per group
            let mut initialized = false;
            for (row, step) in groups.members(g) {
                let v = value(row);
                acc = match step {
                    Step::Add => self.agg(&mut initialized, acc, v, &cmp),
                    Step::AddReversed => self.agg(&mut initialized, v, acc, &cmp),
                    Step::Retract => match self.rule {
                        Rule::Last => None,
                        Rule::LastNonNull => acc.filter(|_| v.is_none()),
                        Rule::PrimaryKey => v,
                        _ => return Err(retract_unsupported(self.name, &self.field)),
                    },
                    Step::Reset => v,
                    Step::SetNull => None,
                    Step::Skip => acc,
                };
            }
            sources.push(acc.map(|r| r as u32));
        }
        Ok(UInt32Array::from(sources))
    }

    /// Java `agg(accumulator, input)`; `AddReversed` calls it with the arguments swapped.
    fn agg<C>(&self, initialized: &mut bool, acc: Option<usize>, v: Option<usize>, cmp: &C) -> Option<usize>
    where
        C: Fn(usize, usize) -> Ordering,
    {
        match self.rule {
            Rule::Last | Rule::PrimaryKey => v,
            Rule::LastNonNull => v.or(acc),
            Rule::First if !*initialized => {
                *initialized = true;
                v
            }
            Rule::FirstNonNull if !*initialized && v.is_some() => {
                *initialized = true;
                v
            }
            Rule::First | Rule::FirstNonNull => acc,
            Rule::Max | Rule::Min => match (acc, v) {
                (Some(a), Some(b)) => {
                    // Java: max keeps acc unless acc < in; min keeps acc only if acc < in
                    let acc_less = cmp(a, b) == Ordering::Less;
                    Some(if acc_less == (self.rule == Rule::Max) {
                        b
                    } else {
                        a
                    })
                }
                _ => acc.or(v),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::*;
    use arrow::datatypes::*;

    use super::super::test_util::{agg, create_error, fold, fold_ordered};
    use crate::merge::aggregate::Step::{self, *};

    fn strings(function: &str, values: Vec<Option<&str>>, groups: &[&[Step]]) -> Vec<Option<String>> {
        let out = fold(
            agg(function, "STRING").as_ref(),
            Arc::new(StringArray::from(values)),
            groups,
        )
        .unwrap();
        out.as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    fn ints(function: &str, values: Vec<Option<i32>>, groups: &[&[Step]]) -> Vec<Option<i32>> {
        let out = fold(
            agg(function, "INT").as_ref(),
            Arc::new(Int32Array::from(values)),
            groups,
        )
        .unwrap();
        out.as_primitive::<Int32Type>().iter().collect()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn accepted_types() {
        for t in [
            "INT",
            "STRING",
            "ARRAY<INT>",
            "MAP<INT, STRING>",
            "VARIANT",
            "ROW<a INT>",
        ] {
            for f in [
                "last_value",
                "last_non_null_value",
                "first_value",
                "first_non_null_value",
                "primary-key",
            ] {
                agg(f, t);
            }
        }
        let comparable = [
            "BOOLEAN",
            "TINYINT",
            "SMALLINT",
            "INT",
            "BIGINT",
            "FLOAT",
            "DOUBLE",
            "DECIMAL(38, 4)",
            "CHAR(3)",
            "VARCHAR(5)",
            "STRING",
            "BINARY(2)",
            "BYTES",
            "DATE",
            "TIME(3)",
            "TIMESTAMP(0)",
            "TIMESTAMP(3)",
            "TIMESTAMP(6)",
            "TIMESTAMP(9)",
            "TIMESTAMP_LTZ(6)",
        ];
        for t in comparable {
            agg("max", t);
            agg("min", t);
        }
        for t in [
            "ARRAY<INT>",
            "MAP<INT, INT>",
            "ROW<a INT>",
            "VARIANT",
            "MULTISET<INT>",
        ] {
            assert!(create_error("max", t).contains("comparable"), "{t}");
            assert!(create_error("min", t).contains("comparable"), "{t}");
        }
        agg("bool_and", "BOOLEAN NOT NULL");
        for t in ["INT", "STRING", "TINYINT"] {
            assert!(create_error("bool_and", t).contains("BOOLEAN"));
            assert!(create_error("bool_or", t).contains("'bool_or' of field 'f'"));
        }
    }

    #[test]
    fn last_value_and_last_non_null_value() {
        let values = vec![
            Some("a"),
            None,
            Some("b"),
            None,
            Some("c"),
            Some("d"),
            Some("e"),
            None,
        ];
        let groups: &[&[Step]] = &[&[Add, Add], &[Add, Add], &[Add, Retract], &[AddReversed, Retract]];
        assert_eq!(
            strings("last_value", values.clone(), groups),
            vec![None, None, None, None]
        );
        assert_eq!(
            strings("last_non_null_value", values, groups),
            vec![s("a"), s("b"), None, s("e")]
        );
        // AddReversed keeps the accumulator (last_value) / fills only a NULL one (last_non_null)
        let values = vec![Some("new"), Some("old"), None, Some("old"), Some("new"), None];
        let groups: &[&[Step]] = &[&[Add, AddReversed], &[Add, AddReversed], &[Add, AddReversed]];
        assert_eq!(
            strings("last_value", values.clone(), groups),
            vec![s("new"), None, s("new")]
        );
        assert_eq!(
            strings("last_non_null_value", values, groups),
            vec![s("new"), s("old"), s("new")]
        );
    }

    #[test]
    fn first_value_freezes_after_first_record() {
        let values = vec![
            None,
            Some("b"),
            Some("a"),
            Some("b"),
            Some("x"),
            Some("y"),
            Some("z"),
        ];
        let groups: &[&[Step]] = &[&[Add, Add], &[Add, Add], &[Add, AddReversed, AddReversed]];
        // reversed after the first add: agg(in, acc) with initialized = true takes the incoming
        assert_eq!(strings("first_value", values, groups), vec![None, s("a"), s("z")]);
        // a reversed first step initialises with the accumulator (Java agg(in, acc))
        let values = vec![Some("old"), Some("new")];
        assert_eq!(strings("first_value", values, &[&[AddReversed, Add]]), vec![None]);
        // Reset / SetNull replace the accumulator but keep the state
        // (a Reset before any add leaves the function uninitialised: the next add still counts)
        let values = vec![Some("a"), Some("d"), Some("b"), Some("c"), Some("d")];
        let values = [values, vec![Some("e"), Some("f"), Some("g"), Some("h")]].concat();
        let groups: &[&[Step]] = &[&[Add, Reset, Add], &[Reset, Add], &[Add, SetNull, Add, Skip]];
        assert_eq!(strings("first_value", values, groups), vec![s("d"), s("d"), None]);
    }

    #[test]
    fn first_non_null_value() {
        let values = vec![None, Some("b"), Some("c"), Some("d"), None, None];
        let groups: &[&[Step]] = &[&[Add, Add, Add], &[Add], &[Add, Add]];
        assert_eq!(
            strings("first_non_null_value", values.clone(), groups),
            vec![s("b"), s("d"), None]
        );
        assert_eq!(
            strings("first_not_null_value", values, groups),
            vec![s("b"), s("d"), None]
        );
        // Java aggReversed = agg(in, acc): once initialised the older incoming value wins, NULL too
        // and a reversed value into an uninitialised NULL accumulator does not initialise
        let values = vec![
            Some("new"),
            Some("old"),
            Some("new"),
            None,
            Some("old"),
            Some("x"),
        ];
        let groups: &[&[Step]] = &[&[Add, AddReversed], &[Add, AddReversed], &[AddReversed, Add]];
        assert_eq!(
            strings("first_non_null_value", values, groups),
            vec![s("old"), None, s("x")]
        );
        let values = vec![Some("a"), Some("b"), Some("c")];
        assert_eq!(
            strings("first_non_null_value", values, &[&[SetNull, Add, Add]]),
            vec![s("b")]
        );
    }

    #[test]
    fn primary_key_takes_input_even_on_retract() {
        let values = vec![Some(1), Some(2), Some(3), None, Some(5), Some(6)];
        let groups: &[&[Step]] = &[&[Add, Retract], &[Add, Add], &[Add, AddReversed]];
        assert_eq!(ints("primary-key", values, groups), vec![Some(2), None, Some(5)]);
    }

    #[test]
    fn max_min_ints_with_nulls_and_groups() {
        let values = vec![Some(3), None, Some(9), Some(-1), None, None, Some(4), Some(2)];
        let groups: &[&[Step]] = &[&[Add, Add, Add], &[Add], &[Add], &[Add, AddReversed, Skip]];
        assert_eq!(
            ints("max", values.clone(), groups),
            vec![Some(9), Some(-1), None, Some(4)]
        );
        assert_eq!(
            ints("min", values, groups),
            vec![Some(3), Some(-1), None, Some(4)]
        );
        let values = vec![Some(3), Some(9), Some(1), Some(7), Some(8), Some(0)];
        let groups: &[&[Step]] = &[&[Add, Reset, Add], &[Add, SetNull, Add]];
        assert_eq!(ints("max", values.clone(), groups), vec![Some(9), Some(0)]);
        assert_eq!(ints("min", values, groups), vec![Some(1), Some(0)]);
        let err = fold(
            agg("min", "INT").as_ref(),
            Arc::new(Int32Array::from(vec![1])),
            &[&[Retract]],
        );
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("'min' of field 'f' does not support retraction"));
    }

    #[test]
    fn max_min_member_order() {
        let input: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), Some(1), Some(7), Some(3)]));
        let out = fold_ordered(
            agg("max", "BIGINT").as_ref(),
            input.clone(),
            &[3, 1, 0, 2],
            &[&[Add, Add], &[Add, Add]],
        )
        .unwrap();
        assert_eq!(out.as_primitive::<Int64Type>().values().to_vec(), vec![3, 7]);
        let out = fold_ordered(
            agg("min", "BIGINT").as_ref(),
            input,
            &[2, 0, 1, 3],
            &[&[Add, Add, Add], &[Add]],
        )
        .unwrap();
        assert_eq!(out.as_primitive::<Int64Type>().values().to_vec(), vec![1, 3]);
    }

    fn max_min(t: &str, input: ArrayRef) -> (ArrayRef, ArrayRef) {
        let steps = vec![Add; input.len()];
        let groups: &[&[Step]] = &[&steps];
        let max = fold(agg("max", t).as_ref(), input.clone(), groups).unwrap();
        let min = fold(agg("min", t).as_ref(), input, groups).unwrap();
        (max, min)
    }

    #[test]
    fn max_min_other_types() {
        let (max, min) = max_min(
            "DOUBLE",
            Arc::new(Float64Array::from(vec![0.0, f64::NAN, -0.0, 1.0])),
        );
        assert!(max.as_primitive::<Float64Type>().value(0).is_nan());
        let m = min.as_primitive::<Float64Type>().value(0);
        assert!(m == 0.0 && m.is_sign_negative());
        let (max, min) = max_min(
            "FLOAT",
            Arc::new(Float32Array::from(vec![Some(2.5), None, Some(-3.0)])),
        );
        assert_eq!(max.as_primitive::<Float32Type>().value(0), 2.5);
        assert_eq!(min.as_primitive::<Float32Type>().value(0), -3.0);
        let dec = Decimal128Array::from(vec![Some(12345), Some(-99999), None, Some(200)])
            .with_precision_and_scale(10, 2)
            .unwrap();
        let (max, min) = max_min("DECIMAL(10, 2)", Arc::new(dec));
        assert_eq!(max.as_primitive::<Decimal128Type>().value(0), 12345);
        assert_eq!(min.as_primitive::<Decimal128Type>().value(0), -99999);
        assert_eq!(max.data_type(), &DataType::Decimal128(10, 2));
        // strings and binary compare by unsigned bytes
        let (max, min) = max_min("STRING", Arc::new(StringArray::from(vec!["b", "é", "ab", "B"])));
        assert_eq!(max.as_string::<i32>().value(0), "é");
        assert_eq!(min.as_string::<i32>().value(0), "B");
        let bin: Vec<&[u8]> = vec![&[0x7f], &[0x80], &[0x00, 0xff]];
        let (max, min) = max_min("BYTES", Arc::new(BinaryArray::from(bin)));
        assert_eq!(max.as_binary::<i32>().value(0), &[0x80]);
        assert_eq!(min.as_binary::<i32>().value(0), &[0x00, 0xff]);
        let (max, min) = max_min(
            "BOOLEAN",
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        );
        assert!(max.as_boolean().value(0) && !min.as_boolean().value(0));
        let (max, min) = max_min("DATE", Arc::new(Date32Array::from(vec![19000, -5, 20000])));
        assert_eq!(max.as_primitive::<Date32Type>().value(0), 20000);
        assert_eq!(min.as_primitive::<Date32Type>().value(0), -5);
        let (max, _) = max_min(
            "TIME(3)",
            Arc::new(Time32MillisecondArray::from(vec![1000, 86_399_000, 5])),
        );
        assert_eq!(max.as_primitive::<Time32MillisecondType>().value(0), 86_399_000);
        let ts = TimestampMicrosecondArray::from(vec![Some(-10), None, Some(30)]).with_timezone("UTC");
        let (max, min) = max_min("TIMESTAMP_LTZ(6)", Arc::new(ts));
        assert_eq!(max.as_primitive::<TimestampMicrosecondType>().value(0), 30);
        assert_eq!(min.as_primitive::<TimestampMicrosecondType>().value(0), -10);
        assert_eq!(
            max.data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        let (max, _) = max_min(
            "TIMESTAMP(9)",
            Arc::new(TimestampNanosecondArray::from(vec![7, 3])),
        );
        assert_eq!(max.as_primitive::<TimestampNanosecondType>().value(0), 7);
    }

    #[test]
    fn bool_and_bool_or() {
        let input: ArrayRef = Arc::new(BooleanArray::from(vec![
            Some(true),
            Some(false),
            Some(true),
            None,
            None,
            None,
            Some(true),
            Some(true),
            Some(false),
            Some(true),
        ]));
        let groups: &[&[Step]] = &[
            &[Add, Add, Add],
            &[Add, Add],
            &[Add],
            &[Add, Add],
            &[AddReversed, AddReversed],
        ];
        let and = fold(agg("bool_and", "BOOLEAN").as_ref(), input.clone(), groups).unwrap();
        let or = fold(agg("bool_or", "BOOLEAN").as_ref(), input.clone(), groups).unwrap();
        let got = |a: ArrayRef| a.as_boolean().iter().collect::<Vec<_>>();
        assert_eq!(got(and), vec![Some(false), None, None, Some(true), Some(false)]);
        assert_eq!(got(or), vec![Some(true), None, None, Some(true), Some(true)]);
        let err = fold(
            agg("bool_or", "BOOLEAN").as_ref(),
            input,
            &[&[Add; 9], &[Retract]],
        )
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("'bool_or' of field 'f' does not support retraction"));
    }

    #[test]
    fn any_type_for_value_functions() {
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            None,
            Some(vec![Some(2), None]),
        ]));
        let out = fold(
            agg("last_non_null_value", "ARRAY<INT>").as_ref(),
            list.clone(),
            &[&[Add, Add, Add]],
        )
        .unwrap();
        assert_eq!(out.as_list::<i32>().value(0).as_primitive::<Int32Type>().len(), 2);
        let out = fold(
            agg("first_value", "ARRAY<INT>").as_ref(),
            list,
            &[&[Add], &[Add, Add]],
        )
        .unwrap();
        assert!(out.is_valid(0) && out.is_null(1));
    }
}
