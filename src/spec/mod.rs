//! The on-disk format of Apache Paimon tables as plain data: no I/O, no async.
//!
//! A table directory looks like this (format.md §1):
//!
//! ```text
//! <warehouse>/<db>.db/<table>/
//!   schema/schema-0, schema-1, ...        TableSchema JSON
//!   snapshot/snapshot-1, ..., LATEST      Snapshot JSON, hint files
//!   manifest/manifest-list-*, manifest-*  Avro manifest lists and manifests
//!   index/index-*                         HASH and deletion-vector index files
//!   tag/tag-<name>                        tagged snapshot JSON
//!   <p1>=<v1>/bucket-<n>/data-*.parquet   data and changelog files
//! ```

pub(crate) mod avro_names;
pub mod binary_row;
pub mod bucket;
pub mod manifest;
pub mod manifest_write;
pub mod options;
pub mod paths;
pub mod schema;
pub mod snapshot;
pub mod types;

pub use binary_row::BinaryRow;
pub use manifest::{
    DataFileMeta, DeletionVectorRange, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta,
    SimpleStats,
};
pub use options::{parse_memory_size, MergeEngine, TableOptions};
pub use schema::TableSchema;
pub use snapshot::{Snapshot, Tag};
pub use types::{parse_type_string, DataField, DataType, TypeKind};

/// Row kinds as stored in `_VALUE_KIND`.
pub mod row_kind {
    /// +I
    pub const INSERT: i8 = 0;
    /// -U
    pub const UPDATE_BEFORE: i8 = 1;
    /// +U
    pub const UPDATE_AFTER: i8 = 2;
    /// -D
    pub const DELETE: i8 = 3;

    /// The short string Paimon shows (`+I`, `-U`, `+U`, `-D`).
    pub fn short_string(kind: i8) -> &'static str {
        match kind {
            UPDATE_BEFORE => "-U",
            UPDATE_AFTER => "+U",
            DELETE => "-D",
            _ => "+I",
        }
    }
}

/// Name of the system sequence-number column in primary-key data files.
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";
/// Row tracking (`row-tracking.enabled`): the row id column, and the field ids Paimon gives
/// `_ROW_ID` and `_SEQUENCE_NUMBER` when a reader asks for them (`SpecialFields`).
pub const ROW_ID: &str = "_ROW_ID";
/// Field id of `_ROW_ID`.
pub const ROW_ID_FIELD_ID: i32 = i32::MAX - 5;
/// Field id of `_SEQUENCE_NUMBER`.
pub const SEQUENCE_NUMBER_FIELD_ID: i32 = i32::MAX - 1;
/// Name of the row-kind column in primary-key data files.
pub const VALUE_KIND: &str = "_VALUE_KIND";
/// Prefix of the key columns in primary-key data files.
pub const KEY_PREFIX: &str = "_KEY_";
