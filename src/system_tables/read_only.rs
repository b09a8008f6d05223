//! `ReadOnlyTable`: wraps the provider of every metadata system table. It scans through and refuses INSERT, DELETE, UPDATE and TRUNCATE with an error naming the table (DataFusion's
//! `MemTable` would otherwise accept them and change only its own copy).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{plan_err, Result};
use datafusion::datasource::TableType;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

/// A read-only system table.
#[derive(Debug)]
pub(crate) struct ReadOnlyTable {
    name: String,
    inner: Arc<dyn TableProvider>,
}

impl ReadOnlyTable {
    pub(crate) fn new(name: String, inner: Arc<dyn TableProvider>) -> Self {
        ReadOnlyTable { name, inner }
    }

    /// The table's name and rows when they are in memory (every metadata table is: it was
    /// read at planning time), so a distributed plan can carry them to the cluster.
    pub(crate) fn rows(&self) -> Option<(&str, SchemaRef, Vec<arrow::array::RecordBatch>)> {
        let memory = self.inner.downcast_ref::<datafusion::datasource::MemTable>()?;
        let mut batches = Vec::new();
        for partition in &memory.batches {
            batches.extend(partition.try_read().ok()?.iter().cloned());
        }
        Some((&self.name, self.inner.schema(), batches))
    }

    fn refuse<T>(&self) -> Result<T> {
        plan_err!(
            "Cannot write to system table {}: system tables are read-only",
            self.name
        )
    }
}

#[async_trait]
impl TableProvider for ReadOnlyTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.scan(state, projection, filters, limit).await
    }

    async fn insert_into(
        &self,
        _: &dyn Session,
        _: Arc<dyn ExecutionPlan>,
        _: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.refuse()
    }

    async fn delete_from(&self, _: &dyn Session, _: Vec<Expr>) -> Result<Arc<dyn ExecutionPlan>> {
        self.refuse()
    }

    async fn update(
        &self,
        _: &dyn Session,
        _: Vec<(String, Expr)>,
        _: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.refuse()
    }

    async fn truncate(&self, _: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        self.refuse()
    }
}
