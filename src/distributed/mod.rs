//! Scale-out on Apache Ballista (cargo feature `ballista`): `datafusion-proto` extension codecs
//! for what our plans contain, so a Ballista scheduler can plan and its executors can run
//! merge-on-read and incremental scans of Paimon tables.
//!
//! * [`PaimonLogicalCodec`] carries a [`PaimonTable`] (a `TableScan`'s provider) from the client
//!   to the scheduler as a [`TableRecipe`]: the table root, the snapshot and read schema as
//!   JSON, the view and the incremental range, all resolved on the client. The scheduler plans
//!   from exactly the snapshot the client resolved.
//! * [`PaimonPhysicalCodec`] carries `PaimonScanExec` and `PaimonIncrementalScanExec` from the
//!   scheduler to executors as the table recipe plus the `scan` arguments (projection, filters,
//!   limit). An executor plans the scan again from them and checks that every output
//!   partition reads exactly the splits the scheduler planned (a fingerprint of files, key
//!   ranges and deletion vectors), failing rather than reading different rows. Splits
//!   (partition, bucket, key range) are therefore the unit of distribution (see below).
//!
//!   `ChangelogNormalizeExec` (`$changelog` of `none` tables) travels as its table's name,
//!   schema and partitions and is rebuilt over its decoded inputs. A `DataSinkExec` writing to
//!   a Paimon table travels as the table location, its schema and the write (INSERT,
//!   dynamic-partition INSERT OVERWRITE, DELETE/UPDATE rows, truncate, partition drops, with
//!   partition values as `datafusion-proto` literals), and so do the nodes of a parallel write
//!   (`PaimonBucketExec`, `PaimonWriteExec`, `PaimonCommitExec` with its commit user) and of
//!   a parallel `CALL sys.compact` (`PaimonCompactExec`, `PaimonCompactCommitExec`, and the
//!   `CompactionJob` provider the client sends).
//!   Metadata tables (`t$snapshots`, ...) travel as the rows the client read.
//! * [`ParallelWrites`] and [`SpreadNormalize`], physical optimizer rules of the scheduler
//!   ([`with_cluster_planning`]), turn a write into parallel writers and one exactly-once
//!   committer, and a `$changelog` normalize into one task per group of keys.
//! * [`cluster_config`], [`scheduler_state`] and [`cluster_runtime`] build the scheduler's and
//!   executors' sessions.
//!
//! Statements our SQL layer runs itself (`CALL`, `INSERT OVERWRITE ... PARTITION (...)`, whose
//! input query still runs on the cluster) execute on the client and return their small result
//! as a `VALUES` plan, which Ballista can run. Not distributable (a clear error names the node):
//! `paimon_stream` tailing reads, table functions other than `paimon_incremental_query`.

//!
//! Ballista hands each task the plan of a whole stage and narrows only its own leaf nodes
//! (file and memory sources) to the task's partitions; a custom leaf with several partitions
//! would be read once per task. So tables rebuilt by these codecs (on the scheduler) plan batch
//! and incremental scans as file groups of a `DataSourceExec`, one group per output partition
//! of the scan (`split_groups.rs`): Ballista keeps each task's groups, and the executor runs
//! exactly those partitions.

mod cluster;
mod codec;
mod dml_recipe;
mod parallel_writes;
mod split_groups;
mod spread_normalize;

use std::sync::Arc;

use ballista::prelude::SessionConfigExt;
use datafusion::prelude::SessionConfig;
use datafusion_proto::physical_plan::{ComposedPhysicalExtensionCodec, PhysicalExtensionCodec};

pub use cluster::{
    cluster_config, cluster_functions, cluster_runtime, default_registry, executor_functions,
    scheduler_state, static_planning, with_cluster_planning,
};
pub use codec::{PaimonLogicalCodec, PaimonPhysicalCodec};
pub use parallel_writes::ParallelWrites;
pub(crate) use split_groups::{split_groups, store_url};
pub use spread_normalize::SpreadNormalize;

/// `config` with the Paimon codecs installed in front of the Ballista codecs it has: build
/// the Ballista session state (client, scheduler and standalone executor) from it.
pub fn with_paimon_codecs(config: SessionConfig) -> SessionConfig {
    let logical = Arc::new(PaimonLogicalCodec::new(config.ballista_logical_extension_codec()));
    let physical: Arc<dyn PhysicalExtensionCodec> = Arc::new(ComposedPhysicalExtensionCodec::new(vec![
        config.ballista_physical_extension_codec(),
        Arc::new(PaimonPhysicalCodec),
    ]));
    config
        .with_ballista_logical_extension_codec(logical)
        .with_ballista_physical_extension_codec(physical)
}
