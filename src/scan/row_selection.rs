//! Which rows of a Parquet data file a read needs, from the file's row-group statistics and
//! page index: row groups and pages that cannot hold a matching key are never fetched or
//! decoded.
//!
//! Two things narrow a read:
//! - the pushed-down predicate ([`StatsPruning`]). On a primary-key table only key columns may
//!   prune: a key never changes, so a row group whose keys cannot match holds no version of a
//!   matching row, while skipping one by its *values* could let an older version resurface.
//!   Append tables have one version per row and use every column.
//! - the [`KeyRange`] of one partition of a bucket (`super::parallel`): rows whose first key
//!   column lies outside it belong to another partition. Row groups and pages outside are
//!   skipped here; [`KeyRange::filter`] then drops the remaining rows outside exactly, after
//!   decoding, so every version of a key is merged by exactly one partition.
//!
//! Pages are pruned by the first key column only (its pages are where the key order shows);
//! files without a page index are narrowed by row groups.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar, UInt64Array};
use arrow::compute::kernels::cmp::{gt_eq, lt, lt_eq};
use arrow::compute::{and, cast, filter_record_batch};
use arrow::datatypes::{DataType as ArrowType, Schema};
use datafusion::common::{Column, Result, ScalarValue};
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningStatistics};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::file::metadata::ParquetMetaData;

use crate::spec::TableSchema;

/// A pushed-down predicate and the table columns whose statistics may prune with it.
#[derive(Debug)]
pub(crate) struct StatsPruning {
    pub(crate) predicate: Arc<PruningPredicate>,
    /// (column name in the predicate's schema, field id, Arrow type in the predicate's schema).
    pub(crate) columns: Vec<(String, i32, ArrowType)>,
    /// The first key column (primary-key tables, partition keys trimmed): name, field id and
    /// Arrow type. Its pages may prune too.
    pub(crate) first_key: Option<(String, i32, ArrowType)>,
}

impl StatsPruning {
    /// Which of `units` (first-key statistics of `column`, Arrow type `target`) may hold rows
    /// the predicate wants; `None` when the predicate cannot be judged on them.
    pub(crate) fn may_match_units(
        &self,
        column: &str,
        units: &[KeyUnit],
        target: &ArrowType,
    ) -> Option<Vec<bool>> {
        let stats = UnitStats {
            column,
            units,
            target,
        };
        self.predicate.prune(&stats).ok()
    }

    /// Pruning for `table`: key columns of a primary-key table, every column of an append table.
    pub(crate) fn new(table: &TableSchema, predicate: Arc<PruningPredicate>) -> Self {
        let keys: HashSet<&str> = table.primary_keys.iter().map(String::as_str).collect();
        let columns = table
            .fields
            .iter()
            .filter(|f| keys.is_empty() || keys.contains(f.name.as_str()))
            .map(|f| (f.name.clone(), f.id, f.data_type.to_arrow()))
            .collect();
        StatsPruning {
            predicate,
            columns,
            first_key: table
                .trimmed_primary_keys()
                .first()
                .map(|f| (f.name.clone(), f.id, f.data_type.to_arrow())),
        }
    }
}

/// The keys of one partition of a bucket: first key column in `[lower, upper)`, or
/// `[lower, upper]` with `upper_inclusive` (unbounded where `None`). Splitting on the first key column alone keeps every version of a key in one
/// range, whatever the other key columns hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyRange {
    /// Field id and Arrow type of the first key column (partition keys trimmed).
    pub(crate) field_id: i32,
    pub(crate) key_type: ArrowType,
    pub(crate) lower: Option<ScalarValue>,
    pub(crate) upper: Option<ScalarValue>,
    /// `upper` belongs to the range (`[lower, upper]`).
    pub(crate) upper_inclusive: bool,
}

