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
    path: Path,
}

pub(super) async fn open(store: Arc<dyn ObjectStore>, path: &Path) -> Result<Opened> {
    let bytes = super::fetch(&store, path).await?;
    let builder = super::unless_panic("ORC", path, || ArrowReaderBuilder::try_new(bytes))?
        .map_err(|e| exec_datafusion_err!("Failed to open ORC data file /{path}: {e}"))?
        .with_timestamp_precision(TimestampPrecision::Microsecond);
    Ok(Opened {
        builder,
        path: path.clone(),
    })
}

impl Opened {
    pub(super) fn schema(&self) -> SchemaRef {
        self.builder.schema()
    }

    pub(super) fn read(
        self,
        columns: &[String],
        deleted: Option<&DeletionVector>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Opened { builder, path } = self;
        let mask = ProjectionMask::named_roots(builder.file_metadata().root_data_type(), columns);
        let rows = builder.file_metadata().number_of_rows();
        let builder = match deleted {
            Some(dv) => {
                let kept = dv.kept_row_ranges(rows).into_iter();
                builder.with_row_selection(RowSelection::from_consecutive_ranges(kept, rows as usize))
            }
            None => builder,
        };
        let reader = builder.with_projection(mask).with_batch_size(batch_size).build();
        let batches = super::guarded_batches("ORC", path, reader);
        Ok(futures::stream::iter(batches).boxed())
    }
}
