//! The commit half of a Paimon write ([`PaimonSink`]): the writer's own compaction before a
//! distributed commit, and the one snapshot of every writer's files followed by what comes
//! after a write (compaction of the buckets written, expiration).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use datafusion::common::{Result, ScalarValue};
use datafusion::execution::TaskContext;

use super::sink::{PaimonSink, WriteKind, WrittenFiles};
use crate::compact::Compaction;
use crate::meta::{CommitRequest, OverwriteScope, PartitionBucket};
use crate::spec::BinaryRow;

impl PaimonSink {
    /// The compaction of this sink's table within the task's memory pool and progress.
    fn compaction<'a>(&'a self, context: &Arc<TaskContext>) -> Compaction<'a> {
        Compaction::in_task(&self.table, &self.meta, &self.schema, context)
    }

    /// A writer task of a distributed write: compacts the buckets of `written` before they
    /// are committed (what follows a local write's commit), into `written.compaction`.
    pub(crate) async fn compact_written(
        &self,
        written: &mut WrittenFiles,
        context: &Arc<TaskContext>,
    ) -> Result<()> {
        let started = Instant::now();
        let compaction = self.compaction(context);
        let overwrite = matches!(self.kind, WriteKind::Overwrite(_));
        if let Some(outcome) = compaction.before_commit(&written.added, overwrite).await? {
            written.compaction = outcome;
        }
        self.metrics.compaction_time.add_elapsed(started);
        Ok(())
    }

    /// The commit half: one snapshot of `written` (every writer's files) as `commit_user`,
    /// then what follows a write (compaction of the buckets written, expiration). Returns
    /// the rows the statement took. `distributed_since` (epoch millis no later than the
    /// statement's start) marks the committer of a distributed write: a snapshot
    /// `commit_user` committed since then counts as this commit (it is not made twice), and
    /// the writers' compaction ([`Self::compact_written`]) is committed instead of compacting
    /// here.
    pub(crate) async fn commit_written(
        &self,
        written: WrittenFiles,
        commit_user: &str,
        distributed_since: Option<i64>,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let WrittenFiles {
            rows: count,
            merge_kinds: _,
            added: mut flushed,
            changelog,
            index_added,
            append_marks,
            compaction: writers_compaction,
            row_level: _,
        } = written;
        flushed.sort_by(|a, b| {
            (&a.partition, a.bucket, &a.file.file_name).cmp(&(&b.partition, b.bucket, &b.file.file_name))
        });

        let overwrite = match &self.kind {
            WriteKind::Overwrite(_) if self.dynamic_partition_overwrite() => {
                // Paimon's default `dynamic-partition-overwrite`: replace only the partitions
                // the statement wrote, whatever PARTITION clause it had (semantics.md §9;
                // Java's commit builds its filter from the new files alone).
                let types = self.schema.partition_types();
                let mut specs: Vec<Vec<Option<ScalarValue>>> = Vec::new();
                for e in &flushed {
                    let spec: Vec<Option<ScalarValue>> = BinaryRow::decode(&e.partition, &types)?
                        .values
                        .into_iter()
                        .map(Some)
                        .collect();
                    if !specs.contains(&spec) {
                        specs.push(spec);
                    }
                }
                OverwriteScope::Partitions(specs)
            }
            WriteKind::Overwrite(scope) | WriteKind::DropPartitions(scope) => scope.clone(),
            WriteKind::Truncate => OverwriteScope::Table,
            _ => OverwriteScope::None,
        };
        if overwrite == OverwriteScope::Partitions(vec![]) && flushed.is_empty() {
            return Ok(count);
        }
        let request = CommitRequest {
            added: flushed,
            overwrite,
            partition_types: self.schema.partition_types(),
            commit_user: commit_user.to_string(),
            commit_identifier: i64::MAX,
            operation: Some(self.kind.operation().to_string()),
            compacted: vec![],
            changelog,
            index_added,
            index_removed: vec![],
            row_level: None,
        };
        let mut request = request;
        if let (WriteKind::MergeRewrite(base), Some(append_marks)) = (&self.kind, append_marks) {
            if append_marks.is_empty() && request.added.is_empty() {
                return Ok(count);
            }
            let (row_level, index_added) = append_marks.into_commit(base, &self.meta, &self.schema).await?;
            request.row_level = Some(row_level);
            request.index_added.extend(index_added);
        }
        // Postpone files wait for `CALL sys.compact`: nothing compacts them after a write.
        let touched: BTreeSet<PartitionBucket> = request
            .added
            .iter()
            .filter(|e| e.bucket != -2)
            .map(|e| (e.partition.clone(), e.bucket))
            .collect();
        let commit_started = Instant::now();
        // A retried commit task (or a retried stage of a distributed write) finds its own
        // snapshot and commits nothing again (Java's `filterCommitted`).
        let earlier = match distributed_since {
            Some(since) => self.meta.committed_by(commit_user, since).await?,
            None => None,
        };
        let compacted_before = earlier.as_ref().is_some_and(|s| s.commit_kind == "COMPACT");
        let committed = match earlier {
            Some(snapshot) => Some(snapshot),
            None => self.meta.commit(&request).await?,
        };
        self.metrics.commit_time.add_elapsed(commit_started);
        if committed.is_some() {
            let compaction_started = Instant::now();
            let compaction = self.compaction(context);
            if distributed_since.is_none() {
                compaction.after_write(touched).await?;
            } else if !compacted_before {
                compaction
                    .commit_before_commit(writers_compaction, commit_user)
                    .await?;
            }
            self.metrics.compaction_time.add_elapsed(compaction_started);
            let expire_started = Instant::now();
            self.expire_after_commit().await?;
            self.metrics.expire_time.add_elapsed(expire_started);
        }
        if let Some(requests) = self.meta.io().requests_since_opened() {
            self.metrics.requests.record(requests);
        }
        Ok(count)
    }
}
