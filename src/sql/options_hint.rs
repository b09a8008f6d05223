//! Flink's dynamic table options on one table reference of a query, as Paimon documents time
//! travel and incremental reads for Flink:
//!
//! ```sql
//! SELECT * FROM t /*+ OPTIONS('scan.snapshot-id' = '1') */;
//! SELECT * FROM t /*+ OPTIONS('scan.tag-name' = 'tag1') */ a JOIN t b ON a.k = b.k;
//! SELECT * FROM t$audit_log /*+ OPTIONS('incremental-between' = '1,3') */;
//! ```
//!
//! SQL parsers drop comments, so the hint would be ignored and the query would silently read
//! the latest snapshot. Before a statement is parsed, [`expand_options_hints`] therefore moves
//! each hint into the name of the table it follows, as a quoted identifier that keeps the alias
//! the reference had (`t /*+ OPTIONS(..) */` becomes `"t /*+ OPTIONS(..) */" AS t`); the
//! catalog then loads that reference with the hint's options over the session's `SET
//! paimon.*` options ([`split_hinted_name`], [`with_hint`]). Plans show the hinted name.
//!
//! The time-travel clauses Flink and Spark write for Paimon become the same options:
//! `t FOR SYSTEM_TIME AS OF TIMESTAMP '…'`, `t VERSION AS OF 3`, `t TIMESTAMP AS OF '…'`.
//!
//! Hints are read options: one on the target of INSERT, UPDATE or DELETE is an error rather than
//! a write that silently ignores it. Other `/*+ ... */` hints (Flink's join hints) stay
//! comments: they do not change results.

use std::borrow::Cow;
use std::collections::BTreeMap;

use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::{Keyword, RESERVED_FOR_TABLE_ALIAS};
use datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, Whitespace};

use crate::spec::options::{
    INCREMENTAL_BETWEEN, INCREMENTAL_BETWEEN_TIMESTAMP, SCAN_SNAPSHOT_ID, SCAN_TAG_NAME,
    SCAN_TIMESTAMP_MILLIS,
};

/// What separates a table name from its hint inside a hinted name.
const MARK: &str = " /*+ ";

/// Options that each pick the snapshot a read sees, or the range an incremental read covers:
/// a hint that sets one replaces the session's choice instead of conflicting with it.
const SELECTORS: [&[&str]; 2] = [
    &[
        SCAN_SNAPSHOT_ID,
        SCAN_TAG_NAME,
        SCAN_TIMESTAMP_MILLIS,
        "scan.timestamp",
        "scan.version",
    ],
    &[
        INCREMENTAL_BETWEEN,
        INCREMENTAL_BETWEEN_TIMESTAMP,
        "incremental-to-auto-tag",
    ],
];

