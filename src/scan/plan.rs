//! Snapshot -> live files -> pruned splits (one per partition and bucket).
//!
//! Pruning uses only facts that hold for every version of a row: partition values, and for
//! primary-key tables the key statistics of each file (a key never changes, so a file whose key
//! range cannot match holds no version of a matching row). Value statistics are used for append
//! tables only: on a primary-key table, skipping the file that holds the newest version of a row
//! would let an older version resurface.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use datafusion::common::{Column, Result, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder, PruningStatistics};

use super::bucket_filter::BucketFilter;
use super::split::{build_sections, level_runs, Split, SplitFile};
use crate::meta::TableMeta;
use crate::spec::{
    paths, BinaryRow, DataFileMeta, ManifestEntry, MergeEngine, Snapshot, TableOptions, TableSchema,
};

/// Everything planning needs to know about the read.
pub(crate) struct PlanRequest<'a> {
    pub(crate) meta: &'a TableMeta,
    pub(crate) snapshot: &'a Snapshot,
    /// Schema of the snapshot being read (time travel reads with the old schema).
    pub(crate) schema: &'a TableSchema,
    pub(crate) options: &'a TableOptions,
    /// Conjunction of pushed-down filters over `schema`'s Arrow schema, for pruning only.
    pub(crate) predicate: Option<Arc<dyn PhysicalExpr>>,
    /// `t$ro`: primary-key tables read only their top level (deletion-vector tables every
    /// level ≥ 1 with its vectors), each file as it is, without merging.
    pub(crate) read_optimized: bool,
    /// Partitions (serialized) to leave out: a fallback branch reads only those its main
    /// branch lacks.
    pub(crate) skip_partitions: Option<&'a std::collections::HashSet<Vec<u8>>>,
}

/// The result of planning: splits plus every schema their files were written with.
pub(crate) struct ScanPlan {
    pub(crate) splits: Vec<Split>,
    pub(crate) file_schemas: HashMap<i64, Arc<TableSchema>>,
    pub(crate) files_pruned: usize,
    /// Of those, the files skipped by their file index.
    pub(crate) index_pruned: usize,
}

