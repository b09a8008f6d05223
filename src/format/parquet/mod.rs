//! Parquet data files: projection by root column and deletion vectors as the reader's row
//! selection, so neither unread columns nor deleted rows are decoded. Writing is in [`encode`].

use std::ops::Range;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::{exec_datafusion_err, Result};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, RowFilter, RowSelection,
};
#[allow(
    deprecated,
    reason = "ParquetObjectReader still serves object_store 0.13; revisit with arrow-rs #10308"
)]
use parquet::arrow::async_reader::ParquetObjectReader;
use parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};

use super::FileValueFilter;
use crate::deletion_vector::DeletionVector;

mod chunk_stats;
mod dictionary;
mod encode;
mod tail_reader;

use tail_reader::TailReader;

pub(in crate::format) use chunk_stats::from_writer as stats_from_writer;
pub(super) use encode::Encoder;

/// `file.compression` values this format writes.
pub(super) const COMPRESSIONS: &[&str] = &["zstd", "snappy", "lz4", "gzip", "none", "uncompressed"];

/// A file whose footer is read: its reader and metadata, from which each read builds its
/// decoder (with the column types that read asks for).
pub(super) struct Opened {
    input: TailReader,
    metadata: ArrowReaderMetadata,
    path: Path,
}

pub(super) async fn open(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
    with_page_index: bool,
    whole_file_bytes: u64,
) -> Result<Opened> {
    #[allow(deprecated, reason = "see the import")]
    let reader = TailReader::new(
        ParquetObjectReader::new(store, path.clone()).with_file_size(size),
        size,
        whole_file_bytes,
    );
    // The page index is optional: files written without one read by row groups.
    let policy = if with_page_index {
        PageIndexPolicy::Optional
    } else {
        PageIndexPolicy::Skip
    };
    let options = ArrowReaderOptions::new().with_page_index_policy(policy);
    let mut input = reader;
    let metadata = std::panic::AssertUnwindSafe(ArrowReaderMetadata::load_async(&mut input, options))
        .catch_unwind()
        .await
        .map_err(|panic| super::decoder_panicked("Parquet", path, panic.as_ref()))?
        .map_err(|e| exec_datafusion_err!("Failed to open Parquet data file /{path}: {e}"))?;
    Ok(Opened {
        input,
        metadata,
        path: path.clone(),
    })
}

/// The file at `path` opened from its footer (and page index) read before.
pub(super) fn open_with_metadata(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
    metadata: Arc<ParquetMetaData>,
    whole_file_bytes: u64,
) -> Result<Opened> {
    #[allow(deprecated, reason = "see the import")]
    let reader = TailReader::with_known_metadata(
        ParquetObjectReader::new(store, path.clone()).with_file_size(size),
        size,
        whole_file_bytes,
    );
    let metadata = super::unless_panic("Parquet", path, || {
        ArrowReaderMetadata::try_new(metadata, ArrowReaderOptions::new())
    })?
    .map_err(|e| exec_datafusion_err!("Failed to open Parquet data file /{path}: {e}"))?;
    Ok(Opened {
        input: reader,
        metadata,
        path: path.clone(),
    })
}

impl Opened {
    pub(super) fn schema(&self) -> SchemaRef {
        Arc::clone(self.metadata.schema())
    }

    pub(super) fn metadata(&self) -> &Arc<ParquetMetaData> {
        self.metadata.metadata()
    }

