//! Dynamic-bucket primary-key tables (`bucket = -1`, Paimon's default): which bucket a key is
//! written to, through the `HASH` index (format.md §7.1).
//!
//! ```text
//! latest snapshot ─► index manifest ─► HASH files of a partition ─► PartitionIndex (hash ─► bucket)
//! row ─► hash(trimmed primary key) ─► known hash: its bucket
//!                                   └► new: first bucket below dynamic-bucket.target-row-num,
//!                                      else the lowest unused bucket id
//! commit ─► one new HASH file per bucket that gained keys (the whole set of its hashes)
//! ```
//!
//! A key must stay in the bucket it was first written to, otherwise two versions of it would
//! live in different buckets and both be visible. The assignment follows Java's
//! `PartitionIndex.assign`, so Java and this writer place new keys alike.
//!
//! A distributed write splits assignment as Paimon's Flink sink does ([`AssignSlice`]): assigner
//! `i` of `n` gets the keys whose hash is `i` modulo `n`, knows only their hashes, and opens only
//! buckets that are `i` modulo `n`, so assigners never place two keys in one new bucket and
//! never disagree about a key. The writer of a bucket then keeps its HASH file
//! ([`BucketAssigner::note`]).

mod hash_file;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use datafusion::common::{exec_err, Result};

use crate::meta::TableMeta;
use crate::spec::{paths, FileKind, IndexManifestEntry, Snapshot};

/// `_INDEX_TYPE` of dynamic-bucket key indexes.
pub(crate) const HASH_INDEX: &str = "HASH";
/// Java's `MAX_DYNAMIC_BUCKETS` (bucket ids are stored as shorts).
const MAX_DYNAMIC_BUCKETS: i32 = i16::MAX as i32;

/// The options that drive assignment.
#[derive(Debug, Clone)]
pub(crate) struct AssignOptions {
    /// `dynamic-bucket.target-row-num`: keys per bucket before a new bucket is opened.
    pub(crate) target_row_num: u64,
    /// `dynamic-bucket.max-buckets`: -1 for no limit.
    pub(crate) max_buckets: i32,
    /// Where the HASH files are (`index-file-in-data-file-dir`).
    pub(crate) index_dirs: paths::IndexFileDirs,
}

impl AssignOptions {
    pub(crate) fn parse(table: &str, schema: &crate::spec::TableSchema) -> Result<Self> {
        let options = &schema.options;
        let number = |key: &str, default: i64| -> Result<i64> {
            match options.get(key) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<i64>() {
                    Ok(n) => Ok(n),
                    Err(_) => exec_err!("Option '{key}' of table {table} must be an integer, got '{v}'"),
                },
            }
        };
        let target = number("dynamic-bucket.target-row-num", 2_000_000)?;
        if target <= 0 {
            return exec_err!(
                "Option 'dynamic-bucket.target-row-num' of table {table} must be positive, got {target}"
            );
        }
        let max = number("dynamic-bucket.max-buckets", -1)?;
        if max != -1 && !(1..=i64::from(MAX_DYNAMIC_BUCKETS)).contains(&max) {
            return exec_err!(
                "Option 'dynamic-bucket.max-buckets' of table {table} must be -1 or between 1 and {MAX_DYNAMIC_BUCKETS}, got {max}"
            );
        }
        Ok(AssignOptions {
            target_row_num: target as u64,
            max_buckets: max as i32,
            index_dirs: paths::IndexFileDirs::of(schema),
        })
    }
}

/// Which keys and buckets one assigner of several owns: keys with `|hash % of| == id`, new
/// buckets with `bucket % of == id` (Java's `computeAssignId` and `isMyBucket`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct AssignSlice {
    pub(crate) id: i32,
    pub(crate) of: i32,
}

impl AssignSlice {
    /// One assigner for everything.
    pub(crate) const WHOLE: AssignSlice = AssignSlice { id: 0, of: 1 };

    /// The assigner of a key with `hash` among `of`.
    pub(crate) fn id_of(hash: i32, of: i32) -> i32 {
        (hash % of.max(1)).abs()
    }

    pub(crate) fn owns_hash(self, hash: i32) -> bool {
        Self::id_of(hash, self.of) == self.id
    }

    fn owns_bucket(self, bucket: i32) -> bool {
        bucket % self.of.max(1) == self.id
    }
}

