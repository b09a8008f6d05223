//! Statement dispatch: recognise our statements by their leading keywords, parse each of them
//! once, run its handler; everything else goes to DataFusion untouched (STYLE §4.4).

use datafusion::common::Result;
use datafusion::dataframe::DataFrame;
use datafusion::sql::sqlparser::keywords::Keyword;

use super::ddl::parser::{not_supported, DdlParser};
use super::ddl::{
    alter_table, create_database, create_table, create_table_as, describe, drop_database, drop_partition,
    drop_table, names, show_databases,
};
use super::PaimonSession;

/// A statement this crate executes itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PaimonStatement {
    CreateDatabase(create_database::CreateDatabase),
    DropDatabase(drop_database::DropDatabase),
    CreateTable(create_table::CreateTable),
    CreateTableAs(create_table_as::CreateTableAs),
    DropTable(drop_table::DropTable),
    AlterTable(alter_table::AlterTable),
    DropPartitions(drop_partition::DropPartitions),
    ShowDatabases,
    Describe(super::ddl::parser::ObjectRef),
    Call(super::procedures::Call),
}

/// Parses `sql` if it is one of our statements; `None` leaves it to DataFusion (also when it
/// does not even tokenize, so DataFusion reports the error).
pub(crate) fn parse(sql: &str, normalize_identifiers: bool) -> Result<Option<PaimonStatement>> {
    let Ok(mut p) = DdlParser::new(sql, normalize_identifiers) else {
        return Ok(None);
    };
    let at = |p: &DdlParser, n: usize, kws: &[Keyword]| kws.iter().any(|k| p.peek_keyword_at(n, *k));
    let stmt = if at(&p, 0, &[Keyword::CREATE]) {
        if at(&p, 1, &[Keyword::TABLE]) {
            match create_table_as::parse(sql, normalize_identifiers)? {
                Some(ctas) => PaimonStatement::CreateTableAs(ctas),
                None => PaimonStatement::CreateTable(create_table::parse(&mut p)?),
            }
        } else if at(&p, 1, &[Keyword::DATABASE, Keyword::SCHEMA]) {
            PaimonStatement::CreateDatabase(create_database::parse(&mut p)?)
        } else if at(&p, 1, &[Keyword::OR]) && at(&p, 3, &[Keyword::TABLE]) {
            return not_supported("CREATE OR REPLACE TABLE");
        } else {
            return Ok(None);
        }
    } else if at(&p, 0, &[Keyword::DROP]) {
        if at(&p, 1, &[Keyword::TABLE]) {
            PaimonStatement::DropTable(drop_table::parse(&mut p)?)
        } else if at(&p, 1, &[Keyword::DATABASE, Keyword::SCHEMA]) {
            PaimonStatement::DropDatabase(drop_database::parse(&mut p)?)
        } else {
            return Ok(None);
        }
    } else if at(&p, 0, &[Keyword::ALTER]) && at(&p, 1, &[Keyword::TABLE]) {
        match drop_partition::parse(sql, normalize_identifiers)? {
            Some(drop) => PaimonStatement::DropPartitions(drop),
            None => PaimonStatement::AlterTable(alter_table::parse(&mut p)?),
        }
    } else if at(&p, 0, &[Keyword::CALL]) {
        PaimonStatement::Call(super::procedures::parse(&mut p)?)
    } else if at(&p, 0, &[Keyword::SHOW]) && at(&p, 1, &[Keyword::DATABASES, Keyword::SCHEMAS]) {
        show_databases::parse(&mut p)?;
        PaimonStatement::ShowDatabases
    } else if at(&p, 0, &[Keyword::DESCRIBE, Keyword::DESC]) {
        PaimonStatement::Describe(describe::parse(&mut p)?)
    } else {
        return Ok(None);
    };
    Ok(Some(stmt))
}

