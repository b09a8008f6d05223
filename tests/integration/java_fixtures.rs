//! Tables written by Java Paimon 0.9 to 2.0 (`tests/fixtures/java-paimon`, see its README): every
//! table of both warehouses reads (its rows and its metadata system tables), and every expected
//! result there matches.
//!
//! An expected file's `query.options` become `SET paimon.<k> = '<v>'`, except `branch`, which
//! names the table `db."t$branch_<name>"`; `query.filter` is SQL text and `query.projection` the
//! output columns. Rows are compared as multisets in the JSON encoding of
//! `tests/fixtures/README.md`, as [`crate::fixtures`] does for the pypaimon corpus.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use arrow::datatypes::DataType;
use datafusion_paimon::PaimonSession;
use serde_json::{Number, Value};

use crate::fixtures::{batch_to_rows, multiset_difference, sorted_canonical, REPORT_ROWS};
use crate::run_sql;

/// The two warehouses, by the data-file format most of their tables use.
const WAREHOUSES: &[&str] = &["avro", "parquet"];

/// What every table must answer without error: its rows and the system tables that read its
/// snapshots, manifests and schemas.
const READS: &[&str] = &[
    "SELECT * FROM {t}",
    "SELECT count(*) FROM {t}",
    "SELECT * FROM {t$snapshots}",
    "SELECT * FROM {t$schemas}",
    "SELECT * FROM {t$files}",
    "SELECT * FROM {t$manifests}",
    "SELECT * FROM {t$partitions}",
];

/// Tables whose reads still fail, each with the words its error must contain: the feature it
/// names. Issue 42 stays open for them; a read that starts to work (or fails otherwise) fails
/// [`every_java_table_reads`] until the table leaves this list.
const NOT_YET_READ: &[(&str, &str)] = &[
    // Its BLOB descriptors point at absolute paths of the machine that wrote it (Java fails to
    // read them too); `blob_descriptors_of_another_machine` reads it as descriptors.
    ("blob_desc_field", "which cannot be read"),
];

fn java_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/java-paimon")
}

pub(crate) fn warehouse_path(warehouse: &str) -> String {
    java_root()
        .join("warehouses")
        .join(warehouse)
        .to_str()
        .expect("UTF-8 path")
        .to_string()
}

/// Every `(database, table)` of a warehouse: the folders `<db>.db/<t>` that hold a `schema/`.
pub(crate) fn tables(warehouse: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for db in std::fs::read_dir(warehouse_path(warehouse)).expect("warehouse lists") {
        let db = db.expect("entry").path();
        let Some(db_name) = db
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".db"))
        else {
            continue;
        };
        for table in std::fs::read_dir(&db).expect("database lists") {
            let table = table.expect("entry").path();
            if table.join("schema").is_dir() {
                let name = table.file_name().and_then(|n| n.to_str()).expect("UTF-8 name");
                out.push((db_name.to_string(), name.to_string()));
            }
        }
    }
    out.sort();
    out
}

