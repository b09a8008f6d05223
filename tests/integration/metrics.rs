//! `EXPLAIN ANALYZE` figures: the scan's files, bytes, rows and merge counters, and the write
//! sink's rows, files, bytes and buckets, checked against what the table holds (`$files`).
//! Times are only checked to be recorded, not for their value.

use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion_paimon::PaimonSession;

use crate::run_sql;

/// The first node of `plan` (depth first) whose name is `name`.
fn find(plan: &Arc<dyn ExecutionPlan>, name: &str) -> Option<Arc<dyn ExecutionPlan>> {
    if plan.name() == name {
        return Some(Arc::clone(plan));
    }
    plan.children().into_iter().find_map(|c| find(c, name))
}

/// Runs `sql` and returns the metric sums of its node `node`, by name.
pub(crate) async fn metrics_of(session: &PaimonSession, sql: &str, node: &str) -> impl Fn(&str) -> usize {
    let frame = session.sql(sql).await.expect(sql);
    let task = frame.task_ctx();
    let plan = frame.create_physical_plan().await.expect("plan");
    collect(Arc::clone(&plan), Arc::new(task)).await.expect(sql);
    let found = find(&plan, node).unwrap_or_else(|| panic!("no {node} in the plan of {sql}"));
    let set = found.metrics().expect("metrics");
    move |name: &str| match name {
        // Baseline metrics are typed, not looked up by name.
        "output_rows" => set.output_rows().expect("output_rows"),
        "elapsed_compute" => set.elapsed_compute().expect("elapsed_compute"),
        _ => set
            .sum_by_name(name)
            .unwrap_or_else(|| panic!("metric {name} missing in {set}"))
            .as_usize(),
    }
}

async fn single_i64(session: &PaimonSession, sql: &str) -> i64 {
    let batches = run_sql(session, sql).await.expect(sql);
    batches[0].column(0).as_primitive::<Int64Type>().value(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_and_sink_report_what_they_did() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    run_sql(
        &session,
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) \
         WITH ('bucket' = '2', 'write-only' = 'true')",
    )
    .await
    .unwrap();

    // 1,000 keys over both buckets: two data files.
    let sink = metrics_of(
        &session,
        "INSERT INTO t SELECT value, 'a' FROM generate_series(0, 999)",
        "DataSinkExec",
    )
    .await;
    assert_eq!(sink("rows_written"), 1000);
    assert_eq!(sink("data_files_written"), 2);
    assert_eq!(sink("changelog_files_written"), 0);
    assert_eq!(sink("buckets_written"), 2);
    let first_bytes = single_i64(&session, "SELECT sum(file_size_in_bytes) FROM \"t$files\"").await;
    assert_eq!(sink("bytes_written") as i64, first_bytes);
    assert!(sink("write_time") > 0 && sink("commit_time") > 0);

    // 300 of them again, 100 deleted: a second run in each bucket (write-only: no compaction).
    run_sql(
        &session,
        "INSERT INTO t SELECT value, 'b' FROM generate_series(0, 299)",
    )
    .await
    .unwrap();
    run_sql(&session, "DELETE FROM t WHERE k >= 900").await.unwrap();
    let files = single_i64(&session, "SELECT count(*) FROM \"t$files\"").await as usize;
    let total_bytes = single_i64(&session, "SELECT sum(file_size_in_bytes) FROM \"t$files\"").await as usize;
    let stored_rows = single_i64(&session, "SELECT sum(record_count) FROM \"t$files\"").await as usize;
    assert_eq!(stored_rows, 1000 + 300 + 100);

    let scan = metrics_of(&session, "SELECT k, v FROM t", "PaimonScanExec").await;
    assert_eq!(scan("output_rows"), 900);
    assert_eq!(scan("files_read"), files);
    assert_eq!(scan("rows_read"), stored_rows);
    assert_eq!(scan("merge_input_rows"), stored_rows);
    // Per bucket: the first file, and the second and third (keys 0..299 and 900..999) as one
    // sorted run.
    assert_eq!(scan("runs_merged"), 2 * 2);
    // 300 older versions replaced, then 100 keys whose winner is a delete: the delete and
    // the version it hides go.
    assert_eq!(scan("merge_rows_merged_away"), 300 + 100);
    assert_eq!(scan("merge_retracts_dropped"), 100);
    assert_eq!(scan("merge_output_rows"), 900);
    let bytes = scan("bytes_scanned");
    assert!(
        bytes > 0 && bytes <= total_bytes,
        "bytes_scanned {bytes} of {total_bytes} stored"
    );
    assert!(scan("decode_time") > 0 && scan("merge_time") > 0 && scan("elapsed_compute") > 0);

    // A key-range query prunes row groups and files: fewer bytes than the whole table.
    run_sql(&session, "CALL sys.compact('default.t')").await.unwrap();
    let compacted = single_i64(&session, "SELECT sum(file_size_in_bytes) FROM \"t$files\"").await as usize;
    let point = metrics_of(&session, "SELECT v FROM t WHERE k = 7", "PaimonScanExec").await;
    assert_eq!(point("files_read"), 1, "only the bucket key 7 hashes to is read");
    assert_eq!(point("runs_merged"), 0, "a compacted bucket needs no merge");
    assert!(
        point("bytes_scanned") < compacted,
        "{} of {compacted}",
        point("bytes_scanned")
    );
}

