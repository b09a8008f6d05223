//! A table fed one small commit at a time stays bounded (format.md §4.7, §8.7): manifests are
//! merged at commit, so a scan reads at most `manifest.merge-min-count` manifests, and expiration
//! keeps `snapshot.num-retained.max` snapshots and deletes the metadata and data files only
//! expired snapshots used. The table reads the same throughout.

use arrow::array::{AsArray, Int64Array};
use arrow::datatypes::Int64Type;
use datafusion_paimon::PaimonSession;

use crate::run_sql;

async fn single_i64(session: &PaimonSession, sql: &str) -> i64 {
    let batches = run_sql(session, sql).await.expect(sql);
    batches[0].column(0).as_primitive::<Int64Type>().value(0)
}

fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn many_small_commits_keep_metadata_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    run_sql(&session, "CREATE DATABASE h").await.unwrap();
    run_sql(
        &session,
        "CREATE TABLE h.t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) \
         WITH ('bucket' = '2', 'snapshot.num-retained.min' = '5', 'snapshot.num-retained.max' = '12')",
    )
    .await
    .unwrap();
    let commits = 90;
    for i in 0..commits {
        run_sql(&session, &format!("INSERT INTO h.t VALUES ({}, {i})", i % 25))
            .await
            .unwrap();
    }
    // Every key 0..25 once, with the value of its last write.
    assert_eq!(single_i64(&session, "SELECT count(*) FROM h.t").await, 25);
    assert_eq!(single_i64(&session, "SELECT max(v) FROM h.t").await, commits - 1);
    let batches = run_sql(&session, "SELECT v FROM h.t WHERE k = 3").await.unwrap();
    let v: &Int64Array = batches[0].column(0).as_primitive();
    assert_eq!(v.value(0), 78, "k = 3 was last written by commit 78");

    let manifests = single_i64(&session, "SELECT count(*) FROM h.\"t$manifests\"").await;
    assert!(
        manifests <= 31,
        "{manifests} manifests listed after {commits} commits"
    );
    let snapshots = single_i64(&session, "SELECT count(*) FROM h.\"t$snapshots\"").await;
    assert!(snapshots <= 12, "{snapshots} snapshots retained");

    // On disk: what the retained snapshots use, not one set of files per commit.
    let table = dir.path().join("h.db/t");
    let manifest_files = files_in(&table.join("manifest"));
    assert!(
        manifest_files < 120,
        "{manifest_files} files in manifest/ after {commits} commits"
    );
    let data_files = files_in(&table.join("bucket-0")) + files_in(&table.join("bucket-1"));
    let live = single_i64(&session, "SELECT count(*) FROM h.\"t$files\"").await as usize;
    assert!(
        data_files <= live + 20,
        "{data_files} data files on disk for {live} live ones"
    );
}
