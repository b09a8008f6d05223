//! Loading `schema/schema-N` files, cached by id (they are immutable).

use std::sync::Arc;

use super::TableMeta;
use crate::error::{Error, Result};
use crate::spec::{paths, TableSchema};

/// How long the schema a table's resolution found serves the same statement's planning.
const SCHEMA_FOUND_AHEAD_FOR: std::time::Duration = std::time::Duration::from_secs(1);

impl TableMeta {
    /// The schema with this id.
    pub(crate) async fn schema(&self, id: i64) -> Result<Arc<TableSchema>> {
        if let Some(s) = self.schemas.get(&id) {
            return Ok(Arc::clone(&s));
        }
        let file = paths::schema_file(id);
        let bytes = self.io.read(&file, "schema file").await?;
        let schema = Arc::new(TableSchema::from_json(&bytes, &self.io.display(&file))?);
        self.schemas.insert(id, Arc::clone(&schema));
        Ok(schema)
    }

    /// Ids of all schema files, ascending.
    pub(crate) async fn schema_ids(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = self
            .io
            .list_files("schema")
            .await?
            .iter()
            .filter_map(|n| n.strip_prefix("schema-")?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The highest-numbered schema.
    pub(crate) async fn latest_schema(&self) -> Result<Arc<TableSchema>> {
        let found = self
            .schema_found_ahead
            .lock()
            .expect("lock is never poisoned")
            .take();
        // (only within the statement that resolved it: a handle a caller keeps plans later
        // writes with the schema of then)
        if let Some((found, at)) = found {
            if at.elapsed() < SCHEMA_FOUND_AHEAD_FOR {
                return Ok(found);
            }
        }
        self.latest_schema_confirmed().await
    }

    /// The highest-numbered schema, asked for now (never one found ahead): what a commit
    /// records, and what a read of a snapshot newer than its table's schema takes.
    pub(crate) async fn latest_schema_confirmed(&self) -> Result<Arc<TableSchema>> {
        self.latest_schema_if_any()
            .await?
            .ok_or_else(|| Error::not_found("schema", self.io.display("schema")))
    }

    /// The latest schema when resolving a table for a statement ([`Self::latest_schema_if_any`]),
    /// kept for the statement's next [`Self::latest_schema`] of this handle: planning a write
    /// confirms the schema once, and its commit again.
    pub(crate) async fn resolve_latest_schema(&self) -> Result<Option<Arc<TableSchema>>> {
        let latest = self.latest_schema_if_any().await?;
        *self.schema_found_ahead.lock().expect("lock is never poisoned") =
            latest.clone().map(|schema| (schema, std::time::Instant::now()));
        Ok(latest)
    }

    /// The highest-numbered schema, `None` when the table has none (it does not exist). One
    /// listing of the schema directory; the file itself is read only if the catalog has not
    /// decoded it before (same location, size and last modification).
    pub(crate) async fn latest_schema_if_any(&self) -> Result<Option<Arc<TableSchema>>> {
        // listed recently by this session: one HEAD of the next id tells whether it changed
        let dir = self.io.display("schema");
        if let Some(known) = self.manifests.trusted_latest_schema(&dir) {
            if !self.io.exists(&paths::schema_file(known.id + 1)).await? {
                self.schemas.insert(known.id, Arc::clone(&known));
                self.note_latest(&known);
                return Ok(Some(known));
            }
        }
        let latest = self
            .io
            .list_files_meta("schema")
            .await?
            .into_iter()
            .filter_map(|o| {
                let id: i64 = o.location.filename()?.strip_prefix("schema-")?.parse().ok()?;
                Some((id, o))
            })
            .max_by_key(|(id, _)| *id);
        let Some((id, object)) = latest else {
            return Ok(None);
        };
        if let Some(s) = self.schemas.get(&id) {
            let schema = Arc::clone(&s);
            drop(s);
            self.note_latest(&schema);
            self.manifests.note_latest_schema(&dir, &schema);
            return Ok(Some(schema));
        }
        // (an object store's e-tag changes with the content, where the modification time may
        // only count seconds: a table dropped and created again within one)
        let key = format!(
            "{}@{}@{}@{}",
            object.location,
            object.size,
            object.last_modified.timestamp_micros(),
            object.e_tag.as_deref().unwrap_or("")
        );
        let cache = self.manifests.schemas();
        let schema = match cache.get(&key) {
            Some(schema) => schema,
            None => {
                let schema = self.schema(id).await?;
                cache.put(&key, Arc::clone(&schema), object.size as usize);
                schema
            }
        };
        self.schemas.insert(id, Arc::clone(&schema));
        self.note_latest(&schema);
        self.manifests.note_latest_schema(&dir, &schema);
        Ok(Some(schema))
    }

    /// Remembers `schema`, just written by this session as the table's first, as its latest:
    /// the first statement on the new table need not list its schemas.
    pub(crate) fn note_created_schema(&self, schema: &TableSchema) {
        let schema = Arc::new(schema.clone());
        self.schemas.insert(schema.id, Arc::clone(&schema));
        self.note_latest(&schema);
        self.manifests
            .note_latest_schema(&self.io.display("schema"), &schema);
        self.manifests.note_no_snapshot(&self.io.display("snapshot"));
    }

    /// Remembers `schema` as the newest this handle has seen (for [`TableMeta::manifest_format`]).
    fn note_latest(&self, schema: &Arc<TableSchema>) {
        if let Ok(mut newest) = self.latest_schema.write() {
            if newest.as_ref().is_none_or(|n| n.id <= schema.id) {
                *newest = Some(Arc::clone(schema));
            }
        }
    }
}
