//! Local copies of remote data files for lookups (`lookup.cache-max-disk-size`, Paimon's default
//! unlimited; `lookup.cache-file-retention`, default 1 hour). A file of a remote warehouse (S3,
//! ...) that a process searches a second time is downloaded once into a process-wide temporary
//! directory (`paimon-lookup-<pid>`), and later lookups read the copy instead of fetching its pages again: the commits
//! of a long-running writer stop paying for the network. A one-off process never copies.
//!
//! Copies are evicted least recently used first beyond the size limit, and when unused for
//! longer than the retention; a copy being read is never evicted.
//!
//! The directory must not outlive its process, but a process-wide static is never dropped and a
//! process may be killed. So the process holds an OS lock on `paimon-lookup-<pid>.lock` beside its
//! directory for as long as it lives (the OS releases it however the process ends), and the next
//! process to make a directory removes every directory whose lock it can take. A program can also
//! remove its own at exit with [`remove_lookup_copies`] (the CLI does).

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
    dir: Option<OwnedDir>,
    files: HashMap<String, Entry>,
    bytes: u64,
    next_id: u64,
}

/// This process's directory of copies, and the locked file that says it is alive.
struct OwnedDir {
    path: std::path::PathBuf,
    lock_path: std::path::PathBuf,
    _lock: std::fs::File,
}

const DIR_PREFIX: &str = "paimon-lookup-";

/// Creates this process's directory in `parent`, after removing those of processes that ended.
fn create_owned_dir(parent: &std::path::Path) -> Result<OwnedDir> {
    remove_abandoned_dirs(parent);
    let name = format!("{DIR_PREFIX}{}", std::process::id());
    let path = parent.join(&name);
    let lock_path = parent.join(format!("{name}.lock"));
    let failed =
        |e: std::io::Error| exec_datafusion_err!("Cannot create {} for lookup copies: {e}", path.display());
    // the lock first, so a directory without one is always being created (or abandoned long ago)
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(failed)?;
    lock.try_lock()
        .map_err(|e| exec_datafusion_err!("Cannot lock {} for lookup copies: {e}", lock_path.display()))?;
    std::fs::create_dir_all(&path).map_err(failed)?;
    Ok(OwnedDir {
        path,
        lock_path,
        _lock: lock,
    })
}

/// Removes the copy directories in `parent` whose process has ended: their lock can be taken,
/// or (made before the lock existed) they have no lock and are older than a day. Best effort.
fn remove_abandoned_dirs(parent: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(DIR_PREFIX) || name.ends_with(".lock") {
            continue;
        }
        let dir = entry.path();
        let lock_path = parent.join(format!("{name}.lock"));
        match std::fs::OpenOptions::new().write(true).open(&lock_path) {
            Ok(lock) => {
                if lock.try_lock().is_ok() {
                    let _ = std::fs::remove_dir_all(&dir);
                    let _ = std::fs::remove_file(&lock_path);
                }
            }
            Err(_) => {
                let stale = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(24 * 3600));
                if stale {
                    let _ = std::fs::remove_dir_all(&dir);
                }
            }
        }
    }
}

/// Removes this process's local copies and their directory (copies being read stay until the
/// next process sweeps). Call at exit; lookups after it make a new directory.
pub fn remove_lookup_copies() {
    let mut state = copies().lock().expect("lookup copies lock");
    let Some(dir) = state.dir.take() else {
        return;
    };
    state.files.clear();
    state.bytes = 0;
    let _ = std::fs::remove_dir_all(&dir.path);
    let _ = std::fs::remove_file(&dir.lock_path);
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
            Some(dir) => dir.path.clone(),
            None => {
                // one directory per process, in the system's temporary directory
                let dir = create_owned_dir(&std::env::temp_dir())?;
                let path = dir.path.clone();
                state.dir = Some(dir);
                path
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory whose process ended (its lock is free) is removed when the next one is made;
    /// one whose lock is held stays; the new one holds its own lock until it is removed.
    #[test]
    fn abandoned_directories_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let abandoned = parent.path().join(format!("{DIR_PREFIX}1"));
        std::fs::create_dir(&abandoned).unwrap();
        std::fs::write(abandoned.join("1-data.parquet"), b"x").unwrap();
        std::fs::write(parent.path().join(format!("{DIR_PREFIX}1.lock")), b"").unwrap();

        let alive = parent.path().join(format!("{DIR_PREFIX}2"));
        std::fs::create_dir(&alive).unwrap();
        let alive_lock = std::fs::File::create(parent.path().join(format!("{DIR_PREFIX}2.lock"))).unwrap();
        alive_lock.lock().unwrap();

        let ours = create_owned_dir(parent.path()).unwrap();
        assert!(!abandoned.exists(), "the abandoned directory is removed");
        assert!(!parent.path().join(format!("{DIR_PREFIX}1.lock")).exists());
        assert!(alive.exists(), "a live process's directory stays");
        assert!(ours.path.is_dir());

        // another process sweeping now keeps ours: its lock is held
        remove_abandoned_dirs(parent.path());
        assert!(ours.path.is_dir());
        drop(ours);
        drop(alive_lock);
        // both processes have ended
        remove_abandoned_dirs(parent.path());
        let left: Vec<_> = std::fs::read_dir(parent.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
