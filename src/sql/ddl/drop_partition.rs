//! `ALTER TABLE [IF EXISTS] t DROP [IF EXISTS] PARTITION (p = v, ...) [, PARTITION (...)]`:
//! Flink's partition drop. Paimon's Flink catalog drops each partition with a commit of its
//! own, after checking that it exists; here each is the metadata-only drop a whole-partition
//! `DELETE` makes (one OVERWRITE snapshot removing the partition's files, semantics.md §9).

use datafusion::common::{plan_err, Result};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::names::resolve_table;
use super::parser::{DdlParser, ObjectRef};
use crate::sql::PaimonSession;

/// A parsed partition drop.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DropPartitions {
    pub(crate) name: ObjectRef,
    /// `ALTER TABLE IF EXISTS`: a missing table is no error.
    pub(crate) if_table_exists: bool,
    /// `DROP IF EXISTS PARTITION`: a missing partition is no error.
    pub(crate) if_exists: bool,
    /// Per partition: (column, SQL literal) pairs.
    pub(crate) specs: Vec<Vec<(String, String)>>,
}

/// Recognises the statement; `None` for any other `ALTER TABLE`.
pub(crate) fn parse(sql: &str, normalize: bool) -> Result<Option<DropPartitions>> {
    let Ok(mut p) = DdlParser::new(sql, normalize) else {
        return Ok(None);
    };
    if !p.keyword(Keyword::ALTER) || !p.keyword(Keyword::TABLE) {
        return Ok(None);
    }
    let if_table_exists = p.keywords(&[Keyword::IF, Keyword::EXISTS]);
    let Ok(name) = p.object_ref() else {
        return Ok(None);
    };
    if !p.keyword(Keyword::DROP) {
        return Ok(None);
    }
    let if_exists = p.keywords(&[Keyword::IF, Keyword::EXISTS]);
    if !p.keyword(Keyword::PARTITION) {
        return Ok(None);
    }
    let mut specs = vec![spec(&mut p)?];
    while p.consume(&Token::Comma) {
        p.expect_keyword(Keyword::PARTITION)?;
        specs.push(spec(&mut p)?);
    }
    p.expect_end()?;
    Ok(Some(DropPartitions {
        name,
        if_table_exists,
        if_exists,
        specs,
    }))
}

/// `( column = literal, ... )`.
fn spec(p: &mut DdlParser) -> Result<Vec<(String, String)>> {
    p.expect_token(&Token::LParen)?;
    let mut pairs = Vec::new();
    loop {
        let column = p.ident()?;
        p.expect_token(&Token::Eq)?;
        let value = p.inner().parse_expr()?;
        pairs.push((column, value.to_string()));
        if !p.consume(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen)?;
    Ok(pairs)
}

/// Drops each partition in turn.
pub(crate) async fn execute(session: &PaimonSession, stmt: DropPartitions) -> Result<()> {
    let table = resolve_table(session, &stmt.name)?;
    let Some(schema) = session
        .catalog()
        .table_schema(&table.database, &table.table)
        .await?
    else {
        if stmt.if_table_exists {
            return Ok(());
        }
        return plan_err!("Table {table} does not exist");
    };
    let quoted = format!("\"{}\".\"{}\"", table.database, table.table);
    for spec in &stmt.specs {
        let mut conditions = Vec::with_capacity(spec.len());
        for (column, value) in spec {
            if !schema.partition_keys.contains(column) {
                return plan_err!(
                    "Column '{column}' of the PARTITION clause is not a partition column of table {table} (partition columns: {})",
                    schema.partition_keys.join(", ")
                );
            }
            conditions.push(format!("\"{column}\" = {value}"));
        }
        let condition = conditions.join(" AND ");
        // DataFusion's own planner: both statements are plain SQL
        let exists = session
            .context()
            .sql(&format!("SELECT 1 FROM {quoted} WHERE {condition} LIMIT 1"))
            .await?
            .collect()
            .await?
            .iter()
            .any(|b| b.num_rows() > 0);
        if !exists {
            if stmt.if_exists {
                continue;
            }
            return plan_err!("Partition ({condition}) of table {table} does not exist");
        }
        session
            .context()
            .sql(&format!("DELETE FROM {quoted} WHERE {condition}"))
            .await?
            .collect()
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_partition_drops_only() {
        let stmt = parse(
            "ALTER TABLE db.t DROP PARTITION (dt = '2024-01-01', hr = 3), PARTITION (dt = 'x', hr = 1)",
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(stmt.name.parts, vec!["db", "t"]);
        assert!(!stmt.if_exists && !stmt.if_table_exists);
        assert_eq!(
            stmt.specs,
            vec![
                vec![
                    ("dt".to_string(), "'2024-01-01'".to_string()),
                    ("hr".to_string(), "3".to_string())
                ],
                vec![
                    ("dt".to_string(), "'x'".to_string()),
                    ("hr".to_string(), "1".to_string())
                ],
            ]
        );
        let stmt = parse("ALTER TABLE IF EXISTS t DROP IF EXISTS PARTITION (p = 1)", true)
            .unwrap()
            .unwrap();
        assert!(stmt.if_exists && stmt.if_table_exists);
        assert!(parse("ALTER TABLE t DROP COLUMN c", true).unwrap().is_none());
        assert!(parse("ALTER TABLE t SET ('a' = 'b')", true).unwrap().is_none());
        assert!(parse("ALTER TABLE t DROP PARTITION (p)", true).is_err());
    }
}
