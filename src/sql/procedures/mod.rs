//! `CALL sys.<procedure>(…)`: Paimon's procedures, with positional (`'db.t'`) or named
//! (`` `table` => 'db.t' ``) arguments as Flink and Spark accept them.
//!
//! * `sys.compact(table [, partitions])`: full compaction of every bucket (or of the
//!   partitions `'p=1,q=a;p=2'`), committed as one COMPACT snapshot (semantics.md §5.5).

use std::sync::Arc;

use arrow::array::{BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::dataframe::DataFrame;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::ddl::names::{resolve_table, TableName};
use super::ddl::parser::{DdlParser, ObjectRef};
use super::PaimonSession;
use crate::changelog::changelog_capability as changelog_capability_of;
use crate::compact::{CompactScope, Compaction};
use crate::maintenance::changelog_expire::expire_changelogs_older_than;
use crate::maintenance::expire::{expire_older_than, ExpireOptions};
use crate::maintenance::tags;

mod by_time;

/// A parsed `CALL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    pub(crate) procedure: String,
    /// `(name, value)`; `name` is `None` for positional arguments.
    pub(crate) args: Vec<(Option<String>, String)>,
}

/// Parses `CALL sys.name(arg, …)` (the `CALL` keyword is the next token).
pub(crate) fn parse(p: &mut DdlParser) -> Result<Call> {
    p.expect_keyword(Keyword::CALL)?;
    let name = p.object_ref()?;
    let procedure = match name.parts.as_slice() {
        [sys, proc] if sys.eq_ignore_ascii_case("sys") => proc.to_ascii_lowercase(),
        _ => {
            return plan_err!(
                "Unknown procedure '{}': Paimon procedures are called as sys.<name>",
                name.parts.join(".")
            )
        }
    };
    p.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    if !p.consume(&Token::RParen) {
        loop {
            let named = matches!(p.peek().token, Token::Word(_));
            let name = if named {
                let name = p.ident()?;
                p.expect_token(&Token::RArrow)?;
                Some(name.to_ascii_lowercase())
            } else {
                None
            };
            args.push((name, literal(p)?));
            if p.consume(&Token::RParen) {
                break;
            }
            p.expect_token(&Token::Comma)?;
        }
    }
    p.consume(&Token::SemiColon);
    p.expect_end()?;
    Ok(Call { procedure, args })
}

/// A procedure argument: a string literal, or a number or boolean as Flink and Spark also
/// accept (`sys.create_tag('db.t', 'tag', 1)`, `retain_max => 5`, `delete_all => true`).
fn literal(p: &mut DdlParser) -> Result<String> {
    let negative = p.consume(&Token::Minus);
    if let Token::Number(n, _) = &p.peek().token {
        let n = n.clone();
        p.next_token();
        return Ok(if negative { format!("-{n}") } else { n });
    }
    if let Token::Word(w) = &p.peek().token {
        let word = w.value.to_ascii_lowercase();
        if !negative && w.quote_style.is_none() && (word == "true" || word == "false") {
            p.next_token();
            return Ok(word);
        }
    }
    if negative {
        return p.expected("a number after '-'");
    }
    p.string()
}

impl Call {
    /// The argument named `name`, or else the positional argument at `position`.
    fn arg(&self, name: &str, position: usize) -> Option<&str> {
        self.args
            .iter()
            .find(|(n, _)| n.as_deref() == Some(name))
            .or_else(|| self.args.iter().filter(|(n, _)| n.is_none()).nth(position))
            .map(|(_, v)| v.as_str())
    }
}

