//! Aggregators: collect, merge_map, merge_map_with_keytime, nested_update, nested_partial_update.
//!
//! Every function here works on an ARRAY or MAP column. The accumulator of a group is NULL or a
//! list of *elements*, and an element is the index of an element (or map entry) of the input
//! column's child array: every value an accumulator can hold was an element of some input value
//! (`nested_partial_update` also builds rows field by field, see [`nested`]). After folding, the
//! kept elements of all groups are gathered with one `take` and the offsets are assembled, so no
//! per-row scalar is built.

mod collect;
mod map;
mod nested;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, MapArray, StructArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::take;
use arrow::datatypes::DataType as ArrowType;
use arrow::row::{Row, RowConverter, Rows, SortField};
use datafusion::common::{exec_datafusion_err, plan_datafusion_err, DataFusionError, Result};

use super::{FieldAggOptions, FieldAggregator, Groups, Step};
use crate::spec::DataType;

/// The aggregator `function` if it is one of this module's, else `None`.
pub(super) fn create(
    function: &str,
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Option<Result<Box<dyn FieldAggregator>>> {
    Some(match function {
        "collect" => collect::create(field, data_type, options),
        "merge_map" => map::create_merge_map(field, data_type),
        "merge_map_with_keytime" => map::create_keytime(field, data_type, options),
        "nested_update" => nested::create_update(field, data_type, options),
        "nested_partial_update" => nested::create_partial_update(field, data_type, options),
        _ => return None,
    })
}

/// The accumulator of one group: NULL, or the elements of a non-NULL ARRAY/MAP value.
type Acc<E> = Option<Vec<E>>;

/// Runs the steps of every group. `raw(row)` is the value of input row `row` as it is (for
/// [`Step::Reset`]); `apply(step, acc, row)` performs an add, reversed add or retraction.
fn fold_groups<E>(
    groups: Groups<'_>,
    mut raw: impl FnMut(usize) -> Acc<E>,
    mut apply: impl FnMut(Step, Acc<E>, usize) -> Result<Acc<E>>,
) -> Result<Vec<Acc<E>>> {
    let mut out = Vec::with_capacity(groups.len());
    for g in 0..groups.len() {
        let mut acc: Acc<E> = None;
        for (row, step) in groups.members(g) {
            acc = match step {
                Step::Skip => acc,
                Step::SetNull => None,
                Step::Reset => raw(row),
                Step::Add | Step::AddReversed | Step::Retract => apply(step, acc, row)?,
            };
        }
        out.push(acc);
    }
    Ok(out)
}

/// The error for a retraction reaching a function that cannot retract (Java's message, with the
/// field named).
fn retract_unsupported(function: &str, field: &str) -> DataFusionError {
    exec_datafusion_err!(
        "Aggregate function '{function}' of field '{field}' does not support retraction. If you \
         allow this function to ignore retraction messages, you can configure \
         'fields.{field}.ignore-retract'='true'."
    )
}

/// The error for a column type the function does not accept.
fn type_error(function: &str, field: &str, expected: &str, actual: &DataType) -> DataFusionError {
    plan_datafusion_err!(
        "Aggregate function '{function}' of field '{field}' requires {expected}, but the field is \
         {actual}"
    )
}

/// The input as a `ListArray` (ARRAY columns).
fn as_list<'a>(input: &'a ArrayRef, function: &str, field: &str) -> Result<&'a ListArray> {
    input.as_list_opt::<i32>().ok_or_else(|| {
        exec_datafusion_err!(
            "Aggregate function '{function}' of field '{field}' expects a list column, got {}",
            input.data_type()
        )
    })
}

/// The input as a `MapArray` (MAP columns).
fn as_map<'a>(input: &'a ArrayRef, function: &str, field: &str) -> Result<&'a MapArray> {
    input.as_map_opt().ok_or_else(|| {
        exec_datafusion_err!(
            "Aggregate function '{function}' of field '{field}' expects a map column, got {}",
            input.data_type()
        )
    })
}

/// The child indices of the elements of row `row` (which must not be NULL).
fn range_of(offsets: &[i32], row: usize) -> Range<u32> {
    offsets[row] as u32..offsets[row + 1] as u32
}

/// The value of row `row` as an accumulator: NULL or its elements.
fn raw_elements(nulls: Option<&NullBuffer>, offsets: &[i32], row: usize) -> Acc<u32> {
    match nulls {
        Some(n) if n.is_null(row) => None,
        _ => Some(range_of(offsets, row).collect()),
    }
}

/// Offsets and validity of one result per group.
fn offsets_and_nulls<E>(results: &[Acc<E>]) -> (OffsetBuffer<i32>, Option<NullBuffer>) {
    let offsets = OffsetBuffer::from_lengths(results.iter().map(|r| r.as_ref().map_or(0, Vec::len)));
    let nulls = if results.iter().all(Option::is_some) {
        None
    } else {
        Some(NullBuffer::from_iter(results.iter().map(Option::is_some)))
    };
    (offsets, nulls)
}

/// Gathers the child elements listed in `results` into one child array.
fn gather(child: &ArrayRef, results: &[Acc<u32>]) -> Result<ArrayRef> {
    let indices: UInt32Array = results.iter().flatten().flatten().copied().collect();
    Ok(take(child.as_ref(), &indices, None)?)
}

/// Builds the ARRAY result (same type as `list`) from per-group element lists.
fn build_list(list: &ListArray, results: &[Acc<u32>]) -> Result<ArrayRef> {
    let values = gather(list.values(), results)?;
    build_list_from(list, results, values)
}

