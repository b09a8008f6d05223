//! Splitting SQL text into statements on `;` outside quotes and comments.
//!
//! datafusion-cli hands each string it gets to DataFusion's parser, which rejects
//! `SET paimon.scan.snapshot-id = '1'` (Paimon option names contain hyphens). So the CLI
//! splits the text itself and offers every statement to
//! `PaimonSession::try_session_statement` before DataFusion sees it.
//!
//! Comments are removed from the statements: a statement that is only a comment disappears,
//! and `-- time travel\nSET paimon.… = …` is still recognised as a session statement. Hints
//! (`/*+ OPTIONS(…) */`, Flink's dynamic table options) are kept: they change what a query reads.
//! Quoting follows standard SQL: `'…'` strings, `"…"` and `` `…` `` identifiers, each with the
//! quote doubled to escape it; `--` line comments and nestable `/* … */` block comments.

/// Statements found in a piece of SQL text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Statements terminated by `;`, without comments, trimmed, never empty.
    pub statements: Vec<String>,
    /// The unterminated text after the last `;`, without comments and trimmed.
    pub rest: String,
    /// Byte offset in the input where the unterminated text starts.
    pub rest_offset: usize,
    /// Whether the input ends inside a quoted string, quoted identifier or block comment.
    pub open: bool,
}

impl Split {
    /// Terminated statements plus the unterminated rest, if any: how a file or `-c` string
    /// runs (a missing final `;` is fine there).
    pub fn into_all(mut self) -> Vec<String> {
        if !self.rest.is_empty() {
            self.statements.push(self.rest);
        }
        self.statements
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Normal,
    Quoted(char),
    LineComment,
    /// Inside `/*+ … */`, kept verbatim.
    Hint,
    BlockComment(usize),
}

/// Splits `text` into statements; see the module docs for the quoting rules.
pub fn split_statements(text: &str) -> Split {
    let mut split = Split::default();
    let mut current = String::new();
    let mut state = State::Normal;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        state = match state {
            State::Normal => match (c, next) {
                (';', _) => {
                    push_statement(&mut split.statements, &mut current);
                    split.rest_offset = i + 1;
                    State::Normal
                }
                ('-', Some('-')) => {
                    chars.next();
                    State::LineComment
                }
                ('/', Some('*')) if text[i + 2..].starts_with('+') => {
                    chars.next();
                    current.push_str("/*");
                    State::Hint
                }
                ('/', Some('*')) => {
                    chars.next();
                    current.push(' ');
                    State::BlockComment(1)
                }
                ('\'' | '"' | '`', _) => {
                    current.push(c);
                    State::Quoted(c)
                }
                _ => {
                    current.push(c);
                    State::Normal
                }
            },
            State::Quoted(q) => {
                current.push(c);
                match (c == q, next == Some(q)) {
                    // A doubled quote is an escaped quote character.
                    (true, true) => {
                        chars.next();
                        current.push(q);
                        State::Quoted(q)
                    }
                    (true, false) => State::Normal,
                    _ => State::Quoted(q),
                }
            }
            State::LineComment if c == '\n' => {
                current.push('\n');
                State::Normal
            }
            State::LineComment => State::LineComment,
            State::Hint => {
                current.push(c);
                if c == '*' && next == Some('/') {
                    chars.next();
                    current.push('/');
                    State::Normal
                } else {
                    State::Hint
                }
            }
            State::BlockComment(depth) => match (c, next) {
                ('*', Some('/')) => {
                    chars.next();
                    if depth == 1 {
                        State::Normal
                    } else {
                        State::BlockComment(depth - 1)
                    }
                }
                ('/', Some('*')) => {
                    chars.next();
                    State::BlockComment(depth + 1)
                }
                _ => State::BlockComment(depth),
            },
        };
    }
    split.open = matches!(state, State::Quoted(_) | State::BlockComment(_) | State::Hint);
    split.rest = current.trim().to_string();
    split
}

fn push_statement(statements: &mut Vec<String>, current: &mut String) {
    let statement = current.trim();
    if !statement.is_empty() {
        statements.push(statement.to_string());
    }
    current.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        split_statements(text).into_all()
    }

    #[test]
    fn splits_on_semicolons_outside_quotes() {
        assert_eq!(
            all("SELECT 'a;b'; SELECT \"x;y\" FROM t;SELECT `c;d`"),
            ["SELECT 'a;b'", "SELECT \"x;y\" FROM t", "SELECT `c;d`"]
        );
        assert_eq!(
            all("SELECT 'it''s; fine'; SELECT 2"),
            ["SELECT 'it''s; fine'", "SELECT 2"]
        );
    }

    #[test]
    fn drops_comments_and_empty_statements() {
        let text = "-- header; not a statement\n\
                    SET paimon.scan.snapshot-id = '1'; -- trailing\n\
                    /* block; /* nested; */ still comment */ SELECT 1 -- done\n;;\n-- only a comment";
        assert_eq!(all(text), ["SET paimon.scan.snapshot-id = '1'", "SELECT 1"]);
    }

    #[test]
    fn keeps_options_hints() {
        assert_eq!(
            all("SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */ /* gone */; SELECT 2"),
            [
                "SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='1') */",
                "SELECT 2"
            ]
        );
        assert!(split_statements("SELECT * FROM t /*+ OPTIONS(").open);
    }

    #[test]
    fn keeps_comment_markers_inside_strings() {
        assert_eq!(all("SELECT '-- no', '/* no */'"), ["SELECT '-- no', '/* no */'"]);
    }

    #[test]
    fn reports_unterminated_rest() {
        let split = split_statements("SELECT 1; SELECT\n  2");
        assert_eq!(split.statements, ["SELECT 1"]);
        assert_eq!(split.rest, "SELECT\n  2");
        assert_eq!(split.rest_offset, "SELECT 1;".len());
        assert!(!split.open);

        let split = split_statements("SELECT 'abc;\n");
        assert!(split.statements.is_empty());
        assert!(split.open);

        let split = split_statements("SELECT 1; /* open");
        assert_eq!(split.statements, ["SELECT 1"]);
        assert!(split.open);
        assert_eq!(split.rest, "");
    }

    #[test]
    fn empty_input() {
        assert_eq!(split_statements(""), Split::default());
        assert!(all(" \n -- c\n").is_empty());
    }
}
