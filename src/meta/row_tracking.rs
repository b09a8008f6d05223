//! Row tracking at commit (`row-tracking.enabled`, Paimon 1.3): every new row gets a row id,
//! counted on from the previous snapshot's `nextRowId`, as Java's `RowTrackingCommitUtils`:
//!
//! * sequence numbers first: a new file whose smallest sequence number is 0 gets the snapshot
//!   id as both bounds, one whose largest is 0 the snapshot id as its largest;
//! * then row ids, in commit order: a newly appended data file without a first row id takes
//!   `nextRowId` and moves it on by its row count; a `.blob` file reuses the range of the data
//!   file before it (one counter per blob column); files that carry row ids already (compacted,
//!   or writing `_ROW_ID` themselves) keep them.

use std::collections::HashMap;

use crate::spec::{FileKind, ManifestEntry, TableSchema};

/// Whether the table gives its rows ids.
pub(crate) fn enabled(schema: &TableSchema) -> bool {
    schema
        .options
        .get("row-tracking.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Assigns sequence numbers and row ids to the entries of the commit of snapshot
/// `snapshot_id`, whose previous snapshot's `nextRowId` was `previous_next`; returns the new
/// snapshot's `nextRowId`.
pub(crate) fn assign(delta: &mut [ManifestEntry], snapshot_id: i64, previous_next: Option<i64>) -> i64 {
    for entry in delta.iter_mut() {
        let file = &mut entry.file;
        if file.min_sequence_number == 0 {
            file.min_sequence_number = snapshot_id;
            file.max_sequence_number = snapshot_id;
        } else if file.max_sequence_number == 0 {
            file.max_sequence_number = snapshot_id;
        }
    }
    let mut next = previous_next.unwrap_or(0);
    let mut blob_default = next;
    let mut blob_next: HashMap<String, i64> = HashMap::new();
    for entry in delta.iter_mut().filter(|e| e.kind == FileKind::Add) {
        let file = &mut entry.file;
        let appended = file.file_source.unwrap_or(0) == 0;
        let stores_ids = file
            .write_cols
            .as_ref()
            .is_some_and(|cols| cols.iter().any(|c| c == crate::spec::ROW_ID));
        if !appended || file.first_row_id.is_some() || stores_ids {
            continue;
        }
        if file.file_name.to_ascii_lowercase().ends_with(".blob") {
            let column = file
                .write_cols
                .as_ref()
                .and_then(|c| c.first())
                .cloned()
                .unwrap_or_default();
            let start = *blob_next.get(&column).unwrap_or(&blob_default);
            file.first_row_id = Some(start);
            blob_next.insert(column, start + file.row_count);
        } else {
            file.first_row_id = Some(next);
            blob_default = next;
            blob_next.clear();
            next += file.row_count;
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DataFileMeta, SimpleStats};

    fn added(name: &str, rows: i64, write_cols: Option<&[&str]>) -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Add,
            partition: vec![],
            bucket: 0,
            total_buckets: -1,
            file: DataFileMeta {
                file_name: name.into(),
                file_size: 1,
                row_count: rows,
                min_key: vec![],
                max_key: vec![],
                key_stats: SimpleStats::default(),
                value_stats: SimpleStats::default(),
                min_sequence_number: 0,
                max_sequence_number: 0,
                schema_id: 0,
                level: 0,
                extra_files: vec![],
                creation_time: None,
                delete_row_count: None,
                embedded_index: None,
                file_source: Some(0),
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: write_cols.map(|c| c.iter().map(|s| s.to_string()).collect()),
            },
        }
    }

    /// The layout of Java's `append_table_with_multi_blob` fixture: one data file of 10 rows,
    /// `f5` in blob files of 6 and 4 rows, `f6` in blob files of 4, 2, 2 and 2.
    #[test]
    fn data_files_count_on_and_blob_files_share_their_range() {
        let mut delta = vec![
            added("data-1.parquet", 10, Some(&["f0", "f1"])),
            added("a.blob", 6, Some(&["f5"])),
            added("b.blob", 4, Some(&["f5"])),
            added("c.blob", 4, Some(&["f6"])),
            added("d.blob", 2, Some(&["f6"])),
            added("e.blob", 2, Some(&["f6"])),
            added("f.blob", 2, Some(&["f6"])),
        ];
        let next = assign(&mut delta, 5, Some(100));
        let firsts: Vec<Option<i64>> = delta.iter().map(|e| e.file.first_row_id).collect();
        assert_eq!(
            firsts,
            vec![
                Some(100),
                Some(100),
                Some(106),
                Some(100),
                Some(104),
                Some(106),
                Some(108)
            ]
        );
        assert_eq!(next, 110);
        assert!(delta
            .iter()
            .all(|e| (e.file.min_sequence_number, e.file.max_sequence_number) == (5, 5)));
    }

    #[test]
    fn compacted_and_preset_files_keep_their_ids() {
        let mut compacted = added("c.parquet", 5, Some(&["f0", "_ROW_ID", "_SEQUENCE_NUMBER"]));
        compacted.file.file_source = Some(1);
        let mut preset = added("p.parquet", 3, Some(&["f2"]));
        preset.file.first_row_id = Some(0);
        let mut delta = vec![compacted, preset, added("n.parquet", 2, None)];
        assert_eq!(assign(&mut delta, 1, None), 2);
        let firsts: Vec<Option<i64>> = delta.iter().map(|e| e.file.first_row_id).collect();
        assert_eq!(firsts, vec![None, Some(0), Some(0)]);
    }
}
