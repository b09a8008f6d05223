//! Embedding the Paimon catalog in a service that owns its own DataFusion `SessionContext`.
//!
//! The service builds a context with its own `SessionConfig`, registers a warehouse (the
//! pypaimon fixture tables in this repository) as catalog `paimon` next to whatever else the
//! context holds, then answers several "requests" concurrently and checks every answer against
//! the fixture's expected results.
//!
//! ```text
//! cargo run --example embed_service
//! ```
//!
//! Time travel (`SET paimon.scan.snapshot-id`) is a session setting shared by every query of
//! that session, so a request that reads an old snapshot uses its own `PaimonSession`.

use std::collections::BTreeMap;
use std::error::Error;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::{col, lit, SessionConfig, SessionContext};
use datafusion_paimon::PaimonSession;
use serde_json::Value;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pypaimon-2.1.0");

#[tokio::main]
async fn main() -> Result<()> {
    let warehouse = format!("{FIXTURE}/warehouse");
    let config = SessionConfig::new()
        .with_target_partitions(4)
        .with_batch_size(1024);
    let ctx = SessionContext::new_with_config(config.clone());
    // The context stays the service's own; the catalog is added as `paimon`.
    PaimonSession::register(ctx.clone(), &warehouse).await?;

    let (count, per_partition, row_3, at_snapshot_1) = tokio::try_join!(
        latest_row_count(&ctx),
        rows_per_partition(&ctx),
        lookup_by_key(&ctx, 3),
        row_count_at_snapshot(config, &warehouse, 1),
    )?;

    let latest = expected("pk.dedup_basic", "latest")?;
    assert_eq!(count, latest["row_count"].as_i64().ok_or("row_count")?);
    assert_eq!(
        at_snapshot_1,
        expected("pk.dedup_basic", "snapshot_1")?["row_count"]
            .as_i64()
            .ok_or("row_count")?
    );

    let mut want = BTreeMap::new();
    for row in rows_of(&expected("pk.partitioned_b4", "latest")?)? {
        *want
            .entry(row[0].as_str().ok_or("dt")?.to_string())
            .or_insert(0_i64) += 1;
    }
    assert_eq!(per_partition, want);

    let want_3 = rows_of(&latest)?
        .iter()
        .find(|r| r[0] == 3)
        .ok_or("id 3 in latest.json")?
        .clone();
    assert_eq!(
        row_3,
        vec![
            want_3[1].as_str().ok_or("name")?.to_string(),
            want_3[2].to_string()
        ]
    );

    println!("pk.dedup_basic: {count} rows now, {at_snapshot_1} at snapshot 1; id 3 = {row_3:?}");
    println!("pk.partitioned_b4 rows per dt: {per_partition:?}");
    println!("all answers match the fixture's expected results");
    Ok(())
}

/// Request: how many rows does the table hold now (SQL).
async fn latest_row_count(ctx: &SessionContext) -> Result<i64> {
    let batches = ctx
        .sql("SELECT count(*) FROM paimon.pk.dedup_basic")
        .await?
        .collect()
        .await?;
    Ok(strings(&batches)?[0][0].parse()?)
}

/// Request: rows per partition of a partitioned table (SQL aggregate).
async fn rows_per_partition(ctx: &SessionContext) -> Result<BTreeMap<String, i64>> {
    let sql = "SELECT dt, count(*) FROM paimon.pk.partitioned_b4 GROUP BY dt";
    let batches = ctx.sql(sql).await?.collect().await?;
    strings(&batches)?
        .into_iter()
        .map(|row| Ok((row[0].clone(), row[1].parse()?)))
        .collect()
}

/// Request: one row by primary key (DataFrame API; the key filter prunes files).
async fn lookup_by_key(ctx: &SessionContext, id: i32) -> Result<Vec<String>> {
    let df = ctx
        .table("paimon.pk.dedup_basic")
        .await?
        .filter(col("id").eq(lit(id)))?
        .select_columns(&["name", "score"])?;
    let mut rows = strings(&df.collect().await?)?;
    assert_eq!(rows.len(), 1, "a primary key selects at most one row");
    Ok(rows.remove(0))
}

/// Request: the row count at an old snapshot, in a session of its own so that the time-travel
/// setting cannot leak into concurrent requests.
async fn row_count_at_snapshot(config: SessionConfig, warehouse: &str, snapshot: i64) -> Result<i64> {
    let session = PaimonSession::with_config(config, warehouse).await?;
    session
        .sql(&format!("SET paimon.scan.snapshot-id = '{snapshot}'"))
        .await?;
    let batches = session
        .sql("SELECT count(*) FROM pk.dedup_basic")
        .await?
        .collect()
        .await?;
    Ok(strings(&batches)?[0][0].parse()?)
}

/// Every cell of `batches` as display text, row by row.
fn strings(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let cells = batch.columns().iter().map(|c| array_value_to_string(c, row));
            rows.push(cells.collect::<std::result::Result<Vec<_>, _>>()?);
        }
    }
    Ok(rows)
}

/// `expected/<table>/<name>.json` of the fixture.
fn expected(table: &str, name: &str) -> Result<Value> {
    let text = std::fs::read_to_string(format!("{FIXTURE}/expected/{table}/{name}.json"))?;
    Ok(serde_json::from_str(&text)?)
}

fn rows_of(expected: &Value) -> Result<&Vec<Value>> {
    Ok(expected["rows"].as_array().ok_or("rows")?)
}
