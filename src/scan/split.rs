//! Splits: the files of one (partition, bucket), arranged into sections of sorted runs.
//!
//! Sections never share keys, so each is read independently; a section with one sorted run
//! needs no merge (semantics.md §4.3, Java `IntervalPartition`).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

use datafusion::common::{Result, ScalarValue};

use super::row_selection::KeyRange;
use crate::deletion_vector::DvRef;
use crate::merge::NewerKeys;
use crate::spec::{BinaryRow, DataFileMeta, DataType, TableSchema};

/// One data file of a split with its decoded key range.
#[derive(Debug, Clone)]
pub(crate) struct SplitFile {
    pub(crate) file_name: String,
    pub(crate) file_size: u64,
    pub(crate) schema_id: i64,
    pub(crate) row_count: i64,
    pub(crate) min_key: Vec<ScalarValue>,
    pub(crate) max_key: Vec<ScalarValue>,
    pub(crate) external_path: Option<String>,
    /// LSM level of the file.
    pub(crate) level: i32,
    /// Smallest `_SEQUENCE_NUMBER` in the file.
    pub(crate) min_sequence_number: i64,
    /// Largest `_SEQUENCE_NUMBER` in the file.
    pub(crate) max_sequence_number: i64,
    /// Rows of the file deleted by a deletion vector.
    pub(crate) deletion: Option<DvRef>,
    /// The snapshot that added the file (incremental reads only).
    pub(crate) snapshot_id: Option<i64>,
    /// Only these rows of the file, by position: a piece of a big single-run section
    /// (`parallel::row_pieces`); `None` reads the whole file.
    pub(crate) rows: Option<Range<usize>>,
    /// Row tracking: the row id of the file's first row (`_FIRST_ROW_ID`).
    pub(crate) first_row_id: Option<i64>,
    /// The columns the file holds, named as in its schema (`_WRITE_COLS`; `None`: all).
    pub(crate) write_cols: Option<Arc<[String]>>,
}

#[cfg(test)]
impl SplitFile {
    /// A one-row level-0 file named `name` holding sequence numbers `min..=max`, for tests
    /// of planning decisions that look at names and sequence ranges only.
    pub(crate) fn with_sequences(name: &str, min: i64, max: i64) -> SplitFile {
        SplitFile {
            file_name: name.into(),
            file_size: 1,
            schema_id: 0,
            row_count: 1,
            min_key: vec![],
            max_key: vec![],
            external_path: None,
            level: 0,
            min_sequence_number: min,
            max_sequence_number: max,
            deletion: None,
            snapshot_id: None,
            rows: None,
            first_row_id: None,
            write_cols: None,
        }
    }
}

impl SplitFile {
    /// Rows this split reads of the file (before deletion vectors).
    pub(crate) fn rows_read(&self) -> i64 {
        match &self.rows {
            Some(rows) => rows.len() as i64,
            None => self.row_count,
        }
    }

    pub(crate) fn new(
        file: &DataFileMeta,
        _read_schema: &TableSchema,
        schemas: &HashMap<i64, Arc<TableSchema>>,
    ) -> Result<Self> {
        let key_types: Vec<DataType> = schemas
            .get(&file.schema_id)
            .map(|s| {
                s.trimmed_primary_keys()
                    .iter()
                    .map(|f| f.data_type.clone())
                    .collect()
            })
            .unwrap_or_default();
        let decode = |bytes: &[u8]| -> Result<Vec<ScalarValue>> {
            if key_types.is_empty() {
                return Ok(vec![]);
            }
            Ok(BinaryRow::decode(bytes, &key_types)
                .map_err(|e| datafusion::common::DataFusionError::External(Box::new(e)))?
                .values)
        };
        Ok(SplitFile {
            file_name: file.file_name.clone(),
            file_size: file.file_size.max(0) as u64,
            schema_id: file.schema_id,
            row_count: file.row_count,
            min_key: decode(&file.min_key)?,
            max_key: decode(&file.max_key)?,
            external_path: file.external_path.clone(),
            level: file.level,
            min_sequence_number: file.min_sequence_number,
            max_sequence_number: file.max_sequence_number,
            deletion: None,
            snapshot_id: None,
            rows: None,
            first_row_id: file.first_row_id,
            write_cols: file.write_cols.as_deref().map(Arc::from),
        })
    }
}

/// The sequence numbers the files of one sorted run hold, lowest to highest.
pub(crate) fn run_sequences(files: &[SplitFile]) -> RangeInclusive<i64> {
    let min = files.iter().map(|f| f.min_sequence_number).min();
    let max = files.iter().map(|f| f.max_sequence_number).max();
    min.unwrap_or(i64::MIN)..=max.unwrap_or(i64::MIN)
}

