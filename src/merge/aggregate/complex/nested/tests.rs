use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Int32Array, Int32Builder, ListBuilder, StringBuilder, StructBuilder,
};
use arrow::datatypes::{DataType as ArrowType, Fields};

use super::super::test_util::{adds, agg, array_of, atomic, create_err, fold};
use crate::merge::aggregate::{FieldAggOptions, Step};
use crate::spec::{DataField, DataType, TypeKind};

/// ARRAY<ROW<k INT, v STRING, n INT>>
fn nested_type() -> DataType {
    let field = |id, name: &str, t: &str| DataField {
        id,
        name: name.into(),
        data_type: atomic(t),
        description: None,
    };
    array_of(DataType {
        kind: TypeKind::Row(vec![
            field(0, "k", "INT"),
            field(1, "v", "STRING"),
            field(2, "n", "INT"),
        ]),
        nullable: true,
    })
}

type NRow = Option<(Option<i32>, Option<&'static str>, Option<i32>)>;
type NOut = Option<(Option<i32>, Option<String>, Option<i32>)>;

fn nested(values: &[Option<Vec<NRow>>]) -> ArrayRef {
    let arrow_type = nested_type().to_arrow();
    let ArrowType::List(item) = &arrow_type else {
        unreachable!()
    };
    let ArrowType::Struct(fields) = item.data_type() else {
        unreachable!()
    };
    let fields: Fields = fields.clone();
    let mut b = ListBuilder::new(StructBuilder::from_fields(fields, 0)).with_field(item.clone());
    for v in values {
        match v {
            None => b.append(false),
            Some(rows) => {
                for r in rows {
                    let s = b.values();
                    let (k, v, n) = r.unwrap_or((None, None, None));
                    s.field_builder::<Int32Builder>(0).unwrap().append_option(k);
                    s.field_builder::<StringBuilder>(1).unwrap().append_option(v);
                    s.field_builder::<Int32Builder>(2).unwrap().append_option(n);
                    s.append(r.is_some());
                }
                b.append(true);
            }
        }
    }
    let out: ArrayRef = Arc::new(b.finish());
    assert_eq!(out.data_type(), &arrow_type);
    out
}

fn read(a: &ArrayRef) -> Vec<Option<Vec<NOut>>> {
    let list = a.as_list::<i32>();
    (0..list.len())
        .map(|i| {
            list.is_valid(i).then(|| {
                let v = list.value(i);
                let s = v.as_struct();
                let k = s.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                let t = s.column(1).as_string::<i32>();
                let n = s.column(2).as_any().downcast_ref::<Int32Array>().unwrap();
                (0..s.len())
                    .map(|j| {
                        s.is_valid(j).then(|| {
                            (
                                k.is_valid(j).then(|| k.value(j)),
                                t.is_valid(j).then(|| t.value(j).to_string()),
                                n.is_valid(j).then(|| n.value(j)),
                            )
                        })
                    })
                    .collect()
            })
        })
        .collect()
}

fn r(k: i32, v: &'static str, n: i32) -> NRow {
    Some((Some(k), Some(v), Some(n)))
}

fn o(k: i32, v: &str, n: i32) -> NOut {
    Some((Some(k), Some(v.to_string()), Some(n)))
}

fn keyed(key: &str) -> FieldAggOptions {
    FieldAggOptions {
        nested_key: key.split(',').map(str::to_string).collect(),
        ..Default::default()
    }
}

#[test]
fn types_and_options_checked() {
    let none = FieldAggOptions::default();
    for f in ["nested_update", "nested_partial_update"] {
        let err = create_err(f, &array_of(atomic("INT")), &keyed("k"));
        assert!(
            err.contains(f) && err.contains("'f'") && err.contains("ARRAY<ROW"),
            "{err}"
        );
        let err = create_err(f, &nested_type(), &keyed("x"));
        assert!(err.contains("'x'") && err.contains("nested-key"), "{err}");
    }
    let err = create_err("nested_partial_update", &nested_type(), &none);
    assert!(err.contains("nested-key"), "{err}");
    let strategy = FieldAggOptions {
        nested_key_null_strategy: Some("ignore".into()),
        ..Default::default()
    };
    let err = create_err("nested_update", &nested_type(), &strategy);
    assert!(err.contains("requires 'fields.f.nested-key'"), "{err}");
    let sequence = FieldAggOptions {
        nested_sequence_field: Some("n".into()),
        ..Default::default()
    };
    let err = create_err("nested_update", &nested_type(), &sequence);
    assert!(err.contains("requires 'fields.f.nested-key'"), "{err}");
    let bad = FieldAggOptions {
        nested_key_null_strategy: Some("drop".into()),
        ..keyed("k")
    };
    assert!(create_err("nested_update", &nested_type(), &bad).contains("'drop'"));
    assert!(agg("nested_update", &nested_type(), &none).supports_retract());
    assert!(!agg("nested_partial_update", &nested_type(), &keyed("k")).supports_retract());
}

#[test]
fn update_without_key_appends_up_to_limit() {
    let input = nested(&[
        Some(vec![r(1, "a", 1), None, r(2, "b", 2)]),
        Some(vec![r(3, "c", 3), r(4, "d", 4)]),
        None,
    ]);
    let a = agg("nested_update", &nested_type(), &FieldAggOptions::default());
    let out = fold(&*a, &input, &[&adds(&[0, 1, 2]), &adds(&[2]), &adds(&[2, 1])]).unwrap();
    assert_eq!(
        read(&out),
        vec![
            Some(vec![o(1, "a", 1), o(2, "b", 2), o(3, "c", 3), o(4, "d", 4)]),
            None,
            Some(vec![o(3, "c", 3), o(4, "d", 4)]),
        ]
    );
    let limited = FieldAggOptions {
        count_limit: Some(3),
        ..Default::default()
    };
    let a = agg("nested_update", &nested_type(), &limited);
    let out = fold(&*a, &input, &[&adds(&[0, 1]), &adds(&[1, 1, 0])]).unwrap();
    assert_eq!(
        read(&out),
        vec![
            Some(vec![o(1, "a", 1), o(2, "b", 2), o(3, "c", 3)]),
            Some(vec![o(3, "c", 3), o(4, "d", 4), o(3, "c", 3)]),
        ]
    );
}

#[test]
fn update_with_key_upserts() {
    let input = nested(&[
        Some(vec![r(1, "a", 5), r(2, "b", 5)]),
        Some(vec![r(2, "B", 1), r(3, "C", 1), r(1, "A", 9)]),
    ]);
    let a = agg("nested_update", &nested_type(), &keyed("k"));
    let out = fold(
        &*a,
        &input,
        &[&adds(&[0, 1]), &[(1, Step::Add), (0, Step::AddReversed)]],
    )
    .unwrap();
    assert_eq!(
        read(&out),
        vec![
            Some(vec![o(1, "A", 9), o(2, "B", 1), o(3, "C", 1)]),
            // reversed: the older record is applied first, the accumulated rows win
            Some(vec![o(1, "A", 9), o(2, "B", 1), o(3, "C", 1)]),
        ]
    );
    // With a sequence field an older nested row does not overwrite a newer one.
    let seq = FieldAggOptions {
        nested_sequence_field: Some("n".into()),
        ..keyed("k")
    };
    let a = agg("nested_update", &nested_type(), &seq);
    let out = fold(&*a, &input, &[&adds(&[0, 1])]).unwrap();
    assert_eq!(
        read(&out),
        vec![Some(vec![o(1, "A", 9), o(2, "b", 5), o(3, "C", 1)])]
    );
    // count-limit only limits new keys of the input.
    let limited = FieldAggOptions {
        count_limit: Some(2),
        ..keyed("k")
    };
    let a = agg("nested_update", &nested_type(), &limited);
    let out = fold(&*a, &input, &[&adds(&[0, 1])]).unwrap();
    assert_eq!(read(&out), vec![Some(vec![o(1, "A", 9), o(2, "B", 1)])]);
}

#[test]
fn update_null_key_strategies() {
    let input = nested(&[Some(vec![Some((None, Some("x"), Some(1))), r(1, "a", 1)])]);
    let strategy = |s: &str| FieldAggOptions {
        nested_key_null_strategy: Some(s.into()),
        ..keyed("k")
    };
    let merge = agg("nested_update", &nested_type(), &strategy("merge"));
    let out = fold(&*merge, &input, &[&adds(&[0, 0])]).unwrap();
    assert_eq!(
        read(&out),
        vec![Some(vec![Some((None, Some("x".into()), Some(1))), o(1, "a", 1)])]
    );
    let ignore = agg("nested_update", &nested_type(), &strategy("IGNORE"));
    let out = fold(&*ignore, &input, &[&adds(&[0])]).unwrap();
    assert_eq!(read(&out), vec![Some(vec![o(1, "a", 1)])]);
    let error = agg("nested_update", &nested_type(), &strategy("error"));
    let err = fold(&*error, &input, &[&adds(&[0])]).unwrap_err().to_string();
    assert!(err.contains("'f'") && err.contains("null"), "{err}");
}

#[test]
fn update_retract() {
    let input = nested(&[
        Some(vec![r(1, "a", 1), r(2, "b", 2), r(1, "a", 1)]),
        Some(vec![r(1, "a", 1), None]),
        Some(vec![r(2, "zz", 0)]),
        None,
    ]);
    // Without key: every equal row goes.
    let a = agg("nested_update", &nested_type(), &FieldAggOptions::default());
    let out = fold(
        &*a,
        &input,
        &[
            &[(0, Step::Add), (1, Step::Retract)],
            &[(0, Step::Add), (2, Step::Retract)],
            &[(0, Step::Add), (3, Step::Retract)],
            &[(1, Step::Retract)],
        ],
    )
    .unwrap();
    assert_eq!(
        read(&out),
        vec![
            Some(vec![o(2, "b", 2)]),
            Some(vec![o(1, "a", 1), o(2, "b", 2), o(1, "a", 1)]),
            Some(vec![o(1, "a", 1), o(2, "b", 2), o(1, "a", 1)]),
            None,
        ]
    );
    // With key: retracted keys go whatever the other fields.
    let a = agg("nested_update", &nested_type(), &keyed("k"));
    let out = fold(&*a, &input, &[&[(0, Step::Add), (2, Step::Retract)]]).unwrap();
    assert_eq!(read(&out), vec![Some(vec![o(1, "a", 1)])]);
}

#[test]
fn partial_update_merges_fields() {
    let input = nested(&[
        Some(vec![Some((Some(1), Some("a"), None)), r(2, "b", 2)]),
        Some(vec![
            Some((Some(1), None, Some(10))),
            Some((Some(3), None, None)),
            None,
        ]),
        None,
        Some(vec![
            Some((Some(1), Some("z"), None)),
            Some((Some(1), None, Some(7))),
        ]),
    ]);
    let a = agg("nested_partial_update", &nested_type(), &keyed("k"));
    let out = fold(
        &*a,
        &input,
        &[
            &adds(&[0, 1]),
            &adds(&[2, 3, 2]),
            &adds(&[2]),
            &[(1, Step::Add), (0, Step::AddReversed)],
            &[(3, Step::Reset)],
        ],
    )
    .unwrap();
    assert_eq!(out.data_type(), input.data_type());
    assert_eq!(
        read(&out),
        vec![
            Some(vec![o(1, "a", 10), o(2, "b", 2), Some((Some(3), None, None))]),
            Some(vec![o(1, "z", 7)]),
            None,
            // reversed: the older value is applied first, the newer fields win
            Some(vec![o(1, "a", 10), o(2, "b", 2), Some((Some(3), None, None))]),
            Some(vec![
                Some((Some(1), Some("z".into()), None)),
                Some((Some(1), None, Some(7)))
            ]),
        ]
    );
    let err = fold(&*a, &input, &[&[(0, Step::Add), (1, Step::Retract)]])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nested_partial_update") && err.contains("fields.f.ignore-retract"),
        "{err}"
    );
}

#[test]
fn partial_update_composite_key_and_ignore() {
    let input = nested(&[
        Some(vec![r(1, "a", 1), Some((Some(1), None, Some(5)))]),
        Some(vec![Some((Some(1), Some("a"), Some(2)))]),
    ]);
    let opts = FieldAggOptions {
        nested_key_null_strategy: Some("ignore".into()),
        ..keyed("k, v")
    };
    let a = agg("nested_partial_update", &nested_type(), &opts);
    let out = fold(&*a, &input, &[&adds(&[0, 1])]).unwrap();
    assert_eq!(read(&out), vec![Some(vec![o(1, "a", 2)])]);
}
