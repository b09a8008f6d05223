//! `t$tags`: every tag, sorted by name (semantics.md §8).

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::{iso_duration, mem_table};
use crate::meta::TableMeta;

fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Millisecond, None);
    Arc::new(Schema::new(vec![
        Field::new("tag_name", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("commit_time", ts(), false),
        Field::new("record_count", DataType::Int64, true),
        Field::new("create_time", ts(), true),
        Field::new("time_retained", DataType::Utf8, true),
    ]))
}

/// Builds `t$tags`.
pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let tags = meta.tags().await?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            tags.iter()
                .map(|t| Some(t.name.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(tags.iter().map(|t| Some(t.snapshot.id)).collect::<Int64Array>()),
        Arc::new(
            tags.iter()
                .map(|t| Some(t.snapshot.schema_id))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            tags.iter()
                .map(|t| Some(t.snapshot.time_millis))
                .collect::<TimestampMillisecondArray>(),
        ),
        Arc::new(
            tags.iter()
                .map(|t| t.snapshot.total_record_count)
                .collect::<Int64Array>(),
        ),
        Arc::new(
            tags.iter()
                .map(|t| t.create_time_millis)
                .collect::<TimestampMillisecondArray>(),
        ),
        Arc::new(
            tags.iter()
                .map(|t| t.time_retained.as_deref().map(iso_duration))
                .collect::<StringArray>(),
        ),
    ];
    let schema = schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
