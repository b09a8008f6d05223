//! Output assembly: a store of input batches plus `(batch, row)` indices, turned into output
//! batches with `interleave`.

use arrow::array::RecordBatch;
use arrow::compute::interleave_record_batch;
use datafusion::common::Result;

#[derive(Debug)]
pub(super) struct OutputBuilder {
    /// Input batches that are either the current batch of a cursor or referenced by `indices`.
    batches: Vec<RecordBatch>,
    /// `(index into batches, row)` of every output row of the batch being built.
    indices: Vec<(usize, usize)>,
    batch_size: usize,
}

impl OutputBuilder {
    pub(super) fn new(batch_size: usize) -> Self {
        Self {
            batches: Vec::new(),
            indices: Vec::with_capacity(batch_size),
            batch_size,
        }
    }

    /// Stores an input batch; returns its index.
    pub(super) fn push_batch(&mut self, batch: RecordBatch) -> usize {
        self.batches.push(batch);
        self.batches.len() - 1
    }

    #[inline]
    pub(super) fn push_row(&mut self, batch: usize, row: usize) {
        self.indices.push((batch, row));
    }

    #[inline]
    pub(super) fn push_range(&mut self, batch: usize, start: usize, end: usize) {
        self.indices.extend((start..end).map(|row| (batch, row)));
    }

    /// Rows that still fit into the batch being built.
    #[inline]
    pub(super) fn capacity(&self) -> usize {
        self.batch_size.saturating_sub(self.indices.len())
    }

    #[inline]
    pub(super) fn is_full(&self) -> bool {
        self.indices.len() >= self.batch_size
    }

    /// Number of stored input batches (for tests and memory checks).
    #[cfg(test)]
    pub(super) fn stored_batches(&self) -> usize {
        self.batches.len()
    }

    /// Builds the pending output rows into a batch (`None` if there are none) and releases every
    /// stored input batch that no live cursor still reads. `live` yields the `batch` field of
    /// every live cursor; each is renumbered to the batch's new index. Live cursors must
    /// reference pairwise distinct batches.
    pub(super) fn build<'a>(
        &mut self,
        live: impl Iterator<Item = &'a mut usize>,
    ) -> Result<Option<RecordBatch>> {
        let output = match self.indices.first() {
            None => None,
            Some(&(first_batch, first_row)) => {
                let contiguous = self
                    .indices
                    .iter()
                    .enumerate()
                    .all(|(i, &(b, r))| b == first_batch && r == first_row + i);
                let batch = if contiguous {
                    self.batches[first_batch].slice(first_row, self.indices.len())
                } else {
                    let refs: Vec<&RecordBatch> = self.batches.iter().collect();
                    interleave_record_batch(&refs, &self.indices)?
                };
                Some(batch)
            }
        };
        self.indices.clear();

        let mut old: Vec<Option<RecordBatch>> = self.batches.drain(..).map(Some).collect();
        for index in live {
            let batch = old[*index]
                .take()
                .expect("every live cursor references its own stored batch");
            *index = self.batches.len();
            self.batches.push(batch);
        }
        Ok(output)
    }
}
