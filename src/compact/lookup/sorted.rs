//! Lookup in one Parquet data file by a sorted merge: the file is sorted by key and so are the
//! keys asked for, so one forward pass over the file's rows finds them all. Only the pages (or
//! row groups, without a page index) whose first-key statistics bracket a wanted key are read,
//! and only the rows found are kept, so memory is bounded by the keys asked for, not the file.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::UInt32Array;
use arrow::compute::take_record_batch;
use arrow::row::{OwnedRow, Rows};
use datafusion::common::{exec_datafusion_err, Result};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::ObjectStore;

use super::{Found, LookupContext};
use crate::deletion_vector::DeletionVector;
use crate::scan::{file_key_units, read_opened_file, FileToRead};
use crate::spec::TableSchema;
use parquet::file::metadata::ParquetMetaData;

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
    pub(super) async fn find(
        &self,
        ctx: &LookupContext<'_>,
        keys: &Rows,
        first_keys: &Rows,
        wanted: &[usize],
        deleted: Option<&DeletionVector>,
    ) -> Result<Option<Found>> {
        let mut ranges = self.ranges_to_read(first_keys, wanted);
        if let Some(dv) = deleted.filter(|dv| !dv.is_empty()) {
            ranges = crate::format::intersect_ranges(&ranges, &dv.kept_row_ranges(self.row_count as u64));
        }
        let mut found = Found::empty(ctx.layout);
        if ranges.is_empty() {
            return Ok(Some(found));
        }
        let file = FileToRead {
            rows: Some(ranges.clone().into()),
            ..FileToRead::whole(self.path.clone(), self.size, true, None)
        };
        let opened = crate::format::open_parquet_with_metadata(
            Arc::clone(&self.store),
            &self.path,
            self.size,
            Arc::clone(&self.metadata),
        )?;
        let mut stream = Box::pin(
            read_opened_file(
                &self.store,
                opened,
                file,
                Arc::clone(&self.file_schema),
                Arc::clone(ctx.layout),
                ctx.batch_size,
            )
            .await?,
        );
        let mut positions = Positions::new(ranges);
        let mut next = 0; // into `wanted`
        let mut pieces = Vec::new();
        let mut last: Option<OwnedRow> = None;
        while next < wanted.len() {
            let Some(batch) = stream.try_next().await? else {
                break;
            };
            if let Some(progress) = ctx.progress {
                progress.add_rows_read(batch.num_rows());
            }
            let batch_positions = positions.take(batch.num_rows());
            if batch_positions.len() != batch.num_rows() {
                return Err(exec_datafusion_err!(
                    "Lookup in data file /{} read more rows than it selected",
                    self.path
                ));
            }
            let columns: Vec<_> = ctx
                .key_columns
                .iter()
                .map(|&c| Arc::clone(batch.column(c)))
                .collect();
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
                    found.hits.push((wanted[next], batch_positions[row]));
                    next += 1;
                }
            }
            if !kept.is_empty() {
                pieces.push(take_record_batch(&batch, &UInt32Array::from(kept))?);
            }
        }
        found.batch = arrow::compute::concat_batches(&ctx.layout.schema, &pieces)?;
        Ok(Some(found))
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

/// The file positions of the rows a read of `ranges` returns, batch by batch.
struct Positions {
    ranges: std::vec::IntoIter<Range<usize>>,
    current: Range<usize>,
}

impl Positions {
    fn new(ranges: Vec<Range<usize>>) -> Self {
        Positions {
            ranges: ranges.into_iter(),
            current: 0..0,
        }
    }

    /// The positions of the next `n` rows.
    fn take(&mut self, n: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.current.is_empty() {
                match self.ranges.next() {
                    Some(r) => self.current = r,
                    None => break,
                }
                continue;
            }
            let step = (n - out.len()).min(self.current.len());
            out.extend((self.current.start..self.current.start + step).map(|p| p as u64));
            self.current.start += step;
        }
        out
    }
}
