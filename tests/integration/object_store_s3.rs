//! Warehouses on a real S3-compatible server (`tests/s3/run.sh` starts moto's server on
//! localhost and runs these tests with `--ignored`; credentials and endpoint come from the
//! standard `AWS_*` variables, the bucket from `PAIMON_TEST_S3_BUCKET`).
//!
//! * the library: a fresh `s3://` warehouse has the `default` database as a local one does;
//!   DDL, INSERT, `CALL sys.compact`, merge-on-read, time travel and system tables;
//! * the commit needs the store's create-if-absent: with conditional puts disabled, INSERT fails
//!   naming the snapshot file and the missing capability, and leaves no snapshot behind;
//! * `paimon-sql -w s3://bucket/wh` runs the same statements (credentials from the environment).
//!
//! Concurrent writers on S3 are covered by `concurrent_commits` (`*_s3` cases).

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;
use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path;
use object_store::ObjectStore;

use crate::run_sql;

/// A warehouse under a fresh prefix of the test bucket.
pub(crate) struct S3Warehouse {
    bucket: String,
    pub(crate) root: Path,
}

impl S3Warehouse {
    /// A new, empty warehouse `s3://<bucket>/<test>-<uuid>`.
    pub(crate) fn new(test: &str) -> Self {
        let bucket = std::env::var("PAIMON_TEST_S3_BUCKET")
            .expect("PAIMON_TEST_S3_BUCKET is not set: run the S3 tests through tests/s3/run.sh");
        S3Warehouse {
            bucket,
            root: Path::from(format!("{test}-{}", uuid::Uuid::new_v4())),
        }
    }

    fn builder(&self) -> AmazonS3Builder {
        AmazonS3Builder::from_env().with_bucket_name(&self.bucket)
    }

    /// A client of the bucket, configured from `AWS_*` like the CLI's.
    pub(crate) fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::new(
            self.builder()
                .build()
                .expect("S3 store from the AWS_* environment"),
        )
    }

    pub(crate) fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.root)
    }

    /// A session over the warehouse through `store`.
    async fn session_with(&self, store: Arc<dyn ObjectStore>) -> datafusion::error::Result<PaimonSession> {
        let config = SessionConfig::new()
            .with_target_partitions(2)
            .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        let base = url::Url::parse(&format!("s3://{}", self.bucket)).expect("bucket URL");
        ctx.register_object_store(&base, store);
        PaimonSession::register(ctx, &self.url()).await
    }

    async fn session(&self) -> PaimonSession {
        self.session_with(self.store()).await.expect("warehouse opens")
    }

    /// Object names below `relative`, relative to the warehouse root, sorted.
    async fn objects(&self, relative: &str) -> Vec<String> {
        let prefix = relative
            .split('/')
            .fold(self.root.clone(), |p, part| p.join(part));
        let mut names: Vec<String> = self
            .store()
            .list(Some(&prefix))
            .map_ok(|m| {
                m.location
                    .as_ref()
                    .strip_prefix(&format!("{}/", self.root))
                    .unwrap_or(m.location.as_ref())
                    .to_string()
            })
            .try_collect()
            .await
            .expect("bucket listable");
        names.sort();
        names
    }
}

