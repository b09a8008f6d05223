//! A MERGE INTO an append table that changes existing rows (`sql::merge`), as Paimon's Spark
//! integration runs it on append tables: with `deletion-vectors.enabled` the rows a clause
//! updates or deletes are marked in deletion vectors and their new versions written to new
//! files; otherwise only the files holding such a row are rewritten (copy-on-write), every
//! other file stays.
//!
//! The statement reads the target with a row address per row (`ROW_ADDRESS_COLUMN`: the
//! number of its file among the files of the snapshot read, shifted left 32 bits, plus its
//! position in the file), so the sink knows which file and row each changed row was:
//!
//! ```text
//! row (values, address, kind) ─► DV mode : update/delete ─► position marked in its file's vector
//!                                          insert/update ─► written as a new row
//!                              ─► rewrite : any row of a file ─► the file is replaced
//!                                          (every row of a touched file arrives: kept rows,
//!                                           updated rows; deleted rows are not written)
//! commit: OVERWRITE with the row-level conflict check (files read still live, touched
//! buckets' vectors unchanged)
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, Int64Type, Int8Type};
use datafusion::common::{exec_datafusion_err, Result};

use crate::deletion_vector::{merged_positions, write_bucket_index, DELETION_VECTORS_INDEX};
use crate::meta::{RowLevelBase, TableMeta};
use crate::spec::{paths, row_kind, FileKind, IndexManifestEntry, ManifestEntry, TableSchema};

/// The column of a MERGE's rows holding each target row's address (`Int64`, NULL for rows
/// from the source alone), just before the kind column.
pub(crate) const ROW_ADDRESS_COLUMN: &str = "__paimon_row_address";

/// A row's file number is the address's upper 32 bits.
const FILE_SHIFT: u32 = 32;

/// What a MERGE into an append table read: the live files of one snapshot, numbered.
#[derive(Debug, Clone)]
pub(crate) struct AppendMergeBase {
    pub(crate) files: Vec<ManifestEntry>,
    pub(crate) snapshot_id: Option<i64>,
    pub(crate) deletion_vectors: bool,
}

impl AppendMergeBase {
    /// The address of each file's first row, by file name (what a scan adds positions to).
    pub(crate) fn first_addresses(&self) -> HashMap<String, i64> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, e)| (e.file.file_name.clone(), (i as i64) << FILE_SHIFT))
            .collect()
    }
}

/// The files and rows the rows of one MERGE came from.
#[derive(Debug, Default)]
pub(crate) struct AppendMergeMarks {
    /// Rewrite: every file a row came from.
    touched: BTreeSet<usize>,
    /// Deletion vectors: the positions to mark, by file number.
    positions: BTreeMap<usize, Vec<u64>>,
}

impl AppendMergeMarks {
    /// `batch` (the table's columns, the address, the kind) as the rows to write, as plain
    /// inserts, noting the files and rows they came from.
    pub(crate) fn take(&mut self, batch: &RecordBatch, base: &AppendMergeBase) -> Result<RecordBatch> {
        let columns = batch.num_columns();
        if columns < 2 {
            return Err(exec_datafusion_err!("A MERGE's rows lack their address and kind"));
        }
        let addresses = cast(batch.column(columns - 2), &DataType::Int64)?;
        let addresses = addresses.as_primitive::<Int64Type>();
        let kinds = cast(batch.column(columns - 1), &DataType::Int8)?;
        let kinds = kinds.as_primitive::<Int8Type>();
        let mut write = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let kind = kinds.is_valid(row).then(|| kinds.value(row));
            let written = kind != Some(row_kind::DELETE);
            if addresses.is_valid(row) {
                let address = addresses.value(row) as u64;
                let file = (address >> FILE_SHIFT) as usize;
                if file >= base.files.len() {
                    return Err(exec_datafusion_err!(
                        "A MERGE row has address {address}, beyond the {} files read",
                        base.files.len()
                    ));
                }
                if base.deletion_vectors {
                    // every row that arrives was taken by a clause: its old version goes
                    self.positions
                        .entry(file)
                        .or_default()
                        .push(address & u32::MAX as u64);
                } else {
                    self.touched.insert(file);
                }
            }
            write.push(written);
        }
        let values = batch.project(&(0..columns - 2).collect::<Vec<_>>())?;
        Ok(filter_record_batch(&values, &BooleanArray::from(write))?)
    }

    /// Whether any existing row changes.
    pub(crate) fn is_empty(&self) -> bool {
        self.touched.is_empty() && self.positions.is_empty()
    }

    /// The commit's row-level part: files replaced, or files marked and one new index file
    /// per touched bucket (holding every vector of the bucket) replacing its old ones.
    pub(crate) async fn into_commit(
        self,
        base: &AppendMergeBase,
        meta: &TableMeta,
        schema: &TableSchema,
    ) -> Result<(RowLevelBase, Vec<IndexManifestEntry>)> {
        let mut row_level = RowLevelBase {
            statement: "MERGE".to_string(),
            ..Default::default()
        };
        row_level.rewritten = self.touched.iter().map(|&i| base.files[i].clone()).collect();
        if self.positions.is_empty() {
            return Ok((row_level, vec![]));
        }
        let snapshot = match base.snapshot_id {
            Some(id) => meta.snapshot(id).await?,
            None => {
                return Err(exec_datafusion_err!(
                    "A MERGE marked rows of a table it read no snapshot of"
                ))
            }
        };
        let dirs = paths::IndexFileDirs::of(schema);
        let vectors = meta.deletion_vectors(&snapshot, &dirs).await?;
        let index_entries = match &snapshot.index_manifest {
            Some(name) => meta.index_manifest(name).await?,
            None => vec![],
        };
        // the marks of each bucket, by file name
        let mut buckets: BTreeMap<(Vec<u8>, i32), Vec<(String, Vec<u64>)>> = BTreeMap::new();
        for (file, mut positions) in self.positions {
            let entry = &base.files[file];
            positions.sort_unstable();
            positions.dedup();
            row_level.marked.push(entry.clone());
            buckets
                .entry((entry.partition.clone(), entry.bucket))
                .or_default()
                .push((entry.file.file_name.clone(), positions));
        }
        let mut index_added = Vec::with_capacity(buckets.len());
        for ((partition, bucket), added) in buckets {
            row_level.index_files.extend(
                index_entries
                    .iter()
                    .filter(|e| {
                        e.kind == FileKind::Add
                            && e.index_type == DELETION_VECTORS_INDEX
                            && e.partition == partition
                            && e.bucket == bucket
                    })
                    .map(|e| e.file_name.clone()),
            );
            let names: Vec<&str> = base
                .files
                .iter()
                .filter(|e| e.partition == partition && e.bucket == bucket)
                .map(|e| e.file.file_name.as_str())
                .collect();
            let positions = merged_positions(meta.io().store(), &names, &vectors, added).await?;
            index_added.push(write_bucket_index(meta.io(), &partition, bucket, positions, &dirs).await?);
        }
        Ok((row_level, index_added))
    }
}
