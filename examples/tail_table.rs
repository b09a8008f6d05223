//! Tailing a table from Rust: one task writes to a primary-key table while a stream follows it
//! and prints each change as it arrives, then stops after the expected number of changes.
//!
//! ```text
//! cargo run --example tail_table
//! ```
//!
//! The stream is `paimon_stream('db.t', ...)`, an unbounded `SendableRecordBatchStream`:
//! the table's rows at the start, then every later snapshot's exact changes (`+I`, `-U`/`+U`,
//! `-D`, normalized for a `changelog-producer = none` table), each with its `snapshot_id`.

use std::error::Error;
use std::time::Duration;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion_paimon::PaimonSession;
use futures::StreamExt;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

#[tokio::main]
async fn main() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let warehouse = dir.path().to_str().ok_or("non-UTF-8 temp dir")?.to_string();
    let session = PaimonSession::open(&warehouse).await?;
    session.sql("CREATE DATABASE shop").await?;
    session
        .sql("CREATE TABLE shop.stock (item STRING, qty INT, PRIMARY KEY (item) NOT ENFORCED)")
        .await?;
    session
        .sql("INSERT INTO shop.stock VALUES ('apple', 10), ('pear', 5)")
        .await?
        .collect()
        .await?;

    let mut changes = session
        .sql("SELECT * FROM paimon_stream('shop.stock', 'continuous.discovery-interval=50 ms')")
        .await?
        .execute_stream()
        .await?;

    // Another task keeps writing (its own session on the same warehouse).
    let writer = PaimonSession::open(&warehouse).await?;
    let writes = tokio::spawn(async move {
        for sql in [
            "INSERT INTO shop.stock VALUES ('apple', 7)",
            "INSERT INTO shop.stock VALUES ('plum', 3)",
            "DELETE FROM shop.stock WHERE item = 'pear'",
        ] {
            tokio::time::sleep(Duration::from_millis(100)).await;
            writer.sql(sql).await?.collect().await?;
        }
        Ok::<_, datafusion::error::DataFusionError>(())
    });

    // 2 rows at the start, then -U/+U for apple, +I for plum, -D for pear.
    let mut seen = 0;
    while seen < 6 {
        let batch = tokio::time::timeout(Duration::from_secs(30), changes.next())
            .await?
            .ok_or("the stream ended")??;
        seen += batch.num_rows();
        println!("{}", pretty_format_batches(&[batch])?);
    }
    writes.await??;
    println!("{seen} changes followed");
    Ok(())
}
