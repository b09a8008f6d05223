//! `nested_update` (Java `FieldNestedUpdateAgg`) and `nested_partial_update`
//! (`FieldNestedPartialUpdateAgg`) on ARRAY<ROW> columns ("nested tables").
//!
//! With a nested key Java collects rows in a `HashMap`, so its element order is unspecified; we
//! keep the order in which keys were first inserted.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StructArray, UInt32Array};
use arrow::buffer::NullBuffer;
use arrow::compute::take;
use arrow::row::Rows;
use datafusion::common::{exec_datafusion_err, plan_datafusion_err, Result};

use super::{
    as_list, build_list, build_list_from, check_comparable, encode_rows, fold_groups, raw_elements,
    retract_unsupported, type_error, Acc, KeyedSlots,
};
use crate::merge::aggregate::{FieldAggOptions, FieldAggregator, Groups, Step};
use crate::spec::{DataField, DataType, TypeKind};

const UPDATE: &str = "nested_update";
const PARTIAL: &str = "nested_partial_update";

/// `fields.<f>.nested-key-null-strategy`: what to do with a row whose nested key has a NULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NullKeyStrategy {
    /// Treat it like any other key (default).
    Merge,
    /// Drop the row.
    Ignore,
    /// Fail.
    Error,
}

/// The ROW fields of an ARRAY<ROW> column.
fn row_fields<'a>(function: &str, field: &str, data_type: &'a DataType) -> Result<&'a [DataField]> {
    if let TypeKind::Array(element) = &data_type.kind {
        if let TypeKind::Row(fields) = &element.kind {
            return Ok(fields);
        }
    }
    Err(type_error(function, field, "an ARRAY<ROW<...>> type", data_type))
}

/// Positions of the named nested fields (option `fields.<f>.<option>`).
fn resolve(
    function: &str,
    field: &str,
    fields: &[DataField],
    names: &[String],
    option: &str,
) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .map(|name| {
            fields.iter().position(|f| f.name == name).ok_or_else(|| {
                plan_datafusion_err!(
                    "Aggregate function '{function}' of field '{field}': '{option}' names '{name}', which \
                     is not a field of the nested ROW"
                )
            })
        })
        .collect()
}

fn null_key_strategy(field: &str, options: &FieldAggOptions) -> Result<NullKeyStrategy> {
    match options
        .nested_key_null_strategy
        .as_deref()
        .map(|s| s.trim().to_ascii_lowercase())
    {
        None => Ok(NullKeyStrategy::Merge),
        Some(s) if s == "merge" => Ok(NullKeyStrategy::Merge),
        Some(s) if s == "ignore" => Ok(NullKeyStrategy::Ignore),
        Some(s) if s == "error" => Ok(NullKeyStrategy::Error),
        Some(s) => Err(plan_datafusion_err!(
            "Unsupported 'fields.{field}.nested-key-null-strategy' '{s}'. Supported values are: [merge, \
             ignore, error]."
        )),
    }
}

/// Checks that the listed nested fields can be compared.
fn check_fields(function: &str, field: &str, fields: &[DataField], positions: &[usize]) -> Result<()> {
    for &p in positions {
        check_comparable(function, field, "nested field", &fields[p].data_type.to_arrow())?;
    }
    Ok(())
}

