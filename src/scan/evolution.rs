//! Data evolution (`data-evolution.enabled`, Paimon 1.3): a write may add only some columns of
//! rows that exist already, as a file covering the same row ids (`_FIRST_ROW_ID`) holding just
//! those columns (`_WRITE_COLS`); `BLOB` columns live in `.blob` files covering parts of the
//! range. A read stitches each row back together from every file of its row-id range
//! (Java's `DataEvolutionSplitRead`):
//!
//! ```text
//! files of a bucket ──(overlapping row-id ranges)──► groups
//! group: data files newest first (max sequence number), then .blob files by first row id
//!        each column from the newest data file that wrote it (or its blob files), NULL if none
//! ```
//!
//! A column's values come from one file for the whole group: a NULL in the newest file that
//! wrote the column stays NULL. Every data file of a group covers the group's whole range.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use arrow::compute::{concat_batches, filter_record_batch};
use datafusion::common::{exec_datafusion_err, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;

use super::exec::ScanContext;
use super::file_read::{read_file, FileToRead};
use super::metrics::ScanMetrics;
use super::split::SplitFile;
use crate::spec::{TableSchema, ROW_ID_FIELD_ID, SEQUENCE_NUMBER_FIELD_ID};

/// How the `BLOB` columns of a table read.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlobRead {
    /// Field ids of the columns stored inline as descriptors (`blob-descriptor-field`): read as
    /// the bytes they describe.
    descriptor_fields: Vec<i32>,
    /// `blob-as-descriptor`: every BLOB column reads as descriptors of its bytes.
    as_descriptor: bool,
}

impl BlobRead {
    pub(crate) fn of(schema: &TableSchema, options: &crate::spec::TableOptions) -> Self {
        BlobRead {
            descriptor_fields: options
                .blob_descriptor_fields
                .iter()
                .filter_map(|name| schema.field(name))
                .map(|f| f.id)
                .collect(),
            as_descriptor: options.blob_as_descriptor,
        }
    }
}

