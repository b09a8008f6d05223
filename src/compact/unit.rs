//! Executing one compaction unit of a bucket (semantics.md §5.3, §6.3, §6.4): the picked runs
//! are merged (or a lone file is moved up) into the output level, with the changelog the
//! table's producer asks for.
//!
//! A unit streams: its files are read in key-range chunks (`key_chunks`), the old values of a
//! chunk's level-0 keys are looked up in the levels above (`lookup`), records are grouped by
//! key, the groups are reduced by the table's merge engine in one columnar call, and the data
//! and changelog rows are gathered with `interleave`. Differences from Java's task: several
//! non-overlapping sections of a unit are rewritten together instead of upgrading large
//! single-run files one by one (levels and record counters are size-dependent in Paimon
//! anyway, §5.3); the changelog rows do not depend on it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, interleave_record_batch};
use arrow::datatypes::{Int8Type, SchemaRef};
use arrow::row::{RowConverter, SortField};
use datafusion::common::{exec_datafusion_err, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::changelog_rows::{with_kinds, RowEquality};
use super::key_chunks::{ChunkSource, KeyChunks, Records};
use super::levels::{Pick, Run};
use super::lookup::{LookupContext, LookupFiles, LookupHits};
use super::record_expire::RecordExpire;
use super::settings::{CompactSettings, Producer};
use crate::deletion_vector::DeletionVectorIndex;
use crate::io::{DataFileRows, RollingFileWriter};
use crate::merge::{is_retract, MergeEngineSpec};
use crate::meta::{PartitionBucket, TableMeta};
use crate::scan::{decoded_ahead, read_file, DenseKey, FileToRead, ReadLayout};
use crate::spec::{row_kind, DataFileMeta, FileKind, ManifestEntry, MergeEngine, TableSchema};

/// `file_source` of files written by compaction.
const FILE_SOURCE_COMPACT: i32 = 1;

/// What a unit changes: files replaced, files added (new or moved up), changelog files.
#[derive(Debug, Default)]
pub(crate) struct UnitResult {
    pub before: Vec<ManifestEntry>,
    pub after: Vec<ManifestEntry>,
    pub changelog: Vec<ManifestEntry>,
    /// Deletion-vector tables: rows of files outside the unit that the unit's new versions
    /// replace (data file name -> positions), to add to those files' deletion vectors.
    pub deleted_rows: BTreeMap<String, Vec<u64>>,
}

/// Which changelog the unit produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChangelogMode {
    None,
    /// Before-images looked up in the levels below the output (§6.3).
    Lookup,
    /// Compared with the previous top-level record (§6.4).
    Full,
}

/// One bucket being compacted.
pub(crate) struct BucketCompaction {
    pub table: Arc<str>,
    pub meta: Arc<TableMeta>,
    pub schema: Arc<TableSchema>,
    pub settings: Arc<CompactSettings>,
    pub group: PartitionBucket,
    pub total_buckets: i32,
    /// Bucket directory relative to the table root.
    pub dir: String,
    /// Every live file of the bucket.
    pub files: Vec<ManifestEntry>,
    /// Deletion vectors of the snapshot being compacted.
    pub deletion_vectors: Arc<DeletionVectorIndex>,
    pub batch_size: usize,
    /// Pool the unit's read buffers are reserved in.
    pub pool: Arc<dyn MemoryPool>,
    /// The session's live counters, if it has them.
    pub progress: Option<Arc<crate::progress::StatementProgress>>,
    /// Record-level expiration: the records it drops from the unit's input files.
    pub expire: Option<Arc<RecordExpire>>,
}

/// Rows a compaction chunk asks for before it is merged: enough to amortise the per-chunk
/// work, small enough to keep a unit's memory flat.
const CHUNK_ROWS: usize = 65_536;

/// Batches each file of a unit decodes ahead of the merge: about a chunk's worth, so that the
/// next chunk is decoded while this one is merged and encoded.
const DECODE_AHEAD: usize = 8;

