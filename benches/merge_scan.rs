//! Merge-on-read scan vs a plain DataFusion Parquet scan of the same data files.
//!
//! Two generated deduplicate tables of 2M keys in 4 buckets: (a) one sorted run per bucket,
//! (b) five overlapping runs per bucket, each later run updating a random 10% of the keys. The
//! timed query reads every value column (min/max of each) so no side can answer from metadata.
//!
//! `cargo bench --bench merge_scan` (set `MERGE_SCAN_KEYS` to change the size).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_paimon::testing::{write_generated_table, GeneratedTable};
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

// Sums and a string function over every column: Parquet statistics cannot answer these, so both
// sides decode every value (min/max alone would be answered from file metadata by DataFusion).
const QUERY_COLUMNS: &str = "sum(id), sum(v1), sum(v2), max(length(v3)), sum(v4), count(*)";

struct Setup {
    _dir: tempfile::TempDir,
    paimon: PaimonSession,
    plain: SessionContext,
}

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(2)
}

fn setup(rt: &Runtime) -> Setup {
    let keys: i64 = std::env::var("MERGE_SCAN_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    // DataFusion's listing table skips hidden paths, so the directory name must not start with '.'.
    let dir = tempfile::Builder::new()
        .prefix("merge-scan-")
        .tempdir()
        .expect("temp dir");
    rt.block_on(async {
        for (name, runs) in [("one_run", 1), ("five_runs", 5)] {
            let spec = GeneratedTable {
                num_keys: keys,
                buckets: 4,
                runs,
                update_fraction: 0.1,
                seed: 42,
                options: vec![],
                leveled: false,
            };
            write_generated_table(dir.path(), "bench", name, &spec)
                .await
                .expect("generate table");
        }
        let paimon = PaimonSession::with_config(config(), dir.path().to_str().expect("utf-8 path"))
            .await
            .expect("open warehouse");
        let plain = SessionContext::new_with_config(config());
        for name in ["one_run", "five_runs"] {
            // The same data files the Paimon table lists, read as plain Parquet.
            let table = dir.path().join("bench.db").join(name);
            let mut files: Vec<String> = Vec::new();
            for bucket in std::fs::read_dir(&table).expect("table dir").flatten() {
                if bucket.file_name().to_string_lossy().starts_with("bucket-") {
                    for f in std::fs::read_dir(bucket.path()).expect("bucket dir").flatten() {
                        files.push(f.path().display().to_string());
                    }
                }
            }
            let df = plain
                .read_parquet(files, ParquetReadOptions::default())
                .await
                .expect("read parquet");
            plain
                .register_table(format!("plain_{name}"), df.into_view())
                .expect("register");
        }
        Setup {
            _dir: dir,
            paimon,
            plain,
        }
    })
}

async fn run_paimon(s: &Setup, table: &str) -> usize {
    let df = s
        .paimon
        .sql(&format!("SELECT {QUERY_COLUMNS} FROM bench.{table}"))
        .await
        .expect("plan");
    df.collect().await.expect("run").len()
}

async fn run_plain(s: &Setup, table: &str) -> usize {
    let df = s
        .plain
        .sql(&format!("SELECT {QUERY_COLUMNS} FROM plain_{table}"))
        .await
        .expect("plan");
    df.collect().await.expect("run").len()
}

fn median(rt: &Runtime, mut f: impl FnMut() -> Duration) -> Duration {
    rt.block_on(async {});
    let mut samples: Vec<Duration> = (0..9).map(|_| f()).collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let s = setup(&rt);
    let mut group = c.benchmark_group("merge_scan");
    group.sample_size(10);
    for table in ["one_run", "five_runs"] {
        group.bench_function(format!("paimon_{table}_2m_keys_4_buckets"), |b| {
            b.to_async(&rt)
                .iter(|| async { std::hint::black_box(run_paimon(&s, table).await) })
        });
        group.bench_function(format!("plain_parquet_{table}_2m_keys_4_buckets"), |b| {
            b.to_async(&rt)
                .iter(|| async { std::hint::black_box(run_plain(&s, table).await) })
        });
    }
    group.finish();

    // The ratio, measured back to back in this run (median of 9 each).
    for table in ["one_run", "five_runs"] {
        let paimon = median(&rt, || {
            let t = Instant::now();
            rt.block_on(run_paimon(&s, table));
            t.elapsed()
        });
        let plain = median(&rt, || {
            let t = Instant::now();
            rt.block_on(run_plain(&s, table));
            t.elapsed()
        });
        println!(
            "ratio {table}: merge-on-read {:.1} ms / plain parquet {:.1} ms = {:.2}x",
            paimon.as_secs_f64() * 1e3,
            plain.as_secs_f64() * 1e3,
            paimon.as_secs_f64() / plain.as_secs_f64()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
