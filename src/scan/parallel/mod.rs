//! Every core inside a bucket: a split too big for its share of the output partitions is cut
//! into pieces, each read by its own partition.
//!
//! ```text
//! split (bucket) ── sections ──► small sections grouped into pieces of about one share
//!                            ├─► one big sorted run: pieces of rows (`row_pieces`)
//!                            ├─► a query deduplicating over a dense oldest run: key ranges of
//!                            │   that run, the last piece with the newer runs whole, the
//!                            │   others with only their keys, mostly taken from the last
//!                            │   piece as it marks them (`pieces_over_dense_base`)
//!                            └─► a big section of a primary-key table: key ranges cut from the
//!                                row-group / page statistics of its files, each range merged
//!                                by its own partition
//! ```
//!
//! Sections never share keys, so grouping them is free. A key range cuts on the first key
//! column (partition keys trimmed): every version of a key has the same first key value, so
//! each key is merged by exactly one partition whatever the merge engine, and the merge inside
//! a range sees all of the key's records in the same order as a whole-bucket merge would. Cut
//! points are the minimum keys of row groups or pages, so most units are read by one partition
//! only; units that straddle a cut are read by both and filtered exactly
//! (`row_selection::KeyRange::filter`).

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::common::{Result, ScalarValue};

use super::exec::ScanContext;
use super::incremental::plan::{ChangeFiles, ChangeSplit};
use super::row_selection::{wanted_key_units, wanted_rows, KeyRange, KeyUnit};
use super::split::{NewerRuns, Split, SplitFile};
use crate::format::FileFormat;
use crate::spec::DataField;

mod over_dense_base;

use over_dense_base::pieces_over_dense_base;

/// Pieces smaller than this are not worth the footer reads and the extra partition.
pub(crate) const MIN_PIECE_ROWS: i64 = 50_000;

type Section = Vec<Vec<SplitFile>>;

/// A piece cut over a dense oldest run: its runs, key range, how it reads the newer runs, rows.
type OverBasePiece = (Section, Option<KeyRange>, NewerRuns, i64);

fn section_rows(section: &Section) -> i64 {
    section.iter().flatten().map(|f| f.row_count).sum()
}

/// Cuts splits bigger than their share of `partitions` into pieces (see the module comment).
/// `first_key` is the first trimmed key column of a primary-key table; without it sections
/// are only grouped.
pub(crate) async fn spread_over_partitions(
    splits: Vec<Split>,
    partitions: usize,
    ctx: &ScanContext,
    first_key: Option<&DataField>,
) -> Result<Vec<Split>> {
    if partitions <= 1 || splits.len() >= partitions {
        return Ok(splits);
    }
    let total: i64 = splits.iter().map(Split::row_count).sum();
    let share = (total / partitions as i64).max(MIN_PIECE_ROWS);
    // Key ranges need the key in every batch (it is for merged reads) and Parquet statistics.
    let first_key = first_key
        .filter(|k| ctx.layout.with_system_columns && ctx.layout.fields.iter().any(|f| f.id == k.id));
    let mut out = Vec::new();
    for split in splits {
        if split.row_count() <= share + share / 4 || split.key_range.is_some() {
            out.push(split);
            continue;
        }
        let mut pieces = Pieces::new(&split, share);
        for section in &split.sections {
            let rows = section_rows(section);
            // One sorted run needs no merge: cut it by row position, so no partition decodes
            // the key to find where its piece ends.
            if section.len() == 1 && rows > share + share / 4 && all_parquet(section) {
                let wanted = ((rows + share - 1) / share).min(partitions as i64) as usize;
                let pieces_of_run = row_pieces(ctx, &split.bucket_dir, &section[0], wanted).await?;
                if pieces_of_run.len() >= 2 {
                    pieces.flush();
                    for (run, at) in pieces_of_run {
                        pieces.push_rows(vec![run], at);
                    }
                    continue;
                }
            }
            if let Some(key) = first_key.filter(|_| rows > share + share / 4) {
                let wanted = ((rows + share - 1) / share).min(partitions as i64) as usize;
                if let Some(over_base) = pieces_over_dense_base(ctx, section, key, wanted) {
                    pieces.flush();
                    for (section, range, newer, rows) in over_base {
                        pieces.push_over_base(section, range, newer, rows);
                    }
                    continue;
                }
            }
            let ranges = match first_key {
                Some(key) if rows > share + share / 4 && all_parquet(section) => {
                    let wanted = ((rows + share - 1) / share).min(partitions as i64) as usize;
                    key_ranges(ctx, &split.bucket_dir, section, key, wanted).await?
                }
                _ => Vec::new(),
            };
            if ranges.len() < 2 {
                pieces.add(section.clone(), rows);
                continue;
            }
            pieces.flush();
            for (range, rows) in ranges {
                let kept = section_in_range(section, &range);
                if !kept.is_empty() {
                    pieces.push_ranged(kept, Arc::new(range), rows);
                }
            }
        }
        pieces.flush();
        out.extend(pieces.done);
    }
    Ok(out)
}

