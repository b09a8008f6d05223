//! Table maintenance: what keeps a table that receives commits for months small and fast.
//!
//! * [`expire`]: snapshot expiration by `snapshot.num-retained.*`, `snapshot.time-retained` and
//!   `snapshot.expire.limit`, after every commit and from `CALL sys.expire_snapshots`.
//! * [`changelog_expire`]: long-lived changelogs (`changelog.num-retained.*`,
//!   `changelog.time-retained`), after snapshot expiration.
//! * [`partitions`]: partition expiration (`partition.expiration-time`, `sys.expire_partitions`).
//! * [`orphans`]: orphan file removal (`sys.remove_orphan_files`).
//! * [`tags`]: `sys.create_tag`, `sys.delete_tag`, `sys.rollback_to`.
//! * [`branches`]: `sys.create_branch`, `sys.delete_branch`, `sys.fast_forward`.
//! * [`auto_tags`]: `tag.automatic-creation` and `tag.num-retained-max`, after every commit.
//!
//! Manifest merging runs inside every commit (`meta::manifest_merge`), since it is part of
//! writing the snapshot's base manifest list.

pub(crate) mod auto_tags;
pub(crate) mod branches;
pub(crate) mod changelog_expire;
pub(crate) mod expire;
mod files;
pub(crate) mod orphans;
pub(crate) mod partitions;
pub(crate) mod tags;
