//! Every `batch` and `incremental` expected result of the pypaimon 2.1.0 fixture corpus
//! (`tests/fixtures/pypaimon-2.1.0/expected/index.json`), read through SQL and compared with the
//! published rows.
//!
//! For each batch file: `SET paimon.<k> = '<v>'` for its `query.options`, then
//! `SELECT <projection or *> FROM <db>.<table> [WHERE <filter.sql>]`, then `RESET`. An
//! incremental file (`_row_kind` first) is read from `<table>$audit_log` twice: with
//! `incremental-between = 'start,end'` and with its `incremental-between-timestamp` option, whose
//! `timeMillis(snapshot-N)` placeholders become the commit times of the fixture's snapshots
//! (one millisecond before snapshot 1 for N = 0). Results are
//! converted to JSON with the README's "Value encoding" table and compared as multisets (both sides
//! sorted by their canonical JSON text); column names are compared in order. One test per table;
//! each reports every mismatch of its table before failing.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt::Write as _;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type,
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use datafusion_paimon::PaimonSession;
use serde_json::{Map, Number, Value};

use crate::{fixture_root, fixture_warehouse, run_sql};

/// Tables whose expected files are not checked yet, with the reason.
const SKIPPED_TABLES: &[(&str, &str)] = &[];

/// How many differing rows of each side a report shows.
pub(crate) const REPORT_ROWS: usize = 10;

macro_rules! fixture_tables {
    ($($test:ident => $table:literal),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                check_table($table).await;
            }
        )*

        /// Every table with a test above.
        const CHECKED_TABLES: &[&str] = &[$($table),*];
    };
}

fixture_tables! {
    append_partitioned => "append.partitioned",
    append_unaware => "append.unaware",
    changelog_input_producer => "changelog.input_producer",
    engines_partial_update => "engines.partial_update",
    evolution_pk_evolved => "evolution.pk_evolved",
    formats_parquet_gzip => "formats.parquet_gzip",
    formats_parquet_lz4 => "formats.parquet_lz4",
    formats_parquet_none => "formats.parquet_none",
    formats_parquet_snappy => "formats.parquet_snappy",
    formats_parquet_zstd => "formats.parquet_zstd",
    pk_dedup_basic => "pk.dedup_basic",
    pk_many_commits => "pk.many_commits",
    pk_partitioned_b4 => "pk.partitioned_b4",
    types_wide_append => "types.wide_append",
    types_wide_pk => "types.wide_pk",
}