/// Files of one partition and bucket.
#[derive(Debug, Clone)]
pub(crate) struct Split {
    pub(crate) partition_path: String,
    pub(crate) bucket: i32,
    /// The bucket count of the files' partition when they were written (a rescaled partition
    /// differs from the table's `bucket`); -1 for dynamic and postpone buckets.
    pub(crate) total_buckets: i32,
    /// Directory of the bucket relative to the table root.
    pub(crate) bucket_dir: String,
    /// Sections -> sorted runs -> files (in key order within a run).
    pub(crate) sections: Vec<Vec<Vec<SplitFile>>>,
    /// Only these keys of the sections (one of several partitions of a bucket, see
    /// `super::parallel`).
    pub(crate) key_range: Option<Arc<KeyRange>>,
    /// Rows expected in `key_range` (from row-group statistics), where narrowed.
    pub(crate) rows_estimate: Option<i64>,
    /// The rows of its one section this split reads, as positions in the section's run, when
    /// it is a piece of a big single-run section (`parallel::row_pieces`); for `EXPLAIN`.
    pub(crate) row_piece: Option<Range<i64>>,
    /// How this piece reads the newer runs when it is cut over a dense oldest run.
    pub(crate) newer_runs: NewerRuns,
}

/// How a piece of a section cut over a dense oldest run (`parallel`, read by
/// `merge::newest_over_dense_base`) reads the runs newer than it. The oldest run, unless the
/// piece holds none of it (`Only`), is read in the piece's key range.
#[derive(Debug, Clone, Default)]
pub(crate) enum NewerRuns {
    /// In the piece's key range, like every other run (any other piece).
    #[default]
    InRange,
    /// Whole, every key: this piece outputs every survivor of the newer runs, so the other
    /// pieces need only their keys, which it marks on the section's board as it goes.
    Whole(Arc<NewerKeys>),
    /// In the piece's key range, the key column only, and only where the board does not have
    /// them yet: they mask the oldest run, and another piece outputs them.
    KeysOnly(Arc<NewerKeys>),
    /// As `Whole`, by a piece that holds no row of the oldest run: its section is the newer
    /// runs alone, and the other pieces read all of the oldest run.
    Only(Arc<NewerKeys>),
}

impl Split {
    pub(crate) fn file_count(&self) -> usize {
        self.sections.iter().flatten().map(Vec::len).sum()
    }

    pub(crate) fn run_count(&self) -> usize {
        self.sections.iter().map(Vec::len).sum()
    }

    pub(crate) fn row_count(&self) -> i64 {
        if let Some(rows) = self.rows_estimate {
            return rows;
        }
        self.sections
            .iter()
            .flatten()
            .flatten()
            .map(SplitFile::rows_read)
            .sum()
    }
}

