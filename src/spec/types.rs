//! Paimon data types as written in schema files (format.md §2.3, §2.4) and their Arrow mapping.

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Fields, TimeUnit};
use serde_json::Value;

use crate::error::{Error, Result};

/// A Paimon data type with its nullability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataType {
    /// The type without nullability.
    pub kind: TypeKind,
    /// Whether values may be NULL (`NOT NULL` absent).
    pub nullable: bool,
}

/// The shape of a Paimon data type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum TypeKind {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    Char(u32),
    VarChar(u32),
    Binary(u32),
    VarBinary(u32),
    Decimal {
        precision: u8,
        scale: i8,
    },
    Date,
    Time(u8),
    Timestamp(u8),
    LocalZonedTimestamp(u8),
    Array(Box<DataType>),
    Multiset(Box<DataType>),
    Map(Box<DataType>, Box<DataType>),
    Row(Vec<DataField>),
    Variant,
    /// `BLOB` (Paimon 1.4): large binary objects, kept in `.blob` files beside the data (or as
    /// descriptors inline, `blob-descriptor-field`); read as their bytes.
    Blob,
}

/// A named column with a stable field id (format.md §2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataField {
    /// Stable field id used for schema evolution.
    pub id: i32,
    /// Current column name.
    pub name: String,
    /// Column type.
    pub data_type: DataType,
    /// Column comment.
    pub description: Option<String>,
}

const MAX_LEN: u32 = i32::MAX as u32;

impl DataType {
    /// Parses the JSON form of a type (a string for atomic types, an object for nested ones).
    pub fn from_json(v: &Value) -> Result<Self> {
        match v {
            Value::String(s) => parse_type_string(s),
            Value::Object(o) => {
                let head = o.get("type").and_then(Value::as_str).ok_or_else(|| bad_type(v))?;
                let (name, nullable) = strip_not_null(head);
                let child = |key: &str| -> Result<Box<DataType>> {
                    Ok(Box::new(DataType::from_json(
                        o.get(key).ok_or_else(|| bad_type(v))?,
                    )?))
                };
                let kind = match name.to_ascii_uppercase().as_str() {
                    "ARRAY" | "VECTOR" => TypeKind::Array(child("element")?),
                    "MULTISET" => TypeKind::Multiset(child("element")?),
                    "MAP" => TypeKind::Map(child("key")?, child("value")?),
                    "ROW" => {
                        let fields = o
                            .get("fields")
                            .and_then(Value::as_array)
                            .ok_or_else(|| bad_type(v))?;
                        TypeKind::Row(fields.iter().map(DataField::from_json).collect::<Result<_>>()?)
                    }
                    _ => return Err(bad_type(v)),
                };
                Ok(DataType { kind, nullable })
            }
            _ => Err(bad_type(v)),
        }
    }

    /// The JSON form Paimon (Java) writes.
    pub fn to_json(&self) -> Value {
        let suffix = if self.nullable { "" } else { " NOT NULL" };
        let nested = |name: &str| format!("{name}{suffix}");
        match &self.kind {
            TypeKind::Array(e) => serde_json::json!({"type": nested("ARRAY"), "element": e.to_json()}),
            TypeKind::Multiset(e) => serde_json::json!({"type": nested("MULTISET"), "element": e.to_json()}),
            TypeKind::Map(k, v) => {
                serde_json::json!({"type": nested("MAP"), "key": k.to_json(), "value": v.to_json()})
            }
            TypeKind::Row(fields) => serde_json::json!({
                "type": nested("ROW"),
                "fields": fields.iter().map(DataField::to_json).collect::<Vec<_>>()
            }),
            _ => Value::String(self.to_string()),
        }
    }