pub(super) fn create_update(
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Result<Box<dyn FieldAggregator>> {
    let fields = row_fields(UPDATE, field, data_type)?;
    let key = resolve(UPDATE, field, fields, &options.nested_key, "nested-key")?;
    let sequence: Vec<String> = options
        .nested_sequence_field
        .as_deref()
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let sequence = resolve(UPDATE, field, fields, &sequence, "nested-sequence-field")?;
    if key.is_empty() && options.nested_key_null_strategy.is_some() {
        return Err(plan_datafusion_err!(
            "Option 'fields.{field}.nested-key-null-strategy' requires 'fields.{field}.nested-key' to be \
             configured."
        ));
    }
    if key.is_empty() && !sequence.is_empty() {
        return Err(plan_datafusion_err!(
            "Option 'fields.{field}.nested-sequence-field' requires 'fields.{field}.nested-key' to be \
             configured."
        ));
    }
    let all: Vec<usize> = (0..fields.len()).collect();
    check_fields(UPDATE, field, fields, if key.is_empty() { &all } else { &key })?;
    check_fields(UPDATE, field, fields, &sequence)?;
    Ok(Box::new(NestedUpdate {
        field: field.to_string(),
        null_keys: null_key_strategy(field, options)?,
        key,
        sequence,
        count_limit: options.count_limit.unwrap_or(i32::MAX as usize),
    }))
}

pub(super) fn create_partial_update(
    field: &str,
    data_type: &DataType,
    options: &FieldAggOptions,
) -> Result<Box<dyn FieldAggregator>> {
    let fields = row_fields(PARTIAL, field, data_type)?;
    let key = resolve(PARTIAL, field, fields, &options.nested_key, "nested-key")?;
    if key.is_empty() {
        return Err(plan_datafusion_err!(
            "Aggregate function '{PARTIAL}' of field '{field}' requires 'fields.{field}.nested-key' to be \
             configured."
        ));
    }
    check_fields(PARTIAL, field, fields, &key)?;
    Ok(Box::new(NestedPartialUpdate {
        field: field.to_string(),
        null_keys: null_key_strategy(field, options)?,
        key,
    }))
}

/// The nested rows of one input column, with what the functions compare them by.
struct Nested<'a> {
    rows: &'a StructArray,
    /// Row-format keys (nested key, or the whole row without key).
    keys: Option<Rows>,
    /// Row-format sequence fields (ascending, NULLs first: Java's comparator).
    sequence: Option<Rows>,
    key_columns: Vec<ArrayRef>,
    null_keys: NullKeyStrategy,
}

impl<'a> Nested<'a> {
    fn new(
        rows: &'a StructArray,
        key: &[usize],
        sequence: &[usize],
        null_keys: NullKeyStrategy,
        need_keys: bool,
    ) -> Result<Self> {
        let columns = |positions: &[usize]| -> Vec<ArrayRef> {
            positions.iter().map(|&p| rows.column(p).clone()).collect()
        };
        let key_columns = columns(key);
        let keys = match (need_keys, key.is_empty()) {
            (false, _) => None,
            (true, false) => Some(encode_rows(&key_columns)?),
            (true, true) => Some(encode_rows(&[Arc::new(rows.clone()) as ArrayRef])?),
        };
        let sequence = if sequence.is_empty() {
            None
        } else {
            Some(encode_rows(&columns(sequence))?)
        };
        Ok(Self {
            rows,
            keys,
            sequence,
            key_columns,
            null_keys,
        })
    }

    fn is_valid(&self, e: u32) -> bool {
        self.rows.is_valid(e as usize)
    }

    fn keys(&self) -> &Rows {
        self.keys.as_ref().expect("keys encoded")
    }

    /// Java `applyNestedKeyNullStrategy`: whether the row with nested key of row `e` is kept.
    fn admit(&self, e: u32, field: &str) -> Result<bool> {
        if !self.key_columns.iter().any(|c| c.is_null(e as usize)) {
            return Ok(true);
        }
        match self.null_keys {
            NullKeyStrategy::Merge => Ok(true),
            NullKeyStrategy::Ignore => Ok(false),
            NullKeyStrategy::Error => Err(exec_datafusion_err!(
                "Nested key of field '{field}' contains null values. Primary key fields must not be null."
            )),
        }
    }

    /// Sequence of `a` compared with that of `b`.
    fn compare_sequence(&self, a: u32, b: u32) -> Ordering {
        match &self.sequence {
            Some(s) => s.row(a as usize).cmp(&s.row(b as usize)),
            None => Ordering::Equal,
        }
    }
}

#[derive(Debug)]
struct NestedUpdate {
    field: String,
    null_keys: NullKeyStrategy,
    /// Nested key fields (empty: append mode).
    key: Vec<usize>,
    /// Nested sequence fields (only with a key).
    sequence: Vec<usize>,
    count_limit: usize,
}

