//! Value filters evaluated inside the Parquet reader (`RowFilter`): the filter columns are
//! decoded first, and the other columns only for the rows that pass.
//!
//! Only where no older version of a row can resurface: files read without a merge (a section
//! with a single sorted run of a primary-key table, or an append table's files). Where runs are
//! merged, dropping a row that fails the filter could expose an older version of its key that
//! passes it, so those files are read whole. The filter stays applied above the scan (it is
//! reported inexact), so this only saves decoding: a row it drops is one the plan drops anyway.
//!
//! A predicate on primary-key columns alone is the exception: every version of a key has the
//! same key values, so it keeps or drops all of them together, and may filter merged runs too
//! ([`ValueFilter::on_keys`]): only the versions of the keys the query wants reach the merge.
//!
//! The predicate is bound to the referenced table columns; each file maps them by field id to
//! its own columns (renamed or widened since), and skips the filter if one is missing.

use std::sync::Arc;

use arrow::array::{Array, BooleanArray, RecordBatch};
use arrow::compute::{cast, prep_null_mask_filter};
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::BinaryExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::utils::{collect_columns, split_conjunction};
use datafusion::physical_expr::PhysicalExpr;

use crate::spec::TableSchema;

/// A pushed-down predicate over some table columns.
#[derive(Debug)]
pub(crate) struct ValueFilter {
    /// The predicate, bound to `schema`.
    expr: Arc<dyn PhysicalExpr>,
    /// The referenced table columns, in table order (all nullable: a filter sees what the file
    /// holds).
    schema: SchemaRef,
    /// Field id of each column of `schema`.
    field_ids: Vec<i32>,
}

impl ValueFilter {
    /// The filter for `predicate` (bound to the table's Arrow schema), or `None` if it reads
    /// no column.
    pub(crate) fn new(table: &TableSchema, predicate: &Arc<dyn PhysicalExpr>) -> Option<Self> {
        let mut used: Vec<usize> = collect_columns(predicate).iter().map(Column::index).collect();
        used.sort_unstable();
        used.dedup();
        if used.is_empty() || used.iter().any(|&i| i >= table.fields.len()) {
            return None;
        }
        let expr = Arc::clone(predicate)
            .transform(|e| {
                let Some(column) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                let index = used
                    .iter()
                    .position(|&i| i == column.index())
                    .expect("every column was collected");
                Ok(Transformed::yes(
                    Arc::new(Column::new(column.name(), index)) as Arc<dyn PhysicalExpr>
                ))
            })
            .ok()?
            .data;
        let fields: Vec<Field> = used
            .iter()
            .map(|&i| table.fields[i].to_arrow_field().with_nullable(true))
            .collect();
        Some(ValueFilter {
            expr,
            schema: Arc::new(Schema::new(fields)),
            field_ids: used.iter().map(|&i| table.fields[i].id).collect(),
        })
    }

    /// The filter of the conjuncts of `predicate` (bound to the table's Arrow schema) that read
    /// only primary-key columns, or `None` if there are none. Partition columns are left out:
    /// every row of a file has the same partition, which file pruning has judged already.
    pub(crate) fn on_keys(table: &TableSchema, predicate: &Arc<dyn PhysicalExpr>) -> Option<Self> {
        let keys = table.trimmed_primary_keys();
        let is_key = |c: &Column| {
            table
                .fields
                .get(c.index())
                .is_some_and(|f| keys.iter().any(|k| k.id == f.id))
        };
        let on_keys = split_conjunction(predicate)
            .into_iter()
            .filter(|conjunct| {
                let columns = collect_columns(conjunct);
                !columns.is_empty() && columns.iter().all(is_key)
            })
            .cloned()
            .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::And, b)) as Arc<dyn PhysicalExpr>)?;
        Self::new(table, &on_keys)
    }

    /// The predicate, over the columns of [`Self::field_ids`] (column `i` reads field
    /// `field_ids()[i]`).
    pub(crate) fn expr(&self) -> &Arc<dyn PhysicalExpr> {
        &self.expr
    }

    /// Field id of each column the predicate reads, in table order.
    pub(crate) fn field_ids(&self) -> &[i32] {
        &self.field_ids
    }

    /// The filter for one file written with `file_schema` (Arrow columns `file_arrow`), or
    /// `None` if the file lacks one of the columns.
    pub(crate) fn for_file(
        self: &Arc<Self>,
        file_schema: &TableSchema,
        file_arrow: &Schema,
    ) -> Option<FileValueFilter> {
        let columns = self
            .field_ids
            .iter()
            .map(|id| {
                let field = file_schema.fields.iter().find(|f| f.id == *id)?;
                file_arrow.index_of(&field.name).ok()
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(FileValueFilter {
            filter: Arc::clone(self),
            columns,
        })
    }
}

impl std::fmt::Display for ValueFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}",
            datafusion::physical_expr_common::physical_expr::fmt_sql(self.expr.as_ref())
        )
    }
}

