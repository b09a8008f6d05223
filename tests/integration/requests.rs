//! Requests per statement on a table read and written through a counting store
//! (`RequestCountingStore`): the object-store round trips each statement costs.

use std::sync::Arc;
use std::time::Duration;

use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::{PaimonSession, RequestCountingStore, RequestCounts, RequestSnapshot};
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

async fn counted_session(warehouse: &str) -> (PaimonSession, Arc<RequestCounts>) {
    // (PAIMON_TRACE_REQUESTS=1 prints every request)
    datafusion_paimon::testing::trace_requests_if_asked();
    let store = RequestCountingStore::new(Arc::new(LocalFileSystem::new()), Duration::ZERO);
    let counts = store.counts();
    let config = SessionConfig::new()
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(true);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_object_store(&url::Url::parse("file://").unwrap(), Arc::new(store));
    let session = PaimonSession::register(ctx, warehouse).await.unwrap();
    (session, counts)
}

/// The rows `sql` returns, as a table.
async fn pretty(session: &PaimonSession, sql: &str) -> String {
    let batches = crate::run_sql(session, sql).await.unwrap();
    arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string()
}

async fn requests_of(session: &PaimonSession, counts: &RequestCounts, sql: &str) -> RequestSnapshot {
    let before = counts.snapshot();
    let frame = session.sql(sql).await.unwrap();
    frame.collect().await.unwrap();
    counts.snapshot() - before
}

/// What a session's statements cost in requests, against the goals of issue 44: reads of a
/// table a session knows list nothing; a point lookup on a compacted table takes 4 requests
/// warm (the HEADs of the known latest snapshot and of the next one, the HEAD of the next
/// schema, the data); writes and compactions list at most twice, and a write after this
/// session's own commit fetches no metadata (it wrote the snapshot, manifests and lists it
/// needs); Parquet metadata is one request per file (a speculative tail read), and a small
/// file read again is one request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_take_few_requests() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap();
    let (session, counts) = counted_session(warehouse).await;
    let create = "CREATE TABLE t (id BIGINT, a BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
                  WITH ('bucket' = '4', 'write-only' = 'true')";
    requests_of(&session, &counts, create).await;
    for run in 0..5 {
        // sparse keys, not a dense range
        let insert =
            format!("INSERT INTO t SELECT value * 7 + {run}, value, 'v' FROM generate_series(1, 4000)");
        let r = requests_of(&session, &counts, &insert).await;
        eprintln!("INSERT of 4000 rows: {r}");
        if run > 0 {
            assert!(r.list <= 2, "INSERT lists at most twice: {r}");
            assert_eq!(r.get, 0, "INSERT after this session's commit: {r}");
            // 4 data files, a manifest, 2 manifest lists, the snapshot and LATEST; the latest
            // snapshot confirmed when the table is resolved (2 HEADs, serving the write too)
            // and again by the commit, and the next schema's HEAD at both
            assert!(r.total() <= 16, "INSERT of 4000 rows: {r}");
        }
    }
    // 5 runs in each of 4 buckets: the point lookup reads one bucket's files
    let lookup = "SELECT * FROM t WHERE id = 777";
    for sql in [
        lookup,
        "SELECT count(*), sum(a) FROM t",
        "SELECT count(*) FROM t WHERE id BETWEEN 1000 AND 2000",
    ] {
        let r = requests_of(&session, &counts, sql).await;
        eprintln!("{sql}: {r}");
        assert_eq!(
            r.list, 0,
            "{sql} lists nothing in a session that knows the table: {r}"
        );
        // the HEADs of the snapshot this session committed, of the next one and of the next
        // schema, then one request per file (its tail holds footer, metadata and page index;
        // these small files whole)
        assert!(r.get + r.head <= 3 + 20, "{sql}: {r}");
    }
    let r = requests_of(&session, &counts, "CALL sys.compact('default.t')").await;
    eprintln!("CALL sys.compact: {r}");
    assert!(r.list <= 2, "compaction lists at most twice: {r}");
    // buckets compacted side by side still read the files' schema once
    assert!(r.get <= 21, "CALL sys.compact: {r}");
    requests_of(&session, &counts, lookup).await;
    let warm = requests_of(&session, &counts, lookup).await;
    eprintln!("{lookup}, compacted, warm: {warm}");
    assert!(warm.total() <= 4 && warm.list == 0, "warm point lookup: {warm}");
    // EXPLAIN ANALYZE reports the same requests on the scan
    let before = counts.snapshot();
    let scan = crate::metrics::metrics_of(&session, lookup, "PaimonScanExec").await;
    let seen = counts.snapshot() - before;
    assert_eq!(
        (scan("requests_get"), scan("requests_head"), scan("requests_list")),
        (seen.get as usize, seen.head as usize, seen.list as usize),
        "{seen}"
    );
    assert_eq!(scan("bytes_fetched"), seen.bytes_fetched as usize);
    let (cold, cold_counts) = counted_session(warehouse).await;
    let r = requests_of(&cold, &cold_counts, lookup).await;
    eprintln!("{lookup}, compacted, cold session: {r}");
    // the schema's listing and file, LATEST, the next snapshot's HEAD, the snapshot, its two
    // manifest lists and two manifests (the compaction merged the five before it: it deletes
    // every entry they hold), the data file
    assert!(r.total() <= 10 && r.list <= 1, "cold point lookup: {r}");
    // The next commit drops the dead entries (a DELETE and its ADD): a cold read still fetches
    // 2 manifests. That commit writes one row to another bucket than the key's.
    use datafusion::common::ScalarValue;
    use datafusion_paimon::testing::fixed_bucket_of;
    let bucket = |k: i64| fixed_bucket_of(&[ScalarValue::Int64(Some(k))], 4).unwrap();
    let other = (1..).find(|&k| bucket(k) != bucket(777)).unwrap();
    requests_of(
        &session,
        &counts,
        &format!("INSERT INTO t VALUES ({other}, 0, 'w')"),
    )
    .await;
    let manifests = session
        .sql("SELECT count(*) FROM \"t$manifests\"")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let manifests =
        arrow::array::AsArray::as_primitive::<arrow::datatypes::Int64Type>(manifests[0].column(0)).value(0);
    assert_eq!(manifests, 2, "the merged base and the new delta");
    let count = session
        .sql("SELECT count(*), count(DISTINCT id) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let shown = arrow::util::pretty::pretty_format_batches(&count)
        .unwrap()
        .to_string();
    assert!(
        shown.contains("| 20001    | 20001"),
        "every key once after the merges: {shown}"
    );
    let (cold, cold_counts) = counted_session(warehouse).await;
    let r = requests_of(&cold, &cold_counts, lookup).await;
    eprintln!("{lookup}, compacted and written since, cold session: {r}");
    assert!(r.total() <= 10 && r.list <= 1, "cold point lookup: {r}");
}

