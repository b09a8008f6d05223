//! A commit that dies part-way never leaves a broken table (format.md §8.1, §8.2): data files
//! first, manifests next, the snapshot last and atomically. The store below "crashes" at the
//! n-th write of an INSERT: that write and every later write or delete fail, as if the process
//! had died (no clean-up runs). For every n until the INSERT gets through: a fresh session (the
//! restart) reads exactly the previous state or exactly the new one, a retry commits, and
//! `sys.remove_orphan_files` then removes what the crash left without touching the table.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use async_trait::async_trait;
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

/// An in-memory store that fails every write and delete from the `crash_at`-th write on.
#[derive(Debug)]
struct CrashingStore {
    inner: InMemory,
    writes: AtomicUsize,
    crash_at: AtomicUsize,
    crashed: AtomicBool,
}

impl CrashingStore {
    fn arm(&self, crash_at: usize) {
        self.writes.store(0, Ordering::SeqCst);
        self.crash_at.store(crash_at, Ordering::SeqCst);
        self.crashed.store(false, Ordering::SeqCst);
    }

    fn disarm(&self) {
        self.crash_at.store(usize::MAX, Ordering::SeqCst);
        self.crashed.store(false, Ordering::SeqCst);
    }

    fn write_allowed(&self) -> Result<()> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst);
        if n >= self.crash_at.load(Ordering::SeqCst) {
            self.crashed.store(true, Ordering::SeqCst);
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

impl fmt::Display for CrashingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CrashingStore")
    }
}

#[async_trait]
impl ObjectStore for CrashingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.write_allowed()?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.write_allowed()?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        if self.crashed.load(Ordering::SeqCst) {
            return locations
                .map(|_| {
                    Err(object_store::Error::Generic {
                        store: "crashing",
                        source: "the writer crashed".into(),
                    })
                })
                .boxed();
        }
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.write_allowed()?;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_write_leaves_the_previous_or_the_new_state() {
    let store = Arc::new(CrashingStore {
        inner: InMemory::new(),
        writes: AtomicUsize::new(0),
        crash_at: AtomicUsize::new(usize::MAX),
        crashed: AtomicBool::new(false),
    });
    let setup = session(&store).await;
    run_sql(&setup, "CREATE DATABASE c").await.unwrap();
    // Dynamic buckets and a lookup producer: data, changelog, HASH index, manifests, index
    // manifest and a compaction per statement, so many writes can be interrupted.
    run_sql(
        &setup,
        "CREATE TABLE c.t (k INT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('changelog-producer' = 'lookup')",
    )
    .await
    .unwrap();
    run_sql(&setup, "INSERT INTO c.t VALUES (1, 10), (2, 20)")
        .await
        .unwrap();
    let before = count_and_sum(&setup).await;
    assert_eq!(before, (2, 30));
    let after = (3, 10 + 200 + 30);

    let mut n = 0;
    loop {
        store.arm(n);
        let writer = session(&store).await;
        let result = run_sql(&writer, "INSERT INTO c.t VALUES (2, 200), (3, 30)").await;
        let crashed = store.crashed.load(Ordering::SeqCst);
        store.disarm();
        let restarted = session(&store).await;
        let state = count_and_sum(&restarted).await;
        if !crashed {
            result.expect("no crash, no error");
            assert_eq!(state, after);
            break;
        }
        assert!(
            state == before || state == after,
            "crash at write {n}: the table reads {state:?}, neither {before:?} nor {after:?}"
        );
        if state == after {
            // The snapshot was created before the crash (a hint or the compaction failed).
            run_sql(&restarted, "INSERT INTO c.t VALUES (2, 20), (3, -30)")
                .await
                .unwrap();
        } else {
            // The retry after the restart commits.
            run_sql(&restarted, "INSERT INTO c.t VALUES (2, 200), (3, 30)")
                .await
                .unwrap();
            assert_eq!(
                count_and_sum(&restarted).await,
                after,
                "retry after a crash at write {n}"
            );
            run_sql(&restarted, "INSERT INTO c.t VALUES (2, 20), (3, -30)")
                .await
                .unwrap();
        }
        // Back to the previous rows (3, -30 remains: one more key), then tidy the leftovers.
        let future = chrono::Utc::now().timestamp_millis() + 3_600_000;
        run_sql(
            &restarted,
            &format!("CALL sys.remove_orphan_files('c.t', '{future}')"),
        )
        .await
        .unwrap();
        let (rows, sum) = count_and_sum(&restarted).await;
        assert_eq!((rows, sum), (3, 0), "after orphan removal, crash at write {n}");
        run_sql(&restarted, "DELETE FROM c.t WHERE k = 3").await.unwrap();
        assert_eq!(count_and_sum(&restarted).await, before);
        n += 1;
        assert!(n < 200, "the INSERT never got through");
    }
    assert!(n > 5, "only {n} writes were interrupted");
}
