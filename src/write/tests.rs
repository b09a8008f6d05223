//! Write-path tests through SQL on tables whose schema file is written directly (DDL is
//! covered by the sql module).

use arrow::util::pretty::pretty_format_batches;

use crate::sql::PaimonSession;

async fn session_with_table(schema_json: &str) -> (tempfile::TempDir, PaimonSession) {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("db.db").join("t").join("schema");
    std::fs::create_dir_all(&table).unwrap();
    std::fs::write(table.join("schema-0"), schema_json).unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    (dir, session)
}

async fn query(session: &PaimonSession, sql: &str) -> String {
    let batches = session.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

const PK_TABLE: &str = r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"BIGINT NOT NULL"},{"id":1,"name":"v","type":"STRING"},{"id":2,"name":"p","type":"INT NOT NULL"}],"highestFieldId":2,"partitionKeys":["p"],"primaryKeys":["k","p"],"options":{"bucket":"2"},"timeMillis":0}"#;

#[tokio::test]
async fn insert_upsert_delete_update_round_trip() {
    let (_dir, s) = session_with_table(PK_TABLE).await;
    query(
        &s,
        "INSERT INTO db.t VALUES (1, 'a', 7), (2, 'b', 7), (3, 'c', 8), (1, 'a2', 7)",
    )
    .await;
    assert_eq!(
        query(&s, "SELECT * FROM db.t ORDER BY k").await,
        "+---+----+---+\n| k | v  | p |\n+---+----+---+\n| 1 | a2 | 7 |\n| 2 | b  | 7 |\n| 3 | c  | 8 |\n+---+----+---+"
    );
    query(&s, "INSERT INTO db.t VALUES (2, 'B', 7)").await;
    query(&s, "DELETE FROM db.t WHERE k = 3").await;
    query(&s, "UPDATE db.t SET v = 'x' WHERE k = 1").await;
    assert_eq!(
        query(&s, "SELECT * FROM db.t ORDER BY k").await,
        "+---+---+---+\n| k | v | p |\n+---+---+---+\n| 1 | x | 7 |\n| 2 | B | 7 |\n+---+---+---+"
    );
    assert_eq!(
        query(&s, "SELECT snapshot_id, commit_kind, total_record_count, delta_record_count FROM db.\"t$snapshots\"").await,
        "+-------------+-------------+--------------------+--------------------+\n| snapshot_id | commit_kind | total_record_count | delta_record_count |\n+-------------+-------------+--------------------+--------------------+\n| 1           | APPEND      | 3                  | 3                  |\n| 2           | APPEND      | 4                  | 1                  |\n| 3           | APPEND      | 5                  | 1                  |\n| 4           | APPEND      | 6                  | 1                  |\n+-------------+-------------+--------------------+--------------------+"
    );
    // Keys land in the bucket Paimon's hash picks (format.md §5.8: k=1,2 -> 0 of 2 for a
    // BIGINT key; 3 -> 1).
    assert_eq!(
        query(&s, "SELECT DISTINCT partition, bucket FROM db.\"t$files\" WHERE min_key = '[3]' ORDER BY 1").await,
        "+-----------+--------+\n| partition | bucket |\n+-----------+--------+\n| p=8       | 1      |\n+-----------+--------+"
    );
    // Dynamic partition overwrite (Paimon's default): only partition p=9, which the statement
    // writes, is replaced; p=7 stays.
    query(&s, "INSERT OVERWRITE db.t VALUES (9, 'z', 9)").await;
    assert_eq!(
        query(&s, "SELECT * FROM db.t ORDER BY k").await,
        "+---+---+---+\n| k | v | p |\n+---+---+---+\n| 1 | x | 7 |\n| 2 | B | 7 |\n| 9 | z | 9 |\n+---+---+---+"
    );
    query(&s, "DELETE FROM db.t").await;
    assert_eq!(
        query(&s, "SELECT count(*) AS n FROM db.t").await,
        "+---+\n| n |\n+---+\n| 0 |\n+---+"
    );
}

#[tokio::test]
async fn null_primary_key_is_rejected_and_nothing_is_committed() {
    let (_dir, s) = session_with_table(PK_TABLE).await;
    let err = s
        .sql("INSERT INTO db.t VALUES (CAST(NULL AS BIGINT), 'a', 1)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'k'"), "{err}");
    assert_eq!(
        query(&s, "SELECT count(*) AS n FROM db.\"t$snapshots\"").await,
        "+---+\n| n |\n+---+\n| 0 |\n+---+"
    );
}

