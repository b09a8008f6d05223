//! `paimon-sql`: query Apache Paimon tables with SQL from the command line.
//!
//! ```text
//! paimon-sql --warehouse ./warehouse -c "SELECT * FROM db.t"   # run SQL, then exit
//! paimon-sql --warehouse ./warehouse -f queries.sql            # run a file, then exit
//! paimon-sql --warehouse s3://bucket/wh                        # interactive REPL
//! ```
//!
//! Built on datafusion-cli as a library: its executor and printer show results, while this
//! binary splits the input into statements first so that `SET paimon.<option> = '<value>'`
//! and `RESET paimon.<option>` (hyphenated Paimon option names DataFusion's parser rejects)
//! go to the Paimon session. Uses only the crate's public API.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod json_entries;
mod planner;
mod progress_line;
mod repl;
mod resources;
mod runner;
mod statements;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

#[cfg(feature = "ballista")]
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use clap::Parser;
use datafusion::common::{plan_datafusion_err, DataFusionError, Result};
use datafusion::config::ConfigOptions;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_cli::object_storage::instrumented::InstrumentedObjectStoreRegistry;
use datafusion_cli::print_format::PrintFormat;
use datafusion_cli::print_options::{MaxRows, PrintOptions};
use datafusion_paimon::progress::StatementProgress;
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::{remote_store, CloudStores, PaimonSession};
use url::Url;

use crate::planner::CliPlanner;
use crate::runner::{error_chain, Runner};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "paimon-sql",
    version,
    about = "Query Apache Paimon tables with SQL (Apache DataFusion)",
    after_help = "Without -c or -f, starts an interactive shell. Files run before commands; \
                  the first failing statement stops the run with exit code 1.\n\
                  Time travel: SET paimon.scan.snapshot-id = '1'; ... RESET paimon.scan.snapshot-id;"
)]
struct Args {
    /// Warehouse: a local directory (created with an empty `default` database if missing)
    /// or a URL (file://, s3://, gs://, oss://, cos://; credentials from the environment).
    #[arg(short, long, default_value = "./warehouse", value_name = "PATH|URL")]
    warehouse: String,

    /// Run these `;`-separated statements, then exit. Repeatable.
    #[arg(short, long = "command", value_name = "SQL")]
    command: Vec<String>,

    /// Run the statements in this file, then exit. Repeatable.
    #[arg(short, long = "file", value_name = "PATH")]
    file: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = PrintFormat::Automatic)]
    format: PrintFormat,

    /// Maximum rows shown in the table format: a number, or `inf`.
    #[arg(long, default_value = "40", value_name = "N")]
    maxrows: MaxRows,

    /// Print only results: no row counts, timings or confirmations.
    #[arg(short, long)]
    quiet: bool,

    /// Memory pool size for query execution (e.g. 512m, 2g); unbounded by default.
    /// Compactions, writes and changelog reads account their buffers to it.
    #[arg(short, long, value_name = "SIZE", value_parser = resources::parse_size)]
    memory_limit: Option<usize>,

    /// Memory pool kind, with --memory-limit.
    #[arg(long, value_enum, default_value_t = resources::PoolType::Greedy)]
    mem_pool_type: resources::PoolType,

    /// Maximum size of the temporary files spilling operators write (e.g. 10g).
    #[arg(long, value_name = "SIZE", value_parser = resources::parse_size)]
    disk_limit: Option<usize>,

    /// Rows per batch (DataFusion's `datafusion.execution.batch_size`).
    #[arg(long, value_name = "N")]
    batch_size: Option<usize>,

    /// Run the statements of these files at startup, before -f, -c or the shell. Repeatable.
    #[arg(short = 'r', long = "rc", value_name = "PATH")]
    rc: Vec<String>,

    /// Colour the output.
    #[arg(long)]
    color: bool,

    /// Run every statement on this Apache Ballista cluster (`df://host:port`, a scheduler
    /// started with `paimon-scheduler`); its executors (`paimon-executor`) must reach the
    /// warehouse too.
    #[arg(long, value_name = "URL")]
    ballista: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let result = run(args).await;
    // a long session may have copied remote files for lookups: leave nothing behind
    datafusion_paimon::remove_lookup_copies();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let registry = Arc::new(InstrumentedObjectStoreRegistry::new());
    let planner = Arc::new(CliPlanner::default());
    let json_maps = planner.switch();
    let status_line = planner.status_line();
    let session = open_session(&args, Arc::clone(&registry), planner).await?;
    // `--maxrows` limits the table formats only: csv, tsv, json and nd-json print every row.
    let maxrows = match args.format {
        PrintFormat::Table | PrintFormat::Automatic => args.maxrows,
        _ => MaxRows::Unlimited,
    };
    let print_options = PrintOptions {
        format: args.format,
        quiet: args.quiet,
        maxrows,
        color: args.color,
        instrumented_registry: registry,
    };
    let mut runner = Runner::new(session, print_options, json_maps, status_line);
    for path in &args.rc {
        runner.run_file(path).await?;
    }
    if args.command.is_empty() && args.file.is_empty() {
        let place = match &args.ballista {
            Some(cluster) => format!("{} (Ballista cluster {cluster})", args.warehouse),
            None => args.warehouse.clone(),
        };
        return repl::run(&mut runner, &place).await;
    }
    for path in &args.file {
        runner.run_file(path).await?;
    }
    for (n, sql) in args.command.iter().enumerate() {
        runner.run_script(sql, &format!("-c #{}", n + 1)).await?;
    }
    Ok(())
}

