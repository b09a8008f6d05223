//! The work of one output partition of [`super::PaimonIncrementalScanExec`]: for each change
//! split, read its files raw (delta, changelog) or diff its two states, then apply the view
//! (drop retractions for the table, pack updates for `$binlog`), project and stop at the limit.

use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::common::Result;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{StreamExt, TryStreamExt};

use super::diff::{diff_stream, DiffColumns, StartOnly};
use super::plan::{ChangeFiles, ChangeSplit};
use crate::merge::drop_retracts_stream;
use crate::scan::binlog::ChangelogPacker;
use crate::scan::exec::{ReadView, ScanContext};
use crate::scan::metrics::ScanMetrics;
use crate::scan::row_selection::KeyRange;
use crate::scan::split::{key_ordered_sections, SplitFile};
use crate::scan::stream::{limit_stream, run_stream, section_stream, shape_output, RunRead, SectionRead};

/// Builds the output stream of one partition.
pub(super) fn changes_partition_stream(
    ctx: Arc<ScanContext>,
    view: ReadView,
    splits: Vec<ChangeSplit>,
    batch_size: usize,
    metrics: ScanMetrics,
    limit: Option<usize>,
) -> SendableRecordBatchStream {
    let output_schema = Arc::clone(&ctx.output_schema);
    let split_metrics = metrics.clone();
    let per_split = futures::stream::iter(splits)
        .map(move |split| {
            // Only raw change rows pair a -U with its +U; a diff is a state, like a batch read.
            let pack = view == ReadView::Binlog && matches!(split.files, ChangeFiles::Raw(_));
            let changes = split_changes(&ctx, split, batch_size, &split_metrics)?;
            Ok::<_, datafusion::common::DataFusionError>(apply_view(
                &ctx,
                view,
                pack,
                changes,
                &split_metrics,
            ))
        })
        .try_flatten()
        .try_filter(|b| futures::future::ready(b.num_rows() > 0));
    metrics.output(limit_stream(output_schema, per_split, limit))
}

/// The changes of one split in the read layout, stored kinds kept.
fn split_changes(
    ctx: &Arc<ScanContext>,
    split: ChangeSplit,
    batch_size: usize,
    metrics: &ScanMetrics,
) -> Result<SendableRecordBatchStream> {
    let dir = split.bucket_dir;
    match split.files {
        ChangeFiles::Raw(files) if ctx.with_snapshot_id => {
            Ok(with_snapshot_ids(ctx, &dir, files, batch_size, metrics))
        }
        ChangeFiles::Raw(files) => Ok(run_stream(
            ctx,
            &dir,
            None,
            files,
            batch_size,
            RunRead::default(),
            metrics,
        )),
        ChangeFiles::Diff {
            before,
            after,
            keys,
            newer_only,
        } => {
            let before = state_stream(ctx, &dir, keys.clone(), before, batch_size, metrics)?;
            let after = state_stream(ctx, &dir, keys, after, batch_size, metrics)?;
            let layout = &ctx.layout;
            let columns = DiffColumns {
                keys: ctx.key_indices.clone(),
                // (keys the walk pairs are equal by the merge's order, which is the values')
                values: (0..layout.fields.len())
                    .filter(|i| !ctx.key_indices.contains(i))
                    .collect(),
                kind: layout.kind_index(),
            };
            let start_only = match newer_only {
                true => StartOnly::Unchanged,
                false => StartOnly::Removed,
            };
            diff_stream(before, after, columns, start_only, batch_size)
        }
    }
}

