//! Concurrent writers on one table: the commit protocol (format.md §8.1-§8.2) creates
//! `snapshot-N` only if it is absent (`PutMode::Create`) and redoes a lost attempt on top of the
//! new latest snapshot. Several `PaimonSession`s (as separate jobs would) commit many small
//! INSERT statements to the same primary-key table at the same time; afterwards:
//!
//! * the snapshot ids are exactly `1..=N`, N = the number of statements, all `APPEND`;
//! * every row is present exactly once (count and key set), and `$snapshots` counters add up;
//! * lost attempts left no manifest files behind (§8.1 step 8).
//!
//! An `INSERT OVERWRITE` racing an `INSERT` must serialize: whichever commits second sees the
//! other's snapshot (an overwrite committed last also removes what the insert added).
//!
//! Each case runs against `LocalFileSystem` (independent sessions over a `TempDir`, as separate
//! processes would open it) and `InMemory` (sessions sharing one `memory://` store).

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tempfile::TempDir;

use crate::{run_sql, S3Warehouse};

/// Concurrent writers (one session each) and statements per writer.
const WRITERS: i64 = 3;
const COMMITS_PER_WRITER: i64 = 15;
/// Rows per INSERT statement; keys spread over both buckets.
const ROWS_PER_COMMIT: i64 = 3;

/// A deduplicate primary-key table with two buckets (format.md §2.6).
/// `write-only`: writers never compact, so every statement makes exactly one snapshot and the
/// test is about racing commits alone (compaction conflicts: `compaction_races_writes`).
fn pk_schema() -> &'static str {
    r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"BIGINT NOT NULL"},{"id":1,"name":"writer","type":"INT"},{"id":2,"name":"v","type":"STRING"}],"highestFieldId":2,"partitionKeys":[],"primaryKeys":["k"],"options":{"bucket":"2","write-only":"true"},"timeMillis":0}"#
}

#[derive(Debug, Clone, Copy)]
enum Backend {
    Local,
    Memory,
    /// A real S3-compatible server (`tests/s3/run.sh`); the commit relies on its conditional put.
    S3,
}

/// A warehouse in one store, and a way to open more sessions over it.
struct Warehouse {
    store: Arc<dyn ObjectStore>,
    /// The warehouse root inside `store`.
    root: Path,
    location: String,
    backend: Backend,
    _dir: Option<TempDir>,
}

impl Warehouse {
    fn new(backend: Backend) -> Self {
        match backend {
            Backend::Local => {
                let dir = TempDir::new().expect("TempDir");
                let store = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).expect("local store"));
                Warehouse {
                    store,
                    root: Path::default(),
                    location: dir.path().to_str().expect("UTF-8 path").to_string(),
                    backend,
                    _dir: Some(dir),
                }
            }
            Backend::Memory => Warehouse {
                store: Arc::new(InMemory::new()),
                root: Path::from("wh"),
                location: "memory:///wh".to_string(),
                backend,
                _dir: None,
            },
            Backend::S3 => {
                let s3 = S3Warehouse::new("concurrent");
                Warehouse {
                    store: s3.store(),
                    root: s3.root.clone(),
                    location: s3.url(),
                    backend,
                    _dir: None,
                }
            }
        }
    }

    /// The URL prefix its object store is registered under (`memory://`, `s3://bucket`).
    fn store_url(&self) -> url::Url {
        let url = url::Url::parse(&self.location).expect("warehouse URL");
        url::Url::parse(&url[..url::Position::BeforePath]).expect("store URL")
    }

    fn path(&self, relative: &str) -> Path {
        relative
            .split('/')
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    /// Creates table `db.<name>` by writing its `schema-0` (no DDL needed).
    async fn create_table(&self, name: &str, schema_json: &str) {
        let path = self.path(&format!("db.db/{name}/schema/schema-0"));
        self.store
            .put(&path, PutPayload::from(schema_json.as_bytes().to_vec()))
            .await
            .expect("schema file written");
    }

    /// A new, independent session over the warehouse.
    async fn session(&self) -> PaimonSession {
        let config = SessionConfig::new().with_target_partitions(2);
        match self.backend {
            Backend::Local => PaimonSession::with_config(config, &self.location)
                .await
                .expect("warehouse opens"),
            Backend::Memory | Backend::S3 => {
                let config = config
                    .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
                    .with_create_default_catalog_and_schema(false)
                    .with_information_schema(true);
                let ctx = SessionContext::new_with_config(config);
                ctx.register_object_store(&self.store_url(), Arc::clone(&self.store));
                PaimonSession::register(ctx, &self.location)
                    .await
                    .expect("warehouse opens")
            }
        }
    }

    /// File names in a directory of table `db.<name>`, sorted.
    async fn file_names(&self, table: &str, dir: &str) -> Vec<String> {
        let metas: Vec<_> = self
            .store
            .list(Some(&self.path(&format!("db.db/{table}/{dir}"))))
            .try_collect()
            .await
            .expect("listable");
        let mut names: Vec<String> = metas
            .into_iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .collect();
        names.sort();
        names
    }
}

