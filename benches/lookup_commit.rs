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
//! earlier commit helps: the cost of a writer's first commit; `LOOKUP_ROUNDS` sets the rounds
//! of the ratios, default 7).

use std::path::Path;
use std::time::{Duration, Instant};

use arrow::array::AsArray;
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

    // The ratios, back to back in this run: each round commits into a fresh copy of each
    // table and writes the floor (the files the lookup commit writes, as plain Parquet by
    // DataFusion: the level-0 file, the compaction's output, the changelog rows), one right
    // after the other, so a slow spell of the machine slows all three of a round alike. The
    // medians of `LOOKUP_ROUNDS` (default 7) rounds, and the median of the rounds' ratios.
    let (output_rows, changelog_rows) =
        written_by_lookup_commit(&rt, pristine.path(), work.path(), keys, upserts);
    let floor_dir = work.path().join("floor");
    let timed_commit = |table: &str| {
        let sql = upsert_sql(table, keys, upserts);
        let f = fresh(&rt, pristine.path(), work.path(), table);
        let start = Instant::now();
        commit(&rt, &f, &sql);
        start.elapsed()
    };
    let timed_floor = || {
        let _ = std::fs::remove_dir_all(&floor_dir);
        std::fs::create_dir_all(&floor_dir).expect("floor dir");
        let start = Instant::now();
        rt.block_on(plain_writes(&floor_dir, upserts, output_rows, changelog_rows));
        start.elapsed()
    };
    let rounds = env("LOOKUP_ROUNDS", 7).max(1) as usize;
    let (mut nones, mut lookups, mut floors, mut ratios) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let none = timed_commit("none");
        let lookup = timed_commit("lookup");
        let floor = timed_floor();
        ratios.push(lookup.as_secs_f64() / floor.as_secs_f64());
        nones.push(none);
        lookups.push(lookup);
        floors.push(floor);
    }
    let median = |mut samples: Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    let (none, lookup, floor) = (median(nones), median(lookups), median(floors));
    ratios.sort_by(f64::total_cmp);
    println!(
        "commit of {upserts} upserts over {keys} keys: producer none {:.1} ms, lookup {:.1} ms = {:.2}x",
        none.as_secs_f64() * 1e3,
        lookup.as_secs_f64() * 1e3,
        lookup.as_secs_f64() / none.as_secs_f64()
    );
    println!(
        "floor (plain Parquet of {upserts} level-0 rows, {output_rows} compaction output rows, {changelog_rows} changelog rows) {:.1} ms: lookup {:.2}x, none {:.2}x; median of the {rounds} rounds' lookup/floor ratios {:.2}x",
        floor.as_secs_f64() * 1e3,
        lookup.as_secs_f64() / floor.as_secs_f64(),
        none.as_secs_f64() / floor.as_secs_f64(),
        ratios[ratios.len() / 2]
    );
}

/// Rows of the files one lookup commit writes besides its level-0 file: the compaction output
/// (files new since the pristine table, after the commit) and the changelog rows.
fn written_by_lookup_commit(
    rt: &Runtime,
    pristine: &Path,
    work: &Path,
    keys: i64,
    upserts: i64,
) -> (i64, i64) {
    let f = fresh(rt, pristine, work, "lookup");
    let files = |f: &Fresh| -> Vec<(String, i64)> {
        rt.block_on(async {
            let batches = f
                .session
                .sql("SELECT file_path, record_count FROM bench.\"lookup$files\"")
                .await
                .expect("files")
                .collect()
                .await
                .expect("files");
            let mut rows = Vec::new();
            for b in &batches {
                let paths = b.column(0).as_string::<i32>();
                let counts = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
                for i in 0..b.num_rows() {
                    rows.push((paths.value(i).to_string(), counts.value(i)));
                }
            }
            rows
        })
    };
    let before: std::collections::HashSet<String> = files(&f).into_iter().map(|(p, _)| p).collect();
    commit(rt, &f, &upsert_sql("lookup", keys, upserts));
    let output = files(&f)
        .into_iter()
        .filter(|(p, _)| !before.contains(p))
        .map(|(_, n)| n)
        .sum();
    let changelog = rt.block_on(async {
        let batches = f
            .session
            .sql("SELECT sum(changelog_record_count) FROM bench.\"lookup$snapshots\"")
            .await
            .expect("snapshots")
            .collect()
            .await
            .expect("snapshots");
        batches[0]
            .column(0)
            .as_primitive::<arrow::datatypes::Int64Type>()
            .value(0)
    });
    (output, changelog)
}

/// DataFusion writes `l0` upsert rows sorted by key, `output` rows of the same columns and
/// `changelog` rows with a row-kind column, each as one Parquet file under `dir`.
async fn plain_writes(dir: &Path, l0: i64, output: i64, changelog: i64) {
    let ctx =
        datafusion::prelude::SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    let rows = |n: i64, kind: &str| {
        format!(
            "SELECT {kind}CAST(value * 7919 AS BIGINT) AS id, value AS v1, CAST(value AS DOUBLE) AS v2, \
             concat('new-', CAST(value AS VARCHAR)) AS v3, CAST(value AS INT) AS v4 \
             FROM generate_series(0, {}) AS t(value) ORDER BY id",
            n - 1
        )
    };
    for (name, sql) in [
        ("l0", rows(l0, "")),
        ("output", rows(output, "")),
        (
            "changelog",
            rows(changelog, "CAST(value % 4 AS TINYINT) AS rowkind, "),
        ),
    ] {
        let path = dir.join(format!("{name}.parquet"));
        let options = datafusion::dataframe::DataFrameWriteOptions::new().with_single_file_output(true);
        ctx.sql(&sql)
            .await
            .expect("plan")
            .write_parquet(path.to_str().expect("utf-8"), options, None)
            .await
            .expect("parquet write");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