/// What every chunk of a unit is merged with.
struct ChunkMerge<'a> {
    engine: &'a MergeEngineSpec,
    layout: &'a Arc<ReadLayout>,
    mode: ChangelogMode,
    drop_delete: bool,
    write_data: bool,
    /// Whether the table's producer wants this unit's changelog.
    emit_changelog: bool,
    /// Deletion-vector tables: mark the looked-up old rows deleted.
    mark_deletions: bool,
}

/// The output of one chunk (full layout): data rows and changelog rows.
struct MergedChunk {
    data: Option<RecordBatch>,
    changelog: Option<RecordBatch>,
    /// `(lookup file, row position)` of old rows replaced by this chunk.
    deletions: Vec<(usize, u64)>,
}

/// A chunk's records in key order, grouped by key.
struct KeyGroups {
    /// Row numbers of the chunk, sorted by key.
    order: Vec<u32>,
    /// One range of `order` per key.
    groups: crate::merge::row_sort::KeyRanges,
}

/// How one key's output row and changelog are formed, as `(source, row)` indices into the
/// sources `[inputs and looked-up records, reduced groups]`.
struct KeyPlan {
    /// The row written to the output (before `dropDelete`).
    output: Option<(usize, usize)>,
    /// The before-image (an add), for `-U`/`-D` rows.
    before: Option<(usize, usize)>,
    /// Whether the key produces changelog rows by comparing `before` with `output`.
    emits: bool,
    /// Changelog rows decided directly (first-row `+I`).
    fixed: Vec<(usize, usize, i8)>,
}

impl KeyPlan {
    fn keep(row: (usize, usize)) -> Self {
        KeyPlan {
            output: Some(row),
            before: None,
            emits: false,
            fixed: vec![],
        }
    }

    fn drop() -> Self {
        KeyPlan {
            output: None,
            before: None,
            emits: false,
            fixed: vec![],
        }
    }
}

impl BucketCompaction {
    fn layout(&self) -> Arc<ReadLayout> {
        Arc::new(ReadLayout::new(self.schema.fields.clone(), true))
    }

    fn engine(&self) -> Result<MergeEngineSpec> {
        let columns = self.schema.fields.iter().map(|f| f.name.as_str());
        MergeEngineSpec::for_columns(&self.table, &self.schema, columns)
    }

    fn key_columns(&self) -> Result<Vec<usize>> {
        let columns = self.schema.trimmed_primary_key_indices();
        if columns.is_empty() {
            return Err(exec_datafusion_err!(
                "Table {} has no primary key to compact by",
                self.table
            ));
        }
        Ok(columns)
    }

    /// The records of a data file in the full layout, in batches.
    async fn file_stream(
        &self,
        entry: &ManifestEntry,
        layout: &Arc<ReadLayout>,
        apply_deletions: bool,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let file = &entry.file;
        let path =
            self.meta
                .io()
                .data_file_path(&self.dir, &file.file_name, file.external_path.as_deref())?;
        let file_schema = self.meta.schema(file.schema_id).await?;
        let whole = FileToRead::whole(
            path,
            file.file_size as u64,
            true,
            if apply_deletions {
                self.deletion_vectors.get(&file.file_name).cloned()
            } else {
                None
            },
        );
        // a data file's keys are unique: a dense key is computed, not decoded
        let dense_key = DenseKey::of_data_file(file, &file_schema);
        let stream = read_file(
            Arc::clone(self.meta.io().store()),
            FileToRead { dense_key, ..whole },
            file_schema,
            Arc::clone(layout),
            self.batch_size,
        )
        .await?;
        let stream = match self.expire.clone() {
            Some(expire) => stream
                .and_then(move |b| futures::future::ready(expire.filter(b)))
                .boxed(),
            None => stream.boxed(),
        };
        let Some(progress) = self.progress.clone() else {
            return Ok(stream);
        };
        progress.add_bytes_read(file.file_size.max(0) as usize);
        Ok(stream
            .inspect_ok(move |batch| progress.add_rows_read(batch.num_rows()))
            .boxed())
    }

