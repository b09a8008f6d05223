//! `t$table_indexes`: the table index files (HASH, DELETION_VECTORS, ...) of the
//! (time-travelled) snapshot's index manifest, sorted by partition values (NULL first), bucket,
//! index type and file name (semantics.md §8). `partition` is rendered like `$files`.
//! Global-index metadata is not decoded by this reader, so the `row_range_*` and
//! `index_field_*` columns are NULL.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Array, Int32Builder, Int64Array, Int64Builder, ListBuilder, StringArray, StringBuilder,
    StructBuilder,
};
use arrow::datatypes::{DataType as ArrowType, Field, Fields, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::{mem_table, partition_spec, reading_schema};
use super::partition_order;
use crate::meta::TableMeta;
use crate::spec::{BinaryRow, FileKind};
use crate::table::resolve_snapshot;

fn dv_range_fields() -> Fields {
    Fields::from(vec![
        Field::new("f0", ArrowType::Utf8, false),
        Field::new("f1", ArrowType::Int32, false),
        Field::new("f2", ArrowType::Int32, false),
        Field::new("_CARDINALITY", ArrowType::Int64, true),
    ])
}

fn schema() -> SchemaRef {
    let item = Field::new("item", ArrowType::Struct(dv_range_fields()), true);
    Arc::new(Schema::new(vec![
        Field::new("partition", ArrowType::Utf8, true),
        Field::new("bucket", ArrowType::Int32, false),
        Field::new("index_type", ArrowType::Utf8, false),
        Field::new("file_name", ArrowType::Utf8, false),
        Field::new("file_size", ArrowType::Int64, false),
        Field::new("row_count", ArrowType::Int64, false),
        Field::new("dv_ranges", ArrowType::List(Arc::new(item)), true),
        Field::new("row_range_start", ArrowType::Int64, true),
        Field::new("row_range_end", ArrowType::Int64, true),
        Field::new("index_field_id", ArrowType::Int32, true),
        Field::new("index_field_name", ArrowType::Utf8, true),
    ]))
}

/// Builds `t$table_indexes`.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    let table_schema = reading_schema(&meta, snapshot.as_ref(), options).await?;
    let partition_types = table_schema.partition_types();
    let entries = match snapshot.as_ref().and_then(|s| s.index_manifest.as_ref()) {
        Some(name) => meta.index_manifest(name).await?,
        None => vec![],
    };
    let mut rows = Vec::new();
    for e in entries.into_iter().filter(|e| e.kind == FileKind::Add) {
        let partition = BinaryRow::decode(&e.partition, &partition_types)?.values;
        rows.push((partition, e));
    }
    rows.sort_by(|(pa, a), (pb, b)| {
        partition_order(pa, pb)
            .then(a.bucket.cmp(&b.bucket))
            .then_with(|| a.index_type.cmp(&b.index_type))
            .then_with(|| a.file_name.cmp(&b.file_name))
    });

    let mut dv_ranges = ListBuilder::new(StructBuilder::from_fields(dv_range_fields(), 0)).with_field(
        Arc::new(Field::new("item", ArrowType::Struct(dv_range_fields()), true)),
    );
    for (_, e) in &rows {
        match e.dv_ranges.as_ref().filter(|r| !r.is_empty()) {
            Some(ranges) => {
                let s = dv_ranges.values();
                for r in ranges {
                    s.field_builder::<StringBuilder>(0)
                        .expect("f0")
                        .append_value(&r.data_file);
                    s.field_builder::<Int32Builder>(1)
                        .expect("f1")
                        .append_value(r.offset);
                    s.field_builder::<Int32Builder>(2)
                        .expect("f2")
                        .append_value(r.length);
                    s.field_builder::<Int64Builder>(3)
                        .expect("_CARDINALITY")
                        .append_option(r.cardinality);
                    s.append(true);
                }
                dv_ranges.append(true);
            }
            None => dv_ranges.append(false),
        }
    }
    let n = rows.len();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            rows.iter()
                .map(|(p, _)| partition_spec(&table_schema.partition_keys, p))
                .collect::<StringArray>(),
        ),
        Arc::new(rows.iter().map(|(_, e)| Some(e.bucket)).collect::<Int32Array>()),
        Arc::new(
            rows.iter()
                .map(|(_, e)| Some(e.index_type.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, e)| Some(e.file_name.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, e)| Some(e.file_size))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, e)| Some(e.row_count))
                .collect::<Int64Array>(),
        ),
        Arc::new(dv_ranges.finish()),
        Arc::new(Int64Array::from(vec![None; n])),
        Arc::new(Int64Array::from(vec![None; n])),
        Arc::new(Int32Array::from(vec![None; n])),
        Arc::new(StringArray::from(vec![None::<&str>; n])),
    ];
    let schema = self::schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}
