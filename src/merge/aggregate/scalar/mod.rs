//! Aggregators: sum, product, max, min, last_value, last_non_null_value, first_value,
//! first_non_null_value (first_not_null_value), listagg, bool_and, bool_or, primary-key
//! (semantics.md §2.4; Java `Field*Agg` of `org.apache.paimon.mergetree.compact.aggregate`).
//!
//! * [`select`]: functions whose result is one of the group's input values (the `*_value`
//!   functions, `primary-key`, `max`/`min`, `bool_and`/`bool_or`): the fold tracks which row
//!   holds the accumulator and the column is built with one `take`.
//! * [`arith`]: `sum` and `product` over the numeric types, with Java's overflow errors.
//! * [`listagg`]: string concatenation.
//!
//! `Step::AddReversed` is Java's default `aggReversed(acc, in) = agg(in, acc)`, stateful
//! functions included; `Reset` and `SetNull` replace the accumulator without touching the
//! per-group state (Java's remove-record-on-delete re-initialises the row, not the aggregators).

mod arith;
mod listagg;
mod select;

use datafusion::common::{DataFusionError, Result};

use super::{FieldAggOptions, FieldAggregator};
use crate::spec::DataType;

/// The aggregator `function` if it is one of this module's, else `None`.
pub(super) fn create(
    function: &str,
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Option<Result<Box<dyn FieldAggregator>>> {
    match function {
        "sum" | "product" => Some(arith::create(function, field, data_type)),
        "listagg" => Some(listagg::create(field, data_type, options)),
        _ => select::create(function, field, data_type),
    }
}

/// The error of a function that cannot fold `Step::Retract` (Java `FieldAggregator.retract`).
fn retract_unsupported(function: &str, field: &str) -> DataFusionError {
    DataFusionError::Execution(format!(
        "Aggregate function '{function}' of field '{field}' does not support retraction; \
         set 'fields.{field}.ignore-retract' = 'true' to ignore retract messages"
    ))
}

/// The error of a function declared on a column type it does not accept.
fn unsupported_type(function: &str, field: &str, data_type: &DataType, expected: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "Aggregate function '{function}' of field '{field}' needs {expected} but the field is {data_type}"
    ))
}

/// The error of an input array whose arrow type does not match the declared column type.
fn unexpected_array(function: &str, field: &str, arrow_type: &arrow::datatypes::DataType) -> DataFusionError {
    DataFusionError::Internal(format!(
        "Aggregate function '{function}' of field '{field}' got an array of unexpected type {arrow_type}"
    ))
}

#[cfg(test)]
mod test_util {
    use arrow::array::ArrayRef;
    use datafusion::common::Result;

    use super::super::{create_aggregator, FieldAggOptions, FieldAggregator, Groups, Step};
    use crate::spec::types::parse_type_string;
    use crate::spec::{DataField, DataType, TypeKind};

    /// Parses a type in Paimon SQL syntax: atomic types, `ARRAY<t>`, `MULTISET<t>`,
    /// `MAP<k, v>` and `ROW<name t>` (one field).
    pub(crate) fn parse_type(t: &str) -> DataType {
        let t = t.trim();
        let Some((head, rest)) = t.split_once('<') else {
            return parse_type_string(t).expect("type");
        };
        let inner = rest.strip_suffix('>').expect("closing >");
        let kind = match head {
            "ARRAY" => TypeKind::Array(Box::new(parse_type(inner))),
            "MULTISET" => TypeKind::Multiset(Box::new(parse_type(inner))),
            "MAP" => {
                let (k, v) = inner.split_once(", ").expect("MAP<k, v>");
                TypeKind::Map(Box::new(parse_type(k)), Box::new(parse_type(v)))
            }
            "ROW" => {
                let (name, t) = inner.split_once(' ').expect("ROW<name t>");
                TypeKind::Row(vec![DataField {
                    id: 0,
                    name: name.to_string(),
                    data_type: parse_type(t),
                    description: None,
                }])
            }
            _ => panic!("type {t}"),
        };
        DataType { kind, nullable: true }
    }

    /// Builds `function` for a field `f` of type `type_string` (Paimon syntax).
    pub(crate) fn agg(function: &str, type_string: &str) -> Box<dyn FieldAggregator> {
        agg_with(function, type_string, &FieldAggOptions::default())
    }

