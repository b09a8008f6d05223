//! Lookup in one Parquet data file by a sorted merge: the file is sorted by key and so are the
//! keys asked for, so one forward pass over the file's rows finds them all. Only the pages (or
//! row groups, without a page index) whose first-key statistics bracket a wanted key are read,
//! and only the rows found are kept, so memory is bounded by the keys asked for, not the file.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, Int64Array, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::row::{OwnedRow, Rows};
use datafusion::common::{exec_datafusion_err, Result};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::ObjectStore;

use super::{Found, LookupContext};
use crate::deletion_vector::DeletionVector;
use crate::scan::{file_key_units, read_opened_file, FileToRead, ReadLayout, RowPositions};
use crate::spec::TableSchema;
use parquet::file::metadata::ParquetMetaData;

/// Fewer wanted keys than one per this many candidate rows: the key columns are read first.
const SPARSE_FACTOR: usize = 8;

/// A unit of the file (page or row group) and the first-key bounds its statistics give.
struct Unit {
    rows: Range<usize>,
    /// Encoded by the first-key converter; unknown where `None`.
    min: Option<OwnedRow>,
    max: Option<OwnedRow>,
}

/// One Parquet file opened for sorted lookups: its units, read once from the footer and page
/// index.
pub(super) struct SortedFile {
    store: Arc<dyn ObjectStore>,
    /// The file's footer and page index, read once for every search.
    metadata: Arc<ParquetMetaData>,
    path: Path,
    size: u64,
    file_schema: Arc<TableSchema>,
    row_count: usize,
    /// Uncompressed size of the file's data (Parquet's row-group byte sizes).
    decoded_size: usize,
    units: Vec<Unit>,
}

impl SortedFile {
    /// Reads the footer and page index of `path` and the first-key bounds of its units.
    pub(super) async fn open(
        ctx: &LookupContext<'_>,
        store: Arc<dyn ObjectStore>,
        path: Path,
        size: u64,
        file_schema: Arc<TableSchema>,
    ) -> Result<Self> {
        let opened = crate::format::open(Arc::clone(&store), &path, size, true).await?;
        let metadata = opened.parquet_metadata().ok_or_else(|| {
            exec_datafusion_err!("Lookup by sorted merge needs a Parquet file, not /{path}")
        })?;
        let row_count = metadata.file_metadata().num_rows().max(0) as usize;
        let decoded_size = metadata
            .row_groups()
            .iter()
            .map(|g| g.total_byte_size().max(0) as usize)
            .sum();
        let first = &ctx.layout.schema.fields()[ctx.key_columns[0]];
        let key_units = file_key_units(
            metadata,
            opened.schema(),
            &file_schema,
            ctx.first_key_field_id,
            first.data_type(),
        );
        let bound = |value: Option<datafusion::common::ScalarValue>| -> Option<OwnedRow> {
            let array = value?.cast_to(first.data_type()).ok()?.to_array().ok()?;
            let rows = ctx.first_key.convert_columns(&[array]).ok()?;
            Some(rows.row(0).owned())
        };
        let units = key_units
            .into_iter()
            .map(|u| Unit {
                rows: u.rows,
                min: bound(u.min),
                max: bound(u.max),
            })
            .collect();
        let metadata = Arc::clone(metadata);
        Ok(SortedFile {
            store,
            metadata,
            path,
            size,
            file_schema,
            row_count,
            decoded_size,
            units,
        })
    }

    /// About the memory the file takes decoded.
    pub(super) fn decoded_size(&self) -> usize {
        self.decoded_size
    }

