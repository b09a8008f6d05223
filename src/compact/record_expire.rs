//! Record-level expiration of primary-key tables (`record-level.expire-time`,
//! `record-level.time-field`), as Java Paimon applies it: only when compaction reads its input
//! files, a record is dropped before the merge sees it when its time is older than the
//! compaction's start minus the expire time. Reads, flushes and `$audit_log` never filter, and
//! no `-D` is written for a dropped record, so an older version of its key in the same unit
//! that has not expired comes back (Paimon's behaviour, kept).
//!
//! The time field is read as seconds: `INT` as seconds, `BIGINT` as milliseconds from
//! 1_000_000_000_000 up (else seconds), `TIMESTAMP` / `TIMESTAMP_LTZ` by its epoch value. A NULL
//! time never expires. A file whose statistics show an expired record is rewritten rather than
//! moved up a level, and a full compaction rewrites a top-level file for it alone.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType as ArrowType, Int64Type, TimeUnit};
#[cfg(test)]
use datafusion::common::ScalarValue;
use datafusion::common::{config_err, exec_datafusion_err, Result};

use super::lookup::LookupHits;
use super::settings::CompactSettings;
use crate::spec::{DataFileMeta, MergeEngine, TableSchema};

pub(crate) const EXPIRE_TIME: &str = "record-level.expire-time";
pub(crate) const TIME_FIELD: &str = "record-level.time-field";

/// A BIGINT time at or above this is in milliseconds (Java's `RecordLevelExpire`).
const MILLIS_FROM: i64 = 1_000_000_000_000;

/// The expiration of one table, as options say (checked at CREATE/ALTER by [`check_options`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordExpireOptions {
    /// The time field's name and field id.
    pub field: String,
    pub field_id: i32,
    /// Whole seconds, as Java's `Duration.getSeconds()`.
    pub expire_secs: i64,
}

impl RecordExpireOptions {
    /// `None` unless `record-level.expire-time` is set.
    pub(crate) fn of(schema: &TableSchema) -> Result<Option<Self>> {
        let Some(expire) = schema.options.get(EXPIRE_TIME) else {
            return Ok(None);
        };
        check_options(schema)?;
        let field = schema.options[TIME_FIELD].trim().to_string();
        let field_id = schema.field(&field).map(|f| f.id).unwrap_or_default();
        let expire_ms = crate::maintenance::expire::parse_duration_ms(expire).unwrap_or_default();
        Ok(Some(RecordExpireOptions {
            field,
            field_id,
            expire_secs: expire_ms / 1000,
        }))
    }

    /// The expiration of one compaction, started now.
    pub(crate) fn starting_now(&self, schema: &TableSchema) -> Result<RecordExpire> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.starting_at(schema, now)
    }

    fn starting_at(&self, schema: &TableSchema, now_secs: i64) -> Result<RecordExpire> {
        let column = schema
            .fields
            .iter()
            .position(|f| f.id == self.field_id)
            .ok_or_else(|| {
                exec_datafusion_err!("Can not find time field {} for record level expire", self.field)
            })?;
        Ok(RecordExpire {
            column,
            field_id: self.field_id,
            // a record is kept while now <= time + expire
            oldest_kept: now_secs.saturating_sub(self.expire_secs),
        })
    }
}

/// Checks the two options of a table: an expire time that parses, and a time field of a
/// supported type.
pub(crate) fn check_options(schema: &TableSchema) -> Result<()> {
    let (expire, field) = (schema.options.get(EXPIRE_TIME), schema.options.get(TIME_FIELD));
    if let Some(expire) = expire {
        if crate::maintenance::expire::parse_duration_ms(expire).is_none() {
            return config_err!(
                "Invalid value '{expire}' for option '{EXPIRE_TIME}': expected a duration such as '7 d'"
            );
        }
        if field.is_none() {
            return config_err!(
                "Option '{EXPIRE_TIME}' needs '{TIME_FIELD}', the field whose time expires a record"
            );
        }
    }
    let Some(field) = field else {
        return Ok(());
    };
    let Some(f) = schema.field(field.trim()) else {
        return config_err!("Can not find time field {} for record level expire", field.trim());
    };
    match f.data_type.to_arrow() {
        ArrowType::Int32 | ArrowType::Int64 | ArrowType::Timestamp(_, _) => Ok(()),
        other => config_err!(
            "The record level time field type should be one of INT, BIGINT, or TIMESTAMP, but field type is {other}"
        ),
    }
}