/// Pieces of one split under construction.
struct Pieces<'a> {
    split: &'a Split,
    share: i64,
    group: Vec<Section>,
    group_rows: i64,
    done: Vec<Split>,
}

impl<'a> Pieces<'a> {
    fn new(split: &'a Split, share: i64) -> Self {
        Pieces {
            split,
            share,
            group: Vec::new(),
            group_rows: 0,
            done: Vec::new(),
        }
    }

    fn piece(&self, sections: Vec<Section>, key_range: Option<Arc<KeyRange>>, rows: Option<i64>) -> Split {
        Split {
            partition_path: self.split.partition_path.clone(),
            bucket: self.split.bucket,
            total_buckets: self.split.total_buckets,
            bucket_dir: self.split.bucket_dir.clone(),
            sections,
            key_range,
            rows_estimate: rows,
            row_piece: None,
            newer_runs: NewerRuns::InRange,
        }
    }

    fn add(&mut self, section: Section, rows: i64) {
        self.group.push(section);
        self.group_rows += rows;
        if self.group_rows >= self.share {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.group.is_empty() {
            return;
        }
        let sections = std::mem::take(&mut self.group);
        self.group_rows = 0;
        let piece = self.piece(sections, None, None);
        self.done.push(piece);
    }

    fn push_ranged(&mut self, section: Section, range: Arc<KeyRange>, rows: i64) {
        let piece = self.piece(vec![section], Some(range), Some(rows));
        self.done.push(piece);
    }

    fn push_over_base(&mut self, section: Section, range: Option<KeyRange>, newer: NewerRuns, rows: i64) {
        let mut piece = self.piece(vec![section], range.map(Arc::new), Some(rows));
        piece.newer_runs = newer;
        self.done.push(piece);
    }

    fn push_rows(&mut self, section: Section, at: Range<i64>) {
        let mut piece = self.piece(vec![section], None, Some(at.end - at.start));
        piece.row_piece = Some(at);
        self.done.push(piece);
    }
}

/// `files` of the bucket directory `dir` opened with their page indexes, through the
/// catalog's footer cache (planning reads only footers).
async fn open_footers<'a>(
    ctx: &ScanContext,
    dir: &str,
    files: impl Iterator<Item = &'a SplitFile>,
) -> Result<Vec<crate::format::OpenedFile>> {
    let opens = files.map(|f| {
        let path = ctx
            .table_io
            .data_file_path(dir, &f.file_name, f.external_path.as_deref());
        let store = Arc::clone(ctx.table_io.store());
        let footers = Arc::clone(ctx.table_io.footers());
        let size = f.file_size;
        async move { crate::format::open_cached(store, &path?, size, true, &footers).await }
    });
    futures::future::try_join_all(opens).await
}

