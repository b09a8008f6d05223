//! The records of a compaction unit in key ranges: each data file is read as a stream of
//! batches (every file is sorted by key), and the streams are cut at keys no file can still
//! hold a smaller record of, so every chunk holds all records of its keys.
//!
//! ```text
//! file A (oldest) ─┐  buffered batches, key-sorted
//! file B ──────────┼─► cut = min over unfinished files of their last buffered key
//! file C (newest) ─┘   rows with key < cut ─► chunk (files in unit order)
//! ```
//!
//! Memory: about two batches per file plus one chunk, whatever the size of the unit; the
//! buffered bytes are reserved in the DataFusion memory pool.

use std::collections::VecDeque;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, Rows};
use datafusion::common::Result;
use datafusion::execution::memory_pool::MemoryReservation;
use futures::stream::BoxStream;
use futures::StreamExt;

use crate::merge::partition_point;

/// Records of several files in one batch, with the level each came from. Within a key the
/// records keep the order of the files in the unit (oldest first).
pub(super) struct Records {
    pub batch: RecordBatch,
    pub levels: Vec<i32>,
}

/// One file of the unit.
pub(super) struct ChunkSource {
    pub stream: BoxStream<'static, Result<RecordBatch>>,
    pub level: i32,
}

struct Source {
    stream: BoxStream<'static, Result<RecordBatch>>,
    level: i32,
    /// Unconsumed batches with their keys; the first starts at `offset`.
    buffered: VecDeque<(RecordBatch, Rows)>,
    offset: usize,
    done: bool,
}

impl Source {
    fn is_empty(&self) -> bool {
        self.buffered.is_empty()
    }

    fn last_key(&self) -> Option<OwnedRow> {
        let (_, rows) = self.buffered.back()?;
        Some(rows.row(rows.num_rows() - 1).owned())
    }
}

/// Key-range chunks over the files of a unit.
pub(super) struct KeyChunks<'a> {
    sources: Vec<Source>,
    converter: &'a RowConverter,
    key_columns: &'a [usize],
    schema: SchemaRef,
    /// A chunk is returned once it has this many rows (or the files are exhausted).
    chunk_rows: usize,
    reservation: MemoryReservation,
    /// What the reservation holds for the buffered batches.
    buffered_bytes: usize,
}

impl<'a> KeyChunks<'a> {
    /// `sources` in the unit's order (oldest first); `converter` encodes `key_columns`.
    pub(super) fn new(
        sources: Vec<ChunkSource>,
        converter: &'a RowConverter,
        key_columns: &'a [usize],
        schema: SchemaRef,
        chunk_rows: usize,
        reservation: MemoryReservation,
    ) -> Self {
        KeyChunks {
            sources: sources
                .into_iter()
                .map(|s| Source {
                    stream: s.stream,
                    level: s.level,
                    buffered: VecDeque::new(),
                    offset: 0,
                    done: false,
                })
                .collect(),
            converter,
            key_columns,
            schema,
            chunk_rows: chunk_rows.max(1),
            reservation,
            buffered_bytes: 0,
        }
    }

    /// Reads the next batch of source `i`; marks it done at its end.
    async fn pull(&mut self, i: usize) -> Result<()> {
        let source = &mut self.sources[i];
        loop {
            match source.stream.next().await {
                None => {
                    source.done = true;
                    return Ok(());
                }
                Some(batch) => {
                    let batch = batch?;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let keys: Vec<_> = self
                        .key_columns
                        .iter()
                        .map(|&c| std::sync::Arc::clone(batch.column(c)))
                        .collect();
                    let rows = self.converter.convert_columns(&keys)?;
                    let bytes = batch.get_array_memory_size() + rows.size();
                    self.reservation.try_grow(bytes)?;
                    self.buffered_bytes += bytes;
                    source.buffered.push_back((batch, rows));
                    return Ok(());
                }
            }
        }
    }

    /// Takes the rows of source `i` with a key below `cut` (all of them without a cut).
    fn take_below(
        &mut self,
        i: usize,
        cut: Option<&OwnedRow>,
        pieces: &mut Vec<RecordBatch>,
        levels: &mut Vec<i32>,
    ) {
        let source = &mut self.sources[i];
        while let Some((batch, rows)) = source.buffered.front() {
            let n = rows.num_rows();
            let end = match cut {
                None => n,
                Some(cut) => partition_point(source.offset, n, |r| rows.row(r) < cut.row()),
            };
            if end > source.offset {
                pieces.push(batch.slice(source.offset, end - source.offset));
                levels.extend(std::iter::repeat_n(source.level, end - source.offset));
            }
            if end < n {
                source.offset = end;
                return;
            }
            let bytes = batch.get_array_memory_size() + rows.size();
            self.buffered_bytes -= bytes;
            self.reservation.shrink(bytes.min(self.reservation.size()));
            source.buffered.pop_front();
            source.offset = 0;
        }
    }

