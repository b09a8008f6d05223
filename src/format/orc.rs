//! ORC data files (Flink's default `file.format` before Paimon 1.0), through `orc-rust`:
//! projection by root column, deletion vectors as its row selection. Timestamps are decoded
//! at microsecond precision, Paimon's finest.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use bytes::Bytes;
use datafusion::common::{exec_datafusion_err, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::ObjectStore;
use orc_rust::projection::ProjectionMask;
use orc_rust::schema::TimestampPrecision;
use orc_rust::{ArrowReaderBuilder, RowSelection};

use crate::deletion_vector::DeletionVector;

pub(super) struct Opened {
    builder: ArrowReaderBuilder<Bytes>,
    path: Path,
}

pub(super) async fn open(store: Arc<dyn ObjectStore>, path: &Path) -> Result<Opened> {
    let bytes = super::fetch(&store, path).await?;
    let builder = ArrowReaderBuilder::try_new(bytes)
        .map_err(|e| exec_datafusion_err!("Failed to open ORC data file {path}: {e}"))?
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
                let kept = dv
                    .kept_ranges(rows)
                    .into_iter()
                    .map(|r| r.start as usize..r.end as usize);
                builder.with_row_selection(RowSelection::from_consecutive_ranges(kept, rows as usize))
            }
            None => builder,
        };
        let reader = builder.with_projection(mask).with_batch_size(batch_size).build();
        Ok(futures::stream::iter(reader.map(move |batch| {
            batch.map_err(|e| exec_datafusion_err!("Failed to read ORC data file {path}: {e}"))
        }))
        .boxed())
    }
}
