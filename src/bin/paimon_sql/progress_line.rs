//! The REPL's status line for long statements: after a second, stderr shows the elapsed time
//! and what the statement has read and written so far (the session's `StatementProgress`,
//! which our scans, writes and compactions count into), refreshed a few times a second and
//! erased before results print or when the statement ends. Only on a terminal: piped stderr
//! gets nothing.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion_paimon::progress::{ProgressSnapshot, StatementProgress};
use tokio::task::JoinHandle;

/// Show nothing for statements faster than this.
const QUIET_FOR: Duration = Duration::from_secs(1);
const REFRESH: Duration = Duration::from_millis(250);
const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

/// Whether the status line is on screen, and whether the statement's results have started.
/// The line is drawn from its own task (the statement may keep the REPL's task busy); a lock
/// orders drawing against [`StatusLine::output_starts`], which the planner's output watch
/// (`planner.rs`) calls before the first result batch reaches the printer, so results never
/// share a line with the status.
#[derive(Debug, Default)]
pub struct StatusLine {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    shown: bool,
    output_started: bool,
}

impl StatusLine {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Before a statement: nothing shown, no output yet.
    pub fn start(&self) {
        *self.state() = State::default();
    }

    /// The statement produces output (or ends): erase the line and draw no more.
    pub fn output_starts(&self) {
        let mut state = self.state();
        state.output_started = true;
        if state.shown {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            state.shown = false;
        }
    }

    /// Draws the line every [`REFRESH`] from a task of its own, from one second after
    /// `started` until output starts. Abort the returned task when the statement ends, after
    /// calling [`StatusLine::output_starts`].
    pub fn spawn(
        self: &Arc<Self>,
        progress: Arc<StatementProgress>,
        started: Instant,
    ) -> Option<JoinHandle<()>> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let status = Arc::clone(self);
        Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(REFRESH);
            let mut frame = 0;
            loop {
                ticks.tick().await;
                let elapsed = started.elapsed();
                if elapsed < QUIET_FOR {
                    continue;
                }
                frame += 1;
                let line = status_text(SPINNER[frame % SPINNER.len()], elapsed, progress.snapshot());
                let mut state = status.state();
                if state.output_started {
                    return;
                }
                eprint!("\r{line}\x1b[K");
                let _ = std::io::stderr().flush();
                state.shown = true;
            }
        }))
    }
}

fn status_text(spinner: char, elapsed: Duration, p: ProgressSnapshot) -> String {
    let mut line = format!("{spinner} {:.1} s", elapsed.as_secs_f64());
    if p.rows_read > 0 || p.bytes_read > 0 {
        line.push_str(&format!(
            " | read {} rows, {}",
            count(p.rows_read),
            bytes(p.bytes_read)
        ));
    }
    if p.rows_written > 0 || p.files_written > 0 {
        line.push_str(&format!(
            " | wrote {} rows, {} files",
            count(p.rows_written),
            p.files_written
        ));
    }
    line.push_str("  (Ctrl-C cancels)");
    line
}

fn count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn bytes(n: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if (n as f64) < MIB {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else if (n as f64) < 1024.0 * MIB {
        format!("{:.1} MiB", n as f64 / MIB)
    } else {
        format!("{:.2} GiB", n as f64 / (1024.0 * MIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_what_moved() {
        let p = ProgressSnapshot {
            rows_read: 1_234_567,
            bytes_read: 3 * 1024 * 1024,
            rows_written: 0,
            files_written: 0,
        };
        assert_eq!(
            status_text('|', Duration::from_millis(2500), p),
            "| 2.5 s | read 1.2M rows, 3.0 MiB  (Ctrl-C cancels)"
        );
        let p = ProgressSnapshot {
            rows_written: 20_000,
            files_written: 4,
            ..Default::default()
        };
        assert_eq!(
            status_text('/', Duration::from_secs(3), p),
            "/ 3.0 s | wrote 20.0k rows, 4 files  (Ctrl-C cancels)"
        );
    }
}
