//! Data file formats: the one place of the read path that knows whether a data file is Parquet,
//! ORC or Avro (format.md §6). Paimon names every data file with its format's extension
//! (`data-<uuid>-<n>.orc`), so the format comes from the file name, not from the table's
//! current `file.format` (a table may hold files of several formats after `ALTER TABLE`, or
//! per level with `file.format.per.level`).
//!
//! ```text
//! open(path) ──► OpenedFile { schema: the file's columns }
//!                    └─ read(columns, deletion vector) ──► batches of those columns, file names
//! ```
//!
//! Callers match columns by name against [`OpenedFile::schema`] and adapt types afterwards;
//! every format returns its own Arrow types (ORC timestamps, Avro `int` row kinds, ...).
//!
//! Writing: [`WriteFormat::of_level`] reads `file.format`, `file.format.per.level` and
//! `file.compression`; [`FileEncoder`] builds a data file batch by batch. Field ids travel as
//! `PARQUET:field_id` field metadata (used by Parquet; ORC and Avro files are matched by name).

mod avro;
pub(crate) mod blob;
mod orc;
mod orc_write;
mod parquet;
mod value_filter;

pub(crate) use blob::{decode as decode_blob_file, BlobDescriptor};
pub(crate) use parquet::{intersect_ranges, rows_read, string_view_of};
pub(crate) use value_filter::{FileValueFilter, ValueFilter};

use crate::io::{CachedFooter, FooterCache};
use std::collections::BTreeMap;
use std::sync::Arc;

use ::parquet::file::metadata::ParquetMetaData;
use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::{exec_datafusion_err, plan_datafusion_err, Result};
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::deletion_vector::DeletionVector;

/// A data file format Paimon writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileFormat {
    Parquet,
    Orc,
    Avro,
}

impl FileFormat {
    /// The format of the data file `name`, from its extension.
    pub(crate) fn of_file(name: &str) -> Result<Self> {
        let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        match extension.as_deref() {
            Some("parquet") => Ok(FileFormat::Parquet),
            Some("orc") => Ok(FileFormat::Orc),
            Some("avro") => Ok(FileFormat::Avro),
            Some(other) => Err(exec_datafusion_err!(
                "Data file {name} has format '{other}', which is not supported (parquet, orc and avro are)"
            )),
            None => Err(exec_datafusion_err!(
                "Data file {name} has no format extension (.parquet, .orc or .avro)"
            )),
        }
    }

    /// The format named by `file.format` (Paimon's default: parquet).
    fn of_option(value: Option<&str>) -> Result<Self> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("parquet") => Ok(FileFormat::Parquet),
            Some("orc") => Ok(FileFormat::Orc),
            Some("avro") => Ok(FileFormat::Avro),
            Some(other) => Err(plan_datafusion_err!(
                "Option 'file.format' = '{other}' is not supported (parquet, orc or avro)"
            )),
        }
    }

    /// The extension of its data files.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            FileFormat::Parquet => "parquet",
            FileFormat::Orc => "orc",
            FileFormat::Avro => "avro",
        }
    }
}

/// How the data files of one level are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteFormat {
    pub(crate) format: FileFormat,
    /// `file.compression` (Paimon's default: zstd), lower case.
    pub(crate) compression: String,
    /// `file.compression.zstd-level` (default 1).
    pub(crate) zstd_level: i32,
}

impl WriteFormat {
    /// The format of files written at `level`: `file.format.per.level` (`0:avro,5:parquet`)
    /// where it names the level, else `file.format`.
    pub(crate) fn of_level(options: &BTreeMap<String, String>, level: i32) -> Result<Self> {
        let per_level = options
            .get("file.format.per.level")
            .into_iter()
            .flat_map(|v| v.split(','))
            .filter_map(|pair| pair.split_once(':'))
            .find(|(l, _)| l.trim().parse::<i32>().ok() == Some(level))
            .map(|(_, f)| f);
        let format = FileFormat::of_option(per_level.or(options.get("file.format").map(String::as_str)))?;
        let compression = options
            .get("file.compression")
            .map(|c| c.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "zstd".to_string());
        let zstd_level = match options.get("file.compression.zstd-level") {
            Some(v) => v.trim().parse().map_err(|_| {
                plan_datafusion_err!("Option 'file.compression.zstd-level' must be an integer, got '{v}'")
            })?,
            None => 1,
        };
        Ok(WriteFormat {
            format,
            compression,
            zstd_level,
        })
    }
}

