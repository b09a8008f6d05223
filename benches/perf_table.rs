//! The performance issue's table in one run: each query and write of ours against a plain
//! DataFusion baseline over the same Parquet files (or the same rows, for writes), the median of
//! `PERF_ROUNDS` (default 5) rounds in which both sides alternate.
//!
//! Tables (`PERF_KEYS` keys, default 2M; deduplicate, `id BIGINT` key, `v1 BIGINT, v2 DOUBLE,
//! v3 STRING, v4 INT`):
//! * generated: five overlapping sorted runs per bucket (each later run updates 10% of the keys)
//!   in 1 and in 4 buckets, and one run (fully compacted) in 1 bucket, encoded as Paimon's own
//!   writers encode them (dictionary falling back to plain, zstd);
//! * `history`: written by SQL in 5 snapshots (every key, then 4 upserts of 10% of the keys;
//!   `write-only`, so 5 runs in 1 bucket), for the diff and `$audit_log` rows, and for the
//!   `count(*)` and aggregate over files paimon-sql wrote (delta-encoded key and sequence).
//!
//! Writes insert 1M upserts (keys in scrambled order, from an in-memory table) and compare with
//! DataFusion writing the same rows sorted by key as one Parquet file; the default-options INSERT
//! lands in a copy of the 5-run 1-bucket table, so its commit triggers a universal compaction,
//! and its peak RSS is printed against the plain write's, each run once more in a process of its
//! own (this bench started again as a child; Linux `VmHWM`): a process that ran other statements
//! keeps their memory in its allocator.
//!
//! A 1-bucket table is one split: its ratios show whether a bucket uses both cores.
//!
//! `cargo bench --bench perf_table` (`PERF_KEYS=200000` for a quick run; `PERF_ONLY=diff` runs
//! only the rows whose name contains `diff`, e.g. under a profiler; `PERF_KEEP=<dir>` keeps a
//! copy of the generated warehouse there, to query by hand). Not a criterion bench: the
//! figures are ratios of whole statements measured back to back.

// The allocator paimon-sql (and datafusion-cli) run with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::time::{Duration, Instant};

use datafusion::arrow::array::AsArray;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_paimon::testing::{
    bucket_data_files, copy_dir, register_upsert_source, sorted_parquet_write, write_generated_table,
    GeneratedTable, KeyShape,
};
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

fn env(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(2)
}

/// (table, sorted runs per bucket, buckets)
const GENERATED: [(&str, usize, i32); 3] = [
    ("five_runs_1_bucket", 5, 1),
    ("five_runs_4_buckets", 5, 4),
    ("compacted_1_bucket", 1, 1),
];

const AGGREGATE: &str = "sum(v2), count(DISTINCT v4)";

