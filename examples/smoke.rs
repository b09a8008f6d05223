//! temp
use datafusion_paimon::PaimonSession;
#[tokio::main]
async fn main() -> datafusion::common::Result<()> {
    let s = PaimonSession::open("tests/fixtures/pypaimon-2.1.0/warehouse").await?;
    for q in std::env::args().skip(1) {
        match s.sql(&q).await { Ok(df) => { if let Err(e) = df.show().await { println!("ERR {e}") } }, Err(e) => println!("ERR {e}") }
    }
    Ok(())
}
