//! `MERGE INTO` with Spark's syntax and semantics (Paimon's `MergeIntoPaimonTable`), for
//! primary-key and append tables:
//!
//! ```sql
//! MERGE INTO target [AS t] USING source [AS s] ON cond
//!   WHEN MATCHED [AND cond] THEN UPDATE SET c = e, ... | UPDATE SET * | DELETE
//!   WHEN NOT MATCHED [BY TARGET] [AND cond] THEN INSERT (c, ...) VALUES (e, ...) | INSERT *
//!   WHEN NOT MATCHED BY SOURCE [AND cond] THEN UPDATE SET ... | DELETE
//! ```
//!
//! The statement becomes one query DataFusion plans: the source joined with the target
//! (inner, left or full as the clauses need), each joined row given the first clause whose
//! condition holds, and for each row the table's columns as that clause sets them plus the row's
//! kind: `+U` for an update (the whole new row), `-D` for a delete (the stored row), `+I` for an
//! insert. The rows go to the table's sink ([`crate::table::MergeTarget`]), which writes them as
//! any write, in one commit: the merge engine and changelog producer apply as usual.
//!
//! A target row that more than one source row matches is an error naming the table (Spark's
//! rule), raised while the rows are read, before anything is committed.
//!
//! An append table whose rows the clauses change is read with each row's address (its file and
//! position, `write::merge_append`): the sink rewrites the files holding rows a clause takes,
//! or marks those rows in deletion vectors. When `ON` compares a primary key, the join's dynamic
//! filter narrows the target's scan to the source's keys (`scan::runtime_filter`).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{plan_datafusion_err, plan_err, Result, TableReference};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{cast, col, DmlStatement, LogicalPlan, WriteOp};
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Expr as SqlExpr, Merge, MergeAction, MergeClauseKind, MergeInsertKind, ObjectName,
    Statement, TableFactor,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use super::PaimonSession;
use crate::table::PaimonTable;
use crate::write::{MERGE_KIND_COLUMN, ROW_ADDRESS_COLUMN};

/// What `UPDATE SET *` and `INSERT *` become before parsing (the SQL parser knows neither).
const STAR: &str = "__paimon_merge_star";
/// Marks a row of the source, and of the target, in the join.
const IN_SOURCE: &str = "__paimon_in_source";
const IN_TARGET: &str = "__paimon_in_target";
/// The kind of a target row a copy-on-write MERGE keeps as it is (not a Paimon row kind).
pub(crate) const KEEP: i8 = 99;
/// The function that fails a MERGE whose target row more than one source row matches.
use crate::write::MERGE_CARDINALITY_CHECK as CARDINALITY_CHECK;

/// Whether `sql` is a MERGE statement.
pub(crate) fn is_merge(sql: &str) -> bool {
    let dialect = GenericDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize() else {
        return false;
    };
    tokens
        .iter()
        .find(|t| !matches!(t, Token::Whitespace(_)))
        .is_some_and(|t| matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case("MERGE")))
}

/// `EXPLAIN [ANALYZE] [VERBOSE] MERGE ...`: the MERGE and the options, if `sql` is that.
pub(crate) fn explained_merge(sql: &str) -> Option<(&str, bool, bool)> {
    let mut rest = sql.trim_start();
    let take = |rest: &mut &str, word: &str| -> bool {
        let head = rest.get(..word.len());
        let boundary = rest[word.len().min(rest.len())..].starts_with(char::is_whitespace);
        if head.is_some_and(|h| h.eq_ignore_ascii_case(word)) && boundary {
            *rest = rest[word.len()..].trim_start();
            true
        } else {
            false
        }
    };
    if !take(&mut rest, "EXPLAIN") {
        return None;
    }
    let analyze = take(&mut rest, "ANALYZE");
    let verbose = take(&mut rest, "VERBOSE");
    is_merge(rest).then_some((rest, analyze, verbose))
}

