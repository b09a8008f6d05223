//! ChangelogNormalize throughput: `t$changelog` of a `changelog-producer = none` table against a
//! raw read of the same delta files (`$audit_log`, mode `delta`) in the same run.
//!
//! The table has `NORMALIZE_KEYS` keys (default 2M) written by snapshot 1, then 5 snapshots each
//! upserting 10% of the keys. Both queries cover snapshots (1, 6]; the normalize is seeded with
//! the merged state at snapshot 1 (every key), then folds the 5 x 10% delta rows. Throughput is
//! reported in input rows (seed + delta) per second. Benches 1 bucket (one split, one core) and
//! 4 buckets. `normalize_spilling` runs the same query in a session whose memory pool
//! (`SPILL_POOL_MB`, default 32) is far smaller than the state, so the state spills to disk.
//!
//! `cargo bench --bench changelog_normalize` (`NORMALIZE_KEYS=200000` for a quick run).

// The allocator paimon-sql (and datafusion-cli) run with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

fn keys() -> i64 {
    std::env::var("NORMALIZE_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000)
}

async fn setup(dir: &std::path::Path, buckets: u32, keys: i64) -> PaimonSession {
    let config = SessionConfig::new().with_target_partitions(2);
    let session = PaimonSession::with_config(config, dir.to_str().expect("utf-8"))
        .await
        .expect("session");
    let run = |sql: String| {
        let session = session.clone();
        async move { session.sql(&sql).await.expect(&sql).collect().await.expect(&sql) }
    };
    run("CREATE DATABASE b".into()).await;
    run(format!(
        "CREATE TABLE b.t (k BIGINT, v BIGINT, s STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '{buckets}', 'write-only' = 'true')"
    ))
    .await;
    run(format!(
        "INSERT INTO b.t SELECT value AS k, value AS v, concat('s', CAST(value AS VARCHAR)) AS s FROM generate_series(1, {keys})"
    ))
    .await;
    for round in 1..=5 {
        run(format!(
            "INSERT INTO b.t SELECT value AS k, value + {round} AS v, 'u' AS s FROM generate_series(1, {keys}) WHERE value % 10 = {round}"
        ))
        .await;
    }
    session
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let keys = keys();
    let input_rows = keys + keys / 2;
    for buckets in [1, 4] {
        let dir = tempfile::tempdir().expect("temp dir");
        let session = rt.block_on(setup(dir.path(), buckets, keys));
        let mut group = c.benchmark_group(format!("changelog_normalize/{buckets}_bucket"));
        group.sample_size(10).measurement_time(Duration::from_secs(20));
        group.throughput(Throughput::Elements(input_rows as u64));
        for (name, sql) in [
            (
                "raw_delta_read",
                "SELECT count(*) FROM paimon_incremental_query('b.t$audit_log', 1, 6, 'delta')",
            ),
            ("seed_read", "SELECT count(*) FROM b.t"),
            (
                "normalize",
                "SELECT count(*) FROM paimon_incremental_query('b.t$changelog', 1, 6)",
            ),
        ] {
            group.bench_function(name, |b| {
                b.iter(|| {
                    rt.block_on(async {
                        session.sql(sql).await.expect(sql).collect().await.expect(sql);
                    })
                })
            });
        }
        let spilling = rt.block_on(spilling_session(dir.path()));
        let sql = "SELECT count(*) FROM paimon_incremental_query('b.t$changelog', 1, 6)";
        group.bench_function("normalize_spilling", |b| {
            b.iter(|| {
                rt.block_on(async {
                    spilling.sql(sql).await.expect(sql).collect().await.expect(sql);
                })
            })
        });
        group.finish();
    }
}

/// A session over the same warehouse with a small memory pool.
async fn spilling_session(dir: &std::path::Path) -> PaimonSession {
    let pool_mb: usize = std::env::var("SPILL_POOL_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(pool_mb << 20, 1.0)
        .build_arc()
        .expect("runtime");
    let config = SessionConfig::new().with_target_partitions(2);
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    PaimonSession::register(ctx, dir.to_str().expect("utf-8"))
        .await
        .expect("session")
}

criterion_group!(benches, bench);
criterion_main!(benches);
