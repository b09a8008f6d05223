//! Old values for lookup compaction (the lookup changelog producer, first-row, deletion
//! vectors; semantics.md §6.3): for the keys of a chunk that have level-0 records and no
//! higher-level record in the unit, the newest live record in the levels above the output.
//!
//! The files are searched nearest level first, each only for the keys still missing that lie
//! in its key range (from its manifest entry). A Parquet file is searched by a sorted merge
//! ([`sorted`]): the wanted keys arrive sorted and the file is sorted, so only the pages that
//! may hold one are read and only the rows found are kept; the lookup's memory follows the
//! keys asked for, not the size of the levels. A file searched again by a later commit of the
//! same process (a long-running writer) is decoded whole once and kept in the lookup cache
//! ([`cache`], `lookup.cache-max-memory-size`) if it fits, and searched in memory from then
//! on; so are ORC and Avro files, which are decoded whole anyway.

mod cache;
mod disk;
mod sorted;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::Int64Type;
use arrow::row::{OwnedRow, RowConverter, Rows};
use datafusion::common::Result;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::ObjectStore;

use self::cache::LookupFile;
use self::sorted::SortedFile;
use crate::deletion_vector::{DeletionVector, DeletionVectorIndex};
use crate::format::FileFormat;
use crate::meta::TableMeta;
use crate::progress::StatementProgress;
use crate::scan::{read_file, DenseKey, FileToRead, ReadLayout};
use crate::spec::{BinaryRow, DataType, ManifestEntry, TableSchema};

pub(crate) use self::cache::DEFAULT_CACHE_BYTES;
pub use self::disk::remove_lookup_copies;
pub(crate) use self::disk::{copied_files, DiskLimits, DEFAULT_RETENTION};

/// What every lookup of a unit reads with.
pub(crate) struct LookupContext<'a> {
    pub store: &'a Arc<dyn ObjectStore>,
    /// The full read layout (table columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`).
    pub layout: &'a Arc<ReadLayout>,
    /// Positions of the key columns in `layout`.
    pub key_columns: &'a [usize],
    /// Encodes the key columns.
    pub converter: &'a RowConverter,
    /// Field id of the first key column (the one file statistics are read for).
    pub first_key_field_id: i32,
    pub batch_size: usize,
    /// `lookup.cache-max-memory-size`, for the decoded files.
    pub cache_bytes: usize,
    /// URL of the table directory; with a scheme other than `file`, files searched again are
    /// copied to local disk within `disk`.
    pub location: &'a str,
    /// Id of the table schema `layout` comes from.
    pub schema_id: i64,
    pub disk: DiskLimits,
    pub progress: Option<&'a Arc<StatementProgress>>,
    /// Encodes the first key column alone.
    first_key: RowConverter,
}

impl<'a> LookupContext<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        store: &'a Arc<dyn ObjectStore>,
        layout: &'a Arc<ReadLayout>,
        key_columns: &'a [usize],
        converter: &'a RowConverter,
        first_key_field_id: i32,
        batch_size: usize,
        cache_bytes: usize,
        location: &'a str,
        schema_id: i64,
        disk: DiskLimits,
        progress: Option<&'a Arc<StatementProgress>>,
    ) -> Result<Self> {
        let first_type = layout.schema.field(key_columns[0]).data_type().clone();
        Ok(LookupContext {
            store,
            layout,
            key_columns,
            converter,
            first_key_field_id,
            batch_size,
            cache_bytes,
            location,
            schema_id,
            disk,
            progress,
            first_key: RowConverter::new(vec![arrow::row::SortField::new(first_type)])?,
        })
    }
}

/// Rows one file holds for some of the wanted keys.
pub(crate) struct Found {
    /// The rows, in the full layout, one per hit.
    batch: RecordBatch,
    /// Per row of `batch`: the wanted key (index into the request) and the row's position in
    /// the file.
    hits: Vec<(usize, u64)>,
}

impl Found {
    fn empty(layout: &ReadLayout) -> Self {
        Found {
            batch: RecordBatch::new_empty(Arc::clone(&layout.schema)),
            hits: vec![],
        }
    }
}