/// The key hashes of one partition and the bucket each lives in.
#[derive(Debug, Default)]
struct PartitionIndex {
    bucket_of: HashMap<i32, i32>,
    /// Hashes per bucket; iterated in ascending bucket order as Java's map of small ints is.
    rows: BTreeMap<i32, u64>,
    /// Buckets that may still take new keys.
    non_full: BTreeSet<i32>,
    /// Buckets that gained hashes in this write.
    changed: BTreeSet<i32>,
}

impl PartitionIndex {
    fn assign(&mut self, hash: i32, options: &AssignOptions, slice: AssignSlice) -> Result<i32> {
        if let Some(bucket) = self.bucket_of.get(&hash) {
            return Ok(*bucket);
        }
        let open = self
            .non_full
            .iter()
            .copied()
            .find(|b| self.rows.get(b).copied().unwrap_or(0) < options.target_row_num);
        // Buckets found full on the way are dropped from the candidates, as Java does.
        while let Some(&first) = self.non_full.first() {
            if Some(first) == open {
                break;
            }
            self.non_full.pop_first();
        }
        let bucket = match open {
            Some(b) => b,
            None => {
                let limit = if options.max_buckets == -1 {
                    MAX_DYNAMIC_BUCKETS
                } else {
                    options.max_buckets
                };
                match (0..limit).find(|b| slice.owns_bucket(*b) && !self.rows.contains_key(b)) {
                    Some(b) => {
                        self.non_full.insert(b);
                        b
                    }
                    None if options.max_buckets == -1 => {
                        return exec_err!(
                            "Too many dynamic buckets ({MAX_DYNAMIC_BUCKETS}): increase 'dynamic-bucket.target-row-num' ({})",
                            options.target_row_num
                        )
                    }
                    // Every bucket is full and no more may be opened: Java picks one at random;
                    // the hash picks one here, which spreads keys as evenly and is repeatable.
                    None => {
                        let buckets: Vec<i32> = self.rows.keys().copied().collect();
                        buckets[(hash.unsigned_abs() as usize) % buckets.len()]
                    }
                }
            }
        };
        *self.rows.entry(bucket).or_insert(0) += 1;
        self.bucket_of.insert(hash, bucket);
        self.changed.insert(bucket);
        Ok(bucket)
    }
}

/// Assigns buckets for one write and writes the index files that record them.
#[derive(Debug)]
pub(crate) struct BucketAssigner {
    options: AssignOptions,
    /// HASH entries of the snapshot the write starts from, by partition.
    existing: HashMap<Vec<u8>, Vec<IndexManifestEntry>>,
    /// Loaded indexes by partition, then by slice (one, [`AssignSlice::WHOLE`], locally).
    partitions: HashMap<Vec<u8>, HashMap<AssignSlice, PartitionIndex>>,
    /// A distributed write's writer: the hashes of the buckets it writes, and whether they grew.
    written_buckets: HashMap<(Vec<u8>, i32), (HashSet<i32>, bool)>,
}

impl BucketAssigner {
    /// An assigner starting from `snapshot`'s index; `fresh` ignores it (INSERT OVERWRITE
    /// replaces the partitions it writes, keys included).
    pub(crate) async fn open(
        meta: &TableMeta,
        snapshot: Option<&Snapshot>,
        options: AssignOptions,
        fresh: bool,
    ) -> Result<Self> {
        let mut existing: HashMap<Vec<u8>, Vec<IndexManifestEntry>> = HashMap::new();
        if let Some(name) = snapshot
            .and_then(|s| s.index_manifest.as_ref())
            .filter(|_| !fresh)
        {
            for entry in meta.index_manifest(name).await? {
                if entry.kind == FileKind::Add && entry.index_type == HASH_INDEX {
                    existing.entry(entry.partition.clone()).or_default().push(entry);
                }
            }
        }
        Ok(BucketAssigner {
            options,
            existing,
            partitions: HashMap::new(),
            written_buckets: HashMap::new(),
        })
    }

    /// Reads the index of `partition` unless it is loaded.
    pub(crate) async fn load(&mut self, meta: &TableMeta, partition: &[u8]) -> Result<()> {
        self.load_slice(meta, partition, AssignSlice::WHOLE).await
    }

