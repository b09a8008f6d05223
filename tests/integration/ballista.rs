//! Merge-on-read on Apache Ballista's standalone cluster (scheduler and executor in process),
//! through the `distributed` codecs: every query must return exactly what a local session
//! returns on the same warehouse. `cargo test --features ballista ballista`.
//!
//! The tables: a 4-bucket deduplicate table with three overlapping runs (an upsert and a
//! delete on top of the first insert, `write-only` so nothing is compacted), and an append
//! table to join with.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::distributed::{static_planning, with_cluster_planning, with_paimon_codecs};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;

use crate::run_sql;

/// The rows of `batches` as sorted lines (the row order of a distributed plan is not fixed).
fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let text = pretty_format_batches(batches).expect("printable").to_string();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1) // the header
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

async fn ballista_session(warehouse: &str) -> PaimonSession {
    let config = static_planning(with_paimon_codecs(SessionConfig::new_with_ballista()))
        .with_target_partitions(4)
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(true);
    // the scheduler plans with this state: writes as parallel writers and one committer
    let state = with_cluster_planning(
        SessionStateBuilder::new()
            .with_default_features()
            .with_config(config),
    )
    .build();
    let ctx = SessionContext::standalone_with_state(state)
        .await
        .expect("a standalone Ballista cluster starts");
    PaimonSession::register(ctx, warehouse)
        .await
        .expect("the warehouse opens on Ballista")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ballista_runs_merge_on_read_queries_like_a_local_session() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap().to_string();
    let local = PaimonSession::open(&warehouse).await.unwrap();
    for sql in [
        "CREATE TABLE pk (k BIGINT, g INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) \
         WITH ('bucket' = '4', 'write-only' = 'true')",
        "INSERT INTO pk SELECT value, CAST(value % 7 AS INT), 'a' FROM generate_series(1, 5000)",
        "INSERT INTO pk SELECT value, CAST(value % 5 AS INT), 'b' FROM generate_series(1, 5000, 3)",
        "DELETE FROM pk WHERE k % 10 = 0",
        "CREATE TABLE names (g INT, name STRING)",
        "INSERT INTO names SELECT CAST(value AS INT), concat('group-', value) FROM generate_series(0, 6)",
    ] {
        run_sql(&local, sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let cluster = ballista_session(&warehouse).await;

    let queries = [
        // Aggregates over the merged 4-bucket table.
        "SELECT count(*), sum(k), count(DISTINCT g), min(v), max(v) FROM pk",
        "SELECT g, v, count(*) AS n, sum(k) AS s FROM pk GROUP BY g, v",
        // A join of the primary-key table with the append table.
        "SELECT n.name, count(*) AS c FROM pk JOIN names n ON pk.g = n.g WHERE pk.v = 'b' GROUP BY n.name",
        // Filters pushed into the scan (bucket and key pruning) and the change views.
        "SELECT k, g, v FROM pk WHERE k IN (3, 4, 10, 4999)",
        "SELECT rowkind, count(*) FROM \"pk$audit_log\" GROUP BY rowkind",
        // An incremental read: the changes of snapshots 2 and 3.
        "SELECT rowkind, count(*), sum(k) FROM paimon_incremental_query('default.pk$audit_log', 1, 3) GROUP BY rowkind",
        "SELECT count(*), sum(k) FROM paimon_incremental_query('default.pk', 1, 3, 'diff')",
        // Exact changes of a `none` table: the normalize over the start state and the deltas.
        "SELECT rowkind, count(*), sum(k) FROM paimon_incremental_query('default.pk$changelog', 1, 3) GROUP BY rowkind",
    ];
    for sql in queries {
        let expected = sorted_rows(
            &run_sql(&local, sql)
                .await
                .unwrap_or_else(|e| panic!("local {sql}: {e}")),
        );
        assert!(!expected.is_empty(), "{sql} returns rows");
        let actual = sorted_rows(
            &run_sql(&cluster, sql)
                .await
                .unwrap_or_else(|e| panic!("ballista {sql}: {e}")),
        );
        assert_eq!(actual, expected, "{sql}");
    }
    // The queries ran on the cluster: the client's plan is Ballista's distributed query.
    let frame = cluster.sql("SELECT count(*) FROM pk").await.unwrap();
    let plan = frame.create_physical_plan().await.unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    eprintln!("{shown}");
    assert!(shown.contains("DistributedQueryExec"), "{shown}");
    // The counts themselves, from the statements: 5000 keys, 500 deleted.
    let rows = sorted_rows(&run_sql(&cluster, "SELECT count(*) FROM pk").await.unwrap());
    assert_eq!(rows, vec!["| 4500     |".to_string()]);
}

/// The codecs on their own: a plan's Paimon tables survive a logical round trip, its scans a
/// physical round trip (planned again from the recipe, same rows), and a scan planned with
/// other partitions than the recipe's is refused rather than read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_codecs_round_trip_tables_and_scans() {
    use datafusion::physical_plan::collect;
    use datafusion_paimon::distributed::{PaimonLogicalCodec, PaimonPhysicalCodec};
    use datafusion_proto::bytes::{
        logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };
    use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;

    let dir = tempfile::tempdir().unwrap();
    let local = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    for sql in [
        "CREATE TABLE t (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'write-only' = 'true')",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "INSERT INTO t VALUES (2, 'B'), (4, 'D')",
    ] {
        run_sql(&local, sql).await.unwrap();
    }
    let logical_codec = PaimonLogicalCodec::new(Arc::new(DefaultLogicalExtensionCodec {}));
    let ctx = local.context();
    let task = ctx.task_ctx();
    for sql in [
        "SELECT k, v FROM t WHERE k > 1",
        "SELECT rowkind, k, v FROM \"t$audit_log\"",
        "SELECT * FROM paimon_incremental_query('default.t', 1, 2)",
        "SELECT * FROM paimon_incremental_query('default.t$changelog', 1, 2)",
    ] {
        let expected = sorted_rows(&run_sql(&local, sql).await.unwrap());
        let plan = local.sql(sql).await.unwrap().into_optimized_plan().unwrap();
        let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &logical_codec).unwrap();
        let decoded = logical_plan_from_bytes_with_extension_codec(&bytes, &task, &logical_codec).unwrap();
        // Tables rebuilt by the codec plan their scans as a Ballista scheduler does: batch and
        // incremental scans of several partitions as split groups (one per partition) Ballista
        // narrows per task (the incremental reads here touch one bucket: one partition).
        let physical = ctx.state().create_physical_plan(&decoded).await.unwrap();
        if !sql.contains("paimon_incremental_query") {
            let shown = datafusion::physical_plan::displayable(physical.as_ref())
                .indent(true)
                .to_string();
            assert!(shown.contains("file_type=paimon"), "{sql}: {shown}");
        }
        let shipped =
            physical_plan_to_bytes_with_extension_codec(Arc::clone(&physical), &PaimonPhysicalCodec).unwrap();
        let rebuilt =
            physical_plan_from_bytes_with_extension_codec(&shipped, &task, &PaimonPhysicalCodec).unwrap();
        let show = |p: &Arc<dyn datafusion::physical_plan::ExecutionPlan>| {
            datafusion::physical_plan::displayable(p.as_ref())
                .indent(true)
                .to_string()
        };
        assert_eq!(show(&rebuilt), show(&physical), "{sql}");
        let rows = sorted_rows(&collect(rebuilt, Arc::clone(&task)).await.unwrap());
        assert_eq!(rows, expected, "{sql}");
    }

    // Ballista narrows a stage's split groups to each task's: a task's plan, shipped, reads
    // exactly the partitions of the scan it kept, and together the tasks read every row once.
    let plan = local
        .sql("SELECT k, v FROM t")
        .await
        .unwrap()
        .into_optimized_plan()
        .unwrap();
    let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &logical_codec).unwrap();
    let decoded = logical_plan_from_bytes_with_extension_codec(&bytes, &task, &logical_codec).unwrap();
    let scheduler_plan = ctx.state().create_physical_plan(&decoded).await.unwrap();
    let groups = find_split_groups(&scheduler_plan).expect("a scan as split groups");
    let partitions = groups.properties().partitioning.partition_count();
    assert_eq!(partitions, 2, "one group per bucket");
    let mut rows = Vec::new();
    for partition in 0..partitions {
        let task_plan = narrow_to(&groups, partition);
        let shipped = physical_plan_to_bytes_with_extension_codec(task_plan, &PaimonPhysicalCodec).unwrap();
        let rebuilt =
            physical_plan_from_bytes_with_extension_codec(&shipped, &task, &PaimonPhysicalCodec).unwrap();
        assert_eq!(rebuilt.properties().partitioning.partition_count(), 1);
        let own = sorted_rows(&collect(rebuilt, Arc::clone(&task)).await.unwrap());
        assert!(!own.is_empty(), "partition {partition} reads its bucket");
        rows.extend(own);
    }
    rows.sort();
    assert_eq!(
        rows,
        sorted_rows(&run_sql(&local, "SELECT k, v FROM t").await.unwrap())
    );

    // An executor that plans the scan differently (here: other target partitions) refuses to
    // read rather than read other rows than the scheduler planned.
    let shipped =
        physical_plan_to_bytes_with_extension_codec(narrow_to(&groups, 1), &PaimonPhysicalCodec).unwrap();
    let other = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1)).task_ctx();
    let error = physical_plan_from_bytes_with_extension_codec(&shipped, &other, &PaimonPhysicalCodec)
        .expect_err("a scan that plans differently is refused")
        .to_string();
    assert!(error.contains("planned differently"), "{error}");

    // Metadata tables travel as the rows the client read when it planned.
    let query = "SELECT snapshot_id, commit_kind FROM \"t$snapshots\"";
    let plan = local.sql(query).await.unwrap().into_optimized_plan().unwrap();
    let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &logical_codec).unwrap();
    let decoded = datafusion_proto::bytes::logical_plan_from_bytes_with_extension_codec(
        &bytes,
        &local.context().task_ctx(),
        &logical_codec,
    )
    .unwrap();
    let rows = local
        .context()
        .execute_logical_plan(decoded)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        sorted_rows(&rows),
        sorted_rows(&run_sql(&local, query).await.unwrap())
    );
}