    /// The JSON text Java Paimon writes, keys in Java's order.
    pub fn to_json_text(&self) -> String {
        let suffix = if self.nullable { "" } else { " NOT NULL" };
        let head = |name: &str| quote(&format!("{name}{suffix}"));
        match &self.kind {
            TypeKind::Array(e) => json_object(&[("type", head("ARRAY")), ("element", e.to_json_text())]),
            TypeKind::Multiset(e) => {
                json_object(&[("type", head("MULTISET")), ("element", e.to_json_text())])
            }
            TypeKind::Map(k, v) => json_object(&[
                ("type", head("MAP")),
                ("key", k.to_json_text()),
                ("value", v.to_json_text()),
            ]),
            TypeKind::Row(fields) => {
                let items: Vec<String> = fields.iter().map(DataField::to_json_text).collect();
                json_object(&[
                    ("type", head("ROW")),
                    ("fields", format!("[{}]", items.join(","))),
                ])
            }
            _ => quote(&self.to_string()),
        }
    }

    /// The Arrow type this Paimon type reads as.
    pub fn to_arrow(&self) -> ArrowType {
        match &self.kind {
            TypeKind::Boolean => ArrowType::Boolean,
            TypeKind::TinyInt => ArrowType::Int8,
            TypeKind::SmallInt => ArrowType::Int16,
            TypeKind::Int => ArrowType::Int32,
            TypeKind::BigInt => ArrowType::Int64,
            TypeKind::Float => ArrowType::Float32,
            TypeKind::Double => ArrowType::Float64,
            TypeKind::Char(_) | TypeKind::VarChar(_) => ArrowType::Utf8,
            TypeKind::Binary(_) | TypeKind::VarBinary(_) | TypeKind::Variant => ArrowType::Binary,
            TypeKind::Blob => ArrowType::LargeBinary,
            TypeKind::Decimal { precision, scale } => ArrowType::Decimal128(*precision, *scale),
            TypeKind::Date => ArrowType::Date32,
            TypeKind::Time(_) => ArrowType::Time32(TimeUnit::Millisecond),
            TypeKind::Timestamp(p) => ArrowType::Timestamp(time_unit(*p), None),
            TypeKind::LocalZonedTimestamp(p) => ArrowType::Timestamp(time_unit(*p), Some("UTC".into())),
            TypeKind::Array(e) => ArrowType::List(Arc::new(Field::new("item", e.to_arrow(), e.nullable))),
            TypeKind::Multiset(e) => map_type(
                e,
                &DataType {
                    kind: TypeKind::Int,
                    nullable: false,
                },
            ),
            TypeKind::Map(k, v) => map_type(k, v),
            TypeKind::Row(fields) => ArrowType::Struct(row_fields(fields)),
        }
    }

    /// Whether this is an atomic (non-nested) type.
    pub fn is_atomic(&self) -> bool {
        !matches!(
            self.kind,
            TypeKind::Array(_)
                | TypeKind::Multiset(_)
                | TypeKind::Map(..)
                | TypeKind::Row(_)
                | TypeKind::Variant
        )
    }
}

fn time_unit(precision: u8) -> TimeUnit {
    match precision {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    }
}

fn map_type(k: &DataType, v: &DataType) -> ArrowType {
    let entries = Fields::from(vec![
        Field::new("key", k.to_arrow(), false),
        Field::new("value", v.to_arrow(), v.nullable),
    ]);
    ArrowType::Map(
        Arc::new(Field::new("entries", ArrowType::Struct(entries), false)),
        false,
    )
}

/// Arrow fields of a ROW type (or of a whole table).
pub fn row_fields(fields: &[DataField]) -> Fields {
    fields.iter().map(|f| Arc::new(f.to_arrow_field())).collect()
}

