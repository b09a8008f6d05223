//! The work of one output partition of [`super::PaimonScanExec`]: for each split, open the
//! files of every section, merge sections with several sorted runs, drop retracted keys, then
//! shape the output (projection, `rowkind` column) and stop at the limit.

use std::ops::RangeInclusive;
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch, RecordBatchOptions, StringArray};
use arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType as ArrowType, Int8Type, SchemaRef};
use datafusion::common::Result;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::{RecordBatchReceiverStream, RecordBatchStreamAdapter};
use futures::{StreamExt, TryStreamExt};

use super::binlog::single_value_lists;
use super::exec::ScanContext;
use super::file_read::{read_file, DenseKey, FileToRead, RowTracking};
use super::metrics::ScanMetrics;
use super::row_selection::KeyRange;
use super::split::{run_sequences, NewerRuns, Split, SplitFile};
use crate::merge::{
    drop_retracts_stream, merge_runs, merge_sorted_runs, newest_of_ordered_runs, newest_over_dense_base,
    EngineKind, MergeOptions, NewerKeys, NewerRead, MAX_DENSE_BASE_SPAN, MAX_UNORDERED_RUNS,
};
use crate::spec::row_kind;

/// Builds the output stream of one partition.
pub(crate) fn partition_stream(
    ctx: Arc<ScanContext>,
    splits: Vec<Split>,
    batch_size: usize,
    metrics: ScanMetrics,
    limit: Option<usize>,
    memory: Arc<dyn MemoryPool>,
) -> SendableRecordBatchStream {
    let output_schema = Arc::clone(&ctx.output_schema);
    type Section = (String, Option<Arc<KeyRange>>, NewerRuns, Vec<Vec<SplitFile>>);
    let sections: Vec<Section> = splits
        .into_iter()
        .flat_map(|s| {
            let dir = s.bucket_dir;
            let (range, newer) = (s.key_range, s.newer_runs);
            s.sections
                .into_iter()
                .map(move |runs| (dir.clone(), range.clone(), newer.clone(), runs))
        })
        .collect();
    let open_ctx = Arc::clone(&ctx);
    let section_metrics = metrics.clone();
    let merged = futures::stream::iter(sections)
        .map(move |(dir, range, newer, runs)| {
            let read = SectionRead::Query {
                newer,
                memory: Arc::clone(&memory),
            };
            section_stream(&open_ctx, &dir, range, runs, batch_size, read, &section_metrics)
        })
        .try_flatten();
    let shaped = merged
        .try_filter(|b| futures::future::ready(b.num_rows() > 0))
        .and_then(move |batch| futures::future::ready(shape_output(&ctx, &batch)));
    metrics.output(limit_stream(output_schema, shaped, limit))
}

/// Stops `input` after `limit` rows (no limit: `input` unchanged).
pub(crate) fn limit_stream(
    schema: SchemaRef,
    input: impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static,
    limit: Option<usize>,
) -> SendableRecordBatchStream {
    match limit {
        None => Box::pin(RecordBatchStreamAdapter::new(schema, input)),
        Some(n) => {
            let limited = input.scan(n, |remaining, item| {
                if *remaining == 0 {
                    return futures::future::ready(None);
                }
                futures::future::ready(Some(item.map(|b| {
                    let take = b.num_rows().min(*remaining);
                    *remaining -= take;
                    b.slice(0, take)
                })))
            });
            Box::pin(RecordBatchStreamAdapter::new(schema, limited))
        }
    }
}

/// How the files of a run are read. The default: no sequence numbers, the key filter only,
/// every field (raw change files).
#[derive(Debug, Clone, Default)]
pub(crate) struct RunRead {
    /// Decode `_SEQUENCE_NUMBER` (a merge compares it); else it reads as zeros.
    pub(crate) need_sequence: bool,
    /// The context's whole value filter may skip rows inside the reader: no merge follows, so
    /// no older version of a key can resurface. Else only its key filter may, which drops every
    /// version of a key together.
    pub(crate) filter_values: bool,
    /// Decode only these layout fields; the others read as NULL. `None`: every field.
    pub(crate) only_fields: Option<Arc<[usize]>>,
    /// The files are data files of a sorted run (unique keys): a file whose single integer
    /// key is dense has it computed rather than decoded ([`DenseKey`]).
    pub(crate) dense_keys: bool,
    /// Big files decode their columns on two readers side by side (`FileToRead::side_by_side`).
    pub(crate) side_by_side: bool,
}

