//! Pure naming rules for files inside a table directory (format.md §1).

use datafusion::common::ScalarValue;

/// `schema/schema-<id>`.
pub fn schema_file(id: i64) -> String {
    format!("schema/schema-{id}")
}

/// `snapshot/snapshot-<id>`.
pub fn snapshot_file(id: i64) -> String {
    format!("snapshot/snapshot-{id}")
}

/// `tag/tag-<name>`.
/// Long-lived changelog metadata of snapshot `id` (format.md §3.6).
pub fn changelog_file(id: i64) -> String {
    format!("changelog/changelog-{id}")
}

pub fn tag_file(name: &str) -> String {
    format!("tag/tag-{name}")
}

/// `manifest/<name>`.
pub fn manifest_file(name: &str) -> String {
    format!("manifest/{name}")
}

/// `index/<name>`.
pub fn index_file(name: &str) -> String {
    format!("index/{name}")
}

/// Where a table keeps its index files (deletion vectors, dynamic-bucket hashes): `index/`, or,
/// with `index-file-in-data-file-dir = true` (Paimon 1.3), the bucket directory of each file's
/// partition and bucket, under the bare name the index manifest records.
#[derive(Debug, Clone, Default)]
pub struct IndexFileDirs {
    /// Set when the files live in the bucket directories.
    in_buckets: Option<BucketDirs>,
}

#[derive(Debug, Clone)]
struct BucketDirs {
    keys: Vec<String>,
    types: Vec<super::DataType>,
    default_name: String,
    path_directory: Option<String>,
}

impl IndexFileDirs {
    /// The layout `schema`'s options choose.
    pub fn of(schema: &super::TableSchema) -> Self {
        let option = |k: &str| schema.options.get(k).map(|v| v.trim().to_string());
        let in_buckets = option("index-file-in-data-file-dir")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            .then(|| BucketDirs {
                keys: schema.partition_keys.clone(),
                types: schema.partition_types(),
                default_name: option(super::options::PARTITION_DEFAULT_NAME)
                    .unwrap_or_else(|| super::options::DEFAULT_PARTITION_NAME.to_string()),
                path_directory: option(super::options::DATA_FILE_PATH_DIRECTORY),
            });
        IndexFileDirs { in_buckets }
    }

    /// The table-relative path of index file `name` of (`partition`, `bucket`).
    pub fn path(&self, partition: &[u8], bucket: i32, name: &str) -> crate::error::Result<String> {
        match &self.in_buckets {
            None => Ok(index_file(name)),
            Some(dirs) => {
                let values = super::BinaryRow::decode(partition, &dirs.types)?.values;
                let partition = partition_path(&dirs.keys, &values, &dirs.default_name);
                let dir = bucket_path(dirs.path_directory.as_deref(), &partition, bucket);
                Ok(format!("{dir}/{name}"))
            }
        }
    }
}

/// The bucket directory name: `bucket-<n>`, or `bucket-postpone` for bucket -2.
pub fn bucket_dir(bucket: i32) -> String {
    if bucket == -2 {
        "bucket-postpone".to_string()
    } else {
        format!("bucket-{bucket}")
    }
}

/// Directory of a bucket relative to the table root: `[<data-file.path-directory>/]<partition
/// path>bucket-<n>` (format.md §1.2-1.4).
pub fn bucket_path(path_directory: Option<&str>, partition_path: &str, bucket: i32) -> String {
    match path_directory {
        Some(d) => format!("{d}/{partition_path}{}", bucket_dir(bucket)),
        None => format!("{partition_path}{}", bucket_dir(bucket)),
    }
}

/// Escapes a partition key or value for a path segment (format.md §1.3).
pub fn escape_path_name(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let code = c as u32;
        if code < 0x20 || code == 0x7F || "\"#%'*/:=?\\{}[]^".contains(c) {
            out.push_str(&format!("%{code:02X}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// The text of a partition value in a directory name with `partition.legacy-name = true`.
pub fn partition_value_text(v: &ScalarValue) -> Option<String> {
    if v.is_null() {
        return None;
    }
    let s = match v {
        ScalarValue::Utf8(Some(s)) => s.clone(),
        ScalarValue::Date32(Some(d)) => d.to_string(),
        ScalarValue::Time32Millisecond(Some(t)) => t.to_string(),
        ScalarValue::Float32(Some(f)) => java_float(*f as f64),
        ScalarValue::Float64(Some(f)) => java_float(*f),
        ScalarValue::TimestampMillisecond(Some(_), _)
        | ScalarValue::TimestampSecond(Some(_), _)
        | ScalarValue::TimestampMicrosecond(Some(_), _)
        | ScalarValue::TimestampNanosecond(Some(_), _) => java_local_date_time(v),
        other => other.to_string(),
    };
    Some(s)
}

fn java_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e7 {
        format!("{f:.1}")
    } else {
        f.to_string()
    }
}

/// Java `LocalDateTime.toString()`: seconds and fraction only when non-zero.
fn java_local_date_time(v: &ScalarValue) -> String {
    let nanos: i64 = match v {
        ScalarValue::TimestampSecond(Some(x), _) => x * 1_000_000_000,
        ScalarValue::TimestampMillisecond(Some(x), _) => x * 1_000_000,
        ScalarValue::TimestampMicrosecond(Some(x), _) => x * 1_000,
        ScalarValue::TimestampNanosecond(Some(x), _) => *x,
        _ => return v.to_string(),
    };
    let t = chrono::DateTime::from_timestamp_nanos(nanos).naive_utc();
    let base = t.format("%Y-%m-%dT%H:%M").to_string();
    let secs = t.format("%S").to_string();
    let frac = t.and_utc().timestamp_subsec_nanos();
    if frac != 0 {
        let digits = if frac % 1_000_000 == 0 {
            3
        } else if frac % 1000 == 0 {
            6
        } else {
            9
        };
        let f = format!("{frac:09}");
        format!("{base}:{secs}.{}", &f[..digits])
    } else if secs != "00" {
        format!("{base}:{secs}")
    } else {
        base
    }
}

/// The partition path `k1=v1/k2=v2/` (empty for unpartitioned tables).
pub fn partition_path(keys: &[String], values: &[ScalarValue], default_name: &str) -> String {
    let mut out = String::new();
    for (k, v) in keys.iter().zip(values) {
        let text = partition_value_text(v).filter(|s| !s.trim().is_empty());
        let text = text.unwrap_or_else(|| default_name.to_string());
        out.push_str(&escape_path_name(k));
        out.push('=');
        out.push_str(&escape_path_name(&text));
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_partition_paths() {
        let keys = vec!["dt".to_string(), "hr".to_string()];
        let vals = vec![
            ScalarValue::Utf8(Some("2024-01-01".into())),
            ScalarValue::Int32(Some(1)),
        ];
        assert_eq!(
            partition_path(&keys, &vals, "__DEFAULT_PARTITION__"),
            "dt=2024-01-01/hr=1/"
        );
        let vals = vec![ScalarValue::Utf8(None), ScalarValue::Int32(None)];
        assert_eq!(
            partition_path(&keys, &vals, "__DEFAULT_PARTITION__"),
            "dt=__DEFAULT_PARTITION__/hr=__DEFAULT_PARTITION__/"
        );
        assert_eq!(escape_path_name("a:b/c"), "a%3Ab%2Fc");
        assert_eq!(bucket_dir(-2), "bucket-postpone");
    }
}
