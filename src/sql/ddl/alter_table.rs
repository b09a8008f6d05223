//! `ALTER TABLE [IF EXISTS] [db.]t <change>`, Flink syntax, each statement one new
//! `schema/schema-<latest+1>` (format.md §2.7):
//!
//! * `SET ('k' = 'v', …)`, `RESET ('k', …)` (also Spark's `SET TBLPROPERTIES` /
//!   `UNSET TBLPROPERTIES`);
//! * `ADD [COLUMN] c TYPE [COMMENT '…'] [FIRST | AFTER x]`, or `ADD (…, …)`;
//! * `RENAME [COLUMN] a TO b`; `DROP [COLUMN] c`, or `DROP (a, b)`;
//! * `MODIFY [COLUMN] c TYPE [COMMENT '…'] [FIRST | AFTER x]`, or `MODIFY (…, …)`;
//! * `RENAME TO [db.]t2`: renames the table itself (a statement of its own, no schema change).
//!
//! The rules are Java's `SchemaManager.generateTableSchema`; the statement has its own grammar
//! because sqlparser has no `RESET` and no Flink nested types.

use std::collections::BTreeMap;

use datafusion::common::{exec_err, plan_err, Result};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::names::resolve_table;
use super::options::{bool_option, check_alter, check_reset};
use super::parser::{not_supported, ColumnSpec, DdlParser, ObjectRef};
use super::types::assign_field_ids;
use super::validate::{normalize_schema, split_list, validate_schema};
use crate::spec::{DataField, DataType, TableSchema, TypeKind};
use crate::sql::PaimonSession;

/// How often a schema change is re-applied when another writer takes the next schema id.
const MAX_ATTEMPTS: usize = 10;

/// A parsed `ALTER TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlterTable {
    pub(crate) name: ObjectRef,
    pub(crate) if_exists: bool,
    pub(crate) changes: Vec<Change>,
}

/// One change; all changes of a statement land in one schema version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    SetOption(String, String),
    ResetOption(String),
    AddColumn(ColumnSpec, Option<Position>),
    RenameColumn(String, String),
    DropColumn(String),
    ModifyColumn(ColumnSpec, Option<Position>),
    /// `RENAME TO [db.]t`: the table itself (no schema change; a statement of its own).
    RenameTable(ObjectRef),
}

/// `FIRST` or `AFTER x`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Position {
    First,
    After(String),
}

/// Parses the statement, from `ALTER` to the end.
pub(crate) fn parse(p: &mut DdlParser) -> Result<AlterTable> {
    p.expect_keyword(Keyword::ALTER)?;
    p.expect_keyword(Keyword::TABLE)?;
    let if_exists = p.keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.object_ref()?;
    let changes = if p.keyword(Keyword::SET) {
        p.keyword(Keyword::TBLPROPERTIES);
        p.option_list()?
            .into_iter()
            .map(|(k, v)| Change::SetOption(k, v))
            .collect()
    } else if p.word("RESET") || p.keywords(&[Keyword::UNSET, Keyword::TBLPROPERTIES]) {
        p.string_list()?.into_iter().map(Change::ResetOption).collect()
    } else if p.keyword(Keyword::ADD) {
        reject_constraint(p)?;
        p.keyword(Keyword::COLUMN);
        one_or_list(p, |p| Ok(Change::AddColumn(p.column()?, position(p)?)))?
    } else if p.keyword(Keyword::MODIFY) {
        p.keyword(Keyword::COLUMN);
        one_or_list(p, |p| Ok(Change::ModifyColumn(p.column()?, position(p)?)))?
    } else if p.keyword(Keyword::RENAME) {
        if p.keyword(Keyword::TO) {
            let to = p.object_ref()?;
            p.expect_end()?;
            return Ok(AlterTable {
                name,
                if_exists,
                changes: vec![Change::RenameTable(to)],
            });
        }
        p.keyword(Keyword::COLUMN);
        let from = p.ident()?;
        p.expect_keyword(Keyword::TO)?;
        vec![Change::RenameColumn(from, p.ident()?)]
    } else if p.keyword(Keyword::DROP) {
        reject_constraint(p)?;
        p.keyword(Keyword::COLUMN);
        one_or_list(p, |p| Ok(Change::DropColumn(p.ident()?)))?
    } else {
        return p.expected("SET, RESET, ADD, MODIFY, RENAME or DROP");
    };
    p.expect_end()?;
    Ok(AlterTable {
        name,
        if_exists,
        changes,
    })
}

