//! The sorted runs of one bucket and Paimon's universal compaction pick (semantics.md §4.1,
//! §5.2, §5.4).

use crate::spec::ManifestEntry;

/// One sorted run: a level-0 file, or all files of one level ≥ 1.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub level: i32,
    pub files: Vec<ManifestEntry>,
}

impl Run {
    pub(crate) fn size(&self) -> i64 {
        self.files.iter().map(|f| f.file.file_size).sum()
    }
}

/// `[L0 newest … L0 oldest, L1, L2, …]`: older data towards the end (§4.1).
pub(crate) fn sorted_runs(entries: &[ManifestEntry]) -> Vec<Run> {
    let mut level0: Vec<&ManifestEntry> = entries.iter().filter(|e| e.file.level == 0).collect();
    level0.sort_by(|a, b| {
        let (a, b) = (&a.file, &b.file);
        b.max_sequence_number
            .cmp(&a.max_sequence_number)
            .then(b.min_sequence_number.cmp(&a.min_sequence_number))
            .then(b.creation_time.cmp(&a.creation_time))
            .then(a.file_name.cmp(&b.file_name))
    });
    let mut runs: Vec<Run> = level0
        .into_iter()
        .map(|e| Run {
            level: 0,
            files: vec![e.clone()],
        })
        .collect();
    let mut levels: Vec<i32> = entries.iter().map(|e| e.file.level).filter(|l| *l > 0).collect();
    levels.sort_unstable();
    levels.dedup();
    for level in levels {
        let mut files: Vec<ManifestEntry> = entries
            .iter()
            .filter(|e| e.file.level == level)
            .cloned()
            .collect();
        files.sort_by(|a, b| a.file.min_key.cmp(&b.file.min_key));
        runs.push(Run { level, files });
    }
    runs
}

/// The options of the universal pick.
#[derive(Debug, Clone)]
pub(crate) struct PickOptions {
    /// `num-sorted-run.compaction-trigger`.
    pub trigger: usize,
    /// `compaction.max-size-amplification-percent`.
    pub max_size_amplification_percent: i64,
    /// `compaction.size-ratio`.
    pub size_ratio: i64,
    /// The top level, `num-levels - 1`.
    pub max_level: i32,
}

/// What to compact: the first `runs` runs of the list, written to `output_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pick {
    pub runs: usize,
    pub output_level: i32,
}

/// Universal compaction (§5.2 steps 1-3); `None` when nothing is due.
pub(crate) fn pick_universal(runs: &[Run], options: &PickOptions) -> Option<Pick> {
    let n = runs.len();
    if n < options.trigger.max(1) {
        return None;
    }
    // 1. size amplification
    let newer: i64 = runs[..n - 1].iter().map(Run::size).sum();
    if newer * 100 > options.max_size_amplification_percent * runs[n - 1].size() {
        return Some(create_pick(runs, options.max_level, n));
    }
    // 2. size ratio
    if let Some(pick) = pick_for_size_ratio(runs, options, 1, false) {
        return Some(pick);
    }
    // 3. run count
    if n > options.trigger {
        return pick_for_size_ratio(runs, options, n - options.trigger + 1, true);
    }
    None
}

/// Lookup compaction, `lookup-compact = radical` (§5.4): the universal pick, else every
/// level-0 run forced up.
pub(crate) fn pick_force_level0(runs: &[Run], options: &PickOptions) -> Option<Pick> {
    if let Some(pick) = pick_universal(runs, options) {
        return Some(pick);
    }
    let level0 = runs.iter().take_while(|r| r.level == 0).count();
    if level0 == 0 {
        return None;
    }
    pick_for_size_ratio(runs, options, level0, true)
}

fn pick_for_size_ratio(runs: &[Run], options: &PickOptions, first: usize, force: bool) -> Option<Pick> {
    let mut count = first.min(runs.len());
    let mut size: i64 = runs[..count].iter().map(Run::size).sum();
    while count < runs.len() {
        let next = &runs[count];
        let test_applies = !((force || count >= 2) && next.level <= 1);
        if test_applies && (size as f64) * (100.0 + options.size_ratio as f64) / 100.0 < next.size() as f64 {
            break;
        }
        size += next.size();
        count += 1;
    }
    (force || count > 1).then(|| create_pick(runs, options.max_level, count))
}