/// A session confirms the latest snapshot it knows with HEADs; a table rolled back by another
/// session and committed to again has a snapshot file of the same name but another version,
/// which the session reads instead of the one it knew.
#[tokio::test]
async fn a_write_planned_once_and_run_twice_numbers_its_second_run_after_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (session, _) = counted_session(dir.path().to_str().unwrap()).await;
    pretty(
        &session,
        "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'write-only' = 'true')",
    )
    .await;
    pretty(&session, "INSERT INTO t VALUES (1, 'a')").await;
    // the write takes the snapshot its table was resolved with; the second run must not,
    // since the first one committed on top of it
    let insert = session
        .sql("INSERT INTO t VALUES (1, 'b'), (2, 'b')")
        .await
        .unwrap();
    insert.clone().collect().await.unwrap();
    insert.collect().await.unwrap();
    let files = pretty(
        &session,
        "SELECT min_sequence_number, max_sequence_number, record_count FROM t$files ORDER BY min_sequence_number",
    )
    .await;
    assert_eq!(
        files,
        "\
+---------------------+---------------------+--------------+
| min_sequence_number | max_sequence_number | record_count |
+---------------------+---------------------+--------------+
| 0                   | 0                   | 1            |
| 1                   | 2                   | 2            |
| 3                   | 4                   | 2            |
+---------------------+---------------------+--------------+"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_committed_again_under_the_same_id_is_read_anew() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap();
    let (reader, reader_counts) = counted_session(warehouse).await;
    let (writer, _) = counted_session(warehouse).await;
    pretty(
        &writer,
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await;
    for v in ["a", "b", "c"] {
        pretty(&writer, &format!("INSERT INTO t VALUES (1, '{v}')")).await;
    }
    assert!(pretty(&reader, "SELECT v FROM t").await.contains("| c |"));
    let warm = requests_of(&reader, &reader_counts, "SELECT v FROM t").await;
    assert_eq!(warm.get, 3, "a warm read fetches the 3 data files only: {warm}");
    // snapshot 3 again, with other rows
    pretty(&writer, "CALL sys.rollback_to('default.t', 2)").await;
    pretty(&writer, "INSERT INTO t VALUES (1, 'z')").await;
    let shown = pretty(&reader, "SELECT v FROM t").await;
    assert!(shown.contains("| z |"), "{shown}");
}

/// A table this session created is known empty until a snapshot or the `LATEST` hint appears;
/// another session's commits whose first snapshots expired already are seen, and a commit of
/// this session builds on them (never on the empty table it remembers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_table_written_elsewhere_is_not_taken_for_empty() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap();
    let (creator, _) = counted_session(warehouse).await;
    let (writer, _) = counted_session(warehouse).await;
    pretty(
        &creator,
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', \
         'snapshot.num-retained.min' = '1', 'snapshot.num-retained.max' = '1')",
    )
    .await;
    for k in 1..=3 {
        pretty(&writer, &format!("INSERT INTO t VALUES ({k}, 'w')")).await;
    }
    let snapshots = pretty(&writer, "SELECT min(snapshot_id) FROM \"t$snapshots\"").await;
    assert!(!snapshots.contains("| 1 "), "snapshot 1 expired: {snapshots}");
    let shown = pretty(&creator, "SELECT count(*) FROM t").await;
    assert!(shown.contains("| 3 "), "{shown}");
    pretty(&creator, "INSERT INTO t VALUES (4, 'c')").await;
    let shown = pretty(&writer, "SELECT count(*) FROM t").await;
    assert!(
        shown.contains("| 4 "),
        "the creator's commit built on the writer's: {shown}"
    );
}

