//! Decoding Paimon's BinaryRow (format.md §5): partitions, min/max keys and stats in manifests.
//!
//! Values decode into DataFusion `ScalarValue`s typed with the Arrow mapping of
//! [`DataType::to_arrow`], so pruning and system tables can use them directly. Nested values
//! (ARRAY/MAP/ROW) are never collected as stats by Paimon; they decode as NULL.

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType as ArrowType;
use datafusion::common::ScalarValue;

use super::types::{DataType, TypeKind};
use crate::error::{Error, Result};

/// A decoded BinaryRow.
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryRow {
    /// Field values; `ScalarValue` nulls are typed.
    pub values: Vec<ScalarValue>,
}

impl BinaryRow {
    /// An arity-0 row.
    pub fn empty() -> Self {
        BinaryRow { values: vec![] }
    }

    /// Decodes the manifest envelope (`int32 BE arity` + row bytes) with the given field types.
    ///
    /// An empty byte string or an arity-0 row decodes as the empty row whatever `types` says
    /// (Paimon writes empty stats when none were collected).
    pub fn decode(bytes: &[u8], types: &[DataType]) -> Result<Self> {
        if bytes.len() < 4 {
            return Ok(BinaryRow::empty());
        }
        let arity = i32::from_be_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
        if arity == 0 {
            return Ok(BinaryRow::empty());
        }
        if arity != types.len() {
            return Err(corrupt(format!(
                "arity {arity} does not match {} field types",
                types.len()
            )));
        }
        let row = &bytes[4..];
        let null_bytes = ((arity + 63 + 8) / 64) * 8;
        if row.len() < null_bytes + 8 * arity {
            return Err(corrupt(format!(
                "row of {} bytes is too short for arity {arity}",
                row.len()
            )));
        }
        let values = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let bit = i + 8;
                let is_null = row[bit >> 3] & (1 << (bit & 7)) != 0;
                let slot_at = null_bytes + 8 * i;
                let slot: [u8; 8] = row[slot_at..slot_at + 8].try_into().expect("8-byte slot");
                if is_null {
                    ScalarValue::try_from(&t.to_arrow()).map_err(|e| corrupt(e.to_string()))
                } else {
                    decode_value(row, slot, t)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BinaryRow { values })
    }

    /// Number of fields.
    pub fn arity(&self) -> usize {
        self.values.len()
    }
}

impl BinaryRow {
    /// Encodes values as the manifest envelope (`int32 BE arity` + row), byte-compatible with
    /// Java's `BinaryRowWriter` for atomic types (format.md §5.2-5.3).
    ///
    /// Every value must be of an atomic type; NULL non-compact decimals and timestamps reserve
    /// their variable-length space as Java does (§5.5).
    pub fn encode(values: &[ScalarValue]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        write_row(values.len(), values.iter().map(scalar_field), &mut out)?;
        Ok(out)
    }

    /// Encodes row `row` of `columns` into `out` (cleared first), byte-identical to
    /// [`Self::encode`] of the same values. Reads the arrays directly: no `ScalarValue` per
    /// value, no allocation once `out` has grown.
    pub(crate) fn encode_columns(columns: &[&dyn Array], row: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        write_row(columns.len(), columns.iter().map(|c| array_field(*c, row)), out)
    }
}

/// One field of a row being encoded.
enum Field<'a> {
    /// NULL; non-compact decimals and timestamps still reserve their variable part.
    Null { reserve: usize },
    /// A value stored in its 8-byte slot.
    Slot([u8; 8]),
    /// A string or binary value (inline up to 7 bytes).
    Bytes(&'a [u8]),
    /// A decimal of precision > 18.
    BigDecimal(i128),
    /// A timestamp of precision > 3: milliseconds in the variable part, nanos of the
    /// millisecond in the slot.
    Timestamp { millis: i64, nanos: i64 },
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!("BinaryRow encoding of {what}"))
}