/// The old values of a chunk's keys.
pub(crate) struct LookupHits {
    /// The looked-up records (full layout).
    pub rows: RecordBatch,
    /// Per requested key: its row in `rows`, if it was found.
    pub found: Vec<Option<usize>>,
    /// Per row of `rows`: the file it came from (see [`LookupFiles::file_name`]) and its
    /// position there.
    pub origin: Vec<(usize, u64)>,
}

impl LookupHits {
    pub(crate) fn none(layout: &ReadLayout) -> Self {
        LookupHits {
            rows: RecordBatch::new_empty(Arc::clone(&layout.schema)),
            found: vec![],
            origin: vec![],
        }
    }
}

/// How a file is searched, once opened.
enum Reader {
    Unopened,
    /// Pages read as the keys need them.
    Sorted(SortedFile),
    /// Decoded whole, in the process-wide cache.
    Cached(Arc<LookupFile>),
}

/// One file searched for old values.
struct Source {
    name: String,
    path: Path,
    size: u64,
    file_schema: Arc<TableSchema>,
    /// Its deletion vector at the compacted snapshot: a key whose row it masks is not in this
    /// file any more.
    deleted: Option<DeletionVector>,
    /// The key of its first row when its single integer key is dense ([`DenseKey`]): a key's
    /// row is then found by subtraction.
    dense_first: Option<i64>,
    /// Its smallest and largest key (encoded); unbounded where unknown.
    min: Option<OwnedRow>,
    max: Option<OwnedRow>,
    reader: Reader,
    /// The local copy being read, if any (kept on disk while this lives).
    copy: Option<disk::LocalCopy>,
}

/// The files a unit's lookups search, nearest level first.
pub(crate) struct LookupFiles<'a> {
    ctx: LookupContext<'a>,
    sources: Vec<Source>,
}

impl<'a> LookupFiles<'a> {
    /// The files of `candidates` (levels above the output, outside the unit) in level order.
    /// Nothing is read from them until a lookup needs them.
    pub(crate) async fn new(
        ctx: LookupContext<'a>,
        meta: &TableMeta,
        dir: &str,
        mut candidates: Vec<&ManifestEntry>,
        deletion_vectors: &DeletionVectorIndex,
    ) -> Result<Self> {
        candidates.sort_by_key(|e| e.file.level);
        let mut sources = Vec::with_capacity(candidates.len());
        for entry in candidates {
            let file = &entry.file;
            let file_schema = meta.schema(file.schema_id).await?;
            let deleted = match deletion_vectors.get(&file.file_name) {
                Some(dv) => Some(dv.load(meta.io().store()).await?),
                None => None,
            };
            let key_types: Vec<DataType> = file_schema
                .trimmed_primary_keys()
                .iter()
                .map(|f| f.data_type.clone())
                .collect();
            sources.push(Source {
                name: file.file_name.clone(),
                path: meta
                    .io()
                    .data_file_path(dir, &file.file_name, file.external_path.as_deref())?,
                size: file.file_size.max(0) as u64,
                dense_first: DenseKey::of_data_file(file, &file_schema).map(|dense| dense.first),
                min: encode_key(&ctx, &file.min_key, &key_types),
                max: encode_key(&ctx, &file.max_key, &key_types),
                file_schema,
                deleted,
                reader: Reader::Unopened,
                copy: None,
            });
        }
        Ok(LookupFiles { ctx, sources })
    }

    /// The data file name of source `index` (an `origin` of [`LookupHits`]).
    pub(crate) fn file_name(&self, index: usize) -> &str {
        &self.sources[index].name
    }

