//! Opening one data file as a stream of batches in the *read schema*.
//!
//! Columns are matched by field id through the schema the file was written with
//! (`_SCHEMA_ID`), so renamed columns read under their old name, retyped columns are cast, added
//! columns read as NULL and dropped columns are ignored (format.md §6.6).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType as ArrowType, SchemaRef};
use datafusion::common::{exec_datafusion_err, Result, ScalarValue};
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::ObjectStore;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

use super::cast::cast_column;
use super::dense_rows::dense_rows;
use super::row_selection::{wanted_rows, KeyRange, StatsPruning};
use crate::deletion_vector::DvRef;
use crate::format::{OpenedFile, ValueFilter};
use crate::io::FooterCache;
use crate::spec::{BinaryRow, DataField, DataFileMeta, TableSchema, SEQUENCE_NUMBER, VALUE_KIND};

use super::read_layout::ReadLayout;

/// One data file to open.
#[derive(Debug, Clone)]
pub(crate) struct FileToRead {
    pub(crate) path: Path,
    pub(crate) size: u64,
    /// Whether `_SEQUENCE_NUMBER` is needed. A run read without merging only needs the row
    /// kind, so its sequence column is not decoded (it reads as zeros).
    pub(crate) need_sequence: bool,
    /// Rows to skip (deletion vector), by position in the file.
    pub(crate) deletion: Option<DvRef>,
    /// Row groups and pages that cannot match the pushed-down predicate are skipped.
    pub(crate) pruning: Option<Arc<StatsPruning>>,
    /// Only keys in this range are returned (one partition of a bucket).
    pub(crate) key_range: Option<Arc<KeyRange>>,
    /// Only these rows, by position (ascending ranges). Honoured exactly by Parquet only: a
    /// caller that needs exactly these rows checks the format first.
    pub(crate) rows: Option<Arc<[Range<usize>]>>,
    /// Rows failing this filter may be skipped (Parquet); a filter on values only for files
    /// read without a merge, see [`ValueFilter`].
    pub(crate) value_filter: Option<Arc<ValueFilter>>,
    /// Parquet footers read before (the catalog's), consulted and filled when given.
    pub(crate) footers: Option<Arc<FooterCache>>,
    /// Decode only these layout fields (by index); the others read as NULL. `None`: all.
    pub(crate) only_fields: Option<Arc<[usize]>>,
    /// The file's key is one integer column holding every value from its smallest key up, one
    /// per row: computed from row positions instead of decoded (Parquet, no value filter).
    pub(crate) dense_key: Option<DenseKey>,
    /// Row tracking: what `_ROW_ID` and `_SEQUENCE_NUMBER` are for rows of a file that does not
    /// store them.
    pub(crate) row_tracking: Option<RowTracking>,
    /// The read is its statement's longest task (a diff's single-run state): a big Parquet
    /// file read without a value filter is decoded by two readers, a share of its columns
    /// each, side by side ([`SIDE_BY_SIDE_ROWS`]).
    pub(crate) side_by_side: bool,
}

/// Files of fewer rows decode in a few milliseconds: a second reader and task is not worth it.
const SIDE_BY_SIDE_ROWS: usize = 64 * 1024;

/// The row-tracking facts of a data file, from its manifest entry: a row's `_ROW_ID` is the
/// file's first row id plus its position, its `_SEQUENCE_NUMBER` the file's largest (Java
/// `DataFileRecordReader`), unless the file stores the columns (a compacted file does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowTracking {
    pub(crate) first_row_id: Option<i64>,
    pub(crate) max_sequence_number: i64,
    pub(crate) row_count: i64,
}

/// A data file whose keys are `first, first + 1, ...` in row order: a sorted run's keys are
/// unique and ascending, so a file whose largest key is its smallest plus its row count minus
/// one holds exactly those (from its manifest entry, [`DenseKey::of_file`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DenseKey {
    /// Field id of the key column.
    pub(crate) field_id: i32,
    /// The key of the file's first row.
    pub(crate) first: i64,
}