async fn query(session: &PaimonSession, sql: &str) -> Vec<RecordBatch> {
    run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql} failed: {e}"))
}

/// All values of an Int64 column (by name) over the batches, in order.
fn i64_column(batches: &[RecordBatch], name: &str) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name(name).unwrap_or_else(|| panic!("column {name}"));
            let column =
                arrow::compute::cast(column, &arrow::datatypes::DataType::Int64).expect("castable to Int64");
            let column = column.as_primitive::<Int64Type>();
            assert_eq!(column.null_count(), 0, "column {name} has NULLs");
            column.values().to_vec()
        })
        .collect()
}

fn string_column(batches: &[RecordBatch], name: &str) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name(name).unwrap_or_else(|| panic!("column {name}"));
            let column =
                arrow::compute::cast(column, &arrow::datatypes::DataType::Utf8).expect("castable to Utf8");
            let column = column.as_string::<i32>();
            (0..column.len())
                .map(|i| column.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Snapshot rows of `db.<table>$snapshots` ordered by id: (id, kind, total, delta, operation).
async fn snapshots(session: &PaimonSession, table: &str) -> Vec<(i64, String, i64, i64, String)> {
    let sql = format!(
        "SELECT snapshot_id, commit_kind, total_record_count, delta_record_count, operation \
         FROM db.\"{table}$snapshots\" ORDER BY snapshot_id"
    );
    let batches = query(session, &sql).await;
    let ids = i64_column(&batches, "snapshot_id");
    let kinds = string_column(&batches, "commit_kind");
    let totals = i64_column(&batches, "total_record_count");
    let deltas = i64_column(&batches, "delta_record_count");
    let operations = string_column(&batches, "operation");
    (0..ids.len())
        .map(|i| {
            (
                ids[i],
                kinds[i].clone(),
                totals[i],
                deltas[i],
                operations[i].clone(),
            )
        })
        .collect()
}

/// The keys of `db.<table>` as read by a fresh session, sorted (duplicates kept).
async fn keys(warehouse: &Warehouse, table: &str) -> Vec<i64> {
    let session = warehouse.session().await;
    let mut keys = i64_column(&query(&session, &format!("SELECT k FROM db.{table}")).await, "k");
    keys.sort_unstable();
    keys
}

/// `INSERT INTO db.<table>` of the keys, with their writer and a value derived from the key.
fn insert_sql(table: &str, writer: i64, keys: impl IntoIterator<Item = i64>) -> String {
    let rows: Vec<String> = keys
        .into_iter()
        .map(|k| format!("({k}, {writer}, 'v{k}')"))
        .collect();
    format!("INSERT INTO db.{table} VALUES {}", rows.join(", "))
}

/// Keys written by statement `commit` of `writer`: disjoint across writers and statements.
fn statement_keys(writer: i64, commit: i64) -> impl Iterator<Item = i64> {
    (0..ROWS_PER_COMMIT).map(move |r| writer * 1_000_000 + commit * 1_000 + r)
}

async fn concurrent_inserts(backend: Backend) {
    let warehouse = Warehouse::new(backend);
    warehouse.create_table("t", pk_schema()).await;
    let mut sessions = Vec::new();
    for _ in 0..WRITERS {
        sessions.push(warehouse.session().await);
    }
    let tasks: Vec<_> = sessions
        .into_iter()
        .enumerate()
        .map(|(writer, session)| {
            tokio::spawn(async move {
                let writer = writer as i64;
                for commit in 0..COMMITS_PER_WRITER {
                    let sql = insert_sql("t", writer, statement_keys(writer, commit));
                    let batches = run_sql(&session, &sql).await.unwrap_or_else(|e| {
                        panic!("{backend:?}: writer {writer}, statement {commit} failed: {e}")
                    });
                    assert_eq!(
                        i64_column(&batches, "count"),
                        vec![ROWS_PER_COMMIT],
                        "rows inserted"
                    );
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer task");
    }

    let statements = WRITERS * COMMITS_PER_WRITER;
    let total_rows = statements * ROWS_PER_COMMIT;
    let reader = warehouse.session().await;
    let snaps = snapshots(&reader, "t").await;
    let ids: Vec<i64> = snaps.iter().map(|s| s.0).collect();
    assert_eq!(
        ids,
        (1..=statements).collect::<Vec<_>>(),
        "{backend:?}: snapshot ids are 1..=N without gaps"
    );
    for (id, kind, total, delta, operation) in &snaps {
        assert_eq!(kind, "APPEND", "{backend:?}: commit kind of snapshot {id}");
        assert_eq!(operation, "WRITE", "{backend:?}: operation of snapshot {id}");
        assert_eq!(
            *delta, ROWS_PER_COMMIT,
            "{backend:?}: delta_record_count of snapshot {id}"
        );
        assert_eq!(
            *total,
            id * ROWS_PER_COMMIT,
            "{backend:?}: total_record_count of snapshot {id}"
        );
    }

    let expected: Vec<i64> = (0..WRITERS)
        .flat_map(|w| (0..COMMITS_PER_WRITER).flat_map(move |c| statement_keys(w, c)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(expected.len() as i64, total_rows);
    assert_eq!(
        keys(&warehouse, "t").await,
        expected,
        "{backend:?}: every key exactly once"
    );

    // Values and writers survived as written (no row of one writer shadowed by another).
    let batches = query(
        &reader,
        "SELECT count(*) AS n, count(DISTINCT k) AS d, \
         CAST(sum(CASE WHEN v = concat('v', CAST(k AS VARCHAR)) AND writer = k / 1000000 THEN 1 ELSE 0 END) AS BIGINT) AS ok \
         FROM db.t",
    )
    .await;
    assert_eq!(
        i64_column(&batches, "n"),
        vec![total_rows],
        "{backend:?}: count(*)"
    );
    assert_eq!(
        i64_column(&batches, "d"),
        vec![total_rows],
        "{backend:?}: count(DISTINCT k)"
    );
    assert_eq!(
        i64_column(&batches, "ok"),
        vec![total_rows],
        "{backend:?}: rows with their own values"
    );

    let files = query(
        &reader,
        "SELECT CAST(sum(record_count) AS BIGINT) AS n FROM db.\"t$files\"",
    )
    .await;
    assert_eq!(
        i64_column(&files, "n"),
        vec![total_rows],
        "{backend:?}: $files record counts"
    );

    // Data files are written once and survive lost attempts: every one of them is live.
    let live_files = query(&reader, "SELECT count(*) AS n FROM db.\"t$files\"").await;
    let mut data_files = 0;
    for bucket in ["bucket-0", "bucket-1"] {
        data_files += warehouse.file_names("t", bucket).await.len() as i64;
    }
    assert_eq!(
        i64_column(&live_files, "n"),
        vec![data_files],
        "{backend:?}: data files on disk are all live"
    );

    // Every snapshot wrote one manifest and two manifest lists; a lost attempt deleted its own.
    // Manifest merging (format.md §4.7) adds one merged manifest each time the snapshot's
    // manifests reach `manifest.merge-min-count` (30): the commit that finds 30 inputs merges
    // them into one, and 29 commits later there are 30 again.
    let merges = if statements >= 31 {
        (statements - 31) / 29 + 1
    } else {
        0
    };
    let manifests = warehouse.file_names("t", "manifest").await;
    assert_eq!(
        manifests.len() as i64,
        3 * statements + merges,
        "{backend:?}: manifest directory holds only the files of committed snapshots: {manifests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_local() {
    concurrent_inserts(Backend::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_in_memory() {
    concurrent_inserts(Backend::Memory).await;
}

/// Rounds of one `INSERT OVERWRITE` racing one `INSERT`, each round on a fresh table.
const OVERWRITE_ROUNDS: usize = 4;

async fn overwrite_races_insert(backend: Backend) {
    let warehouse = Warehouse::new(backend);
    for round in 0..OVERWRITE_ROUNDS {
        let table = format!("o{round}");
        warehouse.create_table(&table, pk_schema()).await;
        let setup = warehouse.session().await;
        query(&setup, &insert_sql(&table, 0, 0..10)).await;

        let (overwriter, inserter) = (warehouse.session().await, warehouse.session().await);
        let overwrite_sql = insert_sql(&table, 1, 100..105).replace("INSERT INTO", "INSERT OVERWRITE");
        let insert = insert_sql(&table, 2, 200..205);
        let overwrite_task = tokio::spawn(async move { run_sql(&overwriter, &overwrite_sql).await });
        let insert_task = tokio::spawn(async move { run_sql(&inserter, &insert).await });
        overwrite_task
            .await
            .expect("task")
            .unwrap_or_else(|e| panic!("{backend:?}: overwrite failed: {e}"));
        insert_task
            .await
            .expect("task")
            .unwrap_or_else(|e| panic!("{backend:?}: insert failed: {e}"));

        let snaps = snapshots(&warehouse.session().await, &table).await;
        let ids: Vec<i64> = snaps.iter().map(|s| s.0).collect();
        assert_eq!(ids, vec![1, 2, 3], "{backend:?} round {round}: snapshot ids");
        let kinds: Vec<&str> = snaps.iter().map(|s| s.1.as_str()).collect();
        let overwrite_last = match kinds.as_slice() {
            ["APPEND", "OVERWRITE", "APPEND"] => false,
            ["APPEND", "APPEND", "OVERWRITE"] => true,
            other => panic!("{backend:?} round {round}: unexpected commit kinds {other:?}"),
        };
        eprintln!(
            "{backend:?} round {round}: the overwrite committed {}",
            if overwrite_last { "last" } else { "first" }
        );
        let mut expected: Vec<i64> = (100..105).collect();
        if !overwrite_last {
            expected.extend(200..205);
        }
        assert_eq!(
            keys(&warehouse, &table).await,
            expected,
            "{backend:?} round {round}: rows after the race (overwrite committed last: {overwrite_last})"
        );
        let totals: Vec<(i64, i64)> = snaps.iter().map(|s| (s.2, s.3)).collect();
        let expected_totals = if overwrite_last {
            vec![(10, 10), (15, 5), (5, -10)]
        } else {
            vec![(10, 10), (5, -5), (10, 5)]
        };
        assert_eq!(
            totals, expected_totals,
            "{backend:?} round {round}: (total, delta) record counts"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
async fn concurrent_inserts_s3() {
    concurrent_inserts(Backend::S3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overwrite_races_insert_local() {
    overwrite_races_insert(Backend::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overwrite_races_insert_in_memory() {
    overwrite_races_insert(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
async fn overwrite_races_insert_s3() {
    overwrite_races_insert(Backend::S3).await;
}

/// Writers of a lookup-producer table race each other's post-commit compactions: a compaction
/// whose input files were compacted away by another writer is dropped (the write itself stays
/// committed), so every statement succeeds and every key is read exactly once.
async fn compaction_races_writes(backend: Backend) {
    let warehouse = Warehouse::new(backend);
    let schema = pk_schema().replace(r#""write-only":"true""#, r#""changelog-producer":"lookup""#);
    warehouse.create_table("t", &schema).await;
    let commits = 6;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let session = warehouse.session().await;
        tasks.push(tokio::spawn(async move {
            for commit in 0..commits {
                let sql = insert_sql("t", writer, statement_keys(writer, commit));
                run_sql(&session, &sql)
                    .await
                    .unwrap_or_else(|e| panic!("writer {writer}, statement {commit} failed: {e}"));
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
    let reader = warehouse.session().await;
    let snaps = snapshots(&reader, "t").await;
    let appends = snaps.iter().filter(|s| s.1 == "APPEND").count() as i64;
    assert_eq!(appends, WRITERS * commits, "one APPEND snapshot per statement");
    let expected: Vec<i64> = (0..WRITERS)
        .flat_map(|w| (0..commits).flat_map(move |c| statement_keys(w, c)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(keys(&warehouse, "t").await, expected, "every key exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compaction_races_writes_local() {
    compaction_races_writes(Backend::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
async fn compaction_races_writes_s3() {
    compaction_races_writes(Backend::S3).await;
}
