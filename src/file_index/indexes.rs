//! What one index of a column can tell about a file without its rows: whether a value, a null
//! or a value in a range may be there. Anything an index cannot tell is "maybe".
//!
//! * bitmap (versions 1 and 2): every distinct value is listed, and whether there are nulls;
//! * bloom-filter: a value is certainly absent when one of its bits is clear;
//! * range-bitmap: the smallest and largest value, and whether there are values at all.

use std::cmp::Ordering;

use super::key::IndexKey;
use crate::spec::DataType;

/// The keys of a bitmap index and whether the column has nulls.
pub(crate) struct BitmapKeys {
    pub(crate) keys: Vec<IndexKey>,
    pub(crate) has_null: bool,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn u8(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn i32(&mut self) -> Option<i32> {
        let b = self.bytes.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(i32::from_be_bytes(b.try_into().ok()?))
    }

    fn key(&mut self, data_type: &DataType) -> Option<IndexKey> {
        IndexKey::read(self.bytes, &mut self.at, data_type)
    }
}

/// The distinct values of a bitmap index (versions 1 and 2); `None` for a layout it does not
/// know.
pub(crate) fn bitmap_keys(bytes: &[u8], data_type: &DataType) -> Option<BitmapKeys> {
    let mut c = Cursor { bytes, at: 0 };
    let version = c.u8()?;
    let _rows = c.i32()?;
    let values = usize::try_from(c.i32()?).ok()?;
    let has_null = c.u8()? != 0;
    let mut keys = Vec::with_capacity(values.min(1 << 16));
    match version {
        1 => {
            if has_null {
                c.i32()?;
            }
            for _ in 0..values {
                keys.push(c.key(data_type)?);
                c.i32()?;
            }
        }
        2 => {
            if has_null {
                c.i32()?;
                c.i32()?;
            }
            let blocks = c.i32()?;
            for _ in 0..blocks.max(0) {
                c.key(data_type)?;
                c.i32()?;
            }
            let _body_offset = c.i32()?;
            for _ in 0..blocks.max(0) {
                let entries = c.i32()?;
                for _ in 0..entries.max(0) {
                    keys.push(c.key(data_type)?);
                    c.i32()?;
                    c.i32()?;
                }
            }
            if keys.len() != values {
                return None;
            }
        }
        _ => return None,
    }
    Some(BitmapKeys { keys, has_null })
}

/// Whether the bloom filter `bytes` may hold `key` (`false`: certainly not).
pub(crate) fn bloom_may_contain(bytes: &[u8], key: &IndexKey) -> bool {
    let (Some(hash), Some(k)) = (key.bloom_hash(), bytes.get(..4)) else {
        return true;
    };
    let functions = i32::from_be_bytes(k.try_into().expect("4 bytes"));
    let bits = &bytes[4..];
    if bits.is_empty() || functions <= 0 {
        return true;
    }
    bloom_bits(hash, functions, bits.len() * 8).all(|bit| bits[bit >> 3] & (1 << (bit & 7)) != 0)
}

/// The bits of a bloom filter of `count` bits and `functions` hash functions that `hash` sets
/// (Java's `BloomFilter64`: double hashing on the two halves of the 64-bit hash).
pub(crate) fn bloom_bits(hash: i64, functions: i32, count: usize) -> impl Iterator<Item = usize> {
    let (h1, h2) = (hash as i32, (hash as u64 >> 32) as i32);
    (1..=functions).map(move |i| {
        let mut combined = h1.wrapping_add(i.wrapping_mul(h2));
        if combined < 0 {
            combined = !combined;
        }
        (i64::from(combined) % count as i64) as usize
    })
}

/// The bounds of a range-bitmap index: `None` when it holds no value (only nulls), else its
/// smallest and largest key; `Err` for a layout it does not know.
#[allow(clippy::type_complexity)]
pub(crate) fn range_bitmap_bounds(
    bytes: &[u8],
    data_type: &DataType,
) -> Result<Option<(IndexKey, IndexKey)>, ()> {
    let mut c = Cursor { bytes, at: 0 };
    let parse = |c: &mut Cursor| -> Option<Option<(IndexKey, IndexKey)>> {
        let _header_length = c.i32()?;
        if c.u8()? != 1 {
            return None;
        }
        let _rows = c.i32()?;
        let cardinality = c.i32()?;
        if cardinality <= 0 {
            return Some(None);
        }
        Some(Some((c.key(data_type)?, c.key(data_type)?)))
    };
    parse(&mut c).ok_or(())
}

/// Whether some key in `[low, high]` (each bound optional, inclusive or not) exists between
/// `min` and `max`.
pub(crate) fn overlaps(
    min: &IndexKey,
    max: &IndexKey,
    low: Option<(&IndexKey, bool)>,
    high: Option<(&IndexKey, bool)>,
) -> bool {
    let above_low = match low {
        Some((low, inclusive)) => match max.cmp(low) {
            Some(Ordering::Greater) => true,
            Some(Ordering::Equal) => inclusive,
            Some(Ordering::Less) => false,
            None => true,
        },
        None => true,
    };
    let below_high = match high {
        Some((high, inclusive)) => match min.cmp(high) {
            Some(Ordering::Less) => true,
            Some(Ordering::Equal) => inclusive,
            Some(Ordering::Greater) => false,
            None => true,
        },
        None => true,
    };
    above_low && below_high
}