#[tokio::test]
async fn explain_insert_and_delete_write_nothing() {
    let (_dir, s) = session_with_table(PK_TABLE).await;
    query(&s, "EXPLAIN INSERT INTO db.t VALUES (1, 'a', 7)").await;
    query(&s, "INSERT INTO db.t VALUES (1, 'a', 7)").await;
    query(&s, "EXPLAIN DELETE FROM db.t WHERE k = 1").await;
    query(&s, "EXPLAIN UPDATE db.t SET v = 'b' WHERE k = 1").await;
    assert_eq!(
        query(&s, "SELECT count(*) AS n FROM db.\"t$snapshots\"").await,
        "+---+\n| n |\n+---+\n| 1 |\n+---+"
    );
}

#[tokio::test]
async fn insert_overwrite_partition_replaces_only_that_partition() {
    let (_dir, s) = session_with_table(PK_TABLE).await;
    query(
        &s,
        "INSERT INTO db.t VALUES (1, 'a', 7), (2, 'b', 7), (3, 'c', 8)",
    )
    .await;
    query(&s, "INSERT OVERWRITE db.t PARTITION (p = 7) SELECT 5, 'e'").await;
    assert_eq!(
        query(&s, "SELECT * FROM db.t ORDER BY k").await,
        "+---+---+---+\n| k | v | p |\n+---+---+---+\n| 3 | c | 8 |\n| 5 | e | 7 |\n+---+---+---+"
    );
    assert_eq!(
        query(&s, "SELECT commit_kind, total_record_count, delta_record_count FROM db.\"t$snapshots\" WHERE snapshot_id = 2").await,
        "+-------------+--------------------+--------------------+\n| commit_kind | total_record_count | delta_record_count |\n+-------------+--------------------+--------------------+\n| OVERWRITE   | 2                  | -1                 |\n+-------------+--------------------+--------------------+"
    );
}

const DV_APPEND_TABLE: &str = r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"INT"},{"id":1,"name":"v","type":"STRING"}],"highestFieldId":1,"partitionKeys":[],"primaryKeys":[],"options":{"deletion-vectors.enabled":"true"},"timeMillis":0}"#;

/// A row-level DELETE whose deletion vectors were based on index files a concurrent DELETE
/// replaced must not land (it would resurrect the other statement's deleted rows), and one
/// whose file was removed must not either; nothing is committed.
#[tokio::test]
async fn row_level_commits_fail_when_their_base_changed() {
    use crate::io::FileIO;
    use crate::meta::{CommitRequest, OverwriteScope, RowLevelBase, TableMeta};
    use std::sync::Arc;

    let (dir, s) = session_with_table(DV_APPEND_TABLE).await;
    query(&s, "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')").await;
    let root = dir.path().join("db.db").join("t");
    let store = Arc::new(object_store::local::LocalFileSystem::new());
    let path = object_store::path::Path::from_absolute_path(&root).unwrap();
    let meta = TableMeta::new(FileIO::new(store, path, root.display().to_string()));
    let before = meta.latest_snapshot().await.unwrap().unwrap();
    let file = meta
        .live_files(&before, |_| true)
        .await
        .unwrap()
        .entries()
        .next()
        .unwrap()
        .clone();

    // The "other" statement lands first and writes the bucket's index file.
    query(&s, "DELETE FROM db.t WHERE k = 1").await;
    let stale = CommitRequest {
        added: vec![],
        overwrite: OverwriteScope::None,
        partition_types: vec![],
        commit_user: "test".to_string(),
        commit_identifier: i64::MAX,
        operation: Some("DELETE".to_string()),
        compacted: vec![],
        changelog: vec![],
        index_added: vec![],
        index_removed: vec![],
        row_level: Some(RowLevelBase {
            statement: "DELETE".to_string(),
            rewritten: vec![],
            marked: vec![file.clone()],
            // read before the other DELETE: no index file yet
            index_files: vec![],
        }),
    };
    let err = meta.commit(&stale).await.unwrap_err().to_string();
    assert!(err.contains("DELETE conflicts with a concurrent commit"), "{err}");

    // A rewrite of a file that is gone conflicts too.
    let mut gone = file.clone();
    gone.file.file_name = "data-gone-0.parquet".to_string();
    let rewrite = CommitRequest {
        row_level: Some(RowLevelBase {
            statement: "UPDATE".to_string(),
            rewritten: vec![gone],
            marked: vec![],
            index_files: vec![],
        }),
        ..stale
    };
    let err = meta.commit(&rewrite).await.unwrap_err().to_string();
    assert!(err.contains("data file data-gone-0.parquet changed"), "{err}");

    let snapshots = query(&s, "SELECT count(*) AS n FROM db.\"t$snapshots\"").await;
    assert!(snapshots.contains("| 2 |"), "{snapshots}");
    assert_eq!(
        query(&s, "SELECT * FROM db.t ORDER BY k").await,
        "+---+---+\n| k | v |\n+---+---+\n| 2 | b |\n| 3 | c |\n+---+---+"
    );
}
