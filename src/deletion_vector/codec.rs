//! The byte layout of deletion vectors inside a `DELETION_VECTORS` index file (format.md §7.2).
//!
//! ```text
//! index file := u8 version (1), then one entry per data file
//! entry      := i32 BE size, magic, bitmap, i32 BE CRC32 of (magic + bitmap)
//!   32-bit   : magic i32 BE 1581511376, portable 32-bit roaring bitmap; size = 4 + len(bitmap)
//!   64-bit   : magic i32 LE 1681511377, i64 LE count, then per part: i32 LE high bits and a
//!              portable 32-bit roaring bitmap; size = 4 + len(bitmap64)
//! ```

use datafusion::common::{exec_datafusion_err, Result};

use crate::bitmap::roaring::Bitmap32;

/// Magic of a 32-bit bitmap, read big-endian.
pub(super) const MAGIC_32: u32 = 1_581_511_376;
/// Magic of a 64-bit bitmap, read little-endian.
const MAGIC_64: u32 = 1_681_511_377;

/// Deleted row positions of one data file, ascending and distinct.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeletionVector {
    positions: Vec<u64>,
}

impl DeletionVector {
    /// A vector from positions in any order.
    pub(crate) fn from_positions(mut positions: Vec<u64>) -> Self {
        positions.sort_unstable();
        positions.dedup();
        DeletionVector { positions }
    }

