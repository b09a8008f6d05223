//! INSERT throughput of the write path: 1M upserts per iteration into a deduplicate table
//! `id BIGINT NOT NULL PRIMARY KEY, v1 BIGINT, v2 DOUBLE, v3 STRING, v4 INT` with 4 buckets.
//!
//! * `fresh_table`: every iteration inserts the 1M rows into a new, empty table.
//! * `growing_table`: every iteration upserts the same 1M keys into one table again, so each
//!   statement first reads the live files of every bucket (next sequence numbers) and the table
//!   grows by one level-0 file per bucket per iteration.
//!
//! * ratios, back to back in this run: a fresh 1-bucket `write-only` table (one core's sorted
//!   run: routing, sort, fold, encode) against a plain sorted Parquet write of the same rows
//!   (`SELECT ... ORDER BY id` written by DataFusion as one file).
//!
//! The source is an in-memory table (`mem.src.rows`, batches of 8192 rows) so that only the
//! write path is timed: validation, bucket hashing, buffering, sort and fold, Parquet encoding
//! and the commit. Criterion reports the throughput in elements (rows) per second; the bench also
//! prints rows/s per case at the end.
//!
//! `cargo bench --bench insert` (set `INSERT_ROWS` to change the size).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use arrow::array::Int64Array;
use arrow::datatypes::DataType;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datafusion::prelude::SessionConfig;
use datafusion_paimon::testing::{register_upsert_source, sorted_parquet_write};
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

const BUCKETS: i32 = 4;

fn rows() -> i64 {
    std::env::var("INSERT_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// `schema-0` of a deduplicate table with a fixed number of buckets (format.md §2.6) and extra
/// options (JSON members).
fn schema_json(buckets: i32, options: &str) -> String {
    format!(
        r#"{{"version":3,"id":0,"fields":[{{"id":0,"name":"id","type":"BIGINT NOT NULL"}},{{"id":1,"name":"v1","type":"BIGINT"}},{{"id":2,"name":"v2","type":"DOUBLE"}},{{"id":3,"name":"v3","type":"STRING"}},{{"id":4,"name":"v4","type":"INT"}}],"highestFieldId":4,"partitionKeys":[],"primaryKeys":["id"],"options":{{"bucket":"{buckets}"{options}}},"timeMillis":0}}"#
    )
}

/// Creates `bench.<name>` in the warehouse directory by writing its schema file.
fn create_table(warehouse: &std::path::Path, name: &str) {
    create_table_with(warehouse, name, BUCKETS, "");
}

fn create_table_with(warehouse: &std::path::Path, name: &str, buckets: i32, options: &str) {
    let dir = warehouse.join("bench.db").join(name).join("schema");
    std::fs::create_dir_all(&dir).expect("table directory");
    std::fs::write(dir.join("schema-0"), schema_json(buckets, options)).expect("schema file");
}

fn median_of(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

struct Setup {
    dir: tempfile::TempDir,
    session: PaimonSession,
    rows: i64,
}

fn setup(rt: &Runtime) -> Setup {
    let rows = rows();
    let dir = tempfile::tempdir().expect("temp dir");
    create_table(dir.path(), "growing");
    let session = rt.block_on(async {
        let config = SessionConfig::new().with_target_partitions(4);
        let session = PaimonSession::with_config(config, dir.path().to_str().expect("UTF-8 path"))
            .await
            .expect("open warehouse");
        register_upsert_source(session.context(), rows).expect("source table");
        session
    });
    Setup { dir, session, rows }
}

/// Runs one INSERT of every source row into `bench.<table>`; returns the reported row count.
async fn insert(session: &PaimonSession, table: &str) -> u64 {
    let sql = format!("INSERT INTO bench.{table} SELECT id, v1, v2, v3, v4 FROM mem.src.rows");
    let batches = session
        .sql(&sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("insert");
    let count = batches[0].column(0);
    arrow::compute::cast(count, &DataType::UInt64)
        .expect("count")
        .as_any()
        .downcast_ref::<arrow::array::UInt64Array>()
        .expect("UInt64 count")
        .value(0)
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let s = setup(&rt);
    let label = if s.rows == 1_000_000 {
        "1m".to_string()
    } else {
        format!("{}", s.rows)
    };
    let mut group = c.benchmark_group("insert");
    group.sample_size(10);
    group.throughput(Throughput::Elements(s.rows as u64));

    let fresh_tables = AtomicUsize::new(0);
    let mut fresh_total = (0u64, Duration::ZERO);
    group.bench_function(format!("fresh_table_{label}_rows_{BUCKETS}_buckets"), |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                // A new empty table per iteration; creating it is not timed.
                let name = format!("fresh_{}", fresh_tables.fetch_add(1, Ordering::Relaxed));
                create_table(s.dir.path(), &name);
                let start = Instant::now();
                let n = rt.block_on(insert(&s.session, &name));
                elapsed += start.elapsed();
                assert_eq!(n, s.rows as u64, "rows inserted");
                fresh_total.0 += n;
                // Reclaim the disk space of the finished iteration.
                let _ = std::fs::remove_dir_all(s.dir.path().join("bench.db").join(&name));
            }
            fresh_total.1 += elapsed;
            elapsed
        })
    });

    let mut growing_total = (0u64, Duration::ZERO);
    group.bench_function(format!("growing_table_{label}_upserts_{BUCKETS}_buckets"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let n = rt.block_on(insert(&s.session, "growing"));
                assert_eq!(n, s.rows as u64, "rows upserted");
                growing_total.0 += n;
            }
            let elapsed = start.elapsed();
            growing_total.1 += elapsed;
            elapsed
        })
    });
    group.finish();

    for (case, (rows, time)) in [("fresh_table", fresh_total), ("growing_table", growing_total)] {
        if time > Duration::ZERO {
            println!(
                "insert {case}: {rows} rows in {:.2} s = {:.0} rows/s",
                time.as_secs_f64(),
                rows as f64 / time.as_secs_f64()
            );
        }
    }
    // Ratio: one bucket, write-only, against a sorted Parquet write of the same rows.
    let mut ours = Vec::new();
    let mut plain = Vec::new();
    for round in 0..5 {
        let name = format!("one_bucket_{round}");
        create_table_with(s.dir.path(), &name, 1, r#","write-only":"true""#);
        let start = Instant::now();
        rt.block_on(insert(&s.session, &name));
        ours.push(start.elapsed());
        let _ = std::fs::remove_dir_all(s.dir.path().join("bench.db").join(&name));
        let path = s.dir.path().join(format!("plain-{round}.parquet"));
        let start = Instant::now();
        rt.block_on(sorted_parquet_write(
            s.session.context(),
            path.to_str().expect("UTF-8 path"),
        ));
        plain.push(start.elapsed());
        let _ = std::fs::remove_file(&path);
    }
    let (ours, plain) = (median_of(ours), median_of(plain));
    println!(
        "ratio insert 1 bucket write-only: {:.1} ms / sorted parquet write {:.1} ms = {:.2}x",
        ours.as_secs_f64() * 1e3,
        plain.as_secs_f64() * 1e3,
        ours.as_secs_f64() / plain.as_secs_f64()
    );

    // The growing table holds one version of each key, however many upserts it took.
    let distinct = rt.block_on(async {
        let batches = s
            .session
            .sql("SELECT count(*) FROM bench.growing")
            .await
            .expect("plan")
            .collect()
            .await
            .expect("count");
        batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .map(|a| a.value(0))
    });
    if let Some(n) = distinct {
        assert!(
            n == s.rows || n == 0,
            "bench.growing holds {n} rows, expected {}",
            s.rows
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
