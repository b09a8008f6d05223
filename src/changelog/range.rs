//! Which snapshots a `$changelog` read covers, and whether they can still be read exactly.

use datafusion::common::{plan_err, Result};

use crate::meta::TableMeta;
use crate::scan::incremental::{ChangeMode, IncrementalRange};

/// Session option that accepts after-images where the start state of a normalized read has
/// expired (`SET paimon.changelog.allow-after-only = 'true'`): the first change of each key is
/// then reported as `+I`.
pub(crate) const ALLOW_AFTER_ONLY: &str = "changelog.allow-after-only";

/// The range of a `$changelog` read and whether its start state can seed the normalize.
#[derive(Debug, Clone)]
pub(crate) struct ChangelogRange {
    pub(crate) range: IncrementalRange,
    /// False in the degraded after-only mode: the start state expired.
    pub(crate) seeded: bool,
}

/// The range of a `$changelog` read: the session's `incremental-between*` range, or without one
/// every change since the table was created. Fails, naming the snapshots, when a snapshot the
/// read needs has expired: the start state for a normalized read (`needs_start_state`, unless
/// `allow_after_only`), and every snapshot of the range. Never a silently incomplete result.
pub(crate) async fn resolve_changelog_range(
    meta: &TableMeta,
    table: &str,
    incremental: Option<&IncrementalRange>,
    mode: ChangeMode,
    needs_start_state: bool,
    allow_after_only: bool,
) -> Result<ChangelogRange> {
    let (earliest, latest) = match (
        meta.earliest_snapshot_id().await?,
        meta.latest_snapshot_id().await?,
    ) {
        (Some(e), Some(l)) => (e, l),
        _ => {
            return Ok(ChangelogRange {
                range: IncrementalRange::empty(0, 0, mode),
                seeded: false,
            })
        }
    };
    let (start, end, empty) = match incremental {
        Some(r) => (r.start, r.end, r.empty),
        None => (0, latest, false),
    };
    let range = IncrementalRange {
        start,
        end,
        mode,
        diff: None,
        empty: empty || start >= end,
    };
    let seeded = needs_start_state && start > 0;
    if range.empty {
        return Ok(ChangelogRange { range, seeded });
    }
    // Long-lived changelogs keep the changes of expired snapshots.
    let changes_from = meta.earliest_changes_id().await?.unwrap_or(earliest);
    if start + 1 < changes_from {
        return plan_err!(
            "The changes of table {table} in snapshots ({start}, {end}] cannot be read exactly: snapshot(s) {}..{} have expired (the earliest snapshot is {earliest}); choose a range starting at {changes_from} or later",
            start + 1,
            changes_from - 1
        );
    }
    if seeded && start < earliest {
        if allow_after_only {
            return Ok(ChangelogRange { range, seeded: false });
        }
        return plan_err!(
            "The changes of table {table} in snapshots ({start}, {end}] cannot be read exactly: snapshot(s) {start}..{start} have expired (the earliest snapshot is {earliest}); it is the state the changes of snapshot {} are derived from. Choose a range starting at {earliest} or later, or SET paimon.{ALLOW_AFTER_ONLY} = 'true' for after-images",
            start + 1
        );
    }
    Ok(ChangelogRange { range, seeded })
}

/// How exactly a stretch of snapshots' changes can still be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capability {
    /// Exact changes: changelog files, or the normalize with a readable start state.
    Full,
    /// The snapshot's delta rows exist but the state before it is gone: only after-images.
    AfterOnly,
    /// The snapshots themselves are gone.
    Expired,
}

impl Capability {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Capability::Full => "full",
            Capability::AfterOnly => "after-only",
            Capability::Expired => "expired",
        }
    }
}

/// Snapshots `first ..= last` and how their changes can be read, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stretch {
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) capability: Capability,
    pub(crate) reason: String,
}

/// The capability report of the changes of snapshots `(start, end]`.
pub(crate) async fn changelog_capability(
    meta: &TableMeta,
    has_producer: bool,
    start: i64,
    end: i64,
) -> Result<Vec<Stretch>> {
    if end <= start {
        return Ok(vec![]);
    }
    let (earliest, latest) = match (
        meta.earliest_snapshot_id().await?,
        meta.latest_snapshot_id().await?,
    ) {
        (Some(e), Some(l)) => (e, l),
        _ => (i64::MAX, 0),
    };
    if end > latest {
        return plan_err!("Snapshot {end} does not exist (the latest snapshot is {latest})");
    }
    let mut stretches = Vec::new();
    let mut push = |first: i64, last: i64, capability: Capability, reason: String| {
        if first <= last {
            stretches.push(Stretch {
                first,
                last,
                capability,
                reason,
            });
        }
    };
    // Long-lived changelogs keep the changes (not the state) of expired snapshots.
    let changes_from = meta.earliest_changes_id().await?.unwrap_or(earliest);
    let first = start + 1;
    push(
        first,
        end.min(changes_from - 1),
        Capability::Expired,
        format!("snapshots before {changes_from} were expired: their files are gone"),
    );
    let readable_from = first.max(changes_from);
    if has_producer {
        let kept = end.min(earliest - 1);
        push(
            readable_from,
            kept,
            Capability::Full,
            "changelog files of long-lived changelogs".into(),
        );
        push(
            readable_from.max(kept + 1),
            end,
            Capability::Full,
            "changelog files".into(),
        );
    } else {
        // Snapshot n's changes need the state at n - 1 (none before snapshot 1).
        let state_readable = |n: i64| n == 1 || n > earliest;
        if !state_readable(readable_from) {
            let last = end.min(earliest);
            push(
                readable_from,
                last,
                Capability::AfterOnly,
                format!("the state before snapshot {readable_from} was expired: its delta rows give after-images only"),
            );
            push(
                last + 1,
                end,
                Capability::Full,
                format!("delta rows normalized against the state at snapshot {last}"),
            );
        } else {
            push(
                readable_from,
                end,
                Capability::Full,
                format!(
                    "delta rows normalized against the state at snapshot {}",
                    readable_from - 1
                ),
            );
        }
    }
    Ok(stretches)
}