async fn table(session: &PaimonSession, sql: &str) -> String {
    let batches: Vec<RecordBatch> = run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql} failed: {e}"));
    pretty_format_batches(&batches).expect("printable").to_string()
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
async fn s3_warehouse_create_insert_compact_read_time_travel() {
    let warehouse = S3Warehouse::new("library");
    let session = warehouse.session().await;
    // A new S3 warehouse has no objects at all, yet `default` exists, as in a new local one.
    assert_eq!(
        lines(&table(&session, "SHOW SCHEMAS").await)
            .iter()
            .filter(|l| l.contains("default"))
            .count(),
        1
    );
    table(
        &session,
        "CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
    )
    .await;
    table(&session, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')").await;
    table(&session, "INSERT INTO t VALUES (1, 'z'), (4, 'd')").await;
    table(&session, "DELETE FROM t WHERE k = 3").await;
    assert_eq!(
        lines(&table(&session, "SELECT * FROM t ORDER BY k").await),
        vec![
            "+---+---+",
            "| k | v |",
            "+---+---+",
            "| 1 | z |",
            "| 2 | b |",
            "| 4 | d |",
            "+---+---+",
        ]
    );
    table(&session, "CALL sys.compact('default.t')").await;
    let snapshots = table(
        &session,
        "SELECT snapshot_id, commit_kind, total_record_count FROM \"t$snapshots\" ORDER BY snapshot_id",
    )
    .await;
    assert_eq!(
        lines(&snapshots),
        vec![
            "+-------------+-------------+--------------------+",
            "| snapshot_id | commit_kind | total_record_count |",
            "+-------------+-------------+--------------------+",
            "| 1           | APPEND      | 3                  |",
            "| 2           | APPEND      | 5                  |",
            "| 3           | APPEND      | 6                  |",
            "| 4           | COMPACT     | 3                  |",
            "+-------------+-------------+--------------------+",
        ]
    );
    // A new session (another process would do the same) reads the compacted table.
    let reader = warehouse.session().await;
    assert_eq!(
        lines(&table(&reader, "SELECT k, v FROM t ORDER BY k").await)[3..6],
        ["| 1 | z |", "| 2 | b |", "| 4 | d |"]
    );
    table(&reader, "SET paimon.scan.snapshot-id = '1'").await;
    assert_eq!(
        lines(&table(&reader, "SELECT k, v FROM t ORDER BY k").await)[3..6],
        ["| 1 | a |", "| 2 | b |", "| 3 | c |"]
    );
    table(&reader, "RESET paimon.scan.snapshot-id").await;
    let files = warehouse.objects("default.db/t").await;
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("default.db/t/bucket-0/data-") && f.ends_with(".parquet")),
        "data files in bucket-0: {files:?}"
    );
    assert!(
        files.contains(&"default.db/t/snapshot/snapshot-4".to_string())
            && files.contains(&"default.db/t/snapshot/LATEST".to_string()),
        "{files:?}"
    );
    // A rename moves every object; the table reads the same under its new name, from a new
    // session too, and nothing is left under the old one.
    table(&reader, "ALTER TABLE t RENAME TO t2").await;
    let renamed = warehouse.session().await;
    assert_eq!(
        lines(&table(&renamed, "SELECT k, v FROM t2 ORDER BY k").await)[3..6],
        ["| 1 | z |", "| 2 | b |", "| 4 | d |"]
    );
    assert!(warehouse.objects("default.db/t").await.is_empty());
    assert!(warehouse
        .objects("default.db/t2")
        .await
        .contains(&"default.db/t2/snapshot/snapshot-4".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
async fn s3_without_conditional_put_refuses_to_commit() {
    let warehouse = S3Warehouse::new("no-conditional-put");
    let session = warehouse.session().await;
    table(
        &session,
        "CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await;
    let unconditional: Arc<dyn ObjectStore> = Arc::new(
        warehouse
            .builder()
            .with_conditional_put(S3ConditionalPut::Disabled)
            .build()
            .expect("S3 store"),
    );
    let writer = warehouse
        .session_with(unconditional)
        .await
        .expect("warehouse opens");
    let error = run_sql(&writer, "INSERT INTO t VALUES (1, 'a')")
        .await
        .expect_err("a commit without create-if-absent must fail")
        .to_string();
    assert!(
        error.contains("snapshot/snapshot-1") && error.contains("create-if-absent"),
        "error names the snapshot file and the missing capability: {error}"
    );
    let snapshots = warehouse.objects("default.db/t/snapshot").await;
    assert!(snapshots.is_empty(), "no snapshot written: {snapshots:?}");
    assert_eq!(
        lines(&table(&session, "SELECT count(*) AS n FROM t").await)[3],
        "| 0 |"
    );
}

#[cfg(feature = "cli")]
#[test]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
fn s3_warehouse_from_the_cli() {
    let warehouse = S3Warehouse::new("cli");
    let url = warehouse.url();
    let run = |statements: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_paimon-sql"));
        command.args(["-w", &url, "--format", "csv", "-q"]);
        for statement in statements {
            command.args(["-c", statement]);
        }
        let output = command.output().expect("paimon-sql runs");
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert!(output.status.success(), "paimon-sql -w {url}: {stderr}");
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    run(&[
        "CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
    ]);
    // A second process sees the first one's commit and adds its own.
    run(&[
        "INSERT INTO t VALUES (2, 'B'), (3, 'c')",
        "CALL sys.compact('default.t')",
    ]);
    let out = run(&[
        "SELECT k, v FROM t ORDER BY k",
        "SET paimon.scan.snapshot-id = '1'",
        "SELECT k, v FROM t ORDER BY k",
    ]);
    assert_eq!(out, "k,v\n1,a\n2,B\n3,c\nk,v\n1,a\n2,b\n");
}

/// A local warehouse whose data files go to the S3 bucket (`data-file.external-paths`): the CLI
/// builds the bucket's store from the environment when the first file goes there, and reads,
/// compaction and a second process follow the recorded URIs.
#[cfg(feature = "cli")]
#[test]
#[ignore = "needs an S3 server: tests/s3/run.sh"]
fn s3_external_paths_of_a_local_warehouse() {
    let bucket = S3Warehouse::new("external");
    let external = bucket.url();
    let local = tempfile::tempdir().expect("temp dir");
    let warehouse = local.path().to_str().expect("UTF-8").to_string();
    let run = |statements: &[String]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_paimon-sql"));
        command.args(["-w", &warehouse, "--format", "csv", "-q"]);
        for statement in statements {
            command.args(["-c", statement]);
        }
        let output = command.output().expect("paimon-sql runs");
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert!(output.status.success(), "paimon-sql -w {warehouse}: {stderr}");
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    run(&[
        format!(
            "CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', \
             'data-file.external-paths' = '{external}', 'data-file.external-paths.strategy' = 'round-robin')"
        ),
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')".into(),
    ]);
    run(&[
        "INSERT INTO t VALUES (2, 'B'), (3, 'c')".into(),
        "CALL sys.compact('default.t')".into(),
    ]);
    let out = run(&["SELECT k, v FROM t ORDER BY k".into()]);
    assert_eq!(out, "k,v\n1,a\n2,B\n3,c\n");
    let files = run(&["SELECT count(*) AS n FROM \"t$files\" WHERE starts_with(file_path, 's3://')".into()]);
    assert_eq!(files, "n\n1\n");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let objects = rt.block_on(bucket.objects("bucket-0"));
    assert!(
        objects.len() >= 3,
        "every data file is in the bucket: {objects:?}"
    );
    let local_parquet = walk(local.path())
        .into_iter()
        .filter(|p| p.ends_with(".parquet"))
        .count();
    assert_eq!(local_parquet, 0, "no data file in the local warehouse");
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.to_string_lossy().into_owned());
        }
    }
    out
}