    /// The newest live record of each key of `keys` (key columns in layout order, sorted
    /// ascending, no duplicates).
    pub(crate) async fn find(&mut self, keys: &[ArrayRef]) -> Result<LookupHits> {
        let encoded = self.ctx.converter.convert_columns(keys)?;
        let first_keys = self.ctx.first_key.convert_columns(&keys[..1])?;
        // a single integer key, as numbers, for files whose keys are dense
        let numbers = match keys {
            [key] if key.data_type().is_integer() => {
                Some(arrow::compute::cast(key, &arrow::datatypes::DataType::Int64)?)
            }
            _ => None,
        };
        let numbers = numbers.as_ref().map(|n| n.as_primitive::<Int64Type>());
        let mut found: Vec<Option<usize>> = vec![None; encoded.num_rows()];
        let mut missing: Vec<usize> = (0..encoded.num_rows()).collect();
        let mut origin: Vec<(usize, u64)> = Vec::new();
        let mut pieces: Vec<RecordBatch> = Vec::new();
        for (index, source) in self.sources.iter_mut().enumerate() {
            if missing.is_empty() {
                break;
            }
            let from = match &source.min {
                Some(min) => missing.partition_point(|&w| encoded.row(w) < min.row()),
                None => 0,
            };
            let to = match &source.max {
                Some(max) => missing.partition_point(|&w| encoded.row(w) <= max.row()),
                None => missing.len(),
            };
            if from >= to {
                continue;
            }
            let rows = source
                .find(&self.ctx, &encoded, &first_keys, numbers, &missing[from..to])
                .await?;
            for &(wanted, position) in &rows.hits {
                found[wanted] = Some(origin.len());
                origin.push((index, position));
            }
            pieces.push(rows.batch);
            missing.retain(|&w| found[w].is_none());
        }
        Ok(LookupHits {
            rows: concat_batches(&self.ctx.layout.schema, &pieces)?,
            found,
            origin,
        })
    }
}

impl Source {
    async fn find(
        &mut self,
        ctx: &LookupContext<'_>,
        keys: &Rows,
        first_keys: &Rows,
        numbers: Option<&Int64Array>,
        wanted: &[usize],
    ) -> Result<Found> {
        if matches!(self.reader, Reader::Unopened) {
            self.reader = self.open(ctx).await?;
        }
        match &self.reader {
            Reader::Sorted(file) => {
                let dense = self.dense_first.zip(numbers);
                if let Some(found) = file
                    .find(ctx, keys, first_keys, dense, wanted, self.deleted.as_ref())
                    .await?
                {
                    return Ok(found);
                }
                // Not in key order (as Paimon orders keys, arrow-row order for every key type
                // we know): searched decoded whole, in any order, from now on.
                log::warn!(
                    "Data file /{} is not sorted by its primary key as expected; lookups decode it whole",
                    self.path
                );
                let (_, cache_key) = self.keys(ctx);
                self.reader = self
                    .decode_whole(ctx, Arc::clone(ctx.store), self.path.clone(), cache_key)
                    .await?;
                Box::pin(self.find(ctx, keys, first_keys, numbers, wanted)).await
            }
            Reader::Cached(file) => {
                let mut rows: Vec<u32> = Vec::new();
                let mut hits = Vec::new();
                for &w in wanted {
                    let Some(row) = file.get(keys.row(w)) else {
                        continue;
                    };
                    let masked = self.deleted.as_ref().is_some_and(|dv| dv.contains(row as u64));
                    if !masked {
                        rows.push(row as u32);
                        hits.push((w, row as u64));
                    }
                }
                Ok(Found {
                    batch: take_record_batch(&file.batch, &UInt32Array::from(rows))?,
                    hits,
                })
            }
            Reader::Unopened => unreachable!("opened above"),
        }
    }

    /// A cached file as it is. A Parquet file by sorted merge, unless it was searched before
    /// in this process and fits in the cache: then, as any other file, it is decoded whole and
    /// cached for the commits to come.
    async fn open(&mut self, ctx: &LookupContext<'_>) -> Result<Reader> {
        let (file_key, cache_key) = self.keys(ctx);
        if let Some(file) = cache::cached(&cache_key) {
            return Ok(Reader::Cached(file));
        }
        let searched_before = cache::searched_before(&file_key);
        let (mut store, mut path) = (Arc::clone(ctx.store), self.path.clone());
        if FileFormat::of_file(&self.name)? == FileFormat::Parquet {
            let file = SortedFile::open(
                ctx,
                Arc::clone(&store),
                path.clone(),
                self.size,
                Arc::clone(&self.file_schema),
            )
            .await?;
            if !searched_before {
                // the first search reads only the pages it needs
                return Ok(Reader::Sorted(file));
            }
            // a file that would take more than half the cache would evict everything else
            if file.decoded_size() > ctx.cache_bytes / 2 {
                // searched again but too big for memory: by sorted merge, from a local copy
                // of a remote file
                return Ok(Reader::Sorted(match self.copy_locally(ctx, &file_key).await {
                    Some((store, path)) => {
                        SortedFile::open(ctx, store, path, self.size, Arc::clone(&self.file_schema)).await?
                    }
                    None => file,
                }));
            }
        } else if searched_before {
            // ORC and Avro are decoded whole whenever the memory cache misses them
            if let Some(local) = self.copy_locally(ctx, &file_key).await {
                (store, path) = local;
            }
        }
        self.decode_whole(ctx, store, path, cache_key).await
    }

