//! Support for measuring object-store requests (the `requests` tests and the `object_store`
//! bench): a table's live files and metadata as the floor of a read counts them, and
//! DataFusion's `ListingTable` over the same files as the baseline.

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use datafusion::common::{Result, ScalarValue};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::prelude::SessionContext;

use crate::spec::BinaryRow;
use crate::PaimonSession;

/// Prints every object-store request of a counting store to stderr when the environment
/// variable `PAIMON_TRACE_REQUESTS` is set (the store logs each at trace level): what a
/// statement's request count is made of. Installs a `log` logger once per process.
pub fn trace_requests_if_asked() {
    struct RequestTrace;
    impl log::Log for RequestTrace {
        fn enabled(&self, metadata: &log::Metadata) -> bool {
            metadata.target().starts_with("datafusion_paimon::io")
        }
        fn log(&self, record: &log::Record) {
            if self.enabled(record.metadata()) {
                eprintln!("  {}", record.args());
            }
        }
        fn flush(&self) {}
    }
    if std::env::var_os("PAIMON_TRACE_REQUESTS").is_some() && log::set_logger(&RequestTrace).is_ok() {
        log::set_max_level(log::LevelFilter::Trace);
    }
}

/// The fixed bucket (of `buckets`) Paimon puts the primary key `key` in.
pub fn fixed_bucket_of(key: &[ScalarValue], buckets: i32) -> Result<i32> {
    let row = BinaryRow::encode(key)?;
    Ok(crate::spec::bucket::fixed_bucket(&row, buckets))
}

/// One live data file of a table, as its `$files` row gives it.
#[derive(Debug, Clone)]
pub struct LiveFile {
    /// The file's URL.
    pub path: String,
    pub bucket: i32,
    /// The first and last key of a single `BIGINT` primary key (None for other keys).
    pub key_range: Option<(i64, i64)>,
}

/// The live data files of `table` (a name the session resolves).
pub async fn live_files(session: &PaimonSession, table: &str) -> Result<Vec<LiveFile>> {
    let sql = format!("SELECT file_path, bucket, min_key, max_key FROM \"{table}$files\"");
    let batches = session.sql(&sql).await?.collect().await?;
    let key = |s: Option<&str>| -> Option<i64> { s?.trim_matches(['[', ']']).trim().parse().ok() };
    let mut files = Vec::new();
    for batch in &batches {
        let paths = batch.column(0).as_string::<i32>();
        let buckets = batch.column(1).as_primitive::<arrow::datatypes::Int32Type>();
        let (mins, maxs) = (
            batch.column(2).as_string::<i32>(),
            batch.column(3).as_string::<i32>(),
        );
        for i in 0..batch.num_rows() {
            files.push(LiveFile {
                path: paths.value(i).to_string(),
                bucket: buckets.value(i),
                key_range: key(mins.is_valid(i).then(|| mins.value(i)))
                    .zip(key(maxs.is_valid(i).then(|| maxs.value(i)))),
            });
        }
    }
    Ok(files)
}

/// How many metadata objects a cold read of `table`'s latest snapshot must fetch: the `LATEST`
/// hint, the snapshot, its two manifest lists, its manifests and the schema.
pub async fn read_metadata_objects(session: &PaimonSession, table: &str) -> Result<usize> {
    let sql = format!("SELECT count(*) FROM \"{table}$manifests\"");
    let batches: Vec<RecordBatch> = session.sql(&sql).await?.collect().await?;
    let manifests = batches[0]
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(0) as usize;
    Ok(5 + manifests)
}

/// Registers DataFusion's `ListingTable` over exactly `files` (URLs of Parquet files of a store
/// `ctx` knows) as `name`.
pub async fn register_listing_table(ctx: &SessionContext, name: &str, files: &[LiveFile]) -> Result<()> {
    let urls = files
        .iter()
        .map(|f| ListingTableUrl::parse(&f.path))
        .collect::<Result<Vec<_>>>()?;
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(ListingOptions::new(Arc::new(ParquetFormat::default())))
        .infer_schema(&ctx.state())
        .await?;
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}
