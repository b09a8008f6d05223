//! Pieces of a section read over its dense oldest run: key ranges of that run, one piece with
//! the newer runs whole (and the oldest run above the last cut, if the balance leaves it any),
//! the others with only the newer runs' keys, mostly taken from the board that piece marks.

use std::sync::Arc;

use datafusion::common::ScalarValue;

use super::{section_in_range, OverBasePiece, Section, MIN_PIECE_ROWS};
use crate::merge::NewerKeys;
use crate::scan::exec::ScanContext;
use crate::scan::row_selection::KeyRange;
use crate::scan::split::{run_sequences, NewerRuns, SplitFile};
use crate::scan::stream::dense_base_runs;
use crate::spec::DataField;

/// A section a query reads over its dense oldest run (`stream::dense_base_runs`) cut into
/// `wanted` pieces by key, each with its key range, how it reads the newer runs, and its
/// estimated rows. Every piece masks its part of the oldest run by the newer runs' keys; the
/// last also (or only) reads the newer runs whole and outputs their survivors, so the others
/// need only the newer runs' keys in their range. Cut into key ranges alike, every piece would decode
/// every column of the newer runs' row groups it touches, dictionary pages included (a small
/// run is one row group, which every cut straddles).
///
/// The last piece marks the newer keys on a board the pieces share (`merge::NewerKeys`) as it
/// decodes them, walking the whole key span while the others walk their part of the oldest
/// run, so the others find most of their keys marked and decode few of them again. Being the
/// last (its part of the oldest run read after the newer runs), it stays ahead of the first
/// piece from the start.
///
/// The cuts balance the columns decoded, counting a row of one column of the oldest run as one,
/// a newer row's as the ratio of its files' bytes per row to the oldest run's (`r`), and the keys
/// as the board's: each piece but the last takes `x` rows of the oldest run (`c` columns), the
/// last `x_last` of them and the `n` newer rows (`c` + the key): `x·c = x_last·c + r·n·(c + 1)`,
/// `(wanted − 1)·x + x_last = b` for `b` rows of the oldest run. When that leaves the last
/// piece no row of the oldest run (or fewer than [`MIN_PIECE_ROWS`]), it holds the newer runs
/// only (`NewerRuns::Only`) and the others share all of the oldest run. Its dictionary pages
/// are then decoded once, where a cut through a row group has both pieces decode them.
/// `None` when the section is not read over a dense oldest run, when a predicate may prune
/// (key ranges cut from page statistics then skip what it rules out), or when the query reads
/// no column but the key (a `count(*)`): then the newer runs' keys are all it decodes of them,
/// and the other pieces would decode them a second time where not marked yet.
pub(super) fn pieces_over_dense_base(
    ctx: &ScanContext,
    section: &Section,
    key: &DataField,
    wanted: usize,
) -> Option<Vec<OverBasePiece>> {
    if wanted < 2 || ctx.pruning.is_some() {
        return None;
    }
    let (runs, span) = dense_base_runs(ctx, section, None)?;
    let (lo, hi) = (*span.start(), *span.end());
    let values = ctx
        .output_columns
        .iter()
        .filter(|i| !ctx.key_indices.contains(i))
        .count();
    if values == 0 {
        return None;
    }
    let (oldest, newer) = (RunWeight::of(&runs[0]), RunWeight::of(runs[1..].iter().flatten()));
    let (x, x_last) = oldest_run_shares(oldest, newer, values, wanted);
    let (b, newer_rows) = (oldest.rows as f64, newer.rows);
    // keys per row of the oldest run (1, unless its files leave gaps between them)
    let width = (hi - lo + 1) as f64 / b;
    let mut cuts: Vec<i64> = (1..wanted)
        .map(|i| lo + (i as f64 * x * width).round() as i64)
        .collect();
    cuts.dedup();
    let key_type = key.data_type.to_arrow();
    let bound = |key: i64| ScalarValue::Int64(Some(key)).cast_to(&key_type).ok();
    let seqs = runs[1..].iter().map(|r| run_sequences(r)).collect();
    let board = Arc::new(NewerKeys::new(span.clone(), seqs).ok()?);
    // The last piece reads the oldest run above the last cut, unless that leaves it no row:
    // it then holds the newer runs only, and the others share all of the oldest run.
    let whole_over_base = x_last >= 1.0 && *cuts.last()? <= hi;
    if !whole_over_base {
        cuts.pop();
    }
    let mut bounds: Vec<Option<i64>> = std::iter::once(None)
        .chain(cuts.iter().map(|&c| Some(c)))
        .collect();
    if !whole_over_base {
        bounds.push(None);
    }
    let range = |from: Option<i64>, to: Option<i64>| {
        Some(KeyRange {
            field_id: key.id,
            key_type: key_type.clone(),
            lower: match from {
                Some(from) => Some(bound(from)?),
                None => None,
            },
            upper: match to {
                Some(to) => Some(bound(to)?),
                None => None,
            },
            upper_inclusive: false,
        })
    };
    let mut out = Vec::with_capacity(wanted);
    // the pieces below the last cut: the oldest run in their range, the newer runs' keys
    for w in bounds.windows(2) {
        // (one piece over the whole oldest run: every key)
        let range = match (w[0], w[1]) {
            (None, None) => None,
            (from, to) => Some(range(from, to)?),
        };
        let piece = match &range {
            Some(range) => section_in_range(&runs, range),
            None => runs.clone(),
        };
        // (the oldest run must keep a file in the range, or the piece has nothing to mask)
        let base_first = piece
            .first()
            .is_some_and(|run| runs[0].iter().any(|f| f.file_name == run[0].file_name));
        if !base_first || dense_base_runs(ctx, &piece, range.as_ref()).is_none() {
            return None;
        }
        let rows = (x * (1.0 + newer_rows as f64 / b)) as i64;
        out.push((piece, range, NewerRuns::KeysOnly(Arc::clone(&board)), rows));
    }
    if !whole_over_base {
        out.push((runs[1..].to_vec(), None, NewerRuns::Only(board), newer_rows));
        return Some(out);
    }
    // the last piece: the oldest run above the last cut, the newer runs whole
    let range = range(cuts.last().copied(), None)?;
    let mut piece = section_in_range(&runs[..1], &range);
    if piece.is_empty() {
        return None;
    }
    piece.extend(runs[1..].iter().cloned());
    // (the stream reads the piece over its oldest run: it must qualify on its own)
    dense_base_runs(ctx, &piece, Some(&range))?;
    out.push((
        piece,
        Some(range),
        NewerRuns::Whole(board),
        x_last as i64 + newer_rows,
    ));
    Some(out)
}

