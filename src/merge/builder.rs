//! Output assembly: a store of input batches plus `(batch, row)` indices, turned into output
//! batches.

use std::sync::Arc;

use arrow::array::{make_array, ArrayData, MutableArrayData, RecordBatch, RecordBatchOptions};
use arrow::compute::interleave_record_batch;
use datafusion::common::Result;

use super::engine::Candidate;
use super::reduce::{emitted, GroupReducer};

/// Marks an output index whose row is the result of a reduced group: `(GROUP, group number)`.
const GROUP: usize = usize::MAX;

/// How groups of records are turned into rows (engines that merge values).
#[derive(Debug)]
pub(super) struct GroupOutput {
    pub(super) reducer: Arc<dyn GroupReducer>,
    pub(super) kind_column: usize,
    pub(super) keep_retracts: bool,
}

/// Average length of the contiguous stretches (rows in a row of one input batch) from which
/// copying stretches with `MutableArrayData` beats gathering row by row with `interleave`.
/// Measured: at ~25 rows per stretch `interleave` still executes fewer instructions; at ~250,
/// copying needs a third less for the whole merge.
const MIN_AVERAGE_STRETCH: usize = 64;

#[derive(Debug)]
pub(super) struct OutputBuilder {
    /// Input batches that are either the current batch of a cursor or referenced by `indices`.
    batches: Vec<RecordBatch>,
    /// `(index into batches, row)` of every output row of the batch being built.
    indices: Vec<(usize, usize)>,
    batch_size: usize,
    min_average_stretch: usize,
    groups: Option<GroupOutput>,
    /// `(batch, row)` of the records of every pending group, group after group.
    group_members: Vec<(usize, usize)>,
    /// Group `g` is `group_members[group_offsets[g]..group_offsets[g + 1]]`.
    group_offsets: Vec<usize>,
}

impl OutputBuilder {
    pub(super) fn new(batch_size: usize, groups: Option<GroupOutput>) -> Self {
        Self {
            batches: Vec::new(),
            indices: Vec::with_capacity(batch_size),
            batch_size,
            min_average_stretch: MIN_AVERAGE_STRETCH,
            groups,
            group_members: Vec::new(),
            group_offsets: vec![0],
        }
    }