    /// Deleted positions, ascending.
    pub(crate) fn positions(&self) -> &[u64] {
        &self.positions
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Whether the row at `position` is deleted.
    pub(crate) fn contains(&self, position: u64) -> bool {
        self.positions.binary_search(&position).is_ok()
    }

    /// [`Self::kept_ranges`] as the `usize` ranges row selections take.
    pub(crate) fn kept_row_ranges(&self, rows: u64) -> Vec<std::ops::Range<usize>> {
        self.kept_ranges(rows)
            .into_iter()
            .map(|r| r.start as usize..r.end as usize)
            .collect()
    }

    /// The row ranges of a file of `rows` rows that are *not* deleted, ascending.
    pub(crate) fn kept_ranges(&self, rows: u64) -> Vec<std::ops::Range<u64>> {
        let mut ranges = Vec::new();
        let mut start = 0u64;
        for &p in self.positions.iter().take_while(|&&p| p < rows) {
            if p > start {
                ranges.push(start..p);
            }
            start = p + 1;
        }
        if start < rows {
            ranges.push(start..rows);
        }
        ranges
    }

    /// Decodes the entry at the start of `bytes` (which begins with its `size` int). `length` is
    /// the length the index manifest records for it; `what` names the index file in errors.
    pub(crate) fn decode(bytes: &[u8], length: i32, what: &str) -> Result<Self> {
        let bad = |detail: String| exec_datafusion_err!("Invalid deletion vector in {what}: {detail}");
        let int_at = |at: usize| -> Result<[u8; 4]> {
            bytes
                .get(at..at + 4)
                .map(|b| b.try_into().expect("4 bytes"))
                .ok_or_else(|| bad(format!("truncated at byte {at} of {}", bytes.len())))
        };
        let size = u32::from_be_bytes(int_at(0)?) as usize;
        let magic = int_at(4)?;
        let body = bytes
            .get(8..4 + size)
            .ok_or_else(|| bad(format!("size {size} runs past the {} bytes read", bytes.len())))?;
        let mut positions = Vec::new();
        if u32::from_be_bytes(magic) == MAGIC_32 {
            if length >= 0 && length as usize != size {
                return Err(bad(format!("recorded length {length} but the entry says {size}")));
            }
            // The CRC32 of magic + bitmap follows them: a damaged vector would otherwise silently
            // delete other rows.
            if let Some(crc) = bytes.get(4 + size..8 + size) {
                let recorded = u32::from_be_bytes(crc.try_into().expect("4 bytes"));
                let actual = crc32fast::hash(&bytes[4..4 + size]);
                if recorded != actual {
                    return Err(bad(format!(
                        "CRC32 {actual:08x} of the vector differs from the recorded {recorded:08x}"
                    )));
                }
            }
            let (bitmap, _) = Bitmap32::deserialize_prefix(body, "deletion vector bitmap")
                .map_err(|e| bad(e.to_string()))?;
            positions.reserve(bitmap.cardinality() as usize);
            bitmap.extend_values(0, &mut positions);
        } else if u32::from_le_bytes(magic) == MAGIC_64 {
            if length >= 0 && length as usize != size + 8 && length as usize != size {
                return Err(bad(format!("recorded length {length} but the entry says {size}")));
            }
            let count = body
                .get(..8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .ok_or_else(|| bad("truncated 64-bit bitmap".into()))?;
            let mut at = 8;
            for _ in 0..count {
                let high = body
                    .get(at..at + 4)
                    .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                    .ok_or_else(|| bad("truncated 64-bit bitmap".into()))?;
                let (bitmap, used) = Bitmap32::deserialize_prefix(&body[at + 4..], "deletion vector bitmap")
                    .map_err(|e| bad(e.to_string()))?;
                bitmap.extend_values(u64::from(high) << 32, &mut positions);
                at += 4 + used;
            }
        } else {
            return Err(bad(format!("unknown magic {:02x?}", magic)));
        }
        Ok(DeletionVector::from_positions(positions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::hex_bytes as hex;

    /// The 63-byte index file of format.md §7.2, written by pypaimon: two vectors.
    const PY_FILE: &str = "01 00000018 5e43f2d0 3a300000 01000000 00000100 10000000 01000200 c3366892
                           00000016 5e43f2d0 3a300000 01000000 00000000 10000000 0100 fa2b5192";

    #[test]
    fn decodes_pypaimon_file() {
        let bytes = hex(PY_FILE);
        assert_eq!(bytes.len(), 63);
        let first = DeletionVector::decode(&bytes[1..], 24, "index-x").unwrap();
        assert_eq!(first.positions(), &[1, 2]);
        let second = DeletionVector::decode(&bytes[33..], 22, "index-x").unwrap();
        assert_eq!(second.positions(), &[1]);
        assert!(DeletionVector::decode(&bytes[1..], 22, "index-x").is_err());
    }

    /// A flipped bit in the bitmap still decodes as a bitmap, but of other rows: the CRC
    /// catches it, and the error names the index file.
    #[test]
    fn damaged_vector_fails_its_crc() {
        let mut bytes = hex(PY_FILE);
        bytes[25] ^= 0x01; // the first stored position, 1, becomes 0: a valid bitmap of other rows
        let err = DeletionVector::decode(&bytes[1..], 24, "index-x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("index-x") && err.contains("CRC32"), "{err}");
        // the second vector is intact
        assert_eq!(
            DeletionVector::decode(&bytes[33..], 22, "index-x")
                .unwrap()
                .positions(),
            &[1]
        );
    }

    #[test]
    fn decodes_64_bit_layout() {
        // Two parts: high 0 with {3}, high 1 with {0}: positions 3 and 2^32.
        let mut body = MAGIC_64.to_le_bytes().to_vec();
        body.extend_from_slice(&2u64.to_le_bytes());
        for (high, low) in [(0u32, 3u32), (1, 0)] {
            body.extend_from_slice(&high.to_le_bytes());
            body.extend_from_slice(&Bitmap32::of(&[low]).serialize());
        }
        let mut entry = (body.len() as u32).to_be_bytes().to_vec();
        entry.extend_from_slice(&body);
        entry.extend_from_slice(&[0; 4]); // CRC, not verified by readers
        let dv = DeletionVector::decode(&entry, entry.len() as i32, "index-y").unwrap();
        assert_eq!(dv.positions(), &[3, 1 << 32]);
    }

    #[test]
    fn kept_ranges_skip_deleted_rows() {
        let dv = DeletionVector::from_positions(vec![0, 3, 4, 9, 20]);
        assert_eq!(dv.kept_ranges(10), vec![1..3, 5..9]);
        assert_eq!(DeletionVector::default().kept_ranges(3), vec![0..3]);
    }
}