    /// Finds the keys `wanted` (indices into `keys`/`first_keys`, ascending by key) among the
    /// live rows of the file (`deleted` masks rows by position); `None` if the file turns out
    /// not to be sorted by key with one row per key, which the merge relies on.
    ///
    /// Where the wanted keys are few for the rows their pages hold, the key columns are read
    /// first and the whole rows only for the keys found (pages without one are not decoded);
    /// otherwise whole rows are read in one pass. A file whose keys are dense (`dense`: its
    /// first key and the wanted keys as numbers) is not searched: a key's row is its distance
    /// from the first key, and only those rows are read.
    pub(super) async fn find(
        &self,
        ctx: &LookupContext<'_>,
        keys: &Rows,
        first_keys: &Rows,
        dense: Option<(i64, &Int64Array)>,
        wanted: &[usize],
        deleted: Option<&DeletionVector>,
    ) -> Result<Option<Found>> {
        if let Some((first, numbers)) = dense {
            let hits = wanted
                .iter()
                .filter(|&&w| numbers.is_valid(w))
                .filter_map(|&w| {
                    let position = u64::try_from(numbers.value(w).checked_sub(first)?).ok()?;
                    (position < self.row_count as u64).then_some((w, position))
                })
                .filter(|(_, position)| deleted.is_none_or(|dv| !dv.contains(*position)))
                .collect();
            return self.rows_found(ctx, keys, hits).await.map(Some);
        }
        let mut ranges = self.ranges_to_read(first_keys, wanted);
        if let Some(dv) = deleted.filter(|dv| !dv.is_empty()) {
            ranges = crate::format::intersect_ranges(&ranges, &dv.kept_row_ranges(self.row_count as u64));
        }
        let mut found = Found::empty(ctx.layout);
        if ranges.is_empty() {
            return Ok(Some(found));
        }
        let candidates: usize = ranges.iter().map(|r| r.len()).sum();
        if wanted.len().saturating_mul(SPARSE_FACTOR) >= candidates {
            let key_columns = ctx.key_columns.to_vec();
            let Some((pieces, hits)) = self
                .merge(ctx, ctx.layout, &key_columns, ranges, keys, wanted, true)
                .await?
            else {
                return Ok(None);
            };
            found.batch = arrow::compute::concat_batches(&ctx.layout.schema, &pieces)?;
            found.hits = hits;
            return Ok(Some(found));
        }
        // Sparse: the key columns first, then the rows found.
        let key_layout = Arc::new(ReadLayout::new(
            ctx.key_columns
                .iter()
                .map(|&c| ctx.layout.fields[c].clone())
                .collect(),
            false,
        ));
        let key_columns: Vec<usize> = (0..ctx.key_columns.len()).collect();
        let Some((_, hits)) = self
            .merge(ctx, &key_layout, &key_columns, ranges, keys, wanted, false)
            .await?
        else {
            return Ok(None);
        };
        self.rows_found(ctx, keys, hits).await.map(Some)
    }

    /// The whole rows of `hits` (wanted key, position; ascending), checked to hold the keys
    /// they were found for.
    async fn rows_found(
        &self,
        ctx: &LookupContext<'_>,
        keys: &Rows,
        hits: Vec<(usize, u64)>,
    ) -> Result<Found> {
        let mut found = Found::empty(ctx.layout);
        if hits.is_empty() {
            return Ok(found);
        }
        let mut rows: Vec<Range<usize>> = Vec::new();
        for &(_, position) in &hits {
            let p = position as usize;
            match rows.last_mut() {
                Some(last) if last.end == p => last.end = p + 1,
                _ => rows.push(p..p + 1),
            }
        }
        let batches: Vec<arrow::array::RecordBatch> =
            self.read(ctx, ctx.layout, rows).await?.try_collect().await?;
        found.batch = arrow::compute::concat_batches(&ctx.layout.schema, &batches)?;
        if found.batch.num_rows() != hits.len() {
            return Err(exec_datafusion_err!(
                "Lookup in data file /{} read {} rows for {} keys found",
                self.path,
                found.batch.num_rows(),
                hits.len()
            ));
        }
        let read_keys = ctx.converter.convert_columns(
            &ctx.key_columns
                .iter()
                .map(|&c| Arc::clone(found.batch.column(c)))
                .collect::<Vec<_>>(),
        )?;
        if hits
            .iter()
            .enumerate()
            .any(|(i, &(w, _))| read_keys.row(i) != keys.row(w))
        {
            return Err(exec_datafusion_err!(
                "Lookup in data file /{} read other rows than the keys found",
                self.path
            ));
        }
        if let Some(progress) = ctx.progress {
            progress.add_rows_read(hits.len());
        }
        found.hits = hits;
        Ok(found)
    }

