//! Writing Parquet data files: columns encoded in parallel, encodings chosen by what a column holds.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::{exec_datafusion_err, Result};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, GzipLevel, ZstdLevel};
use parquet::file::metadata::RowGroupMetaDataPtr;
use parquet::file::properties::{WriterProperties, WriterPropertiesBuilder};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use super::{chunk_stats, dictionary};
use crate::format::{EncodedColumnStats, FileFormat, WriteFormat};

/// A Parquet file being written: row groups are encoded as they fill, and the columns of each
/// batch are encoded in parallel (one bucket's flush or compaction would otherwise encode on
/// one core while the others idle). The file is set up when its first rows arrive: whether a
/// value column gets a dictionary is judged from them ([`dictionary`]).
pub(in crate::format) struct Encoder {
    schema: SchemaRef,
    /// Compression and the encodings of key and sequence columns.
    properties: WriterPropertiesBuilder,
    open: Option<OpenFile>,
}

/// The file once its first rows arrived.
struct OpenFile {
    file: SerializedFileWriter<Vec<u8>>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Column writers of the open row group (none open when empty).
    columns: Vec<ArrowColumnWriter>,
    row_group_rows: usize,
    /// Metadata of the row groups closed so far, statistics included.
    row_groups: Vec<RowGroupMetaDataPtr>,
    max_row_group_rows: usize,
}

/// Dictionary page limit of key and sequence columns (bytes), see [`ordered_column_encoding`].
const UNIQUE_COLUMN_DICTIONARY_LIMIT: usize = 32 * 1024;

/// How a column of a data file is encoded, by what it holds.
#[derive(Debug, PartialEq, Eq)]
enum OrderedColumn {
    /// A value column: Parquet's defaults (dictionary, falling back to plain).
    No,
    /// An integer key or sequence column: a small dictionary, falling back to delta encoding.
    Integer,
    /// A key column of another type: a small dictionary, falling back to plain.
    Other,
}

/// Key and sequence columns of a KeyValue file (`_KEY_*`, `_SEQUENCE_NUMBER`, and the value
/// columns that repeat a key field) hold about one distinct value per row. A dictionary never
/// pays off for them, yet it grows to its size limit (1 MiB) before the writer falls back, and
/// every reader of any page of the column must decode it first: a small limit keeps it to the
/// first few thousand rows.
///
/// After that, integers fall back to delta encoding rather than plain: a sorted run orders its
/// rows by key, so the first key column ascends, and the sequence numbers of one write ascend
/// with its input. Delta encoding stores such a column in a few bits a value (dense ids in none
/// at all), where plain stores eight bytes a value that every merged read must decompress.
/// Every reader of Parquet decodes it (Paimon's Java reader since 1.0, Arrow for pypaimon).
///
/// Files of fewer rows than the dictionary holds keep the bytes Paimon's writers give them:
/// compaction picks runs by their byte sizes (semantics.md §5.2), and small tables should
/// compact as Paimon compacts them.
fn ordered_column_encoding(
    schema: &arrow::datatypes::Schema,
    field: &arrow::datatypes::Field,
) -> OrderedColumn {
    let name = field.name();
    let repeats_key = schema
        .field_with_name(&format!("{}{name}", crate::spec::KEY_PREFIX))
        .is_ok();
    if !(name == crate::spec::SEQUENCE_NUMBER || name.starts_with(crate::spec::KEY_PREFIX) || repeats_key) {
        return OrderedColumn::No;
    }
    use arrow::datatypes::DataType as T;
    match field.data_type() {
        T::Int8
        | T::Int16
        | T::Int32
        | T::Int64
        | T::UInt8
        | T::UInt16
        | T::UInt32
        | T::UInt64
        | T::Date32
        | T::Time32(_)
        | T::Time64(_)
        | T::Timestamp(_, _) => OrderedColumn::Integer,
        _ => OrderedColumn::Other,
    }
}

/// Batches smaller than this encode on the calling thread: spawning is not worth it.
const PARALLEL_ENCODE_MIN_ROWS: usize = 2048;