impl RunRead {
    /// A run merged with others: sequence numbers as `need_sequence`, every field, key filter.
    pub(crate) fn for_merge(need_sequence: bool) -> Self {
        RunRead {
            need_sequence,
            dense_keys: true,
            ..RunRead::default()
        }
    }

    /// A run read as is, every field (a diff compares them all).
    pub(crate) fn unmerged() -> Self {
        RunRead {
            filter_values: true,
            ..RunRead::default()
        }
    }
}

/// The files of one sorted run (or of a change split), opened one after another in order;
/// only keys in `key_range` if given, only the rows a file names (`SplitFile::rows`), read as
/// `read` says.
pub(crate) fn run_stream(
    ctx: &Arc<ScanContext>,
    dir: &str,
    key_range: Option<Arc<KeyRange>>,
    files: Vec<SplitFile>,
    batch_size: usize,
    read: RunRead,
    metrics: &ScanMetrics,
) -> SendableRecordBatchStream {
    let ctx2 = Arc::clone(ctx);
    let dir = dir.to_string();
    let store = metrics.counting(ctx.table_io.store());
    let metrics = metrics.clone();
    let stream = futures::stream::iter(files)
        .then(move |f| {
            let ctx = Arc::clone(&ctx2);
            let store = Arc::clone(&store);
            let metrics = metrics.clone();
            let key_range = key_range.clone();
            let read = read.clone();
            let path = ctx
                .table_io
                .data_file_path(&dir, &f.file_name, f.external_path.as_deref());
            async move {
                let schema = ctx.file_schemas.get(&f.schema_id).cloned().ok_or_else(|| {
                    datafusion::common::exec_datafusion_err!(
                        "Schema {} of data file {} is not loaded",
                        f.schema_id,
                        f.file_name
                    )
                })?;
                let file = FileToRead {
                    path: path?,
                    size: f.file_size,
                    need_sequence: read.need_sequence,
                    deletion: f.deletion.clone(),
                    pruning: ctx.pruning.clone(),
                    key_range,
                    rows: f.rows.clone().map(|rows| Arc::from([rows])),
                    value_filter: match read.filter_values {
                        true => ctx.value_filter.clone().or_else(|| ctx.key_filter.clone()),
                        false => ctx.merge_key_filter.clone().or_else(|| ctx.key_filter.clone()),
                    },
                    footers: Some(Arc::clone(ctx.table_io.footers())),
                    only_fields: read.only_fields,
                    dense_key: match (read.dense_keys, ctx.key_indices.as_slice()) {
                        (true, &[key]) => {
                            DenseKey::of_file(ctx.layout.fields[key].id, &f.min_key, &f.max_key, f.row_count)
                        }
                        _ => None,
                    },
                    row_tracking: Some(RowTracking {
                        first_row_id: f.first_row_id,
                        max_sequence_number: f.max_sequence_number,
                        row_count: f.row_count,
                    }),
                    side_by_side: read.side_by_side,
                };
                let batches = read_file(store, file, schema, Arc::clone(&ctx.layout), batch_size).await?;
                let batches = RecordBatchStreamAdapter::new(Arc::clone(&ctx.layout.schema), batches);
                Ok::<_, datafusion::common::DataFusionError>(metrics.decoding(Box::pin(batches)))
            }
        })
        .try_flatten();
    Box::pin(RecordBatchStreamAdapter::new(
        Arc::clone(&ctx.layout.schema),
        stream,
    ))
}

/// Who reads a section, which decides what its rows must carry.
#[derive(Debug, Clone)]
pub(crate) enum SectionRead {
    /// A query's scan: a run read without a merge decodes only the output's columns (the key
    /// of a compacted table is not decoded unless the query selects it), and rows need not
    /// come in key order. `newer`: how a piece of a section cut over a dense oldest run reads
    /// the newer runs (`parallel`), and `memory` holds what such a piece reads ahead.
    Query {
        newer: NewerRuns,
        memory: Arc<dyn MemoryPool>,
    },
    /// A diff's state: every layout column (a diff compares them all), in key order.
    Diff,
}

