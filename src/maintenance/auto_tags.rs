//! Automatic tags (`tag.automatic-creation`), run after every commit of a writer that is not
//! `write-only`, as Java's `TagAutoManager` does.
//!
//! * `process-time` / `watermark`: every period (`tag.creation-period` daily, hourly or
//!   two-hours, or `tag.creation-period-duration`) gets one tag, named after the period's start
//!   (`2024-01-02`, `2024-01-02 10`, `202401021000`; `tag.period-formatter`), on the first
//!   snapshot whose time (commit time in the local zone, or watermark) is past the period's end
//!   plus `tag.creation-delay`. A table's first snapshot tags the period before it.
//! * `batch`: each statement tags the latest snapshot `batch-write-<local date>` (or
//!   `tag.batch.customized-name`), replacing a tag of that name.
//! * `tag.num-retained-max`: the oldest automatic tags beyond it are deleted (for `batch`, the
//!   oldest tags of any kind), `tag.default-time-retained` is written into new tags.
//!
//! No state is kept between commits: the next period follows from the newest automatic tag
//! (its name is its period), and snapshots are read only when the latest one is past it.

use std::collections::BTreeMap;

use chrono::{DateTime, Local, NaiveDate, NaiveDateTime, TimeZone, Utc};
use datafusion::common::{plan_datafusion_err, plan_err, Result};

use super::expire::parse_duration_ms;
use super::tags::{create_tag, delete_tags, write_tag};
use crate::meta::TableMeta;
use crate::spec::{Snapshot, Tag};

/// Where a snapshot's time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    ProcessTime,
    Watermark,
}

/// How tag names encode their period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameFormat {
    Day { dashes: bool },
    Hour { dashes: bool },
    Minute,
}

impl NameFormat {
    fn pattern(self) -> &'static str {
        match self {
            NameFormat::Day { dashes: true } => "%Y-%m-%d",
            NameFormat::Day { dashes: false } => "%Y%m%d",
            NameFormat::Hour { dashes: true } => "%Y-%m-%d %H",
            NameFormat::Hour { dashes: false } => "%Y%m%d %H",
            NameFormat::Minute => "%Y%m%d%H%M",
        }
    }
}

/// A tag period: its length and how its start is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Period {
    millis: i64,
    format: NameFormat,
}

impl Period {
    fn name(&self, start: NaiveDateTime) -> String {
        start.format(self.format.pattern()).to_string()
    }

    /// The period start a tag name stands for; None for tags not named like automatic ones.
    fn start_of(&self, name: &str) -> Option<NaiveDateTime> {
        match self.format {
            // Java reads a daily tag from the part before the first space.
            NameFormat::Day { .. } => {
                let day = name.split(' ').next()?;
                NaiveDate::parse_from_str(day, self.format.pattern())
                    .ok()?
                    .and_hms_opt(0, 0, 0)
            }
            NameFormat::Hour { .. } => {
                NaiveDateTime::parse_from_str(&format!("{name}:00"), &format!("{}:%M", self.format.pattern()))
                    .ok()
            }
            NameFormat::Minute => NaiveDateTime::parse_from_str(name, self.format.pattern()).ok(),
        }
    }

    fn plus(&self, t: NaiveDateTime, periods: i64) -> NaiveDateTime {
        t + chrono::Duration::milliseconds(self.millis * periods)
    }

    /// The start of the period before the one `t` falls in (periods are aligned to the epoch
    /// on the local clock, as Java's arithmetic on local date-times is).
    fn previous_start(&self, t: NaiveDateTime) -> NaiveDateTime {
        let ms = t.and_utc().timestamp_millis();
        let floor = ms.div_euclid(self.millis) * self.millis;
        let start = DateTime::<Utc>::from_timestamp_millis(floor)
            .expect("in range")
            .naive_utc();
        self.plus(start, -1)
    }
}

/// `tag.automatic-creation` and the options it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AutoTags {
    Periodic {
        clock: Clock,
        period: Period,
        delay_ms: i64,
        num_retained_max: Option<usize>,
        time_retained_ms: Option<i64>,
        automatic_completion: bool,
    },
    Batch {
        name: Option<String>,
        num_retained_max: Option<usize>,
        time_retained_ms: Option<i64>,
    },
}