impl Encoder {
    pub(in crate::format) fn new(write: &WriteFormat, schema: SchemaRef) -> Result<Self> {
        let compression = match write.compression.as_str() {
            "zstd" => Compression::ZSTD(ZstdLevel::try_new(write.zstd_level)?),
            "snappy" => Compression::SNAPPY,
            "lz4" => Compression::LZ4_RAW,
            "gzip" => Compression::GZIP(GzipLevel::default()),
            "none" | "uncompressed" => Compression::UNCOMPRESSED,
            other => {
                return Err(crate::format::unknown_compression(
                    FileFormat::Parquet,
                    other,
                    "zstd, snappy, lz4, gzip or none",
                ))
            }
        };
        // Chunk statistics stay whole: they are the file's column statistics ([`chunk_stats`]).
        let mut builder = WriterProperties::builder()
            .set_compression(compression)
            .set_statistics_truncate_length(None);
        for field in schema.fields() {
            let column = ColumnPath::from(field.name().as_str());
            builder = match ordered_column_encoding(&schema, field) {
                OrderedColumn::No => builder,
                OrderedColumn::Integer => builder
                    .set_column_dictionary_page_size_limit(column.clone(), UNIQUE_COLUMN_DICTIONARY_LIMIT)
                    .set_column_encoding(column, Encoding::DELTA_BINARY_PACKED),
                OrderedColumn::Other => {
                    builder.set_column_dictionary_page_size_limit(column, UNIQUE_COLUMN_DICTIONARY_LIMIT)
                }
            };
        }
        Ok(Encoder {
            schema,
            properties: builder,
            open: None,
        })
    }

    pub(in crate::format) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let open = match &mut self.open {
            Some(open) => open,
            None => self
                .open
                .insert(OpenFile::new(&self.schema, self.value_encodings(batch))?),
        };
        open.write(batch)
    }

    /// The writer's properties with the dictionary turned off for the value columns whose
    /// first rows (`batch`) say it would not pay off.
    fn value_encodings(&self, batch: &RecordBatch) -> WriterProperties {
        let mut builder = self.properties.clone();
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            if ordered_column_encoding(&self.schema, field) == OrderedColumn::No
                && !dictionary::pays_off(column)
            {
                builder =
                    builder.set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), false);
            }
        }
        builder.build()
    }

    /// Bytes written plus the estimated encoded size of the open row group.
    pub(in crate::format) fn size(&self) -> usize {
        self.open.as_ref().map_or(0, OpenFile::size)
    }

    /// The file's bytes, and the statistics of each top-level column the writer computed
    /// exactly ([`chunk_stats::from_writer`]).
    pub(in crate::format) fn finish(self) -> Result<(Vec<u8>, Vec<Option<EncodedColumnStats>>)> {
        match self.open {
            Some(open) => open.finish(),
            None => OpenFile::new(&self.schema, self.properties.build())?.finish(),
        }
    }
}

/// Rows of a column handed to its writer at once. The levels and leaves of a slice are
/// allocated per slice, so a bounded slice lets the allocator reuse the same memory rather
/// than fault in fresh pages for a whole row group of levels (a flush hands over up to a
/// million rows). A multiple of the writer's mini-batch (1024 rows), so pages are cut where
/// they would be cut for the whole column.
const ENCODE_SLICE_ROWS: usize = 64 * 1024;

/// One column of a batch and the writers of its leaves.
struct ColumnJob<'a> {
    field: &'a arrow::datatypes::FieldRef,
    column: &'a arrow::array::ArrayRef,
    writers: Vec<&'a mut ArrowColumnWriter>,
}

impl ColumnJob<'_> {
    fn run(mut self) -> Result<()> {
        let rows = self.column.len();
        let mut offset = 0;
        while offset < rows {
            let len = (rows - offset).min(ENCODE_SLICE_ROWS);
            let leaves = compute_leaves(self.field, &self.column.slice(offset, len))?;
            for (writer, leaf) in self.writers.iter_mut().zip(&leaves) {
                writer.write(leaf)?;
            }
            offset += len;
        }
        Ok(())
    }
}

impl OpenFile {
    fn new(schema: &SchemaRef, props: WriterProperties) -> Result<Self> {
        let max_row_group_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        // ArrowWriter sets up the file as usual (Arrow schema in the footer metadata); its
        // low-level parts let the columns be encoded on several threads.
        let (file, factory) =
            ArrowWriter::try_new(Vec::new(), Arc::clone(schema), Some(props))?.into_serialized_writer()?;
        Ok(OpenFile {
            file,
            factory,
            schema: Arc::clone(schema),
            columns: Vec::new(),
            row_group_rows: 0,
            row_groups: Vec::new(),
            max_row_group_rows,
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut offset = 0;
        while offset < batch.num_rows() {
            if self.columns.is_empty() {
                self.columns = self.factory.create_column_writers(self.row_groups.len())?;
            }
            let take = (batch.num_rows() - offset).min(self.max_row_group_rows - self.row_group_rows);
            self.encode(&batch.slice(offset, take))?;
            offset += take;
            self.row_group_rows += take;
            if self.row_group_rows >= self.max_row_group_rows {
                self.close_row_group()?;
            }
        }
        Ok(())
    }

    /// Encodes `batch` into the open row group, each column on the next free thread.
    fn encode(&mut self, batch: &RecordBatch) -> Result<()> {
        let jobs = self.column_jobs(batch)?;
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(jobs.len());
        if threads <= 1 || batch.num_rows() < PARALLEL_ENCODE_MIN_ROWS {
            return jobs.into_iter().try_for_each(ColumnJob::run);
        }
        let jobs = std::sync::Mutex::new(jobs.into_iter());
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| -> Result<()> {
                        loop {
                            let next = jobs
                                .lock()
                                .map_err(|_| exec_datafusion_err!("Parquet column encoder panicked"))?
                                .next();
                            let Some(job) = next else { return Ok(()) };
                            job.run()?;
                        }
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|w| {
                w.join()
                    .map_err(|_| exec_datafusion_err!("Parquet column encoder panicked"))?
            })
        })
    }

