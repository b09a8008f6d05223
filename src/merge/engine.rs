//! Merge engines: what a group of equal-key records turns into.
//!
//! The merge loop ([`super::stream`]) is generic over [`MergeFunction`], so the engine is
//! monomorphized into the hot loop: deduplicate pays no dynamic dispatch per row.

/// Paimon row kind `+I` (insert).
pub(crate) const KIND_INSERT: i8 = 0;
/// Paimon row kind `-U` (update before; a retraction).
pub(crate) const KIND_UPDATE_BEFORE: i8 = 1;
/// Paimon row kind `+U` (update after).
#[allow(dead_code)] // the complete set of kinds, for readers of `_VALUE_KIND` and tests
pub(crate) const KIND_UPDATE_AFTER: i8 = 2;
/// Paimon row kind `-D` (delete; a retraction).
pub(crate) const KIND_DELETE: i8 = 3;

/// Whether a `_VALUE_KIND` value is a retraction (`-U` or `-D`).
#[inline]
pub(crate) fn is_retract(kind: i8) -> bool {
    kind == KIND_UPDATE_BEFORE || kind == KIND_DELETE
}

/// Whether any of `kinds` retracts. One pass without early exit, which vectorizes: most
/// batches hold no retraction, and callers skip their per-row work when none does.
pub(crate) fn any_retract(kinds: &[i8]) -> bool {
    kinds.iter().fold(false, |any, &kind| any | is_retract(kind))
}

/// One input record of a key group, identified by its position in the merge's batch store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Index of the record's batch in the output builder's store (opaque to engines; pass it
    /// back unchanged).
    pub batch: usize,
    /// Row of the record within that batch.
    pub row: usize,
    /// Index of the sorted run the record comes from (higher = newer file).
    pub run: usize,
    /// `_SEQUENCE_NUMBER` of the record.
    pub seq: i64,
    /// `_VALUE_KIND` of the record.
    pub kind: i8,
}

/// Decides which input record (if any) a key produces.
///
/// Protocol per key: `start(first)`, then `add(next)` for every further record of the same key,
/// then `finish()`. Records of a key arrive ordered by `(run, position in run)`, *not* by
/// sequence number; an engine that needs sequence order (partial-update, aggregation) must buffer
/// and sort its candidates itself.
///
/// Keys that occur exactly once among all runs are usually decided in bulk, without calling
/// `start`/`finish`: the merge asks [`MergeFunction::keep_single`] for each such record. Engines
/// must make `keep_single(kind)` agree with `start(c); finish()` for a single record.
///
/// Engines that need the values of the records (partial-update, aggregation, `sequence.field`
/// ordering) collect the group and answer [`Outcome::Reduce`]: the output builder then hands
/// the gathered groups of a whole output batch to a [`crate::merge::reduce::GroupReducer`].
pub(crate) trait MergeFunction: Send + 'static {
    /// Whether a key with a single record of kind `kind` is output.
    fn keep_single(&self, kind: i8) -> bool;
    /// Starts a new key group with its first record.
    fn start(&mut self, first: Candidate);
    /// Adds a further record of the current key group.
    fn add(&mut self, next: Candidate);
    /// Ends the key group.
    fn finish(&mut self) -> Outcome;
    /// The records of the group just finished with [`Outcome::Reduce`], in arrival order.
    fn group(&self) -> &[Candidate] {
        &[]
    }
}

/// What a finished key group produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// This input record, unchanged.
    Keep(Candidate),
    /// Nothing: the key is dropped.
    Drop,
    /// A row computed from the values of the group's records ([`MergeFunction::group`]).
    Reduce,
}

impl From<Option<Candidate>> for Outcome {
    fn from(choice: Option<Candidate>) -> Self {
        choice.map_or(Outcome::Drop, Outcome::Keep)
    }
}