/// Runs one of our statements: DDL returns an empty result (the catalog listing is refreshed
/// by the warehouse operations), `SHOW DATABASES` its rows.
pub(crate) async fn execute(session: &PaimonSession, stmt: PaimonStatement) -> Result<DataFrame> {
    match stmt {
        PaimonStatement::CreateDatabase(s) => empty(session, create_database::execute(session, s).await),
        PaimonStatement::DropDatabase(s) => empty(session, drop_database::execute(session, s).await),
        PaimonStatement::CreateTable(s) => empty(session, create_table::execute(session, s).await),
        PaimonStatement::CreateTableAs(s) => create_table_as::execute(session, s).await,
        PaimonStatement::DropTable(s) => empty(session, drop_table::execute(session, s).await),
        PaimonStatement::AlterTable(s) => empty(session, alter_table::execute(session, s).await),
        PaimonStatement::DropPartitions(s) => empty(session, drop_partition::execute(session, s).await),
        PaimonStatement::ShowDatabases => show_databases::execute(session).await,
        PaimonStatement::Describe(name) => describe::execute(session, name).await,
        PaimonStatement::Call(call) => super::procedures::execute(session, call).await,
    }
}

fn empty(session: &PaimonSession, done: Result<()>) -> Result<DataFrame> {
    done?;
    session.context().read_empty()
}

