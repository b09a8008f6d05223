//! Loading `schema/schema-N` files, cached by id (they are immutable).

use std::sync::Arc;

use super::TableMeta;
use crate::error::{Error, Result};
use crate::spec::{paths, TableSchema};

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
        let ids = self.schema_ids().await?;
        let id = ids
            .last()
            .ok_or_else(|| Error::not_found("schema", self.io.display("schema")))?;
        self.schema(*id).await
    }
}