/// `item` or `( item, … )`.
fn one_or_list(
    p: &mut DdlParser,
    mut item: impl FnMut(&mut DdlParser) -> Result<Change>,
) -> Result<Vec<Change>> {
    if !p.consume(&Token::LParen) {
        return Ok(vec![item(p)?]);
    }
    let mut out = vec![item(p)?];
    while p.consume(&Token::Comma) {
        out.push(item(p)?);
    }
    p.expect_token(&Token::RParen)?;
    Ok(out)
}

fn position(p: &mut DdlParser) -> Result<Option<Position>> {
    if p.keyword(Keyword::FIRST) {
        return Ok(Some(Position::First));
    }
    if p.keyword(Keyword::AFTER) {
        return Ok(Some(Position::After(p.ident()?)));
    }
    Ok(None)
}

fn reject_constraint(p: &mut DdlParser) -> Result<()> {
    if p.peek_keyword_at(0, Keyword::PRIMARY) || p.peek_keyword_at(0, Keyword::CONSTRAINT) {
        return not_supported("changing the primary key with ALTER TABLE");
    }
    if p.word("WATERMARK") {
        return not_supported("WATERMARK");
    }
    Ok(())
}

/// The next schema version: `old` with `changes` applied, normalized and validated.
///
/// `has_snapshots` switches on the rules for tables with data (semantics.md §11).
pub(crate) fn apply(
    old: &TableSchema,
    changes: &[Change],
    has_snapshots: bool,
    table: &str,
    time_millis: i64,
) -> Result<TableSchema> {
    let mut new = TableSchema {
        version: 3,
        id: old.id + 1,
        time_millis,
        ..old.clone()
    };
    for change in changes {
        match change {
            Change::SetOption(k, v) => set_option(old, &mut new, k, v, has_snapshots)?,
            Change::ResetOption(k) => reset_option(old, &mut new, k, has_snapshots)?,
            Change::AddColumn(c, pos) => add_column(&mut new, c, pos.as_ref(), table)?,
            Change::RenameColumn(from, to) => rename_column(&mut new, from, to, table)?,
            Change::DropColumn(c) => drop_column(&mut new, c, table)?,
            Change::ModifyColumn(c, pos) => modify_column(&mut new, c, pos.as_ref(), table)?,
            Change::RenameTable(_) => {
                return plan_err!(
                    "Renaming table {table} is a statement of its own: ALTER TABLE … RENAME TO …"
                )
            }
        }
    }
    normalize_schema(&mut new, table)?;
    validate_schema(&new, table)?;
    Ok(new)
}

fn set_option(
    old: &TableSchema,
    new: &mut TableSchema,
    key: &str,
    value: &str,
    has_snapshots: bool,
) -> Result<()> {
    if key == "path" {
        return plan_err!("Cannot change option 'path'");
    }
    if old.options.get(key).is_some_and(|v| v == value) {
        return Ok(());
    }
    if key == "type" {
        return plan_err!("Cannot change option 'type'");
    }
    if has_snapshots {
        check_alter(&old.options, key, value)?;
    }
    new.options.insert(key.to_string(), value.to_string());
    Ok(())
}

fn reset_option(old: &TableSchema, new: &mut TableSchema, key: &str, has_snapshots: bool) -> Result<()> {
    if key == "type" {
        return plan_err!("Cannot change option 'type'");
    }
    if has_snapshots {
        check_reset(&old.options, key)?;
    }
    new.options.remove(key);
    Ok(())
}

fn add_column(
    schema: &mut TableSchema,
    column: &ColumnSpec,
    pos: Option<&Position>,
    table: &str,
) -> Result<()> {
    let name = &column.field.name;
    if column.primary_key {
        return not_supported("adding a primary key column with ALTER TABLE");
    }
    if !column.field.data_type.nullable {
        return plan_err!("Column '{name}' cannot be NOT NULL when it is added to table {table}");
    }
    if schema.field(name).is_some() {
        return plan_err!("Column '{name}' already exists in table {table}");
    }
    let mut fields = vec![column.field.clone()];
    assign_field_ids(&mut fields, &mut schema.highest_field_id);
    let field = fields.pop().expect("one field was added");
    let index = match pos {
        Some(p) => target_index(schema, p, table)?,
        None => schema.fields.len(),
    };
    schema.fields.insert(index, field);
    Ok(())
}

