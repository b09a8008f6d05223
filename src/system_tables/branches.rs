//! `t$branches` (Java `BranchesTable`): the table's branches (`branch/branch-<name>/`) and when
//! each was created (the oldest file in it, as object stores keep no directory times). Empty
//! for a table without branches.

use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::mem_table;
use crate::meta::TableMeta;

pub(super) async fn build(meta: Arc<TableMeta>) -> Result<Arc<dyn TableProvider>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("branch_name", DataType::Utf8, false),
        Field::new(
            "create_time",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
    ]));
    let mut names = Vec::new();
    let mut times = Vec::new();
    let mut dirs = meta.io().list_dirs("branch").await?;
    dirs.sort();
    for dir in dirs {
        let Some(name) = dir.strip_prefix("branch-") else {
            continue;
        };
        let files = meta.io().list_recursive(&format!("branch/{dir}")).await?;
        // (a deleted branch may leave its empty directory on a local file system)
        if files.is_empty() {
            continue;
        }
        let created = files.iter().map(|(_, t)| *t).min().unwrap_or_default();
        names.push(name.to_string());
        // Wall clock as local time, like Paimon's other timestamps.
        let local = chrono::DateTime::from_timestamp_millis(created)
            .map(|t| {
                t.with_timezone(&chrono::Local)
                    .naive_local()
                    .and_utc()
                    .timestamp_millis()
            })
            .unwrap_or(created);
        times.push(local);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(TimestampMillisecondArray::from(times)),
    ];
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
