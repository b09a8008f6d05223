//! Compaction of primary-key buckets and the changelog it produces (semantics.md §4, §5, §6).
//!
//! ```text
//! after a write commit, per written (partition, bucket):
//!   write-only ─► nothing
//!   full compaction due (producer full-compaction, full-compaction.delta-commits) ─► all runs ─► top level
//!   lookup tables (producer lookup, first-row, deletion vectors, force-lookup) ─► forced level-0 pick
//!   otherwise ─► universal pick (num-sorted-run.compaction-trigger, size amplification, size ratio)
//! each picked unit ─► unit::BucketCompaction (merge, upgrade, changelog) ─► one COMPACT snapshot
//! ```
//!
//! The units of one compaction run side by side, a task each (one at a time when the memory
//! pool is bounded), and their results are committed together.
//!
//! `CALL sys.compact` runs a full compaction of every bucket (or of some partitions).

mod changelog_rows;
mod deletion_vectors;
mod key_chunks;
mod levels;
mod lookup;
mod parallel;
mod postpone;
mod record_expire;
mod settings;
mod unit;

use crate::progress::StatementProgress;
use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::common::runtime::SpawnedTask;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryLimit, MemoryPool};
use futures::StreamExt;

use self::deletion_vectors::IndexChange;
use self::levels::{pick_force_level0, pick_universal, sorted_runs, Pick};
pub(crate) use self::lookup::copied_files as lookup_copied_files;
pub use self::lookup::remove_lookup_copies;
pub use self::parallel::{CompactionJob, PaimonCompactCommitExec, PaimonCompactExec};
pub(crate) use self::record_expire::check_options as check_record_expire_options;
pub(crate) use self::settings::{CompactSettings, Producer};
use self::unit::{BucketCompaction, UnitResult};
use crate::meta::{CommitRequest, LiveFiles, OverwriteScope, PartitionBucket, TableMeta};
use crate::spec::{paths, BinaryRow, Snapshot, TableOptions, TableSchema};

/// Which buckets to compact.
#[derive(Debug, Clone)]
pub(crate) enum CompactScope {
    /// Every bucket of the table.
    All,
    /// These (partition, bucket) pairs.
    Buckets(BTreeSet<PartitionBucket>),
    /// The buckets of the partitions matching one of these `key = value` lists (values as
    /// they appear in partition directory names).
    Partitions(Vec<Vec<(String, String)>>),
}

/// What compacting some buckets wrote and replaces, not committed yet.
#[derive(Debug, Default)]
pub(crate) struct CompactOutcome {
    /// Files the compaction replaces.
    pub(crate) before: Vec<crate::spec::ManifestEntry>,
    /// Files it wrote (and files it moved up a level unchanged).
    pub(crate) after: Vec<crate::spec::ManifestEntry>,
    /// Changelog files it produced.
    pub(crate) changelog: Vec<crate::spec::ManifestEntry>,
    pub(crate) index_added: Vec<crate::spec::IndexManifestEntry>,
    pub(crate) index_removed: Vec<crate::spec::IndexManifestEntry>,
}

impl CompactOutcome {
    fn is_empty(&self) -> bool {
        self.before.is_empty() && self.changelog.is_empty()
    }

    /// Every file of this outcome as a message row of a distributed compaction or write: its
    /// kind and its (index) manifest entry as an Avro datum.
    pub(crate) fn message_rows(&self) -> Result<Vec<(&'static str, Vec<u8>)>> {
        use crate::spec::manifest_write::{entry_datum, index_entry_datum};
        let avro = |e: apache_avro::Error| datafusion::common::exec_datafusion_err!("{e}");
        let mut rows = Vec::new();
        for (kind, list) in [
            ("before", &self.before),
            ("after", &self.after),
            ("changelog", &self.changelog),
        ] {
            for entry in list {
                rows.push((kind, entry_datum(entry).map_err(avro)?));
            }
        }
        for (kind, list) in [
            ("index_added", &self.index_added),
            ("index_removed", &self.index_removed),
        ] {
            for entry in list {
                rows.push((kind, index_entry_datum(entry).map_err(avro)?));
            }
        }
        Ok(rows)
    }

