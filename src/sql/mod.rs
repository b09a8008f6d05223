//! Session set-up: a `SessionContext` whose default catalog is a Paimon warehouse, plus the
//! statements this crate runs itself instead of DataFusion: `SET paimon.<option> = ...` /
//! `RESET paimon.<option>` (hyphenated Paimon option names) and Flink-style DDL
//! (`CREATE/DROP DATABASE`, `CREATE/DROP/ALTER TABLE`, see [`ddl`]). Every session also has
//! the table function `paimon_incremental_query(table, start, end [, mode])`.

pub(crate) mod ddl;
mod dispatch;
mod flink_session;
mod incremental_function;
mod insert_partition;
mod merge;
pub(crate) mod options_hint;
mod procedures;
mod result_frame;
mod session_options;
mod stream_function;
mod use_statement;

pub use incremental_function::INCREMENTAL_QUERY;
pub(crate) use session_options::check_read_option;
pub use session_options::{
    is_known_option, parse_session_statement, SessionStatement, APPLIED_READ_OPTIONS, REFUSED_AT_READ,
    TUNING_OPTIONS,
};

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::dataframe::DataFrame;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::catalog::PaimonCatalog;
use crate::write::KeepSourceOrder;
use incremental_function::IncrementalQueryFunction;
use stream_function::StreamFunction;

/// Name under which the warehouse is registered as the default catalog.
pub const DEFAULT_CATALOG: &str = "paimon";
/// The default database.
pub const DEFAULT_DATABASE: &str = "default";

/// Adds [`KeepSourceOrder`] to the rules of `ctx` (shared by its clones) unless it has it.
fn install_source_order(ctx: &SessionContext) {
    let state = ctx.state();
    let installed = state
        .physical_optimizers()
        .iter()
        .any(|rule| rule.name() == KeepSourceOrder::NAME);
    if !installed {
        // The same session id: Ballista's client and scheduler know the session by it.
        let id = state.session_id().to_string();
        let state = SessionStateBuilder::new_from_existing(state)
            .with_session_id(id)
            .with_physical_optimizer_rule(Arc::new(KeepSourceOrder))
            .build();
        *ctx.state_ref().write() = state;
    }
}

/// A DataFusion session with a Paimon warehouse as its default catalog.
#[derive(Clone)]
pub struct PaimonSession {
    ctx: SessionContext,
    catalog: Arc<PaimonCatalog>,
    incremental_query: Arc<IncrementalQueryFunction>,
    stream: Arc<StreamFunction>,
}

impl std::fmt::Debug for PaimonSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaimonSession")
            .field("catalog", &self.catalog)
            .finish()
    }
}

impl PaimonSession {
    /// A new session over the warehouse at `location` (local path or object-store URL).
    pub async fn open(location: &str) -> Result<Self> {
        Self::with_config(SessionConfig::new(), location).await
    }

