//! The table function `paimon_incremental_query(table, start, end [, mode])`: the changes of
//! snapshots `start + 1 ..= end` in one query, without `SET paimon.incremental-between`.
//!
//! ```sql
//! SELECT * FROM paimon_incremental_query('db.t$audit_log', 1, 3, 'delta') ORDER BY k
//! ```
//!
//! * `table`: `'db.t'`, `'t'` (current database), `'db.t$audit_log'` or `'db.t$binlog'`;
//! * `start`, `end`: snapshot ids (integers or strings) or two tag names, exactly as the
//!   `incremental-between` option reads them;
//! * `mode`: `auto` (default), `delta`, `changelog` or `diff`.
//!
//! DataFusion calls table functions synchronously while planning, but opening a table reads
//! its schema and snapshots. So the session *prepares* each call before DataFusion plans the
//! statement: it walks the parsed statement for calls of this function, opens their tables
//! asynchronously and keeps the providers by their arguments; the synchronous call then only
//! looks its provider up. [`crate::PaimonSession::sql`] and
//! [`crate::PaimonSession::try_paimon_statement`] prepare; a statement planned on the bare
//! `SessionContext` gets an error saying so.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_datafusion_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::Expr;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, TableFactor, UnaryOperator, Value, Visit, Visitor,
};

use super::ddl::names::{current_database, resolve_table_in};
use super::ddl::parser::ObjectRef;
use super::PaimonSession;
use crate::catalog::PaimonCatalog;
use crate::spec::options::{
    INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_SCAN_MODE, INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
    INCREMENTAL_BETWEEN_TIMESTAMP,
};

/// The function's name.
pub const INCREMENTAL_QUERY: &str = "paimon_incremental_query";

/// Prepared calls kept at most; beyond this the cache starts over (entries are cheap to
/// rebuild and only needed between preparing and planning one statement).
const MAX_PREPARED: usize = 256;

/// The arguments of one call, as text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CallArgs {
    table: String,
    start: String,
    end: String,
    mode: Option<String>,
}

impl CallArgs {
    /// From literal values; None when the call has another shape.
    fn new(values: Vec<String>) -> Option<Self> {
        let mut it = values.into_iter();
        let (table, start, end, mode) = (it.next()?, it.next()?, it.next()?, it.next());
        if it.next().is_some() {
            return None;
        }
        Some(CallArgs {
            table: table.trim().to_string(),
            start: start.trim().to_string(),
            end: end.trim().to_string(),
            mode: mode.map(|m| m.trim().to_ascii_lowercase()),
        })
    }
}

/// `paimon_incremental_query`, registered on every [`PaimonSession`].
#[derive(Debug)]
pub(crate) struct IncrementalQueryFunction {
    prepared: Mutex<HashMap<CallArgs, Arc<dyn TableProvider>>>,
    /// The warehouse, to open calls nobody prepared.
    catalog: Arc<PaimonCatalog>,
}

impl IncrementalQueryFunction {
    pub(crate) fn new(catalog: Arc<PaimonCatalog>) -> Self {
        IncrementalQueryFunction {
            prepared: Mutex::new(HashMap::new()),
            catalog,
        }
    }

    /// Opens the table of every call of this function in `sql`, with the call's range.
    pub(crate) async fn prepare(&self, session: &PaimonSession, sql: &str) -> Result<()> {
        if !sql.to_ascii_lowercase().contains(INCREMENTAL_QUERY) {
            return Ok(());
        }
        // A statement that does not parse is DataFusion's to report.
        let Ok(statements) = DFParser::parse_sql(sql) else {
            return Ok(());
        };
        let mut calls = CallCollector::new(INCREMENTAL_QUERY);
        for statement in &statements {
            collect_calls(statement, &mut calls);
        }
        let Some(calls) = calls
            .calls
            .into_iter()
            .map(|c| c.and_then(CallArgs::new))
            .collect::<Option<Vec<_>>>()
        else {
            return malformed();
        };
        for args in calls {
            let provider = open_call(session, &args).await?;
            let mut prepared = self.prepared.lock().expect("lock is never poisoned");
            if prepared.len() >= MAX_PREPARED {
                prepared.clear();
            }
            prepared.insert(args, provider);
        }
        Ok(())
    }
}