/// Plans the splits of a batch scan of `req.snapshot`.
pub(crate) async fn plan_scan(req: PlanRequest<'_>) -> Result<ScanPlan> {
    let live = req.meta.live_files(req.snapshot, |_| true).await?;
    // Deletion vectors apply to every table that has them, whatever its options say now: a
    // deleted row must never come back (format.md §7.2).
    let deletion_vectors = req
        .meta
        .deletion_vectors(req.snapshot, &paths::IndexFileDirs::of(req.schema))
        .await?;
    // Deletion-vector mode keeps at most one live row per key across levels ≥ 1, so those files
    // are read one by one with their vectors, without merging (semantics.md §10).
    let dv_no_merge = req.schema.has_primary_key()
        && req.options.deletion_vectors
        && (!req.options.dv_merge_on_read || req.read_optimized);
    let partition_types = req.schema.partition_types();
    let is_pk = req.schema.has_primary_key();
    let data_evolution = !is_pk && super::evolution::enabled(req.schema);
    let pruning = pruning_predicate(req.schema, req.predicate.as_ref());
    let bucket_filter = if req.options.bucket > 0 {
        BucketFilter::new(req.schema, req.predicate.as_ref())
    } else {
        None
    };

    let mut file_schemas: HashMap<i64, Arc<TableSchema>> = HashMap::new();
    let mut splits = Vec::new();
    let mut files_pruned = 0;
    let mut index_pruned = 0;
    // (a data-evolution file's index covers only its columns of a row-id group)
    let index_filter = match data_evolution {
        false => crate::file_index::FileIndexFilter::new(req.schema, req.options, req.predicate.as_ref()),
        true => None,
    };
    for ((partition_bytes, bucket), entries) in &live.groups {
        if req
            .skip_partitions
            .is_some_and(|skip| skip.contains(partition_bytes))
        {
            continue;
        }
        if *bucket == -2 {
            // Postpone-bucket files are invisible to batch reads until they are assigned a
            // bucket by compaction (Paimon skips them too).
            continue;
        }
        if let (Some(filter), Some(first)) = (&bucket_filter, entries.first()) {
            if !filter.matches(*bucket, first.total_buckets) {
                files_pruned += entries.len();
                continue;
            }
        }
        let partition = BinaryRow::decode(partition_bytes, &partition_types)?.values;
        let mut files: Vec<&ManifestEntry> = entries.iter().collect();
        let skip_level0 = req.options.merge_engine == MergeEngine::FirstRow
            || (req.options.deletion_vectors && !req.options.dv_merge_on_read);
        if is_pk && skip_level0 {
            // Batch reads of first-row and deletion-vector tables skip level 0 (Java
            // batchScanSkipLevel0): those rows become visible after compaction.
            files.retain(|e| e.file.level > 0);
        }
        if is_pk && req.read_optimized {
            // Java `ReadOptimizedTable`: levels ≥ 1 with deletion vectors, else the top level.
            let top = req.options.max_level;
            let dv = req.options.deletion_vectors;
            files.retain(|e| if dv { e.file.level > 0 } else { e.file.level == top });
        }
        load_file_schemas(req.meta, &files, &mut file_schemas).await?;
        // A data-evolution file holds some columns of its rows: its statistics say nothing of
        // the others, so no file of a row-id group is dropped on its own.
        if let Some(p) = pruning.as_ref().filter(|_| !data_evolution) {
            let before = files.len();
            files = prune_files(p, req.schema, &partition, files, &file_schemas)?;
            files_pruned += before - files.len();
        }
        let partition_path = paths::partition_path(
            &req.schema.partition_keys,
            &partition,
            &req.options.partition_default_name,
        );
        if let Some(filter) = &index_filter {
            let dir = paths::bucket_path(
                req.options.data_file_path_directory.as_deref(),
                &partition_path,
                *bucket,
            );
            let before = files.len();
            files =
                super::index_skip::skip_by_file_index(req.meta, filter, &dir, files, &file_schemas).await?;
            index_pruned += before - files.len();
        }
        if files.is_empty() {
            continue;
        }
        let split_files = files
            .iter()
            .map(|e| {
                let mut file = SplitFile::new(&e.file, req.schema, &file_schemas)?;
                file.deletion = deletion_vectors.get(&e.file.file_name).cloned();
                Ok(file)
            })
            .collect::<Result<Vec<_>>>()?;
        let sections = if data_evolution {
            super::evolution::row_id_groups(split_files)
        } else if dv_no_merge || !is_pk || req.read_optimized {
            split_files.into_iter().map(|f| vec![vec![f]]).collect()
        } else if lookup_read(req.schema, req.options) {
            level_runs(split_files)
        } else {
            build_sections(split_files)
        };
        let dir = paths::bucket_path(
            req.options.data_file_path_directory.as_deref(),
            &partition_path,
            *bucket,
        );
        splits.push(Split {
            partition_path,
            bucket: *bucket,
            total_buckets: entries.first().map_or(-1, |e| e.total_buckets),
            bucket_dir: dir,
            sections,
            key_range: None,
            rows_estimate: None,
            row_piece: None,
            newer_runs: Default::default(),
        });
    }
    Ok(ScanPlan {
        splits,
        file_schemas,
        files_pruned: files_pruned + index_pruned,
        index_pruned,
    })
}

/// DataFusion's pruning predicate for pushed-down filters over `schema`, if any can prune.
pub(crate) fn pruning_predicate(
    schema: &TableSchema,
    predicate: Option<&Arc<dyn PhysicalExpr>>,
) -> Option<Arc<PruningPredicate>> {
    PruningPredicateBuilder::new()
        .with_file_schema(schema.arrow_schema())
        .build(Arc::clone(predicate?))
}

