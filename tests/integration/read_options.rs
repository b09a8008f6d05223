//! Every read option a session or a hint may set takes effect, or the statement fails naming
//! it: never accepted and ignored (issue 42). For each option the reads apply
//! (`APPLIED_READ_OPTIONS`), a value that must change what a read returns: the read with it set
//! differs from the read without, or fails naming the option. Table options and unknown keys
//! are refused at `SET` and in hints.

use arrow::array::RecordBatch;
use datafusion_paimon::sql::APPLIED_READ_OPTIONS;
use datafusion_paimon::PaimonSession;

use crate::run_sql;

fn render(batches: &[RecordBatch]) -> String {
    arrow::util::pretty::pretty_format_batches(batches)
        .expect("format")
        .to_string()
}

/// (option, value, context, query): with the option set (over the `context` options, set for
/// both runs), the answer of the query (statements separated by `;`) changes or a statement
/// fails naming the option. `t` has snapshots 1 (keys 1, 2), 2 (key 2 updated, key 3) and tags
/// `t1` of snapshot 1 and `t2` of snapshot 2; it has no branch.
type Case = (
    &'static str,
    String,
    &'static [(&'static str, &'static str)],
    &'static str,
);

fn cases(snapshot_1_millis: i64) -> Vec<Case> {
    let local = chrono::DateTime::from_timestamp_millis(snapshot_1_millis)
        .expect("time")
        .with_timezone(&chrono::Local)
        .format("%Y-%m-%d %H:%M:%S%.3f")
        .to_string();
    let all = "SELECT * FROM t ORDER BY k";
    let audit = "SELECT * FROM \"t$audit_log\" ORDER BY k, rowkind";
    let stream = "SELECT k FROM paimon_stream('default.t') LIMIT 3";
    vec![
        ("scan.mode", "from-snapshot".into(), &[], all),
        ("scan.snapshot-id", "1".into(), &[], all),
        ("scan.tag-name", "t1".into(), &[], all),
        ("scan.timestamp-millis", snapshot_1_millis.to_string(), &[], all),
        ("scan.timestamp", local, &[], all),
        ("scan.watermark", "1000".into(), &[], all),
        ("scan.version", "1".into(), &[], all),
        ("incremental-between", "1,2".into(), &[], audit),
        (
            "incremental-between-timestamp",
            format!("{snapshot_1_millis},9999999999999"),
            &[],
            audit,
        ),
        // (producer none: no changelog files, where the delta has rows)
        (
            "incremental-between-scan-mode",
            "changelog".into(),
            &[("incremental-between", "1,2")],
            audit,
        ),
        // (two tags are diffed, whatever the scan mode; as a snapshot range they are read by it)
        (
            "incremental-between-tag-to-snapshot",
            "true".into(),
            &[
                ("incremental-between", "t1,t2"),
                ("incremental-between-scan-mode", "changelog"),
            ],
            audit,
        ),
        (
            "consumer-id",
            "reader".into(),
            &[],
            "SELECT k FROM paimon_stream('default.t') LIMIT 3; SELECT count(*) FROM \"t$consumers\"",
        ),
        ("continuous.discovery-interval", "never".into(), &[], stream),
        (
            "changelog.allow-after-only",
            "maybe".into(),
            &[],
            "SELECT * FROM \"t$changelog\"",
        ),
        ("branch", "nope".into(), &[], all),
        ("deletion-vectors.merge-on-read", "yes".into(), &[], all),
        ("blob-as-descriptor", "yes".into(), &[], all),
        // (its effect, files skipped, never changes an answer: `file_indexes.rs` shows it in
        // EXPLAIN; here a value it cannot take must fail naming it)
        ("file-index.read.enabled", "yes".into(), &[], all),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_applied_read_option_changes_the_answer_or_fails_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8"))
        .await
        .expect("open");
    for sql in [
        "CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
        "CALL sys.create_tag('default.t', 't1')",
        "INSERT INTO t VALUES (2, 'B'), (3, 'c')",
        "CALL sys.create_tag('default.t', 't2')",
    ] {
        run_sql(&session, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let batches = run_sql(
        &session,
        "SELECT commit_time FROM \"t$snapshots\" ORDER BY snapshot_id",
    )
    .await
    .expect("snapshots");
    use arrow::array::AsArray;
    let millis = arrow::compute::cast(
        batches[0].column(0),
        &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None),
    )
    .expect("cast");
    let snapshot_1 = millis
        .as_primitive::<arrow::datatypes::TimestampMillisecondType>()
        .value(0);
    // (the snapshot's time is the local wall clock written as UTC)
    let offset = chrono::Local::now().offset().local_minus_utc() as i64 * 1000;
    let cases = cases(snapshot_1 - offset);
    let covered: Vec<&str> = cases.iter().map(|(k, _, _, _)| *k).collect();
    for option in APPLIED_READ_OPTIONS {
        assert!(
            covered.contains(option),
            "no case shows that '{option}' takes effect"
        );
    }
    let mut failures = Vec::new();
    let answer = |query: &'static str| {
        let session = &session;
        async move {
            let mut out = String::new();
            for statement in query.split(';') {
                out.push_str(&render(&run_sql(session, statement).await?));
            }
            Ok::<_, datafusion::error::DataFusionError>(out)
        }
    };
    for (option, value, context, query) in &cases {
        for (k, v) in context.iter() {
            run_sql(&session, &format!("SET paimon.{k} = '{v}'"))
                .await
                .expect("context");
        }
        let baseline = match answer(query).await {
            Ok(b) => b,
            Err(e) => format!("error: {e}"),
        };
        run_sql(&session, &format!("SET paimon.{option} = '{value}'"))
            .await
            .unwrap_or_else(|e| panic!("SET paimon.{option}: {e}"));
        let with = answer(query).await;
        run_sql(&session, "RESET").await.expect("reset");
        match with {
            Ok(b) if b == baseline => {
                failures.push(format!("'{option}' = '{value}' changed nothing in `{query}`"))
            }
            Err(e) if !e.to_string().contains(option) && !e.to_string().contains(value.as_str()) => failures
                .push(format!(
                    "'{option}' = '{value}': `{query}` failed without naming it: {e}"
                )),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_options_and_typos_are_refused_for_reads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8"))
        .await
        .expect("open");
    run_sql(
        &session,
        "CREATE TABLE t (k INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await
    .expect("create");
    for (key, needle) in [
        ("merge-engine", "'merge-engine' is a table option"),
        ("bucket", "'bucket' is a table option"),
        ("scan.snapshot-idd", "'scan.snapshot-idd' is not a Paimon option"),
        ("incremental-to-auto-tag", "not a Paimon option"),
    ] {
        let err = run_sql(&session, &format!("SET paimon.{key} = 'x'"))
            .await
            .expect_err(key)
            .to_string();
        assert!(err.contains(needle), "SET paimon.{key}: {err}");
        let err = run_sql(
            &session,
            &format!("SELECT * FROM t /*+ OPTIONS('{key}' = 'x') */"),
        )
        .await
        .expect_err(key)
        .to_string();
        assert!(err.contains(needle), "hint {key}: {err}");
    }
}
