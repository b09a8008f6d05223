//! `t$statistics` (Java `StatisticTable`): the statistics file of the snapshot read
//! (`statistics/<name>`, format.md §3.6), one row, or none when the snapshot has none.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_datafusion_err, Result};

use super::format::mem_table;
use crate::meta::TableMeta;
use crate::table::resolve_snapshot;

pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("schema_id", DataType::Int64, false),
        Field::new("mergedRecordCount", DataType::Int64, true),
        Field::new("mergedRecordSize", DataType::Int64, true),
        Field::new("colstat", DataType::Utf8, true),
    ]));
    let mut rows: (
        Vec<i64>,
        Vec<i64>,
        Vec<Option<i64>>,
        Vec<Option<i64>>,
        Vec<Option<String>>,
    ) = Default::default();
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    if let Some(name) = snapshot.and_then(|s| s.statistics) {
        let file = format!("statistics/{name}");
        let bytes = meta.io().read(&file, "statistics").await?;
        let json: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| exec_datafusion_err!("Invalid statistics file {}: {e}", meta.io().display(&file)))?;
        let long = |k: &str| json.get(k).and_then(|v| v.as_i64());
        rows.0.push(long("snapshotId").unwrap_or_default());
        rows.1.push(long("schemaId").unwrap_or_default());
        rows.2.push(long("mergedRecordCount"));
        rows.3.push(long("mergedRecordSize"));
        rows.4.push(json.get("colStats").map(|c| c.to_string()));
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(rows.0)),
        Arc::new(Int64Array::from(rows.1)),
        Arc::new(Int64Array::from(rows.2)),
        Arc::new(Int64Array::from(rows.3)),
        Arc::new(StringArray::from(rows.4)),
    ];
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