    /// Runs the unit `pick` over `runs` (the bucket's runs, newest first).
    pub(crate) async fn run(&self, runs: &[Run], pick: Pick) -> Result<UnitResult> {
        let unit: Vec<&ManifestEntry> = runs[..pick.runs]
            .iter()
            .rev() // oldest first: arrival order for the merge
            .flat_map(|r| r.files.iter())
            .collect();
        let output_level = pick.output_level;
        // a file holding expired records is rewritten, even where it would stay or move up
        let expired = match (&unit[..], self.expire.as_deref()) {
            ([single], Some(expire)) => {
                expire.file_has_expired(&single.file, &*self.meta.schema(single.file.schema_id).await?)
            }
            _ => false,
        };
        if unit.is_empty() || (unit.len() == 1 && unit[0].file.level == output_level && !expired) {
            return Ok(UnitResult::default());
        }
        let settings = &*self.settings;
        let max_level = settings.pick.max_level;
        let contains_level0 = unit.iter().any(|e| e.file.level == 0);
        let mode = if settings.producer == Producer::FullCompaction && output_level == max_level {
            ChangelogMode::Full
        } else if settings.lookup && contains_level0 && output_level > 0 {
            ChangelogMode::Lookup
        } else {
            ChangelogMode::None
        };
        let highest = self.files.iter().map(|e| e.file.level).max().unwrap_or(0);
        // Deletion-vector tables drop deletes at every level above 0: their readers do not
        // merge levels, so a delete has nothing to cancel there (semantics.md §10).
        let drop_delete = output_level != 0 && (output_level >= highest || settings.deletion_vectors);

        // A lone file moves up without a rewrite where Paimon does so (§5.3, §6.3).
        if let [single] = unit[..] {
            let may_have_deletes = single.file.delete_row_count != Some(0);
            let rewrite = match mode {
                _ if (output_level == max_level || settings.deletion_vectors) && may_have_deletes => true,
                ChangelogMode::Lookup if single.file.level == 0 => {
                    !(output_level == max_level
                        || (settings.engine == MergeEngine::Deduplicate && !settings.has_sequence_field))
                }
                _ => false,
            };
            if !rewrite && !expired {
                return self.upgrade(single, output_level, mode).await;
            }
        }
        self.rewrite(&unit, output_level, mode, drop_delete, true).await
    }

    /// Moves `entry` to `output_level` unchanged; the changelog is computed from its records.
    async fn upgrade(
        &self,
        entry: &ManifestEntry,
        output_level: i32,
        mode: ChangelogMode,
    ) -> Result<UnitResult> {
        let mut moved = entry.clone();
        moved.file.level = output_level;
        let mut result = UnitResult {
            before: vec![entry.clone()],
            after: vec![moved],
            changelog: vec![],
            deleted_rows: BTreeMap::new(),
        };
        let wants_changelog = mode != ChangelogMode::None && self.settings.producer != Producer::None;
        let marks_deletions = mode == ChangelogMode::Lookup && self.settings.deletion_vectors;
        if !wants_changelog && !marks_deletions {
            return Ok(result);
        }
        // Same path as a rewrite, without writing data: the file itself is the data.
        let looked_up = self.rewrite(&[entry], output_level, mode, false, false).await?;
        result.changelog = looked_up.changelog;
        result.deleted_rows = looked_up.deleted_rows;
        Ok(result)
    }

