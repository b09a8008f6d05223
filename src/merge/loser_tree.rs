//! A tournament ("loser") tree over the run cursors.
//!
//! `nodes[0]` holds the overall winner (the smallest cursor); `nodes[1..k]` hold, for every
//! internal match, the loser of that match. Leaf `i` (cursor `i`) plays its first match at node
//! `(k + i) / 2`; the parent of node `n` is `n / 2`. Replacing the winner's value and replaying
//! its path costs `ceil(log2 k)` comparisons.
//!
//! The tree is independent of the cursor type: every operation takes a "greater than"
//! predicate over cursor indices (`gt(a, b)` is true if cursor `a` must come after cursor `b`;
//! it must be a strict total order, e.g. broken by the cursor index).

#[derive(Debug)]
pub(super) struct LoserTree {
    nodes: Vec<usize>,
}

impl LoserTree {
    /// Builds the tree over `k >= 1` cursors.
    pub(super) fn new(k: usize, gt: impl Fn(usize, usize) -> bool) -> Self {
        debug_assert!(k >= 1, "a loser tree needs at least one leaf");
        let mut nodes = vec![usize::MAX; k.max(1)];
        for leaf in 0..k {
            let mut winner = leaf;
            let mut node = (k + leaf) / 2;
            while node != 0 && nodes[node] != usize::MAX {
                let challenger = nodes[node];
                if gt(winner, challenger) {
                    nodes[node] = winner;
                    winner = challenger;
                }
                node /= 2;
            }
            nodes[node] = winner;
        }
        Self { nodes }
    }

    /// The index of the smallest cursor.
    #[inline]
    pub(super) fn winner(&self) -> usize {
        self.nodes[0]
    }

    /// Restores the tree after the winner's cursor changed (advanced, refilled or finished).
    #[inline]
    pub(super) fn replay(&mut self, gt: impl Fn(usize, usize) -> bool) {
        let k = self.nodes.len();
        let mut winner = self.nodes[0];
        let mut node = (k + winner) / 2;
        while node != 0 {
            let challenger = self.nodes[node];
            if gt(winner, challenger) {
                self.nodes[node] = winner;
                winner = challenger;
            }
            node /= 2;
        }
        self.nodes[0] = winner;
    }

    /// The second smallest cursor, or `None` with a single cursor.
    ///
    /// The runner-up lost its last match against the winner, so it is the best of the losers
    /// stored on the winner's path.
    #[inline]
    pub(super) fn runner_up(&self, gt: impl Fn(usize, usize) -> bool) -> Option<usize> {
        let k = self.nodes.len();
        let mut node = (k + self.nodes[0]) / 2;
        let mut best: Option<usize> = None;
        while node != 0 {
            let loser = self.nodes[node];
            best = match best {
                Some(b) if !gt(b, loser) => Some(b),
                _ => Some(loser),
            };
            node /= 2;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::LoserTree;

    /// Repeatedly pops the winner of a tree over fixed lists and checks it yields a sorted
    /// sequence and the correct runner-up at every step.
    #[test]
    fn pops_in_order_with_runner_up() {
        for k in 1..=9usize {
            let lists: Vec<Vec<u32>> = (0..k)
                .map(|i| {
                    (0..(5 + i * 3))
                        .map(|j| ((j * 7 + i * 13) % 50) as u32)
                        .collect::<Vec<_>>()
                })
                .map(|mut v| {
                    v.sort();
                    v
                })
                .collect();
            let mut pos = vec![0usize; k];
            let head = |pos: &Vec<usize>, i: usize| lists[i].get(pos[i]).copied();
            let gt = |pos: &Vec<usize>, a: usize, b: usize| match (head(pos, a), head(pos, b)) {
                (None, _) => true,
                (_, None) => false,
                (Some(x), Some(y)) => (x, a) > (y, b),
            };
            let mut tree = LoserTree::new(k, |a, b| gt(&pos, a, b));
            let mut out = vec![];
            loop {
                let w = tree.winner();
                let Some(v) = head(&pos, w) else { break };
                // the runner-up must be the min of all other heads
                let expected = (0..k)
                    .filter(|&i| i != w)
                    .filter_map(|i| head(&pos, i).map(|h| (h, i)))
                    .min();
                let got = tree
                    .runner_up(|a, b| gt(&pos, a, b))
                    .and_then(|r| head(&pos, r).map(|h| (h, r)));
                assert_eq!(got, expected, "k={k}");
                out.push(v);
                pos[w] += 1;
                tree.replay(|a, b| gt(&pos, a, b));
            }
            let mut all: Vec<u32> = lists.concat();
            all.sort();
            assert_eq!(out, all, "k={k}");
        }
    }
}
