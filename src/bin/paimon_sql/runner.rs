//! Running statements: `SET`/`RESET paimon.*` through the Paimon session, everything else
//! through datafusion-cli's executor and printer.

use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::common::{exec_datafusion_err, DataFusionError, Result};
use datafusion_cli::exec::exec_from_commands;
use datafusion_cli::print_format::PrintFormat;
use datafusion_cli::print_options::PrintOptions;
use datafusion_paimon::progress::StatementProgress;
use datafusion_paimon::sql::{parse_session_statement, SessionStatement};
use datafusion_paimon::PaimonSession;

use crate::progress_line::StatusLine;
use crate::statements::split_statements;

/// A Paimon session plus how results are printed.
#[derive(Debug)]
pub struct Runner {
    session: PaimonSession,
    /// Output format, row limit and quiet mode; the REPL's `\pset` and `\quiet` change them.
    pub print_options: PrintOptions,
    /// Set while a JSON format is selected: maps with non-string keys print as entries
    /// (`json_maps.rs`).
    json_maps: Arc<AtomicBool>,
    /// The REPL's status line for long statements.
    status_line: Arc<StatusLine>,
}

impl Runner {
    /// A runner over `session` printing with `print_options`.
    pub fn new(
        session: PaimonSession,
        print_options: PrintOptions,
        json_maps: Arc<AtomicBool>,
        status_line: Arc<StatusLine>,
    ) -> Self {
        Runner {
            session,
            print_options,
            json_maps,
            status_line,
        }
    }

    /// The status line the REPL draws while a statement runs.
    pub fn status_line(&self) -> Arc<StatusLine> {
        Arc::clone(&self.status_line)
    }

    /// The session this runner executes against.
    pub fn session(&self) -> &PaimonSession {
        &self.session
    }

    /// The session's live counters (registered by `main::session_config`).
    pub fn progress(&self) -> Arc<StatementProgress> {
        StatementProgress::of_config(self.session.context().state().config())
            .unwrap_or_else(|| Arc::new(StatementProgress::default()))
    }

    /// Runs one statement (no trailing `;` needed) and prints its result.
    pub async fn run_statement(&self, sql: &str) -> Result<()> {
        // Our statements (SET/RESET paimon.*, DDL, SHOW DATABASES) run here; the rest goes to
        // datafusion-cli, which DataFusion's parser handles.
        // Timed from the start: DDL and procedures (`CALL sys.compact`) run while they are
        // recognised, before their (empty) result is collected.
        let start = std::time::Instant::now();
        // `/*+ OPTIONS(…) */` hints moved into table names, where the catalog reads them
        let expanded = self.session.expand_options_hints(sql)?;
        let sql: &str = &expanded;
        let json = matches!(self.print_options.format, PrintFormat::Json | PrintFormat::NdJson);
        self.json_maps.store(json, Ordering::Relaxed);
        if let Some(df) = self.session.try_paimon_statement(sql).await? {
            let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await?;
            self.status_line.output_starts();
            if schema.fields().is_empty() {
                if !self.print_options.quiet {
                    println!("{}", confirmation(sql));
                }
            } else {
                let rows = batches.iter().map(|b| b.num_rows()).sum();
                let format = self.session.context().state().config().options().format.clone();
                // datafusion-cli prints bounded results of `automatic` as a table; ours are
                // always bounded
                let mut print_options = self.print_options.clone();
                if matches!(print_options.format, PrintFormat::Automatic) {
                    print_options.format = PrintFormat::Table;
                }
                print_options.print_batches(schema, &batches, start, rows, &format)?;
            }
            return Ok(());
        }
        exec_from_commands(self.session.context(), vec![sql.to_string()], &self.print_options).await
    }

    /// Runs every statement of `text` in order and stops at the first failure. `source` names
    /// the text in the error (`-c #1`, a file path).
    pub async fn run_script(&self, text: &str, source: &str) -> Result<()> {
        let statements = split_statements(text).into_all();
        let count = statements.len();
        for (n, statement) in statements.iter().enumerate() {
            if let Err(e) = self.run_statement(statement).await {
                if count == 1 {
                    return Err(e);
                }
                let first_line = statement.lines().next().unwrap_or_default();
                return Err(e.context(format!(
                    "Statement {} of {count} in {source} failed: {first_line}",
                    n + 1
                )));
            }
        }
        Ok(())
    }

    /// Reads the SQL file at `path` and runs it like [`Runner::run_script`].
    pub async fn run_file(&self, path: &str) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| exec_datafusion_err!("Cannot read SQL file '{path}': {e}"))?;
        self.run_script(&text, path).await
    }
}

/// What a handled `SET`/`RESET paimon.*` did, in one line.
fn confirmation(sql: &str) -> String {
    match parse_session_statement(sql) {
        Some(SessionStatement::Set { key, value }) => format!("Set paimon.{key} = '{value}'."),
        Some(SessionStatement::Reset { key: Some(key) }) => format!("Reset paimon.{key}."),
        Some(SessionStatement::Reset { key: None }) => "Reset all paimon.* options.".to_string(),
        None => "OK.".to_string(),
    }
}

/// The error and its causes, each once: DataFusion's messages usually embed their source
/// already, so a cause is only appended when its text is not part of the message yet.
pub fn error_chain(error: &DataFusionError) -> String {
    let mut message = error.strip_backtrace();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str("\ncaused by: ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirms_session_statements() {
        assert_eq!(
            confirmation("SET paimon.scan.snapshot-id = '1'"),
            "Set paimon.scan.snapshot-id = '1'."
        );
        assert_eq!(
            confirmation("reset paimon.scan.tag-name"),
            "Reset paimon.scan.tag-name."
        );
        assert_eq!(confirmation("RESET"), "Reset all paimon.* options.");
    }

    #[test]
    fn error_chain_prints_each_cause_once() {
        let io = std::io::Error::other("disk on fire");
        let error = DataFusionError::IoError(io).context("Reading snapshot-3");
        let text = error_chain(&error);
        assert_eq!(text.matches("disk on fire").count(), 1, "{text}");
        assert!(text.contains("Reading snapshot-3"), "{text}");
    }
}
