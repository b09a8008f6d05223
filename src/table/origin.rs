//! What a scan node was built from: the table read and the arguments of
//! `TableProvider::scan`. Stored in the node (`PaimonScanExec::with_origin`) so that a plan
//! codec can rebuild the node in another process by calling `scan` again with them.

use datafusion::logical_expr::Expr;

use super::provider::PaimonTable;

#[derive(Debug, Clone)]
#[cfg_attr(
    not(feature = "ballista"),
    allow(dead_code, reason = "read by the Ballista codecs only")
)]
pub(crate) struct ScanOrigin {
    /// The table, with the incremental range read for [`ScanKind::Incremental`].
    pub(crate) table: PaimonTable,
    pub(crate) kind: ScanKind,
    pub(crate) projection: Option<Vec<usize>>,
    pub(crate) filters: Vec<Expr>,
    pub(crate) limit: Option<usize>,
}

/// Which scan of the table built the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanKind {
    /// Merge-on-read of the table's snapshot (`PaimonScanExec`).
    Batch,
    /// The changes of the table's incremental range (`PaimonIncrementalScanExec`).
    Incremental,
}
