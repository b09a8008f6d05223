//! One Paimon table as DataFusion sees it.

mod provider;
mod time_travel;

pub use provider::PaimonTable;
pub(crate) use time_travel::{read_schema, resolve_snapshot};