impl WriteFormat {
    /// Checks the write options of a table as DDL does: every `file.format.per.level` entry is
    /// `<level>:<format>`, and `file.compression` is a codec of every format the table writes.
    pub(crate) fn check_options(options: &BTreeMap<String, String>) -> Result<()> {
        let mut levels = vec![0];
        if let Some(per_level) = options.get("file.format.per.level") {
            for pair in per_level.split(',').filter(|p| !p.trim().is_empty()) {
                let parsed = pair.split_once(':').and_then(|(l, f)| {
                    let level = l.trim().parse::<i32>().ok()?;
                    FileFormat::of_option(Some(f)).ok().map(|_| level)
                });
                match parsed {
                    Some(level) => levels.push(level),
                    None => {
                        return Err(plan_datafusion_err!(
                            "Option 'file.format.per.level' = '{per_level}': entry '{}' is not '<level>:<parquet|orc|avro>'",
                            pair.trim()
                        ))
                    }
                }
            }
        }
        for level in levels {
            let write = WriteFormat::of_level(options, level)?;
            let known = match write.format {
                FileFormat::Parquet => parquet::COMPRESSIONS,
                FileFormat::Orc => orc::COMPRESSIONS,
                FileFormat::Avro => avro::COMPRESSIONS,
            };
            if !known.contains(&write.compression.as_str()) {
                return Err(unknown_compression(
                    write.format,
                    &write.compression,
                    &known.join(", "),
                ));
            }
        }
        Ok(())
    }
}

/// One data file being encoded batch by batch, so that a file of `target-file-size` never
/// needs all its rows in memory at once; [`FileEncoder::size`] tells when to roll.
pub(crate) struct FileEncoder(Encoder);

/// A top-level column's min, max (typed nulls when no value is set) and null count over a
/// whole file, as its encoder computed them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EncodedColumnStats {
    pub(crate) min: datafusion::common::ScalarValue,
    pub(crate) max: datafusion::common::ScalarValue,
    pub(crate) nulls: i64,
}

/// A finished data file: its bytes and, by top-level column, the statistics its encoder
/// computed (see [`FileEncoder::computes_stats`]).
pub(crate) struct EncodedFile {
    pub(crate) bytes: Vec<u8>,
    pub(crate) column_stats: Vec<Option<EncodedColumnStats>>,
}

enum Encoder {
    Parquet(Box<parquet::Encoder>),
    Orc(orc::Encoder),
    Avro(avro::Encoder),
}

impl FileEncoder {
    pub(crate) fn new(write: &WriteFormat, schema: SchemaRef) -> Result<Self> {
        Ok(FileEncoder(match write.format {
            FileFormat::Parquet => Encoder::Parquet(Box::new(parquet::Encoder::new(write, schema)?)),
            FileFormat::Orc => Encoder::Orc(orc::Encoder::new(write, schema)?),
            FileFormat::Avro => Encoder::Avro(avro::Encoder::new(write, schema)?),
        }))
    }

    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match &mut self.0 {
            Encoder::Parquet(e) => e.write(batch),
            Encoder::Orc(e) => e.write(batch),
            Encoder::Avro(e) => e.write(batch),
        }
    }

    /// Estimated size of the file if it were finished now.
    pub(crate) fn size(&self) -> usize {
        match &self.0 {
            Encoder::Parquet(e) => e.size(),
            Encoder::Orc(e) => e.size(),
            Encoder::Avro(e) => e.size(),
        }
    }

    /// Whether [`FileEncoder::finish`] gives the statistics of a top-level column of
    /// `data_type`, so that the caller need not compute them: Parquet keeps exact min, max and
    /// null counts of integer, date and string columns.
    pub(crate) fn computes_stats(&self, data_type: &arrow::datatypes::DataType) -> bool {
        matches!(self.0, Encoder::Parquet(_)) && parquet::stats_from_writer(data_type)
    }

    /// The file's bytes and the statistics of the columns [`FileEncoder::computes_stats`] names.
    pub(crate) fn finish(self) -> Result<EncodedFile> {
        let unknown = |bytes: Vec<u8>| EncodedFile {
            bytes,
            column_stats: Vec::new(),
        };
        match self.0 {
            Encoder::Parquet(e) => e
                .finish()
                .map(|(bytes, column_stats)| EncodedFile { bytes, column_stats }),
            Encoder::Orc(e) => e.finish().map(unknown),
            Encoder::Avro(e) => e.finish().map(unknown),
        }
    }
}

/// An in-memory output the Avro writer owns a handle of, while the encoder can still
/// see how much was written.
#[derive(Clone, Default)]
struct SharedBuf(Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuf {
    fn len(&self) -> usize {
        self.0.lock().map(|b| b.len()).unwrap_or(0)
    }

    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }
}

