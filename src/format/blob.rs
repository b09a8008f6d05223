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
//! Records follow one another in row order; NULLs and placeholders take no bytes. The CRC (of
//! magic, payload and record length, as Java computes it) is written, not checked (Java's reader
//! does not either).

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

/// One `.blob` file being written: records appended row by row, the index at the end.
#[derive(Default)]
pub(crate) struct BlobEncoder {
    bytes: Vec<u8>,
    lengths: Vec<i64>,
}

impl BlobEncoder {
    /// Appends one row: its bytes, or NULL.
    pub(crate) fn append(&mut self, value: Option<&[u8]>) {
        let Some(payload) = value else {
            self.lengths.push(-1);
            return;
        };
        let magic = MAGIC.to_le_bytes();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&magic);
        crc.update(payload);
        let len = payload.len() as i64 + RECORD_OVERHEAD;
        crc.update(&len.to_le_bytes());
        self.bytes.reserve(len as usize);
        self.bytes.extend_from_slice(&magic);
        self.bytes.extend_from_slice(payload);
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&crc.finalize().to_le_bytes());
        self.lengths.push(len);
    }

    /// Rows appended so far.
    pub(crate) fn rows(&self) -> usize {
        self.lengths.len()
    }

    /// Bytes of records so far (the size a rolling writer compares with its target).
    pub(crate) fn size(&self) -> usize {
        self.bytes.len()
    }

    /// The whole file: records, index, index length and version.
    pub(crate) fn finish(self) -> Vec<u8> {
        let mut out = self.bytes;
        let start = out.len();
        let mut previous = 0i64;
        for (i, len) in self.lengths.iter().enumerate() {
            let delta = if i == 0 { *len } else { len.wrapping_sub(previous) };
            previous = *len;
            let mut zigzag = ((delta << 1) ^ (delta >> 63)) as u64;
            while zigzag >= 0x80 {
                out.push((zigzag as u8) | 0x80);
                zigzag >>= 7;
            }
            out.push(zigzag as u8);
        }
        let index_len = (out.len() - start) as i32;
        out.extend_from_slice(&index_len.to_le_bytes());
        out.push(1);
        out
    }
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

    /// The encoder writes what the layout says (the independent builder above), CRCs apart.
    #[test]
    fn encoder_matches_the_layout_and_decodes() {
        let rows: [Option<&[u8]>; 5] = [Some(b"abc"), None, Some(b""), None, Some(&[7u8; 300])];
        let mut encoder = BlobEncoder::default();
        for row in rows {
            encoder.append(row);
        }
        assert_eq!(encoder.rows(), 5);
        let bytes = encoder.finish();
        let mut expected = file(&rows);
        // (the builder writes zero CRCs: compare around them)
        let crc_at = [3 + 4 + 8, 3 + 16 + 4 + 8, 3 + 16 + 16 + 300 + 4 + 8];
        for at in crc_at {
            assert_ne!(&bytes[at..at + 4], &[0, 0, 0, 0]);
            expected[at..at + 4].copy_from_slice(&bytes[at..at + 4]);
        }
        assert_eq!(bytes, expected);
        let column = decode(&bytes, "w.blob").unwrap();
        let values: Vec<Option<&[u8]>> = column.values.iter().collect();
        assert_eq!(values, rows);
        // the CRC covers magic, payload and length
        let crc = crc32fast::hash(&[&MAGIC.to_le_bytes()[..], b"abc", &19i64.to_le_bytes()].concat());
        assert_eq!(&bytes[15..19], &crc.to_le_bytes());
    }

    /// Java's `.blob` files re-encode to the same bytes, CRCs included.
    #[test]
    fn encoder_rewrites_java_files_byte_for_byte() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/java-paimon/warehouses/parquet/append_table_with_multi_blob.db/append_table_with_multi_blob/bucket-0");
        let mut checked = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "blob") {
                continue;
            }
            let java = std::fs::read(&path).unwrap();
            let column = decode(&java, "java.blob").unwrap();
            let mut encoder = BlobEncoder::default();
            for value in column.values.iter() {
                encoder.append(value);
            }
            // (not assert_eq: a difference would print every byte)
            assert!(
                encoder.finish() == java,
                "{} re-encodes differently",
                path.display()
            );
            checked += 1;
        }
        assert!(checked >= 6, "{checked} files");
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