/// One sorted run cut into up to `wanted` pieces of about equal rows, each with its rows as
/// positions in the run. A cut falls on the nearest row-group or file boundary when one is
/// close (an eighth of a piece) or the file has no page index: a row group cut in two is
/// fetched and decompressed by both pieces, or with a page index its dictionary pages and the
/// data pages across the cut. Elsewhere a cut falls anywhere. Fewer than two pieces: no cut.
async fn row_pieces(
    ctx: &ScanContext,
    dir: &str,
    run: &[SplitFile],
    wanted: usize,
) -> Result<Vec<(Vec<SplitFile>, Range<i64>)>> {
    let opened = open_footers(ctx, dir, run.iter()).await?;
    // Each file's first row in the run, whether any row may start a piece, and its row-group
    // starts (positions in the run).
    let mut files: Vec<(i64, bool, Vec<i64>)> = Vec::with_capacity(run.len());
    let mut kept: Vec<Range<i64>> = Vec::new();
    let mut start = 0i64;
    for (file, opened) in run.iter().zip(&opened) {
        let Some(metadata) = opened.parquet_metadata() else {
            return Ok(Vec::new());
        };
        let mut groups = Vec::with_capacity(metadata.num_row_groups());
        let mut at = start;
        for group in metadata.row_groups() {
            groups.push(at);
            at += group.num_rows();
        }
        if at != start + file.row_count {
            // the footer disagrees with the manifest: leave the file whole
            return Ok(Vec::new());
        }
        let Some(file_schema) = ctx.file_schemas.get(&file.schema_id) else {
            return Ok(Vec::new());
        };
        // the rows the pushed-down predicate may want (pages and row groups it rules out are
        // never read, so they weigh nothing)
        match wanted_rows(
            metadata,
            opened.schema(),
            file_schema,
            ctx.pruning.as_deref(),
            None,
        ) {
            None => kept.push(start..at),
            Some(ranges) => kept.extend(
                ranges
                    .into_iter()
                    .map(|r| start + r.start as i64..start + r.end as i64),
            ),
        }
        files.push((start, metadata.offset_index().is_some(), groups));
        start = at;
    }
    let total = start;
    // A selective predicate leaves too few rows to share (the threshold of `key_ranges`): one
    // partition reads them, and no other opens the file only to skip all of it.
    let kept_rows: i64 = kept.iter().map(|r| r.end - r.start).sum();
    if kept_rows <= MIN_PIECE_ROWS + MIN_PIECE_ROWS / 4 {
        return Ok(Vec::new());
    }
    let wanted = wanted.min((kept_rows / MIN_PIECE_ROWS) as usize).max(1);
    // cut where each piece gets its share of the kept rows
    let ideals: Vec<i64> = (1..wanted as i64)
        .map(|k| kept_position(&kept, kept_rows * k / wanted as i64))
        .collect();
    let cuts = row_cuts(&files, total, &ideals, kept_rows / wanted as i64 / 8);
    if cuts.is_empty() {
        return Ok(Vec::new());
    }
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(total);
    Ok(bounds
        .windows(2)
        .map(|w| {
            let (from, to) = (w[0], w[1]);
            let piece: Vec<SplitFile> = run
                .iter()
                .zip(&files)
                .filter_map(|(file, (first, _, _))| {
                    let (lo, hi) = (from.max(*first), to.min(first + file.row_count));
                    if lo >= hi {
                        return None;
                    }
                    let mut file = file.clone();
                    if hi - lo < file.row_count {
                        file.rows = Some((lo - first) as usize..(hi - first) as usize);
                    }
                    Some(file)
                })
                .collect();
            (piece, from..to)
        })
        .collect())
}

fn all_parquet(section: &Section) -> bool {
    section
        .iter()
        .flatten()
        .all(|f| FileFormat::of_file(&f.file_name).ok() == Some(FileFormat::Parquet))
}

fn cmp(a: &ScalarValue, b: &ScalarValue) -> Ordering {
    a.partial_cmp(b).unwrap_or(Ordering::Equal)
}

