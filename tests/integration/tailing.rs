//! Tailing reads (`paimon_stream`): a stream follows a table while another task writes, with
//! the exact changes of every snapshot (semantics.md §7.4, §7.6 M40, M44), and a consumer id
//! resumes a restarted stream after the last snapshot it fully emitted.

use std::time::Duration;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Int32Type, Int64Type};
use datafusion::execution::SendableRecordBatchStream;
use datafusion_paimon::PaimonSession;
use futures::StreamExt;

use crate::run_sql;

/// (rowkind, k, v, snapshot_id) of every row.
fn rows(batch: &RecordBatch) -> Vec<(String, i32, String, i64)> {
    let kinds = batch.column(0).as_string::<i32>();
    let keys = batch.column(1).as_primitive::<Int32Type>();
    let values = batch.column(2).as_string::<i32>();
    let ids = batch.column(3).as_primitive::<Int64Type>();
    (0..batch.num_rows())
        .map(|i| {
            let v = if values.is_null(i) {
                "NULL".to_string()
            } else {
                values.value(i).to_string()
            };
            (kinds.value(i).to_string(), keys.value(i), v, ids.value(i))
        })
        .collect()
}

/// Reads rows from `stream` until `n` arrived (fails after 20 s).
async fn take(stream: &mut SendableRecordBatchStream, n: usize) -> Vec<(String, i32, String, i64)> {
    let mut out = Vec::new();
    while out.len() < n {
        let next = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .unwrap_or_else(|_| panic!("no change after {out:?}"));
        let batch = next.expect("the stream does not end").expect("batch");
        out.extend(rows(&batch));
    }
    assert_eq!(out.len(), n, "{out:?}");
    out
}

fn change(kind: &str, k: i32, v: &str, snapshot: i64) -> (String, i32, String, i64) {
    (kind.to_string(), k, v.to_string(), snapshot)
}

async fn session(dir: &tempfile::TempDir) -> PaimonSession {
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    run_sql(&session, "CREATE DATABASE IF NOT EXISTS s")
        .await
        .unwrap();
    session
}

async fn stream(session: &PaimonSession, args: &str) -> SendableRecordBatchStream {
    let sql = format!("SELECT * FROM paimon_stream('s.t', 'continuous.discovery-interval=20 ms'{args})");
    session.sql(&sql).await.unwrap().execute_stream().await.unwrap()
}

