//! JSON output of maps whose keys are not strings (see `planner.rs`): such a map becomes the
//! list of its entries, `[{"key": k, "value": v}, ...]`, wherever it sits (top level, inside
//! structs, lists or other maps' values). Other types are left alone.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, MapArray, RecordBatch, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use datafusion::common::Result;

/// Whether Arrow's JSON writer refuses `data_type` somewhere inside.
pub fn needs_entries(data_type: &DataType) -> bool {
    match data_type {
        DataType::Map(entries, _) => {
            !string_keyed(entries) || entry_fields(entries).iter().any(|f| needs_entries(f.data_type()))
        }
        DataType::Struct(fields) => fields.iter().any(|f| needs_entries(f.data_type())),
        DataType::List(item) | DataType::LargeList(item) => needs_entries(item.data_type()),
        _ => false,
    }
}

fn entry_fields(entries: &FieldRef) -> Fields {
    match entries.data_type() {
        DataType::Struct(fields) => fields.clone(),
        _ => Fields::empty(),
    }
}

fn string_keyed(entries: &FieldRef) -> bool {
    entry_fields(entries).first().is_some_and(|key| {
        matches!(
            key.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
    })
}

/// `field` with every refused map turned into a list of entries.
fn convert_field(field: &Field) -> Field {
    field.clone().with_data_type(convert_type(field.data_type()))
}

fn convert_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Map(entries, sorted) => {
            let converted = Arc::new(convert_field(entries));
            if string_keyed(entries) {
                DataType::Map(converted, *sorted)
            } else {
                DataType::List(converted)
            }
        }
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| convert_field(f)).collect()),
        DataType::List(item) => DataType::List(Arc::new(convert_field(item))),
        DataType::LargeList(item) => DataType::LargeList(Arc::new(convert_field(item))),
        other => other.clone(),
    }
}

/// The schema a batch of `schema` has after [`convert_batch`].
pub fn convert_schema(schema: &SchemaRef) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| convert_field(f))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

pub fn convert_batch(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(convert_array)
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

fn convert_array(array: &ArrayRef) -> Result<ArrayRef> {
    if !needs_entries(array.data_type()) {
        return Ok(Arc::clone(array));
    }
    Ok(match array.data_type() {
        DataType::Map(entries_field, sorted) => {
            let map: &MapArray = array.as_map();
            let entries = convert_array(&(Arc::new(map.entries().clone()) as ArrayRef))?;
            let entries = entries.as_struct().clone();
            let field = Arc::new(convert_field(entries_field));
            if string_keyed(entries_field) {
                Arc::new(MapArray::try_new(
                    field,
                    map.offsets().clone(),
                    entries,
                    map.nulls().cloned(),
                    *sorted,
                )?)
            } else {
                Arc::new(ListArray::try_new(
                    field,
                    map.offsets().clone(),
                    Arc::new(entries),
                    map.nulls().cloned(),
                )?)
            }
        }
        DataType::Struct(_) => {
            let s: &StructArray = array.as_struct();
            let columns = s
                .columns()
                .iter()
                .map(convert_array)
                .collect::<Result<Vec<_>>>()?;
            let fields: Fields = s.fields().iter().map(|f| convert_field(f)).collect();
            Arc::new(StructArray::try_new(fields, columns, s.nulls().cloned())?)
        }
        DataType::List(item) => {
            let list = array.as_list::<i32>();
            let values = convert_array(list.values())?;
            Arc::new(ListArray::try_new(
                Arc::new(convert_field(item)),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?)
        }
        DataType::LargeList(item) => {
            let list = array.as_list::<i64>();
            let values = convert_array(list.values())?;
            Arc::new(datafusion::arrow::array::LargeListArray::try_new(
                Arc::new(convert_field(item)),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?)
        }
        _ => Arc::clone(array),
    })
}
