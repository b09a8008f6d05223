//! `collect` (Java `FieldCollectAgg`): concatenates ARRAY values, optionally without duplicates.

use std::collections::{HashMap, HashSet};

use arrow::array::{Array, ArrayRef};
use arrow::row::Rows;
use datafusion::common::Result;

use super::{as_list, build_list, check_comparable, encode_rows, fold_groups, raw_elements, type_error, Acc};
use crate::merge::aggregate::{FieldAggOptions, FieldAggregator, Groups, Step};
use crate::spec::{DataType, TypeKind};

const NAME: &str = "collect";

pub(super) fn create(
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Result<Box<dyn FieldAggregator>> {
    let TypeKind::Array(element) = &data_type.kind else {
        return Err(type_error(NAME, field, "an ARRAY type", data_type));
    };
    // Elements are compared for `distinct` and for retraction.
    check_comparable(NAME, field, "elements", &element.to_arrow())?;
    Ok(Box::new(Collect {
        field: field.to_string(),
        distinct: options.distinct,
        dedup_acc: !uses_equaliser(element),
    }))
}

/// Whether Java compares elements of this type with its generated equaliser (constructed and
/// binary types) rather than a `HashSet`. With the equaliser Java does not de-duplicate the
/// accumulator again (it assumes it already is), with the `HashSet` it does.
fn uses_equaliser(element: &DataType) -> bool {
    matches!(
        element.kind,
        TypeKind::Array(_)
            | TypeKind::Multiset(_)
            | TypeKind::Map(..)
            | TypeKind::Row(_)
            | TypeKind::Binary(_)
            | TypeKind::VarBinary(_)
    )
}

#[derive(Debug)]
struct Collect {
    field: String,
    distinct: bool,
    /// `distinct` also removes duplicates already in the accumulator.
    dedup_acc: bool,
}

impl Collect {
    /// Java `agg` (also used for `aggReversed`, which Java does not reverse for collect).
    fn agg(&self, rows: Option<&Rows>, acc: Acc<u32>, input: Acc<u32>) -> Acc<u32> {
        if acc.is_none() && input.is_none() {
            return None;
        }
        let Some(rows) = rows.filter(|_| self.distinct) else {
            return match (acc, input) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
        };
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for e in acc.into_iter().flatten() {
            if seen.insert(rows.row(e as usize)) || !self.dedup_acc {
                out.push(e);
            }
        }
        for e in input.into_iter().flatten() {
            if seen.insert(rows.row(e as usize)) {
                out.push(e);
            }
        }
        Some(out)
    }

    /// Java `retract`: removes one accumulated occurrence per retracted element.
    fn retract(rows: &Rows, acc: Acc<u32>, input: Acc<u32>) -> Acc<u32> {
        let acc = acc?;
        let input = match input {
            Some(i) if !i.is_empty() => i,
            _ => return Some(acc),
        };
        let mut pending: HashMap<_, usize> = HashMap::new();
        for e in input {
            *pending.entry(rows.row(e as usize)).or_default() += 1;
        }
        let kept = acc
            .into_iter()
            .filter(|&e| match pending.get_mut(&rows.row(e as usize)) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .collect();
        Some(kept)
    }
}

impl FieldAggregator for Collect {
    fn name(&self) -> &'static str {
        NAME
    }

    fn supports_retract(&self) -> bool {
        true
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let list = as_list(input, NAME, &self.field)?;
        let offsets = list.value_offsets();
        let nulls = list.nulls();
        let rows = if self.distinct || groups.steps.contains(&Step::Retract) {
            Some(encode_rows(&[list.values().clone()])?)
        } else {
            None
        };
        let results = fold_groups(
            groups,
            |row| raw_elements(nulls, offsets, row),
            |step, acc, row| {
                let value = raw_elements(nulls, offsets, row);
                Ok(match (step, &rows) {
                    (Step::Retract, Some(rows)) => Self::retract(rows, acc, value),
                    _ => self.agg(rows.as_ref(), acc, value),
                })
            },
        )?;
        build_list(list, &results)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        Array, ArrayRef, AsArray, BinaryBuilder, Int32Array, Int32Builder, ListArray, ListBuilder,
        StringBuilder,
    };
    use arrow::datatypes::Int32Type;

    use super::super::test_util::{adds, agg, array_of, atomic, create_err, fold};
    use crate::merge::aggregate::{FieldAggOptions, Step};

    fn int_lists(values: &[Option<Vec<Option<i32>>>]) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            values.iter().cloned(),
        ))
    }

    fn ints(a: &ArrayRef) -> Vec<Option<Vec<Option<i32>>>> {
        let list = a.as_list::<i32>();
        (0..list.len())
            .map(|i| {
                list.is_valid(i).then(|| {
                    let v = list.value(i);
                    v.as_any().downcast_ref::<Int32Array>().unwrap().iter().collect()
                })
            })
            .collect()
    }

    fn options(distinct: bool) -> FieldAggOptions {
        FieldAggOptions {
            distinct,
            ..Default::default()
        }
    }

    #[test]
    fn type_checked() {
        let err = create_err("collect", &atomic("INT"), &options(false));
        assert!(
            err.contains("'collect'") && err.contains("'f'") && err.contains("ARRAY"),
            "{err}"
        );
        assert!(super::super::create("sum", "f", &atomic("INT"), &options(false)).is_none());
    }

    #[test]
    fn concatenates_with_nulls_and_groups() {
        let a = agg("collect", &array_of(atomic("INT")), &options(false));
        assert!(a.supports_retract());
        let input = int_lists(&[
            Some(vec![Some(1), Some(2)]),
            None,
            Some(vec![Some(2), None]),
            Some(vec![]),
            None,
        ]);
        let out = fold(
            &*a,
            &input,
            &[&adds(&[0, 1, 2]), &adds(&[1, 4]), &adds(&[3, 1]), &[]],
        )
        .unwrap();
        assert_eq!(
            ints(&out),
            vec![
                Some(vec![Some(1), Some(2), Some(2), None]),
                None,
                Some(vec![]),
                None
            ]
        );
    }

    #[test]
    fn distinct_removes_duplicates() {
        let a = agg("collect", &array_of(atomic("INT")), &options(true));
        let input = int_lists(&[
            Some(vec![Some(1), Some(1), Some(2)]),
            Some(vec![Some(2), Some(3), None, None]),
            None,
        ]);
        let out = fold(&*a, &input, &[&adds(&[0, 1]), &adds(&[0]), &adds(&[2])]).unwrap();
        assert_eq!(
            ints(&out),
            vec![
                Some(vec![Some(1), Some(2), Some(3), None]),
                Some(vec![Some(1), Some(2)]),
                None
            ]
        );
        // A reset accumulator holding duplicates is de-duplicated by the next add (HashSet path).
        let out = fold(&*a, &input, &[&[(0, Step::Reset), (2, Step::Add)]]).unwrap();
        assert_eq!(ints(&out), vec![Some(vec![Some(1), Some(2)])]);
    }

    #[test]
    fn distinct_binary_keeps_accumulator_as_is() {
        let mut b = ListBuilder::new(BinaryBuilder::new());
        b.values().append_value(b"x");
        b.values().append_value(b"x");
        b.append(true);
        b.values().append_value(b"x");
        b.values().append_value(b"y");
        b.values().append_value(b"y");
        b.append(true);
        let input: ArrayRef = Arc::new(b.finish());
        let a = agg("collect", &array_of(atomic("BYTES")), &options(true));
        // First add: the input is de-duplicated; a reset accumulator is not (equaliser path).
        let out = fold(
            &*a,
            &input,
            &[&adds(&[0, 1]), &[(0, Step::Reset), (1, Step::Add)]],
        )
        .unwrap();
        let list = out.as_list::<i32>();
        let values = |i: usize| -> Vec<Vec<u8>> {
            list.value(i)
                .as_binary::<i32>()
                .iter()
                .map(|v| v.unwrap().to_vec())
                .collect()
        };
        assert_eq!(values(0), vec![b"x".to_vec(), b"y".to_vec()]);
        assert_eq!(values(1), vec![b"x".to_vec(), b"x".to_vec(), b"y".to_vec()]);
    }

    #[test]
    fn retract_removes_one_occurrence() {
        let a = agg("collect", &array_of(atomic("INT")), &options(false));
        let input = int_lists(&[
            Some(vec![Some(1), Some(2), Some(1), None, Some(3)]),
            Some(vec![Some(1), None, Some(9)]),
            None,
            Some(vec![]),
        ]);
        let out = fold(
            &*a,
            &input,
            &[
                &[(0, Step::Add), (1, Step::Retract)],
                &[(1, Step::Retract)],
                &[(0, Step::Add), (2, Step::Retract), (3, Step::Retract)],
                &[(0, Step::Add), (0, Step::Retract)],
            ],
        )
        .unwrap();
        assert_eq!(
            ints(&out),
            vec![
                Some(vec![Some(2), Some(1), Some(3)]),
                None,
                Some(vec![Some(1), Some(2), Some(1), None, Some(3)]),
                Some(vec![])
            ]
        );
    }

    #[test]
    fn steps_reset_set_null_skip_reversed() {
        let a = agg("collect", &array_of(atomic("INT")), &options(false));
        let input = int_lists(&[Some(vec![Some(1)]), Some(vec![Some(2)]), None]);
        let out = fold(
            &*a,
            &input,
            &[
                &[(0, Step::Add), (1, Step::AddReversed)],
                &[(0, Step::Add), (1, Step::Skip), (2, Step::Reset)],
                &[(0, Step::Add), (1, Step::SetNull), (1, Step::Add)],
            ],
        )
        .unwrap();
        assert_eq!(
            ints(&out),
            vec![Some(vec![Some(1), Some(2)]), None, Some(vec![Some(2)])]
        );
    }

    #[test]
    fn strings_and_not_null_elements() {
        let mut b = ListBuilder::new(StringBuilder::new());
        b.values().append_value("a");
        b.append(true);
        b.values().append_value("b");
        b.values().append_value("a");
        b.append(true);
        let input: ArrayRef = Arc::new(b.finish());
        let a = agg("collect", &array_of(atomic("STRING")), &options(true));
        let out = fold(&*a, &input, &[&adds(&[0, 1])]).unwrap();
        assert_eq!(out.data_type(), input.data_type());
        let list = out.as_list::<i32>();
        let v: Vec<_> = list
            .value(0)
            .as_string::<i32>()
            .iter()
            .map(|s| s.unwrap().to_string())
            .collect();
        assert_eq!(v, vec!["a", "b"]);

        // ARRAY<INT NOT NULL>: the output keeps the non-nullable element field.
        let t = array_of(atomic("INT NOT NULL"));
        let arrow_type = t.to_arrow();
        let arrow::datatypes::DataType::List(item) = &arrow_type else {
            unreachable!()
        };
        let mut b = ListBuilder::new(Int32Builder::new()).with_field(item.clone());
        b.values().append_value(5);
        b.append(true);
        let input: ArrayRef = Arc::new(b.finish());
        let a = agg("collect", &t, &options(true));
        let out = fold(&*a, &input, &[&adds(&[0, 0])]).unwrap();
        assert_eq!(out.data_type(), &arrow_type);
        assert_eq!(ints(&out), vec![Some(vec![Some(5)])]);
    }
}