/// Runs the procedure; returns Paimon's one-row `result` table.
pub(crate) async fn execute(session: &PaimonSession, call: Call) -> Result<DataFrame> {
    match call.procedure.as_str() {
        "compact" => {
            if let Some(frame) = compact(session, &call).await? {
                return Ok(frame);
            }
        }
        "expire_snapshots" => {
            let expired = expire_snapshots_procedure(session, &call).await?;
            let schema = Arc::new(Schema::new(vec![Field::new("result", DataType::Int64, false)]));
            let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![expired as i64]))])?;
            return crate::sql::result_frame::result_frame(session.context(), &[batch]);
        }
        "expire_changelogs" => {
            let expired = expire_changelogs_procedure(session, &call).await?;
            let schema = Arc::new(Schema::new(vec![Field::new("result", DataType::Int64, false)]));
            let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![expired as i64]))])?;
            return crate::sql::result_frame::result_frame(session.context(), &[batch]);
        }
        "changelog_capability" => return changelog_capability(session, &call).await,
        "remove_orphan_files" => return remove_orphan_files(session, &call).await,
        "expire_partitions" => return expire_partitions(session, &call).await,
        "create_tag" => tag_procedure(session, &call, TagAction::Create).await?,
        "delete_tag" => tag_procedure(session, &call, TagAction::Delete).await?,
        "rollback_to" => {
            tag_procedure(session, &call, TagAction::Rollback).await?;
            session.catalog().forget_listings();
        }
        "create_branch" | "delete_branch" | "fast_forward" => {
            // (a fast-forward replaces the main branch's schema files)
            branch_procedure(session, &call).await?;
            session.catalog().forget_listings();
        }
        other => {
            if by_time::execute(session, &call).await?.is_none() {
                return plan_err!("Unknown procedure 'sys.{other}'");
            }
        }
    }
    let schema = Arc::new(Schema::new(vec![Field::new("result", DataType::Boolean, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(BooleanArray::from(vec![true]))])?;
    crate::sql::result_frame::result_frame(session.context(), &[batch])
}

/// The integer argument named `arg` (or at `position`) of `sys.<procedure>`, if given.
fn int_arg(call: &Call, procedure: &str, arg: &str, position: usize) -> Result<Option<i64>> {
    call.arg(arg, position)
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| plan_datafusion_err!("sys.{procedure}: '{arg}' must be an integer, got '{v}'"))
        })
        .transpose()
}

/// The `true`/`false` argument named `arg` (or at `position`) of `sys.<procedure>`, if given.
fn flag_arg(call: &Call, procedure: &str, arg: &str, position: usize) -> Result<Option<bool>> {
    match call.arg(arg, position).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) if v == "true" => Ok(Some(true)),
        Some(v) if v == "false" => Ok(Some(false)),
        Some(v) => plan_err!("sys.{procedure}: '{arg}' must be true or false, got '{v}'"),
    }
}

/// The point in time named `arg` (or at `position`) of `sys.<procedure>`, as epoch millis, if
/// given: a local timestamp ('2024-01-01 12:00:00') or epoch millis.
fn time_arg(call: &Call, procedure: &str, arg: &str, position: usize) -> Result<Option<i64>> {
    call.arg(arg, position)
        .map(|text| {
            crate::table::parse_time(text).ok_or_else(|| {
                plan_datafusion_err!(
                    "sys.{procedure}: invalid {arg} '{text}': expected 'yyyy-MM-dd HH:mm:ss' or epoch millis"
                )
            })
        })
        .transpose()
}

/// The duration named `arg` (or at `position`) of `sys.<procedure>`, in millis, if given.
fn duration_arg(call: &Call, procedure: &str, arg: &str, position: usize) -> Result<Option<i64>> {
    call.arg(arg, position)
        .map(|v| {
            crate::maintenance::expire::parse_duration_ms(v).ok_or_else(|| {
                plan_datafusion_err!(
                    "sys.{procedure}: invalid {arg} '{v}': expected a duration such as '1 d'"
                )
            })
        })
        .transpose()
}

