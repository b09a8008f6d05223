//! Merging small manifests at commit, as Java Paimon does on every commit (format.md §4.7), so
//! the base manifest list of a table that receives many small commits stays short and a scan
//! reads a bounded number of manifests.
//!
//! ```text
//! previous base ++ delta manifests
//!   ├─ must-change (has DELETEs or < manifest.target-file-size) ≥ full-compaction threshold,
//!   │  or at least half their entries dead once this commit's DELETEs count (a DELETE and the
//!   │  ADD it cancels; ours, see below):
//!   │     full: rewrite every manifest that holds a deleted file, drop every DELETE
//!   └─ else minor: walk in order, merge each run reaching the target size, and the trailing run
//!         only when it has ≥ manifest.merge-min-count manifests
//! merging = replay ADD/DELETE (§4.5): a DELETE cancels its ADD; a DELETE whose ADD is outside
//!           the merged manifests is kept
//! ```
//!
//! The dead-entries trigger is ours, not Java's: after a compaction most entries of the earlier
//! manifests are deleted files, and every cold read fetches and replays them until the
//! manifests reach Java's size or count thresholds. Merging once half the entries are dead
//! costs a rewrite of the live entries each time as many entries died as live ones remain
//! (amortized, as an LSM compaction is), and a cold read then fetches a manifest or two. The
//! commit whose DELETEs kill them (a compaction) merges the earlier manifests into one already
//! (its DELETEs go to its delta, so the ADDs they cancel stay in that base until the next
//! commit drops both). The result is the same base list any Paimon reader reads.
//!
//! New manifests are written before the snapshot; the caller deletes them if the commit fails.
//! The merged-away manifests stay on disk: older snapshots and tags still reference them until
//! expiration removes them.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::TableMeta;
use crate::error::{Error, Result};
use crate::spec::{parse_memory_size, DataType, FileKind, ManifestEntry, ManifestFileMeta};

/// The manifest-merge options of a table (Paimon's defaults).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ManifestMergeOptions {
    /// `manifest.target-file-size` (8 MiB).
    pub(crate) target_size: u64,
    /// `manifest.merge-min-count` (30).
    pub(crate) min_count: usize,
    /// `manifest.full-compaction-threshold-size` (16 MiB).
    pub(crate) full_threshold: u64,
}

impl ManifestMergeOptions {
    pub(crate) fn parse(options: &BTreeMap<String, String>) -> Result<Self> {
        let size = |key: &str, default: u64| -> Result<u64> {
            match options.get(key) {
                None => Ok(default),
                Some(v) => parse_memory_size(v)
                    .map(|n| n as u64)
                    .ok_or_else(|| Error::InvalidOption {
                        key: key.into(),
                        value: v.clone(),
                        reason: "expected a memory size such as '8 mb'".into(),
                    }),
            }
        };
        let min_count = match options.get("manifest.merge-min-count") {
            None => 30,
            Some(v) => v.trim().parse::<usize>().map_err(|_| Error::InvalidOption {
                key: "manifest.merge-min-count".into(),
                value: v.clone(),
                reason: "expected a non-negative integer".into(),
            })?,
        };
        Ok(ManifestMergeOptions {
            target_size: size("manifest.target-file-size", 8 << 20)?.max(1),
            min_count: min_count.max(1),
            full_threshold: size("manifest.full-compaction-threshold-size", 16 << 20)?,
        })
    }
}

/// Where merged manifests are written and recorded.
pub(super) struct MergeTarget<'a> {
    pub(super) schema_id: i64,
    pub(super) partition_types: &'a [DataType],
    /// Names of files written, for clean-up if the commit fails.
    pub(super) written: &'a mut Vec<String>,
}

type Identity = (Vec<u8>, i32, i32, String, Vec<String>, Option<String>);

