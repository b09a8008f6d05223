//! Avro encodings of manifest lists and manifests as Java Paimon writes them (format.md §4.2,
//! §4.3): Java's writer schemas, record names and `["null", T]` unions.

use std::sync::LazyLock;

use apache_avro::types::Value;
use apache_avro::Schema;

use super::manifest::{
    DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats,
};

const STATS_FIELDS: &str = r#"[{"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},
 {"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]"#;

/// Writer schema of a manifest list.
pub static MANIFEST_LIST_SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let json = format!(
        r#"{{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
 {{"name":"_VERSION","type":"int"}},
 {{"name":"_FILE_NAME","type":"string"}},
 {{"name":"_FILE_SIZE","type":"long"}},
 {{"name":"_NUM_ADDED_FILES","type":"long"}},
 {{"name":"_NUM_DELETED_FILES","type":"long"}},
 {{"name":"_PARTITION_STATS","type":{{"type":"record","name":"record__PARTITION_STATS","fields":{STATS_FIELDS}}}}},
 {{"name":"_SCHEMA_ID","type":"long"}},
 {{"name":"_MIN_BUCKET","type":["null","int"],"default":null}},
 {{"name":"_MAX_BUCKET","type":["null","int"],"default":null}},
 {{"name":"_MIN_LEVEL","type":["null","int"],"default":null}},
 {{"name":"_MAX_LEVEL","type":["null","int"],"default":null}},
 {{"name":"_MIN_ROW_ID","type":["null","long"],"default":null}},
 {{"name":"_MAX_ROW_ID","type":["null","long"],"default":null}}]}}"#
    );
    Schema::parse_str(&json).expect("the manifest list schema is valid Avro")
});

/// Writer schema of a manifest file.
pub static MANIFEST_SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let json = format!(
        r#"{{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
 {{"name":"_VERSION","type":"int"}},
 {{"name":"_KIND","type":"int"}},
 {{"name":"_PARTITION","type":"bytes"}},
 {{"name":"_BUCKET","type":"int"}},
 {{"name":"_TOTAL_BUCKETS","type":"int"}},
 {{"name":"_FILE","type":{{"type":"record","name":"record__FILE","fields":[
  {{"name":"_FILE_NAME","type":"string"}},
  {{"name":"_FILE_SIZE","type":"long"}},
  {{"name":"_ROW_COUNT","type":"long"}},
  {{"name":"_MIN_KEY","type":"bytes"}},
  {{"name":"_MAX_KEY","type":"bytes"}},
  {{"name":"_KEY_STATS","type":{{"type":"record","name":"record__FILE__KEY_STATS","fields":{STATS_FIELDS}}}}},
  {{"name":"_VALUE_STATS","type":{{"type":"record","name":"record__FILE__VALUE_STATS","fields":{STATS_FIELDS}}}}},
  {{"name":"_MIN_SEQUENCE_NUMBER","type":"long"}},
  {{"name":"_MAX_SEQUENCE_NUMBER","type":"long"}},
  {{"name":"_SCHEMA_ID","type":"long"}},
  {{"name":"_LEVEL","type":"int"}},
  {{"name":"_EXTRA_FILES","type":{{"type":"array","items":"string"}}}},
  {{"name":"_CREATION_TIME","type":["null",{{"type":"long","logicalType":"timestamp-millis"}}],"default":null}},
  {{"name":"_DELETE_ROW_COUNT","type":["null","long"],"default":null}},
  {{"name":"_EMBEDDED_FILE_INDEX","type":["null","bytes"],"default":null}},
  {{"name":"_FILE_SOURCE","type":["null","int"],"default":null}},
  {{"name":"_VALUE_STATS_COLS","type":["null",{{"type":"array","items":"string"}}],"default":null}},
  {{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null}},
  {{"name":"_FIRST_ROW_ID","type":["null","long"],"default":null}},
  {{"name":"_WRITE_COLS","type":["null",{{"type":"array","items":"string"}}],"default":null}},
  {{"name":"_WRITE_COLS_SEQUENCES","type":["null",{{"type":"array","items":"long"}}],"default":null}}]}}}}]}}"#
    );
    Schema::parse_str(&json).expect("the manifest schema is valid Avro")
});

fn union<T>(v: Option<T>, f: impl FnOnce(T) -> Value) -> Value {
    match v {
        None => Value::Union(0, Box::new(Value::Null)),
        Some(x) => Value::Union(1, Box::new(f(x))),
    }
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
}

