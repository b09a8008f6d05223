//! `t$buckets`: physical (unmerged) totals per partition and bucket of the (time-travelled)
//! snapshot, sorted by partition values (NULL first) then bucket (semantics.md §8).
//! `partition` is `k=v/k2=v2` (`None` for NULL, NULL when unpartitioned), as in the fixtures.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::{mem_table, partition_spec, reading_schema};
use super::live_groups;
use crate::meta::TableMeta;
use crate::table::resolve_snapshot;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", ArrowType::Utf8, true),
        Field::new("bucket", ArrowType::Int32, false),
        Field::new("record_count", ArrowType::Int64, false),
        Field::new("file_size_in_bytes", ArrowType::Int64, false),
        Field::new("file_count", ArrowType::Int64, false),
        Field::new(
            "last_update_time",
            ArrowType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
    ]))
}

/// Builds `t$buckets`.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    let schema = reading_schema(&meta, snapshot.as_ref(), options).await?;
    let groups = match &snapshot {
        Some(s) => live_groups(&meta, s, &schema.partition_types()).await?,
        None => vec![],
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            groups
                .iter()
                .map(|g| partition_spec(&schema.partition_keys, &g.partition))
                .collect::<StringArray>(),
        ),
        Arc::new(groups.iter().map(|g| Some(g.bucket)).collect::<Int32Array>()),
        Arc::new(
            groups
                .iter()
                .map(|g| Some(g.entries.iter().map(|e| e.file.row_count).sum::<i64>()))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            groups
                .iter()
                .map(|g| Some(g.entries.iter().map(|e| e.file.file_size).sum::<i64>()))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            groups
                .iter()
                .map(|g| Some(g.entries.len() as i64))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            groups
                .iter()
                .map(|g| g.entries.iter().filter_map(|e| e.file.creation_time).max())
                .collect::<TimestampMillisecondArray>(),
        ),
    ];
    let schema = self::schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
