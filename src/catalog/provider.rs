//! `PaimonCatalog` (`CatalogProvider`) and `PaimonDatabase` (`SchemaProvider`).
//!
//! DataFusion's name-listing methods are synchronous, so database and table names are listed
//! once when the catalog opens and refreshed by [`PaimonCatalog::refresh`]; resolving a table
//! by name always checks the warehouse itself.
//!
//! Tables DataFusion registers itself (`CREATE EXTERNAL TABLE`, `CREATE VIEW`, a
//! `register_table` call) live next to the Paimon tables of their database for the lifetime
//! of the catalog object, in memory, as they would in DataFusion's memory schema; they never
//! shadow a Paimon table.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::common::{plan_err, DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::SessionContext;
use object_store::path::Path;
use url::Url;

use crate::io::FileIO;
use crate::meta::TableMeta;
use crate::sql::options_hint;
use crate::system_tables;
use crate::table::{open_table_with_latest, ReadView};

/// Session read options shared by the catalog's tables (`SET paimon.<option> = ...`).
pub type ReadOptions = Arc<RwLock<BTreeMap<String, String>>>;

/// Non-Paimon tables (external tables, views) per database: name -> provider.
type SessionTables = Arc<RwLock<BTreeMap<String, BTreeMap<String, Arc<dyn TableProvider>>>>>;

/// A warehouse of Paimon tables.
#[derive(Debug)]
pub struct PaimonCatalog {
    io: FileIO,
    read_options: ReadOptions,
    /// database -> table names, as last listed.
    listing: RwLock<BTreeMap<String, Vec<String>>>,
    /// Databases created by this catalog that have no object yet: on object stores a
    /// directory exists only through the files below it (see `warehouse.rs`).
    pub(super) empty_databases: RwLock<BTreeSet<String>>,
    /// Names besides `paimon` the session registered this catalog under (`CREATE CATALOG`).
    other_names: RwLock<BTreeSet<String>>,
    session_tables: SessionTables,
    /// Decoded manifests of every table of this catalog (`meta::ManifestCache`).
    pub(super) manifests: Arc<crate::meta::ManifestCache>,
}

impl PaimonCatalog {
    /// Opens the warehouse at `location` (a local path or an object-store URL such as
    /// `s3://bucket/wh`), resolving its store through `ctx`'s object store registry.
    pub async fn open(ctx: &SessionContext, location: &str) -> Result<Arc<Self>> {
        let url = warehouse_url(location)?;
        let store_url = ObjectStoreUrl::parse(&url[..url::Position::BeforePath])?;
        // every request of the catalog's tables counted, for `EXPLAIN ANALYZE`
        let store = crate::io::RequestCountingStore::new(
            ctx.runtime_env().object_store(&store_url)?,
            std::time::Duration::ZERO,
        );
        let requests = store.counts();
        let root = Path::from_url_path(url.path()).map_err(|e| DataFusionError::External(Box::new(e)))?;
        let catalog = Arc::new(PaimonCatalog {
            io: FileIO::new(
                Arc::new(store),
                root,
                url.to_string().trim_end_matches('/').to_string(),
            )
            .with_request_counts(requests)
            .with_registry(Arc::clone(&ctx.runtime_env().object_store_registry)),
            read_options: Arc::new(RwLock::new(BTreeMap::new())),
            listing: RwLock::new(BTreeMap::new()),
            empty_databases: RwLock::new(BTreeSet::new()),
            other_names: RwLock::new(BTreeSet::new()),
            session_tables: SessionTables::default(),
            manifests: Arc::new(crate::meta::manifest_cache(
                crate::meta::DEFAULT_MANIFEST_CACHE_BYTES,
            )),
        });
        catalog.refresh().await?;
        Ok(catalog)
    }

    /// The session read options applied to every table read through this catalog.
    pub fn read_options(&self) -> &ReadOptions {
        &self.read_options
    }

    /// Forgets the latest schemas this session listed (`meta::METADATA_TRUST`): the next read
    /// of each table lists its schemas again.
    pub(crate) fn forget_listings(&self) {
        self.manifests.forget_listings();
    }

