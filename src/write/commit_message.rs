//! A writer task's [`WrittenFiles`] as rows, so a distributed write can send them from its
//! writer tasks to the one committer through an ordinary shuffle (as Paimon's Flink writers
//! send `CommitMessage`s to the committer operator).
//!
//! One row per file, its manifest (or index-manifest) entry as an Avro datum in the layout the
//! manifests use, plus one row carrying the writer's row count:
//!
//! ```text
//! rows: UInt64 | kind: Utf8 | entry: Binary
//! ```
//!
//! Kinds: `rows`; `updated`, `deleted`, `inserted` (a MERGE's rows of each kind, in `rows`);
//! `data`, `changelog`, `index` (the write's files); `compact-` and a kind of
//! `CompactOutcome::message_rows` (the writer's compaction of its buckets, committed as the
//! COMPACT snapshot after the write's);
//! `row-level-rewritten`, `row-level-marked`, `row-level-index-read` (an append table's
//! DELETE or UPDATE: the files it replaces or marks, and the deletion-vector index files it
//! read, by name).

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, AsArray, BinaryBuilder, RecordBatch, StringBuilder, UInt64Builder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use datafusion::common::{exec_datafusion_err, exec_err, Result};

use crate::compact::CompactOutcome;
use crate::meta::RowLevelBase;
use crate::spec::manifest_write::{entry_datum, entry_from_datum, index_entry_datum, index_entry_from_datum};
use crate::spec::ManifestEntry;

/// The schema of commit-message rows.
pub(crate) static MESSAGE_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("rows", DataType::UInt64, true),
        Field::new("kind", DataType::Utf8, false),
        Field::new("entry", DataType::Binary, true),
    ]))
});

const ROWS: &str = "rows";
const MERGE_KINDS: [&str; 3] = ["updated", "deleted", "inserted"];
const DATA: &str = "data";
const CHANGELOG: &str = "changelog";
const INDEX: &str = "index";
const COMPACT_PREFIX: &str = "compact-";
const ROW_LEVEL_REWRITTEN: &str = "row-level-rewritten";
const ROW_LEVEL_MARKED: &str = "row-level-marked";
const ROW_LEVEL_INDEX_READ: &str = "row-level-index-read";

/// What one writer wrote and has not committed: the commit message of a writer task.
#[derive(Debug, Default)]
pub(crate) struct WrittenFiles {
    /// Input rows taken (written, or counted by a metadata-only delete).
    pub(crate) rows: u64,
    /// A MERGE: its rows that update, delete and insert (Spark's counts).
    pub(crate) merge_kinds: [u64; 3],
    /// Level-0 data files.
    pub(crate) added: Vec<ManifestEntry>,
    /// Changelog files (`changelog-producer = input`).
    pub(crate) changelog: Vec<ManifestEntry>,
    /// Dynamic-bucket index files of the partitions this writer assigned.
    pub(crate) index_added: Vec<crate::spec::IndexManifestEntry>,
    /// A MERGE into an append table: the rows it took from existing files (local only).
    pub(crate) append_marks: Option<super::merge_append::AppendMergeMarks>,
    /// The writer's compaction of the buckets it wrote (a distributed write), not committed.
    pub(crate) compaction: CompactOutcome,
    /// An append table's DELETE or UPDATE: what it replaces (its statement set at commit).
    pub(crate) row_level: Option<RowLevelBase>,
}

impl WrittenFiles {
    /// These files as commit-message rows.
    pub(crate) fn to_message_batch(&self) -> Result<RecordBatch> {
        let compaction = self.compaction.message_rows()?;
        let empty = RowLevelBase::default();
        let base = self.row_level.as_ref().unwrap_or(&empty);
        let n = 4
            + base.rewritten.len()
            + base.marked.len()
            + base.index_files.len()
            + self.added.len()
            + self.changelog.len()
            + self.index_added.len()
            + compaction.len();
        let mut rows = UInt64Builder::with_capacity(n);
        let mut kinds = StringBuilder::with_capacity(n, n * 8);
        let mut entries = BinaryBuilder::with_capacity(n, n * 512);
        rows.append_value(self.rows);
        kinds.append_value(ROWS);
        entries.append_null();
        for (kind, n) in MERGE_KINDS.iter().zip(self.merge_kinds) {
            if n > 0 {
                rows.append_value(n);
                kinds.append_value(kind);
                entries.append_null();
            }
        }
        let avro = |e: apache_avro::Error| exec_datafusion_err!("{e}");
        let data_lists = [
            (DATA, &self.added),
            (CHANGELOG, &self.changelog),
            (ROW_LEVEL_REWRITTEN, &base.rewritten),
            (ROW_LEVEL_MARKED, &base.marked),
        ];
        for (kind, list) in data_lists {
            for entry in list {
                rows.append_null();
                kinds.append_value(kind);
                entries.append_value(entry_datum(entry).map_err(avro)?);
            }
        }
        for entry in &self.index_added {
            rows.append_null();
            kinds.append_value(INDEX);
            entries.append_value(index_entry_datum(entry).map_err(avro)?);
        }
        for (kind, bytes) in compaction {
            rows.append_null();
            kinds.append_value(format!("{COMPACT_PREFIX}{kind}"));
            entries.append_value(bytes);
        }
        for name in &base.index_files {
            rows.append_null();
            kinds.append_value(ROW_LEVEL_INDEX_READ);
            entries.append_value(name.as_bytes());
        }
        Ok(RecordBatch::try_new(
            Arc::clone(&MESSAGE_SCHEMA),
            vec![
                Arc::new(rows.finish()),
                Arc::new(kinds.finish()),
                Arc::new(entries.finish()),
            ],
        )?)
    }