/// Builds the ARRAY result (same type as `list`) from per-group lists and their gathered values.
fn build_list_from<E>(list: &ListArray, results: &[Acc<E>], values: ArrayRef) -> Result<ArrayRef> {
    let ArrowType::List(item) = list.data_type() else {
        unreachable!("ListArray of type {}", list.data_type())
    };
    let (offsets, nulls) = offsets_and_nulls(results);
    Ok(Arc::new(ListArray::try_new(
        item.clone(),
        offsets,
        values,
        nulls,
    )?))
}

/// Builds the MAP result (same type as `map`) from per-group entry lists.
fn build_map(map: &MapArray, results: &[Acc<u32>]) -> Result<ArrayRef> {
    let ArrowType::Map(entries_field, ordered) = map.data_type() else {
        unreachable!("MapArray of type {}", map.data_type())
    };
    let entries: ArrayRef = Arc::new(map.entries().clone());
    let gathered = gather(&entries, results)?;
    let gathered: StructArray = gathered.as_struct().clone();
    let (offsets, nulls) = offsets_and_nulls(results);
    Ok(Arc::new(MapArray::try_new(
        entries_field.clone(),
        offsets,
        gathered,
        nulls,
        *ordered,
    )?))
}

/// Values by key, in first-insertion order (Java uses hash maps whose order is unspecified; a
/// replaced value keeps its key's position, a removed and re-inserted key moves to the end).
struct KeyedSlots<'a, T> {
    slots: Vec<Option<T>>,
    index: HashMap<Row<'a>, usize>,
}

impl<'a, T> KeyedSlots<'a, T> {
    fn new() -> Self {
        Self {
            slots: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Number of keys.
    fn len(&self) -> usize {
        self.index.len()
    }

    fn get(&self, key: &Row<'a>) -> Option<&T> {
        self.index.get(key).and_then(|&s| self.slots[s].as_ref())
    }

    fn get_mut(&mut self, key: &Row<'a>) -> Option<&mut T> {
        self.index.get(key).and_then(|&s| self.slots[s].as_mut())
    }

    /// Puts `value` under `key`, replacing an existing value in place.
    fn put(&mut self, key: Row<'a>, value: T) {
        match self.index.get(&key) {
            Some(&slot) => self.slots[slot] = Some(value),
            None => {
                self.index.insert(key, self.slots.len());
                self.slots.push(Some(value));
            }
        }
    }

    fn remove(&mut self, key: &Row<'a>) {
        if let Some(slot) = self.index.remove(key) {
            self.slots[slot] = None;
        }
    }

    fn into_values(self) -> Vec<T> {
        self.slots.into_iter().flatten().collect()
    }
}

/// Row-format encoding of `columns` (one row per child element): equal bytes ⇔ equal values,
/// NULLs included; byte order = ascending, NULLs first.
fn encode_rows(columns: &[ArrayRef]) -> Result<Rows> {
    let fields = columns
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    Ok(RowConverter::new(fields)?.convert_columns(columns)?)
}

/// Whether the row format can encode `data_type` (needed for element/key comparisons).
fn check_comparable(function: &str, field: &str, what: &str, data_type: &ArrowType) -> Result<()> {
    if RowConverter::supports_fields(&[SortField::new(data_type.clone())]) {
        Ok(())
    } else {
        Err(plan_datafusion_err!(
            "Aggregate function '{function}' of field '{field}': {what} of type {data_type} cannot be \
             compared"
        ))
    }
}

#[cfg(test)]
mod test_util {
    use arrow::array::ArrayRef;

    use super::super::{FieldAggOptions, FieldAggregator, Groups, Step};
    use crate::spec::types::parse_type_string;
    use crate::spec::{DataType, TypeKind};

    /// Builds `function` for a column of type `data_type`.
    pub(super) fn agg(
        function: &str,
        data_type: &DataType,
        options: &FieldAggOptions,
    ) -> Box<dyn FieldAggregator> {
        super::create(function, "f", data_type, options)
            .expect("known function")
            .expect("valid type")
    }

    /// The creation error message.
    pub(super) fn create_err(function: &str, data_type: &DataType, options: &FieldAggOptions) -> String {
        match super::create(function, "f", data_type, options).expect("known function") {
            Ok(a) => panic!("expected an error, got {a:?}"),
            Err(e) => e.to_string(),
        }
    }

    pub(super) fn atomic(s: &str) -> DataType {
        parse_type_string(s).unwrap()
    }

    pub(super) fn array_of(element: DataType) -> DataType {
        DataType {
            kind: TypeKind::Array(Box::new(element)),
            nullable: true,
        }
    }

    pub(super) fn map_of(key: DataType, value: DataType) -> DataType {
        DataType {
            kind: TypeKind::Map(Box::new(key), Box::new(value)),
            nullable: true,
        }
    }

    /// Folds groups given as lists of `(input row, step)`.
    pub(super) fn fold(
        agg: &dyn FieldAggregator,
        input: &ArrayRef,
        groups: &[&[(u32, Step)]],
    ) -> datafusion::common::Result<ArrayRef> {
        let mut order = vec![];
        let mut steps = vec![];
        let mut offsets = vec![0];
        for g in groups {
            for &(row, step) in *g {
                order.push(row);
                steps.push(step);
            }
            offsets.push(order.len());
        }
        agg.fold(
            input,
            Groups {
                order: &order,
                offsets: &offsets,
                steps: &steps,
            },
        )
    }

    /// Adds of the given rows, one group.
    pub(super) fn adds(rows: &[u32]) -> Vec<(u32, Step)> {
        rows.iter().map(|&r| (r, Step::Add)).collect()
    }
}
