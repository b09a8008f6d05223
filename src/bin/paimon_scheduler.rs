//! `paimon-scheduler`: Apache Ballista's scheduler, able to plan Paimon statements. It takes
//! Ballista's own flags (`--bind-host`, `--bind-port`, `--executor-timeout-seconds`, ...), so
//! Ballista's deployment docs apply; it decodes Paimon tables in the plans clients send, plans
//! writes as parallel writers and one committer, and opens cloud warehouses with credentials
//! from the environment (`AWS_*`, ... as `paimon-sql`).

use std::sync::Arc;

use ballista::prelude::SessionConfigExt;
use ballista_core::error::BallistaError;
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{Config, SchedulerConfig};
use ballista_scheduler::scheduler_process::start_server;
use clap::Parser;
use datafusion_paimon::distributed::{cluster_config, cluster_runtime, default_registry, scheduler_state};
use datafusion_paimon::CloudStores;
use tracing_subscriber::EnvFilter;

fn main() -> ballista_core::error::Result<()> {
    // as Ballista's scheduler binary: deep plans decode recursively
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(32 * 1024 * 1024)
        .build()?;
    runtime.block_on(run())
}

async fn run() -> ballista_core::error::Result<()> {
    let opt = Config::parse();
    let filter = std::env::var(EnvFilter::DEFAULT_ENV).unwrap_or_else(|_| opt.log_level_setting.clone());
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_env_filter(EnvFilter::new(filter))
        .init();
    let addr = format!("{}:{}", opt.bind_host, opt.bind_port)
        .parse()
        .map_err(|e: std::net::AddrParseError| BallistaError::Configuration(e.to_string()))?;
    let mut config: SchedulerConfig = opt.try_into()?;
    let codecs = cluster_config();
    config.override_logical_codec = Some(codecs.ballista_logical_extension_codec());
    config.override_physical_codec = Some(codecs.ballista_physical_extension_codec());
    let config = config
        .with_override_config_producer(Arc::new(cluster_config))
        .with_override_session_builder(Arc::new(|session_config| {
            let stores = Arc::new(CloudStores::new(default_registry()));
            scheduler_state(session_config, cluster_runtime(stores, None)?)
        }));
    let cluster = BallistaCluster::new_from_config(&config).await?;
    start_server(cluster, addr, Arc::new(config)).await
}
