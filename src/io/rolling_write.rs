//! Data files of about `target-file-size` from a stream of sorted rows: a new file is started
//! once the open one's estimated encoded size reaches the target, as Paimon's rolling writer
//! does. Consecutive writes continue the key order, so the files of one level never overlap.

use super::{DataFileRows, DataFileWriter, FileIO};
use crate::error::Result;
use crate::spec::{DataFileMeta, TableSchema};

/// The fewest rows written between two checks of the open file's size: a large write still
/// rolls within this many rows of the target.
const ROLL_CHECK_ROWS: usize = 4096;

/// How many of `available` rows to write into a file of `rows` rows and `size` estimated bytes
/// before its size is checked again: half of what the file's bytes per row so far say still
/// fits under `target`, and at least [`ROLL_CHECK_ROWS`]. A file far from its target takes a
/// compaction's whole chunk in one write (its columns encode in parallel only for slices that
/// big); one close to it takes small slices, so it still rolls within `ROLL_CHECK_ROWS` rows.
fn rows_before_check(rows: usize, size: usize, target: usize, available: usize) -> usize {
    let fit = match rows {
        0 => ROLL_CHECK_ROWS,
        rows => {
            let per_row = (size / rows).max(1);
            (target.saturating_sub(size) / per_row / 2).max(ROLL_CHECK_ROWS)
        }
    };
    fit.min(available)
}

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
            let (open_rows, open_size) = self.open.as_ref().map_or((0, 0), |f| (f.rows(), f.size()));
            let len = rows_before_check(open_rows, open_size, self.target_file_size, n - offset);
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
            self.written.extend(file.finish(self.io).await?);
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

#[cfg(test)]
mod tests {
    use super::{rows_before_check, ROLL_CHECK_ROWS};

    /// A new file takes one check's rows; a file far from its target takes half of what fits
    /// (or all that is offered); one near or past it takes the fewest rows.
    #[test]
    fn slices_shrink_as_the_file_nears_its_target() {
        let target = 128 << 20;
        assert_eq!(rows_before_check(0, 0, target, 1 << 20), ROLL_CHECK_ROWS);
        // 4096 rows in 32 KiB: 8 bytes a row, so about 16.7M more rows fit; half of that.
        assert_eq!(
            rows_before_check(4096, 32 << 10, target, usize::MAX),
            ((target - (32 << 10)) / 8) / 2
        );
        assert_eq!(rows_before_check(4096, 32 << 10, target, 65_536), 65_536);
        assert_eq!(
            rows_before_check(1 << 20, target - 1000, target, 65_536),
            ROLL_CHECK_ROWS
        );
        assert_eq!(
            rows_before_check(1 << 20, target + 1000, target, 65_536),
            ROLL_CHECK_ROWS
        );
        assert_eq!(rows_before_check(1 << 20, target, target, 100), 100);
    }
}
