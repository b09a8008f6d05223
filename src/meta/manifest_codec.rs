//! The three encodings of manifest lists, manifests and index manifests (`manifest.format`:
//! `avro`, Paimon's default, `orc` or `parquet`). Java Paimon writes the same records in each:
//! the fields of the Avro writer schemas in [`crate::spec::manifest_write`], as columns of a
//! file of that format (`_KIND` and `_FILE_SOURCE` as TINYINT, `_CREATION_TIME` as
//! TIMESTAMP(3)).
//!
//! Records travel as Avro values in both directions, so that the decoders of
//! [`crate::spec::manifest`] (by field name, tolerant of fields older writers lack) serve all
//! three formats:
//!
//! ```text
//! read:  bytes ──(magic)──► Avro reader ───────────────────────────► values ──► from_avro
//!                     └───► ORC / Parquet reader ──► Arrow ──► values ─┘
//! write: to_avro ──► values ──► Avro bytes ──(avro)──────────────────► file
//!                                  └──(orc, parquet)──► Arrow ──► ORC / Parquet encoder
//! ```
//!
//! A reader recognizes the format by its magic bytes rather than by the table's option: a
//! table whose `manifest.format` was altered holds files of both.

use std::sync::Arc;

use apache_avro::types::Value;
use apache_avro::{Codec, Schema, Writer};
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Field, Fields, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type,
};
use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::{FileEncoder, FileFormat, WriteFormat};

/// How a table's manifests are written (`manifest.format`, `manifest.compression`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestFormat {
    format: FileFormat,
    /// Lower case; Paimon's default is zstd.
    compression: String,
}

impl Default for ManifestFormat {
    fn default() -> Self {
        ManifestFormat {
            format: FileFormat::Avro,
            compression: "zstd".to_string(),
        }
    }
}

impl ManifestFormat {
    /// The format the table's options ask for.
    pub(crate) fn of_options(options: &std::collections::BTreeMap<String, String>) -> Result<Self> {
        let format = match options
            .get("manifest.format")
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => FileFormat::Avro,
            Some(v) => match v.as_str() {
                "avro" => FileFormat::Avro,
                "orc" => FileFormat::Orc,
                "parquet" => FileFormat::Parquet,
                _ => {
                    return Err(Error::InvalidOption {
                        key: "manifest.format".into(),
                        reason: "manifest formats are avro, orc and parquet".into(),
                        value: v,
                    })
                }
            },
        };
        let compression = options
            .get("manifest.compression")
            .map(|c| c.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "zstd".to_string());
        let known: &[&str] = match format {
            FileFormat::Avro => &["zstd", "snappy", "deflate", "null", "none", "uncompressed"],
            FileFormat::Orc => &["zstd", "snappy", "lz4", "zlib", "gzip", "none", "uncompressed"],
            FileFormat::Parquet => &["zstd", "snappy", "gzip", "lz4", "none", "uncompressed"],
        };
        if !known.contains(&compression.as_str()) {
            return Err(Error::InvalidOption {
                key: "manifest.compression".into(),
                reason: format!("{} manifests take {}", format.extension(), known.join(", ")),
                value: compression,
            });
        }
        Ok(ManifestFormat { format, compression })
    }

    /// Encodes `records` (of the Avro writer schema `schema`) in this format.
    pub(crate) fn encode(&self, schema: &Schema, records: Vec<Value>, path: &str) -> Result<Vec<u8>> {
        let avro = avro_bytes(schema, records, self.avro_codec(), path)?;
        if self.format == FileFormat::Avro {
            return Ok(avro);
        }
        let batch = avro_to_arrow(&avro, path)?;
        let write = WriteFormat {
            format: self.format,
            compression: self.compression.clone(),
            zstd_level: 1,
        };
        let failed =
            |e: datafusion::error::DataFusionError| Error::FileFormat(format!("writing {path}: {e}"));
        let mut encoder = FileEncoder::new(&write, batch.schema()).map_err(failed)?;
        encoder.write(&batch).map_err(failed)?;
        Ok(encoder.finish().map_err(failed)?.bytes)
    }

    fn avro_codec(&self) -> Codec {
        match (self.format, self.compression.as_str()) {
            (FileFormat::Avro, "snappy") => Codec::Snappy,
            (FileFormat::Avro, "deflate") => Codec::Deflate(Default::default()),
            (FileFormat::Avro, "null" | "none" | "uncompressed") => Codec::Null,
            (FileFormat::Avro, _) => Codec::Zstandard(Default::default()),
            // Only an intermediate, decoded again at once.
            _ => Codec::Null,
        }
    }
}

