//! Whether a value column of a data file is worth a dictionary, judged from its first rows.
//!
//! Arrow's writer starts every column with a dictionary and falls back to plain encoding only
//! once the dictionary page reaches its limit (1 MiB). A column of mostly distinct values (an
//! amount, a timestamp, a measurement) then carries a dictionary page of its first 100,000 or
//! so values that saves nothing: the writer hashes every one of them, and every reader of any
//! of those pages decodes the whole dictionary first (twice when two partitions read the two
//! key ranges of one file). Paimon's Java writer (parquet-mr) instead checks after the column's
//! first page whether dictionary and indices together are smaller than the plain values, and
//! writes the column plain if not. This does the same check, up front, on a sample of the first
//! batch of a file.
//!
//! Only batches of at least [`MIN_SAMPLE_ROWS`] rows are judged: smaller files keep Arrow's
//! defaults (the bytes pypaimon gives them, which steer compaction picks by size).

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use hashbrown::HashSet;

/// A first batch of fewer rows keeps the writer's defaults.
pub(super) const MIN_SAMPLE_ROWS: usize = 4096;
/// Rows of the first batch the decision looks at: about one page of 8-byte values.
const SAMPLE_ROWS: usize = 16 * 1024;

/// `false` when a dictionary of `column`'s values would not be smaller than the values
/// themselves, judged from its first rows as parquet-mr judges a first page: the distinct
/// values plus one index per row against every row's value. Types it does not judge (booleans,
/// nested and dictionary columns, small batches) answer `true`: the writer's default.
pub(super) fn pays_off(column: &ArrayRef) -> bool {
    if column.len() < MIN_SAMPLE_ROWS {
        return true;
    }
    let sample = column.slice(0, column.len().min(SAMPLE_ROWS));
    let sizes = match sample.data_type() {
        DataType::Utf8 => bytes(sample.as_string::<i32>().iter().map(|v| v.map(str::as_bytes))),
        DataType::LargeUtf8 => bytes(sample.as_string::<i64>().iter().map(|v| v.map(str::as_bytes))),
        DataType::Utf8View => bytes(sample.as_string_view().iter().map(|v| v.map(str::as_bytes))),
        DataType::Binary => bytes(sample.as_binary::<i32>().iter()),
        DataType::LargeBinary => bytes(sample.as_binary::<i64>().iter()),
        DataType::Boolean => return true,
        other => match other.primitive_width() {
            Some(width) => fixed_width(&sample, width),
            None => return true,
        },
    };
    sizes.dictionary_smaller()
}

/// Sizes of a sample under both encodings.
struct Sizes {
    /// Non-null values in the sample.
    values: usize,
    distinct: usize,
    /// Bytes of every value, plain (as Parquet stores them: strings with a 4-byte length).
    plain: usize,
    /// Bytes of the distinct values, plain.
    dictionary: usize,
}

impl Sizes {
    fn dictionary_smaller(&self) -> bool {
        // indices are bit-packed at the width the dictionary needs
        let index_bits = usize::BITS - self.distinct.max(1).leading_zeros();
        let indices = (self.values * index_bits as usize).div_ceil(8);
        self.dictionary + indices < self.plain
    }
}

/// Values of a primitive column (integers, floats by their bits, decimals, dates and times),
/// told apart by their bytes as the dictionary tells them apart; stored without a length. Values
/// of up to 16 bytes are hashed as one integer of their bytes, which tells the same values apart.
fn fixed_width(sample: &ArrayRef, width: usize) -> Sizes {
    let data = sample.to_data();
    let start = data.offset() * width;
    let bytes = &data.buffers()[0].as_slice()[start..start + data.len() * width];
    let valid = bytes
        .chunks_exact(width)
        .enumerate()
        .filter(|(row, _)| sample.is_valid(*row))
        .map(|(_, value)| value);
    let rows = sample.len();
    match width {
        1..=8 => same_width(valid.map(|v| u64::from_le_bytes(padded(v))), width, rows),
        9..=16 => same_width(valid.map(|v| u128::from_le_bytes(padded(v))), width, rows),
        _ => sizes(valid.map(Some), 0, rows),
    }
}

/// `value` (at most `N` bytes) zero-padded to `N` bytes.
fn padded<const N: usize>(value: &[u8]) -> [u8; N] {
    let mut word = [0u8; N];
    word[..value.len()].copy_from_slice(value);
    word
}

/// The sizes of `values`, each `width` bytes (up to `rows` of them).
fn same_width<T: std::hash::Hash + Eq>(values: impl Iterator<Item = T>, width: usize, rows: usize) -> Sizes {
    let mut distinct: HashSet<T> = HashSet::with_capacity(rows);
    let mut count = 0;
    for value in values {
        count += 1;
        distinct.insert(value);
    }
    Sizes {
        values: count,
        distinct: distinct.len(),
        plain: count * width,
        dictionary: distinct.len() * width,
    }
}

/// Strings and binaries: stored with a 4-byte length each.
fn bytes<'a>(values: impl ExactSizeIterator<Item = Option<&'a [u8]>>) -> Sizes {
    let rows = values.len();
    sizes(values, 4, rows)
}

/// The sizes of `values` (nulls take no bytes; up to `rows` of them), each stored with
/// `prefix` bytes of length.
fn sizes<'a>(values: impl Iterator<Item = Option<&'a [u8]>>, prefix: usize, rows: usize) -> Sizes {
    let mut distinct: HashSet<&[u8]> = HashSet::with_capacity(rows);
    let (mut count, mut plain, mut dictionary) = (0, 0, 0);
    for value in values.flatten() {
        count += 1;
        plain += value.len() + prefix;
        if distinct.insert(value) {
            dictionary += value.len() + prefix;
        }
    }
    Sizes {
        values: count,
        distinct: distinct.len(),
        plain,
        dictionary,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, StringArray};

    use super::{pays_off, MIN_SAMPLE_ROWS};

    const N: usize = 20_000;

    #[test]
    fn distinct_values_are_written_plain() {
        let amounts: ArrayRef = Arc::new(Float64Array::from_iter_values((0..N).map(|i| i as f64 * 0.37)));
        assert!(!pays_off(&amounts));
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values((0..N as i64).map(|i| i * 7_919)));
        assert!(!pays_off(&ids));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values((0..N).map(|i| format!("name-{i}"))));
        assert!(!pays_off(&names));
    }

    #[test]
    fn repeated_values_keep_the_dictionary() {
        let codes: ArrayRef = Arc::new(Int32Array::from_iter_values((0..N as i32).map(|i| i % 100)));
        assert!(pays_off(&codes));
        // 5,000 distinct 8-byte values over 16k rows: 40 kB + 13-bit indices < 128 kB
        let prices: ArrayRef = Arc::new(Float64Array::from_iter_values((0..N).map(|i| (i % 5_000) as f64)));
        assert!(pays_off(&prices));
        let cities: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..N).map(|i| format!("city {}", i % 300)),
        ));
        assert!(pays_off(&cities));
        // mostly nulls: a dictionary of one value
        let sparse: ArrayRef = Arc::new(Int64Array::from_iter((0..N).map(|i| (i % 50 == 0).then_some(7))));
        assert!(pays_off(&sparse));
    }

    #[test]
    fn small_batches_keep_the_default() {
        let few: ArrayRef = Arc::new(Int64Array::from_iter_values(0..MIN_SAMPLE_ROWS as i64 - 1));
        assert!(pays_off(&few));
        let enough: ArrayRef = Arc::new(Int64Array::from_iter_values(0..MIN_SAMPLE_ROWS as i64));
        assert!(!pays_off(&enough));
    }
}
