//! `.blob` files (Paimon 1.4): the values of one `BLOB` column for a range of rows, beside the
//! data file that holds the table's other columns of those rows. All integers little-endian:
//!
//! ```text
//! record*  index  index_len: i32  version: u8 (= 1)
//! record = magic: u32 (0x584E11CF) | payload | record_len: i64 | crc32: u32
//! index  = one length per row, delta-coded, zigzag, LEB128 varints:
//!          record_len, or -1 for NULL, or -2 for a placeholder (no value written here)
//! ```
//!
//! Records follow one another in row order; NULLs and placeholders take no bytes. The CRC is not
//! checked (Java's reader does not either).

use arrow::array::{Array, LargeBinaryArray, LargeBinaryBuilder};
use datafusion::common::{exec_datafusion_err, Result};

const MAGIC: u32 = 0x584E_11CF;
/// magic + record_len + crc32.
const RECORD_OVERHEAD: i64 = 4 + 8 + 4;

/// The rows of one `.blob` file: each row's bytes, NULL for NULL, and which rows are
/// placeholders (written by a partial update of other columns: the value lives in an older file).
pub(crate) struct BlobColumn {
    pub(crate) values: LargeBinaryArray,
    pub(crate) placeholders: Vec<bool>,
    /// Where each row's bytes are in the file (offset, length); `None` for NULL and
    /// placeholders.
    pub(crate) payloads: Vec<Option<(u64, u64)>>,
}

impl BlobColumn {
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }
}

/// Decodes a whole `.blob` file; `path` names it in errors.
pub(crate) fn decode(bytes: &[u8], path: &str) -> Result<BlobColumn> {
    let bad = |what: &str| exec_datafusion_err!("Blob file {path} is damaged: {what}");
    if bytes.len() < 5 {
        return Err(bad("shorter than its footer"));
    }
    let version = bytes[bytes.len() - 1];
    if version != 1 {
        return Err(bad(&format!("unknown version {version}")));
    }
    let index_len = i32::from_le_bytes(
        bytes[bytes.len() - 5..bytes.len() - 1]
            .try_into()
            .expect("4 bytes"),
    );
    let index_end = bytes.len() - 5;
    let index_start = usize::try_from(index_len)
        .ok()
        .and_then(|n| index_end.checked_sub(n))
        .ok_or_else(|| bad("index length out of range"))?;
    let lengths = delta_varints(&bytes[index_start..index_end]).ok_or_else(|| bad("index"))?;
    let mut builder = LargeBinaryBuilder::new();
    let mut placeholders = Vec::with_capacity(lengths.len());
    let mut payloads = Vec::with_capacity(lengths.len());
    let mut offset = 0usize;
    for len in lengths {
        placeholders.push(len == -2);
        if len < 0 {
            builder.append_null();
            payloads.push(None);
            continue;
        }
        if len < RECORD_OVERHEAD {
            return Err(bad(&format!("a record of {len} bytes")));
        }
        let end = offset
            .checked_add(len as usize)
            .filter(|end| *end <= index_start)
            .ok_or_else(|| bad("records run past the index"))?;
        let magic = u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"));
        if magic != MAGIC {
            return Err(bad(&format!("wrong record magic at byte {offset}")));
        }
        builder.append_value(&bytes[offset + 4..end - 12]);
        payloads.push(Some(((offset + 4) as u64, (len - RECORD_OVERHEAD) as u64)));
        offset = end;
    }
    if offset != index_start {
        return Err(bad("records and index disagree on the data's length"));
    }
    Ok(BlobColumn {
        values: builder.finish(),
        placeholders,
        payloads,
    })
}

/// A blob descriptor (Paimon's `BlobDescriptor`): `length` bytes at `offset` of the object at
/// `uri`; a length of -1 reads to the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlobDescriptor {
    pub(crate) uri: String,
    pub(crate) offset: i64,
    pub(crate) length: i64,
}

/// "BLOBDESC", the magic of a version-2 descriptor.
const DESCRIPTOR_MAGIC: i64 = 0x424C_4F42_4445_5343;

