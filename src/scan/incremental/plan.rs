//! Planning an incremental read: an [`IncrementalRange`] -> change splits, one per partition
//! and bucket.
//!
//! * delta / changelog: the ADD entries of each snapshot's delta or changelog manifests, in
//!   snapshot order then manifest order, so the files of a bucket are read in commit order.
//!   Which snapshots count follows Java's `IncrementalDeltaStartingScanner`: delta reads
//!   APPEND snapshots only, changelog every snapshot but OVERWRITE.
//! * diff: the batch-read splits of both snapshots (`plan_scan`), paired by bucket. A bucket
//!   whose files did not change between the two cannot differ and is skipped.
//!
//! Pruning by partition and key statistics applies as in batch reads; DataFusion re-applies
//! every filter above the scan.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use datafusion::common::{internal_err, Result, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use futures::{StreamExt, TryStreamExt};

use super::{ChangeMode, DiffEnds, IncrementalRange};
use crate::meta::{PartitionBucket, TableMeta};
use crate::scan::plan::ScanPlan;
use crate::scan::plan::{load_file_schemas, prune_files, pruning_predicate};
use crate::scan::row_selection::KeyRange;
use crate::scan::split::{Split, SplitFile};
use crate::scan::{plan_scan, PlanRequest};
use crate::spec::{
    paths, BinaryRow, DataField, FileKind, ManifestEntry, Snapshot, TableOptions, TableSchema,
};

/// Everything planning an incremental read needs.
pub(crate) struct IncrementalPlanRequest<'a> {
    pub(crate) meta: &'a TableMeta,
    /// The read schema (the latest one).
    pub(crate) schema: &'a TableSchema,
    pub(crate) options: &'a TableOptions,
    pub(crate) range: &'a IncrementalRange,
    /// Conjunction of pushed-down filters, for pruning only.
    pub(crate) predicate: Option<Arc<dyn PhysicalExpr>>,
    /// The merge keeps a key's record with the highest sequence number, whatever its values
    /// (deduplicate without `sequence.field` or `ignore-delete`): a diff may then read the end
    /// state as the start state plus the newer files (`newer_files_only`).
    pub(crate) newest_record_wins: bool,
}

/// What one change split reads.
#[derive(Debug, Clone)]
pub(crate) enum ChangeFiles {
    /// Delta or changelog files in commit order, read raw.
    Raw(Vec<SplitFile>),
    /// The sections of the bucket in the start state (empty when it did not exist) and in the
    /// end state.
    Diff {
        before: Vec<Vec<Vec<SplitFile>>>,
        after: Vec<Vec<Vec<SplitFile>>>,
        /// Only keys in this range can differ (`narrow_diff`).
        keys: Option<Arc<KeyRange>>,
        /// `after` holds only the files the end state adds to `before`, all newer than it: a
        /// key they lack is unchanged (`newer_files_only`).
        newer_only: bool,
    },
}

/// The changes of one partition and bucket.
#[derive(Debug, Clone)]
pub(crate) struct ChangeSplit {
    pub(crate) partition_path: String,
    pub(crate) bucket: i32,
    /// Directory of the bucket relative to the table root.
    pub(crate) bucket_dir: String,
    pub(crate) files: ChangeFiles,
}

impl ChangeSplit {
    /// Rows stored in the files read (to balance partitions).
    pub(crate) fn row_count(&self) -> i64 {
        match &self.files {
            ChangeFiles::Raw(files) => files.iter().map(|f| f.row_count).sum(),
            ChangeFiles::Diff { before, after, .. } => {
                let rows = |s: &Vec<Vec<Vec<SplitFile>>>| -> i64 {
                    s.iter().flatten().flatten().map(|f| f.row_count).sum()
                };
                rows(before) + rows(after)
            }
        }
    }

