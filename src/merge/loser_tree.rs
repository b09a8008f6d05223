//! A tournament ("loser") tree over the run cursors.
//!
//! `nodes[0]` holds the overall winner (the smallest cursor); `nodes[1..k]` hold, for every
//! internal match, the loser of that match. Leaf `i` (cursor `i`) plays its first match at node
//! `(k + i) / 2`; the parent of node `n` is `n / 2`. Replacing the winner's key and replaying
//! its path costs `ceil(log2 k)` comparisons.
//!
//! Each node caches the sort key of its cursor next to the cursor index, so a match reads no
//! cursor. The order is a "greater than" predicate over [`Leaf`]s (`gt(a, b)`: `a` must come
//! after `b`), a strict total order (ties broken by the cursor index); it may consult the
//! cursors when keys alone cannot decide.

/// A cursor index and the sort key of its current row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Leaf {
    pub(super) key: u128,
    pub(super) index: usize,
}

#[derive(Debug)]
pub(super) struct LoserTree {
    nodes: Vec<Leaf>,
}

impl LoserTree {
    /// Builds the tree over one cursor per key (`keys.len() >= 1`).
    pub(super) fn new(keys: &[u128], gt: impl Fn(Leaf, Leaf) -> bool) -> Self {
        let k = keys.len();
        let mut nodes: Vec<Option<Leaf>> = vec![None; k.max(1)];
        for (index, &key) in keys.iter().enumerate() {
            let mut winner = Leaf { key, index };
            let mut node = (k + index) / 2;
            while node != 0 {
                let Some(challenger) = nodes[node] else { break };
                if gt(winner, challenger) {
                    nodes[node] = Some(winner);
                    winner = challenger;
                }
                node /= 2;
            }
            nodes[node] = Some(winner);
        }
        let nodes = nodes
            .into_iter()
            .map(|n| n.expect("k leaves fill the k - 1 internal nodes and the root"))
            .collect();
        Self { nodes }
    }

    /// The index of the smallest cursor.
    #[inline]
    pub(super) fn winner(&self) -> usize {
        self.nodes[0].index
    }

    /// Restores the tree after the winner's cursor moved to a row with sort key `key` (or
    /// finished).
    #[inline]
    pub(super) fn replay(&mut self, key: u128, gt: impl Fn(Leaf, Leaf) -> bool) {
        let k = self.nodes.len();
        let mut winner = Leaf {
            key,
            index: self.nodes[0].index,
        };
        let mut node = (k + winner.index) / 2;
        while node != 0 {
            let challenger = self.nodes[node];
            // selects rather than a branch: the outcome is unpredictable
            let swap = gt(winner, challenger);
            self.nodes[node] = if swap { winner } else { challenger };
            winner = if swap { challenger } else { winner };
            node /= 2;
        }
        self.nodes[0] = winner;
    }

    /// The second smallest cursor, or `None` with a single cursor.
    ///
    /// The runner-up lost its last match against the winner, so it is the best of the losers
    /// stored on the winner's path.
    #[inline]
    pub(super) fn runner_up(&self, gt: impl Fn(Leaf, Leaf) -> bool) -> Option<usize> {
        let k = self.nodes.len();
        let mut node = (k + self.nodes[0].index) / 2;
        let mut best: Option<Leaf> = None;
        while node != 0 {
            let loser = self.nodes[node];
            best = match best {
                Some(b) if !gt(b, loser) => Some(b),
                _ => Some(loser),
            };
            node /= 2;
        }
        best.map(|leaf| leaf.index)
    }
}

#[cfg(test)]
mod tests {
    use super::{Leaf, LoserTree};

    /// Repeatedly pops the winner of a tree over fixed lists and checks it yields a sorted
    /// sequence and the correct runner-up at every step.
    #[test]
    fn pops_in_order_with_runner_up() {
        for k in 1..=9usize {
            let lists: Vec<Vec<u128>> = (0..k)
                .map(|i| {
                    let mut v: Vec<u128> = (0..(5 + i * 3))
                        .map(|j| ((j * 7 + i * 13) % 50) as u128)
                        .collect();
                    v.sort();
                    v
                })
                .collect();
            let mut pos = vec![0usize; k];
            let head = |pos: &[usize], i: usize| lists[i].get(pos[i]).copied().unwrap_or(u128::MAX);
            let gt = |a: Leaf, b: Leaf| (a.key, a.index) > (b.key, b.index);
            let keys: Vec<u128> = (0..k).map(|i| head(&pos, i)).collect();
            let mut tree = LoserTree::new(&keys, gt);
            let mut out = vec![];
            loop {
                let w = tree.winner();
                let v = head(&pos, w);
                if v == u128::MAX {
                    break;
                }
                // the runner-up must be the min of all other heads
                let expected = (0..k).filter(|&i| i != w).map(|i| (head(&pos, i), i)).min();
                let got = tree.runner_up(gt).map(|r| (head(&pos, r), r));
                assert_eq!(got, expected, "k={k}");
                out.push(v);
                pos[w] += 1;
                tree.replay(head(&pos, w), gt);
            }
            let mut all: Vec<u128> = lists.concat();
            all.sort();
            assert_eq!(out, all, "k={k}");
        }
    }
}
