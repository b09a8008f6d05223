//! Consumer progress files `consumer/consumer-<id>`: `{"nextSnapshot": n}` (format.md §3.6).
//! A tailing read records its progress there; snapshot expiration keeps what consumers need.

use super::TableMeta;
use crate::error::{Error, Result};

/// One consumer of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Consumer {
    pub(crate) id: String,
    /// The first snapshot it has not consumed yet.
    pub(crate) next_snapshot: i64,
    /// Last write of its file, epoch millis (for `consumer.expiration-time`).
    pub(crate) modified_millis: Option<i64>,
}

fn consumer_file(id: &str) -> String {
    format!("consumer/consumer-{id}")
}

/// Whether `id` can name a consumer (it becomes part of a file name).
pub(crate) fn valid_consumer_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl TableMeta {
    /// Every consumer of the table, by id.
    pub(crate) async fn consumers(&self) -> Result<Vec<Consumer>> {
        let mut consumers = Vec::new();
        for name in self.io.list_files("consumer").await? {
            let Some(id) = name.strip_prefix("consumer-") else {
                continue;
            };
            let path = consumer_file(id);
            let shown = self.io.display(&path);
            let bytes = self.io.read(&path, "consumer").await?;
            let json: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(&shown, e))?;
            let next_snapshot = json
                .get("nextSnapshot")
                .and_then(|v| v.as_i64())
                .ok_or_else(|| Error::corrupt(&shown, "no nextSnapshot"))?;
            consumers.push(Consumer {
                id: id.to_string(),
                next_snapshot,
                modified_millis: self.io.last_modified_millis(&path).await?,
            });
        }
        consumers.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(consumers)
    }

    /// The consumer `id`, if its file exists.
    pub(crate) async fn consumer(&self, id: &str) -> Result<Option<Consumer>> {
        Ok(self.consumers().await?.into_iter().find(|c| c.id == id))
    }

    /// Records that consumer `id` has consumed every snapshot before `next_snapshot`.
    pub(crate) async fn write_consumer(&self, id: &str, next_snapshot: i64) -> Result<()> {
        let json = serde_json::json!({ "nextSnapshot": next_snapshot }).to_string();
        self.io.write(&consumer_file(id), json.into_bytes()).await
    }

    /// Removes consumer `id`.
    pub(crate) async fn delete_consumer(&self, id: &str) -> Result<()> {
        self.io.delete(&consumer_file(id)).await
    }
}
