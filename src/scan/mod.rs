//! The merge-on-read read path: planning splits from a snapshot and the scan plan node.

mod exec;
mod file_read;
mod plan;
mod split;
mod stream;

pub use exec::PaimonScanExec;
pub(crate) use exec::ScanContext;
pub(crate) use file_read::{read_file, FileToRead, ReadLayout};
pub(crate) use plan::{lookup_read, plan_scan, PlanRequest};
#[allow(unused_imports)]
pub(crate) use split::{Split, SplitFile};
