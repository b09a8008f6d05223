//! A statement that dies part-way never leaves a broken table (format.md §8.1, §8.2): data files
//! first, manifests next, the snapshot last and atomically; expiration deletes snapshot files
//! before what only they used. The store below "crashes" at the n-th write or delete of a
//! statement: that call fails (or panics, as a dying process may) and every later write or
//! delete fails, as if the process had died (no clean-up runs). For an INSERT (dynamic buckets,
//! lookup changelog, compaction), a full compaction, an INSERT OVERWRITE and a snapshot
//! expiration, and for every n until the statement gets through:
//!
//! * a fresh session (the restart) reads exactly the previous state or exactly the new one, and
//!   every snapshot `$snapshots` lists still reads;
//! * a retry of the statement succeeds and gives the new state;
//! * `sys.remove_orphan_files` then removes what the crash left without touching the table.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use async_trait::async_trait;
use datafusion::common::runtime::SpawnedTask;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use crate::run_sql;

/// When the store crashes, shared with the delete streams it hands out.
#[derive(Debug)]
struct Crash {
    writes: AtomicUsize,
    crash_at: AtomicUsize,
    crashed: AtomicBool,
    /// Panic at the crash point instead of failing the call.
    panic: AtomicBool,
}

impl Crash {
    /// Counts one write or delete; fails it from the crash point on.
    fn allow(&self) -> Result<()> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst);
        if n == self.crash_at.load(Ordering::SeqCst) {
            self.crashed.store(true, Ordering::SeqCst);
            if self.panic.load(Ordering::SeqCst) {
                panic!("the writer crashed (injected panic at write {n})");
            }
        }
        if self.crashed.load(Ordering::SeqCst) {
            return Err(object_store::Error::Generic {
                store: "crashing",
                source: "the writer crashed".into(),
            });
        }
        Ok(())
    }
}

/// An in-memory store that fails every write and delete from the `crash_at`-th one on.
#[derive(Debug)]
struct CrashingStore {
    inner: InMemory,
    crash: Arc<Crash>,
}

impl CrashingStore {
    fn new() -> Arc<Self> {
        Arc::new(CrashingStore {
            inner: InMemory::new(),
            crash: Arc::new(Crash {
                writes: AtomicUsize::new(0),
                crash_at: AtomicUsize::new(usize::MAX),
                crashed: AtomicBool::new(false),
                panic: AtomicBool::new(false),
            }),
        })
    }

    fn arm(&self, crash_at: usize, panic: bool) {
        self.crash.writes.store(0, Ordering::SeqCst);
        self.crash.panic.store(panic, Ordering::SeqCst);
        self.crash.crashed.store(false, Ordering::SeqCst);
        self.crash.crash_at.store(crash_at, Ordering::SeqCst);
    }

    /// Disarms the store; whether it crashed.
    fn disarm(&self) -> bool {
        self.crash.crash_at.store(usize::MAX, Ordering::SeqCst);
        self.crash.crashed.swap(false, Ordering::SeqCst)
    }
}

impl fmt::Display for CrashingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CrashingStore")
    }
}

#[async_trait]
impl ObjectStore for CrashingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.crash.allow()?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.crash.allow()?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let crash = Arc::clone(&self.crash);
        let allowed = locations
            .map(move |location| {
                crash.allow()?;
                location
            })
            .boxed();
        self.inner.delete_stream(allowed)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.crash.allow()?;
        self.inner.copy_opts(from, to, options).await
    }
}

async fn session(store: &Arc<CrashingStore>) -> PaimonSession {
    let config = SessionConfig::new()
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
        .with_create_default_catalog_and_schema(false);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_object_store(
        &url::Url::parse("memory://").unwrap(),
        Arc::clone(store) as Arc<dyn ObjectStore>,
    );
    PaimonSession::register(ctx, "memory:///wh")
        .await
        .expect("warehouse opens")
}

async fn count_and_sum(session: &PaimonSession) -> (i64, i64) {
    let b = run_sql(
        session,
        "SELECT count(*), CAST(coalesce(sum(v), 0) AS BIGINT) FROM c.t",
    )
    .await
    .expect("the table reads");
    (
        b[0].column(0).as_primitive::<Int64Type>().value(0),
        b[0].column(1).as_primitive::<Int64Type>().value(0),
    )
}

/// Rows and sum of `v`, the table's observable state.
type State = (i64, i64);

/// A statement to crash, on a table prepared by `setup`.
struct Scenario {
    name: &'static str,
    setup: &'static [&'static str],
    statement: &'static str,
    before: State,
    after: State,
}

/// Runs `sql` in its own task, so an injected panic ends the statement, not the test.
async fn run_to_end(session: &PaimonSession, sql: &str) -> std::result::Result<(), String> {
    let session = session.clone();
    let sql = sql.to_string();
    match SpawnedTask::spawn(async move { run_sql(&session, &sql).await })
        .join()
        .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(format!("panicked: {panic}")),
    }
}

/// Every snapshot `$snapshots` lists reads (a crashed expiration must not leave a listed
/// snapshot whose files are gone).
async fn assert_snapshots_read(session: &PaimonSession, context: &str) {
    let ids = run_sql(
        session,
        "SELECT snapshot_id FROM c.t$snapshots ORDER BY snapshot_id",
    )
    .await
    .unwrap_or_else(|e| panic!("{context}: $snapshots fails: {e}"));
    for batch in ids {
        for id in batch.column(0).as_primitive::<Int64Type>().values() {
            run_sql(session, &format!("SET paimon.scan.snapshot-id = '{id}'"))
                .await
                .unwrap();
            let read = run_sql(session, "SELECT * FROM c.t").await;
            run_sql(session, "RESET paimon.scan.snapshot-id").await.unwrap();
            read.unwrap_or_else(|e| panic!("{context}: snapshot {id} no longer reads: {e}"));
        }
    }
}

