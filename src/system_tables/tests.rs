//! System tables against the pypaimon 2.1.0 fixtures (`tests/fixtures/pypaimon-2.1.0`), plus
//! schema, time-travel and error checks.

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Int32Type, Int64Type, TimeUnit, TimestampMillisecondType};
use serde_json::Value;

use crate::sql::PaimonSession;

const FIXTURES: &str = "tests/fixtures/pypaimon-2.1.0";

async fn session() -> PaimonSession {
    PaimonSession::open(&format!("{FIXTURES}/warehouse"))
        .await
        .expect("fixture warehouse opens")
}

async fn query(session: &PaimonSession, sql: &str) -> datafusion::common::Result<Vec<RecordBatch>> {
    session.sql(sql).await?.collect().await
}

/// One cell as JSON, encoded as `tests/fixtures/README.md` describes (the types system tables use).
fn cell(array: &dyn Array, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    match array.data_type() {
        ArrowType::Boolean => Value::Bool(array.as_boolean().value(row)),
        ArrowType::Int32 => array.as_primitive::<Int32Type>().value(row).into(),
        ArrowType::Int64 => array.as_primitive::<Int64Type>().value(row).into(),
        ArrowType::Utf8 => array.as_string::<i32>().value(row).into(),
        ArrowType::LargeUtf8 => array.as_string::<i64>().value(row).into(),
        ArrowType::Utf8View => array.as_string_view().value(row).into(),
        ArrowType::Timestamp(TimeUnit::Millisecond, tz) => {
            let millis = array.as_primitive::<TimestampMillisecondType>().value(row);
            let t = chrono::DateTime::from_timestamp_millis(millis)
                .expect("in range")
                .naive_utc();
            let z = if tz.is_some() { "Z" } else { "" };
            format!("{}{z}", t.format("%Y-%m-%dT%H:%M:%S%.3f")).into()
        }
        ArrowType::List(_) => {
            let list = array.as_list::<i32>().value(row);
            Value::Array((0..list.len()).map(|i| cell(list.as_ref(), i)).collect())
        }
        ArrowType::Struct(fields) => {
            let s = array.as_struct();
            Value::Object(
                fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (f.name().clone(), cell(s.column(i).as_ref(), row)))
                    .collect(),
            )
        }
        other => panic!("no JSON encoding for {other} in the system-table tests"),
    }
}

fn rows(batches: &[RecordBatch]) -> Vec<Value> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(Value::Array(
                b.columns().iter().map(|c| cell(c.as_ref(), r)).collect(),
            ));
        }
    }
    out
}

fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_cached_key(|r| r.to_string());
    rows
}

/// The SQL reference of `db.table$name`.
fn table_ref(system_table: &str) -> String {
    let (db, table) = system_table.split_once('.').expect("db.table$name");
    format!("\"{db}\".\"{table}\"")
}