    /// Reads what `slice` owns of the index of `partition` (its keys' hashes, its buckets' row
    /// counts) unless it is loaded.
    pub(crate) async fn load_slice(
        &mut self,
        meta: &TableMeta,
        partition: &[u8],
        slice: AssignSlice,
    ) -> Result<()> {
        if self
            .partitions
            .get(partition)
            .is_some_and(|slices| slices.contains_key(&slice))
        {
            return Ok(());
        }
        let mut index = PartitionIndex::default();
        for entry in self.existing.get(partition).into_iter().flatten() {
            let file = self
                .options
                .index_dirs
                .path(&entry.partition, entry.bucket, &entry.file_name)?;
            let bytes = meta.io().read(&file, "hash index file").await?;
            let hashes = hash_file::decode(&bytes, &meta.io().display(&file))?;
            if slice.owns_bucket(entry.bucket) {
                index.rows.insert(entry.bucket, hashes.len() as u64);
                index.non_full.insert(entry.bucket);
            }
            for hash in hashes.into_iter().filter(|h| slice.owns_hash(*h)) {
                index.bucket_of.insert(hash, entry.bucket);
            }
        }
        self.partitions
            .entry(partition.to_vec())
            .or_default()
            .insert(slice, index);
        Ok(())
    }

    /// The bucket of a key with `hash` in a loaded `partition`.
    pub(crate) fn assign(&mut self, partition: &[u8], hash: i32) -> Result<i32> {
        self.assign_in(partition, AssignSlice::WHOLE, hash)
    }

    /// The bucket of a key with `hash` (owned by `slice`) in a loaded `partition`.
    pub(crate) fn assign_in(&mut self, partition: &[u8], slice: AssignSlice, hash: i32) -> Result<i32> {
        if !slice.owns_hash(hash) {
            return exec_err!(
                "Dynamic-bucket assigner {} of {} got a key of assigner {}",
                slice.id,
                slice.of,
                AssignSlice::id_of(hash, slice.of)
            );
        }
        match self
            .partitions
            .get_mut(partition)
            .and_then(|slices| slices.get_mut(&slice))
        {
            Some(index) => index.assign(hash, &self.options, slice),
            None => exec_err!("Dynamic-bucket index of a partition was not loaded before assignment"),
        }
    }

    /// Reads the HASH file of `bucket` of `partition` for [`Self::note`], unless it is loaded.
    pub(crate) async fn load_bucket(
        &mut self,
        meta: &TableMeta,
        partition: &[u8],
        bucket: i32,
    ) -> Result<()> {
        let at = (partition.to_vec(), bucket);
        if self.written_buckets.contains_key(&at) {
            return Ok(());
        }
        let mut hashes = HashSet::new();
        let existing = self.existing.get(partition).into_iter().flatten();
        for entry in existing.filter(|e| e.bucket == bucket) {
            let file = self
                .options
                .index_dirs
                .path(&entry.partition, entry.bucket, &entry.file_name)?;
            let bytes = meta.io().read(&file, "hash index file").await?;
            hashes.extend(hash_file::decode(&bytes, &meta.io().display(&file))?);
        }
        self.written_buckets.insert(at, (hashes, false));
        Ok(())
    }

    /// The writer of a bucket that a distributed assigner chose: records that the key with
    /// `hash` lives in `bucket` of `partition` (loaded by [`Self::load_bucket`]), so the
    /// bucket's HASH file is rewritten with it, as Java's writers keep their buckets' index.
    pub(crate) fn note(&mut self, partition: &[u8], bucket: i32, hash: i32) -> Result<()> {
        let Some((hashes, changed)) = self.written_buckets.get_mut(&(partition.to_vec(), bucket)) else {
            return exec_err!("Dynamic-bucket index of bucket {bucket} was not loaded before a write");
        };
        if hashes.insert(hash) {
            *changed = true;
        }
        Ok(())
    }

