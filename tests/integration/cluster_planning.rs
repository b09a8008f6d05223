//! What a Ballista scheduler plans with (`distributed::with_cluster_planning`), run in one
//! process: writes as parallel writers and one committer (every table layout ends with the same
//! rows as the one-task sink writes, one write snapshot per statement, and a commit run twice,
//! as a retried commit task or stage, commits once), and `$changelog` normalizes split by key
//! (the same changes as the one-task normalize).

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::collect;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::distributed::{with_cluster_planning, PaimonPhysicalCodec};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};

use crate::run_sql;

fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let text = pretty_format_batches(batches).expect("printable").to_string();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

async fn parallel_session(warehouse: &str) -> PaimonSession {
    let config = SessionConfig::new()
        .with_target_partitions(4)
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(true);
    let state = with_cluster_planning(
        SessionStateBuilder::new()
            .with_default_features()
            .with_config(config),
    )
    .build();
    PaimonSession::register(SessionContext::new_with_state(state), warehouse)
        .await
        .expect("the warehouse opens")
}

async fn count(session: &PaimonSession, sql: &str) -> i64 {
    use arrow::array::AsArray;
    let batches = run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    batches[0]
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(0)
}

/// Each table layout takes the same statements in two warehouses, one written by the one-task
/// sink and one by parallel writers: the tables end equal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_writers_write_what_one_sink_writes() {
    let layouts = [
        // fixed buckets, partitioned, input changelog
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) \
         WITH ('bucket' = '4', 'changelog-producer' = 'input')",
        // fixed buckets with a bucket key of another type than the input's (INT from BIGINT)
        "CREATE TABLE t (k INT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '3')",
        // dynamic buckets: assigners by key hash, then writers by bucket
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) \
         WITH ('bucket' = '-1', 'dynamic-bucket.target-row-num' = '300')",
        // dynamic buckets without partitions, lookup changelog
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) \
         WITH ('dynamic-bucket.target-row-num' = '300', 'changelog-producer' = 'lookup')",
        // cross-partition upserts: a key moves between partitions (deduplicate: a delete in
        // the old one; partial-update: the row goes to the old one)
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) PARTITIONED BY (p) \
         WITH ('dynamic-bucket.target-row-num' = '300')",
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) PARTITIONED BY (p) \
         WITH ('dynamic-bucket.target-row-num' = '300', 'merge-engine' = 'partial-update', \
         'partial-update.remove-record-on-delete' = 'true', \
         'changelog-producer' = 'lookup')",
        // first-row: a row for a key living elsewhere is dropped (and still counted)
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) PARTITIONED BY (p) \
         WITH ('dynamic-bucket.target-row-num' = '300', 'merge-engine' = 'first-row')",
        // fewer assigners than writers
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) \
         WITH ('dynamic-bucket.target-row-num' = '500', 'dynamic-bucket.assigner-parallelism' = '2')",
        // postponed buckets, then compacted
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '-2')",
        // lookup changelog: level-0 compaction after each write
        "CREATE TABLE t (k BIGINT, p INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) \
         WITH ('bucket' = '2', 'changelog-producer' = 'lookup')",
        // an append table without buckets: DELETE and UPDATE rewrite files (copy-on-write)
        "CREATE TABLE t (k BIGINT, p INT, v STRING) PARTITIONED BY (p)",
        // ... or mark rows in deletion vectors
        "CREATE TABLE t (k BIGINT, p INT, v STRING) WITH ('deletion-vectors.enabled' = 'true')",
    ];
    for create in layouts {
        let one = tempfile::tempdir().unwrap();
        let many = tempfile::tempdir().unwrap();
        let one = PaimonSession::open(one.path().to_str().unwrap()).await.unwrap();
        let many_warehouse = many.path().to_str().unwrap().to_string();
        let local = PaimonSession::open(&many_warehouse).await.unwrap();
        let parallel = parallel_session(&many_warehouse).await;
        for session in [&one, &local] {
            run_sql(session, create).await.unwrap();
            run_sql(
                session,
                "CREATE TABLE src (k BIGINT, p INT, v STRING) WITH ('bucket' = '-1')",
            )
            .await
            .unwrap();
            run_sql(
                session,
                "INSERT INTO src SELECT value, CAST(value % 3 AS INT), concat('v', value) FROM generate_series(1, 3000)",
            )
            .await
            .unwrap();
        }
        // a first write by one local task (one assigner): the parallel assigners then find
        // its keys in buckets they do not own
        let first = "INSERT INTO t SELECT k, p, 'local' FROM src WHERE k % 7 = 0";
        run_sql(&one, first).await.unwrap();
        run_sql(&local, first).await.unwrap();
        let mut statements = vec![
            "INSERT INTO t SELECT * FROM src",
            "INSERT INTO t SELECT k, p, 'second' FROM src WHERE k % 4 = 0",
        ];
        if create.contains("PRIMARY KEY (k) NOT ENFORCED) PARTITIONED") {
            // keys moving to another partition
            statements
                .push("INSERT INTO t SELECT k, CAST((p + 1) % 3 AS INT), 'moved' FROM src WHERE k % 9 = 0");
        }
        // (first-row tables take no deletes)
        if !create.contains("first-row") {
            statements.push("DELETE FROM t WHERE k % 10 = 3");
            statements.push("UPDATE t SET v = 'updated' WHERE k % 10 = 5");
        }
        if !create.contains("PRIMARY KEY") {
            let shown = sorted_rows(
                &run_sql(&parallel, "EXPLAIN DELETE FROM t WHERE k % 10 = 3")
                    .await
                    .unwrap(),
            )
            .join("\n");
            assert!(
                shown.contains("AppendDmlCommitExec") && shown.contains("parts=4"),
                "{shown}"
            );
        }
        if create.contains("PRIMARY KEY") && !create.contains("first-row") {
            statements.push(
                "MERGE INTO t USING (SELECT k, p FROM src WHERE k % 100 = 7) s ON t.k = s.k AND t.p = s.p \
                 WHEN MATCHED THEN DELETE",
            );
        }
        if create.contains("'-2'") {
            statements.push("CALL sys.compact('default.t')");
        }
        for sql in &statements {
            let expected = run_sql(&one, sql)
                .await
                .unwrap_or_else(|e| panic!("{create}\n{sql}: {e}"));
            let actual = run_sql(&parallel, sql)
                .await
                .unwrap_or_else(|e| panic!("{create}\nparallel {sql}: {e}"));
            // the statement's counts (a MERGE's four among them), as one task reports them
            if !sql.starts_with("CALL") {
                assert_eq!(sorted_rows(&actual), sorted_rows(&expected), "{create}\n{sql}");
            }
        }
        if create.contains("PRIMARY KEY") && !create.contains("first-row") {
            let merge =
                "EXPLAIN MERGE INTO t USING src s ON t.k = s.k AND t.p = s.p WHEN MATCHED THEN DELETE";
            let shown = sorted_rows(&run_sql(&parallel, merge).await.unwrap()).join("\n");
            assert!(
                shown.contains("PaimonCommitExec") && shown.contains("PaimonWriteExec"),
                "{shown}"
            );
        }
        // and a last local write: it finds every key where the parallel writers' HASH files
        // put it
        let last = "INSERT INTO t SELECT k, p, 'again' FROM src WHERE k % 5 = 0";
        run_sql(&one, last).await.unwrap();
        run_sql(&local, last).await.unwrap();
        if create.contains("dynamic-bucket") {
            let shown = sorted_rows(
                &run_sql(&parallel, "EXPLAIN INSERT INTO t SELECT * FROM src")
                    .await
                    .unwrap(),
            )
            .join("\n");
            assert!(shown.contains("PaimonAssignExec"), "{shown}");
            // the writes spread over several buckets, each key in one of them
            let buckets = "SELECT count(DISTINCT bucket) FROM t$files";
            assert!(count(&local, buckets).await > 3, "{create}");
            let keys = "SELECT count(*) - count(DISTINCT k) FROM t";
            assert_eq!(count(&local, keys).await, 0, "{create}");
        }
        let query = "SELECT p, v, count(*), sum(k) FROM t GROUP BY p, v";
        let expected = sorted_rows(&run_sql(&one, query).await.unwrap());
        assert!(!expected.is_empty());
        assert_eq!(
            sorted_rows(&run_sql(&local, query).await.unwrap()),
            expected,
            "{create}"
        );
        // one write snapshot per statement (compactions may follow them, as locally)
        let writes = "SELECT count(*) FROM t$snapshots WHERE commit_kind <> 'COMPACT'";
        assert_eq!(count(&local, writes).await, count(&one, writes).await, "{create}");
        if create.contains("lookup") {
            // level 0 compacted after every write: by the writers here, after the commit there
            let compactions = "SELECT count(*) FROM t$snapshots WHERE commit_kind = 'COMPACT'";
            let made = count(&local, compactions).await;
            assert_eq!(made, count(&one, compactions).await, "{create}");
            assert!(made >= 4, "{made} compactions");
        }
        if create.contains("changelog-producer") {
            // the changelog rows of every write, as the one-task sink produced them
            let changes = |latest: i64| {
                format!(
                    "SELECT rowkind, p, v, count(*), sum(k) FROM \
                     paimon_incremental_query('default.t$audit_log', 0, {latest}) GROUP BY rowkind, p, v"
                )
            };
            let latest = "SELECT max(snapshot_id) FROM t$snapshots";
            let expected = sorted_rows(&run_sql(&one, &changes(count(&one, latest).await)).await.unwrap());
            let actual = sorted_rows(
                &run_sql(&local, &changes(count(&local, latest).await))
                    .await
                    .unwrap(),
            );
            assert_eq!(actual, expected, "{create}");
        }
    }
}