impl NestedUpdate {
    fn agg(&self, n: &Nested<'_>, acc: Acc<u32>, input: Acc<u32>) -> Result<Acc<u32>> {
        let Some(input) = input else { return Ok(acc) };
        let limit = self.count_limit;
        if self.key.is_empty() {
            let valid = |e: &u32| n.is_valid(*e);
            return Ok(Some(match acc {
                None => input.into_iter().filter(valid).take(limit).collect(),
                Some(acc) if acc.len() >= limit => acc,
                Some(acc) => {
                    let remain = limit - acc.len();
                    let mut out: Vec<u32> = acc.into_iter().filter(valid).collect();
                    out.extend(input.into_iter().filter(valid).take(remain));
                    out
                }
            }));
        }
        let keys = n.keys();
        let mut map = KeyedSlots::new();
        let sources = [(acc.unwrap_or_default(), false), (input, true)];
        for (elements, limit_new_keys) in sources {
            for e in elements {
                if !n.is_valid(e) || !n.admit(e, &self.field)? {
                    continue;
                }
                let key = keys.row(e as usize);
                match map.get(&key) {
                    Some(&old) => {
                        if n.compare_sequence(e, old) != Ordering::Less {
                            map.put(key, e);
                        }
                    }
                    None => {
                        if !limit_new_keys || map.len() < limit {
                            map.put(key, e);
                        }
                    }
                }
            }
        }
        Ok(Some(map.into_values()))
    }

    fn retract(&self, n: &Nested<'_>, acc: Acc<u32>, input: Acc<u32>) -> Result<Acc<u32>> {
        let (Some(acc), Some(input)) = (acc.as_ref(), input) else {
            return Ok(acc);
        };
        let keys = n.keys();
        if self.key.is_empty() {
            // Every accumulated row equal to a retracted row goes.
            let removed: std::collections::HashSet<_> = input
                .iter()
                .filter(|&&e| n.is_valid(e))
                .map(|&e| keys.row(e as usize))
                .collect();
            let kept = acc
                .iter()
                .copied()
                .filter(|&e| n.is_valid(e) && !removed.contains(&keys.row(e as usize)))
                .collect();
            return Ok(Some(kept));
        }
        let mut map = KeyedSlots::new();
        for &e in acc {
            if n.is_valid(e) && n.admit(e, &self.field)? {
                map.put(keys.row(e as usize), e);
            }
        }
        for e in input {
            if n.is_valid(e) && n.admit(e, &self.field)? {
                map.remove(&keys.row(e as usize));
            }
        }
        Ok(Some(map.into_values()))
    }
}

impl FieldAggregator for NestedUpdate {
    fn name(&self) -> &'static str {
        UPDATE
    }

    fn supports_retract(&self) -> bool {
        true
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let list = as_list(input, UPDATE, &self.field)?;
        let rows = nested_rows(list.values(), UPDATE, &self.field)?;
        let need_keys = !self.key.is_empty() || groups.steps.contains(&Step::Retract);
        let n = Nested::new(rows, &self.key, &self.sequence, self.null_keys, need_keys)?;
        let (offsets, nulls) = (list.value_offsets(), list.nulls());
        let results = fold_groups(
            groups,
            |row| raw_elements(nulls, offsets, row),
            |step, acc, row| {
                let value = raw_elements(nulls, offsets, row);
                match step {
                    Step::Retract => self.retract(&n, acc, value),
                    Step::AddReversed => self.agg(&n, value, acc),
                    _ => self.agg(&n, acc, value),
                }
            },
        )?;
        build_list(list, &results)
    }
}

/// The nested rows (child of the list) as a `StructArray`.
fn nested_rows<'a>(values: &'a ArrayRef, function: &str, field: &str) -> Result<&'a StructArray> {
    values.as_struct_opt().ok_or_else(|| {
        exec_datafusion_err!(
            "Aggregate function '{function}' of field '{field}' expects ARRAY<ROW> values, got {}",
            values.data_type()
        )
    })
}

/// An element of a `nested_partial_update` accumulator.
#[derive(Debug, Clone)]
enum Element {
    /// Nested row `i` of the input, as it is (NULL included).
    Input(u32),
    /// A row merged field by field: each field is taken from the given nested input row, or
    /// NULL. `key` is a nested row holding this row's key.
    Merged { key: u32, fields: Box<[Option<u32>]> },
}