    /// Adds the files of commit-message rows (from [`Self::to_message_batch`]) to these.
    pub(crate) fn add_message_batch(&mut self, batch: &RecordBatch, table: &str) -> Result<()> {
        if batch.num_columns() != 3 {
            return exec_err!(
                "A commit message of table {table} has {} columns, not 3",
                batch.num_columns()
            );
        }
        let rows = batch.column(0).as_primitive_opt::<UInt64Type>();
        let kinds = batch.column(1).as_string_opt::<i32>();
        let entries = batch.column(2).as_binary_opt::<i32>();
        let (Some(rows), Some(kinds), Some(entries)) = (rows, kinds, entries) else {
            return exec_err!("A commit message of table {table} has columns of the wrong types");
        };
        let what = format!("a commit message of table {table}");
        for i in 0..batch.num_rows() {
            let kind = kinds.value(i);
            if kind == ROWS {
                self.rows += rows.value(i);
                continue;
            }
            if let Some(k) = MERGE_KINDS.iter().position(|m| *m == kind) {
                self.merge_kinds[k] += rows.value(i);
                continue;
            }
            if entries.is_null(i) {
                return exec_err!("{what} has a {kind} row without an entry");
            }
            if kind == ROW_LEVEL_INDEX_READ {
                let name = std::str::from_utf8(entries.value(i))
                    .map_err(|e| exec_datafusion_err!("Invalid index file name in {what}: {e}"))?;
                let base = self.row_level.get_or_insert_with(Default::default);
                base.index_files.push(name.to_string());
                continue;
            }
            let bytes = entries.value(i);
            if let Some(compacted) = kind.strip_prefix(COMPACT_PREFIX) {
                if !self.compaction.add_message_row(compacted, bytes, &what)? {
                    return exec_err!("{what} has an unknown kind '{kind}'");
                }
                continue;
            }
            if kind == INDEX {
                self.index_added.push(index_entry_from_datum(bytes, &what)?);
                continue;
            }
            let entry = entry_from_datum(bytes, &what)?;
            match kind {
                DATA => self.added.push(entry),
                CHANGELOG => self.changelog.push(entry),
                ROW_LEVEL_REWRITTEN => self
                    .row_level
                    .get_or_insert_with(Default::default)
                    .rewritten
                    .push(entry),
                ROW_LEVEL_MARKED => self
                    .row_level
                    .get_or_insert_with(Default::default)
                    .marked
                    .push(entry),
                other => return exec_err!("{what} has an unknown kind '{other}'"),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DataFileMeta, FileKind};

    fn entry(name: &str, bucket: i32) -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Add,
            partition: vec![0, 0, 0, 0],
            bucket,
            total_buckets: 4,
            file: DataFileMeta {
                file_name: name.to_string(),
                file_size: 123,
                row_count: 7,
                min_key: vec![1, 2],
                max_key: vec![3, 4],
                key_stats: Default::default(),
                value_stats: Default::default(),
                min_sequence_number: 3,
                max_sequence_number: 9,
                schema_id: 0,
                level: 0,
                extra_files: vec![],
                creation_time: Some(1_700_000_000_000),
                delete_row_count: Some(0),
                embedded_index: None,
                file_source: Some(0),
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
            },
        }
    }

    #[test]
    fn messages_carry_files_and_row_counts_through_rows() {
        let written = WrittenFiles {
            rows: 42,
            merge_kinds: [1, 0, 2],
            added: vec![entry("data-a.parquet", 1), entry("data-b.parquet", 3)],
            changelog: vec![entry("changelog-c.parquet", 1)],
            index_added: vec![],
            append_marks: None,
            compaction: CompactOutcome {
                before: vec![entry("data-a.parquet", 1)],
                after: vec![entry("data-d.parquet", 1)],
                changelog: vec![entry("changelog-e.parquet", 1)],
                index_added: vec![],
                index_removed: vec![],
            },
            row_level: Some(RowLevelBase {
                statement: String::new(),
                rewritten: vec![entry("data-f.parquet", 2)],
                marked: vec![],
                index_files: vec!["index-g-0".to_string()],
            }),
        };
        let batch = written.to_message_batch().unwrap();
        assert_eq!(batch.num_rows(), 11);
        let mut back = WrittenFiles::default();
        back.add_message_batch(&batch, "t").unwrap();
        back.add_message_batch(&batch, "t").unwrap();
        assert_eq!(back.rows, 84);
        assert_eq!(back.merge_kinds, [2, 0, 4]);
        assert_eq!(back.added.len(), 4);
        assert_eq!(back.added[1], written.added[1]);
        assert_eq!(back.changelog[0], written.changelog[0]);
        assert_eq!(back.compaction.before.len(), 2);
        assert_eq!(back.compaction.after[0], written.compaction.after[0]);
        assert_eq!(back.compaction.changelog[1], written.compaction.changelog[0]);
        let base = back.row_level.unwrap();
        assert_eq!(base.rewritten[1].file.file_name, "data-f.parquet");
        assert_eq!(base.index_files, vec!["index-g-0", "index-g-0"]);
    }
}
