//! Decoded data files kept in memory for lookups: a file's records with their encoded keys,
//! searched by binary search. Built on first use and kept in a process-wide cache across
//! commits (data files are immutable, so the file path is the key), so a long-running writer
//! decodes a file once. The cache is bounded by `lookup.cache-max-memory-size` (Paimon's
//! default: 256 MiB); the oldest files are evicted first.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::RecordBatch;
use arrow::row::{Row, RowConverter, Rows};

/// Default `lookup.cache-max-memory-size`.
pub(crate) const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// One data file's records, searchable by key.
#[derive(Debug)]
pub(crate) struct LookupFile {
    /// Every record of the file (table columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND`).
    pub batch: RecordBatch,
    /// The encoded key of every row of `batch`.
    keys: Rows,
    /// The rows of `batch` in key order, where the file is not sorted by key already (data
    /// files are; this keeps a lookup right if one is not).
    order: Option<Vec<u32>>,
    bytes: usize,
}

impl LookupFile {
    /// Encodes the keys of `batch`.
    pub(crate) fn build(
        batch: RecordBatch,
        converter: &RowConverter,
        key_columns: &[usize],
    ) -> datafusion::common::Result<Self> {
        let columns: Vec<_> = key_columns.iter().map(|&c| Arc::clone(batch.column(c))).collect();
        let keys = converter.convert_columns(&columns)?;
        let sorted = (1..keys.num_rows()).all(|i| keys.row(i - 1) < keys.row(i));
        let order = (!sorted).then(|| {
            let mut order: Vec<u32> = (0..keys.num_rows() as u32).collect();
            order.sort_by(|&a, &b| keys.row(a as usize).cmp(&keys.row(b as usize)));
            order
        });
        let bytes = batch.get_array_memory_size() + keys.size() + order.as_ref().map_or(0, |o| o.len() * 4);
        Ok(LookupFile {
            batch,
            keys,
            order,
            bytes,
        })
    }

    /// The row holding `key` (encoded like the file's keys).
    pub(crate) fn get(&self, key: Row<'_>) -> Option<usize> {
        let at = |i: usize| self.order.as_ref().map_or(i, |o| o[i] as usize);
        let (mut low, mut high) = (0, self.keys.num_rows());
        while low < high {
            let mid = (low + high) / 2;
            match self.keys.row(at(mid)).cmp(&key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(at(mid)),
            }
        }
        None
    }
}

/// How many paths [`searched_before`] remembers.
const SEARCHED_PATHS: usize = 16_384;

struct Cache {
    files: HashMap<String, Arc<LookupFile>>,
    order: VecDeque<String>,
    bytes: usize,
    /// Files searched without being cached, oldest first (bounded by `SEARCHED_PATHS`).
    searched: HashSet<String>,
    searched_order: VecDeque<String>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            files: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            searched: HashSet::new(),
            searched_order: VecDeque::new(),
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
    // a file bigger than the whole cache would only evict everything else
    if cache.files.contains_key(&path) || file.bytes > max_bytes {
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

/// Whether `path` was searched before in this process (and remembers that it now was). A
/// file is decoded whole for the cache only when it is searched a second time: a one-off
/// lookup (a fresh process, a file about to be compacted away) reads only what it needs.
pub(crate) fn searched_before(path: &str) -> bool {
    let mut cache = cache().lock().expect("lookup cache lock");
    if cache.searched.contains(path) {
        return true;
    }
    cache.searched.insert(path.to_string());
    cache.searched_order.push_back(path.to_string());
    while cache.searched_order.len() > SEARCHED_PATHS {
        if let Some(oldest) = cache.searched_order.pop_front() {
            cache.searched.remove(&oldest);
        }
    }
    false
}