impl DataField {
    /// Parses a DataField JSON object.
    pub fn from_json(v: &Value) -> Result<Self> {
        let o = v.as_object().ok_or_else(|| bad_type(v))?;
        let id = o.get("id").and_then(Value::as_i64).ok_or_else(|| bad_type(v))? as i32;
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_type(v))?
            .to_string();
        let data_type = DataType::from_json(o.get("type").ok_or_else(|| bad_type(v))?)?;
        let description = o.get("description").and_then(Value::as_str).map(str::to_string);
        Ok(DataField {
            id,
            name,
            data_type,
            description,
        })
    }

    /// The JSON form Paimon writes.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("id".into(), self.id.into());
        m.insert("name".into(), self.name.clone().into());
        m.insert("type".into(), self.data_type.to_json());
        if let Some(d) = &self.description {
            m.insert("description".into(), d.clone().into());
        }
        Value::Object(m)
    }

    /// The JSON text Java Paimon writes (`id`, `name`, `type`, `description`).
    pub fn to_json_text(&self) -> String {
        let mut pairs = vec![
            ("id", self.id.to_string()),
            ("name", quote(&self.name)),
            ("type", self.data_type.to_json_text()),
        ];
        if let Some(d) = &self.description {
            pairs.push(("description", quote(d)));
        }
        json_object(&pairs)
    }

    /// The Arrow field of this column.
    pub fn to_arrow_field(&self) -> Field {
        Field::new(&self.name, self.data_type.to_arrow(), self.data_type.nullable)
    }
}

/// A JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// A JSON object whose keys keep the given order (values are JSON text). `serde_json::Map`
/// sorts keys, but Paimon shows schema JSON as written, so we write Java's order.
pub(crate) fn json_object(pairs: &[(&str, String)]) -> String {
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{}:{v}", quote(k))).collect();
    format!("{{{}}}", body.join(","))
}

fn bad_type(v: &Value) -> Error {
    Error::corrupt("schema", format!("cannot parse data type {v}"))
}

fn strip_not_null(s: &str) -> (&str, bool) {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    if upper.ends_with(" NOT NULL") {
        (t[..t.len() - " NOT NULL".len()].trim_end(), false)
    } else if upper.ends_with(" NULL") {
        (t[..t.len() - " NULL".len()].trim_end(), true)
    } else {
        (t, true)
    }
}

