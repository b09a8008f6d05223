//! The files a table's snapshots reference: what expiration, rollback and tag deletion may
//! delete and what they must keep.

use std::collections::HashSet;

use datafusion::common::Result;

use crate::meta::TableMeta;
use crate::spec::{paths, BinaryRow, DataType, FileKind, ManifestEntry, Snapshot, TableOptions, TableSchema};

/// Every metadata file a snapshot references: manifests by name within `manifest/`, index
/// files by their path in the table (`index/<name>`, or in a bucket directory with
/// `index-file-in-data-file-dir`).
#[derive(Default)]
pub(super) struct Referenced {
    pub(super) manifests: HashSet<String>,
    pub(super) index_files: HashSet<String>,
}

/// Resolves the files of one table's snapshots.
pub(super) struct TableFiles<'a> {
    meta: &'a TableMeta,
    partition_types: Vec<DataType>,
    partition_keys: &'a [String],
    options: TableOptions,
    index_dirs: paths::IndexFileDirs,
}

impl<'a> TableFiles<'a> {
    pub(super) fn new(meta: &'a TableMeta, schema: &'a TableSchema) -> Result<Self> {
        Ok(TableFiles {
            meta,
            partition_types: schema.partition_types(),
            partition_keys: &schema.partition_keys,
            options: TableOptions::parse(&schema.options)?,
            index_dirs: paths::IndexFileDirs::of(schema),
        })
    }

    /// Adds the manifest lists, manifests, index manifest and index files of `snapshot`.
    pub(super) async fn collect(&self, snapshot: &Snapshot, into: &mut Referenced) -> Result<()> {
        self.collect_parts(snapshot, true, true, into).await
    }

    /// Like [`Self::collect`], with the base and delta lists only if `data_lists` and the
    /// changelog list only if `changelog_list`. Lists that no longer exist are skipped (a
    /// long-lived changelog's data lists may be gone with its snapshot).
    pub(super) async fn collect_parts(
        &self,
        snapshot: &Snapshot,
        data_lists: bool,
        changelog_list: bool,
        into: &mut Referenced,
    ) -> Result<()> {
        let meta = self.meta;
        let mut lists = vec![];
        if data_lists {
            lists.push(snapshot.base_manifest_list.clone());
            lists.push(snapshot.delta_manifest_list.clone());
        }
        if changelog_list {
            lists.extend(snapshot.changelog_manifest_list.clone());
        }
        for list in lists {
            // One read, no existence probe: expiration runs after every commit.
            let metas = match meta.manifest_list(&list).await {
                Err(crate::error::Error::NotFound { .. }) => continue,
                other => other?,
            };
            for m in metas {
                into.manifests.insert(m.file_name);
            }
            into.manifests.insert(list);
        }
        if let Some(index) = &snapshot.index_manifest {
            for e in meta.index_manifest(index).await? {
                if e.kind == FileKind::Add && e.external_path.is_none() {
                    into.index_files
                        .insert(self.index_dirs.path(&e.partition, e.bucket, &e.file_name)?);
                }
            }
            into.manifests.insert(index.clone());
        }
        Ok(())
    }

    /// Paths of the data files `snapshot`'s delta deletes for good (not re-added at another
    /// level in the same delta), except those `keep` selects. No later snapshot uses them.
    pub(super) async fn deleted_by_delta(
        &self,
        snapshot: &Snapshot,
        keep: impl Fn(&ManifestEntry) -> bool,
    ) -> Result<Vec<String>> {
        let delta = self.meta.delta_entries(snapshot).await?;
        let re_added: HashSet<&str> = delta
            .iter()
            .filter(|e| e.kind == FileKind::Add)
            .map(|e| e.file.file_name.as_str())
            .collect();
        let mut paths = Vec::new();
        for e in delta.iter().filter(|e| e.kind == FileKind::Delete) {
            if !re_added.contains(e.file.file_name.as_str()) && !keep(e) {
                paths.extend(self.data_path(e)?);
            }
        }
        Ok(paths)
    }

    /// Paths of a data or changelog file and of its extra files (a `.index` file index),
    /// relative to the table root, or the URIs of files at an external path
    /// (`FileIO::delete_data_file` takes both).
    pub(super) fn data_path(&self, e: &ManifestEntry) -> Result<Vec<String>> {
        let values = BinaryRow::decode(&e.partition, &self.partition_types)?.values;
        let partition =
            paths::partition_path(self.partition_keys, &values, &self.options.partition_default_name);
        let dir = paths::bucket_path(
            self.options.data_file_path_directory.as_deref(),
            &partition,
            e.bucket,
        );
        Ok(std::iter::once(&e.file.file_name)
            .chain(&e.file.extra_files)
            .map(|name| match &e.file.external_path {
                Some(uri) => crate::io::beside(uri, name),
                None => format!("{dir}/{name}"),
            })
            .collect())
    }
}