/// `db."t"` or `db."t$suffix"`.
pub(crate) fn quoted(db: &str, table: &str, suffix: &str) -> String {
    format!("{db}.\"{table}{suffix}\"")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_java_table_reads() {
    let mut failures = Vec::new();
    let mut count = 0;
    for warehouse in WAREHOUSES {
        let session = PaimonSession::open(&warehouse_path(warehouse))
            .await
            .expect("warehouse opens");
        for (db, table) in tables(warehouse) {
            count += 1;
            let pending = NOT_YET_READ
                .iter()
                .find(|(t, _)| *t == table)
                .map(|(_, why)| *why);
            for read in READS {
                let sql = read
                    .replace("{t}", &quoted(&db, &table, ""))
                    .replace("{t$snapshots}", &quoted(&db, &table, "$snapshots"))
                    .replace("{t$schemas}", &quoted(&db, &table, "$schemas"))
                    .replace("{t$files}", &quoted(&db, &table, "$files"))
                    .replace("{t$manifests}", &quoted(&db, &table, "$manifests"))
                    .replace("{t$partitions}", &quoted(&db, &table, "$partitions"));
                let result = run_sql(&session, &sql).await;
                match (pending, result) {
                    (None, Err(e)) => failures.push(format!("{warehouse}/{db}.{table}: `{sql}`: {e}")),
                    // the feature named, where the read needs it (metadata tables may work)
                    (Some(why), Err(e)) if !e.to_string().contains(why) => failures.push(format!(
                        "{warehouse}/{db}.{table}: `{sql}` fails without naming '{why}': {e}"
                    )),
                    _ => {}
                }
            }
            if let Some(why) = pending {
                let sql = format!("SELECT * FROM {}", quoted(&db, &table, ""));
                if run_sql(&session, &sql).await.is_ok() && !why.contains("cannot be read") {
                    failures.push(format!(
                        "{warehouse}/{db}.{table} reads now: take it off NOT_YET_READ ({why})"
                    ));
                }
            }
        }
    }
    assert!(count >= 50, "found only {count} Java tables");
    assert!(
        failures.is_empty(),
        "{} reads of {count} Java-written tables failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

macro_rules! java_expected {
    ($($test:ident => ($warehouse:literal, $table:literal)),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                check_table($warehouse, $table).await;
            }
        )*

        /// Every `expected/<warehouse>/<db>.<table>` folder with a test above.
        const CHECKED: &[(&str, &str)] = &[$(($warehouse, $table)),*];
    };
}

java_expected! {
    avro_append_multiple => ("avro", "append_multiple.append_multiple"),
    avro_pk_with_multiple_type => ("avro", "pk_with_multiple_type.pk_with_multiple_type"),
    append_09 => ("parquet", "append_09.append_09"),
    append_10 => ("parquet", "append_10.append_10"),
    append_complex_build_in_fieldid => ("parquet", "append_complex_build_in_fieldid.append_complex_build_in_fieldid"),
    append_row_tracking_with_compact => ("parquet", "append_table_row_tracking_with_compact.append_table_row_tracking_with_compact"),
    append_alter_cast_data_evolution => ("parquet", "append_table_alter_table_with_cast_with_data_evolution.append_table_alter_table_with_cast_with_data_evolution"),
    append_multi_blob => ("parquet", "append_table_with_multi_blob.append_table_with_multi_blob"),
    blob_alter_cast_data_evolution => ("parquet", "blob_append_table_alter_table_with_cast_with_data_evolution.blob_append_table_alter_table_with_cast_with_data_evolution"),
    blob_data_evolution_dense_stats => ("parquet", "blob_data_evolution_with_dense_stats.blob_data_evolution_with_dense_stats"),
    data_evolution_dense_stats => ("parquet", "data_evolution_with_dense_stats.data_evolution_with_dense_stats"),
    data_evolution_with_index => ("parquet", "data_evolution_with_index.data_evolution_with_index"),
    append_pt_branch => ("parquet", "append_table_with_append_pt_branch.append_table_with_append_pt_branch"),
    append_rt_branch => ("parquet", "append_table_with_rt_branch.append_table_with_rt_branch"),
    append_with_bitmap => ("parquet", "append_with_bitmap.append_with_bitmap"),
    append_empty_partition => ("parquet", "append_with_empty_partition.append_with_empty_partition"),
    append_empty_partition_empty_value => ("parquet", "append_with_empty_partition_with_empty_value.append_with_empty_partition_with_empty_value"),
    append_empty_partition_specific_name => ("parquet", "append_with_empty_partition_with_specific_name.append_with_empty_partition_with_specific_name"),
    append_ts_precision_timezone => ("parquet", "append_with_multiple_ts_precision_and_timezone.append_with_multiple_ts_precision_and_timezone"),
    pk_09 => ("parquet", "pk_09.pk_09"),
    pk_dv_index_in_data => ("parquet", "pk_dv_index_in_data_no_external.pk_dv_index_in_data_no_external"),
    pk_dv_index_not_in_data => ("parquet", "pk_dv_index_not_in_data_no_external.pk_dv_index_not_in_data_no_external"),
    pk_nested_type => ("parquet", "pk_table_nested_type.pk_table_nested_type"),
    pk_scan_and_read_dv => ("parquet", "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"),
    pk_scan_and_read_first_row => ("parquet", "pk_table_scan_and_read_first_row.pk_table_scan_and_read_first_row"),
    pk_scan_and_read_mor => ("parquet", "pk_table_scan_and_read_mor.pk_table_scan_and_read_mor"),
}

/// A folder of expected results added to the corpus must get a test.
#[test]
fn every_java_expected_folder_is_checked() {
    let mut present = BTreeSet::new();
    for warehouse in WAREHOUSES {
        let dir = java_root().join("expected").join(warehouse);
        for entry in std::fs::read_dir(&dir).expect("expected folder lists") {
            let name = entry
                .expect("entry")
                .file_name()
                .into_string()
                .expect("UTF-8 name");
            present.insert((warehouse.to_string(), name));
        }
    }
    // the expected results of tables on NOT_YET_READ wait for them
    let checked: BTreeSet<(String, String)> = CHECKED
        .iter()
        .map(|(w, t)| (w.to_string(), t.to_string()))
        .chain(
            NOT_YET_READ
                .iter()
                .map(|(t, _)| ("parquet".to_string(), format!("{t}.{t}"))),
        )
        .filter(|(w, t)| java_root().join("expected").join(w).join(t).is_dir())
        .collect();
    assert_eq!(
        present, checked,
        "expected folders vs folders checked in java_fixtures.rs"
    );
}

/// Checks every expected file of one table, then fails with all mismatches.
async fn check_table(warehouse: &str, table: &str) {
    let dir = java_root().join("expected").join(warehouse).join(table);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let session = PaimonSession::open(&warehouse_path(warehouse))
        .await
        .expect("warehouse opens");
    let mut failures = Vec::new();
    for file in &files {
        if let Err(msg) = check_file(&session, file).await {
            failures.push(msg);
        }
    }
    assert!(
        failures.is_empty(),
        "{warehouse}/{table}: {} of {} expected files differ\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// The `SET` statements and the query of one expected file.
fn statements(expected: &Value) -> (Vec<String>, String) {
    let table = expected["table"].as_str().expect("table");
    let (db, name) = table.split_once('.').expect("db.table");
    let query = &expected["query"];
    let mut sets = Vec::new();
    let mut suffix = String::new();
    if let Some(options) = query["options"].as_object() {
        for (k, v) in options {
            let v = v.as_str().expect("option value is a string");
            if k == "branch" {
                suffix = format!("$branch_{v}");
            } else {
                sets.push(format!("SET paimon.{k} = '{v}'"));
            }
        }
    }
    let select = match query["projection"].as_array() {
        Some(cols) => cols
            .iter()
            .map(|c| format!("\"{}\"", c.as_str().expect("column name")))
            .collect::<Vec<_>>()
            .join(", "),
        None => "*".to_string(),
    };
    let mut sql = format!("SELECT {select} FROM {}", quoted(db, name, &suffix));
    if let Some(filter) = query["filter"].as_str() {
        write!(sql, " WHERE {filter}").unwrap();
    }
    (sets, sql)
}

/// Runs the query of one expected file and compares its result.
async fn check_file(session: &PaimonSession, path: &PathBuf) -> Result<(), String> {
    let shown = path
        .strip_prefix(java_root())
        .unwrap_or(path)
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let expected: Value = serde_json::from_str(&text).map_err(|e| format!("{shown}: cannot parse: {e}"))?;
    let (sets, sql) = statements(&expected);
    let context = [sets.clone(), vec![sql.clone()]].concat().join("; ");
    let result = async {
        for set in &sets {
            run_sql(session, set).await?;
        }
        run_sql(session, &sql).await
    }
    .await;
    run_sql(session, "RESET")
        .await
        .map_err(|e| format!("{shown}: RESET failed: {e}"))?;
    let batches = result.map_err(|e| format!("{shown}: `{context}` failed: {e}"))?;

    let mut problems = Vec::new();
    let expected_names: Vec<&str> = expected["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("column name"))
        .collect();
    if let Some(batch) = batches.first() {
        let schema = batch.schema();
        let actual: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        if actual != expected_names {
            problems.push(format!("columns: expected {expected_names:?}, got {actual:?}"));
        }
    }
    let types: Vec<DataType> = batches
        .first()
        .map(|b| {
            b.schema()
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect()
        })
        .unwrap_or_default();
    let normalize_row = |row: Vec<Value>| -> Vec<Value> {
        row.into_iter()
            .enumerate()
            .map(|(i, v)| match types.get(i) {
                Some(t) => normalize(v, t),
                None => v,
            })
            .collect()
    };
    let mut actual_rows = Vec::new();
    for batch in &batches {
        let rows = batch_to_rows(batch).map_err(|e| format!("{shown}: `{context}`: {e}"))?;
        actual_rows.extend(rows.into_iter().map(normalize_row));
    }
    let actual_rows = sorted_canonical(actual_rows);
    let expected_rows = sorted_canonical(
        expected["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| normalize_row(r.as_array().expect("row").clone()))
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
            }
        }
        problems.push(msg);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{shown}: `{context}`\n  {}", problems.join("\n  ")))
    }
}

/// The value conventions of this corpus, applied to both sides (they differ from the pypaimon
/// corpus the shared encoder follows): timestamps carry only the fractional digits they need and
/// no zone marker, a FLOAT is its shortest decimal, and map entries are in no particular order
/// (sorted here on both sides).
fn normalize(value: Value, data_type: &DataType) -> Value {
    match (value, data_type) {
        (Value::Null, _) => Value::Null,
        (Value::String(s), DataType::Timestamp(_, _)) => {
            let s = s.trim_end_matches('Z');
            let s = match s.split_once('.') {
                Some((whole, fraction)) => {
                    let fraction = fraction.trim_end_matches('0');
                    if fraction.is_empty() {
                        whole.to_string()
                    } else {
                        format!("{whole}.{fraction}")
                    }
                }
                None => s.to_string(),
            };
            Value::String(s)
        }
        (Value::Number(n), DataType::Float32) => {
            let shortest: f64 = format!("{}", n.as_f64().expect("a number") as f32)
                .parse()
                .expect("a float");
            Number::from_f64(shortest)
                .map(Value::Number)
                .unwrap_or(Value::Null)
        }
        (Value::Array(items), DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _)) => {
            Value::Array(items.into_iter().map(|v| normalize(v, f.data_type())).collect())
        }
        (Value::Array(pairs), DataType::Map(entries, _)) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Value::Array(pairs);
            };
            let mut pairs: Vec<Value> = pairs
                .into_iter()
                .map(|pair| match pair {
                    Value::Array(mut kv_pair) if kv_pair.len() == 2 => {
                        let v = normalize(kv_pair.pop().expect("value"), kv[1].data_type());
                        let k = normalize(kv_pair.pop().expect("key"), kv[0].data_type());
                        Value::Array(vec![k, v])
                    }
                    other => other,
                })
                .collect();
            pairs.sort_by_key(|p| p.to_string());
            Value::Array(pairs)
        }
        (Value::Object(mut fields), DataType::Struct(children)) => {
            for child in children {
                if let Some(v) = fields.remove(child.name()) {
                    fields.insert(child.name().clone(), normalize(v, child.data_type()));
                }
            }
            Value::Object(fields)
        }
        (other, _) => other,
    }
}

