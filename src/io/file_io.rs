//! `FileIO`: an object store plus a root path, with errors that name the file.

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use parquet::file::metadata::ParquetMetaData;

use super::ByteLru;
use crate::error::{Error, Result};

/// Bytes of decoded Parquet footers kept per catalog, and the most one file's may take.
const FOOTER_CACHE_BYTES: usize = 64 << 20;
const MAX_FOOTER_BYTES: usize = 8 << 20;

/// A Parquet footer read before, and whether the page index was asked for with it.
#[derive(Debug, Clone)]
pub(crate) struct CachedFooter {
    pub(crate) metadata: Arc<ParquetMetaData>,
    pub(crate) page_index: bool,
}

/// Footers of the Parquet data files read through one catalog, by path and size: data files
/// are immutable, so a file read again (the next query of a session, or a second partition of
/// the same bucket) skips fetching and decoding its footer and page index, as DataFusion's own
/// file metadata cache does for plain Parquet tables.
///
/// It also says how much of a small file the first read of it fetches: on an object store
/// (any scheme but `file`), a file up to [`REMOTE_WHOLE_FILE_BYTES`] is fetched whole by the
/// request that reads its footer, because a second round trip for its column chunks costs more
/// than the rest of the file (10-50 ms and a charge per request, where a megabyte arrives in a
/// few); on a local disk only the footer's tail is read, so a query reads the columns it names.
#[derive(Debug)]
pub(crate) struct FooterCache {
    footers: ByteLru<CachedFooter>,
    whole_file_bytes: u64,
}

/// Files up to this size are fetched whole on object stores ([`FooterCache`]).
pub(crate) const REMOTE_WHOLE_FILE_BYTES: u64 = 1024 * 1024;