/// One section: a single run is read as is (minus retracts); several runs are merged.
pub(crate) fn section_stream(
    ctx: &Arc<ScanContext>,
    dir: &str,
    key_range: Option<Arc<KeyRange>>,
    runs: Vec<Vec<SplitFile>>,
    batch_size: usize,
    read: SectionRead,
    metrics: &ScanMetrics,
) -> Result<SendableRecordBatchStream> {
    let layout = &ctx.layout;
    // no older version of a key can resurface in a read without merge: its rows may be
    // filtered in the reader
    let unmerged_read = || RunRead {
        only_fields: match read {
            SectionRead::Diff => None,
            SectionRead::Query { .. } => Some(output_fields(ctx)),
        },
        ..RunRead::unmerged()
    };
    if !layout.with_system_columns && runs.len() > 1 {
        // Append table with data evolution: the files of a row-id group, stitched.
        let only_fields = match read {
            SectionRead::Diff => None,
            SectionRead::Query { .. } => Some(output_fields(ctx)),
        };
        return Ok(super::evolution::group_stream(
            ctx,
            dir,
            runs,
            batch_size,
            only_fields,
            metrics,
        ));
    }
    if !layout.with_system_columns {
        // Append table: every file is its own section; nothing to merge or drop.
        let files = runs.into_iter().flatten().collect();
        return Ok(run_stream(
            ctx,
            dir,
            key_range,
            files,
            batch_size,
            unmerged_read(),
            metrics,
        ));
    }
    let (newer, memory) = match &read {
        SectionRead::Query { newer, memory } => (newer.clone(), Some(memory)),
        SectionRead::Diff => (NewerRuns::InRange, None),
    };
    // (a piece holding the newer runs only marks their keys, even of a single run)
    if runs.len() == 1 && !matches!(newer, NewerRuns::Only(_)) {
        let files = runs.into_iter().next().expect("one run");
        // A diff's state of one run is read while the other state is merged: the longest
        // task of the diff, so its files decode on two cores.
        let read = RunRead {
            dense_keys: true,
            side_by_side: matches!(read, SectionRead::Diff),
            ..unmerged_read()
        };
        let stream = run_stream(ctx, dir, key_range, files, batch_size, read, metrics);
        return Ok(if ctx.keep_retracts {
            stream
        } else {
            drop_retracts_stream(
                stream,
                layout.kind_index(),
                metrics.merge.retracts_dropped.clone(),
            )
        });
    }
    metrics.runs_merged.add(runs.len());
    let merged_files = format!("{} of {dir}", describe_files(&runs));
    // In lookup mode every run is one level (`split::level_runs`).
    let run_levels: Option<Vec<i32>> = ctx
        .lookup_read
        .then(|| runs.iter().map(|r| r.first().map_or(0, |f| f.level)).collect());
    // Deduplicate reads a key's sequence numbers only to find its newest record, which the
    // order of the runs tells as well when each run's numbers all lie above the previous run's
    // (a newer run wins a tie): then the column is not decoded.
    let deduplicate = ctx.engine.as_ref().and_then(|e| match e.kind {
        EngineKind::Deduplicate { ignore_delete } => Some(ignore_delete),
        _ => None,
    });
    let (runs, need_sequence) = match deduplicate.is_some() && run_levels.is_none() {
        true => match in_sequence_order(runs) {
            Ok(ordered) => (ordered, false),
            Err(runs) => (runs, true),
        },
        false => (runs, true),
    };
    // Runs in sequence order and a reader that needs no key order: a record survives unless a
    // newer run holds its key (`merge::newest_of_ordered_runs`). `ignore-delete` lets an older
    // record win over a newer retraction: merged.
    let newest_run_wins = matches!(read, SectionRead::Query { .. })
        && deduplicate == Some(false)
        && !need_sequence
        && runs.len() <= MAX_UNORDERED_RUNS;
    // A piece holding the newer runs only reads them over an empty oldest run, in the span of
    // its section's board.
    let mut runs = runs;
    let dense_base = match &newer {
        NewerRuns::Only(board) => {
            runs.insert(0, Vec::new());
            newest_run_wins.then(|| board.span())
        }
        _ => newest_run_wins
            .then(|| dense_span(ctx, &runs[0], key_range.as_deref()))
            .flatten(),
    };
    if !matches!(newer, NewerRuns::InRange) && dense_base.is_none() {
        return Err(datafusion::common::internal_datafusion_err!(
            "a piece of {dir} cut over a dense oldest run is not read over it"
        ));
    }
    // How a read over a dense oldest run reads its newer runs, and on which board it marks
    // their keys: the piece's section's, or one of its own. A piece reading them for their keys
    // finds each run on the board by its sequence numbers (it may hold only some of its files).
    let dense_read = match (&dense_base, &newer) {
        (None, _) => None,
        (Some(_), NewerRuns::Whole(board) | NewerRuns::Only(board)) => {
            Some(NewerRead::Whole(Arc::clone(board)))
        }
        (Some(_), NewerRuns::KeysOnly(board)) => {
            let on_board = runs[1..]
                .iter()
                .map(|files| {
                    let seq = files.first().map_or(i64::MIN, |f| f.min_sequence_number);
                    board.run_of(seq).ok_or_else(|| {
                        datafusion::common::internal_datafusion_err!(
                            "a newer run of {dir} is not on its section's board"
                        )
                    })
                })
                .collect::<Result<Vec<usize>>>()?;
            let memory = memory.ok_or_else(|| {
                datafusion::common::internal_datafusion_err!("a piece of {dir} is read outside a query")
            })?;
            let deferral = MemoryConsumer::new(format!("PaimonScan[{dir}] base read ahead of newer keys"))
                .register(memory);
            Some(NewerRead::KeysOnly {
                board: Arc::clone(board),
                runs: on_board,
                deferral,
            })
        }
        (Some(span), NewerRuns::InRange) => {
            let seqs = runs[1..].iter().map(|r| run_sequences(r)).collect();
            Some(NewerRead::Whole(Arc::new(NewerKeys::new(span.clone(), seqs)?)))
        }
    };
    if let (Some(read), Some(memory)) = (&dense_read, memory) {
        read.board().charge(memory);
    }
    let streams: Vec<SendableRecordBatchStream> = runs
        .into_iter()
        .enumerate()
        .map(|(run, files)| {
            // the oldest run is read in the piece's range; the newer runs as the piece says
            let (range, read) = match (run, &newer) {
                (0, _) | (_, NewerRuns::InRange) => (key_range.clone(), RunRead::for_merge(need_sequence)),
                (_, NewerRuns::Whole(_) | NewerRuns::Only(_)) => (None, RunRead::for_merge(need_sequence)),
                (_, NewerRuns::KeysOnly(_)) => (
                    key_range.clone(),
                    RunRead {
                        only_fields: Some(ctx.key_indices.clone().into()),
                        ..RunRead::for_merge(need_sequence)
                    },
                ),
            };
            let stream = run_stream(ctx, dir, range, files, batch_size, read, metrics);
            match (run, &newer) {
                // read on demand, only as far as the board lacks their keys
                (1.., NewerRuns::KeysOnly(_)) => stream,
                _ => decoded_ahead(stream, RUN_DECODE_AHEAD),
            }
        })
        .collect();
    let options = MergeOptions {
        key_columns: ctx.key_indices.clone(),
        seq_column: layout.seq_index(),
        kind_column: layout.kind_index(),
        keep_retracts: ctx.keep_retracts,
        batch_size,
    };
    let merged = match &ctx.engine {
        Some(_) if newest_run_wins => {
            // A query reads the output's columns of the merged rows (`shape_output`), and their
            // kinds where the view shows or keeps them.
            let mut read_columns = ctx.output_columns.clone();
            if ctx.with_rowkind || ctx.keep_retracts {
                read_columns.push(layout.kind_index());
            }
            match dense_base.zip(dense_read) {
                Some((span, read)) => {
                    let mut newer_runs = streams;
                    let base = newer_runs.remove(0);
                    newest_over_dense_base(
                        Arc::clone(&layout.schema),
                        base,
                        span,
                        newer_runs,
                        read,
                        options,
                        metrics.merge.clone(),
                        Some(&read_columns),
                    )?
                }
                None => newest_of_ordered_runs(
                    Arc::clone(&layout.schema),
                    streams,
                    options,
                    metrics.merge.clone(),
                    Some(&read_columns),
                )?,
            }
        }
        Some(engine) => merge_runs(
            Arc::clone(&layout.schema),
            streams,
            options,
            metrics.merge.clone(),
            engine,
            run_levels,
        )?,
        None => merge_sorted_runs(
            Arc::clone(&layout.schema),
            streams,
            options,
            metrics.merge.clone(),
        )?,
    };
    // The merge finds damage no file reader sees (a run out of key order): say which files.
    let merged = merged.map_err(move |e| e.context(format!("merging {merged_files}")));
    Ok(Box::pin(RecordBatchStreamAdapter::new(
        Arc::clone(&layout.schema),
        merged,
    )))
}