fn scalar_field(v: &ScalarValue) -> Result<Field<'_>> {
    if v.is_null() {
        let reserve = match v {
            ScalarValue::Decimal128(_, p, _) if *p > 18 => 16,
            ScalarValue::TimestampMicrosecond(..) | ScalarValue::TimestampNanosecond(..) => 8,
            _ => 0,
        };
        return Ok(Field::Null { reserve });
    }
    Ok(match v {
        ScalarValue::Boolean(Some(b)) => Field::Slot((*b as i64).to_le_bytes()),
        ScalarValue::Int8(Some(x)) => Field::Slot(((*x as u8) as i64).to_le_bytes()),
        ScalarValue::Int16(Some(x)) => Field::Slot(((*x as u16) as i64).to_le_bytes()),
        ScalarValue::Int32(Some(x))
        | ScalarValue::Date32(Some(x))
        | ScalarValue::Time32Millisecond(Some(x)) => Field::Slot(((*x as u32) as i64).to_le_bytes()),
        ScalarValue::Int64(Some(x)) => Field::Slot(x.to_le_bytes()),
        ScalarValue::Float32(Some(x)) => Field::Slot((x.to_bits() as i64).to_le_bytes()),
        ScalarValue::Float64(Some(x)) => Field::Slot(x.to_bits().to_le_bytes()),
        ScalarValue::Utf8(Some(s)) => Field::Bytes(s.as_bytes()),
        ScalarValue::Binary(Some(b)) => Field::Bytes(b),
        ScalarValue::Decimal128(Some(x), p, _) if *p <= 18 => Field::Slot((*x as i64).to_le_bytes()),
        ScalarValue::Decimal128(Some(x), _, _) => Field::BigDecimal(*x),
        ScalarValue::TimestampSecond(Some(x), _) => Field::Slot((x * 1000).to_le_bytes()),
        ScalarValue::TimestampMillisecond(Some(x), _) => Field::Slot(x.to_le_bytes()),
        ScalarValue::TimestampMicrosecond(Some(x), _) => Field::Timestamp {
            millis: x.div_euclid(1000),
            nanos: x.rem_euclid(1000) * 1000,
        },
        ScalarValue::TimestampNanosecond(Some(x), _) => Field::Timestamp {
            millis: x.div_euclid(1_000_000),
            nanos: x.rem_euclid(1_000_000),
        },
        other => return Err(unsupported(other.data_type())),
    })
}

fn array_field(a: &dyn Array, row: usize) -> Result<Field<'_>> {
    use arrow::datatypes::{
        Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
        Time32MillisecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType, TimestampSecondType,
    };
    let ty = a.data_type();
    if a.is_null(row) {
        let reserve = match ty {
            ArrowType::Decimal128(p, _) if *p > 18 => 16,
            ArrowType::Timestamp(TimeUnit::Microsecond | TimeUnit::Nanosecond, _) => 8,
            _ => 0,
        };
        return Ok(Field::Null { reserve });
    }
    let slot = |x: i64| Field::Slot(x.to_le_bytes());
    Ok(match ty {
        ArrowType::Boolean => slot(a.as_boolean().value(row) as i64),
        ArrowType::Int8 => slot((a.as_primitive::<Int8Type>().value(row) as u8) as i64),
        ArrowType::Int16 => slot((a.as_primitive::<Int16Type>().value(row) as u16) as i64),
        ArrowType::Int32 => slot((a.as_primitive::<Int32Type>().value(row) as u32) as i64),
        ArrowType::Date32 => slot((a.as_primitive::<Date32Type>().value(row) as u32) as i64),
        ArrowType::Time32(TimeUnit::Millisecond) => {
            slot((a.as_primitive::<Time32MillisecondType>().value(row) as u32) as i64)
        }
        ArrowType::Int64 => slot(a.as_primitive::<Int64Type>().value(row)),
        ArrowType::Float32 => slot(a.as_primitive::<Float32Type>().value(row).to_bits() as i64),
        ArrowType::Float64 => slot(a.as_primitive::<Float64Type>().value(row).to_bits() as i64),
        ArrowType::Utf8 => Field::Bytes(a.as_string::<i32>().value(row).as_bytes()),
        ArrowType::LargeUtf8 => Field::Bytes(a.as_string::<i64>().value(row).as_bytes()),
        ArrowType::Utf8View => Field::Bytes(a.as_string_view().value(row).as_bytes()),
        ArrowType::Binary => Field::Bytes(a.as_binary::<i32>().value(row)),
        ArrowType::LargeBinary => Field::Bytes(a.as_binary::<i64>().value(row)),
        ArrowType::BinaryView => Field::Bytes(a.as_binary_view().value(row)),
        ArrowType::Decimal128(p, _) => {
            let x = a.as_primitive::<Decimal128Type>().value(row);
            if *p <= 18 {
                slot(x as i64)
            } else {
                Field::BigDecimal(x)
            }
        }
        ArrowType::Timestamp(TimeUnit::Second, _) => {
            slot(a.as_primitive::<TimestampSecondType>().value(row) * 1000)
        }
        ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
            slot(a.as_primitive::<TimestampMillisecondType>().value(row))
        }
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
            let x = a.as_primitive::<TimestampMicrosecondType>().value(row);
            Field::Timestamp {
                millis: x.div_euclid(1000),
                nanos: x.rem_euclid(1000) * 1000,
            }
        }
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => {
            let x = a.as_primitive::<TimestampNanosecondType>().value(row);
            Field::Timestamp {
                millis: x.div_euclid(1_000_000),
                nanos: x.rem_euclid(1_000_000),
            }
        }
        other => return Err(unsupported(other)),
    })
}