fn avro_bytes(schema: &Schema, records: Vec<Value>, codec: Codec, path: &str) -> Result<Vec<u8>> {
    let mut writer = Writer::with_codec(schema, Vec::new(), codec);
    for r in records {
        writer.append(r).map_err(|e| Error::corrupt(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::corrupt(path, e))
}

/// The Avro file as one Arrow batch with the column types Java gives the same fields in ORC and
/// Parquet.
fn avro_to_arrow(avro: &[u8], path: &str) -> Result<RecordBatch> {
    let reader = arrow_avro::reader::ReaderBuilder::new()
        .build(std::io::Cursor::new(avro))
        .map_err(|e| Error::corrupt(path, e))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::corrupt(path, e))?;
    let batch = arrow::compute::concat_batches(&schema, &batches).map_err(|e| Error::corrupt(path, e))?;
    let columns = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| {
            let target = java_type(f);
            arrow::compute::cast(c, target.data_type()).map_err(|e| Error::corrupt(path, e))
        })
        .collect::<Result<Vec<_>>>()?;
    let fields: Fields = batch
        .schema()
        .fields()
        .iter()
        .map(|f| Arc::new(java_type(f)))
        .collect();
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns)
        .map_err(|e| Error::corrupt(path, e))
}

/// A field of the decoded Avro schema with Java's column type: TINYINT row kinds and file
/// sources, zone-less millisecond timestamps, and list elements named as Paimon names them.
fn java_type(field: &Field) -> Field {
    let data_type = match (field.name().as_str(), field.data_type()) {
        ("_KIND" | "_FILE_SOURCE", _) => DataType::Int8,
        (_, DataType::Timestamp(unit, _)) => DataType::Timestamp(*unit, None),
        (_, DataType::Struct(children)) => {
            DataType::Struct(children.iter().map(|c| Arc::new(java_type(c))).collect())
        }
        (_, DataType::List(item)) => {
            DataType::List(Arc::new(java_type(&item.as_ref().clone().with_name("element"))))
        }
        (_, other) => other.clone(),
    };
    field.clone().with_data_type(data_type)
}

/// The records of a manifest list, manifest or index manifest in any of the three formats.
pub(crate) fn decode(bytes: Bytes, path: &str) -> Result<Vec<Value>> {
    if bytes.starts_with(b"Obj\x01") {
        return decode_avro(&bytes, path);
    }
    let batches = if bytes.starts_with(b"ORC") {
        let reader = orc_rust::ArrowReaderBuilder::try_new(bytes)
            .map_err(|e| Error::corrupt(path, e))?
            .build();
        reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::corrupt(path, e))?
    } else if bytes.starts_with(b"PAR1") {
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .map_err(|e| Error::corrupt(path, e))?
            .build()
            .map_err(|e| Error::corrupt(path, e))?;
        reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::corrupt(path, e))?
    } else {
        return Err(Error::corrupt(
            path,
            "not an Avro, ORC or Parquet file (wrong magic in header)",
        ));
    };
    let mut records = Vec::new();
    for batch in &batches {
        records.extend(batch_values(batch, path)?);
    }
    Ok(records)
}

fn decode_avro(bytes: &[u8], path: &str) -> Result<Vec<Value>> {
    crate::spec::avro_names::install();
    // apache-avro panics on some damaged headers (an invalid schema name unwrapped): that is a
    // corrupt file too.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let reader = apache_avro::Reader::new(bytes).map_err(|e| Error::corrupt(path, e))?;
        reader.map(|v| v.map_err(|e| Error::corrupt(path, e))).collect()
    }))
    .unwrap_or_else(|_| Err(Error::corrupt(path, "the Avro decoder failed on damaged data")))
}

/// The rows of `batch` as Avro records.
fn batch_values(batch: &RecordBatch, path: &str) -> Result<Vec<Value>> {
    let schema = batch.schema();
    let columns = batch
        .columns()
        .iter()
        .map(|c| column_values(c, path))
        .collect::<Result<Vec<_>>>()?;
    let mut columns: Vec<_> = columns.into_iter().map(Vec::into_iter).collect();
    Ok((0..batch.num_rows())
        .map(|_| {
            Value::Record(
                schema
                    .fields()
                    .iter()
                    .zip(columns.iter_mut())
                    .map(|(f, c)| (f.name().clone(), c.next().unwrap_or(Value::Null)))
                    .collect(),
            )
        })
        .collect())
}

