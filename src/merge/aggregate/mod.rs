//! Field aggregators: how the values of one column fold over the records of a key
//! (semantics.md §2.3, §2.4). Used by the `aggregation` engine for every non-key column and by
//! `partial-update` for columns with an aggregate function.
//!
//! An aggregator works on whole columns: it receives the gathered values of many key groups at
//! once ([`Groups`]) and returns one value per group, so no per-row `ScalarValue` is built. Each
//! record of a group carries a [`Step`] saying what it does to this column; the engine decides
//! the steps (row kind, sequence groups, `ignore-retract`, remove-record-on-delete), the
//! aggregator only folds.

mod complex;
mod scalar;
mod sketch;

use std::fmt::Debug;

use arrow::array::ArrayRef;
use datafusion::common::Result;

use crate::spec::DataType;

/// What one record does to one column's accumulator `acc` (which starts as NULL for every
/// group, with the aggregator's per-group state fresh as after Java's `reset()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The record is an add (`+I`/`+U`) newer than everything folded so far:
    /// `acc := agg(acc, v)`.
    Add,
    /// An add that is *older* than the stored state (partial-update sequence group with a
    /// smaller incoming sequence): `acc := agg_reversed(acc, v)` (Java `aggReversed`).
    AddReversed,
    /// A retraction (`-U`/`-D`): `acc := retract(acc, v)`. Functions that cannot retract fail
    /// with an error naming the field and `fields.<f>.ignore-retract`.
    Retract,
    /// `acc := v` exactly (NULL included); used when a removing `-D` re-initialises the row
    /// from its own values, and for sequence-group protected columns without aggregator.
    Reset,
    /// `acc := NULL`.
    SetNull,
    /// The record does not touch this column.
    Skip,
}

/// Many key groups of one column, gathered.
///
/// Group `g` consists of the input rows `order[offsets[g]..offsets[g + 1]]`, listed in merge
/// order (oldest first); `steps[i]` is the step of the record at position `i` of `order`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Groups<'a> {
    pub order: &'a [u32],
    pub offsets: &'a [usize],
    pub steps: &'a [Step],
}

impl Groups<'_> {
    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// `(input row, step)` of every record of group `g`, oldest first.
    pub(crate) fn members(&self, g: usize) -> impl Iterator<Item = (usize, Step)> + '_ {
        let range = self.offsets[g]..self.offsets[g + 1];
        self.order[range.clone()]
            .iter()
            .zip(&self.steps[range])
            .map(|(&row, &step)| (row as usize, step))
    }
}

/// One column's aggregate function.
pub(crate) trait FieldAggregator: Send + Sync + Debug {
    /// Paimon's name of the function (`sum`, `listagg`, ...), for messages.
    fn name(&self) -> &'static str;

    /// Whether [`Step::Retract`] is supported (semantics.md §2.4: sum, product, collect,
    /// merge_map, nested_update, last_value, last_non_null_value).
    fn supports_retract(&self) -> bool;

    /// Folds every group of `input` and returns one value per group, with `input`'s data type.
    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef>;
}

/// Per-field options of an aggregate function (`fields.<f>.*`), already looked up by the
/// caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldAggOptions {
    /// `fields.<f>.list-agg-delimiter` (listagg; default `,`).
    pub list_agg_delimiter: Option<String>,
    /// `fields.<f>.distinct` (listagg, collect).
    pub distinct: bool,
    /// `fields.<f>.nested-key` (nested_update, nested_partial_update), comma separated.
    pub nested_key: Vec<String>,
    /// `fields.<f>.count-limit` (nested_update).
    pub count_limit: Option<usize>,
    /// `fields.<f>.nested-sequence-field` (nested_update).
    pub nested_sequence_field: Option<String>,
    /// `fields.<f>.nested-key-null-strategy` (nested_update).
    pub nested_key_null_strategy: Option<String>,
    /// `fields.<f>.ts-field` (merge_map_with_keytime).
    pub ts_field: Option<String>,
}

/// Builds the aggregator `function` for column `field` of type `data_type`.
///
/// Fails, naming the field and function, when the function is unknown or does not accept the
/// type (Java fails at the first merge; we fail when the engine is built, which is also before
/// the first merge).
pub(crate) fn create_aggregator(
    function: &str,
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Result<Box<dyn FieldAggregator>> {
    let function = function.trim().to_ascii_lowercase();
    let created = scalar::create(&function, field, data_type, options)
        .or_else(|| complex::create(&function, field, data_type, options))
        .or_else(|| sketch::create(&function, field, data_type, options));
    match created {
        Some(aggregator) => aggregator,
        None => datafusion::common::plan_err!("Unknown aggregate function '{function}' for field '{field}'"),
    }
}
