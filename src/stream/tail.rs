//! The state machine behind a tailing read: where to start, one unit (a full read, or one
//! snapshot's changes) after another, consumer progress after each unit.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::SchemaRef;
use datafusion::common::{exec_err, Result};
use datafusion::execution::context::SessionState;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use futures::StreamExt;

use super::options::{StartMode, StreamOptions};
use crate::changelog::normalize::{normalize_state, NormalizeState};
use crate::scan::incremental::{ChangeMode, IncrementalRange};
use crate::table::PaimonTable;

/// What the rows of the unit being read are.
enum Unit {
    /// Merged rows of a snapshot (table columns), emitted as `+I`.
    Full { snapshot_id: i64 },
    /// Stored change rows (`rowkind`, columns, `snapshot_id`).
    Changes,
}

/// One tailing read.
pub(super) struct Tail {
    /// The table's `$changelog` view (read schema fixed when the stream was planned).
    table: Arc<PaimonTable>,
    session: SessionState,
    task: Arc<TaskContext>,
    options: StreamOptions,
    output: SchemaRef,
    /// Producer none: the state the delta rows fold into.
    normalize: Option<NormalizeState>,
    started: bool,
    /// The next snapshot whose changes are due.
    next: i64,
    current: Option<(SendableRecordBatchStream, Unit)>,
    /// One batch held back, so consumer progress is written before a unit's last batch leaves.
    pending: Option<RecordBatch>,
}

impl Tail {
    pub(super) fn new(
        table: Arc<PaimonTable>,
        session: SessionState,
        task: Arc<TaskContext>,
        options: StreamOptions,
        output: SchemaRef,
    ) -> Self {
        Tail {
            table,
            session,
            task,
            options,
            output,
            normalize: None,
            started: false,
            next: 1,
            current: None,
            pending: None,
        }
    }

    /// The next batch of changes; waits for new snapshots as long as it takes.
    pub(super) async fn next_batch(&mut self) -> Result<RecordBatch> {
        loop {
            if !self.started {
                self.start().await?;
                self.started = true;
                continue;
            }
            if let Some((stream, unit)) = &mut self.current {
                match stream.next().await {
                    Some(batch) => {
                        let batch = batch?;
                        let out = match unit {
                            Unit::Full { snapshot_id } => {
                                let id = *snapshot_id;
                                if let Some(state) = &mut self.normalize {
                                    state.seed(&batch)?;
                                }
                                Some(as_inserts(&self.output, &batch, id)?)
                            }
                            Unit::Changes => match &mut self.normalize {
                                Some(state) => state.fold(&batch)?,
                                None => Some(batch),
                            },
                        };
                        if let Some(out) = out.filter(|b| b.num_rows() > 0) {
                            if let Some(ready) = self.pending.replace(out) {
                                return Ok(ready);
                            }
                        }
                    }
                    None => {
                        // The unit is complete: record it before its last batch is handed out.
                        self.current = None;
                        if let Some(id) = &self.options.consumer_id {
                            self.table.meta().write_consumer(id, self.next).await?;
                        }
                        if let Some(ready) = self.pending.take() {
                            return Ok(ready);
                        }
                    }
                }
                continue;
            }
            self.open_next_snapshot().await?;
        }
    }

    /// Resolves the start position: a consumer's progress, else `scan.mode`.
    async fn start(&mut self) -> Result<()> {
        let meta = Arc::clone(self.table.meta());
        let name = self.table.name().to_string();
        if !self.table.has_changelog_producer() {
            self.normalize = Some(normalize_state(
                &name,
                self.table.table_schema(),
                Arc::clone(&self.output),
                &self.task,
            )?);
        }
        let earliest = meta.earliest_snapshot_id().await?;
        // Changes outlive their snapshot where the table keeps long-lived changelogs.
        let earliest_changes = if self.table.has_changelog_producer() {
            meta.earliest_changes_id().await?
        } else {
            earliest
        };
        let latest = match self.options.latest_at_plan {
            Some(id) => id,
            None => meta.latest_snapshot_id().await?.unwrap_or(0),
        };
        if let Some(id) = &self.options.consumer_id {
            if let Some(consumer) = meta.consumer(id).await? {
                self.next = consumer.next_snapshot;
                return self.seed_before(self.next).await;
            }
        }
        let full = |id: i64| (id, true);
        let (position, with_full) = match self.options.start {
            StartMode::LatestFull if latest > 0 => full(latest),
            StartMode::LatestFull | StartMode::Latest => (latest, false),
            StartMode::FromSnapshot(n) => (n.max(earliest_changes.unwrap_or(1)) - 1, false),
            StartMode::FromSnapshotFull(n) => full(n),
            StartMode::FromTimestamp(t) => {
                let before = meta.snapshot_at_or_before(t - 1).await?.map_or(0, |s| s.id);
                (before.max(earliest.unwrap_or(1) - 1), false)
            }
            StartMode::CompactedFull => {
                match crate::table::latest_compacted(&meta, &Default::default(), Some(latest)).await? {
                    Some(s) => full(s.id),
                    None => (0, false),
                }
            }
        };
        self.next = position + 1;
        if with_full {
            let snapshot = snapshot_of(&self.table, position).await?;
            let plan = self.table.rows_at(&self.session, snapshot, &[]).await?;
            self.current = Some((
                self.execute(plan)?,
                Unit::Full {
                    snapshot_id: position,
                },
            ));
            Ok(())
        } else {
            self.seed_before(self.next).await
        }
    }