    pub(crate) fn agg_with(
        function: &str,
        type_string: &str,
        options: &FieldAggOptions,
    ) -> Box<dyn FieldAggregator> {
        create_aggregator(function, "f", &parse_type(type_string), options).expect("aggregator")
    }

    /// The error message of creating `function` on `type_string`.
    pub(crate) fn create_error(function: &str, type_string: &str) -> String {
        match create_aggregator(
            function,
            "f",
            &parse_type(type_string),
            &FieldAggOptions::default(),
        ) {
            Ok(a) => panic!("{function} accepted {type_string}: {a:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// Folds `input` whose rows form consecutive groups with the given steps (group `g` has
    /// `groups[g].len()` rows, in input order).
    pub(crate) fn fold(agg: &dyn FieldAggregator, input: ArrayRef, groups: &[&[Step]]) -> Result<ArrayRef> {
        let order: Vec<u32> = (0..input.len() as u32).collect();
        fold_ordered(agg, input, &order, groups)
    }

    /// Like [`fold`] with the group members taken from `input` rows `order`.
    pub(crate) fn fold_ordered(
        agg: &dyn FieldAggregator,
        input: ArrayRef,
        order: &[u32],
        groups: &[&[Step]],
    ) -> Result<ArrayRef> {
        let mut offsets = vec![0];
        let mut steps = vec![];
        for g in groups {
            steps.extend_from_slice(g);
            offsets.push(steps.len());
        }
        assert_eq!(steps.len(), order.len(), "one step per member");
        let out = agg.fold(
            &input,
            Groups {
                order,
                offsets: &offsets,
                steps: &steps,
            },
        )?;
        assert_eq!(out.len(), groups.len());
        assert_eq!(out.data_type(), input.data_type());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, AsArray, BooleanArray, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::{Int32Type, Int64Type};

    use super::super::{FieldAggOptions, Step};
    use super::test_util::{agg, agg_with, create_error, fold};

    #[test]
    fn unknown_functions_are_not_ours() {
        let t = crate::spec::types::parse_type_string("INT").unwrap();
        for name in ["collect", "merge_map", "rbm32", "count", "nope"] {
            assert!(
                super::create(name, "f", &t, &FieldAggOptions::default()).is_none(),
                "{name}"
            );
        }
    }

    #[test]
    fn names_and_retract_support() {
        let cases = [
            ("sum", "INT", true),
            ("product", "DOUBLE", true),
            ("max", "INT", false),
            ("min", "STRING", false),
            ("last_value", "INT", true),
            ("last_non_null_value", "INT", true),
            ("first_value", "INT", false),
            ("first_non_null_value", "INT", false),
            ("first_not_null_value", "INT", false),
            ("listagg", "STRING", false),
            ("bool_and", "BOOLEAN", false),
            ("bool_or", "BOOLEAN", false),
            ("primary-key", "INT", true),
        ];
        for (name, t, retract) in cases {
            let a = agg(name, t);
            assert_eq!(a.name(), name);
            assert_eq!(a.supports_retract(), retract, "{name}");
        }
    }

    /// Reset takes the value as is, SetNull clears, Skip keeps: the same for every function.
    #[test]
    fn reset_set_null_skip_for_every_function() {
        use Step::*;
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5, 6, 7, 8, 9]));
        let longs: ArrayRef = Arc::new(Int64Array::from(vec![3, 2, 1, 4, 5, 6, 7, 8, 9]));
        let strings: ArrayRef = Arc::new(StringArray::from(vec![
            "a", " ", "c", "d", "e", "f", "g", "h", "i",
        ]));
        let booleans: ArrayRef = Arc::new(BooleanArray::from(vec![
            true, false, true, true, false, true, false, true, true,
        ]));
        let cases = [
            ("sum", "BIGINT", &longs),
            ("product", "BIGINT", &longs),
            ("max", "INT", &ints),
            ("min", "BIGINT", &longs),
            ("last_value", "STRING", &strings),
            ("last_non_null_value", "INT", &ints),
            ("first_value", "STRING", &strings),
            ("first_non_null_value", "INT", &ints),
            ("listagg", "STRING", &strings),
            ("bool_and", "BOOLEAN", &booleans),
            ("bool_or", "BOOLEAN", &booleans),
            ("primary-key", "INT", &ints),
        ];
        let groups: &[&[Step]] = &[
            &[Add, Reset],
            &[Add, SetNull],
            &[Add, Skip],
            &[Reset],
            &[Skip, SetNull],
        ];
        let expected_rows = arrow::array::UInt32Array::from(vec![Some(1), None, Some(4), Some(6), None]);
        for (name, t, input) in cases {
            let out = fold(agg(name, t).as_ref(), (*input).clone(), groups).unwrap();
            let expected = arrow::compute::take(input.as_ref(), &expected_rows, None).unwrap();
            assert_eq!(out.to_data(), expected.to_data(), "{name}");
        }
    }

    #[test]
    fn retract_error_names_field_and_option() {
        let a = agg("max", "INT");
        let input: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        let err = fold(a.as_ref(), input, &[&[Step::Add, Step::Retract]]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("'max' of field 'f' does not support retraction"),
            "{msg}"
        );
        assert!(msg.contains("'fields.f.ignore-retract' = 'true'"), "{msg}");
    }

    #[test]
    fn type_errors_name_field_and_function() {
        let msg = create_error("sum", "STRING");
        assert!(
            msg.contains("'sum' of field 'f'") && msg.contains("STRING"),
            "{msg}"
        );
    }

    /// semantics.md §2.4 / pypaimon_checks.py M21: r1, r2, r3 merged in one key.
    #[test]
    fn m21_aggregation_functions() {
        use Step::Add;
        let steps: &[&[Step]] = &[&[Add, Add, Add]];
        let long = |v: [Option<i64>; 3]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
        let string = |v: [Option<&str>; 3]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
        let boolean = |v: [Option<bool>; 3]| -> ArrayRef { Arc::new(BooleanArray::from(v.to_vec())) };
        let run = |name: &str, t: &str, input: ArrayRef| fold(agg(name, t).as_ref(), input, steps).unwrap();
        let str_of = |a: ArrayRef| a.as_string::<i32>().iter().next().unwrap().map(str::to_string);

        let s = run("sum", "BIGINT", long([None, Some(5), Some(7)]));
        assert_eq!(s.as_primitive::<Int64Type>().value(0), 12);
        let mx = run(
            "max",
            "INT",
            Arc::new(Int32Array::from(vec![Some(3), None, Some(9)])),
        );
        assert_eq!(mx.as_primitive::<Int32Type>().value(0), 9);
        let lv = run("last_value", "STRING", string([Some("x"), None, Some("z")]));
        assert_eq!(str_of(lv), Some("z".into()));
        let lnn = run(
            "last_non_null_value",
            "STRING",
            string([Some("x"), None, Some("z")]),
        );
        assert_eq!(str_of(lnn), Some("z".into()));
        let fv = run("first_value", "STRING", string([None, Some("f2"), Some("f3")]));
        assert_eq!(str_of(fv), None);
        let fnn = run(
            "first_non_null_value",
            "STRING",
            string([None, Some("g2"), Some("g3")]),
        );
        assert_eq!(str_of(fnn), Some("g2".into()));
        let options = FieldAggOptions {
            list_agg_delimiter: Some("|".into()),
            ..Default::default()
        };
        let la = fold(
            agg_with("listagg", "STRING", &options).as_ref(),
            string([Some("a"), None, Some("c")]),
            steps,
        )
        .unwrap();
        assert_eq!(str_of(la), Some("a|c".into()));
        let bo = run("bool_or", "BOOLEAN", boolean([Some(false), None, Some(true)]));
        assert!(bo.as_boolean().value(0));
        let ba = run("bool_and", "BOOLEAN", boolean([Some(true), Some(false), None]));
        assert!(!ba.as_boolean().value(0));
        let pr = run("product", "BIGINT", long([Some(2), None, Some(5)]));
        assert_eq!(pr.as_primitive::<Int64Type>().value(0), 10);
        let dflt = run(
            "last_non_null_value",
            "STRING",
            string([Some("d1"), None, Some("d3")]),
        );
        assert_eq!(str_of(dflt), Some("d3".into()));
    }
}