/// A session that knows a table's schema without listing still reads data another session
/// wrote with a newer schema (the snapshot names it), and its writes find the newer schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_schema_gives_way_to_a_newer_one() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap();
    let (reader, _) = counted_session(warehouse).await;
    let (writer, _) = counted_session(warehouse).await;
    for sql in [
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
        "INSERT INTO t VALUES (1, 'a')",
    ] {
        writer.sql(sql).await.unwrap().collect().await.unwrap();
    }
    assert!(pretty(&reader, "SELECT * FROM t").await.contains("| 1 | a |"));
    writer
        .sql("ALTER TABLE t ADD COLUMN w INT")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    writer
        .sql("INSERT INTO t VALUES (2, 'b', 7)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let shown = pretty(&reader, "SELECT * FROM t ORDER BY k").await;
    assert!(
        shown.contains("| 2 | b | 7 |") && shown.contains("| 1 | a |   |"),
        "{shown}"
    );
    // the reader's own write takes the newest schema too
    reader.sql("ALTER TABLE t ADD COLUMN x INT").await.ok();
    writer
        .sql("INSERT INTO t VALUES (3, 'c', 8, 9)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    reader
        .sql("INSERT INTO t VALUES (4, 'd', 9, 10)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let shown = pretty(&writer, "SELECT * FROM t ORDER BY k").await;
    assert!(shown.contains("| 4 | d | 9 | 10 |"), "{shown}");
}

/// Reads at 20 ms per request (an object store's round trip, added to every request of a
/// local store): requests and wall time of each statement against DataFusion's `ListingTable`
/// over the same live data files in the same conditions, warm. Our reads resolve the snapshot
/// and merge runs; the listing table only reads the files. Printed for the record; the
/// requests must stay within 1.3x the listing table's plus the snapshot's metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_at_20ms_per_request_against_listing_table() {
    let dir = tempfile::tempdir().unwrap();
    let local = || Arc::new(LocalFileSystem::new()) as Arc<dyn ObjectStore>;
    compare_with_listing_table(dir.path().to_str().unwrap(), "file://", &local).await;
}

/// The same on the local S3 server (`tests/s3/run.sh`), 20 ms added to each of its requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
async fn s3_reads_at_20ms_per_request_against_listing_table() {
    let warehouse = crate::object_store_s3::S3Warehouse::new("requests");
    let url = warehouse.url();
    let base = url[..url[5..].find('/').map_or(url.len(), |i| i + 5)].to_string();
    let s3 = || warehouse.store();
    compare_with_listing_table(&url, &base, &s3).await;
}

async fn compare_with_listing_table(warehouse: &str, base: &str, store: &dyn Fn() -> Arc<dyn ObjectStore>) {
    let session = |latency: Duration, paimon: bool| {
        let counting = RequestCountingStore::new(store(), latency);
        let counts = counting.counts();
        let config = if paimon {
            SessionConfig::new()
                .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
                .with_create_default_catalog_and_schema(false)
        } else {
            SessionConfig::new()
        };
        let ctx = SessionContext::new_with_config(config);
        ctx.register_object_store(&url::Url::parse(base).unwrap(), Arc::new(counting));
        (ctx, counts)
    };
    let (ctx, _) = session(Duration::ZERO, true);
    let setup = PaimonSession::register(ctx, warehouse).await.unwrap();
    setup
        .sql(
            "CREATE TABLE t (id BIGINT, a BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
             WITH ('bucket' = '4', 'write-only' = 'true')",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    for run in 0..5 {
        // sparse keys in scattered order
        let insert = format!(
            "INSERT INTO t SELECT (value * 7919 + {run}) % 1000003, value, 'v' FROM generate_series(1, 20000)"
        );
        setup.sql(&insert).await.unwrap().collect().await.unwrap();
    }
    let latency = Duration::from_millis(20);
    let (ctx, ours_counts) = session(latency, true);
    let ours = PaimonSession::register(ctx, warehouse).await.unwrap();
    let (listing, listing_counts) = session(latency, false);
    let files = datafusion_paimon::testing::live_files(&setup, "t").await.unwrap();
    datafusion_paimon::testing::register_listing_table(&listing, "lt", &files)
        .await
        .unwrap();
    let timed = |session: SessionContext, counts: Arc<RequestCounts>, sql: String| async move {
        session.sql(&sql).await.unwrap().collect().await.unwrap(); // warm
        let before = counts.snapshot();
        let started = std::time::Instant::now();
        session.sql(&sql).await.unwrap().collect().await.unwrap();
        (started.elapsed(), counts.snapshot() - before)
    };
    for (name, sql) in [
        ("point lookup", "SELECT * FROM {t} WHERE id = 777"),
        ("count, sum", "SELECT count(*), sum(a) FROM {t}"),
        (
            "key range",
            "SELECT count(*) FROM {t} WHERE id BETWEEN 1000 AND 20000",
        ),
    ] {
        let (ours_time, ours_requests) = timed(
            ours.context().clone(),
            Arc::clone(&ours_counts),
            sql.replace("{t}", "t"),
        )
        .await;
        let (lt_time, lt_requests) = timed(
            listing.clone(),
            Arc::clone(&listing_counts),
            sql.replace("{t}", "lt"),
        )
        .await;
        eprintln!(
            "{base} {name}: ours {} requests {:.0} ms, ListingTable {} requests {:.0} ms: {:.2}x the time, {:.2}x the requests",
            ours_requests.total(),
            ours_time.as_secs_f64() * 1000.0,
            lt_requests.total(),
            lt_time.as_secs_f64() * 1000.0,
            ours_time.as_secs_f64() / lt_time.as_secs_f64(),
            ours_requests.total() as f64 / lt_requests.total().max(1) as f64,
        );
        // the snapshot's metadata (LATEST, the next snapshot's HEAD, the snapshot, the next
        // schema's HEAD) on top of what reading the files takes
        assert!(
            ours_requests.total() as f64 <= 1.3 * lt_requests.total() as f64 + 4.0,
            "{name}: {ours_requests} against {lt_requests}"
        );
    }
}

/// A table dropped and created again by another session, with as many schemas and snapshots as
/// before, is read with its new schema: its latest snapshot, the same id committed at another
/// time, contradicts what the reading session saw, so the schemas are listed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_created_again_elsewhere_is_read_with_its_new_schema() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap();
    let (reader, _) = counted_session(warehouse).await;
    let (writer, _) = counted_session(warehouse).await;
    pretty(
        &writer,
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await;
    pretty(&writer, "INSERT INTO t VALUES (1, 'a')").await;
    assert!(pretty(&reader, "SELECT * FROM t").await.contains("| 1 | a |"));
    pretty(&writer, "DROP TABLE t").await;
    // (another second: the new snapshot's commit time differs)
    tokio::time::sleep(Duration::from_millis(20)).await;
    pretty(
        &writer,
        "CREATE TABLE t (k BIGINT, w INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await;
    pretty(&writer, "INSERT INTO t VALUES (2, 7)").await;
    let shown = pretty(&reader, "SELECT * FROM t").await;
    assert!(
        shown.contains("| k | w |") && shown.contains("| 2 | 7 |"),
        "{shown}"
    );
}
