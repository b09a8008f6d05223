//! Tailing reads: an unbounded stream of a table's changes, snapshot after snapshot, as Paimon's
//! streaming source reads them (semantics.md §7.4), with consumer progress (format.md §3.6).
//!
//! ```sql
//! SELECT * FROM paimon_stream('db.t', 'scan.mode=latest', 'consumer-id=app1') LIMIT 10
//! ```
//!
//! ```text
//! start position (scan.mode, or the consumer's nextSnapshot)
//!   ─► optional full read of one snapshot (+I rows)
//!   ─► each later snapshot, polled every continuous.discovery-interval:
//!        producer none: delta rows ─► the normalize state ─► +I / -U +U / -D
//!        a producer:    the snapshot's changelog files
//!   ─► consumer/consumer-<id> = {"nextSnapshot": n} once a snapshot's changes are all emitted
//! ```
//!
//! Rows have the columns of `t$changelog`: `rowkind`, the table's columns, `snapshot_id`.

mod exec;
mod options;
mod table;
mod tail;

pub use exec::PaimonStreamExec;
pub(crate) use options::StreamOptions;
pub(crate) use table::PaimonStreamTable;

/// The table function's name.
pub const STREAM_FUNCTION: &str = "paimon_stream";