    /// Adds a table this session has just created to the names it lists, instead of listing
    /// the warehouse again.
    pub(crate) fn note_created_table(&self, database: &str, table: &str) {
        let mut listing = self.listing.write().expect("listing lock is never poisoned");
        let tables = listing.entry(database.to_string()).or_default();
        if !tables.iter().any(|t| t == table) {
            tables.push(table.to_string());
            tables.sort();
        }
    }

    /// Re-lists databases and tables (after DDL or external changes).
    pub async fn refresh(&self) -> Result<()> {
        // (after this session's DDL and procedures: a dropped table, a rollback)
        self.manifests.forget_listings();
        let mut listing = BTreeMap::new();
        let databases: Vec<String> = self
            .io
            .list_dirs("")
            .await?
            .into_iter()
            .filter(|d| d.ends_with(".db"))
            .collect();
        let tables = futures::future::try_join_all(
            databases
                .iter()
                .map(|dir| super::warehouse::tables_in_dir(&self.io, dir)),
        )
        .await?;
        for (dir, tables) in databases.iter().zip(tables) {
            let db = dir.strip_suffix(".db").expect("filtered above");
            listing.insert(db.to_string(), tables);
        }
        for db in self
            .empty_databases
            .read()
            .expect("lock is never poisoned")
            .iter()
        {
            listing.entry(db.clone()).or_default();
        }
        *self.listing.write().expect("listing lock is never poisoned") = listing;
        Ok(())
    }

    /// Records `name` as another name this catalog is registered under (`CREATE CATALOG`).
    pub(crate) fn add_name(&self, name: &str) {
        self.other_names
            .write()
            .expect("names lock is never poisoned")
            .insert(name.to_string());
    }

    /// Whether this catalog is also registered as `name`.
    pub(crate) fn is_named(&self, name: &str) -> bool {
        self.other_names
            .read()
            .expect("names lock is never poisoned")
            .contains(name)
    }

    /// The warehouse root.
    pub(crate) fn io(&self) -> &FileIO {
        &self.io
    }

    /// The database with this name, if it exists.
    pub fn database(&self, name: &str) -> Option<Arc<PaimonDatabase>> {
        let listing = self.listing.read().expect("listing lock is never poisoned");
        let tables = listing.get(name)?.clone();
        Some(Arc::new(PaimonDatabase {
            name: name.to_string(),
            io: self.io.child(&format!("{name}.db")),
            read_options: Arc::clone(&self.read_options),
            table_names: tables,
            session_tables: Arc::clone(&self.session_tables),
            manifests: Arc::clone(&self.manifests),
        }))
    }
}

/// A local path or URL as a directory URL.
/// The URL of a warehouse location as a `CREATE CATALOG` gives it: also Flink's `file:/path`.
pub(crate) fn warehouse_url_of(location: &str) -> Result<Url> {
    match location.strip_prefix("file:") {
        Some(path) if !path.starts_with("//") => warehouse_url(path),
        _ => warehouse_url(location),
    }
}

fn warehouse_url(location: &str) -> Result<Url> {
    if location.contains("://") {
        return Url::parse(location)
            .map_err(|e| DataFusionError::Plan(format!("Invalid warehouse URL '{location}': {e}")));
    }
    let path = std::path::Path::new(location);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    Url::from_directory_path(lexically_normal(&absolute))
        .map_err(|_| DataFusionError::Plan(format!("Invalid warehouse path '{location}'")))
}

/// `path` without `.` and `..` components, resolved lexically (the directory may not exist yet;
/// object store paths refuse `..`).
fn lexically_normal(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl CatalogProvider for PaimonCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.listing
            .read()
            .expect("listing lock is never poisoned")
            .keys()
            .cloned()
            .collect()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        self.database(name).map(|d| d as Arc<dyn SchemaProvider>)
    }
}

/// One database (`<name>.db`) of a warehouse.
#[derive(Debug)]
pub struct PaimonDatabase {
    name: String,
    io: FileIO,
    read_options: ReadOptions,
    table_names: Vec<String>,
    session_tables: SessionTables,
    /// The catalog's decoded manifests: every query of a table reads its manifests once.
    manifests: Arc<crate::meta::ManifestCache>,
}

impl PaimonDatabase {
    /// A non-Paimon table registered in this database.
    fn session_table(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        let tables = self.session_tables.read().expect("lock is never poisoned");
        tables.get(&self.name)?.get(name).cloned()
    }

