//! Where each input row of a write goes: its partition and bucket (semantics.md §1), found
//! column by column for a whole batch.

use std::collections::{HashMap, HashSet};

use arrow::array::{Array, Int32Array, RecordBatch};
use datafusion::common::{exec_err, Result};

use crate::dynamic_bucket::BucketAssigner;
use crate::meta::{PartitionBucket, TableMeta};
use crate::spec::bucket::{fixed_buckets, hash_binary_row};
use crate::spec::BinaryRow;

/// Column positions the sink needs, resolved once per statement.
pub(super) struct RowRouting {
    pub(super) key_columns: Vec<usize>,
    pub(super) partition_columns: Vec<usize>,
    pub(super) bucket_columns: Vec<usize>,
    pub(super) buckets: BucketMode,
}

/// How rows find their bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum BucketMode {
    /// `bucket = N`: hash of the bucket key modulo N.
    Fixed(i32),
    /// Bucket-unaware append tables: always bucket 0.
    Unaware,
    /// `bucket = -1` primary-key tables: the HASH index decides (`dynamic_bucket`).
    Dynamic,
    /// `bucket = -2` primary-key tables: every row goes to `bucket-postpone` until
    /// `CALL sys.compact` assigns buckets (`compact::postpone`).
    Postpone,
}

impl RowRouting {
    /// The (partition, bucket) targets of a batch and the index of every row's target.
    /// Partition and bucket-key values are encoded as BinaryRows straight from the columns into
    /// one reused buffer; dynamic buckets are assigned by `assigner`, which loads the index of
    /// each partition the batch touches (`table` names the table in errors). A distributed
    /// write's writer gets dynamic buckets `assigned` upstream (`write::assign`), one per row:
    /// it only records their keys in its buckets' index.
    pub(super) async fn route(
        &self,
        batch: &RecordBatch,
        assigned: Option<&Int32Array>,
        assigner: Option<&mut BucketAssigner>,
        meta: &TableMeta,
        table: &str,
    ) -> Result<(Vec<PartitionBucket>, Vec<u32>)> {
        let columns = |indices: &[usize]| -> Vec<&dyn Array> {
            indices.iter().map(|c| batch.column(*c).as_ref()).collect()
        };
        let partition_columns = columns(&self.partition_columns);
        let bucket_columns = columns(&self.bucket_columns);
        let rows = batch.num_rows();
        // Distinct partitions, and each row's.
        let mut partitions: Vec<Vec<u8>> = Vec::new();
        let mut row_partition: Vec<u32> = Vec::with_capacity(rows);
        if partition_columns.is_empty() {
            partitions.push(BinaryRow::encode(&[])?);
            row_partition.resize(rows, 0);
        } else {
            let mut seen: HashMap<Vec<u8>, u32> = HashMap::new();
            let mut buf = Vec::new();
            for row in 0..rows {
                BinaryRow::encode_columns(&partition_columns, row, &mut buf)?;
                let index = match seen.get(buf.as_slice()) {
                    Some(i) => *i,
                    None => {
                        let i = partitions.len() as u32;
                        partitions.push(buf.clone());
                        seen.insert(buf.clone(), i);
                        i
                    }
                };
                row_partition.push(index);
            }
        }
        let buckets: Vec<i32> = match (self.buckets, assigner) {
            // One bucket: every row lands in it, no hash needed.
            (BucketMode::Fixed(1), _) => vec![0; rows],
            (BucketMode::Fixed(n), _) => fixed_buckets(batch, &self.bucket_columns, n)?,
            (BucketMode::Unaware, _) => vec![0; rows],
            (BucketMode::Postpone, _) => vec![-2; rows],
            (BucketMode::Dynamic, Some(assigner)) if assigned.is_some() => {
                let buckets = assigned.expect("checked").values().to_vec();
                let mut loaded: HashSet<(u32, i32)> = HashSet::new();
                let mut buf = Vec::new();
                for (row, p) in row_partition.iter().enumerate() {
                    let partition = &partitions[*p as usize];
                    if loaded.insert((*p, buckets[row])) {
                        assigner.load_bucket(meta, partition, buckets[row]).await?;
                    }
                    BinaryRow::encode_columns(&bucket_columns, row, &mut buf)?;
                    assigner.note(partition, buckets[row], hash_binary_row(&buf[4..]))?;
                }
                buckets
            }
            (BucketMode::Dynamic, Some(assigner)) => {
                for partition in &partitions {
                    assigner.load(meta, partition).await?;
                }
                let mut buf = Vec::new();
                let mut buckets = Vec::with_capacity(rows);
                for (row, p) in row_partition.iter().enumerate() {
                    BinaryRow::encode_columns(&bucket_columns, row, &mut buf)?;
                    buckets.push(assigner.assign(&partitions[*p as usize], hash_binary_row(&buf[4..]))?);
                }
                buckets
            }
            (BucketMode::Dynamic, None) => {
                return exec_err!("Table {} has dynamic buckets but no bucket assigner", table)
            }
        };
        // Targets in order of first appearance. A row usually goes where the row before it went
        // (one bucket, or rows clustered by partition), which skips the hash lookup.
        let mut targets: Vec<PartitionBucket> = Vec::new();
        let mut target_of: HashMap<(u32, i32), u32> = HashMap::new();
        let mut previous: Option<((u32, i32), u32)> = None;
        let row_target = row_partition
            .iter()
            .zip(&buckets)
            .map(|(p, b)| {
                let key = (*p, *b);
                if let Some((last, target)) = previous {
                    if last == key {
                        return target;
                    }
                }
                let target = *target_of.entry(key).or_insert_with(|| {
                    targets.push((partitions[*p as usize].clone(), *b));
                    (targets.len() - 1) as u32
                });
                previous = Some((key, target));
                target
            })
            .collect();
        Ok((targets, row_target))
    }
}
