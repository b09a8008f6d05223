//! Tests of the k-way merge: hand-written cases here, a randomized comparison with a naive
//! model in [`random`].

mod random;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Int64Type, Int8Type, Schema, SchemaRef};
use arrow::row::{RowConverter, SortField};
use datafusion::common::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::TryStreamExt;

use super::engine::{KIND_DELETE, KIND_INSERT, KIND_UPDATE_AFTER, KIND_UPDATE_BEFORE};
use super::*;

const I: i8 = KIND_INSERT;
const UB: i8 = KIND_UPDATE_BEFORE;
const UA: i8 = KIND_UPDATE_AFTER;
const D: i8 = KIND_DELETE;

/// A key of the test schemas.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Int(i32),
    Str(String),
    Pair(i32, String),
}

/// One input/output record: key, sequence number, kind, payload.
type Rec = (Key, i64, i8, String);

fn int(k: i32, seq: i64, kind: i8, v: &str) -> Rec {
    (Key::Int(k), seq, kind, v.to_string())
}

fn schema_for(key: &Key) -> (SchemaRef, Vec<usize>) {
    let seq = Field::new("_SEQUENCE_NUMBER", DataType::Int64, false);
    let kind = Field::new("_VALUE_KIND", DataType::Int8, false);
    let v = Field::new("v", DataType::Utf8, true);
    match key {
        Key::Int(_) => (
            Arc::new(Schema::new(vec![
                Field::new("k", DataType::Int32, false),
                seq,
                kind,
                v,
            ])),
            vec![0],
        ),
        Key::Str(_) => (
            Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, false),
                seq,
                kind,
                v,
            ])),
            vec![0],
        ),
        // key columns deliberately not adjacent: (k1, seq, kind, v, k2)
        Key::Pair(..) => (
            Arc::new(Schema::new(vec![
                Field::new("k1", DataType::Int32, false),
                seq,
                kind,
                v,
                Field::new("k2", DataType::Utf8, false),
            ])),
            vec![0, 4],
        ),
    }
}

fn to_batch(schema: &SchemaRef, recs: &[Rec]) -> RecordBatch {
    let seqs: ArrayRef = Arc::new(Int64Array::from_iter_values(recs.iter().map(|r| r.1)));
    let kinds: ArrayRef = Arc::new(Int8Array::from_iter_values(recs.iter().map(|r| r.2)));
    let vals: ArrayRef = Arc::new(StringArray::from_iter_values(recs.iter().map(|r| &r.3)));
    let mut columns = vec![];
    let k1: ArrayRef = match schema.field(0).data_type() {
        DataType::Int32 => Arc::new(Int32Array::from_iter_values(recs.iter().map(|r| match &r.0 {
            Key::Int(k) | Key::Pair(k, _) => *k,
            Key::Str(_) => unreachable!(),
        }))),
        _ => Arc::new(StringArray::from_iter_values(recs.iter().map(|r| match &r.0 {
            Key::Str(s) => s.as_str(),
            _ => unreachable!(),
        }))),
    };
    columns.extend([k1, seqs, kinds, vals]);
    if schema.fields().len() == 5 {
        columns.push(Arc::new(StringArray::from_iter_values(recs.iter().map(
            |r| match &r.0 {
                Key::Pair(_, s) => s.as_str(),
                _ => unreachable!(),
            },
        ))));
    }
    RecordBatch::try_new(Arc::clone(schema), columns).expect("test batch")
}

fn from_batch(batch: &RecordBatch) -> Vec<Rec> {
    let seqs = batch.column(1).as_primitive::<Int64Type>();
    let kinds = batch.column(2).as_primitive::<Int8Type>();
    let vals = batch.column(3).as_string::<i32>();
    (0..batch.num_rows())
        .map(|i| {
            let key = match (batch.column(0).data_type(), batch.num_columns()) {
                (DataType::Int32, 4) => Key::Int(batch.column(0).as_primitive::<Int32Type>().value(i)),
                (DataType::Int32, _) => Key::Pair(
                    batch.column(0).as_primitive::<Int32Type>().value(i),
                    batch.column(4).as_string::<i32>().value(i).to_string(),
                ),
                _ => Key::Str(batch.column(0).as_string::<i32>().value(i).to_string()),
            };
            (key, seqs.value(i), kinds.value(i), vals.value(i).to_string())
        })
        .collect()
}

