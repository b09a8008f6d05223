//! The changelog of a lookup-producer table is complete (semantics.md §6.3): for random
//! INSERT / DELETE / UPDATE sequences, applying the changelog rows of snapshots S+1..E to the
//! table's state at S gives exactly its state at E. Also checked for full-compaction, whose
//! changelog is complete at every full compaction.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int32Type;
use datafusion_paimon::PaimonSession;

use crate::{latest_snapshot, run_sql, Rng};

type State = BTreeMap<i32, Option<i32>>;

async fn rows(session: &PaimonSession, sql: &str) -> Vec<(String, i32, Option<i32>)> {
    let batches = run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for b in &batches {
        let kinds = b.column(0).as_string::<i32>();
        let k = b.column(1).as_primitive::<Int32Type>();
        let v = b.column(2).as_primitive::<Int32Type>();
        for i in 0..b.num_rows() {
            out.push((
                kinds.value(i).to_string(),
                k.value(i),
                (!v.is_null(i)).then(|| v.value(i)),
            ));
        }
    }
    out
}

async fn state(session: &PaimonSession, table: &str) -> State {
    rows(session, &format!("SELECT '+I', k, v FROM {table}"))
        .await
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .collect()
}

/// Applying the changes of every snapshot in (S, E] (`changes(snapshot)` is their query) to the
/// state at S gives the state at E, for every pair of recorded states.
async fn assert_replays(
    session: &PaimonSession,
    table: &str,
    history: &[(i64, State)],
    changes: impl Fn(i64) -> String,
) {
    for start in 0..history.len() {
        for end in start + 1..history.len() {
            let (s, from) = &history[start];
            let (e, to) = &history[end];
            let mut replayed = from.clone();
            for snapshot in s + 1..=*e {
                let changes = rows(session, &changes(snapshot)).await;
                // one snapshot holds at most -U/+U, -D or +I per key: removals first
                for (kind, k, v) in &changes {
                    if kind == "-U" || kind == "-D" {
                        assert_eq!(
                            replayed.remove(k),
                            Some(*v),
                            "{table}: {kind} {k} of snapshot {snapshot} retracts a row that is not there"
                        );
                    }
                }
                for (kind, k, v) in &changes {
                    if kind == "+I" || kind == "+U" {
                        assert!(
                            replayed.insert(*k, *v).is_none(),
                            "{table}: {kind} {k} of snapshot {snapshot} adds a row that is already there"
                        );
                    }
                }
            }
            assert_eq!(
                &replayed, to,
                "{table}: changes of snapshots ({s}, {e}] do not lead from one state to the other"
            );
        }
    }
}

