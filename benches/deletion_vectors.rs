//! Deletion vectors: what the read gains and what each write pays (issue: every Paimon table).
//!
//! Two tables get the same statements: `DV_KEYS` keys (default 2M) in 4 buckets, then 5
//! INSERTs each upserting 10% of the keys (distinct pseudo-random keys per statement).
//! `dv` has `deletion-vectors.enabled`: every write compacts level 0 by lookup and marks the
//! replaced rows in the vectors of their files, so a read needs no merge. `merge` has the
//! default options: its reads merge the sorted runs. Printed, each the median of 5:
//!
//! * a full read of every column of `dv`, of `merge`, and of the same data files as `dv`
//!   read as plain Parquet by DataFusion (no vectors applied: the floor);
//! * the cost of one more 10% upsert INSERT into a copy of `dv` against a copy of a producer
//!   `none` table with the same data (`merge`), fresh copies for every round.
//!
//! `cargo bench --bench deletion_vectors` (`DV_KEYS=200000` for a quick run). Not a criterion
//! bench: the figures are ratios of a few whole statements.

use std::path::Path;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_paimon::PaimonSession;

const QUERY_COLUMNS: &str = "sum(k), sum(v1), sum(v2), max(length(v3)), count(*)";
const ROUNDS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(2)
}

async fn open(warehouse: &Path) -> PaimonSession {
    PaimonSession::with_config(config(), warehouse.to_str().expect("utf-8"))
        .await
        .expect("session")
}

async fn run(session: &PaimonSession, sql: &str) -> Duration {
    let start = Instant::now();
    session.sql(sql).await.expect(sql).collect().await.expect(sql);
    start.elapsed()
}

/// The i-th 10% upsert: keys `(value * 7919) % keys + 1` are distinct for one statement.
fn upsert(table: &str, keys: i64, i: i64) -> String {
    format!(
        "INSERT INTO bench.{table} SELECT (value * 7919 + {i}) % {keys} + 1 AS k, value + {i} AS v1, value / 3.0, \
         concat('u{i}-', CAST(value AS VARCHAR)) FROM generate_series(1, {})",
        keys / 10
    )
}

fn main() {
    let keys: i64 = std::env::var("DV_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let dir = tempfile::Builder::new().prefix("dv-bench-").tempdir().expect("temp dir");
        let warehouse = dir.path().join("wh");
        let session = open(&warehouse).await;
        session.sql("CREATE DATABASE bench").await.expect("db").collect().await.expect("db");
        for (table, options) in [
            ("dv", "'bucket' = '4', 'deletion-vectors.enabled' = 'true'"),
            ("merge", "'bucket' = '4'"),
        ] {
            let ddl = format!(
                "CREATE TABLE bench.{table} (k BIGINT, v1 BIGINT, v2 DOUBLE, v3 STRING, \
                 PRIMARY KEY (k) NOT ENFORCED) WITH ({options})"
            );
            run(&session, &ddl).await;
            let load = format!(
                "INSERT INTO bench.{table} SELECT value AS k, value AS v1, value / 7.0, concat('v-', CAST(value AS VARCHAR)) \
                 FROM generate_series(1, {keys})"
            );
            let mut writes = vec![run(&session, &load).await];
            for i in 1..=5 {
                writes.push(run(&session, &upsert(table, keys, i)).await);
            }
            let upserts: Vec<String> = writes[1..].iter().map(|d| format!("{:.0}", d.as_secs_f64() * 1e3)).collect();
            println!(
                "{table}: load {:.0} ms, upserts [{}] ms",
                writes[0].as_secs_f64() * 1e3,
                upserts.join(", ")
            );
        }

        // The data files `dv` reads, as plain Parquet.
        let files = session
            .sql("SELECT file_path FROM bench.`dv$files`")
            .await
            .expect("files")
            .collect()
            .await
            .expect("files");
        let paths: Vec<String> = files
            .iter()
            .flat_map(|b| {
                let col = b.column(0).as_string::<i32>();
                (0..col.len()).map(|i| col.value(i).trim_start_matches("file://").to_string()).collect::<Vec<_>>()
            })
            .collect();
        let plain = SessionContext::new_with_config(config());
        let df = plain.read_parquet(paths.clone(), ParquetReadOptions::default()).await.expect("parquet");
        plain.register_table("plain_dv", df.into_view()).expect("register");

        let mut times = Vec::new();
        for (label, sql) in [
            ("dv (vectors, no merge)", format!("SELECT {QUERY_COLUMNS} FROM bench.dv")),
            ("merge (merge-on-read)", format!("SELECT {QUERY_COLUMNS} FROM bench.merge")),
        ] {
            let mut samples = Vec::new();
            for _ in 0..ROUNDS {
                samples.push(run(&session, &sql).await);
            }
            times.push((label, median(samples)));
        }
        let mut samples = Vec::new();
        for _ in 0..ROUNDS {
            let start = Instant::now();
            plain
                .sql(&format!("SELECT {} FROM plain_dv", QUERY_COLUMNS))
                .await
                .expect("plain")
                .collect()
                .await
                .expect("plain");
            samples.push(start.elapsed());
        }
        let floor = median(samples);
        println!("read, {} data files of dv:", paths.len());
        for (label, t) in &times {
            println!(
                "  {label}: {:.1} ms = {:.2}x the plain Parquet scan ({:.1} ms)",
                t.as_secs_f64() * 1e3,
                t.as_secs_f64() / floor.as_secs_f64(),
                floor.as_secs_f64() * 1e3
            );
        }
        println!(
            "  dv / merge: {:.2}x",
            times[0].1.as_secs_f64() / times[1].1.as_secs_f64()
        );

        // One more upsert into fresh copies, interleaved.
        let (mut with_dv, mut without) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            for (table, out) in [("dv", &mut with_dv), ("merge", &mut without)] {
                let copy = dir.path().join(format!("copy-{table}-{round}"));
                datafusion_paimon::testing::copy_dir(&warehouse, &copy).expect("copy");
                let s = open(&copy).await;
                out.push(run(&s, &upsert(table, keys, 6)).await);
                std::fs::remove_dir_all(&copy).expect("rm copy");
            }
        }
        let (dv, none) = (median(with_dv), median(without));
        println!(
            "write, one 10% upsert: with deletion vectors {:.0} ms / producer none {:.0} ms = {:.2}x",
            dv.as_secs_f64() * 1e3,
            none.as_secs_f64() * 1e3,
            dv.as_secs_f64() / none.as_secs_f64()
        );
    });
}