/// Loads the schema of every file not loaded yet.
pub(crate) async fn load_file_schemas(
    meta: &TableMeta,
    files: &[&ManifestEntry],
    file_schemas: &mut HashMap<i64, Arc<TableSchema>>,
) -> Result<()> {
    for e in files {
        if let std::collections::hash_map::Entry::Vacant(v) = file_schemas.entry(e.file.schema_id) {
            v.insert(meta.schema(e.file.schema_id).await?);
        }
    }
    Ok(())
}

/// The files of one (partition, bucket) that may hold rows matching `pruning`: partition
/// values, key statistics (primary-key tables) or value statistics (append tables). Every
/// file schema must be loaded.
pub(crate) fn prune_files<'a>(
    pruning: &PruningPredicate,
    schema: &TableSchema,
    partition: &[ScalarValue],
    files: Vec<&'a ManifestEntry>,
    file_schemas: &HashMap<i64, Arc<TableSchema>>,
) -> Result<Vec<&'a ManifestEntry>> {
    let stats = FileStats::new(schema, partition, &files, file_schemas, schema.has_primary_key());
    let keep = pruning.prune(&stats)?;
    Ok(files
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect())
}

/// Per-file statistics of one (partition, bucket) for DataFusion's `PruningPredicate`.
struct FileStats {
    /// column name -> (mins, maxes, null counts), one entry per file.
    columns: HashMap<String, (Vec<ScalarValue>, Vec<ScalarValue>, Vec<Option<u64>>)>,
    row_counts: Vec<u64>,
}

impl FileStats {
    fn new(
        schema: &TableSchema,
        partition: &[ScalarValue],
        files: &[&ManifestEntry],
        file_schemas: &HashMap<i64, Arc<TableSchema>>,
        is_pk: bool,
    ) -> Self {
        let mut columns: HashMap<String, (Vec<ScalarValue>, Vec<ScalarValue>, Vec<Option<u64>>)> =
            HashMap::new();
        let row_counts: Vec<u64> = files.iter().map(|e| e.file.row_count.max(0) as u64).collect();
        for (key, value) in schema.partition_keys.iter().zip(partition) {
            let nulls = row_counts
                .iter()
                .map(|r| Some(if value.is_null() { *r } else { 0 }))
                .collect();
            columns.insert(
                key.clone(),
                (
                    vec![value.clone(); files.len()],
                    vec![value.clone(); files.len()],
                    nulls,
                ),
            );
        }
        let stat_columns: Vec<String> = if is_pk {
            schema
                .trimmed_primary_keys()
                .iter()
                .map(|f| f.name.clone())
                .collect()
        } else {
            schema
                .fields
                .iter()
                .filter(|f| !schema.partition_keys.contains(&f.name))
                .map(|f| f.name.clone())
                .collect()
        };
        for name in stat_columns {
            let Some(field) = schema.field(&name) else {
                continue;
            };
            let Ok(null) = ScalarValue::try_from(&field.data_type.to_arrow()) else {
                continue;
            };
            let mut mins = Vec::with_capacity(files.len());
            let mut maxs = Vec::with_capacity(files.len());
            let mut nulls = Vec::with_capacity(files.len());
            for e in files {
                let stat = file_schemas
                    .get(&e.file.schema_id)
                    .and_then(|fs| column_stat(&e.file, fs, field.id, is_pk));
                let (min, max, n) = stat
                    .filter(|(min, max, _)| {
                        min.data_type() == null.data_type() && max.data_type() == null.data_type()
                    })
                    .unwrap_or((null.clone(), null.clone(), None));
                mins.push(min);
                maxs.push(max);
                nulls.push(n);
            }
            columns.insert(name, (mins, maxs, nulls));
        }
        FileStats { columns, row_counts }
    }
}