/// Parses and runs `sql` if it is ours; `None` means "give it to DataFusion".
pub(crate) async fn try_execute(session: &PaimonSession, sql: &str) -> Result<Option<DataFrame>> {
    if super::merge::is_merge(sql) {
        return super::merge::plan(session, sql).await.map(Some);
    }
    if let Some((merge, analyze, verbose)) = super::merge::explained_merge(sql) {
        let planned = super::merge::plan(session, merge).await?;
        return planned.explain(verbose, analyze).map(Some);
    }
    if let Some(overwrite) = super::insert_partition::parse(sql) {
        return super::insert_partition::execute(session, overwrite)
            .await
            .map(Some);
    }
    match parse(sql, names::normalizes_identifiers(session))? {
        Some(stmt) => execute(session, stmt).await.map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::prelude::{SessionConfig, SessionContext};

    use super::*;

    async fn rows(session: &PaimonSession, sql: &str) -> String {
        let batches = session.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    #[tokio::test]
    async fn ddl_on_a_local_warehouse() {
        let dir = tempfile::tempdir().unwrap();
        let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
        session.sql("CREATE DATABASE d1").await.unwrap();
        assert!(
            dir.path().join("d1.db").is_dir(),
            "a local database is a directory"
        );
        session
            .sql("CREATE TABLE d1.t (k BIGINT, v STRING COMMENT 'value', PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '1')")
            .await
            .unwrap();
        let file = std::fs::read_to_string(dir.path().join("d1.db/t/schema/schema-0")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&file).unwrap();
        assert_eq!(json["version"], 3);
        assert_eq!(json["highestFieldId"], 1);
        assert_eq!(json["fields"][0]["type"], "BIGINT NOT NULL");
        assert_eq!(json["fields"][1]["description"], "value");
        assert!(json.get("comment").is_none());
        assert!(json["timeMillis"].as_i64().unwrap() > 0);

        // Unqualified names use the current database.
        session
            .sql("SET datafusion.catalog.default_schema = 'd1'")
            .await
            .unwrap();
        session.sql("ALTER TABLE t ADD c INT").await.unwrap();
        session.sql("ALTER TABLE t RENAME COLUMN v TO w").await.unwrap();
        assert!(dir.path().join("d1.db/t/schema/schema-2").is_file());
        let file = std::fs::read_to_string(dir.path().join("d1.db/t/schema/schema-2")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&file).unwrap();
        assert_eq!(
            json["fields"],
            serde_json::json!([
                {"id": 0, "name": "k", "type": "BIGINT NOT NULL"},
                {"id": 1, "name": "w", "type": "STRING", "description": "value"},
                {"id": 2, "name": "c", "type": "INT"}
            ])
        );
        assert_eq!(
            (json["id"].as_i64(), json["highestFieldId"].as_i64()),
            (Some(2), Some(2))
        );
        assert_eq!(
            rows(&session, "SELECT count(*) AS n FROM t").await,
            "+---+\n| n |\n+---+\n| 0 |\n+---+"
        );
        session.sql("DROP TABLE t").await.unwrap();
        assert!(
            !dir.path().join("d1.db/t").exists(),
            "the table directory is removed"
        );
        session
            .sql("SET datafusion.catalog.default_schema = 'default'")
            .await
            .unwrap();
        session.sql("DROP DATABASE d1").await.unwrap();
        assert!(!dir.path().join("d1.db").exists());
    }

    #[tokio::test]
    async fn ddl_on_an_object_store_warehouse() {
        let config = SessionConfig::new()
            .with_default_catalog_and_schema("paimon", "default")
            .with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        let store = Arc::new(object_store::memory::InMemory::new());
        let url = url::Url::parse("memory://bucket").unwrap();
        ctx.register_object_store(&url, Arc::clone(&store) as _);
        let session = PaimonSession::register(ctx, "memory://bucket/wh").await.unwrap();
        // Nothing is written for an empty database, yet it exists for this catalog.
        session.sql("CREATE DATABASE d1").await.unwrap();
        assert!(rows(&session, "SHOW DATABASES").await.contains("d1"));
        session.sql("CREATE TABLE d1.t (a INT)").await.unwrap();
        assert_eq!(
            rows(&session, "SELECT count(*) AS n FROM d1.t").await,
            "+---+\n| n |\n+---+\n| 0 |\n+---+"
        );
        let err = session.sql("DROP DATABASE d1").await.unwrap_err().to_string();
        assert!(err.contains("Database d1 is not empty"), "{err}");
        // Dropping its last table keeps the (now object-less) database.
        session.sql("DROP TABLE d1.t").await.unwrap();
        assert!(rows(&session, "SHOW DATABASES").await.contains("d1"));
        session.sql("CREATE TABLE d1.t (a INT)").await.unwrap();
        session.sql("DROP DATABASE d1 CASCADE").await.unwrap();
        let left: Vec<_> = futures::TryStreamExt::try_collect::<Vec<_>>(object_store::ObjectStore::list(
            store.as_ref(),
            None,
        ))
        .await
        .unwrap();
        assert!(left.is_empty(), "{left:?}");
        assert!(!rows(&session, "SHOW DATABASES").await.contains("d1"));
    }

    #[tokio::test]
    async fn concurrent_alters_both_land() {
        let dir = tempfile::tempdir().unwrap();
        let session = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
        session.sql("CREATE DATABASE d").await.unwrap();
        session.sql("CREATE TABLE d.t (a INT)").await.unwrap();
        let other = PaimonSession::open(dir.path().to_str().unwrap()).await.unwrap();
        let (x, y) = tokio::join!(
            session.sql("ALTER TABLE d.t ADD b INT"),
            other.sql("ALTER TABLE d.t ADD c INT")
        );
        x.unwrap();
        y.unwrap();
        let latest = session.catalog().table_schema("d", "t").await.unwrap().unwrap();
        let mut names: Vec<_> = latest.fields.iter().map(|f| (f.name.clone(), f.id)).collect();
        names.sort();
        assert_eq!(latest.id, 2);
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(latest.highest_field_id, 2);
        // A schema id that exists is never overwritten.
        assert!(!session.catalog().commit_schema("d", "t", &latest).await.unwrap());
    }

    #[test]
    fn other_statements_go_to_datafusion() {
        for sql in [
            "SELECT 1",
            "CREATE VIEW v AS SELECT 1",
            "DROP VIEW v",
            "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION 'x'",
            "SHOW TABLES",
            "INSERT INTO t VALUES (1)",
            "not sql at all '",
        ] {
            assert!(parse(sql, true).unwrap().is_none(), "{sql}");
        }
        assert!(matches!(
            parse("create table t (a int)", true),
            Ok(Some(PaimonStatement::CreateTable(_)))
        ));
        assert!(matches!(
            parse("drop schema if exists d cascade;", true),
            Ok(Some(PaimonStatement::DropDatabase(_)))
        ));
        assert!(parse("CREATE OR REPLACE TABLE t (a INT)", true)
            .unwrap_err()
            .to_string()
            .contains("CREATE OR REPLACE TABLE"));
    }
}
