//! Reading a Parquet file's metadata in one request: the last [`TAIL_BYTES`] of the file are
//! fetched at once (footer, metadata and, as writers place them just before the footer, the page
//! indexes), and every later read inside them is served from memory. A file no larger than the
//! tail, or than the caller's whole-file size (on object stores, `io::FooterCache`), is
//! fetched whole by that one request. On object stores each request is a round trip;
//! reading the footer length, the metadata and the page index separately costs three.
//!
//! A small file opened from a footer read before is fetched whole at its first read, so its
//! filter columns and the other columns (read one after the other) cost one request.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
#[allow(
    deprecated,
    reason = "ParquetObjectReader still serves object_store 0.13; revisit with arrow-rs #10308"
)]
use parquet::arrow::async_reader::{AsyncFileReader, ParquetObjectReader};
use parquet::errors::Result;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

/// Bytes fetched from the end of a file when its metadata is read.
pub(super) const TAIL_BYTES: u64 = 64 * 1024;

/// A [`ParquetObjectReader`] that reads the metadata from one tail fetch and keeps the tail.
#[allow(deprecated, reason = "see the import")]
pub(super) struct TailReader {
    inner: ParquetObjectReader,
    size: u64,
    /// The file's last bytes, from `size - tail.len()`, once fetched.
    tail: Option<Bytes>,
    /// Fetch the whole file at the first read (a small file whose metadata is known).
    whole_first: bool,
    /// Files up to this size are fetched whole (at least the tail's size).
    whole_file_bytes: u64,
}

#[allow(deprecated, reason = "see the import")]
impl TailReader {
    /// A reader fetching files up to `whole_file_bytes` (at least [`TAIL_BYTES`]) whole.
    pub(super) fn new(inner: ParquetObjectReader, size: u64, whole_file_bytes: u64) -> Self {
        TailReader {
            inner,
            size,
            tail: None,
            whole_first: false,
            whole_file_bytes: whole_file_bytes.max(TAIL_BYTES),
        }
    }

    /// A reader of a file whose metadata is known: a file no larger than the whole-file size
    /// is fetched whole when first read.
    pub(super) fn with_known_metadata(inner: ParquetObjectReader, size: u64, whole_file_bytes: u64) -> Self {
        let reader = Self::new(inner, size, whole_file_bytes);
        TailReader {
            whole_first: size <= reader.whole_file_bytes,
            ..reader
        }
    }

    async fn fetch_whole_if_small(&mut self) -> Result<()> {
        if self.whole_first && self.tail.is_none() {
            self.whole_first = false;
            self.tail = Some(self.inner.get_bytes(0..self.size).await?);
        }
        Ok(())
    }

    /// `range` from the kept tail, if it lies inside it.
    fn kept_range(&self, range: &Range<u64>) -> Option<Bytes> {
        let tail = self.tail.as_ref()?;
        let start = self.size - tail.len() as u64;
        (range.start >= start && range.end <= self.size)
            .then(|| tail.slice((range.start - start) as usize..(range.end - start) as usize))
    }
}

impl AsyncFileReader for TailReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            self.fetch_whole_if_small().await?;
            match self.kept_range(&range) {
                Some(bytes) => Ok(bytes),
                None => self.inner.get_bytes(range).await,
            }
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
            self.fetch_whole_if_small().await?;
            let served: Vec<Option<Bytes>> = ranges.iter().map(|r| self.kept_range(r)).collect();
            if served.iter().all(Option::is_some) {
                return Ok(served.into_iter().flatten().collect());
            }
            let missing: Vec<Range<u64>> = ranges
                .iter()
                .zip(&served)
                .filter(|(_, s)| s.is_none())
                .map(|(r, _)| r.clone())
                .collect();
            let mut fetched = self.inner.get_byte_ranges(missing).await?.into_iter();
            Ok(served
                .into_iter()
                .map(|s| s.or_else(|| fetched.next()).unwrap_or_default())
                .collect())
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        async move {
            let start = if self.size <= self.whole_file_bytes {
                0
            } else {
                self.size - TAIL_BYTES
            };
            let tail = self.inner.get_bytes(start..self.size).await?;
            self.tail = Some(tail);
            let (column_index, offset_index) = match options {
                Some(o) => (o.column_index_policy(), o.offset_index_policy()),
                None => (PageIndexPolicy::Skip, PageIndexPolicy::Skip),
            };
            let size = self.size;
            let reader = ParquetMetaDataReader::new()
                .with_metadata_options(options.map(|o| o.metadata_options().clone()))
                .with_column_index_policy(column_index)
                .with_offset_index_policy(offset_index)
                .with_prefetch_hint(Some(TAIL_BYTES as usize));
            Ok(Arc::new(reader.load_and_finish(self, size).await?))
        }
        .boxed()
    }
}
