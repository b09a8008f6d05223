//! Flink-style DDL: one module per statement, each with a `parse` (tokens → statement struct)
//! and an `execute` (statement → warehouse change through `catalog::warehouse`).
//!
//! `CREATE/DROP DATABASE` and `DROP TABLE` are parsed by sqlparser's own grammar. `CREATE
//! TABLE` and `ALTER TABLE` have small grammars of their own on sqlparser's tokenizer
//! (`parser.rs`), because no sqlparser dialect parses Flink's nested types or `RESET`.
//! `validate.rs` and `options.rs` hold the schema and option rules both share.
//! `SHOW DATABASES`, which DataFusion lacks, lives here too (`show_databases.rs`), and
//! `DESCRIBE`, which reports the declared nullability of Paimon columns (`describe.rs`).

pub(crate) mod alter_table;
pub(crate) mod create_database;
pub(crate) mod create_table;
pub(crate) mod create_table_as;
pub(crate) mod describe;
pub(crate) mod drop_database;
pub(crate) mod drop_partition;
pub(crate) mod drop_table;
pub(crate) mod names;
pub(crate) mod options;
pub(crate) mod parser;
pub(crate) mod show_databases;
pub(crate) mod types;
pub(crate) mod validate;
