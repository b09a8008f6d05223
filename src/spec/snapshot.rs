//! `snapshot/snapshot-N` and `tag/tag-<name>` files (format.md §3).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One snapshot of a table. Unknown keys are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Snapshot format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// Snapshot id.
    pub id: i64,
    /// Latest schema id at commit time.
    pub schema_id: i64,
    /// Manifest list of all previous changes.
    pub base_manifest_list: String,
    /// Manifest list of this snapshot's changes.
    pub delta_manifest_list: String,
    /// Manifest list of this snapshot's changelog files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_manifest_list: Option<String>,
    /// Index manifest holding every live table index file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_manifest: Option<String>,
    /// Identity of the committing job.
    pub commit_user: String,
    /// Transaction id within `commit_user`.
    pub commit_identifier: i64,
    /// APPEND, COMPACT, OVERWRITE or ANALYZE.
    pub commit_kind: String,
    /// Commit time, epoch millis.
    pub time_millis: i64,
    /// Rows in all live data files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_record_count: Option<i64>,
    /// Rows added minus rows deleted by this snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_record_count: Option<i64>,
    /// Rows in this snapshot's changelog files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_record_count: Option<i64>,
    /// Watermark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    /// Statistics file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<String>,
    /// Row tracking: next row id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_row_id: Option<i64>,
    /// Logical operation (WRITE, DELETE, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Writer build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_version: Option<String>,
}

impl Snapshot {
    /// The JSON Paimon writes (optional fields omitted when absent).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a snapshot always serializes")
    }

    /// Parses a snapshot or tag file; `path` names it in errors.
    pub fn from_json(bytes: &[u8], path: &str) -> Result<Self> {
        let s: Snapshot = serde_json::from_slice(bytes).map_err(|e| Error::corrupt(path, e))?;
        // Old Flink jobs wrote Long.MIN_VALUE for "no watermark".
        Ok(Snapshot {
            watermark: s.watermark.filter(|w| *w != i64::MIN),
            ..s
        })
    }
}

/// A tag: a named snapshot plus optional retention info.
#[derive(Debug, Clone)]
pub struct Tag {
    /// Tag name (file `tag-<name>`).
    pub name: String,
    /// The tagged snapshot.
    pub snapshot: Snapshot,
    /// `tagCreateTime` as epoch millis (wall clock as UTC), when present.
    pub create_time_millis: Option<i64>,
    /// `tagTimeRetained` as text, when present.
    pub time_retained: Option<String>,
}

impl Tag {
    /// Parses a tag file.
    pub fn from_json(name: &str, bytes: &[u8], path: &str) -> Result<Self> {
        let snapshot = Snapshot::from_json(bytes, path)?;
        let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| Error::corrupt(path, e))?;
        let create_time_millis = v.get("tagCreateTime").and_then(|t| t.as_array()).and_then(|a| {
            let n = |i: usize| a.get(i).and_then(|x| x.as_i64()).unwrap_or(0);
            let date = chrono::NaiveDate::from_ymd_opt(n(0) as i32, n(1) as u32, n(2) as u32)?;
            let t = date.and_hms_nano_opt(n(3) as u32, n(4) as u32, n(5) as u32, n(6) as u32)?;
            Some(t.and_utc().timestamp_millis())
        });
        let time_retained = v.get("tagTimeRetained").map(|t| match t {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        Ok(Tag {
            name: name.to_string(),
            snapshot,
            create_time_millis,
            time_retained,
        })
    }
}
