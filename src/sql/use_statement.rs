//! Flink's `USE <database>` and `USE CATALOG <catalog>`: they set the session's default
//! database / catalog, through which unqualified table names resolve.

use datafusion::common::{plan_err, Result};

/// What a `USE` statement switches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UseTarget {
    Database(String),
    Catalog(String),
}

/// Parses `USE db`, `USE CATALOG c` (case-insensitive, optional `;`, backquoted or
/// double-quoted names); None for anything else.
pub(crate) fn parse(sql: &str) -> Option<UseTarget> {
    let text = sql.trim().trim_end_matches(';').trim();
    let mut words = text.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("use") {
        return None;
    }
    let first = words.next()?;
    let (catalog, name) = if first.eq_ignore_ascii_case("catalog") {
        (true, words.next()?)
    } else {
        (false, first)
    };
    if words.next().is_some() {
        return None;
    }
    let name = unquote(name);
    if name.is_empty() {
        return None;
    }
    Some(if catalog {
        UseTarget::Catalog(name.to_string())
    } else {
        UseTarget::Database(name.to_string())
    })
}

fn unquote(name: &str) -> &str {
    for q in ['`', '"'] {
        if let Some(inner) = name.strip_prefix(q).and_then(|n| n.strip_suffix(q)) {
            return inner;
        }
    }
    name
}

/// Applies `target` to `ctx`: the database (or catalog) must exist.
pub(crate) fn apply(ctx: &datafusion::prelude::SessionContext, target: &UseTarget) -> Result<()> {
    let state = ctx.state();
    let options = state.config().options();
    match target {
        UseTarget::Database(db) => {
            let catalog_name = options.catalog.default_catalog.clone();
            let exists = ctx.catalog(&catalog_name).is_some_and(|c| c.schema(db).is_some());
            if !exists {
                return plan_err!("Database {db} does not exist in catalog {catalog_name}");
            }
            ctx.state_ref()
                .write()
                .config_mut()
                .options_mut()
                .catalog
                .default_schema = db.clone();
        }
        UseTarget::Catalog(name) => {
            if ctx.catalog(name).is_none() {
                let known = ctx.catalog_names().join(", ");
                return plan_err!("Catalog {name} does not exist (catalogs: {known})");
            }
            ctx.state_ref()
                .write()
                .config_mut()
                .options_mut()
                .catalog
                .default_catalog = name.clone();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse, UseTarget};

    #[test]
    fn parses_flink_use_statements() {
        assert_eq!(parse("USE db1;"), Some(UseTarget::Database("db1".into())));
        assert_eq!(parse("use `my db`"), None);
        assert_eq!(parse("use `db2`"), Some(UseTarget::Database("db2".into())));
        assert_eq!(
            parse("USE CATALOG paimon"),
            Some(UseTarget::Catalog("paimon".into()))
        );
        assert_eq!(parse("USER x"), None);
        assert_eq!(parse("SELECT 1"), None);
    }
}
