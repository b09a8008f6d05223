//! Merge throughput per merge engine and key shape: the same generated data (1M keys in 4
//! buckets, five overlapping sorted runs, each later run updating a random 10% of the keys, 1.4M
//! records in all) read through each engine, against a plain DataFusion Parquet scan of the same
//! files. Each engine runs over three key shapes (`testing::KeyShape`): a dense `BIGINT` range,
//! sparse `BIGINT`s with irregular gaps, and fixed-width `STRING`s; the plain scan reads the
//! files of the same shape.
//!
//! * `deduplicate`: decided by sequence number, no values touched (the fast path).
//! * `deduplicate_sequence_field`: `sequence.field = v4`, so groups are ordered by value.
//! * `first_row`: runs placed at levels 5..1 (first-row reads skip level 0).
//! * `partial_update`: non-null overwrite of every column.
//! * `aggregation`: `sum(v1)`, `max(v2)`, `last_non_null_value(v3)`, `sum(v4)`.
//!
//! Prints rows/s (input records per second) and the ratio to the plain scan.
//! `cargo bench --bench merge_engines` (`MERGE_ENGINE_KEYS` changes the size).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_paimon::testing::{bucket_data_files, write_generated_table, GeneratedTable, KeyShape};
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

const QUERY_COLUMNS: &str = "max(id), sum(v1), sum(v2), max(length(v3)), sum(v4), count(*)";

fn engines() -> Vec<(&'static str, Vec<(&'static str, &'static str)>, bool)> {
    vec![
        ("deduplicate", vec![], false),
        (
            "deduplicate_sequence_field",
            vec![("sequence.field", "v4")],
            false,
        ),
        ("first_row", vec![("merge-engine", "first-row")], true),
        ("partial_update", vec![("merge-engine", "partial-update")], false),
        (
            "aggregation",
            vec![
                ("merge-engine", "aggregation"),
                ("fields.v1.aggregate-function", "sum"),
                ("fields.v2.aggregate-function", "max"),
                ("fields.v4.aggregate-function", "sum"),
            ],
            false,
        ),
    ]
}

struct Setup {
    _dir: tempfile::TempDir,
    paimon: PaimonSession,
    /// The plain files of each shape's deduplicate table, registered as `plain_<shape>`.
    plain: SessionContext,
    input_rows: u64,
}

fn table_name(engine: &str, shape: KeyShape) -> String {
    format!("{engine}_{}", shape.name())
}

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(2)
}

fn setup(rt: &Runtime) -> Setup {
    let keys: i64 = std::env::var("MERGE_ENGINE_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::Builder::new()
        .prefix("merge-engines-")
        .tempdir()
        .expect("temp dir");
    rt.block_on(async {
        for shape in KeyShape::ALL {
            for (name, options, leveled) in engines() {
                let spec = GeneratedTable {
                    num_keys: keys,
                    keys: shape,
                    buckets: 4,
                    runs: 5,
                    update_fraction: 0.1,
                    seed: 42,
                    options: options
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                    leveled,
                };
                write_generated_table(dir.path(), "bench", &table_name(name, shape), &spec)
                    .await
                    .expect("generate table");
            }
        }
        let paimon = PaimonSession::with_config(config(), dir.path().to_str().expect("utf-8 path"))
            .await
            .expect("open warehouse");
        // The plain baseline of a shape reads the files of one of its tables (they all hold the
        // same data).
        let plain = SessionContext::new_with_config(config());
        let mut input_rows = 0;
        for shape in KeyShape::ALL {
            let table = table_name("deduplicate", shape);
            let files = bucket_data_files(&dir.path().join("bench.db").join(&table)).expect("data files");
            let df = plain
                .read_parquet(files, ParquetReadOptions::default())
                .await
                .expect("read parquet");
            input_rows = df.clone().count().await.expect("count") as u64;
            plain
                .register_table(format!("plain_{}", shape.name()), df.into_view())
                .expect("register");
        }
        Setup {
            _dir: dir,
            paimon,
            plain,
            input_rows,
        }
    })
}

async fn run_paimon(s: &Setup, table: &str) -> usize {
    // (every table of the bench has the same rows; the key column's type is the shape's)
    let df = s
        .paimon
        .sql(&format!("SELECT {QUERY_COLUMNS} FROM bench.{table}"))
        .await
        .expect("plan");
    df.collect().await.expect("run").len()
}

async fn run_plain(s: &Setup, shape: KeyShape) -> usize {
    let df = s
        .plain
        .sql(&format!("SELECT {QUERY_COLUMNS} FROM plain_{}", shape.name()))
        .await
        .expect("plan");
    df.collect().await.expect("run").len()
}

fn median(mut f: impl FnMut() -> Duration) -> Duration {
    let mut samples: Vec<Duration> = (0..7).map(|_| f()).collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().expect("tokio runtime");
    let s = setup(&rt);
    let mut group = c.benchmark_group("merge_engines");
    group.sample_size(10);
    for shape in KeyShape::ALL {
        for (engine, _, _) in engines() {
            let table = table_name(engine, shape);
            group.bench_function(&table, |b| {
                b.to_async(&rt)
                    .iter(|| async { std::hint::black_box(run_paimon(&s, &table).await) })
            });
        }
        group.bench_function(format!("plain_parquet_{}", shape.name()), |b| {
            b.to_async(&rt)
                .iter(|| async { std::hint::black_box(run_plain(&s, shape).await) })
        });
    }
    group.finish();

    for shape in KeyShape::ALL {
        let plain = median(|| {
            let t = Instant::now();
            rt.block_on(run_plain(&s, shape));
            t.elapsed()
        });
        for (engine, _, _) in engines() {
            let table = table_name(engine, shape);
            let time = median(|| {
                let t = Instant::now();
                rt.block_on(run_paimon(&s, &table));
                t.elapsed()
            });
            println!(
                "{table}: {:.1} ms, {:.2} M input rows/s, {:.2}x plain parquet ({:.1} ms)",
                time.as_secs_f64() * 1e3,
                s.input_rows as f64 / time.as_secs_f64() / 1e6,
                time.as_secs_f64() / plain.as_secs_f64(),
                plain.as_secs_f64() * 1e3
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
