//! Compaction never changes what a table reads (semantics.md §4.5, §5): for every merge
//! engine, random sequences of INSERT / DELETE / UPDATE (and retract rows through
//! `rowkind.field`) read the same rows before and after `CALL sys.compact`, and again after
//! more writes on top of the compacted files.

use arrow::util::pretty::pretty_format_batches;
use datafusion_paimon::PaimonSession;

use crate::run_sql;

/// A small deterministic PRNG (splitmix64), so a failure reproduces from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Engine options, and whether the engine takes DELETE / retract rows.
const ENGINES: &[(&str, &str, bool)] = &[
    ("dedup", "", true),
    ("dedup_seq", ", 'sequence.field' = 'ts'", true),
    ("first_row", ", 'merge-engine' = 'first-row'", false),
    ("partial", ", 'merge-engine' = 'partial-update', 'partial-update.remove-record-on-delete' = 'true'", true),
    (
        "agg",
        ", 'merge-engine' = 'aggregation', 'fields.a.aggregate-function' = 'sum', 'fields.b.aggregate-function' = 'max', 'fields.b.ignore-retract' = 'true', 'fields.ts.aggregate-function' = 'max', 'fields.ts.ignore-retract' = 'true'",
        true,
    ),
];

async fn snapshot_of(session: &PaimonSession, table: &str) -> String {
    let batches = run_sql(session, &format!("SELECT * FROM {table} ORDER BY k"))
        .await
        .unwrap_or_else(|e| panic!("reading {table}: {e}"));
    pretty_format_batches(&batches).expect("format").to_string()
}

fn random_rows(rng: &mut Rng, retracts: bool) -> String {
    let n = 1 + rng.below(12);
    (0..n)
        .map(|_| {
            let k = rng.below(15);
            let a = if rng.below(5) == 0 {
                "NULL".to_string()
            } else {
                rng.below(100).to_string()
            };
            let b = if rng.below(5) == 0 {
                "NULL".to_string()
            } else {
                format!("'s{}'", rng.below(50))
            };
            let ts = rng.below(8);
            let op = if retracts && rng.below(6) == 0 { "-U" } else { "+I" };
            format!("({k}, {a}, {b}, {ts}, '{op}')")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_the_merged_view_for_every_engine() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("utf-8"))
        .await
        .expect("open");
    run_sql(&session, "CREATE DATABASE c").await.expect("create db");
    for seed in 0..6u64 {
        for (name, options, retracts) in ENGINES {
            let mut rng = Rng(seed * 31 + name.len() as u64);
            let table = format!("c.{name}_{seed}");
            run_sql(
                &session,
                &format!(
                    "CREATE TABLE {table} (k INT, a INT, b STRING, ts INT, op STRING, PRIMARY KEY (k) NOT ENFORCED) \
                     WITH ('bucket' = '2', 'rowkind.field' = 'op'{options})"
                ),
            )
            .await
            .expect("create table");
            for round in 0..2 {
                for _ in 0..(2 + rng.below(4)) {
                    let statement = match rng.below(6) {
                        0 if *retracts => format!("DELETE FROM {table} WHERE k % 4 = {}", rng.below(4)),
                        _ => format!("INSERT INTO {table} VALUES {}", random_rows(&mut rng, *retracts)),
                    };
                    run_sql(&session, &statement)
                        .await
                        .unwrap_or_else(|e| panic!("{statement}: {e}"));
                }
                let before = snapshot_of(&session, &table).await;
                run_sql(&session, &format!("CALL sys.compact('{table}')"))
                    .await
                    .expect("compact");
                let after = snapshot_of(&session, &table).await;
                assert_eq!(
                    before, after,
                    "{table} (seed {seed}, round {round}) changed by compaction"
                );
            }
        }
    }
}
