//! Object-store requests and wall time per statement, every request delayed as S3 delays it
//! (`OS_LATENCY_MS`, default 20 ms, added by `RequestCountingStore`).
//!
//! On the local S3 server when `PAIMON_TEST_S3_BUCKET` and the `AWS_*` variables name one
//! (`tests/s3/run.sh` runs this bench so, as `cargo test --bench object_store`), else on a
//! local directory. Tables: `runs`, 4 buckets, 5 write-only INSERTs of `OS_ROWS` (default
//! 20,000) sparse keys in scattered order, and `compacted`, the same rows fully compacted.
//!
//! Each statement is reported with its requests (and LISTs) against its floor, and reads also
//! with their wall time against DataFusion's `ListingTable` over the same live data files in the
//! same conditions (both warm: the statement ran once before). The floor of a read is what
//! issue 44 names: the metadata objects a read must fetch (`LATEST`, the snapshot, its two
//! manifest lists, its manifests, the schema) plus one request per data file the read needs
//! (all of them, or for a point lookup those of the key's bucket whose key range holds it; each
//! file's needed column chunks form one run and its footer is in the same tail read). A warm
//! session may go below it: it keeps the immutable metadata. The floor of a write is the
//! `LATEST` hint, one PUT per bucket file written, and the commit's files (a manifest, two
//! manifest lists, the snapshot, `LATEST`); a compaction's adds one GET per input file.
//!
//! Wall times are the median of `OS_ROUNDS` (default 3). `PAIMON_TRACE_REQUESTS=1` prints every
//! request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::common::ScalarValue;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::testing::{
    fixed_bucket_of, live_files, read_metadata_objects, register_listing_table, LiveFile,
};
use datafusion_paimon::{PaimonSession, RequestCountingStore, RequestCounts, RequestSnapshot};
use object_store::ObjectStore;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where the warehouse lives: its URL, the store's base URL and a client.
struct Warehouse {
    url: String,
    base: String,
    store: Arc<dyn ObjectStore>,
    _dir: Option<tempfile::TempDir>,
}

fn warehouse() -> Warehouse {
    match std::env::var("PAIMON_TEST_S3_BUCKET") {
        Ok(bucket) => {
            let store = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(&bucket)
                .build()
                .expect("S3 store from the AWS_* environment");
            Warehouse {
                url: format!("s3://{bucket}/bench-{}", uuid::Uuid::new_v4()),
                base: format!("s3://{bucket}"),
                store: Arc::new(store),
                _dir: None,
            }
        }
        Err(_) => {
            let dir = tempfile::tempdir().expect("temp dir");
            Warehouse {
                url: dir.path().to_str().expect("utf-8").to_string(),
                base: "file://".into(),
                store: Arc::new(object_store::local::LocalFileSystem::new()),
                _dir: Some(dir),
            }
        }
    }
}

/// A session context whose store for the warehouse counts requests and adds `latency`.
fn context(warehouse: &Warehouse, latency: Duration, paimon: bool) -> (SessionContext, Arc<RequestCounts>) {
    let counting = RequestCountingStore::new(Arc::clone(&warehouse.store), latency);
    let counts = counting.counts();
    let config = SessionConfig::new().with_target_partitions(2);
    let config = if paimon {
        config
            .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
            .with_create_default_catalog_and_schema(false)
    } else {
        config
    };
    let ctx = SessionContext::new_with_config(config);
    ctx.register_object_store(
        &url::Url::parse(&warehouse.base).expect("base URL"),
        Arc::new(counting),
    );
    (ctx, counts)
}

async fn paimon_session(warehouse: &Warehouse, latency: Duration) -> (PaimonSession, Arc<RequestCounts>) {
    let (ctx, counts) = context(warehouse, latency, true);
    let session = PaimonSession::register(ctx, &warehouse.url)
        .await
        .expect("session opens");
    (session, counts)
}

