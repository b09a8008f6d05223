//! Reducers on hand-built groups: the spec's worked examples, one group per call and several
//! groups in one call.

use std::sync::Arc;

use arrow::array::{Array, AsArray, Int32Array, Int64Array, Int8Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int32Type, Int8Type, Schema};

use super::MergeEngineSpec;
use crate::merge::engine::{KIND_DELETE, KIND_INSERT};
use crate::spec::TableSchema;

/// A table `k INT` + `n` INT value columns with `options`, and the engine for its full layout.
fn engine(columns: &[&str], options: &str) -> MergeEngineSpec {
    let fields: Vec<String> = std::iter::once("k")
        .chain(columns.iter().copied())
        .enumerate()
        .map(|(i, name)| {
            let ty = if i == 0 { "INT NOT NULL" } else { "INT" };
            format!(r#"{{"id":{i},"name":"{name}","type":"{ty}"}}"#)
        })
        .collect();
    let json = format!(
        r#"{{"version":3,"id":0,"fields":[{}],"highestFieldId":{},"partitionKeys":[],"primaryKeys":["k"],"options":{{"bucket":"1",{options}}},"timeMillis":0}}"#,
        fields.join(","),
        columns.len()
    );
    let schema = TableSchema::from_json(json.as_bytes(), "test").expect("schema");
    let mut names: Vec<String> = std::iter::once("k")
        .chain(columns.iter().copied())
        .map(String::from)
        .collect();
    let n = names.len();
    names.push("_SEQUENCE_NUMBER".into());
    names.push("_VALUE_KIND".into());
    MergeEngineSpec::new("t", &schema, &names, n, n + 1).expect("engine")
}

/// Records `(kind, values)` of key 1 with sequence numbers 0, 1, 2, ...
fn batch(columns: usize, records: &[(i8, Vec<Option<i32>>)]) -> RecordBatch {
    let mut fields = vec![Field::new("k", DataType::Int32, false)];
    fields.extend((0..columns).map(|c| Field::new(format!("c{c}"), DataType::Int32, true)));
    fields.push(Field::new("_SEQUENCE_NUMBER", DataType::Int64, false));
    fields.push(Field::new("_VALUE_KIND", DataType::Int8, false));
    let mut arrays: Vec<Arc<dyn Array>> = vec![Arc::new(Int32Array::from(vec![1; records.len()]))];
    for c in 0..columns {
        arrays.push(Arc::new(records.iter().map(|r| r.1[c]).collect::<Int32Array>()));
    }
    arrays.push(Arc::new(Int64Array::from_iter_values(0..records.len() as i64)));
    arrays.push(Arc::new(Int8Array::from(
        records.iter().map(|r| r.0).collect::<Vec<_>>(),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
}

fn row(batch: &RecordBatch, row: usize) -> (i8, Vec<Option<i32>>) {
    let n = batch.num_columns();
    let values = (1..n - 2)
        .map(|c| {
            let a = batch.column(c).as_primitive::<Int32Type>();
            (!a.is_null(row)).then(|| a.value(row))
        })
        .collect();
    (batch.column(n - 1).as_primitive::<Int8Type>().value(row), values)
}

const I: i8 = KIND_INSERT;
const D: i8 = KIND_DELETE;

/// semantics.md §2.3.2 doc example: groups g_1 → (a, b), g_2 → (c, d).
#[test]
fn partial_update_sequence_groups_doc_example() {
    let spec = engine(
        &["a", "b", "g_1", "c", "d", "g_2"],
        r#""merge-engine":"partial-update","fields.g_1.sequence-group":"a,b","fields.g_2.sequence-group":"c,d""#,
    );
    let s = |v: [Option<i32>; 6]| v.to_vec();
    let n = None;
    let steps = [
        (I, s([Some(1), Some(1), Some(1), Some(1), Some(1), Some(1)])),
        (I, s([Some(2), Some(2), Some(2), Some(2), Some(2), n])),
        (I, s([Some(3), Some(3), Some(1), Some(3), Some(3), Some(3)])),
        (D, s([Some(1), Some(1), Some(3), Some(1), Some(1), n])),
        (D, s([Some(1), Some(1), Some(3), Some(1), Some(1), Some(4)])),
    ];
    let expected = [
        s([Some(2), Some(2), Some(2), Some(1), Some(1), Some(1)]),
        s([Some(2), Some(2), Some(2), Some(3), Some(3), Some(3)]),
        s([n, n, Some(3), Some(3), Some(3), Some(3)]),
        s([n, n, Some(3), n, n, Some(4)]),
    ];
    for (prefix, want) in (2..=5).zip(expected) {
        let input = batch(6, &steps[..prefix]);
        let out = spec.reducer.reduce(&input, &[0, prefix]).expect("reduce");
        assert_eq!(row(&out.batch, 0), (I, want), "after {prefix} records");
    }
}

/// Several groups in one call, and aggregation's remove-record-on-delete (§2.4).
#[test]
fn aggregation_groups_in_one_call() {
    let spec = engine(
        &["s", "m"],
        r#""merge-engine":"aggregation","fields.s.aggregate-function":"sum","fields.m.aggregate-function":"max","fields.m.ignore-retract":"true","aggregation.remove-record-on-delete":"true""#,
    );
    let input = batch(
        2,
        &[
            (I, vec![Some(1), Some(5)]),
            (I, vec![Some(2), Some(9)]),
            // group 2: a removing -D re-initialises the row, the add aggregates on top of it
            (I, vec![Some(10), Some(1)]),
            (D, vec![Some(3), Some(3)]),
            (I, vec![Some(4), Some(2)]),
            // group 3: ends with the removing -D
            (I, vec![Some(7), Some(7)]),
            (D, vec![Some(7), Some(7)]),
        ],
    );
    let out = spec.reducer.reduce(&input, &[0, 2, 5, 7]).expect("reduce");
    assert_eq!(row(&out.batch, 0), (I, vec![Some(3), Some(9)]));
    assert_eq!(row(&out.batch, 1), (I, vec![Some(7), Some(3)]));
    assert_eq!(row(&out.batch, 2).0, D);
    assert_eq!(out.present, vec![true, true, true]);
}

/// `sequence.field` decides the order, NULL oldest; ties fall back to the sequence number.
#[test]
fn deduplicate_by_sequence_field() {
    let spec = engine(&["v", "ts"], r#""sequence.field":"ts""#);
    let input = batch(
        2,
        &[
            (I, vec![Some(1), Some(10)]),
            (I, vec![Some(2), Some(5)]),
            (I, vec![Some(3), None]),
            (I, vec![Some(4), Some(7)]),
            (I, vec![Some(5), Some(7)]),
        ],
    );
    let out = spec.reducer.reduce(&input, &[0, 3, 5]).expect("reduce");
    assert_eq!(row(&out.batch, 0), (I, vec![Some(1), Some(10)]));
    assert_eq!(row(&out.batch, 1), (I, vec![Some(5), Some(7)]));
}