/// A run as a stream of batches with the given sizes (cycled; 0 makes an empty batch).
fn run_stream(schema: &SchemaRef, recs: &[Rec], sizes: &[usize]) -> SendableRecordBatchStream {
    let mut batches = vec![];
    let mut offset = 0;
    let mut i = 0;
    while offset < recs.len() {
        let size = sizes[i % sizes.len()];
        i += 1;
        let end = (offset + size).min(recs.len());
        batches.push(Ok(to_batch(schema, &recs[offset..end])));
        offset = end;
        if i > 10 * recs.len() + 10 {
            panic!("batch sizes make no progress");
        }
    }
    // trailing empty batch to exercise skipping at the end of a run
    batches.push(Ok(to_batch(schema, &[])));
    Box::pin(RecordBatchStreamAdapter::new(
        Arc::clone(schema),
        futures::stream::iter(batches),
    ))
}

/// The schema of `runs`' key type (Int when they are empty), its key columns, and each run
/// as a stream of batches of `sizes`.
fn runs_as_streams(
    runs: &[Vec<Rec>],
    sizes: &[usize],
) -> (SchemaRef, Vec<usize>, Vec<SendableRecordBatchStream>) {
    let probe = runs
        .iter()
        .flatten()
        .next()
        .map(|r| r.0.clone())
        .unwrap_or(Key::Int(0));
    let (schema, key_columns) = schema_for(&probe);
    let streams = runs.iter().map(|r| run_stream(&schema, r, sizes)).collect();
    (schema, key_columns, streams)
}

struct Case {
    name: &'static str,
    runs: Vec<Vec<Rec>>,
    keep_retracts: bool,
    expected: Vec<Rec>,
}

async fn merge(
    runs: &[Vec<Rec>],
    sizes: &[usize],
    keep_retracts: bool,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    let (schema, key_columns, streams) = runs_as_streams(runs, sizes);
    let options = MergeOptions {
        key_columns,
        seq_column: 1,
        kind_column: 2,
        keep_retracts,
        batch_size,
    };
    let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
    let stream = merge_sorted_runs(Arc::clone(&schema), streams, options, metrics)?;
    stream.try_collect().await
}

