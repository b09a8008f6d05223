//! Merge-on-read scan vs a plain DataFusion Parquet scan of the same data files.
//!
//! Generated deduplicate tables of 2M keys in 4 buckets and in 1 bucket: (a) one sorted run
//! per bucket, (b) five overlapping runs per bucket, each later run updating a random 10% of
//! the keys. The timed queries read every value column (sums, lengths) so no side can answer
//! from metadata, or a primary-key range of 1,001 keys (both sides prune with Parquet
//! statistics). A 1-bucket table is one split: its speed shows whether a bucket uses every core.
//!
//! `cargo bench --bench merge_scan` (set `MERGE_SCAN_KEYS` to change the size).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_paimon::testing::{bucket_data_files, write_generated_table, GeneratedTable, KeyShape};
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
        for (name, runs, buckets) in TABLES {
            let spec = GeneratedTable {
                num_keys: keys,
                keys: KeyShape::Dense,
                buckets,
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
        for (name, _, _) in TABLES {
            // The same data files the Paimon table lists, read as plain Parquet.
            let files = bucket_data_files(&dir.path().join("bench.db").join(name)).expect("data files");
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

/// (table, sorted runs per bucket, buckets)
const TABLES: [(&str, usize, i32); 4] = [
    ("one_run", 1, 4),
    ("five_runs", 5, 4),
    ("one_run_1_bucket", 1, 1),
    ("five_runs_1_bucket", 5, 1),
];

/// The timed queries, over `{t}`.
const QUERIES: [(&str, &str); 2] = [
    ("all columns", "SELECT {cols} FROM {t}"),
    (
        "key range",
        "SELECT {cols} FROM {t} WHERE id BETWEEN 1000000 AND 1001000",
    ),
];

fn query(template: &str, table: &str) -> String {
    template.replace("{cols}", QUERY_COLUMNS).replace("{t}", table)
}

async fn run_paimon(s: &Setup, table: &str, template: &str) -> usize {
    let df = s
        .paimon
        .sql(&query(template, &format!("bench.{table}")))
        .await
        .expect("plan");
    df.collect().await.expect("run").len()
}

async fn run_plain(s: &Setup, table: &str, template: &str) -> usize {
    let df = s
        .plain
        .sql(&query(template, &format!("plain_{table}")))
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
    let full = QUERIES[0].1;
    for (table, _, _) in TABLES {
        group.bench_function(format!("paimon_{table}"), |b| {
            b.to_async(&rt)
                .iter(|| async { std::hint::black_box(run_paimon(&s, table, full).await) })
        });
        group.bench_function(format!("plain_parquet_{table}"), |b| {
            b.to_async(&rt)
                .iter(|| async { std::hint::black_box(run_plain(&s, table, full).await) })
        });
    }
    group.finish();

    // The ratios, measured back to back in this run (median of 9 each).
    for (name, template) in QUERIES {
        for (table, _, _) in TABLES {
            let paimon = median(&rt, || {
                let t = Instant::now();
                rt.block_on(run_paimon(&s, table, template));
                t.elapsed()
            });
            let plain = median(&rt, || {
                let t = Instant::now();
                rt.block_on(run_plain(&s, table, template));
                t.elapsed()
            });
            println!(
                "ratio {name}, {table}: merge-on-read {:.1} ms / plain parquet {:.1} ms = {:.2}x",
                paimon.as_secs_f64() * 1e3,
                plain.as_secs_f64() * 1e3,
                paimon.as_secs_f64() / plain.as_secs_f64()
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
