//! `schema/schema-N` files (format.md §2).

use std::collections::BTreeMap;

use arrow::datatypes::{Schema, SchemaRef};
use serde_json::Value;

use super::types::{json_object, quote, row_fields, DataField, DataType};
use crate::error::{Error, Result};

/// One version of a table's schema.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    /// Schema file format version (absent in very old files: 1).
    pub version: i32,
    /// Schema id (`N` of `schema-N`).
    pub id: i64,
    /// Columns in order.
    pub fields: Vec<DataField>,
    /// Largest field id ever allocated.
    pub highest_field_id: i32,
    /// Partition column names.
    pub partition_keys: Vec<String>,
    /// Primary-key column names; empty for append tables.
    pub primary_keys: Vec<String>,
    /// Table options, as stored.
    pub options: BTreeMap<String, String>,
    /// Table comment.
    pub comment: Option<String>,
    /// Creation time of this schema version, epoch millis.
    pub time_millis: i64,
}

impl TableSchema {
    /// Parses a schema file. `path` names the file in errors.
    pub fn from_json(bytes: &[u8], path: &str) -> Result<Self> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| Error::corrupt(path, e))?;
        let bad = |what: &str| Error::corrupt(path, format!("missing or invalid '{what}'"));
        let strings = |key: &str| -> Result<Vec<String>> {
            v.get(key)
                .and_then(Value::as_array)
                .ok_or_else(|| bad(key))?
                .iter()
                .map(|s| s.as_str().map(str::to_string).ok_or_else(|| bad(key)))
                .collect()
        };
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("fields"))?
            .iter()
            .map(|f| {
                DataField::from_json(f).map_err(|e| match e {
                    // a type this crate does not read is not a damaged file
                    Error::Unsupported(what) => Error::Unsupported(format!("{what} in schema file {path}")),
                    other => Error::corrupt(path, other),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut options = BTreeMap::new();
        if let Some(o) = v.get("options").and_then(Value::as_object) {
            for (k, val) in o {
                let s = match val {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                options.insert(k.clone(), s);
            }
        }
        let version = v.get("version").and_then(Value::as_i64).unwrap_or(1) as i32;
        // Old defaults (format.md §2.1): v1 had one bucket, v<=2 wrote ORC by default.
        if version <= 1 {
            options.entry("bucket".into()).or_insert_with(|| "1".into());
        }
        if version <= 2 {
            options
                .entry("file.format".into())
                .or_insert_with(|| "orc".into());
        }
        let partition_keys = strings("partitionKeys")?;
        let primary_keys = strings("primaryKeys")?;
        for (what, key) in partition_keys
            .iter()
            .map(|k| ("partition key", k))
            .chain(primary_keys.iter().map(|k| ("primary key", k)))
        {
            if !fields.iter().any(|f| &f.name == key) {
                return Err(Error::corrupt(path, format!("{what} '{key}' is not a field")));
            }
        }
        Ok(TableSchema {
            version,
            id: v.get("id").and_then(Value::as_i64).ok_or_else(|| bad("id"))?,
            highest_field_id: v.get("highestFieldId").and_then(Value::as_i64).unwrap_or(0) as i32,
            partition_keys,
            primary_keys,
            options,
            comment: v.get("comment").and_then(Value::as_str).map(str::to_string),
            time_millis: v.get("timeMillis").and_then(Value::as_i64).unwrap_or(0),
            fields,
        })
    }

    /// The schema file JSON as Java Paimon writes it (pretty-printed, no `comment` key when
    /// there is none).
    pub fn to_json(&self) -> String {
        let fields: Vec<String> = self.fields.iter().map(DataField::to_json_text).collect();
        let strings =
            |v: &[String]| format!("[{}]", v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(","));
        let options: Vec<(&str, String)> = self.options.iter().map(|(k, v)| (k.as_str(), quote(v))).collect();
        let mut pairs = vec![
            ("version", "3".to_string()),
            ("id", self.id.to_string()),
            ("fields", format!("[{}]", fields.join(","))),
            ("highestFieldId", self.highest_field_id.to_string()),
            ("partitionKeys", strings(&self.partition_keys)),
            ("primaryKeys", strings(&self.primary_keys)),
            ("options", json_object(&options)),
        ];
        if let Some(c) = &self.comment {
            pairs.push(("comment", quote(c)));
        }
        pairs.push(("timeMillis", self.time_millis.to_string()));
        json_object(&pairs)
    }

    /// The fields as the JSON array Paimon writes (`$schemas.fields`).
    pub fn fields_json(&self) -> Value {
        Value::Array(self.fields.iter().map(DataField::to_json).collect())
    }

    /// Arrow schema of the table's columns.
    pub fn arrow_schema(&self) -> SchemaRef {
        std::sync::Arc::new(Schema::new(row_fields(&self.fields)))
    }

    /// The field with this name.
    pub fn field(&self, name: &str) -> Option<&DataField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field with this id.
    pub fn field_by_id(&self, id: i32) -> Option<&DataField> {
        self.fields.iter().find(|f| f.id == id)
    }

    /// Primary key minus partition columns, in PK order: the key stored in data files.
    pub fn trimmed_primary_keys(&self) -> Vec<&DataField> {
        self.primary_keys
            .iter()
            .filter(|k| !self.partition_keys.contains(k))
            .filter_map(|k| self.field(k))
            .collect()
    }

    /// Positions in `fields` of [`Self::trimmed_primary_keys`].
    pub fn trimmed_primary_key_indices(&self) -> Vec<usize> {
        self.trimmed_primary_keys()
            .iter()
            .filter_map(|k| self.fields.iter().position(|f| f.id == k.id))
            .collect()
    }

    /// The columns rows are bucketed by: `bucket-key`, else the trimmed primary key.
    pub fn bucket_key(&self) -> Vec<String> {
        match self.options.get("bucket-key") {
            Some(k) => k
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            None => self
                .trimmed_primary_keys()
                .iter()
                .map(|f| f.name.clone())
                .collect(),
        }
    }

    /// Types of the partition columns, in partition order.
    pub fn partition_types(&self) -> Vec<DataType> {
        self.partition_keys
            .iter()
            .filter_map(|k| self.field(k).map(|f| f.data_type.clone()))
            .collect()
    }

    /// Whether this is a primary-key table.
    pub fn has_primary_key(&self) -> bool {
        !self.primary_keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_py_schema() {
        let json = br#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"BIGINT NOT NULL"},
            {"id":1,"name":"v","type":"STRING"},{"id":2,"name":"p","type":"INT NOT NULL"}],
            "highestFieldId":2,"partitionKeys":["p"],"primaryKeys":["k","p"],
            "options":{"bucket":"2"},"comment":null,"timeMillis":1795982211020}"#;
        let s = TableSchema::from_json(json, "schema-0").unwrap();
        assert_eq!(s.comment, None);
        assert_eq!(
            s.trimmed_primary_keys()
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>(),
            ["k"]
        );
        assert_eq!(s.options["bucket"], "2");
        assert!(TableSchema::from_json(b"{", "schema-9")
            .unwrap_err()
            .to_string()
            .contains("schema-9"));
        // a damaged field name leaves the key pointing nowhere: the file is corrupt
        let damaged = String::from_utf8(json.to_vec())
            .unwrap()
            .replace(r#""name":"k""#, r#""name":"j""#);
        let err = TableSchema::from_json(damaged.as_bytes(), "schema-0")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("schema-0") && err.contains("primary key 'k' is not a field"),
            "{err}"
        );
    }
}