/// The keys of `run`, the oldest run of a section, when every one of its files holds dense keys
/// ([`DenseKey`]) and together they span few more keys than rows: the bitmap of
/// [`newest_over_dense_base`] then costs at most a few bits a row. Within `range`, if given.
fn dense_span(ctx: &ScanContext, run: &[SplitFile], range: Option<&KeyRange>) -> Option<RangeInclusive<i64>> {
    let &[key] = ctx.key_indices.as_slice() else {
        return None;
    };
    let field_id = ctx.layout.fields[key].id;
    let (mut lo, mut hi, mut rows) = (i64::MAX, i64::MIN, 0i64);
    for file in run {
        let dense = DenseKey::of_file(field_id, &file.min_key, &file.max_key, file.row_count)?;
        lo = lo.min(dense.first);
        hi = hi.max(dense.first + (file.row_count - 1));
        rows += file.row_count;
    }
    if let Some((lower, upper)) = range.map(KeyRange::integer_bounds) {
        (lo, hi) = (lo.max(lower), hi.min(upper));
    }
    let width = (hi as i128 - lo as i128 + 1).max(0) as u64;
    (rows > 0 && lo <= hi && width <= 2 * rows as u64 + 1024 && width <= MAX_DENSE_BASE_SPAN)
        .then_some(lo..=hi)
}

