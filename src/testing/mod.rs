//! Test and benchmark support: generating primary-key tables in Paimon's on-disk format.
//!
//! Not a writer for users (the SQL write path is a separate module): it writes pre-sorted runs
//! straight to level-0 files of a deduplicate table with one `BIGINT` key, for benches and tests
//! that need large tables with a known number of overlapping sorted runs.

mod requests;

pub use requests::{
    fixed_bucket_of, live_files, read_metadata_objects, register_listing_table, trace_requests_if_asked,
    LiveFile,
};

use std::sync::Arc;

use arrow::array::{Float64Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::io::FileIO;
use crate::meta::TableMeta;
use crate::spec::{paths, BinaryRow, DataFileMeta, FileKind, ManifestEntry, SimpleStats, Snapshot};

/// Shape of a generated table `id <key> NOT NULL PRIMARY KEY, v1 BIGINT, v2 DOUBLE, v3 STRING,
/// v4 INT`.
#[derive(Debug, Clone)]
pub struct GeneratedTable {
    /// Key indexes `0..num_keys` (the keys themselves are [`Self::keys`] of them).
    pub num_keys: i64,
    /// What the keys of the indexes are.
    pub keys: KeyShape,
    /// Fixed buckets; a key goes to the bucket Paimon's hash gives it ([`fixed_bucket_of`]), so
    /// SQL writes of the same keys land in the same buckets.
    pub buckets: i32,
    /// Sorted runs per bucket: run 0 holds every key, later runs update a random subset.
    pub runs: usize,
    /// Fraction of keys each later run updates.
    pub update_fraction: f64,
    /// Seed of the key choice.
    pub seed: u64,
    /// Extra table options (`merge-engine`, `fields.<f>.aggregate-function`, ...), as JSON
    /// members of the schema's `options` object.
    pub options: Vec<(String, String)>,
    /// Put run `r` at level `5 - r` instead of level 0 (first-row tables skip level 0).
    pub leveled: bool,
}

impl GeneratedTable {
    /// The bucket of each key index.
    fn buckets_of_keys(&self) -> Result<Vec<i32>> {
        (0..self.num_keys)
            .map(|i| fixed_bucket_of(&[self.keys.key(i)], self.buckets))
            .collect()
    }
}

/// The primary keys of a generated table, by key index `i` (ascending with it, so a sorted run
/// of indexes is a sorted run of keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyShape {
    /// `BIGINT` `i`: the dense range a bulk load of ids writes (a merge may compute such keys
    /// from row positions rather than decode them).
    #[default]
    Dense,
    /// `BIGINT` with irregular gaps: `i * 1000` plus a pseudo-random part below 1000.
    Sparse,
    /// `STRING`, the sparse key as 16 hexadecimal digits (a hash or id text of fixed width).
    String,
}

impl KeyShape {
    /// Every shape, for benches that cover them all.
    pub const ALL: [KeyShape; 3] = [KeyShape::Dense, KeyShape::Sparse, KeyShape::String];

    pub fn name(self) -> &'static str {
        match self {
            KeyShape::Dense => "dense",
            KeyShape::Sparse => "sparse",
            KeyShape::String => "string",
        }
    }

    fn sparse(i: i64) -> i64 {
        let mut state = i as u64 ^ 0x5EED;
        i * 1000 + (splitmix(&mut state) % 1000) as i64
    }

    /// The key of index `i` as a value.
    pub fn key(self, i: i64) -> ScalarValue {
        match self {
            KeyShape::Dense => ScalarValue::Int64(Some(i)),
            KeyShape::Sparse => ScalarValue::Int64(Some(Self::sparse(i))),
            KeyShape::String => ScalarValue::Utf8(Some(format!("{:016x}", Self::sparse(i)))),
        }
    }

    fn paimon_type(self) -> &'static str {
        match self {
            KeyShape::String => "STRING NOT NULL",
            _ => "BIGINT NOT NULL",
        }
    }

    fn arrow_type(self) -> ArrowType {
        match self {
            KeyShape::String => ArrowType::Utf8,
            _ => ArrowType::Int64,
        }
    }

    fn column(self, indexes: &[i64]) -> arrow::array::ArrayRef {
        match self {
            KeyShape::Dense => Arc::new(Int64Array::from(indexes.to_vec())),
            KeyShape::Sparse => Arc::new(Int64Array::from_iter_values(
                indexes.iter().map(|&i| Self::sparse(i)),
            )),
            KeyShape::String => Arc::new(StringArray::from_iter_values(
                indexes.iter().map(|&i| format!("{:016x}", Self::sparse(i))),
            )),
        }
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn io_err(e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("generating table: {e}"))
}

