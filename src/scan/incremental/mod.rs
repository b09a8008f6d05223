//! Incremental reads: the changes between two snapshots (semantics.md §7.1, §7.2, §4.4).
//!
//! ```text
//!  delta     : delta files of APPEND snapshots in (start, end] ─┐  read raw, stored kinds,
//!  changelog : changelog files of APPEND/COMPACT snapshots ─────┴─ in commit order, no merge
//!  diff      : merged end state vs merged start state, per key ──── -D / end rows (see diff.rs)
//!                         ──► per split: drop retracts (table) | keep (audit log) | pack (binlog)
//!                         ──► project ──► limit
//! ```
//!
//! What is read is resolved from the read options by `table::incremental`; this module plans
//! the splits ([`plan`]), reads them ([`stream`], [`diff`]) and is the plan node ([`exec`]).
//! It never merges delta or changelog files: those are the changes themselves.

mod diff;
mod exec;
pub(crate) mod plan;
mod stream;

pub use exec::PaimonIncrementalScanExec;
pub(crate) use plan::{plan_incremental, IncrementalPlanRequest};

use crate::spec::Snapshot;

/// Which files an incremental read uses (`auto` already resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeMode {
    /// New data files of APPEND snapshots.
    Delta,
    /// Changelog files of APPEND and COMPACT snapshots.
    Changelog,
    /// Merged state of the end snapshot against the start snapshot.
    Diff,
}

impl ChangeMode {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            ChangeMode::Delta => "delta",
            ChangeMode::Changelog => "changelog",
            ChangeMode::Diff => "diff",
        }
    }
}

/// The two states a diff compares.
#[derive(Debug, Clone)]
pub(crate) struct DiffEnds {
    /// None: the start precedes the table's first snapshot (an empty state).
    pub(crate) start: Option<Snapshot>,
    pub(crate) end: Snapshot,
}

/// What an incremental read covers: the changes of snapshots `start + 1 ..= end`.
#[derive(Debug, Clone)]
pub(crate) struct IncrementalRange {
    /// Start snapshot id, exclusive.
    pub(crate) start: i64,
    /// End snapshot id, inclusive.
    pub(crate) end: i64,
    pub(crate) mode: ChangeMode,
    /// The states of a diff (mode `Diff` only, and not empty).
    pub(crate) diff: Option<DiffEnds>,
    /// Nothing can have changed (`start = end`, a time range outside the table's history, no
    /// snapshot at all): no file is read.
    pub(crate) empty: bool,
}

impl IncrementalRange {
    /// A range without changes.
    pub(crate) fn empty(start: i64, end: i64, mode: ChangeMode) -> Self {
        IncrementalRange {
            start,
            end,
            mode,
            diff: None,
            empty: true,
        }
    }
}
