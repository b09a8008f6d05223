//! Integration tests: one binary for what `.slt` files cannot express (STYLE §4.7).
//!
//! * [`fixtures`]: every `batch` expected result of the pypaimon 2.1.0 fixture corpus, compared
//!   value by value (JSON encoding of `tests/fixtures/README.md`) with what we read.
//! * [`java_fixtures`]: every table written by Java Paimon (`tests/fixtures/java-paimon`) reads, and
//!   every expected result there matches.
//! * [`incremental`]: incremental reads between tags and over expired snapshots.
//! * [`errors`]: damaged tables (missing or corrupt snapshot, manifest, data and schema files) fail
//!   with an error naming the file, never with a panic, on both `LocalFileSystem` and `InMemory`.

#[cfg(feature = "ballista")]
mod ballista;
mod changelog_replay;
#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "ballista")]
mod cluster_planning;
mod compaction;
mod concurrent_commits;
mod crash;
mod errors;
mod external_paths;
mod file_indexes;
mod fixtures;
mod incremental;
mod java_fixtures;
mod long_history;
mod lookup_levels;
mod merge_model;
mod metrics;
mod mutated_files;
mod object_store_s3;
mod read_options;
mod requests;
mod runtime_filter;
mod tailing;

use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use datafusion::error::Result;
use datafusion_paimon::PaimonSession;
pub(crate) use object_store_s3::S3Warehouse;

/// The fixture corpus root: `tests/fixtures/pypaimon-2.1.0`.
pub(crate) fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pypaimon-2.1.0")
}

/// The fixture warehouse (read-only: tests that change files work on a copy).
pub(crate) fn fixture_warehouse() -> PathBuf {
    fixture_root().join("warehouse")
}

/// A small seeded generator (SplitMix64) for the randomized tests, the same on every machine.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }

    /// True with the probability `percent` / 100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Runs one statement and collects its batches.
pub(crate) async fn run_sql(session: &PaimonSession, sql: &str) -> Result<Vec<RecordBatch>> {
    session.sql(sql).await?.collect().await
}

/// The id of `table`'s latest snapshot (from `$snapshots`).
pub(crate) async fn latest_snapshot(session: &PaimonSession, table: &str) -> i64 {
    use arrow::array::AsArray;
    let batches = run_sql(
        session,
        &format!("SELECT max(snapshot_id) FROM {table}$snapshots"),
    )
    .await
    .expect("snapshots");
    batches[0]
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(0)
}