/// Whether `schema`'s table stitches rows from several files.
pub(crate) fn enabled(schema: &TableSchema) -> bool {
    schema
        .options
        .get("data-evolution.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

fn is_blob(file: &SplitFile) -> bool {
    file.file_name.to_ascii_lowercase().ends_with(".blob")
}

/// The row ids a file covers, when it has them.
fn row_ids(file: &SplitFile) -> Option<(i64, i64)> {
    let first = file.first_row_id?;
    Some((first, first + file.row_count.max(1) - 1))
}

/// The sections of one bucket: a group of files per set of overlapping row-id ranges (each
/// file one run, data files newest first, then blob files by first row id); a file without
/// row ids is a group of its own.
pub(crate) fn row_id_groups(files: Vec<SplitFile>) -> Vec<Vec<Vec<SplitFile>>> {
    let (mut ranged, loose): (Vec<SplitFile>, Vec<SplitFile>) =
        files.into_iter().partition(|f| f.first_row_id.is_some());
    // (a stable sort: files of equal ranges keep their manifest order)
    ranged.sort_by_key(|f| row_ids(f).unwrap_or_default());
    let mut groups: Vec<Vec<SplitFile>> = Vec::new();
    let mut end = i64::MIN;
    for file in ranged {
        let (from, to) = row_ids(&file).unwrap_or_default();
        match groups.last_mut() {
            Some(group) if from <= end => {
                group.push(file);
                end = end.max(to);
            }
            _ => {
                groups.push(vec![file]);
                end = to;
            }
        }
    }
    let mut sections: Vec<Vec<Vec<SplitFile>>> = groups
        .into_iter()
        .map(|group| {
            let (mut blobs, mut data): (Vec<_>, Vec<_>) = group.into_iter().partition(is_blob);
            data.sort_by_key(|f| std::cmp::Reverse(f.max_sequence_number));
            blobs.sort_by_key(|f| (f.first_row_id, std::cmp::Reverse(f.max_sequence_number)));
            data.into_iter().chain(blobs).map(|f| vec![f]).collect()
        })
        .collect();
    sections.extend(loose.into_iter().map(|f| vec![vec![f]]));
    sections
}

/// Where one output column of a group comes from.
#[derive(Debug, Clone, PartialEq)]
enum Owner {
    /// This data file of the group (index among the data files).
    Data(usize),
    /// The group's blob files of this field.
    Blob(i32),
    /// The row id, counted from the newest data file's first row id.
    RowId,
    /// The newest data file's largest sequence number.
    Sequence,
    /// No file of the group wrote it: NULL.
    Nobody,
}

/// The field ids a file holds: its `_WRITE_COLS`, named as in its own schema.
fn written_ids(file: &SplitFile, schema: &TableSchema) -> Vec<i32> {
    match &file.write_cols {
        Some(cols) => cols
            .iter()
            .filter_map(|c| schema.field(c))
            .map(|f| f.id)
            .collect(),
        None => schema.fields.iter().map(|f| f.id).collect(),
    }
}

/// The rows of one group, stitched, in batches of `batch_size`; only the layout fields in
/// `only_fields` are filled (the others NULL).
pub(crate) fn group_stream(
    ctx: &Arc<ScanContext>,
    dir: &str,
    runs: Vec<Vec<SplitFile>>,
    batch_size: usize,
    only_fields: Option<Arc<[usize]>>,
    metrics: &ScanMetrics,
) -> SendableRecordBatchStream {
    let schema = Arc::clone(&ctx.layout.schema);
    let ctx = Arc::clone(ctx);
    let dir = dir.to_string();
    let metrics = metrics.clone();
    let files: Vec<SplitFile> = runs.into_iter().flatten().collect();
    let batch = async move { read_group(&ctx, &dir, files, only_fields, &metrics).await };
    let batches = futures::stream::once(batch)
        .map_ok(move |batch| {
            let rows = batch.num_rows();
            let step = batch_size.max(1);
            futures::stream::iter(
                (0..rows)
                    .step_by(step)
                    .map(move |at| Ok(batch.slice(at, step.min(rows - at)))),
            )
        })
        .try_flatten();
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
}

async fn read_group(
    ctx: &Arc<ScanContext>,
    dir: &str,
    files: Vec<SplitFile>,
    only_fields: Option<Arc<[usize]>>,
    metrics: &ScanMetrics,
) -> Result<RecordBatch> {
    let layout = &ctx.layout;
    let (blobs, data): (Vec<SplitFile>, Vec<SplitFile>) = files.into_iter().partition(is_blob);
    let Some(newest) = data.first() else {
        return Err(exec_datafusion_err!(
            "Blob file {} of {dir} has no data file covering its rows",
            blobs.first().map_or("?", |f| f.file_name.as_str())
        ));
    };
    let rows = newest.row_count.max(0) as usize;
    let schema_of = |f: &SplitFile| {
        ctx.file_schemas.get(&f.schema_id).cloned().ok_or_else(|| {
            exec_datafusion_err!(
                "Schema {} of data file {} is not loaded",
                f.schema_id,
                f.file_name
            )
        })
    };
    let data_ids = data
        .iter()
        .map(|f| Ok(written_ids(f, schema_of(f)?.as_ref())))
        .collect::<Result<Vec<_>>>()?;
    let blob_ids = blobs
        .iter()
        .map(|f| Ok(written_ids(f, schema_of(f)?.as_ref()).first().copied()))
        .collect::<Result<Vec<_>>>()?;
    let owners: Vec<Owner> = layout
        .fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            if only_fields.as_ref().is_some_and(|only| !only.contains(&i)) {
                return Owner::Nobody;
            }
            match field.id {
                ROW_ID_FIELD_ID => return Owner::RowId,
                SEQUENCE_NUMBER_FIELD_ID => return Owner::Sequence,
                _ => {}
            }
            if let Some(d) = data_ids.iter().position(|ids| ids.contains(&field.id)) {
                return Owner::Data(d);
            }
            if blob_ids.contains(&Some(field.id)) {
                return Owner::Blob(field.id);
            }
            Owner::Nobody
        })
        .collect();
    // each data file that owns a column, read for the columns it owns
    let store = metrics.counting(ctx.table_io.store());
    let mut read: Vec<Option<RecordBatch>> = vec![None; data.len()];
    for (d, file) in data.iter().enumerate() {
        let owned: Vec<usize> = owners
            .iter()
            .enumerate()
            .filter(|(_, o)| **o == Owner::Data(d))
            .map(|(i, _)| i)
            .collect();
        if owned.is_empty() {
            continue;
        }
        if file.row_count != newest.row_count {
            return Err(exec_datafusion_err!(
                "Data files {} and {} of {dir} share row ids but hold {} and {} rows",
                newest.file_name,
                file.file_name,
                newest.row_count,
                file.row_count
            ));
        }
        let path = ctx
            .table_io
            .data_file_path(dir, &file.file_name, file.external_path.as_deref())?;
        let mut to_read = FileToRead::whole(path, file.file_size, false, None);
        to_read.only_fields = Some(owned.into());
        to_read.footers = Some(Arc::clone(ctx.table_io.footers()));
        let stream = read_file(
            Arc::clone(&store),
            to_read,
            schema_of(file)?,
            Arc::clone(layout),
            8192,
        )
        .await?;
        let batches: Vec<RecordBatch> = stream.try_collect().await?;
        metrics.files_read.add(1);
        let batch = concat_batches(&layout.schema, &batches)?;
        if batch.num_rows() != rows {
            return Err(exec_datafusion_err!(
                "Data file {} of {dir} returned {} rows, its metadata says {rows}",
                file.file_name,
                batch.num_rows()
            ));
        }
        read[d] = Some(batch);
    }
    let first_row_id = newest.first_row_id.unwrap_or(0);
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(owners.len());
    for (i, owner) in owners.iter().enumerate() {
        let target = layout.schema.field(i).data_type();
        columns.push(match owner {
            Owner::Data(d) => {
                let column = Arc::clone(read[*d].as_ref().expect("read above").column(i));
                let field = &layout.fields[i];
                if ctx.blobs.descriptor_fields.contains(&field.id) && !ctx.blobs.as_descriptor {
                    let bytes = described_bytes(ctx, &field.name, &column, &store).await?;
                    arrow::compute::cast(&bytes, target)?
                } else {
                    column
                }
            }
            Owner::Blob(id) => {
                let files: Vec<&SplitFile> = blobs
                    .iter()
                    .zip(&blob_ids)
                    .filter(|(_, b)| **b == Some(*id))
                    .map(|(f, _)| f)
                    .collect();
                let column = blob_column(ctx, dir, &files, first_row_id, rows, &store, metrics).await?;
                arrow::compute::cast(&column, target)?
            }
            Owner::RowId => Arc::new(Int64Array::from_iter_values(
                (0..rows as i64).map(|p| first_row_id + p),
            )),
            Owner::Sequence => Arc::new(Int64Array::from(vec![newest.max_sequence_number; rows])),
            Owner::Nobody => new_null_array(target, rows),
        });
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let batch = RecordBatch::try_new_with_options(Arc::clone(&layout.schema), columns, &options)?;
    // the group's deletion vector (of its anchor file) counts positions in the group's rows
    match data.iter().chain(&blobs).find_map(|f| f.deletion.as_ref()) {
        Some(dv) => {
            let deleted = dv.load(&store).await?;
            let keep: arrow::array::BooleanArray =
                (0..rows as u64).map(|p| Some(!deleted.contains(p))).collect();
            Ok(filter_record_batch(&batch, &keep)?)
        }
        None => Ok(batch),
    }
}

/// One BLOB column over the group's `rows` rows (from `first_row_id`): the blob files of the
/// field, newest first where they overlap; a placeholder defers to an older file; rows no file
/// covers are NULL.
async fn blob_column(
    ctx: &Arc<ScanContext>,
    dir: &str,
    files: &[&SplitFile],
    first_row_id: i64,
    rows: usize,
    store: &Arc<dyn object_store::ObjectStore>,
    metrics: &ScanMetrics,
) -> Result<ArrayRef> {
    let mut decoded = Vec::with_capacity(files.len());
    let mut uris = Vec::with_capacity(files.len());
    for file in files {
        let path = ctx
            .table_io
            .data_file_path(dir, &file.file_name, file.external_path.as_deref())?;
        uris.push(store_uri(ctx.table_io.root_url(), &path));
        let bytes = store
            .get(&path)
            .await
            .map_err(|e| exec_datafusion_err!("Failed to read blob file /{path}: {e}"))?
            .bytes()
            .await
            .map_err(|e| exec_datafusion_err!("Failed to read blob file /{path}: {e}"))?;
        metrics.files_read.add(1);
        let column = crate::format::decode_blob_file(&bytes, &format!("/{path}"))?;
        decoded.push((file, column, uris.pop().expect("pushed above")));
    }
    // newest first: the first file with a value (not a placeholder) for a row gives it
    decoded.sort_by_key(|(f, _, _)| std::cmp::Reverse(f.max_sequence_number));
    let mut picks: Vec<Option<(usize, usize)>> = vec![None; rows];
    for (k, (file, column, _)) in decoded.iter().enumerate() {
        let start = file.first_row_id.unwrap_or(first_row_id) - first_row_id;
        for j in 0..column.len() {
            let row = start + j as i64;
            if row < 0 || row as usize >= rows {
                continue;
            }
            let pick = &mut picks[row as usize];
            if pick.is_none() && !column.placeholders[j] {
                *pick = Some((k, j));
            }
        }
    }
    if ctx.blobs.as_descriptor {
        // where each row's bytes are, instead of the bytes
        let descriptors: arrow::array::LargeBinaryArray = picks
            .iter()
            .map(|pick| {
                let (k, j) = (*pick)?;
                let (_, column, uri) = &decoded[k];
                let (offset, length) = column.payloads[j]?;
                let descriptor = crate::format::BlobDescriptor {
                    uri: uri.clone(),
                    offset: offset as i64,
                    length: length as i64,
                };
                Some(descriptor.serialize())
            })
            .collect();
        return Ok(Arc::new(descriptors));
    }
    // one interleave over the files' columns, NULL from a one-row source of its own
    let null = new_null_array(&arrow::datatypes::DataType::LargeBinary, 1);
    let mut sources: Vec<&dyn Array> = decoded.iter().map(|(_, c, _)| &c.values as &dyn Array).collect();
    sources.push(null.as_ref());
    let null_source = sources.len() - 1;
    let indices: Vec<(usize, usize)> = picks.iter().map(|p| p.unwrap_or((null_source, 0))).collect();
    Ok(arrow::compute::interleave(&sources, &indices)?)
}

/// The URI Paimon records for an object of the table's store: the table's scheme and
/// authority, then the object's path.
fn store_uri(root_url: &str, path: &object_store::path::Path) -> String {
    match url::Url::parse(root_url) {
        Ok(url) => format!("{}://{}/{path}", url.scheme(), url.host_str().unwrap_or("")),
        Err(_) => format!("/{path}"),
    }
}

/// The bytes each descriptor of a descriptor column (`blob-descriptor-field`) points at. A
/// descriptor names an object by URI: a path of the table's own object store (the same scheme
/// and authority, or a bare absolute path on a local warehouse).
async fn described_bytes(
    ctx: &Arc<ScanContext>,
    column_name: &str,
    column: &ArrayRef,
    store: &Arc<dyn object_store::ObjectStore>,
) -> Result<ArrayRef> {
    use arrow::array::AsArray;
    let column = arrow::compute::cast(column, &arrow::datatypes::DataType::LargeBinary)?;
    let values = column.as_binary::<i64>();
    let root = url::Url::parse(ctx.table_io.root_url()).ok();
    let mut out = arrow::array::LargeBinaryBuilder::new();
    for value in values.iter() {
        let Some(bytes) = value else {
            out.append_null();
            continue;
        };
        let descriptor = crate::format::BlobDescriptor::parse(bytes).ok_or_else(|| {
            exec_datafusion_err!("Column {column_name} holds a value that is not a blob descriptor")
        })?;
        let path = descriptor_path(root.as_ref(), &descriptor.uri).ok_or_else(|| {
            exec_datafusion_err!(
                "The blob descriptor in column {column_name} points at {}, which is not on the table's object store",
                descriptor.uri
            )
        })?;
        let start = descriptor.offset.max(0) as u64;
        let fetched = if descriptor.length < 0 {
            let object = store.get(&path).await;
            match object {
                Ok(o) => o.bytes().await.map(|b| b.slice(start as usize..)),
                Err(e) => Err(e),
            }
        } else {
            store
                .get_range(&path, start..start + descriptor.length as u64)
                .await
        };
        let fetched = fetched.map_err(|e| {
            exec_datafusion_err!(
                "The blob descriptor in column {column_name} points at {}, which cannot be read: {e}",
                descriptor.uri
            )
        })?;
        out.append_value(&fetched);
    }
    Ok(Arc::new(out.finish()))
}

/// The object-store path of a descriptor's URI, if it is on the table's store.
fn descriptor_path(root: Option<&url::Url>, uri: &str) -> Option<object_store::path::Path> {
    let same_store = |url: &url::Url| {
        root.is_some_and(|r| {
            r.scheme().eq_ignore_ascii_case(url.scheme())
                && r.host_str().unwrap_or("") == url.host_str().unwrap_or("")
        })
    };
    match url::Url::parse(uri) {
        Ok(url) if same_store(&url) => object_store::path::Path::from_url_path(url.path()).ok(),
        Ok(_) => None,
        // a bare path: the local file system's
        Err(_) if uri.starts_with('/') && root.is_some_and(|r| r.scheme() == "file") => {
            object_store::path::Path::from_url_path(uri).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, first: Option<i64>, rows: i64, max_seq: i64) -> SplitFile {
        SplitFile {
            first_row_id: first,
            row_count: rows,
            ..SplitFile::with_sequences(name, max_seq, max_seq)
        }
    }

    fn names(sections: &[Vec<Vec<SplitFile>>]) -> Vec<Vec<&str>> {
        sections
            .iter()
            .map(|s| s.iter().flatten().map(|f| f.file_name.as_str()).collect())
            .collect()
    }

    /// Overlapping ranges group (transitively), touching ones do not; data files newest first,
    /// then blob files by first row id; a file without row ids stands alone.
    #[test]
    fn files_group_by_overlapping_row_ids() {
        let files = vec![
            file("old.parquet", Some(0), 10, 1),
            file("b2.blob", Some(6), 4, 1),
            file("new.parquet", Some(0), 10, 3),
            file("b1.blob", Some(0), 6, 1),
            file("next.parquet", Some(10), 5, 2),
            file("loose.parquet", None, 3, 1),
        ];
        let sections = row_id_groups(files);
        assert_eq!(
            names(&sections),
            vec![
                vec!["new.parquet", "old.parquet", "b1.blob", "b2.blob"],
                vec!["next.parquet"],
                vec!["loose.parquet"],
            ]
        );
    }
}
