//! `CREATE TABLE [IF NOT EXISTS] [db.]t (col TYPE [NOT NULL] [COMMENT '…'], …,
//! PRIMARY KEY (k, …) NOT ENFORCED) [COMMENT '…'] [PARTITIONED BY (p, …)]
//! [WITH ('k' = 'v', …)]`, as Flink writes it; writes `schema/schema-0` (format.md §2).
//! `CREATE TABLE [IF NOT EXISTS] t [WITH (…)] LIKE s` copies the columns, keys, partitioning,
//! comment and options of `s` (the `WITH` options over them), as Flink's default `LIKE` does.
//!
//! No sqlparser dialect parses Flink's nested types (`MAP<K, V>`, `ROW<a INT>`), so the
//! statement has its own small grammar on sqlparser's tokenizer (see `parser.rs`).

use std::collections::BTreeMap;

use datafusion::common::{plan_err, Result};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::names::resolve_table;
use super::parser::{not_supported, ColumnSpec, DdlParser, ObjectRef};
use super::types::assign_field_ids;
use super::validate::{normalize_schema, validate_schema};
use crate::spec::TableSchema;
use crate::sql::PaimonSession;

/// A parsed `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateTable {
    pub(crate) name: ObjectRef,
    pub(crate) if_not_exists: bool,
    pub(crate) columns: Vec<ColumnSpec>,
    /// The `PRIMARY KEY (…)` table constraint.
    pub(crate) primary_key: Option<Vec<String>>,
    pub(crate) comment: Option<String>,
    pub(crate) partition_keys: Option<Vec<String>>,
    pub(crate) options: Option<Vec<(String, String)>>,
    /// `LIKE s`: the table whose definition is copied (no columns are given then).
    pub(crate) like: Option<ObjectRef>,
}

impl CreateTable {
    /// `name` with nothing declared yet.
    pub(crate) fn named(name: ObjectRef, if_not_exists: bool) -> Self {
        CreateTable {
            name,
            if_not_exists,
            columns: vec![],
            primary_key: None,
            comment: None,
            partition_keys: None,
            options: None,
            like: None,
        }
    }

    /// The clauses after the columns, in any order, each at most once: `COMMENT '…'`,
    /// `PARTITIONED BY (…)`, `WITH (…)`. Stops at the first token that starts none of them.
    pub(crate) fn parse_table_clauses(&mut self, p: &mut DdlParser) -> Result<()> {
        loop {
            if p.keyword(Keyword::COMMENT) {
                set_once(&mut self.comment, p.string()?, "COMMENT")?;
            } else if p.keywords(&[Keyword::PARTITIONED, Keyword::BY]) {
                set_once(&mut self.partition_keys, p.ident_list()?, "PARTITIONED BY")?;
            } else if p.keyword(Keyword::WITH) {
                set_once(&mut self.options, p.option_list()?, "WITH")?;
            } else {
                return Ok(());
            }
        }
    }
}

/// Parses the statement, from `CREATE` to the end.
pub(crate) fn parse(p: &mut DdlParser) -> Result<CreateTable> {
    p.expect_keyword(Keyword::CREATE)?;
    p.expect_keyword(Keyword::TABLE)?;
    let if_not_exists = p.keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.object_ref()?;
    if !matches!(&p.peek().token, Token::LParen) {
        // `[WITH (…)] LIKE s`
        let options = p.keyword(Keyword::WITH).then(|| p.option_list()).transpose()?;
        if !p.keyword(Keyword::LIKE) {
            reject_unsupported_clause(p)?;
            p.expect_token(&Token::LParen)?;
        }
        let like = p.object_ref()?;
        if matches!(&p.peek().token, Token::LParen) {
            return not_supported("LIKE options (INCLUDING / EXCLUDING …)");
        }
        p.expect_end()?;
        return Ok(CreateTable {
            options,
            like: Some(like),
            ..CreateTable::named(name, if_not_exists)
        });
    }
    p.expect_token(&Token::LParen)?;
    let mut columns = Vec::new();
    let mut primary_key = None;
    loop {
        if p.keyword(Keyword::CONSTRAINT) {
            p.ident()?;
            p.expect_keyword(Keyword::PRIMARY)?;
            p.expect_keyword(Keyword::KEY)?;
            set_once(&mut primary_key, primary_key_columns(p)?, "PRIMARY KEY")?;
        } else if p.keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
            set_once(&mut primary_key, primary_key_columns(p)?, "PRIMARY KEY")?;
        } else if p.word("WATERMARK") {
            return not_supported("WATERMARK");
        } else {
            columns.push(p.column()?);
        }
        if !p.consume(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen)?;
    let mut stmt = CreateTable {
        columns,
        primary_key,
        ..CreateTable::named(name, if_not_exists)
    };
    stmt.parse_table_clauses(p)?;
    reject_unsupported_clause(p)?;
    p.expect_end()?;
    Ok(stmt)
}

fn primary_key_columns(p: &mut DdlParser) -> Result<Vec<String>> {
    let cols = p.ident_list()?;
    p.not_enforced()?;
    Ok(cols)
}