async fn run(ctx: &SessionContext, sql: &str) {
    let frame = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    frame.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn run_paimon(session: &PaimonSession, sql: &str) {
    let frame = session.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    frame.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// One run of `sql`: its wall time and requests.
async fn measured<F: std::future::Future<Output = ()>>(
    counts: &RequestCounts,
    statement: F,
) -> (Duration, RequestSnapshot) {
    let before = counts.snapshot();
    let started = Instant::now();
    statement.await;
    (started.elapsed(), counts.snapshot() - before)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

const CREATE: &str = "(id BIGINT, a BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) \
                      WITH ('bucket' = '4', 'write-only' = 'true')";

fn insert(table: &str, run: u64, rows: u64) -> String {
    // sparse keys in scattered order, not a dense range
    format!(
        "INSERT INTO {table} SELECT (value * 7919 + {run}) % 1000003, value, 'v' \
         FROM generate_series(1, {rows})"
    )
}

/// A line of the report.
struct Line {
    statement: String,
    requests: RequestSnapshot,
    floor: usize,
    /// (ours, ListingTable's) wall time, for reads.
    times: Option<(Duration, Duration)>,
    /// Our wall time, for writes.
    time: Option<Duration>,
}

impl Line {
    fn print(&self) {
        let r = &self.requests;
        let mut line = format!(
            "{:<44} {:>4} req ({:>2} LIST) floor {:>3} = {:>5.2}x",
            self.statement,
            r.total(),
            r.list,
            self.floor,
            r.total() as f64 / self.floor.max(1) as f64
        );
        if let Some((ours, listing)) = self.times {
            line += &format!(
                "   {:>7.1} ms vs ListingTable {:>7.1} ms = {:.2}x",
                ours.as_secs_f64() * 1e3,
                listing.as_secs_f64() * 1e3,
                ours.as_secs_f64() / listing.as_secs_f64()
            );
        }
        if let Some(time) = self.time {
            line += &format!("   {:>7.1} ms", time.as_secs_f64() * 1e3);
        }
        println!("{line}");
    }
}

/// The data files a point lookup of `key` needs: those of its bucket whose key range holds it.
fn lookup_files(files: &[LiveFile], key: i64) -> usize {
    let bucket = fixed_bucket_of(&[ScalarValue::Int64(Some(key))], 4).expect("bucket");
    files
        .iter()
        .filter(|f| f.bucket == bucket && f.key_range.is_none_or(|(lo, hi)| lo <= key && key <= hi))
        .count()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    datafusion_paimon::testing::trace_requests_if_asked();
    let latency = Duration::from_millis(env("OS_LATENCY_MS", 20));
    let rows = env("OS_ROWS", 20_000);
    let rounds = env("OS_ROUNDS", 3).max(1) as usize;
    let warehouse = warehouse();
    println!(
        "warehouse {} ({} ms per request), {rows} rows per INSERT, median of {rounds}",
        warehouse.url,
        latency.as_millis()
    );
    let lines = rt.block_on(measure_all(&warehouse, latency, rows, rounds));
    for line in &lines {
        line.print();
    }
}

async fn measure_all(warehouse: &Warehouse, latency: Duration, rows: u64, rounds: usize) -> Vec<Line> {
    let (setup, _) = paimon_session(warehouse, Duration::ZERO).await;
    for table in ["runs", "compacted"] {
        run_paimon(&setup, &format!("CREATE TABLE {table} {CREATE}")).await;
        for r in 0..5 {
            run_paimon(&setup, &insert(table, r, rows)).await;
        }
    }
    run_paimon(&setup, "CALL sys.compact('default.compacted')").await;
    let mut lines = Vec::new();

    // Reads, warm, against the listing table.
    let (ours, ours_counts) = paimon_session(warehouse, latency).await;
    let (listing, listing_counts) = context(warehouse, latency, false);
    let range = (1000, 20_000);
    for table in ["runs", "compacted"] {
        let files = live_files(&setup, table).await.expect("files");
        register_listing_table(&listing, table, &files)
            .await
            .expect("listing table");
        let metadata = read_metadata_objects(&setup, table).await.expect("metadata");
        let in_range = files
            .iter()
            .filter(|f| f.key_range.is_none_or(|(lo, hi)| lo <= range.1 && range.0 <= hi))
            .count();
        let reads = [
            (
                format!("point lookup, {table}"),
                format!("SELECT * FROM {table} WHERE id = 777"),
                lookup_files(&files, 777),
            ),
            (
                format!("count(*), sum(a), {table}"),
                format!("SELECT count(*), sum(a) FROM {table}"),
                files.len(),
            ),
            (
                format!("key range, {table}"),
                format!(
                    "SELECT count(*) FROM {table} WHERE id BETWEEN {} AND {}",
                    range.0, range.1
                ),
                in_range,
            ),
        ];
        for (name, sql, needed) in reads {
            run_paimon(&ours, &sql).await;
            run(&listing, &sql).await;
            let (mut our_times, mut listing_times) = (Vec::new(), Vec::new());
            let mut requests = RequestSnapshot::default();
            for _ in 0..rounds {
                let (t, r) = measured(&ours_counts, run_paimon(&ours, &sql)).await;
                our_times.push(t);
                requests = r;
                let (t, _) = measured(&listing_counts, run(&listing, &sql)).await;
                listing_times.push(t);
            }
            lines.push(Line {
                statement: format!("{name}, warm"),
                requests,
                floor: metadata + needed,
                times: Some((median(our_times), median(listing_times))),
                time: None,
            });
            if name.starts_with("point lookup") {
                // a new session's first statement (its registration counted apart)
                let (cold, cold_counts) = paimon_session(warehouse, latency).await;
                let (t, r) = measured(&cold_counts, run_paimon(&cold, &sql)).await;
                lines.push(Line {
                    statement: format!("{name}, new session"),
                    requests: r,
                    floor: metadata + needed,
                    times: None,
                    time: Some(t),
                });
            }
        }
    }
    // Java's catalog lists the warehouse, the database and each table's schemas too
    let (ctx, open_counts) = context(warehouse, latency, true);
    let (t, open) = measured(&open_counts, async {
        PaimonSession::register(ctx, &warehouse.url)
            .await
            .expect("session opens");
    })
    .await;
    lines.push(Line {
        statement: "open a session (1 database, 2 tables)".into(),
        requests: open,
        floor: 1 + 1 + 2,
        times: None,
        time: Some(t),
    });

    // Writes, in a warm session: a table created, written 5 times, compacted, per round.
    let mut create_times = Vec::new();
    let mut insert_times = Vec::new();
    let mut compact_times = Vec::new();
    let (mut create_req, mut insert_req, mut compact_req) = Default::default();
    let mut compact_floor = 0;
    for round in 0..rounds {
        let table = format!("w{round}");
        let (t, r) = measured(
            &ours_counts,
            run_paimon(&ours, &format!("CREATE TABLE {table} {CREATE}")),
        )
        .await;
        create_times.push(t);
        create_req = r;
        for r in 0..4 {
            run_paimon(&ours, &insert(&table, r, rows)).await;
        }
        let (t, r) = measured(&ours_counts, run_paimon(&ours, &insert(&table, 4, rows))).await;
        insert_times.push(t);
        insert_req = r;
        let inputs = live_files(&setup, &table).await.expect("files").len();
        let (t, r) = measured(
            &ours_counts,
            run_paimon(&ours, &format!("CALL sys.compact('default.{table}')")),
        )
        .await;
        compact_times.push(t);
        compact_req = r;
        compact_floor = 1 + inputs + 4 + 5;
    }
    lines.push(Line {
        statement: "CREATE TABLE".into(),
        requests: create_req,
        // whether it exists, the schema file
        floor: 2,
        times: None,
        time: Some(median(create_times)),
    });
    lines.push(Line {
        statement: format!("INSERT of {rows} rows (5th run)"),
        requests: insert_req,
        floor: 1 + 4 + 5,
        times: None,
        time: Some(median(insert_times)),
    });
    lines.push(Line {
        statement: "CALL sys.compact (5 runs, 4 buckets)".into(),
        requests: compact_req,
        floor: compact_floor,
        times: None,
        time: Some(median(compact_times)),
    });
    lines
}
