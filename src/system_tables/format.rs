//! Value formatting shared by the system tables.
//!
//! Three renderings are needed, each matching what the reference implementation shows:
//!
//! * **JSON values** (`$files` stats maps and keys): pypaimon renders a decoded cell as a Python
//!   value passed through `json.dumps(..., separators=(',', ':'), ensure_ascii=False)`:
//!   decimals and temporal values as strings (`str(Decimal)`, `isoformat()`), floats with
//!   Python's `repr` (and bare `NaN` / `Infinity`), bytes as UTF-8 text when they decode, else hex.
//! * **Python `str()`** (partition specs `k=v/k2=v2` of `$files`, `$partitions`, `$buckets`,
//!   `$table_indexes`): a NULL value is `None`.
//! * **Java cast to STRING** (`$manifests` partition stats `{v1, v2}`): Paimon's
//!   `RowToStringCastRule` (`null` for NULL, `yyyy-MM-dd HH:mm:ss[.fff]` timestamps, plain decimals).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use chrono::{DateTime, NaiveDateTime, NaiveTime, Timelike};
use datafusion::catalog::TableProvider;
use datafusion::common::{Result, ScalarValue};
use datafusion::datasource::MemTable;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::meta::TableMeta;
use crate::spec::options::{SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS};
use crate::spec::{DataType, Snapshot, TableSchema, TypeKind};