/// Parses an atomic type string such as `DECIMAL(10, 2) NOT NULL` or `TIMESTAMP_LTZ(6)`.
pub fn parse_type_string(s: &str) -> Result<DataType> {
    let (body, nullable) = strip_not_null(s);
    let upper = body.to_ascii_uppercase();
    let (name, args) = match upper.find('(') {
        Some(i) => {
            let close = upper
                .find(')')
                .ok_or_else(|| bad_type(&Value::String(s.into())))?;
            let args: Vec<u32> = upper[i + 1..close]
                .split(',')
                .map(|a| a.trim().parse::<u32>())
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| bad_type(&Value::String(s.into())))?;
            let rest = upper[close + 1..].trim().to_string();
            (
                format!(
                    "{}{}{}",
                    upper[..i].trim(),
                    if rest.is_empty() { "" } else { " " },
                    rest
                ),
                args,
            )
        }
        None => (upper.clone(), vec![]),
    };
    let arg = |i: usize, default: u32| args.get(i).copied().unwrap_or(default);
    let kind = match name.as_str() {
        "BOOLEAN" => TypeKind::Boolean,
        "TINYINT" => TypeKind::TinyInt,
        "SMALLINT" => TypeKind::SmallInt,
        "INT" | "INTEGER" => TypeKind::Int,
        "BIGINT" => TypeKind::BigInt,
        "FLOAT" => TypeKind::Float,
        "DOUBLE" | "DOUBLE PRECISION" => TypeKind::Double,
        "CHAR" => TypeKind::Char(arg(0, 1)),
        "VARCHAR" => TypeKind::VarChar(arg(0, 1)),
        "STRING" => TypeKind::VarChar(MAX_LEN),
        "BINARY" => TypeKind::Binary(arg(0, 1)),
        "VARBINARY" => TypeKind::VarBinary(arg(0, 1)),
        "BYTES" => TypeKind::VarBinary(MAX_LEN),
        "DECIMAL" | "NUMERIC" | "DEC" => TypeKind::Decimal {
            precision: arg(0, 10) as u8,
            scale: arg(1, 0) as i8,
        },
        "DATE" => TypeKind::Date,
        "TIME" | "TIME WITHOUT TIME ZONE" => TypeKind::Time(arg(0, 0) as u8),
        "TIMESTAMP" | "TIMESTAMP WITHOUT TIME ZONE" => TypeKind::Timestamp(arg(0, 6) as u8),
        "TIMESTAMP_LTZ" | "TIMESTAMP WITH LOCAL TIME ZONE" => TypeKind::LocalZonedTimestamp(arg(0, 6) as u8),
        "VARIANT" => TypeKind::Variant,
        "BLOB" => TypeKind::Blob,
        _ => return Err(Error::Unsupported(format!("data type '{s}'"))),
    };
    Ok(DataType { kind, nullable })
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            TypeKind::Boolean => write!(f, "BOOLEAN")?,
            TypeKind::TinyInt => write!(f, "TINYINT")?,
            TypeKind::SmallInt => write!(f, "SMALLINT")?,
            TypeKind::Int => write!(f, "INT")?,
            TypeKind::BigInt => write!(f, "BIGINT")?,
            TypeKind::Float => write!(f, "FLOAT")?,
            TypeKind::Double => write!(f, "DOUBLE")?,
            TypeKind::Char(n) => write!(f, "CHAR({n})")?,
            TypeKind::VarChar(n) if *n == MAX_LEN => write!(f, "STRING")?,
            TypeKind::VarChar(n) => write!(f, "VARCHAR({n})")?,
            TypeKind::Binary(n) => write!(f, "BINARY({n})")?,
            TypeKind::VarBinary(n) if *n == MAX_LEN => write!(f, "BYTES")?,
            TypeKind::VarBinary(n) => write!(f, "VARBINARY({n})")?,
            TypeKind::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})")?,
            TypeKind::Date => write!(f, "DATE")?,
            TypeKind::Time(p) => write!(f, "TIME({p})")?,
            TypeKind::Timestamp(p) => write!(f, "TIMESTAMP({p})")?,
            TypeKind::LocalZonedTimestamp(p) => write!(f, "TIMESTAMP({p}) WITH LOCAL TIME ZONE")?,
            TypeKind::Array(e) => write!(f, "ARRAY<{e}>")?,
            TypeKind::Multiset(e) => write!(f, "MULTISET<{e}>")?,
            TypeKind::Map(k, v) => write!(f, "MAP<{k}, {v}>")?,
            TypeKind::Row(fields) => {
                write!(f, "ROW<")?;
                for (i, x) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{} {}", x.name, x.data_type)?;
                }
                write!(f, ">")?;
            }
            TypeKind::Variant => write!(f, "VARIANT")?,
            TypeKind::Blob => write!(f, "BLOB")?,
        }
        if !self.nullable {
            write!(f, " NOT NULL")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_atomic_types() {
        let t = parse_type_string("DECIMAL(10, 2) NOT NULL").unwrap();
        assert_eq!(
            t.kind,
            TypeKind::Decimal {
                precision: 10,
                scale: 2
            }
        );
        assert!(!t.nullable);
        assert_eq!(t.to_string(), "DECIMAL(10, 2) NOT NULL");
        let t = parse_type_string("TIMESTAMP_LTZ(3)").unwrap();
        assert_eq!(t.kind, TypeKind::LocalZonedTimestamp(3));
        let t = parse_type_string("TIMESTAMP(6) WITH LOCAL TIME ZONE").unwrap();
        assert_eq!(t.kind, TypeKind::LocalZonedTimestamp(6));
        assert_eq!(parse_type_string("STRING").unwrap().to_string(), "STRING");
        assert_eq!(parse_type_string("int").unwrap().kind, TypeKind::Int);
        assert!(parse_type_string("GEOMETRY").is_err());
    }

    #[test]
    fn parses_nested_types() {
        let v: Value = serde_json::json!({"type": "MAP", "key": "STRING NOT NULL", "value": {"type": "ARRAY NOT NULL", "element": "INT"}});
        let t = DataType::from_json(&v).unwrap();
        let TypeKind::Map(k, val) = &t.kind else {
            panic!("not a map")
        };
        assert!(!k.nullable);
        assert!(!val.nullable);
        assert_eq!(t.to_json(), v);
    }
}
