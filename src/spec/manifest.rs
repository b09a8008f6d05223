//! Manifest lists, manifest entries with their `DataFileMeta`, and index manifest entries
//! (format.md §4), decoded from Avro records by field name (writer-schema driven).
//!
//! BinaryRow fields (`_PARTITION`, `_MIN_KEY`, stats) stay as raw bytes here; they are decoded
//! with the right row type by the layer that knows it (see [`super::binary_row`]).

use apache_avro::types::Value;

use crate::error::{Error, Result};

/// ADD or DELETE of a file in a manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `_KIND = 0`.
    Add,
    /// `_KIND = 1`.
    Delete,
}

/// Min/max/null-count stats of some columns (`SimpleStats`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimpleStats {
    /// Serialized BinaryRow of minimums.
    pub min_values: Vec<u8>,
    /// Serialized BinaryRow of maximums.
    pub max_values: Vec<u8>,
    /// Null count per covered column (None = unknown).
    pub null_counts: Option<Vec<Option<i64>>>,
}

/// One record of a manifest list.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFileMeta {
    /// Manifest file name in `manifest/`.
    pub file_name: String,
    /// Its size in bytes.
    pub file_size: i64,
    /// ADD entries.
    pub num_added_files: i64,
    /// DELETE entries.
    pub num_deleted_files: i64,
    /// Partition stats of the entries.
    pub partition_stats: SimpleStats,
    /// Schema id when written.
    pub schema_id: i64,
    /// Bucket range of the entries.
    pub min_bucket: Option<i32>,
    /// Bucket range of the entries.
    pub max_bucket: Option<i32>,
    /// Level range of the entries.
    pub min_level: Option<i32>,
    /// Level range of the entries.
    pub max_level: Option<i32>,
    /// Row-id range (row tracking).
    pub min_row_id: Option<i64>,
    /// Row-id range (row tracking).
    pub max_row_id: Option<i64>,
}

/// Metadata of one data (or changelog) file.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFileMeta {
    /// Bare file name.
    pub file_name: String,
    /// Bytes.
    pub file_size: i64,
    /// Physical rows, retracts included.
    pub row_count: i64,
    /// Serialized BinaryRow of the smallest trimmed key.
    pub min_key: Vec<u8>,
    /// Serialized BinaryRow of the largest trimmed key.
    pub max_key: Vec<u8>,
    /// Stats of the key columns.
    pub key_stats: SimpleStats,
    /// Stats of value columns (see `value_stats_cols`).
    pub value_stats: SimpleStats,
    /// Smallest sequence number.
    pub min_sequence_number: i64,
    /// Largest sequence number.
    pub max_sequence_number: i64,
    /// Schema id the file was written with.
    pub schema_id: i64,
    /// LSM level.
    pub level: i32,
    /// Side files.
    pub extra_files: Vec<String>,
    /// Creation time (local wall clock encoded as UTC millis).
    pub creation_time: Option<i64>,
    /// Rows of kind -U/-D, when known.
    pub delete_row_count: Option<i64>,
    /// Inline file index.
    pub embedded_index: Option<Vec<u8>>,
    /// 0 = APPEND, 1 = COMPACT.
    pub file_source: Option<i32>,
    /// Columns covered by `value_stats` (None = all).
    pub value_stats_cols: Option<Vec<String>>,
    /// Absolute path when the file lives outside the table.
    pub external_path: Option<String>,
    /// Row tracking: first row id.
    pub first_row_id: Option<i64>,
    /// Data evolution: columns written.
    pub write_cols: Option<Vec<String>>,
}

/// One record of a manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    /// ADD or DELETE.
    pub kind: FileKind,
    /// Serialized partition BinaryRow.
    pub partition: Vec<u8>,
    /// Bucket id (-2 = postpone).
    pub bucket: i32,
    /// Bucket option when written.
    pub total_buckets: i32,
    /// The file.
    pub file: DataFileMeta,
}

impl ManifestEntry {
    /// Identity of the physical file (format.md §4.5); level is part of it.
    pub fn identity(&self) -> (Vec<u8>, i32, i32, String, Vec<String>, Option<String>) {
        (
            self.partition.clone(),
            self.bucket,
            self.file.level,
            self.file.file_name.clone(),
            self.file.extra_files.clone(),
            self.file.external_path.clone(),
        )
    }
}

/// Location of one deletion vector in an index file.
#[derive(Debug, Clone, PartialEq)]
pub struct DeletionVectorRange {
    /// Data file the vector belongs to.
    pub data_file: String,
    /// Byte offset in the index file.
    pub offset: i32,
    /// Length as recorded.
    pub length: i32,
    /// Deleted rows.
    pub cardinality: Option<i64>,
}