async fn run(ctx: &SessionContext, sql: &str) {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    df.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Runs a statement through the Paimon session (Flink-style DDL, procedures).
async fn run_paimon(session: &PaimonSession, sql: &str) {
    let df = session.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    df.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Registers the data files under `table_dir` (every `bucket-*` directory) as `name` in `plain`.
async fn register_plain(plain: &SessionContext, table_dir: &Path, name: &str) {
    let files = bucket_data_files(table_dir).expect("data files");
    let df = plain
        .read_parquet(files, ParquetReadOptions::default())
        .await
        .expect("read parquet");
    plain.register_table(name, df.into_view()).expect("register");
}

/// Registers the oldest data file of `table` (1 bucket) as `<table>_oldest` in `plain`, and the
/// others as `<table>_newer`: the merge of the aggregate decodes the keys of the newer runs
/// only (the oldest run's keys are dense, computed from row positions).
async fn register_oldest_and_newer(paimon: &PaimonSession, plain: &SessionContext, table: &str) {
    let sql = format!("SELECT file_path FROM bench.\"{table}$files\" ORDER BY min_sequence_number");
    let batches = paimon.sql(&sql).await.expect(&sql).collect().await.expect(&sql);
    let mut paths: Vec<String> = Vec::new();
    for batch in &batches {
        let column = batch.column(0).as_string::<i32>();
        paths.extend(
            column
                .iter()
                .flatten()
                .map(|p| p.trim_start_matches("file://").to_string()),
        );
    }
    let newer = paths.split_off(1);
    for (suffix, files) in [("oldest", paths), ("newer", newer)] {
        let df = plain
            .read_parquet(files, ParquetReadOptions::default())
            .await
            .expect("read parquet");
        plain
            .register_table(format!("{table}_{suffix}"), df.into_view())
            .expect("register");
    }
}

/// Peak resident memory of this process, in MB (Linux only).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Child mode (`--rss-child <write> <path> <rows>`): runs one write in this fresh process and
/// prints its peak RSS.
fn rss_child(rt: &Runtime, args: &[String]) {
    let (write, path, rows) = (&args[0], &args[1], args[2].parse().expect("rows"));
    rt.block_on(async {
        if write == "sorted" {
            let plain = SessionContext::new_with_config(config());
            register_upsert_source(&plain, rows).expect("source");
            sorted_parquet_write(&plain, &format!("{path}/sorted.parquet")).await;
        } else {
            let session = PaimonSession::with_config(config(), path).await.expect("open");
            register_upsert_source(session.context(), rows).expect("source");
            run_paimon(
                &session,
                "INSERT INTO bench.target SELECT id, v1, v2, v3, v4 FROM mem.src.rows",
            )
            .await;
        }
    });
    println!("{}", peak_rss_mb().unwrap_or(0.0));
}

/// Peak RSS of one write run by a child process.
fn child_rss(write: &str, path: &Path, rows: i64) -> Option<f64> {
    let out = std::process::Command::new(std::env::current_exe().ok()?)
        .args(["--rss-child", write, path.to_str()?, &rows.to_string()])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

struct Row {
    name: String,
    ours: Vec<Duration>,
    plain: Vec<Duration>,
    goal: f64,
}

impl Row {
    fn new(name: impl Into<String>, goal: f64) -> Row {
        Row {
            name: name.into(),
            ours: Vec::new(),
            plain: Vec::new(),
            goal,
        }
    }

    fn print(&self) {
        let (ours, plain) = (median(self.ours.clone()), median(self.plain.clone()));
        let ratio = ours.as_secs_f64() / plain.as_secs_f64();
        println!(
            "{:<66} {:>9.1} ms {:>9.1} ms {:>7.2}x  (goal {:.1}x{})",
            self.name,
            ours.as_secs_f64() * 1e3,
            plain.as_secs_f64() * 1e3,
            ratio,
            self.goal,
            if ratio <= self.goal { ", met" } else { "" }
        );
    }
}

fn timed(rt: &Runtime, f: impl std::future::Future<Output = ()>) -> Duration {
    let start = Instant::now();
    rt.block_on(f);
    start.elapsed()
}

fn main() {
    let rt = Runtime::new().expect("tokio runtime");
    // `cargo bench` passes `--bench`; there is nothing to filter.
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--rss-child") {
        return rss_child(&rt, &args[at + 1..]);
    }
    let keys = env("PERF_KEYS", 2_000_000);
    let upserts = (keys / 2).max(1);
    let rounds = env("PERF_ROUNDS", 5).max(1) as usize;
    let only = std::env::var("PERF_ONLY").unwrap_or_default();
    let wanted = |name: &str| name.contains(only.as_str());
    // DataFusion's listing table skips hidden paths: no leading '.' in the directory name.
    let dir = tempfile::Builder::new()
        .prefix("perf-table-")
        .tempdir()
        .expect("temp dir");
    let pristine = dir.path().join("pristine");
    let work = dir.path().join("work");

    let (paimon, plain) = rt.block_on(async {
        for (name, runs, buckets) in GENERATED {
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
            write_generated_table(&pristine, "bench", name, &spec)
                .await
                .expect("generate table");
        }
        let paimon = PaimonSession::with_config(config(), pristine.to_str().expect("utf-8"))
            .await
            .expect("open warehouse");
        register_upsert_source(paimon.context(), upserts).expect("source");
        let ctx = &paimon;
        run_paimon(ctx, "CREATE TABLE bench.history (id BIGINT, v1 BIGINT, v2 DOUBLE, v3 STRING, v4 INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'write-only' = 'true')").await;
        run_paimon(ctx, &format!("INSERT INTO bench.history SELECT value, value * 31, value / 7.0, concat('value-', CAST(value % 10000 AS VARCHAR)), CAST(value % 1000 AS INT) FROM generate_series(0, {}) AS t(value)", keys - 1)).await;
        for round in 1..=4 {
            run_paimon(ctx, &format!("INSERT INTO bench.history SELECT value, value + {round}, value / 3.0, 'updated', {round} FROM generate_series(0, {}) AS t(value) WHERE value % 10 = {round}", keys - 1)).await;
        }
        let plain = SessionContext::new_with_config(config());
        register_upsert_source(&plain, upserts).expect("source");
        for (name, _, _) in GENERATED {
            register_plain(&plain, &pristine.join("bench.db").join(name), name).await;
        }
        register_plain(&plain, &pristine.join("bench.db").join("history"), "history").await;
        register_oldest_and_newer(&paimon, &plain, "five_runs_1_bucket").await;
        if let Ok(keep) = std::env::var("PERF_KEEP") {
            copy_dir(&pristine, Path::new(&keep)).expect("copy the warehouse to PERF_KEEP");
        }
        (paimon, plain)
    });

    let mut rows: Vec<Row> = Vec::new();
    // Reads: (row name, our query, the plain query, goal).
    let mut reads: Vec<(String, String, String, f64)> = vec![(
        // Plain DataFusion answers count(*) from file metadata; the filter makes it decode the
        // key column, as a merge must.
        "count(*), 1 bucket, 5 runs".into(),
        "SELECT count(*) FROM bench.five_runs_1_bucket".into(),
        "SELECT count(*) FROM five_runs_1_bucket WHERE id >= 0".into(),
        1.5,
    )];
    for (name, runs, buckets) in GENERATED {
        let shape = if runs == 1 {
            "compacted".to_string()
        } else {
            format!("{runs} runs")
        };
        reads.push((
            format!("{AGGREGATE}, {buckets} bucket(s), {shape}"),
            format!("SELECT {AGGREGATE} FROM bench.{name}"),
            format!("SELECT {AGGREGATE} FROM {name}"),
            if runs == 1 { 1.1 } else { 1.5 },
        ));
    }
    // No merge of these runs can skip decoding the keys it compares: the same aggregates
    // against a plain scan that decodes them too (in 1 bucket the newer runs' keys; the oldest
    // run's keys are dense, so not decoded; in 4 buckets every file's).
    reads.push((
        "same, 1 bucket (vs a scan decoding the newer runs' keys too)".into(),
        format!("SELECT {AGGREGATE} FROM bench.five_runs_1_bucket"),
        format!("SELECT {AGGREGATE}, max(k) FROM (SELECT v2, v4, CAST(NULL AS BIGINT) AS k FROM five_runs_1_bucket_oldest UNION ALL SELECT v2, v4, \"_KEY_id\" AS k FROM five_runs_1_bucket_newer)"),
        1.5,
    ));
    reads.push((
        "same, 4 buckets (vs a scan decoding every key too)".into(),
        format!("SELECT {AGGREGATE} FROM bench.five_runs_4_buckets"),
        format!("SELECT {AGGREGATE}, max(\"_KEY_id\") FROM five_runs_4_buckets"),
        1.5,
    ));
    // The generated tables are encoded as Paimon's writers encode (dictionary, falling back to
    // plain): the keys cost a merge as much to decode as any value column. The same reads of
    // the SQL-written `history` table (5 runs, 1 bucket), whose key and sequence columns are
    // delta encoded.
    reads.push((
        "count(*), 1 bucket, 5 runs, written by paimon-sql".into(),
        "SELECT count(*) FROM bench.history".into(),
        "SELECT count(*) FROM history WHERE id >= 0".into(),
        1.5,
    ));
    reads.push((
        format!("{AGGREGATE}, 1 bucket, 5 runs, written by paimon-sql"),
        format!("SELECT {AGGREGATE} FROM bench.history"),
        format!("SELECT {AGGREGATE} FROM history"),
        1.5,
    ));
    for name in ["five_runs_1_bucket", "compacted_1_bucket"] {
        let range = format!("id BETWEEN {0} AND {0} + 1000", keys / 2);
        reads.push((
            format!("key range (1,001 keys), {name}"),
            format!("SELECT sum(v2), count(*) FROM bench.{name} WHERE {range}"),
            format!("SELECT sum(v2), count(*) FROM {name} WHERE {range}"),
            1.0,
        ));
    }
    reads.push((
        "diff of snapshots 1..5, 1 bucket (vs a scan of all files)".into(),
        "SELECT count(*), sum(v2) FROM paimon_incremental_query('bench.history', 1, 5, 'diff')".into(),
        "SELECT count(*), sum(v2) FROM history".into(),
        3.0,
    ));
    // A diff compares every column, where the query above decodes one: the same diff against a
    // plain scan that decodes every column too.
    reads.push((
        "same diff (vs a scan of every column of all files)".into(),
        "SELECT count(*), sum(v2) FROM paimon_incremental_query('bench.history', 1, 5, 'diff')".into(),
        "SELECT count(*), sum(v2), sum(v1), sum(v4), max(v3), min(id) FROM history".into(),
        1.3,
    ));
    reads.push((
        "$audit_log full scan, 1 bucket, 5 runs".into(),
        "SELECT count(rowkind), sum(v2) FROM bench.\"history$audit_log\"".into(),
        "SELECT count(*), sum(v2) FROM history".into(),
        1.5,
    ));
    reads.retain(|(name, ..)| wanted(name));
    for (name, _, _, goal) in &reads {
        rows.push(Row::new(name.clone(), *goal));
    }
    let write_only = rows.len();
    rows.push(Row::new(
        format!("INSERT {upserts} upserts, 1 bucket, write-only (vs sorted write)"),
        1.3,
    ));
    rows.push(Row::new(
        format!("INSERT {upserts} upserts into 5 runs, default options (compacts)"),
        1.5,
    ));

    for round in 0..rounds {
        for (i, (_, our_sql, plain_sql, _)) in reads.iter().enumerate() {
            rows[i].ours.push(timed(&rt, run_paimon(&paimon, our_sql)));
            rows[i].plain.push(timed(&rt, run(&plain, plain_sql)));
        }
        if !rows[write_only..].iter().any(|row| wanted(&row.name)) {
            continue;
        }
        // Writes: a fresh write-only table, then a copy of the 5-run table (default options).
        let warehouse = work.join(format!("round-{round}"));
        copy_dir(
            &pristine.join("bench.db").join("five_runs_1_bucket"),
            &warehouse.join("bench.db").join("target"),
        )
        .expect("copy table");
        let session = rt
            .block_on(PaimonSession::with_config(
                config(),
                warehouse.to_str().expect("utf-8"),
            ))
            .expect("open copy");
        register_upsert_source(session.context(), upserts).expect("source");
        rt.block_on(run_paimon(&session, "CREATE TABLE bench.fresh (id BIGINT, v1 BIGINT, v2 DOUBLE, v3 STRING, v4 INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1', 'write-only' = 'true')"));
        let insert =
            |table: &str| format!("INSERT INTO bench.{table} SELECT id, v1, v2, v3, v4 FROM mem.src.rows");
        // Each write row runs only when wanted, so PERF_ONLY can profile one of them.
        if wanted(&rows[write_only].name) {
            rows[write_only]
                .ours
                .push(timed(&rt, run_paimon(&session, &insert("fresh"))));
        }
        let file = warehouse.join("sorted.parquet");
        let file = file.to_str().expect("utf-8");
        let plain_write = timed(&rt, sorted_parquet_write(&plain, file));
        rows[write_only].plain.push(plain_write);
        rows[write_only + 1].plain.push(plain_write);
        if wanted(&rows[write_only + 1].name) {
            rows[write_only + 1]
                .ours
                .push(timed(&rt, run_paimon(&session, &insert("target"))));
        }
        drop(session);
        let _ = std::fs::remove_dir_all(&warehouse);
    }

    println!(
        "\n{keys} keys, median of {rounds} rounds; plain = DataFusion over the same Parquet files (reads) or a sorted Parquet write of the same rows (writes)\n"
    );
    println!("{:<66} {:>12} {:>12} {:>8}", "", "ours", "plain", "ratio");
    for row in rows.iter().filter(|row| !row.ours.is_empty()) {
        row.print();
    }
    if !wanted("peak RSS") {
        return;
    }
    // Peak memory, each write alone in a fresh process.
    let warehouse = work.join("rss");
    copy_dir(
        &pristine.join("bench.db").join("five_runs_1_bucket"),
        &warehouse.join("bench.db").join("target"),
    )
    .expect("copy table");
    let compacting = child_rss("insert", &warehouse, upserts);
    let sorted = child_rss("sorted", &warehouse, upserts);
    if let (Some(compacting), Some(sorted)) = (compacting, sorted) {
        println!(
            "peak RSS, each in a process of its own: the compacting INSERT {compacting:.0} MB, the sorted write {sorted:.0} MB ({:.2}x; goal: compaction streams, < 500 MB)",
            compacting / sorted
        );
    }
}
