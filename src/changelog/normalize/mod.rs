//! `ChangelogNormalizeExec`: turns the raw delta rows of a `changelog-producer = none` table into
//! its exact changelog (`+I`, `-U`/`+U`, `-D`), as Flink's ChangelogNormalize does, with the
//! table's merge engine deciding what a row does to its key (see [`state`]).
//!
//! ```text
//! child 0 (seed):    merged rows at the start snapshot ──► state, nothing emitted
//! child 1 (changes): rowkind, columns, snapshot_id of the delta rows, commit order per key
//!                    ──► fold batch by batch ──► changes, emitted as each input batch arrives
//! ```
//!
//! Every partition of both children is read here, their streams merged: every key lives in one
//! bucket, and the rows of a bucket come in commit order from the one partition that reads it.
//! The children must therefore never be repartitioned (`benefits_from_input_partitioning`).
//!
//! [`ChangelogNormalizeExec::spread`] splits the work by key instead (what a cluster runs): both
//! children hash-repartitioned on the key into N partitions, partition i normalizing the keys of
//! partition i of each with a state of its own. A key's rows still come in commit order, since
//! they all come from the one input partition that reads its bucket, and a repartition keeps the
//! order of the rows of one input partition.

mod key_index;
mod spill;
mod state;
mod store;

use std::fmt;
use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, not_impl_err, Result};
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
};
use futures::StreamExt;

use self::state::FoldRules;
pub(crate) use self::state::NormalizeState;
use crate::merge::reduce::MergeEngineSpec;
use crate::spec::{MergeEngine, TableOptions, TableSchema};

/// The most keys a normalize sizes its state for up front (more grow as they come).
const MAX_EXPECTED_KEYS: usize = 1 << 28;

/// Normalizes the delta rows of one table into its changelog.
#[derive(Debug)]
pub(crate) struct ChangelogNormalizeExec {
    table: String,
    /// The table's schema (its keys and merge options), kept for plan codecs.
    #[cfg_attr(
        not(feature = "ballista"),
        allow(dead_code, reason = "read by the Ballista codec only")
    )]
    schema: Arc<TableSchema>,
    /// Merged rows at the start snapshot (table columns); None for an empty start.
    seed: Option<Arc<dyn ExecutionPlan>>,
    /// Delta rows: `rowkind`, table columns, `snapshot_id`.
    changes: Arc<dyn ExecutionPlan>,
    key_columns: Vec<usize>,
    rules: FoldRules,
    /// 1: every partition of the children read as one; N: partition i of each child (children
    /// hash-partitioned on the key, see [`Self::spread`]).
    partitions: usize,
    properties: Arc<PlanProperties>,
}

impl ChangelogNormalizeExec {
    /// Fails for tables without a primary key.
    pub(crate) fn try_new(
        table: &str,
        schema: &TableSchema,
        seed: Option<Arc<dyn ExecutionPlan>>,
        changes: Arc<dyn ExecutionPlan>,
    ) -> Result<Self> {
        Self::with_partitions(table, schema, seed, changes, 1)
    }

    /// A normalize of `partitions` partitions: with more than one, partition i of each child
    /// holds the same keys (hash-partitioned on the key).
    pub(crate) fn with_partitions(
        table: &str,
        schema: &TableSchema,
        seed: Option<Arc<dyn ExecutionPlan>>,
        changes: Arc<dyn ExecutionPlan>,
        partitions: usize,
    ) -> Result<Self> {
        let (key_columns, rules) = fold_rules(table, schema)?;
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(changes.schema()),
            Partitioning::UnknownPartitioning(partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(ChangelogNormalizeExec {
            table: table.to_string(),
            schema: Arc::new(schema.clone()),
            seed,
            changes,
            key_columns,
            rules,
            partitions: partitions.max(1),
            properties,
        })
    }

    /// This normalize split by key into `n` partitions (children hash-repartitioned on the key),
    /// coalesced again: the plan above it still sees one partition. `None` when it already is.
    pub(crate) fn spread(&self, n: usize) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        if self.partitions > 1 || n < 2 {
            return Ok(None);
        }
        let by_key = |plan: &Arc<dyn ExecutionPlan>, offset: usize| -> Result<Arc<dyn ExecutionPlan>> {
            let schema = plan.schema();
            let keys = self
                .key_columns
                .iter()
                .map(|&c| {
                    let name = schema.field(c + offset).name();
                    Arc::new(datafusion::physical_expr::expressions::Column::new(
                        name,
                        c + offset,
                    )) as Arc<dyn PhysicalExpr>
                })
                .collect();
            Ok(Arc::new(RepartitionExec::try_new(
                Arc::clone(plan),
                Partitioning::Hash(keys, n),
            )?))
        };
        let seed = match &self.seed {
            Some(plan) => Some(by_key(plan, 0)?),
            None => None,
        };
        // the change rows start with `rowkind`
        let changes = by_key(&self.changes, 1)?;
        let spread = Self::with_partitions(&self.table, &self.schema, seed, changes, n)?;
        Ok(Some(Arc::new(CoalescePartitionsExec::new(Arc::new(spread)))))
    }
}

