//! `CREATE TABLE [db.]t [COMMENT '…'] [PARTITIONED BY (p, …)] [WITH ('k' = 'v', …)] AS <query>`,
//! as Paimon's Flink and Spark integrations run it: the table gets the query's columns, with
//! the primary key and partitioning of the options `'primary-key' = 'a,b'` and
//! `'partition' = 'p'` (taken out of the stored options, as Paimon's catalog does), then the
//! query's rows are inserted in one commit. Column types map from Arrow as Paimon reads them
//! (`INT`, `BIGINT`, `STRING`, `DECIMAL(p, s)`, `TIMESTAMP(p)`, …).

use arrow::datatypes::{DataType as ArrowType, Field, TimeUnit};
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::dataframe::DataFrame;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use super::create_table::{self, CreateTable};
use super::names::resolve_table;
use super::parser::{ColumnSpec, DdlParser};
use crate::spec::types::parse_type_string;
use crate::spec::{DataField, DataType};
use crate::sql::PaimonSession;

/// A parsed `CREATE TABLE … AS <query>`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateTableAs {
    /// The table without its columns (they come from the query).
    pub(crate) table: CreateTable,
    pub(crate) query: String,
}

/// Recognises the statement (an `AS` outside parentheses after `CREATE TABLE name`); `None` for
/// any other.
pub(crate) fn parse(sql: &str, normalize: bool) -> Result<Option<CreateTableAs>> {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location() else {
        return Ok(None);
    };
    let mut depth = 0usize;
    let mut split = None;
    for t in &tokens {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w.keyword == Keyword::AS => {
                split = Some(t.span);
                break;
            }
            _ => {}
        }
    }
    let Some(span) = split else {
        return Ok(None);
    };
    let offsets = crate::sql::options_hint::Offsets::new(sql);
    let (head, query) = (&sql[..offsets.byte(span.start)], &sql[offsets.byte(span.end)..]);
    let mut p = DdlParser::new(head, normalize)?;
    if !p.keyword(Keyword::CREATE) || !p.keyword(Keyword::TABLE) {
        return Ok(None);
    }
    if p.keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]) {
        return plan_err!(
            "CREATE TABLE IF NOT EXISTS … AS SELECT is not supported: create the table, then INSERT"
        );
    }
    let mut table = CreateTable::named(p.object_ref()?, false);
    table.parse_table_clauses(&mut p)?;
    p.expect_end()?;
    let query = query.trim().trim_end_matches(';').trim().to_string();
    if query.is_empty() {
        return plan_err!("CREATE TABLE … AS needs a query after AS");
    }
    Ok(Some(CreateTableAs { table, query }))
}

/// Creates the table from the query's columns and inserts the query's rows; returns the
/// inserted row count.
pub(crate) async fn execute(session: &PaimonSession, stmt: CreateTableAs) -> Result<DataFrame> {
    let name = resolve_table(session, &stmt.table.name)?;
    let ctx = session.context();
    let source = ctx.sql(&stmt.query).await?;
    let mut table = stmt.table;
    table.columns = source
        .schema()
        .fields()
        .iter()
        .map(|f| {
            Ok(ColumnSpec {
                field: DataField {
                    id: 0,
                    name: f.name().clone(),
                    data_type: paimon_type(f).map_err(|e| {
                        plan_datafusion_err!("CREATE TABLE {name} AS: column '{}': {e}", f.name())
                    })?,
                    description: None,
                },
                primary_key: false,
            })
        })
        .collect::<Result<_>>()?;
    // Paimon's catalog reads the keys of a CTAS from these two options and does not store them.
    let mut options = table.options.take().unwrap_or_default();
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if let Some(at) = options.iter().position(|(k, _)| k == "primary-key") {
        table.primary_key = Some(list(&options.remove(at).1));
    }
    if let Some(at) = options.iter().position(|(k, _)| k == "partition") {
        let partition = list(&options.remove(at).1);
        if table.partition_keys.replace(partition).is_some() {
            return plan_err!(
                "CREATE TABLE {name} AS: give the partition keys once, by PARTITIONED BY or 'partition'"
            );
        }
    }
    table.options = Some(options);
    create_table::execute(session, table).await?;
    let target = format!("\"{}\".\"{}\"", name.database, name.table);
    ctx.sql(&format!("INSERT INTO {target} {}", stmt.query)).await
}

/// The Paimon type of a query column, nullable as the column is; else why not.
fn paimon_type(field: &Field) -> std::result::Result<DataType, String> {
    let name = match field.data_type() {
        ArrowType::Boolean => "BOOLEAN".to_string(),
        ArrowType::Int8 => "TINYINT".to_string(),
        ArrowType::Int16 => "SMALLINT".to_string(),
        ArrowType::Int32 => "INT".to_string(),
        ArrowType::Int64 => "BIGINT".to_string(),
        ArrowType::Float32 => "FLOAT".to_string(),
        ArrowType::Float64 => "DOUBLE".to_string(),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => "STRING".to_string(),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => "BYTES".to_string(),
        ArrowType::Date32 => "DATE".to_string(),
        ArrowType::Decimal128(p, s) if *s >= 0 => format!("DECIMAL({p}, {s})"),
        ArrowType::Timestamp(unit, zone) => {
            let precision = match unit {
                TimeUnit::Second => 0,
                TimeUnit::Millisecond => 3,
                TimeUnit::Microsecond => 6,
                TimeUnit::Nanosecond => 9,
            };
            match zone {
                None => format!("TIMESTAMP({precision})"),
                Some(_) => format!("TIMESTAMP_LTZ({precision})"),
            }
        }
        other => {
            return Err(format!(
                "type {other} has no Paimon column type here; CAST it to one (INT, BIGINT, STRING, DECIMAL, TIMESTAMP, …)"
            ))
        }
    };
    let name = if field.is_nullable() {
        name
    } else {
        format!("{name} NOT NULL")
    };
    parse_type_string(&name).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_create_table_as_only() {
        let stmt = parse(
            "CREATE TABLE db.t COMMENT 'c' WITH ('primary-key' = 'k', 'bucket' = '2') AS SELECT k, 'as' AS v FROM s;",
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(stmt.table.name.parts, vec!["db", "t"]);
        assert_eq!(stmt.table.comment.as_deref(), Some("c"));
        assert_eq!(stmt.query, "SELECT k, 'as' AS v FROM s");
        assert_eq!(
            stmt.table.options,
            Some(vec![
                ("primary-key".into(), "k".into()),
                ("bucket".into(), "2".into())
            ])
        );
        assert!(parse("CREATE TABLE t (k INT) WITH ('a' = 'b')", true)
            .unwrap()
            .is_none());
        assert!(parse("CREATE TABLE t (k INT COMMENT 'x')", true)
            .unwrap()
            .is_none());
        assert!(parse("CREATE TABLE IF NOT EXISTS t AS SELECT 1", true).is_err());
    }

    #[test]
    fn arrow_types_map_to_paimon_types() {
        let t =
            |dt: ArrowType, nullable: bool| paimon_type(&Field::new("c", dt, nullable)).unwrap().to_string();
        assert_eq!(t(ArrowType::Int64, false), "BIGINT NOT NULL");
        assert_eq!(t(ArrowType::Utf8View, true), "STRING");
        assert_eq!(t(ArrowType::Decimal128(10, 2), true), "DECIMAL(10, 2)");
        assert_eq!(
            t(ArrowType::Timestamp(TimeUnit::Microsecond, None), true),
            "TIMESTAMP(6)"
        );
        assert!(paimon_type(&Field::new("c", ArrowType::UInt64, true)).is_err());
    }
}