/// The output level of the first `count` runs (§5.2): the top level when everything is
/// picked, else one below the next run's level, extended over level-0 runs.
fn create_pick(runs: &[Run], max_level: i32, mut count: usize) -> Pick {
    let mut output_level = if count == runs.len() {
        max_level
    } else {
        (runs[count].level - 1).max(0)
    };
    if output_level == 0 {
        while count < runs.len() {
            let next = &runs[count];
            count += 1;
            if next.level != 0 {
                output_level = next.level;
                break;
            }
        }
    }
    if count == runs.len() {
        output_level = max_level;
    }
    Pick {
        runs: count,
        output_level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DataFileMeta, FileKind, SimpleStats};

    fn entry(level: i32, size: i64, max_seq: i64) -> ManifestEntry {
        let stats = SimpleStats {
            min_values: vec![],
            max_values: vec![],
            null_counts: None,
        };
        ManifestEntry {
            kind: FileKind::Add,
            partition: vec![],
            bucket: 0,
            total_buckets: 1,
            file: DataFileMeta {
                file_name: format!("f-{level}-{max_seq}"),
                file_size: size,
                row_count: 1,
                min_key: vec![],
                max_key: vec![],
                key_stats: stats.clone(),
                value_stats: stats,
                min_sequence_number: max_seq,
                max_sequence_number: max_seq,
                schema_id: 0,
                level,
                extra_files: vec![],
                creation_time: None,
                delete_row_count: Some(0),
                embedded_index: None,
                file_source: Some(0),
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
            },
        }
    }

    fn options() -> PickOptions {
        PickOptions {
            trigger: 5,
            max_size_amplification_percent: 200,
            size_ratio: 1,
            max_level: 5,
        }
    }

    #[test]
    fn runs_are_newest_level0_first_then_levels() {
        let runs = sorted_runs(&[entry(5, 10, 1), entry(0, 10, 3), entry(0, 10, 7), entry(2, 10, 2)]);
        let shape: Vec<(i32, i64)> = runs
            .iter()
            .map(|r| (r.level, r.files[0].file.max_sequence_number))
            .collect();
        assert_eq!(shape, vec![(0, 7), (0, 3), (2, 2), (5, 1)]);
    }

    /// The seed trace of semantics.md §5.4.
    #[test]
    fn forced_level0_pick_follows_the_seed_trace() {
        let o = options();
        // write 1: a lone L0 run goes to the top level
        let runs = sorted_runs(&[entry(0, 100, 2)]);
        assert_eq!(
            pick_force_level0(&runs, &o),
            Some(Pick {
                runs: 1,
                output_level: 5
            })
        );
        // write 2: L0 smaller than L5 by more than 1% stops before it: level 4
        let runs = sorted_runs(&[entry(0, 90, 4), entry(5, 100, 2)]);
        assert_eq!(
            pick_force_level0(&runs, &o),
            Some(Pick {
                runs: 1,
                output_level: 4
            })
        );
        // write 3: level 3
        let runs = sorted_runs(&[entry(0, 80, 5), entry(4, 90, 4), entry(5, 100, 2)]);
        assert_eq!(
            pick_force_level0(&runs, &o),
            Some(Pick {
                runs: 1,
                output_level: 3
            })
        );
        // a large L0 absorbs the next run
        let runs = sorted_runs(&[entry(0, 200, 4), entry(5, 100, 2)]);
        assert_eq!(
            pick_force_level0(&runs, &o),
            Some(Pick {
                runs: 2,
                output_level: 5
            })
        );
    }

    #[test]
    fn universal_waits_for_the_trigger() {
        let o = options();
        let four: Vec<ManifestEntry> = (0..4).map(|i| entry(0, 10, i)).collect();
        assert_eq!(pick_universal(&sorted_runs(&four), &o), None);
        let five: Vec<ManifestEntry> = (0..5).map(|i| entry(0, 10, i)).collect();
        // equal sizes: size amplification (40 * 100 > 200 * 10) picks everything
        assert_eq!(
            pick_universal(&sorted_runs(&five), &o),
            Some(Pick {
                runs: 5,
                output_level: 5
            })
        );
        // five runs over a big top level: size ratio absorbs the level-0 runs, stops at L5
        let mut big = five.clone();
        big.push(entry(5, 10_000, 0));
        assert_eq!(
            pick_universal(&sorted_runs(&big), &o),
            Some(Pick {
                runs: 5,
                output_level: 4
            })
        );
    }
}
