//! Deletion vectors: the deleted row positions of data files, stored in `DELETION_VECTORS`
//! index files and listed in a snapshot's index manifest (format.md §4.8, §7.2).
//!
//! ```text
//! snapshot.indexManifest ─► DELETION_VECTORS entries ─► DeletionVectorIndex (data file ─► DvRef)
//!     read time: DvRef ─► byte range of index/<file> ─► DeletionVector ─► rows skipped
//! ```
//!
//! Compaction of `deletion-vectors.enabled` tables writes new index files ([`encode_index_file`]).
//!
//! Planning only reads the index manifest; each vector is fetched when its data file is opened,
//! so a scan that prunes a file never reads its vector.

mod codec;
mod write;

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::{exec_datafusion_err, Result};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

pub(crate) use codec::DeletionVector;
pub(crate) use write::{merged_positions, write_bucket_index};

use crate::io::FileIO;
use crate::spec::{paths, FileKind, IndexManifestEntry};

/// `_INDEX_TYPE` of deletion-vector index files.
pub(crate) const DELETION_VECTORS_INDEX: &str = "DELETION_VECTORS";

/// Where the deletion vector of one data file is stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DvRef {
    /// Object-store path of the index file.
    pub(crate) index_path: Path,
    /// Size of the index file, to bound the read.
    pub(crate) index_file_size: u64,
    /// Offset of the entry's `size` int.
    pub(crate) offset: u64,
    /// Length recorded in the index manifest (format.md §7.2: 32-bit `size`, 64-bit whole entry).
    pub(crate) length: i32,
    /// Deleted rows, when recorded.
    pub(crate) cardinality: Option<i64>,
}

impl DvRef {
    /// Fetches and decodes the vector.
    pub(crate) async fn load(&self, store: &Arc<dyn ObjectStore>) -> Result<DeletionVector> {
        // 32-bit entries need size + CRC ints around `length`; 64-bit ones record them already.
        let end =
            (self.offset + self.length.max(0) as u64 + 8).min(self.index_file_size.max(self.offset + 8));
        let bytes = store
            .get_range(&self.index_path, self.offset..end)
            .await
            .map_err(|e| {
                exec_datafusion_err!(
                    "Failed to read deletion vector index file {}: {e}",
                    self.index_path
                )
            })?;
        DeletionVector::decode(&bytes, self.length, self.index_path.as_ref())
    }
}

/// The deletion vectors of one snapshot, by data file name (file names are unique in a table).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeletionVectorIndex {
    by_file: HashMap<String, DvRef>,
}

impl DeletionVectorIndex {
    /// Collects the `DELETION_VECTORS` entries of an index manifest. `table_io` is rooted at
    /// the table, whose `index/` folder holds the files.
    pub(crate) fn from_entries(
        table_io: &FileIO,
        entries: &[IndexManifestEntry],
        dirs: &paths::IndexFileDirs,
    ) -> crate::error::Result<Self> {
        let mut by_file = HashMap::new();
        for entry in entries {
            if entry.kind != FileKind::Add || entry.index_type != DELETION_VECTORS_INDEX {
                continue;
            }
            let index_path = match &entry.external_path {
                Some(p) => table_io.external_path(p)?,
                None => table_io.path(&dirs.path(&entry.partition, entry.bucket, &entry.file_name)?),
            };
            for range in entry.dv_ranges.iter().flatten() {
                by_file.insert(
                    range.data_file.clone(),
                    DvRef {
                        index_path: index_path.clone(),
                        index_file_size: entry.file_size.max(0) as u64,
                        offset: range.offset.max(0) as u64,
                        length: range.length,
                        cardinality: range.cardinality,
                    },
                );
            }
        }
        Ok(DeletionVectorIndex { by_file })
    }

    /// The vector of `data_file`, if it has one.
    pub(crate) fn get(&self, data_file: &str) -> Option<&DvRef> {
        self.by_file.get(data_file)
    }
}
