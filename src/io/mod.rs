//! Bytes on an `ObjectStore`; knows nothing about tables.

mod blob_write;
mod byte_lru;
#[cfg(feature = "cli")]
mod cloud_stores;
mod data_file_write;
mod external_paths;
mod file_io;
mod file_stats;
mod read_counting;
mod request_counting;
mod rolling_write;
mod routed_store;

pub(crate) use byte_lru::ByteLru;
#[cfg(feature = "cli")]
pub use cloud_stores::{remote_store, CloudStores};
pub(crate) use data_file_write::{write_data_file, DataFileRows, DataFileWriter};
pub(crate) use external_paths::ExternalPaths;
pub(crate) use file_io::{beside, CachedFooter, FileIO, FooterCache};
pub(crate) use read_counting::ReadCountingStore;
pub use request_counting::{RequestCountingStore, RequestCounts, RequestSnapshot};
pub(crate) use rolling_write::RollingFileWriter;