/// The expiration of one compaction: which records of its input files it drops.
#[derive(Debug, Clone)]
pub(crate) struct RecordExpire {
    /// The time field's column in the compaction's layout (table field order).
    column: usize,
    field_id: i32,
    /// Records whose time in seconds is below this have expired.
    oldest_kept: i64,
}

impl RecordExpire {
    /// `batch` (the compaction's layout) without its expired records.
    pub(crate) fn filter(&self, batch: RecordBatch) -> Result<RecordBatch> {
        match self.kept(batch.column(self.column))? {
            Some(keep) => Ok(filter_record_batch(&batch, &keep)?),
            None => Ok(batch),
        }
    }

    /// Old values a lookup found that have expired count as not found, as Java looks them up
    /// through the expiring reader; except for first-row (Java's reader there does not
    /// expire), and for deletion-vector tables, whose old row must still be marked deleted.
    pub(crate) fn forget_expired(&self, hits: &mut LookupHits, settings: &CompactSettings) -> Result<()> {
        if settings.engine == MergeEngine::FirstRow || settings.deletion_vectors {
            return Ok(());
        }
        if let Some(kept) = self.kept(hits.rows.column(self.column))? {
            for found in hits.found.iter_mut() {
                if found.is_some_and(|row| !kept.value(row)) {
                    *found = None;
                }
            }
        }
        Ok(())
    }

    /// Which values of a time column are kept; `None` when all are.
    pub(crate) fn kept(&self, times: &Arc<dyn Array>) -> Result<Option<BooleanArray>> {
        let seconds = seconds(times)?;
        let keep: BooleanArray = seconds
            .iter()
            .map(|t| Some(t.is_none_or(|t| t >= self.oldest_kept)))
            .collect();
        Ok((keep.true_count() < keep.len()).then_some(keep))
    }

    /// Whether `file` (written with `file_schema`) holds an expired record, by the minimum of
    /// the time field in its statistics; files without that statistic are not judged expired.
    pub(crate) fn file_has_expired(&self, file: &DataFileMeta, file_schema: &TableSchema) -> bool {
        let Some((min, _, _)) = crate::scan::column_stat(file, file_schema, self.field_id, false) else {
            return false;
        };
        let Ok(array) = min.to_array() else {
            return false;
        };
        match seconds(&array) {
            Ok(s) if s.is_valid(0) => s.value(0) < self.oldest_kept,
            _ => false,
        }
    }
}

/// Times in seconds, as Java's `RecordLevelExpire` converts each type.
fn seconds(times: &Arc<dyn Array>) -> Result<arrow::array::Int64Array> {
    let as_i64 = |a: &Arc<dyn Array>| -> Result<arrow::array::Int64Array> {
        Ok(cast(a, &ArrowType::Int64)?.as_primitive::<Int64Type>().clone())
    };
    Ok(match times.data_type() {
        ArrowType::Int32 => as_i64(times)?,
        ArrowType::Int64 => {
            as_i64(times)?.unary(|v: i64| if v >= MILLIS_FROM { v / 1000 } else { v })
        }
        ArrowType::Timestamp(unit, _) => {
            let per_milli = match unit {
                TimeUnit::Second => return Ok(as_i64(times)?),
                TimeUnit::Millisecond => 1,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1_000_000,
            };
            // epoch millis (Java's getMillisecond) divided by 1000, toward zero as Java's `/`
            as_i64(times)?.unary(|v: i64| v.div_euclid(per_milli) / 1000)
        }
        other => {
            return Err(exec_datafusion_err!(
                "The record level time field type should be one of INT, BIGINT, or TIMESTAMP, but field type is {other}"
            ))
        }
    })
}