/// Up to `wanted` key ranges of about equal rows over `section`, from the first-key
/// statistics of its files' row groups and pages; fewer (or none) where the statistics cannot
/// tell keys apart. Each range comes with its estimated rows.
async fn key_ranges(
    ctx: &ScanContext,
    dir: &str,
    section: &Section,
    key: &DataField,
    wanted: usize,
) -> Result<Vec<(KeyRange, i64)>> {
    let key_type = key.data_type.to_arrow();
    let opened = open_footers(ctx, dir, section.iter().flatten()).await?;
    // Every unit the pushed-down predicate keeps (units it prunes are never read: they weigh
    // nothing), each with a known first-key minimum.
    let mut units: Vec<KeyUnit> = Vec::new();
    for (file, opened) in section.iter().flatten().zip(&opened) {
        let (Some(metadata), Some(schema)) =
            (opened.parquet_metadata(), ctx.file_schemas.get(&file.schema_id))
        else {
            return Ok(Vec::new());
        };
        let pruning = ctx.pruning.as_deref();
        for unit in wanted_key_units(metadata, opened.schema(), schema, pruning, key.id, &key_type) {
            if unit.min.as_ref().is_none_or(ScalarValue::is_null) {
                return Ok(Vec::new());
            }
            units.push(unit);
        }
    }
    units.sort_by(|a, b| cmp(unit_min(a), unit_min(b)));
    let total: i64 = units.iter().map(unit_rows).sum();
    // A selective key predicate (`id BETWEEN a AND b`) leaves too few rows to cut (the
    // callers' own threshold, so reads without a predicate cut as before): one partition reads
    // them, and no other partition opens every footer only to prune every page.
    if total <= MIN_PIECE_ROWS + MIN_PIECE_ROWS / 4 {
        return Ok(Vec::new());
    }
    let per_range = (total / wanted.max(1) as i64).max(1);
    // Cut before the unit that starts the next range, at a key strictly above the last cut.
    let mut cuts: Vec<ScalarValue> = Vec::new();
    let mut acc = 0;
    for (i, unit) in units.iter().enumerate() {
        acc += unit_rows(unit);
        let Some(next) = units.get(i + 1).map(unit_min) else {
            break;
        };
        if acc >= per_range * (cuts.len() as i64 + 1) && cuts.len() + 1 < wanted {
            let above_last = cuts.last().is_none_or(|c| cmp(next, c).is_gt());
            if above_last && cmp(next, unit_min(&units[0])).is_gt() {
                cuts.push(next.clone());
            }
        }
    }
    if cuts.is_empty() {
        return Ok(Vec::new());
    }
    let mut bounds: Vec<Option<ScalarValue>> = vec![None];
    bounds.extend(cuts.into_iter().map(Some));
    bounds.push(None);
    let ranges: Vec<(KeyRange, i64)> = bounds
        .windows(2)
        .map(|w| {
            let range = KeyRange {
                field_id: key.id,
                key_type: key_type.clone(),
                lower: w[0].clone(),
                upper: w[1].clone(),
                upper_inclusive: false,
            };
            let rows = units
                .iter()
                .filter(|u| range.overlaps(u.min.as_ref(), u.min.as_ref()))
                .map(unit_rows)
                .sum();
            (range, rows)
        })
        .collect();
    // A cut is worth it only if the predicate wants keys on both sides: a page that straddles
    // a cut into keys the predicate rules out is skipped by the range reading those keys
    // (`KeyRange::clamp`), and a range left with nothing to read only costs a partition.
    let wanting = ranges
        .iter()
        .filter(|(range, _)| range_may_match(ctx, range, &units, &key_type))
        .count();
    Ok(if wanting < 2 { Vec::new() } else { ranges })
}

/// The position in the run of kept row number `n` (counting the rows of `kept`, ascending
/// ranges of positions, from 0).
fn kept_position(kept: &[Range<i64>], n: i64) -> i64 {
    let mut before = 0;
    for range in kept {
        let len = range.end - range.start;
        if n < before + len {
            return range.start + (n - before);
        }
        before += len;
    }
    kept.last().map_or(0, |r| r.end)
}

/// The positions where [`row_pieces`] cuts a run of `total` rows, near the `ideals` positions,
/// given each file's first row, whether it has a page index, and its row-group starts. A
/// row-group boundary within `close` rows of an ideal cut is taken instead of it.
fn row_cuts(files: &[(i64, bool, Vec<i64>)], total: i64, ideals: &[i64], close: i64) -> Vec<i64> {
    let mut cuts: Vec<i64> = Vec::new();
    for &ideal in ideals {
        let holder = files.partition_point(|(first, _, _)| *first <= ideal) - 1;
        let (_, paged, _) = &files[holder];
        let boundary = files
            .iter()
            .flat_map(|(_, _, groups)| groups.iter().copied())
            .chain([total])
            .min_by_key(|at| (at - ideal).abs())
            .unwrap_or(0);
        let cut = match *paged && (boundary - ideal).abs() > close {
            true => ideal,
            false => boundary,
        };
        if cut > 0 && cut < total && cuts.last().is_none_or(|last| cut > *last) {
            cuts.push(cut);
        }
    }
    cuts
}