#[cfg(feature = "ballista")]
impl ChangelogNormalizeExec {
    /// The table's name and schema and the partitions: with its children, all a codec needs
    /// to rebuild the node.
    pub(crate) fn table(&self) -> (&str, &TableSchema, usize) {
        (&self.table, &self.schema, self.partitions)
    }
}

impl DisplayAs for ChangelogNormalizeExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<String> = self
            .key_columns
            .iter()
            .map(|&c| self.changes.schema().field(c + 1).name().clone())
            .collect();
        write!(
            f,
            "ChangelogNormalizeExec: table={}, key=[{}], seeded={}",
            self.table,
            names.join(", "),
            self.seed.is_some()
        )?;
        if self.partitions > 1 {
            write!(f, ", partitions={} by key", self.partitions)?;
        }
        if self.rules.first_row {
            write!(f, ", first_row")?;
        }
        if self.rules.reducer.is_some() {
            write!(f, ", merges_values")?;
        }
        if !self.rules.sequence_columns.is_empty() {
            write!(f, ", sequence_field")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ChangelogNormalizeExec {
    fn name(&self) -> &str {
        "ChangelogNormalizeExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false; self.children().len()]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.seed.iter().chain(std::iter::once(&self.changes)).collect()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.with_children(children)
    }

    #[allow(deprecated)]
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.with_children(children)
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition >= self.partitions {
            return internal_err!(
                "ChangelogNormalizeExec has {} partition(s), not {partition}",
                self.partitions
            );
        }
        let reservation = MemoryConsumer::new(format!("ChangelogNormalize[{}]", self.table))
            .with_can_spill(true)
            .register(context.memory_pool());
        let mut state = NormalizeState::try_new(
            &self.table,
            self.schema(),
            self.key_columns.clone(),
            self.rules.clone(),
            reservation,
            Some(Arc::clone(&context.runtime_env().disk_manager)),
        )?;
        // The start state holds at most as many keys as its files hold rows.
        let seed_rows = self.seed.as_ref().and_then(|plan| {
            let statistics = StatisticsContext::new()
                .compute(plan.as_ref(), &StatisticsArgs::new())
                .ok()?;
            statistics.num_rows.get_value().copied()
        });
        if let Some(rows) = seed_rows {
            state.expect_keys((rows / self.partitions).min(MAX_EXPECTED_KEYS));
        }
        let inputs = |plan: &Arc<dyn ExecutionPlan>| {
            if self.partitions == 1 {
                all_partitions(plan, &context)
            } else {
                Ok(futures::stream::select_all([
                    plan.execute(partition, Arc::clone(&context))?
                ]))
            }
        };
        let seed = match &self.seed {
            Some(plan) => Some(inputs(plan)?),
            None => None,
        };
        let changes = inputs(&self.changes)?;
        let stream = futures::stream::try_unfold(
            (state, seed, changes),
            |(mut state, mut seed, mut changes)| async move {
                // The whole start state first: it decides what the first changes are.
                if let Some(mut rows) = seed.take() {
                    while let Some(batch) = rows.next().await {
                        state.seed(&batch?)?;
                    }
                }
                while let Some(batch) = changes.next().await {
                    if let Some(out) = state.fold(&batch?)? {
                        return Ok(Some((out, (state, None, changes))));
                    }
                }
                Ok(None)
            },
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema(), stream)))
    }
}

