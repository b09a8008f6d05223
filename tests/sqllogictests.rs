//! sqllogictest runner for `sql-tests/**/*.slt` (STYLE §4.6).
//!
//! * One libtest-mimic trial per file, named by its path under `sql-tests/`, so
//!   `cargo test --test sqllogictests -- time_travel` runs one folder and the output is standard
//!   libtest.
//! * Each file gets a fresh warehouse: a `TempDir` holding a copy of the pypaimon fixture warehouse
//!   (`tests/fixtures/pypaimon-2.1.0/warehouse`), so files can read the real pypaimon tables and,
//!   later, write their own without touching the fixtures. Every `connection` of a file opens its
//!   own [`PaimonSession`] over that warehouse with `target_partitions = 4`.
//! * Values are rendered the way DataFusion's own sqllogictest engine renders them: `NULL`,
//!   `(empty)` for the empty string, `true`/`false`, floats and decimals through `BigDecimal`
//!   rounded to 12 digits and normalized, everything else through Arrow's display formatter.
//!   Multi-line cells (EXPLAIN plans) are split into numbered rows with leading spaces shown as `-`.
//!   The warehouse path is replaced by `WAREHOUSE` in results and error messages, and
//!   `WAREHOUSE` in a statement by the warehouse path (`CREATE CATALOG ... 'warehouse' = ...`).
//! * Errors are reported as `DataFusion error: <DataFusion's message>`, so `statement error <regex>`
//!   matches DataFusion's error text.
//! * `<slt:ignore>` is handled by sqllogictest's default validator (0.28 supports it natively).
//! * A file fails if it ends with a `SET paimon.<option>` still active (or any `datafusion.*`
//!   setting changed): every test restores the session with `RESET`.
//! * `SLT_COMPLETE=1 cargo test --test sqllogictests -- <filter>` rewrites the selected files with
//!   the actual output (`Runner::update_test_file`). Review the diff before committing.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Float16Type, Float32Type,
    Float64Type,
};
use arrow::util::display::{ArrayFormatter, DurationFormat, FormatOptions};
use async_trait::async_trait;
use bigdecimal::BigDecimal;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionConfig;
use datafusion_paimon::PaimonSession;
use sqllogictest::harness::{Arguments, Failed, Trial};
use sqllogictest::{
    default_normalizer, default_validator, strict_column_validator, AsyncDB, DBOutput, DefaultColumnType,
    Runner,
};

/// Test files, relative to the crate root.
const TEST_DIR: &str = "sql-tests";
/// The fixture warehouse copied into every file's `TempDir`.
const FIXTURE_WAREHOUSE: &str = "tests/fixtures/pypaimon-2.1.0/warehouse";
/// DataFusion's own sqllogictests fix this too, so plans do not depend on the machine.
const TARGET_PARTITIONS: usize = 4;
const NULL_STR: &str = "NULL";
/// Arrow display options for everything without a dedicated rendering (dates, times, timestamps,
/// binary, lists, structs, maps): DataFusion's defaults, with nested nulls shown as `NULL`.
const FORMAT_OPTIONS: FormatOptions<'static> = FormatOptions::new()
    .with_duration_format(DurationFormat::Pretty)
    .with_null(NULL_STR);

fn main() {
    let args = Arguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let complete = std::env::var("SLT_COMPLETE").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut files = Vec::new();
    collect_slt_files(&root.join(TEST_DIR), &mut files).expect("sql-tests/ is readable");
    files.sort();
    assert!(!files.is_empty(), "no .slt file under {TEST_DIR}/");
    let trials = files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(root.join(TEST_DIR))
                .expect("file is under sql-tests/")
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            let root = root.clone();
            Trial::test(name, move || run_file(&root, &path, complete))
        })
        .collect();
    sqllogictest::harness::run(&args, trials).exit();
}

fn collect_slt_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_slt_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "slt") {
            out.push(path);
        }
    }
    Ok(())
}

/// Copies the directory tree `src` into `dst` (created if needed), with writable files.
fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let target = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            // The fixtures are read-only; the copy must be writable.
            let mut permissions = std::fs::metadata(&target)?.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            permissions.set_readonly(false);
            std::fs::set_permissions(&target, permissions)?;
        }
    }
    Ok(())
}