impl std::io::Write for SharedBuf {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("file buffer poisoned"))?
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An unknown `file.compression` for `format`.
fn unknown_compression(
    format: FileFormat,
    compression: &str,
    known: &str,
) -> datafusion::error::DataFusionError {
    plan_datafusion_err!(
        "Option 'file.compression' = '{compression}' is not supported for {} files ({known})",
        format.extension()
    )
}

/// A data file whose metadata has been read.
pub(crate) struct OpenedFile {
    schema: SchemaRef,
    inner: Opened,
}

enum Opened {
    Parquet(parquet::Opened),
    Orc(orc::Opened),
    Avro(avro::Opened),
}

/// Opens the data file at `path` (`size` bytes) in the format its name says. With
/// `with_page_index`, a Parquet file's page index is loaded too where it has one.
pub(crate) async fn open(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
    with_page_index: bool,
) -> Result<OpenedFile> {
    open_fetching_whole(store, path, size, with_page_index, 0).await
}

/// As [`open`]; a Parquet file up to `whole_file_bytes` is fetched whole by the read of its
/// footer ([`FooterCache::whole_file_bytes`]).
async fn open_fetching_whole(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
    with_page_index: bool,
    whole_file_bytes: u64,
) -> Result<OpenedFile> {
    let format = FileFormat::of_file(path.as_ref())?;
    let inner = match format {
        FileFormat::Parquet => {
            Opened::Parquet(parquet::open(store, path, size, with_page_index, whole_file_bytes).await?)
        }
        FileFormat::Orc => Opened::Orc(orc::open(store, path).await?),
        FileFormat::Avro => Opened::Avro(avro::open(store, path).await?),
    };
    let schema = match &inner {
        Opened::Parquet(p) => p.schema(),
        Opened::Orc(o) => o.schema(),
        Opened::Avro(a) => a.schema(),
    };
    Ok(OpenedFile { schema, inner })
}

/// As [`open`], through `footers`: a Parquet file opened before (same path and size) is
/// opened from its footer and page index read then.
pub(crate) async fn open_cached(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
    with_page_index: bool,
    footers: &FooterCache,
) -> Result<OpenedFile> {
    if !matches!(FileFormat::of_file(path.as_ref())?, FileFormat::Parquet) {
        return open(store, path, size, with_page_index).await;
    }
    let key = format!("{path}#{size}");
    let whole_file_bytes = footers.whole_file_bytes();
    if let Some(cached) = footers.get(&key).filter(|c| c.page_index || !with_page_index) {
        let inner = parquet::open_with_metadata(store, path, size, cached.metadata, whole_file_bytes)?;
        return Ok(OpenedFile {
            schema: inner.schema(),
            inner: Opened::Parquet(inner),
        });
    }
    let opened = open_fetching_whole(store, path, size, with_page_index, whole_file_bytes).await?;
    if let Some(metadata) = opened.parquet_metadata() {
        let cached = CachedFooter {
            metadata: Arc::clone(metadata),
            page_index: with_page_index,
        };
        footers.put(&key, cached, metadata.memory_size());
    }
    Ok(opened)
}

/// The Parquet file at `path` opened from its footer (and page index) read before: a file
/// read several times fetches its metadata once.
pub(crate) fn open_parquet_with_metadata(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    size: u64,
    metadata: Arc<ParquetMetaData>,
) -> Result<OpenedFile> {
    let inner = parquet::open_with_metadata(store, path, size, metadata, 0)?;
    Ok(OpenedFile {
        schema: inner.schema(),
        inner: Opened::Parquet(inner),
    })
}

impl OpenedFile {
    /// The file's columns, with the names they were written with.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The Parquet footer (with the page index if loaded); `None` for other formats.
    pub(crate) fn parquet_metadata(&self) -> Option<&Arc<ParquetMetaData>> {
        match &self.inner {
            Opened::Parquet(p) => Some(p.metadata()),
            _ => None,
        }
    }

