//! What `EXPLAIN ANALYZE` shows for a write (`DataSinkExec` over a `PaimonSink`): rows, files,
//! bytes and buckets written, and where the statement's time went (writing files, the commit,
//! the compaction the commit triggers, expiration and automatic tags).

use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time};

use crate::spec::ManifestEntry;

/// Metrics of one statement's sink (a sink runs as a single partition).
#[derive(Debug)]
pub(crate) struct SinkMetrics {
    set: ExecutionPlanMetricsSet,
    /// Rows the statement received (for metadata-only deletes: the rows matched).
    pub(crate) rows_written: Count,
    pub(crate) data_files_written: Count,
    pub(crate) changelog_files_written: Count,
    /// File sizes of the data and changelog files written.
    pub(crate) bytes_written: Count,
    /// (partition, bucket) pairs that received files.
    pub(crate) buckets_written: Count,
    /// Routing, buffering, sorting and encoding the statement's files.
    pub(crate) write_time: Time,
    /// Manifests and the snapshot, retries included.
    pub(crate) commit_time: Time,
    /// The compaction (and changelog production) run after the commit.
    pub(crate) compaction_time: Time,
    /// Partition and snapshot expiration, automatic tags.
    pub(crate) expire_time: Time,
    /// The statement's object-store requests, from opening the table to the end of its commit.
    pub(crate) requests: crate::scan::RequestGauges,
}

impl SinkMetrics {
    pub(crate) fn new() -> Self {
        let set = ExecutionPlanMetricsSet::new();
        let counter = |name: &'static str| MetricBuilder::new(&set).counter(name, 0);
        let time = |name: &'static str| MetricBuilder::new(&set).subset_time(name, 0);
        SinkMetrics {
            rows_written: counter("rows_written"),
            data_files_written: counter("data_files_written"),
            changelog_files_written: counter("changelog_files_written"),
            bytes_written: counter("bytes_written"),
            buckets_written: counter("buckets_written"),
            write_time: time("write_time"),
            commit_time: time("commit_time"),
            compaction_time: time("compaction_time"),
            expire_time: time("expire_time"),
            requests: crate::scan::RequestGauges::new(&set),
            set,
        }
    }

    /// Counts the files of a commit: `data` and `changelog` entries.
    pub(crate) fn record_files(&self, data: &[ManifestEntry], changelog: &[ManifestEntry]) {
        self.data_files_written.add(data.len());
        self.changelog_files_written.add(changelog.len());
        let bytes: i64 = data.iter().chain(changelog).map(|e| e.file.file_size).sum();
        self.bytes_written.add(bytes.max(0) as usize);
        let buckets: std::collections::BTreeSet<_> = data
            .iter()
            .chain(changelog)
            .map(|e| (&e.partition, e.bucket))
            .collect();
        self.buckets_written.add(buckets.len());
    }

    pub(crate) fn snapshot(&self) -> MetricsSet {
        self.set.clone_inner()
    }
}