/// Runs (or, with `SLT_COMPLETE`, rewrites) one file against a fresh warehouse.
fn run_file(root: &Path, path: &Path, complete: bool) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(TARGET_PARTITIONS)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    runtime.block_on(async {
        let warehouse = tempfile::TempDir::new().map_err(|e| format!("cannot create a TempDir: {e}"))?;
        copy_dir(&root.join(FIXTURE_WAREHOUSE), warehouse.path())
            .map_err(|e| format!("cannot copy the fixture warehouse: {e}"))?;
        let location = warehouse.path().to_string_lossy().into_owned();

        let opened: Arc<Mutex<Vec<OpenedSession>>> = Arc::default();
        let make_conn = {
            let opened = Arc::clone(&opened);
            move || {
                let location = location.clone();
                let opened = Arc::clone(&opened);
                async move {
                    let config = SessionConfig::new().with_target_partitions(TARGET_PARTITIONS);
                    let session = PaimonSession::with_config(config, &location)
                        .await
                        .map_err(SltError::new)?;
                    let initial_config = config_entries(&session);
                    opened.lock().unwrap().push(OpenedSession {
                        session: session.clone(),
                        initial_config,
                    });
                    Ok(PaimonSlt {
                        session,
                        warehouse: location,
                    })
                }
            }
        };

        let mut runner = Runner::new(make_conn);
        runner.with_column_validator(strict_column_validator);
        let result = if complete {
            runner
                .update_test_file(
                    path,
                    " ",
                    default_validator,
                    default_normalizer,
                    strict_column_validator,
                )
                .await
                .map_err(|e| Failed::from(format!("cannot complete {}: {e}", path.display())))
        } else {
            runner
                .run_file_async(path)
                .await
                .map_err(|e| Failed::from(e.display(false).to_string()))
        };
        runner.shutdown_async().await;
        result?;

        let leftovers: Vec<String> = opened
            .lock()
            .unwrap()
            .iter()
            .flat_map(OpenedSession::changed_settings)
            .collect();
        if !leftovers.is_empty() {
            return Err(Failed::from(format!(
                "{} ends with session settings still changed (add RESET at the end): {}",
                path.display(),
                leftovers.join(", ")
            )));
        }
        Ok(())
    })
}

/// A session a file opened, with the DataFusion settings it started with.
struct OpenedSession {
    session: PaimonSession,
    initial_config: Vec<(String, Option<String>)>,
}

impl OpenedSession {
    /// `SET paimon.*` options still active and `datafusion.*` settings that differ from the start.
    fn changed_settings(&self) -> Vec<String> {
        let options = self
            .session
            .catalog()
            .read_options()
            .read()
            .expect("options lock is never poisoned");
        let mut changed: Vec<String> = options
            .iter()
            .map(|(k, v)| format!("paimon.{k} = '{v}'"))
            .collect();
        let now = config_entries(&self.session);
        for (key, value) in &now {
            let before = self.initial_config.iter().find(|(k, _)| k == key).map(|(_, v)| v);
            if before != Some(value) {
                changed.push(format!("{key} = {}", value.as_deref().unwrap_or("NULL")));
            }
        }
        changed
    }
}

fn config_entries(session: &PaimonSession) -> Vec<(String, Option<String>)> {
    let state = session.context().state();
    state
        .config_options()
        .entries()
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect()
}

/// One sqllogictest connection: a Paimon session over the file's warehouse.
struct PaimonSlt {
    session: PaimonSession,
    /// Warehouse root, masked as `WAREHOUSE` in output.
    warehouse: String,
}

/// A DataFusion error as sqllogictest sees it: `DataFusion error: <message>`.
#[derive(Debug)]
struct SltError(String);

impl SltError {
    fn new(e: DataFusionError) -> Self {
        SltError(format!("DataFusion error: {}", e.strip_backtrace()))
    }
}

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SltError {}

#[async_trait]
impl AsyncDB for PaimonSlt {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let mask = |e: DataFusionError| SltError(SltError::new(e).0.replace(&self.warehouse, "WAREHOUSE"));
        let sql = sql.replace("WAREHOUSE", &self.warehouse);
        let df = self.session.sql(&sql).await.map_err(mask)?;
        let schema = Arc::clone(df.schema().inner());
        let batches = df.collect().await.map_err(mask)?;
        if schema.fields().is_empty() {
            // DDL, `SET`, `RESET`: no columns.
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        let rows = convert_batches(&batches, &self.warehouse).map_err(mask)?;
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "datafusion-paimon"
    }
}