/// A commit run again (Ballista retrying the commit task, or the stages before it) finds its
/// own snapshot and commits nothing twice; the second run's files are orphans that
/// `remove_orphan_files` takes away, leaving the table as it was. With the lookup changelog
/// producer the writers compact their buckets, and their COMPACT snapshot is made once too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_run_twice_commits_once() {
    for (options, snapshots) in [
        ("'write-only' = 'true'", 2),
        // APPEND then the writers' COMPACT (with the lookup changelog), per statement
        ("'changelog-producer' = 'lookup'", 4),
    ] {
        commit_runs_once(options, snapshots).await;
    }
}

async fn commit_runs_once(options: &str, snapshots: i64) {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap().to_string();
    let session = parallel_session(&warehouse).await;
    let create = format!(
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4', {options})"
    );
    for sql in [create.as_str(), "INSERT INTO t VALUES (1, 'a'), (2, 'b')"] {
        run_sql(&session, sql).await.unwrap();
    }
    let frame = session
        .sql("INSERT INTO t VALUES (1, 'x'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')")
        .await
        .unwrap();
    let plan = frame.create_physical_plan().await.unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    assert!(
        shown.contains("PaimonCommitExec") && shown.contains("PaimonWriteExec"),
        "{shown}"
    );
    // each run decodes the plan as an executor does (same commit user), and runs it all
    let codec = PaimonPhysicalCodec;
    let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &codec).unwrap();
    for _ in 0..3 {
        let ctx = session.context().task_ctx();
        let plan = physical_plan_from_bytes_with_extension_codec(&bytes, &ctx, &codec).unwrap();
        let counts = collect(plan, ctx).await.unwrap();
        assert_eq!(sorted_rows(&counts), vec!["| 5     |".to_string()]);
    }
    assert_eq!(
        count(&session, "SELECT count(*) FROM t$snapshots").await,
        snapshots,
        "{options}"
    );
    assert_eq!(count(&session, "SELECT count(*) FROM t").await, 6);
    let files = || walk(&dir.path().join("default.db/t"));
    let before = files();
    run_sql(
        &session,
        "CALL sys.remove_orphan_files('default.t', '2999-01-01 00:00:00')",
    )
    .await
    .unwrap();
    let after = files();
    // the files of two of the three runs went; the committed ones stay
    assert!(after < before, "{after} files left of {before}");
    assert_eq!(
        sorted_rows(&run_sql(&session, "SELECT k, v FROM t").await.unwrap()),
        [
            "| 1 | x |",
            "| 2 | b |",
            "| 3 | c |",
            "| 4 | d |",
            "| 5 | e |",
            "| 6 | f |"
        ]
        .map(String::from)
        .to_vec()
    );
    if options.contains("lookup") {
        // the second statement's changelog, produced by the writers' compaction, once
        let changes = sorted_rows(
            &run_sql(
                &session,
                "SELECT rowkind, k, v FROM paimon_incremental_query('default.t$audit_log', 2, 4)",
            )
            .await
            .unwrap(),
        );
        let expected = [
            "| +U      | 1 | x |",
            "| +I      | 3 | c |",
            "| +I      | 4 | d |",
            "| +I      | 5 | e |",
            "| +I      | 6 | f |",
            "| -U      | 1 | a |",
        ];
        let mut expected = expected.map(String::from).to_vec();
        expected.sort();
        assert_eq!(changes, expected);
    }
}

fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() {
                        walk(&path)
                    } else {
                        usize::from(path.extension().is_some_and(|x| x == "parquet"))
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// `$changelog` of a `none` table normalized in 4 partitions by key equals the one-task result,
/// seeded or not, for deduplicate and partial-update tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn changelog_normalize_split_by_key_equals_one_task() {
    for engine in ["deduplicate", "partial-update"] {
        let dir = tempfile::tempdir().unwrap();
        let warehouse = dir.path().to_str().unwrap().to_string();
        let local = PaimonSession::open(&warehouse).await.unwrap();
        let spread = parallel_session(&warehouse).await;
        for sql in [
            format!(
                "CREATE TABLE c (k BIGINT, a STRING, b BIGINT, PRIMARY KEY (k) NOT ENFORCED) \
                 WITH ('bucket' = '4', 'merge-engine' = '{engine}', 'write-only' = 'true')"
            ),
            "INSERT INTO c SELECT value, concat('a', value), value + 0 FROM generate_series(1, 4000)"
                .to_string(),
            "INSERT INTO c SELECT value, 'second', NULL FROM generate_series(1, 4000, 3)".to_string(),
            "INSERT INTO c SELECT value, NULL, value * 10 FROM generate_series(2000, 6000, 7)".to_string(),
            "INSERT INTO c SELECT value, 'fourth', value + 0 FROM generate_series(1, 6000, 11)".to_string(),
        ] {
            run_sql(&local, &sql).await.unwrap();
        }
        for (start, end) in [(0, 4), (1, 4), (2, 3)] {
            let query = format!(
                "SELECT rowkind, k, a, b FROM paimon_incremental_query('default.c$changelog', {start}, {end})"
            );
            let expected = sorted_rows(&run_sql(&local, &query).await.unwrap());
            assert!(!expected.is_empty());
            let plan = spread
                .sql(&query)
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let shown = datafusion::physical_plan::displayable(plan.as_ref())
                .indent(true)
                .to_string();
            assert!(shown.contains("partitions=4 by key"), "{shown}");
            let actual = sorted_rows(&run_sql(&spread, &query).await.unwrap());
            assert_eq!(actual, expected, "{engine} ({start}, {end}]");
        }
    }
}

