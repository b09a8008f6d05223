//! Lookup compaction over multi-page data files (semantics.md §6.3, §10): a level-0 commit
//! looks up the old value of every key in the levels above. A file too big for the lookup cache
//! (`lookup.cache-max-memory-size`) is searched by a sorted merge over the pages that may hold
//! the keys; one that fits is searched by sorted merge the first time (the DELETE's lookup) and
//! decoded whole into the cache the second time (the upsert's). Both must give the changelog
//! and the data the spec gives, with and without deletion vectors.
//!
//! The table: even keys 0..100,000 (50,000 rows, several pages per column), then a DELETE of
//! the keys ending in 04 (few for their pages: read key columns first), then an INSERT of every multiple of 11 below 100,000 with new values
//! (few enough that the upsert's compaction leaves the top-level file alone and looks it up again).
//! The INSERT's changelog, by the spec: `-U`/`+U` for a key that is still there, `+I` for a
//! key never written (odd) or deleted (a delete leaves no before-image).

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use datafusion_paimon::PaimonSession;

use crate::{latest_snapshot, run_sql};

const KEYS: i64 = 100_000;

async fn collect(session: &PaimonSession, sql: &str) -> Vec<(String, i64, i64)> {
    let batches = run_sql(session, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut out = Vec::new();
    for b in &batches {
        let kinds = b.column(0).as_string::<i32>();
        let k = b.column(1).as_primitive::<Int64Type>();
        let v = b.column(2).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            assert!(!v.is_null(i));
            out.push((kinds.value(i).to_string(), k.value(i), v.value(i)));
        }
    }
    out.sort();
    out
}

async fn lookup_gives_the_spec_changelog(options: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = PaimonSession::open(dir.path().to_str().expect("utf-8"))
        .await
        .expect("open");
    check_spec_changelog(&session, "default.t", options).await;
}