/// The runs of a section of a query's scan, oldest first, and the key span of the oldest
/// (within `range`, if given), when [`section_stream`] reads them over a dense oldest run
/// ([`newest_over_dense_base`]): a `deduplicate` table without `ignore-delete`, runs in
/// sequence order, the oldest dense. Planning cuts such a section into pieces that read the
/// newer runs unevenly (`parallel`), and checks each piece with it.
pub(crate) fn dense_base_runs(
    ctx: &ScanContext,
    runs: &[Vec<SplitFile>],
    range: Option<&KeyRange>,
) -> Option<(Vec<Vec<SplitFile>>, RangeInclusive<i64>)> {
    let deduplicate = ctx
        .engine
        .as_ref()
        .is_some_and(|e| matches!(e.kind, EngineKind::Deduplicate { ignore_delete: false }));
    if !deduplicate || ctx.lookup_read || runs.len() < 2 || runs.len() > MAX_UNORDERED_RUNS {
        return None;
    }
    let ordered = in_sequence_order(runs.to_vec()).ok()?;
    let span = dense_span(ctx, &ordered[0], range)?;
    Some((ordered, span))
}

/// The layout fields the output of a read without merge needs. An append table always
/// decodes one at least: a batch of no columns would lose its row count.
fn output_fields(ctx: &ScanContext) -> Arc<[usize]> {
    let mut fields: Vec<usize> = ctx
        .output_columns
        .iter()
        .copied()
        .filter(|i| *i < ctx.layout.fields.len())
        .collect();
    if fields.is_empty() && !ctx.layout.with_system_columns && !ctx.layout.fields.is_empty() {
        fields.push(0);
    }
    fields.into()
}

/// Batches a merged run may decode ahead of the merge.
const RUN_DECODE_AHEAD: usize = 2;

/// `run` decoded on a task of its own, at most `ahead` batches ahead of its reader: the runs
/// of one section then fetch and decode on every core while one partition merges them (a
/// one-bucket table, or a key range too narrow to cut, is one partition), and a compaction's
/// files decode while it merges and encodes.
pub(crate) fn decoded_ahead(mut run: SendableRecordBatchStream, ahead: usize) -> SendableRecordBatchStream {
    let schema = run.schema();
    let mut builder = RecordBatchReceiverStream::builder(schema, ahead);
    let tx = builder.tx();
    builder.spawn(async move {
        while let Some(batch) = run.next().await {
            let failed = batch.is_err();
            // the merge stopped reading (a LIMIT, an error elsewhere): stop decoding
            if tx.send(batch).await.is_err() || failed {
                break;
            }
        }
        Ok(())
    });
    builder.build()
}