fn check_batches(batches: &[RecordBatch], batch_size: usize) -> Vec<Rec> {
    for b in batches {
        assert!(b.num_rows() > 0, "empty output batch");
        assert!(
            b.num_rows() <= batch_size,
            "batch of {} > {batch_size}",
            b.num_rows()
        );
    }
    batches.iter().flat_map(from_batch).collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "single run",
            runs: vec![vec![int(1, 1, I, "a"), int(2, 2, I, "b"), int(5, 3, UA, "c")]],
            keep_retracts: false,
            expected: vec![int(1, 1, I, "a"), int(2, 2, I, "b"), int(5, 3, UA, "c")],
        },
        Case {
            name: "newer seq wins on overlap",
            runs: vec![
                vec![int(1, 1, I, "old1"), int(2, 2, I, "old2"), int(3, 3, I, "old3")],
                vec![int(2, 10, UA, "new2"), int(4, 11, I, "new4")],
            ],
            keep_retracts: false,
            expected: vec![
                int(1, 1, I, "old1"),
                int(2, 10, UA, "new2"),
                int(3, 3, I, "old3"),
                int(4, 11, I, "new4"),
            ],
        },
        Case {
            name: "higher seq wins even in an older run",
            runs: vec![vec![int(7, 50, I, "run0")], vec![int(7, 20, I, "run1")]],
            keep_retracts: false,
            expected: vec![int(7, 50, I, "run0")],
        },
        Case {
            name: "equal seq: later run wins",
            runs: vec![vec![int(7, 5, I, "run0")], vec![int(7, 5, I, "run1")]],
            keep_retracts: false,
            expected: vec![int(7, 5, I, "run1")],
        },
        Case {
            name: "-D in newer run removes the key",
            runs: vec![
                vec![int(1, 1, I, "a"), int(2, 2, I, "b"), int(3, 3, I, "c")],
                vec![int(2, 9, D, "b")],
            ],
            keep_retracts: false,
            expected: vec![int(1, 1, I, "a"), int(3, 3, I, "c")],
        },
        Case {
            name: "lone -U and -D records are dropped",
            runs: vec![
                vec![int(1, 1, UB, "x"), int(2, 2, I, "b"), int(4, 3, D, "y")],
                vec![int(3, 9, UB, "z"), int(5, 10, I, "e")],
            ],
            keep_retracts: false,
            expected: vec![int(2, 2, I, "b"), int(5, 10, I, "e")],
        },
        Case {
            name: "keep_retracts outputs the retract winners",
            runs: vec![
                vec![int(1, 1, I, "a"), int(2, 2, I, "b"), int(4, 3, UB, "u")],
                vec![int(2, 9, D, "b")],
            ],
            keep_retracts: true,
            expected: vec![int(1, 1, I, "a"), int(2, 9, D, "b"), int(4, 3, UB, "u")],
        },
        Case {
            name: "deleted then re-inserted key is visible",
            runs: vec![
                vec![int(1, 1, I, "v1"), int(2, 2, I, "keep")],
                vec![int(1, 5, D, "v1")],
                vec![int(1, 8, I, "v2")],
            ],
            keep_retracts: false,
            expected: vec![int(1, 8, I, "v2"), int(2, 2, I, "keep")],
        },
        Case {
            name: "key repeated within one run: higher seq wins",
            runs: vec![
                vec![
                    int(1, 1, I, "a"),
                    int(1, 4, UA, "a4"),
                    int(1, 3, UA, "a3"),
                    int(2, 2, I, "b"),
                ],
                vec![int(0, 9, I, "z"), int(3, 9, I, "c")],
            ],
            keep_retracts: false,
            expected: vec![
                int(0, 9, I, "z"),
                int(1, 4, UA, "a4"),
                int(2, 2, I, "b"),
                int(3, 9, I, "c"),
            ],
        },
        Case {
            name: "negative keys sort before positive",
            runs: vec![
                vec![int(-5, 1, I, "m5"), int(3, 2, I, "p3")],
                vec![int(-10, 3, I, "m10"), int(0, 4, I, "z")],
            ],
            keep_retracts: false,
            expected: vec![
                int(-10, 3, I, "m10"),
                int(-5, 1, I, "m5"),
                int(0, 4, I, "z"),
                int(3, 2, I, "p3"),
            ],
        },
        Case {
            name: "string keys by unsigned bytes",
            runs: vec![
                vec![
                    (Key::Str("".into()), 1, I, "empty".into()),
                    (Key::Str("Z".into()), 2, I, "Z".into()),
                    (Key::Str("a".into()), 3, I, "a".into()),
                    (Key::Str("é".into()), 4, I, "e-acute".into()),
                ],
                vec![
                    (Key::Str("ab".into()), 5, I, "ab".into()),
                    (Key::Str("z".into()), 6, I, "z".into()),
                    (Key::Str("é".into()), 7, UA, "e-acute2".into()),
                    (Key::Str("日本".into()), 8, I, "cjk".into()),
                ],
            ],
            keep_retracts: false,
            expected: vec![
                (Key::Str("".into()), 1, I, "empty".into()),
                (Key::Str("Z".into()), 2, I, "Z".into()),
                (Key::Str("a".into()), 3, I, "a".into()),
                (Key::Str("ab".into()), 5, I, "ab".into()),
                (Key::Str("z".into()), 6, I, "z".into()),
                (Key::Str("é".into()), 7, UA, "e-acute2".into()),
                (Key::Str("日本".into()), 8, I, "cjk".into()),
            ],
        },
        Case {
            name: "composite (Int32, Utf8) keys",
            runs: vec![
                vec![
                    (Key::Pair(1, "b".into()), 1, I, "1b".into()),
                    (Key::Pair(1, "ñ".into()), 2, I, "1n".into()),
                    (Key::Pair(2, "a".into()), 3, I, "2a".into()),
                ],
                vec![
                    (Key::Pair(1, "a".into()), 4, I, "1a".into()),
                    (Key::Pair(1, "ñ".into()), 5, D, "1n".into()),
                    (Key::Pair(2, "".into()), 6, I, "2-".into()),
                ],
            ],
            keep_retracts: false,
            expected: vec![
                (Key::Pair(1, "a".into()), 4, I, "1a".into()),
                (Key::Pair(1, "b".into()), 1, I, "1b".into()),
                (Key::Pair(2, "".into()), 6, I, "2-".into()),
                (Key::Pair(2, "a".into()), 3, I, "2a".into()),
            ],
        },
        Case {
            name: "empty runs",
            runs: vec![vec![], vec![int(1, 1, I, "a")], vec![]],
            keep_retracts: false,
            expected: vec![int(1, 1, I, "a")],
        },
        Case {
            name: "all runs empty",
            runs: vec![vec![], vec![]],
            keep_retracts: false,
            expected: vec![],
        },
    ]
}

