//! What follows a write's commit besides compaction: Paimon expires partitions, snapshots and
//! changelogs and creates automatic tags after every commit of a writer that is not
//! `write-only`.

use datafusion::common::{exec_datafusion_err, Result};

use super::sink::PaimonSink;
use crate::compact::CompactSettings;
use crate::maintenance::auto_tags::{self, AutoTags};
use crate::maintenance::changelog_expire::expire_changelogs;
use crate::maintenance::expire::{expire_snapshots, parse_duration_ms, ExpireOptions};
use crate::maintenance::partitions::{expire_partitions, PartitionTime};

impl PaimonSink {
    pub(super) async fn expire_after_commit(&self) -> Result<()> {
        if CompactSettings::new(&self.schema)?.write_only {
            return Ok(());
        }
        if let Some(text) = self.schema.options.get("partition.expiration-time") {
            let expiration = parse_duration_ms(text).ok_or_else(|| {
                exec_datafusion_err!(
                    "Option 'partition.expiration-time' of table {} must be a duration such as '7 d', got '{text}'",
                    self.table
                )
            })?;
            let time = PartitionTime::from_options(&self.schema.options);
            let now = chrono::Local::now().naive_local();
            expire_partitions(&self.meta, &self.schema, &self.table, expiration, &time, now).await?;
        }
        let options = ExpireOptions::parse(&self.table, &self.schema.options)?;
        let now = chrono::Utc::now().timestamp_millis();
        expire_snapshots(&self.meta, &self.schema, options, now).await?;
        expire_changelogs(&self.meta, &self.schema, options, now).await?;
        if let Some(auto) = AutoTags::parse(&self.table, &self.schema.options)? {
            auto_tags::run(&self.meta, &self.table, &auto, &self.schema.options).await?;
        }
        Ok(())
    }
}
