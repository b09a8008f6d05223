//! `HASH` index files: the key hashes of one bucket as big-endian ints (format.md §7.1).

use datafusion::common::{exec_err, Result};

pub(super) fn decode(bytes: &[u8], what: &str) -> Result<Vec<i32>> {
    if bytes.len() % 4 != 0 {
        return exec_err!(
            "Hash index file {what} has {} bytes, not a multiple of 4",
            bytes.len()
        );
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes(c.try_into().expect("4 bytes")))
        .collect())
}

pub(super) fn encode(hashes: &[i32]) -> Vec<u8> {
    hashes.iter().flat_map(|h| h.to_be_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pypaimon_file() {
        // format.md §7.1: keys 1, 2, 3, 4 in bucket 0.
        let bytes = [
            0xd2, 0x06, 0xe5, 0x47, 0x4f, 0xe4, 0xbb, 0xf0, 0x56, 0x47, 0x70, 0xca, 0x57, 0x59, 0xf9, 0x9e,
        ];
        let hashes = decode(&bytes, "index-x").unwrap();
        assert_eq!(hashes, vec![-771300025, 1340390384, 1447522506, 1465514398]);
        assert_eq!(encode(&hashes), bytes);
        assert!(decode(&bytes[..3], "index-x").is_err());
    }
}
