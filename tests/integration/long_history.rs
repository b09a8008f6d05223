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

/// `sys.remove_orphan_files` deletes only files no snapshot or tag references (here: files a
/// crashed commit could have left), lists them on a dry run, and the table reads the same.
#[tokio::test]
async fn orphan_files_are_removed_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    run_sql(&session, "CREATE DATABASE o").await.unwrap();
    run_sql(
        &session,
        "CREATE TABLE o.t (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await
    .unwrap();
    for i in 0..6 {
        run_sql(&session, &format!("INSERT INTO o.t VALUES ({i}, {i})"))
            .await
            .unwrap();
    }
    run_sql(&session, "CALL sys.create_tag('o.t', 'keep', 2)")
        .await
        .unwrap();
    let table = dir.path().join("o.db/t");
    std::fs::write(table.join("bucket-0/data-stray-0.parquet"), b"not referenced").unwrap();
    std::fs::write(table.join("manifest/manifest-stray-0"), b"not referenced").unwrap();
    let before: Vec<_> = walk(&table);
    // Everything so far is "older" than a threshold in the future.
    let future = chrono::Utc::now().timestamp_millis() + 3_600_000;
    let listed = |batches: Vec<arrow::array::RecordBatch>| -> Vec<String> {
        batches
            .iter()
            .flat_map(|b| {
                let c = b.column(0).as_string::<i32>();
                (0..b.num_rows())
                    .map(|i| c.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let dry = run_sql(
        &session,
        &format!("CALL sys.remove_orphan_files('o.t', '{future}', 'true')"),
    )
    .await
    .unwrap();
    let expected = vec![
        "bucket-0/data-stray-0.parquet".to_string(),
        "manifest/manifest-stray-0".to_string(),
    ];
    assert_eq!(listed(dry), expected);
    assert_eq!(walk(&table), before, "a dry run deletes nothing");
    let removed = run_sql(
        &session,
        &format!("CALL sys.remove_orphan_files(`table` => 'o.t', older_than => '{future}')"),
    )
    .await
    .unwrap();
    assert_eq!(listed(removed), expected);
    let after = walk(&table);
    assert_eq!(after.len(), before.len() - 2);
    assert_eq!(single_i64(&session, "SELECT count(*) FROM o.t").await, 6);
    run_sql(&session, "SET paimon.scan.tag-name = 'keep'")
        .await
        .unwrap();
    assert_eq!(single_i64(&session, "SELECT count(*) FROM o.t").await, 2);
    // The default threshold (a day) keeps young files whatever they are.
    run_sql(&session, "RESET paimon.scan.tag-name").await.unwrap();
    std::fs::write(table.join("bucket-0/data-young-0.parquet"), b"in flight").unwrap();
    let young = run_sql(&session, "CALL sys.remove_orphan_files('o.t')")
        .await
        .unwrap();
    assert!(listed(young).is_empty());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out.sort();
    out
}
