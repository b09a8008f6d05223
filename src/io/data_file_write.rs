//! Writing one data file in Paimon's layout and describing it with a `DataFileMeta`.
//!
//! Primary-key files use the KeyValue layout (`_KEY_<k>...`, `_SEQUENCE_NUMBER`,
//! `_VALUE_KIND`, all table columns; format.md §6.2) and must arrive sorted by key with unique
//! keys. Parquet field ids are written as Java does; ORC and Avro files carry names only. Value
//! statistics follow Java's default `truncate(16)` mode; nested columns get null counts only
//! ([`super::file_stats`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, Int8Array, RecordBatch};
use arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::common::ScalarValue;

use super::blob_write::BlobColumns;
use super::file_stats::StatsAccumulator;
use super::ExternalPaths;
use super::FileIO;
use crate::error::{Error, Result};
use crate::file_index::{FileIndexBuilder, IndexPlacement};
use crate::format::{FileEncoder, WriteFormat};
use crate::spec::{
    BinaryRow, DataField, DataFileMeta, SimpleStats, TableSchema, KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND,
};

/// Field ids Java gives the system columns (format.md §6.2).
const KEY_FIELD_ID_START: i32 = 1_073_741_823;
const SEQUENCE_FIELD_ID: i32 = 2_147_483_646;
const VALUE_KIND_FIELD_ID: i32 = 2_147_483_645;
/// Rows from which a write computes the file's statistics beside the encoding, not before it.
const PARALLEL_STATS_MIN_ROWS: usize = 64 * 1024;

/// Rows of one data file, already sorted by key (primary-key tables).
pub(crate) struct DataFileRows {
    /// Table columns in schema order, typed as the schema's Arrow types.
    pub(crate) values: RecordBatch,
    /// `_SEQUENCE_NUMBER` and `_VALUE_KIND` for primary-key files.
    pub(crate) kv: Option<(Int64Array, Int8Array)>,
}

fn field_with_id(name: &str, data_type: ArrowType, nullable: bool, id: i32) -> Field {
    let metadata = HashMap::from([("PARQUET:field_id".to_string(), id.to_string())]);
    Field::new(name, data_type, nullable).with_metadata(metadata)
}

/// Writes `rows` as `<dir>/<prefix>-<uuid>-0.<format>` in the format the table's options give
/// for `level` (`file.format`, `file.format.per.level`, `file.compression`) and returns the
/// file's metadata (at `level`, APPEND source), then that of its `.blob` files (BLOB columns).
pub(crate) async fn write_data_file(
    io: &FileIO,
    dir: &str,
    prefix: &str,
    level: i32,
    schema: &TableSchema,
    rows: DataFileRows,
) -> Result<Vec<DataFileMeta>> {
    let mut writer = DataFileWriter::new(dir, prefix, level, schema, rows.kv.is_some())?;
    writer.write(&rows)?;
    writer.finish(io).await
}

/// One data file written batch by batch (rows arrive in key order for primary-key files):
/// the batches are encoded as they come and the file's statistics are accumulated, so the
/// writer holds one encoded file, never its decoded rows.
pub(crate) struct DataFileWriter<'a> {
    dir: String,
    /// `<prefix>-<uuid>`: the file is `<stem>-0.<format>`, its `.blob` files `<stem>-<n>.blob`.
    stem: String,
    name: String,
    level: i32,
    schema: &'a TableSchema,
    /// Positions and fields of the trimmed primary key among the table columns.
    keys: Vec<(usize, &'a DataField)>,
    kv: bool,
    file_schema: Arc<Schema>,
    encoder: FileEncoder,
    rows: usize,
    first_key: Option<Vec<u8>>,
    last_key: Option<Vec<u8>>,
    key_stats: StatsAccumulator,
    value_stats: StatsAccumulator,
    sequence_range: Option<(i64, i64)>,
    deletes: i64,
    /// The BLOB columns of an append file, written to `.blob` files beside it; the file itself
    /// holds the table's other columns (`stored`).
    blobs: Option<BlobColumns>,
    /// Positions of the table columns this file holds.
    stored: Vec<usize>,
    /// Where the file goes instead of `dir` (`data-file.external-paths`), if anywhere.
    external: Option<ExternalPaths>,
    /// The file indexes of an append file (`file-index.<type>.columns`).
    indexes: Option<FileIndexBuilder>,
}

