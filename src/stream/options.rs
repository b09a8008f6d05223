//! The options of a tailing read, given to `paimon_stream` as `'key=value'` arguments.

use std::collections::BTreeMap;

use datafusion::common::{plan_datafusion_err, plan_err, Result};

use crate::maintenance::expire::parse_duration_ms;

/// Where a tailing read starts (`scan.mode`, semantics.md §7.4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum StartMode {
    /// The latest snapshot's rows as `+I`, then its successors' changes (the default).
    LatestFull,
    /// Only changes committed after the latest snapshot.
    Latest,
    /// The changes of snapshot N and later.
    FromSnapshot(i64),
    /// Snapshot N's rows as `+I`, then the changes after it.
    FromSnapshotFull(i64),
    /// The changes committed after this time (epoch millis).
    FromTimestamp(i64),
    /// The latest COMPACT snapshot's rows as `+I`, then the changes after it.
    CompactedFull,
}

/// Parsed `paimon_stream` options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StreamOptions {
    pub(crate) start: StartMode,
    /// `consumer-id`: progress is kept in `consumer/consumer-<id>` and a restart resumes there.
    pub(crate) consumer_id: Option<String>,
    /// `continuous.discovery-interval` in millis (Paimon's default: 10 s).
    pub(crate) discovery_interval_ms: u64,
    /// The latest snapshot when the read was planned: "latest" means this one, not whichever is
    /// latest when the first row is pulled.
    pub(crate) latest_at_plan: Option<i64>,
}

impl StreamOptions {
    /// Parses `'key=value'` arguments; unknown keys are errors naming them.
    #[cfg(test)]
    pub(crate) fn parse(args: &[String]) -> Result<Self> {
        Self::parse_over(&BTreeMap::new(), args)
    }

    /// As [`StreamOptions::parse`], over the session's read options (`SET paimon.*`), which
    /// the arguments override. A session option a stream does not apply is an error naming it,
    /// never ignored.
    pub(crate) fn parse_over(session: &BTreeMap<String, String>, args: &[String]) -> Result<Self> {
        const APPLIED: &[&str] = &[
            "scan.mode",
            "scan.snapshot-id",
            "scan.timestamp-millis",
            "consumer-id",
            "continuous.discovery-interval",
        ];
        let mut map = BTreeMap::new();
        for (k, v) in session {
            if !APPLIED.contains(&k.as_str()) {
                return plan_err!(
                    "Option '{k}' set for this session does not apply to paimon_stream (it takes {}): RESET paimon.{k} first",
                    APPLIED.join(", ")
                );
            }
            map.insert(k.clone(), v.clone());
        }
        for arg in args {
            let (k, v) = arg
                .split_once('=')
                .ok_or_else(|| plan_datafusion_err!("paimon_stream option '{arg}' must be 'key=value'"))?;
            map.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
        let int = |key: &str| -> Result<Option<i64>> {
            map.get(key)
                .map(|v| {
                    v.parse::<i64>().map_err(|_| {
                        plan_datafusion_err!("paimon_stream option '{key}' must be an integer, got '{v}'")
                    })
                })
                .transpose()
        };
        let snapshot = int("scan.snapshot-id")?;
        let timestamp = int("scan.timestamp-millis")?;
        let mode = map.get("scan.mode").map(|m| m.to_ascii_lowercase());
        let start = match (mode.as_deref(), snapshot, timestamp) {
            (None | Some("default"), Some(id), None) => StartMode::FromSnapshot(id),
            (None | Some("default"), None, Some(t)) => StartMode::FromTimestamp(t),
            (None | Some("default") | Some("latest-full") | Some("full"), None, None) => StartMode::LatestFull,
            (Some("latest"), None, None) => StartMode::Latest,
            (Some("from-snapshot"), Some(id), None) => StartMode::FromSnapshot(id),
            (Some("from-snapshot-full"), Some(id), None) => StartMode::FromSnapshotFull(id),
            (Some("from-timestamp"), None, Some(t)) => StartMode::FromTimestamp(t),
            (Some("compacted-full"), None, None) => StartMode::CompactedFull,
            (Some(m @ ("from-snapshot" | "from-snapshot-full")), _, _) => {
                return plan_err!("scan.mode '{m}' needs 'scan.snapshot-id' (and no scan.timestamp-millis)")
            }
            (Some("from-timestamp"), _, _) => {
                return plan_err!("scan.mode 'from-timestamp' needs 'scan.timestamp-millis' (and no scan.snapshot-id)")
            }
            (Some(m), _, _) => {
                return plan_err!(
                    "Unsupported scan.mode '{m}' for paimon_stream: expected latest-full, latest, from-snapshot, from-snapshot-full, from-timestamp or compacted-full, without conflicting scan.snapshot-id / scan.timestamp-millis"
                )
            }
            (None, Some(_), Some(_)) => return plan_err!("Set only one of scan.snapshot-id and scan.timestamp-millis"),
        };
        let consumer_id = map.get("consumer-id").cloned();
        if let Some(id) = consumer_id
            .as_deref()
            .filter(|id| !crate::meta::valid_consumer_id(id))
        {
            return plan_err!("Invalid consumer-id '{id}': use letters, digits, '-', '_' and '.'");
        }
        let discovery_interval_ms = match map.get("continuous.discovery-interval") {
            None => 10_000,
            Some(v) => parse_duration_ms(v).filter(|ms| *ms > 0).ok_or_else(|| {
                plan_datafusion_err!(
                    "Invalid continuous.discovery-interval '{v}': expected a duration such as '1 s'"
                )
            })? as u64,
        };
        for key in map.keys() {
            if ![
                "scan.mode",
                "scan.snapshot-id",
                "scan.timestamp-millis",
                "consumer-id",
                "continuous.discovery-interval",
            ]
            .contains(&key.as_str())
            {
                return plan_err!(
                    "Unknown paimon_stream option '{key}': expected scan.mode, scan.snapshot-id, scan.timestamp-millis, consumer-id or continuous.discovery-interval"
                );
            }
        }
        Ok(StreamOptions {
            start,
            consumer_id,
            discovery_interval_ms,
            latest_at_plan: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<StreamOptions> {
        StreamOptions::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn start_modes() {
        assert_eq!(parse(&[]).unwrap().start, StartMode::LatestFull);
        assert_eq!(parse(&["scan.mode=latest"]).unwrap().start, StartMode::Latest);
        assert_eq!(
            parse(&["scan.snapshot-id=3"]).unwrap().start,
            StartMode::FromSnapshot(3)
        );
        assert_eq!(
            parse(&["scan.mode=from-snapshot-full", "scan.snapshot-id=2"])
                .unwrap()
                .start,
            StartMode::FromSnapshotFull(2)
        );
        assert_eq!(
            parse(&["scan.timestamp-millis=5"]).unwrap().start,
            StartMode::FromTimestamp(5)
        );
        assert!(parse(&["scan.mode=from-snapshot"]).is_err());
        assert!(parse(&["bogus=1"]).is_err());
        assert!(parse(&["consumer-id=../x"]).is_err());
        assert_eq!(
            parse(&["continuous.discovery-interval=100 ms"])
                .unwrap()
                .discovery_interval_ms,
            100
        );
    }
}
