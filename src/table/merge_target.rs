//! The target of a `MERGE INTO` (`sql::merge`): a table provider DataFusion inserts the
//! statement's rows into, with the table's columns and one more, each row's kind (+I, +U, -D).
//! Its sink writes them like any write to the table, in one commit.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{not_impl_err, plan_err, Result};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::writes::check_row_level_dml;
use super::PaimonTable;
use crate::write::{WriteKind, MERGE_KIND_COLUMN};

/// A primary-key table as the target of one MERGE.
#[derive(Debug)]
pub(crate) struct MergeTarget {
    table: PaimonTable,
    schema: SchemaRef,
}

impl PaimonTable {
    /// The schema this table is read with.
    pub(crate) fn schema_ref(&self) -> &crate::spec::TableSchema {
        &self.schema
    }

    /// This table as the target of a MERGE whose clauses update rows (`updates`) or delete
    /// them (`deletes`): refused where our UPDATE or DELETE would be (the merge engine), and
    /// for append tables.
    pub(crate) fn merge_target(&self, updates: bool, deletes: bool) -> Result<MergeTarget> {
        if self.view != crate::scan::ReadView::Table || self.read_optimized {
            return plan_err!("Cannot MERGE INTO system table {}", self.name);
        }
        if !self.schema.has_primary_key() {
            return not_impl_err!(
                "MERGE INTO append table {} is not supported yet: only primary-key tables",
                self.name
            );
        }
        if updates {
            check_row_level_dml(&self.name, &self.schema, &WriteKind::Update)?;
        }
        if deletes {
            check_row_level_dml(&self.name, &self.schema, &WriteKind::Delete)?;
        }
        let mut fields: Vec<Field> = self
            .arrow_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        fields.push(Field::new(MERGE_KIND_COLUMN, DataType::Int8, false));
        Ok(MergeTarget {
            table: self.clone(),
            schema: Arc::new(Schema::new(fields)),
        })
    }
}

#[async_trait]
impl TableProvider for MergeTarget {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan_err!(
            "The MERGE target of table {} is written, never read",
            self.table.name
        )
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let sink = self.table.sink(WriteKind::Merge).await?;
        Ok(Arc::new(DataSinkExec::new(input, sink as _, None)))
    }
}