fn index() -> Value {
    let path = fixture_root().join("expected/index.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

/// A table added to the corpus must get a test (or a reason to be skipped).
#[test]
fn every_fixture_table_is_checked() {
    let index = index();
    let in_index: BTreeSet<&str> = index["tables"]
        .as_object()
        .expect("tables is an object")
        .keys()
        .map(String::as_str)
        .collect();
    let covered: BTreeSet<&str> = CHECKED_TABLES
        .iter()
        .chain(SKIPPED_TABLES.iter().map(|(t, _)| t))
        .copied()
        .collect();
    assert_eq!(
        in_index, covered,
        "tables of expected/index.json vs tables checked or skipped in fixtures.rs"
    );
}

/// Checks every `batch` expected file of `table`, then fails with all mismatches.
async fn check_table(table: &str) {
    let index = index();
    let entry = &index["tables"][table];
    let expected: Vec<&Value> = entry["expected"]
        .as_array()
        .unwrap_or_else(|| panic!("{table} is not in expected/index.json"))
        .iter()
        .filter(|e| e["query"]["type"] == "batch" || e["query"]["type"] == "incremental")
        .collect();
    assert!(!expected.is_empty(), "{table} has no batch expected file");

    let warehouse = fixture_warehouse();
    let session = PaimonSession::open(warehouse.to_str().expect("UTF-8 path"))
        .await
        .expect("warehouse opens");
    let mut failures = Vec::new();
    for e in &expected {
        let file = e["file"].as_str().expect("file is a string");
        let incremental = e["query"]["type"] == "incremental";
        for variant in [Variant::Ids, Variant::Timestamps] {
            if !incremental && variant == Variant::Timestamps {
                continue;
            }
            if let Err(msg) = check_expected_file(&session, table, file, variant).await {
                failures.push(msg);
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "{table}: {} of {} batch expected files differ\n\n{}",
            failures.len(),
            expected.len(),
            failures.join("\n\n")
        );
    }
}

/// How an incremental expected file names its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// `incremental-between = 'start,end'` (batch files: their own options).
    Ids,
    /// The file's `incremental-between-timestamp` option.
    Timestamps,
}

/// `timeMillis(snapshot-N)` of the fixture table (N = 0: one millisecond before snapshot 1).
fn commit_time(table: &str, placeholder: &str) -> String {
    let id: i64 = placeholder
        .trim()
        .strip_prefix("timeMillis(snapshot-")
        .and_then(|r| r.strip_suffix(')'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected timestamp placeholder {placeholder}"));
    let (db, name) = table.split_once('.').expect("db.table");
    let read = |id: i64| -> i64 {
        let path = fixture_warehouse().join(format!("{db}.db/{name}/snapshot/snapshot-{id}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let snapshot: Value = serde_json::from_str(&text).expect("snapshot JSON");
        snapshot["timeMillis"].as_i64().expect("timeMillis")
    };
    if id == 0 {
        (read(1) - 1).to_string()
    } else {
        read(id).to_string()
    }
}

/// The `SET` statements and the query of one expected file.
fn statements(table: &str, expected: &Value, variant: Variant) -> (Vec<String>, String) {
    let query = &expected["query"];
    let set = |k: &str, v: &str| format!("SET paimon.{k} = '{v}'");
    if query["type"] == "incremental" {
        // `_row_kind` first, then the table's columns.
        let columns: String = expected["columns"]
            .as_array()
            .expect("columns")
            .iter()
            .skip(1)
            .map(|c| format!(", \"{}\"", c["name"].as_str().expect("column name")))
            .collect();
        let sets = match variant {
            Variant::Ids => vec![set(
                "incremental-between",
                &format!(
                    "{},{}",
                    query["start_snapshot_exclusive"], query["end_snapshot_inclusive"]
                ),
            )],
            Variant::Timestamps => {
                let range = query["options"]["incremental-between-timestamp"]
                    .as_str()
                    .expect("incremental-between-timestamp");
                let (a, b) = range.split_once(',').expect("two timestamps");
                let value = format!("{},{}", commit_time(table, a), commit_time(table, b));
                vec![set("incremental-between-timestamp", &value)]
            }
        };
        let (db, name) = table.split_once('.').expect("db.table");
        let sql = format!("SELECT rowkind AS \"_row_kind\"{columns} FROM {db}.\"{name}$audit_log\"");
        return (sets, sql);
    }
    let select = match query["projection"].as_array() {
        Some(cols) => cols
            .iter()
            .map(|c| format!("\"{}\"", c.as_str().expect("column name")))
            .collect::<Vec<_>>()
            .join(", "),
        None => "*".to_string(),
    };
    let mut sql = format!("SELECT {select} FROM {table}");
    if let Some(filter) = query["filter"]["sql"].as_str() {
        write!(sql, " WHERE {filter}").unwrap();
    }
    let sets: Vec<String> = query["options"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| set(k, v.as_str().expect("option value is a string")))
                .collect()
        })
        .unwrap_or_default();
    (sets, sql)
}

/// Runs the query of one expected file and compares its result.
async fn check_expected_file(
    session: &PaimonSession,
    table: &str,
    file: &str,
    variant: Variant,
) -> Result<(), String> {
    let path = fixture_root().join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: cannot read: {e}"))?;
    let expected: Value = serde_json::from_str(&text).map_err(|e| format!("{file}: cannot parse: {e}"))?;
    let (sets, sql) = statements(table, &expected, variant);
    let context = if sets.is_empty() {
        sql.clone()
    } else {
        format!("{}; {sql}", sets.join("; "))
    };

    let result = async {
        for set in &sets {
            run_sql(session, set).await?;
        }
        run_sql(session, &sql).await
    }
    .await;
    run_sql(session, "RESET")
        .await
        .map_err(|e| format!("{file}: RESET failed: {e}"))?;
    let batches = result.map_err(|e| format!("{file}: `{context}` failed: {e}"))?;

    let mut problems = Vec::new();
    let expected_names: Vec<&str> = expected["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("column name"))
        .collect();
    let schema = batches.first().map(|b| b.schema());
    if let Some(schema) = &schema {
        let actual_names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        if actual_names != expected_names {
            problems.push(format!(
                "columns: expected {expected_names:?}, got {actual_names:?}"
            ));
        }
    }

    let mut actual_rows = Vec::new();
    for batch in &batches {
        actual_rows.extend(batch_to_rows(batch).map_err(|e| format!("{file}: `{context}`: {e}"))?);
    }
    let actual_rows: Vec<String> = sorted_canonical(actual_rows);
    let expected_rows: Vec<String> = sorted_canonical(
        expected["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r.as_array().expect("row").clone())
            .collect(),
    );
    if actual_rows != expected_rows {
        let (missing, unexpected) = multiset_difference(&expected_rows, &actual_rows);
        let mut msg = format!(
            "rows: expected {}, got {}",
            expected_rows.len(),
            actual_rows.len()
        );
        for (label, rows) in [("missing", &missing), ("unexpected", &unexpected)] {
            if !rows.is_empty() {
                write!(msg, "\n  {label} ({}):", rows.len()).unwrap();
                for r in rows.iter().take(REPORT_ROWS) {
                    write!(msg, "\n    {r}").unwrap();
                }
                if rows.len() > REPORT_ROWS {
                    write!(msg, "\n    ...").unwrap();
                }
            }
        }
        problems.push(msg);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{file}: `{context}`\n  {}", problems.join("\n  ")))
    }
}

pub(crate) fn sorted_canonical(rows: Vec<Vec<Value>>) -> Vec<String> {
    let mut rows: Vec<String> = rows.into_iter().map(|r| Value::Array(r).to_string()).collect();
    rows.sort();
    rows
}

/// Rows of `expected` not in `actual` and rows of `actual` not in `expected`, both sorted.
pub(crate) fn multiset_difference(expected: &[String], actual: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut i, mut j) = (0, 0);
    let (mut missing, mut unexpected) = (Vec::new(), Vec::new());
    while i < expected.len() || j < actual.len() {
        match (expected.get(i), actual.get(j)) {
            (Some(e), Some(a)) if e == a => {
                i += 1;
                j += 1;
            }
            (Some(e), Some(a)) if e < a => {
                missing.push(e.clone());
                i += 1;
            }
            (Some(_), Some(a)) => {
                unexpected.push(a.clone());
                j += 1;
            }
            (Some(e), None) => {
                missing.push(e.clone());
                i += 1;
            }
            (None, Some(a)) => {
                unexpected.push(a.clone());
                j += 1;
            }
            (None, None) => unreachable!(),
        }
    }
    (missing, unexpected)
}

pub(crate) fn batch_to_rows(batch: &RecordBatch) -> Result<Vec<Vec<Value>>, String> {
    (0..batch.num_rows())
        .map(|row| batch.columns().iter().map(|col| to_json(col, row)).collect())
        .collect()
}

/// One Arrow value in the fixture README's JSON encoding.
fn to_json(col: &ArrayRef, row: usize) -> Result<Value, String> {
    if col.is_null(row) {
        return Ok(Value::Null);
    }
    Ok(match col.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(col.as_boolean().value(row)),
        DataType::Int8 => col.as_primitive::<Int8Type>().value(row).into(),
        DataType::Int16 => col.as_primitive::<Int16Type>().value(row).into(),
        DataType::Int32 => col.as_primitive::<Int32Type>().value(row).into(),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(row).into(),
        DataType::UInt8 => col.as_primitive::<UInt8Type>().value(row).into(),
        DataType::UInt16 => col.as_primitive::<UInt16Type>().value(row).into(),
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(row).into(),
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(row).into(),
        DataType::Float16 => float(col.as_primitive::<Float16Type>().value(row).to_f64()),
        // A float32 is its exact value widened to double.
        DataType::Float32 => float(col.as_primitive::<Float32Type>().value(row) as f64),
        DataType::Float64 => float(col.as_primitive::<Float64Type>().value(row)),
        // Exactly `scale` fractional digits.
        DataType::Decimal32(_, _) => Value::String(col.as_primitive::<Decimal32Type>().value_as_string(row)),
        DataType::Decimal64(_, _) => Value::String(col.as_primitive::<Decimal64Type>().value_as_string(row)),
        DataType::Decimal128(_, _) => {
            Value::String(col.as_primitive::<Decimal128Type>().value_as_string(row))
        }
        DataType::Decimal256(_, _) => {
            Value::String(col.as_primitive::<Decimal256Type>().value_as_string(row))
        }
        DataType::Utf8 => Value::String(col.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Value::String(col.as_string::<i64>().value(row).to_string()),
        DataType::Utf8View => Value::String(col.as_string_view().value(row).to_string()),
        DataType::Binary => hex(col.as_binary::<i32>().value(row)),
        DataType::LargeBinary => hex(col.as_binary::<i64>().value(row)),
        DataType::BinaryView => hex(col.as_binary_view().value(row)),
        DataType::FixedSizeBinary(_) => hex(col.as_fixed_size_binary().value(row)),
        DataType::Date32 => {
            let days = col.as_primitive::<Date32Type>().value(row) as i64;
            let date = chrono::DateTime::from_timestamp(days * 86_400, 0).ok_or("date out of range")?;
            Value::String(date.format("%Y-%m-%d").to_string())
        }
        DataType::Date64 => {
            let ms = col.as_primitive::<Date64Type>().value(row);
            let date = chrono::DateTime::from_timestamp_millis(ms).ok_or("date out of range")?;
            Value::String(date.format("%Y-%m-%d").to_string())
        }
        DataType::Time32(TimeUnit::Second) => time(
            col.as_primitive::<Time32SecondType>().value(row) as i64,
            TimeUnit::Second,
        ),
        DataType::Time32(TimeUnit::Millisecond) => time(
            col.as_primitive::<Time32MillisecondType>().value(row) as i64,
            TimeUnit::Millisecond,
        ),
        DataType::Time64(TimeUnit::Microsecond) => time(
            col.as_primitive::<Time64MicrosecondType>().value(row),
            TimeUnit::Microsecond,
        ),
        DataType::Time64(TimeUnit::Nanosecond) => time(
            col.as_primitive::<Time64NanosecondType>().value(row),
            TimeUnit::Nanosecond,
        ),
        DataType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => col.as_primitive::<TimestampSecondType>().value(row),
                TimeUnit::Millisecond => col.as_primitive::<TimestampMillisecondType>().value(row),
                TimeUnit::Microsecond => col.as_primitive::<TimestampMicrosecondType>().value(row),
                TimeUnit::Nanosecond => col.as_primitive::<TimestampNanosecondType>().value(row),
            };
            timestamp(v, *unit, tz.is_some())?
        }
        DataType::List(_) => list(&col.as_list::<i32>().value(row))?,
        DataType::LargeList(_) => list(&col.as_list::<i64>().value(row))?,
        DataType::FixedSizeList(_, _) => list(&col.as_fixed_size_list().value(row))?,
        DataType::Struct(fields) => {
            let s = col.as_struct();
            let mut object = Map::new();
            for (field, child) in fields.iter().zip(s.columns()) {
                object.insert(field.name().clone(), to_json(child, row)?);
            }
            Value::Object(object)
        }
        DataType::Map(_, _) => {
            let entries = col.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let mut pairs = (0..entries.len())
                .map(|i| Ok(Value::Array(vec![to_json(keys, i)?, to_json(values, i)?])))
                .collect::<Result<Vec<_>, String>>()?;
            // Map order is not significant: pairs sorted by key.
            pairs.sort_by(|a, b| cmp_json(&a[0], &b[0]));
            Value::Array(pairs)
        }
        DataType::Dictionary(_, _) => {
            let dict = col.as_any_dictionary();
            to_json(dict.values(), dict.normalized_keys()[row])?
        }
        other => return Err(format!("no JSON encoding for Arrow type {other}")),
    })
}

fn float(v: f64) -> Value {
    if v.is_nan() {
        Value::String("NaN".into())
    } else if v == f64::INFINITY {
        Value::String("Infinity".into())
    } else if v == f64::NEG_INFINITY {
        Value::String("-Infinity".into())
    } else {
        Value::Number(Number::from_f64(v).expect("finite"))
    }
}

fn hex(bytes: &[u8]) -> Value {
    Value::String(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn list(values: &ArrayRef) -> Result<Value, String> {
    (0..values.len())
        .map(|i| to_json(values, i))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// Units per second and fractional digits of a time unit.
fn unit_scale(unit: TimeUnit) -> (i64, usize) {
    match unit {
        TimeUnit::Second => (1, 0),
        TimeUnit::Millisecond => (1_000, 3),
        TimeUnit::Microsecond => (1_000_000, 6),
        TimeUnit::Nanosecond => (1_000_000_000, 9),
    }
}

/// `HH:MM:SS` plus the unit's fractional digits.
fn time(v: i64, unit: TimeUnit) -> Value {
    let (per_second, digits) = unit_scale(unit);
    let (secs, frac) = (v.div_euclid(per_second), v.rem_euclid(per_second));
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if digits > 0 {
        write!(s, ".{frac:0digits$}").unwrap();
    }
    Value::String(s)
}

/// `YYYY-MM-DDTHH:MM:SS` plus 0/3/6/9 fractional digits by unit, and `Z` with a time zone.
fn timestamp(v: i64, unit: TimeUnit, with_tz: bool) -> Result<Value, String> {
    let (per_second, digits) = unit_scale(unit);
    let (secs, frac) = (v.div_euclid(per_second), v.rem_euclid(per_second));
    let dt =
        chrono::DateTime::from_timestamp(secs, 0).ok_or_else(|| format!("timestamp {v} out of range"))?;
    let mut s = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
    if digits > 0 {
        write!(s, ".{frac:0digits$}").unwrap();
    }
    if with_tz {
        s.push('Z');
    }
    Ok(Value::String(s))
}

/// Order of map keys: nulls first, numbers numerically, strings by code point.
fn cmp_json(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => x.as_f64().partial_cmp(&y.as_f64()).unwrap_or(Ordering::Equal),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => a.to_string().cmp(&b.to_string()),
    }
}

/// Postpone files written by pypaimon keep records in arrival order, unsorted and with repeated
/// keys, as Java's postpone writer does (`tests/fixtures/extra/generate_postpone.py`).
/// `CALL sys.compact` must sort and fold each bucket's share by the merge engine; the expected
/// rows follow from the statements in that script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsorted_postpone_files_are_folded_when_compaction_assigns_buckets() {
    let dir = tempfile::tempdir().expect("temp dir");
    crate::errors::copy_dir(
        &fixture_warehouse().join("postpone.db"),
        &dir.path().join("postpone.db"),
    )
    .expect("copy the postpone fixtures");
    let session = PaimonSession::open(dir.path().to_str().expect("utf-8"))
        .await
        .expect("open");
    let render = |batches: Vec<RecordBatch>| -> Vec<String> {
        let mut out = Vec::new();
        for b in &batches {
            for row in batch_to_rows(b).expect("rows") {
                out.push(Value::Array(row).to_string());
            }
        }
        out
    };
    let cases = [
        (
            "postpone.dedup_unsorted",
            "SELECT k, v FROM postpone.dedup_unsorted ORDER BY k",
            vec![
                r#"[1,"b1"]"#,
                r#"[3,"c3"]"#,
                r#"[5,"b5"]"#,
                r#"[7,"a7"]"#,
                r#"[9,"a9"]"#,
            ],
        ),
        (
            "postpone.partial_unsorted",
            "SELECT k, v, n FROM postpone.partial_unsorted ORDER BY k",
            vec![r#"[1,"x",11]"#, r#"[2,"y",20]"#],
        ),
    ];
    for (table, query, expected) in cases {
        // invisible to batch reads before the assignment
        let before = run_sql(&session, query).await.expect("read");
        assert!(
            render(before).is_empty(),
            "{table}: postpone rows are visible before compaction"
        );
        run_sql(&session, &format!("CALL sys.compact('{table}')"))
            .await
            .unwrap_or_else(|e| panic!("compact {table}: {e}"));
        let after = render(run_sql(&session, query).await.expect("read"));
        assert_eq!(after, expected, "{table} after CALL sys.compact");
        // The assignment is its own COMPACT snapshot (3), before the full compaction merges
        // the buckets: its level-0 files alone must read the same.
        run_sql(&session, "SET paimon.scan.snapshot-id = '3'")
            .await
            .expect("set");
        let assigned = render(run_sql(&session, query).await.expect("read"));
        run_sql(&session, "RESET paimon.scan.snapshot-id")
            .await
            .expect("reset");
        assert_eq!(assigned, expected, "{table} at the assignment snapshot");
        // each bucket's level-0 file must be sorted with one record per key: check the files'
        // own row counts against the distinct keys they hold
        let files = render(
            run_sql(&session, &format!("SELECT sum(record_count) FROM {table}$files"))
                .await
                .expect("files"),
        );
        assert_eq!(
            files,
            vec![format!("[{}]", expected.len())],
            "{table}: records in data files"
        );
    }
}