impl<'a> DataFileWriter<'a> {
    /// A new file `<dir>/<prefix>-<uuid>-0.<format>` at `level`; `kv` for the KeyValue layout.
    pub(crate) fn new(
        dir: &str,
        prefix: &str,
        level: i32,
        schema: &'a TableSchema,
        kv: bool,
    ) -> Result<Self> {
        let format_error = |e: datafusion::error::DataFusionError| Error::FileFormat(e.message().to_string());
        let format = WriteFormat::of_level(&schema.options, level).map_err(format_error)?;
        let stem = format!("{prefix}-{}", uuid::Uuid::new_v4());
        let name = format!("{stem}-0.{}", format.format.extension());
        let keys: Vec<(usize, &DataField)> = schema
            .trimmed_primary_keys()
            .into_iter()
            .filter_map(|k| {
                let i = schema.fields.iter().position(|f| f.id == k.id)?;
                Some((i, &schema.fields[i]))
            })
            .collect();
        let blobs = match kv {
            true => None,
            false => BlobColumns::of(schema)?,
        };
        let stored: Vec<usize> = (0..schema.fields.len())
            .filter(|i| !blobs.as_ref().is_some_and(|b| b.holds(*i)))
            .collect();
        let mut fields = Vec::new();
        if kv {
            for (_, k) in &keys {
                fields.push(field_with_id(
                    &format!("{KEY_PREFIX}{}", k.name),
                    k.data_type.to_arrow(),
                    false,
                    KEY_FIELD_ID_START + k.id,
                ));
            }
            fields.push(field_with_id(
                SEQUENCE_NUMBER,
                ArrowType::Int64,
                false,
                SEQUENCE_FIELD_ID,
            ));
            fields.push(field_with_id(
                VALUE_KIND,
                ArrowType::Int8,
                false,
                VALUE_KIND_FIELD_ID,
            ));
        }
        for f in stored.iter().map(|i| &schema.fields[*i]) {
            fields.push(field_with_id(
                &f.name,
                f.data_type.to_arrow(),
                f.data_type.nullable,
                f.id,
            ));
        }
        let file_schema = Arc::new(Schema::new(fields));
        let encoder = FileEncoder::new(&format, Arc::clone(&file_schema)).map_err(format_error)?;
        let key_types = keys
            .iter()
            .map(|(_, k)| k.data_type.to_arrow())
            .collect::<Vec<_>>();
        let value_types = stored
            .iter()
            .map(|i| schema.fields[*i].data_type.to_arrow())
            .collect::<Vec<_>>();
        Ok(DataFileWriter {
            dir: dir.to_string(),
            stem,
            name,
            level,
            schema,
            key_stats: StatsAccumulator::new(&key_types, &encoder, 0)?,
            // after the key, sequence and kind columns of the KeyValue layout
            value_stats: StatsAccumulator::new(&value_types, &encoder, if kv { keys.len() + 2 } else { 0 })?,
            keys,
            kv,
            file_schema,
            encoder,
            rows: 0,
            first_key: None,
            last_key: None,
            sequence_range: None,
            deletes: 0,
            blobs,
            stored,
            external: ExternalPaths::of(&schema.options)?,
            indexes: match kv {
                true => None,
                false => FileIndexBuilder::of(schema)?,
            },
        })
    }

