//! Bytes on an `ObjectStore`; knows nothing about tables.

mod file_io;

pub(crate) use file_io::FileIO;