/// `sys.expire_snapshots(table, retain_max, retain_min, older_than, max_deletes)`: the table's
/// retention options, overridden by the arguments given; returns the number of expired
/// snapshots. `older_than` is a local timestamp ('2024-01-01 12:00:00') or epoch millis.
async fn expire_snapshots_procedure(session: &PaimonSession, call: &Call) -> Result<usize> {
    let (name, schema) = procedure_table(session, call, "expire_snapshots").await?;
    let mut options = ExpireOptions::parse(&name.to_string(), &schema.options)?;
    let int = |arg: &str, position: usize| int_arg(call, "expire_snapshots", arg, position);
    if let Some(max) = int("retain_max", 1)? {
        options.retain_max = max;
    }
    if let Some(min) = int("retain_min", 2)? {
        options.retain_min = min;
    }
    if let Some(limit) = int("max_deletes", 4)? {
        options.limit = limit.max(1);
    }
    if options.retain_min < 1 || options.retain_max < options.retain_min {
        return plan_err!(
            "sys.expire_snapshots: retain_min ({}) must be at least 1 and at most retain_max ({})",
            options.retain_min,
            options.retain_max
        );
    }
    let older_than = time_arg(call, "expire_snapshots", "older_than", 3)?
        .unwrap_or_else(|| chrono::Utc::now().timestamp_millis() - options.time_retained_ms);
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let expired = expire_older_than(&meta, &schema, options, older_than).await?;
    session.catalog().refresh().await?;
    Ok(expired)
}

/// `sys.expire_changelogs(table, retain_max, retain_min, older_than, max_deletes, delete_all)`:
/// long-lived changelog expiration with the table's `changelog.*` retention, overridden by the
/// arguments given; `delete_all => true` expires every long-lived changelog. Returns how many
/// changelogs were expired.
async fn expire_changelogs_procedure(session: &PaimonSession, call: &Call) -> Result<usize> {
    let (name, schema) = procedure_table(session, call, "expire_changelogs").await?;
    let mut options = ExpireOptions::parse(&name.to_string(), &schema.options)?;
    let int = |arg: &str, position: usize| int_arg(call, "expire_changelogs", arg, position);
    if let Some(max) = int("retain_max", 1)? {
        options.changelog_retain_max = Some(max);
    }
    if let Some(min) = int("retain_min", 2)? {
        options.changelog_retain_min = Some(min);
    }
    if let Some(limit) = int("max_deletes", 4)? {
        options.limit = limit.max(1);
    }
    let (min, max, time_retained_ms) = options.changelog();
    if min < 1 || max < min {
        return plan_err!(
            "sys.expire_changelogs: retain_min ({min}) must be at least 1 and at most retain_max ({max})"
        );
    }
    let older_than = time_arg(call, "expire_changelogs", "older_than", 3)?
        .unwrap_or_else(|| chrono::Utc::now().timestamp_millis() - time_retained_ms);
    let all = flag_arg(call, "expire_changelogs", "delete_all", 5)?.unwrap_or(false);
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let expired = expire_changelogs_older_than(&meta, &schema, options, older_than, all).await?;
    session.catalog().refresh().await?;
    Ok(expired)
}

/// `sys.remove_orphan_files(table [, older_than [, dry_run]])`: deletes the files no snapshot
/// or tag references, written before `older_than` (default: a day ago); one row per file
/// (`orphan_file`, relative to the table), also with `dry_run => 'true'`, which deletes nothing.
async fn remove_orphan_files(session: &PaimonSession, call: &Call) -> Result<DataFrame> {
    let (name, schema) = procedure_table(session, call, "remove_orphan_files").await?;
    let older_than = time_arg(call, "remove_orphan_files", "older_than", 1)?
        .unwrap_or_else(|| chrono::Utc::now().timestamp_millis() - 86_400_000);
    let dry_run = flag_arg(call, "remove_orphan_files", "dry_run", 2)?.unwrap_or(false);
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let orphans =
        crate::maintenance::orphans::remove_orphan_files(&meta, &schema, older_than, dry_run).await?;
    crate::sql::result_frame::string_column(session.context(), "orphan_file", &orphans)
}