impl DenseKey {
    /// The dense key of a data file of a sorted run with the single integer key `field_id`,
    /// from its smallest and largest key and row count; `None` unless every key in between is
    /// present. Only for data files of a primary-key table: changelog files repeat keys.
    pub(crate) fn of_file(
        field_id: i32,
        min: &[ScalarValue],
        max: &[ScalarValue],
        rows: i64,
    ) -> Option<Self> {
        let ([min], [max]) = (min, max) else {
            return None;
        };
        let (min, max) = (integer(min)?, integer(max)?);
        (rows > 0 && max.checked_sub(min)?.checked_add(1)? == rows)
            .then_some(DenseKey { field_id, first: min })
    }

    /// [`DenseKey::of_file`] from a data file's manifest entry, written with `file_schema`.
    pub(crate) fn of_data_file(file: &DataFileMeta, file_schema: &TableSchema) -> Option<Self> {
        let [key] = file_schema.trimmed_primary_keys()[..] else {
            return None;
        };
        let types = [key.data_type.clone()];
        let min = BinaryRow::decode(&file.min_key, &types).ok()?.values;
        let max = BinaryRow::decode(&file.max_key, &types).ok()?.values;
        Self::of_file(key.id, &min, &max, file.row_count)
    }
}

pub(super) fn integer(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Some(*v),
        _ => None,
    }
}

impl FileToRead {
    /// The whole file (minus `deletion`), with every column the layout asks for.
    pub(crate) fn whole(path: Path, size: u64, need_sequence: bool, deletion: Option<DvRef>) -> Self {
        FileToRead {
            path,
            size,
            need_sequence,
            deletion,
            pruning: None,
            key_range: None,
            rows: None,
            value_filter: None,
            footers: None,
            only_fields: None,
            dense_key: None,
            row_tracking: None,
            side_by_side: false,
        }
    }
}

/// Where each output column comes from in one file.
enum ColumnSource {
    File {
        name: String,
        target: ArrowType,
    },
    Missing(ArrowType),
    /// The dense key: its first value plus the row's position.
    Dense(ArrowType),
    /// `_ROW_ID`: the file's first row id plus the row's position.
    RowId,
    /// The same value in every row (`_SEQUENCE_NUMBER` of a file that does not store it).
    Constant(i64),
}

/// Opens `file` (Parquet, ORC or Avro, see [`crate::format`]) and returns its batches in
/// `layout`'s schema.
pub(crate) async fn read_file(
    store: Arc<dyn ObjectStore>,
    file: FileToRead,
    file_schema: Arc<TableSchema>,
    layout: Arc<ReadLayout>,
    batch_size: usize,
) -> Result<impl futures::Stream<Item = Result<RecordBatch>> + Send> {
    let narrowed = file.pruning.is_some() || file.key_range.is_some() || file.rows.is_some();
    let opened = match &file.footers {
        Some(footers) => {
            crate::format::open_cached(Arc::clone(&store), &file.path, file.size, narrowed, footers).await?
        }
        None => crate::format::open(Arc::clone(&store), &file.path, file.size, narrowed).await?,
    };
    read_opened_file(&store, opened, file, file_schema, layout, batch_size).await
}

