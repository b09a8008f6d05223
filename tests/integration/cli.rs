//! Smoke tests of the `paimon-sql` binary: `-c` output on the pypaimon fixture warehouse, and a
//! failing statement's exit code and error. SQL semantics are covered by the `.slt` files.

use std::path::PathBuf;
use std::process::{Command, Output};

fn paimon_sql(args: &[&str]) -> Output {
    let warehouse = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pypaimon-2.1.0/warehouse");
    Command::new(env!("CARGO_BIN_EXE_paimon-sql"))
        .arg("--warehouse")
        .arg(warehouse)
        .args(args)
        .output()
        .expect("paimon-sql runs")
}

#[test]
fn command_prints_results_and_session_options_apply() {
    let output = paimon_sql(&[
        "--format",
        "csv",
        "--quiet",
        "-c",
        "SELECT count(*) AS n FROM pk.dedup_basic",
        "-c",
        "SET paimon.scan.snapshot-id = '1'; SELECT count(*) AS n FROM pk.dedup_basic",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    // Latest has 18 rows; snapshot 1 (set by the second -c) has 20.
    assert_eq!(String::from_utf8_lossy(&output.stdout), "n\n18\nn\n20\n");
}

#[test]
fn failing_statement_exits_non_zero_with_error_once() {
    let output = paimon_sql(&[
        "-c",
        "SELECT 1 AS before; SELECT * FROM pk.no_such_table; SELECT 2",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(
        stderr.matches("no_such_table' not found").count(),
        1,
        "stderr: {stderr}"
    );
    assert!(stderr.contains("Statement 2 of 3"), "stderr: {stderr}");
    // The first statement ran, the one after the failure did not.
    assert!(
        stdout.contains("before") && !stdout.contains("Int64(2)"),
        "stdout: {stdout}"
    );
}

/// Machine-readable formats print every row: `--maxrows` (default 40) limits tables only.
#[test]
fn csv_and_json_output_is_complete() {
    let select = "SELECT value FROM generate_series(1, 100)";
    let output = paimon_sql(&["--format", "csv", "-q", "-c", select]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.lines().count(), 101, "header and 100 rows: {stdout}");
    assert_eq!(stdout.lines().last(), Some("100"));
    let output = paimon_sql(&["--format", "nd-json", "-q", "-c", select]);
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 100);
}

/// Flink's `USE db` makes unqualified names resolve in `db`.
#[test]
fn use_database_sets_the_default_database() {
    let output = paimon_sql(&[
        "--format",
        "csv",
        "-q",
        "-c",
        "USE pk; SELECT count(*) AS n FROM dedup_basic",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "n\n18\n");
    let output = paimon_sql(&["-c", "USE no_such_db"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Database no_such_db does not exist"),
        "stderr: {stderr}"
    );
}

/// datafusion-cli's resource flags: a bounded memory pool refuses a query that needs more,
/// `--batch-size` sets the session's batch size, `-r` runs a file first.
#[test]
fn memory_limit_batch_size_and_rc_files() {
    // A sort of a changelog read: its merge phase needs a reservation a 1 KiB pool refuses
    // (the normalize itself spills to disk instead).
    let changes = "SELECT * FROM pk.\"dedup_basic$changelog\" ORDER BY 1, 2";
    let output = paimon_sql(&["-m", "1k", "-q", "-c", changes]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("pool_size"),
        "stderr: {stderr}"
    );
    let output = paimon_sql(&[
        "--memory-limit",
        "1g",
        "--mem-pool-type",
        "fair",
        "-q",
        "-c",
        changes,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let setting =
        "SELECT value FROM information_schema.df_settings WHERE name = 'datafusion.execution.batch_size'";
    let output = paimon_sql(&["--batch-size", "123", "--format", "csv", "-q", "-c", setting]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "value\n123\n");

    let dir = tempfile::tempdir().expect("temp dir");
    let rc = dir.path().join("init.sql");
    std::fs::write(&rc, "SET paimon.scan.snapshot-id = '1';").expect("write rc");
    let output = paimon_sql(&[
        "-r",
        rc.to_str().expect("utf-8"),
        "--format",
        "csv",
        "-q",
        "-c",
        "SELECT count(*) AS n FROM pk.dedup_basic",
    ]);
    // Snapshot 1 (set by the rc file) has 20 rows, the latest 18.
    assert_eq!(String::from_utf8_lossy(&output.stdout), "n\n20\n");
}

/// A `SET paimon.*` of an unknown key (a typo) fails, naming the key (it would be ignored);
/// known read options do not.
#[test]
fn unknown_paimon_options_fail() {
    let output = paimon_sql(&["-q", "-c", "SET paimon.scan.snapshot-idd = '1'"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "stderr: {stderr}");
    assert!(
        stderr.contains("'scan.snapshot-idd' is not a Paimon option"),
        "stderr: {stderr}"
    );
    let output = paimon_sql(&["-q", "-c", "SET paimon.scan.snapshot-id = '1'"]);
    assert!(String::from_utf8_lossy(&output.stderr).is_empty());
}

/// JSON cannot key an object by a number: with `--format json` / `nd-json`, a MAP column with
/// non-string keys prints as its list of entries; string-keyed maps stay objects, and the
/// table format is unchanged.
#[test]
fn json_output_of_maps_with_non_string_keys() {
    let query = "SELECT 1 AS k, MAP {1: 'a', 2: 'b'} AS m, MAP {'x': 1} AS s";
    let output = paimon_sql(&["--format", "json", "-q", "-c", query]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        r#"[{"k":1,"m":[{"key":1,"value":"a"},{"key":2,"value":"b"}],"s":{"x":1}}]"#
    );
    let output = paimon_sql(&["--format", "nd-json", "-q", "-c", query]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        r#"{"k":1,"m":[{"key":1,"value":"a"},{"key":2,"value":"b"}],"s":{"x":1}}"#
    );
    let output = paimon_sql(&["-q", "-c", query]);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("{1: a, 2: b}"), "table format keeps maps: {table}");
    // Inside a struct and a list too.
    let nested = "SELECT named_struct('m', MAP {7: 'x'}) AS s, make_array(MAP {1: 2}) AS l";
    let output = paimon_sql(&["--format", "json", "-q", "-c", nested]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        r#"[{"s":{"m":[{"key":7,"value":"x"}]},"l":[[{"key":1,"value":2}]]}]"#
    );
}