/// The magic bytes every file of `dir` starts with, by file name prefix.
fn manifest_magics(dir: &std::path::Path) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).expect("manifest folder lists") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("manifest reads");
        let magic = if bytes.starts_with(b"Obj\x01") {
            "avro"
        } else if bytes.starts_with(b"ORC") {
            "orc"
        } else if bytes.starts_with(b"PAR1") {
            "parquet"
        } else {
            "unknown"
        };
        let name = path.file_name().and_then(|n| n.to_str()).expect("UTF-8 name");
        let kind = if name.starts_with("manifest-list-") {
            "manifest-list"
        } else if name.starts_with("index-manifest-") {
            "index-manifest"
        } else {
            "manifest"
        };
        out.insert((kind.to_string(), magic.to_string()));
    }
    out
}

/// Writes to a table Java created with `manifest.format = orc` add ORC manifests (Java could not
/// read Avro ones there), and the table reads every row afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_an_orc_manifest_table_keep_orc() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = java_root().join("warehouses/parquet/append_09.db");
    crate::errors::copy_dir(&source, &dir.path().join("append_09.db")).expect("copy");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8"))
        .await
        .expect("open");
    let count = |batches: Vec<arrow::array::RecordBatch>| -> i64 {
        use arrow::array::AsArray;
        batches[0]
            .column(0)
            .as_primitive::<arrow::datatypes::Int64Type>()
            .value(0)
    };
    let before = count(
        run_sql(&session, "SELECT count(*) FROM append_09.append_09")
            .await
            .expect("count"),
    );
    run_sql(
        &session,
        "INSERT INTO append_09.append_09 SELECT * FROM append_09.append_09 LIMIT 3",
    )
    .await
    .expect("insert");
    let after = count(
        run_sql(&session, "SELECT count(*) FROM append_09.append_09")
            .await
            .expect("count"),
    );
    assert_eq!(after, before + 3);
    let magics = manifest_magics(&dir.path().join("append_09.db/append_09/manifest"));
    assert!(
        magics.iter().all(|(_, magic)| magic == "orc"),
        "manifests of an orc table: {magics:?}"
    );
    // Our ORC manifest lists and manifests have the columns and types of Java's newest ones (a
    // Paimon 1.4 table; 0.9's lack the later columns, which Java reads as absent), followed by
    // those Paimon added since (row-id ranges), which readers take by name.
    let written_by_java: BTreeSet<String> = std::fs::read_dir(source.join("append_09/manifest"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("UTF-8"))
        .collect();
    let newest = java_root().join("warehouses/parquet/blob_data_evolution_with_dense_stats.db/blob_data_evolution_with_dense_stats/manifest");
    let java: BTreeSet<String> = std::fs::read_dir(&newest)
        .expect("list")
        .map(|e| e.expect("entry").file_name().into_string().expect("UTF-8"))
        .collect();
    let manifest_dir = dir.path().join("append_09.db/append_09/manifest");
    for kind in ["manifest-list-", "manifest-"] {
        let of_kind = |name: &String| {
            name.starts_with(kind) && (kind == "manifest-list-" || !name.starts_with("manifest-list-"))
        };
        let java_file = java.iter().find(|n| of_kind(n)).expect("a Java file");
        let ours: Vec<String> = std::fs::read_dir(&manifest_dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().into_string().expect("UTF-8"))
            .filter(|n| of_kind(n) && !written_by_java.contains(n))
            .collect();
        assert!(!ours.is_empty(), "no {kind} file written");
        let expected = orc_columns(&newest.join(java_file));
        for name in ours {
            let columns = orc_columns(&manifest_dir.join(&name));
            // every Java column, in Java's order, with its type (ours may add later ones)
            let mut rest = columns.iter();
            for column in &expected {
                assert!(
                    rest.any(|c| c == column),
                    "{name} lacks Java's {column} (or has it out of order): {columns:?}"
                );
            }
        }
    }
}