    /// Like [`PaimonSession::open`] with a custom base config (target partitions, batch size...).
    pub async fn with_config(config: SessionConfig, location: &str) -> Result<Self> {
        let config = config
            .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true);
        // File names work as tables (`SELECT * FROM 'data.csv'`), as in datafusion-cli.
        let ctx = SessionContext::new_with_config(config).enable_url_table();
        Self::register(ctx, location).await
    }

    /// Registers the warehouse at `location` as catalog `paimon` of an existing context,
    /// and the table function `paimon_incremental_query`. The context also gets the physical
    /// optimizer rule [`KeepSourceOrder`], so that the rows of one INSERT arrive in the order of
    /// their source and the last of a statement's duplicate keys wins.
    pub async fn register(ctx: SessionContext, location: &str) -> Result<Self> {
        install_source_order(&ctx);
        let catalog = PaimonCatalog::open(&ctx, location).await?;
        catalog.ensure_database(DEFAULT_DATABASE).await?;
        ctx.register_catalog(DEFAULT_CATALOG, Arc::clone(&catalog) as _);
        let incremental_query = Arc::new(IncrementalQueryFunction::new(Arc::clone(&catalog)));
        ctx.register_udtf(INCREMENTAL_QUERY, Arc::clone(&incremental_query) as _);
        let stream = Arc::new(StreamFunction::new(Arc::clone(&catalog)));
        ctx.register_udtf(crate::stream::STREAM_FUNCTION, Arc::clone(&stream) as _);
        Ok(PaimonSession {
            ctx,
            catalog,
            incremental_query,
            stream,
        })
    }

    /// The underlying DataFusion context.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The warehouse catalog.
    pub fn catalog(&self) -> &Arc<PaimonCatalog> {
        &self.catalog
    }

    /// Handles `SET paimon.*` / `RESET paimon.*` itself; returns `None` for any other statement.
    pub fn try_session_statement(&self, sql: &str) -> Result<Option<DataFrame>> {
        let Some(stmt) = parse_session_statement(sql) else {
            return Ok(None);
        };
        let mut options = self
            .catalog
            .read_options()
            .write()
            .expect("options lock is never poisoned");
        match stmt {
            SessionStatement::Set { key, value } => {
                // an option the reads would ignore is refused here, naming it
                session_options::check_read_option(&key).map_err(|e| {
                    datafusion::common::DataFusionError::Plan(format!("SET paimon.{key}: {e}"))
                })?;
                options.insert(key, value);
            }
            SessionStatement::Reset { key: Some(key) } => {
                options.remove(&key);
            }
            SessionStatement::Reset { key: None } => options.clear(),
        }
        Ok(Some(self.ctx.read_empty()?))
    }

    /// Runs `sql` if it is a statement this crate handles itself (session options, DDL,
    /// `SHOW DATABASES`) and returns its result; `None` means "give it to DataFusion". DDL is
    /// executed eagerly, as DataFusion executes its own DDL in `SessionContext::sql`.
    ///
    /// For a statement left to DataFusion it first opens the tables of its
    /// `paimon_incremental_query` calls, which DataFusion cannot do while planning.
    pub async fn try_paimon_statement(&self, sql: &str) -> Result<Option<DataFrame>> {
        if let Some(df) = self.try_session_statement(sql)? {
            return Ok(Some(df));
        }
        if let Some(stmt) = flink_session::parse(sql, ddl::names::normalizes_identifiers(self))? {
            return flink_session::execute(self, stmt).await.map(Some);
        }
        if let Some(target) = use_statement::parse(sql) {
            use_statement::apply(&self.ctx, &target)?;
            return Ok(Some(self.ctx.read_empty()?));
        }
        let done = dispatch::try_execute(self, sql).await?;
        if done.is_none() {
            self.incremental_query.prepare(self, sql).await?;
            self.stream.prepare(self, sql).await?;
        }
        Ok(done)
    }

    /// `sql` with Flink's `/*+ OPTIONS('key' = 'value') */` hints, and the time-travel clauses
    /// `FOR SYSTEM_TIME AS OF` / `VERSION AS OF` / `TIMESTAMP AS OF`, moved into the names of the
    /// tables they follow, where the catalog reads them (SQL parsers drop comments, so a hint
    /// left in place would be ignored; DataFusion does not parse the clauses). [`PaimonSession::sql`] does this itself; a caller that
    /// runs statements through [`PaimonSession::try_paimon_statement`] and its own planner
    /// (as `paimon-sql` does) passes both the text this returns.
    pub fn expand_options_hints<'a>(&self, sql: &'a str) -> Result<std::borrow::Cow<'a, str>> {
        options_hint::expand_options_hints(sql, ddl::names::normalizes_identifiers(self))
    }

    /// Runs one SQL statement: our statements first, everything else through DataFusion.
    pub async fn sql(&self, sql: &str) -> Result<DataFrame> {
        let sql = self.expand_options_hints(sql)?;
        if let Some(df) = self.try_paimon_statement(&sql).await? {
            return Ok(df);
        }
        self.ctx.sql(&sql).await
    }
}