/// A [`ValueFilter`] mapped onto one file's columns.
#[derive(Debug, Clone)]
pub(crate) struct FileValueFilter {
    filter: Arc<ValueFilter>,
    /// Index in the file's Arrow schema of each filter column.
    columns: Vec<usize>,
}

impl FileValueFilter {
    /// The file columns the filter reads (indices into the file's Arrow schema).
    pub(crate) fn file_columns(&self) -> &[usize] {
        &self.columns
    }

    /// Which rows of `batch` pass. `batch` holds [`Self::file_columns`] in ascending file
    /// order, as a Parquet reader decodes a projection. A predicate that fails to evaluate
    /// keeps every row: the plan's own filter reports the error if the row reaches it.
    pub(crate) fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
        let keep_all = || BooleanArray::from(vec![true; batch.num_rows()]);
        let mut order: Vec<usize> = self.columns.clone();
        order.sort_unstable();
        order.dedup();
        let mut columns = Vec::with_capacity(self.columns.len());
        for (field, file_index) in self.filter.schema.fields().iter().zip(&self.columns) {
            let position = order.binary_search(file_index).expect("a filter column");
            let column = batch.column(position);
            columns.push(if column.data_type() == field.data_type() {
                Arc::clone(column)
            } else {
                match cast(column, field.data_type()) {
                    Ok(c) => c,
                    Err(_) => return Ok(keep_all()),
                }
            });
        }
        let Ok(input) = RecordBatch::try_new(Arc::clone(&self.filter.schema), columns) else {
            return Ok(keep_all());
        };
        let Ok(value) = self.filter.expr.evaluate(&input) else {
            return Ok(keep_all());
        };
        let Ok(array) = value.into_array(input.num_rows()) else {
            return Ok(keep_all());
        };
        let Some(mask) = array.as_any().downcast_ref::<BooleanArray>() else {
            return Ok(keep_all());
        };
        Ok(if mask.null_count() > 0 {
            prep_null_mask_filter(mask)
        } else {
            mask.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use datafusion::common::ScalarValue;
    use datafusion::physical_expr::expressions::{col, lit};
    use datafusion::physical_plan::expressions::binary;

    fn table() -> TableSchema {
        let json = r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"BIGINT NOT NULL"},{"id":1,"name":"v","type":"INT"}],"highestFieldId":1,"partitionKeys":[],"primaryKeys":["k"],"options":{},"timeMillis":0}"#;
        TableSchema::from_json(json.as_bytes(), "schema-0").unwrap()
    }

    fn compare(table: &TableSchema, column: &str, op: Operator, value: ScalarValue) -> Arc<dyn PhysicalExpr> {
        let arrow = table.arrow_schema();
        binary(col(column, &arrow).unwrap(), op, lit(value), &arrow).unwrap()
    }

    fn and(a: Arc<dyn PhysicalExpr>, b: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(a, Operator::And, b))
    }

    #[test]
    fn on_keys_keeps_only_the_conjuncts_on_key_columns() {
        let table = table();
        let k_above_1 = compare(&table, "k", Operator::Gt, ScalarValue::Int64(Some(1)));
        let k_below_9 = compare(&table, "k", Operator::Lt, ScalarValue::Int64(Some(9)));
        let v_is_0 = compare(&table, "v", Operator::Eq, ScalarValue::Int32(Some(0)));
        // `k = 5 OR v = 0` reads a value column: a key's versions could split on it.
        let mixed = Arc::new(BinaryExpr::new(
            compare(&table, "k", Operator::Eq, ScalarValue::Int64(Some(5))),
            Operator::Or,
            Arc::clone(&v_is_0),
        )) as Arc<dyn PhysicalExpr>;
        let predicate = and(and(k_above_1, and(v_is_0.clone(), k_below_9)), mixed);
        let filter = ValueFilter::on_keys(&table, &predicate).expect("two key conjuncts");
        assert_eq!(filter.to_string(), "k > 1 AND k < 9");
        assert_eq!(filter.field_ids, vec![0]);

        // Evaluated on a file holding (k, v): only k decides.
        let file_arrow = table.arrow_schema();
        let file_filter = Arc::new(filter)
            .for_file(&table, &file_arrow)
            .expect("k is in the file");
        assert_eq!(file_filter.file_columns(), &[0]);
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![file_arrow.field(0).clone()])),
            vec![Arc::new(Int64Array::from(vec![0, 2, 8, 9]))],
        )
        .unwrap();
        let kept = file_filter.evaluate(&batch).unwrap();
        assert_eq!(kept, BooleanArray::from(vec![false, true, true, false]));

        // Nothing on keys alone: no filter.
        assert!(ValueFilter::on_keys(&table, &v_is_0).is_none());
    }
}