/// The `deduplicate` merge engine: the record with the highest `(sequence number, run index)`
/// wins (on a full tie, the later record of the run); a retracting winner drops the key unless
/// `keep_retracts` is set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Deduplicate {
    keep_retracts: bool,
    /// `ignore-delete`: retractions never win (files written before the option was set).
    ignore_delete: bool,
    best: Option<Candidate>,
}

impl Deduplicate {
    pub(crate) fn new(keep_retracts: bool) -> Self {
        Self::with_ignore_delete(keep_retracts, false)
    }

    pub(crate) fn with_ignore_delete(keep_retracts: bool, ignore_delete: bool) -> Self {
        Self {
            keep_retracts,
            ignore_delete,
            best: None,
        }
    }
}

impl MergeFunction for Deduplicate {
    #[inline]
    fn keep_single(&self, kind: i8) -> bool {
        self.keep_retracts || !is_retract(kind)
    }

    #[inline]
    fn start(&mut self, first: Candidate) {
        self.best = None;
        self.add(first);
    }

    #[inline]
    fn add(&mut self, next: Candidate) {
        if self.ignore_delete && is_retract(next.kind) {
            return;
        }
        match &self.best {
            // `>=`: candidates arrive by (run, position), so on a full tie the later one wins.
            Some(best) if (next.seq, next.run) < (best.seq, best.run) => {}
            _ => self.best = Some(next),
        }
    }

    #[inline]
    fn finish(&mut self) -> Outcome {
        let best = self.best.take();
        best.filter(|b| self.keep_single(b.kind)).into()
    }
}

/// The `first-row` engine: the add record with the lowest `(sequence number, run index)` wins.
/// Retractions never reach first-row files (the writer rejects or drops them); any found in a
/// file are skipped.
#[derive(Debug, Clone, Default)]
pub(crate) struct FirstRow {
    best: Option<Candidate>,
}

impl MergeFunction for FirstRow {
    #[inline]
    fn keep_single(&self, kind: i8) -> bool {
        !is_retract(kind)
    }

    #[inline]
    fn start(&mut self, first: Candidate) {
        self.best = None;
        self.add(first);
    }

    #[inline]
    fn add(&mut self, next: Candidate) {
        if is_retract(next.kind) {
            return;
        }
        match &self.best {
            Some(best) if (next.seq, next.run) >= (best.seq, best.run) => {}
            _ => self.best = Some(next),
        }
    }

    #[inline]
    fn finish(&mut self) -> Outcome {
        self.best.take().into()
    }
}

/// Engines that need values: collects every record of the group for the reducer.
#[derive(Debug, Clone)]
pub(crate) struct Collect {
    keep_retracts: bool,
    group: Vec<Candidate>,
    /// Level of each run, for lookup-mode merges: only the records of level 0 and of the
    /// smallest level ≥ 1 holding the key are merged (semantics.md §3.4).
    run_levels: Option<Vec<i32>>,
}

impl Collect {
    pub(crate) fn new(keep_retracts: bool) -> Self {
        Self {
            keep_retracts,
            group: Vec::new(),
            run_levels: None,
        }
    }

    pub(crate) fn with_run_levels(mut self, run_levels: Option<Vec<i32>>) -> Self {
        self.run_levels = run_levels;
        self
    }
}

impl MergeFunction for Collect {
    #[inline]
    fn keep_single(&self, kind: i8) -> bool {
        self.keep_retracts || !is_retract(kind)
    }

    fn start(&mut self, first: Candidate) {
        self.group.clear();
        self.group.push(first);
    }

    fn add(&mut self, next: Candidate) {
        self.group.push(next);
    }

    fn finish(&mut self) -> Outcome {
        if let Some(levels) = &self.run_levels {
            let level = |c: &Candidate| levels.get(c.run).copied().unwrap_or(0);
            let newest_high = self.group.iter().map(level).filter(|l| *l > 0).min();
            self.group.retain(|c| {
                let l = level(c);
                l == 0 || Some(l) == newest_high
            });
        }
        Outcome::Reduce
    }

    fn group(&self) -> &[Candidate] {
        &self.group
    }
}
