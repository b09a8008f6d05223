//! `INSERT INTO|OVERWRITE [TABLE] t PARTITION (p = v, ...) <query>`: Flink's static partition
//! inserts, which DataFusion's planner does not support. The query supplies the other columns
//! in table order (for INSERT INTO, partition columns left out of the spec included, as Flink's
//! dynamic partitions); INSERT INTO appends, INSERT OVERWRITE replaces partitions in one
//! OVERWRITE commit: those the rows go to, or with `dynamic-partition-overwrite` off, those
//! the spec matches (`PaimonTable::overwrite_partition`).

use std::any::Any;

use datafusion::common::{plan_datafusion_err, plan_err, Result, ScalarValue};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{cast, col, lit};
use datafusion::physical_plan::collect;
use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr as SqlExpr, Statement, TableObject};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::PaimonSession;
use crate::table::PaimonTable;

/// A parsed static-partition insert.
pub(crate) struct PartitionInsert {
    overwrite: bool,
    table: String,
    spec: Vec<(String, String)>,
    query: String,
}

/// Recognises the statement; `None` for anything else (including inserts without PARTITION,
/// which DataFusion plans through `insert_into`, and column lists, which it refuses).
pub(crate) fn parse(sql: &str) -> Option<PartitionInsert> {
    let head: String = sql
        .trim_start()
        .chars()
        .take(16)
        .collect::<String>()
        .to_ascii_uppercase();
    if !head.starts_with("INSERT") || !sql.to_ascii_uppercase().contains("PARTITION") {
        return None;
    }
    let mut statements = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    let Some(Statement::Insert(insert)) = statements.pop() else {
        return None;
    };
    let overwrite = insert.overwrite;
    let (true, Some(partitioned), Some(source), TableObject::TableName(name)) = (
        insert.columns.is_empty(),
        insert.partitioned,
        insert.source,
        insert.table,
    ) else {
        return None;
    };
    let spec = partitioned
        .iter()
        .map(|e| match e {
            SqlExpr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => match left.as_ref() {
                SqlExpr::Identifier(id) => Some((id.value.clone(), right.to_string())),
                _ => None,
            },
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PartitionInsert {
        overwrite,
        table: name.to_string(),
        spec,
        query: source.to_string(),
    })
}

/// Plans and runs the insert; returns the written row count as DataFusion's DML does.
pub(crate) async fn execute(session: &PaimonSession, stmt: PartitionInsert) -> Result<DataFrame> {
    let ctx = session.context();
    let provider = ctx.table_provider(stmt.table.as_str()).await?;
    let table = (provider.as_ref() as &dyn Any)
        .downcast_ref::<PaimonTable>()
        .ok_or_else(|| {
            plan_datafusion_err!(
                "INSERT ... PARTITION needs a Paimon table, {} is not one",
                stmt.table
            )
        })?;
    let mut spec: Vec<(String, ScalarValue)> = Vec::new();
    for (name, literal) in &stmt.spec {
        let batches = ctx.sql(&format!("SELECT {literal}")).await?.collect().await?;
        let value = ScalarValue::try_from_array(batches[0].column(0), 0)?;
        spec.push((name.clone(), value));
    }
    let table_schema = provider.schema();
    let source = ctx.sql(&stmt.query).await?;
    let free: Vec<_> = table_schema
        .fields()
        .iter()
        .filter(|f| !spec.iter().any(|(k, _)| k == f.name()))
        .collect();
    let source_columns: Vec<String> = source
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if source_columns.len() != free.len() {
        return plan_err!(
            "INSERT ... {} PARTITION expects {} columns from the query (the columns the PARTITION clause does not give), got {}",
            stmt.table,
            free.len(),
            source_columns.len()
        );
    }
    let mut next = source_columns.iter();
    let exprs = table_schema
        .fields()
        .iter()
        .map(|f| {
            let value = match spec.iter().find(|(k, _)| k == f.name()) {
                Some((_, v)) => lit(v.clone()),
                None => col(datafusion::common::Column::from_name(
                    next.next().expect("counts checked"),
                )),
            };
            cast(value, f.data_type().clone()).alias(f.name())
        })
        .collect::<Vec<_>>();
    let input = source.select(exprs)?.create_physical_plan().await?;
    let plan = match stmt.overwrite {
        true => table.overwrite_partition(input, &spec).await?,
        false => {
            provider
                .insert_into(&ctx.state(), input, InsertOp::Append)
                .await?
        }
    };
    let batches = collect(plan, ctx.task_ctx()).await?;
    super::result_frame::result_frame(ctx, &batches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_static_partition_inserts_only() {
        let p = parse("INSERT OVERWRITE t PARTITION (dt = '2024-01-01') SELECT 1, 'a'").unwrap();
        assert!(p.overwrite);
        assert_eq!(p.table, "t");
        assert_eq!(p.spec, vec![("dt".to_string(), "'2024-01-01'".to_string())]);
        let p = parse("INSERT INTO t PARTITION (dt = '2024-01-01') SELECT 1, 'a'").unwrap();
        assert!(!p.overwrite);
        assert!(parse("INSERT OVERWRITE t SELECT 1").is_none());
        assert!(parse("INSERT INTO t VALUES (1)").is_none());
        assert!(parse("INSERT INTO t PARTITION (dt = 'x') (k) SELECT 1").is_none());
    }
}
