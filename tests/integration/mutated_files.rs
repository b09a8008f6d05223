//! Decoders against damaged bytes: every kind of file of real Paimon tables (snapshot and schema
//! JSON, manifest lists, manifests and index manifests in Avro, partition `BinaryRow`s inside them,
//! deletion-vector index files, and Parquet, ORC and Avro data files) is mutated at random (bit
//! flips, overwritten ranges, truncation, inserted bytes), and the table is read through SQL
//! (latest state, `$snapshots`, `$files`, and the changes of every snapshot).
//!
//! Each read must return rows or fail with an error; when it fails, the error names the damaged
//! file (or, when the damage turned a reference into another name, says that file is missing).
//! A panic, a hang (timeout) or an error that names no file fails the test. The cases come from a
//! fixed seed, so a failure reproduces; `PAIMON_MUTATIONS=<n>` runs n cases per file kind and
//! table instead of the default.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use datafusion::common::runtime::SpawnedTask;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_paimon::sql::{DEFAULT_CATALOG, DEFAULT_DATABASE};
use datafusion_paimon::PaimonSession;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::errors::upload_dir;
use crate::{fixture_warehouse, run_sql};

/// Tables whose files together cover every decoder: (database, table).
const TABLES: &[(&str, &str)] = &[
    ("pk", "dedup_basic"),           // Parquet, two-level manifests, a tag
    ("pk", "partitioned_b4"),        // partition BinaryRows, 4 buckets
    ("dvectors", "append_dv"),       // index manifest and deletion-vector file
    ("formats", "pk_orc"),           // ORC data files
    ("formats", "append_avro_zstd"), // Avro data files
];

const DEFAULT_CASES: usize = 12;
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// The kind of a table file, from its path inside the table directory.
fn kind_of(relative: &str) -> Option<&'static str> {
    let name = relative.rsplit('/').next()?;
    Some(if relative.starts_with("snapshot/snapshot-") {
        "snapshot"
    } else if relative.starts_with("schema/") {
        "schema"
    } else if name.starts_with("manifest-list-") {
        "manifest list"
    } else if name.starts_with("index-manifest-") {
        "index manifest"
    } else if name.starts_with("manifest-") {
        "manifest"
    } else if relative.starts_with("index/") {
        "index file"
    } else if name.starts_with("data-") {
        "data file"
    } else {
        return None; // hints (LATEST, EARLIEST) and tags are not decoded as data
    })
}

/// One random change of `bytes`; says what it did.
fn mutate(bytes: &[u8], rng: &mut StdRng) -> (Vec<u8>, String) {
    let mut out = bytes.to_vec();
    let len = out.len().max(1);
    match rng.random_range(0..5) {
        0 => {
            let flips = rng.random_range(1..=4);
            for _ in 0..flips {
                let at = rng.random_range(0..len).min(out.len().saturating_sub(1));
                if let Some(b) = out.get_mut(at) {
                    *b ^= 1 << rng.random_range(0..8);
                }
            }
            (out, format!("{flips} bit flips"))
        }
        1 => {
            let at = rng.random_range(0..len);
            let n = rng.random_range(1..=16).min(out.len().saturating_sub(at));
            for b in &mut out[at..at + n] {
                *b = rng.random();
            }
            (out, format!("{n} random bytes at {at}"))
        }
        2 => {
            let keep = rng.random_range(0..len);
            out.truncate(keep);
            (out, format!("truncated to {keep} bytes"))
        }
        3 => {
            let at = rng.random_range(0..=out.len());
            let n = rng.random_range(1..=64);
            let inserted: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            out.splice(at..at, inserted);
            (out, format!("{n} bytes inserted at {at}"))
        }
        _ => {
            // a plausible number changed: lengths, offsets, counts, ids
            let at = rng.random_range(0..len).min(out.len().saturating_sub(1));
            if let Some(b) = out.get_mut(at) {
                *b = [0x00, 0x7f, 0x80, 0xff][rng.random_range(0..4)];
            }
            (out, format!("byte {at} set to an extreme value"))
        }
    }
}

/// The fixture tables in one in-memory warehouse, each file's original bytes, and the files of
/// each kind.
struct Corpus {
    store: Arc<dyn ObjectStore>,
    /// table directory (e.g. `pk.db/dedup_basic`) -> kind -> files relative to it, sorted
    files: BTreeMap<String, BTreeMap<&'static str, Vec<String>>>,
}

impl Corpus {
    async fn load() -> Self {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut files = BTreeMap::new();
        for (db, table) in TABLES {
            let dir = format!("{db}.db/{table}");
            let source = fixture_warehouse().join(&dir);
            upload_dir(&store, &source, &Path::from(format!("wh/{dir}"))).await;
            let mut kinds: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
            for relative in walk(&source, "") {
                if let Some(kind) = kind_of(&relative) {
                    kinds.entry(kind).or_default().push(relative);
                }
            }
            for list in kinds.values_mut() {
                list.sort();
            }
            files.insert(dir, kinds);
        }
        Corpus { store, files }
    }

