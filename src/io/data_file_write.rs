//! Writing one data file in Paimon's layout and describing it with a `DataFileMeta`.
//!
//! Primary-key files use the KeyValue layout (`_KEY_<k>...`, `_SEQUENCE_NUMBER`,
//! `_VALUE_KIND`, all table columns; format.md §6.2) and must arrive sorted by key with unique
//! keys. Parquet field ids are written as Java does; ORC and Avro files carry names only. Value statistics follow Java's default
//! `truncate(16)` mode; nested columns get null counts only.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;

use super::FileIO;
use crate::error::{Error, Result};
use crate::format::{encode, WriteFormat};
use crate::spec::{
    BinaryRow, DataField, DataFileMeta, SimpleStats, TableSchema, KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND,
};

/// Field ids Java gives the system columns (format.md §6.2).
const KEY_FIELD_ID_START: i32 = 1_073_741_823;
const SEQUENCE_FIELD_ID: i32 = 2_147_483_646;
const VALUE_KIND_FIELD_ID: i32 = 2_147_483_645;
/// Java's default `metadata.stats-mode` is `truncate(16)`.
const STATS_TRUNCATE: usize = 16;

/// Rows of one data file, already sorted by key (primary-key tables).
pub(crate) struct DataFileRows {
    /// Table columns in schema order, typed as the schema's Arrow types.
    pub(crate) values: RecordBatch,
    /// `_SEQUENCE_NUMBER` and `_VALUE_KIND` for primary-key files.
    pub(crate) kv: Option<(Int64Array, Int8Array)>,
}

fn field_with_id(name: &str, data_type: ArrowType, nullable: bool, id: i32) -> Field {
    let metadata = HashMap::from([("PARQUET:field_id".to_string(), id.to_string())]);
    Field::new(name, data_type, nullable).with_metadata(metadata)
}