impl TableMeta {
    /// The new base manifest list for `inputs` (the previous snapshot's base ++ delta), under a
    /// commit whose delta deletes `deleting` files.
    pub(super) async fn merge_manifests(
        &self,
        inputs: Vec<ManifestFileMeta>,
        deleting: usize,
        options: ManifestMergeOptions,
        target: &mut MergeTarget<'_>,
    ) -> Result<Vec<ManifestFileMeta>> {
        let must_change = |m: &ManifestFileMeta| {
            m.num_deleted_files > 0 || (m.file_size.max(0) as u64) < options.target_size
        };
        let must_change_size: u64 = inputs
            .iter()
            .filter(|m| must_change(m))
            .map(|m| m.file_size.max(0) as u64)
            .sum();
        let added: i64 = inputs.iter().map(|m| m.num_added_files).sum();
        let deleted_before: i64 = inputs.iter().map(|m| m.num_deleted_files).sum();
        let deleted = deleted_before + deleting as i64;
        // dead = a DELETE and its ADD (2 * deleted) against live = added - deleted; a merge of
        // manifests that all stay (none small, none with a DELETE) would change nothing
        let mostly_dead = deleted > 0 && 3 * deleted >= added && (deleted_before > 0 || must_change_size > 0);
        if inputs.len() > 1 && (must_change_size >= options.full_threshold || mostly_dead) {
            return self.full_merge(inputs, options, target, must_change).await;
        }
        self.minor_merge(inputs, options, target).await
    }

    /// Merges consecutive runs of manifests that reach the target size, and the trailing run
    /// when it has at least `min_count` manifests.
    async fn minor_merge(
        &self,
        inputs: Vec<ManifestFileMeta>,
        options: ManifestMergeOptions,
        target: &mut MergeTarget<'_>,
    ) -> Result<Vec<ManifestFileMeta>> {
        let mut result = Vec::with_capacity(inputs.len());
        let mut run: Vec<ManifestFileMeta> = Vec::new();
        let mut run_size = 0u64;
        for meta in inputs {
            run_size += meta.file_size.max(0) as u64;
            run.push(meta);
            if run_size >= options.target_size {
                result.extend(
                    self.merge_run(std::mem::take(&mut run), options, target, false)
                        .await?,
                );
                run_size = 0;
            }
        }
        if run.len() >= options.min_count {
            result.extend(self.merge_run(run, options, target, false).await?);
        } else {
            result.extend(run);
        }
        Ok(result)
    }

    /// Rewrites every manifest that must change or holds a deleted file; keeps the others.
    async fn full_merge(
        &self,
        inputs: Vec<ManifestFileMeta>,
        options: ManifestMergeOptions,
        target: &mut MergeTarget<'_>,
        must_change: impl Fn(&ManifestFileMeta) -> bool,
    ) -> Result<Vec<ManifestFileMeta>> {
        let contents = self.read_manifests(&inputs).await?;
        let deleted: HashSet<Identity> = contents
            .iter()
            .flatten()
            .filter(|e| e.kind == FileKind::Delete)
            .map(ManifestEntry::identity)
            .collect();
        let mut kept = Vec::new();
        let mut rewrite = Vec::new();
        for (meta, entries) in inputs.into_iter().zip(contents) {
            let touched = entries
                .iter()
                .any(|e| e.kind == FileKind::Add && deleted.contains(&e.identity()));
            if must_change(&meta) || touched {
                rewrite.extend(entries);
            } else {
                kept.push(meta);
            }
        }
        let survivors = replay(rewrite, true);
        kept.extend(self.write_rolled(&survivors, options, target).await?);
        Ok(kept)
    }

    /// One merged run: a single manifest is kept as it is.
    async fn merge_run(
        &self,
        run: Vec<ManifestFileMeta>,
        options: ManifestMergeOptions,
        target: &mut MergeTarget<'_>,
        drop_deletes: bool,
    ) -> Result<Vec<ManifestFileMeta>> {
        if run.len() <= 1 {
            return Ok(run);
        }
        let entries = self.read_manifests(&run).await?.into_iter().flatten().collect();
        let survivors = replay(entries, drop_deletes);
        self.write_rolled(&survivors, options, target).await
    }

