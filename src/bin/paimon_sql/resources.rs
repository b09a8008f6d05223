//! datafusion-cli's resource flags: `--memory-limit`, `--mem-pool-type`, `--disk-limit`.
//! A bounded pool is how a big compaction or INSERT is kept within RAM: our operators account
//! their buffers to it (and fail or spill when it refuses).

use std::num::NonZeroUsize;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::execution::disk_manager::DiskManagerBuilder;
use datafusion::execution::memory_pool::{FairSpillPool, GreedyMemoryPool, MemoryPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;

/// The memory pool kinds datafusion-cli offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PoolType {
    /// First come, first served.
    Greedy,
    /// Spilling operators share the pool fairly.
    Fair,
}

/// Parses a byte size as datafusion-cli does: a number with an optional unit
/// (`k`, `m`, `g`, `t`, optionally followed by `b`; case-insensitive): `512m`, `2G`, `100`.
pub fn parse_size(text: &str) -> std::result::Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(lower.len());
    let (number, unit) = lower.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size such as 512m or 2g"))?;
    let factor: f64 = match unit.trim().trim_end_matches('b') {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("'{text}' has an unknown unit (use k, m, g or t)")),
    };
    Ok((number * factor) as usize)
}

/// Applies the flags to a runtime builder.
pub fn configure(
    mut builder: RuntimeEnvBuilder,
    memory_limit: Option<usize>,
    pool_type: PoolType,
    disk_limit: Option<usize>,
) -> Result<RuntimeEnvBuilder> {
    if let Some(limit) = memory_limit {
        let pool: Arc<dyn MemoryPool> = match pool_type {
            PoolType::Greedy => Arc::new(TrackConsumersPool::new(
                GreedyMemoryPool::new(limit),
                NonZeroUsize::new(5).expect("non-zero"),
            )),
            PoolType::Fair => Arc::new(TrackConsumersPool::new(
                FairSpillPool::new(limit),
                NonZeroUsize::new(5).expect("non-zero"),
            )),
        };
        builder = builder.with_memory_pool(pool);
    }
    if let Some(limit) = disk_limit {
        builder = builder.with_disk_manager_builder(
            DiskManagerBuilder::default().with_max_temp_directory_size(limit as u64),
        );
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_like_datafusion_cli() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1gb"), Ok(1 << 30));
        assert!(parse_size("ten").is_err());
        assert!(parse_size("5x").is_err());
    }
}
