//! Random MERGE statements against a model of the table (issue 45): a map of key → value for a
//! primary-key table, a list of rows for an append table, each changed by the rule MERGE has
//! (the first WHEN clause whose condition holds takes a row), and compared with the table after
//! every statement. The primary-key table's `$changelog` (producer `none`, ChangelogNormalize)
//! must hold exactly the model's changes. Every few statements a source row is doubled: the
//! MERGE must fail and change nothing.

use std::collections::BTreeMap;

use arrow::array::AsArray;
use arrow::datatypes::Int32Type;
use datafusion_paimon::PaimonSession;

use crate::{run_sql, Rng};

/// One WHEN clause of the generated statements.
#[derive(Clone, Copy, Debug)]
enum Clause {
    /// `WHEN MATCHED AND s.op = 'd' THEN DELETE`
    DeleteMatched,
    /// `WHEN MATCHED THEN UPDATE SET v = s.v`
    UpdateMatched,
    /// `WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, s.v)`
    Insert,
    /// `WHEN NOT MATCHED BY SOURCE AND t.k % 5 = r THEN DELETE`
    DeleteBySource(i32),
    /// `WHEN NOT MATCHED BY SOURCE AND t.k % 3 = r THEN UPDATE SET v = t.v + 1`
    BumpBySource(i32),
}

impl Clause {
    fn sql(&self) -> String {
        match self {
            Clause::DeleteMatched => "WHEN MATCHED AND s.op = 'd' THEN DELETE".into(),
            Clause::UpdateMatched => "WHEN MATCHED THEN UPDATE SET v = s.v".into(),
            Clause::Insert => "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, s.v)".into(),
            Clause::DeleteBySource(r) => format!("WHEN NOT MATCHED BY SOURCE AND t.k % 5 = {r} THEN DELETE"),
            Clause::BumpBySource(r) => {
                format!("WHEN NOT MATCHED BY SOURCE AND t.k % 3 = {r} THEN UPDATE SET v = t.v + 1")
            }
        }
    }
}

/// What happens to one row of the model.
enum Outcome {
    Keep,
    Delete,
    Set(i32),
}

/// The first clause that takes a matched target row (`old`) with its source row.
fn matched(clauses: &[Clause], op: char, new: i32) -> Outcome {
    for c in clauses {
        match c {
            Clause::DeleteMatched if op == 'd' => return Outcome::Delete,
            Clause::UpdateMatched => return Outcome::Set(new),
            _ => {}
        }
    }
    Outcome::Keep
}

/// The first clause that takes a target row no source row matches.
fn by_source(clauses: &[Clause], k: i32, old: i32) -> Outcome {
    for c in clauses {
        match c {
            Clause::DeleteBySource(r) if k % 5 == *r => return Outcome::Delete,
            Clause::BumpBySource(r) if k % 3 == *r => return Outcome::Set(old + 1),
            _ => {}
        }
    }
    Outcome::Keep
}

/// `outcome` applied to the key `k` (stored value `old`) of the model, with its changes.
fn apply(
    model: &mut BTreeMap<i32, i32>,
    changes: &mut Vec<(String, i32, i32)>,
    k: i32,
    old: i32,
    outcome: Outcome,
) {
    match outcome {
        Outcome::Keep => {}
        Outcome::Delete => {
            model.remove(&k);
            changes.push(("-D".into(), k, old));
        }
        Outcome::Set(new) => {
            model.insert(k, new);
            changes.push(("-U".into(), k, old));
            changes.push(("+U".into(), k, new));
        }
    }
}

/// A random statement: its source rows (key, value, op) and clauses.
fn statement(rng: &mut Rng, n: i32) -> (Vec<(i32, i32, char)>, Vec<Clause>) {
    let mut keys: Vec<i32> = Vec::new();
    for _ in 0..1 + rng.below(6) {
        let k = rng.below(16) as i32;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // values unique to the statement, so an update always changes the row
    let source = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, n * 1000 + i as i32, if rng.chance(35) { 'd' } else { 'u' }))
        .collect();
    let mut clauses = Vec::new();
    if rng.chance(50) {
        clauses.push(Clause::DeleteMatched);
    }
    if rng.chance(70) {
        clauses.push(Clause::UpdateMatched);
    }
    if rng.chance(70) {
        clauses.push(Clause::Insert);
    }
    let mut by = Vec::new();
    if rng.chance(20) {
        by.push(Clause::DeleteBySource(rng.below(5) as i32));
    }
    if rng.chance(20) {
        by.push(Clause::BumpBySource(rng.below(3) as i32));
    }
    if rng.chance(50) {
        by.reverse();
    }
    clauses.extend(by);
    if clauses.is_empty() {
        clauses.push(Clause::Insert);
    }
    (source, clauses)
}

fn merge_sql(table: &str, source: &[(i32, i32, char)], clauses: &[Clause]) -> String {
    let rows: Vec<String> = source
        .iter()
        .map(|(k, v, op)| format!("({k}, {v}, '{op}')"))
        .collect();
    format!(
        "MERGE INTO {table} t USING (SELECT * FROM (VALUES {}) AS x(k, v, op)) s ON t.k = s.k {}",
        rows.join(", "),
        clauses.iter().map(Clause::sql).collect::<Vec<_>>().join(" ")
    )
}