fn set_once<T>(slot: &mut Option<T>, value: T, clause: &str) -> Result<()> {
    if slot.replace(value).is_some() {
        return plan_err!("{clause} is given twice");
    }
    Ok(())
}

/// Flink clauses this crate does not support get a clear error instead of a parse error.
fn reject_unsupported_clause(p: &mut DdlParser) -> Result<()> {
    if p.keyword(Keyword::AS) {
        return not_supported("CREATE TABLE … AS SELECT");
    }
    if p.word("DISTRIBUTED") {
        return not_supported("DISTRIBUTED BY (use the 'bucket' and 'bucket-key' options)");
    }
    Ok(())
}

/// The schema-0 Java Paimon would write for this statement, validated.
pub(crate) fn build_schema(stmt: &CreateTable, table: &str, time_millis: i64) -> Result<TableSchema> {
    let mut fields: Vec<_> = stmt.columns.iter().map(|c| c.field.clone()).collect();
    let mut highest = -1;
    assign_field_ids(&mut fields, &mut highest);
    let mut schema = TableSchema {
        version: 3,
        id: 0,
        fields,
        highest_field_id: highest,
        partition_keys: stmt.partition_keys.clone().unwrap_or_default(),
        primary_keys: primary_keys(stmt)?,
        options: table_options(stmt.options.as_deref().unwrap_or_default())?,
        comment: stmt.comment.clone(),
        time_millis,
    };
    normalize_schema(&mut schema, table)?;
    validate_schema(&schema, table)?;
    Ok(schema)
}

/// The `PRIMARY KEY (…)` constraint, or the one column declared `PRIMARY KEY` inline.
fn primary_keys(stmt: &CreateTable) -> Result<Vec<String>> {
    let inline: Vec<String> = stmt
        .columns
        .iter()
        .filter(|c| c.primary_key)
        .map(|c| c.field.name.clone())
        .collect();
    match (&stmt.primary_key, inline.len()) {
        (None, _) if inline.len() <= 1 => Ok(inline),
        (Some(pk), 0) => Ok(pk.clone()),
        _ => plan_err!("Multiple primary keys are defined: use one PRIMARY KEY (…) NOT ENFORCED clause"),
    }
}

/// The `WITH` options as stored, after Flink's catalog handling of `connector` and Paimon's
/// refusal of a custom `path` in a filesystem catalog.
fn table_options(pairs: &[(String, String)]) -> Result<BTreeMap<String, String>> {
    let mut options = BTreeMap::new();
    for (k, v) in pairs {
        if options.insert(k.clone(), v.clone()).is_some() {
            return plan_err!("Option '{k}' is given twice");
        }
    }
    if let Some(connector) = options.remove("connector") {
        if connector != "paimon" {
            return plan_err!("Option 'connector' = '{connector}' is not supported: the Paimon catalog only creates Paimon tables");
        }
    }
    if options.contains_key("path") {
        return plan_err!(
            "Option 'path' is not supported: tables of a filesystem catalog live in the warehouse"
        );
    }
    Ok(options)
}