/// The columns of an ORC file, nested ones as `parent.child`, in file order: names and types
/// without nullability or metadata.
fn orc_columns(path: &std::path::Path) -> Vec<String> {
    fn describe(prefix: &str, field: &arrow::datatypes::Field, out: &mut Vec<String>) {
        let name = format!("{prefix}{}", field.name());
        match field.data_type() {
            DataType::Struct(fields) => {
                out.push(format!("{name}: struct"));
                for f in fields {
                    describe(&format!("{name}."), f, out);
                }
            }
            DataType::List(item) => out.push(format!("{name}: list<{}>", item.data_type())),
            other => out.push(format!("{name}: {other}")),
        }
    }
    let file = std::fs::File::open(path).expect("open");
    let reader = orc_rust::ArrowReaderBuilder::try_new(file).expect("an ORC file");
    let mut out = Vec::new();
    for field in reader.schema().fields() {
        describe("", field, &mut out);
    }
    out
}

/// `manifest.format` decides the format of every manifest list, manifest and index manifest a
/// table gets (dynamic buckets and deletion vectors write index manifests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifest_format_option_chooses_the_format_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8"))
        .await
        .expect("open");
    for format in ["avro", "orc", "parquet"] {
        let statements = [
            format!(
                "CREATE TABLE t_{format} (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) \
                 WITH ('manifest.format' = '{format}', 'deletion-vectors.enabled' = 'true', \
                 'index-file-in-data-file-dir' = 'true')"
            ),
            format!("INSERT INTO t_{format} VALUES (1, 'a'), (2, 'b'), (3, 'c')"),
            format!("INSERT INTO t_{format} VALUES (2, 'B')"),
            format!("DELETE FROM t_{format} WHERE k = 3"),
            format!("CALL sys.compact('default.t_{format}')"),
        ];
        for sql in &statements {
            run_sql(&session, sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        let rows = run_sql(&session, &format!("SELECT k, v FROM t_{format} ORDER BY k"))
            .await
            .expect("read");
        let text = arrow::util::pretty::pretty_format_batches(&rows)
            .expect("format")
            .to_string();
        assert!(
            text.contains("| 1 | a |") && text.contains("| 2 | B |") && !text.contains("| 3 "),
            "{format}: {text}"
        );
        let magics = manifest_magics(&dir.path().join(format!("default.db/t_{format}/manifest")));
        let kinds: BTreeSet<&str> = magics.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            ["index-manifest", "manifest", "manifest-list"]
                .into_iter()
                .collect()
        );
        assert!(magics.iter().all(|(_, m)| m == format), "{format}: {magics:?}");
        // The deletion vectors and the dynamic-bucket index sit beside the data files.
        let index_dir = dir.path().join(format!("default.db/t_{format}/index"));
        assert!(!index_dir.exists(), "{format}: index files went to index/");
    }
}

