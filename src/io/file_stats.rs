//! The min/max/null-count statistics of a data file's key and value columns (`_KEY_STATS`,
//! `_VALUE_STATS`). Columns whose statistics the file's encoder computes while encoding
//! ([`FileEncoder::computes_stats`]) are taken from it when the file is finished; the others
//! are accumulated batch by batch. Nested columns get null counts only.

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType as ArrowType;
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;

use crate::error::{Error, Result};
use crate::format::{EncodedColumnStats, FileEncoder};
use crate::spec::{BinaryRow, SimpleStats};

/// Java's default `metadata.stats-mode` is `truncate(16)`.
const STATS_TRUNCATE: usize = 16;

/// Statistics of some of a file's columns over every batch written.
pub(super) struct StatsAccumulator {
    columns: Vec<ColumnStats>,
}

struct ColumnStats {
    source: Source,
    typed_null: ScalarValue,
    nulls: i64,
}

enum Source {
    /// A nested column: null counts only.
    Nested,
    Accumulated(MinAccumulator, MaxAccumulator),
    /// The encoder's statistics of this column of the file.
    Encoder {
        file_column: usize,
    },
}

impl StatsAccumulator {
    /// Statistics of columns of `types`, which the file holds as its columns `first_column..`.
    pub(super) fn new(types: &[ArrowType], encoder: &FileEncoder, first_column: usize) -> Result<Self> {
        let err = |e: datafusion::error::DataFusionError| Error::Unsupported(e.to_string());
        let columns = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let source = if encoder.computes_stats(t) {
                    Source::Encoder {
                        file_column: first_column + i,
                    }
                } else if is_atomic(t) {
                    Source::Accumulated(
                        MinAccumulator::try_new(t).map_err(err)?,
                        MaxAccumulator::try_new(t).map_err(err)?,
                    )
                } else {
                    Source::Nested
                };
                Ok(ColumnStats {
                    source,
                    typed_null: ScalarValue::try_from(t).unwrap_or(ScalarValue::Null),
                    nulls: 0,
                })
            })
            .collect::<Result<_>>()?;
        Ok(StatsAccumulator { columns })
    }

    /// Whether [`StatsAccumulator::update`] has any work to do.
    pub(super) fn accumulates(&self) -> bool {
        self.columns
            .iter()
            .any(|c| !matches!(c.source, Source::Encoder { .. }))
    }

    pub(super) fn update(&mut self, columns: &[ArrayRef]) -> Result<()> {
        let err = |e: datafusion::error::DataFusionError| Error::Unsupported(e.to_string());
        for (stats, c) in self.columns.iter_mut().zip(columns) {
            match &mut stats.source {
                Source::Encoder { .. } => {}
                Source::Nested => stats.nulls += c.null_count() as i64,
                Source::Accumulated(min, max) => {
                    stats.nulls += c.null_count() as i64;
                    min.update_batch(std::slice::from_ref(c)).map_err(err)?;
                    max.update_batch(std::slice::from_ref(c)).map_err(err)?;
                }
            }
        }
        Ok(())
    }

    /// The stats, with the encoder's `encoded` statistics (by file column) for the columns it
    /// computed; `truncate` applies Java's `truncate(16)` to strings (min truncated, max
    /// truncated then incremented, or unknown if that is impossible).
    pub(super) fn finish(
        mut self,
        truncate: bool,
        encoded: &[Option<EncodedColumnStats>],
    ) -> Result<SimpleStats> {
        let err = |e: datafusion::error::DataFusionError| Error::Unsupported(e.to_string());
        let mut mins = Vec::with_capacity(self.columns.len());
        let mut maxs = Vec::with_capacity(self.columns.len());
        let mut nulls = Vec::with_capacity(self.columns.len());
        for stats in &mut self.columns {
            let (mut lo, mut hi) = match &mut stats.source {
                Source::Nested => (stats.typed_null.clone(), stats.typed_null.clone()),
                Source::Accumulated(min, max) => (min.evaluate().map_err(err)?, max.evaluate().map_err(err)?),
                Source::Encoder { file_column } => {
                    let Some(Some(column)) = encoded.get(*file_column) else {
                        return Err(Error::FileFormat(format!(
                            "The encoder gave no statistics for column {file_column} of the file"
                        )));
                    };
                    stats.nulls = column.nulls;
                    (column.min.clone(), column.max.clone())
                }
            };
            nulls.push(Some(stats.nulls));
            if truncate {
                if let ScalarValue::Utf8(Some(s)) = &lo {
                    lo = ScalarValue::Utf8(Some(s.chars().take(STATS_TRUNCATE).collect()));
                }
                if let ScalarValue::Utf8(Some(s)) = &hi {
                    hi = ScalarValue::Utf8(truncate_max(s));
                }
            }
            mins.push(lo);
            maxs.push(hi);
        }
        Ok(SimpleStats {
            min_values: BinaryRow::encode(&mins)?,
            max_values: BinaryRow::encode(&maxs)?,
            null_counts: Some(nulls),
        })
    }
}

fn is_atomic(t: &ArrowType) -> bool {
    !matches!(
        t,
        ArrowType::List(_) | ArrowType::LargeList(_) | ArrowType::Struct(_) | ArrowType::Map(..)
    )
}

/// An upper bound of `s` with at most 16 characters, if one exists.
fn truncate_max(s: &str) -> Option<String> {
    if s.chars().count() <= STATS_TRUNCATE {
        return Some(s.to_string());
    }
    let mut chars: Vec<char> = s.chars().take(STATS_TRUNCATE).collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}