fn record(fields: Vec<(&str, Value)>) -> Value {
    Value::Record(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn stats(s: &SimpleStats) -> Value {
    record(vec![
        ("_MIN_VALUES", Value::Bytes(s.min_values.clone())),
        ("_MAX_VALUES", Value::Bytes(s.max_values.clone())),
        (
            "_NULL_COUNTS",
            union(s.null_counts.as_ref(), |n| {
                Value::Array(n.iter().map(|c| union(c.as_ref(), |x| Value::Long(*x))).collect())
            }),
        ),
    ])
}

impl ManifestFileMeta {
    /// The Avro record of this manifest-list entry.
    pub fn to_avro(&self) -> Value {
        record(vec![
            ("_VERSION", Value::Int(2)),
            ("_FILE_NAME", Value::String(self.file_name.clone())),
            ("_FILE_SIZE", Value::Long(self.file_size)),
            ("_NUM_ADDED_FILES", Value::Long(self.num_added_files)),
            ("_NUM_DELETED_FILES", Value::Long(self.num_deleted_files)),
            ("_PARTITION_STATS", stats(&self.partition_stats)),
            ("_SCHEMA_ID", Value::Long(self.schema_id)),
            ("_MIN_BUCKET", union(self.min_bucket, Value::Int)),
            ("_MAX_BUCKET", union(self.max_bucket, Value::Int)),
            ("_MIN_LEVEL", union(self.min_level, Value::Int)),
            ("_MAX_LEVEL", union(self.max_level, Value::Int)),
            ("_MIN_ROW_ID", union(self.min_row_id, Value::Long)),
            ("_MAX_ROW_ID", union(self.max_row_id, Value::Long)),
        ])
    }
}

impl DataFileMeta {
    fn to_avro(&self) -> Value {
        record(vec![
            ("_FILE_NAME", Value::String(self.file_name.clone())),
            ("_FILE_SIZE", Value::Long(self.file_size)),
            ("_ROW_COUNT", Value::Long(self.row_count)),
            ("_MIN_KEY", Value::Bytes(self.min_key.clone())),
            ("_MAX_KEY", Value::Bytes(self.max_key.clone())),
            ("_KEY_STATS", stats(&self.key_stats)),
            ("_VALUE_STATS", stats(&self.value_stats)),
            ("_MIN_SEQUENCE_NUMBER", Value::Long(self.min_sequence_number)),
            ("_MAX_SEQUENCE_NUMBER", Value::Long(self.max_sequence_number)),
            ("_SCHEMA_ID", Value::Long(self.schema_id)),
            ("_LEVEL", Value::Int(self.level)),
            ("_EXTRA_FILES", strings(&self.extra_files)),
            (
                "_CREATION_TIME",
                union(self.creation_time, Value::TimestampMillis),
            ),
            ("_DELETE_ROW_COUNT", union(self.delete_row_count, Value::Long)),
            (
                "_EMBEDDED_FILE_INDEX",
                union(self.embedded_index.clone(), Value::Bytes),
            ),
            ("_FILE_SOURCE", union(self.file_source, Value::Int)),
            (
                "_VALUE_STATS_COLS",
                union(self.value_stats_cols.as_deref(), strings),
            ),
            ("_EXTERNAL_PATH", union(self.external_path.clone(), Value::String)),
            ("_FIRST_ROW_ID", union(self.first_row_id, Value::Long)),
            ("_WRITE_COLS", union(self.write_cols.as_deref(), strings)),
            ("_WRITE_COLS_SEQUENCES", union(None::<i64>, Value::Long)),
        ])
    }
}

impl ManifestEntry {
    /// The Avro record of this manifest entry.
    pub fn to_avro(&self) -> Value {
        let kind = match self.kind {
            FileKind::Add => 0,
            FileKind::Delete => 1,
        };
        record(vec![
            ("_VERSION", Value::Int(2)),
            ("_KIND", Value::Int(kind)),
            ("_PARTITION", Value::Bytes(self.partition.clone())),
            ("_BUCKET", Value::Int(self.bucket)),
            ("_TOTAL_BUCKETS", Value::Int(self.total_buckets)),
            ("_FILE", self.file.to_avro()),
        ])
    }
}

/// Writer schema of an index manifest (format.md §4.8).
pub static INDEX_MANIFEST_SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let json = r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
 {"name":"_VERSION","type":"int"},
 {"name":"_KIND","type":"int"},
 {"name":"_PARTITION","type":"bytes"},
 {"name":"_BUCKET","type":"int"},
 {"name":"_INDEX_TYPE","type":"string"},
 {"name":"_FILE_NAME","type":"string"},
 {"name":"_FILE_SIZE","type":"long"},
 {"name":"_ROW_COUNT","type":"long"},
 {"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":["null",
   {"type":"record","name":"record__DELETIONS_VECTORS_RANGES","fields":[
     {"name":"f0","type":"string"},{"name":"f1","type":"int"},{"name":"f2","type":"int"},
     {"name":"_CARDINALITY","type":["null","long"],"default":null}]}]}],"default":null},
 {"name":"_EXTERNAL_PATH","type":["null","string"],"default":null},
 {"name":"_GLOBAL_INDEX","type":["null",{"type":"record","name":"record__GLOBAL_INDEX","fields":[
   {"name":"_ROW_RANGE_START","type":"long"},{"name":"_ROW_RANGE_END","type":"long"},
   {"name":"_INDEX_FIELD_ID","type":"int"},
   {"name":"_EXTRA_FIELD_IDS","type":["null",{"type":"array","items":"int"}],"default":null},
   {"name":"_INDEX_META","type":["null","bytes"],"default":null},
   {"name":"_SOURCE_META","type":["null","bytes"],"default":null}]}],"default":null}]}"#;
    Schema::parse_str(json).expect("the index manifest schema is valid Avro")
});

