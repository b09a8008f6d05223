//! The table function `paimon_stream(table [, 'key=value' ...])`: a tailing read of a table
//! (`crate::stream`), unbounded, so DataFusion plans it as a stream; `LIMIT n` ends it.
//!
//! ```sql
//! SELECT * FROM paimon_stream('db.t', 'scan.mode=latest', 'consumer-id=app1') LIMIT 10
//! ```
//!
//! Options: `scan.mode` (latest-full, latest, from-snapshot, from-snapshot-full, from-timestamp,
//! compacted-full), `scan.snapshot-id`, `scan.timestamp-millis`, `consumer-id`,
//! `continuous.discovery-interval` (default 10 s). Like `paimon_incremental_query`, each call is
//! prepared by [`crate::PaimonSession::sql`] before DataFusion plans the statement.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::sql::parser::DFParser;

use super::ddl::names::{current_database, resolve_table_in};
use super::ddl::parser::ObjectRef;
use super::incremental_function::{collect_calls, literal_text, open_while_planning, CallCollector};
use super::PaimonSession;
use crate::catalog::PaimonCatalog;
use crate::stream::{PaimonStreamTable, StreamOptions, STREAM_FUNCTION};
use crate::table::{open_table, ReadView};

/// Prepared calls kept at most.
const MAX_PREPARED: usize = 64;

/// `paimon_stream`, registered on every [`PaimonSession`].
#[derive(Debug)]
pub(crate) struct StreamFunction {
    prepared: Mutex<HashMap<Vec<String>, Arc<dyn TableProvider>>>,
    /// The warehouse, to open calls nobody prepared.
    catalog: Arc<PaimonCatalog>,
}

impl StreamFunction {
    pub(crate) fn new(catalog: Arc<PaimonCatalog>) -> Self {
        StreamFunction {
            prepared: Mutex::new(HashMap::new()),
            catalog,
        }
    }

    /// Opens the table of every call of this function in `sql`.
    pub(crate) async fn prepare(&self, session: &PaimonSession, sql: &str) -> Result<()> {
        if !sql.to_ascii_lowercase().contains(STREAM_FUNCTION) {
            return Ok(());
        }
        let Ok(statements) = DFParser::parse_sql(sql) else {
            return Ok(());
        };
        let mut calls = CallCollector::new(STREAM_FUNCTION);
        for statement in &statements {
            collect_calls(statement, &mut calls);
        }
        for args in calls.calls {
            let Some(args) = args.filter(|a| !a.is_empty()) else {
                return malformed();
            };
            let provider = open_call(session.catalog(), &current_database(session), &args).await?;
            let mut prepared = self.prepared.lock().expect("lock is never poisoned");
            if prepared.len() >= MAX_PREPARED {
                prepared.clear();
            }
            prepared.insert(args, provider);
        }
        Ok(())
    }
}

impl TableFunctionImpl for StreamFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let Some(values) = args
            .exprs()
            .iter()
            .map(literal_text)
            .collect::<Option<Vec<String>>>()
        else {
            return malformed();
        };
        if values.is_empty() {
            return malformed();
        }
        if let Some(provider) = self.prepared.lock().expect("lock is never poisoned").get(&values) {
            return Ok(Arc::clone(provider));
        }
        let current = args.session().config().options().catalog.default_schema.clone();
        open_while_planning(open_call(&self.catalog, &current, &values)).unwrap_or_else(|| {
            plan_err!(
                "{STREAM_FUNCTION}(...) was not prepared: run the statement through PaimonSession::sql or PaimonSession::try_paimon_statement, or plan it on a multi-threaded Tokio runtime"
            )
        })
    }
}

fn malformed<T>() -> Result<T> {
    plan_err!("{STREAM_FUNCTION} expects ('db.table' [, 'key=value' ...]) with literal arguments")
}

async fn open_call(
    catalog: &PaimonCatalog,
    current_database: &str,
    args: &[String],
) -> Result<Arc<dyn TableProvider>> {
    let table = args[0].trim();
    let session = catalog
        .read_options()
        .read()
        .expect("options lock is never poisoned")
        .clone();
    let options = StreamOptions::parse_over(&session, &args[1..])?;
    let parts: Vec<String> = table.split('.').map(|s| s.trim().to_string()).collect();
    let name = resolve_table_in(current_database, &ObjectRef { parts })?;
    let schema = catalog
        .table_schema(&name.database, &name.table)
        .await?
        .ok_or_else(|| plan_datafusion_err!("Table '{table}' given to {STREAM_FUNCTION} does not exist"))?;
    if !schema.has_primary_key() {
        return plan_err!(
            "{STREAM_FUNCTION} of append table {name} is not supported yet: it needs a primary key"
        );
    }
    let meta = Arc::new(catalog.table_meta(&name.database, &name.table));
    let changelog = open_table(
        format!("{name}$changelog"),
        meta,
        &Default::default(),
        ReadView::Changelog,
    )
    .await?;
    Ok(Arc::new(PaimonStreamTable::new(changelog, options)))
}
