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
    store: Arc<dyn ObjectStore>,
    size: u64,
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
        ParquetObjectReader::new(Arc::clone(&store), path.clone()).with_file_size(size),
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
        store,
        size,
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
        ParquetObjectReader::new(Arc::clone(&store), path.clone()).with_file_size(size),
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
        store,
        size,
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
            ..
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

    /// As [`Self::read`] with no filter, the columns decoded by two readers of the file side
    /// by side: `columns` are cut in two groups of about equal compressed size, the second
    /// group decoded on a task of its own a couple of batches ahead, and each pair of batches
    /// joined again. Both readers select the same rows in batches of the same size, so their
    /// batches pair up; a pair that does not is an error, never a silent mismatch.
    pub(super) fn read_side_by_side(
        self,
        columns: &[String],
        as_views: &[String],
        deleted: Option<&DeletionVector>,
        wanted: Option<&[Range<usize>]>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let (first, second) = halves_by_size(self.metadata(), &self.schema(), columns);
        if first.is_empty() || second.is_empty() {
            return self.read(columns, as_views, deleted, wanted, None, batch_size);
        }
        #[allow(deprecated, reason = "see the import")]
        let other = Opened {
            input: TailReader::with_known_metadata(
                ParquetObjectReader::new(Arc::clone(&self.store), self.path.clone())
                    .with_file_size(self.size),
                self.size,
                0,
            ),
            metadata: self.metadata.clone(),
            path: self.path.clone(),
            store: Arc::clone(&self.store),
            size: self.size,
        };
        let path = self.path.clone();
        let left = self.read(&first, as_views, deleted, wanted, None, batch_size)?;
        let mut right = other.read(&second, as_views, deleted, wanted, None, batch_size)?;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(2);
        let task = datafusion::common::runtime::SpawnedTask::spawn(async move {
            while let Some(batch) = right.next().await {
                let failed = batch.is_err();
                if tx.send(batch).await.is_err() || failed {
                    return;
                }
            }
        });
        let state = (left, rx, task, path);
        Ok(
            futures::stream::unfold(state, |(mut left, mut rx, task, path)| async move {
                let pair = (left.next().await, rx.recv().await);
                let joined = match pair {
                    (None, None) => return None,
                    (Some(Err(e)), _) | (_, Some(Err(e))) => Err(e),
                    (Some(Ok(l)), Some(Ok(r))) if l.num_rows() == r.num_rows() => joined(l, r),
                    _ => Err(exec_datafusion_err!(
                        "The two readers of Parquet data file /{path} returned different rows"
                    )),
                };
                Some((joined, (left, rx, task, path)))
            })
            .boxed(),
        )
    }
}

/// The columns of two batches of the same rows as one batch.
fn joined(left: RecordBatch, right: RecordBatch) -> Result<RecordBatch> {
    let mut fields: Vec<arrow::datatypes::FieldRef> = left.schema().fields().iter().cloned().collect();
    fields.extend(right.schema().fields().iter().cloned());
    let mut columns = left.columns().to_vec();
    columns.extend(right.columns().iter().cloned());
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(left.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(arrow::datatypes::Schema::new(fields)),
        columns,
        &options,
    )?)
}

/// `columns` (names of `schema`) in two groups of about equal compressed size in the file,
/// the biggest column first into the lighter group.
fn halves_by_size(
    metadata: &ParquetMetaData,
    schema: &SchemaRef,
    columns: &[String],
) -> (Vec<String>, Vec<String>) {
    let size_of = |name: &String| -> i64 {
        let Ok(root) = schema.index_of(name) else {
            return 0;
        };
        let descriptor = metadata.file_metadata().schema_descr();
        metadata
            .row_groups()
            .iter()
            .flat_map(|rg| rg.columns().iter().enumerate())
            .filter(|(leaf, _)| descriptor.get_column_root_idx(*leaf) == root)
            .map(|(_, chunk)| chunk.compressed_size())
            .sum()
    };
    let mut sized: Vec<(i64, &String)> = columns.iter().map(|c| (size_of(c), c)).collect();
    sized.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let (mut first, mut second) = ((0i64, Vec::new()), (0i64, Vec::new()));
    for (size, name) in sized {
        let lighter = if first.0 <= second.0 {
            &mut first
        } else {
            &mut second
        };
        lighter.0 += size;
        lighter.1.push(name.clone());
    }
    (first.1, second.1)
}