fn target_index(schema: &TableSchema, pos: &Position, table: &str) -> Result<usize> {
    match pos {
        Position::First => Ok(0),
        Position::After(r) => match schema.fields.iter().position(|f| f.name == *r) {
            Some(i) => Ok(i + 1),
            None => plan_err!("Column '{r}' does not exist in table {table}"),
        },
    }
}

fn column_index(schema: &TableSchema, name: &str, table: &str) -> Result<usize> {
    match schema.fields.iter().position(|f| f.name == name) {
        Some(i) => Ok(i),
        None => plan_err!("Column '{name}' does not exist in table {table}"),
    }
}

/// Renames keep the field id; the primary key and the options naming the column follow
/// (Java `applyRenameColumnsToOptions`).
fn rename_column(schema: &mut TableSchema, from: &str, to: &str, table: &str) -> Result<()> {
    if schema.partition_keys.iter().any(|k| k == from) {
        return plan_err!("Cannot rename partition column '{from}' of table {table}");
    }
    let index = column_index(schema, from, table)?;
    if schema.field(to).is_some() {
        return plan_err!("Column '{to}' already exists in table {table}");
    }
    schema.fields[index].name = to.to_string();
    for k in &mut schema.primary_keys {
        if k == from {
            *k = to.to_string();
        }
    }
    rename_in_options(&mut schema.options, from, to);
    Ok(())
}

fn rename_in_options(options: &mut BTreeMap<String, String>, from: &str, to: &str) {
    for key in ["bucket-key", "sequence.field"] {
        if let Some(v) = options.get_mut(key) {
            *v = split_list(v)
                .into_iter()
                .map(|c| if c == from { to.to_string() } else { c })
                .collect::<Vec<_>>()
                .join(",");
        }
    }
    let prefix = format!("fields.{from}.");
    let renamed: Vec<String> = options
        .keys()
        .filter(|k| k.starts_with(&prefix))
        .cloned()
        .collect();
    for key in renamed {
        let value = options.remove(&key).expect("key was just listed");
        options.insert(format!("fields.{to}.{}", &key[prefix.len()..]), value);
    }
}

fn drop_column(schema: &mut TableSchema, name: &str, table: &str) -> Result<()> {
    if schema.partition_keys.iter().any(|k| k == name) || schema.primary_keys.iter().any(|k| k == name) {
        return plan_err!(
            "Cannot drop column '{name}' of table {table}: it is a partition or primary key column"
        );
    }
    let index = column_index(schema, name, table)?;
    if schema.fields.len() == 1 {
        return plan_err!("Cannot drop column '{name}': it is the last column of table {table}");
    }
    schema.fields.remove(index);
    Ok(())
}

/// Changes a column's type (keeping its id), comment and/or position. Only changes every
/// stored value survives are allowed (`is_widening`), since readers cast old files.
fn modify_column(
    schema: &mut TableSchema,
    column: &ColumnSpec,
    pos: Option<&Position>,
    table: &str,
) -> Result<()> {
    let name = column.field.name.as_str();
    if column.primary_key {
        return not_supported("changing the primary key with ALTER TABLE");
    }
    let index = column_index(schema, name, table)?;
    let old = schema.fields[index].clone();
    let new_type = &column.field.data_type;
    if !same_type(&old.data_type, new_type) {
        if schema.partition_keys.iter().any(|k| k == name) {
            return plan_err!("Cannot change the type of partition column '{name}' of table {table}");
        }
        if schema.primary_keys.iter().any(|k| k == name) {
            return plan_err!("Cannot change the type of primary key column '{name}' of table {table}");
        }
        if !is_widening(&old.data_type, new_type) {
            return plan_err!("Cannot change column '{name}' of table {table} from {} to {}: only widening type changes are supported", old.data_type, new_type);
        }
    }
    if old.data_type.nullable
        && !new_type.nullable
        && bool_option(&schema.options, "alter-column-null-to-not-null.disabled", true)?
    {
        return plan_err!("Cannot change column '{name}' of table {table} from nullable to NOT NULL");
    }
    let field = DataField {
        id: old.id,
        name: old.name.clone(),
        data_type: DataType {
            nullable: new_type.nullable,
            ..new_type.clone()
        },
        description: column.field.description.clone().or(old.description),
    };
    schema.fields.remove(index);
    let index = match pos {
        Some(p) => target_index(schema, p, table)?,
        None => index,
    };
    schema.fields.insert(index, field);
    Ok(())
}

fn same_type(a: &DataType, b: &DataType) -> bool {
    a.kind == b.kind
}

