//! Postpone buckets (`bucket = -2`): writes land in `bucket-postpone`, invisible to batch reads,
//! and `CALL sys.compact` moves them into real buckets (Paimon's postpone bucket mode).
//!
//! ```text
//! postpone files of a partition, oldest first ──► each row routed by the bucket key hash
//!   (the partition's bucket count, or `postpone.default-bucket-num`) ──► level-0 files in the
//!   real buckets, sequence numbers above every row already there, order kept ──► one COMPACT
//!   snapshot (postpone files out, new files in); the full compaction that follows merges them
//! ```
//!
//! Every postpone row is newer than every row of the real buckets (those came from earlier
//! assignments), so renumbering them after the bucket's highest sequence number keeps the
//! merge order. A level-0 file must be sorted by key with one record per key: our writer's
//! postpone files are (it folds its buffer), but Java's postpone writer writes records as they
//! arrive, unsorted and with repeated keys. So each slice routed to a bucket is folded the way
//! a write buffer is: sorted by key, the records of a key merged by the table's merge engine in
//! arrival (sequence) order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{AsArray, Int64Array, Int8Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take_record_batch};
use arrow::datatypes::{Int64Type, Int8Type};
use datafusion::common::{exec_datafusion_err, Result};
use futures::TryStreamExt;

use super::{CompactScope, Compaction};
use crate::io::{write_data_file, DataFileRows};
use crate::merge::{fold_batch, MergeEngineSpec};
use crate::meta::{CommitRequest, OverwriteScope};
use crate::scan::{read_file, FileToRead, ReadLayout};
use crate::spec::bucket::fixed_buckets;
use crate::spec::{paths, BinaryRow, FileKind, ManifestEntry, Snapshot, TableOptions};

/// The postpone bucket id.
pub(crate) const POSTPONE_BUCKET: i32 = -2;