    /// Reads `columns` of the rows in `wanted` (all rows if `None`) that `deleted` keeps and
    /// `filter` passes (its columns decoded first, the others only for the rows that pass).
    /// Row groups none of whose rows are wanted are never fetched. The string columns named in
    /// `as_views` decode as `Utf8View`: views into the decoded pages rather than copies of
    /// every value.
    pub(super) fn read(
        self,
        columns: &[String],
        as_views: &[String],
        deleted: Option<&DeletionVector>,
        wanted: Option<&[Range<usize>]>,
        filter: Option<FileValueFilter>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Opened {
            input,
            metadata,
            path,
        } = self;
        let metadata = match as_views.is_empty() {
            true => metadata,
            false => with_string_views(metadata, as_views)
                .map_err(|e| exec_datafusion_err!("Failed to read Parquet data file /{path}: {e}"))?,
        };
        #[allow(deprecated, reason = "see the import")]
        let builder = ParquetRecordBatchStreamBuilder::new_with_metadata(input, metadata);
        let file_schema = Arc::clone(builder.schema());
        let indices: Vec<usize> = columns
            .iter()
            .filter_map(|n| file_schema.index_of(n).ok())
            .collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), indices);
        let rows = builder.metadata().file_metadata().num_rows().max(0) as usize;
        let builder = match rows_read(rows, deleted, wanted) {
            Some(kept) => {
                builder.with_row_selection(RowSelection::from_consecutive_ranges(kept.into_iter(), rows))
            }
            None => builder,
        };
        let builder = match filter {
            Some(filter) => {
                let mask =
                    ProjectionMask::roots(builder.parquet_schema(), filter.file_columns().iter().copied());
                let predicate = ArrowPredicateFn::new(mask, move |batch| filter.evaluate(&batch));
                builder.with_row_filter(RowFilter::new(vec![Box::new(predicate)]))
            }
            None => builder,
        };
        let stream = super::unless_panic("Parquet", &path, || {
            builder.with_projection(mask).with_batch_size(batch_size).build()
        })?
        .map_err(|e| exec_datafusion_err!("Failed to read Parquet data file /{path}: {e}"))?;
        // (after a panic the stream ends: catch_unwind yields the panic, then nothing)
        Ok(std::panic::AssertUnwindSafe(stream)
            .catch_unwind()
            .map(move |item| match item {
                Ok(batch) => {
                    batch.map_err(|e| exec_datafusion_err!("Failed to read Parquet data file /{path}: {e}"))
                }
                Err(panic) => Err(super::decoder_panicked("Parquet", &path, panic.as_ref())),
            })
            .boxed())
    }
}

/// `metadata` with the top-level string columns named in `names` read as `Utf8View`.
fn with_string_views(
    metadata: ArrowReaderMetadata,
    names: &[String],
) -> parquet::errors::Result<ArrowReaderMetadata> {
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = metadata.schema();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 if names.contains(f.name()) => {
                f.as_ref().clone().with_data_type(DataType::Utf8View)
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    let supplied = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    ArrowReaderMetadata::try_new(
        Arc::clone(metadata.metadata()),
        ArrowReaderOptions::new().with_schema(supplied),
    )
}

/// The rows of a file of `rows` rows that a read of the `wanted` rows (all if `None`) returns
/// once `deleted` masks its rows, as ascending ranges; `None` when that is every row.
pub(crate) fn rows_read(
    rows: usize,
    deleted: Option<&DeletionVector>,
    wanted: Option<&[Range<usize>]>,
) -> Option<Vec<Range<usize>>> {
    match (deleted, wanted) {
        (None, None) => None,
        (Some(dv), None) => Some(dv.kept_row_ranges(rows as u64)),
        (None, Some(w)) => Some(w.to_vec()),
        (Some(dv), Some(w)) => Some(intersect_ranges(&dv.kept_row_ranges(rows as u64), w)),
    }
}

/// The rows in both `a` and `b` (ascending, non-overlapping ranges), ascending.
pub(crate) fn intersect_ranges(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start < end {
            out.push(start..end);
        }
        if a[i].end <= b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::intersect_ranges;

    #[test]
    fn intersection_of_row_ranges() {
        assert_eq!(intersect_ranges(&[0..10, 20..30], &[5..25]), vec![5..10, 20..25]);
        assert!(intersect_ranges(&[0..10], &[10..20]).is_empty());
        assert_eq!(intersect_ranges(&[0..3, 4..8], &[0..100]), vec![0..3, 4..8]);
    }
}
