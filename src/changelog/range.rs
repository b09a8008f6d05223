//! Which snapshots a `$changelog` read covers, and whether they can still be read exactly.

use datafusion::common::{plan_err, Result};

use crate::meta::TableMeta;
use crate::scan::incremental::{ChangeMode, IncrementalRange};

/// The range of a `$changelog` read: the session's `incremental-between*` range, or without one
/// every change since the table was created. Fails, naming the snapshots, when a snapshot the
/// read needs has expired: the start state for a normalized read (`needs_start_state`), and
/// every snapshot of the range. Never a silently incomplete result.
pub(crate) async fn resolve_changelog_range(
    meta: &TableMeta,
    table: &str,
    incremental: Option<&IncrementalRange>,
    mode: ChangeMode,
    needs_start_state: bool,
) -> Result<IncrementalRange> {
    let (earliest, latest) = match (
        meta.earliest_snapshot_id().await?,
        meta.latest_snapshot_id().await?,
    ) {
        (Some(e), Some(l)) => (e, l),
        _ => return Ok(IncrementalRange::empty(0, 0, mode)),
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
    if range.empty {
        return Ok(range);
    }
    let first_needed = if needs_start_state && start > 0 {
        start
    } else {
        start + 1
    };
    if first_needed < earliest {
        return plan_err!(
            "The changes of table {table} in snapshots ({start}, {end}] cannot be read exactly: snapshot(s) {first_needed}..{} have expired (the earliest snapshot is {earliest}); choose a range starting at {earliest} or later",
            earliest - 1
        );
    }
    Ok(range)
}
