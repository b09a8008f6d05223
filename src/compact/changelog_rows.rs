//! Helpers for the changelog rows a compaction unit emits: the row kinds it assigns and the
//! "unchanged" test of `changelog-producer.row-deduplicate`.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int8Array, RecordBatch};
use arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::Result;

use crate::spec::TableSchema;

/// Replaces the `_VALUE_KIND` column.
pub(super) fn with_kinds(batch: &RecordBatch, kind_column: usize, kinds: Vec<i8>) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    columns[kind_column] = Arc::new(Int8Array::from(kinds));
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// Equality of table values (the full row, kinds not compared, ignoring
/// `changelog-producer.row-deduplicate-ignore-fields`) between rows of two batches.
pub(super) struct RowEquality {
    rows: Option<[Rows; 2]>,
}

impl RowEquality {
    pub(super) fn new(
        a: &RecordBatch,
        b: &RecordBatch,
        schema: &TableSchema,
        ignore: &[String],
    ) -> Result<Self> {
        let columns: Vec<usize> = schema
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| !ignore.contains(&f.name))
            .map(|(i, _)| i)
            .collect();
        let fields: Vec<SortField> = columns
            .iter()
            .map(|&c| SortField::new(a.column(c).data_type().clone()))
            .collect();
        // Types the row format cannot encode make every pair "different" (a -U/+U is emitted).
        let Ok(converter) = RowConverter::new(fields) else {
            return Ok(RowEquality { rows: None });
        };
        let convert = |batch: &RecordBatch| {
            converter.convert_columns(
                &columns
                    .iter()
                    .map(|&c| Arc::clone(batch.column(c)))
                    .collect::<Vec<_>>(),
            )
        };
        Ok(RowEquality {
            rows: match (convert(a), convert(b)) {
                (Ok(x), Ok(y)) => Some([x, y]),
                _ => None,
            },
        })
    }

    pub(super) fn eq(&self, (sa, ra): (usize, usize), (sb, rb): (usize, usize)) -> bool {
        match &self.rows {
            Some(rows) => rows[sa].row(ra) == rows[sb].row(rb),
            None => false,
        }
    }
}
