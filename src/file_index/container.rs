//! The file-index container of one data file (Paimon's `FileIndexFormat`), big-endian:
//!
//! ```text
//! magic: i64 | version: i32 (1) | head_length: i32 | columns: i32
//! per column: name (u16 length + bytes) | indexes: i32
//!     per index: type (u16 length + bytes) | start: i32 (from byte 0; -1: empty) | length: i32
//! redundant_length: i32 | ... | index bodies
//! ```
//!
//! Entries are looked up by name: Java writes them in hash-map order.

use std::collections::HashMap;

const MAGIC: i64 = 1_493_475_289_347_502;

/// One index of a column: its type name and bytes (`None`: an empty index).
pub(crate) type Entries<'a> = HashMap<(String, String), Option<&'a [u8]>>;

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let out = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn utf(&mut self) -> Option<String> {
        let len = u16::from_be_bytes(self.take(2)?.try_into().ok()?) as usize;
        // (Java's modified UTF-8 equals UTF-8 for the names Paimon writes)
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

/// Where each index of a container is: (column, index type) → (start, length) from byte 0,
/// `None` for an empty index.
pub(crate) type Layout = Vec<((String, String), Option<(usize, usize)>)>;

/// The length of a container's head (everything before the index bodies), from its first 16
/// bytes; `None` when they do not start a container this reader knows.
pub(crate) fn head_length(bytes: &[u8]) -> Option<usize> {
    let mut c = Cursor { bytes, at: 0 };
    if c.i64()? != MAGIC || c.i32()? != 1 {
        return None;
    }
    usize::try_from(c.i32()?).ok()
}

/// The layout of a container from its head (`bytes` holds at least [`head_length`] bytes).
pub(crate) fn layout(bytes: &[u8]) -> Option<Layout> {
    let mut c = Cursor { bytes, at: 0 };
    if c.i64()? != MAGIC || c.i32()? != 1 {
        return None;
    }
    let _head_length = c.i32()?;
    let columns = c.i32()?;
    let mut out = Vec::new();
    for _ in 0..columns.max(0) {
        let column = c.utf()?;
        let indexes = c.i32()?;
        for _ in 0..indexes.max(0) {
            let kind = c.utf()?;
            let (start, length) = (c.i32()?, c.i32()?);
            let range = match start {
                -1 => None,
                s => Some((usize::try_from(s).ok()?, usize::try_from(length).ok()?)),
            };
            out.push(((column.clone(), kind), range));
        }
    }
    Some(out)
}

/// The indexes of a whole container by (column, index type); `None` when the bytes are not a
/// container this reader knows (a reader then keeps the file).
pub(crate) fn parse(bytes: &[u8]) -> Option<Entries<'_>> {
    let mut out = HashMap::new();
    for (key, range) in layout(bytes)? {
        let body = match range {
            None => None,
            Some((start, length)) => Some(bytes.get(start..start.checked_add(length)?)?),
        };
        out.insert(key, body);
    }
    Some(out)
}

/// The indexes of one column to write: its name, then each index's type and bytes.
pub(crate) type ColumnIndexes<'a> = (String, Vec<(&'a str, Vec<u8>)>);

/// A container of `columns`, in the order given.
pub(crate) fn serialize(columns: Vec<ColumnIndexes<'_>>) -> Vec<u8> {
    let utf = |s: &str, out: &mut Vec<u8>| {
        out.extend_from_slice(&(s.len() as u16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    // the head's length: fixed fields, names, types, (start, length) pairs, redundant length
    let mut head_length = 8 + 4 + 4 + 4 + 4;
    for (name, indexes) in &columns {
        head_length += 2 + name.len() + 4;
        for (kind, _) in indexes {
            head_length += 2 + kind.len() + 8;
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&(head_length as i32).to_be_bytes());
    out.extend_from_slice(&(columns.len() as i32).to_be_bytes());
    let mut start = head_length;
    for (name, indexes) in &columns {
        utf(name, &mut out);
        out.extend_from_slice(&(indexes.len() as i32).to_be_bytes());
        for (kind, bytes) in indexes {
            utf(kind, &mut out);
            out.extend_from_slice(&(start as i32).to_be_bytes());
            out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            start += bytes.len();
        }
    }
    out.extend_from_slice(&0i32.to_be_bytes());
    debug_assert_eq!(out.len(), head_length);
    for (_, indexes) in columns {
        for (_, bytes) in indexes {
            out.extend_from_slice(&bytes);
        }
    }
    out
}
