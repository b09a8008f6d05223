//! A table fed one single-row INSERT per statement must keep a flat cost per commit and per
//! query (issue: "tables that live for months"). Runs `COMMITS` (default 1,000) single-row
//! commits into a 2-bucket primary-key table and a 1-bucket one, and prints:
//!
//! * the median INSERT time of the last 100 commits against the first 100 (after 10 warm-up
//!   commits): the ratio must stay near 1 (goal ≤ 1.5);
//! * the planning time of `SELECT count(*), max(v)` (`EXPLAIN`, no execution) at commit 100 and at
//!   the end, and the query time at both points;
//! * how many manifests the latest snapshot lists (base + delta).
//!
//! `cargo bench --bench many_commits` (`COMMITS=300` for a quicker run). Not a criterion bench:
//! the figure of interest is how the cost moves along one long history, not one repeated step.

use std::time::{Duration, Instant};

use datafusion::prelude::SessionConfig;
use datafusion_paimon::PaimonSession;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn time_sql(session: &PaimonSession, sql: &str) -> Duration {
    let start = Instant::now();
    session
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    start.elapsed()
}

/// Median of 5 runs of `sql`.
async fn sample(session: &PaimonSession, sql: &str) -> Duration {
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(time_sql(session, sql).await);
    }
    median(runs)
}

async fn run(buckets: u32, commits: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SessionConfig::new().with_target_partitions(2);
    let session = PaimonSession::with_config(config, dir.path().to_str().expect("utf-8"))
        .await
        .expect("session");
    session
        .sql("CREATE DATABASE IF NOT EXISTS bench")
        .await
        .expect("create database");
    session
        .sql(&format!(
            "CREATE TABLE bench.t (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '{buckets}')"
        ))
        .await
        .expect("create");
    let query = "SELECT count(*), max(v) FROM bench.t";
    let explain = "EXPLAIN SELECT count(*), max(v) FROM bench.t";
    let mut inserts = Vec::with_capacity(commits);
    let mut early = (Duration::ZERO, Duration::ZERO);
    // Planning sampled along the history: manifests merge in a saw-tooth (1 to
    // `manifest.merge-min-count`), so one point says more about where in a tooth it fell
    // than about the history's length.
    let mut planning: Vec<(usize, Duration)> = Vec::new();
    for i in 0..commits {
        let sql = format!("INSERT INTO bench.t VALUES ({}, {i})", i % 500);
        inserts.push(time_sql(&session, &sql).await);
        if i + 1 == 100 {
            early = (sample(&session, explain).await, sample(&session, query).await);
        }
        if (i + 1) % 3 == 0 {
            planning.push((i + 1, time_sql(&session, explain).await));
        }
    }
    let window = |from: usize, to: usize| {
        median(
            planning
                .iter()
                .filter(|(c, _)| (from..=to).contains(c))
                .map(|(_, d)| *d)
                .collect(),
        )
    };
    let (around_100, last_100) = (window(51, 150), window(commits.saturating_sub(99), commits));
    let late = (sample(&session, explain).await, sample(&session, query).await);
    let first = median(inserts[10..110.min(commits)].to_vec());
    let last = median(inserts[commits.saturating_sub(100)..].to_vec());
    let manifests = session
        .sql("SELECT (SELECT count(*) FROM bench.\"t$manifests\") AS manifests, (SELECT sum(file_size) FROM bench.\"t$manifests\") AS manifest_bytes, (SELECT count(*) FROM bench.\"t$files\") AS data_files")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let ratio = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64().max(1e-9);
    // The whole curve: is the cost flat, or does it keep growing with the history?
    let per_window: Vec<String> = inserts
        .chunks(100)
        .zip(planning.chunks(33))
        .map(|(i, p)| {
            let p: Vec<Duration> = p.iter().map(|(_, d)| *d).collect();
            format!(
                "{:.1}/{:.1}",
                median(i.to_vec()).as_secs_f64() * 1e3,
                median(p).as_secs_f64() * 1e3
            )
        })
        .collect();
    println!(
        "bucket={buckets}: median INSERT/planning ms per 100 commits: {}",
        per_window.join(" ")
    );
    println!(
        "bucket={buckets} commits={commits}: INSERT median first 100 {first:?}, last 100 {last:?} ({:.2}x); \
         planning at 100 {:?}, at {commits} {:?} ({:.2}x); planning sampled every 3rd commit, median of commits 51-150 {around_100:?}, of the last 100 {last_100:?} ({:.2}x); query at 100 {:?}, at {commits} {:?} ({:.2}x); \
         manifests listed: {}",
        ratio(first, last),
        early.0,
        late.0,
        ratio(early.0, late.0),
        ratio(around_100, last_100),
        early.1,
        late.1,
        ratio(early.1, late.1),
        arrow::util::pretty::pretty_format_batches(&manifests).expect("format"),
    );
}

fn main() {
    let commits: usize = std::env::var("COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
        .max(120);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for buckets in [2, 1] {
        rt.block_on(run(buckets, commits));
    }
}
