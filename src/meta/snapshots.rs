//! Snapshots and tags: latest / by id / by time, with `LATEST` treated as a hint only.
use super::manifest_cache::FileVersion;
use super::TableMeta;
use crate::error::{Error, Result};
use crate::spec::{paths, Snapshot, Tag};

/// How long a snapshot found when a statement resolved its table serves that statement's write.
const SNAPSHOT_FOUND_AHEAD_FOR: std::time::Duration = std::time::Duration::from_secs(1);

impl TableMeta {
    /// The snapshot with this id; a missing file is `NotFound` naming it.
    pub(crate) async fn snapshot(&self, id: i64) -> Result<Snapshot> {
        let file = paths::snapshot_file(id);
        let bytes = self.io.read(&file, "snapshot").await?;
        Snapshot::from_json(&bytes, &self.io.display(&file))
    }

    /// Ids of the snapshot files present, ascending.
    pub(crate) async fn snapshot_ids(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = self
            .io
            .list_files("snapshot")
            .await?
            .iter()
            .filter_map(|n| n.strip_prefix("snapshot-")?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The latest snapshot id, or None for a table without snapshots.
    ///
    /// Follows Java (format.md §3.5): trust `LATEST` = L if `snapshot-(L+1)` does not exist
    /// (a missing `snapshot-L` then surfaces as an error naming it); otherwise list the directory.
    pub(crate) async fn latest_snapshot_id(&self) -> Result<Option<i64>> {
        if let Some(known) = self.known_snapshot_still_latest(true).await? {
            return Ok(known.map(|s| s.id));
        }
        if let Some(l) = self.hinted_latest_id().await? {
            if self.io.exists(&paths::snapshot_file(l)).await? {
                return Ok(Some(l));
            }
            return Ok(Some(self.past_expired_hint(l).await?.unwrap_or(l)));
        }
        Ok(self.snapshot_ids().await?.last().copied())
    }

    /// The snapshot `commit_user` committed since `since_millis`, newest first, if any: how a
    /// retried commit learns that it already landed (Java's `filterCommitted`). Walks back from
    /// the latest snapshot and stops at the first older than `since_millis` (less a minute for
    /// clocks of other machines), so a statement's check reads only the snapshots committed
    /// while it ran. Snapshots expired in between cannot be found.
    pub(crate) async fn committed_by(
        &self,
        commit_user: &str,
        since_millis: i64,
    ) -> Result<Option<Snapshot>> {
        let Some(mut id) = self.latest_snapshot_id().await? else {
            return Ok(None);
        };
        let horizon = since_millis - 60_000;
        while id > 0 {
            let snapshot = match self.snapshot(id).await {
                Ok(s) => s,
                Err(Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            if snapshot.commit_user == commit_user {
                return Ok(Some(snapshot));
            }
            if snapshot.time_millis < horizon {
                return Ok(None);
            }
            id -= 1;
        }
        Ok(None)
    }

    /// Whether snapshots newer than `id` exist now: a file of snapshot `id` found missing then
    /// means another process expired it (a lost race), not a damaged table.
    pub(crate) async fn moved_past(&self, id: i64) -> Result<bool> {
        Ok(self.latest_snapshot_id().await?.unwrap_or(0) > id)
    }

    /// `LATEST` = L when `snapshot-(L+1)` does not exist.
    async fn hinted_latest_id(&self) -> Result<Option<i64>> {
        if let Ok(bytes) = self.io.read("snapshot/LATEST", "hint").await {
            if let Ok(l) = std::str::from_utf8(&bytes).unwrap_or("").trim().parse::<i64>() {
                if l > 0 && !self.io.exists(&paths::snapshot_file(l + 1)).await? {
                    return Ok(Some(l));
                }
            }
        }
        Ok(None)
    }

    /// The hint named `snapshot-hint`, which is gone. A writer that lagged behind can leave the
    /// hint at a snapshot that other writers' expiration has removed together with its successor:
    /// then later snapshots exist, and the latest of them is the answer. Without any, the table
    /// is damaged and None lets the read of `snapshot-hint` fail naming it.
    async fn past_expired_hint(&self, hint: i64) -> Result<Option<i64>> {
        Ok(self
            .snapshot_ids()
            .await?
            .last()
            .copied()
            .filter(|&last| last > hint))
    }

    /// The earliest snapshot id present, or None for a table without snapshots.
    ///
    /// Listing is the reliable answer (`EARLIEST` is only a hint, and pypaimon never writes it).
    pub(crate) async fn earliest_snapshot_id(&self) -> Result<Option<i64>> {
        Ok(self.snapshot_ids().await?.first().copied())
    }

    /// The earliest snapshot id for code that runs after every commit (expiration): the
    /// `EARLIEST` hint when the snapshot it names exists and the one before it does not, else a
    /// listing, after which the hint is written so the next commit need not list again (a
    /// table's snapshot directory holds every snapshot `snapshot.time-retained` keeps). A hint
    /// another process made stale names a deleted snapshot and is listed past, as Java does.
    pub(crate) async fn earliest_snapshot_id_for_commit(&self) -> Result<Option<i64>> {
        if let Ok(bytes) = self.io.read("snapshot/EARLIEST", "hint").await {
            if let Ok(e) = std::str::from_utf8(&bytes).unwrap_or("").trim().parse::<i64>() {
                if e > 0
                    && self.io.exists(&paths::snapshot_file(e)).await?
                    && !self.io.exists(&paths::snapshot_file(e - 1)).await?
                {
                    return Ok(Some(e));
                }
            }
        }
        let earliest = self.earliest_snapshot_id().await?;
        if let Some(e) = earliest {
            // Only a hint: failing to write it costs the next commit a listing.
            let _ = self
                .io
                .write("snapshot/EARLIEST", e.to_string().into_bytes())
                .await;
        }
        Ok(earliest)
    }

    /// The latest snapshot this session read or committed, when it still is the latest: its
    /// file is the version seen then, and no next snapshot exists (the two HEADs run at once).
    /// That is Java's check of the `LATEST` hint (format.md §3.5) with the session's memory as
    /// the hint, and it spares the hint's GET and the snapshot's GET. For a table this session
    /// created, one HEAD of `snapshot-1` tells it is still empty, where a missing hint would
    /// cost a listing. A rolled-back or re-created table changed the file, and a newer commit
    /// made the next one: then None, and the caller reads the hint.
    ///
    /// `for_commit` leaves out the shortcut for a table known empty: a commit must not take the
    /// table's history for none (another process's snapshots may all have expired since).
    async fn known_snapshot_still_latest(&self, for_commit: bool) -> Result<Option<Option<Snapshot>>> {
        let dir = self.io.display("snapshot");
        let Some(known) = self.manifests.known_latest_snapshot(&dir) else {
            return Ok(None);
        };
        let Some((snapshot, version)) = known else {
            if for_commit {
                return Ok(None);
            }
            // still empty: no `snapshot-1` and no `LATEST` hint (every commit writes it, and
            // expiration never deletes it)
            let (first, hint) = futures::future::try_join(
                self.io.exists(&paths::snapshot_file(1)),
                self.io.exists("snapshot/LATEST"),
            )
            .await?;
            return Ok((!first && !hint).then_some(None));
        };
        let (this, next) = futures::future::try_join(
            self.io.head(&paths::snapshot_file(snapshot.id)),
            self.io.exists(&paths::snapshot_file(snapshot.id + 1)),
        )
        .await?;
        if next || !this.is_some_and(|meta| version.is(&meta)) {
            return Ok(None);
        }
        Ok(Some(Some(Snapshot::clone(&snapshot))))
    }

    /// Remembers `snapshot`, just committed by this session as the file of version `version`,
    /// as the latest the next statement may confirm ([`Self::known_snapshot_still_latest`]).
    pub(super) fn note_committed_snapshot(&self, snapshot: &Snapshot, version: FileVersion) {
        self.note_latest_snapshot(snapshot.clone(), version);
    }

    /// Snapshot `id`, read as the latest: remembered with the version of its file.
    async fn read_latest(&self, id: i64) -> Result<Snapshot> {
        let file = paths::snapshot_file(id);
        let (bytes, meta) = self.io.read_versioned(&file, "snapshot").await?;
        let snapshot = Snapshot::from_json(&bytes, &self.io.display(&file))?;
        self.note_latest_snapshot(snapshot.clone(), FileVersion::seen(&meta));
        Ok(snapshot)
    }

    /// The latest snapshot, if any. The first call after [`Self::find_latest_snapshot_ahead`]
    /// takes what that found: a statement resolves its table and the snapshot it reads in one
    /// round trip.
    pub(crate) async fn latest_snapshot(&self) -> Result<Option<Snapshot>> {
        let found = self.found_ahead.lock().expect("lock is never poisoned").take();
        match found {
            Some(found) => found,
            None => self.latest_snapshot_of(false).await,
        }
    }

    /// Finds the latest snapshot for the next [`Self::latest_snapshot`] of this handle (which
    /// belongs to one statement), while the caller does something else meanwhile.
    pub(crate) async fn find_latest_snapshot_ahead(&self) {
        let found = self.latest_snapshot_of(false).await;
        if let Ok(snapshot) = &found {
            *self.found_ahead_for_write.lock().expect("lock is never poisoned") =
                Some((snapshot.clone(), std::time::Instant::now()));
        }
        *self.found_ahead.lock().expect("lock is never poisoned") = Some(found);
    }

    /// The latest snapshot a write builds its files on (sequence numbers, the bucket index):
    /// the one found when the statement resolved its table, if that was within the last
    /// second and the session knows of no newer one (its own commits included: a plan run
    /// again after committing confirms afresh), else asked for now. Another process's commit
    /// in that second is like one landing while the files are written; the commit confirms
    /// the latest snapshot again in any case.
    pub(crate) async fn latest_snapshot_for_write(&self) -> Result<Option<Snapshot>> {
        let found = self
            .found_ahead_for_write
            .lock()
            .expect("lock is never poisoned")
            .clone();
        if let Some((snapshot, at)) = found {
            if at.elapsed() < SNAPSHOT_FOUND_AHEAD_FOR && self.still_known_latest(snapshot.as_ref()) {
                return Ok(snapshot);
            }
        }
        self.latest_snapshot().await
    }

    /// Whether the session's known latest snapshot of this table is still `snapshot`.
    fn still_known_latest(&self, snapshot: Option<&Snapshot>) -> bool {
        let known = self.manifests.known_latest_snapshot(&self.io.display("snapshot"));
        match (known, snapshot) {
            (Some(Some((known, _))), Some(s)) => known.id == s.id && known.time_millis == s.time_millis,
            (Some(None), None) => true,
            _ => false,
        }
    }

    /// The latest snapshot, if any, asked for now (never one found ahead): what a commit
    /// builds on.
    pub(crate) async fn latest_snapshot_confirmed(&self) -> Result<Option<Snapshot>> {
        self.latest_snapshot_of(true).await
    }

    async fn latest_snapshot_of(&self, for_commit: bool) -> Result<Option<Snapshot>> {
        if let Some(known) = self.known_snapshot_still_latest(for_commit).await? {
            return Ok(known);
        }
        let id = match self.hinted_latest_id().await? {
            Some(l) => match self.read_latest(l).await {
                Err(Error::NotFound { .. }) => match self.past_expired_hint(l).await? {
                    Some(later) => later,
                    None => l, // damaged: fails again below, naming it
                },
                other => return Ok(Some(other?)),
            },
            None => match self.snapshot_ids().await?.last() {
                Some(&last) => last,
                None => return Ok(None),
            },
        };
        Ok(Some(self.read_latest(id).await?))
    }

    /// Tells the session's cache which snapshot is the latest now (`ManifestCache::
    /// note_latest`), remembering a contradiction for [`Self::take_listing_contradicted`].
    fn note_latest_snapshot(&self, snapshot: Snapshot, version: FileVersion) {
        let (snapshots, schemas) = (self.io.display("snapshot"), self.io.display("schema"));
        if !self
            .manifests
            .note_latest(&snapshots, &schemas, snapshot, version)
        {
            self.listing_contradicted
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// All live snapshots, ascending by id.
    pub(crate) async fn snapshots(&self) -> Result<Vec<Snapshot>> {
        let ids = self.snapshot_ids().await?;
        futures::future::try_join_all(ids.into_iter().map(|id| self.snapshot(id))).await
    }

    /// The latest snapshot committed at or before `millis`, if any.
    pub(crate) async fn snapshot_at_or_before(&self, millis: i64) -> Result<Option<Snapshot>> {
        let mut best = None;
        for s in self.snapshots().await? {
            if s.time_millis <= millis {
                best = Some(s);
            }
        }
        Ok(best)
    }

    /// Ids of the long-lived changelogs (`changelog/changelog-<id>`), ascending.
    pub(crate) async fn long_lived_changelog_ids(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = self
            .io
            .list_files("changelog")
            .await?
            .iter()
            .filter_map(|n| n.strip_prefix("changelog-")?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The earliest snapshot whose changes can still be read: the earliest long-lived changelog
    /// where the changelog outlives snapshots, else the earliest snapshot.
    pub(crate) async fn earliest_changes_id(&self) -> Result<Option<i64>> {
        let earliest = self.earliest_snapshot_id().await?;
        let changelog = self.long_lived_changelog_ids().await?.first().copied();
        Ok(match (earliest, changelog) {
            (Some(s), Some(c)) => Some(s.min(c)),
            (s, c) => s.or(c),
        })
    }

    /// Snapshot `id`, or its long-lived changelog once the snapshot has expired: what a read
    /// of changes needs (never for time travel, whose snapshot must exist).
    pub(crate) async fn snapshot_or_changelog(&self, id: i64) -> Result<Snapshot> {
        match self.snapshot(id).await {
            Err(Error::NotFound { .. }) if self.io.exists(&paths::changelog_file(id)).await? => {
                self.long_lived_changelog(id).await
            }
            other => other,
        }
    }

    /// The long-lived changelog of snapshot `id`: the expired snapshot's JSON.
    pub(crate) async fn long_lived_changelog(&self, id: i64) -> Result<Snapshot> {
        let file = paths::changelog_file(id);
        let bytes = self.io.read(&file, "long-lived changelog").await?;
        Snapshot::from_json(&bytes, &self.io.display(&file))
    }

    /// Keeps `snapshot` as a long-lived changelog (before its snapshot file is deleted) and
    /// moves the `changelog/LATEST` hint to it.
    pub(crate) async fn write_long_lived_changelog(&self, snapshot: &Snapshot) -> Result<()> {
        self.io
            .write(
                &paths::changelog_file(snapshot.id),
                snapshot.to_json().into_bytes(),
            )
            .await?;
        self.io
            .write("changelog/LATEST", snapshot.id.to_string().into_bytes())
            .await
    }

    /// The tag with this name.
    pub(crate) async fn tag(&self, name: &str) -> Result<Tag> {
        let file = paths::tag_file(name);
        let bytes = match self.io.read(&file, "tag").await {
            Err(Error::NotFound { .. }) => {
                return Err(Error::not_found(
                    "tag",
                    format!("'{name}' ({})", self.io.display(&file)),
                ))
            }
            other => other?,
        };
        Tag::from_json(name, &bytes, &self.io.display(&file))
    }

    /// All tags, sorted by name.
    pub(crate) async fn tags(&self) -> Result<Vec<Tag>> {
        let mut names: Vec<String> = self
            .io
            .list_files("tag")
            .await?
            .iter()
            .filter_map(|n| n.strip_prefix("tag-").map(str::to_string))
            .collect();
        names.sort();
        futures::future::try_join_all(names.iter().map(|n| self.tag(n))).await
    }
}

/// Now, in epoch milliseconds: when a statement starts, for [`TableMeta::committed_by`].
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
