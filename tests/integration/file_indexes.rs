//! File indexes of Java-written append tables (`tests/fixtures/java-paimon`): bitmap (versions 1
//! and 2, embedded in the manifest or in a `.index` file), bloom filter, BSI and range bitmap.
//! An index may only skip files that hold no matching row, so every predicate is answered the
//! same with `file-index.read.enabled` on and off, for every value each indexed column holds;
//! values a file does not hold skip it, and `EXPLAIN` says so.

use arrow::array::{Array, AsArray};
use datafusion_paimon::PaimonSession;
use serde_json::Value;

use crate::java_fixtures::{quoted, tables, warehouse_path};
use crate::run_sql;

/// The indexed columns of a table's latest schema, from its `file-index.<type>.columns`.
fn indexed_columns(warehouse: &str, db: &str, table: &str) -> Vec<String> {
    let dir = std::path::Path::new(&warehouse_path(warehouse))
        .join(format!("{db}.db"))
        .join(table)
        .join("schema");
    let latest = std::fs::read_dir(&dir)
        .expect("schema dir lists")
        .filter_map(|e| {
            let name = e.expect("entry").file_name().into_string().ok()?;
            name.strip_prefix("schema-")?.parse::<i64>().ok()
        })
        .max()
        .expect("a schema");
    let schema: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("schema-{latest}"))).expect("schema reads"))
            .expect("schema JSON");
    let mut columns: Vec<String> = schema["options"]
        .as_object()
        .expect("options")
        .iter()
        .filter(|(k, _)| k.starts_with("file-index.") && k.ends_with(".columns"))
        .flat_map(|(_, v)| v.as_str().expect("text").split(',').map(|c| c.trim().to_string()))
        .collect();
    columns.sort();
    columns.dedup();
    columns
}

async fn count(session: &PaimonSession, sql: &str) -> i64 {
    let batches = run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    batches[0]
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(0)
}

async fn explain(session: &PaimonSession, sql: &str) -> String {
    let batches = run_sql(session, &format!("EXPLAIN {sql}"))
        .await
        .expect("explain");
    batches
        .iter()
        .flat_map(|b| {
            let plans = b.column(1).as_string::<i32>();
            (0..b.num_rows())
                .map(|i| plans.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The predicates to compare for one column: `IS NULL`, and `=`, `<`, `>=` of every value it
/// holds (as a literal of the column's type).
async fn predicates(session: &PaimonSession, t: &str, c: &str) -> Vec<String> {
    let sql = format!("SELECT DISTINCT CAST(\"{c}\" AS VARCHAR), arrow_typeof(\"{c}\") FROM {t}");
    let mut out = vec![format!("\"{c}\" IS NULL")];
    for batch in run_sql(session, &sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    {
        let values = arrow::compute::cast(batch.column(0), &arrow::datatypes::DataType::Utf8).expect("text");
        let values = values.as_string::<i32>();
        let types = arrow::compute::cast(batch.column(1), &arrow::datatypes::DataType::Utf8).expect("text");
        let types = types.as_string::<i32>();
        for i in 0..batch.num_rows() {
            if values.is_null(i) {
                continue;
            }
            let literal = format!(
                "arrow_cast('{}', '{}')",
                values.value(i).replace('\'', "''"),
                types.value(i)
            );
            for op in ["=", "<", ">="] {
                out.push(format!("\"{c}\" {op} {literal}"));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_indexes_never_change_an_answer() {
    let mut checked = 0;
    for warehouse in ["avro", "parquet"] {
        let session = PaimonSession::open(&warehouse_path(warehouse))
            .await
            .expect("open");
        for (db, table) in tables(warehouse) {
            let columns = indexed_columns(warehouse, &db, &table);
            if columns.is_empty() {
                continue;
            }
            let t = quoted(&db, &table, "");
            for c in &columns {
                for predicate in predicates(&session, &t, c).await {
                    let sql = format!("SELECT count(*) FROM {t} WHERE {predicate}");
                    run_sql(&session, "SET paimon.file-index.read.enabled = 'false'")
                        .await
                        .expect("set");
                    let without = count(&session, &sql).await;
                    run_sql(&session, "RESET paimon.file-index.read.enabled")
                        .await
                        .expect("reset");
                    let with = count(&session, &sql).await;
                    assert_eq!(with, without, "{warehouse}: {sql}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} predicates checked");
}

/// A value no file holds skips the files by their index (each kind of index and both places an
/// index lives); a value one holds does not, and neither does a disabled index. (A range-bitmap
/// index knows a file's smallest and largest value, as its statistics do: the unit tests of
/// `file_index` read those.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_indexes_skip_files_in_explain() {
    let session = PaimonSession::open(&warehouse_path("parquet"))
        .await
        .expect("open");
    let t = |name: &str| quoted(name, name, "");
    // (values inside each file's min/max statistics, which would skip the file otherwise)
    let skips = [
        // bitmap version 2, embedded in the manifest
        (t("append_with_bitmap"), "f0 = 'Carl'"),
        // bitmap in a `.index` file beside the data file
        (t("append_with_bitmap_no_embedding"), "f1 IN (15, 17)"),
        // bitmap version 1
        (t("append_with_bitmap_v1"), "f0 = 'Dan'"),
        // bloom filter: strings by xxHash64, integers and timestamps by their 64-bit hash
        (t("append_with_bloomfilter"), "f0 = 'Carl'"),
        (t("append_with_bloomfilter"), "f1 = 150"),
        (
            t("append_with_bloomfilter"),
            "f4 = TIMESTAMP '2025-04-25 01:00:02.000124'",
        ),
    ];
    for (table, predicate) in skips {
        let sql = format!("SELECT * FROM {table} WHERE {predicate}");
        let plan = explain(&session, &sql).await;
        assert!(plan.contains("files_skipped_by_index="), "{sql}:\n{plan}");
        assert_eq!(
            count(
                &session,
                &format!("SELECT count(*) FROM {table} WHERE {predicate}")
            )
            .await,
            0
        );
        run_sql(&session, "SET paimon.file-index.read.enabled = 'false'")
            .await
            .expect("set");
        let plan = explain(&session, &sql).await;
        run_sql(&session, "RESET").await.expect("reset");
        assert!(
            !plan.contains("files_skipped_by_index="),
            "disabled: {sql}:\n{plan}"
        );
    }
    let keeps = [
        (
            t("append_with_bitmap"),
            "f0 = (SELECT min(f0) FROM append_with_bitmap.append_with_bitmap)",
        ),
        (
            t("append_with_bloomfilter"),
            "f4 = TIMESTAMP '2025-04-25 01:00:02.000123'",
        ),
        (t("append_with_bitmap_no_embedding"), "f2 IS NULL"),
    ];
    for (table, predicate) in keeps {
        let sql = format!("SELECT * FROM {table} WHERE {predicate}");
        let plan = explain(&session, &sql).await;
        assert!(!plan.contains("files_skipped_by_index="), "{sql}:\n{plan}");
    }
}
