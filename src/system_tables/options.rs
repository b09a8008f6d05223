//! `t$options`: the options stored in the latest schema, sorted by key (semantics.md §8).

use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::mem_table;
use crate::meta::TableMeta;

/// Builds `t$options`.
pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let latest = meta.latest_schema().await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            latest
                .options
                .keys()
                .map(|k| Some(k.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            latest
                .options
                .values()
                .map(|v| Some(v.as_str()))
                .collect::<StringArray>(),
        ),
    ];
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
