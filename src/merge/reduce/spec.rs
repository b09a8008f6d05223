//! The merge engine of a table, resolved from its schema and options for one column layout
//! (semantics.md §2, §3.2, §11). Built once per scan or write; everything that depends on the
//! engine (k-way merge, write buffer, sink checks) asks this.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::common::{plan_datafusion_err, Result};

use super::aggregation::AggregationReducer;
use super::order::SequenceFields;
use super::partial_update::{PartialUpdateReducer, SequenceGroup};
use super::pick::PickReducer;
use super::select::Select;
use super::{ColumnFold, GroupReducer};
use crate::merge::aggregate::{create_aggregator, FieldAggOptions, FieldAggregator};
use crate::spec::{MergeEngine, TableOptions, TableSchema, SEQUENCE_NUMBER, VALUE_KIND};

/// How the k-way merge decides a key with several records.
#[derive(Debug, Clone)]
pub(crate) enum EngineKind {
    /// The newest record wins; decided without looking at values.
    Deduplicate { ignore_delete: bool },
    /// The oldest add wins; decided without looking at values.
    FirstRow,
    /// The values are needed (partial-update, aggregation, or any `sequence.field` ordering).
    Reduce,
}

/// What the writer does with a retraction (`-U`/`-D`) before it reaches the buffer
/// (semantics.md §1.3, §1.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RetractPolicy {
    /// Kept.
    Accept,
    /// Dropped before writing (`ignore-delete`).
    Drop,
    /// The statement fails with this message.
    Reject(String),
}

/// A table's merge engine for one column layout.
#[derive(Debug, Clone)]
pub(crate) struct MergeEngineSpec {
    pub kind: EngineKind,
    /// Folds groups of records of one key; used by the k-way merge for [`EngineKind::Reduce`]
    /// and by the write buffer for every engine.
    pub reducer: Arc<dyn GroupReducer>,
    /// Policy for `-D` records.
    pub on_delete: RetractPolicy,
    /// Policy for `-U` records.
    pub on_update_before: RetractPolicy,
}

/// Options with their fallback keys.
struct Opts<'a>(&'a BTreeMap<String, String>);

impl Opts<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|s| s.trim())
    }

    fn flag(&self, keys: &[&str]) -> bool {
        keys.iter()
            .find_map(|k| self.get(k))
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.get(key).map(split).unwrap_or_default()
    }

    fn field(&self, field: &str, suffix: &str) -> Option<&str> {
        self.get(&format!("fields.{field}.{suffix}"))
    }
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// The `ignore-delete` option and its engine-specific fallback keys.
const IGNORE_DELETE_KEYS: &[&str] = &[
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
];

impl MergeEngineSpec {
    /// The engine for the layout every merge uses: the table columns `columns`, then
    /// `_SEQUENCE_NUMBER` and `_VALUE_KIND`.
    pub(crate) fn for_columns<'a>(
        table: &str,
        schema: &TableSchema,
        columns: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self> {
        let mut names: Vec<String> = columns.into_iter().map(str::to_string).collect();
        let n = names.len();
        names.push(SEQUENCE_NUMBER.to_string());
        names.push(VALUE_KIND.to_string());
        Self::new(table, schema, &names, n, n + 1)
    }