async fn check_spec_changelog(session: &PaimonSession, table: &str, options: &str) {
    let session = session.clone();
    let statements = [
        format!(
            "CREATE TABLE {table} (k BIGINT, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) \
             WITH ('bucket' = '1', 'changelog-producer' = 'lookup'{options})"
        ),
        format!(
            "INSERT INTO {table} SELECT value * 2 AS k, value * 2 AS v FROM generate_series(0, {}) AS s(value)",
            KEYS / 2 - 1
        ),
        format!("DELETE FROM {table} WHERE k % 100 = 4"),
    ];
    for sql in &statements {
        run_sql(&session, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    // The DELETE's changelog: -D with the old value of every key ending in 04 (found
    // by the lookup; few keys for the rows their pages hold).
    let deleted_at = latest_snapshot(&session, table).await;
    let deletes = collect(
        &session,
        &format!(
            "SELECT rowkind, k, v FROM paimon_incremental_query('{table}$audit_log', 1, {deleted_at}, 'changelog') \
             WHERE rowkind = '-D'"
        ),
    )
    .await;
    let expected_deletes: Vec<(String, i64, i64)> = (0..KEYS)
        .step_by(2)
        .filter(|k| k % 100 == 4)
        .map(|k| ("-D".to_string(), k, k))
        .collect();
    assert_eq!(
        deletes.len(),
        expected_deletes.len(),
        "{options}: -D rows of the DELETE"
    );
    assert!(
        deletes == expected_deletes,
        "{options}: the DELETE's -D rows differ from the spec"
    );
    let before = latest_snapshot(&session, table).await;
    let upsert = format!(
        "INSERT INTO {table} SELECT value * 11 AS k, value * 11 + 1000000 AS v FROM generate_series(0, {}) AS s(value)",
        (KEYS - 1) / 11
    );
    run_sql(&session, &upsert).await.expect("upsert");
    let after = latest_snapshot(&session, table).await;

    // The model, by the spec.
    let mut state: BTreeMap<i64, i64> = (0..KEYS)
        .step_by(2)
        .filter(|k| k % 100 != 4)
        .map(|k| (k, k))
        .collect();
    let mut expected: Vec<(String, i64, i64)> = Vec::new();
    for k in (0..KEYS).step_by(11) {
        let new = k + 1_000_000;
        match state.insert(k, new) {
            Some(old) => {
                expected.push(("-U".into(), k, old));
                expected.push(("+U".into(), k, new));
            }
            None => expected.push(("+I".into(), k, new)),
        }
    }
    expected.sort();

    let changes = collect(
        &session,
        &format!(
            "SELECT rowkind, k, v FROM paimon_incremental_query('{table}$audit_log', {before}, {after}, 'changelog')"
        ),
    )
    .await;
    assert_eq!(
        changes.len(),
        expected.len(),
        "{options}: number of changelog rows"
    );
    assert!(
        changes == expected,
        "{options}: changelog of the upsert differs from the spec"
    );

    let rows = collect(&session, &format!("SELECT '+I', k, v FROM {table}")).await;
    let model: Vec<(String, i64, i64)> = state.into_iter().map(|(k, v)| ("+I".into(), k, v)).collect();
    assert_eq!(rows.len(), model.len(), "{options}: number of rows");
    assert!(
        rows == model,
        "{options}: table differs from the spec after the upsert"
    );
}

/// A 1 KiB cache holds no file: every lookup is a sorted merge over pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sorted_merge_lookup_gives_the_spec_changelog() {
    lookup_gives_the_spec_changelog(", 'lookup.cache-max-memory-size' = '1 kb'").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_lookup_gives_the_spec_changelog() {
    lookup_gives_the_spec_changelog("").await;
}

/// Deletion vectors: replaced rows are masked by position, so the positions the sorted merge
/// reports must be the files' own; the DELETE masks rows the upsert's lookup must skip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sorted_merge_lookup_with_deletion_vectors_gives_the_spec_changelog() {
    lookup_gives_the_spec_changelog(
        ", 'lookup.cache-max-memory-size' = '1 kb', 'deletion-vectors.enabled' = 'true'",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_lookup_with_deletion_vectors_gives_the_spec_changelog() {
    lookup_gives_the_spec_changelog(", 'deletion-vectors.enabled' = 'true'").await;
}

/// A remote warehouse (`memory://`, as S3 would be): the DELETE's lookup reads the top-level
/// file from the store, the upsert's (its second search) from a local copy, within
/// `lookup.cache-max-disk-size`; a limit below the file's size keeps reading the store. The
/// results are the spec's either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_files_searched_again_are_read_from_a_local_copy() {
    use datafusion::execution::context::SessionContext;
    use datafusion::prelude::SessionConfig;
    use object_store::memory::InMemory;

    let config = SessionConfig::new()
        .with_default_catalog_and_schema("paimon", "default")
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(true);
    let ctx = SessionContext::new_with_config(config);
    ctx.register_object_store(
        &url::Url::parse("memory://").unwrap(),
        std::sync::Arc::new(InMemory::new()),
    );
    let session = PaimonSession::register(ctx, "memory:///lookup-copies")
        .await
        .expect("warehouse opens");
    let mine = |copies: Vec<String>, table: &str| {
        copies
            .into_iter()
            .filter(|c| c.starts_with(&format!("memory:///lookup-copies/default.db/{table}")))
            .count()
    };
    check_spec_changelog(
        &session,
        "default.copied",
        ", 'lookup.cache-max-memory-size' = '1 kb'",
    )
    .await;
    assert!(
        mine(datafusion_paimon::testing::lookup_disk_copies(), "copied") >= 1,
        "the top-level file searched twice has a local copy"
    );
    check_spec_changelog(
        &session,
        "default.uncopied",
        ", 'lookup.cache-max-memory-size' = '1 kb', 'lookup.cache-max-disk-size' = '1 kb'",
    )
    .await;
    assert_eq!(
        mine(datafusion_paimon::testing::lookup_disk_copies(), "uncopied"),
        0,
        "no copy beyond lookup.cache-max-disk-size"
    );
}
