//! Parsing `SET paimon.<option> = '<value>'` and `RESET [paimon.<option>]`.
//!
//! Paimon option names contain hyphens (`scan.snapshot-id`), which SQL identifiers cannot, so
//! these two statement forms are recognised here before DataFusion parses anything else.

/// A session statement we handle ourselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStatement {
    /// `SET paimon.<key> = <value>`.
    Set {
        /// Paimon option key without the `paimon.` prefix.
        key: String,
        /// The value, unquoted.
        value: String,
    },
    /// `RESET paimon.<key>`, or `RESET` / `RESET paimon` (all options) when `key` is None.
    Reset {
        /// The option to clear.
        key: Option<String>,
    },
}

const PREFIX: &str = "paimon.";

/// Read options a session sets most often, beyond the table options DDL knows: a
/// `SET paimon.<key>` outside these and the table options is most likely a typo.
const READ_OPTIONS: &[&str] = &[
    "scan.mode",
    "scan.snapshot-id",
    "scan.tag-name",
    "scan.timestamp-millis",
    "scan.timestamp",
    "scan.watermark",
    "scan.file-creation-time-millis",
    "scan.creation-time-millis",
    "scan.bounded.watermark",
    "scan.version",
    "incremental-between",
    "incremental-between-timestamp",
    "incremental-between-scan-mode",
    "incremental-between-tag-to-snapshot",
    "incremental-to-auto-tag",
    "consumer-id",
    "consumer.expiration-time",
    "changelog.allow-after-only",
    "continuous.discovery-interval",
    "file-index.read.enabled",
    "source.split.target-size",
    "source.split.open-file-cost",
    "lookup.cache-max-memory-size",
    "branch",
    "deletion-vectors.merge-on-read",
    "blob-as-descriptor",
];

/// Whether `key` (without `paimon.`) is an option a session may meaningfully set: a read
/// option or any table option (applied to the session's reads, as Paimon's dynamic options).
pub fn is_known_option(key: &str) -> bool {
    READ_OPTIONS.contains(&key)
        || super::ddl::options::is_known_table_option(key)
        || key.starts_with("fields.")
}

/// Recognises a session statement; `None` means "not ours, give it to DataFusion".
pub fn parse_session_statement(sql: &str) -> Option<SessionStatement> {
    let text = sql.trim().trim_end_matches(';').trim();
    let (verb, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    if verb.eq_ignore_ascii_case("reset") {
        if rest.is_empty() || rest.eq_ignore_ascii_case("paimon") {
            return Some(SessionStatement::Reset { key: None });
        }
        let key = strip_prefix(unquote(rest))?;
        return Some(SessionStatement::Reset { key: Some(key) });
    }
    if !verb.eq_ignore_ascii_case("set") {
        return None;
    }
    let (name, value) = match rest.split_once('=') {
        Some((n, v)) => (n.trim(), v.trim()),
        None => {
            let (n, v) = rest.split_once(char::is_whitespace)?;
            let v = v.trim();
            let v = v.strip_prefix("TO ").or_else(|| v.strip_prefix("to "))?;
            (n.trim(), v.trim())
        }
    };
    let key = strip_prefix(unquote(name))?;
    Some(SessionStatement::Set {
        key,
        value: unquote(value).to_string(),
    })
}

fn strip_prefix(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    lower
        .starts_with(PREFIX)
        .then(|| name[PREFIX.len()..].to_string())
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    for q in ['\'', '"', '`'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_are_unknown() {
        assert!(is_known_option("scan.snapshot-id"));
        assert!(is_known_option("deletion-vectors.merge-on-read"));
        assert!(is_known_option("merge-engine"));
        assert!(!is_known_option("scan.snapshot-idd"));
    }

    #[test]
    fn parses_set_and_reset() {
        assert_eq!(
            parse_session_statement("SET paimon.scan.snapshot-id = '3';"),
            Some(SessionStatement::Set {
                key: "scan.snapshot-id".into(),
                value: "3".into()
            })
        );
        assert_eq!(
            parse_session_statement("set paimon.scan.tag-name to 'after'"),
            Some(SessionStatement::Set {
                key: "scan.tag-name".into(),
                value: "after".into()
            })
        );
        assert_eq!(
            parse_session_statement("RESET paimon.scan.snapshot-id"),
            Some(SessionStatement::Reset {
                key: Some("scan.snapshot-id".into())
            })
        );
        assert_eq!(
            parse_session_statement("RESET"),
            Some(SessionStatement::Reset { key: None })
        );
        assert_eq!(
            parse_session_statement("SET datafusion.execution.batch_size = 1"),
            None
        );
        assert_eq!(parse_session_statement("SELECT 1"), None);
    }
}