/// sqllogictest column type letters: `I` integers, `R` floats and decimals, `T` strings, `?` others.
fn column_type(data_type: &DataType) -> DefaultColumnType {
    match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => DefaultColumnType::FloatingPoint,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DefaultColumnType::Text,
        DataType::Dictionary(_, value) => match column_type(value) {
            DefaultColumnType::Text => DefaultColumnType::Text,
            _ => DefaultColumnType::Any,
        },
        _ => DefaultColumnType::Any,
    }
}

fn convert_batches(batches: &[RecordBatch], warehouse: &str) -> Result<Vec<Vec<String>>, DataFusionError> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let cells = batch
                .columns()
                .iter()
                .map(|col| cell_to_string(col, row).map(|s| s.replace(warehouse, "WAREHOUSE")))
                .collect::<Result<Vec<_>, _>>()?;
            rows.extend(expand_row(cells));
        }
    }
    Ok(rows)
}

/// Splits a multi-line last cell (EXPLAIN plans) into one numbered row per line, with leading
/// spaces replaced by `-` because sqllogictest ignores whitespace differences (as DataFusion does).
fn expand_row(mut row: Vec<String>) -> Vec<Vec<String>> {
    let Some(last) = row.last() else { return vec![row] };
    if !last.contains('\n') {
        return vec![row];
    }
    let last = row.pop().expect("row is not empty");
    let mut rows = vec![row];
    for (i, line) in last.split('\n').enumerate() {
        let content = line.trim_start();
        let indent = "-".repeat(line.len() - content.len());
        rows.push(vec![format!("{:02}){indent}{content}", i + 1)]);
    }
    rows
}

fn cell_to_string(col: &ArrayRef, row: usize) -> Result<String, DataFusionError> {
    if !col.is_valid(row) {
        return Ok(NULL_STR.to_string());
    }
    Ok(match col.data_type() {
        DataType::Null => NULL_STR.to_string(),
        DataType::Boolean => col.as_boolean().value(row).to_string(),
        DataType::Float16 => float_to_str(col.as_primitive::<Float16Type>().value(row).to_f64(), || {
            col.as_primitive::<Float16Type>().value(row).to_string()
        }),
        DataType::Float32 => {
            let v = col.as_primitive::<Float32Type>().value(row);
            float_to_str(v as f64, || v.to_string())
        }
        DataType::Float64 => {
            let v = col.as_primitive::<Float64Type>().value(row);
            float_to_str(v, || v.to_string())
        }
        DataType::Decimal32(_, _) => {
            big_decimal_to_str(&col.as_primitive::<Decimal32Type>().value_as_string(row))
        }
        DataType::Decimal64(_, _) => {
            big_decimal_to_str(&col.as_primitive::<Decimal64Type>().value_as_string(row))
        }
        DataType::Decimal128(_, _) => {
            big_decimal_to_str(&col.as_primitive::<Decimal128Type>().value_as_string(row))
        }
        DataType::Decimal256(_, _) => {
            big_decimal_to_str(&col.as_primitive::<Decimal256Type>().value_as_string(row))
        }
        DataType::Utf8 => varchar_to_str(col.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => varchar_to_str(col.as_string::<i64>().value(row)),
        DataType::Utf8View => varchar_to_str(col.as_string_view().value(row)),
        DataType::Dictionary(_, _) => {
            let dict = col.as_any_dictionary();
            let key = dict.normalized_keys()[row];
            cell_to_string(dict.values(), key)?
        }
        _ => ArrayFormatter::try_new(col.as_ref(), &FORMAT_OPTIONS)?
            .value(row)
            .to_string(),
    })
}

fn varchar_to_str(value: &str) -> String {
    if value.is_empty() {
        "(empty)".to_string()
    } else {
        value.trim_end_matches('\n').replace('\u{0000}', "\\0")
    }
}

/// NaN and infinities by name (NaN without its sign), other values through their shortest
/// decimal text (`shortest`), rounded to 12 digits and normalized.
fn float_to_str(value: f64, shortest: impl FnOnce() -> String) -> String {
    if value.is_nan() {
        "NaN".to_string()
    } else if value == f64::INFINITY {
        "Infinity".to_string()
    } else if value == f64::NEG_INFINITY {
        "-Infinity".to_string()
    } else {
        big_decimal_to_str(&shortest())
    }
}

fn big_decimal_to_str(text: &str) -> String {
    let value = BigDecimal::from_str(text).expect("Arrow renders numbers as decimal text");
    value.round(12).normalized().to_plain_string()
}
