//! Files at external paths on another object store than the table's (`data-file.external-paths`
//! on another bucket or scheme): a table's `FileIO` reaches them through its own store, which
//! routes the paths below [`EXTERNAL`] to the store the session's object store registry holds
//! for their URL, so every reader and writer that takes a `FileIO` path works on them unchanged.
//!
//! ```text
//! s3://other/ext/p=1/bucket-0/data-1.parquet  ──►  paimon-external/s3/other/ext/p=1/bucket-0/data-1.parquet
//!                                                  └─► registry.get_store("s3://other")  ext/p=1/...
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreRegistry;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::{Path, PathPart};
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// The first path segment of a file on another store; then its scheme and authority.
pub(crate) const EXTERNAL: &str = "paimon-external";

/// The path this module routes for `url` (scheme and authority lowercased, as Java's URI
/// compares them).
pub(crate) fn external_location(url: &url::Url) -> std::result::Result<Path, object_store::path::Error> {
    let scheme = url.scheme().to_ascii_lowercase();
    let authority = url.host_str().unwrap_or("").to_ascii_lowercase();
    let rest = Path::from_url_path(url.path())?;
    let mut parts: Vec<PathPart<'static>> = vec![
        PathPart::from(EXTERNAL),
        PathPart::from(scheme),
        PathPart::from(if authority.is_empty() {
            "-".to_string()
        } else {
            authority
        }),
    ];
    parts.extend(rest.parts().map(|p| PathPart::from(p.as_ref().to_string())));
    Ok(Path::from_iter(parts))
}

/// The table's store, with the paths below [`EXTERNAL`] sent to the registry's stores.
#[derive(Debug)]
pub(crate) struct RoutedStore {
    inner: Arc<dyn ObjectStore>,
    registry: Arc<dyn ObjectStoreRegistry>,
}

impl RoutedStore {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, registry: Arc<dyn ObjectStoreRegistry>) -> Self {
        RoutedStore { inner, registry }
    }

    /// The store and path of `location`.
    fn route(&self, location: &Path) -> Result<(Arc<dyn ObjectStore>, Path)> {
        let mut parts = location.parts();
        if parts.next().is_none_or(|p| p.as_ref() != EXTERNAL) {
            return Ok((Arc::clone(&self.inner), location.clone()));
        }
        let (Some(scheme), Some(authority)) = (parts.next(), parts.next()) else {
            return Ok((Arc::clone(&self.inner), location.clone()));
        };
        let authority = match authority.as_ref() {
            "-" => "",
            a => a,
        };
        let base = format!("{}://{authority}", scheme.as_ref());
        let url = url::Url::parse(&base).map_err(|e| object_store::Error::Generic {
            store: "paimon external path",
            source: Box::new(e),
        })?;
        let path = Path::from_iter(parts.map(|p| PathPart::from(p.as_ref().to_string())));
        let store = self.registry.get_store(&url).map_err(|e| object_store::Error::Generic {
            store: "paimon external path",
            source: format!(
                "data file {base}/{path} is on an object store no store is registered for ({base}: register one in the session's object store registry): {e}"
            )
            .into(),
        })?;
        Ok((store, path))
    }
}

impl fmt::Display for RoutedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[async_trait]
impl ObjectStore for RoutedStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        let (store, path) = self.route(location)?;
        store.put_opts(&path, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let (store, path) = self.route(location)?;
        store.put_multipart_opts(&path, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let (store, path) = self.route(location)?;
        let mut result = store.get_opts(&path, options).await?;
        result.meta.location = location.clone();
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let (store, path) = self.route(location)?;
        store.get_ranges(&path, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let inner = Arc::clone(&self.inner);
        let registry = Arc::clone(&self.registry);
        locations
            .then(move |location| {
                let router = RoutedStore {
                    inner: Arc::clone(&inner),
                    registry: Arc::clone(&registry),
                };
                async move {
                    let location = location?;
                    let (store, path) = router.route(&location)?;
                    let mut deleted = store.delete_stream(futures::stream::once(async { Ok(path) }).boxed());
                    match deleted.next().await {
                        Some(Err(e)) => Err(e),
                        _ => Ok(location),
                    }
                }
            })
            .boxed()
    }

    // Listings stay within the table's store: nothing lists a foreign store's files.
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
        let ((from_store, from_path), (_, to_path)) = (self.route(from)?, self.route(to)?);
        from_store.copy_opts(&from_path, &to_path, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let ((from_store, from_path), (_, to_path)) = (self.route(from)?, self.route(to)?);
        from_store.rename_opts(&from_path, &to_path, options).await
    }
}