impl IndexManifestEntry {
    /// The Avro record of this index-manifest entry (no global-index metadata).
    pub fn to_avro(&self) -> Value {
        let kind = match self.kind {
            FileKind::Add => 0,
            FileKind::Delete => 1,
        };
        record(vec![
            ("_VERSION", Value::Int(1)),
            ("_KIND", Value::Int(kind)),
            ("_PARTITION", Value::Bytes(self.partition.clone())),
            ("_BUCKET", Value::Int(self.bucket)),
            ("_INDEX_TYPE", Value::String(self.index_type.clone())),
            ("_FILE_NAME", Value::String(self.file_name.clone())),
            ("_FILE_SIZE", Value::Long(self.file_size)),
            ("_ROW_COUNT", Value::Long(self.row_count)),
            (
                "_DELETIONS_VECTORS_RANGES",
                union(self.dv_ranges.as_ref(), |ranges| {
                    Value::Array(
                        ranges
                            .iter()
                            .map(|r| {
                                Value::Union(
                                    1,
                                    Box::new(record(vec![
                                        ("f0", Value::String(r.data_file.clone())),
                                        ("f1", Value::Int(r.offset)),
                                        ("f2", Value::Int(r.length)),
                                        ("_CARDINALITY", union(r.cardinality, Value::Long)),
                                    ])),
                                )
                            })
                            .collect(),
                    )
                }),
            ),
            (
                "_EXTERNAL_PATH",
                union(self.external_path.as_ref(), |p| Value::String(p.clone())),
            ),
            ("_GLOBAL_INDEX", union(None::<()>, |_| Value::Null)),
        ])
    }
}

/// One manifest entry as a bare Avro datum in the manifest's layout: how a writer task's files
/// travel to the committer of a distributed write or compaction.
pub fn entry_datum(entry: &ManifestEntry) -> Result<Vec<u8>, apache_avro::Error> {
    apache_avro::to_avro_datum(&MANIFEST_SCHEMA, entry.to_avro())
}

/// One index-manifest entry as a bare Avro datum, as [`entry_datum`].
pub fn index_entry_datum(entry: &IndexManifestEntry) -> Result<Vec<u8>, apache_avro::Error> {
    apache_avro::to_avro_datum(&INDEX_MANIFEST_SCHEMA, entry.to_avro())
}

/// The manifest entry of an [`entry_datum`]; `what` names its source in errors.
pub fn entry_from_datum(bytes: &[u8], what: &str) -> crate::error::Result<ManifestEntry> {
    let value = apache_avro::from_avro_datum(&MANIFEST_SCHEMA, &mut std::io::Cursor::new(bytes), None)
        .map_err(|e| crate::error::Error::corrupt(what, e))?;
    ManifestEntry::from_avro(&value, what)
}

/// The index-manifest entry of an [`index_entry_datum`].
pub fn index_entry_from_datum(bytes: &[u8], what: &str) -> crate::error::Result<IndexManifestEntry> {
    let value = apache_avro::from_avro_datum(&INDEX_MANIFEST_SCHEMA, &mut std::io::Cursor::new(bytes), None)
        .map_err(|e| crate::error::Error::corrupt(what, e))?;
    IndexManifestEntry::from_avro(&value, what)
}