/// Writes the table at `<warehouse dir>/<db>.db/<table>` with one APPEND snapshot.
pub async fn write_generated_table(
    warehouse: &std::path::Path,
    db: &str,
    table: &str,
    spec: &GeneratedTable,
) -> Result<()> {
    let root = warehouse.join(format!("{db}.db")).join(table);
    std::fs::create_dir_all(&root)?;
    let store = Arc::new(object_store::local::LocalFileSystem::new());
    let path = object_store::path::Path::from_absolute_path(&root).map_err(io_err)?;
    let meta = TableMeta::new(FileIO::new(store, path, root.display().to_string()));
    let schema_json = format!(
        r#"{{"version":3,"id":0,"fields":[{{"id":0,"name":"id","type":"{}"}},{{"id":1,"name":"v1","type":"BIGINT"}},{{"id":2,"name":"v2","type":"DOUBLE"}},{{"id":3,"name":"v3","type":"STRING"}},{{"id":4,"name":"v4","type":"INT"}}],"highestFieldId":4,"partitionKeys":[],"primaryKeys":["id"],"options":{{"bucket":"{}"{}}},"timeMillis":0}}"#,
        spec.keys.paimon_type(),
        spec.buckets,
        spec.options
            .iter()
            .map(|(k, v)| format!(r#","{k}":"{v}""#))
            .collect::<String>()
    );
    meta.create_schema_file(0, schema_json).await?;

    let mut rng = spec.seed;
    let mut entries = Vec::new();
    let buckets = spec.buckets_of_keys()?;
    for bucket in 0..spec.buckets {
        let keys: Vec<i64> = (0..spec.num_keys)
            .filter(|&k| buckets[k as usize] == bucket)
            .collect();
        let mut seq = 0i64;
        for run in 0..spec.runs {
            let run_keys: Vec<i64> = if run == 0 {
                keys.clone()
            } else {
                let threshold = (spec.update_fraction * u64::MAX as f64) as u64;
                keys.iter()
                    .copied()
                    .filter(|_| splitmix(&mut rng) < threshold)
                    .collect()
            };
            if run_keys.is_empty() {
                continue;
            }
            let mut file = write_run(&meta, spec.keys, bucket, run as i64, &run_keys, seq).await?;
            if spec.leveled {
                file.level = 5 - run as i32;
            }
            seq += run_keys.len() as i64;
            entries.push(ManifestEntry {
                kind: FileKind::Add,
                partition: BinaryRow::encode(&[])?,
                bucket,
                total_buckets: spec.buckets,
                file,
            });
        }
    }
    let manifest = meta.write_manifest(&entries, 0, &[]).await?;
    let (base, base_size) = meta.write_manifest_list(&[]).await?;
    let (delta, delta_size) = meta.write_manifest_list(&[manifest]).await?;
    let _ = (base_size, delta_size);
    let rows: i64 = entries.iter().map(|e| e.file.row_count).sum();
    let snapshot = Snapshot {
        version: Some(3),
        id: 1,
        schema_id: 0,
        base_manifest_list: base,
        delta_manifest_list: delta,
        changelog_manifest_list: None,
        index_manifest: None,
        commit_user: uuid::Uuid::new_v4().to_string(),
        commit_identifier: i64::MAX,
        commit_kind: "APPEND".into(),
        time_millis: chrono::Utc::now().timestamp_millis(),
        total_record_count: Some(rows),
        delta_record_count: Some(rows),
        changelog_record_count: None,
        watermark: None,
        statistics: None,
        next_row_id: None,
        operation: None,
        writer_version: None,
    };
    meta.publish_snapshot(&snapshot).await?;
    Ok(())
}

/// Writes one sorted run of a bucket as a level-0 KeyValue Parquet file.
async fn write_run(
    meta: &TableMeta,
    shape: KeyShape,
    bucket: i32,
    run: i64,
    keys: &[i64],
    first_seq: i64,
) -> Result<DataFileMeta> {
    let n = keys.len();
    let schema = Arc::new(Schema::new(vec![
        Field::new("_KEY_id", shape.arrow_type(), false),
        Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
        Field::new("_VALUE_KIND", ArrowType::Int8, false),
        Field::new("id", shape.arrow_type(), false),
        Field::new("v1", ArrowType::Int64, true),
        Field::new("v2", ArrowType::Float64, true),
        Field::new("v3", ArrowType::Utf8, true),
        Field::new("v4", ArrowType::Int32, true),
    ]));
    let ids = shape.column(keys);
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            ids.clone(),
            Arc::new(Int64Array::from_iter_values(first_seq..first_seq + n as i64)),
            Arc::new(Int8Array::from(vec![0i8; n])),
            ids,
            Arc::new(Int64Array::from_iter_values(keys.iter().map(|k| k * 10 + run))),
            Arc::new(Float64Array::from_iter_values(
                keys.iter().map(|k| *k as f64 / 3.0 + run as f64),
            )),
            Arc::new(StringArray::from_iter_values(
                keys.iter().map(|k| format!("value-{k}-{run}")),
            )),
            Arc::new(Int32Array::from_iter_values(
                keys.iter().map(|k| (k % 1000) as i32 + run as i32),
            )),
        ],
    )?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(io_err)?))
        .build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, schema, Some(props))?;
    writer.write(&batch)?;
    writer.close()?;
    let name = format!("data-{}-0.parquet", uuid::Uuid::new_v4());
    let size = buf.len() as i64;
    meta.io()
        .write(&format!("{}/{name}", paths::bucket_dir(bucket)), buf)
        .await?;
    let key = |k: i64| BinaryRow::encode(&[shape.key(k)]);
    let (min, max) = (key(keys[0])?, key(keys[n - 1])?);
    Ok(DataFileMeta {
        file_name: name,
        file_size: size,
        row_count: n as i64,
        min_key: min.clone(),
        max_key: max.clone(),
        key_stats: SimpleStats {
            min_values: min,
            max_values: max,
            null_counts: Some(vec![Some(0)]),
        },
        value_stats: SimpleStats {
            min_values: BinaryRow::encode(&[])?,
            max_values: BinaryRow::encode(&[])?,
            null_counts: Some(vec![]),
        },
        min_sequence_number: first_seq,
        max_sequence_number: first_seq + n as i64 - 1,
        schema_id: 0,
        level: 0,
        extra_files: vec![],
        creation_time: Some(chrono::Utc::now().timestamp_millis()),
        delete_row_count: Some(0),
        embedded_index: None,
        file_source: Some(0),
        value_stats_cols: Some(vec![]),
        external_path: None,
        first_row_id: None,
        write_cols: None,
    })
}