/// Creates the table and refreshes the catalog listing.
pub(crate) async fn execute(session: &PaimonSession, stmt: CreateTable) -> Result<()> {
    let name = resolve_table(session, &stmt.name)?;
    let stmt = match &stmt.like {
        Some(source) => like(session, stmt.clone(), source).await?,
        None => stmt,
    };
    let schema = build_schema(&stmt, &name.to_string(), chrono::Utc::now().timestamp_millis())?;
    session
        .catalog()
        .create_table(&name.database, &name.table, &schema, stmt.if_not_exists)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(sql: &str) -> Result<TableSchema> {
        let mut p = DdlParser::new(sql, true)?;
        let stmt = parse(&mut p)?;
        build_schema(&stmt, "default.t", 1_700_000_000_000)
    }

    #[test]
    fn writes_schema_0_as_java_does() {
        let s = schema(
            "CREATE TABLE IF NOT EXISTS db.t (
                k BIGINT COMMENT 'the key', v STRING, p INT,
                st ROW<x INT, y STRING>, mp MAP<STRING NOT NULL, BIGINT>,
                PRIMARY KEY (k, p) NOT ENFORCED
             ) COMMENT 'probe' PARTITIONED BY (p) WITH ('bucket' = '2', 'x.custom' = 'kept');",
        )
        .unwrap();
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "version": 3, "id": 0,
                "fields": [
                    {"id": 0, "name": "k", "type": "BIGINT NOT NULL", "description": "the key"},
                    {"id": 1, "name": "v", "type": "STRING"},
                    {"id": 2, "name": "p", "type": "INT NOT NULL"},
                    {"id": 3, "name": "st", "type": {"type": "ROW", "fields": [
                        {"id": 4, "name": "x", "type": "INT"}, {"id": 5, "name": "y", "type": "STRING"}]}},
                    {"id": 6, "name": "mp", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}}
                ],
                "highestFieldId": 6,
                "partitionKeys": ["p"],
                "primaryKeys": ["k", "p"],
                "options": {"bucket": "2", "x.custom": "kept"},
                "comment": "probe",
                "timeMillis": 1_700_000_000_000i64
            })
        );
    }

    #[test]
    fn append_table_without_comment_has_no_comment_key() {
        let s = schema("CREATE TABLE t (a INT, b STRING)").unwrap();
        assert!(s.primary_keys.is_empty());
        assert!(!s.to_json().contains("comment"));
        assert_eq!(s.highest_field_id, 1);
    }

    #[test]
    fn inline_primary_key_and_options_keys() {
        let s = schema("CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, b STRING)").unwrap();
        assert_eq!(s.primary_keys, ["a"]);
        assert!(!s.fields[0].data_type.nullable);
        let s = schema("CREATE TABLE t (a INT, b STRING) WITH ('primary-key' = 'a', 'partition' = 'b', 'connector' = 'paimon')").unwrap();
        assert_eq!(
            (s.primary_keys.as_slice(), s.partition_keys.as_slice()),
            (&["a".to_string()][..], &["b".to_string()][..])
        );
        assert!(s.options.is_empty());
        let s = schema("CREATE TABLE t (a INT NOT NULL, b INT, PRIMARY KEY (a, b) NOT ENFORCED) WITH ('primary-key.nullable' = 'true')").unwrap();
        assert!(s.fields.iter().all(|f| f.data_type.nullable));
    }

    #[test]
    fn rejects_invalid_tables_naming_the_culprit() {
        let cases = [
            ("CREATE TABLE t (a INT, PRIMARY KEY (x) NOT ENFORCED)", "'x'"),
            ("CREATE TABLE t (a INT) PARTITIONED BY (x)", "'x'"),
            ("CREATE TABLE t (a INT, a STRING)", "'a'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) PARTITIONED BY (a)", "Primary key (a)"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket' = 'x')", "'bucket'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket' = '0')", "'bucket'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket' = '-3')", "'bucket'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket' = '2', 'bucket-key' = 'b')", "'b'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('merge-engine' = 'latest')", "'merge-engine'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('changelog-producer' = 'all')", "'changelog-producer'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('ignore-delete' = 'yes')", "'ignore-delete'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('file.format' = 'csv')", "'file.format'"),
            ("CREATE TABLE t (a INT, b INT) WITH ('changelog-producer' = 'input')", "'changelog-producer'"),
            ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('merge-engine' = 'first-row', 'sequence.field' = 'b')", "'sequence.field'"),
            ("CREATE TABLE t (a INT, b INT) WITH ('bucket' = '2')", "'bucket-key'"),
            ("CREATE TABLE t (a INT, b INT) WITH ('bucket' = '-2')", "'bucket'"),
            ("CREATE TABLE t (a ARRAY<INT>, PRIMARY KEY (a) NOT ENFORCED)", "'a'"),
            ("CREATE TABLE t (\"_KEY_a\" INT)", "'_KEY_a'"),
            ("CREATE TABLE t (\"_SEQUENCE_NUMBER\" BIGINT)", "'_SEQUENCE_NUMBER'"),
        ];
        for (sql, needle) in cases {
            let err = schema(sql).expect_err(sql).to_string();
            assert!(err.contains(needle), "{sql}: {err}");
        }
    }

    #[test]
    fn unsupported_clauses_are_named() {
        for (sql, needle) in [
            ("CREATE TABLE t AS SELECT 1", "AS SELECT"),
            ("CREATE TABLE t (a INT, b AS a + 1)", "computed column"),
            (
                "CREATE TABLE t (a TIMESTAMP(3), WATERMARK FOR a AS a)",
                "WATERMARK",
            ),
            (
                "CREATE TABLE t (a INT) DISTRIBUTED BY HASH(a) INTO 4 BUCKETS",
                "DISTRIBUTED BY",
            ),
        ] {
            let err = schema(sql).expect_err(sql).to_string();
            assert!(err.contains(needle), "{sql}: {err}");
        }
    }
}

/// `stmt` (a `LIKE s`) with the definition of `s` filled in.
async fn like(session: &PaimonSession, mut stmt: CreateTable, source: &ObjectRef) -> Result<CreateTable> {
    let source = resolve_table(session, source)?;
    let Some(schema) = session
        .catalog()
        .table_schema(&source.database, &source.table)
        .await?
    else {
        return plan_err!("Table {source} of the LIKE clause does not exist");
    };
    stmt.columns = schema
        .fields
        .iter()
        .map(|f| ColumnSpec {
            field: f.clone(),
            primary_key: false,
        })
        .collect();
    stmt.primary_key = Some(schema.primary_keys.clone()).filter(|k| !k.is_empty());
    stmt.partition_keys = Some(schema.partition_keys.clone());
    stmt.comment = schema.comment.clone();
    let mut options = schema.options.clone();
    options.extend(stmt.options.take().unwrap_or_default());
    stmt.options = Some(options.into_iter().collect());
    Ok(stmt)
}