#[tokio::test]
async fn table_driven_cases() -> Result<()> {
    // every case under several batchings of the input and output
    for sizes in [vec![1000], vec![1], vec![2, 0, 1], vec![3]] {
        for batch_size in [1, 2, 3, 1000] {
            for case in cases() {
                let batches = merge(&case.runs, &sizes, case.keep_retracts, batch_size).await?;
                let got = check_batches(&batches, batch_size);
                assert_eq!(
                    got, case.expected,
                    "case '{}', input batch sizes {sizes:?}, batch_size {batch_size}",
                    case.name
                );
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn many_small_batches_and_small_output_batches() -> Result<()> {
    // run 0: keys 0..1000, run 1: every 7th key updated, run 2: every 13th deleted
    let run0: Vec<Rec> = (0..1000).map(|k| int(k, k as i64, I, "v0")).collect();
    let run1: Vec<Rec> = (0..1000)
        .step_by(7)
        .map(|k| int(k, 10_000 + k as i64, UA, "v1"))
        .collect();
    let run2: Vec<Rec> = (0..1000)
        .step_by(13)
        .map(|k| int(k, 20_000 + k as i64, D, "v2"))
        .collect();
    let runs = vec![run0, run1, run2];
    let batches = merge(&runs, &[17, 0, 5, 64], false, 37).await?;
    let got = check_batches(&batches, 37);
    let expected: Vec<Rec> = (0..1000)
        .filter(|k| k % 13 != 0)
        .map(|k| {
            if k % 7 == 0 {
                int(k, 10_000 + k as i64, UA, "v1")
            } else {
                int(k, k as i64, I, "v0")
            }
        })
        .collect();
    assert_eq!(got, expected);
    // all but the last output batch are full
    for b in &batches[..batches.len() - 1] {
        assert_eq!(b.num_rows(), 37);
    }
    Ok(())
}

#[tokio::test]
async fn unsorted_run_is_an_error() {
    let runs = vec![
        vec![int(1, 1, I, "a"), int(3, 1, I, "c")],
        vec![int(5, 2, I, "e"), int(2, 2, I, "b")],
    ];
    // within a batch
    let err = merge(&runs, &[10], false, 10).await.expect_err("unsorted");
    assert!(err.to_string().contains("not ordered"), "{err}");
    // across batches
    let err = merge(&runs, &[1], false, 10).await.expect_err("unsorted");
    assert!(err.to_string().contains("not ordered"), "{err}");
}

#[tokio::test]
async fn invalid_options_are_errors() {
    let (schema, _) = schema_for(&Key::Int(0));
    let metrics = || MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
    let options = |key_columns: Vec<usize>, seq_column, kind_column| MergeOptions {
        key_columns,
        seq_column,
        kind_column,
        keep_retracts: false,
        batch_size: 10,
    };
    for bad in [
        options(vec![], 1, 2),
        options(vec![9], 1, 2),
        options(vec![0], 2, 1),
        options(vec![0], 1, 7),
    ] {
        assert!(merge_sorted_runs(Arc::clone(&schema), vec![], bad, metrics()).is_err());
    }
}

#[tokio::test]
async fn no_runs_is_an_empty_stream() -> Result<()> {
    let (schema, key_columns) = schema_for(&Key::Int(0));
    let options = MergeOptions {
        key_columns,
        seq_column: 1,
        kind_column: 2,
        keep_retracts: false,
        batch_size: 10,
    };
    let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
    let stream = merge_sorted_runs(schema, vec![], options, metrics)?;
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    assert!(batches.is_empty());
    Ok(())
}

#[tokio::test]
async fn metrics_count_rows() -> Result<()> {
    let (schema, key_columns) = schema_for(&Key::Int(0));
    let runs = [
        vec![int(1, 1, I, "a"), int(2, 2, I, "b"), int(3, 3, I, "c")],
        vec![int(2, 9, UA, "b2"), int(3, 10, D, "c"), int(4, 11, D, "d")],
    ];
    let streams = runs.iter().map(|r| run_stream(&schema, r, &[2])).collect();
    let options = MergeOptions {
        key_columns,
        seq_column: 1,
        kind_column: 2,
        keep_retracts: false,
        batch_size: 10,
    };
    let set = ExecutionPlanMetricsSet::new();
    let metrics = MergeMetrics::new(&set, 0);
    let stream = merge_sorted_runs(schema, streams, options, metrics.clone())?;
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    assert_eq!(metrics.input_rows.value(), 6);
    assert_eq!(metrics.output_rows.value(), 2);
    assert_eq!(metrics.rows_merged_away.value(), 2); // old 2 and old 3
    assert_eq!(metrics.retracts_dropped.value(), 2); // keys 3 and 4
    Ok(())
}

/// Input batches are released once no cursor reads them and no output row references them.
#[tokio::test]
async fn input_batches_are_released() -> Result<()> {
    let (schema, key_columns) = schema_for(&Key::Int(0));
    let runs: Vec<Vec<Rec>> = (0..4)
        .map(|r| (0..500).map(|k| int(k * 4 + r, 1, I, "v")).collect())
        .collect();
    let streams = runs.iter().map(|r| run_stream(&schema, r, &[10])).collect();
    let options = MergeOptions {
        key_columns: key_columns.clone(),
        seq_column: 1,
        kind_column: 2,
        keep_retracts: false,
        batch_size: 16,
    };
    let fields = key_columns
        .iter()
        .map(|&i| SortField::new(schema.field(i).data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let metrics = MergeMetrics::new(&ExecutionPlanMetricsSet::new(), 0);
    let mut state = stream::MergeStream::new(
        streams,
        converter,
        options,
        metrics,
        Deduplicate::new(false),
        None,
    );
    let mut total = 0;
    while let Some(batch) = state.next_batch().await? {
        total += batch.num_rows();
        assert!(
            state.stored_batches() <= state.live_cursors(),
            "{} batches held for {} cursors",
            state.stored_batches(),
            state.live_cursors()
        );
    }
    assert_eq!(total, 2000);
    Ok(())
}

#[test]
fn drop_retracts_filters_retract_kinds() -> Result<()> {
    let (schema, _) = schema_for(&Key::Int(0));
    let recs = vec![
        int(1, 1, I, "a"),
        int(2, 2, UB, "b"),
        int(3, 3, UA, "c"),
        int(4, 4, D, "d"),
    ];
    let batch = to_batch(&schema, &recs);
    let out = drop_retracts(&batch, 2)?;
    assert_eq!(from_batch(&out), vec![int(1, 1, I, "a"), int(3, 3, UA, "c")]);
    // nothing to drop: the same batch comes back
    let clean = to_batch(&schema, &[int(1, 1, I, "a")]);
    let out = drop_retracts(&clean, 2)?;
    assert_eq!(
        out.column(0).to_data().buffers()[0].as_ptr(),
        clean.column(0).to_data().buffers()[0].as_ptr()
    );
    // wrong column type or index
    assert!(drop_retracts(&batch, 1).is_err());
    assert!(drop_retracts(&batch, 9).is_err());
    Ok(())
}

#[tokio::test]
async fn drop_retracts_stream_skips_empty_batches() -> Result<()> {
    let (schema, _) = schema_for(&Key::Int(0));
    let recs = vec![int(1, 1, D, "a"), int(2, 2, UB, "b"), int(3, 3, I, "c")];
    let input = run_stream(&schema, &recs, &[2]);
    let batches: Vec<RecordBatch> = drop_retracts_stream(input, 2, Default::default())
        .try_collect()
        .await?;
    assert_eq!(batches.len(), 1);
    assert_eq!(from_batch(&batches[0]), vec![int(3, 3, I, "c")]);
    Ok(())
}
