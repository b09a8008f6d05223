//! Exact change streams: `t$changelog`, the same changes whatever the table's changelog producer
//! (issue 9; semantics.md §6, §7.4, §7.6).
//!
//! ```text
//! producer input / lookup / full-compaction:
//!   changelog files of (S, E] ──────────────────────────────────────────► rowkind, columns, snapshot_id
//! producer none (ChangelogNormalize):
//!   merged state at S (seeds the state, emits nothing) ─┐
//!   raw delta rows of the APPEND snapshots of (S, E] ───┴► ChangelogNormalizeExec ─► the same columns
//! ```
//!
//! The normalize folds each delta row into a per-key state the way the table's merge engine
//! would (deduplicate with `sequence.field` and `ignore-delete`, first-row), so it gives the
//! changes a `lookup` producer with `changelog-producer.row-deduplicate = true` writes for the
//! same statements: like Flink's operator it never emits an update that changes nothing (an
//! identical row, a late `sequence.field` row), where a lookup producer without
//! row-deduplicate emits `-U`/`+U` of the unchanged row.

pub(crate) mod normalize;
mod range;

pub(crate) use normalize::ChangelogNormalizeExec;
pub(crate) use range::{changelog_capability, resolve_changelog_range, ALLOW_AFTER_ONLY};

/// Last column of `t$changelog`: the snapshot a change belongs to.
pub(crate) const CHANGELOG_SNAPSHOT_ID: &str = "snapshot_id";