/// `sys.expire_partitions(table, expiration_time [, timestamp_formatter [, timestamp_pattern
/// [, expire_strategy]]])`:
/// drops the partitions whose time is older than `expiration_time` ('7 d'); one row per dropped
/// partition (`expired_partition`, `k=v/...`). Options of the table fill what is not given.
async fn expire_partitions(session: &PaimonSession, call: &Call) -> Result<DataFrame> {
    use crate::maintenance::partitions::{expire_partitions as expire, PartitionTime};
    let (name, schema) = procedure_table(session, call, "expire_partitions").await?;
    let text = call
        .arg("expiration_time", 1)
        .or_else(|| {
            schema
                .options
                .get("partition.expiration-time")
                .map(String::as_str)
        })
        .ok_or_else(|| plan_datafusion_err!("sys.expire_partitions needs expiration_time, e.g. '7 d'"))?;
    let expiration = crate::maintenance::expire::parse_duration_ms(text).ok_or_else(|| {
        plan_datafusion_err!(
            "sys.expire_partitions: invalid expiration_time '{text}': expected a duration such as '7 d'"
        )
    })?;
    let mut time = PartitionTime::from_options(&schema.options);
    if let Some(f) = call.arg("timestamp_formatter", 2) {
        time.formatter = Some(f.to_string());
    }
    if let Some(p) = call.arg("timestamp_pattern", 3) {
        time.pattern = Some(p.to_string());
    }
    if let Some(strategy) = call.arg("expire_strategy", 4) {
        time.update_time = crate::maintenance::partitions::is_update_time(strategy);
    }
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let now = chrono::Local::now().naive_local();
    let expired = expire(&meta, &schema, &name.to_string(), expiration, &time, now).await?;
    session.catalog().refresh().await?;
    crate::sql::result_frame::string_column(session.context(), "expired_partition", &expired)
}

/// `sys.create_branch(table, branch [, tag])`, `sys.delete_branch(table, branch)` (several
/// comma-separated) and `sys.fast_forward(table, branch)`.
async fn branch_procedure(session: &PaimonSession, call: &Call) -> Result<()> {
    use crate::maintenance::branches;
    let procedure = call.procedure.as_str();
    let (name, _) = procedure_table(session, call, procedure).await?;
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let table = name.to_string();
    let branch = call.arg("branch", 1).ok_or_else(|| {
        plan_datafusion_err!("sys.{procedure} needs a branch name: CALL sys.{procedure}('db.t', 'b')")
    })?;
    match procedure {
        "create_branch" => {
            let tag = call.arg("tag", 2).map(str::trim).filter(|t| !t.is_empty());
            branches::create_branch(&meta, &table, branch.trim(), tag).await
        }
        "delete_branch" => {
            // (split on commas without trimming, as Paimon does)
            let names: Vec<&str> = branch.split(',').filter(|s| !s.is_empty()).collect();
            branches::delete_branches(&meta, &table, &names).await
        }
        _ => branches::fast_forward(&meta, &table, branch.trim()).await,
    }
}

enum TagAction {
    Create,
    Delete,
    Rollback,
}

