//! `t$partitions`: physical (unmerged) totals per partition of the (time-travelled) snapshot,
//! sorted by partition values, NULL first (semantics.md §8).
//!
//! As in the reference fixtures (pypaimon): `partition` is `k=v/k2=v2` with `None` for NULL,
//! `total_buckets` the number of buckets holding live files. `created_at`, `created_by`,
//! `updated_by` and `options` are tracked by REST catalogs only and are NULL here; `done` is
//! false. `deleted_record_count` sums the deletion-vector cardinalities of the partition
//! (0 without deletion vectors, NULL when a cardinality is unknown), as Java does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;

use super::format::{mem_table, partition_spec, reading_schema};
use super::live_groups;
use crate::meta::TableMeta;
use crate::spec::{Snapshot, TableOptions};
use crate::table::resolve_snapshot;

fn schema() -> SchemaRef {
    let ts = || ArrowType::Timestamp(TimeUnit::Millisecond, None);
    Arc::new(Schema::new(vec![
        Field::new("partition", ArrowType::Utf8, true),
        Field::new("record_count", ArrowType::Int64, false),
        Field::new("file_size_in_bytes", ArrowType::Int64, false),
        Field::new("file_count", ArrowType::Int64, false),
        Field::new("last_update_time", ts(), true),
        Field::new("created_at", ts(), true),
        Field::new("created_by", ArrowType::Utf8, true),
        Field::new("updated_by", ArrowType::Utf8, true),
        Field::new("options", ArrowType::Utf8, true),
        Field::new("total_buckets", ArrowType::Int32, false),
        Field::new("done", ArrowType::Boolean, false),
        Field::new("deleted_record_count", ArrowType::Int64, true),
    ]))
}

struct PartitionStats {
    spec: Option<String>,
    bytes: Vec<u8>,
    record_count: i64,
    file_size: i64,
    file_count: i64,
    last_update: Option<i64>,
    buckets: BTreeSet<i32>,
}

/// Builds `t$partitions`.
pub(super) async fn build(
    table: &str,
    meta: Arc<TableMeta>,
    options: &BTreeMap<String, String>,
) -> Result<Arc<dyn TableProvider>> {
    let snapshot = resolve_snapshot(&meta, table, options).await?;
    let schema = reading_schema(&meta, snapshot.as_ref(), options).await?;
    let groups = match &snapshot {
        Some(s) => live_groups(&meta, s, &schema.partition_types()).await?,
        None => vec![],
    };
    // Groups come sorted by partition then bucket; first appearance fixes the partition order.
    let mut partitions: Vec<PartitionStats> = Vec::new();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    for group in &groups {
        let i = *index.entry(group.partition_bytes.clone()).or_insert_with(|| {
            partitions.push(PartitionStats {
                spec: partition_spec(&schema.partition_keys, &group.partition),
                bytes: group.partition_bytes.clone(),
                record_count: 0,
                file_size: 0,
                file_count: 0,
                last_update: None,
                buckets: BTreeSet::new(),
            });
            partitions.len() - 1
        });
        let p = &mut partitions[i];
        for e in &group.entries {
            p.record_count += e.file.row_count;
            p.file_size += e.file.file_size;
            p.file_count += 1;
            p.last_update = p.last_update.max(e.file.creation_time);
        }
        p.buckets.insert(group.bucket);
    }
    let deleted = match &snapshot {
        Some(s) if TableOptions::parse(&schema.options)?.deletion_vectors => deleted_rows(&meta, s).await?,
        _ => HashMap::new(),
    };

    let n = partitions.len();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(partitions.iter().map(|p| p.spec.clone()).collect::<StringArray>()),
        Arc::new(
            partitions
                .iter()
                .map(|p| Some(p.record_count))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            partitions
                .iter()
                .map(|p| Some(p.file_size))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            partitions
                .iter()
                .map(|p| Some(p.file_count))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            partitions
                .iter()
                .map(|p| p.last_update)
                .collect::<TimestampMillisecondArray>(),
        ),
        Arc::new(TimestampMillisecondArray::from(vec![None; n])),
        Arc::new(StringArray::from(vec![None::<&str>; n])),
        Arc::new(StringArray::from(vec![None::<&str>; n])),
        Arc::new(StringArray::from(vec![None::<&str>; n])),
        Arc::new(
            partitions
                .iter()
                .map(|p| Some(p.buckets.len() as i32))
                .collect::<Int32Array>(),
        ),
        Arc::new(BooleanArray::from(vec![false; n])),
        Arc::new(
            partitions
                .iter()
                .map(|p| deleted.get(&p.bytes).copied().unwrap_or(Some(0)))
                .collect::<Int64Array>(),
        ),
    ];
    let schema = self::schema();
    mem_table(Arc::clone(&schema), RecordBatch::try_new(schema, columns)?)
}

/// Rows deleted by deletion vectors per serialized partition (None: a cardinality is unknown).
async fn deleted_rows(meta: &TableMeta, snapshot: &Snapshot) -> Result<HashMap<Vec<u8>, Option<i64>>> {
    let mut out: HashMap<Vec<u8>, Option<i64>> = HashMap::new();
    let Some(index) = &snapshot.index_manifest else {
        return Ok(out);
    };
    for entry in meta.index_manifest(index).await? {
        if entry.index_type != "DELETION_VECTORS" || entry.kind != crate::spec::FileKind::Add {
            continue;
        }
        let Some(ranges) = entry.dv_ranges.filter(|r| !r.is_empty()) else {
            continue;
        };
        let slot = out.entry(entry.partition.clone()).or_insert(Some(0));
        for r in ranges {
            *slot = match (*slot, r.cardinality) {
                (Some(total), Some(c)) => Some(total + c),
                _ => None,
            };
        }
    }
    Ok(out)
}