    /// The next chunk: every record of a range of keys, in key ranges that follow the
    /// previous chunk's; `None` at the end.
    pub(super) async fn next(&mut self) -> Result<Option<Records>> {
        let mut pieces: Vec<RecordBatch> = Vec::new();
        let mut levels: Vec<i32> = Vec::new();
        loop {
            for i in 0..self.sources.len() {
                if self.sources[i].is_empty() && !self.sources[i].done {
                    self.pull(i).await?;
                }
            }
            if self.sources.iter().all(Source::is_empty) {
                break;
            }
            // A file that is not finished may still hold keys equal to its last buffered
            // key, never smaller ones: below the smallest such key, everything is here.
            let cut = self
                .sources
                .iter()
                .filter(|s| !s.done)
                .filter_map(Source::last_key)
                .min();
            let before = levels.len();
            for i in 0..self.sources.len() {
                self.take_below(i, cut.as_ref(), &mut pieces, &mut levels);
            }
            if levels.len() == before {
                // Every buffered record is at the cut key: read on in the files that end there.
                let Some(cut) = cut else { break };
                for i in 0..self.sources.len() {
                    let source = &self.sources[i];
                    if !source.done && source.last_key().as_ref() == Some(&cut) {
                        self.pull(i).await?;
                    }
                }
                continue;
            }
            if levels.len() >= self.chunk_rows {
                break;
            }
        }
        if pieces.is_empty() {
            return Ok(None);
        }
        let batch = concat_batches(&self.schema, &pieces)?;
        Ok(Some(Records { batch, levels }))
    }
}

impl Drop for KeyChunks<'_> {
    fn drop(&mut self) {
        self.reservation.free();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, Int32Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Int32Type, Int64Type, Schema};
    use arrow::row::SortField;
    use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryConsumer, MemoryPool};
    use futures::stream;

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("file", DataType::Int32, false),
        ]))
    }

    /// A file holding `keys` (sorted) in batches of `batch` rows.
    fn source(file: i32, keys: Vec<i64>, batch: usize, level: i32) -> ChunkSource {
        let batches: Vec<Result<RecordBatch>> = keys
            .chunks(batch)
            .map(|keys| {
                Ok(RecordBatch::try_new(
                    schema(),
                    vec![
                        Arc::new(Int64Array::from(keys.to_vec())),
                        Arc::new(Int32Array::from(vec![file; keys.len()])),
                    ],
                )?)
            })
            .collect();
        ChunkSource {
            stream: stream::iter(batches).boxed(),
            level,
        }
    }

    #[tokio::test]
    async fn chunks_hold_whole_keys_in_file_order_within_the_pool() -> Result<()> {
        // Three overlapping files of 20k keys each, read 97 rows at a time.
        let files: Vec<Vec<i64>> = vec![
            (0..60_000).step_by(3).collect(),
            (0..40_000).step_by(2).collect(),
            (10_000..30_000).collect(),
        ];
        let sources: Vec<ChunkSource> = files
            .iter()
            .enumerate()
            .map(|(i, keys)| source(i as i32, keys.clone(), 97, i as i32))
            .collect();
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)])?;
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
        let reservation = MemoryConsumer::new("test").register(&pool);
        let mut chunks = KeyChunks::new(sources, &converter, &[0], schema(), 1000, reservation);

        let mut seen: Vec<(i64, i32)> = Vec::new();
        let mut last_max = i64::MIN;
        let mut count = 0;
        while let Some(records) = chunks.next().await? {
            count += 1;
            let keys = records.batch.column(0).as_primitive::<Int64Type>();
            let file = records.batch.column(1).as_primitive::<Int32Type>();
            assert_eq!(
                records.levels,
                file.values().to_vec(),
                "levels follow their files"
            );
            // chunks cover increasing, disjoint key ranges
            let min = keys.values().iter().copied().min().unwrap();
            assert!(
                min > last_max,
                "chunk starting at {min} overlaps the previous one"
            );
            last_max = keys.values().iter().copied().max().unwrap();
            let mut rows: Vec<(i64, i32)> = keys
                .values()
                .iter()
                .copied()
                .zip(file.values().iter().copied())
                .collect();
            // within a key, records keep the files' order
            rows.sort_by_key(|r| r.0);
            for pair in rows.windows(2) {
                if pair[0].0 == pair[1].0 {
                    assert!(pair[0].1 < pair[1].1);
                }
            }
            seen.extend(rows);
        }
        assert!(count > 20, "the unit is cut into many chunks, got {count}");
        let mut expected: Vec<(i64, i32)> = files
            .iter()
            .enumerate()
            .flat_map(|(i, keys)| keys.iter().map(move |k| (*k, i as i32)))
            .collect();
        expected.sort();
        seen.sort();
        assert_eq!(seen, expected);
        assert_eq!(pool.reserved(), 0, "the reservation is released at the end");
        Ok(())
    }

    #[tokio::test]
    async fn a_key_repeated_across_batches_is_not_split() -> Result<()> {
        // One file repeats key 5 over three batches; the other ends at 5.
        let sources = vec![
            source(0, vec![1, 5, 5, 5, 5, 5, 9], 2, 0),
            source(1, vec![5], 1, 1),
        ];
        let converter = RowConverter::new(vec![SortField::new(DataType::Int64)])?;
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
        let reservation = MemoryConsumer::new("test").register(&pool);
        let mut chunks = KeyChunks::new(sources, &converter, &[0], schema(), 1, reservation);
        let mut fives = vec![];
        while let Some(records) = chunks.next().await? {
            let keys = records.batch.column(0).as_primitive::<Int64Type>();
            let n = keys.values().iter().filter(|k| **k == 5).count();
            if n > 0 {
                fives.push(n);
            }
        }
        assert_eq!(fives, vec![6]);
        Ok(())
    }
}