/// The first-key minimum of a unit `key_ranges` kept (it keeps only units that have one).
fn unit_min(unit: &KeyUnit) -> &ScalarValue {
    unit.min.as_ref().expect("key_ranges keeps units with a minimum")
}

fn unit_rows(unit: &KeyUnit) -> i64 {
    unit.rows.len() as i64
}

/// Whether the predicate may want keys of `range` in any of `units`, judged on each unit's
/// statistics narrowed to the range.
fn range_may_match(ctx: &ScanContext, range: &KeyRange, units: &[KeyUnit], key_type: &ArrowType) -> bool {
    let Some((pruning, column)) = ctx
        .pruning
        .as_deref()
        .and_then(|p| p.first_key.as_ref().map(|(column, _, _)| (p, column)))
    else {
        return true;
    };
    let clamped: Vec<KeyUnit> = units
        .iter()
        .filter(|u| range.overlaps(u.min.as_ref(), u.max.as_ref()))
        .map(|u| range.clamp(u))
        .collect();
    match pruning.may_match_units(column, &clamped, key_type) {
        Some(keep) => keep.into_iter().any(|k| k),
        None => !clamped.is_empty(),
    }
}

/// The runs of `section` cut to the files that may hold keys of `range` (file key statistics);
/// runs left without files are dropped.
fn section_in_range(section: &[Vec<SplitFile>], range: &KeyRange) -> Section {
    section
        .iter()
        .map(|run| {
            run.iter()
                .filter(|f| range.overlaps(f.min_key.first(), f.max_key.first()))
                .cloned()
                .collect::<Vec<_>>()
        })
        .filter(|run| !run.is_empty())
        .collect()
}

/// Cuts diff splits bigger than their share of half the `partitions` into key ranges, as
/// [`spread_over_partitions`] does for batch reads: both states of a range are read and
/// compared by the same partition, so each key is compared exactly once. Ranges are cut inside
/// the split's own narrowed range (`incremental::plan::narrow_diff`), if any.
pub(crate) async fn spread_diffs_over_partitions(
    splits: Vec<ChangeSplit>,
    partitions: usize,
    ctx: &ScanContext,
    first_key: Option<&DataField>,
) -> Result<Vec<ChangeSplit>> {
    let Some(key) = first_key.filter(|k| ctx.layout.fields.iter().any(|f| f.id == k.id)) else {
        return Ok(splits);
    };
    // A diff split keeps two cores busy: its two states are read and merged on tasks of
    // their own. Cutting a bucket finer than that only decodes the pages its cuts cross twice.
    let partitions = partitions.div_ceil(2);
    if partitions <= 1 || splits.len() >= partitions {
        return Ok(splits);
    }
    let total: i64 = splits.iter().map(ChangeSplit::row_count).sum();
    let share = (total / partitions as i64).max(MIN_PIECE_ROWS);
    let mut out = Vec::with_capacity(splits.len());
    for split in splits {
        let rows = split.row_count();
        let ChangeFiles::Diff {
            before,
            after,
            keys,
            newer_only,
        } = &split.files
        else {
            out.push(split);
            continue;
        };
        if rows <= share + share / 4 {
            out.push(split);
            continue;
        }
        // Cut points from both states' files together.
        let both: Section = before.iter().chain(after.iter()).flatten().cloned().collect();
        if !all_parquet(&both) {
            out.push(split);
            continue;
        }
        let wanted = ((rows + share - 1) / share).min(partitions as i64) as usize;
        let ranges = key_ranges(ctx, &split.bucket_dir, &both, key, wanted).await?;
        // Keep the cuts strictly inside the narrowed range.
        let cuts: Vec<ScalarValue> = ranges
            .iter()
            .filter_map(|(r, _)| r.lower.clone())
            .filter(|c| match keys.as_deref() {
                Some(k) => {
                    k.lower.as_ref().is_none_or(|l| cmp(c, l).is_gt())
                        && k.upper.as_ref().is_none_or(|u| cmp(c, u).is_lt())
                }
                None => true,
            })
            .collect();
        if cuts.is_empty() {
            out.push(split);
            continue;
        }
        let (lower, upper, upper_inclusive) = match keys.as_deref() {
            Some(k) => (k.lower.clone(), k.upper.clone(), k.upper_inclusive),
            None => (None, None, false),
        };
        let mut bounds: Vec<Option<ScalarValue>> = vec![lower];
        bounds.extend(cuts.into_iter().map(Some));
        bounds.push(upper);
        let last = bounds.len() - 2;
        for (i, w) in bounds.windows(2).enumerate() {
            let range = KeyRange {
                field_id: key.id,
                key_type: key.data_type.to_arrow(),
                lower: w[0].clone(),
                upper: w[1].clone(),
                upper_inclusive: i == last && upper_inclusive,
            };
            let cut = |sections: &Sections| -> Sections {
                sections
                    .iter()
                    .map(|s| section_in_range(s, &range))
                    .filter(|s| !s.is_empty())
                    .collect()
            };
            out.push(ChangeSplit {
                partition_path: split.partition_path.clone(),
                bucket: split.bucket,
                bucket_dir: split.bucket_dir.clone(),
                files: ChangeFiles::Diff {
                    before: cut(before),
                    after: cut(after),
                    keys: Some(Arc::new(range)),
                    newer_only: *newer_only,
                },
            });
        }
    }
    Ok(out)
}

