//! What a Paimon Ballista cluster's processes share: the session config with the Paimon codecs,
//! the scheduler's planning state (Ballista's, plus [`ParallelWrites`]) and the object stores
//! executors open warehouses with. `paimon-scheduler` and `paimon-executor` are built from
//! these; a Rust program embedding a scheduler or executor uses them the same way.

use std::sync::Arc;

use ballista::prelude::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use datafusion::common::Result;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionConfig;

use super::{with_paimon_codecs, ParallelWrites, SpreadNormalize};

/// Ballista's session config with the Paimon codecs installed.
pub fn cluster_config() -> SessionConfig {
    with_paimon_codecs(SessionConfig::new_with_ballista())
}

/// The state a scheduler plans a session's statements with: Ballista's default (its optimizer
/// rules and functions) on `runtime`, with Paimon writes planned as parallel writers and one
/// committer.
///
/// Ballista 55's adaptive planner (AQE) plans with a fixed list of physical optimizer rules of
/// its own, which would leave a Paimon write one task; the static planner is used instead.
pub fn scheduler_state(config: SessionConfig, runtime: Arc<RuntimeEnv>) -> Result<SessionState> {
    let state = ballista_core::utils::default_session_builder(static_planning(config))?;
    let mut builder = SessionStateBuilder::new_from_existing(state).with_runtime_env(runtime);
    builder
        .scalar_functions()
        .get_or_insert_with(Vec::new)
        .extend(cluster_functions());
    Ok(with_cluster_planning(builder).build())
}

/// The functions Paimon statements plan with that DataFusion lacks (MERGE's cardinality
/// check): a scheduler plans with them, an executor runs them.
pub fn cluster_functions() -> Vec<Arc<ScalarUDF>> {
    vec![crate::write::merge_cardinality_udf()]
}

/// Ballista's functions and [`cluster_functions`], for an executor
/// (`ExecutorProcessConfig::override_function_registry`).
pub fn executor_functions() -> Arc<BallistaFunctionRegistry> {
    let mut registry = BallistaFunctionRegistry::default();
    for f in cluster_functions() {
        registry.scalar_functions.insert(f.name().to_string(), f);
    }
    Arc::new(registry)
}

/// `config` planned by Ballista's static planner, which applies the session's physical optimizer
/// rules ([`ParallelWrites`] among them); its adaptive planner does not.
pub fn static_planning(config: SessionConfig) -> SessionConfig {
    config.with_ballista_adaptive_query_planner(false)
}

/// `builder` with the rules that plan Paimon statements for a cluster after its physical
/// optimizer rules (call it after the default features are in): [`ParallelWrites`] and
/// [`SpreadNormalize`].
pub fn with_cluster_planning(builder: SessionStateBuilder) -> SessionStateBuilder {
    builder
        .with_physical_optimizer_rule(Arc::new(ParallelWrites))
        .with_physical_optimizer_rule(Arc::new(SpreadNormalize))
}

/// A runtime whose object stores are `registry`'s (say, [`crate::CloudStores`] building cloud
/// stores from the environment), spilling to `temp_dir` if given.
pub fn cluster_runtime(
    registry: Arc<dyn ObjectStoreRegistry>,
    temp_dir: Option<&str>,
) -> Result<Arc<RuntimeEnv>> {
    let mut builder = RuntimeEnvBuilder::new().with_object_store_registry(registry);
    if let Some(dir) = temp_dir {
        builder = builder.with_temp_file_path(dir);
    }
    Ok(Arc::new(builder.build()?))
}

/// An empty registry to put cloud stores in front of.
pub fn default_registry() -> Arc<dyn ObjectStoreRegistry> {
    Arc::new(DefaultObjectStoreRegistry::new())
}
