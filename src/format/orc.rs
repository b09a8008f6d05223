//! ORC data files (Flink's default `file.format` before Paimon 1.0), read through `orc-rust`:
//! projection by root column, deletion vectors as its row selection. Timestamps are decoded
//! at microsecond precision, Paimon's finest. Files are written by orc-rust's writer where it
//! encodes every column, otherwise by ours ([`super::orc_write`]: DECIMAL, TIME, TIMESTAMP WITH
//! LOCAL TIME ZONE and nested types).

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use bytes::Bytes;
use datafusion::common::{exec_datafusion_err, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::ObjectStore;
use orc_rust::compression::CompressionType;
use orc_rust::projection::ProjectionMask;
use orc_rust::schema::TimestampPrecision;
use orc_rust::{ArrowReaderBuilder, ArrowWriterBuilder, RowSelection};

use super::{orc_write, FileFormat, WriteFormat};
use crate::deletion_vector::DeletionVector;

/// Column types orc-rust's writer encodes; schemas with others go to ours.
fn orc_rust_writes(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Timestamp(_, None)
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
    )
}

/// `file.compression` values this format writes.
pub(super) const COMPRESSIONS: &[&str] = &["zstd", "snappy", "lz4", "zlib", "gzip", "none", "uncompressed"];

/// An ORC file being written. orc-rust's writer is not `Send` (its column encoders are trait
/// objects without that bound), so it cannot live across the awaits of an async writer: the
/// batches are kept and encoded at `finish`, and the size estimate is their in-memory size.
pub(super) struct Encoder {
    schema: SchemaRef,
    /// Encode with [`super::orc_write`] rather than orc-rust.
    own_writer: bool,
    compression: Option<CompressionType>,
    batches: Vec<RecordBatch>,
    bytes: usize,
}

fn failed(e: orc_rust::error::OrcError) -> datafusion::error::DataFusionError {
    exec_datafusion_err!("Failed to write an ORC file: {e}")
}

impl Encoder {
    pub(super) fn new(write: &WriteFormat, schema: SchemaRef) -> Result<Self> {
        let own_writer = !schema.fields().iter().all(|f| orc_rust_writes(f.data_type()));
        if let Some(field) = schema
            .fields()
            .iter()
            .find(|f| !orc_write::supported(f.data_type()))
        {
            return Err(exec_datafusion_err!(
                "Writing ORC files does not support column '{}' of type {}; set 'file.format' to 'parquet' or 'avro'",
                field.name(),
                field.data_type()
            ));
        }
        let compression = match write.compression.as_str() {
            "zstd" => Some(CompressionType::Zstd),
            "snappy" => Some(CompressionType::Snappy),
            "lz4" => Some(CompressionType::Lz4),
            "zlib" | "gzip" => Some(CompressionType::Zlib),
            "none" | "uncompressed" => None,
            other => {
                return Err(super::unknown_compression(
                    FileFormat::Orc,
                    other,
                    "zstd, snappy, lz4, zlib or none",
                ))
            }
        };
        Ok(Encoder {
            schema,
            own_writer,
            compression,
            batches: vec![],
            bytes: 0,
        })
    }

    pub(super) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.bytes += batch.get_array_memory_size();
        self.batches.push(batch.clone());
        Ok(())
    }

    pub(super) fn size(&self) -> usize {
        self.bytes
    }

    pub(super) fn finish(self) -> Result<Vec<u8>> {
        if self.own_writer {
            return orc_write::write_file(&self.schema, &self.batches, self.compression);
        }
        let mut buf = Vec::new();
        let builder = ArrowWriterBuilder::new(&mut buf, self.schema);
        let builder = match self.compression {
            Some(c) => builder.with_compression(c),
            None => builder,
        };
        let mut writer = builder.try_build().map_err(failed)?;
        for batch in &self.batches {
            writer.write(batch).map_err(failed)?;
        }
        writer.close().map_err(failed)?;
        Ok(buf)
    }
}

pub(super) struct Opened {
    builder: ArrowReaderBuilder<Bytes>,
    bytes: Bytes,
    path: Path,
}

pub(super) async fn open(store: Arc<dyn ObjectStore>, path: &Path) -> Result<Opened> {
    let bytes = super::fetch(&store, path).await?;
    let builder = reader_builder(&bytes, path, TimestampPrecision::Microsecond)?;
    Ok(Opened {
        builder,
        bytes,
        path: path.clone(),
    })
}