    /// Adds the row a group of records reduces to (computed when the batch is built).
    pub(super) fn push_group(&mut self, members: &[Candidate]) {
        self.indices.push((GROUP, self.group_offsets.len() - 1));
        self.group_members
            .extend(members.iter().map(|c| (c.batch, c.row)));
        self.group_offsets.push(self.group_members.len());
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
        let output = if self.group_offsets.len() > 1 {
            self.materialize_with_groups()?
        } else if self.indices.is_empty() {
            None
        } else {
            Some(self.materialize()?)
        };
        self.indices.clear();
        self.group_members.clear();
        self.group_offsets.truncate(1);

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

    /// Reduces the pending groups, then gathers the output rows from the stored batches plus
    /// the batch of group results. `None` if every row was a dropped group.
    fn materialize_with_groups(&mut self) -> Result<Option<RecordBatch>> {
        let output = self
            .groups
            .as_ref()
            .expect("groups are only pushed by engines that have a reducer");
        let refs: Vec<&RecordBatch> = self.batches.iter().collect();
        let gathered = interleave_record_batch(&refs, &self.group_members)?;
        let reduced = output.reducer.reduce(&gathered, &self.group_offsets)?;
        let emit = emitted(&reduced, output.kind_column, output.keep_retracts);
        let results = self.batches.len();
        let indices: Vec<(usize, usize)> = self
            .indices
            .iter()
            .filter(|&&(batch, row)| batch != GROUP || emit[row])
            .map(|&(batch, row)| {
                if batch == GROUP {
                    (results, row)
                } else {
                    (batch, row)
                }
            })
            .collect();
        if indices.is_empty() {
            return Ok(None);
        }
        self.batches.push(reduced.batch);
        let result = gather(&self.batches, &indices, self.min_average_stretch);
        self.batches.pop();
        result.map(Some)
    }

    /// Gathers the pending (non-empty) output rows. The merge emits rows mostly in contiguous
    /// stretches of one input batch: a single stretch is returned as a zero-copy slice, long
    /// stretches are copied range by range, short ones gathered row by row.
    fn materialize(&self) -> Result<RecordBatch> {
        gather(&self.batches, &self.indices, self.min_average_stretch)
    }
}

/// Gathers `indices` (`(batch, row)`, non-empty) from `batches`: a single stretch is returned
/// as a zero-copy slice, long stretches are copied range by range, short ones gathered row by
/// row.
fn gather(
    batches: &[RecordBatch],
    indices: &[(usize, usize)],
    min_average_stretch: usize,
) -> Result<RecordBatch> {
    let mut stretches: Vec<(usize, usize, usize)> = Vec::new(); // (batch, start, end)
    for &(batch, row) in indices {
        match stretches.last_mut() {
            Some((b, _, end)) if *b == batch && *end == row => *end += 1,
            _ => {
                stretches.push((batch, row, row + 1));
                if stretches.len().saturating_mul(min_average_stretch) > indices.len() {
                    let refs: Vec<&RecordBatch> = batches.iter().collect();
                    return Ok(interleave_record_batch(&refs, indices)?);
                }
            }
        }
    }
    if let [(batch, start, end)] = stretches[..] {
        return Ok(batches[batch].slice(start, end - start));
    }
    let schema = batches[indices[0].0].schema();
    let columns = (0..schema.fields().len())
        .map(|c| {
            let data: Vec<ArrayData> = batches.iter().map(|b| b.column(c).to_data()).collect();
            let mut out = MutableArrayData::new(data.iter().collect(), false, indices.len());
            for &(batch, start, end) in &stretches {
                out.try_extend(batch, start, end)?;
            }
            Ok(make_array(out.freeze()))
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(indices.len()));
    Ok(RecordBatch::try_new_with_options(schema, columns, &options)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::OutputBuilder;

    /// Interleaving, copying stretches and slicing must produce the same rows.
    #[test]
    fn all_gather_strategies_agree() -> datafusion::common::Result<()> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = |base: i64, n: i64| {
            let ints: Int64Array = (0..n).map(|i| (i % 5 != 0).then_some(base + i)).collect();
            let strs: StringArray = (0..n)
                .map(|i| (i % 7 != 0).then(|| format!("s{}", base + i)))
                .collect();
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(ints), Arc::new(strs)])
        };
        let inputs = [batch(0, 50)?, batch(1000, 30)?, batch(2000, 40)?];
        let index_sets: Vec<Vec<(usize, usize)>> = vec![
            (3..40).map(|r| (0, r)).collect(),
            (0..10)
                .map(|r| (1, r))
                .chain((5..25).map(|r| (0, r)))
                .chain((0..40).map(|r| (2, r)))
                .collect(),
            vec![(2, 3), (0, 1), (1, 29), (1, 0), (0, 49), (2, 39)],
        ];
        for indices in index_sets {
            let mut results = vec![];
            for threshold in [1, 2, usize::MAX] {
                let mut builder = OutputBuilder::new(1000, None);
                builder.min_average_stretch = threshold;
                for b in &inputs {
                    builder.push_batch(b.clone());
                }
                for &(b, r) in &indices {
                    builder.push_row(b, r);
                }
                let out = builder.build(std::iter::empty())?.expect("rows");
                assert_eq!(builder.stored_batches(), 0);
                results.push(out);
            }
            let refs: Vec<&RecordBatch> = inputs.iter().collect();
            let expected = arrow::compute::interleave_record_batch(&refs, &indices)?;
            for r in results {
                assert_eq!(r, expected);
            }
        }
        Ok(())
    }

    #[test]
    fn build_keeps_live_batches_and_renumbers_them() -> datafusion::common::Result<()> {
        let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]));
        let batch =
            |v: i64| RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from(vec![v]))]);
        let mut builder = OutputBuilder::new(10, None);
        for v in 0..4 {
            builder.push_batch(batch(v)?);
        }
        builder.push_row(1, 0);
        builder.push_row(3, 0);
        let mut live = [3usize, 2];
        let out = builder.build(live.iter_mut())?.expect("rows");
        assert_eq!(out.num_rows(), 2);
        assert_eq!(live, [0, 1]);
        assert_eq!(builder.stored_batches(), 2);
        // the renumbered indices address the same batches as before
        builder.push_row(live[0], 0);
        builder.push_row(live[1], 0);
        let out = builder.build(live.iter_mut())?.expect("rows");
        let values = out.column(0).as_any().downcast_ref::<Int64Array>().expect("i64");
        assert_eq!(values.values().to_vec(), vec![3, 2]);
        Ok(())
    }
}
