//! Avro data files (object container files, any codec Paimon writes: null, deflate, snappy,
//! zstandard), through `arrow-avro`. Deleted rows are filtered after decoding: Avro blocks
//! have no row index to skip by.

use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use std::collections::HashMap;

use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow_avro::compression::CompressionCodec;
use arrow_avro::reader::ReaderBuilder;
use arrow_avro::writer::format::AvroOcfFormat;
use arrow_avro::writer::{Writer, WriterBuilder};
use bytes::Bytes;
use datafusion::common::{exec_datafusion_err, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::ObjectStore;

use super::{FileFormat, SharedBuf, WriteFormat};
use crate::deletion_vector::DeletionVector;

/// `file.compression` values this format writes.
pub(super) const COMPRESSIONS: &[&str] = &["zstd", "snappy", "deflate", "none", "null", "uncompressed"];

/// An Avro object container file being written: each batch becomes one block.
pub(super) struct Encoder {
    writer: Writer<SharedBuf, AvroOcfFormat>,
    out: SharedBuf,
    /// The file's schema: TINYINT and SMALLINT widened to `int`.
    schema: SchemaRef,
}

fn failed(e: arrow_avro::errors::AvroError) -> datafusion::error::DataFusionError {
    exec_datafusion_err!("Failed to write an Avro file: {e}")
}

impl Encoder {
    pub(super) fn new(write: &WriteFormat, schema: SchemaRef) -> Result<Self> {
        let codec = match write.compression.as_str() {
            "zstd" => Some(CompressionCodec::ZStandard),
            "snappy" => Some(CompressionCodec::Snappy),
            "deflate" => Some(CompressionCodec::Deflate),
            "none" | "null" | "uncompressed" => None,
            other => {
                return Err(super::unknown_compression(
                    FileFormat::Avro,
                    other,
                    "zstd, snappy, deflate or none",
                ))
            }
        };
        // Avro has no 8- or 16-bit ints: TINYINT and SMALLINT are `int`, as Paimon writes them.
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|field| {
                let data_type = match field.data_type() {
                    DataType::Int8 | DataType::Int16 => DataType::Int32,
                    other => other.clone(),
                };
                Field::new(field.name(), data_type, field.is_nullable())
            })
            .collect();
        // Java names the record `org.apache.paimon.avro.generated.record`.
        let metadata = HashMap::from([
            ("avro.name".to_string(), "record".to_string()),
            (
                "avro.namespace".to_string(),
                "org.apache.paimon.avro.generated".to_string(),
            ),
        ]);
        let schema = Schema::new_with_metadata(fields, metadata);
        let out = SharedBuf::default();
        let writer = WriterBuilder::new(schema.clone())
            .with_compression(codec)
            .build::<_, AvroOcfFormat>(out.clone())
            .map_err(failed)?;
        Ok(Encoder {
            writer,
            out,
            schema: Arc::new(schema),
        })
    }

    pub(super) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let columns = batch
            .columns()
            .iter()
            .zip(self.schema.fields())
            .map(|(column, field)| {
                if column.data_type() == field.data_type() {
                    Ok(Arc::clone(column))
                } else {
                    cast(column, field.data_type())
                }
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.writer.write(&batch).map_err(failed)
    }

    pub(super) fn size(&self) -> usize {
        self.out.len()
    }

    pub(super) fn finish(mut self) -> Result<Vec<u8>> {
        self.writer.finish().map_err(failed)?;
        drop(self.writer);
        Ok(self.out.take())
    }
}

pub(super) struct Opened {
    bytes: Bytes,
    schema: SchemaRef,
    path: Path,
}

pub(super) async fn open(store: Arc<dyn ObjectStore>, path: &Path) -> Result<Opened> {
    let bytes = super::fetch(&store, path).await?;
    // Reading the header gives the writer's schema.
    let reader = super::unless_panic("Avro", path, || {
        ReaderBuilder::new().build(Cursor::new(bytes.clone()))
    })?
    .map_err(|e| exec_datafusion_err!("Failed to open Avro data file /{path}: {e}"))?;
    Ok(Opened {
        schema: reader.schema(),
        bytes,
        path: path.clone(),
    })
}

impl Opened {
    pub(super) fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    pub(super) fn read(
        self,
        columns: &[String],
        deleted: Option<&DeletionVector>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let Opened { bytes, schema, path } = self;
        let projection: Vec<usize> = columns.iter().filter_map(|n| schema.index_of(n).ok()).collect();
        let reader = super::unless_panic("Avro", &path, || {
            ReaderBuilder::new()
                .with_batch_size(batch_size)
                .with_projection(projection)
                .build(Cursor::new(bytes))
        })?
        .map_err(|e| exec_datafusion_err!("Failed to read Avro data file /{path}: {e}"))?;
        let deleted: Option<Vec<u64>> = deleted.map(|dv| dv.positions().to_vec());
        let mut position = 0u64;
        let batches = super::guarded_batches("Avro", path, reader).map(move |batch| {
            let batch = batch?;
            let start = position;
            position += batch.num_rows() as u64;
            match &deleted {
                Some(positions) => drop_deleted(&batch, start, positions),
                None => Ok(batch),
            }
        });
        Ok(futures::stream::iter(batches).boxed())
    }
}

/// `batch` (rows `start..`) without the rows at the deleted `positions` (ascending).
fn drop_deleted(batch: &RecordBatch, start: u64, positions: &[u64]) -> Result<RecordBatch> {
    let end = start + batch.num_rows() as u64;
    let first = positions.partition_point(|&p| p < start);
    let last = positions.partition_point(|&p| p < end);
    if first == last {
        return Ok(batch.clone());
    }
    let mut keep = vec![true; batch.num_rows()];
    for &p in &positions[first..last] {
        keep[(p - start) as usize] = false;
    }
    Ok(filter_record_batch(batch, &BooleanArray::from(keep))?)
}
