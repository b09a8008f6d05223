//! `paimon-executor`: an Apache Ballista executor that runs Paimon plan nodes (merge-on-read
//! and incremental scans, the changelog normalize, parallel writers and the committer). It
//! takes Ballista's own flags (`--scheduler-host`, `--scheduler-port`, `--bind-port`,
//! `--concurrent-tasks`, `--work-dir`, ...) and opens cloud warehouses with credentials from
//! the environment (`AWS_*`, ... as `paimon-sql`).

use std::net::SocketAddr;
use std::sync::Arc;

use ballista::prelude::SessionConfigExt;
use ballista_core::error::BallistaError;
use ballista_executor::config::Config;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_executor::health::spawn_health_server;
use clap::Parser;
use datafusion_paimon::distributed::{cluster_config, cluster_runtime, default_registry, executor_functions};
use datafusion_paimon::CloudStores;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ballista_core::error::Result<()> {
    let opt = Config::parse();
    let health_addr: SocketAddr = format!("{}:{}", opt.bind_host, opt.bind_health_port)
        .parse()
        .map_err(|e| BallistaError::General(format!("invalid --bind-health-port address: {e}")))?;
    let mut config: ExecutorProcessConfig = opt.try_into()?;
    let filter =
        std::env::var(EnvFilter::DEFAULT_ENV).unwrap_or_else(|_| config.special_mod_log_level.clone());
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_env_filter(EnvFilter::new(filter))
        .init();
    let codecs = cluster_config();
    config.override_logical_codec = Some(codecs.ballista_logical_extension_codec());
    config.override_physical_codec = Some(codecs.ballista_physical_extension_codec());
    config.override_config_producer = Some(Arc::new(cluster_config));
    config.override_function_registry = Some(executor_functions());
    // One registry for the process: a cloud store is built once, then shared by every task.
    let stores: Arc<CloudStores> = Arc::new(CloudStores::new(default_registry()));
    let temp_dir = config.work_dir.clone();
    config.override_runtime_producer = Some(Arc::new(move |_| {
        cluster_runtime(Arc::clone(&stores) as _, temp_dir.as_deref())
    }));
    let (stop_health, health_stopped) = tokio::sync::oneshot::channel();
    let health = spawn_health_server(health_addr, config.health.clone(), health_stopped);
    let result = start_executor_process(Arc::new(config)).await;
    let _ = stop_health.send(());
    let _ = health.await;
    result
}