    /// One job per column of `batch`, holding the writers of its leaves (a nested column has
    /// several, in the order the factory created them).
    fn column_jobs<'a>(&'a mut self, batch: &'a RecordBatch) -> Result<Vec<ColumnJob<'a>>> {
        let mut writers = self.columns.iter_mut();
        let mut jobs = Vec::with_capacity(batch.num_columns());
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            let leaves = compute_leaves(field, &column.slice(0, 0))?.len();
            jobs.push(ColumnJob {
                field,
                column,
                writers: writers.by_ref().take(leaves).collect(),
            });
        }
        Ok(jobs)
    }

    fn close_row_group(&mut self) -> Result<()> {
        if self.columns.is_empty() {
            return Ok(());
        }
        let chunks = std::mem::take(&mut self.columns)
            .into_iter()
            .map(ArrowColumnWriter::close)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        self.row_groups.push(row_group.close()?);
        self.row_group_rows = 0;
        Ok(())
    }

    fn size(&self) -> usize {
        self.file.bytes_written()
            + self
                .columns
                .iter()
                .map(ArrowColumnWriter::get_estimated_total_bytes)
                .sum::<usize>()
    }

    fn finish(mut self) -> Result<(Vec<u8>, Vec<Option<EncodedColumnStats>>)> {
        self.close_row_group()?;
        let stats = chunk_stats::file_column_stats(&self.schema, &self.row_groups)?;
        self.file.finish()?;
        Ok((std::mem::take(self.file.inner_mut()), stats))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, Float64Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::Encoder;
    use crate::format::{FileFormat, WriteFormat};

    fn key_value_file(n: i64) -> (RecordBatch, Bytes) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_KEY_id", DataType::Int64, false),
            Field::new("_KEY_name", DataType::Utf8, false),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("_VALUE_KIND", DataType::Int8, false),
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("amount", DataType::Int64, true),
        ]));
        let ids = Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * 3 - 5_000)));
        let names = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("k{i:06}"))));
        // Sequence numbers of one write in key order: a permutation, not ascending.
        let sequences = Int64Array::from_iter_values((0..n).map(|i| 1_000 + (i * 7_919) % n));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                ids.clone(),
                names.clone(),
                Arc::new(sequences),
                Arc::new(Int8Array::from(vec![0i8; n as usize])),
                ids,
                names,
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| (i % 5 != 0).then_some(i % 7)),
                )),
            ],
        )
        .unwrap();
        let write = zstd_parquet();
        let mut encoder = Encoder::new(&write, batch.schema()).unwrap();
        encoder.write(&batch).unwrap();
        let file = Bytes::from(encoder.finish().unwrap().0);

        let read: Vec<RecordBatch> = ParquetRecordBatchReader::try_new(file.clone(), 4096)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
        for (column, (written, back)) in batch.columns().iter().zip(read.columns()).enumerate() {
            assert_eq!(written.to_data(), back.to_data(), "column {column}");
        }
        (batch, file)
    }

    /// Parquet as Paimon writes it by default: zstd at level 1.
    fn zstd_parquet() -> WriteFormat {
        WriteFormat {
            format: FileFormat::Parquet,
            compression: "zstd".into(),
            zstd_level: 1,
        }
    }

    fn encodings(file: &Bytes, column: usize) -> Vec<Encoding> {
        let reader = SerializedFileReader::new(file.clone()).unwrap();
        reader
            .metadata()
            .row_group(0)
            .column(column)
            .encodings()
            .collect()
    }

    /// Integer key and sequence columns fall back from a small dictionary to delta encoding,
    /// other key columns to plain, value columns keep Parquet's defaults; every column reads
    /// back as written.
    #[test]
    fn key_and_sequence_columns_fall_back_to_delta_encoding_when_integers() {
        let (_, file) = key_value_file(100_000);
        for delta in [0, 2, 4] {
            assert!(
                encodings(&file, delta).contains(&Encoding::DELTA_BINARY_PACKED),
                "column {delta}"
            );
        }
        for other in [1, 3, 5, 6] {
            assert!(
                !encodings(&file, other).contains(&Encoding::DELTA_BINARY_PACKED),
                "column {other}"
            );
        }
        // 100,000 ascending ids: the 32 KiB dictionary of the first rows, then a few bits a
        // value, where plain encoding takes 800,000 bytes.
        let reader = SerializedFileReader::new(file).unwrap();
        let size = reader.metadata().row_group(0).column(0).uncompressed_size();
        assert!(size < 100_000, "{size}");
    }

    /// A value column of distinct values is written plain from its first page (no dictionary
    /// page), a column of repeated values keeps its dictionary; both read back as written.
    #[test]
    fn distinct_value_columns_are_written_plain() {
        let n = 50_000;
        let schema = Arc::new(Schema::new(vec![
            Field::new("amount", DataType::Float64, true),
            Field::new("code", DataType::Int32, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Float64Array::from_iter(
                    (0..n).map(|i| (i % 9 != 0).then_some(i as f64 * 0.37)),
                )),
                Arc::new(Int32Array::from_iter_values((0..n).map(|i| i % 40))),
            ],
        )
        .unwrap();
        let write = zstd_parquet();
        let mut encoder = Encoder::new(&write, schema).unwrap();
        encoder.write(&batch.slice(0, 20_000)).unwrap();
        encoder.write(&batch.slice(20_000, n as usize - 20_000)).unwrap();
        let file = Bytes::from(encoder.finish().unwrap().0);
        let reader = SerializedFileReader::new(file.clone()).unwrap();
        let chunk = |c: usize| reader.metadata().row_group(0).column(c).clone();
        assert!(chunk(0).dictionary_page_offset().is_none());
        assert!(!encodings(&file, 0).contains(&Encoding::RLE_DICTIONARY));
        assert!(chunk(1).dictionary_page_offset().is_some());
        let read: Vec<RecordBatch> = ParquetRecordBatchReader::try_new(file, 8192)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(
            arrow::compute::concat_batches(&read[0].schema(), &read).unwrap(),
            batch
        );
    }

    /// A file of fewer rows than the dictionary holds is encoded as before (and as Paimon's
    /// writers encode it): its byte size steers compaction picks.
    #[test]
    fn small_files_keep_their_dictionary() {
        let (_, file) = key_value_file(1_000);
        for column in 0..7 {
            assert!(
                !encodings(&file, column).contains(&Encoding::DELTA_BINARY_PACKED),
                "column {column}"
            );
            assert!(
                encodings(&file, column).contains(&Encoding::RLE_DICTIONARY),
                "column {column}"
            );
        }
    }

    /// A batch of more rows than one encoding slice, with nested columns (a list of integers,
    /// a struct holding a string) and nulls at every level, reads back as written: each slice
    /// hands its leaves to the writers of its own column, in order.
    #[test]
    fn nested_columns_of_many_slices_read_back_as_written() {
        use arrow::array::{ListArray, StructArray};
        use arrow::datatypes::Int32Type;
        let n = 2 * super::ENCODE_SLICE_ROWS + 1_234;
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>((0..n).map(|i| {
            (i % 11 != 0).then(|| {
                (0..(i % 4) as i32)
                    .map(|j| (j != 2).then_some(j * i as i32))
                    .collect::<Vec<_>>()
            })
        }));
        let names: arrow::array::ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 5 != 0).then(|| format!("n{i}"))),
        ));
        let structs = StructArray::try_new(
            vec![Field::new("name", DataType::Utf8, true)].into(),
            vec![names],
            Some((0..n).map(|i| i % 13 != 0).collect()),
        )
        .unwrap();
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("tags", lists.data_type().clone(), true),
            Field::new("info", structs.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(0..n as i64)),
                Arc::new(lists),
                Arc::new(structs),
            ],
        )
        .unwrap();
        let write = zstd_parquet();
        let mut encoder = Encoder::new(&write, schema).unwrap();
        encoder.write(&batch).unwrap();
        let file = Bytes::from(encoder.finish().unwrap().0);
        let read: Vec<RecordBatch> = ParquetRecordBatchReader::try_new(file, 8192)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
        assert_eq!(read.num_rows(), n);
        for (column, (written, back)) in batch.columns().iter().zip(read.columns()).enumerate() {
            assert_eq!(written.as_ref(), back.as_ref(), "column {column}");
        }
    }
}