impl KeyRange {
    /// Whether a unit (row group, page, file) with first-key statistics `min..=max` (unknown
    /// where `None`) may hold keys of the range.
    pub(crate) fn overlaps(&self, min: Option<&ScalarValue>, max: Option<&ScalarValue>) -> bool {
        let below_upper = match (&self.upper, min) {
            (Some(upper), Some(min)) => min
                .partial_cmp(upper)
                .is_none_or(|o| o.is_lt() || (self.upper_inclusive && o.is_eq())),
            _ => true,
        };
        let above_lower = match (&self.lower, max) {
            (Some(lower), Some(max)) => max.partial_cmp(lower).is_none_or(|o| o.is_ge()),
            _ => true,
        };
        below_upper && above_lower
    }

    /// The range's bounds as inclusive integers (`i64::MIN` / `i64::MAX` where unbounded, or
    /// where a bound is not an integer); an empty range has the lower above the upper.
    pub(crate) fn integer_bounds(&self) -> (i64, i64) {
        let integer = |bound: &ScalarValue| match bound {
            ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
            ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
            ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
            ScalarValue::Int64(Some(v)) => Some(*v),
            _ => None,
        };
        let lower = self.lower.as_ref().and_then(integer).unwrap_or(i64::MIN);
        let upper = match self.upper.as_ref().and_then(integer) {
            Some(upper) if self.upper_inclusive => upper,
            Some(upper) => match upper.checked_sub(1) {
                Some(below) => below,
                None => return (i64::MAX, i64::MIN),
            },
            None => i64::MAX,
        };
        (lower, upper)
    }

    /// The keys of `unit` that lie in the range: its first-key statistics narrowed to the
    /// range's bounds (an exclusive upper bound kept as a maximum errs on the safe side). A
    /// page that straddles a cut is then judged by a predicate on the part this range reads.
    pub(crate) fn clamp(&self, unit: &KeyUnit) -> KeyUnit {
        let tighter =
            |a: &Option<ScalarValue>, b: &Option<ScalarValue>, take_b: fn(Ordering) -> bool| match (a, b) {
                (Some(a), Some(b)) => Some(
                    if a.partial_cmp(b).is_some_and(take_b) {
                        b
                    } else {
                        a
                    }
                    .clone(),
                ),
                (Some(v), None) | (None, Some(v)) => Some(v.clone()),
                (None, None) => None,
            };
        KeyUnit {
            rows: unit.rows.clone(),
            min: tighter(&unit.min, &self.lower, Ordering::is_lt),
            max: tighter(&unit.max, &self.upper, Ordering::is_gt),
        }
    }

    /// The rows of `batch` whose `column` lies in the range (the batch itself if all do).
    ///
    /// `column` is the first key column of a sorted run, so it ascends: when its first and last
    /// values lie in the range, so does every value between them, and the batch is kept without
    /// comparing each row (only the batches that straddle a cut are compared row by row).
    pub(crate) fn filter(&self, batch: RecordBatch, column: usize) -> Result<RecordBatch> {
        let values = batch.column(column);
        if batch.num_rows() > 0 && values.null_count() == 0 {
            let first = ScalarValue::try_from_array(values, 0)?;
            let last = ScalarValue::try_from_array(values, batch.num_rows() - 1)?;
            if self.holds(&first)? && self.holds(&last)? {
                return Ok(batch);
            }
        }
        let bound = |v: &ScalarValue| -> Result<Scalar<ArrayRef>> {
            Ok(Scalar::new(v.cast_to(values.data_type())?.to_array()?))
        };
        let mut mask: Option<BooleanArray> = None;
        if let Some(lower) = &self.lower {
            mask = Some(gt_eq(values, &bound(lower)?)?);
        }
        if let Some(upper) = &self.upper {
            let below = if self.upper_inclusive {
                lt_eq(values, &bound(upper)?)?
            } else {
                lt(values, &bound(upper)?)?
            };
            mask = Some(match mask {
                Some(m) => and(&m, &below)?,
                None => below,
            });
        }
        match mask {
            Some(m) if m.true_count() < batch.num_rows() => Ok(filter_record_batch(&batch, &m)?),
            _ => Ok(batch),
        }
    }