    /// Producer none: folds the merged state of snapshot `next - 1` into the state silently, so
    /// the first changes are exact (an update of an existing key is `-U`/`+U`, not `+I`).
    async fn seed_before(&mut self, next: i64) -> Result<()> {
        if self.normalize.is_none() || next <= 1 {
            return Ok(());
        }
        let snapshot = snapshot_of(&self.table, next - 1).await?;
        let plan = self.table.rows_at(&self.session, snapshot, &[]).await?;
        let mut rows = self.execute(plan)?;
        while let Some(batch) = rows.next().await {
            if let Some(state) = &mut self.normalize {
                state.seed(&batch?)?;
            }
        }
        Ok(())
    }

    /// Opens the changes of snapshot `next`, or waits a discovery interval when it is not
    /// committed yet.
    async fn open_next_snapshot(&mut self) -> Result<()> {
        let meta = Arc::clone(self.table.meta());
        let latest = meta.latest_snapshot_id().await?.unwrap_or(0);
        if self.next > latest {
            tokio::time::sleep(Duration::from_millis(self.options.discovery_interval_ms)).await;
            return Ok(());
        }
        // Fails naming the snapshot if its changes expired before they were read.
        changes_of(&self.table, self.next).await?;
        let id = self.next;
        let range = IncrementalRange {
            start: id - 1,
            end: id,
            mode: ChangeMode::Delta,
            diff: None,
            empty: false,
        };
        let plan = self.table.raw_changes(&self.session, &range, &[]).await?;
        self.current = Some((self.execute(plan)?, Unit::Changes));
        self.next = id + 1;
        Ok(())
    }

    /// Every partition of `plan` as one stream (each partition keeps its order: a bucket's
    /// rows stay in commit order).
    fn execute(&self, plan: Arc<dyn ExecutionPlan>) -> Result<SendableRecordBatchStream> {
        let streams = (0..plan.output_partitioning().partition_count())
            .map(|p| plan.execute(p, Arc::clone(&self.task)))
            .collect::<Result<Vec<_>>>()?;
        let schema = plan.schema();
        Ok(Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                schema,
                futures::stream::select_all(streams),
            ),
        ))
    }
}

/// Snapshot `id` of `table`, or an error saying it expired or does not exist.
async fn snapshot_of(table: &PaimonTable, id: i64) -> Result<crate::spec::Snapshot> {
    needed_snapshot(table, id, false).await
}

/// The snapshot whose changes are read next: for a table with a changelog producer, an expired
/// snapshot's long-lived changelog (`changelog.num-retained.*`) serves as well.
async fn changes_of(table: &PaimonTable, id: i64) -> Result<crate::spec::Snapshot> {
    needed_snapshot(table, id, table.has_changelog_producer()).await
}

/// Snapshot `id`, or with `long_lived` its long-lived changelog once expired; an error naming
/// what expired otherwise.
async fn needed_snapshot(table: &PaimonTable, id: i64, long_lived: bool) -> Result<crate::spec::Snapshot> {
    let meta = table.meta();
    let found = if long_lived {
        meta.snapshot_or_changelog(id).await
    } else {
        meta.snapshot(id).await
    };
    match found {
        Ok(s) => Ok(s),
        Err(crate::Error::NotFound { .. }) if long_lived => {
            let earliest = meta.earliest_changes_id().await?;
            exec_err!(
                "Stream of {} needs the changes of snapshot {id}, which {}",
                table.name(),
                match earliest {
                    Some(e) if id < e => format!("have expired (the earliest changes are of snapshot {e})"),
                    _ => "do not exist".to_string(),
                }
            )
        }
        Err(crate::Error::NotFound { .. }) => {
            let earliest = meta.earliest_snapshot_id().await?;
            exec_err!(
                "Stream of {} needs snapshot {id}, which {}",
                table.name(),
                match earliest {
                    Some(e) if id < e => format!("has expired (the earliest snapshot is {e})"),
                    _ => "does not exist".to_string(),
                }
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// Merged rows as `+I` changes of `snapshot_id`.
fn as_inserts(output: &SchemaRef, batch: &RecordBatch, snapshot_id: i64) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns() + 2);
    columns.push(Arc::new(StringArray::from(vec!["+I"; n])));
    columns.extend(batch.columns().iter().cloned());
    columns.push(Arc::new(Int64Array::from(vec![snapshot_id; n])));
    Ok(RecordBatch::try_new(Arc::clone(output), columns)?)
}