impl BlobDescriptor {
    /// Version 2, little-endian: version, magic, uri length, uri, offset, length.
    pub(crate) fn serialize(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(29 + self.uri.len());
        out.push(2u8);
        out.extend_from_slice(&DESCRIPTOR_MAGIC.to_le_bytes());
        out.extend_from_slice(&(self.uri.len() as i32).to_le_bytes());
        out.extend_from_slice(self.uri.as_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out
    }

    /// Versions 1 (no magic) and 2.
    pub(crate) fn parse(bytes: &[u8]) -> Option<Self> {
        let version = *bytes.first()?;
        let mut at = match version {
            1 => 1,
            2 => {
                let magic = i64::from_le_bytes(bytes.get(1..9)?.try_into().ok()?);
                (magic == DESCRIPTOR_MAGIC).then_some(9)?
            }
            _ => return None,
        };
        let uri_len = usize::try_from(i32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?)).ok()?;
        at += 4;
        let uri = std::str::from_utf8(bytes.get(at..at + uri_len)?)
            .ok()?
            .to_string();
        at += uri_len;
        let offset = i64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?);
        let length = i64::from_le_bytes(bytes.get(at + 8..at + 16)?.try_into().ok()?);
        Some(BlobDescriptor { uri, offset, length })
    }
}

/// Delta-coded zigzag LEB128 varints: the first value as is, each next one as its difference.
fn delta_varints(bytes: &[u8]) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    let (mut pos, mut previous) = (0usize, 0i64);
    while pos < bytes.len() {
        let (mut raw, mut shift) = (0u64, 0u32);
        loop {
            let b = *bytes.get(pos)?;
            pos += 1;
            raw |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
        let value = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
        let value = if out.is_empty() {
            value
        } else {
            previous.wrapping_add(value)
        };
        out.push(value);
        previous = value;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A file as the layout describes it, built independently of the decoder.
    fn file(rows: &[Option<&[u8]>]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut lengths = Vec::new();
        for row in rows {
            match row {
                None => lengths.push(-1i64),
                Some(payload) => {
                    let len = payload.len() as i64 + 16;
                    out.extend_from_slice(&MAGIC.to_le_bytes());
                    out.extend_from_slice(payload);
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(&0u32.to_le_bytes());
                    lengths.push(len);
                }
            }
        }
        let mut index = Vec::new();
        let mut previous = 0i64;
        for (i, len) in lengths.iter().enumerate() {
            let v = if i == 0 { *len } else { len - previous };
            previous = *len;
            varint(((v << 1) ^ (v >> 63)) as u64, &mut index);
        }
        out.extend_from_slice(&index);
        out.extend_from_slice(&(index.len() as i32).to_le_bytes());
        out.push(1);
        out
    }

    #[test]
    fn rows_and_nulls_in_order() {
        let bytes = file(&[None, Some(b"abc"), Some(b""), None, Some(b"xyz12")]);
        let column = decode(&bytes, "f.blob").unwrap();
        assert_eq!(column.len(), 5);
        let values: Vec<Option<&[u8]>> = column.values.iter().collect();
        assert_eq!(
            values,
            vec![None, Some(&b"abc"[..]), Some(&b""[..]), None, Some(&b"xyz12"[..])]
        );
        assert!(column.placeholders.iter().all(|p| !p));
    }

    #[test]
    fn the_documented_index_example() {
        // bytes 01 00 a2 10 00 00 00 are the lengths -1, -1, 1040, 1040, 1040, 1040
        assert_eq!(
            delta_varints(&[0x01, 0x00, 0xa2, 0x10, 0x00, 0x00, 0x00]),
            Some(vec![-1, -1, 1040, 1040, 1040, 1040])
        );
    }

    #[test]
    fn descriptors_round_trip_and_version_one_parses() {
        let d = BlobDescriptor {
            uri: "s3://b/t/bucket-0/data-1.blob".into(),
            offset: 4,
            length: 5,
        };
        let bytes = d.serialize();
        assert_eq!(&bytes[1..9], b"CSEDBOLB");
        assert_eq!(BlobDescriptor::parse(&bytes), Some(d.clone()));
        let mut v1 = vec![1u8];
        v1.extend_from_slice(&(d.uri.len() as i32).to_le_bytes());
        v1.extend_from_slice(d.uri.as_bytes());
        v1.extend_from_slice(&4i64.to_le_bytes());
        v1.extend_from_slice(&(-1i64).to_le_bytes());
        assert_eq!(BlobDescriptor::parse(&v1).map(|d| d.length), Some(-1));
        assert_eq!(BlobDescriptor::parse(b"img_0"), None);
    }

    #[test]
    fn damage_is_an_error_naming_the_file() {
        let mut bytes = file(&[Some(b"abc")]);
        bytes[0] ^= 0xff;
        let err = decode(&bytes, "x.blob").err().expect("damaged").to_string();
        assert!(err.contains("x.blob"), "{err}");
        assert!(decode(&[1, 2], "y.blob").is_err());
    }
}