/// An in-memory table holding `batch`.
pub(super) fn mem_table(schema: SchemaRef, batch: RecordBatch) -> Result<Arc<dyn TableProvider>> {
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

/// The schema a snapshot-dependent system table interprets files with: the time-travelled
/// snapshot's schema when a `scan.*` option selects one (as Java's time travel does), else the
/// latest schema.
pub(super) async fn reading_schema(
    meta: &TableMeta,
    snapshot: Option<&Snapshot>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<TableSchema>> {
    let travels = [SCAN_SNAPSHOT_ID, SCAN_TAG_NAME, SCAN_TIMESTAMP_MILLIS]
        .iter()
        .any(|k| options.contains_key(*k));
    match snapshot {
        Some(s) if travels => Ok(meta.schema(s.schema_id).await?),
        _ => Ok(meta.latest_schema().await?),
    }
}

/// `dt=2024-01-01/hr=1` with Python `str()` values (`None` for NULL); None when unpartitioned.
pub(super) fn partition_spec(keys: &[String], values: &[ScalarValue]) -> Option<String> {
    if keys.is_empty() {
        return None;
    }
    let parts: Vec<String> = keys
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{k}={}", py_str(v)))
        .collect();
    Some(parts.join("/"))
}

/// The type a BinaryRow of stats is decoded with: nullable, and nested types (never collected
/// as stats, always NULL) replaced by an atomic placeholder.
pub(super) fn stats_type(t: &DataType) -> DataType {
    let kind = if t.is_atomic() {
        t.kind.clone()
    } else {
        TypeKind::Boolean
    };
    DataType { kind, nullable: true }
}

// ---------------------------------------------------------------------------------------------
// Python rendering

/// Python `repr(float)`: shortest round-trip digits, exponent form outside `1e-4 <= |x| < 1e16`.
pub(super) fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let (neg, digits, exp) = shortest_digits(&format!("{x:e}"));
    let decpt = exp + 1;
    let body = if -4 < decpt && decpt <= 16 {
        fixed_notation(&digits, decpt, ".0")
    } else {
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// Splits Rust's `{:e}` output (`-1.5e-300`) into sign, significant digits and exponent.
fn shortest_digits(sci: &str) -> (bool, String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let neg = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (neg, digits, exp.parse().unwrap_or(0))
}

/// Digits with the decimal point after `decpt` digits; `integral_suffix` is appended when
/// there is no fractional digit.
fn fixed_notation(digits: &str, decpt: i32, integral_suffix: &str) -> String {
    let n = digits.len() as i32;
    if decpt <= 0 {
        format!("0.{}{digits}", "0".repeat((-decpt) as usize))
    } else if decpt >= n {
        format!("{digits}{}{integral_suffix}", "0".repeat((decpt - n) as usize))
    } else {
        format!("{}.{}", &digits[..decpt as usize], &digits[decpt as usize..])
    }
}

/// Python `str(Decimal)` of `unscaled * 10^-scale` (General Decimal Arithmetic to-sci-string).
pub(super) fn py_decimal_str(unscaled: i128, scale: i8) -> String {
    let coeff = unscaled.unsigned_abs().to_string();
    let exp = -(scale as i32);
    let adjusted = exp + coeff.len() as i32 - 1;
    let body = if exp <= 0 && adjusted >= -6 {
        if exp == 0 {
            coeff
        } else {
            fixed_notation(&coeff, coeff.len() as i32 + exp, "")
        }
    } else {
        let mantissa = if coeff.len() > 1 {
            format!("{}.{}", &coeff[..1], &coeff[1..])
        } else {
            coeff.clone()
        };
        format!(
            "{mantissa}E{}{}",
            if adjusted < 0 { '-' } else { '+' },
            adjusted.abs()
        )
    };
    if unscaled < 0 {
        format!("-{body}")
    } else {
        body
    }
}

/// Epoch nanoseconds of a timestamp scalar, and whether it carries a time zone.
fn timestamp_nanos(v: &ScalarValue) -> Option<(i128, bool)> {
    let (n, tz): (i128, &Option<Arc<str>>) = match v {
        ScalarValue::TimestampSecond(Some(x), tz) => (*x as i128 * 1_000_000_000, tz),
        ScalarValue::TimestampMillisecond(Some(x), tz) => (*x as i128 * 1_000_000, tz),
        ScalarValue::TimestampMicrosecond(Some(x), tz) => (*x as i128 * 1_000, tz),
        ScalarValue::TimestampNanosecond(Some(x), tz) => (*x as i128, tz),
        _ => return None,
    };
    Some((n, tz.is_some()))
}

fn naive_from_nanos(nanos: i128) -> Option<NaiveDateTime> {
    let secs = nanos.div_euclid(1_000_000_000);
    let sub = nanos.rem_euclid(1_000_000_000) as u32;
    DateTime::from_timestamp(i64::try_from(secs).ok()?, sub).map(|d| d.naive_utc())
}

/// Python `datetime.isoformat(sep)`: microseconds only when non-zero (sub-microsecond digits
/// are dropped, as a Python datetime cannot hold them); `+00:00` for time-zone aware values.
fn py_datetime(nanos: i128, aware: bool, sep: char) -> String {
    let Some(t) = naive_from_nanos(nanos) else {
        return nanos.to_string();
    };
    let mut s = t.format(&format!("%Y-%m-%d{sep}%H:%M:%S")).to_string();
    let micros = t.nanosecond() / 1000;
    if micros != 0 {
        let _ = write!(s, ".{micros:06}");
    }
    if aware {
        s.push_str("+00:00");
    }
    s
}

fn py_time(millis: i32) -> String {
    let t = NaiveTime::from_num_seconds_from_midnight_opt(
        millis.div_euclid(1000) as u32,
        (millis.rem_euclid(1000) as u32) * 1_000_000,
    )
    .unwrap_or_default();
    let mut s = t.format("%H:%M:%S").to_string();
    let micros = t.nanosecond() / 1000;
    if micros != 0 {
        let _ = write!(s, ".{micros:06}");
    }
    s
}

fn date_iso(days: i32) -> String {
    match DateTime::from_timestamp(days as i64 * 86_400, 0) {
        Some(d) => d.format("%Y-%m-%d").to_string(),
        None => days.to_string(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::with_capacity(b.len() * 2), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// A JSON string literal (escaping as Python's `json.dumps(ensure_ascii=False)` does).
pub(super) fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

/// One decoded value as the JSON text pypaimon writes into `$files` (stats maps, keys).
pub(super) fn py_json_value(v: &ScalarValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    if let Some((n, aware)) = timestamp_nanos(v) {
        return json_string(&py_datetime(n, aware, 'T'));
    }
    match v {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Int8(Some(x)) => x.to_string(),
        ScalarValue::Int16(Some(x)) => x.to_string(),
        ScalarValue::Int32(Some(x)) => x.to_string(),
        ScalarValue::Int64(Some(x)) => x.to_string(),
        ScalarValue::UInt8(Some(x)) => x.to_string(),
        ScalarValue::UInt16(Some(x)) => x.to_string(),
        ScalarValue::UInt32(Some(x)) => x.to_string(),
        ScalarValue::UInt64(Some(x)) => x.to_string(),
        ScalarValue::Float32(Some(x)) => json_float(*x as f64),
        ScalarValue::Float64(Some(x)) => json_float(*x),
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            json_string(s)
        }
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b)) => match std::str::from_utf8(b) {
            Ok(s) => json_string(s),
            Err(_) => json_string(&hex(b)),
        },
        ScalarValue::Decimal128(Some(x), _, s) => json_string(&py_decimal_str(*x, *s)),
        ScalarValue::Date32(Some(d)) => json_string(&date_iso(*d)),
        ScalarValue::Time32Millisecond(Some(t)) => json_string(&py_time(*t)),
        other => json_string(&other.to_string()),
    }
}

/// Python `json.dumps` of a float (`NaN`, `Infinity` and `-Infinity` unquoted).
fn json_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        py_float_repr(x)
    }
}

/// Python `str()` of a decoded value (`None` for NULL).
pub(super) fn py_str(v: &ScalarValue) -> String {
    if v.is_null() {
        return "None".into();
    }
    if let Some((n, aware)) = timestamp_nanos(v) {
        return py_datetime(n, aware, ' ');
    }
    match v {
        ScalarValue::Boolean(Some(b)) => if *b { "True" } else { "False" }.into(),
        ScalarValue::Float32(Some(x)) => py_float_repr(*x as f64),
        ScalarValue::Float64(Some(x)) => py_float_repr(*x),
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            s.clone()
        }
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b)) => py_bytes_repr(b),
        ScalarValue::Decimal128(Some(x), _, s) => py_decimal_str(*x, *s),
        ScalarValue::Date32(Some(d)) => date_iso(*d),
        ScalarValue::Time32Millisecond(Some(t)) => py_time(*t),
        other => other.to_string(),
    }
}

