//! Cross-partition upsert: dynamic-bucket primary-key tables whose primary key does not hold
//! every partition key, so one key may move between partitions (Paimon's "cross partitions
//! upsert dynamic bucket mode").
//!
//! A global index maps every live key to its partition; it is loaded from the table's merged
//! state when the statement starts and kept up to date row by row. A row whose key lives in
//! another partition is handled by the merge engine's rule, as Java's `GlobalIndexAssigner`:
//!
//! * deduplicate: a `-D` of the key goes to the old partition (with the new row's values),
//!   the row to the new one;
//! * partial-update, aggregation: the row goes to the key's old partition;
//! * first-row: the row is dropped (the first row stays).
//!
//! Retractions go to the partition that holds their key. The index is in memory (Java keeps
//! it in RocksDB on local disk).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int8Array, RecordBatch, UInt32Array};
use arrow::compute::{cast, interleave, take_record_batch};
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::catalog::TableProvider;
use datafusion::common::{HashMap, Result};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::TaskContext;

use crate::dynamic_bucket::AssignSlice;
use crate::merge::engine::is_retract;
use crate::meta::TableMeta;
use crate::spec::bucket::hash_binary_row;
use crate::spec::BinaryRow;
use crate::spec::{row_kind, MergeEngine, TableSchema};
use crate::table::{open_table, ReadView};

/// What happens to a row whose key lives in another partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Existing {
    /// Delete it there, insert here.
    Deduplicate,
    /// Send the row there.
    UseOld,
    /// Drop the row.
    SkipNew,
}

/// Key -> partition of every live key of the table.
pub(super) struct GlobalIndex {
    existing: Existing,
    /// Positions of the primary-key and partition columns in the written batches.
    key_columns: Vec<usize>,
    partition_columns: Vec<usize>,
    keys: RowConverter,
    partitions: RowConverter,
    /// Key row -> partition id.
    map: HashMap<Box<[u8]>, usize>,
    /// Partition row -> id, and the rows by id.
    partition_ids: HashMap<Box<[u8]>, usize>,
    partition_rows: Vec<OwnedRow>,
}

impl GlobalIndex {
    /// Loads the keys and partitions of the table's latest merged state; with `slice`, only the
    /// keys that assigner owns (a distributed write: each assigner keeps its keys' index).
    pub(super) async fn load(
        table: &str,
        meta: &Arc<TableMeta>,
        schema: &TableSchema,
        engine: MergeEngine,
        slice: Option<AssignSlice>,
        context: &Arc<TaskContext>,
    ) -> Result<Self> {
        let position = |name: &String| schema.fields.iter().position(|f| &f.name == name);
        let key_columns: Vec<usize> = schema.primary_keys.iter().filter_map(position).collect();
        let partition_columns: Vec<usize> = schema.partition_keys.iter().filter_map(position).collect();
        let field = |c: &usize| SortField::new(schema.fields[*c].data_type.to_arrow());
        let mut index = GlobalIndex {
            existing: match engine {
                MergeEngine::Deduplicate => Existing::Deduplicate,
                MergeEngine::FirstRow => Existing::SkipNew,
                MergeEngine::PartialUpdate | MergeEngine::Aggregation => Existing::UseOld,
            },
            keys: RowConverter::new(key_columns.iter().map(field).collect())?,
            partitions: RowConverter::new(partition_columns.iter().map(field).collect())?,
            key_columns,
            partition_columns,
            map: HashMap::default(),
            partition_ids: HashMap::default(),
            partition_rows: Vec::new(),
        };
        if meta.latest_snapshot().await?.is_none() {
            return Ok(index);
        }
        // The merged state, key and partition columns only.
        let state = SessionStateBuilder::new()
            .with_config(context.session_config().clone())
            .with_runtime_env(context.runtime_env())
            .with_default_features()
            .build();
        let provider = open_table(
            table.to_string(),
            Arc::clone(meta),
            &BTreeMap::new(),
            ReadView::Table,
        )
        .await?;
        let projection: Vec<usize> = index
            .key_columns
            .iter()
            .chain(&index.partition_columns)
            .copied()
            .collect();
        let plan = provider.scan(&state, Some(&projection), &[], None).await?;
        let batches = datafusion::physical_plan::collect(plan, Arc::clone(context)).await?;
        let n_keys = index.key_columns.len();
        // the trimmed primary key (what assigners are chosen by) among the key columns
        let trimmed: Vec<usize> = schema
            .trimmed_primary_keys()
            .iter()
            .filter_map(|f| schema.primary_keys.iter().position(|k| k == &f.name))
            .collect();
        let mut encoded = Vec::new();
        for batch in batches {
            let typed = |i: usize, c: usize| -> Result<ArrayRef> {
                Ok(cast(batch.column(i), &schema.fields[c].data_type.to_arrow())?)
            };
            let keys: Vec<ArrayRef> = index
                .key_columns
                .iter()
                .enumerate()
                .map(|(i, &c)| typed(i, c))
                .collect::<Result<_>>()?;
            let parts: Vec<ArrayRef> = index
                .partition_columns
                .iter()
                .enumerate()
                .map(|(i, &c)| typed(n_keys + i, c))
                .collect::<Result<_>>()?;
            let hashed: Vec<&dyn arrow::array::Array> = trimmed.iter().map(|&i| keys[i].as_ref()).collect();
            let keys = index.keys.convert_columns(&keys)?;
            let parts = index.partitions.convert_columns(&parts)?;
            for row in 0..batch.num_rows() {
                if let Some(slice) = slice {
                    BinaryRow::encode_columns(&hashed, row, &mut encoded)?;
                    if !slice.owns_hash(hash_binary_row(&encoded[4..])) {
                        continue;
                    }
                }
                let id = index.partition_id(parts.row(row));
                index.map.insert(keys.row(row).as_ref().into(), id);
            }
        }
        Ok(index)
    }