/// A session reads each Parquet footer once: the same query again scans only the data pages
/// (`io::FooterCache`), and a new session over the warehouse reads the footers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn footers_are_read_once_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let session = PaimonSession::open(path).await.unwrap();
    for sql in [
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', 'write-only' = 'true')",
        // files larger than the tail a first read fetches (`format::parquet::tail_reader`):
        // smaller ones are fetched whole either way
        "INSERT INTO t SELECT value, concat('v', CAST(value AS VARCHAR)) FROM generate_series(1, 400000) AS s(value)",
        "INSERT INTO t SELECT value, 'updated' FROM generate_series(1, 400000, 7) AS s(value)",
    ] {
        run_sql(&session, sql).await.expect(sql);
    }
    let query = "SELECT count(*), max(v) FROM t";
    let first = metrics_of(&session, query, "PaimonScanExec").await("bytes_scanned");
    let again = metrics_of(&session, query, "PaimonScanExec").await("bytes_scanned");
    assert!(
        0 < again && again < first,
        "{again} bytes the second time, {first} the first"
    );
    let fresh = PaimonSession::open(path).await.unwrap();
    let new_session = metrics_of(&fresh, query, "PaimonScanExec").await("bytes_scanned");
    // (pieces of one bucket read at once may each fetch a footer not cached yet)
    assert!(
        new_session > again,
        "{new_session} bytes in a new session, {again} again"
    );
    // same rows either way
    assert_eq!(
        single_i64(&session, "SELECT count(*) FROM t").await,
        single_i64(&fresh, "SELECT count(*) FROM t").await
    );
}

/// A bucket is not cut into key ranges when a key predicate wants keys of one range only: the
/// pages it keeps of the later runs straddle the would-be cut, and judged on the keys of the
/// other range (`KeyRange::clamp`) they hold none it wants, so that range would only cost a
/// partition. Reads then fetch what one partition fetches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_predicate_in_one_range_does_not_cut_the_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    // 400k keys with v = 0, then 4 upserts of the keys whose last digit is 1..4 (v = that
    // digit): 5 runs whose later pages span ten times more keys than the first run's.
    run_sql(
        &session,
        "CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', 'write-only' = 'true')",
    )
    .await
    .unwrap();
    run_sql(
        &session,
        "INSERT INTO t SELECT value, 0 FROM generate_series(0, 399999) AS s(value)",
    )
    .await
    .unwrap();
    for digit in 1..=4 {
        let sql = format!(
            "INSERT INTO t SELECT value, {digit} FROM generate_series(0, 399999) AS s(value) WHERE value % 10 = {digit}"
        );
        run_sql(&session, &sql).await.expect(&sql);
    }
    // 201 keys; 20 each end in 1, 2, 3 and 4
    let query = "SELECT count(*), sum(v) FROM t WHERE k BETWEEN 300000 AND 300200";
    // (footers are read once per session: the first run reads them, the measured ones not)
    run_sql(&session, query).await.unwrap();
    let mut bytes_scanned = Vec::new();
    for partitions in [1, 2] {
        run_sql(
            &session,
            &format!("SET datafusion.execution.target_partitions = {partitions}"),
        )
        .await
        .unwrap();
        let plan = run_sql(&session, &format!("EXPLAIN {query}")).await.unwrap();
        let shown = arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        assert!(!shown.contains("keys=["), "{shown}");
        bytes_scanned.push(metrics_of(&session, query, "PaimonScanExec").await(
            "bytes_scanned",
        ));
        let batches = run_sql(&session, query).await.unwrap();
        let counted = batches[0].column(0).as_primitive::<Int64Type>().value(0);
        let summed = batches[0].column(1).as_primitive::<Int64Type>().value(0);
        assert_eq!((counted, summed), (201, 20 * (1 + 2 + 3 + 4)));
    }
    assert_eq!(
        bytes_scanned[1], bytes_scanned[0],
        "bytes read with 2 partitions vs one"
    );
}

/// A one-run bucket is read without a merge, in row pieces: the primary key is decoded only
/// when the query names it, and each piece fetches only the pages of its rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_run_decodes_only_the_columns_the_query_names() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    run_sql(
        &session,
        "CREATE TABLE t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await
    .unwrap();
    // values that do not compress away: every page of v holds 20,480 distinct numbers; even
    // keys, so the key is not dense (a dense key is never decoded, see `DenseKey`)
    run_sql(
        &session,
        "INSERT INTO t SELECT value * 2, value * 7919 % 1000003 FROM generate_series(0, 299999) AS s(value)",
    )
    .await
    .unwrap();
    let values_only = "SELECT count(v) FROM t";
    let with_keys = "SELECT count(v), sum(k) FROM t";
    // (footers are read once per session: the first run reads them, the measured ones not)
    run_sql(&session, with_keys).await.unwrap();
    let mut bytes = Vec::new();
    for partitions in [1, 2] {
        let set = format!("SET datafusion.execution.target_partitions = {partitions}");
        run_sql(&session, &set).await.unwrap();
        let plan = run_sql(&session, &format!("EXPLAIN {values_only}"))
            .await
            .unwrap();
        let shown = arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        assert_eq!(shown.contains("rows=[0, 150000)"), partitions == 2, "{shown}");
        assert_eq!(single_i64(&session, values_only).await, 300_000);
        let v = metrics_of(&session, values_only, "PaimonScanExec").await("bytes_scanned");
        let kv = metrics_of(&session, with_keys, "PaimonScanExec").await("bytes_scanned");
        assert!(
            v < kv,
            "{partitions} partitions: {v} bytes without the key, {kv} with it"
        );
        bytes.push(v);
    }
    // Without page skipping each piece would fetch all of v: twice the bytes. Both fetch v's
    // dictionary page (the writer's dictionary holds the first values until it is full, then
    // falls back to plain pages) and the one data page across the cut.
    assert!(
        bytes[1] < bytes[0] + bytes[0] / 2,
        "bytes read with 2 partitions ({}) vs one ({})",
        bytes[1],
        bytes[0]
    );
}