/// Crashes `scenario.statement` at its 1st, 2nd, ... write or delete (every other one as a
/// panic) until it gets through; returns how many crash points there were.
async fn crash_everywhere(scenario: &Scenario) -> usize {
    let mut n = 0;
    loop {
        let store = CrashingStore::new();
        let setup = session(&store).await;
        run_sql(&setup, "CREATE DATABASE c").await.unwrap();
        for sql in scenario.setup {
            run_sql(&setup, sql)
                .await
                .unwrap_or_else(|e| panic!("{}: setup `{sql}`: {e}", scenario.name));
        }
        assert_eq!(
            count_and_sum(&setup).await,
            scenario.before,
            "{}: setup",
            scenario.name
        );

        let panics = n % 2 == 1;
        store.arm(n, panics);
        let writer = session(&store).await;
        let result = run_to_end(&writer, scenario.statement).await;
        let crashed = store.disarm();
        let context = format!(
            "{}: crash at write {n}{}",
            scenario.name,
            if panics { " (panic)" } else { "" }
        );

        let restarted = session(&store).await;
        let state = count_and_sum(&restarted).await;
        if !crashed {
            result.unwrap_or_else(|e| panic!("{}: no crash, but: {e}", scenario.name));
            assert_eq!(state, scenario.after, "{}: without a crash", scenario.name);
            return n;
        }
        assert!(
            state == scenario.before || state == scenario.after,
            "{context}: the table reads {state:?}, neither {:?} nor {:?}",
            scenario.before,
            scenario.after
        );
        assert_snapshots_read(&restarted, &context).await;
        // The retry after the restart commits (a statement that committed before the crash
        // point, as an expiration that had nothing left to delete, does what remains).
        run_to_end(&restarted, scenario.statement)
            .await
            .unwrap_or_else(|e| panic!("{context}: the retry fails: {e}"));
        assert_eq!(
            count_and_sum(&restarted).await,
            scenario.after,
            "{context}: after the retry"
        );

        let future = chrono::Utc::now().timestamp_millis() + 3_600_000;
        run_sql(
            &restarted,
            &format!("CALL sys.remove_orphan_files('c.t', '{future}')"),
        )
        .await
        .unwrap();
        assert_eq!(
            count_and_sum(&restarted).await,
            scenario.after,
            "{context}: after orphan removal"
        );
        assert_snapshots_read(&restarted, &format!("{context}, after orphan removal")).await;
        n += 1;
        assert!(n < 300, "{}: the statement never got through", scenario.name);
    }
}

/// Dynamic buckets and a lookup producer: data, changelog, HASH index, manifests, index
/// manifest and a compaction per statement, so many writes can be interrupted.
const LOOKUP_TABLE: &str =
    "CREATE TABLE c.t (k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('changelog-producer' = 'lookup')";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_insert_leaves_the_previous_or_the_new_state() {
    let points = crash_everywhere(&Scenario {
        name: "INSERT",
        setup: &[LOOKUP_TABLE, "INSERT INTO c.t VALUES (1, 10), (2, 20)"],
        statement: "INSERT INTO c.t VALUES (2, 200), (3, 30)",
        before: (2, 30),
        after: (3, 10 + 200 + 30),
    })
    .await;
    assert!(points > 5, "only {points} writes were interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_compaction_or_overwrite_leaves_the_previous_or_the_new_state() {
    // Three runs in two buckets, written without compaction, then compacted in full.
    let runs: &[&str] = &[
        "CREATE TABLE c.t (k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'write-only' = 'true')",
        "INSERT INTO c.t VALUES (1, 10), (2, 20), (3, 30)",
        "INSERT INTO c.t VALUES (2, 200), (4, 40)",
        "DELETE FROM c.t WHERE k = 3",
    ];
    let compaction = crash_everywhere(&Scenario {
        name: "CALL sys.compact",
        setup: runs,
        statement: "CALL sys.compact('c.t')",
        before: (3, 250),
        after: (3, 250),
    })
    .await;
    let overwrite = crash_everywhere(&Scenario {
        name: "INSERT OVERWRITE",
        setup: runs,
        statement: "INSERT OVERWRITE c.t VALUES (5, 50)",
        before: (3, 250),
        after: (1, 50),
    })
    .await;
    assert!(
        compaction > 3 && overwrite > 2,
        "{compaction} / {overwrite} crash points"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_expiration_leaves_readable_snapshots() {
    // Six snapshots (one a compaction); the expiration keeps the last two.
    let points = crash_everywhere(&Scenario {
        name: "CALL sys.expire_snapshots",
        setup: &[
            "CREATE TABLE c.t (k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', 'write-only' = 'true')",
            "INSERT INTO c.t VALUES (1, 10), (2, 20)",
            "INSERT INTO c.t VALUES (2, 200)",
            "CALL sys.compact('c.t')",
            "INSERT INTO c.t VALUES (3, 30)",
            "DELETE FROM c.t WHERE k = 1",
            "INSERT INTO c.t VALUES (4, 40)",
        ],
        statement: "CALL sys.expire_snapshots(`table` => 'c.t', retain_max => 2, retain_min => 1)",
        before: (3, 270),
        after: (3, 270),
    })
    .await;
    assert!(points > 5, "only {points} deletes were interrupted");
}