    /// Writes a complete HASH file for every bucket that gained keys and returns their index
    /// manifest entries (each replaces the bucket's previous file at commit). Only a writer
    /// calls it: an assigner of a slice knows only some of a bucket's keys.
    pub(crate) async fn write_index_files(&self, meta: &TableMeta) -> Result<Vec<IndexManifestEntry>> {
        let mut entries = Vec::new();
        let mut files: Vec<(&Vec<u8>, i32, Vec<i32>)> = Vec::new();
        let indexes = self
            .partitions
            .iter()
            .flat_map(|(partition, slices)| slices.values().map(move |index| (partition, index)));
        for (partition, index) in indexes {
            for &bucket in &index.changed {
                let hashes = index
                    .bucket_of
                    .iter()
                    .filter(|(_, b)| **b == bucket)
                    .map(|(h, _)| *h)
                    .collect();
                files.push((partition, bucket, hashes));
            }
        }
        for ((partition, bucket), (hashes, changed)) in &self.written_buckets {
            if *changed {
                files.push((partition, *bucket, hashes.iter().copied().collect()));
            }
        }
        for (partition, bucket, mut hashes) in files {
            hashes.sort_unstable();
            let name = format!("index-{}-0", uuid::Uuid::new_v4());
            let bytes = hash_file::encode(&hashes);
            let size = bytes.len() as i64;
            let file = self.options.index_dirs.path(partition, bucket, &name)?;
            meta.io().write(&file, bytes).await?;
            entries.push(IndexManifestEntry {
                kind: FileKind::Add,
                partition: partition.clone(),
                bucket,
                index_type: HASH_INDEX.to_string(),
                file_name: name,
                file_size: size,
                row_count: hashes.len() as i64,
                dv_ranges: None,
                external_path: None,
            });
        }
        entries.sort_by(|a, b| (&a.partition, a.bucket).cmp(&(&b.partition, b.bucket)));
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: AssignSlice = AssignSlice::WHOLE;

    fn options(target: u64, max: i32) -> AssignOptions {
        AssignOptions {
            target_row_num: target,
            max_buckets: max,
            index_dirs: Default::default(),
        }
    }

    #[test]
    fn known_keys_keep_their_bucket_and_new_keys_fill_buckets_in_order() {
        let mut index = PartitionIndex::default();
        let o = options(2, -1);
        assert_eq!(index.assign(10, &o, W).unwrap(), 0);
        assert_eq!(index.assign(11, &o, W).unwrap(), 0);
        assert_eq!(index.assign(12, &o, W).unwrap(), 1);
        assert_eq!(index.assign(10, &o, W).unwrap(), 0);
        assert_eq!(index.assign(13, &o, W).unwrap(), 1);
        assert_eq!(index.assign(14, &o, W).unwrap(), 2);
        assert_eq!(index.changed.len(), 3);
    }

    #[test]
    fn a_bucket_freed_below_target_takes_keys_first() {
        // Loaded state: bucket 1 full, bucket 0 with room.
        let mut index = PartitionIndex::default();
        index.rows.insert(0, 1);
        index.rows.insert(1, 2);
        index.non_full.extend([0, 1]);
        let o = options(2, -1);
        assert_eq!(index.assign(7, &o, W).unwrap(), 0);
        assert_eq!(index.assign(8, &o, W).unwrap(), 2);
    }

    #[test]
    fn max_buckets_caps_new_buckets() {
        let mut index = PartitionIndex::default();
        let o = options(1, 2);
        assert_eq!(index.assign(1, &o, W).unwrap(), 0);
        assert_eq!(index.assign(2, &o, W).unwrap(), 1);
        let third = index.assign(3, &o, W).unwrap();
        assert!(third == 0 || third == 1);
        assert_eq!(index.assign(3, &o, W).unwrap(), third);
    }

    #[test]
    fn assigners_open_only_their_own_buckets() {
        // two assigners of one partition: new keys fill buckets 0, 2, 4 and 1, 3, 5
        let o = options(2, -1);
        let (even, odd) = (AssignSlice { id: 0, of: 2 }, AssignSlice { id: 1, of: 2 });
        let mut a = PartitionIndex::default();
        let mut b = PartitionIndex::default();
        let first: Vec<i32> = [2, 4, -6, 8, 10]
            .iter()
            .map(|h| a.assign(*h, &o, even).unwrap())
            .collect();
        assert_eq!(first, vec![0, 0, 2, 2, 4]);
        let second: Vec<i32> = [1, -3, 5]
            .iter()
            .map(|h| b.assign(*h, &o, odd).unwrap())
            .collect();
        assert_eq!(second, vec![1, 1, 3]);
        assert_eq!(AssignSlice::id_of(-3, 2), 1);
        assert!(!even.owns_hash(-3));
    }
}