/// Writes through the cluster: INSERTs, a dynamic-partition INSERT OVERWRITE (sinks on
/// executors), then `CALL sys.compact` and a static-partition INSERT OVERWRITE (run by our
/// SQL layer on the client, results returned through the cluster); a local session reads what
/// they committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ballista_writes_commit_like_a_local_session() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().to_str().unwrap().to_string();
    let local = PaimonSession::open(&warehouse).await.unwrap();
    run_sql(
        &local,
        "CREATE TABLE w (k BIGINT, p STRING, v STRING, PRIMARY KEY (k, p) NOT ENFORCED) \
         PARTITIONED BY (p) WITH ('bucket' = '2')",
    )
    .await
    .unwrap();
    let cluster = ballista_session(&warehouse).await;
    // (generate_series cannot be sent to Ballista: VALUES lists instead)
    let values = |keys: Vec<i64>, row: &dyn Fn(i64) -> String| {
        keys.into_iter().map(row).collect::<Vec<_>>().join(", ")
    };
    let parity = |k: i64| if k % 2 == 0 { "even" } else { "odd" };
    for sql in [
        format!(
            "INSERT INTO w VALUES {}",
            values((1..=100).collect(), &|k| format!("({k}, '{}', 'a')", parity(k)))
        ),
        "INSERT INTO w VALUES (1, 'odd', 'b'), (2, 'even', 'b')".to_string(),
        // dynamic partition overwrite: only the partitions of the input ('odd') are replaced
        format!(
            "INSERT OVERWRITE w VALUES {}",
            values((1..=9).step_by(2).collect(), &|k| format!("({k}, 'odd', 'c')"))
        ),
        // statements our SQL layer runs itself: their results come back as VALUES
        "CALL sys.compact('default.w')".to_string(),
        format!(
            "INSERT OVERWRITE w PARTITION (p = 'odd') VALUES {}",
            values((1..=9).step_by(2).collect(), &|k| format!("({k}, 'c')"))
        ),
    ] {
        let sql = sql.as_str();
        run_sql(&cluster, sql)
            .await
            .unwrap_or_else(|e| panic!("ballista {sql}: {e}"));
    }
    // CALL sys.compact ran on the cluster as parallel compaction tasks and one COMPACT commit
    let compacts = sorted_rows(
        &run_sql(
            &local,
            "SELECT count(*) FROM w$snapshots WHERE commit_kind = 'COMPACT'",
        )
        .await
        .unwrap(),
    );
    assert_eq!(compacts, vec!["| 1        |".to_string()]);
    let plan = cluster
        .sql("CALL sys.compact('default.w')")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    assert!(shown.contains("DistributedQueryExec"), "{shown}");
    let rows = sorted_rows(
        &run_sql(&local, "SELECT p, v, count(*), sum(k) FROM w GROUP BY p, v")
            .await
            .unwrap(),
    );
    // even: 50 keys, key 2 updated to 'b'; odd: replaced by 1, 3, 5, 7, 9 with 'c'
    assert_eq!(
        rows,
        vec![
            "| even | a | 49       | 2548     |".to_string(),
            "| even | b | 1        | 2        |".to_string(),
            "| odd  | c | 5        | 25       |".to_string(),
        ]
    );
}

