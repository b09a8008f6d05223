//! `CALL sys.<procedure>(…)`: Paimon's procedures, with positional (`'db.t'`) or named
//! (`` `table` => 'db.t' ``) arguments as Flink and Spark accept them.
//!
//! * `sys.compact(table [, partitions])`: full compaction of every bucket (or of the
//!   partitions `'p=1,q=a;p=2'`), committed as one COMPACT snapshot (semantics.md §5.5).

use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::dataframe::DataFrame;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::ddl::names::resolve_table;
use super::ddl::parser::{DdlParser, ObjectRef};
use super::PaimonSession;
use crate::compact::{CompactScope, Compaction};

/// A parsed `CALL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) procedure: String,
    /// `(name, value)`; `name` is `None` for positional arguments.
    pub(crate) args: Vec<(Option<String>, String)>,
}

/// Parses `CALL sys.name(arg, …)` (the `CALL` keyword is the next token).
pub(crate) fn parse(p: &mut DdlParser) -> Result<Call> {
    p.expect_keyword(Keyword::CALL)?;
    let name = p.object_ref()?;
    let procedure = match name.parts.as_slice() {
        [sys, proc] if sys.eq_ignore_ascii_case("sys") => proc.to_ascii_lowercase(),
        _ => {
            return plan_err!(
                "Unknown procedure '{}': Paimon procedures are called as sys.<name>",
                name.parts.join(".")
            )
        }
    };
    p.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    if !p.consume(&Token::RParen) {
        loop {
            let named = matches!(p.peek().token, Token::Word(_));
            let name = if named {
                let name = p.ident()?;
                p.expect_token(&Token::RArrow)?;
                Some(name.to_ascii_lowercase())
            } else {
                None
            };
            args.push((name, p.string()?));
            if p.consume(&Token::RParen) {
                break;
            }
            p.expect_token(&Token::Comma)?;
        }
    }
    p.consume(&Token::SemiColon);
    p.expect_end()?;
    Ok(Call { procedure, args })
}

impl Call {
    /// The argument named `name`, or else the positional argument at `position`.
    fn arg(&self, name: &str, position: usize) -> Option<&str> {
        self.args
            .iter()
            .find(|(n, _)| n.as_deref() == Some(name))
            .or_else(|| self.args.iter().filter(|(n, _)| n.is_none()).nth(position))
            .map(|(_, v)| v.as_str())
    }
}

/// Runs the procedure; returns Paimon's one-row `result` table.
pub(crate) async fn execute(session: &PaimonSession, call: Call) -> Result<DataFrame> {
    match call.procedure.as_str() {
        "compact" => compact(session, &call).await?,
        other => return plan_err!("Unknown procedure 'sys.{other}'"),
    }
    let schema = Arc::new(Schema::new(vec![Field::new("result", DataType::Boolean, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(BooleanArray::from(vec![true]))])?;
    session.context().read_batch(batch)
}

async fn compact(session: &PaimonSession, call: &Call) -> Result<()> {
    let table = call
        .arg("table", 0)
        .ok_or_else(|| plan_datafusion_err!("sys.compact needs the table: CALL sys.compact('db.t')"))?;
    let name = resolve_table(
        session,
        &ObjectRef {
            parts: table.split('.').map(|s| s.trim().to_string()).collect(),
        },
    )?;
    let catalog = session.catalog();
    let schema = catalog
        .table_schema(&name.database, &name.table)
        .await?
        .ok_or_else(|| plan_datafusion_err!("Table {name} does not exist"))?;
    if !schema.has_primary_key() {
        return plan_err!(
            "sys.compact of append table {name} is not supported yet: only primary-key tables compact"
        );
    }
    let scope = match call.arg("partitions", 1) {
        None => CompactScope::All,
        Some(spec) => CompactScope::Partitions(parse_partitions(spec)?),
    };
    let meta = Arc::new(catalog.table_meta(&name.database, &name.table));
    let batch_size = session.context().state().config().batch_size();
    let table_name = name.to_string();
    Compaction {
        table: &table_name,
        meta: &meta,
        schema: &schema,
        batch_size,
    }
    .full(&scope)
    .await?;
    catalog.refresh().await
}

/// `'p=1,q=a;p=2'`: partitions separated by `;`, each a list of `key=value`.
fn parse_partitions(spec: &str) -> Result<Vec<Vec<(String, String)>>> {
    spec.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|partition| {
            partition
                .split(',')
                .map(|kv| {
                    let (k, v) = kv.split_once('=').ok_or_else(|| {
                        plan_datafusion_err!("Invalid partition '{kv}' in '{spec}': expected key=value")
                    })?;
                    Ok((k.trim().to_string(), v.trim().to_string()))
                })
                .collect()
        })
        .collect()
}