async fn int_rows(session: &PaimonSession, sql: &str) -> Vec<(i32, i32)> {
    let batches = run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for b in &batches {
        let (k, v) = (
            b.column(0).as_primitive::<Int32Type>(),
            b.column(1).as_primitive::<Int32Type>(),
        );
        for i in 0..b.num_rows() {
            out.push((k.value(i), v.value(i)));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_merges_follow_the_model_of_a_primary_key_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8"))
        .await
        .expect("open");
    run_sql(
        &session,
        "CREATE TABLE t (k INT, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2')",
    )
    .await
    .expect("create");
    let mut rng = Rng(0x3e7_9e);
    let mut model: BTreeMap<i32, i32> = BTreeMap::new();
    let mut changes: Vec<(String, i32, i32)> = Vec::new();
    for n in 1..=30 {
        let (mut source, clauses) = statement(&mut rng, n);
        let has_matched = clauses
            .iter()
            .any(|c| matches!(c, Clause::DeleteMatched | Clause::UpdateMatched));
        // a doubled source row of a target key: the statement fails and changes nothing
        if n % 7 == 0 && has_matched {
            if let Some(&k) = model.keys().next() {
                source.retain(|(sk, _, _)| *sk != k);
                source.push((k, -1, 'u'));
                source.push((k, -2, 'u'));
                let err = run_sql(&session, &merge_sql("t", &source, &clauses))
                    .await
                    .unwrap_err();
                assert!(err.to_string().contains("matched by 2 source rows"), "{err}");
                let table: BTreeMap<i32, i32> = int_rows(&session, "SELECT k, v FROM t")
                    .await
                    .into_iter()
                    .collect();
                assert_eq!(table, model, "statement {n} failed but changed the table");
                continue;
            }
        }
        let sql = merge_sql("t", &source, &clauses);
        run_sql(&session, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let mut next = model.clone();
        for &(k, v, op) in &source {
            match model.get(&k) {
                Some(&old) => apply(&mut next, &mut changes, k, old, matched(&clauses, op, v)),
                None if clauses.iter().any(|c| matches!(c, Clause::Insert)) => {
                    next.insert(k, v);
                    changes.push(("+I".into(), k, v));
                }
                None => {}
            }
        }
        for (&k, &old) in &model {
            if source.iter().any(|(sk, _, _)| *sk == k) {
                continue;
            }
            apply(&mut next, &mut changes, k, old, by_source(&clauses, k, old));
        }
        model = next;
        let table: BTreeMap<i32, i32> = int_rows(&session, "SELECT k, v FROM t")
            .await
            .into_iter()
            .collect();
        assert_eq!(table, model, "after statement {n}: {sql}");
    }
    // the table's changelog (ChangelogNormalize over the statements' rows) is the model's
    let batches = run_sql(&session, "SELECT rowkind, k, v FROM \"t$changelog\"")
        .await
        .expect("changelog");
    let mut logged: Vec<(String, i32, i32)> = Vec::new();
    for b in &batches {
        let kinds = b.column(0).as_string::<i32>();
        let (k, v) = (
            b.column(1).as_primitive::<Int32Type>(),
            b.column(2).as_primitive::<Int32Type>(),
        );
        for i in 0..b.num_rows() {
            logged.push((kinds.value(i).to_string(), k.value(i), v.value(i)));
        }
    }
    logged.sort();
    changes.sort();
    assert_eq!(logged, changes);
    assert!(changes.len() > 30, "only {} changes", changes.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_merges_follow_the_model_of_an_append_table() {
    // copy-on-write (unbucketed and bucketed) and deletion vectors
    for options in [
        "",
        " WITH ('bucket' = '2', 'bucket-key' = 'k')",
        " WITH ('deletion-vectors.enabled' = 'true')",
    ] {
        append_table_follows_the_model(options).await;
    }
}

async fn append_table_follows_the_model(options: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("UTF-8"))
        .await
        .expect("open");
    run_sql(&session, &format!("CREATE TABLE a (k INT, v INT){options}"))
        .await
        .expect("create");
    run_sql(&session, "INSERT INTO a VALUES (1, 1), (2, 2), (3, 3)")
        .await
        .expect("insert");
    let mut rng = Rng(0xa99e_4d);
    let mut model: Vec<(i32, i32)> = vec![(1, 1), (2, 2), (3, 3)];
    for n in 1..=20 {
        let (source, clauses) = statement(&mut rng, n);
        let sql = merge_sql("a", &source, &clauses);
        run_sql(&session, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let mut next = Vec::new();
        for &(k, old) in &model {
            let outcome = match source.iter().find(|(sk, _, _)| *sk == k) {
                Some(&(_, v, op)) => matched(&clauses, op, v),
                None => by_source(&clauses, k, old),
            };
            match outcome {
                Outcome::Keep => next.push((k, old)),
                Outcome::Delete => {}
                Outcome::Set(new) => next.push((k, new)),
            }
        }
        if clauses.iter().any(|c| matches!(c, Clause::Insert)) {
            for &(k, v, _) in &source {
                if !model.iter().any(|(mk, _)| *mk == k) {
                    next.push((k, v));
                }
            }
        }
        model = next;
        model.sort();
        let table = int_rows(&session, "SELECT k, v FROM a ORDER BY k, v").await;
        assert_eq!(table, model, "table a{options}, after statement {n}: {sql}");
    }
}
