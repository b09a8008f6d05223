//! Joins that probe a primary-key table by its key read only the buckets and files the build
//! side's keys can be in (a hash join's dynamic filter, `scan::runtime_filter`), with the
//! same answer as a read of everything. The tables have overlapping runs, updates and deletes,
//! so a file left out wrongly would show as an old version or a deleted row coming back.

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use arrow::util::pretty::pretty_format_batches;
use datafusion_paimon::PaimonSession;

use crate::{run_sql, Rng};

const NO_DYNAMIC_FILTERS: &str = "SET datafusion.optimizer.enable_join_dynamic_filter_pushdown = false";
const DYNAMIC_FILTERS: &str = "SET datafusion.optimizer.enable_join_dynamic_filter_pushdown = true";

/// A table of 4 buckets written in commits of 200 consecutive keys each, some of them
/// updating or deleting keys of earlier commits.
async fn table(session: &PaimonSession, name: &str, options: &str, rng: &mut Rng) {
    run_sql(
        session,
        &format!(
            "CREATE TABLE {name} (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4', \
             'num-sorted-run.compaction-trigger' = '50'{options})"
        ),
    )
    .await
    .unwrap();
    for commit in 0..8 {
        let start = commit * 200;
        let mut values: Vec<String> = (start..start + 200).map(|k| format!("({k}, {commit})")).collect();
        for _ in 0..20 {
            let old = rng.below(1600) as i32;
            values.push(format!("({old}, {})", 100 + commit));
        }
        run_sql(
            session,
            &format!("INSERT INTO {name} VALUES {}", values.join(", ")),
        )
        .await
        .unwrap();
        if commit % 3 == 2 {
            let low = rng.below(1500);
            run_sql(
                session,
                &format!("DELETE FROM {name} WHERE k BETWEEN {low} AND {}", low + 30),
            )
            .await
            .unwrap();
        }
    }
}

async fn text(session: &PaimonSession, sql: &str) -> String {
    pretty_format_batches(&run_sql(session, sql).await.unwrap())
        .unwrap()
        .to_string()
}

/// `files_pruned_at_run_time` summed over the plan's scans.
async fn pruned_at_run_time(session: &PaimonSession, sql: &str) -> u64 {
    let plan = text(session, &format!("EXPLAIN ANALYZE {sql}")).await;
    plan.split("files_pruned_at_run_time=")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

#[tokio::test]
async fn joins_on_the_key_read_only_what_the_keys_need() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    let mut rng = Rng(45);
    table(&session, "t", "", &mut rng).await;
    table(
        &session,
        "t_dv",
        ", 'deletion-vectors.enabled' = 'true'",
        &mut rng,
    )
    .await;
    for round in 0..12 {
        // a few keys, some absent; narrow rounds keep them in one commit's range
        let spread = if round % 2 == 0 { 1700 } else { 150 };
        let base = rng.below(1600 - 150);
        let keys: Vec<String> = (0..1 + rng.below(6))
            .map(|_| {
                format!(
                    "({})",
                    if spread == 150 {
                        base + rng.below(150)
                    } else {
                        rng.below(1700)
                    }
                )
            })
            .collect();
        for name in ["t", "t_dv"] {
            let query = format!(
                "SELECT t.k, t.v FROM (VALUES {}) AS s(k) JOIN {name} t ON t.k = s.k ORDER BY t.k, t.v",
                keys.join(", ")
            );
            run_sql(&session, NO_DYNAMIC_FILTERS).await.unwrap();
            let everything = text(&session, &query).await;
            run_sql(&session, DYNAMIC_FILTERS).await.unwrap();
            let narrowed = text(&session, &query).await;
            assert_eq!(narrowed, everything, "{query}");
        }
    }
    // One key: three of the four buckets go, and of the last one the files of other key ranges.
    let one = "SELECT t.k, t.v FROM (VALUES (450)) AS s(k) JOIN t ON t.k = s.k";
    let files: i64 = run_sql(&session, "SELECT count(*) FROM t$files").await.unwrap()[0]
        .column(0)
        .as_primitive::<Int64Type>()
        .value(0);
    let pruned = pruned_at_run_time(&session, one).await;
    assert!(
        pruned as i64 >= files * 3 / 4,
        "{pruned} of {files} files left out"
    );
    run_sql(&session, NO_DYNAMIC_FILTERS).await.unwrap();
    assert_eq!(pruned_at_run_time(&session, one).await, 0);
}

#[tokio::test]
async fn merge_on_the_key_reads_only_the_matched_keys_files() {
    let dir = tempfile::tempdir().unwrap();
    let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    let mut rng = Rng(7);
    table(&session, "t", "", &mut rng).await;
    let merge = "MERGE INTO t USING (VALUES (10, -1), (15, -2), (5000, -3)) AS s(k, v) ON t.k = s.k \
                 WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *";
    let before = text(
        &session,
        "SELECT * FROM t WHERE k NOT IN (10, 15, 5000) ORDER BY k",
    )
    .await;
    assert!(pruned_at_run_time(&session, merge).await > 0);
    let after = text(
        &session,
        "SELECT * FROM t WHERE k NOT IN (10, 15, 5000) ORDER BY k",
    )
    .await;
    assert_eq!(before, after);
    let changed = text(&session, "SELECT * FROM t WHERE k IN (10, 15, 5000) ORDER BY k").await;
    assert_eq!(
        changed,
        text(
            &session,
            "SELECT * FROM (VALUES (10, -1), (15, -2), (5000, -3)) AS x(k, v) ORDER BY k"
        )
        .await
    );
}
