//! Casting a column as a file stores it to the type the read schema gives it: a retyped column
//! (format.md §6.6), a timestamp read as a string the way Paimon prints it, an Avro MAP with
//! non-string keys (a list of key/value records) read as a MAP.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::DataType as ArrowType;
use datafusion::common::Result;

/// `array` as `target`.
pub(super) fn cast_column(array: &ArrayRef, target: &ArrowType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(Arc::clone(array));
    }
    match (array.data_type(), target) {
        (ArrowType::List(_), ArrowType::Map(entries, sorted)) => {
            return list_of_entries_as_map(array, entries, *sorted)
        }
        // a MAP inside: its entries conformed one level down (an Avro map of such maps)
        (ArrowType::Map(_, _), ArrowType::Map(entries, sorted)) => {
            use arrow::array::{Array, AsArray, MapArray, StructArray};
            let map = array.as_map();
            let ArrowType::Struct(kv) = entries.data_type() else {
                return Ok(cast_with_options(array, target, &CastOptions::default())?);
            };
            let columns = vec![
                cast_column(map.keys(), kv[0].data_type())?,
                cast_column(map.values(), kv[1].data_type())?,
            ];
            let entries_array = StructArray::try_new(kv.clone(), columns, None)?;
            return Ok(Arc::new(MapArray::try_new(
                Arc::clone(entries),
                map.offsets().clone(),
                entries_array,
                map.nulls().cloned(),
                *sorted,
            )?));
        }
        // Paimon casts a timestamp to a string as `yyyy-MM-dd HH:mm:ss[.fraction]`, with the
        // digits of its precision (Arrow's cast puts a `T` between date and time)
        (ArrowType::Timestamp(unit, None), ArrowType::Utf8) => return timestamp_strings(array, *unit),
        // a string read as a view: as the string it casts to, then viewed
        (from, ArrowType::Utf8View) if !matches!(from, ArrowType::Utf8 | ArrowType::LargeUtf8) => {
            let text = cast_column(array, &ArrowType::Utf8)?;
            return Ok(cast_with_options(&text, target, &CastOptions::default())?);
        }
        (ArrowType::List(_), ArrowType::List(item)) => {
            use arrow::array::{Array, AsArray, ListArray};
            let list = array.as_list::<i32>();
            let values = cast_column(list.values(), item.data_type())?;
            return Ok(Arc::new(ListArray::try_new(
                Arc::clone(item),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?));
        }
        _ => {}
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    Ok(cast_with_options(array, target, &options)?)
}

/// Timestamps as Paimon's `CAST(ts AS STRING)` writes them.
fn timestamp_strings(array: &ArrayRef, unit: arrow::datatypes::TimeUnit) -> Result<ArrayRef> {
    use arrow::datatypes::{
        TimeUnit, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
        TimestampSecondType,
    };
    let micros_or_nanos = |v: i64, per_second: i64, digits: usize| -> Option<String> {
        let (secs, frac) = (v.div_euclid(per_second), v.rem_euclid(per_second));
        let dt = chrono::DateTime::from_timestamp(secs, 0)?;
        let mut text = dt.format("%Y-%m-%d %H:%M:%S").to_string();
        if digits > 0 {
            text.push_str(&format!(".{frac:0digits$}"));
        }
        Some(text)
    };
    let (values, per_second, digits): (Vec<Option<i64>>, i64, usize) = match unit {
        TimeUnit::Second => (
            array
                .as_any()
                .downcast_ref::<arrow::array::PrimitiveArray<TimestampSecondType>>()
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
            1,
            0,
        ),
        TimeUnit::Millisecond => (
            array
                .as_any()
                .downcast_ref::<arrow::array::PrimitiveArray<TimestampMillisecondType>>()
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
            1_000,
            3,
        ),
        TimeUnit::Microsecond => (
            array
                .as_any()
                .downcast_ref::<arrow::array::PrimitiveArray<TimestampMicrosecondType>>()
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
            1_000_000,
            6,
        ),
        TimeUnit::Nanosecond => (
            array
                .as_any()
                .downcast_ref::<arrow::array::PrimitiveArray<TimestampNanosecondType>>()
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
            1_000_000_000,
            9,
        ),
    };
    let strings: arrow::array::StringArray = values
        .into_iter()
        .map(|v| v.and_then(|v| micros_or_nanos(v, per_second, digits)))
        .collect();
    Ok(Arc::new(strings))
}

/// A MAP whose keys are not strings, as Java's Avro writer stores it: an array of key/value
/// records (Avro maps only take string keys). The entries become the map's, in their order.
fn list_of_entries_as_map(
    array: &ArrayRef,
    entries: &arrow::datatypes::FieldRef,
    sorted: bool,
) -> Result<ArrayRef> {
    use arrow::array::{Array, AsArray, MapArray, StructArray};
    let list = array.as_list::<i32>();
    let ArrowType::Struct(kv) = entries.data_type() else {
        return Err(datafusion::common::exec_datafusion_err!(
            "a MAP column whose entries are not a struct: {}",
            entries.data_type()
        ));
    };
    let Some(records) = list.values().as_struct_opt().filter(|r| r.num_columns() == 2) else {
        return Err(datafusion::common::exec_datafusion_err!(
            "an array of {} cannot be read as a MAP: its items are not key/value records",
            list.values().data_type()
        ));
    };
    let columns = vec![
        cast_column(records.column(0), kv[0].data_type())?,
        cast_column(records.column(1), kv[1].data_type())?,
    ];
    let entries_array = StructArray::try_new(kv.clone(), columns, None)?;
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(entries),
        list.offsets().clone(),
        entries_array,
        list.nulls().cloned(),
        sorted,
    )?))
}
