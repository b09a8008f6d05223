//! One Paimon table as DataFusion sees it.

mod incremental;
mod open;
mod provider;
mod time_travel;

pub(crate) use crate::scan::ReadView;
pub(crate) use open::open_table;
pub(crate) use provider::project;
pub use provider::PaimonTable;
pub(crate) use time_travel::resolve_snapshot;