    /// Whether `value` (of the key column's type) lies in the range; `false` when a bound does
    /// not compare with it.
    fn holds(&self, value: &ScalarValue) -> Result<bool> {
        let compare = |bound: &ScalarValue| -> Result<Option<Ordering>> {
            Ok(value.partial_cmp(&bound.cast_to(&value.data_type())?))
        };
        let above_lower = match &self.lower {
            Some(lower) => compare(lower)?.is_some_and(Ordering::is_ge),
            None => true,
        };
        let below_upper = match &self.upper {
            Some(upper) => compare(upper)?.is_some_and(|o| o.is_lt() || (self.upper_inclusive && o.is_eq())),
            None => true,
        };
        Ok(above_lower && below_upper)
    }

    /// `[lower, upper)` for `EXPLAIN`.
    pub(crate) fn display(&self) -> String {
        let show = |v: &Option<ScalarValue>| v.as_ref().map_or("..".to_string(), |v| v.to_string());
        let close = if self.upper_inclusive { ']' } else { ')' };
        format!("[{}, {}{close}", show(&self.lower), show(&self.upper))
    }
}

/// One unit of a file (row group or page of the first key column): its rows and first-key
/// statistics.
#[derive(Debug, Clone)]
pub(crate) struct KeyUnit {
    pub(crate) rows: Range<usize>,
    pub(crate) min: Option<ScalarValue>,
    pub(crate) max: Option<ScalarValue>,
}

/// Resolves table columns to the columns of one file (by field id through the schema the file
/// was written with) and reads their statistics.
struct FileColumns<'a> {
    metadata: &'a ParquetMetaData,
    arrow: &'a Schema,
    file_schema: &'a TableSchema,
}

impl<'a> FileColumns<'a> {
    fn converter(&self, field_id: i32) -> Option<StatisticsConverter<'a>> {
        let name = &self.file_schema.fields.iter().find(|f| f.id == field_id)?.name;
        StatisticsConverter::try_new(name, self.arrow, self.metadata.file_metadata().schema_descr()).ok()
    }

    /// Cast to the table's type; statistics that cannot be cast are unknown.
    fn cast(array: ArrayRef, target: &ArrowType) -> Option<ArrayRef> {
        if array.data_type() == target {
            return Some(array);
        }
        cast(&array, target).ok()
    }

    /// Row ranges of every row group.
    fn row_group_rows(&self) -> Vec<Range<usize>> {
        let mut start = 0;
        self.metadata
            .row_groups()
            .iter()
            .map(|rg| {
                let end = start + rg.num_rows().max(0) as usize;
                let r = start..end;
                start = end;
                r
            })
            .collect()
    }

    /// Row groups, or with a page index the pages of `field_id`'s column, with its min and max
    /// cast to `target`.
    fn key_units(&self, field_id: i32, target: &ArrowType, row_groups: &[usize]) -> Vec<KeyUnit> {
        let group_rows = self.row_group_rows();
        let whole = |i: usize| KeyUnit {
            rows: group_rows[i].clone(),
            min: None,
            max: None,
        };
        let Some(conv) = self.converter(field_id) else {
            return row_groups.iter().map(|&i| whole(i)).collect();
        };
        let value = |a: &Option<ArrayRef>, i: usize| {
            a.as_ref()
                .filter(|a| a.is_valid(i))
                .and_then(|a| ScalarValue::try_from_array(a, i).ok())
        };
        if let (Some(index), Some(offsets)) = (self.metadata.column_index(), self.metadata.offset_index()) {
            let mut units = Vec::new();
            for &g in row_groups {
                let one = [g];
                let mins = conv.data_page_mins(index, offsets, &one).ok();
                let maxes = conv.data_page_maxes(index, offsets, &one).ok();
                let counts = conv
                    .data_page_row_counts(offsets, self.metadata.row_groups(), &one)
                    .ok()
                    .flatten();
                let (Some(mins), Some(maxes), Some(counts)) = (mins, maxes, counts) else {
                    units.push(whole(g));
                    continue;
                };
                let mins = Self::cast(mins, target);
                let maxes = Self::cast(maxes, target);
                let mut start = group_rows[g].start;
                for p in 0..counts.len() {
                    let end = start + counts.value(p) as usize;
                    units.push(KeyUnit {
                        rows: start..end,
                        min: value(&mins, p),
                        max: value(&maxes, p),
                    });
                    start = end;
                }
            }
            return units;
        }
        let groups = self.metadata.row_groups();
        let mins = conv
            .row_group_mins(groups)
            .ok()
            .and_then(|a| Self::cast(a, target));
        let maxes = conv
            .row_group_maxes(groups)
            .ok()
            .and_then(|a| Self::cast(a, target));
        row_groups
            .iter()
            .map(|&g| KeyUnit {
                rows: group_rows[g].clone(),
                min: value(&mins, g),
                max: value(&maxes, g),
            })
            .collect()
    }
}

