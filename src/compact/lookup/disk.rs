//! Local copies of remote data files for lookups (`lookup.cache-max-disk-size`, Paimon's default
//! unlimited; `lookup.cache-file-retention`, default 1 hour). A file of a remote warehouse (S3,
//! ...) that a process searches a second time is downloaded once into a process-wide temporary
//! directory (`paimon-lookup-<pid>`), and later lookups read the copy instead of fetching its pages again: the commits
//! of a long-running writer stop paying for the network. A one-off process never copies.
//!
//! Copies are evicted least recently used first beyond the size limit, and when unused for
//! longer than the retention; a copy being read is never evicted.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use datafusion::common::{exec_datafusion_err, Result};
use futures::StreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// `lookup.cache-file-retention`'s default.
pub(crate) const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);

/// The limits of the copies, from the table's options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DiskLimits {
    pub max_bytes: u64,
    pub retention: Duration,
}

/// A readable local copy; it stays on disk while this lives.
pub(crate) struct LocalCopy {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    _pin: Arc<()>,
}

struct Entry {
    local: std::path::PathBuf,
    bytes: u64,
    last_used: Instant,
    /// Held by every [`LocalCopy`] of the entry: a copy with readers is not evicted.
    pin: Arc<()>,
}

struct Copies {
    dir: Option<std::path::PathBuf>,
    files: HashMap<String, Entry>,
    bytes: u64,
    next_id: u64,
}

fn copies() -> &'static Mutex<Copies> {
    static COPIES: OnceLock<Mutex<Copies>> = OnceLock::new();
    COPIES.get_or_init(|| {
        Mutex::new(Copies {
            dir: None,
            files: HashMap::new(),
            bytes: 0,
            next_id: 0,
        })
    })
}

fn local_store() -> Arc<dyn ObjectStore> {
    static STORE: OnceLock<Arc<dyn ObjectStore>> = OnceLock::new();
    Arc::clone(STORE.get_or_init(|| Arc::new(LocalFileSystem::new())))
}

fn copy_of(entry: &Entry) -> Result<LocalCopy> {
    Ok(LocalCopy {
        store: local_store(),
        path: Path::from_filesystem_path(&entry.local)
            .map_err(|e| exec_datafusion_err!("Lookup copy {}: {e}", entry.local.display()))?,
        _pin: Arc::clone(&entry.pin),
    })
}

/// The local copy of the remote file `key` (its URL; `path` in `remote`, `size` bytes),
/// downloaded now if there is none; `None` if it does not fit within `limits`.
pub(crate) async fn local_copy(
    remote: &Arc<dyn ObjectStore>,
    key: &str,
    path: &Path,
    size: u64,
    limits: DiskLimits,
) -> Result<Option<LocalCopy>> {
    let target = {
        let mut state = copies().lock().expect("lookup copies lock");
        evict(&mut state, limits);
        if let Some(entry) = state.files.get_mut(key) {
            // (an expired copy still here is being read: it stays valid)
            entry.last_used = Instant::now();
            return Ok(Some(copy_of(entry)?));
        }
        if size > limits.max_bytes {
            return Ok(None);
        }
        let dir = match &state.dir {
            Some(dir) => dir.clone(),
            None => {
                // one directory per process, in the system's temporary directory
                let dir = std::env::temp_dir().join(format!("paimon-lookup-{}", std::process::id()));
                std::fs::create_dir_all(&dir).map_err(|e| {
                    exec_datafusion_err!("Cannot create {} for lookup copies: {e}", dir.display())
                })?;
                state.dir = Some(dir.clone());
                dir
            }
        };
        state.next_id += 1;
        dir.join(format!("{}-{}", state.next_id, path.filename().unwrap_or("file")))
    };
    download(remote, path, &target).await?;
    let mut state = copies().lock().expect("lookup copies lock");
    if let Some(existing) = state.files.get_mut(key) {
        // another task copied it meanwhile: keep that copy (it may be read already)
        let _ = std::fs::remove_file(&target);
        existing.last_used = Instant::now();
        return Ok(Some(copy_of(existing)?));
    }
    let entry = Entry {
        local: target,
        bytes: size,
        last_used: Instant::now(),
        pin: Arc::new(()),
    };
    let copy = copy_of(&entry)?;
    state.files.insert(key.to_string(), entry);
    state.bytes += size;
    evict(&mut state, limits);
    Ok(Some(copy))
}

/// Removes the copies nobody reads that have been unused for longer than the retention, then
/// more of them, least recently used first, until the copies fit in the size limit.
fn evict(state: &mut Copies, limits: DiskLimits) {
    let expired: Vec<String> = state
        .files
        .iter()
        .filter(|(_, e)| Arc::strong_count(&e.pin) == 1 && e.last_used.elapsed() > limits.retention)
        .map(|(k, _)| k.clone())
        .collect();
    for key in expired {
        if let Some(entry) = state.files.remove(&key) {
            state.bytes -= entry.bytes;
            let _ = std::fs::remove_file(&entry.local);
        }
    }
    while state.bytes > limits.max_bytes {
        let victim = state
            .files
            .iter()
            .filter(|(_, e)| Arc::strong_count(&e.pin) == 1)
            .min_by_key(|(_, e)| e.last_used)
            .map(|(k, _)| k.clone());
        let Some(victim) = victim else {
            return; // everything left is being read
        };
        if let Some(entry) = state.files.remove(&victim) {
            state.bytes -= entry.bytes;
            let _ = std::fs::remove_file(&entry.local);
        }
    }
}

/// Streams `path` of `remote` into the local file `target` (written aside, then renamed).
async fn download(remote: &Arc<dyn ObjectStore>, path: &Path, target: &std::path::Path) -> Result<()> {
    let partial = target.with_extension("partial");
    let failed = |e: &dyn std::fmt::Display| {
        exec_datafusion_err!(
            "Cannot copy data file /{path} to {} for lookups: {e}",
            target.display()
        )
    };
    let copied = async {
        let mut file = std::fs::File::create(&partial).map_err(|e| failed(&e))?;
        let mut stream = remote.get(path).await.map_err(|e| failed(&e))?.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| failed(&e))?;
            file.write_all(&chunk).map_err(|e| failed(&e))?;
        }
        std::fs::rename(&partial, target).map_err(|e| failed(&e))
    }
    .await;
    if copied.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    copied
}

/// The remote files with a local copy (their URLs), for tests.
pub(crate) fn copied_files() -> Vec<String> {
    let state = copies().lock().expect("lookup copies lock");
    state.files.keys().cloned().collect()
}
