//! Bucket assignment: Paimon's MurmurHash3 variant over the BinaryRow of the bucket key
//! (format.md §5.8), so a key lands in the bucket where Paimon would put it.

/// `hash(row)` of a serialized BinaryRow *without* its 4-byte arity prefix.
pub(crate) fn hash_binary_row(row: &[u8]) -> i32 {
    let mut h: u32 = 42;
    for chunk in row.chunks_exact(4) {
        let mut k = u32::from_le_bytes(chunk.try_into().expect("4-byte chunk"));
        k = k.wrapping_mul(0xcc9e_2d51);
        k = k.rotate_left(15);
        k = k.wrapping_mul(0x1b87_3593);
        h ^= k;
        h = h.rotate_left(13);
        h = h.wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    h ^= row.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// Fixed-bucket assignment: `abs(hash % n)` with Java's truncating `%`.
pub(crate) fn fixed_bucket(envelope: &[u8], num_buckets: i32) -> i32 {
    let hash = hash_binary_row(&envelope[4.min(envelope.len())..]);
    (hash % num_buckets).abs()
}

/// The fixed bucket of every row of `batch`: its bucket-key `columns` as a BinaryRow, hashed
/// modulo `num_buckets`.
pub(crate) fn fixed_buckets(
    batch: &arrow::array::RecordBatch,
    columns: &[usize],
    num_buckets: i32,
) -> datafusion::common::Result<Vec<i32>> {
    let arrays: Vec<&dyn arrow::array::Array> = columns.iter().map(|&c| batch.column(c).as_ref()).collect();
    let mut row = Vec::with_capacity(64);
    (0..batch.num_rows())
        .map(|i| {
            crate::spec::BinaryRow::encode_columns(&arrays, i, &mut row)?;
            Ok(fixed_bucket(&row, num_buckets))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::BinaryRow;
    use datafusion::common::ScalarValue;

    #[test]
    fn matches_paimon_hashes() {
        // format.md §5.8: BIGINT keys 1, 2, 3 hash to these values; buckets 0, 0, 1 of 2.
        let expected = [(1i64, 1465514398, 0), (2, 1340390384, 0), (3, -771300025, 1)];
        for (k, hash, bucket) in expected {
            let row = BinaryRow::encode(&[ScalarValue::Int64(Some(k))]).unwrap();
            assert_eq!(hash_binary_row(&row[4..]), hash, "hash of {k}");
            assert_eq!(fixed_bucket(&row, 2), bucket, "bucket of {k}");
        }
    }
}