/// As [`read_file`], for a file opened already (its footer read; see [`OpenedFile::reopen`]).
/// `store` holds the deletion vector.
pub(crate) async fn read_opened_file(
    store: &Arc<dyn ObjectStore>,
    opened: OpenedFile,
    file: FileToRead,
    file_schema: Arc<TableSchema>,
    layout: Arc<ReadLayout>,
    batch_size: usize,
) -> Result<impl futures::Stream<Item = Result<RecordBatch>> + Send> {
    // Object-store paths have no leading slash; local ones then read as the path they are.
    let shown = format!("/{}", file.path);
    let deleted = match &file.deletion {
        Some(dv) => Some(dv.load(store).await.map_err(|e| {
            exec_datafusion_err!("Failed to read the deletion vector of data file {shown}: {e}")
        })?),
        None => None,
    };
    let narrowed = file.pruning.is_some() || file.key_range.is_some() || file.rows.is_some();
    let file_arrow = Arc::clone(opened.schema());
    let pruned = match opened.parquet_metadata() {
        Some(metadata) if narrowed => wanted_rows(
            metadata,
            &file_arrow,
            &file_schema,
            file.pruning.as_deref(),
            file.key_range.as_deref(),
        ),
        _ => None,
    };
    let mut rows_needed = match (pruned, &file.rows) {
        (Some(pruned), Some(rows)) => Some(crate::format::intersect_ranges(&pruned, rows)),
        (None, Some(rows)) => Some(rows.to_vec()),
        (pruned, None) => pruned,
    };
    // Rows come back in the order of their positions, which are known unless a filter in the
    // reader drops some.
    let opened_rows = opened
        .parquet_metadata()
        .map(|metadata| metadata.file_metadata().num_rows().max(0) as usize);
    // A dense key's filter finds its rows by subtraction; when they are exactly the rows it
    // keeps, it needs no evaluation and the key no decoding.
    let mut value_filter = file.value_filter.as_ref();
    if let (Some(dense), Some(filter), Some(rows)) = (file.dense_key, value_filter, opened_rows) {
        if let Some(found) = dense_rows(filter, dense, rows) {
            rows_needed = Some(match rows_needed {
                Some(needed) => crate::format::intersect_ranges(&needed, &found.ranges),
                None => found.ranges,
            });
            if found.exact {
                value_filter = None;
            }
        }
    }
    let by_id: HashMap<i32, &DataField> = file_schema.fields.iter().map(|f| (f.id, f)).collect();

    // (the key range's column is always decoded: the range filters on it)
    let range_field = file.key_range.as_ref().map(|r| r.field_id);
    let skipped = |i: usize| {
        file.only_fields.as_ref().is_some_and(|only| !only.contains(&i))
            && range_field != Some(layout.fields[i].id)
    };
    // (computed row ids count positions: no row may be dropped inside the reader)
    let computes_row_ids = layout.fields.iter().enumerate().any(|(i, f)| {
        !skipped(i)
            && matches!(
                row_tracking_source(f.id, &file_arrow, file.row_tracking),
                Some(ColumnSource::RowId)
            )
    });
    let filter = value_filter
        .filter(|_| !computes_row_ids)
        .and_then(|f| f.for_file(&file_schema, &file_arrow));
    let dense_key = file
        .dense_key
        .filter(|_| filter.is_none() && opened_rows.is_some());
    let sources: Vec<ColumnSource> = layout
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let target = layout.schema.field(i).data_type().clone();
            if skipped(i) {
                return ColumnSource::Missing(target);
            }
            if dense_key.is_some_and(|dense| dense.field_id == f.id) {
                return ColumnSource::Dense(target);
            }
            if let Some(source) = row_tracking_source(f.id, &file_arrow, file.row_tracking) {
                return source;
            }
            match by_id.get(&f.id) {
                Some(old) if file_arrow.index_of(&old.name).is_ok() => ColumnSource::File {
                    name: old.name.clone(),
                    target,
                },
                _ => ColumnSource::Missing(target),
            }
        })
        .collect();
    // String columns the layout wants as views, where the file stores strings too.
    let as_views: Vec<String> = sources
        .iter()
        .filter_map(|s| match s {
            ColumnSource::File { name, target } if *target == ArrowType::Utf8View => {
                let stored = file_arrow.field_with_name(name).ok()?.data_type();
                matches!(stored, ArrowType::Utf8 | ArrowType::LargeUtf8).then(|| name.clone())
            }
            _ => None,
        })
        .collect();
    let mut wanted: Vec<String> = sources
        .iter()
        .filter_map(|s| match s {
            ColumnSource::File { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let constant_kind = match layout.with_system_columns {
        true => opened
            .parquet_metadata()
            .and_then(|metadata| constant_kind(metadata)),
        false => None,
    };
    if layout.with_system_columns {
        for sys in [SEQUENCE_NUMBER, VALUE_KIND] {
            if file_arrow.index_of(sys).is_err() {
                return Err(exec_datafusion_err!(
                    "Data file {shown} has no {sys} column; it is not a primary-key data file"
                ));
            }
            let needed = match sys {
                VALUE_KIND => constant_kind.is_none(),
                _ => file.need_sequence,
            };
            if needed {
                wanted.push(sys.to_string());
            }
        }
    }
    // (rows the reader selects; deleted rows among them are few)
    let rows_selected = match &rows_needed {
        Some(ranges) => ranges.iter().map(|r| r.len()).sum(),
        None => opened_rows.unwrap_or(0),
    };
    let side_by_side =
        file.side_by_side && filter.is_none() && wanted.len() >= 2 && rows_selected >= SIDE_BY_SIDE_ROWS;
    let stream = match side_by_side {
        true => opened.read_side_by_side(
            &wanted,
            &as_views,
            deleted.as_ref(),
            rows_needed.as_deref(),
            batch_size,
        )?,
        false => opened.read(
            &wanted,
            &as_views,
            deleted.as_ref(),
            rows_needed.as_deref(),
            filter,
            batch_size,
        )?,
    };
    let sources = Arc::new(sources);
    // Pruning skipped whole pages; the range's bounds still cut through the pages kept.
    let key_filter = match &file.key_range {
        Some(range) => {
            let column = layout
                .fields
                .iter()
                .position(|f| f.id == range.field_id)
                .ok_or_else(|| {
                    exec_datafusion_err!("The key range of a read of {shown} needs its first key column")
                })?;
            Some((Arc::clone(range), column))
        }
        None => None,
    };
    let dense = match (dense_key, opened_rows) {
        (Some(dense), Some(rows)) if sources.iter().any(|s| matches!(s, ColumnSource::Dense(_))) => {
            let read = crate::format::rows_read(rows, deleted.as_ref(), rows_needed.as_deref());
            Some((
                dense.first,
                RowPositions::new(read.unwrap_or_else(|| vec![0..rows])),
            ))
        }
        _ => None,
    };
    let row_ids = match file.row_tracking.and_then(|t| t.first_row_id) {
        Some(first) if computes_row_ids => {
            let rows = opened_rows.unwrap_or(file.row_tracking.map_or(0, |t| t.row_count.max(0) as usize));
            let read = crate::format::rows_read(rows, deleted.as_ref(), rows_needed.as_deref());
            Some((first, RowPositions::new(read.unwrap_or_else(|| vec![0..rows]))))
        }
        _ => None,
    };
    let mut fill = FillColumns {
        dense,
        row_ids,
        kinds: constant_kind.map(|kind| (kind, None)),
        ..FillColumns::default()
    };
    Ok(stream.and_then(move |batch| {
        let out = adapt_batch(&batch, &sources, &layout, &mut fill).and_then(|b| match &key_filter {
            Some((range, column)) => range.filter(b, *column),
            None => Ok(b),
        });
        futures::future::ready(out)
    }))
}

/// The columns a read fills in rather than decodes: all-null columns (fields the file lacks or
/// the reader skips) and the zero sequence numbers of a read that does not need them. Each is
/// allocated once for the read and sliced to every batch: a fresh zeroed buffer per batch and
/// column cost a merged `count(*)` more time in page faults and `memset` than its merge.
#[derive(Default)]
struct FillColumns {
    /// By layout column; the longest array built so far.
    nulls: Vec<Option<ArrayRef>>,
    zero_sequences: Option<ArrayRef>,
    /// The kind of every row of a file whose kinds are not decoded ([`constant_kind`]), and its
    /// column.
    kinds: Option<(i8, Option<ArrayRef>)>,
    /// The dense key's first value and the positions of the rows still to come.
    dense: Option<(i64, RowPositions)>,
    /// The file's first row id and the positions of the rows still to come (`_ROW_ID`).
    row_ids: Option<(i64, RowPositions)>,
}

/// The file positions of the rows a read returns, in order: the ascending ranges it selected,
/// consumed batch by batch.
#[derive(Debug, Clone)]
pub(crate) struct RowPositions {
    ranges: std::collections::VecDeque<Range<usize>>,
}

impl RowPositions {
    pub(crate) fn new(ranges: Vec<Range<usize>>) -> Self {
        RowPositions {
            ranges: ranges.into_iter().filter(|r| r.start < r.end).collect(),
        }
    }

    /// The positions of the next `rows` rows, as ranges; fewer rows once the selection ends.
    pub(crate) fn take(&mut self, rows: usize) -> Vec<Range<usize>> {
        let mut taken = Vec::new();
        let mut left = rows;
        while left > 0 {
            let Some(range) = self.ranges.front_mut() else {
                break;
            };
            let step = left.min(range.end - range.start);
            taken.push(range.start..range.start + step);
            range.start += step;
            left -= step;
            if range.start == range.end {
                self.ranges.pop_front();
            }
        }
        taken
    }

    /// `first` plus the position of each of the next `rows` rows (the keys of a dense file).
    fn next_keys(&mut self, first: i64, rows: usize) -> Result<Vec<i64>> {
        let mut keys = Vec::with_capacity(rows);
        for range in self.take(rows) {
            keys.extend(first + range.start as i64..first + range.end as i64);
        }
        if keys.len() < rows {
            return Err(exec_datafusion_err!(
                "A data file returned more rows than its row selection holds"
            ));
        }
        Ok(keys)
    }
}

impl FillColumns {
    fn sliced(slot: &mut Option<ArrayRef>, rows: usize, build: impl FnOnce() -> ArrayRef) -> ArrayRef {
        match slot {
            Some(array) if array.len() >= rows => array.slice(0, rows),
            _ => Arc::clone(slot.insert(build())),
        }
    }

    fn null(&mut self, column: usize, data_type: &ArrowType, rows: usize) -> ArrayRef {
        if self.nulls.len() <= column {
            self.nulls.resize(column + 1, None);
        }
        Self::sliced(&mut self.nulls[column], rows, || new_null_array(data_type, rows))
    }

    /// The dense key of the next `rows` rows, as `target`.
    fn dense_keys(&mut self, target: &ArrowType, rows: usize) -> Result<ArrayRef> {
        let (first, positions) = self
            .dense
            .as_mut()
            .ok_or_else(|| exec_datafusion_err!("A dense key column without row positions"))?;
        let keys: ArrayRef = Arc::new(arrow::array::Int64Array::from(positions.next_keys(*first, rows)?));
        cast_column(&keys, target)
    }

    /// The row ids of the next `rows` rows.
    fn row_ids(&mut self, rows: usize) -> Result<ArrayRef> {
        let (first, positions) = self
            .row_ids
            .as_mut()
            .ok_or_else(|| exec_datafusion_err!("Row ids of a data file without row positions"))?;
        Ok(Arc::new(arrow::array::Int64Array::from(
            positions.next_keys(*first, rows)?,
        )))
    }

    /// The kinds of the next `rows` rows of a file whose rows all hold one kind.
    fn constant_kinds(&mut self, rows: usize) -> Result<ArrayRef> {
        let (kind, column) = self
            .kinds
            .as_mut()
            .ok_or_else(|| exec_datafusion_err!("A data file's row kinds are neither decoded nor known"))?;
        let kind = *kind;
        Ok(Self::sliced(column, rows, || {
            Arc::new(arrow::array::Int8Array::new(vec![kind; rows].into(), None))
        }))
    }

    fn zero_sequences(&mut self, rows: usize) -> ArrayRef {
        Self::sliced(&mut self.zero_sequences, rows, || {
            Arc::new(arrow::array::Int64Array::new(vec![0i64; rows].into(), None))
        })
    }
}

/// The row kind every row of a Parquet data file holds, when the statistics of its
/// `_VALUE_KIND` column say so: in every row group the smallest and the largest kind are the same
/// one, and no kind is null. The column is then filled in rather than decoded: a file of inserts
/// only (most are) costs a read nothing for its kinds. `None` when any row group lacks these
/// statistics or the kinds differ.
fn constant_kind(metadata: &ParquetMetaData) -> Option<i8> {
    let schema = metadata.file_metadata().schema_descr();
    let column = (0..schema.num_columns()).find(|&i| schema.column(i).path().string() == VALUE_KIND)?;
    let required = schema.column(column).max_def_level() == 0;
    let mut kinds = metadata.row_groups().iter().map(|row_group| {
        let Some(Statistics::Int32(stats)) = row_group.column(column).statistics() else {
            return None;
        };
        let no_nulls = required || stats.null_count_opt() == Some(0);
        match (stats.min_opt(), stats.max_opt()) {
            (Some(min), Some(max)) if min == max && no_nulls => i8::try_from(*min).ok(),
            _ => None,
        }
    });
    let first = kinds.next()??;
    kinds.all(|kind| kind == Some(first)).then_some(first)
}

/// Where a row-tracking column comes from in a file: the file's own column where it stores one
/// (a compacted file), else computed from its manifest entry; `None` for other fields.
fn row_tracking_source(
    field_id: i32,
    file_arrow: &SchemaRef,
    tracking: Option<RowTracking>,
) -> Option<ColumnSource> {
    let (name, computed) = match field_id {
        crate::spec::ROW_ID_FIELD_ID => (
            crate::spec::ROW_ID,
            tracking.and_then(|t| t.first_row_id).map(|_| ColumnSource::RowId),
        ),
        crate::spec::SEQUENCE_NUMBER_FIELD_ID => (
            SEQUENCE_NUMBER,
            tracking.map(|t| ColumnSource::Constant(t.max_sequence_number)),
        ),
        _ => return None,
    };
    if file_arrow.index_of(name).is_ok() {
        return Some(ColumnSource::File {
            name: name.to_string(),
            target: ArrowType::Int64,
        });
    }
    Some(computed.unwrap_or(ColumnSource::Missing(ArrowType::Int64)))
}

/// Renames, casts and fills one file batch into the read layout.
fn adapt_batch(
    batch: &RecordBatch,
    sources: &[ColumnSource],
    layout: &ReadLayout,
    fill: &mut FillColumns,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let schema = batch.schema();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(layout.schema.fields().len());
    for (i, s) in sources.iter().enumerate() {
        columns.push(match s {
            ColumnSource::Missing(t) => fill.null(i, t, rows),
            ColumnSource::Dense(t) => fill.dense_keys(t, rows)?,
            ColumnSource::RowId => fill.row_ids(rows)?,
            ColumnSource::Constant(v) => Arc::new(arrow::array::Int64Array::from(vec![*v; rows])),
            ColumnSource::File { name, target } => {
                let idx = schema.index_of(name)?;
                cast_column(batch.column(idx), target)?
            }
        });
    }
    if layout.with_system_columns {
        columns.push(match schema.index_of(SEQUENCE_NUMBER) {
            Ok(i) => cast_column(batch.column(i), &ArrowType::Int64)?,
            // Not decoded (single-run read): nothing downstream compares sequence numbers.
            Err(_) => fill.zero_sequences(rows),
        });
        columns.push(match schema.index_of(VALUE_KIND) {
            Ok(i) => cast_column(batch.column(i), &ArrowType::Int8)?,
            // Not decoded: every row of the file holds the same kind ([`constant_kind`]).
            Err(_) => fill.constant_kinds(rows)?,
        });
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(&layout.schema),
        columns,
        &options,
    )?)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Int64Type};

    use datafusion::common::ScalarValue;

    use super::{DenseKey, FillColumns, RowPositions};

    /// A file is dense only when its one integer key spans exactly its row count.
    #[test]
    fn dense_keys_from_manifest_statistics() {
        let long = |v: i64| vec![ScalarValue::Int64(Some(v))];
        assert_eq!(
            DenseKey::of_file(3, &long(10), &long(19), 10),
            Some(DenseKey {
                field_id: 3,
                first: 10
            })
        );
        assert_eq!(DenseKey::of_file(3, &long(10), &long(20), 10), None, "a gap");
        assert_eq!(DenseKey::of_file(3, &long(10), &long(10), 0), None, "no rows");
        let int = |v: i32| vec![ScalarValue::Int32(Some(v))];
        assert_eq!(
            DenseKey::of_file(1, &int(-5), &int(4), 10).map(|d| d.first),
            Some(-5)
        );
        let text = |v: &str| vec![ScalarValue::Utf8(Some(v.into()))];
        assert_eq!(
            DenseKey::of_file(1, &text("a"), &text("b"), 2),
            None,
            "not an integer"
        );
        let pair = |v: i64| vec![ScalarValue::Int64(Some(v)), ScalarValue::Int64(Some(v))];
        assert_eq!(
            DenseKey::of_file(1, &pair(0), &pair(1), 2),
            None,
            "two key columns"
        );
        assert_eq!(
            DenseKey::of_file(1, &long(i64::MIN), &long(i64::MAX), 5),
            None,
            "overflow"
        );
        assert_eq!(
            DenseKey::of_file(1, &vec![ScalarValue::Int64(None)], &long(1), 2),
            None
        );
    }

    /// Keys follow the positions of the rows read, across ranges and batches.
    #[test]
    fn dense_keys_follow_row_positions() {
        let mut positions = RowPositions::new(vec![2..5, 5..5, 10..12, 20..21]);
        assert_eq!(positions.next_keys(100, 2).unwrap(), vec![102, 103]);
        assert_eq!(positions.next_keys(100, 3).unwrap(), vec![104, 110, 111]);
        assert_eq!(positions.next_keys(100, 1).unwrap(), vec![120]);
        assert!(positions.next_keys(100, 1).is_err(), "more rows than selected");
    }

    /// Batches of a read share one buffer per filled column; a longer batch gets a longer one.
    #[test]
    fn filled_columns_are_allocated_once_per_read() {
        let mut fill = FillColumns::default();
        let buffer = |a: &dyn Array| a.to_data().buffers()[0].as_ptr();
        let first = fill.null(2, &DataType::Utf8, 100);
        let second = fill.null(2, &DataType::Utf8, 40);
        assert_eq!((second.len(), second.null_count()), (40, 40));
        assert_eq!(buffer(first.as_ref()), buffer(second.as_ref()));
        let longer = fill.null(2, &DataType::Utf8, 200);
        assert_eq!((longer.len(), longer.null_count()), (200, 200));
        let zeros = fill.zero_sequences(10);
        assert_eq!(zeros.as_primitive::<Int64Type>().values().to_vec(), vec![0; 10]);
        assert_eq!(buffer(fill.zero_sequences(3).as_ref()), buffer(zeros.as_ref()));
    }

    /// A Parquet file of `row_groups` (the kinds of each), its statistics on or off.
    fn kinds_file(row_groups: &[&[i8]], statistics: bool) -> parquet::file::metadata::ParquetMetaData {
        use std::sync::Arc;

        use arrow::array::{Int8Array, RecordBatch};
        use arrow::datatypes::{Field, Schema};
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::{EnabledStatistics, WriterProperties};
        use parquet::file::reader::FileReader;

        let schema = Arc::new(Schema::new(vec![Field::new(
            crate::spec::VALUE_KIND,
            DataType::Int8,
            false,
        )]));
        let level = match statistics {
            true => EnabledStatistics::Chunk,
            false => EnabledStatistics::None,
        };
        let properties = WriterProperties::builder().set_statistics_enabled(level).build();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, Arc::clone(&schema), Some(properties)).unwrap();
        for kinds in row_groups {
            let column = Arc::new(Int8Array::from(kinds.to_vec()));
            writer
                .write(&RecordBatch::try_new(Arc::clone(&schema), vec![column]).unwrap())
                .unwrap();
            writer.flush().unwrap();
        }
        writer.close().unwrap();
        let reader =
            parquet::file::serialized_reader::SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        reader.metadata().clone()
    }

    /// The kinds of a file are known without decoding only when the statistics of every row
    /// group hold one and the same kind.
    #[test]
    fn a_file_of_one_kind_by_its_statistics() {
        use super::constant_kind;
        assert_eq!(constant_kind(&kinds_file(&[&[0, 0, 0]], true)), Some(0));
        assert_eq!(
            constant_kind(&kinds_file(&[&[3, 3], &[3]], true)),
            Some(3),
            "deletes only"
        );
        assert_eq!(
            constant_kind(&kinds_file(&[&[0, 3, 0]], true)),
            None,
            "a delete among inserts"
        );
        assert_eq!(
            constant_kind(&kinds_file(&[&[0, 0], &[2, 2]], true)),
            None,
            "row groups differ"
        );
        assert_eq!(
            constant_kind(&kinds_file(&[&[0, 0]], false)),
            None,
            "no statistics"
        );
    }

    /// A file's known kind fills the column, shared across batches.
    #[test]
    fn known_kinds_are_filled() {
        let mut fill = FillColumns {
            kinds: Some((3, None)),
            ..FillColumns::default()
        };
        let kinds = fill.constant_kinds(4).unwrap();
        assert_eq!(
            kinds
                .as_primitive::<arrow::datatypes::Int8Type>()
                .values()
                .to_vec(),
            vec![3; 4]
        );
        assert_eq!(fill.constant_kinds(2).unwrap().len(), 2);
        assert!(FillColumns::default().constant_kinds(1).is_err());
    }
}