    /// Merges the records of `unit` (oldest file first) into new files at `output_level`,
    /// key range by key range: the files are streamed, never read whole.
    async fn rewrite(
        &self,
        unit: &[&ManifestEntry],
        output_level: i32,
        mode: ChangelogMode,
        drop_delete: bool,
        write_data: bool,
    ) -> Result<UnitResult> {
        let layout = self.layout();
        let engine = self.engine()?;
        let key_columns = self.key_columns()?;
        let converter = RowConverter::new(
            key_columns
                .iter()
                .map(|&c| SortField::new(layout.schema.field(c).data_type().clone()))
                .collect(),
        )?;
        let mut lookup_files = if mode == ChangelogMode::Lookup {
            Some(
                self.lookup_files(unit, output_level, &converter, &key_columns, &layout)
                    .await?,
            )
        } else {
            None
        };
        // Each file decodes on a task of its own, a few batches ahead: the reads then run on
        // another core while this task groups, merges and encodes.
        let mut sources = Vec::with_capacity(unit.len());
        for entry in unit {
            let stream = self.file_stream(entry, &layout, true).await?;
            let stream = decoded_ahead(
                Box::pin(RecordBatchStreamAdapter::new(Arc::clone(&layout.schema), stream)),
                DECODE_AHEAD,
            );
            sources.push(ChunkSource {
                stream: stream.boxed(),
                level: entry.file.level,
            });
        }
        let reservation = MemoryConsumer::new(format!(
            "PaimonCompaction[{} bucket {}]",
            self.table, self.group.1
        ))
        .register(&self.pool);
        let mut chunks = KeyChunks::new(
            sources,
            &converter,
            &key_columns,
            Arc::clone(&layout.schema),
            CHUNK_ROWS.max(self.batch_size),
            reservation,
        );
        let merge = ChunkMerge {
            engine: &engine,
            layout: &layout,
            mode,
            drop_delete,
            write_data,
            emit_changelog: match mode {
                ChangelogMode::None => false,
                ChangelogMode::Lookup => self.settings.producer == Producer::Lookup,
                ChangelogMode::Full => self.settings.producer == Producer::FullCompaction,
            },
            mark_deletions: mode == ChangelogMode::Lookup && self.settings.deletion_vectors,
        };
        let io = self.meta.io();
        let target = self.settings.target_file_size;
        let mut data =
            RollingFileWriter::new(io, &self.dir, "data", output_level, &self.schema, true, target);
        let mut changelog = RollingFileWriter::new(
            io,
            &self.dir,
            "changelog",
            output_level,
            &self.schema,
            true,
            target,
        );
        let mut deleted_rows: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        // A chunk's data rows are encoded on a thread of their own while the next chunk is
        // merged here: the two take about as long.
        let mut encode_next: Option<DataFileRows> = None;
        while let Some(records) = chunks.next().await? {
            let groups = group_by_key(&records.batch, &key_columns)?;
            let hits = match lookup_files.as_mut() {
                Some(files) => {
                    let wanted = UInt32Array::from(self.lookup_requests(&records, &groups));
                    if wanted.is_empty() {
                        LookupHits::none(&layout)
                    } else {
                        let keys = key_columns
                            .iter()
                            .map(|&c| arrow::compute::take(records.batch.column(c), &wanted, None))
                            .collect::<std::result::Result<Vec<_>, _>>()?;
                        let mut hits = files.find(&keys).await?;
                        if let Some(expire) = &self.expire {
                            expire.forget_expired(&mut hits, &self.settings)?;
                        }
                        hits
                    }
                }
                None => LookupHits::none(&layout),
            };
            let merged = std::thread::scope(|scope| {
                let encoding = encode_next.take().map(|rows| {
                    let data = &mut data;
                    scope.spawn(move || data.encode(&rows))
                });
                let merged = self.merge_chunk(&records, &groups, &hits, &merge);
                if let Some(encoding) = encoding {
                    encoding.join().map_err(|_| {
                        exec_datafusion_err!("encoding data files of {} panicked", self.dir)
                    })??;
                }
                merged
            })?;
            data.store_closed().await?;
            if let Some(files) = &lookup_files {
                for (file, row) in merged.deletions {
                    deleted_rows
                        .entry(files.file_name(file).to_string())
                        .or_default()
                        .push(row);
                }
            }
            if let Some(rows) = merged.data {
                encode_next = Some(self.file_rows(&rows)?);
            }
            if let Some(rows) = merged.changelog {
                changelog.write(&self.file_rows(&rows)?).await?;
            }
        }
        if let Some(rows) = encode_next {
            data.write(&rows).await?;
        }
        drop(chunks);
        drop(lookup_files);
        Ok(UnitResult {
            before: unit.iter().map(|e| (*e).clone()).collect(),
            after: self.entries(data.finish().await?),
            changelog: self.entries(changelog.finish().await?),
            deleted_rows,
        })
    }