    /// Resolves the engine of `schema` for a layout whose columns are `names` (table columns,
    /// then `_SEQUENCE_NUMBER` and `_VALUE_KIND` at `seq_column` / `kind_column`). Value-merging
    /// engines need every table column in the layout.
    pub(crate) fn new(
        table: &str,
        schema: &TableSchema,
        names: &[String],
        seq_column: usize,
        kind_column: usize,
    ) -> Result<Self> {
        let options = TableOptions::parse(&schema.options)?;
        let opts = Opts(&schema.options);
        let index = |name: &str| {
            names.iter().position(|n| n == name).ok_or_else(|| {
                plan_datafusion_err!("Column '{name}' of table {table} is missing from the merge layout")
            })
        };
        let sequence_fields = if options.sequence_fields.is_empty() {
            None
        } else {
            Some(SequenceFields {
                columns: options
                    .sequence_fields
                    .iter()
                    .map(|f| index(f))
                    .collect::<Result<Vec<_>>>()?,
                descending: opts
                    .get("sequence.field.sort-order")
                    .is_some_and(|v| v.eq_ignore_ascii_case("descending")),
            })
        };
        let ignore_delete = opts.flag(IGNORE_DELETE_KEYS);
        let ignore_update_before = opts.flag(&["ignore-update-before"]);
        let fold_names: Vec<String> = names.to_vec();
        let is_value_column = |c: usize| {
            c != seq_column && c != kind_column && !schema.primary_keys.iter().any(|k| k == &names[c])
        };
        let pick = |first: bool| PickReducer {
            first,
            ignore_delete,
            seq_column,
            kind_column,
            sequence_fields: sequence_fields.clone(),
        };
        let (kind, reducer, on_delete): (EngineKind, Arc<dyn GroupReducer>, RetractPolicy) =
            match options.merge_engine {
                MergeEngine::Deduplicate => {
                    let kind = if sequence_fields.is_some() {
                        EngineKind::Reduce
                    } else {
                        EngineKind::Deduplicate { ignore_delete }
                    };
                    (kind, Arc::new(pick(false)), RetractPolicy::Accept)
                }
                MergeEngine::FirstRow => (
                    EngineKind::FirstRow,
                    Arc::new(pick(true)),
                    RetractPolicy::Reject(format!(
                        "First row merge engine can not accept DELETE/UPDATE_BEFORE (table {table}); set 'ignore-delete' = 'true' to drop them"
                    )),
                ),
                MergeEngine::PartialUpdate => {
                    let reducer = partial_update(table, schema, &opts, names, &is_value_column, &index)?;
                    let reducer = PartialUpdateReducer {
                        seq_column,
                        kind_column,
                        sequence_fields: sequence_fields.clone(),
                        ignore_delete,
                        ..reducer
                    };
                    let policy = if reducer.accepts_retracts() {
                        RetractPolicy::Accept
                    } else {
                        RetractPolicy::Reject(format!(
                            "Partial update can not accept delete records (table {table}): set 'ignore-delete' to ignore them, 'partial-update.remove-record-on-delete' to remove the whole row, or sequence groups to retract partial columns"
                        ))
                    };
                    (EngineKind::Reduce, Arc::new(reducer), policy)
                }
                MergeEngine::Aggregation => {
                    let mut folds = Vec::with_capacity(names.len());
                    let mut ignore_retract = Vec::with_capacity(names.len());
                    let mut no_retract: Option<String> = None;
                    let default_function = opts.get("fields.default-aggregate-function");
                    for (c, name) in names.iter().enumerate() {
                        ignore_retract.push(opts.field(name, "ignore-retract").is_some_and(|v| v.eq_ignore_ascii_case("true")));
                        if !is_value_column(c) {
                            folds.push(ColumnFold::Newest);
                            continue;
                        }
                        let is_sequence_field = options.sequence_fields.iter().any(|f| f == name);
                        let function = if is_sequence_field {
                            "last_value"
                        } else {
                            opts.field(name, "aggregate-function")
                                .or(default_function)
                                .unwrap_or("last_non_null_value")
                        };
                        let aggregator = aggregator(schema, &opts, name, function)?;
                        if !aggregator.supports_retract() && !ignore_retract[c] && no_retract.is_none() {
                            no_retract = Some(format!(
                                "Aggregate function '{}' of field '{name}' (table {table}) does not support retraction; set 'fields.{name}.ignore-retract' = 'true' to ignore retract messages",
                                aggregator.name()
                            ));
                        }
                        folds.push(ColumnFold::Fold(aggregator));
                    }
                    let remove_record_on_delete = opts.flag(&["aggregation.remove-record-on-delete"]);
                    let reducer = AggregationReducer {
                        names: fold_names.clone(),
                        seq_column,
                        kind_column,
                        sequence_fields: sequence_fields.clone(),
                        folds,
                        ignore_retract,
                        remove_record_on_delete,
                    };
                    let policy = match no_retract {
                        Some(message) if !remove_record_on_delete => RetractPolicy::Reject(message),
                        _ => RetractPolicy::Accept,
                    };
                    (EngineKind::Reduce, Arc::new(reducer), policy)
                }
            };
        let (on_delete, on_update_before) = if ignore_delete {
            (RetractPolicy::Drop, RetractPolicy::Drop)
        } else {
            let before = if ignore_update_before {
                RetractPolicy::Drop
            } else {
                on_delete.clone()
            };
            (on_delete, before)
        };
        Ok(MergeEngineSpec {
            kind,
            reducer,
            on_delete,
            on_update_before,
        })
    }
}

