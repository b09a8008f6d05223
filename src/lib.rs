//! # datafusion-paimon
//!
//! Read Apache Paimon tables (primary-key and append) from Apache DataFusion.
//!
//! Layers, lowest first; a module only imports from layers below it:
//!
//! ```text
//! spec, bitmap -> file_index -> io, progress, deletion_vector -> format, dynamic_bucket -> meta
//!   -> merge -> scan -> changelog, stream -> compact, write, maintenance -> table
//!   -> system_tables -> distributed -> catalog -> sql -> testing, bin
//! ```
//!
//! * [`spec`]: the on-disk format as plain data (schemas, snapshots, manifests, BinaryRow, paths).
//! * `bitmap`: roaring bitmaps in Paimon's byte layouts.
//! * `io`: bytes and Parquet footers on an `ObjectStore` (every request counted by kind,
//!   `RequestCountingStore`); a table's `FileIO` seen from a branch;
//!   where new data files go (external paths, other stores) and `.blob` files; cloud stores built
//!   from the environment (`CloudStores`, feature `cli`).
//! * [`progress`]: live counters of the running statement (a session extension any layer adds to).
//! * `deletion_vector`: where each data file's vector is, and decoding it.
//! * `format`: Parquet, ORC and Avro data files (and the ORC / Parquet manifest encodings).
//! * `file_index`: Paimon's file indexes (bitmap, bloom filter, range bitmap), to skip files, and
//!   building them as a data file is written.
//! * `dynamic_bucket`: the bucket of a key in a `bucket = -1` table through the `HASH` index
//!   (one assigner, or one of several owning slices of keys and buckets).
//! * `meta`: snapshots, schemas, tags and manifests of one table (in Avro, ORC or Parquet), and
//!   what a session keeps of them between statements (decoded manifests, the latest snapshot of
//!   each table with its file's version, confirmed by two HEADs).
//! * `merge`: k-way merge of sorted runs with arrow-row keys, merge engines.
//! * `scan`: merge-on-read planning and the `PaimonScanExec` plan node (narrowed at run time by
//!   a join's dynamic filter on the key); incremental reads (`incremental-between*` options) and
//!   the `PaimonIncrementalScanExec` plan node.
//! * `changelog`, `stream`: `t$changelog` (ChangelogNormalize) and tailing reads.
//! * `compact`, `write`, `maintenance`: compaction, the INSERT/DELETE/UPDATE/MERGE sink (and
//!   MERGE's row addresses in append tables; for clusters, the same write as parallel bucket
//!   assigners, writers that compact their buckets and one exactly-once committer, and an
//!   append table's DELETE/UPDATE in parts of its buckets), expiration.
//! * `table`: one table as a DataFusion `TableProvider`, time travel, the fallback branch.
//! * `system_tables`: `t$snapshots`, `t$files`, `t$audit_log`, `t$binlog`, ...
//! * `catalog`: a warehouse as a DataFusion catalog (`t$branch_<name>`, `t$system`).
//! * [`sql`]: session set-up (`SET paimon.*` options, default catalog, the table function
//!   `paimon_incremental_query`) and the statements DataFusion does not plan (DDL, `CALL`,
//!   `MERGE INTO`).
//! * [`testing`]: support for benches and tests (generated tables with dense, sparse or string
//!   keys; the live files and metadata a read's request floor counts; `ListingTable` baselines).
//! * `distributed` (feature `ballista`): Apache Ballista: plan codecs, the scheduler's rules
//!   (parallel writes, `$changelog` split by key) and what `paimon-scheduler` /
//!   `paimon-executor` are built from.

pub(crate) mod bitmap;
pub mod catalog;
pub(crate) mod changelog;
pub(crate) mod compact;
pub(crate) mod deletion_vector;
#[cfg(feature = "ballista")]
pub mod distributed;
pub(crate) mod dynamic_bucket;
pub mod error;
pub(crate) mod file_index;
pub(crate) mod format;
pub(crate) mod io;
pub(crate) mod maintenance;
pub(crate) mod merge;
pub(crate) mod meta;
pub mod progress;
pub mod scan;
pub mod spec;
pub mod sql;
pub mod stream;
pub(crate) mod system_tables;
pub mod table;
#[doc(hidden)]
pub mod testing;
pub(crate) mod write;

pub use catalog::PaimonCatalog;
pub use compact::remove_lookup_copies;
pub use error::{Error, Result};
#[cfg(feature = "cli")]
pub use io::{remote_store, CloudStores};
pub use io::{RequestCountingStore, RequestCounts, RequestSnapshot};
pub use scan::{PaimonIncrementalScanExec, PaimonScanExec};
pub use sql::PaimonSession;
pub use table::PaimonTable;
pub use write::KeepSourceOrder;
