//! The check a MERGE's joined rows pass before its sink (`sql::merge` plans it): each target
//! row matched by at most one source row, Spark's rule. A function of its own so a cluster's
//! scheduler and executors know it (`distributed::cluster_functions`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The function's name in SQL.
pub(crate) const MERGE_CARDINALITY_CHECK: &str = "paimon_merge_cardinality";

/// Spark's result of a MERGE: rows changed in all, updated, deleted, inserted.
pub(crate) fn merge_counts_schema() -> SchemaRef {
    Arc::new(Schema::new(
        [
            "num_affected_rows",
            "num_updated_rows",
            "num_deleted_rows",
            "num_inserted_rows",
        ]
        .map(|n| Field::new(n, DataType::Int64, false))
        .to_vec(),
    ))
}

/// Adds a MERGE's rows of `kinds` to its [updated, deleted, inserted] counts (rows a
/// copy-on-write MERGE keeps as they are count as nothing).
pub(crate) fn count_merge_kinds(kinds: &arrow::array::Int8Array, counts: &mut [u64; 3]) {
    use crate::spec::row_kind;
    for kind in kinds.iter().flatten() {
        match kind {
            row_kind::UPDATE_AFTER => counts[0] += 1,
            row_kind::DELETE => counts[1] += 1,
            row_kind::INSERT => counts[2] += 1,
            _ => {}
        }
    }
}

/// The one row of a MERGE's result from its [updated, deleted, inserted] counts.
pub(crate) fn merge_counts_batch(counts: [u64; 3]) -> Result<RecordBatch> {
    let [updated, deleted, inserted] = counts.map(|n| n as i64);
    let column = |v: i64| Arc::new(Int64Array::from(vec![v])) as ArrayRef;
    Ok(RecordBatch::try_new(
        merge_counts_schema(),
        vec![
            column(updated + deleted + inserted),
            column(updated),
            column(deleted),
            column(inserted),
        ],
    )?)
}

/// The check as a scalar function.
pub fn merge_cardinality_udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(CardinalityCheck::new()))
}

/// `paimon_merge_cardinality(n, keep, table)`: `keep` (NULL as false), unless some `n` (how
/// many source rows matched a target row) is above 1, which fails the statement naming the
/// table.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CardinalityCheck {
    signature: Signature,
}

impl CardinalityCheck {
    fn new() -> Self {
        CardinalityCheck {
            signature: Signature::exact(
                vec![DataType::Int64, DataType::Boolean, DataType::Utf8],
                Volatility::Volatile,
            ),
        }
    }
}

impl ScalarUDFImpl for CardinalityCheck {
    fn name(&self) -> &str {
        MERGE_CARDINALITY_CHECK
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let table = match &args.args[2] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(t))) => t.clone(),
            _ => "the target".to_string(),
        };
        let counts: ArrayRef = args.args[0].to_array(n)?;
        let counts = counts.as_primitive::<Int64Type>();
        if let Some(i) = (0..counts.len()).find(|&i| counts.is_valid(i) && counts.value(i) > 1) {
            return exec_err!(
                "MERGE INTO {table}: a target row was matched by {} source rows; each target row may match at most one (rewrite the source so its rows are unique per join key)",
                counts.value(i)
            );
        }
        let keep = args.args[1].to_array(n)?;
        let keep = keep.as_boolean();
        Ok(ColumnarValue::Array(Arc::new(BooleanArray::from_iter(
            keep.iter().map(|k| Some(k == Some(true))),
        ))))
    }
}