    /// Appends `rows` (after every row written before, in key order for primary-key files).
    pub(crate) fn write(&mut self, rows: &DataFileRows) -> Result<()> {
        let n = rows.values.num_rows();
        if n == 0 {
            return Ok(());
        }
        let mut columns: Vec<ArrayRef> = Vec::new();
        let mut key_columns_written: Vec<ArrayRef> = Vec::new();
        match (&rows.kv, self.kv) {
            (Some((seq, kind)), true) => {
                let key_columns: Vec<ArrayRef> = self
                    .keys
                    .iter()
                    .map(|(i, _)| Arc::clone(rows.values.column(*i)))
                    .collect();
                let key_at = |row: usize| -> Result<Vec<u8>> {
                    let values = key_columns
                        .iter()
                        .map(|c| scalar_at(c, row))
                        .collect::<Result<Vec<_>>>()?;
                    BinaryRow::encode(&values)
                };
                if self.first_key.is_none() {
                    self.first_key = Some(key_at(0)?);
                }
                self.last_key = Some(key_at(n - 1)?);
                if let (Some(lo), Some(hi)) = (
                    seq.values().iter().min().copied(),
                    seq.values().iter().max().copied(),
                ) {
                    self.sequence_range = Some(match self.sequence_range {
                        Some((a, b)) => (a.min(lo), b.max(hi)),
                        None => (lo, hi),
                    });
                }
                self.deletes += kind.values().iter().filter(|k| **k == 1 || **k == 3).count() as i64;
                columns.extend(key_columns.iter().cloned());
                key_columns_written = key_columns;
                columns.push(Arc::new(seq.clone()));
                columns.push(Arc::new(kind.clone()));
            }
            (None, false) => {}
            _ => {
                return Err(Error::Unsupported(format!(
                    "Rows for data file {} do not match its layout",
                    self.name
                )))
            }
        }
        let values: Vec<ArrayRef> = self
            .stored
            .iter()
            .map(|i| Arc::clone(rows.values.column(*i)))
            .collect();
        columns.extend(values.iter().cloned());
        let batch = RecordBatch::try_new(Arc::clone(&self.file_schema), columns)?;
        if let Some(blobs) = &mut self.blobs {
            blobs.write(&rows.values)?;
        }
        if let Some(indexes) = &mut self.indexes {
            indexes.update(rows.values.columns())?;
        }
        // Statistics the encoder does not keep itself (every column of ORC and Avro files,
        // floating point and other columns of Parquet ones, see `io::file_stats`) take a pass
        // over their columns: for a big write on a thread of their own while the encoder's
        // threads work.
        let (encoder, key_stats, value_stats) =
            (&mut self.encoder, &mut self.key_stats, &mut self.value_stats);
        let accumulates =
            value_stats.accumulates() || (!key_columns_written.is_empty() && key_stats.accumulates());
        let mut stats = || -> Result<()> {
            if !key_columns_written.is_empty() {
                key_stats.update(&key_columns_written)?;
            }
            value_stats.update(&values)
        };
        let encode = |encoder: &mut FileEncoder| {
            encoder
                .write(&batch)
                .map_err(|e| Error::FileFormat(e.message().to_string()))
        };
        if !accumulates {
            encode(encoder)?;
        } else if n < PARALLEL_STATS_MIN_ROWS {
            stats()?;
            encode(encoder)?;
        } else {
            std::thread::scope(|scope| -> Result<()> {
                let stats = scope.spawn(stats);
                let encoded = encode(encoder);
                let stats = stats.join().map_err(|_| {
                    Error::FileFormat(format!("Statistics of data file {} panicked", self.name))
                })?;
                encoded.and(stats)
            })?;
        }
        self.rows += n;
        Ok(())
    }

    /// Rows written so far.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Estimated size of the file if it were finished now.
    pub(crate) fn size(&self) -> usize {
        self.encoder.size()
    }

    /// Writes the file to `io` and returns its metadata, then that of its `.blob` files.
    pub(crate) async fn finish(self, io: &FileIO) -> Result<Vec<DataFileMeta>> {
        let encoded = self
            .encoder
            .finish()
            .map_err(|e| Error::FileFormat(e.message().to_string()))?;
        let buf = encoded.bytes;
        let file_size = buf.len() as i64;
        let external_path = store(io, self.external.as_ref(), &self.dir, &self.name, buf).await?;
        // the file index: in the manifest entry, or `<file>.index` beside the file
        let (embedded_index, extra_files) = match self.indexes.map(FileIndexBuilder::finish) {
            None => (None, vec![]),
            Some(IndexPlacement::Embedded(bytes)) => (Some(bytes), vec![]),
            Some(IndexPlacement::File(bytes)) => {
                let name = format!("{}.index", self.name);
                let path = io.beside_data_file(&self.dir, external_path.as_deref(), &name)?;
                io.write_at(&path, bytes).await?;
                (None, vec![name])
            }
        };
        let empty = BinaryRow::encode(&[])?;
        let (min_key, max_key, key_stats) = match (self.first_key, self.last_key) {
            (Some(first), Some(last)) => (first, last, self.key_stats.finish(false, &encoded.column_stats)?),
            _ => (
                empty.clone(),
                empty.clone(),
                SimpleStats {
                    min_values: empty.clone(),
                    max_values: empty.clone(),
                    null_counts: Some(vec![]),
                },
            ),
        };
        let (min_sequence_number, max_sequence_number) = self.sequence_range.unwrap_or((0, 0));
        let write_cols = self.blobs.as_ref().map(|_| {
            self.stored
                .iter()
                .map(|i| self.schema.fields[*i].name.clone())
                .collect()
        });
        let data_file = DataFileMeta {
            file_name: self.name,
            file_size,
            row_count: self.rows as i64,
            min_key,
            max_key,
            key_stats,
            value_stats: self.value_stats.finish(true, &encoded.column_stats)?,
            min_sequence_number,
            max_sequence_number,
            schema_id: self.schema.id,
            level: self.level,
            extra_files,
            creation_time: Some(chrono::Local::now().naive_local().and_utc().timestamp_millis()),
            delete_row_count: Some(self.deletes),
            embedded_index,
            file_source: Some(0),
            value_stats_cols: None,
            external_path,
            first_row_id: None,
            write_cols,
        };
        let Some(blobs) = self.blobs else {
            return Ok(vec![data_file]);
        };
        let blob_files = blobs
            .finish(io, &self.dir, &self.stem, &data_file, self.external.as_ref())
            .await?;
        Ok(std::iter::once(data_file).chain(blob_files).collect())
    }
}