/// Row-group statistics of the columns a [`StatsPruning`] may use.
struct RowGroupStats<'a> {
    file: &'a FileColumns<'a>,
    pruning: &'a StatsPruning,
}

impl RowGroupStats<'_> {
    fn stat(&self, column: &Column, which: Stat) -> Option<ArrayRef> {
        let (_, id, target) = self.pruning.columns.iter().find(|(n, _, _)| *n == column.name)?;
        let conv = self.file.converter(*id)?;
        let groups = self.file.metadata.row_groups();
        match which {
            Stat::Min => FileColumns::cast(conv.row_group_mins(groups).ok()?, target),
            Stat::Max => FileColumns::cast(conv.row_group_maxes(groups).ok()?, target),
            Stat::Nulls => Some(Arc::new(conv.row_group_null_counts(groups).ok()?)),
        }
    }
}

enum Stat {
    Min,
    Max,
    Nulls,
}

impl PruningStatistics for RowGroupStats<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.stat(column, Stat::Min)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.stat(column, Stat::Max)
    }

    fn num_containers(&self) -> usize {
        self.file.metadata.num_row_groups()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.stat(column, Stat::Nulls)
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let counts: UInt64Array = self
            .file
            .metadata
            .row_groups()
            .iter()
            .map(|rg| rg.num_rows().max(0) as u64)
            .collect();
        Some(Arc::new(counts))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// First-key statistics of units (pages or row groups) for page-level pruning.
struct UnitStats<'a> {
    column: &'a str,
    units: &'a [KeyUnit],
    target: &'a ArrowType,
}

impl UnitStats<'_> {
    fn values(&self, column: &Column, pick: impl Fn(&KeyUnit) -> &Option<ScalarValue>) -> Option<ArrayRef> {
        if column.name != self.column {
            return None;
        }
        let values: Vec<ScalarValue> = self
            .units
            .iter()
            .map(|u| match pick(u) {
                Some(v) => Ok(v.clone()),
                None => ScalarValue::try_from(self.target),
            })
            .collect::<Result<_>>()
            .ok()?;
        ScalarValue::iter_to_array(values).ok()
    }
}

