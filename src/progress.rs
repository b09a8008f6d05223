//! Live counters of the statement a session is running, for a progress display (the
//! `paimon-sql` REPL's status line). Register a [`StatementProgress`] as a `SessionConfig`
//! extension; scans, writes and compactions then add what they read and write as they go.
//! Without the extension nothing is counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use datafusion::execution::TaskContext;
use datafusion::prelude::SessionConfig;

/// Rows and bytes read, rows and files written, since the last [`StatementProgress::reset`].
#[derive(Debug, Default)]
pub struct StatementProgress {
    rows_read: AtomicU64,
    bytes_read: AtomicU64,
    rows_written: AtomicU64,
    files_written: AtomicU64,
}

/// The counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub rows_read: u64,
    pub bytes_read: u64,
    pub rows_written: u64,
    pub files_written: u64,
}

impl StatementProgress {
    /// The progress registered in `config`, if any.
    pub fn of_config(config: &SessionConfig) -> Option<Arc<StatementProgress>> {
        config.get_extension::<StatementProgress>()
    }

    /// The progress registered in the session of `task`, if any.
    pub fn of(task: &TaskContext) -> Option<Arc<StatementProgress>> {
        Self::of_config(task.session_config())
    }

    /// Sets every counter to zero (before a statement starts).
    pub fn reset(&self) {
        for counter in [
            &self.rows_read,
            &self.bytes_read,
            &self.rows_written,
            &self.files_written,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        ProgressSnapshot {
            rows_read: self.rows_read.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            rows_written: self.rows_written.load(Ordering::Relaxed),
            files_written: self.files_written.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn add_rows_read(&self, n: usize) {
        self.rows_read.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_bytes_read(&self, n: usize) {
        self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_rows_written(&self, n: usize) {
        self.rows_written.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_files_written(&self, n: usize) {
        self.files_written.fetch_add(n as u64, Ordering::Relaxed);
    }
}
