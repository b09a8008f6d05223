//! The `BLOB` columns of an append data file (Paimon 1.4, data-evolution tables): written to
//! `.blob` files beside it, as Java's `RollingBlobFileWriter` does. The data file holds the other
//! columns (its `_WRITE_COLS` say which); each BLOB column gets files of its own, of about
//! `blob.target-file-size` each, that together hold the same rows in the same order. The commit
//! gives them the row ids of their data file (`meta::row_tracking`).
//!
//! ```text
//! data-<uuid>-0.parquet   columns id, name        rows 0..10
//! data-<uuid>-1.blob      column pic              rows 0..6
//! data-<uuid>-2.blob      column pic              rows 6..10
//! ```

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::DataType as ArrowType;

use super::{ExternalPaths, FileIO};
use crate::error::{Error, Result};
use crate::format::blob::BlobEncoder;
use crate::spec::{BinaryRow, DataFileMeta, SimpleStats, TableSchema, TypeKind};

/// `blob.target-file-size` when the table does not set it (Java: `target-file-size`'s default).
const DEFAULT_BLOB_TARGET: usize = 256 << 20;

struct BlobColumn {
    /// Position among the table's columns.
    position: usize,
    name: String,
    open: BlobEncoder,
    closed: Vec<BlobEncoder>,
}

/// The BLOB columns of one data file being written.
pub(crate) struct BlobColumns {
    columns: Vec<BlobColumn>,
    target: usize,
}

impl BlobColumns {
    /// The BLOB columns of `schema`'s rows, if it has any.
    pub(crate) fn of(schema: &TableSchema) -> Result<Option<Self>> {
        let options = crate::spec::TableOptions::parse(&schema.options)?;
        let columns: Vec<BlobColumn> = schema
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.data_type.kind == TypeKind::Blob)
            .map(|(position, f)| BlobColumn {
                position,
                name: f.name.clone(),
                open: BlobEncoder::default(),
                closed: vec![],
            })
            .collect();
        if columns.is_empty() {
            return Ok(None);
        }
        if let Some(c) = columns
            .iter()
            .find(|c| options.blob_descriptor_fields.contains(&c.name))
        {
            // (such a column holds descriptors of bytes stored elsewhere, inline in the data file)
            return Err(Error::Unsupported(format!(
                "Writing BLOB column '{}', a 'blob-descriptor-field', is not supported",
                c.name
            )));
        }
        if options.blob_as_descriptor {
            // (Java's writers then take descriptors as input and copy the bytes they point at)
            return Err(Error::Unsupported(
                "Writing BLOB columns of a table with 'blob-as-descriptor' = 'true' is not supported".into(),
            ));
        }
        let target = match schema.options.get("blob.target-file-size") {
            Some(v) => crate::spec::parse_memory_size(v).ok_or_else(|| {
                Error::Unsupported(format!(
                    "Option 'blob.target-file-size' is not a memory size: '{v}'"
                ))
            })?,
            None => DEFAULT_BLOB_TARGET,
        };
        Ok(Some(BlobColumns {
            columns,
            target: target.max(1),
        }))
    }

    /// Whether the table column at `position` is one of these.
    pub(crate) fn holds(&self, position: usize) -> bool {
        self.columns.iter().any(|c| c.position == position)
    }

    /// Appends the BLOB values of `rows` (every table column, in schema order).
    pub(crate) fn write(&mut self, rows: &RecordBatch) -> Result<()> {
        for column in &mut self.columns {
            let array = rows.column(column.position);
            let array = match array.data_type() {
                ArrowType::LargeBinary => array.clone(),
                _ => arrow::compute::cast(array, &ArrowType::LargeBinary)?,
            };
            let values = array.as_binary::<i64>();
            for row in 0..values.len() {
                column
                    .open
                    .append(values.is_valid(row).then(|| values.value(row)));
                if column.open.size() >= self.target {
                    column.closed.push(std::mem::take(&mut column.open));
                }
            }
        }
        Ok(())
    }

    /// Stores the `.blob` files of the data file `<dir>/<stem>-0.<format>` as
    /// `<stem>-1.blob`, `<stem>-2.blob`, ... (at external paths as the data file) and returns their metadata (the data file's
    /// schema, level and sequence numbers; no statistics, as Java writes none).
    pub(crate) async fn finish(
        self,
        io: &FileIO,
        dir: &str,
        stem: &str,
        data_file: &DataFileMeta,
        external: Option<&ExternalPaths>,
    ) -> Result<Vec<DataFileMeta>> {
        let empty = BinaryRow::encode(&[])?;
        let no_stats = SimpleStats {
            min_values: empty.clone(),
            max_values: empty.clone(),
            null_counts: Some(vec![]),
        };
        let mut out = Vec::new();
        let mut counter = 1;
        for column in self.columns {
            let mut files = column.closed;
            if column.open.rows() > 0 {
                files.push(column.open);
            }
            for encoder in files {
                let rows = encoder.rows() as i64;
                let bytes = encoder.finish();
                let name = format!("{stem}-{counter}.blob");
                counter += 1;
                let file_size = bytes.len() as i64;
                let external_path = super::data_file_write::store(io, external, dir, &name, bytes).await?;
                out.push(DataFileMeta {
                    file_name: name,
                    file_size,
                    row_count: rows,
                    min_key: empty.clone(),
                    max_key: empty.clone(),
                    key_stats: no_stats.clone(),
                    value_stats: no_stats.clone(),
                    min_sequence_number: data_file.min_sequence_number,
                    max_sequence_number: data_file.max_sequence_number,
                    schema_id: data_file.schema_id,
                    level: data_file.level,
                    extra_files: vec![],
                    creation_time: data_file.creation_time,
                    delete_row_count: Some(0),
                    embedded_index: None,
                    file_source: data_file.file_source,
                    value_stats_cols: Some(vec![]),
                    external_path,
                    first_row_id: None,
                    write_cols: Some(vec![column.name.clone()]),
                });
            }
        }
        Ok(out)
    }
}