    /// `bucket-0: files=2` or, for a diff, `bucket-0 keys=[1, 4]: before_files=1 after_files=2`
    /// (the keys that can differ, where narrowed).
    pub(crate) fn summary(&self) -> String {
        let count = |s: &Vec<Vec<Vec<SplitFile>>>| s.iter().flatten().map(Vec::len).sum::<usize>();
        let files = match &self.files {
            ChangeFiles::Raw(files) => format!("files={}", files.len()),
            ChangeFiles::Diff {
                before,
                after,
                newer_only: false,
                ..
            } => format!("before_files={} after_files={}", count(before), count(after)),
            ChangeFiles::Diff { before, after, .. } => {
                format!("before_files={} newer_files={}", count(before), count(after))
            }
        };
        let keys = match &self.files {
            ChangeFiles::Diff { keys: Some(k), .. } => format!(" keys={}", k.display()),
            _ => String::new(),
        };
        format!("{}bucket-{}{keys}: {files}", self.partition_path, self.bucket)
    }
}

/// How many snapshots (with their manifests) are read concurrently.
const SNAPSHOT_READ_CONCURRENCY: usize = 8;

/// The splits of an incremental read plus every schema their files were written with.
pub(crate) struct IncrementalPlan {
    pub(crate) splits: Vec<ChangeSplit>,
    pub(crate) file_schemas: HashMap<i64, Arc<TableSchema>>,
}

/// Plans the splits of `req.range`.
pub(crate) async fn plan_incremental(req: IncrementalPlanRequest<'_>) -> Result<IncrementalPlan> {
    if req.range.empty {
        return Ok(IncrementalPlan {
            splits: vec![],
            file_schemas: HashMap::new(),
        });
    }
    match (&req.range.mode, &req.range.diff) {
        (ChangeMode::Diff, Some(ends)) => plan_diff(&req, ends).await,
        (ChangeMode::Diff, None) => internal_err!("A diff read without its two snapshots"),
        (mode, _) => plan_raw(&req, *mode).await,
    }
}

/// Whether a snapshot's files of `mode` belong to the changes.
fn counts(snapshot: &Snapshot, mode: ChangeMode) -> bool {
    match mode {
        ChangeMode::Delta => snapshot.commit_kind == "APPEND",
        _ => snapshot.commit_kind != "OVERWRITE",
    }
}

async fn plan_raw(req: &IncrementalPlanRequest<'_>, mode: ChangeMode) -> Result<IncrementalPlan> {
    let ids = (req.range.start + 1)..=req.range.end;
    // Snapshots and their manifests are read a few at a time, results in commit order.
    let per_snapshot: Vec<(Snapshot, Vec<ManifestEntry>)> = futures::stream::iter(ids)
        .map(|id| async move {
            // An expired snapshot's changes may live on as a long-lived changelog.
            let snapshot = req.meta.snapshot_or_changelog(id).await?;
            let entries = match (counts(&snapshot, mode), mode) {
                (false, _) => vec![],
                (true, ChangeMode::Delta) => req.meta.delta_entries(&snapshot).await?,
                (true, _) => req.meta.changelog_entries(&snapshot).await?,
            };
            Ok::<_, crate::Error>((snapshot, entries))
        })
        .buffered(SNAPSHOT_READ_CONCURRENCY)
        .try_collect()
        .await?;
    let mut groups: BTreeMap<PartitionBucket, Vec<ManifestEntry>> = BTreeMap::new();
    let mut added_by: HashMap<String, i64> = HashMap::new();
    for (snapshot, entries) in per_snapshot {
        for e in entries {
            if e.kind != FileKind::Add {
                let file = req.meta.io().display(&paths::snapshot_file(snapshot.id));
                return Err(crate::Error::corrupt(
                    &file,
                    format!("its {} manifests remove a file", mode.as_str()),
                )
                .into());
            }
            added_by.insert(e.file.file_name.clone(), snapshot.id);
            groups.entry((e.partition.clone(), e.bucket)).or_default().push(e);
        }
    }
    let pruning = pruning_predicate(req.schema, req.predicate.as_ref());
    let partition_types = req.schema.partition_types();
    let mut file_schemas = HashMap::new();
    let mut splits = Vec::new();
    for ((partition_bytes, bucket), entries) in &groups {
        if *bucket == -2 {
            // Postpone-bucket files have no bucket yet; batch reads skip them too.
            continue;
        }
        let partition = BinaryRow::decode(partition_bytes, &partition_types)?.values;
        let mut files: Vec<&ManifestEntry> = entries.iter().collect();
        load_file_schemas(req.meta, &files, &mut file_schemas).await?;
        if let Some(p) = &pruning {
            files = prune_files(p, req.schema, &partition, files, &file_schemas)?;
        }
        if files.is_empty() {
            continue;
        }
        let partition_path = paths::partition_path(
            &req.schema.partition_keys,
            &partition,
            &req.options.partition_default_name,
        );
        let raw = files
            .iter()
            .map(|e| {
                let mut file = SplitFile::new(&e.file, req.schema, &file_schemas)?;
                file.snapshot_id = added_by.get(&e.file.file_name).copied();
                Ok(file)
            })
            .collect::<Result<Vec<_>>>()?;
        splits.push(ChangeSplit {
            bucket_dir: paths::bucket_path(
                req.options.data_file_path_directory.as_deref(),
                &partition_path,
                *bucket,
            ),
            partition_path,
            bucket: *bucket,
            files: ChangeFiles::Raw(raw),
        });
    }
    Ok(IncrementalPlan { splits, file_schemas })
}