impl Compaction<'_> {
    /// Moves the postpone files of `scope` into real buckets, as one COMPACT snapshot; None
    /// when there were none.
    pub(crate) async fn assign_postponed(&self, scope: &CompactScope) -> Result<Option<Snapshot>> {
        let Some(latest) = self.meta.latest_snapshot().await? else {
            return Ok(None);
        };
        let options = TableOptions::parse(&self.schema.options)?;
        let live = self.meta.live_files(&latest, |_| true).await?;
        let default_buckets: i32 = match self.schema.options.get("postpone.default-bucket-num") {
            Some(v) => v.trim().parse().ok().filter(|n: &i32| *n > 0).ok_or_else(|| {
                exec_datafusion_err!(
                    "Option 'postpone.default-bucket-num' of table {} must be a positive number, got '{v}'",
                    self.table
                )
            })?,
            None => 1,
        };
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for (group, entries) in &live.groups {
            if group.1 != POSTPONE_BUCKET || entries.is_empty() || !self.in_scope(scope, group, &options)? {
                continue;
            }
            // The partition's real buckets: their count, and their highest sequence numbers.
            let mut total_buckets = None;
            let mut max_sequence: HashMap<i32, i64> = HashMap::new();
            for ((partition, bucket), files) in &live.groups {
                if *partition != group.0 || *bucket == POSTPONE_BUCKET {
                    continue;
                }
                for e in files {
                    total_buckets.get_or_insert(e.total_buckets);
                    let max = max_sequence.entry(*bucket).or_insert(-1);
                    *max = (*max).max(e.file.max_sequence_number);
                }
            }
            let total_buckets = total_buckets.filter(|n| *n > 0).unwrap_or(default_buckets);
            // Commit order (the manifests' order): Java's and pypaimon's postpone files each
            // number their records from 0, so their sequence numbers cannot order the files.
            // Each file's records are renumbered after everything already in the bucket.
            let postponed: Vec<&ManifestEntry> = entries.iter().collect();
            let mut next_sequence: HashMap<i32, i64> = max_sequence
                .iter()
                .map(|(bucket, max)| (*bucket, max + 1))
                .collect();
            let partition = BinaryRow::decode(&group.0, &self.schema.partition_types())?.values;
            let fold = self.slice_folding()?;
            let partition_path = paths::partition_path(
                &self.schema.partition_keys,
                &partition,
                &options.partition_default_name,
            );
            for entry in postponed {
                let rows = self.read_postponed(entry, &options, &partition_path).await?;
                let sequences = rows.column(self.schema.fields.len()).as_primitive::<Int64Type>();
                let (Some(first), Some(last)) =
                    (arrow::compute::min(sequences), arrow::compute::max(sequences))
                else {
                    removed.push(entry.clone());
                    continue; // an empty file
                };
                for (bucket, slice) in self.route(&rows, total_buckets)? {
                    let slice = fold.apply(&slice)?;
                    let next = next_sequence.entry(bucket).or_insert(0);
                    let offset = *next - first;
                    *next += last - first + 1;
                    let dir = paths::bucket_path(
                        options.data_file_path_directory.as_deref(),
                        &partition_path,
                        bucket,
                    );
                    let files = write_data_file(
                        self.meta.io(),
                        &dir,
                        "data",
                        0,
                        self.schema,
                        renumbered(&slice, offset)?,
                    )
                    .await?;
                    added.extend(files.into_iter().map(|file| ManifestEntry {
                        kind: FileKind::Add,
                        partition: group.0.clone(),
                        bucket,
                        total_buckets,
                        file,
                    }));
                }
                removed.push(entry.clone());
            }
        }
        if removed.is_empty() {
            return Ok(None);
        }
        let request = CommitRequest {
            index_added: vec![],
            index_removed: vec![],
            row_level: None,
            added,
            overwrite: OverwriteScope::None,
            partition_types: self.schema.partition_types(),
            commit_user: uuid::Uuid::new_v4().to_string(),
            commit_identifier: i64::MAX,
            operation: Some("COMPACT".to_string()),
            compacted: removed,
            changelog: vec![],
        };
        Ok(self.meta.commit(&request).await?)
    }

    /// All rows of one postpone file: the table columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`.
    async fn read_postponed(
        &self,
        entry: &ManifestEntry,
        options: &TableOptions,
        partition_path: &str,
    ) -> Result<RecordBatch> {
        let dir = paths::bucket_path(
            options.data_file_path_directory.as_deref(),
            partition_path,
            POSTPONE_BUCKET,
        );
        let layout = Arc::new(ReadLayout::new(self.schema.fields.clone(), true));
        let file_schema = self.meta.schema(entry.file.schema_id).await?;
        let file = FileToRead::whole(
            self.meta.io().path(&format!("{dir}/{}", entry.file.file_name)),
            entry.file.file_size as u64,
            true,
            None,
        );
        let batches: Vec<RecordBatch> = read_file(
            Arc::clone(self.meta.io().store()),
            file,
            file_schema,
            Arc::clone(&layout),
            self.batch_size,
        )
        .await?
        .try_collect()
        .await?;
        Ok(concat_batches(&layout.schema, &batches)?)
    }

    /// How a postpone slice becomes a level-0 file's rows.
    fn slice_folding(&self) -> Result<SliceFolding> {
        let columns = self.schema.fields.iter().map(|f| f.name.as_str());
        let engine = MergeEngineSpec::for_columns(self.table, self.schema, columns)?;
        let key_columns = self.schema.trimmed_primary_key_indices();
        Ok(SliceFolding {
            engine,
            key_columns,
            seq_column: self.schema.fields.len(),
        })
    }

    /// `rows` split by bucket (hash of the bucket key modulo `total_buckets`), order kept.
    fn route(&self, rows: &RecordBatch, total_buckets: i32) -> Result<BTreeMap<i32, RecordBatch>> {
        let bucket_key = self.schema.bucket_key();
        let columns: Vec<usize> = bucket_key
            .iter()
            .filter_map(|k| self.schema.fields.iter().position(|f| &f.name == k))
            .collect();
        let mut indices: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
        for (row, bucket) in fixed_buckets(rows, &columns, total_buckets)?
            .into_iter()
            .enumerate()
        {
            indices.entry(bucket).or_default().push(row as u32);
        }
        indices
            .into_iter()
            .map(|(bucket, rows_of)| Ok((bucket, take_record_batch(rows, &UInt32Array::from(rows_of))?)))
            .collect()
    }
}

/// Sorts and folds the rows routed to one bucket (table columns, `_SEQUENCE_NUMBER`,
/// `_VALUE_KIND`).
struct SliceFolding {
    engine: MergeEngineSpec,
    key_columns: Vec<usize>,
    seq_column: usize,
}

impl SliceFolding {
    fn apply(&self, slice: &RecordBatch) -> Result<RecordBatch> {
        // arrival order is sequence order; a file written as records came is already in it
        let seqs = slice.column(self.seq_column).as_primitive::<Int64Type>();
        let in_order = seqs.values().windows(2).all(|w| w[0] <= w[1]);
        let slice = if in_order {
            slice.clone()
        } else {
            let order = arrow::compute::sort_to_indices(seqs, None, None)?;
            take_record_batch(slice, &order)?
        };
        fold_batch(
            &slice,
            &self.key_columns,
            self.seq_column + 1,
            self.engine.reducer.as_ref(),
        )
    }
}

/// Table columns plus renumbered sequence numbers (`+ offset`) and the row kinds.
fn renumbered(rows: &RecordBatch, offset: i64) -> Result<DataFileRows> {
    let n = rows.num_columns() - 2;
    let seq = rows.column(n).as_primitive::<Int64Type>();
    let seq = Int64Array::from_iter_values(seq.values().iter().map(|s| s + offset));
    let kinds = rows.column(n + 1).as_primitive::<Int8Type>();
    let kinds = Int8Array::from_iter_values(kinds.values().iter().copied());
    let values = RecordBatch::try_new(
        Arc::new(rows.schema().project(&(0..n).collect::<Vec<_>>())?),
        rows.columns()[..n].to_vec(),
    )?;
    Ok(DataFileRows {
        values,
        kv: Some((seq, kinds)),
    })
}