    /// Merges one key-range chunk: its data rows (output level) and changelog rows.
    /// The first record of each key of `groups` whose old value must be looked up (records
    /// at level 0 only), in key order.
    fn lookup_requests(&self, records: &Records, groups: &KeyGroups) -> Vec<u32> {
        groups
            .groups
            .iter()
            .map(|g| &groups.order[g])
            .filter(|rows| needs_lookup(records, rows))
            .map(|rows| rows[0])
            .collect()
    }

    /// Merges one key-range chunk: its data rows (output level) and changelog rows. `hits`
    /// holds the old values of [`Self::lookup_requests`] (lookup mode).
    fn merge_chunk(
        &self,
        records: &Records,
        groups: &KeyGroups,
        hits: &LookupHits,
        merge: &ChunkMerge<'_>,
    ) -> Result<MergedChunk> {
        let (engine, layout) = (merge.engine, merge.layout);
        let (mode, drop_delete, write_data) = (merge.mode, merge.drop_delete, merge.write_data);
        let (seq_column, kind_column) = (layout.seq_index(), layout.kind_index());

        // Looked-up before-images follow the input records as extra rows.
        let input_rows = records.batch.num_rows();
        let combined = if hits.rows.num_rows() == 0 {
            records.batch.clone()
        } else {
            concat_batches(&layout.schema, [&records.batch, &hits.rows])?
        };
        let kinds = combined
            .column(kind_column)
            .as_primitive::<Int8Type>()
            .values()
            .clone();
        let mut deletions: Vec<(usize, u64)> = Vec::new();
        let mut next_request = 0;
        let first_row = self.settings.engine == MergeEngine::FirstRow;

        // Per key: the group to reduce (if any) and what the key emits.
        let mut members: Vec<u32> = Vec::new();
        let mut offsets: Vec<usize> = vec![0];
        let mut plans: Vec<KeyPlan> = Vec::new();
        let mut group: Vec<usize> = Vec::new();
        for range in groups.groups.iter() {
            group.clear();
            group.extend(groups.order[range.clone()].iter().map(|&r| r as usize));
            let mut reduce = |rows: &mut dyn Iterator<Item = usize>| {
                members.extend(rows.map(|r| r as u32));
                offsets.push(members.len());
                (1, offsets.len() - 2)
            };
            if mode != ChangelogMode::Lookup {
                // plain and full-compaction merges: every record, lone records pass through;
                // on lookup tables a high-level record is a complete state, so deeper copies
                // of the key are ignored (semantics.md §3.4)
                if self.settings.lookup {
                    let newest_high = group.iter().map(|&r| records.levels[r]).filter(|l| *l > 0).min();
                    group.retain(|&r| records.levels[r] == 0 || Some(records.levels[r]) == newest_high);
                }
                let output = if group.len() == 1 {
                    (0, group[0])
                } else {
                    reduce(&mut group.iter().copied())
                };
                let top = group
                    .iter()
                    .copied()
                    .find(|&r| records.levels[r] == self.settings.pick.max_level);
                plans.push(KeyPlan {
                    output: Some(output),
                    before: top.filter(|&t| !is_retract(kinds[t])).map(|t| (0, t)),
                    // a lone top-level record is unchanged (§6.4)
                    emits: mode == ChangelogMode::Full && !(group.len() == 1 && top.is_some()),
                    fixed: vec![],
                });
                continue;
            }
            let level0: Vec<usize> = group
                .iter()
                .copied()
                .filter(|&r| records.levels[r] == 0)
                .collect();
            // the newest high-level input record: the smallest level >= 1
            let high = group
                .iter()
                .copied()
                .filter(|&r| records.levels[r] > 0)
                .min_by_key(|&r| records.levels[r]);
            if level0.is_empty() {
                // only high-level records: the newest is the complete state; no changelog
                let row = high.expect("a key group has a record");
                plans.push(KeyPlan::keep((0, row)));
                continue;
            }
            let (before, looked_up) = match high {
                Some(row) => (Some(row), false),
                None => {
                    let request = next_request;
                    next_request += 1;
                    match hits.found.get(request).copied().flatten() {
                        Some(row) => {
                            if merge.mark_deletions {
                                deletions.push(hits.origin[row]);
                            }
                            (Some(input_rows + row), true)
                        }
                        None => (None, false),
                    }
                }
            };
            if first_row {
                plans.push(match (before, looked_up) {
                    // an older version exists in the inputs: it stays, nothing new
                    (Some(row), false) => KeyPlan::keep((0, row)),
                    // the key exists below the output level: the new records are dropped
                    (Some(_), true) => KeyPlan::drop(),
                    (None, _) => {
                        let first = level0
                            .iter()
                            .copied()
                            .filter(|&r| !is_retract(kinds[r]))
                            .min_by_key(|&r| seq_of(&records.batch, seq_column, r));
                        match first {
                            None => KeyPlan::drop(),
                            Some(row) => KeyPlan {
                                fixed: if self.settings.producer == Producer::Lookup {
                                    vec![(0, row, row_kind::INSERT)]
                                } else {
                                    vec![]
                                },
                                ..KeyPlan::keep((0, row))
                            },
                        }
                    }
                });
                continue;
            }
            // after = merge of the high-level record and the level-0 records, always through
            // the merge function (no single-record pass-through, §2.0)
            let output = reduce(&mut before.into_iter().chain(level0.iter().copied()));
            plans.push(KeyPlan {
                output: Some(output),
                before: before.filter(|&b| !is_retract(kinds[b])).map(|b| (0, b)),
                emits: true,
                fixed: vec![],
            });
        }

        // The reduced groups. An engine that picks one whole record per group (deduplicate,
        // first-row) names it in `combined`, so nothing is gathered: its keys then output
        // `(0, row)` instead of `(1, group)`.
        let reduced = match engine.reducer.as_pick() {
            _ if members.is_empty() => combined.slice(0, 0),
            Some(pick) => {
                let (winners, _) = pick.winners(&combined, members, &offsets)?;
                for plan in &mut plans {
                    if let Some((1, group)) = plan.output {
                        plan.output = Some((0, winners[group] as usize));
                    }
                }
                combined.slice(0, 0)
            }
            None => {
                let gathered = arrow::compute::take_record_batch(&combined, &UInt32Array::from(members))?;
                engine.reducer.reduce(&gathered, &offsets)?.batch
            }
        };
        let reduced_kinds = reduced
            .column(kind_column)
            .as_primitive::<Int8Type>()
            .values()
            .clone();
        let kind_at = |(source, row): (usize, usize)| {
            if source == 0 {
                kinds[row]
            } else {
                reduced_kinds[row]
            }
        };
        // Encoding every row for the unchanged test is only worth it when it is asked for.
        let equal = if self.settings.row_deduplicate && merge.emit_changelog {
            Some(RowEquality::new(
                &combined,
                &reduced,
                &self.schema,
                &self.settings.row_deduplicate_ignore,
            )?)
        } else {
            None
        };

        let mut data_indices: Vec<(usize, usize)> = Vec::new();
        let mut changelog_indices: Vec<(usize, usize)> = Vec::new();
        let mut changelog_kinds: Vec<i8> = Vec::new();
        for plan in plans {
            if let Some(after) = plan.output {
                if write_data && !(drop_delete && is_retract(kind_at(after))) {
                    data_indices.push(after);
                }
            }
            let mut emit = |source: (usize, usize), kind: i8| {
                changelog_indices.push(source);
                changelog_kinds.push(kind);
            };
            for &(s, r, kind) in &plan.fixed {
                emit((s, r), kind);
            }
            let (true, Some(after)) = (plan.emits, plan.output) else {
                continue;
            };
            match (plan.before, !is_retract(kind_at(after))) {
                (None, true) => emit(after, row_kind::INSERT),
                (None, false) => {}
                (Some(before), false) => emit(before, row_kind::DELETE),
                (Some(before), true) => {
                    if equal.as_ref().is_some_and(|e| e.eq(before, after)) {
                        continue;
                    }
                    emit(before, row_kind::UPDATE_BEFORE);
                    emit(after, row_kind::UPDATE_AFTER);
                }
            }
        }

        let sources = [&combined, &reduced];
        let data = if data_indices.is_empty() {
            None
        } else {
            Some(interleave_record_batch(&sources, &data_indices)?)
        };
        let changelog = if changelog_indices.is_empty() || !merge.emit_changelog {
            None
        } else {
            let rows = interleave_record_batch(&sources, &changelog_indices)?;
            Some(with_kinds(&rows, kind_column, changelog_kinds)?)
        };
        Ok(MergedChunk {
            data,
            changelog,
            deletions,
        })
    }