/// Raw change files read in order, each batch with the id of the snapshot that added its file
/// appended as a last column.
fn with_snapshot_ids(
    ctx: &Arc<ScanContext>,
    dir: &str,
    files: Vec<SplitFile>,
    batch_size: usize,
    metrics: &ScanMetrics,
) -> SendableRecordBatchStream {
    let mut fields: Vec<arrow::datatypes::FieldRef> = ctx.layout.schema.fields().iter().cloned().collect();
    fields.push(Arc::new(arrow::datatypes::Field::new(
        crate::changelog::CHANGELOG_SNAPSHOT_ID,
        arrow::datatypes::DataType::Int64,
        false,
    )));
    let schema = Arc::new(arrow::datatypes::Schema::new(fields));
    let (ctx, dir, out_schema) = (Arc::clone(ctx), dir.to_string(), Arc::clone(&schema));
    let metrics = metrics.clone();
    let stream = futures::stream::iter(files)
        .map(move |file| {
            let id = file.snapshot_id.unwrap_or(-1);
            let schema = Arc::clone(&out_schema);
            run_stream(
                &ctx,
                &dir,
                None,
                vec![file],
                batch_size,
                RunRead::default(),
                &metrics,
            )
            .map(move |batch| {
                let batch = batch?;
                let mut columns = batch.columns().to_vec();
                columns.push(Arc::new(arrow::array::Int64Array::from(vec![
                    id;
                    batch.num_rows()
                ])));
                Ok(RecordBatch::try_new(Arc::clone(&schema), columns)?)
            })
        })
        .flatten();
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}

/// The merged state of one bucket (retractions kept), in ascending key order: its sections one
/// after another, once overlapping ones (deletion-vector reads) are merged into one; only keys
/// in `keys` where given.
fn state_stream(
    ctx: &Arc<ScanContext>,
    dir: &str,
    keys: Option<Arc<KeyRange>>,
    sections: Vec<Vec<Vec<SplitFile>>>,
    batch_size: usize,
    metrics: &ScanMetrics,
) -> Result<SendableRecordBatchStream> {
    let streams = key_ordered_sections(sections)
        .into_iter()
        .map(|runs| {
            section_stream(
                ctx,
                dir,
                keys.clone(),
                runs,
                batch_size,
                SectionRead::Diff,
                metrics,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Arc::clone(&ctx.layout.schema);
    Ok(Box::pin(RecordBatchStreamAdapter::new(
        schema,
        futures::stream::iter(streams).flatten(),
    )))
}

/// Turns the changes of one split into output batches: the table drops retractions, `$binlog`
/// packs updates when `pack`, and every row is projected (and, for `$binlog`, made arrays).
fn apply_view(
    ctx: &Arc<ScanContext>,
    view: ReadView,
    pack: bool,
    changes: SendableRecordBatchStream,
    metrics: &ScanMetrics,
) -> futures::stream::BoxStream<'static, Result<RecordBatch>> {
    if pack {
        return packed(ctx, changes);
    }
    let changes = if view == ReadView::Table && ctx.layout.with_system_columns {
        drop_retracts_stream(
            changes,
            ctx.layout.kind_index(),
            metrics.merge.retracts_dropped.clone(),
        )
    } else {
        changes
    };
    let ctx = Arc::clone(ctx);
    changes
        .and_then(move |b| futures::future::ready(shape_output(&ctx, &b)))
        .boxed()
}

/// `$binlog` rows of one split: `-U`/`+U` pairs packed, a trailing `-U` flushed at the end.
fn packed(
    ctx: &Arc<ScanContext>,
    changes: SendableRecordBatchStream,
) -> futures::stream::BoxStream<'static, Result<RecordBatch>> {
    let packer = ChangelogPacker::new(Arc::clone(ctx));
    let state = (changes, packer, false);
    futures::stream::try_unfold(state, |(mut input, mut packer, mut done)| async move {
        while !done {
            match input.next().await {
                Some(batch) => {
                    if let Some(out) = packer.pack(&batch?)? {
                        return Ok(Some((out, (input, packer, done))));
                    }
                }
                None => {
                    done = true;
                    if let Some(out) = packer.finish()? {
                        return Ok(Some((out, (input, packer, done))));
                    }
                }
            }
        }
        Ok(None)
    })
    .boxed()
}
