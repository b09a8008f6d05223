//! `t$consumers`: the consumers of the table and the next snapshot each will read
//! (Java's `ConsumersTable`: `consumer_id`, `next_snapshot_id`).

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::mem_table;
use crate::meta::TableMeta;

pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let consumers = meta.consumers().await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("consumer_id", DataType::Utf8, false),
        Field::new("next_snapshot_id", DataType::Int64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            consumers.iter().map(|c| c.id.as_str()),
        )),
        Arc::new(Int64Array::from_iter_values(
            consumers.iter().map(|c| c.next_snapshot),
        )),
    ];
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
