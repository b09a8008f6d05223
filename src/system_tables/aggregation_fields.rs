//! `t$aggregation_fields` (Java `AggregationFieldsTable`): every column of the latest schema
//! with its type, the values and keys of its `fields.<column>.*` options, and its comment.

use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::mem_table;
use crate::meta::TableMeta;

pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let latest = meta.latest_schema().await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("field_name", DataType::Utf8, false),
        Field::new("field_type", DataType::Utf8, false),
        Field::new("function", DataType::Utf8, true),
        Field::new("function_options", DataType::Utf8, true),
        Field::new("comment", DataType::Utf8, true),
    ]));
    // Java prints its multimap values as a list: `[sum]`, `[]`.
    let list = |items: Vec<&str>| format!("[{}]", items.join(", "));
    let mut names = Vec::new();
    let mut types = Vec::new();
    let mut functions = Vec::new();
    let mut keys = Vec::new();
    let mut comments = Vec::new();
    for field in &latest.fields {
        let prefix = format!("fields.{}.", field.name);
        let options: Vec<(&String, &String)> = latest
            .options
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix) && k.len() > prefix.len())
            .collect();
        names.push(field.name.clone());
        types.push(match field.data_type.to_json() {
            serde_json::Value::String(s) => s,
            _ => field.data_type.to_json_text(),
        });
        functions.push(list(options.iter().map(|(_, v)| v.as_str()).collect()));
        keys.push(list(options.iter().map(|(k, _)| k.as_str()).collect()));
        comments.push(field.description.clone());
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(StringArray::from(types)),
        Arc::new(StringArray::from(functions)),
        Arc::new(StringArray::from(keys)),
        Arc::new(StringArray::from(comments)),
    ];
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
