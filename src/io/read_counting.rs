//! An `ObjectStore` wrapper that counts the bytes fetched through it, so a scan can report what
//! it really read (`bytes_scanned`) after row-group, page and file pruning, not file sizes.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::physical_plan::metrics::Count;
use futures::stream::BoxStream;
use object_store::path::Path;

use crate::progress::StatementProgress;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// Delegates everything to `inner`; adds the length of every range fetched to `bytes`.
#[derive(Debug)]
pub(crate) struct ReadCountingStore {
    inner: Arc<dyn ObjectStore>,
    bytes: Count,
    /// The session's live counters, if it has them.
    progress: Option<Arc<StatementProgress>>,
}

impl ReadCountingStore {
    pub(crate) fn new(
        inner: Arc<dyn ObjectStore>,
        bytes: Count,
        progress: Option<Arc<StatementProgress>>,
    ) -> Self {
        ReadCountingStore {
            inner,
            bytes,
            progress,
        }
    }

    fn count(&self, n: usize) {
        self.bytes.add(n);
        if let Some(p) = &self.progress {
            p.add_bytes_read(n);
        }
    }
}

impl fmt::Display for ReadCountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[async_trait]
impl ObjectStore for ReadCountingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let head = options.head;
        let result = self.inner.get_opts(location, options).await?;
        if !head {
            self.count((result.range.end - result.range.start) as usize);
        }
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let fetched = self.inner.get_ranges(location, ranges).await?;
        self.count(fetched.iter().map(Bytes::len).sum());
        Ok(fetched)
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}
