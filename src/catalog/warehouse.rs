//! Creating and dropping databases and tables of a filesystem-catalog warehouse, and
//! committing new schema versions (format.md §1.1, §2.7).
//!
//! * A database is the directory `<warehouse>/<db>.db`. On a local file system it is created
//!   as a directory; on object stores directories are implicit, so nothing is written and the
//!   catalog remembers the empty database until a table is created in it.
//! * A table exists iff `<table>/schema/` holds a `schema-N` file; it is created by writing
//!   `schema-0` with create-if-absent, so two concurrent creators cannot both win.
//! * Dropping deletes every object below the directory, schema files last: an interrupted
//!   drop leaves a table that still exists (and can be dropped again) rather than stray
//!   snapshots a re-created table would pick up.

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::common::{plan_err, DataFusionError, Result};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::ObjectStoreExt;

use super::PaimonCatalog;
use crate::io::FileIO;
use crate::meta::TableMeta;
use crate::spec::TableSchema;

/// Java's reserved system database (`Catalog.SYSTEM_DATABASE_NAME`).
const SYSTEM_DATABASE: &str = "sys";

impl PaimonCatalog {
    /// Makes database `name` exist for this catalog even if the warehouse has no directory
    /// for it (yet), as Flink's Paimon catalog does with its default database: local and
    /// object-store warehouses then behave alike, and nothing is written until a table is
    /// created in it.
    pub async fn ensure_database(&self, name: &str) -> Result<()> {
        if self.database_exists(name).await? {
            return Ok(());
        }
        self.empty_databases
            .write()
            .expect("lock is never poisoned")
            .insert(name.to_string());
        self.refresh().await
    }