impl AutoTags {
    /// None when `tag.automatic-creation` is unset or `none`.
    pub(crate) fn parse(table: &str, options: &BTreeMap<String, String>) -> Result<Option<Self>> {
        let get = |k: &str| options.get(k).map(|v| v.trim().to_ascii_lowercase());
        let duration = |k: &str| -> Result<Option<i64>> {
            match options.get(k) {
                None => Ok(None),
                Some(v) => parse_duration_ms(v).map(Some).ok_or_else(|| {
                    plan_datafusion_err!(
                        "Option '{k}' of table {table} must be a duration such as '1 h', got '{v}'"
                    )
                }),
            }
        };
        let num_retained_max = match options.get("tag.num-retained-max") {
            None => None,
            Some(v) => Some(v.trim().parse::<usize>().map_err(|_| {
                plan_datafusion_err!(
                    "Option 'tag.num-retained-max' of table {table} must be a number, got '{v}'"
                )
            })?),
        };
        let time_retained_ms = duration("tag.default-time-retained")?;
        let clock = match get("tag.automatic-creation").as_deref() {
            None | Some("none") => return Ok(None),
            Some("process-time") => Clock::ProcessTime,
            Some("watermark") => Clock::Watermark,
            Some("batch") => {
                return Ok(Some(AutoTags::Batch {
                    name: options.get("tag.batch.customized-name").cloned(),
                    num_retained_max,
                    time_retained_ms,
                }))
            }
            Some(other) => {
                return plan_err!(
                    "Option 'tag.automatic-creation' of table {table} must be none, process-time, watermark or batch, got '{other}'"
                )
            }
        };
        let dashes = match get("tag.period-formatter").as_deref() {
            None | Some("with_dashes") => true,
            Some("without_dashes") => false,
            Some(other) => {
                return plan_err!(
                    "Option 'tag.period-formatter' of table {table} must be with_dashes or without_dashes, got '{other}'"
                )
            }
        };
        let period = match duration("tag.creation-period-duration")? {
            Some(ms) if ms > 0 => Period {
                millis: ms,
                format: NameFormat::Minute,
            },
            Some(_) => return plan_err!("Option 'tag.creation-period-duration' of table {table} must be positive"),
            None => match get("tag.creation-period").as_deref() {
                None | Some("daily") => Period {
                    millis: 86_400_000,
                    format: NameFormat::Day { dashes },
                },
                Some("hourly") => Period {
                    millis: 3_600_000,
                    format: NameFormat::Hour { dashes },
                },
                Some("two-hours") => Period {
                    millis: 7_200_000,
                    format: NameFormat::Hour { dashes: true },
                },
                Some(other) => {
                    return plan_err!(
                        "Option 'tag.creation-period' of table {table} must be daily, hourly or two-hours, got '{other}'"
                    )
                }
            },
        };
        let delay_ms = duration("tag.creation-delay")?.unwrap_or(0);
        if delay_ms >= period.millis {
            return plan_err!(
                "Option 'tag.creation-delay' of table {table} must be shorter than the tag period"
            );
        }
        Ok(Some(AutoTags::Periodic {
            clock,
            period,
            delay_ms,
            num_retained_max,
            time_retained_ms,
            automatic_completion: get("tag.automatic-completion").as_deref() == Some("true"),
        }))
    }
}

/// What one run does.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TagPlan {
    /// (tag name, snapshot id), in order.
    pub create: Vec<(String, i64)>,
    /// Tags to delete, oldest first.
    pub delete: Vec<String>,
}

/// The state of periodic tagging: the next period to tag, from the newest automatic tag.
struct Periodic<'a> {
    period: Period,
    delay_ms: i64,
    automatic_completion: bool,
    /// Start of the period after the newest automatic tag's.
    next: Option<NaiveDateTime>,
    /// Automatic tag names, oldest snapshot first.
    auto_tags: Vec<String>,
    existing: &'a dyn Fn(&str) -> bool,
}

impl Periodic<'_> {
    /// Whether a snapshot at `time` closes a period (Java's condition: time - delay is at or
    /// after the end of the next period to tag).
    fn due(&self, time: NaiveDateTime) -> bool {
        match self.next {
            None => true,
            Some(next) => time - chrono::Duration::milliseconds(self.delay_ms) >= self.period.plus(next, 1),
        }
    }

    fn visit(&mut self, id: i64, time: NaiveDateTime, plan: &mut TagPlan) {
        if !self.due(time) {
            return;
        }
        let start = match (self.automatic_completion, self.next) {
            (true, Some(next)) => next,
            _ => self.period.previous_start(time),
        };
        let name = self.period.name(start);
        if !(self.existing)(&name) && !plan.create.iter().any(|(n, _)| *n == name) {
            plan.create.push((name.clone(), id));
            self.auto_tags.push(name);
        }
        self.next = Some(self.period.plus(start, 1));
    }
}