    fn is_paimon_table(&self, name: &str) -> bool {
        self.table_names
            .iter()
            .any(|t| t == name.split('$').next().unwrap_or(name))
    }

    /// Loads a table (or a `table$system` table) with the session's read options.
    pub async fn load(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let options = self
            .read_options
            .read()
            .expect("options lock is never poisoned")
            .clone();
        self.load_with(name, &options).await
    }

    /// Loads a table (or a `table$system` table) with these read options instead of the
    /// session's.
    pub(crate) async fn load_with(
        &self,
        name: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        let TableName { base, branch, system } = TableName::parse(name);
        // `SET paimon.branch = 'b'` (or the hint): the branch unless the name gives one
        let option_branch = options
            .get("branch")
            .map(|b| b.trim())
            .filter(|b| !b.is_empty() && *b != "main");
        let branch = branch.or(option_branch);
        let mut io = self.io.child(base).counting_requests_from_now();
        if let Some(branch) = branch {
            io = io.on_branch(branch);
        }
        let meta = Arc::new(TableMeta::with_manifest_cache(io, Arc::clone(&self.manifests)));
        // A name this catalog has not listed (a table another process created since, or no
        // table: DataFusion looks a table function's name up as a table first) costs a HEAD,
        // not a listing: every table's first schema is `schema-0`.
        if branch.is_none()
            && !self.is_paimon_table(base)
            && !meta.io().exists(&crate::spec::paths::schema_file(0)).await?
        {
            return Ok(None);
        }
        // one listing of the schema directory tells whether the table exists and which
        // schema a read of its latest state uses (the file decoded once per catalog); a read
        // of the latest snapshot finds it meanwhile, one round trip for both (the table's
        // opening below then takes it as fresh)
        let latest = if system.is_none() && crate::table::reads_latest_snapshot(options) {
            let (schema, _) = futures::join!(meta.resolve_latest_schema(), meta.find_latest_snapshot_ahead());
            schema?
        } else {
            meta.resolve_latest_schema().await?
        };
        let Some(latest) = latest else {
            if let Some(branch) = branch {
                if self.table_names.iter().any(|t| t == base) {
                    return plan_err!("Branch '{branch}' of table {}.{base} does not exist", self.name);
                }
            }
            return Ok(None);
        };
        let full_name = match branch {
            Some(branch) => format!("{}.{base}$branch_{branch}", self.name),
            None => format!("{}.{base}", self.name),
        };
        if let Some(sys) = system {
            return system_tables::load(&sys, &full_name, meta, options)
                .await
                .map(Some);
        }
        let table = open_table_with_latest(full_name, meta, options, ReadView::Table, Some(latest)).await?;
        Ok(Some(Arc::new(table)))
    }
}

/// A table reference: `t`, `t$system`, `t$branch_<name>` or `t$branch_<name>$system`.
#[derive(Debug, PartialEq)]
struct TableName<'a> {
    base: &'a str,
    /// `None` for the main branch (also when named `main`).
    branch: Option<&'a str>,
    /// Lower case.
    system: Option<String>,
}

impl<'a> TableName<'a> {
    fn parse(name: &'a str) -> Self {
        let Some((base, rest)) = name.split_once('$') else {
            return TableName {
                base: name,
                branch: None,
                system: None,
            };
        };
        let is_branch =
            rest.len() > "branch_".len() && rest[.."branch_".len()].eq_ignore_ascii_case("branch_");
        if !is_branch {
            return TableName {
                base,
                branch: None,
                system: Some(rest.to_ascii_lowercase()),
            };
        }
        let after = &rest["branch_".len()..];
        let (branch, system) = match after.split_once('$') {
            Some((b, s)) => (b, Some(s.to_ascii_lowercase())),
            None => (after, None),
        };
        TableName {
            base,
            branch: (branch != "main").then_some(branch),
            system,
        }
    }
}

