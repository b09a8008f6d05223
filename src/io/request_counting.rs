//! An `ObjectStore` wrapper that counts requests by kind and the bytes fetched, and can add a
//! fixed latency to every request, as a remote object store has it. Sessions on object stores
//! see their statements' requests through it (`EXPLAIN ANALYZE`: `requests_get`,
//! `requests_list`, `requests_head`, `bytes_fetched`); benches and tests measure request counts
//! and round-trip costs with it against a local server.
//!
//! A ranged read of several ranges is counted as the GETs it becomes: `get_ranges` is left to
//! the trait's default, which coalesces nearby ranges and fetches each run with one GET through
//! this wrapper.

use std::fmt;
use std::ops::Sub;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// Requests made through a [`RequestCountingStore`], by kind, as they happen.
#[derive(Debug, Default)]
pub struct RequestCounts {
    get: AtomicU64,
    head: AtomicU64,
    list: AtomicU64,
    put: AtomicU64,
    delete: AtomicU64,
    copy: AtomicU64,
    bytes_fetched: AtomicU64,
}

/// The counts at one moment; the difference of two is what happened in between.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RequestSnapshot {
    /// GETs of whole objects or ranges.
    pub get: u64,
    /// HEADs (metadata of one object).
    pub head: u64,
    /// LISTs (each listing call; a paginated listing counts once per call).
    pub list: u64,
    /// PUTs, and multipart uploads started.
    pub put: u64,
    /// DELETEs.
    pub delete: u64,
    /// COPYs and renames.
    pub copy: u64,
    /// Bytes of object data fetched by GETs.
    pub bytes_fetched: u64,
}

impl RequestSnapshot {
    /// Every request of any kind.
    pub fn total(&self) -> u64 {
        self.get + self.head + self.list + self.put + self.delete + self.copy
    }
}

impl Sub for RequestSnapshot {
    type Output = RequestSnapshot;

    fn sub(self, earlier: RequestSnapshot) -> RequestSnapshot {
        RequestSnapshot {
            get: self.get - earlier.get,
            head: self.head - earlier.head,
            list: self.list - earlier.list,
            put: self.put - earlier.put,
            delete: self.delete - earlier.delete,
            copy: self.copy - earlier.copy,
            bytes_fetched: self.bytes_fetched - earlier.bytes_fetched,
        }
    }
}

impl fmt::Display for RequestSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests (get {}, head {}, list {}, put {}, delete {}, copy {}), {} bytes fetched",
            self.total(),
            self.get,
            self.head,
            self.list,
            self.put,
            self.delete,
            self.copy,
            self.bytes_fetched
        )
    }
}

impl RequestCounts {
    /// The counts now.
    pub fn snapshot(&self) -> RequestSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RequestSnapshot {
            get: load(&self.get),
            head: load(&self.head),
            list: load(&self.list),
            put: load(&self.put),
            delete: load(&self.delete),
            copy: load(&self.copy),
            bytes_fetched: load(&self.bytes_fetched),
        }
    }
}

/// Delegates to `inner`, counting every request in [`RequestCounts`] and waiting `latency`
/// before each (zero: no wait).
#[derive(Debug)]
pub struct RequestCountingStore {
    inner: Arc<dyn ObjectStore>,
    counts: Arc<RequestCounts>,
    latency: Duration,
}

impl RequestCountingStore {
    /// `inner` counted into fresh counts, with `latency` added per request.
    pub fn new(inner: Arc<dyn ObjectStore>, latency: Duration) -> Self {
        RequestCountingStore {
            inner,
            counts: Arc::new(RequestCounts::default()),
            latency,
        }
    }

    /// The live counts of this store.
    pub fn counts(&self) -> Arc<RequestCounts> {
        Arc::clone(&self.counts)
    }

    /// Counts (and waits for) one request; each is logged at trace level
    /// (`RUST_LOG=datafusion_paimon::io=trace` shows what a statement asks of the store).
    async fn request(&self, counter: &AtomicU64, kind: &str, location: Option<&Path>) {
        log::trace!(
            "object store request: {kind} {}",
            location.map_or("/", |l| l.as_ref())
        );
        counter.fetch_add(1, Ordering::Relaxed);
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
    }

    /// A listing that counts (and waits) once, when it is first polled.
    fn counted_listing(
        &self,
        listing: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let counts = Arc::clone(&self.counts);
        let latency = self.latency;
        futures::stream::once(async move {
            counts.list.fetch_add(1, Ordering::Relaxed);
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            listing
        })
        .flatten()
        .boxed()
    }
}

impl fmt::Display for RequestCountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestCounting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for RequestCountingStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.request(&self.counts.put, "PUT", Some(location)).await;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.request(&self.counts.put, "PUT (multipart)", Some(location))
            .await;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let head = options.head;
        let (counter, kind) = if head {
            (&self.counts.head, "HEAD")
        } else {
            (&self.counts.get, "GET")
        };
        self.request(counter, kind, Some(location)).await;
        let result = self.inner.get_opts(location, options).await?;
        if !head {
            self.counts
                .bytes_fetched
                .fetch_add(result.range.end - result.range.start, Ordering::Relaxed);
        }
        Ok(result)
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let counts = Arc::clone(&self.counts);
        let latency = self.latency;
        let counted = locations
            .then(move |location| {
                let counts = Arc::clone(&counts);
                async move {
                    counts.delete.fetch_add(1, Ordering::Relaxed);
                    if !latency.is_zero() {
                        tokio::time::sleep(latency).await;
                    }
                    location
                }
            })
            .boxed();
        self.inner.delete_stream(counted)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        log::trace!(
            "object store request: LIST {}",
            prefix.map_or("/", |l| l.as_ref())
        );
        self.counted_listing(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        log::trace!(
            "object store request: LIST {}",
            prefix.map_or("/", |l| l.as_ref())
        );
        self.counted_listing(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.request(&self.counts.list, "LIST", prefix).await;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.request(&self.counts.copy, "COPY", Some(from)).await;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.request(&self.counts.copy, "RENAME", Some(from)).await;
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn counts_each_kind_and_the_bytes_fetched() {
        let store = RequestCountingStore::new(Arc::new(InMemory::new()), Duration::ZERO);
        let path = Path::from("a/b.bin");
        store.put(&path, PutPayload::from(vec![7u8; 100])).await.unwrap();
        store.get_range(&path, 10..30).await.unwrap();
        store.head(&path).await.unwrap();
        let listed: Vec<ObjectMeta> = store.list(Some(&Path::from("a"))).try_collect().await.unwrap();
        assert_eq!(listed.len(), 1);
        store.list_with_delimiter(Some(&Path::from("a"))).await.unwrap();
        // ranges within the coalescing distance: one GET of their span
        let before = store.counts().snapshot();
        store.get_ranges(&path, &[0..10, 12..20]).await.unwrap();
        let after = store.counts().snapshot();
        assert_eq!((after - before).get, 1);
        assert_eq!((after - before).bytes_fetched, 20);
        store.delete(&path).await.unwrap();
        let counts = store.counts().snapshot();
        assert_eq!(
            (counts.get, counts.head, counts.list, counts.put, counts.delete),
            (2, 1, 2, 1, 1)
        );
        assert_eq!(counts.bytes_fetched, 20 + 20);
    }
}