/// A scalar's seconds, for tests.
#[cfg(test)]
fn seconds_of(value: ScalarValue) -> Option<i64> {
    let array = value.to_array().ok()?;
    let s = seconds(&array).ok()?;
    s.is_valid(0).then(|| s.value(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int32Array;

    fn schema(options: &str, time_type: &str) -> TableSchema {
        let json = format!(
            r#"{{"version":3,"id":0,"fields":[{{"id":0,"name":"k","type":"INT NOT NULL"}},{{"id":1,"name":"t","type":"{time_type}"}}],"highestFieldId":1,"partitionKeys":[],"primaryKeys":["k"],"options":{{{options}}},"timeMillis":0}}"#
        );
        TableSchema::from_json(json.as_bytes(), "schema-0").unwrap()
    }

    #[test]
    fn each_time_type_reads_as_seconds() {
        assert_eq!(
            seconds_of(ScalarValue::Int32(Some(1_700_000_000))),
            Some(1_700_000_000)
        );
        assert_eq!(
            seconds_of(ScalarValue::Int64(Some(1_700_000_000))),
            Some(1_700_000_000)
        );
        assert_eq!(
            seconds_of(ScalarValue::Int64(Some(1_700_000_000_123))),
            Some(1_700_000_000)
        );
        assert_eq!(
            seconds_of(ScalarValue::TimestampMicrosecond(
                Some(1_700_000_000_999_999),
                None
            )),
            Some(1_700_000_000)
        );
        assert_eq!(
            seconds_of(ScalarValue::TimestampMillisecond(Some(-1_500), None)),
            Some(-1)
        );
        assert_eq!(seconds_of(ScalarValue::Int32(None)), None);
    }

    #[test]
    fn records_older_than_the_expire_time_are_dropped_and_nulls_kept() {
        let s = schema(
            r#""record-level.expire-time":"100 s","record-level.time-field":"t""#,
            "INT",
        );
        let options = RecordExpireOptions::of(&s).unwrap().unwrap();
        assert_eq!(options.expire_secs, 100);
        let expire = options.starting_at(&s, 1_000).unwrap();
        // kept while now <= t + expire: 900 is kept, 899 dropped
        let times: Arc<dyn Array> = Arc::new(Int32Array::from(vec![Some(899), Some(900), None, Some(2_000)]));
        assert_eq!(
            expire.kept(&times).unwrap(),
            Some(BooleanArray::from(vec![false, true, true, true]))
        );
        let fresh: Arc<dyn Array> = Arc::new(Int32Array::from(vec![950, 1_000]));
        assert_eq!(expire.kept(&fresh).unwrap(), None);
    }

    #[test]
    fn options_are_checked() {
        let error = |options: &str, t: &str| check_options(&schema(options, t)).unwrap_err().to_string();
        assert!(
            error(r#""record-level.expire-time":"1 d""#, "INT").contains("needs 'record-level.time-field'")
        );
        assert!(error(
            r#""record-level.expire-time":"soon","record-level.time-field":"t""#,
            "INT"
        )
        .contains("Invalid value 'soon'"));
        assert!(error(
            r#""record-level.expire-time":"1 d","record-level.time-field":"x""#,
            "INT"
        )
        .contains("Can not find time field x"));
        assert!(error(
            r#""record-level.expire-time":"1 d","record-level.time-field":"t""#,
            "STRING"
        )
        .contains("should be one of INT, BIGINT, or TIMESTAMP"));
        for ok in [
            "INT",
            "BIGINT",
            "TIMESTAMP(3)",
            "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        ] {
            assert!(
                check_options(&schema(
                    r#""record-level.expire-time":"1 d","record-level.time-field":"t""#,
                    ok
                ))
                .is_ok(),
                "{ok}"
            );
        }
    }
}
