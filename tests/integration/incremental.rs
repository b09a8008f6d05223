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

/// Diffs between every pair of snapshots of a table with random upserts (many to the value the
/// key already has), deletes and compactions equal the difference of the two states
/// (semantics.md §7.2), whether the end state is read as the start state plus its newer files
/// (nothing compacted between) or as a whole. The model of the states is kept here.
#[tokio::test]
async fn random_diffs_equal_the_difference_of_the_two_states() {
    use std::collections::BTreeMap;

    use arrow::array::{AsArray, RecordBatch};
    use arrow::datatypes::Int32Type;

    fn pairs(batches: &[RecordBatch]) -> Vec<(String, i32, i32)> {
        let mut out = Vec::new();
        for b in batches {
            let kinds = b.column(0).as_string::<i32>();
            let (k, v) = (
                b.column(1).as_primitive::<Int32Type>(),
                b.column(2).as_primitive::<Int32Type>(),
            );
            for i in 0..b.num_rows() {
                out.push((kinds.value(i).to_string(), k.value(i), v.value(i)));
            }
        }
        out
    }

    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n) as i32
    };
    for write_only in [true, false] {
        let dir = TempDir::new().expect("TempDir");
        let session = PaimonSession::open(dir.path().to_str().expect("UTF-8 path"))
            .await
            .expect("warehouse opens");
        run_sql(&session, "CREATE DATABASE inc").await.expect("database");
        run_sql(
            &session,
            &format!("CREATE TABLE inc.r (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'write-only' = '{write_only}')"),
        )
        .await
        .expect("table");
        let mut state: BTreeMap<i32, i32> = BTreeMap::new();
        let mut states: BTreeMap<i64, BTreeMap<i32, i32>> = BTreeMap::new();
        for step in 0..16 {
            let sql = if step % 6 == 5 {
                "CALL sys.compact('inc.r')".to_string()
            } else if step > 0 && next(4) == 0 {
                let keys: Vec<i32> = (0..4).map(|_| next(40)).collect();
                keys.iter().for_each(|k| {
                    state.remove(k);
                });
                let list: Vec<String> = keys.iter().map(i32::to_string).collect();
                format!("DELETE FROM inc.r WHERE k IN ({})", list.join(", "))
            } else {
                let mut rows: BTreeMap<i32, i32> = BTreeMap::new();
                for _ in 0..10 {
                    rows.insert(next(40), next(3));
                }
                state.extend(rows.iter().map(|(k, v)| (*k, *v)));
                let values: Vec<String> = rows.iter().map(|(k, v)| format!("({k}, {v})")).collect();
                format!("INSERT INTO inc.r VALUES {}", values.join(", "))
            };
            run_sql(&session, &sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            states.insert(crate::latest_snapshot(&session, "inc.r").await, state.clone());
        }
        run_sql(&session, "SET paimon.incremental-between-scan-mode = 'diff'")
            .await
            .expect("SET");
        let ids: Vec<i64> = states.keys().copied().collect();
        for (i, start) in ids.iter().enumerate() {
            for end in &ids[i + 1..] {
                let (before, after) = (&states[start], &states[end]);
                // Changed or new keys: their end rows (+I: every row was inserted).
                let changed: Vec<(i32, i32)> = after
                    .iter()
                    .filter(|(k, v)| before.get(*k) != Some(*v))
                    .map(|(k, v)| (*k, *v))
                    .collect();
                let removed: Vec<i32> = before
                    .keys()
                    .filter(|k| !after.contains_key(*k))
                    .copied()
                    .collect();
                let range = format!("SET paimon.incremental-between = '{start},{end}'");
                run_sql(&session, &range).await.expect("SET");
                let context = format!("write-only {write_only}, diff {start}..{end}");
                let table = run_sql(&session, "SELECT '+I', k, v FROM inc.r ORDER BY k")
                    .await
                    .expect("table diff");
                let table: Vec<(i32, i32)> = pairs(&table).into_iter().map(|(_, k, v)| (k, v)).collect();
                assert_eq!(table, changed, "{context}: table");
                let audit = run_sql(
                    &session,
                    "SELECT rowkind, k, v FROM inc.\"r$audit_log\" ORDER BY k, rowkind",
                )
                .await
                .expect("audit log diff");
                let audit = pairs(&audit);
                let adds: Vec<(i32, i32)> = audit
                    .iter()
                    .filter(|(kind, ..)| kind == "+I")
                    .map(|(_, k, v)| (*k, *v))
                    .collect();
                assert_eq!(adds, changed, "{context}: audit log adds");
                // A -D for every removed key; others only for keys the end state lacks (a
                // tombstone of a key inserted and deleted in between is an end-only row).
                let deletes: Vec<i32> = audit
                    .iter()
                    .filter(|(kind, ..)| kind == "-D")
                    .map(|(_, k, _)| *k)
                    .collect();
                assert!(
                    removed.iter().all(|k| deletes.contains(k)),
                    "{context}: {deletes:?} lacks one of {removed:?}"
                );
                assert!(
                    deletes.iter().all(|k| !after.contains_key(k)),
                    "{context}: -D of a live key in {deletes:?}"
                );
                assert_eq!(audit.len(), adds.len() + deletes.len(), "{context}: {audit:?}");
            }
        }
    }
}
