//! The write path: bucket assignment, per-bucket write buffers, level-0 files and the commit.

mod after_commit;
mod append_dml;
mod append_dml_commit;
mod assign;
mod buffer;
mod commit_message;
mod cross_partition;
mod merge_append;
mod merge_check;
mod parallel;
mod routing;
mod sink;
mod sink_commit;
mod sink_metrics;
mod source_order;

pub use append_dml::AppendDmlExec;
pub(crate) use append_dml::Job as AppendDmlJob;
pub use append_dml_commit::AppendDmlCommitExec;
pub use assign::PaimonAssignExec;
pub(crate) use merge_append::{AppendMergeBase, ROW_ADDRESS_COLUMN};
pub use merge_check::merge_cardinality_udf;
pub(crate) use merge_check::{
    count_merge_kinds, merge_counts_batch, merge_counts_schema, MERGE_CARDINALITY_CHECK,
};
pub(crate) use parallel::FanOut;
pub use parallel::{PaimonBucketExec, PaimonCommitExec, PaimonWriteExec};
pub(crate) use sink::{PaimonSink, WriteKind, MERGE_KIND_COLUMN};
pub use source_order::KeepSourceOrder;

#[cfg(test)]
mod tests;