/// Writes `rows` as `<dir>/<prefix>-<uuid>-0.<format>` in the format the table's options give
/// for `level` (`file.format`, `file.format.per.level`, `file.compression`) and returns the
/// file's metadata (at `level`, APPEND source).
pub(crate) async fn write_data_file(
    io: &FileIO,
    dir: &str,
    prefix: &str,
    level: i32,
    schema: &TableSchema,
    rows: DataFileRows,
) -> Result<DataFileMeta> {
    let format_error = |e: datafusion::error::DataFusionError| Error::FileFormat(e.message().to_string());
    let format = WriteFormat::of_level(&schema.options, level).map_err(format_error)?;
    let name = format!(
        "{prefix}-{}-0.{}",
        uuid::Uuid::new_v4(),
        format.format.extension()
    );
    let n = rows.values.num_rows();
    let keys: Vec<(usize, &DataField)> = schema
        .trimmed_primary_keys()
        .into_iter()
        .filter_map(|k| schema.fields.iter().position(|f| f.id == k.id).map(|i| (i, k)))
        .collect();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    if let Some((seq, kind)) = &rows.kv {
        for (i, k) in &keys {
            fields.push(field_with_id(
                &format!("{KEY_PREFIX}{}", k.name),
                k.data_type.to_arrow(),
                false,
                KEY_FIELD_ID_START + k.id,
            ));
            columns.push(Arc::clone(rows.values.column(*i)));
        }
        fields.push(field_with_id(
            SEQUENCE_NUMBER,
            ArrowType::Int64,
            false,
            SEQUENCE_FIELD_ID,
        ));
        columns.push(Arc::new(seq.clone()));
        fields.push(field_with_id(
            VALUE_KIND,
            ArrowType::Int8,
            false,
            VALUE_KIND_FIELD_ID,
        ));
        columns.push(Arc::new(kind.clone()));
    }
    for (f, c) in schema.fields.iter().zip(rows.values.columns()) {
        fields.push(field_with_id(
            &f.name,
            f.data_type.to_arrow(),
            f.data_type.nullable,
            f.id,
        ));
        columns.push(Arc::clone(c));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
    let buf = encode(&format, &batch).map_err(format_error)?;
    let file_size = buf.len() as i64;
    io.write(&format!("{dir}/{name}"), buf).await?;

    let empty = BinaryRow::encode(&[])?;
    let (min_key, max_key, key_stats, seq_range, deletes) = match &rows.kv {
        Some((seq, kind)) if n > 0 => {
            let key_at = |row: usize| -> Result<Vec<u8>> {
                let values = keys
                    .iter()
                    .map(|(i, _)| scalar_at(rows.values.column(*i), row))
                    .collect::<Result<Vec<_>>>()?;
                BinaryRow::encode(&values)
            };
            let key_columns: Vec<ArrayRef> = keys
                .iter()
                .map(|(i, _)| Arc::clone(rows.values.column(*i)))
                .collect();
            let stats = column_stats(&key_columns, false)?;
            let seqs = seq.values();
            let (lo, hi) = (
                seqs.iter().min().copied().unwrap_or(0),
                seqs.iter().max().copied().unwrap_or(0),
            );
            let deletes = kind.values().iter().filter(|k| **k == 1 || **k == 3).count() as i64;
            (key_at(0)?, key_at(n - 1)?, stats, (lo, hi), deletes)
        }
        _ => (
            empty.clone(),
            empty.clone(),
            SimpleStats {
                min_values: empty.clone(),
                max_values: empty.clone(),
                null_counts: Some(vec![]),
            },
            (0, 0),
            0,
        ),
    };
    let value_stats = column_stats(rows.values.columns(), true)?;
    Ok(DataFileMeta {
        file_name: name,
        file_size,
        row_count: n as i64,
        min_key,
        max_key,
        key_stats,
        value_stats,
        min_sequence_number: seq_range.0,
        max_sequence_number: seq_range.1,
        schema_id: schema.id,
        level,
        extra_files: vec![],
        creation_time: Some(chrono::Local::now().naive_local().and_utc().timestamp_millis()),
        delete_row_count: Some(deletes),
        embedded_index: None,
        file_source: Some(0),
        value_stats_cols: None,
        external_path: None,
        first_row_id: None,
        write_cols: None,
    })
}

fn scalar_at(array: &ArrayRef, row: usize) -> Result<ScalarValue> {
    ScalarValue::try_from_array(array, row).map_err(|e| Error::Unsupported(e.to_string()))
}

fn is_atomic(t: &ArrowType) -> bool {
    !matches!(
        t,
        ArrowType::List(_) | ArrowType::LargeList(_) | ArrowType::Struct(_) | ArrowType::Map(..)
    )
}

/// Min/max/null-count stats over whole columns; `truncate` applies Java's `truncate(16)` to
/// strings (min truncated, max truncated then incremented, or unknown if that is impossible).
fn column_stats(columns: &[ArrayRef], truncate: bool) -> Result<SimpleStats> {
    let mut mins = Vec::with_capacity(columns.len());
    let mut maxs = Vec::with_capacity(columns.len());
    let mut nulls = Vec::with_capacity(columns.len());
    for c in columns {
        nulls.push(Some(c.null_count() as i64));
        let t = c.data_type();
        let typed_null = ScalarValue::try_from(t).unwrap_or(ScalarValue::Null);
        if !is_atomic(t) {
            mins.push(typed_null.clone());
            maxs.push(typed_null);
            continue;
        }
        let err = |e: datafusion::error::DataFusionError| Error::Unsupported(e.to_string());
        let mut min = MinAccumulator::try_new(t).map_err(err)?;
        let mut max = MaxAccumulator::try_new(t).map_err(err)?;
        min.update_batch(std::slice::from_ref(c)).map_err(err)?;
        max.update_batch(std::slice::from_ref(c)).map_err(err)?;
        let (mut lo, mut hi) = (min.evaluate().map_err(err)?, max.evaluate().map_err(err)?);
        if truncate {
            if let ScalarValue::Utf8(Some(s)) = &lo {
                lo = ScalarValue::Utf8(Some(s.chars().take(STATS_TRUNCATE).collect()));
            }
            if let ScalarValue::Utf8(Some(s)) = &hi {
                hi = ScalarValue::Utf8(truncate_max(s));
            }
        }
        mins.push(lo);
        maxs.push(hi);
    }
    Ok(SimpleStats {
        min_values: BinaryRow::encode(&mins)?,
        max_values: BinaryRow::encode(&maxs)?,
        null_counts: Some(nulls),
    })
}

/// An upper bound of `s` with at most 16 characters, if one exists.
fn truncate_max(s: &str) -> Option<String> {
    if s.chars().count() <= STATS_TRUNCATE {
        return Some(s.to_string());
    }
    let mut chars: Vec<char> = s.chars().take(STATS_TRUNCATE).collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}
