//! Writing `DELETION_VECTORS` index files (format.md §7.2) with 32-bit bitmaps, as Java's
//! default (`deletion-vectors.bitmap64 = false`) writes them: one file per bucket holding the
//! vectors of every data file of the bucket that has one.

use datafusion::common::{exec_datafusion_err, Result};

use super::codec::MAGIC_32;
use crate::bitmap::roaring::Bitmap32;
use crate::spec::DeletionVectorRange;

/// Version byte at the start of an index file.
const VERSION: u8 = 1;

/// The bytes of an index file holding `vectors` (data file name, deleted positions ascending)
/// and the range of each vector, as the index manifest records it.
pub(crate) fn encode_index_file(
    vectors: &[(String, Vec<u64>)],
) -> Result<(Vec<u8>, Vec<DeletionVectorRange>)> {
    let mut out = vec![VERSION];
    let mut ranges = Vec::with_capacity(vectors.len());
    for (data_file, positions) in vectors {
        let values = positions
            .iter()
            .map(|&p| u32::try_from(p))
            .collect::<std::result::Result<Vec<u32>, _>>()
            .map_err(|_| {
                exec_datafusion_err!(
                    "Data file {data_file} has a deleted row beyond 2^32 rows: 32-bit deletion vectors cannot hold it"
                )
            })?;
        let mut bitmap = Bitmap32::of(&values);
        bitmap.run_optimize();
        let mut body = MAGIC_32.to_be_bytes().to_vec();
        body.extend_from_slice(&bitmap.serialize());
        let offset = out.len();
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        ranges.push(DeletionVectorRange {
            data_file: data_file.clone(),
            offset: offset as i32,
            length: body.len() as i32,
            cardinality: Some(values.len() as i64),
        });
    }
    Ok((out, ranges))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deletion_vector::DeletionVector;

    /// pypaimon's index file for positions {1, 2} and {1} (format.md §7.2).
    const PY_FILE: &str = "01 00000018 5e43f2d0 3a300000 01000000 00000100 10000000 01000200 c3366892
                           00000016 5e43f2d0 3a300000 01000000 00000000 10000000 0100 fa2b5192";

    #[test]
    fn encodes_byte_for_byte_as_pypaimon() {
        let vectors = vec![("a".to_string(), vec![1, 2]), ("b".to_string(), vec![1])];
        let (bytes, ranges) = encode_index_file(&vectors).unwrap();
        assert_eq!(bytes, crate::testing::hex_bytes(PY_FILE));
        assert_eq!((ranges[1].offset, ranges[1].length), (33, 22));
    }

    #[test]
    fn written_vectors_read_back() {
        let big: Vec<u64> = (0..10_000).map(|i| i * 3).collect();
        let vectors = vec![
            ("data-a.parquet".to_string(), vec![1, 2]),
            ("data-b.parquet".to_string(), big.clone()),
        ];
        let (bytes, ranges) = encode_index_file(&vectors).unwrap();
        assert_eq!(bytes[0], 1);
        // pypaimon's file for positions {1, 2} (format.md §7.2): size 24, then the bitmap
        assert_eq!(ranges[0].offset, 1);
        assert_eq!(ranges[0].length, 24);
        assert_eq!(&bytes[1..5], &[0, 0, 0, 0x18]);
        for (range, (_, positions)) in ranges.iter().zip(&vectors) {
            let dv = DeletionVector::decode(&bytes[range.offset as usize..], range.length, "test").unwrap();
            assert_eq!(dv.positions(), positions.as_slice());
            assert_eq!(range.cardinality, Some(positions.len() as i64));
        }
    }
}

/// The vectors of a bucket after a change: the current vector of each of `files` that has one,
/// with `added` positions merged in (sorted, without repeats). Files left out lose their vector.
pub(crate) async fn merged_positions(
    store: &std::sync::Arc<dyn object_store::ObjectStore>,
    files: &[&str],
    current: &super::DeletionVectorIndex,
    added: Vec<(String, Vec<u64>)>,
) -> Result<std::collections::BTreeMap<String, Vec<u64>>> {
    let mut positions = std::collections::BTreeMap::new();
    for &name in files {
        if let Some(dv) = current.get(name) {
            positions.insert(name.to_string(), dv.load(store).await?.positions().to_vec());
        }
    }
    for (name, rows) in added {
        let all: &mut Vec<u64> = positions.entry(name).or_default();
        all.extend(rows);
        all.sort_unstable();
        all.dedup();
    }
    Ok(positions)
}

/// Writes one index file holding `positions` for `partition` and `bucket`, and returns its
/// ADD entry (which replaces the bucket's DELETION_VECTORS entries at commit).
pub(crate) async fn write_bucket_index(
    io: &crate::io::FileIO,
    partition: &[u8],
    bucket: i32,
    positions: std::collections::BTreeMap<String, Vec<u64>>,
    dirs: &crate::spec::paths::IndexFileDirs,
) -> Result<crate::spec::IndexManifestEntry> {
    let vectors: Vec<(String, Vec<u64>)> = positions.into_iter().collect();
    let (bytes, ranges) = encode_index_file(&vectors)?;
    let name = format!("index-{}-0", uuid::Uuid::new_v4());
    let size = bytes.len() as i64;
    let file = dirs
        .path(partition, bucket, &name)
        .map_err(datafusion::error::DataFusionError::from)?;
    io.write(&file, bytes).await?;
    Ok(crate::spec::IndexManifestEntry {
        kind: crate::spec::FileKind::Add,
        partition: partition.to_vec(),
        bucket,
        index_type: super::DELETION_VECTORS_INDEX.to_string(),
        file_name: name,
        file_size: size,
        row_count: vectors.len() as i64,
        dv_ranges: Some(ranges),
        external_path: None,
    })
}