fn reader_builder(
    bytes: &Bytes,
    path: &Path,
    precision: TimestampPrecision,
) -> Result<ArrowReaderBuilder<Bytes>> {
    Ok(
        super::unless_panic("ORC", path, || ArrowReaderBuilder::try_new(bytes.clone()))?
            .map_err(|e| exec_datafusion_err!("Failed to open ORC data file /{path}: {e}"))?
            .with_timestamp_precision(precision),
    )
}

/// An error that says which column failed where orc-rust's does not: a MAP holding a NULL key
/// (Java's ORC writer stores one when the key type is nullable), which an Arrow map cannot hold.
/// Dropping the entry would lose it silently, so the read fails naming the file and the MAP
/// columns read.
fn null_map_key_error(
    path: Path,
    maps: Vec<String>,
) -> impl Fn(datafusion::error::DataFusionError) -> datafusion::error::DataFusionError {
    move |e| {
        let text = e.to_string();
        if !(text.contains("unmasked nulls") && text.contains("\"keys\"")) {
            return e;
        }
        exec_datafusion_err!(
            "ORC data file /{path}: MAP column {} holds a NULL key, which an Arrow map cannot hold (the entry is not dropped silently; Paimon reads such keys only into nullable-key maps)",
            match maps.len() {
                1 => maps[0].clone(),
                _ => format!("(one of {})", maps.join(", ")),
            }
        )
    }
}

/// orc-rust's refusal to decode a timestamp into microseconds without losing digits.
fn finer_than_microseconds(e: &datafusion::error::DataFusionError) -> bool {
    let text = e.to_string();
    text.contains("Overflow while decoding timestamp") && text.contains("Microsecond")
}

impl Opened {
    pub(super) fn schema(&self) -> SchemaRef {
        self.builder.schema()
    }

    /// The batches of `columns`. Timestamps decode at microsecond precision, which covers
    /// every year Paimon writes; a file holding nanoseconds (TIMESTAMP(7..9), as pyarrow's ORC
    /// writer stores every timestamp) is decoded again at nanosecond precision from where the
    /// first decoding stopped.
    pub(super) fn read(
        self,
        columns: &[String],
        deleted: Option<&DeletionVector>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Opened { builder, bytes, path } = self;
        let maps: Vec<String> = builder
            .schema()
            .fields()
            .iter()
            .filter(|f| {
                columns.contains(f.name()) && matches!(f.data_type(), arrow::datatypes::DataType::Map(..))
            })
            .map(|f| format!("'{}'", f.name()))
            .collect();
        let null_key = null_map_key_error(path.clone(), maps);
        let kept: Option<Vec<std::ops::Range<usize>>> = deleted.map(|dv| {
            let rows = builder.file_metadata().number_of_rows();
            dv.kept_row_ranges(rows).into_iter().collect()
        });
        let columns = columns.to_vec();
        let configure = move |builder: ArrowReaderBuilder<Bytes>| {
            let mask = ProjectionMask::named_roots(builder.file_metadata().root_data_type(), &columns);
            let rows = builder.file_metadata().number_of_rows();
            let builder = match &kept {
                Some(kept) => builder.with_row_selection(RowSelection::from_consecutive_ranges(
                    kept.iter().cloned(),
                    rows as usize,
                )),
                None => builder,
            };
            builder.with_projection(mask).with_batch_size(batch_size).build()
        };
        let micros = super::guarded_batches("ORC", path.clone(), configure(builder));
        let mut emitted = 0usize;
        let mut retry: Option<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>> = None;
        let mut micros = Some(micros);
        let batches = std::iter::from_fn(move || loop {
            if let Some(nanos) = retry.as_mut() {
                return nanos.next();
            }
            let next = micros.as_mut()?.next();
            match next {
                Some(Err(e)) if finer_than_microseconds(&e) => {
                    micros = None;
                    let builder = match reader_builder(&bytes, &path, TimestampPrecision::Nanosecond) {
                        Ok(b) => b,
                        Err(e) => return Some(Err(e)),
                    };
                    // the rows already returned are skipped
                    let mut skip = emitted;
                    let rest = super::guarded_batches("ORC", path.clone(), configure(builder)).filter_map(
                        move |b| match b {
                            Ok(batch) if skip >= batch.num_rows() => {
                                skip -= batch.num_rows();
                                None
                            }
                            Ok(batch) => {
                                let out = batch.slice(skip, batch.num_rows() - skip);
                                skip = 0;
                                Some(Ok(out))
                            }
                            Err(e) => Some(Err(e)),
                        },
                    );
                    retry = Some(Box::new(rest));
                }
                Some(Ok(batch)) => {
                    emitted += batch.num_rows();
                    return Some(Ok(batch));
                }
                Some(Err(e)) => return Some(Err(null_key(e))),
                None => return None,
            }
        });
        Ok(futures::stream::iter(batches).boxed())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, TimeUnit, TimestampNanosecondType};
    use futures::TryStreamExt;

