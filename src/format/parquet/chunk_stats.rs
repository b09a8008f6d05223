//! A written file's column statistics taken from its row groups' statistics.
//!
//! The Parquet writer computes each column chunk's min, max and null count while it encodes
//! (it needs them for the page index anyway), so a data file's `_KEY_STATS` and `_VALUE_STATS`
//! need no second pass over those columns: Paimon's Java writer likewise extracts them from the
//! Parquet footer. Only types whose Parquet order is the order Paimon's statistics use are taken
//! this way: integers and dates (signed), and strings (unsigned bytes, as Java's `BinaryString`
//! compares). Floating point is left to the caller, since Parquet leaves NaN out of its min and
//! max while Java's `Double.compareTo` ranks it above every number.

use arrow::datatypes::{DataType, Schema};
use datafusion::common::{exec_datafusion_err, Result, ScalarValue};
use parquet::file::metadata::RowGroupMetaDataPtr;
use parquet::file::statistics::Statistics;

use crate::format::EncodedColumnStats;

/// Whether the statistics of a top-level column of `data_type` come from the writer.
pub(in crate::format) fn from_writer(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Utf8
    )
}

/// The statistics of each top-level column of `schema` over `row_groups`, for the columns
/// [`from_writer`] takes (`None` for the others). The writer must keep exact chunk statistics
/// (no truncation), which the encoder sets up.
pub(super) fn file_column_stats(
    schema: &Schema,
    row_groups: &[RowGroupMetaDataPtr],
) -> Result<Vec<Option<EncodedColumnStats>>> {
    // The leaf of each top-level column, as Parquet's schema maps them (an atomic column is
    // one leaf, a nested one several).
    let leaf_of = |root: usize| {
        let descr = row_groups.first()?.schema_descr();
        (0..descr.num_columns()).find(|&leaf| descr.get_column_root_idx(leaf) == root)
    };
    let mut stats = Vec::with_capacity(schema.fields().len());
    for (root, field) in schema.fields().iter().enumerate() {
        if !from_writer(field.data_type()) {
            stats.push(None);
            continue;
        }
        let mut column = EncodedColumnStats {
            min: ScalarValue::try_from(field.data_type())?,
            max: ScalarValue::try_from(field.data_type())?,
            nulls: 0,
        };
        let missing =
            || exec_datafusion_err!("Parquet writer kept no statistics for column {}", field.name());
        let leaf = leaf_of(root);
        for row_group in row_groups {
            let leaf = leaf.ok_or_else(missing)?;
            let chunk_stats = row_group.column(leaf).statistics().ok_or_else(missing)?;
            column.nulls += chunk_stats.null_count_opt().ok_or_else(missing)? as i64;
            let (min, max) = bounds(chunk_stats, field.data_type())?;
            // (a chunk of nulls only has neither bound, and neither is exact)
            if (!min.is_null() && !chunk_stats.min_is_exact())
                || (!max.is_null() && !chunk_stats.max_is_exact())
            {
                return Err(exec_datafusion_err!(
                    "Parquet writer truncated the statistics of column {}",
                    field.name()
                ));
            }
            if !min.is_null() && (column.min.is_null() || min < column.min) {
                column.min = min;
            }
            if !max.is_null() && (column.max.is_null() || max > column.max) {
                column.max = max;
            }
        }
        stats.push(Some(column));
    }
    Ok(stats)
}

