//! What `EXPLAIN ANALYZE` shows for a scan partition: rows out, files and bytes read, rows
//! decoded and the time it took, runs merged, and the merge's own counters and time
//! ([`MergeMetrics`]), so a slow scan says whether it decodes or merges.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::RecordBatch;
use datafusion::common::Result;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, Gauge, MetricBuilder, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::Stream;
use object_store::ObjectStore;

use crate::io::{FileIO, ReadCountingStore, RequestSnapshot};
use crate::merge::MergeMetrics;
use crate::progress::StatementProgress;

/// The metrics of one output partition of a scan.
#[derive(Debug, Clone)]
pub(crate) struct ScanMetrics {
    /// Output rows and batches of the partition; `elapsed_compute` is the time spent producing
    /// them (decoding, merging and shaping).
    pub(crate) baseline: BaselineMetrics,
    /// Data files opened.
    pub(crate) files_read: Count,
    /// Bytes fetched from the store (after pruning row groups and pages), deletion vectors
    /// included.
    pub(crate) bytes_scanned: Count,
    /// Rows decoded from the files (after deletion vectors and row selections).
    pub(crate) rows_read: Count,
    /// Time spent fetching footers and decoding batches, as far as it runs on this thread.
    pub(crate) decode_time: Time,
    /// Sorted runs fed into merges (sections of one run are read without a merge).
    pub(crate) runs_merged: Count,
    pub(crate) merge: MergeMetrics,
    /// The session's live counters, if it has them.
    progress: Option<Arc<StatementProgress>>,
}

impl ScanMetrics {
    pub(crate) fn new(
        metrics: &ExecutionPlanMetricsSet,
        partition: usize,
        progress: Option<Arc<StatementProgress>>,
    ) -> Self {
        ScanMetrics {
            progress,
            baseline: BaselineMetrics::new(metrics, partition),
            files_read: MetricBuilder::new(metrics).counter("files_read", partition),
            bytes_scanned: MetricBuilder::new(metrics).counter("bytes_scanned", partition),
            rows_read: MetricBuilder::new(metrics).counter("rows_read", partition),
            decode_time: MetricBuilder::new(metrics).subset_time("decode_time", partition),
            runs_merged: MetricBuilder::new(metrics).counter("runs_merged", partition),
            merge: MergeMetrics::new(metrics, partition),
        }
    }

    /// `store`, counting what is fetched through it into `bytes_scanned`.
    pub(crate) fn counting(&self, store: &Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(ReadCountingStore::new(
            Arc::clone(store),
            self.bytes_scanned.clone(),
            self.progress.clone(),
        ))
    }

    /// The batches of one opened file, counted into `rows_read` and timed into `decode_time`.
    pub(crate) fn decoding(&self, input: SendableRecordBatchStream) -> SendableRecordBatchStream {
        self.files_read.add(1);
        Box::pin(Observed {
            input,
            time: self.decode_time.clone(),
            output: Output::Rows(self.rows_read.clone(), self.progress.clone()),
        })
    }

    /// The partition's output, recorded in the baseline metrics (rows, batches, bytes, end
    /// time) and timed into `elapsed_compute`.
    pub(crate) fn output(&self, input: SendableRecordBatchStream) -> SendableRecordBatchStream {
        Box::pin(Observed {
            input,
            time: self.baseline.elapsed_compute().clone(),
            output: Output::Baseline(self.baseline.clone()),
        })
    }
}

/// The requests a statement made through the catalog's store from opening the table until
/// its scan ended (`requests_get`, `requests_head`, `requests_list`, `bytes_fetched`): one
/// value per scan, the largest any partition saw when it ended, so the last one's.
#[derive(Debug, Clone)]
pub(crate) struct RequestGauges {
    get: Gauge,
    head: Gauge,
    list: Gauge,
    bytes: Gauge,
}

impl RequestGauges {
    pub(crate) fn new(metrics: &ExecutionPlanMetricsSet) -> Self {
        let gauge = |name: &'static str| MetricBuilder::new(metrics).global_gauge(name);
        RequestGauges {
            get: gauge("requests_get"),
            head: gauge("requests_head"),
            list: gauge("requests_list"),
            bytes: gauge("bytes_fetched"),
        }
    }

    pub(crate) fn record(&self, requests: RequestSnapshot) {
        for (gauge, value) in [
            (&self.get, requests.get),
            (&self.head, requests.head),
            (&self.list, requests.list),
            (&self.bytes, requests.bytes_fetched),
        ] {
            let value = value as usize;
            if value > gauge.value() {
                gauge.set(value);
            }
        }
    }

    /// `input`, recording the requests of the table `io` belongs to when it ends.
    pub(crate) fn at_end(self, io: FileIO, input: SendableRecordBatchStream) -> SendableRecordBatchStream {
        let schema = input.schema();
        let end = futures::stream::poll_fn(move |_| {
            if let Some(requests) = io.requests_since_opened() {
                self.record(requests);
            }
            Poll::Ready(None::<Result<RecordBatch>>)
        });
        Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::StreamExt::chain(input, end),
        ))
    }
}

/// Passes batches through, adding the time spent in each poll, and records what comes out.
struct Observed {
    input: SendableRecordBatchStream,
    time: Time,
    output: Output,
}

enum Output {
    Rows(Count, Option<Arc<StatementProgress>>),
    Baseline(BaselineMetrics),
}

impl Stream for Observed {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let start = std::time::Instant::now();
        let poll = self.input.as_mut().poll_next(cx);
        self.time.add_elapsed(start);
        match &self.output {
            Output::Rows(rows, progress) => {
                if let Poll::Ready(Some(Ok(batch))) = &poll {
                    rows.add(batch.num_rows());
                    if let Some(p) = progress {
                        p.add_rows_read(batch.num_rows());
                    }
                }
                poll
            }
            Output::Baseline(baseline) => baseline.record_poll(poll),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.input.size_hint()
    }
}

impl RecordBatchStream for Observed {
    fn schema(&self) -> arrow::datatypes::SchemaRef {
        self.input.schema()
    }
}
