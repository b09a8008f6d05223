//! Data files at external paths on another object store than the table's: a warehouse in one
//! store, `data-file.external-paths` in another (two in-memory stores registered in the
//! session, as S3 buckets would be). Writes put the files there, reads, compaction and
//! expiration follow the recorded URIs, and the URI's scheme and authority match in any case.

use std::sync::Arc;

use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::PaimonSession;
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::ObjectStore;

use crate::run_sql;

async fn files(store: &InMemory) -> Vec<String> {
    let mut out: Vec<String> = store
        .list(None)
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .expect("list");
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_paths_on_another_store() {
    let ctx = SessionContext::new_with_config(
        SessionConfig::new().with_default_catalog_and_schema("paimon", "default"),
    );
    let (table_store, data_store) = (Arc::new(InMemory::new()), Arc::new(InMemory::new()));
    ctx.register_object_store(
        &url::Url::parse("memory://warehouse").unwrap(),
        table_store.clone(),
    );
    ctx.register_object_store(&url::Url::parse("memory://data").unwrap(), data_store.clone());
    let session = PaimonSession::register(ctx, "memory://warehouse/wh")
        .await
        .expect("register");
    for sql in [
        "CREATE TABLE t (k INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1', \
         'data-file.external-paths' = 'MEMORY://Data/ext', 'data-file.external-paths.strategy' = 'round-robin', \
         'snapshot.num-retained.min' = '1', 'snapshot.num-retained.max' = '1')",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO t VALUES (2, 'B'), (3, 'c')",
    ] {
        run_sql(&session, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let render = |batches: Vec<arrow::array::RecordBatch>| {
        arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    };
    let expected = "+---+---+\n| k | v |\n+---+---+\n| 1 | a |\n| 2 | B |\n| 3 | c |\n+---+---+";
    let rows = run_sql(&session, "SELECT * FROM t ORDER BY k")
        .await
        .expect("read");
    assert_eq!(render(rows), expected);
    // every data file is in the other store; the table's holds none
    assert!(files(&table_store).await.iter().all(|f| !f.ends_with(".parquet")));
    let external = files(&data_store).await;
    assert_eq!(external.len(), 2, "{external:?}");
    assert!(
        external.iter().all(|f| f.starts_with("ext/bucket-0/data-")),
        "{external:?}"
    );

    // compaction reads them there and writes its output there; expiration after the next
    // commit (one snapshot kept) deletes the compacted inputs there
    run_sql(&session, "CALL sys.compact('default.t')")
        .await
        .expect("compact");
    let rows = run_sql(&session, "SELECT * FROM t ORDER BY k")
        .await
        .expect("read");
    assert_eq!(render(rows), expected);
    run_sql(&session, "INSERT INTO t VALUES (4, 'd')")
        .await
        .expect("insert");
    let rows = run_sql(&session, "SELECT count(*) AS n FROM t")
        .await
        .expect("read");
    assert!(render(rows).contains("| 4 |"));
    let external = files(&data_store).await;
    assert_eq!(
        external.len(),
        2,
        "the compacted file and the new one: {external:?}"
    );
    let paths = run_sql(&session, "SELECT file_path FROM \"t$files\"")
        .await
        .expect("files");
    assert!(render(paths).contains("MEMORY://Data/ext/bucket-0/data-"));
}
