//! The read path: batch merge-on-read of one snapshot, incremental reads of the changes
//! between two snapshots, and their plan nodes.

mod binlog;
mod bucket_filter;
mod cast;
mod dense_rows;
mod evolution;
mod exec;
mod file_read;
pub(crate) mod incremental;
mod index_skip;
mod metrics;
pub(crate) use metrics::RequestGauges;
mod parallel;
mod plan;
mod read_layout;
mod row_selection;
mod runtime_filter;
mod split;
mod stream;

pub(crate) use binlog::list_type;
pub(crate) use evolution::BlobRead;
pub use exec::PaimonScanExec;
pub(crate) use exec::{ReadView, ScanContext};
pub(crate) use file_read::{read_file, read_opened_file, DenseKey, FileToRead, RowPositions};
pub use incremental::PaimonIncrementalScanExec;
pub(crate) use parallel::{spread_diffs_over_partitions, spread_over_partitions};
pub(crate) use plan::{
    column_stat, load_file_schemas, lookup_read, plan_scan, prune_files, pruning_predicate, PlanRequest,
};
pub(crate) use read_layout::ReadLayout;
pub(crate) use row_selection::{file_key_units, StatsPruning};
#[allow(unused_imports)]
pub(crate) use split::{Split, SplitFile};
pub(crate) use stream::decoded_ahead;
