//! Procedures that name a snapshot by time or manage consumers and tag names, as Paimon's:
//!
//! * `sys.create_tag_from_timestamp(table, tag, timestamp [, time_retained])`: tags the
//!   earliest snapshot committed at or after `timestamp` (epoch millis);
//! * `sys.rollback_to_timestamp(table, timestamp)`: rolls back to the latest snapshot committed
//!   at or before `timestamp`;
//! * `sys.rename_tag(table, tag_name, target_tag_name)`;
//! * `sys.reset_consumer(table, consumer_id [, next_snapshot_id])`: moves a consumer, or
//!   deletes it without a snapshot id;
//! * `sys.clear_consumers(table [, including_consumers [, excluding_consumers]])`: deletes the
//!   consumers whose ids match the first regular expression (all by default) and not the second.

use datafusion::common::{plan_datafusion_err, plan_err, Result};

use super::{duration_arg, procedure_table, Call};
use crate::maintenance::tags;
use crate::meta::TableMeta;
use crate::sql::PaimonSession;

/// Runs one of this module's procedures; `None` if `procedure` is not one of them.
pub(super) async fn execute(session: &PaimonSession, call: &Call) -> Result<Option<()>> {
    let procedure = call.procedure.as_str();
    if !matches!(
        procedure,
        "create_tag_from_timestamp"
            | "rollback_to_timestamp"
            | "rename_tag"
            | "reset_consumer"
            | "clear_consumers"
    ) {
        return Ok(None);
    }
    let (name, schema) = procedure_table(session, call, procedure).await?;
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let table = name.to_string();
    let required = |arg: &str, position: usize| -> Result<&str> {
        call.arg(arg, position)
            .map(str::trim)
            .ok_or_else(|| plan_datafusion_err!("sys.{procedure} needs the argument '{arg}'"))
    };
    let millis = |arg: &str, position: usize| -> Result<i64> {
        let v = required(arg, position)?;
        crate::table::parse_time(v).ok_or_else(|| {
            plan_datafusion_err!(
                "sys.{procedure}: '{arg}' must be epoch milliseconds or a timestamp, got '{v}'"
            )
        })
    };
    match procedure {
        "create_tag_from_timestamp" => {
            let tag = required("tag", 1)?;
            let at = millis("timestamp", 2)?;
            let retained = duration_arg(call, procedure, "time_retained", 3)?;
            let snapshot = earliest_at_or_after(&meta, at).await?.ok_or_else(|| {
                plan_datafusion_err!("Table {table} has no snapshot committed at or after {at}")
            })?;
            tags::create_tag(&meta, &table, tag, Some(snapshot), retained).await?;
        }
        "rollback_to_timestamp" => {
            let at = millis("timestamp", 1)?;
            let Some(snapshot) = meta.snapshot_at_or_before(at).await? else {
                return plan_err!(
                    "Table {table} has no snapshot committed at or before {at} to roll back to"
                );
            };
            tags::rollback_to(
                &meta,
                &schema,
                &table,
                tags::RollbackTarget::Snapshot(snapshot.id),
            )
            .await?;
        }
        "rename_tag" => {
            let (from, to) = (required("tag_name", 1)?, required("target_tag_name", 2)?);
            tags::rename_tag(&meta, &table, from, to).await?;
        }
        "reset_consumer" => {
            let id = required("consumer_id", 1)?;
            match call.arg("next_snapshot_id", 2) {
                Some(v) => {
                    let next: i64 = v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        plan_datafusion_err!(
                            "sys.{procedure}: 'next_snapshot_id' must be a positive snapshot id, got '{v}'"
                        )
                    })?;
                    check_consumer_id(id)?;
                    meta.write_consumer(id, next).await?;
                }
                None => meta.delete_consumer(id).await?,
            }
        }
        _ => {
            let pattern = |arg: &str, position: usize| -> Result<Option<regex_lite::Regex>> {
                call.arg(arg, position)
                    .map(|v| {
                        regex_lite::Regex::new(&format!("^(?:{})$", v.trim())).map_err(|e| {
                            plan_datafusion_err!("sys.{procedure}: '{arg}' is not a regular expression: {e}")
                        })
                    })
                    .transpose()
            };
            let including = pattern("including_consumers", 1)?;
            let excluding = pattern("excluding_consumers", 2)?;
            for consumer in meta.consumers().await? {
                let id = consumer.id.as_str();
                if including.as_ref().is_none_or(|r| r.is_match(id))
                    && !excluding.as_ref().is_some_and(|r| r.is_match(id))
                {
                    meta.delete_consumer(id).await?;
                }
            }
        }
    }
    Ok(Some(()))
}

fn check_consumer_id(id: &str) -> Result<()> {
    if !crate::meta::valid_consumer_id(id) {
        return plan_err!("Invalid consumer id '{id}'");
    }
    Ok(())
}

/// The earliest snapshot committed at or after `millis`.
async fn earliest_at_or_after(meta: &TableMeta, millis: i64) -> Result<Option<i64>> {
    Ok(meta
        .snapshots()
        .await?
        .into_iter()
        .find(|s| s.time_millis >= millis)
        .map(|s| s.id))
}