    /// The files a lookup searches: levels above `output_level` outside the unit.
    async fn lookup_files<'a>(
        &'a self,
        unit: &[&ManifestEntry],
        output_level: i32,
        converter: &'a RowConverter,
        key_columns: &'a [usize],
        layout: &'a Arc<ReadLayout>,
    ) -> Result<LookupFiles<'a>> {
        let candidates: Vec<&ManifestEntry> = self
            .files
            .iter()
            .filter(|e| e.file.level > output_level)
            .filter(|e| !unit.iter().any(|u| u.file.file_name == e.file.file_name))
            .collect();
        // the layout's table columns are the schema's fields, in order
        let first_key = self.schema.fields[key_columns[0]].id;
        let ctx = LookupContext::new(
            self.meta.io().store(),
            layout,
            key_columns,
            converter,
            first_key,
            self.batch_size,
            self.settings.lookup_cache_bytes,
            self.meta.io().root_url(),
            self.schema.id,
            self.settings.lookup_disk,
            self.progress.as_ref(),
        )?;
        LookupFiles::new(ctx, &self.meta, &self.dir, candidates, &self.deletion_vectors).await
    }

    /// Splits full-layout rows into table values and the KeyValue columns.
    fn file_rows(&self, rows: &RecordBatch) -> Result<DataFileRows> {
        let n = self.schema.fields.len();
        let value_schema: SchemaRef = Arc::new(arrow::datatypes::Schema::new(
            self.schema
                .fields
                .iter()
                .map(|f| f.to_arrow_field().with_nullable(true))
                .collect::<Vec<_>>(),
        ));
        let values = RecordBatch::try_new(value_schema, rows.columns()[..n].to_vec())?;
        let seqs = rows
            .column(n)
            .as_primitive::<arrow::datatypes::Int64Type>()
            .clone();
        let kinds = rows.column(n + 1).as_primitive::<Int8Type>().clone();
        Ok(DataFileRows {
            values,
            kv: Some((seqs, kinds)),
        })
    }

    /// Manifest entries of files this compaction wrote.
    fn entries(&self, files: Vec<DataFileMeta>) -> Vec<ManifestEntry> {
        files
            .into_iter()
            .map(|mut file| {
                file.file_source = Some(FILE_SOURCE_COMPACT);
                ManifestEntry {
                    kind: FileKind::Add,
                    partition: self.group.0.clone(),
                    bucket: self.group.1,
                    total_buckets: self.total_buckets,
                    file,
                }
            })
            .collect()
    }
}

/// Sorts a chunk's rows by key and groups them (a one-column integer key without rows).
fn group_by_key(batch: &RecordBatch, key_columns: &[usize]) -> Result<KeyGroups> {
    let keys = crate::merge::row_sort::SortKeys::of_batches(std::slice::from_ref(batch), key_columns)?;
    let (order, groups) = crate::merge::row_sort::stable_key_groups(&keys);
    Ok(KeyGroups { order, groups })
}

/// Whether a key's records (`rows` of the chunk) need its old value looked up in the levels
/// above the output: it has level-0 records and no higher-level record in the unit.
fn needs_lookup(records: &Records, rows: &[u32]) -> bool {
    let levels = rows.iter().map(|&r| records.levels[r as usize]);
    levels.clone().any(|l| l == 0) && levels.clone().all(|l| l == 0)
}

fn seq_of(batch: &RecordBatch, seq_column: usize, row: usize) -> i64 {
    batch
        .column(seq_column)
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(row)
}
