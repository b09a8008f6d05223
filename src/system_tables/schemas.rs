//! `t$schemas`: every schema version, ascending by id (semantics.md §8).
//!
//! `fields`, `partition_keys`, `primary_keys` and `options` are the schema file's own JSON,
//! compact and with keys in file order, so a type shows exactly as its writer stored it
//! (pypaimon writes e.g. `{"type":"ARRAY","element":"INT","nullable":true}`, Java
//! `{"type":"ARRAY","element":"INT"}`).

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_datafusion_err, Result};

use super::format::{mem_table, OrderedJson};
use crate::meta::TableMeta;
use crate::spec::paths;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("schema_id", DataType::Int64, false),
        Field::new("fields", DataType::Utf8, false),
        Field::new("partition_keys", DataType::Utf8, false),
        Field::new("primary_keys", DataType::Utf8, false),
        Field::new("options", DataType::Utf8, false),
        Field::new("comment", DataType::Utf8, true),
        Field::new(
            "update_time",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
    ]))
}

/// Builds `t$schemas`.
pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let mut ids = Vec::new();
    let mut fields = Vec::new();
    let mut partition_keys = Vec::new();
    let mut primary_keys = Vec::new();
    let mut options = Vec::new();
    let mut comments = Vec::new();
    let mut times = Vec::new();
    for id in meta.schema_ids().await? {
        let parsed = meta.schema(id).await?;
        let file = paths::schema_file(id);
        let bytes = meta.io().read(&file, "schema file").await?;
        let raw: OrderedJson = serde_json::from_slice(&bytes)
            .map_err(|e| exec_datafusion_err!("corrupt schema file {}: {e}", meta.io().display(&file)))?;
        let json = |key: &str, empty: OrderedJson| {
            raw.get(key)
                .filter(|v| **v != OrderedJson::Null)
                .unwrap_or(&empty)
                .compact()
        };
        ids.push(parsed.id);
        fields.push(json("fields", OrderedJson::Array(vec![])));
        partition_keys.push(json("partitionKeys", OrderedJson::Array(vec![])));
        primary_keys.push(json("primaryKeys", OrderedJson::Array(vec![])));
        options.push(json("options", OrderedJson::Object(vec![])));
        comments.push(parsed.comment.clone());
        times.push(parsed.time_millis);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids)),
        Arc::new(StringArray::from(fields)),
        Arc::new(StringArray::from(partition_keys)),
        Arc::new(StringArray::from(primary_keys)),
        Arc::new(StringArray::from(options)),
        Arc::new(StringArray::from(comments)),
        Arc::new(TimestampMillisecondArray::from(times)),
    ];
    let schema = schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