/// `blob_desc_field` (README in the table): b0 and b1 are descriptor columns
/// (`blob-descriptor-field`) whose descriptors name files on the machine that wrote the table;
/// b2 and b3 live in `.blob` files. Its rows, by the README's writes: (1, raw_2_0, raw_3_0),
/// (2, raw_2_1, NULL), (3, raw_2_2, raw_3_2). With `blob-as-descriptor` every BLOB column reads
/// as descriptors: b1's row 2 is the payload of a blob file (offset 4, 5 bytes), the rest of b1
/// is NULL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blob_descriptors_of_another_machine() {
    use arrow::array::{Array, AsArray};
    let session = PaimonSession::open(&warehouse_path("parquet"))
        .await
        .expect("open");
    let table = "blob_desc_field.blob_desc_field";
    let rows = run_sql(&session, &format!("SELECT f0, b2, b3 FROM {table} ORDER BY f0"))
        .await
        .expect("the .blob columns read");
    let text = |b: &arrow::array::RecordBatch, c: usize, r: usize| -> Option<String> {
        let col = b.column(c).as_binary::<i64>();
        (!col.is_null(r)).then(|| String::from_utf8_lossy(col.value(r)).to_string())
    };
    let batch = arrow::compute::concat_batches(&rows[0].schema(), &rows).expect("concat");
    let got: Vec<(Option<String>, Option<String>)> = (0..batch.num_rows())
        .map(|r| (text(&batch, 1, r), text(&batch, 2, r)))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("raw_2_0".into()), Some("raw_3_0".into())),
            (Some("raw_2_1".into()), None),
            (Some("raw_2_2".into()), Some("raw_3_2".into())),
        ]
    );
    let err = run_sql(&session, &format!("SELECT b0 FROM {table}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("column b0") && err.contains("raw_blob"), "{err}");
    run_sql(&session, "SET paimon.blob-as-descriptor = 'true'")
        .await
        .expect("set");
    let rows = run_sql(
        &session,
        &format!("SELECT f0, b0, b1, b2 FROM {table} ORDER BY f0"),
    )
    .await
    .expect("descriptors read");
    run_sql(&session, "RESET").await.expect("reset");
    let batch = arrow::compute::concat_batches(&rows[0].schema(), &rows).expect("concat");
    let b0 = batch.column(1).as_binary::<i64>();
    let b1 = batch.column(2).as_binary::<i64>();
    let b2 = batch.column(3).as_binary::<i64>();
    assert!(String::from_utf8_lossy(b0.value(0)).contains("raw_blob/b0-row-0.bin"));
    assert!(b1.is_null(0) && !b1.is_null(1) && b1.is_null(2));
    // a .blob column's descriptor names its file, the payload's offset and length
    let d = b2.value(0);
    assert_eq!(d[0], 2, "version 2");
    let uri_len = i32::from_le_bytes(d[9..13].try_into().unwrap()) as usize;
    let uri = std::str::from_utf8(&d[13..13 + uri_len]).unwrap();
    assert!(uri.ends_with(".blob"), "{uri}");
    let offset = i64::from_le_bytes(d[13 + uri_len..21 + uri_len].try_into().unwrap());
    let length = i64::from_le_bytes(d[21 + uri_len..29 + uri_len].try_into().unwrap());
    assert_eq!((offset, length), (4, "raw_2_0".len() as i64));
}

/// `t$row_tracking` (Paimon's `RowTrackingTable`): every column, then `_ROW_ID` and
/// `_SEQUENCE_NUMBER`. The values follow the tables' READMEs and Java's rule: a file that stores
/// the columns (the compacted one) gives them, otherwise a row's id is its file's first row id
/// plus its position and its sequence number its file's largest; a stitched data-evolution row
/// takes both from the newest data file of its range (snapshot 2's, sequence number 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_tracking_columns() {
    let session = PaimonSession::open(&warehouse_path("parquet"))
        .await
        .expect("open");
    let render = |batches: Vec<arrow::array::RecordBatch>| -> Vec<String> {
        let mut out: Vec<String> = batches
            .iter()
            .flat_map(|b| batch_to_rows(b).expect("rows"))
            .map(|r| Value::Array(r).to_string())
            .collect();
        out.sort();
        out
    };
    let compacted = run_sql(
        &session,
        "SELECT f0, \"_ROW_ID\", \"_SEQUENCE_NUMBER\" FROM append_table_row_tracking_with_compact.\"append_table_row_tracking_with_compact$row_tracking\"",
    )
    .await
    .expect("row tracking of a compacted table");
    assert_eq!(
        render(compacted),
        vec![
            r#"["Alice",1,1]"#,
            r#"["Bob",2,2]"#,
            r#"["David",3,2]"#,
            r#"["Lily",0,1]"#
        ]
    );
    let stitched = run_sql(
        &session,
        "SELECT * FROM data_evolution_with_dense_stats.\"data_evolution_with_dense_stats$row_tracking\"",
    )
    .await
    .expect("row tracking of a data-evolution table");
    assert_eq!(
        render(stitched),
        vec![r#"["Alice",4,104,3.1,1,2]"#, r#"["Lily",2,102,2.1,0,2]"#]
    );
    let err = run_sql(&session, "SELECT * FROM pk_09.\"pk_09$row_tracking\"")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("row-tracking.enabled"), "{err}");
}
