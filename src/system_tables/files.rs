//! `t$files`: the live data files of the (time-travelled) snapshot, all levels (semantics.md §8).
//!
//! Formats follow the reference fixtures (pypaimon): `partition` is `k=v/k2=v2` (Python `str`,
//! `None` for NULL), `min_key`/`max_key` a JSON list (`[8]`), the three stats columns JSON objects
//! keyed by the reading schema's column names, `file_source` the stored number as text (`"0"`).
//!
//! Stats are interpreted through the file's own schema version and field ids (Java
//! `SimpleStatsEvolution`): a column the file's schema lacks has null count = row count and no
//! min/max; a column the file has but whose stats were not collected shows `null` for all three.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Array, Int64Array, ListBuilder, StringArray, StringBuilder, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{Result, ScalarValue};

use super::format::{json_string, mem_table, partition_spec, py_json_value, reading_schema, stats_type};
use super::live_groups;
use crate::meta::TableMeta;
use crate::spec::{paths, BinaryRow, DataField, DataFileMeta, TableOptions, TableSchema};
use crate::table::resolve_snapshot;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", ArrowType::Utf8, true),
        Field::new("bucket", ArrowType::Int32, false),
        Field::new("file_path", ArrowType::Utf8, false),
        Field::new("file_format", ArrowType::Utf8, false),
        Field::new("schema_id", ArrowType::Int64, false),
        Field::new("level", ArrowType::Int32, false),
        Field::new("record_count", ArrowType::Int64, false),
        Field::new("file_size_in_bytes", ArrowType::Int64, false),
        Field::new("min_key", ArrowType::Utf8, true),
        Field::new("max_key", ArrowType::Utf8, true),
        Field::new("null_value_counts", ArrowType::Utf8, false),
        Field::new("min_value_stats", ArrowType::Utf8, false),
        Field::new("max_value_stats", ArrowType::Utf8, false),
        Field::new("min_sequence_number", ArrowType::Int64, true),
        Field::new("max_sequence_number", ArrowType::Int64, true),
        Field::new(
            "creation_time",
            ArrowType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
        Field::new("deleteRowCount", ArrowType::Int64, true),
        Field::new("file_source", ArrowType::Utf8, true),
        Field::new("first_row_id", ArrowType::Int64, true),
        Field::new(
            "write_cols",
            ArrowType::List(Arc::new(Field::new("item", ArrowType::Utf8, true))),
            true,
        ),
    ]))
}

#[derive(Default)]
struct Rows {
    partition: Vec<Option<String>>,
    bucket: Vec<i32>,
    file_path: Vec<String>,
    file_format: Vec<String>,
    schema_id: Vec<i64>,
    level: Vec<i32>,
    record_count: Vec<i64>,
    file_size: Vec<i64>,
    min_key: Vec<Option<String>>,
    max_key: Vec<Option<String>>,
    null_counts: Vec<String>,
    min_stats: Vec<String>,
    max_stats: Vec<String>,
    min_seq: Vec<Option<i64>>,
    max_seq: Vec<Option<i64>>,
    creation_time: Vec<Option<i64>>,
    delete_rows: Vec<Option<i64>>,
    file_source: Vec<Option<String>>,
    first_row_id: Vec<Option<i64>>,
    write_cols: ListBuilder<StringBuilder>,
}

/// Builds `t$files`.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &std::collections::BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    let schema = reading_schema(&meta, snapshot.as_ref(), options).await?;
    let table_options = TableOptions::parse(&schema.options)?;
    let groups = match &snapshot {
        Some(s) => live_groups(&meta, s, &schema.partition_types()).await?,
        None => vec![],
    };

    let mut file_schemas: HashMap<i64, Arc<TableSchema>> = HashMap::new();
    let mut rows = Rows::default();
    for group in &groups {
        let partition_text = partition_spec(&schema.partition_keys, &group.partition);
        let partition_dir = paths::partition_path(
            &schema.partition_keys,
            &group.partition,
            &table_options.partition_default_name,
        );
        let bucket_dir = match &table_options.data_file_path_directory {
            Some(d) => format!("{d}/{partition_dir}{}", paths::bucket_dir(group.bucket)),
            None => format!("{partition_dir}{}", paths::bucket_dir(group.bucket)),
        };
        for entry in &group.entries {
            let file = &entry.file;
            let file_schema = match file_schemas.get(&file.schema_id) {
                Some(s) => Arc::clone(s),
                None => {
                    let s = meta.schema(file.schema_id).await?;
                    file_schemas.insert(file.schema_id, Arc::clone(&s));
                    s
                }
            };
            rows.partition.push(partition_text.clone());
            rows.bucket.push(group.bucket);
            rows.file_path.push(match &file.external_path {
                Some(p) => p.clone(),
                None => meta.io().display(&format!("{bucket_dir}/{}", file.file_name)),
            });
            rows.file_format
                .push(file_format(&file.file_name, &table_options.file_format));
            rows.schema_id.push(file.schema_id);
            rows.level.push(file.level);
            rows.record_count.push(file.row_count);
            rows.file_size.push(file.file_size);
            let key_types: Vec<_> = file_schema
                .trimmed_primary_keys()
                .iter()
                .map(|f| stats_type(&f.data_type))
                .collect();
            rows.min_key.push(render_key(&file.min_key, &key_types));
            rows.max_key.push(render_key(&file.max_key, &key_types));
            let (nulls, mins, maxs) = value_stats(file, &file_schema, &schema);
            rows.null_counts.push(nulls);
            rows.min_stats.push(mins);
            rows.max_stats.push(maxs);
            rows.min_seq.push(Some(file.min_sequence_number));
            rows.max_seq.push(Some(file.max_sequence_number));
            rows.creation_time.push(file.creation_time);
            rows.delete_rows.push(file.delete_row_count);
            rows.file_source.push(file.file_source.map(|s| s.to_string()));
            rows.first_row_id.push(file.first_row_id);
            match &file.write_cols {
                Some(cols) if !cols.is_empty() => {
                    for c in cols {
                        rows.write_cols.values().append_value(c);
                    }
                    rows.write_cols.append(true);
                }
                _ => rows.write_cols.append(false),
            }
        }
    }

    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(rows.partition)),
        Arc::new(Int32Array::from(rows.bucket)),
        Arc::new(StringArray::from(rows.file_path)),
        Arc::new(StringArray::from(rows.file_format)),
        Arc::new(Int64Array::from(rows.schema_id)),
        Arc::new(Int32Array::from(rows.level)),
        Arc::new(Int64Array::from(rows.record_count)),
        Arc::new(Int64Array::from(rows.file_size)),
        Arc::new(StringArray::from(rows.min_key)),
        Arc::new(StringArray::from(rows.max_key)),
        Arc::new(StringArray::from(rows.null_counts)),
        Arc::new(StringArray::from(rows.min_stats)),
        Arc::new(StringArray::from(rows.max_stats)),
        Arc::new(Int64Array::from(rows.min_seq)),
        Arc::new(Int64Array::from(rows.max_seq)),
        Arc::new(TimestampMillisecondArray::from(rows.creation_time)),
        Arc::new(Int64Array::from(rows.delete_rows)),
        Arc::new(StringArray::from(rows.file_source)),
        Arc::new(Int64Array::from(rows.first_row_id)),
        Arc::new(rows.write_cols.finish()),
    ];
    let schema = self::schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}

