//! The interactive loop: reads lines until a statement ends with `;`, runs it, prints errors
//! and carries on. `\q`, `quit` or `exit` (or Ctrl-D) leave; Ctrl-C clears the current input
//! or cancels the running statement; a statement running longer than a second shows a
//! status line with what it has read and written (`progress_line.rs`). Other `\` commands are datafusion-cli's (`\?` lists them).

use std::str::FromStr;
use std::sync::Arc;

use datafusion::common::{exec_datafusion_err, DataFusionError, Result};
use datafusion_cli::command::{Command, OutputFormat};
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use crate::runner::{error_chain, Runner};
use crate::statements::split_statements;

const PROMPT: &str = "paimon> ";
const CONTINUATION_PROMPT: &str = "     -> ";

/// Runs the REPL until the user quits.
pub async fn run(runner: &mut Runner, warehouse: &str) -> Result<()> {
    let mut editor = DefaultEditor::new().map_err(readline_error)?;
    if !runner.print_options.quiet {
        println!(
            "paimon-sql {} on warehouse {warehouse}",
            env!("CARGO_PKG_VERSION")
        );
        println!("End statements with ';'. \\? lists commands, \\q quits.");
    }
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            PROMPT
        } else {
            CONTINUATION_PROMPT
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(readline_error(e)),
        };
        if buffer.is_empty() {
            let command = line.trim();
            if is_quit(command) {
                break;
            }
            if let Some(backslash) = command.strip_prefix('\\') {
                let _ = editor.add_history_entry(command);
                if let Err(e) = backslash_command(runner, backslash).await {
                    eprintln!("Error: {}", error_chain(&e));
                }
                continue;
            }
        }
        buffer.push_str(&line);
        buffer.push('\n');
        let split = split_statements(&buffer);
        for statement in &split.statements {
            let _ = editor.add_history_entry(format!("{statement};"));
            run_cancellable(runner, statement).await;
        }
        if split.rest.is_empty() && !split.open {
            buffer.clear();
        } else {
            buffer.drain(..split.rest_offset);
        }
    }
    Ok(())
}

fn is_quit(command: &str) -> bool {
    let word = command.trim_end_matches(';').trim();
    word == "\\q" || word.eq_ignore_ascii_case("quit") || word.eq_ignore_ascii_case("exit")
}

/// Runs one statement, printing its error; Ctrl-C abandons it (dropping the future cancels
/// the DataFusion streams it polls).
async fn run_cancellable(runner: &Runner, statement: &str) {
    let progress = runner.progress();
    progress.reset();
    let status = runner.status_line();
    status.start();
    let ticker = status.spawn(Arc::clone(&progress), std::time::Instant::now());
    let outcome = tokio::select! {
        result = runner.run_statement(statement) => result.err(),
        _ = tokio::signal::ctrl_c() => {
            status.output_starts();
            println!("^C (statement cancelled)");
            None
        }
    };
    status.output_starts();
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    if let Some(e) = outcome {
        eprintln!("Error: {}", error_chain(&e));
    }
}

/// `\i <file>` runs a file through our splitter (so `SET paimon.*` works in it); `\pset`
/// changes the output format; the rest are datafusion-cli's commands.
async fn backslash_command(runner: &mut Runner, command: &str) -> Result<()> {
    if let Some(path) = command.strip_prefix("i ") {
        return runner.run_file(path.trim()).await;
    }
    let Ok(parsed) = Command::from_str(command) else {
        return Err(exec_datafusion_err!(
            "'\\{command}' is not a command; \\? lists the commands"
        ));
    };
    match parsed {
        Command::Quit => Ok(()),
        Command::Help => {
            print!("{HELP}");
            Ok(())
        }
        Command::OutputFormat(None) => {
            println!("Output format is {:?}.", runner.print_options.format);
            Ok(())
        }
        Command::OutputFormat(Some(option)) => match OutputFormat::from_str(&option) {
            Ok(format) => format.execute(&mut runner.print_options),
            Err(()) => Err(exec_datafusion_err!(
                "'\\pset {option}' is not supported; try '\\pset format csv'"
            )),
        },
        other => {
            let ctx = runner.session().context().clone();
            other.execute(&ctx, &mut runner.print_options).await
        }
    }
}

/// `\?`: the shell's commands, ours and datafusion-cli's.
const HELP: &str = "\
paimon-sql commands (end SQL statements with ';'):
  \\q, quit, exit           quit paimon-sql
  \\?                       this help
  \\i <file>                run the statements of a file
  \\d                       list tables
  \\d <table>               describe a table
  \\h [function]            list the functions, or describe one
  \\pset [format <f>]       show or set the output format: table, csv, tsv, json, nd-json
  \\quiet [true|false]      results only: no row counts or timings
  \\object_store_profiling  object-store request tracing
Paimon statements: SET paimon.<option> = '<value>', RESET [paimon.<option>], USE <database>,
CALL sys.<procedure>(...), SHOW DATABASES; change reads with paimon_incremental_query(...)
and paimon_stream(...).
";

fn readline_error(e: ReadlineError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_quit() {
        for q in ["\\q", "quit", "QUIT;", "exit", " exit ; "] {
            assert!(is_quit(q.trim()), "{q}");
        }
        assert!(!is_quit("SELECT 1"));
    }
}
