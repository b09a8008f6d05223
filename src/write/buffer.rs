//! The write buffer of one (partition, bucket): rows in arrival order with their sequence
//! numbers and kinds, sorted by key and folded per key (deduplicate: the last record wins)
//! when flushed into one level-0 file.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch, UInt32Array};
use arrow::compute::{concat, concat_batches, take_record_batch};
use arrow::row::{RowConverter, SortField};
use datafusion::common::Result;

use crate::io::DataFileRows;

/// Buffered rows of one bucket.
#[derive(Debug)]
pub(crate) struct BucketBuffer {
    batches: Vec<RecordBatch>,
    seqs: Vec<ArrayRef>,
    kinds: Vec<ArrayRef>,
    rows: usize,
    bytes: usize,
}

impl BucketBuffer {
    pub(crate) fn new() -> Self {
        BucketBuffer {
            batches: vec![],
            seqs: vec![],
            kinds: vec![],
            rows: 0,
            bytes: 0,
        }
    }

    pub(crate) fn push(&mut self, batch: RecordBatch, seqs: Int64Array, kinds: Int8Array) {
        self.rows += batch.num_rows();
        self.bytes +=
            batch.get_array_memory_size() + seqs.get_array_memory_size() + kinds.get_array_memory_size();
        self.batches.push(batch);
        self.seqs.push(Arc::new(seqs));
        self.kinds.push(Arc::new(kinds));
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Takes the buffered rows, leaving the buffer empty.
    pub(crate) fn take(&mut self) -> BucketBuffer {
        std::mem::replace(self, BucketBuffer::new())
    }

    /// Rows for a primary-key file: sorted by key, one row per key (the newest record).
    pub(crate) fn into_pk_rows(self, key_columns: &[usize]) -> Result<Option<DataFileRows>> {
        let Some(first) = self.batches.first() else {
            return Ok(None);
        };
        let values = concat_batches(&first.schema(), &self.batches)?;
        let seq_refs: Vec<&dyn Array> = self.seqs.iter().map(|a| a.as_ref()).collect();
        let kind_refs: Vec<&dyn Array> = self.kinds.iter().map(|a| a.as_ref()).collect();
        let seqs = concat(&seq_refs)?;
        let kinds = concat(&kind_refs)?;
        let converter = RowConverter::new(
            key_columns
                .iter()
                .map(|i| SortField::new(values.column(*i).data_type().clone()))
                .collect(),
        )?;
        let keys = converter.convert_columns(
            &key_columns
                .iter()
                .map(|i| Arc::clone(values.column(*i)))
                .collect::<Vec<_>>(),
        )?;
        // Arrival order is sequence order, so a stable sort by key leaves each key's records
        // oldest first; the last of each run of equal keys wins.
        let mut order: Vec<u32> = (0..values.num_rows() as u32).collect();
        order.sort_by(|a, b| keys.row(*a as usize).cmp(&keys.row(*b as usize)));
        let winners: Vec<u32> = order
            .iter()
            .enumerate()
            .filter(|(pos, idx)| {
                order
                    .get(pos + 1)
                    .is_none_or(|next| keys.row(*next as usize) != keys.row(**idx as usize))
            })
            .map(|(_, idx)| *idx)
            .collect();
        let indices = UInt32Array::from(winners);
        let values = take_record_batch(&values, &indices)?;
        let seqs = arrow::compute::take(&seqs, &indices, None)?;
        let kinds = arrow::compute::take(&kinds, &indices, None)?;
        let seqs = seqs
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("sequence numbers are Int64")
            .clone();
        let kinds = kinds
            .as_any()
            .downcast_ref::<Int8Array>()
            .expect("row kinds are Int8")
            .clone();
        Ok(Some(DataFileRows {
            values,
            kv: Some((seqs, kinds)),
        }))
    }

    /// Rows for an append file, in arrival order.
    pub(crate) fn into_append_rows(self) -> Result<Option<DataFileRows>> {
        let Some(first) = self.batches.first() else {
            return Ok(None);
        };
        let values = concat_batches(&first.schema(), &self.batches)?;
        Ok(Some(DataFileRows { values, kv: None }))
    }
}
