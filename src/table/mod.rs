//! One Paimon table as DataFusion sees it.

mod definition;
mod fallback;
mod incremental;
pub(crate) mod merge_target;
mod open;
mod origin;
mod provider;
#[cfg(feature = "ballista")]
mod recipe;
mod time_travel;
mod writes;

pub(crate) use crate::scan::ReadView;
pub(crate) use incremental::parse_time;
pub(crate) use merge_target::{MergeSinkExec, MergeTarget};
pub(crate) use open::{open_table, open_table_with_latest};
#[cfg(feature = "ballista")]
pub(crate) use origin::{ScanKind, ScanOrigin};
pub(crate) use provider::project;
pub use provider::PaimonTable;
#[cfg(feature = "ballista")]
pub(crate) use recipe::{open_meta, TableRecipe};
pub(crate) use time_travel::{latest_compacted, reads_latest_snapshot, resolve_snapshot};