    /// Every row of the file, decoded into the memory cache under `cache_key` (if it fits).
    /// Positions are file positions (the cache outlives deletion vectors): rows are masked by
    /// the file's current vector at lookup.
    async fn decode_whole(
        &self,
        ctx: &LookupContext<'_>,
        store: Arc<dyn ObjectStore>,
        path: Path,
        cache_key: String,
    ) -> Result<Reader> {
        let batches: Vec<RecordBatch> = read_file(
            store,
            FileToRead::whole(path, self.size, true, None),
            Arc::clone(&self.file_schema),
            Arc::clone(ctx.layout),
            ctx.batch_size,
        )
        .await?
        .try_collect()
        .await?;
        let batch = concat_batches(&ctx.layout.schema, &batches)?;
        if let Some(progress) = ctx.progress {
            progress.add_rows_read(batch.num_rows());
            progress.add_bytes_read(self.size as usize);
        }
        let file = Arc::new(LookupFile::build(batch, ctx.converter, ctx.key_columns)?);
        cache::insert(cache_key, Arc::clone(&file), ctx.cache_bytes);
        Ok(Reader::Cached(file))
    }
}

impl Source {
    /// The file's process-wide identity (for local copies and "searched before"), and the key
    /// of its decoded rows in the memory cache: decoded in the layout of one table schema, a
    /// later schema needs its own.
    fn keys(&self, ctx: &LookupContext<'_>) -> (String, String) {
        let file_key = format!("{}#{}", ctx.location, self.path);
        let cache_key = format!("{file_key}#schema-{}", ctx.schema_id);
        (file_key, cache_key)
    }

    /// The store and path of a local copy of this file, made now if needed: only for remote
    /// warehouses, within `lookup.cache-max-disk-size`. A copy that cannot be made is not an
    /// error: the file is read from its store.
    async fn copy_locally(
        &mut self,
        ctx: &LookupContext<'_>,
        key: &str,
    ) -> Option<(Arc<dyn ObjectStore>, Path)> {
        if ctx.location.starts_with("file:") {
            return None;
        }
        match disk::local_copy(ctx.store, key, &self.path, self.size, ctx.disk).await {
            Ok(Some(copy)) => {
                let local = (Arc::clone(&copy.store), copy.path.clone());
                self.copy = Some(copy);
                Some(local)
            }
            Ok(None) => None,
            Err(e) => {
                log::warn!("{e}; lookups read /{} from its store", self.path);
                None
            }
        }
    }
}

/// A file's min or max key (a `BinaryRow` of its key columns) encoded like the lookup keys, or
/// `None` if it cannot be decoded (then the file is searched for every key).
fn encode_key(ctx: &LookupContext<'_>, bytes: &[u8], key_types: &[DataType]) -> Option<OwnedRow> {
    if key_types.len() != ctx.key_columns.len() {
        return None;
    }
    let values = BinaryRow::decode(bytes, key_types).ok()?.values;
    let arrays = values
        .into_iter()
        .zip(ctx.key_columns)
        .map(|(value, &c)| {
            let target = ctx.layout.schema.field(c).data_type();
            value.cast_to(target).ok()?.to_array().ok()
        })
        .collect::<Option<Vec<_>>>()?;
    let rows = ctx.converter.convert_columns(&arrays).ok()?;
    Some(rows.row(0).owned())
}