async fn plan_diff(req: &IncrementalPlanRequest<'_>, ends: &DiffEnds) -> Result<IncrementalPlan> {
    let end = batch_plan(req, &ends.end).await?;
    let mut file_schemas = end.file_schemas;
    let mut before: HashMap<String, Split> = HashMap::new();
    if let Some(start) = &ends.start {
        let plan = batch_plan(req, start).await?;
        file_schemas.extend(plan.file_schemas);
        before = plan
            .splits
            .into_iter()
            .map(|s| (s.bucket_dir.clone(), s))
            .collect();
    }
    let first_key = req.schema.trimmed_primary_keys().first().map(|f| (*f).clone());
    let mut splits = Vec::new();
    for after in end.splits {
        let old = before.remove(&after.bucket_dir);
        let old_sections = old.map(|s| s.sections).unwrap_or_default();
        if same_files(&old_sections, &after.sections) {
            continue;
        }
        let (old_sections, new_sections, keys) =
            narrow_diff(old_sections, after.sections, first_key.as_ref());
        let (new_sections, newer_only) = match req.newest_record_wins {
            true => newer_files_only(&old_sections, new_sections),
            false => (new_sections, false),
        };
        splits.push(ChangeSplit {
            partition_path: after.partition_path,
            bucket: after.bucket,
            bucket_dir: after.bucket_dir,
            files: ChangeFiles::Diff {
                before: old_sections,
                after: new_sections,
                keys,
                newer_only,
            },
        });
    }
    // Buckets that exist only in the start state: every key there was removed.
    let mut gone: Vec<Split> = before.into_values().collect();
    gone.sort_by(|a, b| a.bucket_dir.cmp(&b.bucket_dir));
    for old in gone {
        splits.push(diff_split(
            old.partition_path,
            old.bucket,
            old.bucket_dir,
            old.sections,
            vec![],
        ));
    }
    Ok(IncrementalPlan { splits, file_schemas })
}

async fn batch_plan(req: &IncrementalPlanRequest<'_>, snapshot: &Snapshot) -> Result<ScanPlan> {
    plan_scan(PlanRequest {
        meta: req.meta,
        snapshot,
        schema: req.schema,
        options: req.options,
        predicate: req.predicate.clone(),
        read_optimized: false,
        skip_partitions: None,
    })
    .await
}

fn diff_split(
    partition_path: String,
    bucket: i32,
    bucket_dir: String,
    before: Vec<Vec<Vec<SplitFile>>>,
    after: Vec<Vec<Vec<SplitFile>>>,
) -> ChangeSplit {
    ChangeSplit {
        partition_path,
        bucket,
        bucket_dir,
        files: ChangeFiles::Diff {
            before,
            after,
            keys: None,
            newer_only: false,
        },
    }
}

type Sections = Vec<Vec<Vec<SplitFile>>>;