async fn replay_property(producer: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("utf-8"))
        .await
        .expect("open");
    run_sql(&session, "CREATE DATABASE r").await.expect("db");
    for seed in 0..4u64 {
        let table = format!("r.t_{}_{seed}", producer.replace('-', "_"));
        run_sql(
            &session,
            &format!(
                "CREATE TABLE {table} (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) \
                 WITH ('bucket' = '2', 'changelog-producer' = '{producer}')"
            ),
        )
        .await
        .expect("create");
        let mut rng = Rng(seed + 100);
        // (snapshot id, state) after each statement
        let mut history: Vec<(i64, State)> = vec![(0, State::new())];
        for _ in 0..8 {
            let sql = match rng.below(5) {
                0 => format!("DELETE FROM {table} WHERE k % 5 = {}", rng.below(5)),
                1 => format!("UPDATE {table} SET v = v + 1 WHERE k % 3 = {}", rng.below(3)),
                _ => {
                    let values: Vec<String> = (0..1 + rng.below(8))
                        .map(|_| format!("({}, {})", rng.below(20), rng.below(100)))
                        .collect();
                    format!("INSERT INTO {table} VALUES {}", values.join(", "))
                }
            };
            run_sql(&session, &sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            let id = latest_snapshot(&session, &table).await;
            if history.last().is_some_and(|(last, _)| *last == id) {
                continue; // nothing committed
            }
            history.push((id, state(&session, &table).await));
        }
        let changes = |snapshot: i64| {
            format!(
                "SELECT rowkind, k, v FROM paimon_incremental_query('{table}$audit_log', {}, {snapshot}, 'changelog')",
                snapshot - 1
            )
        };
        assert_replays(&session, &table, &history, changes).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_changelog_replays_to_every_later_state() {
    replay_property("lookup").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_compaction_changelog_replays_to_every_later_state() {
    replay_property("full-compaction").await;
}

/// `t$changelog` of a producer-none table (ChangelogNormalize) for random statements, several
/// rows per commit: replaying the changes of (S, E] on the state at S gives the state at E, and
/// the changes equal, as multisets per statement, those of a lookup table with
/// `changelog-producer.row-deduplicate` that received the same statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalized_changelog_replays_and_equals_lookup() {
    normalize_equals_lookup("", 500).await;
}

/// As above for partial-update: each delta row is merged into the key's row, NULLs keep the
/// old value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalized_partial_update_changelog_equals_lookup() {
    normalize_equals_lookup(
        ", 'merge-engine' = 'partial-update', 'partial-update.remove-record-on-delete' = 'true'",
        600,
    )
    .await;
}

/// As above for aggregation (`sum`; DELETE removes the row, UPDATE is not allowed by the
/// engine and is replaced by INSERTs, which add to the sum).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalized_aggregation_changelog_equals_lookup() {
    normalize_equals_lookup(
        ", 'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'sum', 'aggregation.remove-record-on-delete' = 'true'",
        700,
    )
    .await;
}