/// Stores a new file `name` of the bucket directory `dir`: below the table, or at an external
/// path, whose URI it returns.
pub(super) async fn store(
    io: &FileIO,
    external: Option<&ExternalPaths>,
    dir: &str,
    name: &str,
    bytes: Vec<u8>,
) -> Result<Option<String>> {
    match external {
        Some(external) => {
            let uri = external.next_uri(dir, name);
            io.write_at(&io.external_path(&uri)?, bytes).await?;
            Ok(Some(uri))
        }
        None => {
            io.write(&format!("{dir}/{name}"), bytes).await?;
            Ok(None)
        }
    }
}

fn scalar_at(array: &ArrayRef, row: usize) -> Result<ScalarValue> {
    ScalarValue::try_from_array(array, row).map_err(|e| Error::Unsupported(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use object_store::memory::InMemory;

    fn table() -> TableSchema {
        let json = r#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"BIGINT NOT NULL"},{"id":1,"name":"v","type":"STRING"}],"highestFieldId":1,"partitionKeys":[],"primaryKeys":["k"],"options":{},"timeMillis":0}"#;
        TableSchema::from_json(json.as_bytes(), "schema-0").unwrap()
    }

    /// A write big enough to compute its statistics beside the encoding describes the file as
    /// the same rows written in small pieces (statistics before the encoding) do.
    #[tokio::test]
    async fn statistics_beside_the_encoding_match_those_before_it() {
        let schema = table();
        let n = PARALLEL_STATS_MIN_ROWS as i64 + 1000;
        let values = RecordBatch::try_new(
            schema.arrow_schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(-5..n - 5)),
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i % 9 != 0).then(|| format!("v{}", i % 977))),
                )),
            ],
        )
        .unwrap();
        let seqs = Int64Array::from_iter_values((0..n).map(|i| 100 + (i * 7) % n));
        let kinds = Int8Array::from_iter_values((0..n).map(|i| if i % 10 == 3 { 3 } else { 0 }));
        let io = FileIO::new(
            Arc::new(InMemory::new()),
            object_store::path::Path::from("t"),
            "memory:///t".into(),
        );

        let mut whole = DataFileWriter::new("bucket-0", "data", 0, &schema, true).unwrap();
        whole
            .write(&DataFileRows {
                values: values.clone(),
                kv: Some((seqs.clone(), kinds.clone())),
            })
            .unwrap();
        let mut pieces = DataFileWriter::new("bucket-0", "data", 0, &schema, true).unwrap();
        let piece = 4096;
        for offset in (0..n as usize).step_by(piece) {
            let len = piece.min(n as usize - offset);
            pieces
                .write(&DataFileRows {
                    values: values.slice(offset, len),
                    kv: Some((seqs.slice(offset, len), kinds.slice(offset, len))),
                })
                .unwrap();
        }
        let (whole, pieces) = (
            whole.finish(&io).await.unwrap().remove(0),
            pieces.finish(&io).await.unwrap().remove(0),
        );
        assert_eq!(whole.row_count, n);
        assert_eq!(
            (
                &whole.min_key,
                &whole.max_key,
                &whole.key_stats,
                &whole.value_stats
            ),
            (
                &pieces.min_key,
                &pieces.max_key,
                &pieces.key_stats,
                &pieces.value_stats
            )
        );
        assert_eq!(
            (
                whole.min_sequence_number,
                whole.max_sequence_number,
                whole.delete_row_count
            ),
            (100, 100 + n - 1, Some(n / 10 + i64::from(n % 10 > 3)))
        );
        assert_eq!(
            (
                pieces.min_sequence_number,
                pieces.max_sequence_number,
                pieces.delete_row_count
            ),
            (
                whole.min_sequence_number,
                whole.max_sequence_number,
                whole.delete_row_count
            )
        );
    }

    /// Parquet files take the statistics of integer, date and string columns from the
    /// writer's chunk statistics, ORC files accumulate every column: the same rows (negative
    /// numbers, nulls, an all-null column, strings past the 16 characters Java keeps, with
    /// multi-byte characters, and a double column) get the same key and value statistics from
    /// both.
    #[tokio::test]
    async fn parquet_statistics_from_the_writer_match_accumulated_ones() {
        use arrow::array::{Date32Array, Float64Array, Int16Array, Int32Array, Int8Array};
        let table = |format: &str| {
            let json = format!(
                r#"{{"version":3,"id":0,"fields":[{{"id":0,"name":"k","type":"STRING NOT NULL"}},{{"id":1,"name":"a","type":"TINYINT"}},{{"id":2,"name":"b","type":"SMALLINT"}},{{"id":3,"name":"c","type":"INT"}},{{"id":4,"name":"d","type":"BIGINT"}},{{"id":5,"name":"e","type":"DATE"}},{{"id":6,"name":"f","type":"STRING"}},{{"id":7,"name":"g","type":"DOUBLE"}},{{"id":8,"name":"h","type":"INT"}}],"highestFieldId":8,"partitionKeys":[],"primaryKeys":["k"],"options":{{"file.format":"{format}"}},"timeMillis":0}}"#
            );
            TableSchema::from_json(json.as_bytes(), "schema-0").unwrap()
        };
        let n = 5_000i64;
        let schema = table("parquet");
        let values = RecordBatch::try_new(
            schema.arrow_schema(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("key-{i:05}")),
                )),
                Arc::new(Int8Array::from_iter(
                    (0..n).map(|i| (i % 7 != 0).then_some((i % 200 - 100) as i8)),
                )),
                Arc::new(Int16Array::from_iter(
                    (0..n).map(|i| Some((i * 13 % 3000 - 1500) as i16)),
                )),
                Arc::new(Int32Array::from_iter(
                    (0..n).map(|i| (i % 3 != 1).then_some((i * 7919 % n) as i32 - 2000)),
                )),
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| Some(-(i * 104_729 % n) << 33)),
                )),
                Arc::new(Date32Array::from_iter(
                    (0..n).map(|i| (i % 5 != 2).then_some((i * 31 % 900) as i32 - 400)),
                )),
                Arc::new(StringArray::from_iter((0..n).map(|i| {
                    (i % 4 != 0).then(|| {
                        format!(
                            "{}ß-value-{}",
                            ["zürich", "ab", "\u{10FFFF}"][(i % 3) as usize],
                            i * 37 % n
                        )
                    })
                }))),
                Arc::new(Float64Array::from_iter(
                    (0..n).map(|i| (i % 6 != 0).then_some((i * 17 % n) as f64 - 99.5)),
                )),
                Arc::new(Int32Array::from(vec![None; n as usize])),
            ],
        )
        .unwrap();
        let seqs = Int64Array::from_iter_values(0..n);
        let kinds = Int8Array::from_iter_values((0..n).map(|_| 0));
        let io = FileIO::new(
            Arc::new(InMemory::new()),
            object_store::path::Path::from("t"),
            "memory:///t".into(),
        );
        let mut written = Vec::new();
        for format in ["parquet", "orc"] {
            let schema = table(format);
            let mut writer = DataFileWriter::new("bucket-0", "data", 0, &schema, true).unwrap();
            for offset in (0..n as usize).step_by(1_700) {
                let len = 1_700.min(n as usize - offset);
                writer
                    .write(&DataFileRows {
                        values: values.slice(offset, len),
                        kv: Some((seqs.slice(offset, len), kinds.slice(offset, len))),
                    })
                    .unwrap();
            }
            written.push(writer.finish(&io).await.unwrap().remove(0));
        }
        let (parquet, orc) = (&written[0], &written[1]);
        assert!(parquet.file_name.ends_with(".parquet") && orc.file_name.ends_with(".orc"));
        assert_eq!(parquet.key_stats, orc.key_stats);
        assert_eq!(parquet.value_stats, orc.value_stats);
        let nulls = parquet.value_stats.null_counts.clone().unwrap();
        assert_eq!(nulls[8], Some(n));
        assert_eq!(nulls[3], Some((0..n).filter(|i| i % 3 == 1).count() as i64));
    }
}