/// `field` read as `Utf8View` if it holds strings (`Utf8`, `LargeUtf8`), else `None`.
pub(crate) fn string_view_of(field: &arrow::datatypes::Field) -> Option<arrow::datatypes::Field> {
    use arrow::datatypes::DataType;
    matches!(field.data_type(), DataType::Utf8 | DataType::LargeUtf8)
        .then(|| field.clone().with_data_type(DataType::Utf8View))
}

/// `metadata` with the top-level string columns named in `names` read as `Utf8View`.
fn with_string_views(
    metadata: ArrowReaderMetadata,
    names: &[String],
) -> parquet::errors::Result<ArrowReaderMetadata> {
    use arrow::datatypes::{Field, Schema};
    let schema = metadata.schema();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            names
                .contains(f.name())
                .then(|| string_view_of(f))
                .flatten()
                .unwrap_or_else(|| f.as_ref().clone())
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
    use super::*;

    /// A file of 10,000 rows in row groups of 3,000, four columns of different sizes.
    async fn four_column_file() -> (Arc<dyn ObjectStore>, Path, u64) {
        use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, StringArray};
        let rows = 10_000;
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("k", Arc::new(Int64Array::from_iter_values(0..rows as i64))),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("value number {i}")),
                )),
            ),
            (
                "f",
                Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64 / 7.0))),
            ),
            (
                "i",
                Arc::new(Int32Array::from_iter(
                    (0..rows).map(|i| (i % 3 != 0).then_some(i as i32)),
                )),
            ),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(3000))
            .set_data_page_row_count_limit(700)
            .set_write_batch_size(100)
            .build();
        let mut bytes = Vec::new();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let path = Path::from("bucket-0/data.parquet");
        let size = bytes.len() as u64;
        object_store::ObjectStoreExt::put(store.as_ref(), &path, bytes.into())
            .await
            .unwrap();
        (store, path, size)
    }

    /// Two readers side by side return the rows and values one reader does, in one batch per
    /// batch of the one reader, for row ranges crossing row groups and strings read as views.
    #[tokio::test]
    async fn side_by_side_readers_return_what_one_reader_does() {
        use futures::TryStreamExt;
        let (store, path, size) = four_column_file().await;
        let columns: Vec<String> = ["k", "s", "f", "i"].iter().map(|c| c.to_string()).collect();
        let views = vec!["s".to_string()];
        let wanted = [100..2500, 2600..9000];
        let (first, second) = {
            let opened = open(Arc::clone(&store), &path, size, true, 0).await.unwrap();
            halves_by_size(opened.metadata(), &opened.schema(), &columns)
        };
        assert!(!first.is_empty() && !second.is_empty(), "{first:?} {second:?}");
        let one: Vec<RecordBatch> = open(Arc::clone(&store), &path, size, true, 0)
            .await
            .unwrap()
            .read(&columns, &views, None, Some(&wanted), None, 1000)
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let two: Vec<RecordBatch> = open(Arc::clone(&store), &path, size, true, 0)
            .await
            .unwrap()
            .read_side_by_side(&columns, &views, None, Some(&wanted), 1000)
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(one.len(), two.len());
        for (a, b) in one.iter().zip(&two) {
            assert_eq!(a.num_rows(), b.num_rows());
            for column in &columns {
                let (x, y) = (
                    a.column_by_name(column).unwrap(),
                    b.column_by_name(column).unwrap(),
                );
                assert_eq!(x.as_ref(), y.as_ref(), "column {column}");
            }
        }
        assert_eq!(one.iter().map(|b| b.num_rows()).sum::<usize>(), 2400 + 6400);
        let s = two[0].column_by_name("s").unwrap();
        assert_eq!(s.data_type(), &arrow::datatypes::DataType::Utf8View);
    }

    #[test]
    fn intersection_of_row_ranges() {
        assert_eq!(intersect_ranges(&[0..10, 20..30], &[5..25]), vec![5..10, 20..25]);
        assert!(intersect_ranges(&[0..10], &[10..20]).is_empty());
        assert_eq!(intersect_ranges(&[0..3, 4..8], &[0..100]), vec![0..3, 4..8]);
    }
}