/// The write sink survives a physical round trip: the decoded plan inserts the rows and the
/// partition of an INSERT OVERWRITE keeps its value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_codecs_round_trip_write_sinks() {
    use datafusion::physical_plan::collect;
    use datafusion_paimon::distributed::PaimonPhysicalCodec;
    use datafusion_proto::bytes::{
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };

    let dir = tempfile::tempdir().unwrap();
    let local = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
    run_sql(
        &local,
        "CREATE TABLE s (k INT, d DATE, v STRING, PRIMARY KEY (k, d) NOT ENFORCED) PARTITIONED BY (d) \
         WITH ('bucket' = '1')",
    )
    .await
    .unwrap();
    run_sql(
        &local,
        "INSERT INTO s VALUES (1, DATE '2024-01-01', 'a'), (2, DATE '2024-01-02', 'a')",
    )
    .await
    .unwrap();
    let task = local.context().task_ctx();
    for sql in [
        "INSERT INTO s VALUES (3, DATE '2024-01-01', 'b')",
        "INSERT OVERWRITE s PARTITION (d = DATE '2024-01-02') SELECT 9, 'z'",
    ] {
        let plan = local
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let shipped = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &PaimonPhysicalCodec)
            .unwrap_or_else(|e| panic!("encode {sql}: {e}"));
        let rebuilt = physical_plan_from_bytes_with_extension_codec(&shipped, &task, &PaimonPhysicalCodec)
            .unwrap_or_else(|e| panic!("decode {sql}: {e}"));
        let show = |p: &Arc<dyn datafusion::physical_plan::ExecutionPlan>| {
            datafusion::physical_plan::displayable(p.as_ref())
                .indent(true)
                .to_string()
        };
        assert_eq!(show(&rebuilt), show(&plan), "{sql}");
        collect(rebuilt, Arc::clone(&task))
            .await
            .unwrap_or_else(|e| panic!("run the decoded {sql}: {e}"));
    }
    let rows = sorted_rows(
        &run_sql(&local, "SELECT k, CAST(d AS STRING), v FROM s")
            .await
            .unwrap(),
    );
    assert_eq!(
        rows,
        vec![
            "| 1 | 2024-01-01 | a |".to_string(),
            "| 3 | 2024-01-01 | b |".to_string(),
            "| 9 | 2024-01-02 | z |".to_string(),
        ]
    );
}

/// The first scan planned as split groups (a `DataSourceExec` of `file_type=paimon`).
fn find_split_groups(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Option<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
    use datafusion::datasource::physical_plan::FileScanConfig;
    use datafusion::datasource::source::DataSourceExec;
    let is_groups = plan
        .downcast_ref::<DataSourceExec>()
        .and_then(|exec| exec.data_source().downcast_ref::<FileScanConfig>())
        .is_some_and(|config| config.file_source().file_type() == "paimon");
    if is_groups {
        return Some(Arc::clone(plan));
    }
    plan.children().into_iter().find_map(find_split_groups)
}

/// What Ballista's scheduler makes of a split-group scan for the task of `partition`: the same
/// source with only that file group.
fn narrow_to(
    groups: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    partition: usize,
) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
    use datafusion::datasource::source::DataSourceExec;
    let config = groups
        .downcast_ref::<DataSourceExec>()
        .and_then(|exec| exec.data_source().downcast_ref::<FileScanConfig>())
        .expect("split groups");
    let kept = vec![config.file_groups[partition].clone()];
    DataSourceExec::from_data_source(
        FileScanConfigBuilder::from(config.clone())
            .with_file_groups(kept)
            .build(),
    )
}