    /// Whether database `name` exists.
    pub async fn database_exists(&self, name: &str) -> Result<bool> {
        if self
            .empty_databases
            .read()
            .expect("lock is never poisoned")
            .contains(name)
        {
            return Ok(true);
        }
        let dir = database_dir(name);
        match local_path(self.io(), &dir) {
            Some(path) => Ok(tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir())),
            None => Ok(self.io().dir_has_files(&dir).await?),
        }
    }

    /// `CREATE DATABASE [IF NOT EXISTS] name`.
    pub async fn create_database(&self, name: &str, if_not_exists: bool) -> Result<()> {
        check_name(name, "database")?;
        if name == SYSTEM_DATABASE {
            return plan_err!("Cannot create database {name}: the name is reserved for Paimon system tables");
        }
        if self.database_exists(name).await? {
            return if if_not_exists {
                Ok(())
            } else {
                plan_err!("Database {name} already exists")
            };
        }
        match local_path(self.io(), &database_dir(name)) {
            Some(path) => tokio::fs::create_dir_all(&path).await?,
            None => {
                self.empty_databases
                    .write()
                    .expect("lock is never poisoned")
                    .insert(name.to_string());
            }
        }
        self.refresh().await
    }

    /// `DROP DATABASE [IF EXISTS] name [CASCADE]`: without `cascade` the database must hold no
    /// table.
    pub async fn drop_database(&self, name: &str, if_exists: bool, cascade: bool) -> Result<()> {
        if !self.database_exists(name).await? {
            return if if_exists {
                Ok(())
            } else {
                plan_err!("Database {name} does not exist")
            };
        }
        let tables = self.tables_in(name).await?;
        if !cascade && !tables.is_empty() {
            return plan_err!(
                "Database {name} is not empty: it holds table(s) {}; use DROP DATABASE {name} CASCADE",
                tables.join(", ")
            );
        }
        delete_tree(self.io(), &database_dir(name)).await?;
        self.empty_databases
            .write()
            .expect("lock is never poisoned")
            .remove(name);
        self.refresh().await
    }

    /// Creates table `database.table` by writing `schema` as `schema/schema-0`.
    ///
    /// Returns `false` (and writes nothing) if the table exists and `if_not_exists` is set.
    pub async fn create_table(
        &self,
        database: &str,
        table: &str,
        schema: &TableSchema,
        if_not_exists: bool,
    ) -> Result<bool> {
        check_name(table, "table")?;
        if !self.database_exists(database).await? {
            return plan_err!("Database {database} does not exist");
        }
        let meta = self.table_meta(database, table);
        // (creating `schema-0` if absent is the existence check: one request, no listing)
        let created = meta.create_schema_file(schema.id, schema.to_json()).await?;
        if !created {
            return if if_not_exists {
                Ok(false)
            } else {
                plan_err!("Table {database}.{table} already exists")
            };
        }
        self.empty_databases
            .write()
            .expect("lock is never poisoned")
            .remove(database);
        meta.note_created_schema(schema);
        self.note_created_table(database, table);
        Ok(true)
    }

    /// Drops table `database.table` with all its files. Returns `false` if it did not exist
    /// and `if_exists` is set.
    pub async fn drop_table(&self, database: &str, table: &str, if_exists: bool) -> Result<bool> {
        if self.table_schema(database, table).await?.is_none() {
            return if if_exists {
                Ok(false)
            } else {
                plan_err!("Table {database}.{table} does not exist")
            };
        }
        delete_tree(self.io(), &table_dir(database, table)).await?;
        if local_path(self.io(), "").is_none() {
            // On object stores the database would vanish with its last table.
            self.empty_databases
                .write()
                .expect("lock is never poisoned")
                .insert(database.to_string());
        }
        self.refresh().await?;
        Ok(true)
    }

    /// Renames `from` (database, table) to `to`, as Paimon's filesystem catalog does: the table
    /// directory moves. Manifests name data files relative to their table, so nothing inside
    /// changes. A local directory moves in one rename; on object stores every file moves, the
    /// schema files last, so the old name stays a readable table until the data has moved.
    pub async fn rename_table(&self, from: (&str, &str), to: (&str, &str)) -> Result<()> {
        check_name(to.1, "table")?;
        let (from_name, to_name) = (format!("{}.{}", from.0, from.1), format!("{}.{}", to.0, to.1));
        if self.table_schema(from.0, from.1).await?.is_none() {
            return plan_err!("Table {from_name} does not exist");
        }
        if self.database(to.0).is_none() {
            return plan_err!("Database {} does not exist", to.0);
        }
        let target = table_dir(to.0, to.1);
        if self.io().dir_has_files(&target).await? {
            return plan_err!("Table {to_name} already exists");
        }
        let source = table_dir(from.0, from.1);
        match (local_path(self.io(), &source), local_path(self.io(), &target)) {
            (Some(old), Some(new)) => std::fs::rename(&old, &new).map_err(|e| {
                DataFusionError::Execution(format!("Cannot rename table {from_name} to {to_name}: {e}"))
            })?,
            _ => {
                let (from_prefix, to_prefix) = (self.io().path(&source), self.io().path(&target));
                let listed: Vec<Path> = self
                    .io()
                    .store()
                    .list(Some(&from_prefix))
                    .map_ok(|m| m.location)
                    .try_collect()
                    .await
                    .map_err(|e| DataFusionError::ObjectStore(Box::new(e)))?;
                let (schemas, others): (Vec<Path>, Vec<Path>) = listed
                    .into_iter()
                    .partition(|p| p.parts().any(|s| s.as_ref() == "schema"));
                for old in others.iter().chain(&schemas) {
                    let rest = old.as_ref()[from_prefix.as_ref().len()..].trim_start_matches('/');
                    let new = Path::from(format!("{}/{rest}", to_prefix.as_ref()));
                    self.io()
                        .store()
                        .rename(old, &new)
                        .await
                        .map_err(|e| DataFusionError::ObjectStore(Box::new(e)))?;
                }
            }
        }
        self.refresh().await
    }

    /// The latest schema of `database.table`, or `None` if there is no such table.
    pub async fn table_schema(&self, database: &str, table: &str) -> Result<Option<Arc<TableSchema>>> {
        let meta = self.table_meta(database, table);
        if meta.schema_ids().await?.is_empty() {
            return Ok(None);
        }
        Ok(Some(meta.latest_schema().await?))
    }

    /// Whether `database.table` has at least one snapshot (holds committed data).
    pub async fn table_has_snapshots(&self, database: &str, table: &str) -> Result<bool> {
        Ok(self
            .table_meta(database, table)
            .latest_snapshot_id()
            .await?
            .is_some())
    }

    /// Writes `schema` as `schema/schema-<schema.id>` if that file does not exist yet.
    ///
    /// Returns `false` if another writer created it first: reload the latest schema and retry
    /// (format.md §2.7).
    pub async fn commit_schema(&self, database: &str, table: &str, schema: &TableSchema) -> Result<bool> {
        let meta = self.table_meta(database, table);
        let created = meta.create_schema_file(schema.id, schema.to_json()).await?;
        if created {
            self.refresh().await?;
        }
        Ok(created)
    }

    pub(crate) fn table_meta(&self, database: &str, table: &str) -> TableMeta {
        TableMeta::with_manifest_cache(
            self.io().child(&table_dir(database, table)),
            Arc::clone(&self.manifests),
        )
    }

    /// Names of the tables of `database`, as stored now.
    async fn tables_in(&self, database: &str) -> Result<Vec<String>> {
        tables_in_dir(self.io(), &database_dir(database)).await
    }
}

