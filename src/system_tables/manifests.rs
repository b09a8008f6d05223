//! `t$manifests`: the data manifests of the (time-travelled) snapshot, base list then delta
//! list in list order (semantics.md §8). Partition stats are rows cast to STRING the way Java
//! does (`{2024-01-01, 1}`, `{}` when unpartitioned, `null` for a NULL field).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::{java_row_string, mem_table, reading_schema, stats_type};
use crate::meta::TableMeta;
use crate::spec::{BinaryRow, DataType};
use crate::table::resolve_snapshot;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("file_name", ArrowType::Utf8, false),
        Field::new("file_size", ArrowType::Int64, false),
        Field::new("num_added_files", ArrowType::Int64, false),
        Field::new("num_deleted_files", ArrowType::Int64, false),
        Field::new("schema_id", ArrowType::Int64, false),
        Field::new("min_partition_stats", ArrowType::Utf8, true),
        Field::new("max_partition_stats", ArrowType::Utf8, true),
        Field::new("min_row_id", ArrowType::Int64, true),
        Field::new("max_row_id", ArrowType::Int64, true),
    ]))
}

/// Builds `t$manifests`.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    let table_schema = reading_schema(&meta, snapshot.as_ref(), options).await?;
    let partition_types: Vec<DataType> = table_schema.partition_types().iter().map(stats_type).collect();
    let metas = match &snapshot {
        Some(s) => meta.data_manifests(s).await?,
        None => vec![],
    };
    let stats = |bytes: &[u8]| -> Option<String> {
        let row = BinaryRow::decode(bytes, &partition_types).ok()?;
        Some(java_row_string(&row.values, &partition_types))
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            metas
                .iter()
                .map(|m| Some(m.file_name.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(metas.iter().map(|m| Some(m.file_size)).collect::<Int64Array>()),
        Arc::new(
            metas
                .iter()
                .map(|m| Some(m.num_added_files))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            metas
                .iter()
                .map(|m| Some(m.num_deleted_files))
                .collect::<Int64Array>(),
        ),
        Arc::new(metas.iter().map(|m| Some(m.schema_id)).collect::<Int64Array>()),
        Arc::new(
            metas
                .iter()
                .map(|m| stats(&m.partition_stats.min_values))
                .collect::<StringArray>(),
        ),
        Arc::new(
            metas
                .iter()
                .map(|m| stats(&m.partition_stats.max_values))
                .collect::<StringArray>(),
        ),
        Arc::new(metas.iter().map(|m| m.min_row_id).collect::<Int64Array>()),
        Arc::new(metas.iter().map(|m| m.max_row_id).collect::<Int64Array>()),
    ];
    let schema = schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
