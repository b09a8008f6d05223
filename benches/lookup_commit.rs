//! Cost of a commit on a `changelog-producer = lookup` table against the same commit on a
//! producer `none` table (same data, same run).
//!
//! Both tables start as 1M keys in 4 buckets at the top level. Each timed iteration copies the
//! pristine table into a fresh warehouse and runs one `INSERT` of 100k upserts of existing
//! keys. With `none` that is the level-0 write and commit; with `lookup` it is also the forced
//! level-0 compaction, the lookup of the old value of every key and the changelog file,
//! committed as a second (COMPACT) snapshot. Lookup indexes are cached across commits by file
//! path; the copies keep their paths, so only the first iteration builds them (as only the
//! first commit of a long-running writer would).
//!
//! `cargo bench --bench lookup_commit` (`LOOKUP_KEYS` / `LOOKUP_UPSERTS` / `LOOKUP_BUCKETS`
//! change the sizes, `LOOKUP_CACHE` sets `lookup.cache-max-memory-size`; `LOOKUP_COLD=1` gives every copy a new path, so nothing cached by an
//! earlier commit helps: the cost of a writer's first commit).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use datafusion::prelude::SessionConfig;
use datafusion_paimon::testing::{write_generated_table, GeneratedTable, KeyShape};
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

fn env(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Fresh {
    session: PaimonSession,
}

/// A pristine copy of `table` at the same path every time (`<work>/<table>`): the data files
/// keep their names and paths, so lookup indexes cached by earlier commits stay valid, as
/// they do for a long-running writer.
fn fresh(rt: &Runtime, pristine: &Path, work: &Path, table: &str) -> Fresh {
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let warehouse = if env("LOOKUP_COLD", 0) == 1 {
        let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        work.join(format!("{table}-{n}"))
    } else {
        work.join(table)
    };
    let _ = std::fs::remove_dir_all(&warehouse);
    datafusion_paimon::testing::copy_dir(
        &pristine.join("bench.db").join(table),
        &warehouse.join("bench.db").join(table),
    )
    .expect("copy of the pristine table");
    let config = SessionConfig::new().with_target_partitions(2);
    let session = rt
        .block_on(PaimonSession::with_config(
            config,
            warehouse.to_str().expect("utf-8"),
        ))
        .expect("open");
    Fresh { session }
}

fn upsert_sql(table: &str, keys: i64, upserts: i64) -> String {
    // spread the upserted keys over the whole key space
    format!(
        "INSERT INTO bench.{table} SELECT CAST(value * 7919 % {keys} AS BIGINT) AS id, value AS v1, \
         CAST(value AS DOUBLE) AS v2, concat('new-', CAST(value AS VARCHAR)) AS v3, CAST(value AS INT) AS v4 \
         FROM generate_series(0, {}) AS t(value)",
        upserts - 1
    )
}

fn commit(rt: &Runtime, fresh: &Fresh, sql: &str) {
    rt.block_on(async {
        fresh
            .session
            .sql(sql)
            .await
            .expect("plan")
            .collect()
            .await
            .expect("insert");
    });
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let keys = env("LOOKUP_KEYS", 1_000_000);
    let upserts = env("LOOKUP_UPSERTS", 100_000);
    let pristine = tempfile::tempdir().expect("temp dir");
    let work = tempfile::tempdir().expect("temp dir");
    rt.block_on(async {
        for (table, producer) in [("none", "none"), ("lookup", "lookup")] {
            let spec = GeneratedTable {
                num_keys: keys,
                keys: KeyShape::Dense,
                buckets: env("LOOKUP_BUCKETS", 4) as i32,
                runs: 1,
                update_fraction: 0.0,
                seed: 7,
                options: [("changelog-producer".to_string(), producer.to_string())]
                    .into_iter()
                    .chain(
                        std::env::var("LOOKUP_CACHE")
                            .ok()
                            .map(|size| ("lookup.cache-max-memory-size".to_string(), size)),
                    )
                    .collect(),
                leveled: true,
            };
            write_generated_table(pristine.path(), "bench", table, &spec)
                .await
                .expect("generate");
        }
    });
    let mut group = c.benchmark_group("lookup_commit");
    group.sample_size(10);
    for table in ["none", "lookup"] {
        let sql = upsert_sql(table, keys, upserts);
        group.bench_function(format!("insert_{upserts}_upserts_producer_{table}"), |b| {
            b.iter_batched(
                || fresh(&rt, pristine.path(), work.path(), table),
                |f| commit(&rt, &f, &sql),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();

    // The ratio, back to back in this run (median of 7 fresh copies each).
    let median = |table: &str| {
        let sql = upsert_sql(table, keys, upserts);
        let mut samples: Vec<Duration> = (0..7)
            .map(|_| {
                let f = fresh(&rt, pristine.path(), work.path(), table);
                let start = Instant::now();
                commit(&rt, &f, &sql);
                start.elapsed()
            })
            .collect();
        samples.sort();
        samples[3]
    };
    let none = median("none");
    let lookup = median("lookup");
    println!(
        "commit of {upserts} upserts over {keys} keys: producer none {:.1} ms, lookup {:.1} ms = {:.2}x",
        none.as_secs_f64() * 1e3,
        lookup.as_secs_f64() * 1e3,
        lookup.as_secs_f64() / none.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