/// `sql` with every `OPTIONS` hint moved into the name of the table it follows (see the module
/// comment); `sql` itself when it has none, or when it does not tokenize (DataFusion then
/// reports the error). `normalize`: unquoted identifiers are lower-cased.
pub(crate) fn expand_options_hints(sql: &str, normalize: bool) -> Result<Cow<'_, str>> {
    // (no hint and no `… AS OF`: nothing to tokenize)
    if !sql.contains("/*+") && !sql.as_bytes().windows(2).any(|w| w.eq_ignore_ascii_case(b"of")) {
        return Ok(Cow::Borrowed(sql));
    }
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location() else {
        return Ok(Cow::Borrowed(sql));
    };
    let offsets = Offsets::new(sql);
    let mut out = String::with_capacity(sql.len() + 32);
    let mut copied = 0;
    for at in 0..tokens.len() {
        // what follows the table name: a hint, or a time-travel clause (`last`: its last token)
        let (last_token, options) = match &tokens[at].token {
            Token::Whitespace(Whitespace::MultiLineComment(comment)) => {
                let Some(hint) = comment.strip_prefix('+') else {
                    continue;
                };
                let Some(options) = parse_options(hint)? else {
                    continue;
                };
                (at, options)
            }
            Token::Word(_) => match time_travel_clause(&tokens, at) {
                Some(clause) => clause,
                None => continue,
            },
            _ => continue,
        };
        if offsets.byte(tokens[at].span.start) < copied {
            continue;
        }
        let reference = TableReference::before(&tokens, at)?;
        check_read_position(&tokens, reference.first)?;
        let name_start = offsets.byte(tokens[reference.first].span.start);
        let last_start = offsets.byte(tokens[reference.last].span.start);
        let hint_end = offsets.byte(tokens[last_token].span.end);
        let Token::Word(last) = &tokens[reference.last].token else {
            unreachable!("a table reference ends with a word");
        };
        let table = match (last.quote_style, normalize) {
            (None, true) => last.value.to_ascii_lowercase(),
            _ => last.value.clone(),
        };
        out.push_str(&sql[copied..name_start]);
        out.push_str(&sql[name_start..last_start]);
        out.push('"');
        out.push_str(&hinted_name(&table, &options).replace('"', "\"\""));
        out.push('"');
        if !has_alias(&tokens, last_token) {
            out.push_str(" AS ");
            out.push_str(&sql[last_start..offsets.byte(tokens[reference.last].span.end)]);
        }
        copied = hint_end;
    }
    if copied == 0 {
        return Ok(Cow::Borrowed(sql));
    }
    out.push_str(&sql[copied..]);
    Ok(Cow::Owned(out))
}

/// A time-travel clause starting at `at`, as Flink and Spark write them for Paimon: its last
/// token and the read option it stands for.
/// * `FOR SYSTEM_TIME AS OF TIMESTAMP '…'` (Flink): `scan.timestamp`;
/// * `VERSION AS OF n | 'tag'` (Spark): `scan.version`;
/// * `TIMESTAMP AS OF '…'` (Spark): `scan.timestamp`; `TIMESTAMP AS OF n`: unix seconds.
///
/// Other forms (an expression, a lookup join's `FOR SYSTEM_TIME AS OF o.proc_time`) are left to
/// DataFusion's parser, which rejects them.
fn time_travel_clause(tokens: &[TokenWithSpan], at: usize) -> Option<(usize, Vec<(String, String)>)> {
    let significant: Vec<usize> = (at..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .take(6)
        .collect();
    let word = |n: usize| match significant.get(n).map(|&i| &tokens[i].token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let value = |n: usize| -> Option<(usize, String, bool)> {
        let i = *significant.get(n)?;
        match &tokens[i].token {
            Token::SingleQuotedString(s) => Some((i, s.clone(), false)),
            Token::Number(n, _) => Some((i, n.clone(), true)),
            _ => None,
        }
    };
    let as_of = |n: usize| word(n).as_deref() == Some("AS") && word(n + 1).as_deref() == Some("OF");
    let option = |key: &str, (i, v, _): (usize, String, bool)| Some((i, vec![(key.to_string(), v)]));
    match word(0)?.as_str() {
        "FOR" if word(1).as_deref() == Some("SYSTEM_TIME") && as_of(2) => {
            let literal = match word(4).as_deref() {
                Some("TIMESTAMP") => value(5)?,
                _ => value(4)?,
            };
            (!literal.2).then_some(())?;
            option("scan.timestamp", literal)
        }
        "VERSION" if as_of(1) => option("scan.version", value(3)?),
        "TIMESTAMP" if as_of(1) => match value(3)? {
            (i, seconds, true) => {
                let millis = seconds.parse::<i64>().ok()?.checked_mul(1000)?;
                Some((i, vec![("scan.timestamp-millis".to_string(), millis.to_string())]))
            }
            literal => option("scan.timestamp", literal),
        },
        _ => None,
    }
}

/// A hinted table name's table and options; `None` for a name without a hint.
pub(crate) fn split_hinted_name(name: &str) -> Result<Option<(&str, Vec<(String, String)>)>> {
    let Some((table, hint)) = name.split_once(MARK) else {
        return Ok(None);
    };
    let hint = hint.strip_suffix("*/").unwrap_or(hint);
    let options = parse_options(hint)?
        .ok_or_else(|| plan_datafusion_err!("Table name '{name}' holds a hint that is not OPTIONS(...)"))?;
    Ok(Some((table, options)))
}

/// The session's read options with a hint's over them: a hint that picks a snapshot (or an
/// incremental range) replaces the session's pick.
pub(crate) fn with_hint(
    mut session: BTreeMap<String, String>,
    hint: Vec<(String, String)>,
) -> BTreeMap<String, String> {
    for group in SELECTORS {
        if hint.iter().any(|(k, _)| group.contains(&k.as_str())) {
            session.retain(|k, _| !group.contains(&k.as_str()));
        }
    }
    session.extend(hint);
    session
}

fn hinted_name(table: &str, options: &[(String, String)]) -> String {
    let pairs: Vec<String> = options
        .iter()
        .map(|(k, v)| format!("'{}' = '{}'", k.replace('\'', "''"), v.replace('\'', "''")))
        .collect();
    format!("{table}{MARK}OPTIONS({}) */", pairs.join(", "))
}

/// The options of a hint body (the comment after its `+`): `OPTIONS('k' = 'v', ...)`; `None`
/// for another hint.
fn parse_options(hint: &str) -> Result<Option<Vec<(String, String)>>> {
    let invalid = || {
        plan_datafusion_err!(
            "Invalid OPTIONS hint '/*+{hint}*/': expected OPTIONS('key' = 'value' [, 'key' = 'value' ...])"
        )
    };
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, hint).tokenize() else {
        return Err(invalid());
    };
    let mut tokens = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_)));
    match tokens.next() {
        Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("options") => {}
        _ => return Ok(None),
    }
    if tokens.next() != Some(Token::LParen) {
        return Err(invalid());
    }
    let mut options = Vec::new();
    loop {
        let key = match tokens.next() {
            Some(Token::SingleQuotedString(k)) => k,
            Some(Token::RParen) if options.is_empty() => break,
            _ => return Err(invalid()),
        };
        if tokens.next() != Some(Token::Eq) {
            return Err(invalid());
        }
        let Some(Token::SingleQuotedString(value)) = tokens.next() else {
            return Err(invalid());
        };
        options.push((key, value));
        match tokens.next() {
            Some(Token::Comma) => continue,
            Some(Token::RParen) => break,
            _ => return Err(invalid()),
        }
    }
    if tokens.next().is_some() || options.is_empty() {
        return Err(invalid());
    }
    Ok(Some(options))
}