/// Python `repr(bytes)`: `b'...'`.
fn py_bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut s = format!("b{quote}");
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            c if c as char == quote => {
                s.push('\\');
                s.push(quote);
            }
            0x20..=0x7e => s.push(c as char),
            c => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s.push(quote);
    s
}

// ---------------------------------------------------------------------------------------------
// Java cast-to-string rendering

/// A row as Java's cast of a ROW to STRING: `{v1, v2}`, `null` for NULL fields, `{}` if empty.
pub(super) fn java_row_string(values: &[ScalarValue], types: &[DataType]) -> String {
    let parts: Vec<String> = values
        .iter()
        .zip(types)
        .map(|(v, t)| {
            if v.is_null() {
                "null".to_string()
            } else {
                java_cast_string(v, t)
            }
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// One non-null value cast to STRING the way Paimon's `*ToStringCastRule`s do.
fn java_cast_string(v: &ScalarValue, t: &DataType) -> String {
    if let Some((nanos, _)) = timestamp_nanos(v) {
        let precision = match t.kind {
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => p as usize,
            _ => 6,
        };
        let Some(dt) = naive_from_nanos(nanos) else {
            return nanos.to_string();
        };
        let mut s = dt.format("%Y-%m-%d %H:%M:%S").to_string();
        let mut fraction = format!("{:09}", dt.nanosecond());
        while fraction.len() > precision && fraction.ends_with('0') {
            fraction.pop();
        }
        if !fraction.is_empty() {
            s.push('.');
            s.push_str(&fraction);
        }
        return s;
    }
    match v {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Float32(Some(x)) => java_float_string(&format!("{x:e}"), *x as f64),
        ScalarValue::Float64(Some(x)) => java_float_string(&format!("{x:e}"), *x),
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            s.clone()
        }
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b)) => String::from_utf8_lossy(b).into_owned(),
        ScalarValue::Decimal128(Some(x), _, scale) => java_plain_decimal(*x, *scale),
        ScalarValue::Date32(Some(d)) => date_iso(*d),
        ScalarValue::Time32Millisecond(Some(ms)) => {
            let precision = match t.kind {
                TypeKind::Time(p) => p as i32,
                _ => 0,
            };
            java_time(*ms, precision)
        }
        other => other.to_string(),
    }
}

