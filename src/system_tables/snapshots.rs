//! `t$snapshots`: one row per live snapshot, ascending by id (semantics.md §8).

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::mem_table;
use crate::meta::TableMeta;

fn schema() -> SchemaRef {
    let ts = DataType::Timestamp(TimeUnit::Millisecond, None);
    Arc::new(Schema::new(vec![
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("commit_user", DataType::Utf8, false),
        Field::new("commit_identifier", DataType::Int64, false),
        Field::new("commit_kind", DataType::Utf8, false),
        Field::new("commit_time", ts, false),
        Field::new("base_manifest_list", DataType::Utf8, false),
        Field::new("delta_manifest_list", DataType::Utf8, false),
        Field::new("changelog_manifest_list", DataType::Utf8, true),
        Field::new("total_record_count", DataType::Int64, true),
        Field::new("delta_record_count", DataType::Int64, true),
        Field::new("changelog_record_count", DataType::Int64, true),
        Field::new("watermark", DataType::Int64, true),
        Field::new("next_row_id", DataType::Int64, true),
        Field::new("operation", DataType::Utf8, true),
        Field::new("writer_version", DataType::Utf8, true),
    ]))
}

/// Builds `t$snapshots`.
pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let snapshots = meta.snapshots().await?;
    let long = |f: &dyn Fn(&crate::spec::Snapshot) -> Option<i64>| -> ArrayRef {
        Arc::new(snapshots.iter().map(f).collect::<Int64Array>())
    };
    let string = |f: &dyn Fn(&crate::spec::Snapshot) -> Option<String>| -> ArrayRef {
        Arc::new(snapshots.iter().map(f).collect::<StringArray>())
    };
    let columns: Vec<ArrayRef> = vec![
        long(&|s| Some(s.id)),
        long(&|s| Some(s.schema_id)),
        string(&|s| Some(s.commit_user.clone())),
        long(&|s| Some(s.commit_identifier)),
        string(&|s| Some(s.commit_kind.clone())),
        Arc::new(
            snapshots
                .iter()
                .map(|s| Some(s.time_millis))
                .collect::<TimestampMillisecondArray>(),
        ),
        string(&|s| Some(s.base_manifest_list.clone())),
        string(&|s| Some(s.delta_manifest_list.clone())),
        string(&|s| s.changelog_manifest_list.clone()),
        long(&|s| s.total_record_count),
        long(&|s| s.delta_record_count),
        long(&|s| s.changelog_record_count),
        long(&|s| s.watermark),
        long(&|s| s.next_row_id),
        string(&|s| s.operation.clone()),
        string(&|s| s.writer_version.clone()),
    ];
    let schema = schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