/// The runs ordered by sequence number when their ranges of sequence numbers do not overlap
/// (every number of a run above every number of the runs before it); else the runs as given.
fn in_sequence_order(
    runs: Vec<Vec<SplitFile>>,
) -> std::result::Result<Vec<Vec<SplitFile>>, Vec<Vec<SplitFile>>> {
    let ranges: Vec<(i64, i64)> = runs
        .iter()
        .map(|run| {
            let min = run
                .iter()
                .map(|f| f.min_sequence_number)
                .min()
                .unwrap_or(i64::MAX);
            let max = run
                .iter()
                .map(|f| f.max_sequence_number)
                .max()
                .unwrap_or(i64::MIN);
            (min, max)
        })
        .collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|i| ranges[*i]);
    if !order.windows(2).all(|w| ranges[w[0]].1 < ranges[w[1]].0) {
        return Err(runs);
    }
    let mut runs: Vec<Option<Vec<SplitFile>>> = runs.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .map(|i| runs[i].take().expect("each run once"))
        .collect())
}

/// "data files a, b (run 0), c (run 1)" for error messages, at most 8 names.
fn describe_files(runs: &[Vec<SplitFile>]) -> String {
    const SHOWN: usize = 8;
    let total: usize = runs.iter().map(Vec::len).sum();
    let mut parts = Vec::new();
    let mut shown = 0;
    for (i, run) in runs.iter().enumerate() {
        let names: Vec<&str> = run
            .iter()
            .take(SHOWN.saturating_sub(shown))
            .map(|f| f.file_name.as_str())
            .collect();
        if names.is_empty() {
            break;
        }
        shown += names.len();
        parts.push(format!("{} (run {i})", names.join(", ")));
    }
    let more = if total > shown {
        format!(" and {} more", total - shown)
    } else {
        String::new()
    };
    format!("data files {}{more}", parts.join(", "))
}

/// Projects a merged batch to the output schema, adding `rowkind` for `$audit_log` and
/// `$binlog`, and wrapping each value in a one-element array for `$binlog`.
pub(crate) fn shape_output(ctx: &ScanContext, batch: &RecordBatch) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(ctx.output_schema.fields().len());
    if ctx.with_rowkind {
        let kinds = match ctx.layout.with_system_columns {
            true => batch
                .column(ctx.layout.kind_index())
                .as_primitive::<Int8Type>()
                .values(),
            false => &[][..],
        };
        // (an append table's rows are all inserts)
        let inserts = kinds
            .iter()
            .fold(true, |all, &kind| all & (kind == row_kind::INSERT));
        let kinds = match inserts {
            true => inserts_rowkind(batch.num_rows()),
            false => rowkind_strings(kinds.iter().copied()),
        };
        columns.push(kinds);
    }
    for i in &ctx.output_columns {
        let column = &output_typed(ctx, *i, batch.column(*i))?;
        columns.push(if ctx.lists {
            single_value_lists(column)
        } else {
            Arc::clone(column)
        });
    }
    if ctx.with_snapshot_id {
        columns.push(Arc::clone(batch.column(batch.num_columns() - 1)));
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(&ctx.output_schema),
        columns,
        &options,
    )?)
}

/// Layout column `i` in the table's type: a string read as a view
/// (`ReadLayout::with_string_views`) is output as the table's strings.
fn output_typed(ctx: &ScanContext, i: usize, column: &ArrayRef) -> Result<ArrayRef> {
    match column.data_type() {
        ArrowType::Utf8View => Ok(arrow::compute::cast(
            column,
            &ctx.layout.fields[i].data_type.to_arrow(),
        )?),
        _ => Ok(Arc::clone(column)),
    }
}

/// The `rowkind` column of `rows` inserts. Most batches of a `$audit_log` scan hold inserts
/// only (a table's rows as written): they slice one column built once for the process instead
/// of writing their own (12 bytes a row). It holds one default batch (8,192 rows, 48 KiB), as
/// an operator that keeps batches counts a slice's whole buffers: no more than a batch's own.
fn inserts_rowkind(rows: usize) -> ArrayRef {
    const SHARED_ROWS: usize = 8192;
    static SHARED: std::sync::OnceLock<ArrayRef> = std::sync::OnceLock::new();
    if rows > SHARED_ROWS {
        return rowkind_strings(std::iter::repeat_n(row_kind::INSERT, rows));
    }
    SHARED
        .get_or_init(|| rowkind_strings(std::iter::repeat_n(row_kind::INSERT, SHARED_ROWS)))
        .slice(0, rows)
}

