//! Damaged tables: a copy of `pk.dedup_basic` (4 snapshots, 4 manifests, 4 data files, all live
//! at snapshot 4) with one file deleted or corrupted must fail the query with an error whose text
//! names that file, never with a panic or a silently wrong answer. Each case runs against
//! `LocalFileSystem` (a `TempDir` warehouse) and `InMemory` (a `memory://` warehouse).
//!
//! The `LATEST` file is only a hint (Java `HintFileUtils.findLatest`): a missing or stale hint falls
//! back to listing the snapshot directory, while a hint naming a missing snapshot makes that
//! snapshot the latest, whose read then fails.

use std::sync::Arc;

use datafusion::common::runtime::SpawnedTask;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tempfile::TempDir;

use crate::{fixture_warehouse, run_sql};

const TABLE: &str = "pk.dedup_basic";
/// The table's directory inside a warehouse.
const TABLE_DIR: &str = "pk.db/dedup_basic";
const QUERY: &str = "SELECT * FROM pk.dedup_basic";

#[derive(Debug, Clone, Copy)]
enum Backend {
    Local,
    Memory,
}

/// A private copy of the fixture table, the session reading it and the store holding it.
struct Damaged {
    session: PaimonSession,
    store: Arc<dyn ObjectStore>,
    /// The warehouse root inside `store`.
    root: Path,
    _dir: Option<TempDir>,
}

impl Damaged {
    async fn new(backend: Backend) -> Self {
        let source = fixture_warehouse().join(TABLE_DIR);
        match backend {
            Backend::Local => {
                let dir = TempDir::new().expect("TempDir");
                copy_dir(&source, &dir.path().join(TABLE_DIR)).expect("copy of the fixture table");
                let store = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).expect("local store"));
                let session = PaimonSession::open(dir.path().to_str().expect("UTF-8 path"))
                    .await
                    .expect("warehouse opens");
                Damaged {
                    session,
                    store,
                    root: Path::default(),
                    _dir: Some(dir),
                }
            }
            Backend::Memory => {
                let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
                let root = Path::from("wh");
                upload_dir(&store, &source, &root.clone().join("pk.db").join("dedup_basic")).await;
                let config = SessionConfig::new()
                    .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
                    .with_create_default_catalog_and_schema(false)
                    .with_information_schema(true);
                let ctx = SessionContext::new_with_config(config);
                ctx.register_object_store(&url::Url::parse("memory://").unwrap(), Arc::clone(&store));
                let session = PaimonSession::register(ctx, "memory:///wh")
                    .await
                    .expect("warehouse opens");
                Damaged {
                    session,
                    store,
                    root,
                    _dir: None,
                }
            }
        }
    }

    /// `relative` (to the table directory) as a store path.
    fn path(&self, relative: &str) -> Path {
        let mut path = self.root.clone();
        for part in TABLE_DIR.split('/').chain(relative.split('/')) {
            path = path.join(part);
        }
        path
    }

    async fn delete(&self, relative: &str) {
        self.store
            .delete(&self.path(relative))
            .await
            .unwrap_or_else(|e| panic!("cannot delete {relative}: {e}"));
    }

    async fn overwrite(&self, relative: &str, bytes: &'static [u8]) {
        self.store
            .put(&self.path(relative), PutPayload::from_static(bytes))
            .await
            .unwrap_or_else(|e| panic!("cannot write {relative}: {e}"));
    }

    async fn read(&self, relative: &str) -> String {
        let bytes = self
            .store
            .get(&self.path(relative))
            .await
            .expect("file exists")
            .bytes()
            .await
            .expect("readable");
        String::from_utf8(bytes.to_vec()).expect("UTF-8")
    }

    /// File names (not paths) in a directory of the table, sorted.
    async fn file_names(&self, relative_dir: &str, prefix: &str) -> Vec<String> {
        use futures::TryStreamExt;
        let metas: Vec<_> = self
            .store
            .list(Some(&self.path(relative_dir)))
            .try_collect()
            .await
            .expect("listable");
        let mut names: Vec<String> = metas
            .into_iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .filter(|n| n.starts_with(prefix))
            .collect();
        names.sort();
        names
    }

    /// Runs `sql` in its own task so a panic is reported as such, not as a test crash.
    async fn run(&self, sql: &str) -> Result<usize, String> {
        let session = self.session.clone();
        let sql = sql.to_string();
        match SpawnedTask::spawn(async move { run_sql(&session, &sql).await })
            .join()
            .await
        {
            Err(join) => panic!("`{QUERY}` panicked instead of failing with an error: {join}"),
            Ok(Ok(batches)) => Ok(batches.iter().map(|b| b.num_rows()).sum()),
            Ok(Err(e)) => Err(e.to_string()),
        }
    }

    /// The scan must fail with an error that names `file`.
    async fn assert_error_names(&self, file: &str) {
        match self.run(QUERY).await {
            Ok(rows) => panic!("`{QUERY}` returned {rows} rows although {file} is damaged"),
            Err(e) => {
                assert!(
                    e.contains(file),
                    "the error of `{QUERY}` does not name {file}: {e}"
                );
                assert!(!e.contains("panicked"), "`{QUERY}` failed through a panic: {e}");
            }
        }
    }
}

