//! Paimon scans in the shape Ballista distributes: a `DataSourceExec` over a `FileScanConfig`
//! whose file group `i` stands for output partition `i` of the scan (a set of splits: buckets,
//! or key ranges of one). Ballista's scheduler gives each task the plan of its stage narrowed to
//! the task's partitions, and the only leaves it knows how to narrow are its own file and memory
//! sources: it keeps the file groups of the task and drops the others. So each executor reads
//! only its splits, and a scan runs as one task per partition instead of one task in all.
//!
//! The "files" are not files: [`PaimonSplitSource`] opens group `i` by executing partition `i`
//! of the Paimon scan node it wraps. The codec (`codec.rs`) sends the scan's recipe plus the
//! indices of the groups left, and the executor plans the scan again and keeps those groups.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_datafusion_err, Result};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use futures::{FutureExt, StreamExt};
use object_store::ObjectStore;

/// The name of the stand-in file of group `i`.
const GROUP_PREFIX: &str = "paimon-split-group-";

/// A file source whose files are the output partitions of a Paimon scan node.
#[derive(Clone)]
pub(crate) struct PaimonSplitSource {
    scan: Arc<dyn ExecutionPlan>,
    /// The context partitions run with: the executor's (memory pool, settings), captured when
    /// the plan was decoded there; the planning session's where it was built.
    task_ctx: Arc<TaskContext>,
    table_schema: TableSchema,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for PaimonSplitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaimonSplitSource")
            .field("scan", &self.scan.name())
            .finish()
    }
}

impl PaimonSplitSource {
    /// The wrapped scan node.
    pub(crate) fn scan(&self) -> &Arc<dyn ExecutionPlan> {
        &self.scan
    }
}

/// `scan` as a `DataSourceExec` with one file group per output partition, keeping only the
/// groups in `groups` (all when `None`), in that order. `store_url` names a store the
/// executors have registered (the warehouse's): DataFusion looks it up before opening groups.
pub(crate) fn split_groups(
    scan: Arc<dyn ExecutionPlan>,
    groups: Option<&[usize]>,
    task_ctx: Arc<TaskContext>,
    store_url: ObjectStoreUrl,
) -> Arc<DataSourceExec> {
    let all: Vec<usize>;
    let groups = match groups {
        Some(g) => g,
        None => {
            all = (0..scan.properties().partitioning.partition_count()).collect();
            &all
        }
    };
    let source = PaimonSplitSource {
        table_schema: TableSchema::from(scan.schema()),
        scan,
        task_ctx,
        metrics: ExecutionPlanMetricsSet::new(),
    };
    let file_groups = groups
        .iter()
        .map(|i| FileGroup::new(vec![PartitionedFile::new(format!("{GROUP_PREFIX}{i}"), 0)]))
        .collect();
    let config = FileScanConfigBuilder::new(store_url, Arc::new(source))
        .with_file_groups(file_groups)
        .build();
    DataSourceExec::from_data_source(config)
}

/// The store of the warehouse at `root` (`s3://bucket/wh` -> `s3://bucket`).
pub(crate) fn store_url(root: &str) -> Result<ObjectStoreUrl> {
    let url = url::Url::parse(root).map_err(|e| exec_datafusion_err!("Invalid warehouse URL {root}: {e}"))?;
    ObjectStoreUrl::parse(&url[..url::Position::BeforePath])
}

/// The split source of `node` and the groups it still has, if `node` is a scan built by
/// [`split_groups`].
pub(crate) fn as_split_groups(node: &Arc<dyn ExecutionPlan>) -> Option<(&PaimonSplitSource, Vec<usize>)> {
    let exec = (node.as_ref() as &dyn Any).downcast_ref::<DataSourceExec>()?;
    let config = (exec.data_source().as_ref() as &dyn Any).downcast_ref::<FileScanConfig>()?;
    let source = (config.file_source().as_ref() as &dyn Any).downcast_ref::<PaimonSplitSource>()?;
    let groups = config
        .file_groups
        .iter()
        .flat_map(|g| g.files().iter())
        .filter_map(|f| group_index(f.object_meta.location.as_ref()))
        .collect();
    Some((source, groups))
}

fn group_index(path: &str) -> Option<usize> {
    path.strip_prefix(GROUP_PREFIX)?.parse().ok()
}

impl FileSource for PaimonSplitSource {
    fn create_file_opener(
        &self,
        _object_store: Arc<dyn ObjectStore>,
        _base_config: &FileScanConfig,
        _partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        Ok(Arc::new(SplitOpener {
            scan: Arc::clone(&self.scan),
            task_ctx: Arc::clone(&self.task_ctx),
        }))
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, _batch_size: usize) -> Arc<dyn FileSource> {
        // the scan node was planned with the session's batch size
        Arc::new(self.clone())
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "paimon"
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, ", splits of {}", self.scan.name())
    }

    /// No expressions: filters and projections were planned into the scan node.
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    /// A group is a set of splits, not a file to cut by byte ranges.
    fn supports_repartitioning(&self) -> bool {
        false
    }
}

/// Opens a group by running its partition of the scan.
struct SplitOpener {
    scan: Arc<dyn ExecutionPlan>,
    task_ctx: Arc<TaskContext>,
}

impl FileOpener for SplitOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let path = file.object_meta.location.as_ref();
        let partition = group_index(path)
            .ok_or_else(|| exec_datafusion_err!("{path} is not a group of Paimon splits"))?;
        let stream = self.scan.execute(partition, Arc::clone(&self.task_ctx))?;
        Ok(futures::future::ready(Ok(stream.boxed())).boxed())
    }
}