#[derive(Debug)]
struct NestedPartialUpdate {
    field: String,
    null_keys: NullKeyStrategy,
    key: Vec<usize>,
}

impl NestedPartialUpdate {
    /// Java `agg`: per nested key, non-NULL fields of later rows overwrite earlier ones.
    fn agg(&self, n: &Nested<'_>, acc: Acc<Element>, input: Acc<Element>) -> Result<Acc<Element>> {
        let Some(input) = input else { return Ok(acc) };
        let keys = n.keys();
        let width = n.rows.num_columns();
        let mut map: KeyedSlots<'_, (u32, Vec<Option<u32>>)> = KeyedSlots::new();
        for element in acc.into_iter().flatten().chain(input) {
            let key = match &element {
                Element::Input(e) if !n.is_valid(*e) => continue,
                Element::Input(e) => *e,
                Element::Merged { key, .. } => *key,
            };
            if !n.admit(key, &self.field)? {
                continue;
            }
            let row = keys.row(key as usize);
            if map.get(&row).is_none() {
                map.put(row, (key, vec![None; width]));
            }
            let (_, target) = map.get_mut(&row).expect("just inserted");
            match &element {
                Element::Input(e) => {
                    for (f, slot) in target.iter_mut().enumerate() {
                        if n.rows.column(f).is_valid(*e as usize) {
                            *slot = Some(*e);
                        }
                    }
                }
                Element::Merged { fields, .. } => {
                    for (slot, source) in target.iter_mut().zip(fields.iter()) {
                        if source.is_some() {
                            *slot = *source;
                        }
                    }
                }
            }
        }
        let merged = map
            .into_values()
            .into_iter()
            .map(|(key, fields)| Element::Merged {
                key,
                fields: fields.into_boxed_slice(),
            });
        Ok(Some(merged.collect()))
    }

    /// Gathers the accumulated elements of all groups into one array of nested rows.
    fn gather(rows: &StructArray, results: &[Acc<Element>]) -> Result<ArrayRef> {
        let elements: Vec<&Element> = results.iter().flatten().flatten().collect();
        let mut columns = Vec::with_capacity(rows.num_columns());
        for (f, column) in rows.columns().iter().enumerate() {
            let indices: UInt32Array = elements
                .iter()
                .map(|e| match e {
                    Element::Input(i) => Some(*i),
                    Element::Merged { fields, .. } => fields[f],
                })
                .collect();
            columns.push(take(column.as_ref(), &indices, None)?);
        }
        let valid = elements.iter().map(|e| match e {
            Element::Input(i) => rows.is_valid(*i as usize),
            Element::Merged { .. } => true,
        });
        let nulls = NullBuffer::from_iter(valid);
        let nulls = (nulls.null_count() > 0).then_some(nulls);
        Ok(Arc::new(StructArray::try_new(
            rows.fields().clone(),
            columns,
            nulls,
        )?))
    }
}

impl FieldAggregator for NestedPartialUpdate {
    fn name(&self) -> &'static str {
        PARTIAL
    }

    fn supports_retract(&self) -> bool {
        false
    }

    fn fold(&self, input: &ArrayRef, groups: Groups<'_>) -> Result<ArrayRef> {
        let list = as_list(input, PARTIAL, &self.field)?;
        let rows = nested_rows(list.values(), PARTIAL, &self.field)?;
        let n = Nested::new(rows, &self.key, &[], self.null_keys, true)?;
        let (offsets, nulls) = (list.value_offsets(), list.nulls());
        let elements = |row: usize| {
            raw_elements(nulls, offsets, row).map(|v| v.into_iter().map(Element::Input).collect())
        };
        let results = fold_groups(groups, elements, |step, acc, row| match step {
            Step::Retract => Err(retract_unsupported(PARTIAL, &self.field)),
            Step::AddReversed => self.agg(&n, elements(row), acc),
            _ => self.agg(&n, acc, elements(row)),
        })?;
        let values = Self::gather(rows, &results)?;
        build_list_from(list, &results, values)
    }
}

#[cfg(test)]
mod tests;