    async fn read(
        file: &str,
        columns: &[&str],
    ) -> datafusion::common::Result<Vec<arrow::array::RecordBatch>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/extra")
            .join(file);
        let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new());
        let location = object_store::path::Path::from_absolute_path(&path).unwrap();
        let opened = super::open(Arc::clone(&store), &location).await?;
        let columns: Vec<String> = columns.iter().map(|s| s.to_string()).collect();
        opened.read(&columns, None, 1024)?.try_collect().await
    }

    /// A MAP entry with a NULL key (tests/fixtures/extra/orc_map_null_key.orc: column `m` of two
    /// rows, {a: 1, NULL: 2} and {c: 3}, encoded by `format::orc_write` from a key array holding
    /// a null, as Java's ORC writer stores a nullable key type) fails naming the file and the
    /// column, never dropping the entry.
    #[tokio::test]
    async fn a_null_map_key_fails_naming_the_column() {
        let err = read("orc_map_null_key.orc", &["m"])
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("orc_map_null_key.orc"), "{err}");
        assert!(err.contains("MAP column 'm' holds a NULL key"), "{err}");
    }

    /// pyarrow's ORC writer (pypaimon's) stores every timestamp at nanosecond precision, and
    /// local-zoned ones as UTC instants: nanoseconds, years far from 1970 and whole seconds
    /// before it read. The file (tests/fixtures/extra/pyarrow_orc_timestamps.orc, written by
    /// pyarrow) holds, as nanoseconds since the epoch:
    /// ts9: 1700000000000000001, 1704164645123456789, NULL;
    /// ts6: 1900-01-01, 1969-12-31 23:59:58, 2262-01-01 (stored in microseconds);
    /// ltz: 1960-05-05 01:02:03 UTC, 2030-01-01 00:00:00.123456 UTC, NULL;
    /// ts3: 1969-12-31 23:59:59, 1970-01-01 00:00:00.001, NULL.
    #[tokio::test]
    async fn pyarrow_timestamps_of_every_precision() {
        let batches = read("pyarrow_orc_timestamps.orc", &["ts9", "ts6", "ltz", "ts3"])
            .await
            .unwrap();
        let batch = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        let nanos = |c: usize| -> Vec<Option<i128>> {
            let col =
                arrow::compute::cast(batch.column(c), &DataType::Timestamp(TimeUnit::Microsecond, None))
                    .unwrap();
            let exact =
                arrow::compute::cast(batch.column(c), &DataType::Timestamp(TimeUnit::Nanosecond, None));
            match (c, exact) {
                (0, Ok(ns)) => ns
                    .as_primitive::<TimestampNanosecondType>()
                    .iter()
                    .map(|v| v.map(i128::from))
                    .collect(),
                _ => col
                    .as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                    .iter()
                    .map(|v| v.map(|v| i128::from(v) * 1000))
                    .collect(),
            }
        };
        let at = |s: &str| {
            i128::from(
                chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
                    .unwrap()
                    .and_utc()
                    .timestamp_micros(),
            ) * 1000
        };
        assert_eq!(
            nanos(0),
            vec![
                Some(1_700_000_000_000_000_001),
                Some(1_704_164_645_123_456_789),
                None
            ]
        );
        assert_eq!(
            nanos(1),
            vec![
                Some(at("1900-01-01 00:00:00.0")),
                Some(at("1969-12-31 23:59:58.0")),
                Some(at("2262-01-01 00:00:00.0"))
            ]
        );
        assert_eq!(
            nanos(2),
            vec![
                Some(at("1960-05-05 01:02:03.0")),
                Some(at("2030-01-01 00:00:00.123456")),
                None
            ]
        );
        assert_eq!(
            nanos(3),
            vec![
                Some(at("1969-12-31 23:59:59.0")),
                Some(at("1970-01-01 00:00:00.001")),
                None
            ]
        );
        assert_eq!(batch.column(0).null_count(), 1);
    }

    /// A fraction of a second before 1970, as the C++ ORC writer (pyarrow's) stores it, is not
    /// decoded by orc-rust: the read fails naming the file, never with a wrong value (overflow
    /// checks are on for orc-rust in every profile).
    #[tokio::test]
    async fn a_fraction_before_1970_from_the_cpp_writer_fails_naming_the_file() {
        let err = read("pyarrow_orc_pre_1970_fraction.orc", &["ts6"])
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("pyarrow_orc_pre_1970_fraction.orc"), "{err}");
    }
}
