//! Incremental reads over tags and expired snapshots (semantics.md §7.2), which SQL cannot set
//! up: tags are written here as the plain snapshot JSON (format.md §3.6), and expiration is a
//! removed `snapshot-1` file.
//!
//! The table is the cl_none seed (§6.5): snapshot 1 `+I 1 a, +I 2 b, +I 3 c`, snapshot 2
//! `+I 1 A, +I 2 b`, snapshot 3 `-D 3 c`; tag `first` is snapshot 1, tag `third` snapshot 3.

use arrow::util::pretty::pretty_format_batches;
use datafusion_paimon::PaimonSession;
use tempfile::TempDir;

use crate::run_sql;

async fn seed() -> (TempDir, PaimonSession) {
    let dir = TempDir::new().expect("TempDir");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8 path"))
        .await
        .expect("warehouse opens");
    for sql in [
        "CREATE DATABASE inc",
        "CREATE TABLE inc.t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
        "INSERT INTO inc.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "INSERT INTO inc.t VALUES (1, 'A'), (2, 'b')",
        "DELETE FROM inc.t WHERE k = 3",
    ] {
        run_sql(&session, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let table = dir.path().join("inc.db/t");
    std::fs::create_dir_all(table.join("tag")).expect("tag dir");
    for (tag, id) in [("first", 1), ("third", 3)] {
        std::fs::copy(
            table.join(format!("snapshot/snapshot-{id}")),
            table.join(format!("tag/tag-{tag}")),
        )
        .expect("tag written");
    }
    (dir, session)
}

/// Runs the statements and pretty-prints the last one's rows.
async fn rows(session: &PaimonSession, statements: &[&str]) -> Result<String, String> {
    let mut last = Vec::new();
    for sql in statements {
        last = run_sql(session, sql).await.map_err(|e| e.to_string())?;
    }
    Ok(pretty_format_batches(&last).expect("format").to_string())
}

async fn reset(session: &PaimonSession) {
    run_sql(session, "RESET").await.expect("RESET");
}

const AUDIT: &str = "SELECT * FROM inc.\"t$audit_log\" ORDER BY k, rowkind";

#[tokio::test]
async fn two_tags_diff_unless_read_as_a_snapshot_range() {
    let (_dir, session) = seed().await;
    // Two tags: a diff of their snapshots; the scan mode is ignored. Key 2 is unchanged.
    let diff = "\
+---------+---+---+
| rowkind | k | v |
+---------+---+---+
| +I      | 1 | A |
| -D      | 3 | c |
+---------+---+---+";
    let got = rows(
        &session,
        &["SET paimon.incremental-between = 'first,third'", AUDIT],
    )
    .await;
    assert_eq!(got.as_deref(), Ok(diff));
    let got = rows(
        &session,
        &["SET paimon.incremental-between-scan-mode = 'delta'", AUDIT],
    )
    .await;
    assert_eq!(got.as_deref(), Ok(diff));

    // As the snapshot range (1, 3] with the configured mode: the delta rows of snapshots 2, 3.
    let got = rows(
        &session,
        &["SET paimon.incremental-between-tag-to-snapshot = 'true'", AUDIT],
    )
    .await;
    assert_eq!(
        got.as_deref(),
        Ok("\
+---------+---+---+
| rowkind | k | v |
+---------+---+---+
| +I      | 1 | A |
| +I      | 2 | b |
| -D      | 3 | c |
+---------+---+---+")
    );
    reset(&session).await;

    // The table function takes tag names too.
    let got = rows(
        &session,
        &["SELECT * FROM paimon_incremental_query('inc.t', 'first', 'third') ORDER BY k"],
    )
    .await;
    assert_eq!(
        got.as_deref(),
        Ok("\
+---+---+
| k | v |
+---+---+
| 1 | A |
+---+---+")
    );

    // The end tag must not be older than the start tag.
    let err = rows(
        &session,
        &["SET paimon.incremental-between = 'third,first'", AUDIT],
    )
    .await
    .expect_err("reversed tags");
    assert!(
        err.contains(
            "Option 'incremental-between' of table inc.t$audit_log: end tag 'first' (snapshot 1) must \
             not be older than start tag 'third' (snapshot 3)"
        ),
        "{err}"
    );
    reset(&session).await;
}

#[tokio::test]
async fn expired_snapshots_bound_the_range_but_not_tags() {
    let (dir, session) = seed().await;
    std::fs::remove_file(dir.path().join("inc.db/t/snapshot/snapshot-1")).expect("expire snapshot 1");

    // The earliest snapshot is 2: a range may start at 1 (= earliest - 1), not before.
    let got = rows(&session, &["SET paimon.incremental-between = '1,3'", AUDIT]).await;
    assert_eq!(
        got.as_deref(),
        Ok("\
+---------+---+---+
| rowkind | k | v |
+---------+---+---+
| +I      | 1 | A |
| +I      | 2 | b |
| -D      | 3 | c |
+---------+---+---+")
    );
    let err = rows(&session, &["SET paimon.incremental-between = '0,3'", AUDIT])
        .await
        .expect_err("start before the earliest snapshot");
    assert!(
        err.contains("snapshot range (0, 3] is out of the available range: the start must be >= 1"),
        "{err}"
    );

    // A diff needs the state of its start snapshot, which has expired.
    let err = rows(
        &session,
        &[
            "SET paimon.incremental-between-scan-mode = 'diff'",
            "SET paimon.incremental-between = '1,3'",
            AUDIT,
        ],
    )
    .await
    .expect_err("expired start state");
    assert!(
        err.contains("snapshot 1 has expired, so a diff has no start state; start at 2 or later"),
        "{err}"
    );
    // By time, the earliest snapshot stands in for the expired start: snapshot 2 against 3.
    let got = rows(
        &session,
        &[
            "RESET paimon.incremental-between",
            "SET paimon.incremental-between-timestamp = '0,9999999999999'",
            AUDIT,
        ],
    )
    .await;
    assert_eq!(
        got.as_deref(),
        Ok("\
+---------+---+---+
| rowkind | k | v |
+---------+---+---+
| -D      | 3 | c |
+---------+---+---+")
    );
    reset(&session).await;

    // The tag still holds snapshot 1's state: the tag diff is unchanged.
    let got = rows(
        &session,
        &["SET paimon.incremental-between = 'first,third'", AUDIT],
    )
    .await;
    assert_eq!(
        got.as_deref(),
        Ok("\
+---------+---+---+
| rowkind | k | v |
+---------+---+---+
| +I      | 1 | A |
| -D      | 3 | c |
+---------+---+---+")
    );
    reset(&session).await;
}