pub(crate) fn copy_dir(src: &std::path::Path, dst: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let target = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
            // The fixtures are read-only; the copy must be writable.
            let mut permissions = std::fs::metadata(&target)?.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            permissions.set_readonly(false);
            std::fs::set_permissions(&target, permissions)?;
        }
    }
    Ok(())
}

pub(crate) async fn upload_dir(store: &Arc<dyn ObjectStore>, src: &std::path::Path, dst: &Path) {
    for entry in std::fs::read_dir(src).expect("fixture directory") {
        let entry = entry.expect("directory entry");
        let name = entry.file_name().into_string().expect("UTF-8 file name");
        if entry.file_type().expect("file type").is_dir() {
            Box::pin(upload_dir(store, &entry.path(), &dst.clone().join(name.as_str()))).await;
        } else {
            let bytes = std::fs::read(entry.path()).expect("fixture file");
            store
                .put(&dst.clone().join(name.as_str()), PutPayload::from(bytes))
                .await
                .expect("upload");
        }
    }
}

/// One `#[tokio::test]` per backend for each case.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn local_file_system() {
                    super::$case(super::Backend::Local).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn in_memory() {
                    super::$case(super::Backend::Memory).await;
                }
            }
        )*
    };
}

on_both_backends!(
    intact_copy_reads,
    missing_snapshot_named_by_latest,
    corrupt_snapshot_json,
    missing_manifest_list,
    missing_manifest_file,
    corrupt_manifest_file,
    missing_data_file,
    corrupt_data_file,
    corrupt_schema_file,
    missing_latest_hint_lists_snapshots,
    stale_latest_hint_lists_snapshots,
);

/// Control case: the undamaged copy reads the 18 rows of the latest snapshot.
async fn intact_copy_reads(backend: Backend) {
    let d = Damaged::new(backend).await;
    assert_eq!(d.run(QUERY).await, Ok(18), "{TABLE} copy");
}

/// LATEST says 4 but snapshot-4 is gone: reading the latest snapshot fails naming snapshot-4.
async fn missing_snapshot_named_by_latest(backend: Backend) {
    let d = Damaged::new(backend).await;
    assert_eq!(d.read("snapshot/LATEST").await.trim(), "4");
    d.delete("snapshot/snapshot-4").await;
    d.assert_error_names("snapshot-4").await;
}

/// snapshot-4 is not JSON.
async fn corrupt_snapshot_json(backend: Backend) {
    let d = Damaged::new(backend).await;
    d.overwrite(
        "snapshot/snapshot-4",
        b"{\"version\": 3, \"id\": 4, \"schemaId\": ",
    )
    .await;
    d.assert_error_names("snapshot-4").await;
}

