//! Skipping the files of a scan by their file indexes (`file_index`): the index embedded in the
//! manifest entry is at hand; a `.index` file beside the data file is read in ranges, as Java's
//! `FileIndexFormat.Reader` does: its head first (one request for most), then only the indexes
//! of the filter's columns (one more), for up to [`CONCURRENT_FILES`] files at once. A file
//! with the default bloom filters of five columns holds 3 MB of indexes; a filter on one column
//! fetches 600 kB of them.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::common::Result;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use crate::error::Error;
use crate::file_index::FileIndexFilter;
use crate::meta::TableMeta;
use crate::spec::{ManifestEntry, TableSchema};

/// Index files read at once.
const CONCURRENT_FILES: usize = 8;
/// Bytes of an index file fetched first: the head of a container of a few columns.
const HEAD_GUESS: u64 = 4096;

/// `files` without those whose file index shows no row can pass `filter`.
pub(super) async fn skip_by_file_index<'a>(
    meta: &TableMeta,
    filter: &FileIndexFilter,
    dir: &str,
    files: Vec<&'a ManifestEntry>,
    file_schemas: &HashMap<i64, Arc<TableSchema>>,
) -> Result<Vec<&'a ManifestEntry>> {
    let decisions: Vec<futures::future::BoxFuture<'_, Result<bool>>> = files
        .iter()
        .map(|e| decide(meta, filter, dir, e, file_schemas).boxed())
        .collect();
    let decisions: Vec<bool> = futures::stream::iter(decisions)
        .buffered(CONCURRENT_FILES)
        .try_collect()
        .await?;
    Ok(files
        .into_iter()
        .zip(decisions)
        .filter(|(_, keep)| *keep)
        .map(|(e, _)| e)
        .collect())
}

/// Whether `entry`'s file may hold a row of `filter`, by its file index if it has one.
async fn decide(
    meta: &TableMeta,
    filter: &FileIndexFilter,
    dir: &str,
    e: &ManifestEntry,
    file_schemas: &HashMap<i64, Arc<TableSchema>>,
) -> Result<bool> {
    let Some(schema) = file_schemas.get(&e.file.schema_id) else {
        return Ok(true);
    };
    match (&e.file.embedded_index, FileIndexFilter::index_file(&e.file)) {
        (Some(bytes), _) => Ok(filter.may_match(schema, bytes)),
        (None, Some(name)) => index_file_may_match(meta, filter, schema, dir, e, name).await,
        (None, None) => Ok(true),
    }
}

/// Whether the `.index` file `name` of `entry` admits a row of `filter`.
async fn index_file_may_match(
    meta: &TableMeta,
    filter: &FileIndexFilter,
    schema: &TableSchema,
    dir: &str,
    entry: &ManifestEntry,
    name: &str,
) -> Result<bool> {
    let path = meta
        .io()
        .beside_data_file(dir, entry.file.external_path.as_deref(), name)?;
    let store = meta.io().store();
    let first = fetch_prefix(store.as_ref(), &path, HEAD_GUESS).await?;
    let Some(head_length) = crate::file_index::head_length(&first) else {
        return Ok(true);
    };
    let head = if first.len() >= head_length {
        first
    } else {
        fetch_prefix(store.as_ref(), &path, head_length as u64).await?
    };
    let Some(layout) = crate::file_index::layout(&head) else {
        return Ok(true);
    };
    let wanted = filter.wanted(schema, &layout);
    if wanted.is_empty() {
        return Ok(true);
    }
    let ranges: Vec<std::ops::Range<u64>> = wanted
        .iter()
        .map(|(_, (start, length))| *start as u64..(*start + *length) as u64)
        .collect();
    let bodies = store.get_ranges(&path, &ranges).await.map_err(Error::from)?;
    let mut entries: crate::file_index::Entries<'_> = HashMap::new();
    for ((key, _), body) in wanted.into_iter().zip(&bodies) {
        entries.insert(key, Some(body.as_ref()));
    }
    Ok(filter.entries_may_match(schema, &entries))
}

/// The first `n` bytes of `path` (all of it if shorter).
async fn fetch_prefix(store: &dyn ObjectStore, path: &object_store::path::Path, n: u64) -> Result<Bytes> {
    let options = GetOptions {
        range: Some(GetRange::Bounded(0..n)),
        ..Default::default()
    };
    let got = match store.get_opts(path, options).await {
        Ok(got) => got,
        Err(e @ object_store::Error::NotFound { .. }) => return Err(Error::from(e).into()),
        // (a store that refuses a range past the end: the whole file, which is smaller)
        Err(_) => store.get(path).await.map_err(Error::from)?,
    };
    Ok(got.bytes().await.map_err(Error::from)?)
}
