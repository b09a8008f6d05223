//! A Paimon filesystem-catalog warehouse as a DataFusion catalog: databases are the
//! `<name>.db` directories, tables the directories inside them; `t$name` resolves system tables.

mod provider;

pub use provider::{PaimonCatalog, PaimonDatabase};