/// Rows and file bytes of some runs.
#[derive(Debug, Default, Clone, Copy)]
struct RunWeight {
    rows: i64,
    bytes: u64,
}

impl RunWeight {
    fn of<'a>(files: impl IntoIterator<Item = &'a SplitFile>) -> Self {
        files.into_iter().fold(RunWeight::default(), |w, f| RunWeight {
            rows: w.rows + f.row_count,
            bytes: w.bytes + f.file_size,
        })
    }
}

/// The rows of the oldest run each piece but the last takes (`x`) and the last (`x_last`), for
/// `wanted` pieces cut over it, `values` value columns read, and newer runs `newer` (the cost
/// model of [`pieces_over_dense_base`]). A row costs about what its file spends on it: newer
/// runs are small files, written with less dictionary and compression than a bulk load's, so
/// their rows cost more to decode.
fn oldest_run_shares(oldest: RunWeight, newer: RunWeight, values: usize, wanted: usize) -> (f64, f64) {
    let per_row = |w: RunWeight| w.bytes.max(1) as f64 / w.rows.max(1) as f64;
    let dearer = per_row(newer) / per_row(oldest);
    let (b, n, pieces, c) = (
        oldest.rows as f64,
        newer.rows as f64 * dearer,
        wanted as f64,
        values as f64,
    );
    let x = ((b * c + n * (c + 1.0)) / (pieces * c)).min(b / (pieces - 1.0));
    let x_last = (b - (pieces - 1.0) * x).max(0.0);
    // (a sliver of the oldest run is not worth a second decoding of its dictionary pages)
    match x_last < MIN_PIECE_ROWS as f64 {
        true => (b / (pieces - 1.0), 0.0),
        false => (x, x_last),
    }
}

#[cfg(test)]
mod tests {
    use super::{oldest_run_shares, RunWeight};

    /// Newer rows weigh by their files' bytes per row: as many bytes per row as the oldest
    /// run's, the last piece keeps a fifth of it (x·c = x_last·c + n·(c + 1)); at 2.6 times
    /// (small files of plain pages against a bulk load's dictionaries) it keeps none, and a
    /// sliver below MIN_PIECE_ROWS is not kept either.
    #[test]
    fn oldest_run_shares_weigh_newer_rows_by_their_bytes() {
        let run = |rows: i64, bytes: u64| RunWeight { rows, bytes };
        let oldest = run(2_000_000, 14_000_000);
        assert_eq!(
            oldest_run_shares(oldest, run(800_000, 5_600_000), 2, 2),
            (1_600_000.0, 400_000.0)
        );
        assert_eq!(
            oldest_run_shares(oldest, run(800_000, 14_560_000), 2, 2),
            (2_000_000.0, 0.0)
        );
        // 4 pieces and 80,000 newer rows: x = (4,000,000 + 240,000) / 8 = 530,000 for each of
        // three, and the last keeps the other 410,000
        assert_eq!(
            oldest_run_shares(oldest, run(80_000, 560_000), 2, 4),
            (530_000.0, 410_000.0)
        );
        let sliver = oldest_run_shares(oldest, run(1_300_000, 9_100_000), 2, 2);
        assert_eq!(sliver, (2_000_000.0, 0.0), "x_last would be 25,000");
    }
}
