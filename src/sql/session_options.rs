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

/// Read options the reads of this crate apply, by `SET paimon.<key>` or a hint: each changes
/// what a read returns (or a stream's start and progress), as in Paimon.
pub const APPLIED_READ_OPTIONS: &[&str] = &[
    "scan.mode",
    "scan.snapshot-id",
    "scan.tag-name",
    "scan.timestamp-millis",
    "scan.timestamp",
    "scan.watermark",
    "scan.version",
    "incremental-between",
    "incremental-between-timestamp",
    "incremental-between-scan-mode",
    "incremental-between-tag-to-snapshot",
    "consumer-id",
    "continuous.discovery-interval",
    "changelog.allow-after-only",
    "branch",
    "deletion-vectors.merge-on-read",
    "blob-as-descriptor",
    "file-index.read.enabled",
];

/// Read options that tune how a read runs, never what it returns (in Paimon as here): accepted,
/// with no effect on this crate's reads.
pub const TUNING_OPTIONS: &[&str] = &[
    "source.split.target-size",
    "source.split.open-file-cost",
    "lookup.cache-max-memory-size",
];

/// Read options a read refuses, naming them, when they are set (not implemented, or batch
/// reads do not take them).
pub const REFUSED_AT_READ: &[&str] = &["scan.file-creation-time-millis", "scan.creation-time-millis"];

/// Whether `key` (without `paimon.`) is a Paimon option at all: a read option or a table
/// option.
pub fn is_known_option(key: &str) -> bool {
    APPLIED_READ_OPTIONS.contains(&key)
        || TUNING_OPTIONS.contains(&key)
        || REFUSED_AT_READ.contains(&key)
        || super::ddl::options::is_known_table_option(key)
        || key.starts_with("fields.")
}

/// Whether a session (`SET paimon.<key>`) or a hint may set `key` for reads: an option the
/// reads apply, one that only tunes them, or one a read refuses by name. Anything else would
/// be accepted and ignored, so it fails here, naming the option: a table option is changed on
/// the table (`ALTER TABLE ... SET`), an unknown key is most likely a typo.
pub fn check_read_option(key: &str) -> Result<(), String> {
    if APPLIED_READ_OPTIONS.contains(&key) || TUNING_OPTIONS.contains(&key) || REFUSED_AT_READ.contains(&key)
    {
        return Ok(());
    }
    if is_known_option(key) {
        return Err(format!(
            "Option '{key}' is a table option, which reads do not take from the session or a hint; \
             change it on the table with ALTER TABLE ... SET ('{key}' = '...')"
        ));
    }
    Err(format!(
        "'{key}' is not a Paimon option this crate knows (a typo?)"
    ))
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
        assert!(check_read_option("scan.snapshot-id").is_ok());
        let err = check_read_option("merge-engine").unwrap_err();
        assert!(err.contains("'merge-engine' is a table option"), "{err}");
        assert!(check_read_option("scan.snapshot-idd")
            .unwrap_err()
            .contains("typo"));
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