/// Writes the manifest envelope (`int32 BE arity`, null bits, slots, variable part) of `arity`
/// fields into `out`.
fn write_row<'a>(
    arity: usize,
    fields: impl Iterator<Item = Result<Field<'a>>>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let null_bytes = ((arity + 63 + 8) / 64) * 8;
    let fixed = null_bytes + 8 * arity;
    out.extend_from_slice(&(arity as i32).to_be_bytes());
    let row_start = out.len();
    out.resize(row_start + fixed, 0);
    for (i, field) in fields.enumerate() {
        let slot_at = row_start + null_bytes + 8 * i;
        let var_offset = (out.len() - row_start) as u64;
        let slot: [u8; 8] = match field? {
            Field::Null { reserve } => {
                let bit = i + 8;
                out[row_start + (bit >> 3)] |= 1 << (bit & 7);
                if reserve > 0 {
                    out[slot_at..slot_at + 8].copy_from_slice(&(var_offset << 32).to_le_bytes());
                    out.extend(std::iter::repeat_n(0u8, reserve));
                }
                continue;
            }
            Field::Slot(slot) => slot,
            Field::Bytes(b) => bytes_slot(b, var_offset, out),
            Field::BigDecimal(x) => {
                let bytes = minimal_be_bytes(x);
                let mut chunk = [0u8; 16];
                chunk[..bytes.len()].copy_from_slice(&bytes);
                out.extend_from_slice(&chunk);
                ((var_offset << 32) | bytes.len() as u64).to_le_bytes()
            }
            Field::Timestamp { millis, nanos } => {
                out.extend_from_slice(&millis.to_le_bytes());
                ((var_offset << 32) | nanos as u64).to_le_bytes()
            }
        };
        out[slot_at..slot_at + 8].copy_from_slice(&slot);
    }
    Ok(())
}

/// Inline for up to 7 bytes, else appended to the 8-byte aligned variable part.
fn bytes_slot(b: &[u8], var_offset: u64, var: &mut Vec<u8>) -> [u8; 8] {
    if b.len() <= 7 {
        let mut slot = [0u8; 8];
        slot[..b.len()].copy_from_slice(b);
        slot[7] = 0x80 | b.len() as u8;
        return slot;
    }
    var.extend_from_slice(b);
    let padded = b.len().div_ceil(8) * 8;
    var.extend(std::iter::repeat_n(0u8, padded - b.len()));
    ((var_offset << 32) | b.len() as u64).to_le_bytes()
}