fn cmp_keys(a: &[ScalarValue], b: &[ScalarValue]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.partial_cmp(y).unwrap_or(Ordering::Equal) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// One section whose runs are the LSM runs themselves: each level-0 file, then each level
/// ≥ 1, oldest data first (`[Lmax, …, L1, L0 oldest … L0 newest]`). Lookup-mode reads need it:
/// they merge only the newest high-level record of a key with its level-0 records
/// (semantics.md §3.4), so every run must belong to one level.
pub(crate) fn level_runs(mut files: Vec<SplitFile>) -> Vec<Vec<Vec<SplitFile>>> {
    files.sort_by(|a, b| cmp_keys(&a.min_key, &b.min_key));
    let mut levels: Vec<i32> = files.iter().map(|f| f.level).filter(|l| *l > 0).collect();
    levels.sort_unstable_by(|a, b| b.cmp(a));
    levels.dedup();
    let mut runs: Vec<Vec<SplitFile>> = levels
        .iter()
        .map(|&level| files.iter().filter(|f| f.level == level).cloned().collect())
        .collect();
    let mut level0: Vec<&SplitFile> = files.iter().filter(|f| f.level == 0).collect();
    level0.sort_by_key(|f| f.max_sequence_number);
    runs.extend(level0.into_iter().map(|f| vec![f.clone()]));
    vec![runs]
}

/// `sections` as sections that never share keys and come in key order: as they are when they
/// already do, else one section of all their runs (deletion-vector reads make every file its
/// own section, and those overlap). Readers that need one key-ordered state (diffs) use it.
pub(crate) fn key_ordered_sections(sections: Vec<Vec<Vec<SplitFile>>>) -> Vec<Vec<Vec<SplitFile>>> {
    let bounds = |s: &Vec<Vec<SplitFile>>| {
        let files = || s.iter().flatten();
        let min = files().map(|f| &f.min_key).min_by(|a, b| cmp_keys(a, b));
        let max = files().map(|f| &f.max_key).max_by(|a, b| cmp_keys(a, b));
        (min.cloned(), max.cloned())
    };
    let ordered = sections
        .windows(2)
        .all(|w| match (bounds(&w[0]).1, bounds(&w[1]).0) {
            (Some(max), Some(next_min)) => !max.is_empty() && cmp_keys(&max, &next_min) == Ordering::Less,
            _ => false,
        });
    if ordered {
        return sections;
    }
    vec![sections.into_iter().flatten().collect()]
}

/// Groups files into sections of overlapping key ranges, then packs each section into the
/// fewest sorted runs (greedy, as Java's `IntervalPartition`).
pub(crate) fn build_sections(mut files: Vec<SplitFile>) -> Vec<Vec<Vec<SplitFile>>> {
    files.sort_by(|a, b| cmp_keys(&a.min_key, &b.min_key).then_with(|| cmp_keys(&a.max_key, &b.max_key)));
    let mut sections: Vec<Vec<SplitFile>> = Vec::new();
    let mut bound: Option<Vec<ScalarValue>> = None;
    for f in files {
        let starts_new = match &bound {
            None => true,
            Some(b) => cmp_keys(&f.min_key, b) == Ordering::Greater,
        };
        if starts_new {
            bound = Some(f.max_key.clone());
            sections.push(vec![f]);
        } else {
            if let Some(b) = &bound {
                if cmp_keys(&f.max_key, b) == Ordering::Greater {
                    bound = Some(f.max_key.clone());
                }
            }
            sections.last_mut().expect("a section was opened").push(f);
        }
    }
    sections.into_iter().map(pack_runs).collect()
}

/// Packs the files of one section (sorted by min key) into sorted runs.
fn pack_runs(files: Vec<SplitFile>) -> Vec<Vec<SplitFile>> {
    let mut runs: Vec<Vec<SplitFile>> = Vec::new();
    for f in files {
        // The run whose last max key is smallest, if it ends before this file starts.
        let best = runs
            .iter_mut()
            .filter(|r| {
                cmp_keys(&r.last().expect("runs are non-empty").max_key, &f.min_key) == Ordering::Less
            })
            .min_by(|a, b| {
                cmp_keys(
                    &a.last().expect("non-empty").max_key,
                    &b.last().expect("non-empty").max_key,
                )
            });
        match best {
            Some(run) => run.push(f),
            None => runs.push(vec![f]),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, min: i32, max: i32) -> SplitFile {
        SplitFile {
            deletion: None,
            snapshot_id: None,
            rows: None,
            file_name: name.into(),
            file_size: 1,
            schema_id: 0,
            row_count: 1,
            min_key: vec![ScalarValue::Int32(Some(min))],
            max_key: vec![ScalarValue::Int32(Some(max))],
            external_path: None,
            level: 0,
            min_sequence_number: 0,
            max_sequence_number: 0,
            first_row_id: None,
            write_cols: None,
        }
    }

    fn names(sections: &[Vec<Vec<SplitFile>>]) -> Vec<Vec<Vec<String>>> {
        sections
            .iter()
            .map(|s| {
                s.iter()
                    .map(|r| r.iter().map(|f| f.file_name.clone()).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn sections_split_on_gaps_and_pack_runs() {
        let files = vec![
            file("a", 1, 10),
            file("b", 5, 8),
            file("c", 11, 20),
            file("d", 30, 40),
            file("e", 9, 12),
        ];
        let s = build_sections(files);
        // a, b, e, c overlap transitively; d stands alone.
        assert_eq!(
            names(&s),
            vec![vec![vec!["a", "c"], vec!["b", "e"]], vec![vec!["d"]]]
                .into_iter()
                .map(|s| s
                    .into_iter()
                    .map(|r| r.into_iter().map(String::from).collect())
                    .collect())
                .collect::<Vec<Vec<Vec<String>>>>()
        );
    }

    #[test]
    fn disjoint_files_form_single_runs() {
        let s = build_sections(vec![file("x", 1, 2), file("y", 3, 4)]);
        assert_eq!(s.len(), 2);
        assert!(s.iter().all(|sec| sec.len() == 1));
    }
}