    /// The rows `ranges` of the file in `layout`.
    async fn read(
        &self,
        ctx: &LookupContext<'_>,
        layout: &Arc<ReadLayout>,
        ranges: Vec<Range<usize>>,
    ) -> Result<impl futures::Stream<Item = Result<arrow::array::RecordBatch>> + Send> {
        let file = FileToRead {
            rows: Some(ranges.into()),
            ..FileToRead::whole(self.path.clone(), self.size, layout.with_system_columns, None)
        };
        let opened = crate::format::open_parquet_with_metadata(
            Arc::clone(&self.store),
            &self.path,
            self.size,
            Arc::clone(&self.metadata),
        )?;
        read_opened_file(
            &self.store,
            opened,
            file,
            Arc::clone(&self.file_schema),
            Arc::clone(layout),
            ctx.batch_size,
        )
        .await
    }

    /// One forward pass over the rows `ranges` (in `layout`, keys at `key_columns`) matching
    /// the `wanted` keys: the matching rows (with `keep_rows`) and `(wanted key, position)` of
    /// each. `None` if the file is not sorted by key with one row per key.
    #[allow(clippy::too_many_arguments)]
    async fn merge(
        &self,
        ctx: &LookupContext<'_>,
        layout: &Arc<ReadLayout>,
        key_columns: &[usize],
        ranges: Vec<Range<usize>>,
        keys: &Rows,
        wanted: &[usize],
        keep_rows: bool,
    ) -> Result<Option<(Vec<arrow::array::RecordBatch>, Vec<(usize, u64)>)>> {
        let mut stream = Box::pin(self.read(ctx, layout, ranges.clone()).await?);
        let mut positions = RowPositions::new(ranges);
        let mut next = 0; // into `wanted`
        let mut pieces = Vec::new();
        let mut hits = Vec::new();
        let mut last: Option<OwnedRow> = None;
        while next < wanted.len() {
            let Some(batch) = stream.try_next().await? else {
                break;
            };
            if let Some(progress) = ctx.progress {
                progress.add_rows_read(batch.num_rows());
            }
            let batch_positions: Vec<u64> = positions
                .take(batch.num_rows())
                .into_iter()
                .flatten()
                .map(|p| p as u64)
                .collect();
            if batch_positions.len() != batch.num_rows() {
                return Err(exec_datafusion_err!(
                    "Lookup in data file /{} read more rows than it selected",
                    self.path
                ));
            }
            let columns: Vec<_> = key_columns.iter().map(|&c| Arc::clone(batch.column(c))).collect();
            let batch_keys = ctx.converter.convert_columns(&columns)?;
            // the merge below relies on it; a level above 0 must be sorted with unique keys
            let after_previous = match (&last, batch_keys.num_rows()) {
                (Some(last), n) if n > 0 => last.row() < batch_keys.row(0),
                _ => true,
            };
            if !after_previous
                || !(1..batch_keys.num_rows()).all(|i| batch_keys.row(i - 1) < batch_keys.row(i))
            {
                return Ok(None);
            }
            if batch_keys.num_rows() > 0 {
                last = Some(batch_keys.row(batch_keys.num_rows() - 1).owned());
            }
            let mut kept: Vec<u32> = Vec::new();
            for (row, key) in batch_keys.iter().enumerate() {
                while next < wanted.len() && keys.row(wanted[next]) < key {
                    next += 1;
                }
                if next == wanted.len() {
                    break;
                }
                if keys.row(wanted[next]) == key {
                    kept.push(row as u32);
                    hits.push((wanted[next], batch_positions[row]));
                    next += 1;
                }
            }
            if keep_rows && !kept.is_empty() {
                pieces.push(take_record_batch(&batch, &UInt32Array::from(kept))?);
            }
        }
        Ok(Some((pieces, hits)))
    }

    /// The units that may hold one of the `wanted` keys, as ascending row ranges.
    fn ranges_to_read(&self, first_keys: &Rows, wanted: &[usize]) -> Vec<Range<usize>> {
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for unit in &self.units {
            // the first wanted key not below the unit's minimum, and whether it is within it
            let from = match &unit.min {
                Some(min) => wanted.partition_point(|&w| first_keys.row(w) < min.row()),
                None => 0,
            };
            let inside = from < wanted.len()
                && unit
                    .max
                    .as_ref()
                    .is_none_or(|max| first_keys.row(wanted[from]) <= max.row());
            if !inside {
                continue;
            }
            match ranges.last_mut() {
                Some(last) if last.end == unit.rows.start => last.end = unit.rows.end,
                _ => ranges.push(unit.rows.clone()),
            }
        }
        ranges
    }
}
