//! MERGE INTO against INSERT of the same rows (issue 45): a source of `MERGE_SOURCE_ROWS`
//! (default 1M) rows, 10% of them keys the target has, merged into a deduplicate table of
//! `MERGE_TARGET_ROWS` (default 20M) rows with
//! `WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`, against the same source
//! rows upserted by INSERT into an identical table, back to back in one run. Keys are sparse
//! integers (`7i + 3`), not a dense range.
//!
//! Then a CDC-sized MERGE (`MERGE_SMALL_ROWS`, default 1000 rows in scattered order, half of
//! them matched) into the same table with DataFusion's join dynamic filters on (the target's
//! scan narrowed at run time to the source's keys, `scan::runtime_filter`) and off, alternating,
//! best of 3 each.
//!
//! `cargo bench --bench merge_into` (prints the wall times and their ratios).

use std::time::{Duration, Instant};

use datafusion::prelude::SessionConfig;
use datafusion_paimon::PaimonSession;
use tokio::runtime::Runtime;

fn env(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn run(session: &PaimonSession, sql: &str) -> Duration {
    let started = Instant::now();
    session
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    started.elapsed()
}

fn main() {
    let (target, source) = (
        env("MERGE_TARGET_ROWS", 20_000_000),
        env("MERGE_SOURCE_ROWS", 1_000_000),
    );
    let rt = Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    rt.block_on(async {
        let config = SessionConfig::new().with_target_partitions(2);
        let session = PaimonSession::with_config(config, dir.path().to_str().expect("UTF-8"))
            .await
            .expect("session");
        // every tenth source row a key of the target, spread over it; the others new keys
        let stride = (target / source.max(1)).max(1);
        run(
            &session,
            &format!(
                "CREATE VIEW src AS SELECT CASE WHEN value % 10 = 0 THEN ((value * {stride}) % {target}) * 7 + 3 \
                 ELSE ({target} + value) * 7 + 5 END AS id, value AS v, concat('s-', CAST(value AS VARCHAR)) AS s \
                 FROM generate_series(0, {}) ",
                source - 1
            ),
        )
        .await;
        for table in ["merged", "inserted"] {
            run(
                &session,
                &format!("CREATE TABLE {table} (id BIGINT, v BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')"),
            )
            .await;
            let load = run(
                &session,
                &format!(
                    "INSERT INTO {table} SELECT value * 7 + 3, value, concat('t-', CAST(value AS VARCHAR)) FROM generate_series(0, {})",
                    target - 1
                ),
            )
            .await;
            println!("load {table}: {target} rows in {load:?}");
        }
        let merge = run(
            &session,
            "MERGE INTO merged t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        )
        .await;
        let insert = run(&session, "INSERT INTO inserted SELECT * FROM src").await;
        // both tables hold the same rows afterwards
        let check = session
            .sql("SELECT (SELECT count(*) FROM merged) - (SELECT count(*) FROM inserted) AS d")
            .await
            .expect("check")
            .collect()
            .await
            .expect("check");
        println!("row count difference: {}", arrow::util::pretty::pretty_format_batches(&check).expect("format"));
        println!(
            "MERGE of {source} source rows (10% matched) into {target}: {merge:?}; INSERT of the same rows: {insert:?}; ratio {:.2}",
            merge.as_secs_f64() / insert.as_secs_f64()
        );
        let small = env("MERGE_SMALL_ROWS", 1000);
        run(
            &session,
            &format!(
                "CREATE VIEW small_src AS SELECT CASE WHEN value % 2 = 0 THEN ((value * 7919) % {target}) * 7 + 3 \
                 ELSE ({target} + value * 7919) * 7 + 6 END AS id, -value AS v, 'cdc' AS s FROM generate_series(1, {small})"
            ),
        )
        .await;
        let small_merge = "MERGE INTO merged t USING small_src s ON t.id = s.id \
                           WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *";
        let (mut on, mut off) = (Duration::MAX, Duration::MAX);
        for _ in 0..3 {
            for (enabled, best) in [(false, &mut off), (true, &mut on)] {
                run(
                    &session,
                    &format!("SET datafusion.optimizer.enable_join_dynamic_filter_pushdown = {enabled}"),
                )
                .await;
                *best = (*best).min(run(&session, small_merge).await);
            }
        }
        println!(
            "MERGE of {small} rows (half matched) into {target}: {on:?} with key pruning, {off:?} without; ratio {:.2}",
            on.as_secs_f64() / off.as_secs_f64()
        );
    });
}