/// Plans periodic tags over `snapshots` (id, time), in id order, after the automatic tags
/// `auto_tags` (name, oldest snapshot first).
fn plan_periodic(
    period: Period,
    delay_ms: i64,
    automatic_completion: bool,
    num_retained_max: Option<usize>,
    auto_tags: Vec<String>,
    snapshots: impl IntoIterator<Item = (i64, NaiveDateTime)>,
    existing: &dyn Fn(&str) -> bool,
) -> TagPlan {
    let next = auto_tags
        .last()
        .and_then(|n| period.start_of(n))
        .map(|t| period.plus(t, 1));
    let mut state = Periodic {
        period,
        delay_ms,
        automatic_completion,
        next,
        auto_tags,
        existing,
    };
    let mut plan = TagPlan::default();
    for (id, time) in snapshots {
        state.visit(id, time, &mut plan);
    }
    if let Some(max) = num_retained_max {
        let excess = state.auto_tags.len().saturating_sub(max);
        plan.delete = state.auto_tags[..excess].to_vec();
        plan.create.retain(|(n, _)| !plan.delete.contains(n));
    }
    plan
}

/// Runs automatic tagging for `table` after a commit.
pub(crate) async fn run(
    meta: &TableMeta,
    table: &str,
    auto: &AutoTags,
    options: &BTreeMap<String, String>,
) -> Result<()> {
    let Some(latest) = meta.latest_snapshot().await? else {
        return Ok(());
    };
    let mut tags = meta.tags().await?;
    // Oldest snapshot first; tags of one snapshot by name.
    tags.sort_by(|a, b| (a.snapshot.id, &a.name).cmp(&(b.snapshot.id, &b.name)));
    match auto {
        AutoTags::Batch {
            name,
            num_retained_max,
            time_retained_ms,
        } => {
            let name = name.clone().unwrap_or_else(|| {
                format!(
                    "batch-write-{}",
                    local_time(latest.time_millis).format("%Y-%m-%d")
                )
            });
            if tags.iter().any(|t| t.name == name) {
                delete_tags(meta, table, &[name.as_str()]).await?;
                tags.retain(|t| t.name != name);
            }
            create_tag(meta, table, &name, Some(latest.id), *time_retained_ms).await?;
            if let Some(max) = num_retained_max {
                // Java counts every tag here, the new one included (it is the newest).
                let excess = (tags.len() + 1).saturating_sub(*max);
                let old: Vec<&str> = tags.iter().take(excess).map(|t| t.name.as_str()).collect();
                if !old.is_empty() {
                    delete_tags(meta, table, &old).await?;
                }
            }
            Ok(())
        }
        AutoTags::Periodic {
            clock,
            period,
            delay_ms,
            num_retained_max,
            time_retained_ms,
            automatic_completion,
        } => {
            let timezone = options.get("sink.watermark-time-zone").map(String::as_str);
            let time_of = |s: &Snapshot| snapshot_time(s, *clock, timezone);
            let auto_tags: Vec<&Tag> = tags
                .iter()
                .filter(|t| period.start_of(&t.name).is_some())
                .collect();
            let names: Vec<String> = auto_tags.iter().map(|t| t.name.clone()).collect();
            let exists = |n: &str| tags.iter().any(|t| t.name == n);
            // Cheap check first: nothing is due unless the latest snapshot closes a period.
            let probe = plan_periodic(
                *period,
                *delay_ms,
                *automatic_completion,
                None,
                names.clone(),
                time_of(&latest).map(|t| (latest.id, t)),
                &exists,
            );
            if probe.create.is_empty() {
                return Ok(());
            }
            let first = match auto_tags.last() {
                Some(t) => t.snapshot.id + 1,
                None => meta.earliest_snapshot_id().await?.unwrap_or(latest.id),
            };
            let mut snapshots = Vec::new();
            for id in first..=latest.id {
                // Expired snapshots in between are skipped, as Java does.
                let Ok(snapshot) = meta.snapshot(id).await else {
                    continue;
                };
                if let Some(t) = time_of(&snapshot) {
                    snapshots.push((id, t));
                }
            }
            let plan = plan_periodic(
                *period,
                *delay_ms,
                *automatic_completion,
                *num_retained_max,
                names,
                snapshots,
                &exists,
            );
            for (name, id) in &plan.create {
                write_tag(meta, table, name, Some(*id), *time_retained_ms).await?;
            }
            if !plan.delete.is_empty() {
                let delete: Vec<&str> = plan.delete.iter().map(String::as_str).collect();
                delete_tags(meta, table, &delete).await?;
            }
            Ok(())
        }
    }
}