type Sections = Vec<Section>;

#[cfg(test)]
mod tests {
    use super::{kept_position, row_cuts};

    #[test]
    fn row_cuts_prefer_close_row_group_boundaries() {
        // a cut into `pieces` of 2M rows, ideal positions at equal shares, close = an eighth
        let even = |total: i64, pieces: i64| -> (Vec<i64>, i64) {
            (
                (1..pieces).map(|k| total * k / pieces).collect(),
                total / pieces / 8,
            )
        };
        // one paged file of 2M rows in row groups at 0 and 1,048,576: the boundary is within
        // an eighth of a piece (125,000 rows) of the ideal 1,000,000
        let one_file = [(0, true, vec![0, 1_048_576])];
        let (ideals, close) = even(2_000_000, 2);
        assert_eq!(row_cuts(&one_file, 2_000_000, &ideals, close), [1_048_576]);
        // four pieces: 500,000 and 1,500,000 have no close boundary and the file is paged
        let (ideals, close) = even(2_000_000, 4);
        assert_eq!(
            row_cuts(&one_file, 2_000_000, &ideals, close),
            [500_000, 1_048_576, 1_500_000]
        );
        // without a page index only boundaries cut: 500,000 and 1,500,000 are nearest to the
        // run's ends, which cut nothing; and a run of two files also cuts between them
        let unpaged = [(0, false, vec![0, 1_048_576])];
        assert_eq!(row_cuts(&unpaged, 2_000_000, &ideals, close), [1_048_576]);
        let two_files = [(0, false, vec![0]), (700_000, false, vec![700_000])];
        let (ideals, close) = even(1_400_000, 2);
        assert_eq!(row_cuts(&two_files, 1_400_000, &ideals, close), [700_000]);
        // a single row group, unpaged: nothing to cut at
        let (ideals, close) = even(1_000_000, 2);
        assert!(row_cuts(&[(0, false, vec![0])], 1_000_000, &ideals, close).is_empty());
    }

    #[test]
    fn kept_positions_skip_the_rows_a_predicate_rules_out() {
        // rows 100..200 and 500..800 kept: kept row 0 is at 100, 99 at 199, 100 at 500
        let kept = [100..200, 500..800];
        assert_eq!(kept_position(&kept, 0), 100);
        assert_eq!(kept_position(&kept, 99), 199);
        assert_eq!(kept_position(&kept, 100), 500);
        assert_eq!(kept_position(&kept, 399), 799);
        assert_eq!(kept_position(&kept, 400), 800);
    }
}