/// Bytes of a hex string, whitespace ignored (tests compare with bytes Java or pypaimon wrote).
#[cfg(test)]
pub(crate) fn hex_bytes(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::PaimonSession;
    use arrow::array::AsArray;
    use arrow::datatypes::Int64Type;

    /// Every key is read once, with the values of the newest run that wrote it, no matter how
    /// the runs overlap; the model recomputes the newest run per key from the same seed.
    #[tokio::test]
    async fn generated_runs_merge_to_newest_values() {
        let dir = tempfile::tempdir().unwrap();
        let spec = GeneratedTable {
            num_keys: 5000,
            keys: KeyShape::Dense,
            buckets: 3,
            runs: 5,
            update_fraction: 0.3,
            seed: 7,
            options: vec![],
            leveled: false,
        };
        write_generated_table(dir.path(), "g", "t", &spec).await.unwrap();
        let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
        let batches = session
            .sql("SELECT id, v1 FROM g.t ORDER BY id")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        // Model: replay the generator's random choices.
        let mut newest = vec![0i64; spec.num_keys as usize];
        let mut rng = spec.seed;
        let buckets = spec.buckets_of_keys().unwrap();
        for bucket in 0..spec.buckets {
            let keys: Vec<i64> = (0..spec.num_keys)
                .filter(|&k| buckets[k as usize] == bucket)
                .collect();
            for run in 1..spec.runs as i64 {
                let threshold = (spec.update_fraction * u64::MAX as f64) as u64;
                for k in &keys {
                    if splitmix(&mut rng) < threshold {
                        newest[*k as usize] = run;
                    }
                }
            }
        }
        let mut seen = 0usize;
        for b in &batches {
            let ids = b.column(0).as_primitive::<Int64Type>();
            let v1 = b.column(1).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let k = ids.value(i);
                assert_eq!(k, seen as i64, "keys are complete and unique");
                assert_eq!(
                    v1.value(i),
                    k * 10 + newest[k as usize],
                    "key {k} has its newest value"
                );
                seen += 1;
            }
        }
        assert_eq!(seen, spec.num_keys as usize);
    }

    /// Sparse and string keys are read back in key order, each once, as their shape makes them.
    #[tokio::test]
    async fn generated_keys_take_their_shape() {
        let dir = tempfile::tempdir().unwrap();
        for shape in [KeyShape::Sparse, KeyShape::String] {
            let spec = GeneratedTable {
                num_keys: 3000,
                keys: shape,
                buckets: 2,
                runs: 3,
                update_fraction: 0.2,
                seed: 3,
                options: vec![],
                leveled: false,
            };
            write_generated_table(dir.path(), "g", shape.name(), &spec)
                .await
                .unwrap();
        }
        let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
        for shape in [KeyShape::Sparse, KeyShape::String] {
            let sql = format!("SELECT id FROM g.{} ORDER BY v1 / 10", shape.name());
            let batches = session.sql(&sql).await.unwrap().collect().await.unwrap();
            let keys: Vec<ScalarValue> = batches
                .iter()
                .flat_map(|b| (0..b.num_rows()).map(|i| ScalarValue::try_from_array(b.column(0), i).unwrap()))
                .collect();
            let expected: Vec<ScalarValue> = (0..3000).map(|i| shape.key(i)).collect();
            assert_eq!(keys, expected, "{}", shape.name());
            assert!(expected.windows(2).all(|w| w[0] < w[1]), "ascending");
        }
    }
}

