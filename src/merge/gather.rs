//! Rows of a big buffer gathered in a new order, a column per core.
//!
//! The write buffer and compaction chunks hold their rows as many batches; a sorted file needs
//! them as one batch in key order. Per column, the pieces are concatenated and then taken in
//! the new order: two tight copies (a gather straight from many batches, `interleave`, costs
//! an indirection per value and is slower than both together). Columns are independent, so
//! they are spread over the cores, and each column's concatenation is freed as soon as it
//! has been taken.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat, take};
use datafusion::common::Result;

/// Rows below this are gathered on the calling thread.
const PARALLEL_GATHER_MIN_ROWS: usize = 64 * 1024;

/// The rows `indices` of `batches` (row `i` of them all is row `i - start` of the batch it
/// falls in, counting the batches one after another), in that order, as one batch with the
/// first batch's schema. At least one batch.
pub(crate) fn gather(batches: &[&RecordBatch], indices: Vec<u32>) -> Result<RecordBatch> {
    let schema = batches[0].schema();
    let indices = UInt32Array::from(indices);
    let column = |c: usize| -> Result<ArrayRef> {
        let pieces: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
        let whole = if pieces.len() == 1 {
            take(pieces[0], &indices, None)?
        } else {
            take(concat(&pieces)?.as_ref(), &indices, None)?
        };
        Ok(whole)
    };
    let count = schema.fields().len();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(count);
    let columns: Vec<ArrayRef> = if threads <= 1 || indices.len() < PARALLEL_GATHER_MIN_ROWS {
        (0..count).map(column).collect::<Result<_>>()?
    } else {
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<Option<Result<ArrayRef>>>> = Mutex::new((0..count).map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= count {
                        break;
                    }
                    let result = column(c);
                    done.lock().unwrap_or_else(|e| e.into_inner())[c] = Some(result);
                });
            }
        });
        done.into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .map(|c| c.expect("every column is gathered"))
            .collect::<Result<_>>()?
    };
    Ok(RecordBatch::try_new(schema, columns)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::compute::{concat_batches, take_record_batch};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn gathers_like_a_take_of_the_concatenation() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = |from: i64, rows: i64| {
            let s: StringArray = (from..from + rows)
                .map(|i| (i % 7 != 0).then(|| format!("v{i}")))
                .collect();
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Int64Array::from_iter_values(from..from + rows)),
                    Arc::new(s),
                ],
            )
            .unwrap()
        };
        // small (one thread) and big (every core), with one batch and with several
        for sizes in [vec![10], vec![3, 0, 9, 5], vec![70_000], vec![40_000, 1, 50_000]] {
            let mut from = 0;
            let batches: Vec<RecordBatch> = sizes
                .iter()
                .map(|&n| {
                    let b = batch(from, n);
                    from += n;
                    b
                })
                .collect();
            let total = from as u32;
            let indices: Vec<u32> = (0..total).map(|i| (i * 7919) % total).rev().collect();
            let refs: Vec<&RecordBatch> = batches.iter().collect();
            let expected = take_record_batch(
                &concat_batches(&schema, &batches).unwrap(),
                &UInt32Array::from(indices.clone()),
            )
            .unwrap();
            assert_eq!(gather(&refs, indices).unwrap(), expected);
        }
    }
}
