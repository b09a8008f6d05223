//! Deduplicate over a dense oldest run (the base: keys `lo, lo + 1, …, hi` in row order, as a
//! bulk load of ids writes them), for reads that need no key order.
//!
//! ```text
//! newer runs ──► tap: each key in lo..=hi sets its bit of `shadowed` ──► newest_of_ordered_runs
//!                                                      (their survivors, which come out first)
//! base run   ──► once the newer runs are spent: a row survives unless its key's bit is set
//!                (64 rows a word, from the bitmap as it is) ──► one filter kernel per batch
//! ```
//!
//! The base is the oldest run, so it shadows nothing: the newer runs' survivors are those of a
//! merge of the newer runs alone. A base row survives unless a newer run holds its key, newer
//! retractions included. The base's keys are never compared one by one: a batch of consecutive
//! keys (every batch, unless a deletion vector or a filter left gaps) is a slice of the bitmap.
//! The bitmap takes one bit per key of the base's span.

use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::array::{ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, Int8Type, SchemaRef};
use datafusion::common::{exec_datafusion_err, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{StreamExt, TryStreamExt};

use super::shadow::Keep;
use super::{newest_of_ordered_runs, Placeholders};
use crate::merge::{MergeMetrics, MergeOptions};

/// The largest span of base keys given a bitmap (64 Mi keys: 8 MiB).
pub(crate) const MAX_SPAN: u64 = 1 << 26;

/// Keeps, for every key, its record in the newest run that holds it, as
/// [`newest_of_ordered_runs`] does for `base` followed by `newer`, where `base` is the oldest
/// run and every key of it lies in `span` (the caller knows it from the files' statistics).
/// Output: the newer runs' survivors (unless not `emit_newer`: another reader outputs them,
/// and they only mask this base), then the base's, not in key order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn newest_over_dense_base(
    schema: SchemaRef,
    base: SendableRecordBatchStream,
    span: RangeInclusive<i64>,
    newer: Vec<SendableRecordBatchStream>,
    emit_newer: bool,
    options: MergeOptions,
    metrics: MergeMetrics,
    read_columns: Option<&[usize]>,
) -> Result<SendableRecordBatchStream> {
    let &[key] = options.key_columns.as_slice() else {
        return Err(exec_datafusion_err!("a dense base run needs a single key column"));
    };
    let (lo, hi) = (*span.start(), *span.end());
    let width = hi
        .checked_sub(lo)
        .map(|w| w as u64 + 1)
        .filter(|w| *w <= MAX_SPAN);
    let Some(width) = width else {
        return Err(exec_datafusion_err!(
            "dense base run of keys {lo}..={hi}: span too wide"
        ));
    };
    let shadowed = Arc::new(Mutex::new(vec![0u64; width.div_ceil(64) as usize]));
    // every record of a newer run shadows the base's record of its key, whatever its kind
    let tapped: Vec<SendableRecordBatchStream> = newer
        .into_iter()
        .map(|run| {
            let schema = run.schema();
            let shadowed = Arc::clone(&shadowed);
            let marked = run.and_then(move |batch| {
                let marked = integer_keys(&batch, key)
                    .map(|keys| mark(&mut shadowed.lock().expect("shadow bitmap"), &keys, lo, hi));
                futures::future::ready(marked.map(|()| batch))
            });
            Box::pin(RecordBatchStreamAdapter::new(schema, marked)) as SendableRecordBatchStream
        })
        .collect();
    let newer = match emit_newer {
        true => newest_of_ordered_runs(
            Arc::clone(&schema),
            tapped,
            options.clone(),
            metrics.clone(),
            read_columns,
        )?,
        // read to the end for their keys, one run after another (each decodes ahead)
        false => {
            let drained = futures::stream::iter(tapped)
                .flatten()
                .try_filter_map(|_| futures::future::ready(Ok(None)));
            Box::pin(RecordBatchStreamAdapter::new(Arc::clone(&schema), drained))
        }
    };
    let mut placeholders = Placeholders::new(&schema, read_columns);
    let keep_retracts = options.keep_retracts;
    // (`chain` polls the base only once the newer runs are spent: the bitmap is complete)
    let base = base
        .map(move |batch| {
            let batch = batch?;
            let start = Instant::now();
            let rows = batch.num_rows();
            let keys = integer_keys(&batch, key)?;
            let keys = keys.as_primitive::<Int64Type>().values();
            let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
                return Ok(None);
            };
            let bits = shadowed.lock().expect("shadow bitmap");
            let mut keep = match last.checked_sub(first) == Some(rows as i64 - 1) {
                // consecutive keys (a sorted run repeats none): a slice of the bitmap
                true if first >= lo && last <= hi => Keep::unshadowed_run(&bits, (first - lo) as u64, rows),
                _ => {
                    if let Some(stray) = keys.iter().find(|k| !span.contains(k)) {
                        return Err(exec_datafusion_err!(
                            "the dense oldest run holds key {stray}, outside its files' key range {lo}..={hi}"
                        ));
                    }
                    Keep::unshadowed_keys(&bits, keys.iter().map(|k| (k - lo) as u64))
                }
            };
            drop(bits);
            let survivors = keep.count();
            if !keep_retracts {
                let kinds = batch.column(options.kind_column).as_primitive::<Int8Type>();
                keep.drop_retracts(kinds.values());
            }
            let kept = keep.count();
            metrics.input_rows.add(rows);
            metrics.rows_merged_away.add(rows - survivors);
            metrics.retracts_dropped.add(survivors - kept);
            metrics.output_rows.add(kept);
            let out = match kept {
                0 => None,
                _ => Some(placeholders.filter_rows(&batch, keep, kept)?),
            };
            metrics.merge_time.add_elapsed(start);
            Ok(out)
        })
        .try_filter_map(|batch| futures::future::ready(Ok(batch)));
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, newer.chain(base))))
}

/// The key column of `batch` as Int64 (an integer key of any width).
fn integer_keys(batch: &RecordBatch, key: usize) -> Result<ArrayRef> {
    let column = batch.column(key);
    if column.null_count() > 0 {
        return Err(exec_datafusion_err!("a primary key column holds NULL"));
    }
    Ok(cast(column, &DataType::Int64)?)
}

/// Sets the bit of every key of `keys` (Int64) that lies in `lo..=hi`.
fn mark(bits: &mut [u64], keys: &ArrayRef, lo: i64, hi: i64) {
    for &key in keys.as_primitive::<Int64Type>().values() {
        if key >= lo && key <= hi {
            let at = (key - lo) as u64;
            bits[(at / 64) as usize] |= 1 << (at % 64);
        }
    }
}