    fn path(&self, table_dir: &str, relative: &str) -> Path {
        Path::from(format!("wh/{table_dir}/{relative}"))
    }

    async fn bytes(&self, path: &Path) -> Vec<u8> {
        self.store
            .get(path)
            .await
            .expect("file")
            .bytes()
            .await
            .expect("bytes")
            .to_vec()
    }

    async fn put(&self, path: &Path, bytes: Vec<u8>) {
        self.store.put(path, PutPayload::from(bytes)).await.expect("put");
    }

    /// A new session over the warehouse: nothing read before the mutation is reused.
    async fn session(&self) -> PaimonSession {
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_DATABASE)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_object_store(&url::Url::parse("memory://").unwrap(), Arc::clone(&self.store));
        PaimonSession::register(ctx, "memory:///wh")
            .await
            .expect("warehouse opens")
    }
}

fn walk(dir: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("fixture directory").flatten() {
        let name = entry.file_name().into_string().expect("UTF-8 file name");
        let relative = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type().expect("file type").is_dir() {
            out.extend(walk(&entry.path(), &relative));
        } else {
            out.push(relative);
        }
    }
    out
}

/// The outcome of one query on a damaged table.
enum Outcome {
    Rows,
    Error(String),
    Panic(String),
    Hang,
}

async fn run(session: &PaimonSession, sql: &str) -> Outcome {
    let session = session.clone();
    let sql = sql.to_string();
    let task = SpawnedTask::spawn(async move { run_sql(&session, &sql).await.map(|_| ()) });
    match tokio::time::timeout(QUERY_TIMEOUT, task.join()).await {
        Err(_) => Outcome::Hang,
        Ok(Err(join)) => Outcome::Panic(join.to_string()),
        Ok(Ok(Ok(()))) => Outcome::Rows,
        Ok(Ok(Err(e))) if e.to_string().contains("panicked") => Outcome::Panic(e.to_string()),
        Ok(Ok(Err(e))) => Outcome::Error(e.to_string()),
    }
}

/// Whether an error explains itself: it names the damaged file, or the file the damage made it
/// look for (missing, or of an unknown format), or (damage that leaves a decodable manifest whose entry no longer matches the
/// later DELETE of its file) the snapshot and manifest where the entries stop adding up.
fn names_a_file(error: &str, damaged: &str) -> bool {
    let name = damaged.rsplit('/').next().unwrap_or(damaged);
    error.contains(name)
        || ((error.contains("not found") || error.contains("is not supported")) && error.contains('/'))
        || (error.contains("have no matching ADD") && error.contains("/manifest/manifest-"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_files_fail_with_errors_naming_them() {
    let cases: usize = std::env::var("PAIMON_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let corpus = Corpus::load().await;
    let mut rng = StdRng::seed_from_u64(0x5eed_0f_9a1e);
    let mut failures: Vec<String> = Vec::new();
    let mut tried = 0;
    let (mut errors, mut rows) = (0, 0);
    for (table_dir, kinds) in &corpus.files {
        let (db, table) = table_dir.split_once(".db/").expect("db/table");
        let ident = format!("{db}.{table}");
        let latest = kinds["snapshot"]
            .iter()
            .filter_map(|f| f.strip_prefix("snapshot/snapshot-")?.parse::<i64>().ok())
            .max()
            .expect("snapshots");
        let queries = [
            format!("SELECT * FROM {ident}"),
            format!("SELECT * FROM {ident}$snapshots"),
            format!("SELECT * FROM {ident}$files"),
            format!("SELECT * FROM paimon_incremental_query('{ident}$audit_log', 0, {latest}, 'delta')"),
        ];
        for (kind, files) in kinds {
            for case in 0..cases {
                let relative = &files[case % files.len()];
                let path = corpus.path(table_dir, relative);
                let original = corpus.bytes(&path).await;
                let (damaged, how) = mutate(&original, &mut rng);
                if damaged == original {
                    continue;
                }
                corpus.put(&path, damaged).await;
                let session = corpus.session().await;
                for sql in &queries {
                    tried += 1;
                    let what = format!("{kind} {table_dir}/{relative} ({how}): `{sql}`");
                    match run(&session, sql).await {
                        Outcome::Rows => rows += 1,
                        Outcome::Error(e) if names_a_file(&e, relative) => errors += 1,
                        Outcome::Error(e) => failures.push(format!("{what}: error names no file: {e}")),
                        Outcome::Panic(p) => failures.push(format!("{what}: PANIC {p}")),
                        Outcome::Hang => failures.push(format!("{what}: no answer in {QUERY_TIMEOUT:?}")),
                    }
                }
                corpus.put(&path, original).await;
            }
        }
    }
    eprintln!("{tried} reads of damaged tables: {errors} clear errors, {rows} returned rows");
    assert!(
        failures.is_empty(),
        "{} of {tried} reads of damaged tables failed badly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