    /// Writes `entries` as manifests of about the target size.
    async fn write_rolled(
        &self,
        entries: &[ManifestEntry],
        options: ManifestMergeOptions,
        target: &mut MergeTarget<'_>,
    ) -> Result<Vec<ManifestFileMeta>> {
        if entries.is_empty() {
            return Ok(vec![]);
        }
        // Entries are similar in size: write one manifest, then split if it came out too big.
        let first = self
            .write_manifest(entries, target.schema_id, target.partition_types)
            .await?;
        target.written.push(first.file_name.clone());
        let size = first.file_size.max(1) as u64;
        if size <= options.target_size {
            return Ok(vec![first]);
        }
        let _ = self
            .io
            .delete(&crate::spec::paths::manifest_file(&first.file_name))
            .await;
        let per_file = ((entries.len() as u64 * options.target_size) / size).max(1) as usize;
        let mut metas = Vec::new();
        for chunk in entries.chunks(per_file) {
            let meta = self
                .write_manifest(chunk, target.schema_id, target.partition_types)
                .await?;
            target.written.push(meta.file_name.clone());
            metas.push(meta);
        }
        Ok(metas)
    }
}

/// Replays entries in order (format.md §4.5): an ADD followed by its DELETE cancels; a DELETE
/// whose ADD is not among `entries` is kept unless `drop_deletes`. Survivors keep their order.
fn replay(entries: Vec<ManifestEntry>, drop_deletes: bool) -> Vec<ManifestEntry> {
    let mut slots: Vec<Option<ManifestEntry>> = Vec::with_capacity(entries.len());
    let mut added: HashMap<Identity, usize> = HashMap::new();
    for e in entries {
        let id = e.identity();
        match e.kind {
            FileKind::Add => {
                added.insert(id, slots.len());
                slots.push(Some(e));
            }
            FileKind::Delete => match added.remove(&id) {
                Some(slot) => slots[slot] = None,
                None if drop_deletes => {}
                None => slots.push(Some(e)),
            },
        }
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DataFileMeta, SimpleStats};

    fn entry(kind: FileKind, name: &str, level: i32) -> ManifestEntry {
        let stats = SimpleStats {
            min_values: vec![],
            max_values: vec![],
            null_counts: None,
        };
        let file = DataFileMeta {
            file_name: name.into(),
            file_size: 1,
            row_count: 1,
            min_key: vec![],
            max_key: vec![],
            key_stats: stats.clone(),
            value_stats: stats,
            min_sequence_number: 0,
            max_sequence_number: 0,
            schema_id: 0,
            level,
            extra_files: vec![],
            creation_time: None,
            delete_row_count: None,
            embedded_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
        };
        ManifestEntry {
            kind,
            partition: vec![],
            bucket: 0,
            total_buckets: 1,
            file,
        }
    }

    fn names(entries: &[ManifestEntry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| format!("{:?} {}@{}", e.kind, e.file.file_name, e.file.level))
            .collect()
    }

    #[test]
    fn deletes_cancel_their_adds_and_unmatched_deletes_stay() {
        let entries = vec![
            entry(FileKind::Add, "a", 0),
            entry(FileKind::Add, "b", 0),
            entry(FileKind::Delete, "a", 0),
            entry(FileKind::Add, "a", 5), // the same file upgraded: another identity
            entry(FileKind::Delete, "x", 0),
        ];
        assert_eq!(
            names(&replay(entries.clone(), false)),
            vec!["Add b@0", "Add a@5", "Delete x@0"]
        );
        assert_eq!(names(&replay(entries, true)), vec!["Add b@0", "Add a@5"]);
    }

    #[test]
    fn options_default_to_paimons() {
        let o = ManifestMergeOptions::parse(&BTreeMap::new()).unwrap();
        assert_eq!(
            (o.target_size, o.min_count, o.full_threshold),
            (8 << 20, 30, 16 << 20)
        );
        let mut m = BTreeMap::new();
        m.insert("manifest.target-file-size".to_string(), "bogus".to_string());
        assert!(ManifestMergeOptions::parse(&m).is_err());
    }
}
