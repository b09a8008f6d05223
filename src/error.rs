//! The storage-level error type (`spec`, `io`, `meta`) and its bridge into DataFusion.
//!
//! Layers at and above the plan line return `datafusion::common::Result`; `?` converts through
//! the single `From<Error> for DataFusionError` below.

use datafusion::error::DataFusionError;

/// Errors raised while reading Paimon metadata and files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file, table, database, snapshot or tag that does not exist.
    #[error("{what} not found: {path}")]
    NotFound {
        /// What was looked for ("snapshot", "table", ...).
        what: String,
        /// The path or name that was looked up.
        path: String,
    },
    /// A file exists but its content cannot be decoded.
    #[error("corrupt file {path}: {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Another writer created the snapshot this commit wanted to create; reload and retry.
    #[error("commit conflict: snapshot {snapshot_id} was created by another writer")]
    CommitConflict {
        /// The contested snapshot id.
        snapshot_id: i64,
    },
    /// A compaction's input files were removed by a concurrent commit: its result is stale
    /// and is dropped rather than retried.
    #[error("compaction of {what} conflicts with a concurrent commit: input file {file} is no longer live")]
    CompactionConflict {
        /// The table / bucket compacted.
        what: String,
        /// An input file that disappeared.
        file: String,
    },
    /// A row-level DELETE or UPDATE read files or deletion vectors that a concurrent commit
    /// changed before it landed: nothing is committed; run the statement again.
    #[error(
        "{statement} conflicts with a concurrent commit: {what} changed; nothing was committed, run it again"
    )]
    RowLevelConflict {
        /// `DELETE` or `UPDATE`.
        statement: String,
        /// The file or deletion vectors that changed.
        what: String,
    },
    /// An option has a value this implementation does not accept.
    #[error("invalid value '{value}' for option '{key}': {reason}")]
    InvalidOption {
        /// Option key.
        key: String,
        /// Offending value.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A feature of the format this implementation does not support yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A data file could not be encoded in the table's file format (the message names the
    /// option or column).
    #[error("{0}")]
    FileFormat(String),
    /// Object store failure.
    #[error(transparent)]
    ObjectStore(#[from] object_store::Error),
    /// Parquet failure.
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow failure.
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    /// Local I/O failure.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    pub(crate) fn corrupt(path: impl Into<String>, reason: impl ToString) -> Self {
        Error::Corrupt {
            path: path.into(),
            reason: reason.to_string(),
        }
    }
    pub(crate) fn not_found(what: impl Into<String>, path: impl Into<String>) -> Self {
        Error::NotFound {
            what: what.into(),
            path: path.into(),
        }
    }
}

/// Result of storage-level operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for DataFusionError {
    fn from(e: Error) -> Self {
        match e {
            Error::Arrow(e) => DataFusionError::ArrowError(Box::new(e), None),
            Error::Parquet(e) => DataFusionError::ParquetError(Box::new(e)),
            Error::ObjectStore(e) => DataFusionError::ObjectStore(Box::new(e)),
            Error::Io(e) => DataFusionError::IoError(e),
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// Whether a missing file (metadata or data, through our I/O or the object store) caused `e`.
pub(crate) fn is_not_found(e: &DataFusionError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cause {
        let found = match err.downcast_ref::<Error>() {
            Some(Error::NotFound { .. }) => true,
            Some(Error::ObjectStore(object_store::Error::NotFound { .. })) => true,
            _ => {
                matches!(
                    err.downcast_ref::<object_store::Error>(),
                    Some(object_store::Error::NotFound { .. })
                ) || err
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
            }
        };
        if found {
            return true;
        }
        cause = err.source();
    }
    false
}
