//! Data files of about `target-file-size` from a stream of sorted rows: a new file is started
//! once the open one's estimated encoded size reaches the target, as Paimon's rolling writer
//! does. Consecutive writes continue the key order, so the files of one level never overlap.

use super::{DataFileRows, DataFileWriter, FileIO};
use crate::error::Result;
use crate::spec::{DataFileMeta, TableSchema};

/// Rows written between two checks of the open file's size: a large write still rolls at
/// about the target.
const ROLL_CHECK_ROWS: usize = 4096;

/// Rolling data files of one level in one bucket directory.
pub(crate) struct RollingFileWriter<'a> {
    io: &'a FileIO,
    dir: &'a str,
    prefix: &'a str,
    level: i32,
    schema: &'a TableSchema,
    kv: bool,
    target_file_size: usize,
    open: Option<DataFileWriter<'a>>,
    /// Files [`RollingFileWriter::encode`] closed, encoded but not yet stored.
    closed: Vec<DataFileWriter<'a>>,
    written: Vec<DataFileMeta>,
}

impl<'a> RollingFileWriter<'a> {
    pub(crate) fn new(
        io: &'a FileIO,
        dir: &'a str,
        prefix: &'a str,
        level: i32,
        schema: &'a TableSchema,
        kv: bool,
        target_file_size: usize,
    ) -> Self {
        RollingFileWriter {
            io,
            dir,
            prefix,
            level,
            schema,
            kv,
            target_file_size: target_file_size.max(1),
            open: None,
            closed: vec![],
            written: vec![],
        }
    }

    /// Appends `rows` (continuing the key order of earlier writes).
    pub(crate) async fn write(&mut self, rows: &DataFileRows) -> Result<()> {
        self.encode(rows)?;
        self.store_closed().await
    }

    /// Encodes `rows` (continuing the key order of earlier writes) into the open file, closing
    /// it at the target size; closed files wait in memory for [`Self::store_closed`]. Encoding
    /// needs no I/O, so a caller may run it on a thread of its own.
    pub(crate) fn encode(&mut self, rows: &DataFileRows) -> Result<()> {
        let n = rows.values.num_rows();
        let mut offset = 0;
        while offset < n {
            let len = ROLL_CHECK_ROWS.min(n - offset);
            let slice = DataFileRows {
                values: rows.values.slice(offset, len),
                kv: rows
                    .kv
                    .as_ref()
                    .map(|(seq, kind)| (seq.slice(offset, len), kind.slice(offset, len))),
            };
            let file = match &mut self.open {
                Some(file) => file,
                None => self.open.insert(DataFileWriter::new(
                    self.dir,
                    self.prefix,
                    self.level,
                    self.schema,
                    self.kv,
                )?),
            };
            file.write(&slice)?;
            if file.size() >= self.target_file_size {
                self.close_open();
            }
            offset += len;
        }
        Ok(())
    }

    /// Stores the files [`Self::encode`] closed.
    pub(crate) async fn store_closed(&mut self) -> Result<()> {
        for file in std::mem::take(&mut self.closed) {
            self.written.push(file.finish(self.io).await?);
        }
        Ok(())
    }

    fn close_open(&mut self) {
        if let Some(file) = self.open.take().filter(|file| file.rows() > 0) {
            self.closed.push(file);
        }
    }

    /// Closes the open file and returns every file written, in key order.
    pub(crate) async fn finish(mut self) -> Result<Vec<DataFileMeta>> {
        self.close_open();
        self.store_closed().await?;
        Ok(self.written)
    }
}