/// M40 and M44 on a producer-none table: the full read, then -U/+U for an update, nothing for
/// an unchanged row, -D for a delete, and nothing for a truncate (an OVERWRITE snapshot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_a_table_while_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let reader = session(&dir).await;
    run_sql(
        &reader,
        "CREATE TABLE s.t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
    )
    .await
    .unwrap();
    run_sql(&reader, "INSERT INTO s.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        .await
        .unwrap();
    let mut changes = stream(&reader, "").await;
    let mut first = take(&mut changes, 3).await;
    first.sort();
    assert_eq!(
        first,
        vec![
            change("+I", 1, "a", 1),
            change("+I", 2, "b", 1),
            change("+I", 3, "c", 1)
        ]
    );

    let writer = session(&dir).await;
    let write = tokio::spawn(async move {
        for sql in [
            "INSERT INTO s.t VALUES (1, 'A'), (2, 'b')",
            "DELETE FROM s.t WHERE k = 3",
            "DELETE FROM s.t",
            "INSERT INTO s.t VALUES (4, 'd')",
        ] {
            run_sql(&writer, sql).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    });
    let mut second = take(&mut changes, 2).await;
    second.sort();
    assert_eq!(second, vec![change("+U", 1, "A", 2), change("-U", 1, "a", 2)]);
    assert_eq!(take(&mut changes, 1).await, vec![change("-D", 3, "c", 3)]);
    // Snapshot 4 is the truncate's OVERWRITE: skipped; snapshot 5 adds key 4
    assert_eq!(take(&mut changes, 1).await, vec![change("+I", 4, "d", 5)]);
    write.await.unwrap();
}

/// A consumer id records progress after each fully emitted snapshot (also when LIMIT stops
/// the stream), and a restarted stream resumes there with exact changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_resumes_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(&dir).await;
    run_sql(
        &s,
        "CREATE TABLE s.t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await
    .unwrap();
    run_sql(&s, "INSERT INTO s.t VALUES (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    run_sql(&s, "INSERT INTO s.t VALUES (2, 'B')").await.unwrap();

    let limited = "SELECT * FROM paimon_stream('s.t', 'scan.mode=from-snapshot', 'scan.snapshot-id=1', \
                   'consumer-id=app1', 'continuous.discovery-interval=20 ms') LIMIT 2";
    let batches = run_sql(&s, limited).await.unwrap();
    let got: Vec<_> = batches.iter().flat_map(rows).collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    assert_eq!(got_sorted, vec![change("+I", 1, "a", 1), change("+I", 2, "b", 1)]);
    let consumers = run_sql(&s, "SELECT consumer_id, next_snapshot_id FROM s.\"t$consumers\"")
        .await
        .unwrap();
    assert_eq!(consumers[0].column(0).as_string::<i32>().value(0), "app1");
    assert_eq!(consumers[0].column(1).as_primitive::<Int64Type>().value(0), 2);

    run_sql(&s, "INSERT INTO s.t VALUES (3, 'c')").await.unwrap();
    // Restarted with the same id: snapshot 2 (an update of key 2) and 3; the start mode is ignored
    let mut resumed = stream(&s, ", 'consumer-id=app1', 'scan.mode=latest'").await;
    let mut changes = take(&mut resumed, 3).await;
    changes.sort();
    assert_eq!(
        changes,
        vec![
            change("+I", 3, "c", 3),
            change("+U", 2, "B", 2),
            change("-U", 2, "b", 2)
        ]
    );
}

/// A table with a changelog producer streams its changelog files, from a later start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_table_streams_its_changelog_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(&dir).await;
    run_sql(
        &s,
        "CREATE TABLE s.t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', 'changelog-producer' = 'lookup')",
    )
    .await
    .unwrap();
    run_sql(&s, "INSERT INTO s.t VALUES (1, 'a')").await.unwrap();
    let mut changes = stream(&s, ", 'scan.mode=latest'").await;
    run_sql(&s, "INSERT INTO s.t VALUES (1, 'b')").await.unwrap();
    let mut got = take(&mut changes, 2).await;
    got.sort();
    // Statement 2 is APPEND 3 + COMPACT 4; the lookup changelog belongs to snapshot 4
    assert_eq!(got, vec![change("+U", 1, "b", 4), change("-U", 1, "a", 4)]);
}

/// Snapshots expire while their changelogs live on (`changelog.num-retained.max` above
/// `snapshot.num-retained.max`): a stream from snapshot 1 reads every change through the
/// long-lived changelogs, and one asking for changes that expired too starts at the earliest
/// changes kept, as Paimon's streaming scan does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reads_changes_of_expired_snapshots_from_long_lived_changelogs() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(&dir).await;
    run_sql(
        &s,
        "CREATE TABLE s.t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', \
         'changelog-producer' = 'input', 'snapshot.num-retained.min' = '1', 'snapshot.num-retained.max' = '2', \
         'changelog.num-retained.max' = '4', 'num-sorted-run.compaction-trigger' = '100')",
    )
    .await
    .unwrap();
    for (k, v) in [(1, "a"), (2, "b"), (1, "c"), (3, "d"), (2, "e")] {
        run_sql(&s, &format!("INSERT INTO s.t VALUES ({k}, '{v}')"))
            .await
            .unwrap();
    }
    // snapshots 4 and 5 are kept; the changes of 2..5 are kept (4 changelogs)
    let earliest = run_sql(&s, "SELECT min(snapshot_id) FROM s.\"t$snapshots\"")
        .await
        .unwrap();
    assert_eq!(earliest[0].column(0).as_primitive::<Int64Type>().value(0), 4);

    // The input producer keeps the written rows as they came.
    let mut changes = stream(&s, ", 'scan.mode=from-snapshot', 'scan.snapshot-id=2'").await;
    let got = take(&mut changes, 4).await;
    assert_eq!(
        got,
        vec![
            change("+I", 2, "b", 2),
            change("+I", 1, "c", 3),
            change("+I", 3, "d", 4),
            change("+I", 2, "e", 5),
        ]
    );
    // Snapshot 1's changes are gone too: the stream starts at the earliest changes kept.
    let mut changes = stream(&s, ", 'scan.mode=from-snapshot', 'scan.snapshot-id=1'").await;
    assert_eq!(take(&mut changes, 1).await, vec![change("+I", 2, "b", 2)]);
}

/// Both table functions also work when the statement is planned on a plain `SessionContext`
/// (nobody prepared the call), on a multi-threaded runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_functions_plan_on_a_plain_session_context() {
    let dir = tempfile::tempdir().unwrap();
    let s = session(&dir).await;
    run_sql(
        &s,
        "CREATE TABLE s.t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await
    .unwrap();
    run_sql(&s, "INSERT INTO s.t VALUES (1, 'a')").await.unwrap();
    run_sql(&s, "INSERT INTO s.t VALUES (1, 'b')").await.unwrap();
    let ctx = s.context().clone();
    let changes = ctx
        .sql("SELECT * FROM paimon_incremental_query('s.t$changelog', 1, 2)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut got: Vec<_> = changes.iter().flat_map(rows).collect();
    got.sort();
    assert_eq!(got, vec![change("+U", 1, "b", 2), change("-U", 1, "a", 2)]);
    let streamed = ctx
        .sql("SELECT * FROM paimon_stream('s.t', 'scan.mode=from-snapshot', 'scan.snapshot-id=2') LIMIT 2")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut got: Vec<_> = streamed.iter().flat_map(rows).collect();
    got.sort();
    assert_eq!(got, vec![change("+U", 1, "b", 2), change("-U", 1, "a", 2)]);
}