#[async_trait]
impl SchemaProvider for PaimonDatabase {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.table_names.clone();
        let tables = self.session_tables.read().expect("lock is never poisoned");
        names.extend(tables.get(&self.name).into_iter().flat_map(|t| t.keys().cloned()));
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.session_table(name) {
            return Ok(Some(table));
        }
        // `t /*+ OPTIONS(...) */`: a reference with Flink's dynamic options
        // (`crate::sql::options_hint`), read with them over the session's
        if let Some((table, hint)) = options_hint::split_hinted_name(name)? {
            for (key, _) in &hint {
                crate::sql::check_read_option(key).map_err(|e| {
                    datafusion::common::DataFusionError::Plan(format!("OPTIONS hint on {table}: {e}"))
                })?;
            }
            let session = self
                .read_options
                .read()
                .expect("options lock is never poisoned")
                .clone();
            return self
                .load_with(table, &options_hint::with_hint(session, hint))
                .await;
        }
        self.load(name).await
    }

    async fn table_type(&self, name: &str) -> Result<Option<datafusion::datasource::TableType>> {
        if let Some(table) = self.session_table(name) {
            return Ok(Some(table.table_type()));
        }
        // Listing must not load (and fail on) every table: existence is enough.
        Ok(self
            .is_paimon_table(name)
            .then_some(datafusion::datasource::TableType::Base))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.is_paimon_table(name) || self.session_table(name).is_some()
    }

    /// `CREATE EXTERNAL TABLE`, `CREATE VIEW`: kept in memory next to the Paimon tables.
    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        if self.is_paimon_table(&name) {
            return plan_err!("Table {}.{name} already exists as a Paimon table", self.name);
        }
        let mut tables = self.session_tables.write().expect("lock is never poisoned");
        Ok(tables.entry(self.name.clone()).or_default().insert(name, table))
    }

    /// `DROP VIEW`, `DROP TABLE` of an external table (Paimon tables are dropped by our DDL).
    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let mut tables = self.session_tables.write().expect("lock is never poisoned");
        Ok(tables.get_mut(&self.name).and_then(|t| t.remove(name)))
    }
}

#[cfg(test)]
mod name_tests {
    use super::TableName;

    #[test]
    fn branch_and_system_suffixes() {
        let parse = |n| {
            let t = TableName::parse(n);
            (t.base, t.branch, t.system)
        };
        assert_eq!(parse("t"), ("t", None, None));
        assert_eq!(parse("t$Files"), ("t", None, Some("files".into())));
        assert_eq!(parse("t$branch_rt"), ("t", Some("rt"), None));
        assert_eq!(
            parse("t$branch_rt$snapshots"),
            ("t", Some("rt"), Some("snapshots".into()))
        );
        assert_eq!(parse("t$branch_main"), ("t", None, None));
        assert_eq!(parse("t$branches"), ("t", None, Some("branches".into())));
    }
}

#[cfg(test)]
mod path_tests {
    #[test]
    fn relative_warehouse_paths_are_normalised() {
        let url = super::warehouse_url("/tmp/a/./b/../wh").unwrap();
        assert_eq!(url.as_str(), "file:///tmp/a/wh/");
        let cwd = std::env::current_dir().unwrap();
        let parent = cwd.parent().unwrap_or(&cwd).join("wh");
        let url = super::warehouse_url("../wh").unwrap();
        assert_eq!(url.to_file_path().unwrap(), parent);
    }
}

#[cfg(test)]
mod cache_tests {
    use datafusion::prelude::SessionContext;

    use super::PaimonCatalog;

    /// Every SQL query loads its tables through a database: they must decode manifests into
    /// the catalog's cache, or each query reads them again.
    #[tokio::test]
    async fn tables_loaded_through_a_database_share_the_catalogs_manifests() {
        let ctx = SessionContext::new();
        let catalog = PaimonCatalog::open(&ctx, "tests/fixtures/pypaimon-2.1.0/warehouse")
            .await
            .unwrap();
        assert_eq!(catalog.manifests.bytes(), 0);
        let database = catalog.database("pk").expect("database pk");
        let mut cached = Vec::new();
        // the same table twice, then the other table of the database
        for table in ["dedup_basic", "dedup_basic", "partitioned_b4"] {
            let provider = database.load(table).await.unwrap().expect(table);
            provider.scan(&ctx.state(), None, &[], None).await.unwrap();
            cached.push(catalog.manifests.bytes());
        }
        assert!(cached[0] > 0, "the catalog's manifest cache stayed empty");
        assert!(cached[2] > cached[1], "the other table adds its own manifests");
    }
}