/// `sys.create_tag(table, tag [, snapshot_id [, time_retained]])`,
/// `sys.delete_tag(table, tag)` (several tags comma-separated) and
/// `sys.rollback_to(table, tag)` / `sys.rollback_to(table, snapshot_id => n)`.
async fn tag_procedure(session: &PaimonSession, call: &Call, action: TagAction) -> Result<()> {
    let procedure = match action {
        TagAction::Create => "create_tag",
        TagAction::Delete => "delete_tag",
        TagAction::Rollback => "rollback_to",
    };
    let (name, schema) = procedure_table(session, call, procedure).await?;
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let table = name.to_string();
    let number = |arg: &str, value: &str| -> Result<i64> {
        value
            .trim()
            .parse::<i64>()
            .map_err(|_| plan_datafusion_err!("sys.{procedure}: '{arg}' must be an integer, got '{value}'"))
    };
    match action {
        TagAction::Create => {
            let tag = call.arg("tag", 1).ok_or_else(|| {
                plan_datafusion_err!("sys.create_tag needs a tag name: CALL sys.create_tag('db.t', 'tag')")
            })?;
            let snapshot = call
                .arg("snapshot_id", 2)
                .map(|v| number("snapshot_id", v))
                .transpose()?;
            let retained = duration_arg(call, "create_tag", "time_retained", 3)?;
            tags::create_tag(&meta, &table, tag.trim(), snapshot, retained).await?;
        }
        TagAction::Delete => {
            let tags_arg = call.arg("tag", 1).ok_or_else(|| {
                plan_datafusion_err!("sys.delete_tag needs a tag name: CALL sys.delete_tag('db.t', 'tag')")
            })?;
            let names: Vec<&str> = tags_arg
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            tags::delete_tags(&meta, &table, &names).await?;
        }
        TagAction::Rollback => {
            let named_snapshot = call
                .args
                .iter()
                .find(|(n, _)| n.as_deref() == Some("snapshot_id"));
            let target = match (named_snapshot, call.arg("tag", 1), call.arg("snapshot_id", 2)) {
                (Some((_, v)), _, _) => tags::RollbackTarget::Snapshot(number("snapshot_id", v)?),
                (None, Some(tag), _)
                    if meta
                        .io()
                        .exists(&crate::spec::paths::tag_file(tag.trim()))
                        .await? =>
                {
                    tags::RollbackTarget::Tag(tag.trim())
                }
                (None, Some(v), _) if v.trim().parse::<i64>().is_ok() => {
                    tags::RollbackTarget::Snapshot(number("snapshot_id", v)?)
                }
                (None, Some(tag), _) if !tag.trim().is_empty() => tags::RollbackTarget::Tag(tag.trim()),
                (None, _, Some(v)) => tags::RollbackTarget::Snapshot(number("snapshot_id", v)?),
                _ => {
                    return plan_err!(
                        "sys.rollback_to needs a tag or a snapshot id: CALL sys.rollback_to('db.t', 'tag')"
                    )
                }
            };
            tags::rollback_to(&meta, &schema, &table, target).await?;
        }
    }
    session.catalog().refresh().await
}

/// `sys.changelog_capability(table, start, end)`: one row per stretch of the snapshots
/// `(start, end]` saying how exactly `t$changelog` can still read their changes: `full`,
/// `after-only` (the state before them expired) or `expired` (the snapshots are gone), with
/// the reason. `end` defaults to the latest snapshot.
async fn changelog_capability(session: &PaimonSession, call: &Call) -> Result<DataFrame> {
    let (name, schema) = procedure_table(session, call, "changelog_capability").await?;
    let id = |arg: &str, position: usize| -> Result<Option<i64>> {
        call.arg(arg, position)
            .map(|v| {
                v.trim().parse::<i64>().map_err(|_| {
                    plan_datafusion_err!("sys.changelog_capability: '{arg}' must be a snapshot id, got '{v}'")
                })
            })
            .transpose()
    };
    let meta = session.catalog().table_meta(&name.database, &name.table);
    let start = id("start", 1)?.unwrap_or(0);
    let end = match id("end", 2)? {
        Some(end) => end,
        None => meta.latest_snapshot_id().await?.unwrap_or(0),
    };
    let producer = crate::spec::TableOptions::parse(&schema.options)?.changelog_producer != "none";
    let stretches = changelog_capability_of(&meta, producer, start, end).await?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("first_snapshot", DataType::Int64, false),
        Field::new("last_snapshot", DataType::Int64, false),
        Field::new("capability", DataType::Utf8, false),
        Field::new("reason", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(stretches.iter().map(|s| s.first))),
            Arc::new(Int64Array::from_iter_values(stretches.iter().map(|s| s.last))),
            Arc::new(StringArray::from_iter_values(
                stretches.iter().map(|s| s.capability.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                stretches.iter().map(|s| s.reason.as_str()),
            )),
        ],
    )?;
    crate::sql::result_frame::result_frame(session.context(), &[batch])
}