/// The aggregator `function` for column `name`; `last_value` and `last_non_null_value` work
/// on any type by selecting rows.
fn aggregator(
    schema: &TableSchema,
    opts: &Opts<'_>,
    name: &str,
    function: &str,
) -> Result<Arc<dyn FieldAggregator>> {
    let function = function.trim().to_ascii_lowercase();
    match function.as_str() {
        "last_value" => return Ok(Arc::new(Select::LastValue)),
        "last_non_null_value" => return Ok(Arc::new(Select::LastNonNull)),
        _ => {}
    }
    let field = schema
        .field(name)
        .ok_or_else(|| plan_datafusion_err!("Column '{name}' does not exist"))?;
    let field_options = FieldAggOptions {
        list_agg_delimiter: opts.field(name, "list-agg-delimiter").map(str::to_string),
        distinct: opts
            .field(name, "distinct")
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        nested_key: opts.field(name, "nested-key").map(split).unwrap_or_default(),
        count_limit: opts.field(name, "count-limit").and_then(|v| v.parse().ok()),
        nested_sequence_field: opts.field(name, "nested-sequence-field").map(str::to_string),
        nested_key_null_strategy: opts.field(name, "nested-key-null-strategy").map(str::to_string),
        ts_field: opts.field(name, "ts-field").map(str::to_string),
    };
    Ok(Arc::from(create_aggregator(
        &function,
        name,
        &field.data_type,
        &field_options,
    )?))
}

/// The partial-update reducer's column plan (sequence groups, free columns, functions).
fn partial_update(
    table: &str,
    schema: &TableSchema,
    opts: &Opts<'_>,
    names: &[String],
    is_value_column: &dyn Fn(usize) -> bool,
    index: &dyn Fn(&str) -> Result<usize>,
) -> Result<PartialUpdateReducer> {
    let removing: Vec<String> = opts.list("partial-update.remove-record-on-sequence-group");
    let default_function = opts.get("fields.default-aggregate-function");
    let mut groups = Vec::new();
    let mut in_group = vec![false; names.len()];
    for (key, value) in opts.0 {
        let Some(ordering) = key
            .strip_prefix("fields.")
            .and_then(|k| k.strip_suffix(".sequence-group"))
        else {
            continue;
        };
        let ordering_names = split(ordering);
        let ordering = ordering_names
            .iter()
            .map(|n| index(n))
            .collect::<Result<Vec<_>>>()?;
        let mut protected = Vec::new();
        for name in split(value) {
            let c = index(&name)?;
            let has_function = opts
                .field(&name, "aggregate-function")
                .or(default_function)
                .is_some();
            protected.push((c, has_function));
            in_group[c] = true;
        }
        ordering.iter().for_each(|&c| in_group[c] = true);
        groups.push(SequenceGroup {
            removes_record: ordering_names.iter().any(|n| removing.contains(n)),
            ordering,
            protected,
        });
    }
    // Java keeps the groups in schema order of their first ordering column.
    groups.sort_by_key(|g| g.ordering[0]);
    let mut folds = Vec::with_capacity(names.len());
    let mut free = Vec::new();
    for (c, name) in names.iter().enumerate() {
        if !is_value_column(c) {
            folds.push(ColumnFold::Newest);
            continue;
        }
        let is_ordering = groups.iter().any(|g| g.ordering.contains(&c));
        let function = opts.field(name, "aggregate-function").or(default_function);
        let fold: Arc<dyn FieldAggregator> = match function {
            Some(f) if in_group[c] && !is_ordering => aggregator(schema, opts, name, f)?,
            // ordering columns and protected columns without a function are replaced
            _ if in_group[c] => Arc::new(Select::LastValue),
            _ => {
                free.push(c);
                Arc::new(Select::LastNonNull)
            }
        };
        folds.push(ColumnFold::Fold(fold));
    }
    Ok(PartialUpdateReducer {
        table: table.to_string(),
        names: names.to_vec(),
        seq_column: 0,
        kind_column: 0,
        sequence_fields: None,
        folds,
        free,
        groups,
        remove_record_on_delete: opts.flag(&["partial-update.remove-record-on-delete"]),
        ignore_delete: false,
    })
}