/// The tables of the database directory `dir`: one listing of it, then one HEAD of each
/// subdirectory's `schema/schema-0` (every table's first schema), a few at a time. Java lists
/// each table's schema directory instead, one after another: a LIST costs ten times a HEAD.
pub(super) async fn tables_in_dir(io: &crate::io::FileIO, dir: &str) -> Result<Vec<String>> {
    use futures::{StreamExt, TryStreamExt};
    let candidates = io.list_dirs(dir).await?;
    let found: Vec<Option<String>> = futures::stream::iter(candidates)
        .map(|t| async move {
            let schema = format!("{dir}/{t}/{}", crate::spec::paths::schema_file(0));
            Ok::<_, crate::error::Error>(io.exists(&schema).await?.then_some(t))
        })
        .buffered(16)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

fn database_dir(name: &str) -> String {
    format!("{name}.db")
}

fn table_dir(database: &str, table: &str) -> String {
    format!("{}/{table}", database_dir(database))
}

/// Names become path segments: no separators, no `$` (system tables), not empty.
fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains('\\') || (what == "table" && name.contains('$'))
    {
        return plan_err!("Invalid {what} name '{name}'");
    }
    Ok(())
}

/// The local directory behind `relative` when the warehouse is on the local file system.
fn local_path(io: &FileIO, relative: &str) -> Option<PathBuf> {
    let url = url::Url::parse(&io.display(relative)).ok()?;
    (url.scheme() == "file")
        .then(|| url.to_file_path().ok())
        .flatten()
}

/// Deletes every object below `relative`, files under a `schema/` directory last, then (on a
/// local file system) the emptied directories.
async fn delete_tree(io: &FileIO, relative: &str) -> Result<()> {
    let prefix = io.path(relative);
    let listed: Vec<Path> = match io
        .store()
        .list(Some(&prefix))
        .map_ok(|m| m.location)
        .try_collect()
        .await
    {
        Ok(paths) => paths,
        Err(object_store::Error::NotFound { .. }) => vec![],
        Err(e) => return Err(DataFusionError::ObjectStore(Box::new(e))),
    };
    let (schemas, others): (Vec<Path>, Vec<Path>) = listed
        .into_iter()
        .partition(|p| p.parts().any(|s| s.as_ref() == "schema"));
    for path in others.iter().chain(&schemas) {
        match io.store().delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(DataFusionError::ObjectStore(Box::new(e))),
        }
    }
    if let Some(dir) = local_path(io, relative) {
        match tokio::fs::remove_dir_all(&dir).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