/// `sql` with Spark's `UPDATE SET *` and `INSERT *` spelled so the parser takes them.
fn expand_stars(sql: &str) -> Result<String> {
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize()
        .map_err(|e| plan_datafusion_err!("{e}"))?;
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.value.eq_ignore_ascii_case(w));
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|i| !matches!(tokens[*i], Token::Whitespace(_)))
        .collect();
    let mut replace: Vec<(usize, String)> = Vec::new();
    for (n, &i) in significant.iter().enumerate() {
        let next = |k: usize| significant.get(n + k).map(|&j| &tokens[j]);
        if word(&tokens[i], "UPDATE")
            && next(1).is_some_and(|t| word(t, "SET"))
            && next(2) == Some(&Token::Mul)
        {
            replace.push((significant[n + 2], format!("{STAR} = {STAR}")));
        } else if word(&tokens[i], "INSERT") && next(1) == Some(&Token::Mul) {
            replace.push((significant[n + 1], format!("({STAR}) VALUES ({STAR})")));
        }
    }
    Ok(tokens
        .iter()
        .enumerate()
        .map(|(i, t)| match replace.iter().find(|(at, _)| *at == i) {
            Some((_, text)) => text.clone(),
            None => t.to_string(),
        })
        .collect())
}

fn last_ident(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_else(|| name.to_string())
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// One WHEN clause as SQL: when it applies, and what each table column becomes.
struct Clause {
    /// The condition on a joined row (the clause kind's and its own).
    when: String,
    /// The row kind it writes.
    kind: i8,
    /// Per table column, its value (SQL).
    values: Vec<String>,
}

/// Plans `sql`, a MERGE statement; the DataFrame runs it (and commits) when collected.
pub(crate) async fn plan(session: &PaimonSession, sql: &str) -> Result<DataFrame> {
    let text = expand_stars(sql)?;
    let statement = Parser::new(&GenericDialect {})
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_statement())
        .map_err(|e| plan_datafusion_err!("MERGE: {e}"))?;
    let Statement::Merge(merge) = statement else {
        return plan_err!("Not a MERGE statement: {sql}");
    };
    let Merge {
        table,
        source,
        on,
        clauses,
        output,
        ..
    } = merge;
    if output.is_some() {
        return plan_err!("MERGE ... OUTPUT is not supported");
    }
    let TableFactor::Table {
        name: target_name,
        alias: target_alias,
        ..
    } = &table
    else {
        return plan_err!("MERGE INTO needs a table as its target, got {table}");
    };
    let ctx = session.context();
    let provider = ctx
        .table_provider(TableReference::from(target_name.to_string()))
        .await?;
    let target = (provider.as_ref() as &dyn std::any::Any)
        .downcast_ref::<PaimonTable>()
        .ok_or_else(|| plan_datafusion_err!("MERGE INTO needs a Paimon table, {target_name} is not one"))?;
    let t = target_alias
        .as_ref()
        .map(|a| a.name.value.clone())
        .unwrap_or_else(|| last_ident(target_name));
    // `AS s(a, b)` renames the source's columns
    let renamed = |alias: &Option<datafusion::sql::sqlparser::ast::TableAlias>| match alias {
        Some(a) if !a.columns.is_empty() => {
            let columns: Vec<String> = a.columns.iter().map(|c| c.to_string()).collect();
            format!("({})", columns.join(", "))
        }
        _ => String::new(),
    };
    let (source_sql, s) = match &source {
        TableFactor::Table { name, alias, .. } => (
            match renamed(alias).as_str() {
                "" => name.to_string(),
                columns => format!("{name} AS __paimon_merge_source{columns}"),
            },
            alias
                .as_ref()
                .map(|a| a.name.value.clone())
                .unwrap_or_else(|| last_ident(name)),
        ),
        TableFactor::Derived { subquery, alias, .. } => (
            format!("({subquery}) AS __paimon_merge_source{}", renamed(alias)),
            alias
                .as_ref()
                .map(|a| a.name.value.clone())
                .ok_or_else(|| plan_datafusion_err!("MERGE: a subquery source needs an alias"))?,
        ),
        other => return plan_err!("MERGE: unsupported source {other}"),
    };
    let schema = provider.schema();
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let pk: Vec<String> = target.schema_ref().primary_keys.clone();
    let partial = matches!(
        target.engine_kind(),
        crate::spec::MergeEngine::PartialUpdate | crate::spec::MergeEngine::Aggregation
    );
    let source_columns: Vec<String> = ctx
        .sql(&format!("SELECT * FROM {source_sql} LIMIT 0"))
        .await?
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();

    let (qt, qs) = (quoted(&t), quoted(&s));
    let matched = format!("({qt}.{IN_TARGET} AND {qs}.{IN_SOURCE})");
    let not_matched = format!("({qt}.{IN_TARGET} IS NULL)");
    let not_matched_by_source = format!("({qs}.{IN_SOURCE} IS NULL)");
    let target_value = |c: &str| format!("{qt}.{}", quoted(c));
    let source_value = |c: &str| -> Result<String> {
        if source_columns.iter().any(|x| x == c) {
            Ok(format!("{qs}.{}", quoted(c)))
        } else {
            plan_err!(
                "MERGE INTO {}: source {s} has no column '{c}' for '*'",
                target_name
            )
        }
    };
    let (mut deletes, mut by_source, mut by_target, mut any_matched) = (false, false, false, false);
    let mut planned: Vec<Clause> = Vec::new();
    for clause in &clauses {
        let scope = match clause.clause_kind {
            MergeClauseKind::Matched => {
                any_matched = true;
                &matched
            }
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => {
                by_target = true;
                &not_matched
            }
            MergeClauseKind::NotMatchedBySource => {
                by_source = true;
                &not_matched_by_source
            }
        };
        let when = match &clause.predicate {
            Some(p) => format!("{scope} AND ({p})"),
            None => scope.clone(),
        };
        let inserting = matches!(
            clause.clause_kind,
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget
        );
        let (kind, values) = match &clause.action {
            MergeAction::Delete { .. } if !inserting => {
                deletes = true;
                (
                    crate::spec::row_kind::DELETE,
                    columns.iter().map(|c| target_value(c)).collect(),
                )
            }
            MergeAction::Update(update) if !inserting => {
                // partial-update and aggregation take the columns set (the others NULL, which
                // they leave as stored); other engines the whole new row
                let mut values: Vec<String> = columns
                    .iter()
                    .map(|c| match partial && !pk.contains(c) {
                        true => "NULL".to_string(),
                        false => target_value(c),
                    })
                    .collect();
                for assignment in &update.assignments {
                    let AssignmentTarget::ColumnName(name) = &assignment.target else {
                        return plan_err!("MERGE INTO {target_name}: tuple assignments are not supported");
                    };
                    let column = last_ident(name);
                    if column == STAR {
                        if clause.clause_kind == MergeClauseKind::NotMatchedBySource {
                            return plan_err!("MERGE INTO {target_name}: UPDATE SET * needs a source row");
                        }
                        for (i, c) in columns.iter().enumerate() {
                            values[i] = source_value(c)?;
                        }
                        continue;
                    }
                    let Some(i) = columns.iter().position(|c| c.eq_ignore_ascii_case(&column)) else {
                        return plan_err!("MERGE INTO {target_name}: no column '{column}' to SET");
                    };
                    if pk.contains(&columns[i]) || target.schema_ref().partition_keys.contains(&columns[i]) {
                        return plan_err!(
                            "MERGE INTO {target_name}: cannot update primary key or partition column '{}'",
                            columns[i]
                        );
                    }
                    values[i] = format!("({})", assignment.value);
                }
                if update.update_predicate.is_some() || update.delete_predicate.is_some() {
                    return plan_err!("MERGE INTO {target_name}: UPDATE ... WHERE is not supported");
                }
                (crate::spec::row_kind::UPDATE_AFTER, values)
            }
            MergeAction::Insert(insert) if inserting => {
                let mut values: Vec<String> = vec!["NULL".to_string(); columns.len()];
                let exprs: Vec<&SqlExpr> = match &insert.kind {
                    MergeInsertKind::Values(v) if v.rows.len() == 1 => v.rows[0].iter().collect(),
                    _ => return plan_err!("MERGE INTO {target_name}: INSERT takes one VALUES row"),
                };
                let named: Vec<String> = insert.columns.iter().map(last_ident).collect();
                if named.len() == 1 && named[0] == STAR {
                    for (i, c) in columns.iter().enumerate() {
                        values[i] = source_value(c)?;
                    }
                } else {
                    let names: Vec<String> = if named.is_empty() { columns.clone() } else { named };
                    if names.len() != exprs.len() {
                        return plan_err!(
                            "MERGE INTO {target_name}: INSERT names {} columns but gives {} values",
                            names.len(),
                            exprs.len()
                        );
                    }
                    for (name, expr) in names.iter().zip(exprs) {
                        let Some(i) = columns.iter().position(|c| c.eq_ignore_ascii_case(name)) else {
                            return plan_err!("MERGE INTO {target_name}: no column '{name}' to INSERT");
                        };
                        values[i] = format!("({expr})");
                    }
                }
                (crate::spec::row_kind::INSERT, values)
            }
            action => {
                return plan_err!(
                    "MERGE INTO {target_name}: WHEN {} cannot {}",
                    clause.clause_kind,
                    match action {
                        MergeAction::Insert(_) => "INSERT",
                        MergeAction::Update(_) => "UPDATE",
                        MergeAction::Delete { .. } => "DELETE",
                    }
                )
            }
        };
        planned.push(Clause { when, kind, values });
    }
    if planned.is_empty() {
        return plan_err!("MERGE INTO {target_name} has no WHEN clause");
    }
    // An append table without MATCHED or NOT MATCHED BY SOURCE clauses only gains rows; any
    // other MERGE into it changes rows where they are (copy-on-write or deletion vectors).
    let append = !target.schema_ref().has_primary_key();
    let rewrite = append && (any_matched || by_source);
    let merge_target = target.merge_target(deletes, rewrite).await?;

    // the join the clauses need: every target row when the content is rewritten or for NOT
    // MATCHED BY SOURCE, unmatched source rows only for NOT MATCHED
    let join = match (by_source || rewrite, by_target) {
        (true, true) => "FULL OUTER JOIN",
        (true, false) => "RIGHT JOIN",
        (false, true) => "LEFT JOIN",
        (false, false) => "INNER JOIN",
    };
    let choice = {
        let arms: Vec<String> = planned
            .iter()
            .enumerate()
            .map(|(i, c)| format!("WHEN {} THEN {i}", c.when))
            .collect();
        format!("CASE {} END", arms.join(" "))
    };
    // a rewrite keeps every target row no clause takes, as it is
    let keep_value = |c: &str| match rewrite {
        true => format!(" ELSE {}", target_value(c)),
        false => String::new(),
    };
    let keep_kind = match rewrite {
        true => format!(" ELSE {KEEP}"),
        false => String::new(),
    };
    let mut select: Vec<String> = Vec::new();
    for (i, c) in columns.iter().enumerate() {
        let arms: Vec<String> = planned
            .iter()
            .enumerate()
            .map(|(k, clause)| format!("WHEN {k} THEN {}", clause.values[i]))
            .collect();
        select.push(format!(
            "CASE {choice} {}{} END AS {}",
            arms.join(" "),
            keep_value(c),
            quoted(c)
        ));
    }
    let kinds: Vec<String> = planned
        .iter()
        .enumerate()
        .map(|(k, clause)| format!("WHEN {k} THEN {}", clause.kind))
        .collect();
    select.push(format!(
        "CASE {choice} {}{keep_kind} END AS {MERGE_KIND_COLUMN}",
        kinds.join(" ")
    ));
    // A changing append table's rows come with their addresses in the files read (the sink
    // rewrites their files or marks them deleted), just before the kind.
    let addressed = merge_target.addressed_rows();
    if addressed.is_some() {
        select.insert(
            select.len() - 1,
            format!("{qt}.{ROW_ADDRESS_COLUMN} AS {ROW_ADDRESS_COLUMN}"),
        );
    }
    // A target row: its primary key, or (append tables) its address.
    let row_id: Vec<String> = match append {
        true => vec![format!("{qt}.{ROW_ADDRESS_COLUMN}")],
        false => pk.iter().map(|c| target_value(c)).collect(),
    };
    // Spark's rule: a target row matched by two source rows fails the statement (each match
    // counts, whether a clause takes it or not)
    select.push(match any_matched {
        true => format!(
            "CASE WHEN {matched} THEN count({qs}.{IN_SOURCE}) OVER (PARTITION BY {}) END AS __paimon_merge_matches",
            row_id.join(", ")
        ),
        false => "CAST(NULL AS BIGINT) AS __paimon_merge_matches".to_string(),
    });
    // Which joined rows the statement writes: those a clause takes, and in a rewrite every
    // target row. The filter runs over the joined rows with their counts: the cardinality
    // check counts every match, taken by a clause or not (Spark's rule).
    select.push(format!("({choice}) IS NOT NULL AS __paimon_merge_taken"));
    let mut filter = "__paimon_merge_taken".to_string();
    if rewrite {
        select.push(format!(
            "row_number() OVER (PARTITION BY {}) AS __paimon_merge_copy",
            row_id.join(", ")
        ));
        select.push(format!(
            "{qt}.{IN_TARGET} IS NOT NULL AS __paimon_merge_target_row"
        ));
        // copy-on-write: every row of a file some clause changes, since the file is rewritten
        // (a file's number is its rows' address shifted right 32 bits)
        if !merge_target.marks_rows() {
            select.push(format!(
                "bool_or(({choice}) IS NOT NULL) OVER (PARTITION BY {qt}.{ROW_ADDRESS_COLUMN} / 4294967296) AS __paimon_merge_file_touched"
            ));
            filter = format!("({filter} OR (__paimon_merge_target_row AND __paimon_merge_file_touched))");
        }
    }
    // (registered for the planning of this statement only, under a name no one else uses)
    let target_rows = match &addressed {
        Some(_) => format!("__paimon_merge_target_{}", uuid::Uuid::new_v4().simple()),
        None => target_name.to_string(),
    };
    // (the check is the filter itself, so it sees every joined row before any is dropped)
    let query = format!(
        "SELECT * FROM (SELECT {} FROM (SELECT *, TRUE AS {IN_SOURCE} FROM {source_sql}) AS {qs} {join} \
         (SELECT *, TRUE AS {IN_TARGET} FROM {}) AS {qt} ON {on}) AS __paimon_merge_rows \
         WHERE {CARDINALITY_CHECK}(__paimon_merge_matches, {filter}, {})",
        select.join(", "),
        match addressed {
            Some(_) => quoted(&target_rows),
            None => target_rows.clone(),
        },
        quoted_literal(&target_name.to_string()),
    );
    ctx.register_udf(crate::write::merge_cardinality_udf().as_ref().clone());
    let rows = match addressed {
        Some(provider) => {
            let name = TableReference::bare(target_rows.as_str());
            ctx.register_table(name.clone(), provider)?;
            let planned = ctx.sql(&query).await;
            ctx.deregister_table(name)?;
            planned?
        }
        None => ctx.sql(&query).await?,
    };
    // the table's columns in its types, then the kind
    let mut exprs: Vec<datafusion::logical_expr::Expr> = schema
        .fields()
        .iter()
        .map(|f| {
            cast(
                col(datafusion::common::Column::from_name(f.name())),
                f.data_type().clone(),
            )
            .alias(f.name())
        })
        .collect();
    if rewrite {
        exprs.push(col(datafusion::common::Column::from_name(ROW_ADDRESS_COLUMN)));
    }
    exprs.push(
        cast(
            col(datafusion::common::Column::from_name(MERGE_KIND_COLUMN)),
            DataType::Int8,
        )
        .alias(MERGE_KIND_COLUMN),
    );
    let rows = if rewrite {
        use datafusion::logical_expr::lit;
        let copy = col(datafusion::common::Column::from_name("__paimon_merge_copy"));
        let source_only = col(datafusion::common::Column::from_name(MERGE_KIND_COLUMN))
            .eq(lit(crate::spec::row_kind::INSERT as i64));
        rows.filter(copy.eq(lit(1u64)).or(source_only))?
    } else {
        rows
    };
    let input = rows.select(exprs)?.into_unoptimized_plan();
    let mut dml = DmlStatement::new(
        TableReference::from(target_name.to_string()),
        provider_as_source(Arc::new(merge_target)),
        WriteOp::Insert(InsertOp::Append),
        Arc::new(input),
    );
    // Spark's four counts, not DML's one (`table::merge_target::MergeSinkExec`)
    dml.output_schema = crate::table::merge_target::merge_output_schema()?;
    Ok(DataFrame::new(ctx.state(), LogicalPlan::Dml(dml)))
}

fn quoted_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_are_spelled_for_the_parser() {
        let sql = "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *";
        let out = expand_stars(sql).unwrap();
        assert!(out.contains(&format!("UPDATE SET {STAR} = {STAR}")), "{out}");
        assert!(out.contains(&format!("INSERT ({STAR}) VALUES ({STAR})")), "{out}");
        // a string holding the same words is left alone
        let sql = "MERGE INTO t USING s ON t.v = 'UPDATE SET *' WHEN MATCHED THEN DELETE";
        assert_eq!(expand_stars(sql).unwrap(), sql);
        assert!(is_merge(
            "  merge into t using s on true when matched then delete"
        ));
        let explained =
            explained_merge("EXPLAIN ANALYZE MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE");
        assert_eq!(explained.map(|(_, a, v)| (a, v)), Some((true, false)));
        assert!(explained_merge("EXPLAIN SELECT 1").is_none());
        assert!(!is_merge("SELECT 1"));
    }
}