    /// Adds a row of [`Self::message_rows`]; false when `kind` is none of its kinds. `what`
    /// names the message in errors.
    pub(crate) fn add_message_row(&mut self, kind: &str, bytes: &[u8], what: &str) -> Result<bool> {
        use crate::spec::manifest_write::{entry_from_datum, index_entry_from_datum};
        match kind {
            "before" => self.before.push(entry_from_datum(bytes, what)?),
            "after" => self.after.push(entry_from_datum(bytes, what)?),
            "changelog" => self.changelog.push(entry_from_datum(bytes, what)?),
            "index_added" => self.index_added.push(index_entry_from_datum(bytes, what)?),
            "index_removed" => self.index_removed.push(index_entry_from_datum(bytes, what)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The part of `parts` compacting `group`: a stable hash of partition and bucket, the same on
/// every executor.
pub(crate) fn part_of(group: &PartitionBucket, parts: usize) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in group.0.iter().chain(&group.1.to_le_bytes()) {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    (hash % parts.max(1) as u64) as usize
}

/// The files a compaction starts from.
#[derive(Clone, Copy)]
enum Input<'a> {
    /// The latest snapshot's live files.
    Latest,
    /// Those and a writer task's uncommitted files.
    LatestAnd(&'a [crate::spec::ManifestEntry]),
    /// Only a writer task's uncommitted files (an overwrite replaces the rest).
    Only(&'a [crate::spec::ManifestEntry]),
}

/// How units are picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// Every run of the bucket to the top level.
    Full,
    /// What the table's options call for after a write.
    AfterWrite,
}

/// A table to compact.
pub(crate) struct Compaction<'a> {
    pub table: &'a str,
    pub meta: &'a Arc<TableMeta>,
    pub schema: &'a Arc<TableSchema>,
    pub batch_size: usize,
    /// Pool compaction buffers are reserved in.
    pub pool: Arc<dyn MemoryPool>,
    /// The session's live counters, if it has them.
    pub progress: Option<Arc<StatementProgress>>,
}

impl<'a> Compaction<'a> {
    /// The compaction of a table run by a task: its batch size, memory pool and progress.
    pub(crate) fn in_task(
        table: &'a str,
        meta: &'a Arc<TableMeta>,
        schema: &'a Arc<TableSchema>,
        context: &datafusion::execution::TaskContext,
    ) -> Self {
        Compaction {
            table,
            meta,
            schema,
            batch_size: context.session_config().batch_size(),
            pool: Arc::clone(context.memory_pool()),
            progress: StatementProgress::of(context),
        }
    }
}

impl Compaction<'_> {
    /// Full compaction of the buckets of `scope` (`CALL sys.compact`), committed as one
    /// COMPACT snapshot; `None` when nothing needed compacting.
    pub(crate) async fn full(&self, scope: &CompactScope) -> Result<Option<Snapshot>> {
        let assigned = self.assign_postponed(scope).await?;
        let compacted = self.run(scope, Strategy::Full).await?;
        Ok(compacted.or(assigned))
    }

    /// What follows a write commit on the buckets it wrote (semantics.md §5.1, §5.4, §5.5).
    ///
    /// Other processes may commit meanwhile, compacting the same files and expiring the
    /// snapshots that used them: when files this compaction reads are deleted that way (they are
    /// gone and newer snapshots exist), its result would be stale anyway, so it is given up like
    /// a lost compaction conflict. The write itself is committed, and the next write compacts.
    pub(crate) async fn after_write(&self, written: BTreeSet<PartitionBucket>) -> Result<Option<Snapshot>> {
        // (nothing to do costs no request)
        let settings = CompactSettings::new(self.schema)?;
        if settings.write_only || written.is_empty() || !self.schema.has_primary_key() {
            return Ok(None);
        }
        let base = self.meta.latest_snapshot_id().await?.unwrap_or(0);
        match self.after_write_on(written).await {
            Err(e) if crate::error::is_not_found(&e) && self.meta.moved_past(base).await? => Ok(None),
            other => other,
        }
    }

    async fn after_write_on(&self, written: BTreeSet<PartitionBucket>) -> Result<Option<Snapshot>> {
        let settings = CompactSettings::new(self.schema)?;
        if settings.write_only || written.is_empty() || !self.schema.has_primary_key() {
            return Ok(None);
        }
        // Deletion-vector tables compact level 0 by lookup (forced pick), marking the rows
        // the new versions replace in their files' deletion vectors (semantics.md §10).
        let strategy = if self.full_compaction_due(&settings, 0).await? {
            Strategy::Full
        } else {
            Strategy::AfterWrite
        };
        self.run(&CompactScope::Buckets(written), strategy).await
    }

    /// A writer task's compaction of the buckets it wrote, before its files are committed: a
    /// distributed write compacts where it writes, as Paimon's Flink writers do, and its
    /// committer commits the files (APPEND) and then this outcome (COMPACT). `written` are the
    /// writer's uncommitted files; with `overwrite` they replace what the snapshot has in their
    /// partitions, so they are compacted alone. Nothing is committed here.
    pub(crate) async fn before_commit(
        &self,
        written: &[crate::spec::ManifestEntry],
        overwrite: bool,
    ) -> Result<Option<CompactOutcome>> {
        let settings = CompactSettings::new(self.schema)?;
        // Postpone files wait for `CALL sys.compact`: nothing compacts them after a write.
        let written: Vec<crate::spec::ManifestEntry> = written
            .iter()
            .filter(|e| e.bucket != postpone::POSTPONE_BUCKET)
            .cloned()
            .collect();
        if settings.write_only || written.is_empty() || !self.schema.has_primary_key() {
            return Ok(None);
        }
        let buckets: BTreeSet<PartitionBucket> =
            written.iter().map(|e| (e.partition.clone(), e.bucket)).collect();
        let base = self.meta.latest_snapshot_id().await?.unwrap_or(0);
        let strategy = if self.full_compaction_due(&settings, 1).await? {
            Strategy::Full
        } else {
            Strategy::AfterWrite
        };
        let input = if overwrite {
            Input::Only(&written)
        } else {
            Input::LatestAnd(&written)
        };
        match self
            .compact_part(&CompactScope::Buckets(buckets), strategy, None, input)
            .await
        {
            // files of the snapshot read were expired meanwhile: a later write compacts
            Err(e) if crate::error::is_not_found(&e) && self.meta.moved_past(base).await? => Ok(None),
            other => other,
        }
    }

    /// Commits a writer's [`Self::before_commit`] outcome as the COMPACT snapshot following
    /// the write's APPEND snapshot, under the write's `commit_user`. A conflict (another
    /// process compacted the same files first) drops it, as after a local write.
    pub(crate) async fn commit_before_commit(
        &self,
        outcome: CompactOutcome,
        commit_user: &str,
    ) -> Result<Option<Snapshot>> {
        if outcome.is_empty() {
            return Ok(None);
        }
        self.commit_outcome(outcome, Strategy::AfterWrite, Some(commit_user.to_string()))
            .await
    }

    /// Whether this write ends with a full compaction: always for the full-compaction
    /// producer (a batch job's commit identifier is a multiple of any interval), every N-th
    /// write with `full-compaction.delta-commits = N`. `uncommitted` writes (0 or the one a
    /// writer task is about to commit) count with the committed ones.
    async fn full_compaction_due(&self, settings: &CompactSettings, uncommitted: i64) -> Result<bool> {
        match settings.delta_commits {
            Some(n) if n > 1 => {
                // writes since the last COMPACT snapshot, this one included
                let mut writes = uncommitted;
                for id in self.meta.snapshot_ids().await?.into_iter().rev() {
                    let snapshot = self.meta.snapshot(id).await?;
                    if snapshot.commit_kind == "COMPACT" {
                        break;
                    }
                    writes += 1;
                }
                Ok(writes >= n)
            }
            Some(_) => Ok(true),
            None => Ok(settings.producer == Producer::FullCompaction),
        }
    }

    async fn run(&self, scope: &CompactScope, strategy: Strategy) -> Result<Option<Snapshot>> {
        match self.compact_part(scope, strategy, None, Input::Latest).await? {
            Some(outcome) => self.commit_outcome(outcome, strategy, None).await,
            None => Ok(None),
        }
    }

    /// Full compaction of part `part` of `parts` of the buckets of `scope` (a compaction task
    /// of a cluster): its files written, nothing committed. `None` if it had nothing to do.
    pub(crate) async fn full_part(
        &self,
        scope: &CompactScope,
        part: usize,
        parts: usize,
    ) -> Result<Option<CompactOutcome>> {
        self.compact_part(scope, Strategy::Full, Some((part, parts)), Input::Latest)
            .await
    }

    /// Commits every part's outcome of a full compaction as one COMPACT snapshot, unless
    /// `commit_user` already committed one since `since_millis` (a retried commit task).
    pub(crate) async fn commit_full(
        &self,
        outcome: CompactOutcome,
        commit_user: &str,
        since_millis: i64,
    ) -> Result<Option<Snapshot>> {
        if let Some(done) = self.meta.committed_by(commit_user, since_millis).await? {
            return Ok(Some(done));
        }
        if outcome.is_empty() {
            return Ok(None);
        }
        self.commit_outcome(outcome, Strategy::Full, Some(commit_user.to_string()))
            .await
    }

    async fn compact_part(
        &self,
        scope: &CompactScope,
        strategy: Strategy,
        part: Option<(usize, usize)>,
        input: Input<'_>,
    ) -> Result<Option<CompactOutcome>> {
        let refusal = crate::spec::options::unsupported_for_new_files(&self.schema.options)
            .or_else(|| crate::spec::options::rewrites_lose_row_ids(&self.schema.options));
        if let Some(why) = refusal {
            // (after a write, a table that cannot be compacted stays as written: its reads are
            // the same)
            if matches!(strategy, Strategy::AfterWrite) && !self.schema.has_primary_key() {
                return Ok(None);
            }
            return datafusion::common::not_impl_err!(
                "Compacting table {} is not supported: {why}",
                self.table
            );
        }
        let (latest, mut live) = match input {
            Input::Only(_) => (None, LiveFiles::default()),
            Input::Latest | Input::LatestAnd(_) => match self.meta.latest_live_files().await? {
                Some((latest, live)) => (Some(latest), live),
                None => (None, LiveFiles::default()),
            },
        };
        if let Input::LatestAnd(written) | Input::Only(written) = input {
            for e in written {
                live.groups
                    .entry((e.partition.clone(), e.bucket))
                    .or_default()
                    .push(e.clone());
            }
        }
        let settings = CompactSettings::new(self.schema)?;
        let options = TableOptions::parse(&self.schema.options)?;
        // one clock for the whole compaction, as each Java rewriter takes it when it starts
        let expire = match record_expire::RecordExpireOptions::of(self.schema)? {
            Some(o) => Some(o.starting_now(self.schema)?),
            None => None,
        };
        // Files written with deletion vectors (by Java Paimon) are read without their deleted rows.
        let index_dirs = paths::IndexFileDirs::of(self.schema);
        let deletion_vectors = match &latest {
            Some(latest) => self.meta.deletion_vectors(latest, &index_dirs).await?,
            None => Default::default(),
        };
        let index_entries = match latest.as_ref().and_then(|l| l.index_manifest.as_ref()) {
            Some(name) => self.meta.index_manifest(name).await?,
            None => vec![],
        };
        let settings = Arc::new(settings);
        let expire = expire.map(Arc::new);
        let deletion_vectors = Arc::new(deletion_vectors);
        let table: Arc<str> = Arc::from(self.table);
        let (mut buckets, mut units) = (Vec::new(), Vec::new());
        for (group, entries) in &live.groups {
            // Postpone files are moved to real buckets by `assign_postponed`, never merged.
            if entries.is_empty()
                || group.1 == postpone::POSTPONE_BUCKET
                || !self.in_scope(scope, group, &options)?
                || part.is_some_and(|(part, parts)| part_of(group, parts) != part)
            {
                continue;
            }
            let runs = sorted_runs(entries);
            let pick = match strategy {
                Strategy::Full => Some(Pick {
                    runs: runs.len(),
                    output_level: settings.pick.max_level,
                }),
                Strategy::AfterWrite if settings.lookup => pick_force_level0(&runs, &settings.pick),
                Strategy::AfterWrite => pick_universal(&runs, &settings.pick),
            };
            let Some(pick) = pick else { continue };
            let partition = BinaryRow::decode(&group.0, &self.schema.partition_types())?.values;
            let partition_path = paths::partition_path(
                &self.schema.partition_keys,
                &partition,
                &options.partition_default_name,
            );
            let bucket = BucketCompaction {
                table: Arc::clone(&table),
                meta: Arc::clone(self.meta),
                schema: Arc::clone(self.schema),
                settings: Arc::clone(&settings),
                group: group.clone(),
                total_buckets: entries[0].total_buckets,
                dir: paths::bucket_path(
                    options.data_file_path_directory.as_deref(),
                    &partition_path,
                    group.1,
                ),
                files: entries.clone(),
                deletion_vectors: Arc::clone(&deletion_vectors),
                batch_size: self.batch_size,
                pool: Arc::clone(&self.pool),
                progress: self.progress.clone(),
                expire: expire.clone(),
            };
            buckets.push((group, entries));
            units.push(async move {
                let task = SpawnedTask::spawn(async move { bucket.run(&runs, pick).await });
                task.join_unwind()
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
            });
        }
        // The schemas of the files are read here, once each, rather than by units at once.
        let schema_ids: BTreeSet<i64> = buckets
            .iter()
            .flat_map(|(_, entries)| entries.iter().map(|e| e.file.schema_id))
            .collect();
        for id in schema_ids {
            self.meta.schema(id).await?;
        }
        // Buckets are compacted side by side, each on a task of its own (a unit merges on the
        // task that runs it): as many at once as there are cores, or one at a time when the
        // memory pool is bounded, so each unit's buffers get the whole budget as before.
        let at_once = match self.pool.memory_limit() {
            MemoryLimit::Infinite => std::thread::available_parallelism().map_or(1, |n| n.get()),
            MemoryLimit::Finite(_) | MemoryLimit::Unknown => 1,
        };
        let mut done = futures::stream::iter(units)
            .buffered(at_once)
            .zip(futures::stream::iter(buckets));
        let mut result = UnitResult::default();
        let (mut index_added, mut index_removed) = (vec![], vec![]);
        while let Some((unit, (group, entries))) = done.next().await {
            let unit = unit?;
            if let Some(progress) = &self.progress {
                let written = unit
                    .after
                    .iter()
                    .filter(|e| !unit.before.iter().any(|b| b.file.file_name == e.file.file_name));
                let (files, rows) =
                    written.fold((0, 0), |(f, r), e| (f + 1, r + e.file.row_count.max(0) as usize));
                progress.add_files_written(files + unit.changelog.len());
                progress.add_rows_written(rows);
            }
            if settings.deletion_vectors {
                let had_index = index_entries.iter().any(|e| {
                    e.kind == crate::spec::FileKind::Add
                        && e.index_type == crate::deletion_vector::DELETION_VECTORS_INDEX
                        && e.partition == group.0
                        && e.bucket == group.1
                });
                let change = deletion_vectors::bucket_vectors(
                    self.meta,
                    group,
                    entries,
                    &deletion_vectors,
                    had_index,
                    &unit,
                    &index_dirs,
                )
                .await?;
                match change {
                    Some(IndexChange::Replace(entry)) => index_added.push(entry),
                    Some(IndexChange::Remove(entry)) => index_removed.push(entry),
                    None => {}
                }
            }
            result.before.extend(unit.before);
            result.after.extend(unit.after);
            result.changelog.extend(unit.changelog);
        }
        if result.before.is_empty() && result.changelog.is_empty() {
            return Ok(None);
        }
        Ok(Some(CompactOutcome {
            before: result.before,
            after: result.after,
            changelog: result.changelog,
            index_added,
            index_removed,
        }))
    }

    async fn commit_outcome(
        &self,
        outcome: CompactOutcome,
        strategy: Strategy,
        commit_user: Option<String>,
    ) -> Result<Option<Snapshot>> {
        let options = TableOptions::parse(&self.schema.options)?;
        let index_dirs = paths::IndexFileDirs::of(self.schema);
        let CompactOutcome {
            before,
            after,
            changelog,
            index_added,
            index_removed,
        } = outcome;
        let result = UnitResult {
            before,
            after,
            changelog,
            deleted_rows: Default::default(),
        };
        let mut written: Vec<String> = result
            .after
            .iter()
            .chain(&result.changelog)
            .filter(|e| !result.before.iter().any(|b| b.file.file_name == e.file.file_name))
            .map(|e| self.file_path(e, &options))
            .collect::<Result<_>>()?;
        written.extend(
            index_added
                .iter()
                .map(|e: &crate::spec::IndexManifestEntry| {
                    index_dirs.path(&e.partition, e.bucket, &e.file_name)
                })
                .collect::<crate::error::Result<Vec<_>>>()?,
        );
        let request = CommitRequest {
            index_added,
            index_removed,
            row_level: None,
            added: result.after,
            overwrite: OverwriteScope::None,
            partition_types: self.schema.partition_types(),
            commit_user: commit_user.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            commit_identifier: i64::MAX,
            operation: Some("COMPACT".to_string()),
            compacted: result.before,
            changelog: result.changelog,
        };
        match self.meta.commit(&request).await {
            Ok(snapshot) => Ok(snapshot),
            Err(crate::error::Error::CompactionConflict { .. }) if strategy == Strategy::AfterWrite => {
                // Another writer compacted the same files first: this result is stale. The
                // write itself is committed; drop the unreferenced outputs.
                for path in written {
                    let _ = self.meta.io().delete_data_file(&path).await;
                }
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Path of a bucket file relative to the table root, or its URI at an external path
    /// (`FileIO::delete_data_file` takes both).
    fn file_path(&self, entry: &crate::spec::ManifestEntry, options: &TableOptions) -> Result<String> {
        if let Some(uri) = &entry.file.external_path {
            return Ok(uri.clone());
        }
        let values = BinaryRow::decode(&entry.partition, &self.schema.partition_types())?.values;
        let partition_path = paths::partition_path(
            &self.schema.partition_keys,
            &values,
            &options.partition_default_name,
        );
        let dir = paths::bucket_path(
            options.data_file_path_directory.as_deref(),
            &partition_path,
            entry.bucket,
        );
        Ok(format!("{dir}/{}", entry.file.file_name))
    }

    fn in_scope(
        &self,
        scope: &CompactScope,
        group: &PartitionBucket,
        options: &TableOptions,
    ) -> Result<bool> {
        Ok(match scope {
            CompactScope::All => true,
            CompactScope::Buckets(wanted) => wanted.contains(group),
            CompactScope::Partitions(specs) => {
                let values = BinaryRow::decode(&group.0, &self.schema.partition_types())?.values;
                let path = paths::partition_path(
                    &self.schema.partition_keys,
                    &values,
                    &options.partition_default_name,
                );
                let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
                specs.iter().any(|spec| {
                    spec.iter()
                        .all(|(k, v)| parts.contains(&format!("{k}={v}").as_str()))
                })
            }
        })
    }
}