/// Java `BigInteger.toByteArray()`: minimal big-endian two's complement.
fn minimal_be_bytes(x: i128) -> Vec<u8> {
    let all = x.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (all[start], all[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xFF && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    all[start..].to_vec()
}

fn corrupt(reason: String) -> Error {
    Error::corrupt("BinaryRow", reason)
}

fn var_part(row: &[u8], slot: [u8; 8]) -> Result<&[u8]> {
    if slot[7] & 0x80 != 0 {
        // Inline form cannot be returned as a borrow of `row`; callers use `inline_bytes`.
        return Err(corrupt("unexpected inline value".into()));
    }
    let v = u64::from_le_bytes(slot);
    let (off, len) = ((v >> 32) as usize, (v & 0xFFFF_FFFF) as usize);
    row.get(off..off + len)
        .ok_or_else(|| corrupt(format!("var part {off}+{len} out of bounds")))
}

fn bytes_value(row: &[u8], slot: [u8; 8]) -> Result<Vec<u8>> {
    if slot[7] & 0x80 != 0 {
        let len = (slot[7] & 0x7F) as usize;
        return Ok(slot[..len.min(7)].to_vec());
    }
    Ok(var_part(row, slot)?.to_vec())
}

fn decode_value(row: &[u8], slot: [u8; 8], t: &DataType) -> Result<ScalarValue> {
    let long = i64::from_le_bytes(slot);
    let int = i32::from_le_bytes(slot[0..4].try_into().expect("4 bytes"));
    Ok(match &t.kind {
        TypeKind::Boolean => ScalarValue::Boolean(Some(slot[0] != 0)),
        TypeKind::TinyInt => ScalarValue::Int8(Some(slot[0] as i8)),
        TypeKind::SmallInt => ScalarValue::Int16(Some(i16::from_le_bytes([slot[0], slot[1]]))),
        TypeKind::Int => ScalarValue::Int32(Some(int)),
        TypeKind::BigInt => ScalarValue::Int64(Some(long)),
        TypeKind::Float => ScalarValue::Float32(Some(f32::from_le_bytes(slot[0..4].try_into().expect("4")))),
        TypeKind::Double => ScalarValue::Float64(Some(f64::from_le_bytes(slot))),
        TypeKind::Date => ScalarValue::Date32(Some(int)),
        TypeKind::Time(_) => ScalarValue::Time32Millisecond(Some(int)),
        TypeKind::Char(_) | TypeKind::VarChar(_) => {
            let b = bytes_value(row, slot)?;
            ScalarValue::Utf8(Some(String::from_utf8(b).map_err(|e| corrupt(e.to_string()))?))
        }
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => ScalarValue::Binary(Some(bytes_value(row, slot)?)),
        TypeKind::Decimal { precision, scale } => {
            let unscaled = if *precision <= 18 {
                long as i128
            } else {
                let b = var_part(row, slot)?;
                be_twos_complement(b)
            };
            ScalarValue::Decimal128(Some(unscaled), *precision, *scale)
        }
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => {
            let (millis, nanos_of_milli) = if *p <= 3 {
                (long, 0i64)
            } else {
                let v = long as u64;
                let off = (v >> 32) as usize;
                let m = row
                    .get(off..off + 8)
                    .ok_or_else(|| corrupt("timestamp var part out of bounds".into()))?;
                (
                    i64::from_le_bytes(m.try_into().expect("8")),
                    (v & 0xFFFF_FFFF) as i64,
                )
            };
            let tz = matches!(t.kind, TypeKind::LocalZonedTimestamp(_)).then(|| "UTC".into());
            match p {
                0 => ScalarValue::TimestampSecond(Some(millis.div_euclid(1000)), tz),
                1..=3 => ScalarValue::TimestampMillisecond(Some(millis), tz),
                4..=6 => ScalarValue::TimestampMicrosecond(Some(millis * 1000 + nanos_of_milli / 1000), tz),
                _ => ScalarValue::TimestampNanosecond(Some(millis * 1_000_000 + nanos_of_milli), tz),
            }
        }
        _ => ScalarValue::try_from(&t.to_arrow()).map_err(|e| corrupt(e.to_string()))?,
    })
}

fn be_twos_complement(b: &[u8]) -> i128 {
    if b.is_empty() {
        return 0;
    }
    let mut v: i128 = if b[0] & 0x80 != 0 { -1 } else { 0 };
    for byte in b {
        v = (v << 8) | *byte as i128;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::types::parse_type_string;

    use crate::testing::hex_bytes as hex;

    #[test]
    fn decodes_spec_worked_example() {
        let types: Vec<DataType> = [
            "INT",
            "BIGINT",
            "STRING",
            "STRING",
            "DECIMAL(20, 2)",
            "TIMESTAMP(6)",
            "BOOLEAN",
            "DOUBLE",
        ]
        .iter()
        .map(|t| parse_type_string(t).unwrap())
        .collect();
        let bytes = hex(
            "00000008 0002000000000000 0500000000000000 0000000000000000 0c00000048000000
             6869000000000082 0200000058000000 88bf0d0068000000 0100000000000000 000000000000f03f
             68656c6c6f20776f 726c642100000000 0096000000000000 0000000000000000 2edb20c88c010000",
        );
        let row = BinaryRow::decode(&bytes, &types).unwrap();
        assert_eq!(row.values[0], ScalarValue::Int32(Some(5)));
        assert_eq!(row.values[1], ScalarValue::Int64(None));
        assert_eq!(row.values[2], ScalarValue::Utf8(Some("hello world!".into())));
        assert_eq!(row.values[3], ScalarValue::Utf8(Some("hi".into())));
        assert_eq!(row.values[4], ScalarValue::Decimal128(Some(150), 20, 2));
        assert_eq!(
            row.values[5],
            ScalarValue::TimestampMicrosecond(Some(1704164645678901), None)
        );
        assert_eq!(row.values[6], ScalarValue::Boolean(Some(true)));
        assert_eq!(row.values[7], ScalarValue::Float64(Some(1.0)));
        // Encoding gives back the bytes pypaimon wrote.
        assert_eq!(BinaryRow::encode(&row.values).unwrap(), bytes);
    }

    #[test]
    fn encodes_like_paimon() {
        assert_eq!(
            BinaryRow::encode(&[ScalarValue::Int32(Some(3))]).unwrap(),
            hex("00000001 0000000000000000 0300000000000000")
        );
        assert_eq!(
            BinaryRow::encode(&[ScalarValue::Utf8(Some("x".into()))]).unwrap(),
            hex("00000001 0000000000000000 7800000000000081")
        );
        assert_eq!(
            BinaryRow::encode(&[ScalarValue::Utf8(Some("2024-01-01".into()))]).unwrap(),
            hex("00000001 0000000000000000 0a00000010000000 323032342d30312d 3031000000000000")
        );
        assert_eq!(BinaryRow::encode(&[]).unwrap(), hex("00000000 0000000000000000"));
    }

    #[test]
    fn columns_encode_like_their_values() {
        use arrow::array::{
            ArrayRef, BooleanArray, Decimal128Array, Int16Array, Int64Array, StringArray,
            TimestampMicrosecondArray,
        };
        use std::sync::Arc;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(-7), None, Some(1 << 40)])),
            Arc::new(StringArray::from(vec![
                Some("short"),
                Some("a longer string"),
                None,
            ])),
            Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
            Arc::new(Int16Array::from(vec![Some(-1), Some(2), Some(3)])),
            Arc::new(
                Decimal128Array::from(vec![Some(123_456_789_012_345_678_901i128), None, Some(-5)])
                    .with_precision_and_scale(25, 2)
                    .unwrap(),
            ),
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(1_700_000_000_123_456),
                None,
                Some(-1),
            ])),
        ];
        let arrays: Vec<&dyn Array> = columns.iter().map(|c| c.as_ref()).collect();
        let mut out = Vec::new();
        for row in 0..3 {
            let values: Vec<ScalarValue> = columns
                .iter()
                .map(|c| ScalarValue::try_from_array(c, row).unwrap())
                .collect();
            BinaryRow::encode_columns(&arrays, row, &mut out).unwrap();
            assert_eq!(out, BinaryRow::encode(&values).unwrap(), "row {row}");
        }
    }

    #[test]
    fn decodes_partitions_and_errors() {
        let t = [parse_type_string("STRING").unwrap()];
        let null = BinaryRow::decode(&hex("00000001 0001000000000000 0000000000000000"), &t).unwrap();
        assert_eq!(null.values[0], ScalarValue::Utf8(None));
        assert!(BinaryRow::decode(&hex("00000001 0000"), &t).is_err());
        assert_eq!(
            BinaryRow::decode(&hex("00000000 0000000000000000"), &t)
                .unwrap()
                .arity(),
            0
        );
    }
}