/// The table named by a procedure's first argument, and its latest schema.
async fn procedure_table(
    session: &PaimonSession,
    call: &Call,
    procedure: &str,
) -> Result<(TableName, Arc<crate::spec::TableSchema>)> {
    let table = call.arg("table", 0).ok_or_else(|| {
        plan_datafusion_err!("sys.{procedure} needs the table: CALL sys.{procedure}('db.t')")
    })?;
    let name = resolve_table(
        session,
        &ObjectRef {
            parts: table.split('.').map(|s| s.trim().to_string()).collect(),
        },
    )?;
    let schema = session
        .catalog()
        .table_schema(&name.database, &name.table)
        .await?
        .ok_or_else(|| plan_datafusion_err!("Table {name} does not exist"))?;
    Ok((name, schema))
}

/// A full compaction; on a Ballista session (the table's buckets do not wait for assignment),
/// the frame of a [`CompactionJob`] the cluster runs in parallel tasks and commits once.
async fn compact(session: &PaimonSession, call: &Call) -> Result<Option<DataFrame>> {
    let (name, schema) = procedure_table(session, call, "compact").await?;
    let catalog = session.catalog();
    if !schema.has_primary_key() {
        return plan_err!(
            "sys.compact of append table {name} is not supported yet: only primary-key tables compact"
        );
    }
    let scope = match call.arg("partitions", 1) {
        None => CompactScope::All,
        Some(spec) => CompactScope::Partitions(parse_partitions(spec)?),
    };
    let meta = Arc::new(catalog.table_meta(&name.database, &name.table));
    let batch_size = session.context().state().config().batch_size();
    let table_name = name.to_string();
    let postponed = matches!(schema.options.get("bucket").map(|b| b.trim()), Some("-2"));
    if on_cluster(session) && !postponed {
        let job = crate::compact::CompactionJob {
            table: table_name,
            meta,
            schema,
            partitions: match scope {
                CompactScope::Partitions(specs) => Some(specs),
                _ => None,
            },
        };
        return Ok(Some(session.context().read_table(Arc::new(job))?));
    }
    Compaction {
        table: &table_name,
        meta: &meta,
        schema: &schema,
        batch_size,
        pool: Arc::clone(&session.context().runtime_env().memory_pool),
        progress: crate::progress::StatementProgress::of_config(session.context().state().config()),
    }
    .full(&scope)
    .await?;
    Ok(None)
}

/// Whether statements of `session` run on a Ballista cluster.
fn on_cluster(session: &PaimonSession) -> bool {
    #[cfg(feature = "ballista")]
    {
        let state = session.context().state();
        state
            .config()
            .options()
            .extensions
            .get::<ballista_core::config::BallistaConfig>()
            .is_some()
    }
    #[cfg(not(feature = "ballista"))]
    {
        let _ = session;
        false
    }
}

/// `'p=1,q=a;p=2'`: partitions separated by `;`, each a list of `key=value`.
fn parse_partitions(spec: &str) -> Result<Vec<Vec<(String, String)>>> {
    spec.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|partition| {
            partition
                .split(',')
                .map(|kv| {
                    let (k, v) = kv.split_once('=').ok_or_else(|| {
                        plan_datafusion_err!("Invalid partition '{kv}' in '{spec}': expected key=value")
                    })?;
                    Ok((k.trim().to_string(), v.trim().to_string()))
                })
                .collect()
        })
        .collect()
}
