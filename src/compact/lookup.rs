//! Lookup of old values for the lookup changelog producer and first-row (semantics.md §6.3):
//! an in-memory hash index per higher-level data file, built on first use and kept in a
//! process-wide cache across commits (data files are immutable, so the file path is the key).
//! The cache is bounded by `lookup.cache-max-memory-size` (Paimon's default: 256 MiB); the
//! oldest indexes are evicted first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::RecordBatch;
use arrow::row::RowConverter;

/// Default `lookup.cache-max-memory-size`.
pub(crate) const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// One data file's records by key.
#[derive(Debug)]
pub(crate) struct LookupFile {
    /// Every record of the file (table columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`).
    pub batch: RecordBatch,
    /// Key (arrow row bytes) → row of `batch`.
    index: HashMap<Box<[u8]>, u32>,
    bytes: usize,
}

impl LookupFile {
    /// Indexes `batch` by its key columns.
    pub(crate) fn build(
        batch: RecordBatch,
        converter: &RowConverter,
        key_columns: &[usize],
    ) -> datafusion::common::Result<Self> {
        let keys: Vec<_> = key_columns.iter().map(|&c| Arc::clone(batch.column(c))).collect();
        let rows = converter.convert_columns(&keys)?;
        let mut index = HashMap::with_capacity(batch.num_rows());
        let mut bytes = batch.get_array_memory_size();
        for (i, row) in rows.iter().enumerate() {
            bytes += row.as_ref().len() + 16;
            index.insert(Box::from(row.as_ref()), i as u32);
        }
        Ok(LookupFile { batch, index, bytes })
    }

    /// The row holding `key` (arrow row bytes of the key columns).
    pub(crate) fn get(&self, key: &[u8]) -> Option<usize> {
        self.index.get(key).map(|&r| r as usize)
    }
}

struct Cache {
    files: HashMap<String, Arc<LookupFile>>,
    order: VecDeque<String>,
    bytes: usize,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            files: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
        })
    })
}

/// The cached index of `path`, if any.
pub(crate) fn cached(path: &str) -> Option<Arc<LookupFile>> {
    cache()
        .lock()
        .expect("lookup cache lock")
        .files
        .get(path)
        .cloned()
}

/// Caches the index of `path`, evicting the oldest entries beyond `max_bytes`.
pub(crate) fn insert(path: String, file: Arc<LookupFile>, max_bytes: usize) {
    let mut cache = cache().lock().expect("lookup cache lock");
    if cache.files.contains_key(&path) {
        return;
    }
    cache.bytes += file.bytes;
    cache.order.push_back(path.clone());
    cache.files.insert(path, file);
    while cache.bytes > max_bytes {
        let Some(oldest) = cache.order.pop_front() else {
            break;
        };
        if let Some(evicted) = cache.files.remove(&oldest) {
            cache.bytes -= evicted.bytes;
        }
    }
}