/// Whether every value of `from` is represented exactly in `to` (atomic types only).
fn is_widening(from: &DataType, to: &DataType) -> bool {
    use TypeKind::*;
    if !from.is_atomic() || !to.is_atomic() {
        return false;
    }
    let int_rank = |k: &TypeKind| match k {
        TinyInt => Some(1),
        SmallInt => Some(2),
        Int => Some(3),
        BigInt => Some(4),
        _ => None,
    };
    let int_digits = |k: &TypeKind| match k {
        TinyInt => 3,
        SmallInt => 5,
        Int => 10,
        _ => 19,
    };
    match (&from.kind, &to.kind) {
        (Binary(_) | VarBinary(_), VarChar(_)) => false,
        (_, VarChar(n)) if *n == i32::MAX as u32 => true,
        (Char(a) | VarChar(a), VarChar(b)) => a <= b,
        (Char(a), Char(b)) | (Binary(a), Binary(b)) => a <= b,
        (Binary(a) | VarBinary(a), VarBinary(b)) => a <= b,
        (Float, Double) => true,
        (
            Decimal {
                precision: p1,
                scale: s1,
            },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s2 >= s1 && (*p2 as i32 - *s2 as i32) >= (*p1 as i32 - *s1 as i32),
        (Time(a), Time(b))
        | (Timestamp(a), Timestamp(b))
        | (LocalZonedTimestamp(a), LocalZonedTimestamp(b)) => a <= b,
        (Date, Timestamp(_)) => true,
        (f, Float | Double) if int_rank(f).is_some() => true,
        (f, Decimal { precision, scale }) if int_rank(f).is_some() => {
            (*precision as i32 - *scale as i32) >= int_digits(f)
        }
        (f, t) => matches!((int_rank(f), int_rank(t)), (Some(a), Some(b)) if a <= b),
    }
}

/// Applies the changes and commits the new schema, re-applying them on the latest schema when
/// another writer created that schema id first.
pub(crate) async fn execute(session: &PaimonSession, stmt: AlterTable) -> Result<()> {
    let name = resolve_table(session, &stmt.name)?;
    let catalog = session.catalog();
    if let [Change::RenameTable(to)] = &stmt.changes[..] {
        // Flink and Spark: an unqualified new name stays in the table's database
        let to = match to.parts.len() {
            1 => super::names::TableName {
                database: name.database.clone(),
                table: to.parts[0].clone(),
            },
            _ => resolve_table(session, to)?,
        };
        if stmt.if_exists && catalog.table_schema(&name.database, &name.table).await?.is_none() {
            return Ok(());
        }
        return catalog
            .rename_table((&name.database, &name.table), (&to.database, &to.table))
            .await;
    }
    for _ in 0..MAX_ATTEMPTS {
        let Some(old) = catalog.table_schema(&name.database, &name.table).await? else {
            return if stmt.if_exists {
                Ok(())
            } else {
                plan_err!("Table {name} does not exist")
            };
        };
        let has_snapshots = catalog.table_has_snapshots(&name.database, &name.table).await?;
        let now = chrono::Utc::now().timestamp_millis();
        let new = apply(&old, &stmt.changes, has_snapshots, &name.to_string(), now)?;
        if catalog.commit_schema(&name.database, &name.table, &new).await? {
            return Ok(());
        }
    }
    exec_err!("Cannot alter table {name}: other writers changed its schema {MAX_ATTEMPTS} times in a row")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::create_table;

    fn create(sql: &str) -> TableSchema {
        let stmt = create_table::parse(&mut DdlParser::new(sql, true).unwrap()).unwrap();
        create_table::build_schema(&stmt, "default.t", 1).unwrap()
    }

    fn alter(old: &TableSchema, sql: &str, has_snapshots: bool) -> Result<TableSchema> {
        let stmt = parse(&mut DdlParser::new(sql, true)?)?;
        apply(old, &stmt.changes, has_snapshots, "default.t", 2)
    }

    fn base() -> TableSchema {
        create("CREATE TABLE t (k INT, v STRING, p STRING, st ROW<x INT>, PRIMARY KEY (k, p) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '2')")
    }

    #[test]
    fn add_column_allocates_after_highest_field_id() {
        let s = alter(
            &base(),
            "ALTER TABLE t ADD (c ROW<y INT, z INT>, d INT AFTER k)",
            false,
        )
        .unwrap();
        assert_eq!(s.id, 1);
        let ids: Vec<(String, i32)> = s.fields.iter().map(|f| (f.name.clone(), f.id)).collect();
        assert_eq!(
            ids,
            [("k", 0), ("d", 8), ("v", 1), ("p", 2), ("st", 3), ("c", 5)].map(|(n, i)| (n.to_string(), i))
        );
        assert_eq!(s.highest_field_id, 8);
        let err = alter(&base(), "ALTER TABLE t ADD c INT NOT NULL", false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("'c'"), "{err}");
        assert!(alter(&base(), "ALTER TABLE t ADD COLUMN v INT", false).is_err());
    }

    #[test]
    fn rename_keeps_id_and_follows_keys_and_options() {
        let old = create("CREATE TABLE t (k INT, v INT, s INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '2', 'bucket-key' = 'k', 'sequence.field' = 's', 'merge-engine' = 'aggregation', 'fields.v.aggregate-function' = 'sum')");
        let s = alter(&old, "ALTER TABLE t RENAME COLUMN k TO id", true).unwrap();
        assert_eq!((s.fields[0].id, s.fields[0].name.as_str()), (0, "id"));
        assert_eq!(s.primary_keys, ["id"]);
        assert_eq!(s.options["bucket-key"], "id");
        let s = alter(&s, "ALTER TABLE t RENAME v TO w", true).unwrap();
        assert_eq!(
            s.options.get("fields.w.aggregate-function").map(String::as_str),
            Some("sum")
        );
        assert!(!s.options.contains_key("fields.v.aggregate-function"));
        assert!(alter(&base(), "ALTER TABLE t RENAME COLUMN p TO q", false).is_err());
        assert!(alter(&base(), "ALTER TABLE t RENAME COLUMN v TO k", false).is_err());
    }

    #[test]
    fn drop_column_rules() {
        let s = alter(&base(), "ALTER TABLE t DROP COLUMN v", false).unwrap();
        assert_eq!(
            s.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["k", "p", "st"]
        );
        assert_eq!(s.highest_field_id, 4);
        for sql in [
            "ALTER TABLE t DROP k",
            "ALTER TABLE t DROP (p)",
            "ALTER TABLE t DROP nope",
        ] {
            assert!(alter(&base(), sql, false).is_err(), "{sql}");
        }
    }

    #[test]
    fn options_of_tables_with_data() {
        let old = base();
        let s = alter(
            &old,
            "ALTER TABLE t SET ('write-only' = 'true', 'bucket' = '4')",
            true,
        )
        .unwrap();
        assert_eq!(
            (s.options["write-only"].as_str(), s.options["bucket"].as_str()),
            ("true", "4")
        );
        let s = alter(&s, "ALTER TABLE t RESET ('write-only')", true).unwrap();
        assert!(!s.options.contains_key("write-only"));
        for sql in [
            "ALTER TABLE t SET ('bucket' = '-1')",
            "ALTER TABLE t RESET ('bucket')",
            "ALTER TABLE t SET ('merge-engine' = 'first-row')",
            "ALTER TABLE t SET ('bucket' = '0')",
            "ALTER TABLE t SET ('changelog-producer' = 'x')",
        ] {
            assert!(alter(&old, sql, true).is_err(), "{sql}");
        }
        // Without data Java lets the merge engine change.
        assert!(alter(&old, "ALTER TABLE t SET ('merge-engine' = 'first-row')", false).is_ok());
    }

    #[test]
    fn modify_only_widens() {
        let old = create(
            "CREATE TABLE t (k INT, a INT, b VARCHAR(10), c DECIMAL(10, 2), PRIMARY KEY (k) NOT ENFORCED)",
        );
        let s = alter(
            &old,
            "ALTER TABLE t MODIFY (a BIGINT COMMENT 'wider', b STRING, c DECIMAL(12, 2))",
            false,
        )
        .unwrap();
        assert_eq!(s.fields[1].data_type.to_string(), "BIGINT");
        assert_eq!(s.fields[1].id, 1);
        assert_eq!(s.fields[1].description.as_deref(), Some("wider"));
        assert_eq!(s.fields[2].data_type.to_string(), "STRING");
        for sql in [
            "ALTER TABLE t MODIFY a SMALLINT",
            "ALTER TABLE t MODIFY k BIGINT",
            "ALTER TABLE t MODIFY a INT NOT NULL",
            "ALTER TABLE t MODIFY c DECIMAL(10, 3)",
        ] {
            assert!(alter(&old, sql, false).is_err(), "{sql}");
        }
    }
}