/// A chunk's min and max as `data_type` values (typed nulls when every value is null).
fn bounds(stats: &Statistics, data_type: &DataType) -> Result<(ScalarValue, ScalarValue)> {
    fn both<T>(
        min: Option<&T>,
        max: Option<&T>,
        value: impl Fn(&T) -> Result<ScalarValue>,
    ) -> Result<(Option<ScalarValue>, Option<ScalarValue>)> {
        Ok((min.map(&value).transpose()?, max.map(&value).transpose()?))
    }
    let utf8 = |bytes: &parquet::data_type::ByteArray| -> Result<ScalarValue> {
        let text = std::str::from_utf8(bytes.data())
            .map_err(|e| exec_datafusion_err!("Parquet statistics of a string column: {e}"))?;
        Ok(ScalarValue::Utf8(Some(text.to_string())))
    };
    let (min, max) = match (stats, data_type) {
        (Statistics::Int32(s), DataType::Int8) => both(s.min_opt(), s.max_opt(), |v| {
            Ok(ScalarValue::Int8(Some(*v as i8)))
        })?,
        (Statistics::Int32(s), DataType::Int16) => both(s.min_opt(), s.max_opt(), |v| {
            Ok(ScalarValue::Int16(Some(*v as i16)))
        })?,
        (Statistics::Int32(s), DataType::Int32) => {
            both(s.min_opt(), s.max_opt(), |v| Ok(ScalarValue::Int32(Some(*v))))?
        }
        (Statistics::Int32(s), DataType::Date32) => {
            both(s.min_opt(), s.max_opt(), |v| Ok(ScalarValue::Date32(Some(*v))))?
        }
        (Statistics::Int64(s), DataType::Int64) => {
            both(s.min_opt(), s.max_opt(), |v| Ok(ScalarValue::Int64(Some(*v))))?
        }
        (Statistics::ByteArray(s), DataType::Utf8) => both(s.min_opt(), s.max_opt(), utf8)?,
        (other, _) => {
            return Err(exec_datafusion_err!(
                "Parquet statistics {other:?} do not hold {data_type} values"
            ))
        }
    };
    let null = ScalarValue::try_from(data_type)?;
    Ok((min.unwrap_or_else(|| null.clone()), max.unwrap_or(null)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, Float64Array, Int16Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
        StructArray,
    };
    use arrow::datatypes::{Field, Int32Type};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;

    /// Min, max and null counts merged over row groups, with columns after a nested one found
    /// at their leaf; columns the writer's order does not serve (doubles, lists, structs) get none.
    #[test]
    fn file_stats_merge_row_groups_and_skip_nested_leaves() {
        let n = 10_000i64;
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..n).map(|i| Some(vec![Some(i as i32), None])),
        );
        let ints = || Arc::new(Int32Array::from_iter_values(0..n as i32)) as ArrayRef;
        let pair = StructArray::from(vec![
            (Arc::new(Field::new("x", DataType::Int32, false)), ints()),
            (Arc::new(Field::new("y", DataType::Int32, false)), ints()),
        ]);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("tags", Arc::new(list)),
            ("pair", Arc::new(pair)),
            (
                "small",
                Arc::new(Int16Array::from_iter(
                    (0..n).map(|i| (i % 4 != 0).then_some((i * 7 % 901) as i16 - 450)),
                )),
            ),
            (
                "ratio",
                Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
            ),
            // the extremes sit in different row groups
            (
                "big",
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| {
                    if i == 1_234 {
                        i64::MIN
                    } else if i == 8_765 {
                        i64::MAX
                    } else {
                        i
                    }
                }))),
            ),
            (
                "name",
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i >= 3_000).then(|| format!("n{:05}", n - i))),
                )),
            ),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(2_500))
            .set_statistics_truncate_length(None)
            .build();
        let mut writer = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        let file = Bytes::from(writer.into_inner().unwrap());
        let reader = SerializedFileReader::new(file).unwrap();
        let row_groups: Vec<RowGroupMetaDataPtr> = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|rg| Arc::new(rg.clone()))
            .collect();
        assert_eq!(row_groups.len(), 4);
        let stats = file_column_stats(&batch.schema(), &row_groups).unwrap();
        assert_eq!((&stats[0], &stats[1], &stats[3]), (&None, &None, &None));
        let expect =
            |min: ScalarValue, max: ScalarValue, nulls: i64| Some(EncodedColumnStats { min, max, nulls });
        assert_eq!(
            stats[2],
            expect(
                ScalarValue::Int16(Some(-450)),
                ScalarValue::Int16(Some(450)),
                n / 4
            )
        );
        assert_eq!(
            stats[4],
            expect(
                ScalarValue::Int64(Some(i64::MIN)),
                ScalarValue::Int64(Some(i64::MAX)),
                0
            )
        );
        assert_eq!(
            stats[5],
            expect(
                ScalarValue::Utf8(Some("n00001".into())),
                ScalarValue::Utf8(Some("n07000".into())),
                3_000
            )
        );
    }
}