/// The format of a data file, from its extension (as Java does); the table option otherwise.
fn file_format(file_name: &str, default: &str) -> String {
    match file_name.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() && !ext.contains('-') => ext.to_ascii_lowercase(),
        _ => default.to_string(),
    }
}

/// A key row as a JSON list (`[8]`, `[1,"a"]`); NULL for the empty key of append tables.
fn render_key(bytes: &[u8], types: &[crate::spec::DataType]) -> Option<String> {
    let row = BinaryRow::decode(bytes, types).ok()?;
    if row.values.is_empty() {
        return None;
    }
    let parts: Vec<String> = row.values.iter().map(py_json_value).collect();
    Some(format!("[{}]", parts.join(",")))
}

/// `null_value_counts`, `min_value_stats`, `max_value_stats` of one file, keyed by the columns
/// of `target` (the reading schema) and resolved through field ids.
fn value_stats(
    file: &DataFileMeta,
    file_schema: &TableSchema,
    target: &TableSchema,
) -> (String, String, String) {
    // Columns the file's value stats cover, in stats order (format.md §4.4).
    let covered: Vec<&DataField> = match (&file.value_stats_cols, &file.write_cols) {
        (Some(cols), _) => cols.iter().filter_map(|c| file_schema.field(c)).collect(),
        (None, Some(cols)) => cols.iter().filter_map(|c| file_schema.field(c)).collect(),
        (None, None) => file_schema.fields.iter().collect(),
    };
    let types: Vec<_> = covered.iter().map(|f| stats_type(&f.data_type)).collect();
    let decode = |bytes: &[u8]| {
        BinaryRow::decode(bytes, &types)
            .map(|r| r.values)
            .unwrap_or_default()
    };
    let mins = decode(&file.value_stats.min_values);
    let maxs = decode(&file.value_stats.max_values);
    let counts = file.value_stats.null_counts.clone().unwrap_or_default();

    let mut nulls_out = Vec::with_capacity(target.fields.len());
    let mut mins_out = Vec::with_capacity(target.fields.len());
    let mut maxs_out = Vec::with_capacity(target.fields.len());
    for field in &target.fields {
        let key = json_string(&field.name);
        let (null_count, min, max) = match file_schema.field_by_id(field.id) {
            // Added after the file was written: every row is NULL.
            None => (Some(file.row_count), None, None),
            Some(file_field) => match covered.iter().position(|c| c.id == file_field.id) {
                None => (None, None, None),
                Some(pos) => {
                    let convert = |v: Option<&ScalarValue>| v.and_then(|v| evolve(v, file_field, field));
                    (
                        counts.get(pos).copied().flatten(),
                        convert(mins.get(pos)),
                        convert(maxs.get(pos)),
                    )
                }
            },
        };
        nulls_out.push(format!(
            "{key}:{}",
            null_count.map_or("null".to_string(), |n| n.to_string())
        ));
        mins_out.push(format!(
            "{key}:{}",
            min.as_ref().map_or("null".to_string(), py_json_value)
        ));
        maxs_out.push(format!(
            "{key}:{}",
            max.as_ref().map_or("null".to_string(), py_json_value)
        ));
    }
    let object = |parts: Vec<String>| format!("{{{}}}", parts.join(","));
    (object(nulls_out), object(mins_out), object(maxs_out))
}

/// A stats value of `from` (the file's column) as a value of `to` (the reading schema's column):
/// cast when the type changed; None for nested types and values that cannot be cast.
fn evolve(v: &ScalarValue, from: &DataField, to: &DataField) -> Option<ScalarValue> {
    if v.is_null() || !from.data_type.is_atomic() || !to.data_type.is_atomic() {
        return None;
    }
    if from.data_type.kind == to.data_type.kind {
        return Some(v.clone());
    }
    v.cast_to(&to.data_type.to_arrow()).ok().filter(|c| !c.is_null())
}