/// Runs the same random statements on a producer-none table and a lookup table with
/// `engine_options`, and compares their `$changelog`s statement by statement.
async fn normalize_equals_lookup(engine_options: &str, seed_base: u64) {
    let merges_values = !engine_options.is_empty();
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("utf-8"))
        .await
        .expect("open");
    run_sql(&session, "CREATE DATABASE r").await.expect("db");
    for seed in 0..4u64 {
        let none = format!("r.none_{seed}");
        let lookup = format!("r.lookup_{seed}");
        for (table, producer) in [(&none, "none"), (&lookup, "lookup")] {
            run_sql(
                &session,
                &format!(
                    "CREATE TABLE {table} (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) \
                     WITH ('bucket' = '2', 'changelog-producer' = '{producer}', 'changelog-producer.row-deduplicate' = 'true'{engine_options})"
                ),
            )
            .await
            .expect("create");
        }
        let mut rng = Rng(seed + seed_base);
        // Keys deleted from a value-merging table are never written again: a removing -D
        // stays in the merge until a compaction to the top level drops it, and an add merged
        // on top of it starts from the -D's values, so the table's state depends on compaction
        // timing (semantics.md §2.3.1); the changelog treats the key as gone.
        let mut removed: std::collections::BTreeSet<u64> = Default::default();
        let mut history: Vec<(i64, State)> = vec![(0, State::new())];
        // Per statement: the none table's snapshot range and the lookup table's.
        let mut statements: Vec<((i64, i64), (i64, i64))> = Vec::new();
        for _ in 0..10 {
            let pick = match rng.below(5) {
                1 if engine_options.contains("aggregation") => 2,
                pick => pick,
            };
            let (a, b) = (rng.below(5), rng.below(3));
            let values: Vec<String> = (0..1 + rng.below(8))
                .map(|_| (rng.below(20), rng.below(5)))
                .filter(|(k, _)| !removed.contains(k))
                .map(|(k, v)| match v {
                    4 => format!("({k}, NULL)"),
                    v => format!("({k}, {v})"),
                })
                .collect();
            if pick == 0 && merges_values {
                removed.extend((0..20).filter(|k| k % 5 == a));
            }
            if pick >= 2 && values.is_empty() {
                continue;
            }
            let before = (
                latest_snapshot(&session, &none).await,
                latest_snapshot(&session, &lookup).await,
            );
            for table in [&none, &lookup] {
                let sql = match pick {
                    0 => format!("DELETE FROM {table} WHERE k % 5 = {a}"),
                    1 => format!("UPDATE {table} SET v = v + 1 WHERE k % 3 = {b}"),
                    _ => format!("INSERT INTO {table} VALUES {}", values.join(", ")),
                };
                run_sql(&session, &sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            let after = (
                latest_snapshot(&session, &none).await,
                latest_snapshot(&session, &lookup).await,
            );
            if after.0 != before.0 {
                history.push((after.0, state(&session, &none).await));
            }
            statements.push(((before.0, after.0), (before.1, after.1)));
        }
        let changes = |table: &str, s: i64, e: i64| {
            format!("SELECT rowkind, k, v FROM paimon_incremental_query('{table}$changelog', {s}, {e})")
        };
        for ((ns, ne), (ls, le)) in &statements {
            let mut ours = if ns < ne {
                rows(&session, &changes(&none, *ns, *ne)).await
            } else {
                vec![]
            };
            let mut theirs = if ls < le {
                rows(&session, &changes(&lookup, *ls, *le)).await
            } else {
                vec![]
            };
            ours.sort();
            theirs.sort();
            assert_eq!(ours, theirs, "{none} ({ns}, {ne}] vs {lookup} ({ls}, {le}]");
        }
        let changes_of = |snapshot: i64| changes(&none, snapshot - 1, snapshot);
        assert_replays(&session, &none, &history, changes_of).await;
    }
}

/// The normalize state is accounted to the memory pool: when the pool is too small for it, it
/// spills to the disk manager and the result is the same; without a disk the query fails with
/// an error that says so, instead of growing without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalize_state_is_bounded_by_the_memory_pool() {
    use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::prelude::{SessionConfig, SessionContext};
    let dir = tempfile::tempdir().expect("temp dir");
    let location = dir.path().to_str().expect("utf-8");
    let writer = PaimonSession::open(location).await.expect("open");
    run_sql(&writer, "CREATE DATABASE m").await.expect("db");
    run_sql(
        &writer,
        "CREATE TABLE m.t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')",
    )
    .await
    .expect("create");
    run_sql(
        &writer,
        "INSERT INTO m.t SELECT value AS k, repeat('x', 40) AS v FROM generate_series(1, 20000)",
    )
    .await
    .expect("insert");
    run_sql(&writer, "INSERT INTO m.t VALUES (1, 'y')")
        .await
        .expect("update");

    let session_with = |disk: DiskManagerMode| {
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_limit(256 * 1024, 1.0)
            .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(disk))
            .build_arc()
            .expect("runtime");
        let config = SessionConfig::new()
            .with_default_catalog_and_schema("paimon", "default")
            .with_create_default_catalog_and_schema(false);
        PaimonSession::register(SessionContext::new_with_config_rt(config, runtime), location)
    };
    // No ORDER BY: a sort wants more than this pool; the normalize's output order is its input's.
    let query = "SELECT rowkind, k, v FROM paimon_incremental_query('m.t$changelog', 1, 2)";
    // -U/+U of key 1, whatever the pool
    let expected = run_sql(&writer, query).await.expect("query");
    let spilling = session_with(DiskManagerMode::OsTmpDirectory)
        .await
        .expect("register");
    let spilled = run_sql(&spilling, query).await.expect("the state spills to disk");
    let total = |batches: &[arrow::array::RecordBatch]| batches.iter().map(|b| b.num_rows()).sum::<usize>();
    assert_eq!(total(&expected), 2);
    assert_eq!(
        arrow::util::pretty::pretty_format_batches(&spilled)
            .expect("format")
            .to_string(),
        arrow::util::pretty::pretty_format_batches(&expected)
            .expect("format")
            .to_string()
    );

    let no_disk = session_with(DiskManagerMode::Disabled).await.expect("register");
    let err = run_sql(&no_disk, query)
        .await
        .expect_err("the state of 20k keys does not fit 256 KiB and cannot spill");
    assert!(
        err.to_string()
            .contains("ChangelogNormalize of table m.t$changelog needs more memory"),
        "{err}"
    );
}