/// A session whose default catalog is the warehouse. Builds the context itself (rather than
/// `PaimonSession::open`) to give it datafusion-cli's object-store registry, which remote
/// warehouses are registered in and `\object_store_profiling` reports on.
async fn open_session(
    args: &Args,
    registry: Arc<InstrumentedObjectStoreRegistry>,
    planner: Arc<CliPlanner>,
) -> Result<PaimonSession> {
    let warehouse = args.warehouse.as_str();
    prepare_local_warehouse(warehouse)?;
    let runtime = resources::configure(
        RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(CloudStores::new(registry))),
        args.memory_limit,
        args.mem_pool_type,
        args.disk_limit,
    )?
    .build_arc()?;
    // As datafusion-cli: `SELECT * FROM 'data.csv'` reads the file (names that are no table).
    let mut config = session_config()?;
    if let Some(n) = args.batch_size {
        config = config.with_batch_size(n);
    }
    let builder = SessionStateBuilder::new()
        .with_runtime_env(runtime)
        .with_default_features();
    let ctx = match &args.ballista {
        // Ballista's query planner sends each statement's logical plan to the scheduler (the
        // CLI's own planner, which watches the output of local plans, does not apply).
        #[cfg(feature = "ballista")]
        Some(cluster) => {
            check_reachable(cluster).await?;
            let config = datafusion_paimon::distributed::with_paimon_codecs(config.upgrade_for_ballista());
            SessionContext::remote_with_state(cluster, builder.with_config(config).build())
                .await
                .map_err(|e| e.context(format!("Cannot connect to the Ballista cluster '{cluster}'")))?
        }
        #[cfg(not(feature = "ballista"))]
        Some(_) => {
            return Err(plan_datafusion_err!(
                "--ballista needs paimon-sql built with feature 'ballista'"
            ))
        }
        None => SessionContext::new_with_state(planner.install(builder.with_config(config)).build()),
    }
    .enable_url_table();
    register_remote_store(&ctx, warehouse).await?;
    PaimonSession::register(ctx, warehouse)
        .await
        .map_err(|e| e.context(format!("Cannot open warehouse '{warehouse}'")))
}

/// DataFusion options from `DATAFUSION_*` environment variables, plus what
/// `PaimonSession::with_config` sets: default catalog `paimon`, database `default`.
fn session_config() -> Result<SessionConfig> {
    let mut options = ConfigOptions::from_env()?;
    if std::env::var_os("DATAFUSION_FORMAT_NULL").is_none() {
        // As datafusion-cli does: show NULL rather than an empty cell.
        options.format.null = "NULL".to_string();
    }
    Ok(SessionConfig::from(options)
        // What the running statement has read and written, for the REPL's status line.
        .with_extension(Arc::new(StatementProgress::default()))
        .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(true))
}

/// A local warehouse that does not exist yet (or is an empty directory) is created with an
/// empty `default.db`, so unqualified table names resolve. Existing warehouses are left alone.
fn prepare_local_warehouse(warehouse: &str) -> Result<()> {
    if warehouse.contains("://") {
        return Ok(());
    }
    let root = Path::new(warehouse);
    let fresh = match std::fs::read_dir(root) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(DataFusionError::IoError(e).context(format!("Cannot read warehouse '{warehouse}'")))
        }
    };
    if fresh {
        std::fs::create_dir_all(root.join(format!("{DEFAULT_DATABASE}.db"))).map_err(|e| {
            DataFusionError::IoError(e).context(format!("Cannot create warehouse '{warehouse}'"))
        })?;
    }
    Ok(())
}

/// Registers an object store for a cloud warehouse URL, configured from the environment the
/// way datafusion-cli does (`AWS_*`, `GOOGLE_*`, ...). Local paths and `file://` need nothing.
/// Fails naming the cluster when nothing answers at `cluster` (`df://host:port`): Ballista
/// connects only at the first statement, with an error that does not say where it went.
#[cfg(feature = "ballista")]
async fn check_reachable(cluster: &str) -> Result<()> {
    let address = cluster.strip_prefix("df://").unwrap_or(cluster);
    let address = address.trim_end_matches('/');
    let connect = tokio::net::TcpStream::connect(address);
    match tokio::time::timeout(std::time::Duration::from_secs(10), connect).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(plan_datafusion_err!(
            "Cannot reach the Ballista scheduler at '{cluster}' ({address}): {e}"
        )),
        Err(_) => Err(plan_datafusion_err!(
            "Cannot reach the Ballista scheduler at '{cluster}' ({address}): no answer in 10 s"
        )),
    }
}

async fn register_remote_store(ctx: &SessionContext, warehouse: &str) -> Result<()> {
    if !warehouse.contains("://") {
        return Ok(());
    }
    let url = Url::parse(warehouse)
        .map_err(|e| plan_datafusion_err!("Invalid warehouse URL '{warehouse}': {e}"))?;
    let Some(store) = remote_store(&url).await? else {
        return Ok(());
    };
    let base = Url::parse(&url[..url::Position::BeforePath])
        .map_err(|e| plan_datafusion_err!("Invalid warehouse URL '{warehouse}': {e}"))?;
    ctx.register_object_store(&base, store);
    Ok(())
}
