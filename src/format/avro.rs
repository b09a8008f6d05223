//! Avro data files (object container files, any codec Paimon writes: null, deflate, snappy,
//! zstandard), through `arrow-avro`. Deleted rows are filtered after decoding: Avro blocks
//! have no row index to skip by.

use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow_avro::reader::ReaderBuilder;
use bytes::Bytes;
use datafusion::common::{exec_datafusion_err, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::ObjectStore;

use crate::deletion_vector::DeletionVector;

pub(super) struct Opened {
    bytes: Bytes,
    schema: SchemaRef,
    path: Path,
}

pub(super) async fn open(store: Arc<dyn ObjectStore>, path: &Path) -> Result<Opened> {
    let bytes = super::fetch(&store, path).await?;
    // Reading the header gives the writer's schema.
    let reader = ReaderBuilder::new()
        .build(Cursor::new(bytes.clone()))
        .map_err(|e| exec_datafusion_err!("Failed to open Avro data file {path}: {e}"))?;
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
        let reader = ReaderBuilder::new()
            .with_batch_size(batch_size)
            .with_projection(projection)
            .build(Cursor::new(bytes))
            .map_err(|e| exec_datafusion_err!("Failed to read Avro data file {path}: {e}"))?;
        let deleted: Option<Vec<u64>> = deleted.map(|dv| dv.positions().to_vec());
        let mut position = 0u64;
        let batches = reader.map(move |batch| {
            let batch =
                batch.map_err(|e| exec_datafusion_err!("Failed to read Avro data file {path}: {e}"))?;
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
