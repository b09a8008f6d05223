//! Files our ORC writer wrote, read back by orc-rust (pypaimon reads them too: tests/interop).

use std::sync::Arc;

use arrow::array::{
    BinaryArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, ListArray, MapBuilder, StringArray, StringBuilder, StructArray,
    Time32MillisecondArray, TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
};
use arrow::buffer::NullBuffer;
use arrow::compute::cast;
use arrow::datatypes::{Field, Fields, Int32Type, Schema};
use bytes::Bytes;
use orc_rust::projection::ProjectionMask;
use orc_rust::schema::TimestampPrecision;
use orc_rust::ArrowReaderBuilder;

use super::*;

/// Every column type, with nulls at every level and values at the edges of each encoding.
fn batch() -> RecordBatch {
    let n = 7;
    let ints: Vec<Option<i32>> = vec![
        Some(1),
        None,
        Some(-5),
        Some(i32::MAX),
        Some(i32::MIN),
        Some(0),
        None,
    ];
    let point = Fields::from(vec![
        Field::new("x", DataType::Int32, true),
        Field::new("label", DataType::Utf8, true),
    ]);
    let structs = StructArray::new(
        point.clone(),
        vec![
            Arc::new(Int32Array::from(ints.clone())),
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some("hidden"),
                None,
                Some("d"),
                Some(""),
                Some("f"),
                Some("g"),
            ])),
        ],
        Some(NullBuffer::from(vec![true, false, true, true, true, true, false])),
    );
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2)]),
        None,
        Some(vec![]),
        Some(vec![None, Some(4)]),
        Some(vec![Some(5)]),
        None,
        Some((0..300).map(Some).collect()),
    ]);
    let mut maps = MapBuilder::new(None, StringBuilder::new(), arrow::array::Int64Builder::new());
    for i in 0..n {
        if i % 3 == 1 {
            maps.append(false).unwrap();
            continue;
        }
        for j in 0..i {
            maps.keys().append_value(format!("k{j}"));
            if j == 1 {
                maps.values().append_null();
            } else {
                maps.values().append_value(j as i64 * 1000);
            }
        }
        maps.append(true).unwrap();
    }
    let maps = maps.finish();
    let micros: Vec<Option<i64>> = vec![
        Some(0),
        Some(-1_000_000), // 1969-12-31 23:59:59
        Some(-1_500_000), // a negative second with a fraction
        Some(1_700_000_000_123_456),
        None,
        Some(-62_135_596_800_000_000), // year 1
        Some(253_402_300_799_999_999), // year 9999
    ];
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "b",
            Arc::new(BooleanArray::from(vec![
                Some(true),
                None,
                Some(false),
                Some(true),
                Some(true),
                Some(false),
                Some(true),
            ])),
        ),
        (
            "i8",
            Arc::new(Int8Array::from(vec![
                Some(-128),
                Some(127),
                None,
                Some(0),
                Some(0),
                Some(0),
                Some(1),
            ])),
        ),
        (
            "i16",
            Arc::new(Int16Array::from(vec![
                Some(i16::MIN),
                Some(i16::MAX),
                None,
                Some(3),
                Some(4),
                Some(5),
                Some(6),
            ])),
        ),
        ("i32", Arc::new(Int32Array::from(ints.clone()))),
        (
            "i64",
            Arc::new(Int64Array::from(vec![
                Some(i64::MIN),
                Some(i64::MAX),
                Some(-1),
                None,
                Some(1),
                Some(2),
                Some(3),
            ])),
        ),
        (
            "f32",
            Arc::new(Float32Array::from(vec![
                Some(1.5),
                None,
                Some(f32::NAN),
                Some(-0.0),
                Some(f32::INFINITY),
                Some(3.25),
                Some(0.1),
            ])),
        ),
        (
            "f64",
            Arc::new(Float64Array::from(vec![
                Some(1.5),
                Some(f64::MIN),
                None,
                Some(-0.0),
                Some(f64::NEG_INFINITY),
                Some(2.0),
                Some(1e300),
            ])),
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![
                Some("héllo"),
                Some(""),
                None,
                Some("x"),
                Some("x"),
                Some("x"),
                Some("long ".repeat(100).as_str()),
            ])),
        ),
        (
            "bin",
            Arc::new(BinaryArray::from(vec![
                Some(&b"\x00\xff"[..]),
                None,
                Some(b""),
                Some(b"a"),
                Some(b"b"),
                Some(b"c"),
                Some(b"d"),
            ])),
        ),
        (
            "dec",
            Arc::new(
                Decimal128Array::from(vec![
                    Some(12345),
                    Some(-1),
                    None,
                    Some(0),
                    Some(99_999_999_999_999_999_999_999_999_999_999_999i128),
                    Some(-99_999_999_999_999_999_999_999_999_999_999_999i128),
                    Some(7),
                ])
                .with_precision_and_scale(38, 4)
                .unwrap(),
            ),
        ),
        (
            "dec_small",
            Arc::new(
                Decimal128Array::from(vec![
                    Some(1999),
                    Some(-1),
                    None,
                    Some(0),
                    Some(5),
                    Some(-5),
                    Some(10),
                ])
                .with_precision_and_scale(10, 2)
                .unwrap(),
            ),
        ),
        (
            "d",
            Arc::new(Date32Array::from(vec![
                Some(0),
                Some(-719162),
                None,
                Some(2932896),
                Some(19000),
                Some(1),
                Some(-1),
            ])),
        ),
        (
            "t",
            Arc::new(Time32MillisecondArray::from(vec![
                Some(0),
                Some(86_399_999),
                None,
                Some(1),
                Some(2),
                Some(3),
                Some(4),
            ])),
        ),
        ("ts", Arc::new(TimestampMicrosecondArray::from(micros.clone()))),
        (
            "ts_ms",
            Arc::new(TimestampMillisecondArray::from(vec![
                Some(-1001),
                Some(-2001),
                Some(1),
                None,
                Some(0),
                Some(5),
                Some(6),
            ])),
        ),
        (
            "ts_ns",
            Arc::new(TimestampNanosecondArray::from(vec![
                Some(1_000_000_001),
                Some(-2_000_000_001),
                None,
                Some(0),
                Some(100),
                Some(1_000),
                Some(123_456_789),
            ])),
        ),
        (
            "ltz",
            Arc::new(TimestampMicrosecondArray::from(micros).with_timezone("UTC")),
        ),
        ("row", Arc::new(structs)),
        ("arr", Arc::new(lists)),
        ("m", Arc::new(maps)),
    ];
    let schema = Schema::new(
        columns
            .iter()
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|(_, a)| a).collect()).unwrap()
}

