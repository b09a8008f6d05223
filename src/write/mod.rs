//! The write path: bucket assignment, per-bucket write buffers, level-0 files and the commit.

mod append_dml;
mod buffer;
mod cross_partition;
mod merge_append;
mod routing;
mod sink;
mod sink_metrics;
mod source_order;

pub use append_dml::AppendDmlExec;
pub(crate) use merge_append::{AppendMergeBase, ROW_ADDRESS_COLUMN};
pub(crate) use sink::{PaimonSink, WriteKind, MERGE_KIND_COLUMN};
pub use source_order::KeepSourceOrder;

#[cfg(test)]
mod tests;