    /// The rows of the file except those `deleted` marks, with only `columns` (names of
    /// [`Self::schema`]; unknown names are skipped), in batches of at most `batch_size` rows.
    /// `wanted` narrows the rows by position (ascending ranges) and `filter` by value: Parquet
    /// skips the others; ORC and Avro, read whole, may return them anyway, so both are hints,
    /// not filters. Parquet decodes the string columns named in `as_views` as `Utf8View`;
    /// the other formats return them as written (a caller casts).
    pub(crate) fn read(
        self,
        columns: &[String],
        as_views: &[String],
        deleted: Option<&DeletionVector>,
        wanted: Option<&[std::ops::Range<usize>]>,
        filter: Option<FileValueFilter>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let deleted = deleted.filter(|dv| !dv.is_empty());
        match self.inner {
            Opened::Parquet(p) => p.read(columns, as_views, deleted, wanted, filter, batch_size),
            Opened::Orc(o) => o.read(columns, deleted, batch_size),
            Opened::Avro(a) => a.read(columns, deleted, batch_size),
        }
    }

    /// As [`Self::read`] with no filter, a Parquet file's columns decoded by two readers side
    /// by side (for a big file whose read is the longest task of its statement); the other
    /// formats read as [`Self::read`] does.
    pub(crate) fn read_side_by_side(
        self,
        columns: &[String],
        as_views: &[String],
        deleted: Option<&DeletionVector>,
        wanted: Option<&[std::ops::Range<usize>]>,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let deleted = deleted.filter(|dv| !dv.is_empty());
        match self.inner {
            Opened::Parquet(p) => p.read_side_by_side(columns, as_views, deleted, wanted, batch_size),
            inner => OpenedFile { inner, ..self }.read(columns, as_views, deleted, wanted, None, batch_size),
        }
    }
}

/// The whole object at `path` (ORC and Avro are decoded from memory; Paimon's data files are
/// bounded by `target-file-size`).
async fn fetch(store: &Arc<dyn ObjectStore>, path: &Path) -> Result<bytes::Bytes> {
    let get = store.get(path).await?;
    Ok(get.bytes().await?)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{FileFormat, WriteFormat};

    #[test]
    fn write_format_per_level_overrides_file_format() {
        let options: BTreeMap<String, String> = [
            ("file.format", "orc"),
            ("file.format.per.level", "0:avro, 5:parquet"),
            ("file.compression", "SNAPPY"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let at = |level| WriteFormat::of_level(&options, level).unwrap();
        assert_eq!(at(0).format, FileFormat::Avro);
        assert_eq!(at(3).format, FileFormat::Orc);
        assert_eq!(at(5).format, FileFormat::Parquet);
        assert_eq!(at(3).compression, "snappy");
        let default = WriteFormat::of_level(&BTreeMap::new(), 0).unwrap();
        assert_eq!(
            (default.format, default.compression.as_str()),
            (FileFormat::Parquet, "zstd")
        );
    }

    #[test]
    fn format_comes_from_the_extension() {
        assert_eq!(FileFormat::of_file("data-1-0.orc").unwrap(), FileFormat::Orc);
        assert_eq!(FileFormat::of_file("b/data-1-0.avro").unwrap(), FileFormat::Avro);
        assert_eq!(
            FileFormat::of_file("data-1-0.parquet").unwrap(),
            FileFormat::Parquet
        );
        let err = FileFormat::of_file("data-1-0.lance").unwrap_err().to_string();
        assert!(err.contains("data-1-0.lance") && err.contains("'lance'"), "{err}");
    }
}

/// Runs a step of a decoder that may panic on damaged input instead of returning an error
/// (orc-rust and the parquet crate do, on bad lengths, types or compressed blocks): the panic
/// becomes an error naming the file.
pub(crate) fn unless_panic<T>(format: &str, path: &Path, step: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step))
        .map_err(|panic| decoder_panicked(format, path, panic.as_ref()))
}

/// The error for a decoder's panic on `path`.
pub(crate) fn decoder_panicked(
    format: &str,
    path: &Path,
    panic: &(dyn std::any::Any + Send),
) -> datafusion::error::DataFusionError {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("no message");
    datafusion::common::exec_datafusion_err!(
        "Failed to read {format} data file /{path}: the decoder failed on damaged data ({message})"
    )
}

/// The batches of a synchronous decoder, each step guarded by [`unless_panic`], errors naming
/// the file; nothing follows the first error.
pub(crate) fn guarded_batches<E: std::fmt::Display>(
    format: &'static str,
    path: Path,
    mut decoder: impl Iterator<Item = std::result::Result<RecordBatch, E>>,
) -> impl Iterator<Item = Result<RecordBatch>> {
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let next = match unless_panic(format, &path, || decoder.next()) {
            Ok(None) => return None,
            Ok(Some(batch)) => {
                batch.map_err(|e| exec_datafusion_err!("Failed to read {format} data file /{path}: {e}"))
            }
            Err(e) => Err(e),
        };
        failed = next.is_err();
        Some(next)
    })
}
