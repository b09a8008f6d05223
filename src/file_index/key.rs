//! Values as Paimon's file indexes key and hash them: integers, dates, times and timestamps as
//! 64-bit integers (timestamps in milliseconds up to precision 3, else microseconds), floats by
//! their bits, strings by their UTF-8 bytes.

use std::cmp::Ordering;

use datafusion::common::ScalarValue;

use crate::spec::{DataType, TypeKind};

/// One value in an index's terms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IndexKey {
    Int(i64),
    Float(f32),
    Double(f64),
    Text(Vec<u8>),
    Bool(bool),
}

impl IndexKey {
    /// The order Paimon's indexes sort keys by (Java's `compareTo`).
    pub(crate) fn cmp(&self, other: &IndexKey) -> Option<Ordering> {
        match (self, other) {
            (IndexKey::Int(a), IndexKey::Int(b)) => Some(a.cmp(b)),
            (IndexKey::Float(a), IndexKey::Float(b)) => Some(a.total_cmp(b)),
            (IndexKey::Double(a), IndexKey::Double(b)) => Some(a.total_cmp(b)),
            (IndexKey::Text(a), IndexKey::Text(b)) => Some(a.cmp(b)),
            (IndexKey::Bool(a), IndexKey::Bool(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// Equality as the bitmap index has it (floats by their bits).
    pub(crate) fn same(&self, other: &IndexKey) -> bool {
        match (self, other) {
            (IndexKey::Float(a), IndexKey::Float(b)) => a.to_bits() == b.to_bits(),
            (IndexKey::Double(a), IndexKey::Double(b)) => a.to_bits() == b.to_bits(),
            _ => self == other,
        }
    }

    /// A literal of a column of `data_type` in index terms; `None` for types indexes do not
    /// key (or a literal that does not fit the column).
    pub(crate) fn of_literal(value: &ScalarValue, data_type: &DataType) -> Option<IndexKey> {
        if value.is_null() {
            return None;
        }
        let value = value.cast_to(&data_type.to_arrow()).ok()?;
        let timestamp = |v: Option<i64>, per_second: i64, precision: u8| -> Option<IndexKey> {
            let v = v?;
            let key = match (precision <= 3, per_second) {
                (true, 1) => v.checked_mul(1000)?,
                (true, 1_000) => v,
                (true, p) => v.div_euclid(p / 1000),
                (false, 1) => v.checked_mul(1_000_000)?,
                (false, 1_000) => v.checked_mul(1000)?,
                (false, 1_000_000) => v,
                (false, _) => v.div_euclid(1000),
            };
            Some(IndexKey::Int(key))
        };
        let precision = match data_type.kind {
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => p,
            _ => 0,
        };
        match value {
            ScalarValue::Int8(v) => v.map(|v| IndexKey::Int(v.into())),
            ScalarValue::Int16(v) => v.map(|v| IndexKey::Int(v.into())),
            ScalarValue::Int32(v) => v.map(|v| IndexKey::Int(v.into())),
            ScalarValue::Int64(v) => v.map(IndexKey::Int),
            ScalarValue::Date32(v) => v.map(|v| IndexKey::Int(v.into())),
            ScalarValue::Time32Millisecond(v) => v.map(|v| IndexKey::Int(v.into())),
            ScalarValue::Float32(v) => v.map(IndexKey::Float),
            ScalarValue::Float64(v) => v.map(IndexKey::Double),
            ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
                v.map(|v| IndexKey::Text(v.into_bytes()))
            }
            ScalarValue::Boolean(v) => v.map(IndexKey::Bool),
            ScalarValue::TimestampSecond(v, _) => timestamp(v, 1, precision),
            ScalarValue::TimestampMillisecond(v, _) => timestamp(v, 1_000, precision),
            ScalarValue::TimestampMicrosecond(v, _) => timestamp(v, 1_000_000, precision),
            ScalarValue::TimestampNanosecond(v, _) => timestamp(v, 1_000_000_000, precision),
            _ => None,
        }
    }

    /// Reads one key of a column of `data_type` as the bitmap and range-bitmap indexes store
    /// it; `None` for a type they do not key.
    pub(crate) fn read(bytes: &[u8], at: &mut usize, data_type: &DataType) -> Option<IndexKey> {
        let mut take = |n: usize| -> Option<&[u8]> {
            let out = bytes.get(*at..at.checked_add(n)?)?;
            *at += n;
            Some(out)
        };
        Some(match data_type.kind {
            TypeKind::Char(_) | TypeKind::VarChar(_) => {
                let len = usize::try_from(i32::from_be_bytes(take(4)?.try_into().ok()?)).ok()?;
                IndexKey::Text(take(len)?.to_vec())
            }
            TypeKind::Boolean => IndexKey::Bool(take(1)?[0] != 0),
            TypeKind::TinyInt => IndexKey::Int(i8::from_be_bytes(take(1)?.try_into().ok()?).into()),
            TypeKind::SmallInt => IndexKey::Int(i16::from_be_bytes(take(2)?.try_into().ok()?).into()),
            TypeKind::Int | TypeKind::Date | TypeKind::Time(_) => {
                IndexKey::Int(i32::from_be_bytes(take(4)?.try_into().ok()?).into())
            }
            TypeKind::BigInt | TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_) => {
                IndexKey::Int(i64::from_be_bytes(take(8)?.try_into().ok()?))
            }
            TypeKind::Float => IndexKey::Float(f32::from_be_bytes(take(4)?.try_into().ok()?)),
            TypeKind::Double => IndexKey::Double(f64::from_be_bytes(take(8)?.try_into().ok()?)),
            _ => return None,
        })
    }

    /// The 64-bit hash the bloom-filter index sets bits by (Paimon's `FastHash`).
    pub(crate) fn bloom_hash(&self) -> Option<i64> {
        Some(match self {
            IndexKey::Int(v) => long_hash(*v),
            IndexKey::Float(v) => float_hash(v.to_bits()),
            IndexKey::Double(v) => long_hash(v.to_bits() as i64),
            IndexKey::Text(bytes) => bytes_hash(bytes),
            IndexKey::Bool(_) => return None,
        })
    }
}

/// `FastHash` of a FLOAT: its bits as a (sign-extended) int.
pub(super) fn float_hash(bits: u32) -> i64 {
    long_hash(i64::from(bits as i32))
}

/// `FastHash` of strings and bytes: XXH64, seed 0.
pub(super) fn bytes_hash(bytes: &[u8]) -> i64 {
    super::xxh64::hash(bytes, 0) as i64
}

/// Thomas Wang's 64-bit integer hash, with Java's wrapping arithmetic.
pub(super) fn long_hash(key: i64) -> i64 {
    let mut k = (!key).wrapping_add(key << 21);
    k ^= k >> 24;
    k = k.wrapping_add(k << 3).wrapping_add(k << 8);
    k ^= k >> 14;
    k = k.wrapping_add(k << 2).wrapping_add(k << 4);
    k ^= k >> 28;
    k.wrapping_add(k << 31)
}
