//! A Paimon filesystem-catalog warehouse as a DataFusion catalog: databases are the
//! `<name>.db` directories, tables the directories inside them; `t$name` resolves system tables.
//! `warehouse.rs` creates and drops databases and tables and commits schema versions (DDL).

mod provider;
mod warehouse;

pub(crate) use provider::warehouse_url_of;
pub use provider::{PaimonCatalog, PaimonDatabase};
