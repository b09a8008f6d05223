//! The part of the normalize state that did not fit the memory pool: a B-tree on local disk
//! (redb, in a DataFusion temp file), keyed by the key's row bytes.
//!
//! ```text
//! pool refuses ──► every in-memory entry written here (tombstones delete), memory emptied
//! next batch   ──► keys of the batch not in memory are read back into memory first
//! ```
//!
//! Values are the stored row bytes with the `sequence.field` row bytes after them; the first
//! four bytes give the length of the values. Writes are not made durable: the file lives as
//! long as the query.

use std::sync::Arc;

use datafusion::common::{exec_datafusion_err, resources_datafusion_err, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::SpillFile;
use redb::{Database, Durability, ReadableDatabase, TableDefinition};

const STATE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("normalize_state");

/// Page cache redb keeps in memory for the spilled state.
const CACHE_BYTES: usize = 16 << 20;

/// Spilled state entries of one normalize.
pub(super) struct SpilledState {
    db: Database,
    /// Keeps the temp file alive (and counted by the disk manager) while the database is open.
    _file: Arc<dyn SpillFile>,
    table: String,
}

fn failed(table: &str, e: impl std::fmt::Display) -> datafusion::error::DataFusionError {
    exec_datafusion_err!("ChangelogNormalize of table {table} failed on its spilled state: {e}")
}

impl SpilledState {
    /// A new, empty spill file from `disk`; fails if the disk manager has no local disk.
    pub(super) fn create(disk: &Arc<DiskManager>, table: &str) -> Result<Self> {
        let file = disk.create_tmp_file(&format!("ChangelogNormalize[{table}] state"))?;
        let path = file.path().ok_or_else(|| {
            resources_datafusion_err!(
                "ChangelogNormalize of table {table} must spill its state but the disk manager has no local directory"
            )
        })?;
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(|e| failed(table, e))?;
        Ok(SpilledState {
            db,
            _file: file,
            table: table.to_string(),
        })
    }

    /// Writes `entries` in one transaction: `Some(value)` stores, `None` deletes.
    pub(super) fn write<'a>(&self, entries: impl Iterator<Item = (&'a [u8], Option<Vec<u8>>)>) -> Result<()> {
        let table = self.table.as_str();
        let mut txn = self.db.begin_write().map_err(|e| failed(table, e))?;
        txn.set_durability(Durability::None)
            .map_err(|e| failed(table, e))?;
        {
            let mut state = txn.open_table(STATE).map_err(|e| failed(table, e))?;
            for (key, value) in entries {
                match value {
                    Some(value) => {
                        state
                            .insert(key, value.as_slice())
                            .map_err(|e| failed(table, e))?;
                    }
                    None => {
                        state.remove(key).map_err(|e| failed(table, e))?;
                    }
                }
            }
        }
        txn.commit().map_err(|e| failed(table, e))
    }

    /// Calls `found(key, value)` for each of `keys` that is stored.
    pub(super) fn read<'a>(
        &self,
        keys: impl Iterator<Item = &'a [u8]>,
        mut found: impl FnMut(&'a [u8], &[u8]),
    ) -> Result<()> {
        let table = self.table.as_str();
        let txn = self.db.begin_read().map_err(|e| failed(table, e))?;
        let state = match txn.open_table(STATE) {
            Ok(state) => state,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(failed(table, e)),
        };
        for key in keys {
            if let Some(value) = state.get(key).map_err(|e| failed(table, e))? {
                found(key, value.value());
            }
        }
        Ok(())
    }
}

/// Stored row bytes and optional sequence row bytes as one value.
pub(super) fn encode_value(values: &[u8], sequence: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + values.len() + sequence.map_or(0, <[u8]>::len));
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    out.extend_from_slice(values);
    if let Some(sequence) = sequence {
        out.extend_from_slice(sequence);
    }
    out
}

/// The parts [`encode_value`] joined; `None` for a value too short to be one.
pub(super) fn decode_value(value: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let len = u32::from_le_bytes(value.get(..4)?.try_into().ok()?) as usize;
    let values = value.get(4..4 + len)?;
    let rest = &value[4 + len..];
    Some((values, (!rest.is_empty()).then_some(rest)))
}
