//! The statements Flink SQL scripts open with, so that a script written for Flink's SQL client
//! runs here unchanged:
//!
//! * `CREATE CATALOG c WITH ('type' = 'paimon', 'warehouse' = '…')` naming this session's
//!   warehouse registers `c` as another name of it (`USE CATALOG c` then works); another
//!   warehouse or catalog type is an error, since a session serves one warehouse;
//! * Flink configuration, `SET 'key' = 'value'`: batch runtime mode and the SQL client's display
//!   and job options change nothing here and are accepted (with a note); streaming runtime mode
//!   is refused, since streaming reads are `paimon_stream(...)` calls;
//! * `SHOW CATALOGS`, `SHOW CURRENT CATALOG`, `SHOW CURRENT DATABASE`.

use std::sync::Arc;

use datafusion::common::{plan_err, Result};
use datafusion::dataframe::DataFrame;
use datafusion::sql::sqlparser::keywords::Keyword;

use super::ddl::parser::DdlParser;
use super::PaimonSession;

/// Flink configuration namespaces a script may set that do not change what a statement
/// returns here (job, client and planner tuning).
const IGNORED_FLINK_PREFIXES: &[&str] = &[
    "sql-client.",
    "parallelism.",
    "pipeline.",
    "execution.",
    "table.exec.",
    "table.optimizer.",
    "table.dml-sync",
    "state.",
    "restart-strategy",
    "taskmanager.",
    "jobmanager.",
];

/// A recognised Flink session statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FlinkStatement {
    CreateCatalog {
        name: String,
        if_not_exists: bool,
        options: Vec<(String, String)>,
    },
    Set {
        key: String,
        value: String,
    },
    ShowCatalogs,
    ShowCurrentCatalog,
    ShowCurrentDatabase,
}

/// Recognises the statement; `None` for anything else.
pub(crate) fn parse(sql: &str, normalize: bool) -> Result<Option<FlinkStatement>> {
    let text = sql.trim().trim_end_matches(';').trim();
    let words: Vec<String> = text
        .split_whitespace()
        .take(3)
        .map(|w| w.to_ascii_uppercase())
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["SHOW", "CATALOGS"] => return Ok(Some(FlinkStatement::ShowCatalogs)),
        ["SHOW", "CURRENT", "CATALOG"] => return Ok(Some(FlinkStatement::ShowCurrentCatalog)),
        ["SHOW", "CURRENT", "DATABASE"] => return Ok(Some(FlinkStatement::ShowCurrentDatabase)),
        ["SET", ..] => return Ok(flink_set(text)),
        ["CREATE", "CATALOG", ..] => {}
        _ => return Ok(None),
    }
    let mut p = DdlParser::new(text, normalize)?;
    p.expect_keyword(Keyword::CREATE)?;
    p.expect_keyword(Keyword::CATALOG)?;
    let if_not_exists = p.keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.ident()?;
    p.expect_keyword(Keyword::WITH)?;
    let options = p.option_list()?;
    p.expect_end()?;
    Ok(Some(FlinkStatement::CreateCatalog {
        name,
        if_not_exists,
        options,
    }))
}

/// `SET 'key' = 'value'` with a quoted key outside `paimon.` and `datafusion.`: Flink's form.
fn flink_set(text: &str) -> Option<FlinkStatement> {
    let rest = text[3..].trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'')?;
    let end = rest[1..].find(quote)? + 1;
    let key = rest[1..end].trim().to_string();
    let lower = key.to_ascii_lowercase();
    if lower.starts_with("paimon.") || lower.starts_with("datafusion.") {
        return None;
    }
    let value = rest[end + 1..].trim_start().strip_prefix('=')?.trim();
    let value = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .unwrap_or(value)
        .to_string();
    Some(FlinkStatement::Set { key, value })
}