/// The `rowkind` column (`+I`, `-U`, `+U`, `-D`) for stored row kinds.
///
/// Every name is two bytes, so the offsets are `0, 2, 4, ...` and the values are written
/// straight into one buffer: no per-row builder call (a `$audit_log` scan makes one per row).
pub(crate) fn rowkind_strings(kinds: impl Iterator<Item = i8>) -> ArrayRef {
    // `row_kind::short_string` by kind (0..=3; any other reads as `+I`), as a table: one load
    // a row instead of a match and a slice copy
    const NAMES: [[u8; 2]; 4] = [*b"+I", *b"-U", *b"+U", *b"-D"];
    let pairs: Vec<[u8; 2]> = kinds
        .map(|kind| NAMES.get(kind as u8 as usize).copied().unwrap_or(NAMES[0]))
        .collect();
    let rows = pairs.len();
    let values = pairs.into_flattened();
    let offsets = OffsetBuffer::new((0..=rows as i32).map(|i| i * 2).collect::<ScalarBuffer<i32>>());
    // SAFETY: the values are the ASCII names of `short_string`, two bytes each, and the offsets
    // step by two: valid UTF-8 cut at character boundaries (checking it cost a `$audit_log`
    // scan 2% of its time).
    Arc::new(unsafe { StringArray::new_unchecked(offsets, Buffer::from_vec(values), None) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(names_and_seqs: &[(&str, i64, i64)]) -> Vec<SplitFile> {
        names_and_seqs
            .iter()
            .map(|(name, min, max)| SplitFile::with_sequences(name, *min, *max))
            .collect()
    }

    fn names(runs: &[Vec<SplitFile>]) -> Vec<Vec<&str>> {
        runs.iter()
            .map(|r| r.iter().map(|f| f.file_name.as_str()).collect())
            .collect()
    }

    #[test]
    fn rowkind_strings_name_every_kind() {
        let kinds = [0i8, 1, 2, 3, 0];
        let names = rowkind_strings(kinds.into_iter());
        let names = names.as_string::<i32>();
        let names: Vec<&str> = names.iter().map(|n| n.expect("no nulls")).collect();
        assert_eq!(names, ["+I", "-U", "+U", "-D", "+I"]);
        assert_eq!(rowkind_strings(std::iter::empty()).len(), 0);
        // the table agrees with `row_kind::short_string` for every stored value
        let all = rowkind_strings(i8::MIN..=i8::MAX);
        let all = all.as_string::<i32>();
        for (kind, name) in (i8::MIN..=i8::MAX).zip(all.iter()) {
            assert_eq!(name, Some(row_kind::short_string(kind)), "kind {kind}");
        }
    }

    /// A batch of inserts slices the shared column, up to its length, and builds its own past it.
    #[test]
    fn insert_rowkinds_slice_one_shared_column() {
        for rows in [0, 1, 5, 8192, 8193] {
            let shared = inserts_rowkind(rows);
            let built = rowkind_strings(std::iter::repeat_n(row_kind::INSERT, rows));
            assert_eq!(shared.as_ref(), built.as_ref(), "{rows} rows");
        }
        let (a, b) = (inserts_rowkind(3), inserts_rowkind(7));
        assert_eq!(
            a.to_data().buffers()[1].as_ptr(),
            b.to_data().buffers()[1].as_ptr()
        );
    }

    #[test]
    fn runs_with_disjoint_sequence_ranges_are_ordered_by_them() {
        // a level run of two files (0..9, 20..29) and two newer level-0 files
        let runs = vec![
            run(&[("l0-b", 40, 41)]),
            run(&[("top-1", 0, 9), ("top-2", 20, 29)]),
            run(&[("l0-a", 30, 35)]),
        ];
        let ordered = in_sequence_order(runs).expect("disjoint");
        assert_eq!(
            names(&ordered),
            vec![vec!["top-1", "top-2"], vec!["l0-a"], vec!["l0-b"]]
        );

        // 30..35 falls inside the level run's 0..39: sequence numbers decide, order unchanged
        let runs = vec![
            run(&[("top-1", 0, 9), ("top-2", 20, 39)]),
            run(&[("l0-a", 30, 35)]),
        ];
        let same = in_sequence_order(runs).expect_err("overlapping");
        assert_eq!(names(&same), vec![vec!["top-1", "top-2"], vec!["l0-a"]]);

        // equal numbers in two runs are an overlap too
        let runs = vec![run(&[("a", 5, 5)]), run(&[("b", 5, 6)])];
        assert!(in_sequence_order(runs).is_err());
    }
}