/// Java `Float/Double.toString` (shortest digits, as JDK 19+): plain in `[1e-3, 1e7)`, else
/// `d.dddE<n>`; always at least one fractional digit.
fn java_float_string(sci: &str, x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let (neg, digits, exp) = shortest_digits(sci);
    let abs = x.abs();
    let body = if (1e-3..1e7).contains(&abs) {
        fixed_notation(&digits, exp + 1, ".0")
    } else {
        let frac = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{}.{frac}E{exp}", &digits[..1])
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// Java `BigDecimal.toPlainString()`.
fn java_plain_decimal(unscaled: i128, scale: i8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let body = if scale <= 0 {
        format!("{digits}{}", "0".repeat((-(scale as i32)) as usize))
    } else {
        let scale = scale as usize;
        let padded = if digits.len() <= scale {
            format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
        } else {
            digits
        };
        let point = padded.len() - scale;
        format!("{}.{}", &padded[..point], &padded[point..])
    };
    if unscaled < 0 {
        format!("-{body}")
    } else {
        body
    }
}

/// Java `DateTimeUtils.formatTimestampMillis(millis, precision)` for TIME values.
fn java_time(millis: i32, precision: i32) -> String {
    let secs = millis.div_euclid(1000);
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    let mut ms = millis.rem_euclid(1000);
    let mut p = precision;
    if p > 0 {
        s.push('.');
        while p > 0 {
            s.push(char::from(b'0' + (ms / 100) as u8));
            ms = ms % 100 * 10;
            if ms == 0 {
                break;
            }
            p -= 1;
        }
    }
    s
}

/// Java `Duration.toString()` of a duration given as decimal seconds (`3600.000000000`, as
/// Jackson writes `tagTimeRetained`); text that is not a number is returned unchanged.
pub(super) fn iso_duration(text: &str) -> String {
    let t = text.trim();
    if t.starts_with('P') || t.starts_with("-P") {
        return t.to_string();
    }
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let (int_part, frac_part) = t.split_once('.').unwrap_or((t, ""));
    let (Ok(secs), true) = (
        int_part.parse::<i64>(),
        frac_part.chars().all(|c| c.is_ascii_digit()),
    ) else {
        return text.to_string();
    };
    let nanos: i64 = format!("{:0<9}", &frac_part[..frac_part.len().min(9)])
        .parse()
        .unwrap_or(0);
    // Java keeps (seconds, nanos) with 0 <= nanos < 1e9.
    let (seconds, nanos) = if neg && nanos > 0 {
        (-secs - 1, 1_000_000_000 - nanos)
    } else if neg {
        (-secs, 0)
    } else {
        (secs, nanos)
    };
    if seconds == 0 && nanos == 0 {
        return "PT0S".into();
    }
    let hours = seconds / 3600;
    let minutes = (seconds % 3600) / 60;
    let secs = seconds % 60;
    let mut s = String::from("PT");
    if hours != 0 {
        let _ = write!(s, "{hours}H");
    }
    if minutes != 0 {
        let _ = write!(s, "{minutes}M");
    }
    if secs == 0 && nanos == 0 && s.len() > 2 {
        return s;
    }
    if secs < 0 && nanos > 0 {
        if secs == -1 {
            s.push_str("-0");
        } else {
            let _ = write!(s, "{}", secs + 1);
        }
    } else {
        let _ = write!(s, "{secs}");
    }
    if nanos > 0 {
        let n = if secs < 0 {
            2 * 1_000_000_000 - nanos
        } else {
            nanos + 1_000_000_000
        };
        let digits = n.to_string();
        let trimmed = digits.trim_end_matches('0');
        s.push('.');
        s.push_str(&trimmed[1..]);
    }
    s.push('S');
    s
}

// ---------------------------------------------------------------------------------------------
// Order-preserving JSON (schema files are shown exactly as stored, key order included)

/// A JSON value that keeps object keys in file order.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum OrderedJson {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<OrderedJson>),
    Object(Vec<(String, OrderedJson)>),
}

impl OrderedJson {
    /// The value of `key` in an object.
    pub(super) fn get(&self, key: &str) -> Option<&OrderedJson> {
        match self {
            OrderedJson::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Compact JSON text (Python `separators=(',', ':')`, non-ASCII kept).
    pub(super) fn compact(&self) -> String {
        let mut out = String::new();
        self.write_compact(&mut out);
        out
    }

    fn write_compact(&self, out: &mut String) {
        match self {
            OrderedJson::Null => out.push_str("null"),
            OrderedJson::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            OrderedJson::Number(n) => match (n.is_f64(), n.as_f64()) {
                (true, Some(f)) => out.push_str(&json_float(f)),
                _ => out.push_str(&n.to_string()),
            },
            OrderedJson::String(s) => out.push_str(&json_string(s)),
            OrderedJson::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_compact(out);
                }
                out.push(']');
            }
            OrderedJson::Object(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_string(k));
                    out.push(':');
                    v.write_compact(out);
                }
                out.push('}');
            }
        }
    }
}