impl FooterCache {
    fn for_root(root_url: &str) -> Self {
        let local = root_url.starts_with("file:") || !root_url.contains("://");
        FooterCache {
            footers: ByteLru::new(FOOTER_CACHE_BYTES, MAX_FOOTER_BYTES),
            whole_file_bytes: if local { 0 } else { REMOTE_WHOLE_FILE_BYTES },
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<CachedFooter> {
        self.footers.get(key)
    }

    pub(crate) fn put(&self, key: &str, footer: CachedFooter, bytes: usize) {
        self.footers.put(key, footer, bytes)
    }

    /// Files up to this many bytes are fetched whole at their first read (0: none beyond
    /// what the footer's tail read covers).
    pub(crate) fn whole_file_bytes(&self) -> u64 {
        self.whole_file_bytes
    }
}

/// An object store rooted at a directory (a warehouse or a table).
#[derive(Debug, Clone)]
pub(crate) struct FileIO {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// URL of the root, for messages and for DataFusion's object store registry.
    root_url: String,
    /// Shared by this FileIO and every one below it (the catalog's tables).
    footers: Arc<FooterCache>,
    /// A table's branch: its versioned metadata ([`BRANCH_DIRS`]) lives under
    /// `branch/branch-<name>/`; data, manifests and index files are the table's.
    branch: Option<Arc<str>>,
    /// Whether `store` reaches files on other stores through the session's registry
    /// ([`super::routed_store`]).
    routed: bool,
    /// The requests made through the catalog's store (`RequestCountingStore`), and where they
    /// stood when this table was opened for a statement: what `EXPLAIN ANALYZE` reports.
    requests: Option<(Arc<super::RequestCounts>, super::RequestSnapshot)>,
}

/// The URI of a file `name` in the directory of the file at `uri`.
pub(crate) fn beside(uri: &str, name: &str) -> String {
    let dir = uri.rsplit_once('/').map_or(uri, |(d, _)| d);
    format!("{dir}/{name}")
}

/// The directories of a table that each branch keeps for itself (Paimon's `BranchManager`).
pub(crate) const BRANCH_DIRS: &[&str] = &["schema", "snapshot", "tag", "changelog", "consumer"];

impl FileIO {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, root: Path, root_url: String) -> Self {
        let footers = Arc::new(FooterCache::for_root(&root_url));
        FileIO {
            store,
            root,
            root_url,
            footers,
            branch: None,
            routed: false,
            requests: None,
        }
    }

    /// This FileIO counting the requests of `counts` (its store counts into them).
    pub(crate) fn with_request_counts(mut self, counts: Arc<super::RequestCounts>) -> Self {
        let now = counts.snapshot();
        self.requests = Some((counts, now));
        self
    }

    /// This FileIO with its request window starting now (a table opened for a statement).
    pub(crate) fn counting_requests_from_now(mut self) -> Self {
        if let Some((counts, since)) = &mut self.requests {
            *since = counts.snapshot();
        }
        self
    }

    /// The requests made through the catalog's store since [`Self::counting_requests_from_now`]
    /// (every statement of the session running meanwhile included).
    pub(crate) fn requests_since_opened(&self) -> Option<super::RequestSnapshot> {
        self.requests
            .as_ref()
            .map(|(counts, since)| counts.snapshot() - *since)
    }

    /// This FileIO reaching data files at external paths on other stores (another bucket or
    /// scheme) through the stores `registry` holds for them.
    pub(crate) fn with_registry(
        mut self,
        registry: Arc<dyn datafusion::execution::object_store::ObjectStoreRegistry>,
    ) -> Self {
        if !self.routed {
            self.store = Arc::new(super::routed_store::RoutedStore::new(self.store, registry));
            self.routed = true;
        }
        self
    }

    /// This table's FileIO seen from branch `name`: `schema/`, `snapshot/`, `tag/`,
    /// `changelog/` and `consumer/` resolve to `branch/branch-<name>/...`; everything else
    /// (data, `manifest/`, `index/`) stays shared with the main branch.
    pub(crate) fn on_branch(&self, name: &str) -> FileIO {
        FileIO {
            branch: Some(Arc::from(name)),
            ..self.clone()
        }
    }

    /// The branch this FileIO reads, if not the main one.
    pub(crate) fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// `relative` as the table root sees it: a branch's own directories moved below
    /// `branch/branch-<name>/`.
    fn branch_relative<'a>(&self, relative: &'a str) -> std::borrow::Cow<'a, str> {
        let Some(branch) = &self.branch else {
            return relative.into();
        };
        let trimmed = relative.trim_start_matches('/');
        let first = trimmed.split('/').next().unwrap_or("");
        if BRANCH_DIRS.contains(&first) {
            format!("branch/branch-{branch}/{trimmed}").into()
        } else {
            relative.into()
        }
    }

    /// The Parquet footers read through this FileIO and the others of its catalog.
    pub(crate) fn footers(&self) -> &Arc<FooterCache> {
        &self.footers
    }

    /// A FileIO rooted at `relative` below this one.
    pub(crate) fn child(&self, relative: &str) -> FileIO {
        let rel = relative.trim_matches('/');
        FileIO {
            store: Arc::clone(&self.store),
            root: self.path(rel),
            root_url: format!("{}/{}", self.root_url.trim_end_matches('/'), rel),
            footers: Arc::clone(&self.footers),
            branch: None,
            routed: self.routed,
            requests: self.requests.clone(),
        }
    }

    /// URL of the root directory.
    pub(crate) fn root_url(&self) -> &str {
        &self.root_url
    }

    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// Object-store path of a file relative to the root.
    /// Where a data file is: its external path when it has one, else `<dir>/<name>` under
    /// the table.
    pub(crate) fn data_file_path(&self, dir: &str, name: &str, external: Option<&str>) -> Result<Path> {
        match external {
            Some(uri) => self.external_path(uri),
            None => Ok(self.path(&format!("{dir}/{name}"))),
        }
    }

    /// Where a file `name` beside a data file is (a `.index` file index): in the data file's
    /// bucket directory `dir`, or next to its external URI.
    pub(crate) fn beside_data_file(&self, dir: &str, external: Option<&str>, name: &str) -> Result<Path> {
        match external {
            Some(uri) => self.external_path(&beside(uri, name)),
            None => Ok(self.path(&format!("{dir}/{name}"))),
        }
    }

    /// The path in this store of a file Paimon recorded by URI (`_EXTERNAL_PATH`): `file:/x`
    /// and `file:///x` on a local store, `s3://bucket/x` where the table's store is that
    /// bucket (scheme and authority compared case-insensitively, as Java's URI compares
    /// schemes), a bare `/x` on a local store. A file on another store is reached through the
    /// session's object store registry ([`Self::with_registry`]); without one it is an error
    /// naming the file.
    pub(crate) fn external_path(&self, uri: &str) -> Result<Path> {
        let root = url::Url::parse(&self.root_url).ok();
        let unsupported = || match url::Url::parse(uri) {
            Ok(url) if self.routed => {
                super::routed_store::external_location(&url).map_err(|e| Error::corrupt(uri, e))
            }
            _ => Err(Error::Unsupported(format!(
                "data file {uri} is at an external path on another object store than its table's ({})",
                self.root_url
            ))),
        };
        let from_url_path = |p: &str| Path::from_url_path(p).map_err(|e| Error::corrupt(uri, e));
        match url::Url::parse(uri) {
            Ok(url) if url.scheme().eq_ignore_ascii_case("file") => match &root {
                Some(r) if r.scheme() == "file" => from_url_path(url.path()),
                _ => unsupported(),
            },
            Ok(url) => match &root {
                Some(r)
                    if r.scheme().eq_ignore_ascii_case(url.scheme())
                        && r.host_str()
                            .unwrap_or("")
                            .eq_ignore_ascii_case(url.host_str().unwrap_or("")) =>
                {
                    from_url_path(url.path())
                }
                _ => unsupported(),
            },
            Err(_) if uri.starts_with('/') && root.as_ref().is_some_and(|r| r.scheme() == "file") => {
                from_url_path(uri)
            }
            Err(_) => unsupported(),
        }
    }

    pub(crate) fn path(&self, relative: &str) -> Path {
        let relative = self.branch_relative(relative);
        let mut p = self.root.clone();
        for part in relative.split('/').filter(|s| !s.is_empty()) {
            p = p.join(part);
        }
        p
    }

    /// Human-readable location of a file, for error messages.
    pub(crate) fn display(&self, relative: &str) -> String {
        let relative = self.branch_relative(relative);
        format!(
            "{}/{}",
            self.root_url.trim_end_matches('/'),
            relative.trim_start_matches('/')
        )
    }

    /// Reads a whole file. A missing file is `Error::NotFound` naming it.
    pub(crate) async fn read(&self, relative: &str, what: &str) -> Result<Bytes> {
        match self.store.get(&self.path(relative)).await {
            Ok(r) => Ok(r.bytes().await?),
            Err(object_store::Error::NotFound { .. }) => Err(Error::not_found(what, self.display(relative))),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a whole file with what identifies this version of it ([`object_store::ObjectMeta`]:
    /// entity tag, size, modification time), in one request.
    pub(crate) async fn read_versioned(
        &self,
        relative: &str,
        what: &str,
    ) -> Result<(Bytes, object_store::ObjectMeta)> {
        match self.store.get(&self.path(relative)).await {
            Ok(r) => {
                let meta = r.meta.clone();
                Ok((r.bytes().await?, meta))
            }
            Err(object_store::Error::NotFound { .. }) => Err(Error::not_found(what, self.display(relative))),
            Err(e) => Err(e.into()),
        }
    }

    /// What identifies the current version of a file (one HEAD); None if it does not exist.
    pub(crate) async fn head(&self, relative: &str) -> Result<Option<object_store::ObjectMeta>> {
        match self.store.head(&self.path(relative)).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes (or overwrites) a whole file.
    pub(crate) async fn write(
        &self,
        relative: &str,
        bytes: impl Into<object_store::PutPayload>,
    ) -> Result<()> {
        self.store.put(&self.path(relative), bytes.into()).await?;
        Ok(())
    }

    /// Writes (or replaces) the object at `path`, a path of this store such as
    /// [`Self::external_path`] gives.
    pub(crate) async fn write_at(&self, path: &Path, bytes: Vec<u8>) -> Result<()> {
        self.store.put(path, bytes.into()).await?;
        Ok(())
    }

    /// Creates a file atomically; `Ok(false)` if it already exists (the loser of a race).
    pub(crate) async fn create_new(&self, relative: &str, bytes: Vec<u8>) -> Result<bool> {
        Ok(self.try_create(relative, bytes).await?.is_some())
    }

    /// Creates a file atomically, returning the store's entity tag of it if it gives one;
    /// `Ok(None)` if the file already exists (the loser of a race).
    pub(crate) async fn try_create(&self, relative: &str, bytes: Vec<u8>) -> Result<Option<Option<String>>> {
        let opts = object_store::PutOptions {
            mode: object_store::PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&self.path(relative), bytes.into(), opts)
            .await
        {
            Ok(put) => Ok(Some(put.e_tag)),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(None),
            // Without create-if-absent two writers could both "create" snapshot-N and one
            // commit would vanish: refuse to commit rather than risk it (Java Paimon needs a
            // catalog lock on such stores; we have none).
            Err(object_store::Error::NotImplemented { .. }) => Err(Error::Unsupported(format!(
                "cannot create {} atomically: the object store ({}) has no create-if-absent \
                 (conditional put), which commits need so that concurrent writers cannot \
                 overwrite each other's snapshot; on S3 keep conditional puts enabled \
                 (AWS_S3_CONDITIONAL_PUT=etag, the default)",
                self.display(relative),
                self.store
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a file (missing files are fine).
    pub(crate) async fn delete(&self, relative: &str) -> Result<()> {
        match self.store.delete(&self.path(relative)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a data file by the path expiration knows it by: relative to the table, or the
    /// URI of a file at an external path ([`Self::external_path`]). A missing file is no error.
    pub(crate) async fn delete_data_file(&self, path: &str) -> Result<()> {
        // (a relative path is `<k>=<v>/.../bucket-<n>/<file>` or `bucket-<n>/<file>`: no URI)
        if url::Url::parse(path).is_err() {
            return self.delete(path).await;
        }
        match self.store.delete(&self.external_path(path)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether a file exists.
    pub(crate) async fn exists(&self, relative: &str) -> Result<bool> {
        match self.store.head(&self.path(relative)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// When a file was last written, epoch millis; None if it does not exist.
    pub(crate) async fn last_modified_millis(&self, relative: &str) -> Result<Option<i64>> {
        match self.store.head(&self.path(relative)).await {
            Ok(meta) => Ok(Some(meta.last_modified.timestamp_millis())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Names of the files directly inside a directory (empty if it does not exist).
    pub(crate) async fn list_files(&self, relative_dir: &str) -> Result<Vec<String>> {
        Ok(self
            .list_files_meta(relative_dir)
            .await?
            .into_iter()
            .filter_map(|o| o.location.filename().map(str::to_string))
            .collect())
    }

    /// As [`FileIO::list_files`], each file with its object-store metadata (location, size,
    /// last modification).
    pub(crate) async fn list_files_meta(&self, relative_dir: &str) -> Result<Vec<object_store::ObjectMeta>> {
        let prefix = self.path(relative_dir);
        match self.store.list_with_delimiter(Some(&prefix)).await {
            Ok(l) => Ok(l.objects),
            Err(object_store::Error::NotFound { .. }) => Ok(vec![]),
            Err(e) => Err(e.into()),
        }
    }

    /// Every file below a directory, recursively: (path relative to the root, last write in
    /// epoch millis).
    pub(crate) async fn list_recursive(&self, relative_dir: &str) -> Result<Vec<(String, i64)>> {
        let prefix = self.path(relative_dir);
        let root = self.root.as_ref().to_string();
        let objects: Vec<object_store::ObjectMeta> = match self.store.list(Some(&prefix)).try_collect().await
        {
            Ok(objects) => objects,
            Err(object_store::Error::NotFound { .. }) => vec![],
            Err(e) => return Err(e.into()),
        };
        Ok(objects
            .into_iter()
            .map(|o| {
                let full = o.location.as_ref();
                let relative = full
                    .strip_prefix(root.as_str())
                    .unwrap_or(full)
                    .trim_start_matches('/')
                    .to_string();
                (relative, o.last_modified.timestamp_millis())
            })
            .collect())
    }

    /// Names of the sub-directories directly inside a directory.
    pub(crate) async fn list_dirs(&self, relative_dir: &str) -> Result<Vec<String>> {
        let prefix = self.path(relative_dir);
        match self.store.list_with_delimiter(Some(&prefix)).await {
            Ok(l) => Ok(l
                .common_prefixes
                .into_iter()
                .filter_map(|p| p.filename().map(str::to_string))
                .collect()),
            Err(object_store::Error::NotFound { .. }) => Ok(vec![]),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether any object exists below a directory.
    #[allow(dead_code)]
    pub(crate) async fn dir_has_files(&self, relative_dir: &str) -> Result<bool> {
        let prefix = self.path(relative_dir);
        let mut s = self.store.list(Some(&prefix));
        Ok(s.try_next().await?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::FileIO;

    fn io(root_url: &str, root: &str) -> FileIO {
        FileIO::new(
            Arc::new(object_store::memory::InMemory::new()),
            object_store::path::Path::from(root),
            root_url.to_string(),
        )
    }

    /// Java records `file:/x` for local files; `s3://bucket/x` on the table's bucket is the
    /// table's store, in any case; another store is an error naming the file.
    #[test]
    fn external_paths_resolve_on_the_tables_store() {
        let local = io("file:///wh/db.db/t", "wh/db.db/t");
        for uri in [
            "file:/ext/p=1/bucket-0/data-1.parquet",
            "file:///ext/p=1/bucket-0/data-1.parquet",
            "/ext/p=1/bucket-0/data-1.parquet",
        ] {
            assert_eq!(
                local.external_path(uri).unwrap().as_ref(),
                "ext/p=1/bucket-0/data-1.parquet",
                "{uri}"
            );
        }
        let err = local
            .external_path("s3://b/ext/data-1.parquet")
            .unwrap_err()
            .to_string();
        assert!(err.contains("s3://b/ext/data-1.parquet"), "{err}");
        let s3 = io("s3://bucket/wh/db.db/t", "wh/db.db/t");
        assert_eq!(
            s3.external_path("S3://Bucket/ext/data-1.parquet")
                .unwrap()
                .as_ref(),
            "ext/data-1.parquet"
        );
        assert!(s3.external_path("s3://other/ext/data-1.parquet").is_err());
        assert!(s3.external_path("file:/ext/data-1.parquet").is_err());
    }
}
