//! The run-length encodings of ORC's version-1 column encoding (`DIRECT`), which every ORC
//! reader decodes: byte RLE, boolean RLE (bits packed high bit first, then byte RLE), integer
//! RLE v1 and base-128 varints. Version 1 is chosen over RLE v2 for its simplicity: the
//! general-purpose codec that compresses each stream afterwards recovers most of the size
//! difference.

/// Longest run of a byte or integer RLE run (a 7-bit header stores `length - 3`).
const MAX_RUN: usize = 130;
/// Longest literal group (the header stores `-length`).
const MAX_LITERALS: usize = 128;
/// Shortest run worth a run header.
const MIN_RUN: usize = 3;

/// Appends `value` as a base-128 varint, least significant group first.
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u128) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Zigzag mapping of a signed 128-bit integer (decimal digits).
pub(super) fn zigzag_i128(value: i128) -> u128 {
    ((value << 1) ^ (value >> 127)) as u128
}

fn zigzag_i64(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Byte RLE: runs of 3 to 130 equal bytes, literal groups of up to 128 bytes.
pub(super) fn byte_rle(values: &[u8], out: &mut Vec<u8>) {
    let mut literals_from = 0;
    let mut i = 0;
    while i < values.len() {
        let mut run = 1;
        while i + run < values.len() && run < MAX_RUN && values[i + run] == values[i] {
            run += 1;
        }
        if run >= MIN_RUN {
            byte_literals(&values[literals_from..i], out);
            out.push((run - MIN_RUN) as u8);
            out.push(values[i]);
            i += run;
            literals_from = i;
        } else {
            i += run;
        }
    }
    byte_literals(&values[literals_from..], out);
}

fn byte_literals(mut literals: &[u8], out: &mut Vec<u8>) {
    while !literals.is_empty() {
        let n = literals.len().min(MAX_LITERALS);
        out.push((-(n as i64)) as u8);
        out.extend_from_slice(&literals[..n]);
        literals = &literals[n..];
    }
}

/// Boolean RLE: eight values per byte, the first in the high bit, the last byte padded with
/// zeros, then byte RLE.
pub(super) fn boolean_rle(values: impl IntoIterator<Item = bool>, out: &mut Vec<u8>) {
    let mut bytes = Vec::new();
    let (mut current, mut bits) = (0u8, 0);
    for value in values {
        current |= (value as u8) << (7 - bits);
        bits += 1;
        if bits == 8 {
            bytes.push(current);
            (current, bits) = (0, 0);
        }
    }
    if bits > 0 {
        bytes.push(current);
    }
    byte_rle(&bytes, out);
}

/// Integer RLE v1: runs of 3 to 130 values with a constant delta in `-128..=127` (header,
/// delta byte, base varint), literal groups of up to 128 varints. `signed` values are
/// zigzag-mapped; unsigned ones (lengths) must not be negative.
pub(super) fn int_rle_v1(values: &[i64], signed: bool, out: &mut Vec<u8>) {
    let put = |out: &mut Vec<u8>, v: i64| {
        let mapped = if signed { zigzag_i64(v) } else { v as u64 };
        put_varint(out, mapped as u128);
    };
    let delta_at = |i: usize| -> Option<i8> { i8::try_from(values[i + 1] as i128 - values[i] as i128).ok() };
    let mut literals_from = 0;
    let mut i = 0;
    while i < values.len() {
        // The longest run from `i` with one delta (at least 2 values when a delta fits).
        let delta = (i + 1 < values.len()).then(|| delta_at(i)).flatten();
        let mut run = 1;
        if let Some(delta) = delta {
            run = 2;
            while i + run < values.len() && run < MAX_RUN && delta_at(i + run - 1) == Some(delta) {
                run += 1;
            }
        }
        if run < MIN_RUN {
            i += 1;
            continue;
        }
        for group in values[literals_from..i].chunks(MAX_LITERALS) {
            out.push((-(group.len() as i64)) as u8);
            group.iter().for_each(|v| put(out, *v));
        }
        out.push((run - MIN_RUN) as u8);
        out.push(delta.expect("a run has a delta") as u8);
        put(out, values[i]);
        i += run;
        literals_from = i;
    }
    for group in values[literals_from..].chunks(MAX_LITERALS) {
        out.push((-(group.len() as i64)) as u8);
        group.iter().for_each(|v| put(out, *v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference decoder of integer RLE v1, written from the format's description.
    fn decode_int(mut bytes: &[u8], signed: bool) -> Vec<i64> {
        fn varint(bytes: &mut &[u8]) -> u64 {
            let (mut value, mut shift) = (0u64, 0);
            loop {
                let b = bytes[0];
                *bytes = &bytes[1..];
                value |= ((b & 0x7f) as u64) << shift;
                shift += 7;
                if b < 0x80 {
                    return value;
                }
            }
        }
        let unmap = |v: u64| {
            if signed {
                ((v >> 1) as i64) ^ -((v & 1) as i64)
            } else {
                v as i64
            }
        };
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let header = bytes[0] as i8;
            bytes = &bytes[1..];
            if header >= 0 {
                let delta = bytes[0] as i8 as i64;
                bytes = &bytes[1..];
                let base = unmap(varint(&mut bytes));
                for k in 0..(header as i64 + 3) {
                    out.push(base + k * delta);
                }
            } else {
                for _ in 0..-(header as i64) {
                    out.push(unmap(varint(&mut bytes)));
                }
            }
        }
        out
    }

    fn decode_bytes(mut bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let header = bytes[0] as i8;
            if header >= 0 {
                out.extend(std::iter::repeat_n(bytes[1], header as usize + 3));
                bytes = &bytes[2..];
            } else {
                let n = -(header as i64) as usize;
                out.extend_from_slice(&bytes[1..1 + n]);
                bytes = &bytes[1 + n..];
            }
        }
        out
    }

    #[test]
    fn integer_runs_and_literals_round_trip() {
        let mut cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![7],
            vec![1, 2],
            (0..1000).collect(),
            (0..300).map(|i| 5 - 3 * i).collect(),
            vec![i64::MIN, i64::MAX, i64::MIN, 0, -1, 1],
            (0..500).map(|i| (i * 7919) % 263 - 100).collect(),
        ];
        cases.push([vec![4; 200], (0..7).collect(), vec![-9; 3], vec![1, 9, 1]].concat());
        for values in &cases {
            let mut out = Vec::new();
            int_rle_v1(values, true, &mut out);
            assert_eq!(&decode_int(&out, true), values);
            if values.iter().all(|v| *v >= 0) {
                let mut out = Vec::new();
                int_rle_v1(values, false, &mut out);
                assert_eq!(&decode_int(&out, false), values);
            }
        }
        // A constant column is a handful of bytes.
        let mut out = Vec::new();
        int_rle_v1(&[42; 10_000], true, &mut out);
        assert!(out.len() < 250, "{} bytes", out.len());
    }

    #[test]
    fn bytes_and_booleans_round_trip() {
        for values in [
            vec![],
            vec![1u8],
            vec![3, 3],
            vec![0; 1000],
            (0..=255).collect::<Vec<u8>>(),
            [vec![1, 2], vec![9; 131], vec![1, 2, 3]].concat(),
        ] {
            let mut out = Vec::new();
            byte_rle(&values, &mut out);
            assert_eq!(decode_bytes(&out), values);
        }
        let bools: Vec<bool> = (0..21).map(|i| i % 3 == 0).collect();
        let mut out = Vec::new();
        boolean_rle(bools.iter().copied(), &mut out);
        let bytes = decode_bytes(&out);
        assert_eq!(bytes.len(), 3);
        let decoded: Vec<bool> = (0..21).map(|i| bytes[i / 8] & (0x80 >> (i % 8)) != 0).collect();
        assert_eq!(decoded, bools);
    }

    #[test]
    fn varints_and_zigzag() {
        let mut out = Vec::new();
        put_varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        assert_eq!(zigzag_i128(-1), 1);
        assert_eq!(zigzag_i128(1), 2);
        assert_eq!(zigzag_i128(i128::MIN), u128::MAX);
    }
}