/// Every value of one column as an Avro value (null where the column is null).
fn column_values(array: &ArrayRef, path: &str) -> Result<Vec<Value>> {
    let len = array.len();
    let mut out: Vec<Value> = match array.data_type() {
        DataType::Null => vec![Value::Null; len],
        DataType::Boolean => array
            .as_boolean()
            .iter()
            .map(|v| Value::Boolean(v.unwrap_or_default()))
            .collect(),
        DataType::Int8 => array
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .map(|v| Value::Int(*v as i32))
            .collect(),
        DataType::UInt8 => array
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .map(|v| Value::Int(*v as i32))
            .collect(),
        DataType::Int16 => array
            .as_primitive::<Int16Type>()
            .values()
            .iter()
            .map(|v| Value::Int(*v as i32))
            .collect(),
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|v| Value::Int(*v))
            .collect(),
        DataType::Int64 => array
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|v| Value::Long(*v))
            .collect(),
        DataType::Timestamp(unit, _) => {
            let (values, per_milli): (Vec<i64>, i64) = match unit {
                TimeUnit::Second => (
                    array.as_primitive::<TimestampSecondType>().values().to_vec(),
                    -1000,
                ),
                TimeUnit::Millisecond => (
                    array.as_primitive::<TimestampMillisecondType>().values().to_vec(),
                    1,
                ),
                TimeUnit::Microsecond => (
                    array.as_primitive::<TimestampMicrosecondType>().values().to_vec(),
                    1000,
                ),
                TimeUnit::Nanosecond => (
                    array.as_primitive::<TimestampNanosecondType>().values().to_vec(),
                    1_000_000,
                ),
            };
            values
                .into_iter()
                .map(|v| {
                    let millis = if per_milli < 0 {
                        v * -per_milli
                    } else {
                        v.div_euclid(per_milli)
                    };
                    Value::TimestampMillis(millis)
                })
                .collect()
        }
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| Value::String(v.unwrap_or_default().to_string()))
            .collect(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .map(|v| Value::String(v.unwrap_or_default().to_string()))
            .collect(),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .map(|v| Value::String(v.unwrap_or_default().to_string()))
            .collect(),
        DataType::Binary => array
            .as_binary::<i32>()
            .iter()
            .map(|v| Value::Bytes(v.unwrap_or_default().to_vec()))
            .collect(),
        DataType::LargeBinary => array
            .as_binary::<i64>()
            .iter()
            .map(|v| Value::Bytes(v.unwrap_or_default().to_vec()))
            .collect(),
        DataType::BinaryView => array
            .as_binary_view()
            .iter()
            .map(|v| Value::Bytes(v.unwrap_or_default().to_vec()))
            .collect(),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let children = s
                .columns()
                .iter()
                .map(|c| column_values(c, path))
                .collect::<Result<Vec<_>>>()?;
            let mut children: Vec<_> = children.into_iter().map(Vec::into_iter).collect();
            (0..len)
                .map(|_| {
                    Value::Record(
                        fields
                            .iter()
                            .zip(children.iter_mut())
                            .map(|(f, c)| (f.name().clone(), c.next().unwrap_or(Value::Null)))
                            .collect(),
                    )
                })
                .collect()
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            let items = column_values(list.values(), path)?;
            let offsets = list.value_offsets();
            (0..len)
                .map(|i| Value::Array(items[offsets[i] as usize..offsets[i + 1] as usize].to_vec()))
                .collect()
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            let items = column_values(list.values(), path)?;
            let offsets = list.value_offsets();
            (0..len)
                .map(|i| Value::Array(items[offsets[i] as usize..offsets[i + 1] as usize].to_vec()))
                .collect()
        }
        other => {
            return Err(Error::corrupt(
                path,
                format!("a manifest column of type {other}, which no manifest field has"),
            ))
        }
    };
    if array.null_count() > 0 {
        for (i, v) in out.iter_mut().enumerate() {
            if array.is_null(i) {
                *v = Value::Null;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::manifest_write::{INDEX_MANIFEST_SCHEMA, MANIFEST_LIST_SCHEMA, MANIFEST_SCHEMA};
    use crate::spec::{
        DataFileMeta, DeletionVectorRange, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta,
        SimpleStats,
    };

    fn format(name: &str) -> ManifestFormat {
        let options = [("manifest.format".to_string(), name.to_string())]
            .into_iter()
            .collect();
        ManifestFormat::of_options(&options).expect("known format")
    }

    fn entry() -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Delete,
            partition: vec![0, 0, 0, 1, 2, 3],
            bucket: 3,
            total_buckets: 4,
            file: DataFileMeta {
                file_name: "data-1.parquet".into(),
                file_size: 1234,
                row_count: 10,
                min_key: vec![1, 2],
                max_key: vec![3, 4],
                key_stats: SimpleStats {
                    min_values: vec![5],
                    max_values: vec![6],
                    null_counts: Some(vec![Some(0), None]),
                },
                value_stats: SimpleStats::default(),
                min_sequence_number: 7,
                max_sequence_number: 9,
                schema_id: 2,
                level: 5,
                extra_files: vec!["x.index".into()],
                creation_time: Some(1_700_000_000_123),
                delete_row_count: Some(1),
                embedded_index: None,
                file_source: Some(1),
                value_stats_cols: Some(vec!["a".into()]),
                external_path: Some("s3://b/t/data-1.parquet".into()),
                first_row_id: Some(100),
                write_cols: None,
            },
        }
    }

    /// Every field survives each format, and the files carry the formats' magic.
    #[test]
    fn records_round_trip_in_every_format() {
        let list = ManifestFileMeta {
            file_name: "manifest-1".into(),
            file_size: 99,
            num_added_files: 3,
            num_deleted_files: 1,
            partition_stats: SimpleStats::default(),
            schema_id: 4,
            min_bucket: Some(0),
            max_bucket: Some(3),
            min_level: None,
            max_level: Some(5),
            min_row_id: None,
            max_row_id: Some(12),
        };
        let index = IndexManifestEntry {
            kind: FileKind::Add,
            partition: vec![],
            bucket: 1,
            index_type: "DELETION_VECTORS".into(),
            file_name: "index-1".into(),
            file_size: 10,
            row_count: 2,
            dv_ranges: Some(vec![DeletionVectorRange {
                data_file: "data-1.parquet".into(),
                offset: 1,
                length: 22,
                cardinality: Some(3),
            }]),
            external_path: None,
        };
        for (name, magic) in [("avro", &b"Obj\x01"[..]), ("orc", b"ORC"), ("parquet", b"PAR1")] {
            let f = format(name);
            let bytes = f
                .encode(&MANIFEST_SCHEMA, vec![entry().to_avro()], "m")
                .expect("encodes");
            assert!(bytes.starts_with(magic), "{name}");
            let back = decode(Bytes::from(bytes), "m").expect("decodes");
            assert_eq!(
                ManifestEntry::from_avro(&back[0], "m").expect("entry"),
                entry(),
                "{name}"
            );

            let bytes = f
                .encode(&MANIFEST_LIST_SCHEMA, vec![list.to_avro()], "l")
                .expect("encodes");
            let back = decode(Bytes::from(bytes), "l").expect("decodes");
            assert_eq!(
                ManifestFileMeta::from_avro(&back[0], "l").expect("meta"),
                list,
                "{name}"
            );

            let bytes = f
                .encode(&INDEX_MANIFEST_SCHEMA, vec![index.to_avro()], "i")
                .expect("encodes");
            let back = decode(Bytes::from(bytes), "i").expect("decodes");
            assert_eq!(
                IndexManifestEntry::from_avro(&back[0], "i").expect("index"),
                index,
                "{name}"
            );
        }
    }

    #[test]
    fn unknown_formats_and_codecs_name_the_option() {
        let options = [("manifest.format".to_string(), "json".to_string())]
            .into_iter()
            .collect();
        let err = ManifestFormat::of_options(&options).unwrap_err().to_string();
        assert!(err.contains("manifest.format"), "{err}");
        let options = [
            ("manifest.format".to_string(), "orc".to_string()),
            ("manifest.compression".to_string(), "brotli".to_string()),
        ]
        .into_iter()
        .collect();
        let err = ManifestFormat::of_options(&options).unwrap_err().to_string();
        assert!(err.contains("manifest.compression"), "{err}");
        assert!(decode(Bytes::from_static(b"nothing"), "x").is_err());
    }
}