/// The key columns and fold rules of `schema`: deduplicate and first-row pick whole rows,
/// partial-update and aggregation merge through the table's reducer.
fn fold_rules(table: &str, schema: &TableSchema) -> Result<(Vec<usize>, FoldRules)> {
    let options = TableOptions::parse(&schema.options)?;
    let merges_values = matches!(
        options.merge_engine,
        MergeEngine::PartialUpdate | MergeEngine::Aggregation
    );
    let reducer = if merges_values {
        let names = schema.fields.iter().map(|f| f.name.as_str());
        Some(MergeEngineSpec::for_columns(table, schema, names)?.reducer)
    } else {
        None
    };
    let position = |name: &str| schema.fields.iter().position(|f| f.name == name);
    let key_columns: Vec<usize> = schema.primary_keys.iter().filter_map(|k| position(k)).collect();
    if key_columns.is_empty() {
        return not_impl_err!(
            "Table {table} has no primary key: its changelog is its rows, read t$audit_log"
        );
    }
    let flag = |k: &str| {
        schema
            .options
            .get(k)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    };
    let rules = FoldRules {
        first_row: options.merge_engine == MergeEngine::FirstRow,
        ignore_delete: [
            "ignore-delete",
            "deduplicate.ignore-delete",
            "first-row.ignore-delete",
        ]
        .iter()
        .any(|k| flag(k)),
        sequence_columns: if merges_values {
            vec![]
        } else {
            options
                .sequence_fields
                .iter()
                .filter_map(|f| position(f))
                .collect()
        },
        reducer,
    };
    Ok((key_columns, rules))
}

/// A fresh normalize state for `table`, whose changes have the schema `output` (`rowkind`,
/// columns, `snapshot_id`), accounted to the memory pool of `task` and spilling to its disk
/// manager (tailing reads keep one for their lifetime).
pub(crate) fn normalize_state(
    table: &str,
    schema: &TableSchema,
    output: datafusion::arrow::datatypes::SchemaRef,
    task: &TaskContext,
) -> Result<NormalizeState> {
    let (key_columns, rules) = fold_rules(table, schema)?;
    let reservation =
        MemoryConsumer::new(format!("ChangelogNormalize[{table}]")).register(task.memory_pool());
    let disk = Arc::clone(&task.runtime_env().disk_manager);
    NormalizeState::try_new(table, output, key_columns, rules, reservation, Some(disk))
}

/// Every partition of `plan` as one stream; each partition's own order is kept.
fn all_partitions(
    plan: &Arc<dyn ExecutionPlan>,
    context: &Arc<TaskContext>,
) -> Result<futures::stream::SelectAll<SendableRecordBatchStream>> {
    let streams = (0..plan.output_partitioning().partition_count())
        .map(|p| plan.execute(p, Arc::clone(context)))
        .collect::<Result<Vec<_>>>()?;
    Ok(futures::stream::select_all(streams))
}

impl ChangelogNormalizeExec {
    fn with_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let expected = usize::from(self.seed.is_some()) + 1;
        if children.len() != expected {
            return internal_err!(
                "ChangelogNormalizeExec takes {expected} children, got {}",
                children.len()
            );
        }
        let changes = children.pop().expect("one child at least");
        let seed = children.pop();
        // Split by key, partition i reads partition i of each child: as many as the children
        // have now (a Ballista task narrows both to its own partitions, in the same order).
        let partitions = if self.partitions > 1 {
            let n = changes.output_partitioning().partition_count();
            if let Some(seed) = &seed {
                let m = seed.output_partitioning().partition_count();
                if m != n {
                    return internal_err!(
                        "ChangelogNormalizeExec split by key needs children of equal partitions, got {m} and {n}"
                    );
                }
            }
            n
        } else {
            1
        };
        let properties = if partitions == self.partitions {
            Arc::clone(&self.properties)
        } else {
            Arc::new(PlanProperties::new(
                EquivalenceProperties::new(changes.schema()),
                Partitioning::UnknownPartitioning(partitions),
                EmissionType::Incremental,
                Boundedness::Bounded,
            ))
        };
        Ok(Arc::new(ChangelogNormalizeExec {
            table: self.table.clone(),
            schema: Arc::clone(&self.schema),
            seed,
            changes,
            key_columns: self.key_columns.clone(),
            rules: self.rules.clone(),
            partitions,
            properties,
        }))
    }
}