/// Narrows the diff of one bucket to what can differ. A key's state depends only on the files
/// holding it, so
/// * a section made of the same files in both states (sections never share keys) holds the
///   same rows in both and is dropped from both;
/// * any other key that only common files hold cannot differ either: the rest is read only
///   within the first-key range of the files in one state but not the other (pages outside it
///   are skipped).
fn narrow_diff(
    before: Sections,
    after: Sections,
    first_key: Option<&DataField>,
) -> (Sections, Sections, Option<Arc<KeyRange>>) {
    fn names(section: &[Vec<SplitFile>]) -> Vec<String> {
        let mut n: Vec<String> = section.iter().flatten().map(file_identity).collect();
        n.sort_unstable();
        n
    }
    let before_sets: HashSet<Vec<String>> = before.iter().map(|s| names(s)).collect();
    let after_sets: HashSet<Vec<String>> = after.iter().map(|s| names(s)).collect();
    let before: Sections = before
        .into_iter()
        .filter(|s| !after_sets.contains(&names(s)))
        .collect();
    let after: Sections = after
        .into_iter()
        .filter(|s| !before_sets.contains(&names(s)))
        .collect();
    let Some(key) = first_key else {
        return (before, after, None);
    };
    let in_before: HashSet<String> = before.iter().flatten().flatten().map(file_identity).collect();
    let in_after: HashSet<String> = after.iter().flatten().flatten().map(file_identity).collect();
    let changed = before
        .iter()
        .flatten()
        .flatten()
        .filter(|f| !in_after.contains(&file_identity(f)))
        .chain(
            after
                .iter()
                .flatten()
                .flatten()
                .filter(|f| !in_before.contains(&file_identity(f))),
        );
    let (mut lower, mut upper): (Option<ScalarValue>, Option<ScalarValue>) = (None, None);
    for f in changed {
        let (Some(min), Some(max)) = (f.min_key.first(), f.max_key.first()) else {
            return (before, after, None);
        };
        if min.is_null() || max.is_null() {
            return (before, after, None);
        }
        if lower
            .as_ref()
            .is_none_or(|l| min.partial_cmp(l).is_some_and(|o| o.is_lt()))
        {
            lower = Some(min.clone());
        }
        if upper
            .as_ref()
            .is_none_or(|u| max.partial_cmp(u).is_some_and(|o| o.is_gt()))
        {
            upper = Some(max.clone());
        }
    }
    let keys = lower.map(|lower| {
        Arc::new(KeyRange {
            field_id: key.id,
            key_type: key.data_type.to_arrow(),
            lower: Some(lower),
            upper,
            upper_inclusive: true,
        })
    });
    (before, after, keys)
}