impl PruningStatistics for UnitStats<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.values(column, |u| &u.min)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.values(column, |u| &u.max)
    }

    fn num_containers(&self) -> usize {
        self.units.len()
    }

    fn null_counts(&self, _column: &Column) -> Option<ArrayRef> {
        None
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        None
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// The first-key units of every row group of a file, for planning key ranges.
pub(crate) fn file_key_units(
    metadata: &ParquetMetaData,
    arrow: &Schema,
    file_schema: &TableSchema,
    field_id: i32,
    target: &ArrowType,
) -> Vec<KeyUnit> {
    let file = FileColumns {
        metadata,
        arrow,
        file_schema,
    };
    let all: Vec<usize> = (0..metadata.num_row_groups()).collect();
    file.key_units(field_id, target, &all)
}

/// The rows of a Parquet file a read needs, as ascending ranges, or `None` for all of them.
/// `first_key` is the first key column's (field id, Arrow type in the read).
pub(crate) fn wanted_rows(
    metadata: &ParquetMetaData,
    arrow: &Schema,
    file_schema: &TableSchema,
    pruning: Option<&StatsPruning>,
    key_range: Option<&KeyRange>,
) -> Option<Vec<Range<usize>>> {
    if pruning.is_none() && key_range.is_none() {
        return None;
    }
    let first_key = match key_range {
        Some(r) => Some((r.field_id, &r.key_type)),
        None => pruning.and_then(|p| p.first_key.as_ref().map(|(_, id, t)| (*id, t))),
    };
    let file = FileColumns {
        metadata,
        arrow,
        file_schema,
    };
    let Some((key_id, key_type)) = first_key else {
        let rows = file.row_group_rows();
        let groups = file.row_groups_kept(pruning);
        return Some(groups.iter().map(|&g| rows[g].clone()).collect());
    };
    let units = file.units_kept(pruning, key_range, key_id, key_type);
    let mut ranges: Vec<Range<usize>> = Vec::with_capacity(units.len());
    for u in units {
        match ranges.last_mut() {
            Some(last) if last.end == u.rows.start => last.end = u.rows.end,
            _ => ranges.push(u.rows),
        }
    }
    Some(ranges)
}

/// The first-key units (pages, or row groups without a page index) of a Parquet file that a
/// read with `pruning` (and no key range) fetches, in file order.
pub(crate) fn wanted_key_units(
    metadata: &ParquetMetaData,
    arrow: &Schema,
    file_schema: &TableSchema,
    pruning: Option<&StatsPruning>,
    field_id: i32,
    target: &ArrowType,
) -> Vec<KeyUnit> {
    let file = FileColumns {
        metadata,
        arrow,
        file_schema,
    };
    file.units_kept(pruning, None, field_id, target)
}

impl FileColumns<'_> {
    /// The row groups `pruning` may need (all without it).
    fn row_groups_kept(&self, pruning: Option<&StatsPruning>) -> Vec<usize> {
        let mut groups: Vec<usize> = (0..self.metadata.num_row_groups()).collect();
        if let Some(p) = pruning {
            let stats = RowGroupStats {
                file: self,
                pruning: p,
            };
            if let Ok(keep) = p.predicate.prune(&stats) {
                groups.retain(|&g| keep.get(g).copied().unwrap_or(true));
            }
        }
        groups
    }

    /// The units of the kept row groups that may hold keys of `key_range` the predicate wants:
    /// judged on their first-key statistics narrowed to the range (`KeyRange::clamp`).
    fn units_kept(
        &self,
        pruning: Option<&StatsPruning>,
        key_range: Option<&KeyRange>,
        key_id: i32,
        key_type: &ArrowType,
    ) -> Vec<KeyUnit> {
        let mut units = self.key_units(key_id, key_type, &self.row_groups_kept(pruning));
        if let Some(range) = key_range {
            units.retain(|u| range.overlaps(u.min.as_ref(), u.max.as_ref()));
        }
        let Some((p, column)) = pruning.and_then(|p| p.first_key.as_ref().map(|(c, _, _)| (p, c))) else {
            return units;
        };
        let clamped: Vec<KeyUnit>;
        let judged = match key_range {
            Some(range) => {
                clamped = units.iter().map(|u| range.clamp(u)).collect();
                &clamped
            }
            None => &units,
        };
        match p.may_match_units(column, judged, key_type) {
            Some(keep) => units
                .into_iter()
                .zip(keep)
                .filter_map(|(u, k)| k.then_some(u))
                .collect(),
            None => units,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int32Array;
    use arrow::datatypes::Field;

    fn range(lower: Option<i32>, upper: Option<i32>) -> KeyRange {
        KeyRange {
            field_id: 0,
            key_type: ArrowType::Int32,
            upper_inclusive: false,
            lower: lower.map(|v| ScalarValue::Int32(Some(v))),
            upper: upper.map(|v| ScalarValue::Int32(Some(v))),
        }
    }

    #[test]
    fn a_range_includes_its_lower_bound_and_excludes_its_upper_bound() {
        let schema = Arc::new(Schema::new(vec![Field::new("k", ArrowType::Int32, false)]));
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5]))]).unwrap();
        let kept = range(Some(2), Some(4)).filter(batch.clone(), 0).unwrap();
        let values: Vec<i32> = kept
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap()
            .values()
            .to_vec();
        assert_eq!(values, vec![2, 3]);
        assert_eq!(range(None, None).filter(batch.clone(), 0).unwrap().num_rows(), 5);
        assert_eq!(range(Some(5), None).filter(batch, 0).unwrap().num_rows(), 1);
    }

    /// A batch whose first and last keys lie in the range is kept whole (the same arrays, no
    /// comparison kernel); one that straddles a bound is cut at it, an inclusive upper bound
    /// included.
    #[test]
    fn a_batch_inside_the_range_is_kept_without_filtering() {
        let schema = Arc::new(Schema::new(vec![Field::new("k", ArrowType::Int32, false)]));
        let batch = |keys: Vec<i32>| {
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int32Array::from(keys))]).unwrap()
        };
        let keys = |b: &RecordBatch| {
            b.column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap()
                .values()
                .to_vec()
        };
        let inside = batch(vec![10, 12, 19]);
        let kept = range(Some(10), Some(20)).filter(inside.clone(), 0).unwrap();
        assert!(Arc::ptr_eq(kept.column(0), inside.column(0)));
        let straddling = batch(vec![8, 10, 15, 20, 21]);
        assert_eq!(
            keys(&range(Some(10), Some(20)).filter(straddling.clone(), 0).unwrap()),
            vec![10, 15]
        );
        let inclusive = KeyRange {
            upper_inclusive: true,
            ..range(Some(10), Some(20))
        };
        assert_eq!(keys(&inclusive.filter(straddling, 0).unwrap()), vec![10, 15, 20]);
        let upper_only = inclusive.filter(batch(vec![12, 20]), 0).unwrap();
        assert_eq!(keys(&upper_only), vec![12, 20]);
        assert_eq!(
            range(Some(10), Some(20))
                .filter(batch(vec![20, 30]), 0)
                .unwrap()
                .num_rows(),
            0
        );
    }

    #[test]
    fn units_overlap_a_range_unless_their_statistics_rule_it_out() {
        let v = |x: i32| ScalarValue::Int32(Some(x));
        let r = range(Some(10), Some(20));
        assert!(r.overlaps(Some(&v(5)), Some(&v(10))));
        assert!(!r.overlaps(Some(&v(0)), Some(&v(9))));
        assert!(!r.overlaps(Some(&v(20)), Some(&v(30))));
        assert!(r.overlaps(Some(&v(19)), Some(&v(30))));
        assert!(r.overlaps(None, None));
    }

    #[test]
    fn a_unit_is_clamped_to_the_keys_a_range_reads() {
        let v = |x: i32| Some(ScalarValue::Int32(Some(x)));
        let unit = |min, max| KeyUnit {
            rows: 0..100,
            min,
            max,
        };
        // a page straddling the cut at 20: the range [.., 20) reads its keys 5..=20 at most
        let clamped = range(None, Some(20)).clamp(&unit(v(5), v(90)));
        assert_eq!((clamped.min, clamped.max, clamped.rows), (v(5), v(20), 0..100));
        let clamped = range(Some(20), None).clamp(&unit(v(5), v(90)));
        assert_eq!((clamped.min, clamped.max), (v(20), v(90)));
        // inside the range: unchanged; unknown statistics take the range's bounds
        let clamped = range(Some(0), Some(100)).clamp(&unit(v(5), v(90)));
        assert_eq!((clamped.min, clamped.max), (v(5), v(90)));
        let clamped = range(Some(10), Some(20)).clamp(&unit(None, None));
        assert_eq!((clamped.min, clamped.max), (v(10), v(20)));
        let clamped = range(None, None).clamp(&unit(None, v(3)));
        assert_eq!((clamped.min, clamped.max), (None, v(3)));
    }
}