impl TableFunctionImpl for IncrementalQueryFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let values = args
            .exprs()
            .iter()
            .map(literal_text)
            .collect::<Option<Vec<String>>>();
        let Some(call) = values.and_then(CallArgs::new) else {
            return malformed();
        };
        if let Some(provider) = self.prepared.lock().expect("lock is never poisoned").get(&call) {
            return Ok(Arc::clone(provider));
        }
        let current = args.session().config().options().catalog.default_schema.clone();
        open_while_planning(open_call_in(&self.catalog, &current, &call)).unwrap_or_else(|| {
            plan_err!(
                "{INCREMENTAL_QUERY}('{}', ...) was not prepared: run the statement through \
                 PaimonSession::sql or PaimonSession::try_paimon_statement, or plan it on a \
                 multi-threaded Tokio runtime",
                call.table
            )
        })
    }
}

fn malformed<T>() -> Result<T> {
    plan_err!("{INCREMENTAL_QUERY} expects ('db.table', start, end [, mode]) with literal arguments")
}

/// Opens `args.table` reading the changes of `(start, end]` in `mode`.
async fn open_call(session: &PaimonSession, args: &CallArgs) -> Result<Arc<dyn TableProvider>> {
    open_call_in(session.catalog(), &current_database(session), args).await
}

/// [`open_call`] with the catalog and the current database given (planning on a plain
/// `SessionContext`).
async fn open_call_in(
    catalog: &PaimonCatalog,
    current_database: &str,
    args: &CallArgs,
) -> Result<Arc<dyn TableProvider>> {
    let parts: Vec<String> = args.table.split('.').map(|s| s.trim().to_string()).collect();
    let name = resolve_table_in(current_database, &ObjectRef { parts })?;
    let missing = || {
        plan_datafusion_err!(
            "Table '{}' given to {INCREMENTAL_QUERY} does not exist",
            args.table
        )
    };
    let database = catalog.database(&name.database).ok_or_else(missing)?;
    let options = call_options(catalog, args);
    database
        .load_with(&name.table, &options)
        .await?
        .ok_or_else(missing)
}

/// The session's read options with the call's range instead of any incremental option.
fn call_options(catalog: &PaimonCatalog, args: &CallArgs) -> BTreeMap<String, String> {
    let mut options = catalog
        .read_options()
        .read()
        .expect("options lock is never poisoned")
        .clone();
    for key in [
        INCREMENTAL_BETWEEN,
        INCREMENTAL_BETWEEN_TIMESTAMP,
        INCREMENTAL_BETWEEN_SCAN_MODE,
        INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
    ] {
        options.remove(key);
    }
    options.insert(
        INCREMENTAL_BETWEEN.to_string(),
        format!("{},{}", args.start, args.end),
    );
    if let Some(mode) = &args.mode {
        options.insert(INCREMENTAL_BETWEEN_SCAN_MODE.to_string(), mode.clone());
    }
    options
}

/// Opens a call while DataFusion plans it, when nobody prepared it (a plain `SessionContext`):
/// the table is read on the current multi-threaded Tokio runtime, blocking this planning
/// thread. Anything else gets the "not prepared" error.
pub(super) fn open_while_planning<T>(
    open: impl std::future::Future<Output = Result<T>>,
) -> Option<Result<T>> {
    let handle = tokio::runtime::Handle::try_current().ok()?;
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return None;
    }
    Some(tokio::task::block_in_place(|| handle.block_on(open)))
}

/// A literal argument as text (what planning turned the SQL literal into).
pub(super) fn literal_text(expr: &Expr) -> Option<String> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    match value {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            Some(s.clone())
        }
        ScalarValue::Int8(Some(_))
        | ScalarValue::Int16(Some(_))
        | ScalarValue::Int32(Some(_))
        | ScalarValue::Int64(Some(_))
        | ScalarValue::UInt8(Some(_))
        | ScalarValue::UInt16(Some(_))
        | ScalarValue::UInt32(Some(_))
        | ScalarValue::UInt64(Some(_)) => Some(value.to_string()),
        _ => None,
    }
}