impl<'de> Deserialize<'de> for OrderedJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedJson;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, b: bool) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::Bool(b))
            }
            fn visit_i64<E>(self, x: i64) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::Number(x.into()))
            }
            fn visit_u64<E>(self, x: u64) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::Number(x.into()))
            }
            fn visit_f64<E>(self, x: f64) -> std::result::Result<OrderedJson, E> {
                Ok(serde_json::Number::from_f64(x)
                    .map(OrderedJson::Number)
                    .unwrap_or(OrderedJson::Null))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::String(s))
            }
            fn visit_unit<E>(self) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::Null)
            }
            fn visit_none<E>(self) -> std::result::Result<OrderedJson, E> {
                Ok(OrderedJson::Null)
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> std::result::Result<OrderedJson, D2::Error> {
                OrderedJson::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<OrderedJson, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element()? {
                    items.push(v);
                }
                Ok(OrderedJson::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<OrderedJson, A::Error> {
                let mut entries: Vec<(String, OrderedJson)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, OrderedJson>()? {
                    // Like any JSON reader, the last duplicate key wins.
                    entries.retain(|(existing, _)| existing != &k);
                    entries.push((k, v));
                }
                Ok(OrderedJson::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_repr() {
        for (x, want) in [
            (1.5, "1.5"),
            (-1e-300, "-1e-300"),
            (std::f64::consts::PI, "3.141592653589793"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (0.1f32 as f64, "0.10000000149011612"),
        ] {
            assert_eq!(py_float_repr(x), want, "{x}");
        }
        assert_eq!(json_float(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(json_float(f64::NAN), "NaN");
    }

    #[test]
    fn python_decimal_str() {
        assert_eq!(py_decimal_str(-35230, 2), "-352.30");
        assert_eq!(py_decimal_str(500, 2), "5.00");
        assert_eq!(py_decimal_str(0, 10), "0E-10");
        assert_eq!(
            py_decimal_str(-99999999999999999999999999999999999999, 10),
            "-9999999999999999999999999999.9999999999"
        );
        assert_eq!(py_decimal_str(5, 3), "0.005");
        assert_eq!(py_decimal_str(12, 0), "12");
        assert_eq!(py_decimal_str(12, -2), "1.2E+3");
        assert_eq!(java_plain_decimal(0, 10), "0.0000000000");
        assert_eq!(java_plain_decimal(-5, 3), "-0.005");
        assert_eq!(java_plain_decimal(12, -2), "1200");
    }

    #[test]
    fn python_temporal_values() {
        let ts = |v: ScalarValue| py_json_value(&v);
        assert_eq!(
            ts(ScalarValue::TimestampMillisecond(Some(-1), None)),
            "\"1969-12-31T23:59:59.999000\""
        );
        assert_eq!(
            ts(ScalarValue::TimestampSecond(Some(0), None)),
            "\"1970-01-01T00:00:00\""
        );
        assert_eq!(
            ts(ScalarValue::TimestampNanosecond(Some(i64::MAX), None)),
            "\"2262-04-11T23:47:16.854775\""
        );
        assert_eq!(
            ts(ScalarValue::TimestampMicrosecond(Some(1), Some("UTC".into()))),
            "\"1970-01-01T00:00:00.000001+00:00\""
        );
        assert_eq!(ts(ScalarValue::Date32(Some(-719162))), "\"0001-01-01\"");
        assert_eq!(
            ts(ScalarValue::Time32Millisecond(Some(86_399_000))),
            "\"23:59:59\""
        );
        assert_eq!(
            ts(ScalarValue::Binary(Some(vec![0, 1, 0xfe, 0xff]))),
            "\"0001feff\""
        );
        assert_eq!(
            ts(ScalarValue::Utf8(Some("ünï \"q\"".into()))),
            "\"ünï \\\"q\\\"\""
        );
        assert_eq!(py_str(&ScalarValue::Int32(None)), "None");
        assert_eq!(
            py_str(&ScalarValue::TimestampMillisecond(Some(0), None)),
            "1970-01-01 00:00:00"
        );
        assert_eq!(py_str(&ScalarValue::Boolean(Some(true))), "True");
    }

    #[test]
    fn java_casts() {
        let t = |s: &str| crate::spec::types::parse_type_string(s).unwrap();
        let types = [
            t("STRING"),
            t("INT"),
            t("TIMESTAMP(3)"),
            t("DECIMAL(10, 2)"),
            t("DOUBLE"),
            t("TIME(2)"),
        ];
        let values = [
            ScalarValue::Utf8(Some("2024-01-01".into())),
            ScalarValue::Int32(None),
            ScalarValue::TimestampMillisecond(Some(0), None),
            ScalarValue::Decimal128(Some(-5), 10, 2),
            ScalarValue::Float64(Some(1e10)),
            ScalarValue::Time32Millisecond(Some(101)),
        ];
        assert_eq!(
            java_row_string(&values, &types),
            "{2024-01-01, null, 1970-01-01 00:00:00.000, -0.05, 1.0E10, 00:00:00.10}"
        );
        assert_eq!(java_row_string(&[], &[]), "{}");
        assert_eq!(java_float_string(&format!("{:e}", 0.5f64), 0.5), "0.5");
        assert_eq!(java_float_string(&format!("{:e}", 12.0f64), 12.0), "12.0");
        assert_eq!(java_float_string(&format!("{:e}", 1e-5f64), 1e-5), "1.0E-5");
    }

    #[test]
    fn durations() {
        assert_eq!(iso_duration("3600.000000000"), "PT1H");
        assert_eq!(iso_duration("90061.5"), "PT25H1M1.5S");
        assert_eq!(iso_duration("0"), "PT0S");
        assert_eq!(iso_duration("60"), "PT1M");
        assert_eq!(iso_duration("PT2H"), "PT2H");
    }

    #[test]
    fn ordered_json_round_trip() {
        let text = r#"{"type":"ARRAY","element":"INT","nullable":true,"n":1.5,"z":[1,null,"é"]}"#;
        let v: OrderedJson = serde_json::from_str(text).unwrap();
        assert_eq!(v.compact(), text);
        assert_eq!(v.get("element"), Some(&OrderedJson::String("INT".into())));
    }
}