/// The file's columns, all or those named, decoded by orc-rust.
fn read(file: Vec<u8>, precision: TimestampPrecision, only: Option<&[&str]>) -> RecordBatch {
    let builder = ArrowReaderBuilder::try_new(Bytes::from(file))
        .unwrap()
        .with_timestamp_precision(precision);
    let builder = match only {
        Some(names) => {
            let root = builder.file_metadata().root_data_type().clone();
            builder.with_projection(ProjectionMask::named_roots(&root, names))
        }
        None => builder,
    };
    let reader = builder.build();
    let batches: Vec<RecordBatch> = reader.collect::<std::result::Result<_, _>>().unwrap();
    arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
}

/// Checks that every column of `read` equals the written one once cast to its type (ORC
/// has no TIME: it is an INT).
fn assert_same(written: &RecordBatch, read: &RecordBatch) {
    assert_eq!(read.num_rows(), written.num_rows());
    for (i, field) in written.schema().fields().iter().enumerate() {
        let Some(got) = read.column_by_name(field.name()) else {
            continue;
        };
        let got = cast(got, field.data_type()).unwrap();
        assert_eq!(
            got.as_ref(),
            written.column(i).as_ref(),
            "column {}",
            field.name()
        );
    }
}

#[test]
fn every_type_reads_back_with_every_codec() {
    let batch = batch();
    let halves = [batch.slice(0, 3), batch.slice(3, 4)];
    for codec in [
        None,
        Some(CompressionType::Zstd),
        Some(CompressionType::Snappy),
        Some(CompressionType::Lz4),
        Some(CompressionType::Zlib),
    ] {
        let file = write_file(&batch.schema(), &halves, codec).unwrap();
        // Nanoseconds overflow past 2262 (years 1 and 9999 are in the other columns).
        let schema = batch.schema();
        let names: Vec<&str> = schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| *n != "ts_ns")
            .collect();
        let micros = read(file.clone(), TimestampPrecision::Microsecond, Some(&names));
        assert_eq!(micros.num_columns(), batch.num_columns() - 1);
        assert_same(&batch, &micros);
        let nanos = read(file, TimestampPrecision::Nanosecond, Some(&["ts_ns"]));
        assert_eq!(nanos.num_columns(), 1);
        assert_same(&batch, &nanos);
    }
}

#[test]
fn no_rows_is_a_valid_file() {
    let batch = batch().slice(0, 0);
    let file = write_file(&batch.schema(), &[batch.clone()], Some(CompressionType::Zstd)).unwrap();
    let reader = ArrowReaderBuilder::try_new(Bytes::from(file)).unwrap().build();
    assert_eq!(reader.map(|b| b.unwrap().num_rows()).sum::<usize>(), 0);
}

#[test]
fn many_rows_span_several_compression_blocks() {
    let values: Int64Array = (0..300_000i64).map(|i| Some(i * i % 1_000_003)).collect();
    let strings: StringArray = (0..300_000).map(|i| Some(format!("value-{}", i % 977))).collect();
    let amounts = Decimal128Array::from_iter_values((0..300_000).map(|i| i as i128 * 37))
        .with_precision_and_scale(12, 2)
        .unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("v", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
        Field::new("a", amounts.data_type().clone(), false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(values), Arc::new(strings), Arc::new(amounts)],
    )
    .unwrap();
    let file = write_file(&schema, &[batch.clone()], Some(CompressionType::Zstd)).unwrap();
    assert_same(&batch, &read(file, TimestampPrecision::Microsecond, None));
}

#[test]
fn the_second_before_1970_is_refused() {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "ts",
        DataType::Timestamp(TimeUnit::Millisecond, None),
        true,
    )]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(TimestampMillisecondArray::from(vec![-500]))],
    )
    .unwrap();
    let err = write_file(&schema, &[batch], None).unwrap_err().to_string();
    assert!(err.contains("cannot be stored in ORC"), "{err}");
}