/// Runs the statement; its result as a DataFrame (empty for the ones that return nothing).
pub(crate) async fn execute(session: &PaimonSession, stmt: FlinkStatement) -> Result<DataFrame> {
    let ctx = session.context();
    let options = ctx.state().config().options().clone();
    match stmt {
        FlinkStatement::ShowCatalogs => {
            let mut names = ctx.catalog_names();
            names.sort();
            one_column(session, "catalog name", names)
        }
        FlinkStatement::ShowCurrentCatalog => one_column(
            session,
            "current catalog name",
            vec![options.catalog.default_catalog.clone()],
        ),
        FlinkStatement::ShowCurrentDatabase => one_column(
            session,
            "current database name",
            vec![options.catalog.default_schema.clone()],
        ),
        FlinkStatement::Set { key, value } => {
            let lower = key.to_ascii_lowercase();
            if lower == "execution.runtime-mode" && !value.eq_ignore_ascii_case("batch") {
                return plan_err!(
                    "Flink option 'execution.runtime-mode' = '{value}' is not supported: statements run in batch; \
                     read changes as they come with SELECT ... FROM paimon_stream('db.t')"
                );
            }
            if !IGNORED_FLINK_PREFIXES.iter().any(|p| lower.starts_with(p)) {
                return plan_err!(
                    "Unknown option '{key}': Paimon read options are set as SET paimon.<option> = '<value>', \
                     DataFusion's as SET datafusion.<option> = <value>"
                );
            }
            log::info!("Flink option '{key}' = '{value}' changes nothing here; ignored");
            Ok(ctx.read_empty()?)
        }
        FlinkStatement::CreateCatalog {
            name,
            if_not_exists,
            options,
        } => {
            let option = |k: &str| options.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
            if let Some(kind) = option("type").filter(|t| !t.eq_ignore_ascii_case("paimon")) {
                return plan_err!(
                    "CREATE CATALOG {name}: catalog type '{kind}' is not supported, only 'paimon'"
                );
            }
            if let Some(metastore) = option("metastore").filter(|m| !m.eq_ignore_ascii_case("filesystem")) {
                return plan_err!(
                    "CREATE CATALOG {name}: metastore '{metastore}' is not supported, only 'filesystem'"
                );
            }
            let Some(warehouse) = option("warehouse") else {
                return plan_err!("CREATE CATALOG {name} needs the option 'warehouse'");
            };
            let ours = session
                .catalog()
                .io()
                .root_url()
                .trim_end_matches('/')
                .to_string();
            let theirs = crate::catalog::warehouse_url_of(warehouse)?;
            if theirs.as_str().trim_end_matches('/') != ours {
                return plan_err!(
                    "CREATE CATALOG {name}: this session serves the warehouse {ours}, not {warehouse}; \
                     open that warehouse instead (paimon-sql -w {warehouse})"
                );
            }
            if ctx.catalog(&name).is_some() {
                if if_not_exists || name == super::DEFAULT_CATALOG {
                    return Ok(ctx.read_empty()?);
                }
                return plan_err!("Catalog {name} already exists");
            }
            ctx.register_catalog(&name, Arc::clone(session.catalog()) as _);
            session.catalog().add_name(&name);
            Ok(ctx.read_empty()?)
        }
    }
}

fn one_column(session: &PaimonSession, name: &str, values: Vec<String>) -> Result<DataFrame> {
    // literal rows, not an in-memory table: a Ballista session runs them too
    super::result_frame::string_column(session.context(), name, &values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_flink_session_statements() {
        let set = |sql: &str| parse(sql, true).unwrap();
        assert_eq!(
            set("SET 'execution.runtime-mode' = 'batch';"),
            Some(FlinkStatement::Set {
                key: "execution.runtime-mode".into(),
                value: "batch".into()
            })
        );
        assert_eq!(set("SET 'paimon.scan.snapshot-id' = '1'"), None);
        assert_eq!(set("SET datafusion.execution.batch_size = 1"), None);
        assert_eq!(set("show catalogs"), Some(FlinkStatement::ShowCatalogs));
        assert_eq!(
            set("SHOW CURRENT DATABASE;"),
            Some(FlinkStatement::ShowCurrentDatabase)
        );
        assert_eq!(
            set("CREATE CATALOG IF NOT EXISTS my_cat WITH ('type' = 'paimon', 'warehouse' = 'file:/tmp/w')"),
            Some(FlinkStatement::CreateCatalog {
                name: "my_cat".into(),
                if_not_exists: true,
                options: vec![
                    ("type".into(), "paimon".into()),
                    ("warehouse".into(), "file:/tmp/w".into())
                ],
            })
        );
        assert_eq!(set("SHOW TABLES"), None);
        assert_eq!(set("CREATE TABLE t (k INT)"), None);
    }
}
