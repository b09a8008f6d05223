//! Bytes on an `ObjectStore`; knows nothing about tables.

mod data_file_write;
mod file_io;

pub(crate) use data_file_write::{write_data_file, DataFileRows};
pub(crate) use file_io::FileIO;