/// The end state's files that the start state lacks, when that is all a diff needs to read of
/// the end state: every file of `before` is in `after` (with the same deletion vector), and
/// every other file of `after` holds only sequence numbers above all of `before`'s. Under a
/// merge where the newest record wins, a key those newer files hold then ends as their newest
/// record, and any other key is unchanged, so the end state's common files need not be read
/// again. Returns `after` unchanged and `false` when that does not hold.
fn newer_files_only(before: &Sections, after: Sections) -> (Sections, bool) {
    let in_before: HashSet<String> = before.iter().flatten().flatten().map(file_identity).collect();
    let in_after: HashSet<String> = after.iter().flatten().flatten().map(file_identity).collect();
    if !in_before.is_subset(&in_after) {
        return (after, false);
    }
    let newest_before = before
        .iter()
        .flatten()
        .flatten()
        .map(|f| f.max_sequence_number)
        .max()
        .unwrap_or(i64::MIN);
    let is_newer = |f: &SplitFile| !in_before.contains(&file_identity(f));
    let all_later = after
        .iter()
        .flatten()
        .flatten()
        .filter(|f| is_newer(f))
        .all(|f| f.min_sequence_number > newest_before);
    if !all_later {
        return (after, false);
    }
    let newer: Sections = after
        .into_iter()
        .map(|section| {
            section
                .into_iter()
                .map(|run| run.into_iter().filter(|f| is_newer(f)).collect::<Vec<_>>())
                .filter(|run| !run.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|section| !section.is_empty())
        .collect();
    (newer, true)
}

/// A file as one state reads it: its name plus its deletion vector, if any (a file keeps its
/// name when compaction marks more of its rows deleted).
fn file_identity(f: &SplitFile) -> String {
    match &f.deletion {
        Some(dv) => format!("{}#{}@{}", f.file_name, dv.index_path, dv.offset),
        None => f.file_name.clone(),
    }
}

/// Whether two bucket states consist of the same files with the same deletion vectors (files
/// are immutable).
fn same_files(a: &[Vec<Vec<SplitFile>>], b: &[Vec<Vec<SplitFile>>]) -> bool {
    fn names(s: &[Vec<Vec<SplitFile>>]) -> Vec<String> {
        let mut n: Vec<String> = s.iter().flatten().flatten().map(file_identity).collect();
        n.sort_unstable();
        n
    }
    names(a) == names(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(kind: &str) -> Snapshot {
        Snapshot {
            version: Some(3),
            id: 1,
            schema_id: 0,
            base_manifest_list: String::new(),
            delta_manifest_list: String::new(),
            changelog_manifest_list: None,
            index_manifest: None,
            commit_user: String::new(),
            commit_identifier: 0,
            commit_kind: kind.to_string(),
            time_millis: 0,
            total_record_count: None,
            delta_record_count: None,
            changelog_record_count: None,
            watermark: None,
            statistics: None,
            next_row_id: None,
            operation: None,
            writer_version: None,
        }
    }

    /// semantics.md §7.2: delta reads APPEND snapshots only; changelog APPEND and COMPACT
    /// (lookup and full-compaction changelogs are committed with COMPACT snapshots, §5.6).
    #[test]
    fn which_snapshots_count() {
        let kinds = ["APPEND", "COMPACT", "OVERWRITE", "ANALYZE"];
        let delta: Vec<bool> = kinds
            .iter()
            .map(|k| counts(&snapshot(k), ChangeMode::Delta))
            .collect();
        assert_eq!(delta, [true, false, false, false]);
        let changelog: Vec<bool> = kinds
            .iter()
            .map(|k| counts(&snapshot(k), ChangeMode::Changelog))
            .collect();
        assert_eq!(changelog, [true, true, false, true]);
    }

    fn file(name: &str, seqs: (i64, i64)) -> SplitFile {
        SplitFile::with_sequences(name, seqs.0, seqs.1)
    }

    fn names(sections: &Sections) -> Vec<Vec<Vec<&str>>> {
        sections
            .iter()
            .map(|s| {
                s.iter()
                    .map(|r| r.iter().map(|f| f.file_name.as_str()).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_diff_reads_only_the_newer_files_when_they_are_all_that_changed() {
        let old = file("old", (0, 9));
        let before: Sections = vec![vec![vec![old.clone()]]];
        // Section 1: the old file and a newer run; section 2: a newer file alone.
        let after: Sections = vec![
            vec![vec![old.clone()], vec![file("new1", (10, 12))]],
            vec![vec![file("new2", (13, 13))]],
        ];
        let (newer, only) = newer_files_only(&before, after.clone());
        assert!(only);
        assert_eq!(names(&newer), vec![vec![vec!["new1"]], vec![vec!["new2"]]]);

        // A file of the start state that the end state dropped (compaction): both states read.
        let compacted: Sections = vec![vec![vec![file("merged", (0, 12))]]];
        let (same, only) = newer_files_only(&before, compacted.clone());
        assert!(!only);
        assert_eq!(names(&same), names(&compacted));

        // A new file with a sequence number not above the start state's (another writer).
        let overlapping: Sections = vec![vec![vec![old.clone()], vec![file("late", (9, 20))]]];
        assert!(!newer_files_only(&before, overlapping).1);

        // The same file with a new deletion vector holds other rows.
        let mut marked = old.clone();
        marked.deletion = Some(crate::deletion_vector::DvRef {
            index_path: "index-1".into(),
            index_file_size: 20,
            offset: 4,
            length: 10,
            cardinality: Some(1),
        });
        let remarked: Sections = vec![vec![vec![marked], vec![file("new1", (10, 12))]]];
        assert!(!newer_files_only(&before, remarked).1);
    }
}