    fn partition_id(&mut self, row: arrow::row::Row<'_>) -> usize {
        if let Some(&id) = self.partition_ids.get(row.as_ref()) {
            return id;
        }
        let id = self.partition_rows.len();
        self.partition_rows.push(row.owned());
        self.partition_ids.insert(row.as_ref().into(), id);
        id
    }

    /// The rows to write for `batch`: moved, doubled (a `-D` in the old partition) or dropped
    /// as the engine says, with their row kinds, and the positions of such added deletes.
    pub(super) fn apply(
        &mut self,
        batch: &RecordBatch,
        kinds: &Int8Array,
    ) -> Result<(RecordBatch, Int8Array, Vec<usize>)> {
        let column = |c: &usize| Arc::clone(batch.column(*c));
        let keys = self
            .keys
            .convert_columns(&self.key_columns.iter().map(column).collect::<Vec<_>>())?;
        let parts = self
            .partitions
            .convert_columns(&self.partition_columns.iter().map(column).collect::<Vec<_>>())?;
        // Per output row: the input row, the partition it goes to (None: its own), its kind.
        let mut out: Vec<(u32, Option<usize>, i8)> = Vec::with_capacity(batch.num_rows());
        let mut added = Vec::new();
        for row in 0..batch.num_rows() {
            let key = keys.row(row);
            let kind = kinds.value(row);
            let here = self.partition_id(parts.row(row));
            match self.map.get(key.as_ref()).copied() {
                Some(old) if old != here => {
                    if is_retract(kind) {
                        out.push((row as u32, Some(old), kind));
                        if kind == row_kind::DELETE && self.existing == Existing::Deduplicate {
                            self.map.remove(key.as_ref());
                        }
                        continue;
                    }
                    match self.existing {
                        Existing::Deduplicate => {
                            added.push(out.len());
                            out.push((row as u32, Some(old), row_kind::DELETE));
                            out.push((row as u32, None, kind));
                            self.map.insert(key.as_ref().into(), here);
                        }
                        Existing::UseOld => out.push((row as u32, Some(old), kind)),
                        Existing::SkipNew => {}
                    }
                }
                Some(_) => {
                    out.push((row as u32, None, kind));
                    if kind == row_kind::DELETE && self.existing == Existing::Deduplicate {
                        self.map.remove(key.as_ref());
                    }
                }
                None => {
                    if !is_retract(kind) {
                        self.map.insert(key.as_ref().into(), here);
                    }
                    out.push((row as u32, None, kind));
                }
            }
        }
        let rows = UInt32Array::from_iter_values(out.iter().map(|(r, _, _)| *r));
        let kinds = Int8Array::from_iter_values(out.iter().map(|(_, _, k)| *k));
        let taken = take_record_batch(batch, &rows)?;
        if out.iter().all(|(_, p, _)| p.is_none()) {
            return Ok((taken, kinds, added));
        }
        // Moved rows take the partition values of where their key lives.
        let mut used: Vec<usize> = out.iter().filter_map(|(_, p, _)| *p).collect();
        used.sort_unstable();
        used.dedup();
        let values = self
            .partitions
            .convert_rows(used.iter().map(|&id| self.partition_rows[id].row()))?;
        let indices: Vec<(usize, usize)> = out
            .iter()
            .enumerate()
            .map(|(i, (_, p, _))| match p {
                None => (0, i),
                Some(id) => (1, used.binary_search(id).expect("collected above")),
            })
            .collect();
        let mut columns = taken.columns().to_vec();
        for (value, &c) in values.iter().zip(&self.partition_columns) {
            columns[c] = interleave(&[taken.column(c).as_ref(), value.as_ref()], &indices)?;
        }
        Ok((RecordBatch::try_new(taken.schema(), columns)?, kinds, added))
    }
}