/// The delta manifest list of snapshot 4 is gone.
async fn missing_manifest_list(backend: Backend) {
    let d = Damaged::new(backend).await;
    let snapshot: serde_json::Value =
        serde_json::from_str(&d.read("snapshot/snapshot-4").await).expect("snapshot JSON");
    let list = snapshot["deltaManifestList"]
        .as_str()
        .expect("deltaManifestList")
        .to_string();
    d.delete(&format!("manifest/{list}")).await;
    d.assert_error_names(&list).await;
}

/// One of the 4 manifests (all referenced by snapshot 4, see expected/pk.dedup_basic/sys_manifests.json) is gone.
async fn missing_manifest_file(backend: Backend) {
    let d = Damaged::new(backend).await;
    let manifests: Vec<String> = d
        .file_names("manifest", "manifest-")
        .await
        .into_iter()
        .filter(|n| !n.starts_with("manifest-list-"))
        .collect();
    assert_eq!(manifests.len(), 4, "{manifests:?}");
    d.delete(&format!("manifest/{}", manifests[0])).await;
    d.assert_error_names(&manifests[0]).await;
}

/// A manifest holds garbage instead of Avro.
async fn corrupt_manifest_file(backend: Backend) {
    let d = Damaged::new(backend).await;
    let manifests: Vec<String> = d
        .file_names("manifest", "manifest-")
        .await
        .into_iter()
        .filter(|n| !n.starts_with("manifest-list-"))
        .collect();
    d.overwrite(&format!("manifest/{}", manifests[1]), b"this is not an avro file")
        .await;
    d.assert_error_names(&manifests[1]).await;
}

/// One of the 4 data files (all live, all level 0) is gone.
async fn missing_data_file(backend: Backend) {
    let d = Damaged::new(backend).await;
    let files = d.file_names("bucket-0", "data-").await;
    assert_eq!(files.len(), 4, "{files:?}");
    d.delete(&format!("bucket-0/{}", files[0])).await;
    d.assert_error_names(&files[0]).await;
    if let Some(dir) = &d._dir {
        // A local file is named by its absolute path, leading '/' included.
        let path = dir.path().join(TABLE_DIR).join("bucket-0").join(&files[0]);
        let error = d.run(QUERY).await.expect_err("the data file is missing");
        assert!(
            error.contains(&format!("data file {}", path.display())),
            "the error names {}: {error}",
            path.display()
        );
    }
}

/// A data file holds garbage instead of Parquet.
async fn corrupt_data_file(backend: Backend) {
    let d = Damaged::new(backend).await;
    let files = d.file_names("bucket-0", "data-").await;
    d.overwrite(
        &format!("bucket-0/{}", files[2]),
        b"PAR1 this is not a parquet file PAR1",
    )
    .await;
    d.assert_error_names(&files[2]).await;
}

/// The only schema file is not JSON.
async fn corrupt_schema_file(backend: Backend) {
    let d = Damaged::new(backend).await;
    d.overwrite("schema/schema-0", b"{\"version\": 3, \"id\": 0, \"fields\": [")
        .await;
    d.assert_error_names("schema-0").await;
}

/// Without the LATEST hint the latest snapshot is found by listing the snapshot directory.
async fn missing_latest_hint_lists_snapshots(backend: Backend) {
    let d = Damaged::new(backend).await;
    d.delete("snapshot/LATEST").await;
    // Snapshots 3 and 4 both have 18 rows; key 3 (deleted in 3, re-inserted in 4) tells them apart.
    assert_eq!(
        d.run("SELECT * FROM pk.dedup_basic WHERE id = 3").await,
        Ok(1),
        "snapshot 4 re-inserted key 3"
    );
    assert_eq!(d.run(QUERY).await, Ok(18), "latest snapshot without LATEST");
}

/// A stale hint (LATEST = 3 while snapshot-4 exists) does not hide snapshot 4.
async fn stale_latest_hint_lists_snapshots(backend: Backend) {
    let d = Damaged::new(backend).await;
    d.overwrite("snapshot/LATEST", b"3").await;
    assert_eq!(
        d.run("SELECT * FROM pk.dedup_basic WHERE id = 3").await,
        Ok(1),
        "snapshot 4 re-inserted key 3"
    );
}