/// An UPDATE of an append table planned for a cluster (parts of its buckets, one committer)
/// goes through the codec (its predicate and new values as plans) and, run three times,
/// commits once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_append_update_sent_and_run_three_times_commits_once() {
    for options in ["'bucket' = '-1'", "'deletion-vectors.enabled' = 'true'"] {
        let dir = tempfile::tempdir().unwrap();
        let session = parallel_session(dir.path().to_str().unwrap()).await;
        let create =
            format!("CREATE TABLE t (k BIGINT, p INT, v STRING) PARTITIONED BY (p) WITH ({options})");
        for sql in [
            create.as_str(),
            "INSERT INTO t VALUES (1, 0, 'a'), (2, 1, 'b'), (3, 0, 'c'), (4, 1, 'd')",
        ] {
            run_sql(&session, sql).await.unwrap();
        }
        let frame = session
            .sql("UPDATE t SET v = concat(v, '!') WHERE k >= 2 AND v <> 'd'")
            .await
            .unwrap();
        let plan = frame.create_physical_plan().await.unwrap();
        let codec = PaimonPhysicalCodec;
        let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &codec).unwrap();
        for _ in 0..3 {
            let ctx = session.context().task_ctx();
            let plan = physical_plan_from_bytes_with_extension_codec(&bytes, &ctx, &codec).unwrap();
            let shown = datafusion::physical_plan::displayable(plan.as_ref())
                .indent(true)
                .to_string();
            assert!(shown.contains("AppendDmlCommitExec"), "{shown}");
            let counts = collect(plan, ctx).await.unwrap();
            assert_eq!(sorted_rows(&counts), vec!["| 2     |".to_string()], "{options}");
        }
        assert_eq!(
            count(&session, "SELECT count(*) FROM t$snapshots").await,
            2,
            "{options}"
        );
        assert_eq!(
            sorted_rows(&run_sql(&session, "SELECT k, v FROM t").await.unwrap()),
            ["| 1 | a  |", "| 2 | b! |", "| 3 | c! |", "| 4 | d  |"]
                .map(String::from)
                .to_vec(),
            "{options}"
        );
    }
}
