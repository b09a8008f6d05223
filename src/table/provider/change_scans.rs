//! The change reads of a [`PaimonTable`]: incremental scans (raw delta or changelog files, or
//! the diff of two merged states) and `$changelog`, normalized when the table has no producer.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::{internal_err, not_impl_err, Result};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::{project, PaimonTable};
use crate::changelog::{resolve_changelog_range, ChangelogNormalizeExec};
use crate::scan::incremental::{plan_incremental, ChangeMode, IncrementalPlanRequest, IncrementalRange};
use crate::scan::{spread_diffs_over_partitions, PaimonIncrementalScanExec, ReadView, ScanContext};
use crate::spec::Snapshot;
use crate::table::origin::ScanKind;

impl PaimonTable {
    /// The changes of `range` (semantics.md §7.2): raw delta or changelog rows, or a diff.
    pub(super) async fn incremental_scan(
        &self,
        state: &dyn Session,
        range: &IncrementalRange,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let diff = range.mode == ChangeMode::Diff;
        if diff && !self.schema.has_primary_key() {
            return not_impl_err!(
                "Incremental scan mode 'diff' of append table {} is not supported: it has no primary key",
                self.name
            );
        }
        let (layout, output_columns, key_indices, output_schema) = self.layout_for(projection, diff);
        let engine = self.merge_engine(&layout)?;
        let newest_record_wins = engine.as_ref().is_some_and(|e| {
            matches!(
                e.kind,
                crate::merge::EngineKind::Deduplicate { ignore_delete: false }
            )
        });
        let plan = plan_incremental(IncrementalPlanRequest {
            meta: &self.meta,
            schema: &self.schema,
            options: &self.options,
            range,
            predicate: self.pruning_predicate(state, filters)?,
            newest_record_wins,
        })
        .await?;
        // A diff compares most rows it reads and outputs few: strings are read as views into
        // the pages when the merge does not look at values (deduplicate, first-row).
        let values_unread = engine
            .as_ref()
            .is_some_and(|e| !matches!(e.kind, crate::merge::EngineKind::Reduce));
        let layout = match diff && values_unread {
            true => layout.with_string_views(),
            false => layout,
        };
        let ctx = ScanContext {
            table_io: self.meta.io().clone(),
            engine,
            // incremental splits are packed by key range, not by level
            lookup_read: false,
            layout: Arc::new(layout),
            file_schemas: plan.file_schemas,
            key_indices,
            output_columns,
            with_rowkind: self.view != ReadView::Table && projection.is_none_or(|p| p.contains(&0)),
            // A diff compares states that keep their tombstones; the view drops them later.
            keep_retracts: true,
            lists: self.view == ReadView::Binlog,
            with_snapshot_id: self.view == ReadView::Changelog,
            output_schema,
            pruning: None,
            value_filter: None,
            key_filter: None,
            merge_key_filter: None,
            blobs: crate::scan::BlobRead::of(&self.schema, &self.options),
            table: Arc::clone(&self.schema),
            predicate: None,
        };
        let target_partitions = self.target_partitions(state);
        let first_key = self.schema.trimmed_primary_keys().first().map(|f| (*f).clone());
        let splits =
            spread_diffs_over_partitions(plan.splits, target_partitions, &ctx, first_key.as_ref()).await?;
        Ok(Arc::new(
            PaimonIncrementalScanExec::new(
                self.name.clone(),
                range.clone(),
                self.view,
                ctx,
                splits,
                target_partitions,
                limit,
            )
            .with_origin(self.origin(
                ScanKind::Incremental,
                Some(range),
                projection,
                filters,
                limit,
            )),
        ))
    }

    /// `$changelog`: the exact changes of the range, whatever the producer. A table with a
    /// producer reads its changelog files; a `none` table normalizes its delta rows against
    /// the state at the range's start (`changelog::ChangelogNormalizeExec`).
    pub(super) async fn changelog_scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let producer = self.has_changelog_producer();
        let mode = if producer {
            ChangeMode::Changelog
        } else {
            ChangeMode::Delta
        };
        let resolved = resolve_changelog_range(
            &self.meta,
            &self.name,
            self.incremental.as_ref(),
            mode,
            !producer,
            self.allow_after_only,
        )
        .await?;
        let range = resolved.range;
        let changes = self.raw_changes(state, &range, filters).await?;
        let plan: Arc<dyn ExecutionPlan> = if producer || range.empty {
            changes
        } else {
            let seed = if resolved.seeded {
                let snapshot = self.meta.snapshot(range.start).await?;
                Some(self.rows_at(state, snapshot, filters).await?)
            } else {
                None
            };
            Arc::new(ChangelogNormalizeExec::try_new(
                &self.name,
                &self.schema,
                seed,
                changes,
            )?)
        };
        project(plan, projection)
    }

    /// Whether the table writes changelog files (any producer but `none`).
    pub(crate) fn has_changelog_producer(&self) -> bool {
        self.options.changelog_producer != "none"
    }

    /// The stored change rows of `range` (`rowkind`, columns, `snapshot_id`) of a `$changelog`
    /// table, not normalized: changelog files with a producer, else the delta files of APPEND
    /// snapshots.
    pub(crate) async fn raw_changes(
        &self,
        state: &dyn Session,
        range: &IncrementalRange,
        filters: &[Expr],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.view != ReadView::Changelog {
            return internal_err!(
                "raw changes are read through the $changelog view of {}",
                self.name
            );
        }
        let mode = if self.has_changelog_producer() {
            ChangeMode::Changelog
        } else {
            ChangeMode::Delta
        };
        let range = IncrementalRange {
            mode,
            diff: None,
            ..range.clone()
        };
        self.incremental_scan(state, &range, None, filters, None).await
    }

    /// The merged rows of `snapshot` (table columns), files pruned by `filters`.
    pub(crate) async fn rows_at(
        &self,
        state: &dyn Session,
        snapshot: Snapshot,
        filters: &[Expr],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let at = PaimonTable {
            // One partition when rebuilt for Ballista: the seed of a normalize.
            single_partition: self.single_partition || self.distributed,
            ..PaimonTable::try_new(
                self.name.clone(),
                Arc::clone(&self.meta),
                Some(snapshot),
                Arc::clone(&self.schema),
                ReadView::Table,
            )?
        };
        at.batch_scan(state, None, filters, None).await
    }
}