/// Epoch millis as a local date-time.
fn local_time(millis: i64) -> NaiveDateTime {
    Local
        .timestamp_millis_opt(millis)
        .single()
        .map(|t| t.naive_local())
        .unwrap_or_else(|| {
            DateTime::<Utc>::from_timestamp_millis(millis)
                .unwrap_or_default()
                .naive_utc()
        })
}

/// A snapshot's time for tagging: its commit time in the local zone, or its watermark (in
/// `sink.watermark-time-zone`, UTC by default; only UTC offsets are understood here).
fn snapshot_time(snapshot: &Snapshot, clock: Clock, timezone: Option<&str>) -> Option<NaiveDateTime> {
    match clock {
        Clock::ProcessTime => Some(local_time(snapshot.time_millis)),
        Clock::Watermark => {
            let watermark = snapshot.watermark?;
            let utc = DateTime::<Utc>::from_timestamp_millis(watermark)?.naive_utc();
            let offset = timezone
                .and_then(|z| z.parse::<chrono::FixedOffset>().ok())
                .map_or(0, |o| o.local_minus_utc());
            Some(utc + chrono::Duration::seconds(offset as i64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    fn daily() -> Period {
        Period {
            millis: 86_400_000,
            format: NameFormat::Day { dashes: true },
        }
    }

    #[test]
    fn names_and_periods_follow_java() {
        let hourly = Period {
            millis: 3_600_000,
            format: NameFormat::Hour { dashes: false },
        };
        assert_eq!(
            daily().previous_start(at("2024-01-02 10:30:00")),
            at("2024-01-01 00:00:00")
        );
        assert_eq!(daily().name(at("2024-01-01 00:00:00")), "2024-01-01");
        assert_eq!(daily().start_of("2024-01-01"), Some(at("2024-01-01 00:00:00")));
        assert_eq!(daily().start_of("my-tag"), None);
        assert_eq!(hourly.name(at("2024-01-02 09:00:00")), "20240102 09");
        assert_eq!(hourly.start_of("20240102 09"), Some(at("2024-01-02 09:00:00")));
        assert_eq!(
            hourly.previous_start(at("2024-01-02 10:59:59")),
            at("2024-01-02 09:00:00")
        );
    }

    #[test]
    fn one_tag_per_closed_period_on_the_first_snapshot_past_it() {
        let none = |_: &str| false;
        let snapshots = vec![
            (1, at("2024-01-02 10:00:00")),
            (2, at("2024-01-02 23:00:00")),
            (3, at("2024-01-03 00:00:01")),
            (4, at("2024-01-03 12:00:00")),
            (5, at("2024-01-05 08:00:00")),
        ];
        let plan = plan_periodic(daily(), 0, false, None, vec![], snapshots.clone(), &none);
        // The first snapshot tags the day before it; day 2 is closed by snapshot 3; day 3 by 5.
        assert_eq!(
            plan.create,
            vec![
                ("2024-01-01".to_string(), 1),
                ("2024-01-02".to_string(), 3),
                ("2024-01-04".to_string(), 5)
            ]
        );
        // With completion, the skipped day 3 is tagged instead of day 4.
        let plan = plan_periodic(daily(), 0, true, None, vec![], snapshots.clone(), &none);
        assert_eq!(plan.create[2], ("2024-01-03".to_string(), 5));
        // A delay of 1 h moves day 2's tag to the first snapshot after 01:00 on day 3.
        let plan = plan_periodic(daily(), 3_600_000, false, None, vec![], snapshots.clone(), &none);
        assert_eq!(plan.create[1], ("2024-01-02".to_string(), 4));
        // Continuing after an existing automatic tag, keeping at most 2.
        let plan = plan_periodic(
            daily(),
            0,
            false,
            Some(2),
            vec!["2024-01-01".to_string()],
            snapshots[2..].to_vec(),
            &none,
        );
        assert_eq!(
            plan.create,
            vec![("2024-01-02".to_string(), 3), ("2024-01-04".to_string(), 5)]
        );
        assert_eq!(plan.delete, vec!["2024-01-01".to_string()]);
    }

    #[test]
    fn options_are_checked() {
        let options = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(AutoTags::parse("t", &options(&[])).unwrap(), None);
        let err = AutoTags::parse("t", &options(&[("tag.automatic-creation", "sometimes")])).unwrap_err();
        assert!(err.to_string().contains("'tag.automatic-creation'"), "{err}");
        let err = AutoTags::parse(
            "t",
            &options(&[
                ("tag.automatic-creation", "process-time"),
                ("tag.creation-delay", "1 d"),
            ]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("shorter than the tag period"), "{err}");
    }
}