/// The remote data files (`<table URL>#<path>`) this process keeps a local copy of for lookups
/// (`lookup.cache-max-disk-size`).
pub fn lookup_disk_copies() -> Vec<String> {
    crate::compact::lookup_copied_files()
}

/// Copies the directory `from` (a table, a warehouse) to `to`, recursively: benches that time a
/// write start every round from a pristine copy.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Source rows for write benches: `rows` upserts `id BIGINT NOT NULL, v1 BIGINT, v2 DOUBLE,
/// v3 STRING, v4 INT` with keys `0..rows` in a scrambled order (writers get unsorted input), in
/// batches of 8,192 rows over 4 partitions, registered in `ctx` as `mem.src.rows` (a catalog of
/// its own: a Paimon catalog only holds Paimon tables).
pub fn register_upsert_source(ctx: &datafusion::prelude::SessionContext, rows: i64) -> Result<()> {
    use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider, MemorySchemaProvider, SchemaProvider};
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("v1", ArrowType::Int64, true),
        Field::new("v2", ArrowType::Float64, true),
        Field::new("v3", ArrowType::Utf8, true),
        Field::new("v4", ArrowType::Int32, true),
    ]));
    // A multiplicative permutation of 0..rows (odd multiplier, modulo a power of two, filtered).
    let span = (rows.max(1) as u64).next_power_of_two();
    let ids: Vec<i64> = (0..span)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (span - 1)) as i64)
        .filter(|k| *k < rows)
        .collect();
    let batches = ids
        .chunks(8192)
        .map(|chunk| {
            let v3 = chunk.iter().map(|k| format!("value-{}", k % 10_000));
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Int64Array::from(chunk.to_vec())),
                    Arc::new(Int64Array::from_iter_values(
                        chunk.iter().map(|k| k.wrapping_mul(31)),
                    )),
                    Arc::new(Float64Array::from_iter_values(
                        chunk.iter().map(|k| *k as f64 / 7.0),
                    )),
                    Arc::new(StringArray::from_iter_values(v3)),
                    Arc::new(Int32Array::from_iter_values(
                        chunk.iter().map(|k| (k % 1000) as i32),
                    )),
                ],
            )
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let per = batches.len().div_ceil(4).max(1);
    let partitions: Vec<Vec<RecordBatch>> = batches.chunks(per).map(<[RecordBatch]>::to_vec).collect();
    let source = datafusion::datasource::MemTable::try_new(schema, partitions)?;
    let mem_schema = Arc::new(MemorySchemaProvider::new());
    mem_schema.register_table("rows".to_string(), Arc::new(source))?;
    let catalog = Arc::new(MemoryCatalogProvider::new());
    catalog.register_schema("src", mem_schema)?;
    ctx.register_catalog("mem", catalog);
    Ok(())
}

/// The write baseline of the write benches: DataFusion writes `mem.src.rows`
/// ([`register_upsert_source`]) sorted by key as one Parquet file at `path`.
pub async fn sorted_parquet_write(ctx: &datafusion::prelude::SessionContext, path: &str) {
    let df = ctx
        .sql("SELECT id, v1, v2, v3, v4 FROM mem.src.rows ORDER BY id")
        .await
        .expect("plan");
    let options = datafusion::dataframe::DataFrameWriteOptions::new().with_single_file_output(true);
    df.write_parquet(path, options, None)
        .await
        .expect("parquet write");
}

/// Every data file under a table directory's `bucket-*` directories (a table without
/// partitions): what a plain Parquet baseline of the benches reads.
pub fn bucket_data_files(table_dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut files = Vec::new();
    for bucket in std::fs::read_dir(table_dir)?.flatten() {
        if bucket.file_name().to_string_lossy().starts_with("bucket-") {
            for f in std::fs::read_dir(bucket.path())?.flatten() {
                files.push(f.path().display().to_string());
            }
        }
    }
    Ok(files)
}