/// Every expected file of query type `system` in `expected/index.json`, compared as a multiset
/// of rows over the file's `kept_columns`.
#[tokio::test]
async fn system_tables_match_pypaimon_fixtures() {
    let index: Value =
        serde_json::from_slice(&std::fs::read(format!("{FIXTURES}/expected/index.json")).unwrap()).unwrap();
    let session = session().await;
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for (_, table) in index["tables"].as_object().expect("tables") {
        for exp in table["expected"].as_array().expect("expected") {
            if exp["query"]["type"] != "system" {
                continue;
            }
            let file = exp["file"].as_str().expect("file");
            let expected: Value =
                serde_json::from_slice(&std::fs::read(format!("{FIXTURES}/{file}")).unwrap()).unwrap();
            let q = &expected["query"];
            let columns: Vec<String> = q["kept_columns"]
                .as_array()
                .expect("kept_columns")
                .iter()
                .map(|c| format!("\"{}\"", c.as_str().unwrap()))
                .collect();
            let sql = format!(
                "SELECT {} FROM {}",
                columns.join(", "),
                table_ref(q["system_table"].as_str().unwrap())
            );
            match query(&session, &sql).await {
                Err(e) => failed.push(format!("{file}: {sql}: {e}")),
                Ok(batches) => {
                    let got = sorted(rows(&batches));
                    let want = sorted(expected["rows"].as_array().expect("rows").clone());
                    if got == want {
                        passed.push(file.to_string());
                    } else {
                        let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).collect();
                        let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).collect();
                        failed.push(format!(
                            "{file}: {} rows, expected {}\n  missing: {missing:?}\n  unexpected: {extra:?}",
                            got.len(),
                            want.len()
                        ));
                    }
                }
            }
        }
    }
    eprintln!(
        "system-table fixtures passed ({}):\n  {}",
        passed.len(),
        passed.join("\n  ")
    );
    assert!(!passed.is_empty(), "no system-table fixtures found");
    assert!(
        failed.is_empty(),
        "system-table fixtures failed ({}):\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Column names and Arrow types of every system table (semantics.md §8).
#[tokio::test]
async fn system_table_schemas() {
    let session = session().await;
    let expect = [
        (
            "snapshots",
            "snapshot_id:Int64 schema_id:Int64 commit_user:Utf8 commit_identifier:Int64 commit_kind:Utf8 \
             commit_time:Timestamp(ms) base_manifest_list:Utf8 delta_manifest_list:Utf8 changelog_manifest_list:Utf8 \
             total_record_count:Int64 delta_record_count:Int64 changelog_record_count:Int64 watermark:Int64 \
             next_row_id:Int64 operation:Utf8 writer_version:Utf8",
        ),
        (
            "schemas",
            "schema_id:Int64 fields:Utf8 partition_keys:Utf8 primary_keys:Utf8 options:Utf8 comment:Utf8 update_time:Timestamp(ms)",
        ),
        ("options", "key:Utf8 value:Utf8"),
        (
            "files",
            "partition:Utf8 bucket:Int32 file_path:Utf8 file_format:Utf8 schema_id:Int64 level:Int32 record_count:Int64 \
             file_size_in_bytes:Int64 min_key:Utf8 max_key:Utf8 null_value_counts:Utf8 min_value_stats:Utf8 \
             max_value_stats:Utf8 min_sequence_number:Int64 max_sequence_number:Int64 creation_time:Timestamp(ms) \
             deleteRowCount:Int64 file_source:Utf8 first_row_id:Int64 write_cols:List(Utf8)",
        ),
        (
            "manifests",
            "file_name:Utf8 file_size:Int64 num_added_files:Int64 num_deleted_files:Int64 schema_id:Int64 \
             min_partition_stats:Utf8 max_partition_stats:Utf8 min_row_id:Int64 max_row_id:Int64",
        ),
        (
            "partitions",
            "partition:Utf8 record_count:Int64 file_size_in_bytes:Int64 file_count:Int64 last_update_time:Timestamp(ms) \
             created_at:Timestamp(ms) created_by:Utf8 updated_by:Utf8 options:Utf8 total_buckets:Int32 done:Boolean \
             deleted_record_count:Int64",
        ),
        (
            "buckets",
            "partition:Utf8 bucket:Int32 record_count:Int64 file_size_in_bytes:Int64 file_count:Int64 last_update_time:Timestamp(ms)",
        ),
        (
            "tags",
            "tag_name:Utf8 snapshot_id:Int64 schema_id:Int64 commit_time:Timestamp(ms) record_count:Int64 \
             create_time:Timestamp(ms) time_retained:Utf8",
        ),
        (
            "table_indexes",
            "partition:Utf8 bucket:Int32 index_type:Utf8 file_name:Utf8 file_size:Int64 row_count:Int64 \
             dv_ranges:List(Struct(f0:Utf8,f1:Int32,f2:Int32,_CARDINALITY:Int64)) row_range_start:Int64 row_range_end:Int64 \
             index_field_id:Int32 index_field_name:Utf8",
        ),
    ];
    fn short(t: &ArrowType) -> String {
        match t {
            ArrowType::Timestamp(TimeUnit::Millisecond, None) => "Timestamp(ms)".into(),
            ArrowType::List(f) => format!("List({})", short(f.data_type())),
            ArrowType::Struct(fs) => {
                format!(
                    "Struct({})",
                    fs.iter()
                        .map(|f| format!("{}:{}", f.name(), short(f.data_type())))
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }
            other => format!("{other:?}"),
        }
    }
    for (name, want) in expect {
        let df = session
            .sql(&format!("SELECT * FROM pk.\"partitioned_b4${name}\""))
            .await
            .unwrap();
        let got: Vec<String> = df
            .schema()
            .fields()
            .iter()
            .map(|f| format!("{}:{}", f.name(), short(f.data_type())))
            .collect();
        let want: Vec<&str> = want.split_whitespace().collect();
        assert_eq!(got, want, "${name}");
        // Every table builds and reads.
        query(&session, &format!("SELECT * FROM pk.\"partitioned_b4${name}\""))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn unknown_system_table_names_it() {
    let session = session().await;
    let err = query(&session, "SELECT * FROM pk.\"dedup_basic$nope\"")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("'nope'") && err.contains("pk.dedup_basic"), "{err}");
}

#[tokio::test]
async fn snapshot_dependent_tables_honour_time_travel() {
    let session = session().await;
    let count = |sql: String| {
        let session = session.clone();
        async move { rows(&query(&session, &sql).await.unwrap()).len() }
    };
    session.sql("SET paimon.scan.snapshot-id = 1").await.unwrap();
    assert_eq!(count("SELECT * FROM pk.\"dedup_basic$files\"".into()).await, 1);
    // Snapshot 1: an empty base list plus one delta manifest.
    assert_eq!(
        count("SELECT * FROM pk.\"dedup_basic$manifests\"".into()).await,
        1
    );
    let r = rows(
        &query(
            &session,
            "SELECT record_count, file_count FROM pk.\"dedup_basic$buckets\"",
        )
        .await
        .unwrap(),
    );
    assert_eq!(r, vec![serde_json::json!([20, 1])]);
    // Tables listing every version ignore time travel.
    assert_eq!(
        count("SELECT * FROM pk.\"dedup_basic$snapshots\"".into()).await,
        4
    );

    session
        .sql("SET paimon.scan.tag-name = after_updates")
        .await
        .unwrap();
    session.sql("RESET paimon.scan.snapshot-id").await.unwrap();
    assert_eq!(count("SELECT * FROM pk.\"dedup_basic$files\"".into()).await, 2);
    session.sql("RESET paimon.scan.tag-name").await.unwrap();
    session.sql("SET paimon.scan.snapshot-id = 99").await.unwrap();
    let err = query(&session, "SELECT * FROM pk.\"dedup_basic$files\"")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("Snapshot 99"), "{err}");
}

/// Run-dependent columns the fixtures drop still carry the right values.
#[tokio::test]
async fn dropped_columns_have_values() {
    let session = session().await;
    let r = rows(
        &query(
            &session,
            "SELECT commit_user IS NOT NULL, commit_time > TIMESTAMP '2000-01-01', \
             base_manifest_list LIKE 'manifest-list-%', changelog_manifest_list IS NULL, writer_version LIKE 'python-2.1.0-%' \
             FROM pk.\"dedup_basic$snapshots\" WHERE snapshot_id = 1",
        )
        .await
        .unwrap(),
    );
    assert_eq!(r, vec![serde_json::json!([true, true, true, true, true])]);

    let r = rows(
        &query(
            &session,
            "SELECT file_path LIKE 'file:///%/pk.db/partitioned_b4/dt=2024-01-02/bucket-0/data-%.parquet', \
             file_size_in_bytes > 0, creation_time IS NOT NULL \
             FROM pk.\"partitioned_b4$files\" WHERE partition = 'dt=2024-01-02' AND bucket = 0",
        )
        .await
        .unwrap(),
    );
    assert_eq!(r, vec![serde_json::json!([true, true, true])]);

    let r = rows(
        &query(
            &session,
            "SELECT partition, deleted_record_count, done, created_by, last_update_time IS NOT NULL \
             FROM append.\"partitioned$partitions\" WHERE partition = 'dt=None/hr=None'",
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        r,
        vec![serde_json::json!(["dt=None/hr=None", 0, false, null, true])]
    );

    let r = rows(&query(&session, "SELECT tag_name, commit_time IS NOT NULL, create_time, time_retained FROM pk.\"dedup_basic$tags\"").await.unwrap());
    assert_eq!(r, vec![serde_json::json!(["after_updates", true, null, null])]);

    let r = rows(
        &query(
            &session,
            "SELECT update_time > TIMESTAMP '2000-01-01' FROM pk.\"dedup_basic$schemas\"",
        )
        .await
        .unwrap(),
    );
    assert_eq!(r, vec![serde_json::json!([true])]);

    // No index manifest: no index files.
    assert!(rows(
        &query(&session, "SELECT * FROM pk.\"dedup_basic$table_indexes\"")
            .await
            .unwrap()
    )
    .is_empty());
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Writes an index manifest (Java's Avro schema, format.md §4.8) with one DELETION_VECTORS and
/// one HASH entry into a copy of `pk.dedup_basic`, attaches it to the latest snapshot and turns
/// deletion vectors on, then reads `$table_indexes` and `$partitions.deleted_record_count`.
#[tokio::test]
async fn table_indexes_and_deleted_rows() {
    use apache_avro::types::Value as Avro;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("pk.db/dedup_basic");
    copy_dir(
        std::path::Path::new(&format!("{FIXTURES}/warehouse/pk.db/dedup_basic")),
        &table,
    );

    let schema = apache_avro::Schema::parse_str(
        r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
         {"name":"_VERSION","type":"int"},{"name":"_KIND","type":"int"},{"name":"_PARTITION","type":"bytes"},
         {"name":"_BUCKET","type":"int"},{"name":"_INDEX_TYPE","type":"string"},{"name":"_FILE_NAME","type":"string"},
         {"name":"_FILE_SIZE","type":"long"},{"name":"_ROW_COUNT","type":"long"},
         {"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":["null",
           {"type":"record","name":"record__DELETIONS_VECTORS_RANGES","fields":[
             {"name":"f0","type":"string"},{"name":"f1","type":"int"},{"name":"f2","type":"int"},
             {"name":"_CARDINALITY","type":["null","long"],"default":null}]}]}],"default":null},
         {"name":"_EXTERNAL_PATH","type":["null","string"],"default":null}]}"#,
    )
    .unwrap();
    let empty_row = vec![0u8; 12];
    let range = |file: &str, offset: i32, length: i32, card: i64| {
        Avro::Union(
            1,
            Box::new(Avro::Record(vec![
                ("f0".into(), Avro::String(file.into())),
                ("f1".into(), Avro::Int(offset)),
                ("f2".into(), Avro::Int(length)),
                ("_CARDINALITY".into(), Avro::Union(1, Box::new(Avro::Long(card)))),
            ])),
        )
    };
    let entry = |index_type: &str, file: &str, size: i64, rows: i64, ranges: Option<Vec<Avro>>| {
        Avro::Record(vec![
            ("_VERSION".into(), Avro::Int(1)),
            ("_KIND".into(), Avro::Int(0)),
            ("_PARTITION".into(), Avro::Bytes(empty_row.clone())),
            ("_BUCKET".into(), Avro::Int(0)),
            ("_INDEX_TYPE".into(), Avro::String(index_type.into())),
            ("_FILE_NAME".into(), Avro::String(file.into())),
            ("_FILE_SIZE".into(), Avro::Long(size)),
            ("_ROW_COUNT".into(), Avro::Long(rows)),
            (
                "_DELETIONS_VECTORS_RANGES".into(),
                match ranges {
                    Some(r) => Avro::Union(1, Box::new(Avro::Array(r))),
                    None => Avro::Union(0, Box::new(Avro::Null)),
                },
            ),
            ("_EXTERNAL_PATH".into(), Avro::Union(0, Box::new(Avro::Null))),
        ])
    };
    let mut writer = apache_avro::Writer::new(&schema, Vec::new());
    writer.append(entry("HASH", "index-hash-0", 16, 4, None)).unwrap();
    writer
        .append(entry(
            "DELETION_VECTORS",
            "index-dv-0",
            63,
            2,
            Some(vec![
                range("data-a.parquet", 1, 24, 2),
                range("data-b.parquet", 33, 22, 1),
            ]),
        ))
        .unwrap();
    std::fs::write(
        table.join("manifest/index-manifest-test-0"),
        writer.into_inner().unwrap(),
    )
    .unwrap();

    let snapshot_file = table.join("snapshot/snapshot-4");
    let mut snapshot: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&snapshot_file).unwrap()).unwrap();
    snapshot.insert("indexManifest".into(), "index-manifest-test-0".into());
    std::fs::write(&snapshot_file, serde_json::to_vec(&snapshot).unwrap()).unwrap();
    let schema_file = table.join("schema/schema-0");
    let mut schema: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&schema_file).unwrap()).unwrap();
    schema["options"]
        .as_object_mut()
        .unwrap()
        .insert("deletion-vectors.enabled".into(), "true".into());
    std::fs::write(&schema_file, serde_json::to_vec(&schema).unwrap()).unwrap();

    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    let r = rows(
        &query(&session, "SELECT * FROM pk.\"dedup_basic$table_indexes\"")
            .await
            .unwrap(),
    );
    assert_eq!(
        r,
        vec![
            serde_json::json!([null, 0, "DELETION_VECTORS", "index-dv-0", 63, 2, [
                {"f0": "data-a.parquet", "f1": 1, "f2": 24, "_CARDINALITY": 2},
                {"f0": "data-b.parquet", "f1": 33, "f2": 22, "_CARDINALITY": 1}
            ], null, null, null, null]),
            serde_json::json!([
                null,
                0,
                "HASH",
                "index-hash-0",
                16,
                4,
                null,
                null,
                null,
                null,
                null
            ]),
        ]
    );
    let r = rows(&query(&session, "SELECT partition, record_count, file_count, total_buckets, deleted_record_count FROM pk.\"dedup_basic$partitions\"").await.unwrap());
    assert_eq!(r, vec![serde_json::json!([null, 36, 4, 1, 3])]);
    // Time travel to a snapshot without the index manifest.
    session.sql("SET paimon.scan.snapshot-id = 3").await.unwrap();
    assert!(rows(
        &query(&session, "SELECT * FROM pk.\"dedup_basic$table_indexes\"")
            .await
            .unwrap()
    )
    .is_empty());
}