/// One record of an index manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexManifestEntry {
    /// ADD or DELETE.
    pub kind: FileKind,
    /// Serialized partition BinaryRow.
    pub partition: Vec<u8>,
    /// Bucket id.
    pub bucket: i32,
    /// `HASH`, `DELETION_VECTORS`, ...
    pub index_type: String,
    /// File name in `index/`.
    pub file_name: String,
    /// Bytes.
    pub file_size: i64,
    /// Hash count or DV count.
    pub row_count: i64,
    /// Deletion-vector ranges.
    pub dv_ranges: Option<Vec<DeletionVectorRange>>,
    /// External path.
    pub external_path: Option<String>,
}

/// Field access on one Avro record by name; `path` names the file in errors.
pub(crate) struct Record<'a> {
    fields: &'a [(String, Value)],
    path: &'a str,
}

impl<'a> Record<'a> {
    pub(crate) fn new(v: &'a Value, path: &'a str) -> Result<Self> {
        match unwrap_union(v) {
            Value::Record(fields) => Ok(Record { fields, path }),
            other => Err(Error::corrupt(
                path,
                format!("expected an Avro record, found {other:?}"),
            )),
        }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| unwrap_union(v))
            .filter(|v| !matches!(v, Value::Null))
    }

    fn required(&self, name: &str) -> Result<&'a Value> {
        self.get(name)
            .ok_or_else(|| Error::corrupt(self.path, format!("missing field {name}")))
    }

    fn bad(&self, name: &str) -> Error {
        Error::corrupt(self.path, format!("field {name} has an unexpected type"))
    }

    pub(crate) fn long(&self, name: &str) -> Result<i64> {
        self.opt_long(name)?
            .ok_or_else(|| Error::corrupt(self.path, format!("missing field {name}")))
    }

    pub(crate) fn opt_long(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Long(v)) | Some(Value::TimestampMillis(v)) | Some(Value::TimestampMicros(v)) => {
                Ok(Some(*v))
            }
            Some(Value::LocalTimestampMillis(v)) | Some(Value::LocalTimestampMicros(v)) => Ok(Some(*v)),
            Some(Value::Int(v)) => Ok(Some(*v as i64)),
            Some(_) => Err(self.bad(name)),
        }
    }

    pub(crate) fn int(&self, name: &str) -> Result<i32> {
        Ok(self.long(name)? as i32)
    }

    pub(crate) fn opt_int(&self, name: &str) -> Result<Option<i32>> {
        Ok(self.opt_long(name)?.map(|v| v as i32))
    }

    pub(crate) fn string(&self, name: &str) -> Result<String> {
        self.opt_string(name)?
            .ok_or_else(|| Error::corrupt(self.path, format!("missing field {name}")))
    }

    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(name)),
        }
    }

    pub(crate) fn bytes(&self, name: &str) -> Result<Vec<u8>> {
        Ok(self.opt_bytes(name)?.unwrap_or_default())
    }

    pub(crate) fn opt_bytes(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bytes(b)) | Some(Value::Fixed(_, b)) => Ok(Some(b.clone())),
            Some(_) => Err(self.bad(name)),
        }
    }

    pub(crate) fn opt_array(&self, name: &str) -> Result<Option<&'a [Value]>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(self.bad(name)),
        }
    }

    pub(crate) fn opt_strings(&self, name: &str) -> Result<Option<Vec<String>>> {
        self.opt_array(name)?
            .map(|a| {
                a.iter()
                    .map(|v| match unwrap_union(v) {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(self.bad(name)),
                    })
                    .collect()
            })
            .transpose()
    }

    pub(crate) fn record(&self, name: &str) -> Result<Record<'a>> {
        Record::new(self.required(name)?, self.path)
    }

    fn stats(&self, name: &str) -> Result<SimpleStats> {
        let Some(v) = self.get(name) else {
            return Ok(SimpleStats::default());
        };
        let r = Record::new(v, self.path)?;
        let null_counts = r
            .opt_array("_NULL_COUNTS")?
            .map(|a| {
                a.iter()
                    .map(|v| match unwrap_union(v) {
                        Value::Null => Ok(None),
                        Value::Long(n) => Ok(Some(*n)),
                        Value::Int(n) => Ok(Some(*n as i64)),
                        _ => Err(r.bad("_NULL_COUNTS")),
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?;
        Ok(SimpleStats {
            min_values: r.bytes("_MIN_VALUES")?,
            max_values: r.bytes("_MAX_VALUES")?,
            null_counts,
        })
    }
}

fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => unwrap_union(inner),
        other => other,
    }
}

fn file_kind(v: i32, path: &str) -> Result<FileKind> {
    match v {
        0 => Ok(FileKind::Add),
        1 => Ok(FileKind::Delete),
        other => Err(Error::corrupt(path, format!("unknown _KIND {other}"))),
    }
}

fn check_version(r: &Record<'_>, expected: i64, path: &str) -> Result<()> {
    match r.opt_long("_VERSION")? {
        Some(v) if v != expected => Err(Error::corrupt(
            path,
            format!("unsupported _VERSION {v}, expected {expected}"),
        )),
        _ => Ok(()),
    }
}

impl ManifestFileMeta {
    /// Decodes one manifest-list record.
    pub fn from_avro(v: &Value, path: &str) -> Result<Self> {
        let r = Record::new(v, path)?;
        check_version(&r, 2, path)?;
        Ok(ManifestFileMeta {
            file_name: r.string("_FILE_NAME")?,
            file_size: r.long("_FILE_SIZE")?,
            num_added_files: r.long("_NUM_ADDED_FILES")?,
            num_deleted_files: r.long("_NUM_DELETED_FILES")?,
            partition_stats: r.stats("_PARTITION_STATS")?,
            schema_id: r.long("_SCHEMA_ID")?,
            min_bucket: r.opt_int("_MIN_BUCKET")?,
            max_bucket: r.opt_int("_MAX_BUCKET")?,
            min_level: r.opt_int("_MIN_LEVEL")?,
            max_level: r.opt_int("_MAX_LEVEL")?,
            min_row_id: r.opt_long("_MIN_ROW_ID")?,
            max_row_id: r.opt_long("_MAX_ROW_ID")?,
        })
    }
}

impl ManifestEntry {
    /// Decodes one manifest record.
    pub fn from_avro(v: &Value, path: &str) -> Result<Self> {
        let r = Record::new(v, path)?;
        check_version(&r, 2, path)?;
        let f = r.record("_FILE")?;
        let file = DataFileMeta {
            file_name: f.string("_FILE_NAME")?,
            file_size: f.long("_FILE_SIZE")?,
            row_count: f.long("_ROW_COUNT")?,
            min_key: f.bytes("_MIN_KEY")?,
            max_key: f.bytes("_MAX_KEY")?,
            key_stats: f.stats("_KEY_STATS")?,
            value_stats: f.stats("_VALUE_STATS")?,
            min_sequence_number: f.long("_MIN_SEQUENCE_NUMBER")?,
            max_sequence_number: f.long("_MAX_SEQUENCE_NUMBER")?,
            schema_id: f.long("_SCHEMA_ID")?,
            level: f.int("_LEVEL")?,
            extra_files: f.opt_strings("_EXTRA_FILES")?.unwrap_or_default(),
            creation_time: f.opt_long("_CREATION_TIME")?,
            delete_row_count: f.opt_long("_DELETE_ROW_COUNT")?,
            embedded_index: f.opt_bytes("_EMBEDDED_FILE_INDEX")?,
            file_source: f.opt_int("_FILE_SOURCE")?,
            value_stats_cols: f.opt_strings("_VALUE_STATS_COLS")?,
            external_path: f.opt_string("_EXTERNAL_PATH")?,
            first_row_id: f.opt_long("_FIRST_ROW_ID")?,
            write_cols: f.opt_strings("_WRITE_COLS")?,
        };
        Ok(ManifestEntry {
            kind: file_kind(r.int("_KIND")?, path)?,
            partition: r.bytes("_PARTITION")?,
            bucket: r.int("_BUCKET")?,
            total_buckets: r.opt_int("_TOTAL_BUCKETS")?.unwrap_or(-1),
            file,
        })
    }
}

impl IndexManifestEntry {
    /// Decodes one index-manifest record.
    pub fn from_avro(v: &Value, path: &str) -> Result<Self> {
        let r = Record::new(v, path)?;
        check_version(&r, 1, path)?;
        let dv_ranges = r
            .opt_array("_DELETIONS_VECTORS_RANGES")?
            .map(|a| {
                a.iter()
                    .map(|item| {
                        let d = Record::new(item, path)?;
                        Ok(DeletionVectorRange {
                            data_file: d.string("f0")?,
                            offset: d.int("f1")?,
                            length: d.int("f2")?,
                            cardinality: d.opt_long("_CARDINALITY")?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?;
        Ok(IndexManifestEntry {
            kind: file_kind(r.int("_KIND")?, path)?,
            partition: r.bytes("_PARTITION")?,
            bucket: r.int("_BUCKET")?,
            index_type: r.string("_INDEX_TYPE")?,
            file_name: r.string("_FILE_NAME")?,
            file_size: r.long("_FILE_SIZE")?,
            row_count: r.long("_ROW_COUNT")?,
            dv_ranges,
            external_path: r.opt_string("_EXTERNAL_PATH")?,
        })
    }
}