/// The tokens of the table name a hint follows: `first..=last` (`db.t`, `"t"`, `t$audit_log`).
struct TableReference {
    first: usize,
    last: usize,
}

impl TableReference {
    fn before(tokens: &[TokenWithSpan], hint: usize) -> Result<Self> {
        let misplaced = || plan_err!("An OPTIONS hint must follow a table name in FROM or JOIN");
        let Some(last) = previous_significant(tokens, hint) else {
            return misplaced();
        };
        if !matches!(tokens[last].token, Token::Word(_)) {
            return misplaced();
        }
        // `db.t`, `catalog.db.t`: words joined by periods, with nothing in between
        let mut first = last;
        while first >= 2
            && tokens[first - 1].token == Token::Period
            && matches!(tokens[first - 2].token, Token::Word(_))
        {
            first -= 2;
        }
        Ok(TableReference { first, last })
    }
}

/// A hinted table is read: it follows FROM, JOIN or a comma of a FROM list, in a statement that
/// writes to another table if it writes at all.
fn check_read_position(tokens: &[TokenWithSpan], name: usize) -> Result<()> {
    let keyword = |t: &Token| match t {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    let statement = tokens
        .iter()
        .map(|t| &t.token)
        .find(|t| !matches!(t, Token::Whitespace(_)));
    if let Some(k @ (Keyword::DELETE | Keyword::UPDATE)) = statement.and_then(keyword) {
        return plan_err!("An OPTIONS hint is a read option: it cannot apply to the target of {k:?}");
    }
    let before = previous_significant(tokens, name).map(|i| &tokens[i].token);
    match before.and_then(keyword) {
        Some(Keyword::FROM | Keyword::JOIN) => Ok(()),
        Some(Keyword::INTO | Keyword::TABLE | Keyword::OVERWRITE) => plan_err!(
            "An OPTIONS hint is a read option: it cannot apply to the target of an INSERT (ALTER TABLE ... SET changes table options)"
        ),
        _ if before == Some(&Token::Comma) => Ok(()),
        _ => plan_err!("An OPTIONS hint must follow a table name in FROM or JOIN"),
    }
}

/// Whether an alias follows the hint at `hint` (`AS a`, or a word no clause starts with).
fn has_alias(tokens: &[TokenWithSpan], hint: usize) -> bool {
    let next = tokens[hint + 1..]
        .iter()
        .find(|t| !matches!(t.token, Token::Whitespace(_)));
    match next.map(|t| &t.token) {
        Some(Token::Word(w)) => {
            w.keyword == Keyword::AS
                || w.quote_style.is_some()
                || !RESERVED_FOR_TABLE_ALIAS.contains(&w.keyword)
        }
        _ => false,
    }
}

fn previous_significant(tokens: &[TokenWithSpan], before: usize) -> Option<usize> {
    (0..before)
        .rev()
        .find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

/// Byte offsets of the tokenizer's (line, column) locations, columns counted in characters.
pub(crate) struct Offsets<'a> {
    sql: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> Offsets<'a> {
    pub(crate) fn new(sql: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        Offsets { sql, line_starts }
    }

    pub(crate) fn byte(&self, at: Location) -> usize {
        let start = self.line_starts[(at.line as usize)
            .saturating_sub(1)
            .min(self.line_starts.len() - 1)];
        self.sql[start..]
            .char_indices()
            .nth((at.column as usize).saturating_sub(1))
            .map_or(self.sql.len(), |(i, _)| start + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(sql: &str) -> String {
        expand_options_hints(sql, true).unwrap().into_owned()
    }

    #[test]
    fn a_hint_moves_into_the_name_and_keeps_the_alias() {
        assert_eq!(
            expand("SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */ WHERE k > 1"),
            r#"SELECT * FROM "t /*+ OPTIONS('scan.snapshot-id' = '1') */" AS t WHERE k > 1"#
        );
        // An alias of its own, a qualified name, a mixed-case name (lower-cased, as DataFusion
        // does, but kept as written in the alias), a system table, two hints.
        assert_eq!(
            expand("SELECT a.v FROM db.T /*+ OPTIONS('scan.tag-name' = 'x') */ AS a JOIN t$audit_log /*+ options('incremental-between'='1,3', 'scan.mode' = 'latest') */ b ON a.k = b.k"),
            r#"SELECT a.v FROM db."t /*+ OPTIONS('scan.tag-name' = 'x') */" AS a JOIN "t$audit_log /*+ OPTIONS('incremental-between' = '1,3', 'scan.mode' = 'latest') */" b ON a.k = b.k"#
        );
        assert_eq!(
            expand("select * from \"Mixed\" /*+ OPTIONS('scan.snapshot-id'='2') */, u"),
            r#"select * from "Mixed /*+ OPTIONS('scan.snapshot-id' = '2') */" AS "Mixed", u"#
        );
        // Multi-line statements, quotes in values, and text after the hint kept byte for byte.
        assert_eq!(
            expand("SELECT 'é'\nFROM t /*+ OPTIONS('k'='it''s') */\nLIMIT 1"),
            "SELECT 'é'\nFROM \"t /*+ OPTIONS('k' = 'it''s') */\" AS t\nLIMIT 1"
        );
    }

    #[test]
    fn time_travel_clauses_become_options() {
        assert_eq!(
            expand("SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00' WHERE k = 1"),
            r#"SELECT * FROM "t /*+ OPTIONS('scan.timestamp' = '2024-01-01 00:00:00') */" AS t WHERE k = 1"#
        );
        assert_eq!(
            expand("SELECT * FROM db.t VERSION AS OF 3 a JOIN u VERSION AS OF 'tag1' ON a.k = u.k"),
            r#"SELECT * FROM db."t /*+ OPTIONS('scan.version' = '3') */" a JOIN "u /*+ OPTIONS('scan.version' = 'tag1') */" AS u ON a.k = u.k"#
        );
        // Spark's unix seconds
        assert_eq!(
            expand("SELECT * FROM t TIMESTAMP AS OF 1678883047"),
            r#"SELECT * FROM "t /*+ OPTIONS('scan.timestamp-millis' = '1678883047000') */" AS t"#
        );
        assert_eq!(
            expand("SELECT * FROM t TIMESTAMP AS OF '2024-01-01'"),
            r#"SELECT * FROM "t /*+ OPTIONS('scan.timestamp' = '2024-01-01') */" AS t"#
        );
        // A lookup join's processing-time clause is not a time travel: left to DataFusion.
        assert_untouched(&[
            "SELECT * FROM o JOIN d FOR SYSTEM_TIME AS OF o.proc_time AS x ON o.k = x.k",
            "SELECT version AS of FROM t",
            "SELECT * FROM t OFFSET 1",
        ]);
    }

    fn assert_untouched(statements: &[&str]) {
        for sql in statements {
            assert!(
                matches!(expand_options_hints(sql, true).unwrap(), Cow::Borrowed(_)),
                "{sql}"
            );
        }
    }

    #[test]
    fn statements_without_options_hints_are_untouched() {
        assert_untouched(&[
            "SELECT * FROM t",
            "SELECT /*+ BROADCAST(t) */ * FROM t",
            "SELECT * FROM t /* OPTIONS('scan.snapshot-id'='1') */",
            "SELECT '/*+ OPTIONS(x) */' FROM t",
        ]);
    }

    #[test]
    fn misplaced_or_malformed_hints_are_errors() {
        let error = |sql: &str| expand_options_hints(sql, true).unwrap_err().to_string();
        assert!(
            error("INSERT INTO t /*+ OPTIONS('write-only'='true') */ VALUES (1)")
                .contains("target of an INSERT")
        );
        assert!(error("DELETE FROM t /*+ OPTIONS('a'='b') */ WHERE k = 1").contains("target of DELETE"));
        assert!(error("SELECT * FROM (SELECT 1) /*+ OPTIONS('a'='b') */").contains("follow a table name"));
        assert!(
            error("SELECT * FROM t /*+ OPTIONS(scan.snapshot-id = 1) */").contains("Invalid OPTIONS hint")
        );
        assert!(error("SELECT * FROM t /*+ OPTIONS('a'='b' */").contains("Invalid OPTIONS hint"));
        // A hint on the source of an INSERT is a read.
        assert!(expand_options_hints(
            "INSERT INTO u SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */",
            true
        )
        .is_ok());
    }

    #[test]
    fn hinted_names_split_back_and_override_the_session() {
        let expanded = expand("SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1', 'k'='it''s') */");
        let name = "t /*+ OPTIONS('scan.snapshot-id' = '1', 'k' = 'it''s') */";
        assert!(expanded.contains(name));
        let (table, hint) = split_hinted_name(name).unwrap().unwrap();
        assert_eq!(table, "t");
        assert_eq!(
            hint,
            vec![
                ("scan.snapshot-id".into(), "1".into()),
                ("k".into(), "it's".into())
            ]
        );
        assert!(split_hinted_name("t$audit_log").unwrap().is_none());

        let session: BTreeMap<String, String> = [
            ("scan.tag-name", "old"),
            ("incremental-between", "1,2"),
            ("scan.mode", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let merged = with_hint(session, hint);
        let keys: Vec<&str> = merged.keys().map(String::as_str).collect();
        // the hint's snapshot replaces the session's tag; the rest stays
        assert_eq!(
            keys,
            vec!["incremental-between", "k", "scan.mode", "scan.snapshot-id"]
        );
    }
}