/// Walks a parsed statement (through `EXPLAIN`) for calls of the collector's function.
pub(super) fn collect_calls(statement: &DFStatement, calls: &mut CallCollector) {
    match statement {
        DFStatement::Statement(s) => {
            let _ = s.visit(calls);
        }
        DFStatement::Explain(e) => collect_calls(&e.statement, calls),
        DFStatement::CopyTo(c) => {
            if let datafusion::sql::parser::CopyToSource::Query(q) = &c.source {
                let _ = q.visit(calls);
            }
        }
        _ => {}
    }
}

/// Collects the literal arguments of every call of one table function (`name(...)` in FROM);
/// None for a call with an argument that is not a literal.
pub(super) struct CallCollector {
    name: &'static str,
    pub(super) calls: Vec<Option<Vec<String>>>,
}

impl CallCollector {
    pub(super) fn new(name: &'static str) -> Self {
        CallCollector { name, calls: vec![] }
    }
}

impl Visitor for CallCollector {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            args: Some(args),
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let is_ours = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| i.value.eq_ignore_ascii_case(self.name));
        if !is_ours {
            return ControlFlow::Continue(());
        }
        self.calls
            .push(args.args.iter().map(sql_literal).collect::<Option<Vec<_>>>());
        ControlFlow::Continue(())
    }
}

/// A literal SQL argument as text, as [`literal_text`] will see it after planning.
fn sql_literal(arg: &FunctionArg) -> Option<String> {
    let FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) = arg else {
        return None;
    };
    match expr {
        SqlExpr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.parse::<i64>().ok()?.to_string()),
            _ => None,
        },
        SqlExpr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            SqlExpr::Value(v) => match &v.value {
                Value::Number(n, _) => Some((-n.parse::<i64>().ok()?).to_string()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(sql: &str) -> Vec<CallArgs> {
        let mut c = CallCollector::new(INCREMENTAL_QUERY);
        for s in &DFParser::parse_sql(sql).unwrap() {
            collect_calls(s, &mut c);
        }
        c.calls
            .into_iter()
            .map(|c| {
                c.and_then(CallArgs::new)
                    .unwrap_or_else(|| panic!("malformed call in {sql}"))
            })
            .collect()
    }

    #[test]
    fn finds_calls_in_queries_joins_and_explain() {
        let call = |t: &str, s: &str, e: &str, m: Option<&str>| CallArgs {
            table: t.into(),
            start: s.into(),
            end: e.into(),
            mode: m.map(String::from),
        };
        assert_eq!(
            calls("SELECT * FROM paimon_incremental_query('db.t$audit_log', 1, 3, 'DELTA') ORDER BY k"),
            vec![call("db.t$audit_log", "1", "3", Some("delta"))]
        );
        assert_eq!(
            calls(
                "EXPLAIN SELECT * FROM PAIMON_INCREMENTAL_QUERY('t', '2', '4') a \
                 JOIN (SELECT * FROM paimon_incremental_query('u', 0, 1)) b ON a.k = b.k"
            ),
            vec![call("t", "2", "4", None), call("u", "0", "1", None)]
        );
        assert_eq!(
            calls("SELECT * FROM paimon_incremental_query('t', -1, 2)"),
            vec![call("t", "-1", "2", None)]
        );
        assert!(calls("SELECT * FROM db.t").is_empty());
    }

    #[test]
    fn other_arguments_are_malformed() {
        for sql in [
            "SELECT * FROM paimon_incremental_query('t', 1)",
            "SELECT * FROM paimon_incremental_query('t', 1 + 1, 3)",
            "SELECT * FROM paimon_incremental_query('t', 1, 2, 'delta', 'x')",
        ] {
            let mut c = CallCollector::new(INCREMENTAL_QUERY);
            for s in &DFParser::parse_sql(sql).unwrap() {
                collect_calls(s, &mut c);
            }
            let malformed = c.calls.into_iter().any(|c| c.and_then(CallArgs::new).is_none());
            assert!(malformed, "{sql}");
        }
    }
}