/// A data file of a data-evolution table may hold only some columns of its rows (`write_cols`),
/// the others living in other files with the same row ids; reading those rows needs a merge by
/// row id this crate does not do, so such a file is refused by name.
/// (min, max, null count) of the column with `field_id` in one file, if recorded.
pub(crate) fn column_stat(
    file: &DataFileMeta,
    file_schema: &TableSchema,
    field_id: i32,
    is_pk: bool,
) -> Option<(ScalarValue, ScalarValue, Option<u64>)> {
    let name = &file_schema.field_by_id(field_id)?.name;
    if is_pk {
        let keys = file_schema.trimmed_primary_keys();
        let pos = keys.iter().position(|f| &f.name == name)?;
        let types: Vec<_> = keys.iter().map(|f| Some(f.data_type.clone())).collect();
        return stat_at(&file.key_stats, &types, pos);
    }
    // The value statistics cover `_VALUE_STATS_COLS`, else the columns the file holds
    // (`_WRITE_COLS`: a data-evolution file holds some columns of its rows, a compacted
    // row-tracking file also `_ROW_ID` and `_SEQUENCE_NUMBER`), else every column of its schema.
    let names: Vec<&str> = match (&file.value_stats_cols, &file.write_cols) {
        (Some(cols), _) | (None, Some(cols)) => cols.iter().map(String::as_str).collect(),
        (None, None) => file_schema.fields.iter().map(|f| f.name.as_str()).collect(),
    };
    let pos = names.iter().position(|n| *n == name.as_str())?;
    let types: Vec<_> = names.iter().map(|n| stats_column_type(file_schema, n)).collect();
    stat_at(&file.value_stats, &types, pos)
}

/// The type of a column the statistics of a file written with `file_schema` cover: one of its
/// fields, or a row-tracking column.
fn stats_column_type(file_schema: &TableSchema, name: &str) -> Option<crate::spec::DataType> {
    match file_schema.field(name) {
        Some(f) => Some(f.data_type.clone()),
        None if name == crate::spec::ROW_ID || name == crate::spec::SEQUENCE_NUMBER => {
            crate::spec::parse_type_string("BIGINT").ok()
        }
        None => None,
    }
}

/// (min, max, null count) at `pos` of statistics whose columns have `types`; none when a type
/// is unknown (its slot could not be decoded).
fn stat_at(
    stats: &crate::spec::SimpleStats,
    types: &[Option<crate::spec::DataType>],
    pos: usize,
) -> Option<(ScalarValue, ScalarValue, Option<u64>)> {
    let types: Vec<_> = types
        .iter()
        .map(|t| t.clone().map(|t| crate::spec::DataType { nullable: true, ..t }))
        .collect::<Option<Vec<_>>>()?;
    let mins = BinaryRow::decode(&stats.min_values, &types).ok()?;
    let maxs = BinaryRow::decode(&stats.max_values, &types).ok()?;
    let nulls = stats
        .null_counts
        .as_ref()
        .and_then(|n| n.get(pos).copied().flatten())
        .map(|n| n as u64);
    Some((
        mins.values.get(pos)?.clone(),
        maxs.values.get(pos)?.clone(),
        nulls,
    ))
}

impl PruningStatistics for FileStats {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        let (mins, _, _) = self.columns.get(column.name())?;
        ScalarValue::iter_to_array(mins.iter().cloned()).ok()
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        let (_, maxs, _) = self.columns.get(column.name())?;
        ScalarValue::iter_to_array(maxs.iter().cloned()).ok()
    }

    fn num_containers(&self) -> usize {
        self.row_counts.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let (_, _, nulls) = self.columns.get(column.name())?;
        Some(Arc::new(UInt64Array::from(nulls.clone())))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        Some(Arc::new(UInt64Array::from(self.row_counts.clone())))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// Whether reads merge in lookup mode (semantics.md §3.4): lookup compaction keeps every
/// record at level ≥ 1 a complete state, so only the newest high-level record of a key and
/// its level-0 records are merged. It matters for engines that combine values.
pub(crate) fn lookup_read(schema: &TableSchema, options: &TableOptions) -> bool {
    let lookup = options.changelog_producer == "lookup"
        || schema
            .options
            .get("force-lookup")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    lookup
        && matches!(
            options.merge_engine,
            MergeEngine::PartialUpdate | MergeEngine::Aggregation
        )
}
