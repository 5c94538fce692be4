//! Dominator trees, computed with the algorithm of Cooper, Harvey and Kennedy, "A Simple,
//! Fast Dominance Algorithm" (2001).
//!
//! Node `a` dominates `b` when every path from the entry to `b` goes through `a`. The
//! algorithm numbers the reachable nodes in reverse post-order (RPO) and iterates
//! `idom(b) = ⋂ idom(preds(b))` over that order until nothing changes, where `⋂` of two
//! nodes is their nearest common ancestor in the tree built so far, found by walking up
//! from whichever of the two "fingers" has the larger RPO number:
//!
//! ```text
//!         0            RPO: 0 2 1 3
//!        / \           pass 1: idom(2) = 0, idom(1) = 0,
//!       1   2                  idom(3) = intersect(1, 2): the fingers climb to 0
//!        \ /           pass 2: nothing changes; the tree is 0 -> {1, 2, 3}
//!         3
//! ```
//!
//! The intersection works on irreducible graphs too (a predecessor not yet processed in a
//! pass is skipped), and on the graphs compilers see the loop converges in two or three
//! passes. Dominance queries are then answered in constant time from pre- and post-order
//! numbers of the dominator tree (`a` dominates `b` iff `b`'s interval nests in `a`'s).
//!
//! The fixpoint and the numbering work on dense indices and are shared, through
//! `DomCore`, with the post-dominator tree, which runs them on the reversed graph.

use super::{ControlFlowGraph, NONE};
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::{EntityRef, SecondaryMap};

/// The predecessor lists of a graph over dense indices, all in one array: the
/// predecessors of index `i` are `list[start[i]..start[i + 1]]`. One allocation for the
/// whole graph rather than one per node, which was most of the cost of a tree on the long
/// chains of small blocks kernels are made of.
#[derive(Clone, Debug, Default)]
pub(super) struct Preds {
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Preds {
    /// An empty graph, with room for `nodes` nodes and `edges` edges.
    pub(super) fn with_capacity(nodes: usize, edges: usize) -> Self {
        let mut start = Vec::with_capacity(nodes + 1);
        start.push(0);
        Preds {
            start,
            list: Vec::with_capacity(edges),
        }
    }

    /// Adds a predecessor to the node being built (the one after the last finished).
    pub(super) fn push(&mut self, p: u32) {
        self.list.push(p);
    }

    /// Finishes the node being built: the next `push` adds to the node after it.
    pub(super) fn finish_node(&mut self) {
        self.start.push(self.list.len() as u32);
    }

    /// The number of finished nodes.
    fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// The predecessors of node `i`.
    fn of(&self, i: usize) -> &[u32] {
        &self.list[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

/// A dominator tree over dense node indices `0..n`, where index 0 is the root and the
/// indices are a reverse post-order of the graph from the root.
#[derive(Clone, Debug, Default)]
pub(super) struct DomCore {
    /// Immediate dominator of each index (`NONE` for the root).
    idom: Vec<u32>,
    /// Children of each index in the tree, in increasing index order:
    /// `children[child_start[i]..child_start[i + 1]]` (one array for the whole tree).
    child_start: Vec<u32>,
    children: Vec<u32>,
    /// Pre-order and post-order numbers of each index in the tree:
    /// `a` dominates `b` iff `pre[a] <= pre[b] && post[b] <= post[a]`.
    pre: Vec<u32>,
    post: Vec<u32>,
}

impl DomCore {
    /// Computes the tree of the graph whose index `i` has predecessors `preds.of(i)` (every
    /// index must be reachable from 0, and the indices must be a reverse post-order).
    pub(super) fn compute(preds: &Preds) -> Self {
        let n = preds.len();
        let mut core = DomCore {
            idom: Self::iterate(preds),
            child_start: Vec::new(),
            children: Vec::new(),
            pre: vec![0; n],
            post: vec![0; n],
        };
        core.number();
        core
    }

    /// The Cooper–Harvey–Kennedy fixpoint.
    fn iterate(preds: &Preds) -> Vec<u32> {
        let n = preds.len();
        let mut idom = vec![NONE; n];
        if n == 0 {
            return idom;
        }
        // The root is its own dominator during the iteration; `NONE` afterwards.
        idom[0] = 0;
        let mut changed = true;
        while changed {
            changed = false;
            for b in 1..n {
                let mut new_idom = NONE;
                for &p in preds.of(b) {
                    if idom[p as usize] == NONE {
                        continue; // not processed yet in this pass
                    }
                    new_idom = if new_idom == NONE {
                        p
                    } else {
                        Self::intersect(&idom, p, new_idom)
                    };
                }
                if new_idom != idom[b] {
                    idom[b] = new_idom;
                    changed = true;
                }
            }
        }
        idom[0] = NONE;
        idom
    }

    /// The nearest common dominator of `a` and `b`, both processed: climbs from the one
    /// further down in RPO until the fingers meet.
    fn intersect(idom: &[u32], mut a: u32, mut b: u32) -> u32 {
        while a != b {
            while a > b {
                a = idom[a as usize];
            }
            while b > a {
                b = idom[b as usize];
            }
        }
        a
    }

    /// Builds the child lists (a counting sort by parent, so each list is in increasing
    /// index order) and numbers the tree in pre- and post-order, iteratively.
    fn number(&mut self) {
        let n = self.idom.len();
        if n == 0 {
            return;
        }
        let mut start = vec![0u32; n + 1];
        for b in 1..n {
            start[self.idom[b] as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut next: Vec<u32> = start[..n].to_vec();
        let mut children = vec![0u32; n.saturating_sub(1)];
        for b in 1..n {
            let parent = self.idom[b] as usize;
            children[next[parent] as usize] = b as u32;
            next[parent] += 1;
        }
        self.child_start = start;
        self.children = children;
        let (mut pre, mut post) = (1u32, 0u32);
        let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
        self.pre[0] = 0;
        while let Some(top) = stack.last_mut() {
            let (n, i) = *top;
            if let Some(&c) = self.children(n as usize).get(i) {
                top.1 += 1;
                self.pre[c as usize] = pre;
                pre += 1;
                stack.push((c, 0));
            } else {
                self.post[n as usize] = post;
                post += 1;
                stack.pop();
            }
        }
    }

    /// The immediate dominator of index `i`, `None` for the root.
    pub(super) fn idom(&self, i: usize) -> Option<usize> {
        match self.idom[i] {
            NONE => None,
            d => Some(d as usize),
        }
    }

    /// The children of index `i`, in increasing index order.
    pub(super) fn children(&self, i: usize) -> &[u32] {
        match (self.child_start.get(i), self.child_start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.children[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Does index `a` dominate index `b`?
    pub(super) fn dominates(&self, a: usize, b: usize) -> bool {
        self.pre[a] <= self.pre[b] && self.post[b] <= self.post[a]
    }
}

/// The dominator tree of the nodes reachable from the entry.
///
/// Node `a` dominates `b` when every path from the entry to `b` goes through `a`; every
/// node dominates itself. Unreachable nodes have no immediate dominator, dominate nothing
/// and are dominated by nothing.
#[derive(Clone, Debug)]
pub struct DominatorTree<N: EntityRef> {
    /// Reachable nodes in reverse post-order.
    rpo: Vec<N>,
    /// Position of each node in `rpo`, or `NONE` when unreachable.
    rpo_number: SecondaryMap<N, u32>,
    /// The tree over RPO indices.
    core: DomCore,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> DominatorTree<N> {
    /// Computes the dominator tree of `cfg`.
    pub fn compute(cfg: &ControlFlowGraph<N>) -> Self {
        let rpo = cfg.reverse_post_order();
        let mut rpo_number: SecondaryMap<N, u32> = SecondaryMap::with_default(NONE);
        // Sized once: grown node by node, the map costs a call per node.
        rpo_number.resize(cfg.num_nodes());
        for (i, &n) in rpo.iter().enumerate() {
            rpo_number[n] = i as u32;
        }
        // Predecessors as RPO indices, unreachable ones dropped: they cannot constrain
        // dominance of reachable nodes.
        let mut preds = Preds::with_capacity(rpo.len(), rpo.len() * 2);
        for &n in &rpo {
            for &p in cfg.preds(n) {
                if rpo_number[p] != NONE {
                    preds.push(rpo_number[p]);
                }
            }
            preds.finish_node();
        }
        DominatorTree {
            core: DomCore::compute(&preds),
            rpo,
            rpo_number,
        }
    }

    /// The reachable nodes in reverse post-order (the entry first).
    pub fn rpo(&self) -> &[N] {
        &self.rpo
    }

    /// Is `n` reachable from the entry?
    pub fn is_reachable(&self, n: N) -> bool {
        self.rpo_number[n] != NONE
    }

    /// The position of `n` in reverse post-order, if it is reachable.
    pub fn rpo_number(&self, n: N) -> Option<usize> {
        match self.rpo_number[n] {
            NONE => None,
            i => Some(i as usize),
        }
    }

    /// The immediate dominator of `n`: `None` for the entry and unreachable nodes.
    pub fn idom(&self, n: N) -> Option<N> {
        let i = self.rpo_number(n)?;
        self.core.idom(i).map(|d| self.rpo[d])
    }

    /// The children of `n` in the dominator tree (the nodes it immediately dominates), in
    /// reverse post-order.
    pub fn children(&self, n: N) -> impl Iterator<Item = N> + '_ {
        let list: &[u32] = match self.rpo_number(n) {
            Some(i) => self.core.children(i),
            None => &[],
        };
        list.iter().map(move |&c| self.rpo[c as usize])
    }

    /// Does `a` dominate `b`? Every reachable node dominates itself; an unreachable node
    /// neither dominates nor is dominated.
    pub fn dominates(&self, a: N, b: N) -> bool {
        match (self.rpo_number(a), self.rpo_number(b)) {
            (Some(a), Some(b)) => self.core.dominates(a, b),
            _ => false,
        }
    }

    /// Does `a` strictly dominate `b` (dominate it and differ from it)?
    pub fn strictly_dominates(&self, a: N, b: N) -> bool {
        a != b && self.dominates(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::{chain, graph, random_graphs, reach, Graph, N};
    use super::*;

    fn tree(edges: &[&[u32]]) -> (ControlFlowGraph<N>, DominatorTree<N>) {
        let cfg = ControlFlowGraph::compute(&graph(edges));
        let dt = DominatorTree::compute(&cfg);
        (cfg, dt)
    }

    fn idoms(dt: &DominatorTree<N>, n: usize) -> Vec<Option<u32>> {
        (0..n as u32).map(|i| dt.idom(N(i)).map(|d| d.0)).collect()
    }

    #[test]
    fn diamond() {
        // 0 -> 1, 2; 1 -> 3; 2 -> 3
        let (cfg, dt) = tree(&[&[1, 2], &[3], &[3], &[]]);
        assert_eq!(cfg.preds(N(3)), &[N(1), N(2)]);
        assert_eq!(cfg.succs(N(0)), &[N(1), N(2)]);
        assert_eq!(dt.rpo(), &[N(0), N(2), N(1), N(3)]);
        assert_eq!(idoms(&dt, 4), vec![None, Some(0), Some(0), Some(0)]);
        assert!(dt.dominates(N(0), N(3)));
        assert!(!dt.dominates(N(1), N(3)));
        assert!(dt.dominates(N(3), N(3)));
        assert!(!dt.strictly_dominates(N(3), N(3)));
        let mut kids: Vec<_> = dt.children(N(0)).collect();
        kids.sort();
        assert_eq!(kids, vec![N(1), N(2), N(3)]);
    }

    #[test]
    fn duplicate_edges_collapse() {
        let (cfg, dt) = tree(&[&[1, 1], &[]]);
        assert_eq!(cfg.succs(N(0)), &[N(1)]);
        assert_eq!(cfg.preds(N(1)), &[N(0)]);
        assert_eq!(dt.idom(N(1)), Some(N(0)));
    }

    #[test]
    fn natural_loop() {
        // 0 -> 1; 1 -> 2; 2 -> 1, 3
        let (_, dt) = tree(&[&[1], &[2], &[1, 3], &[]]);
        assert_eq!(idoms(&dt, 4), vec![None, Some(0), Some(1), Some(2)]);
        assert!(dt.dominates(N(1), N(3)));
    }

    #[test]
    fn irreducible() {
        // 0 -> 1, 2; 1 <-> 2; 1 -> 3; 2 -> 3: the loop {1, 2} has two entries, so neither
        // dominates the other.
        let (_, dt) = tree(&[&[1, 2], &[2, 3], &[1, 3], &[]]);
        assert_eq!(idoms(&dt, 4), vec![None, Some(0), Some(0), Some(0)]);
        assert!(!dt.dominates(N(1), N(2)));
        assert!(!dt.dominates(N(2), N(1)));
    }

    #[test]
    fn irreducible_needs_several_passes() {
        // The classic example of Cooper et al. (figure 4), renumbered: 0 -> 1, 2;
        // 1 -> 3; 2 -> 4, 5; 3 -> 4; 4 -> 3, 5; 5 -> 4.
        let (_, dt) = tree(&[&[1, 2], &[3], &[4, 5], &[4], &[3, 5], &[4]]);
        assert_eq!(
            idoms(&dt, 6),
            vec![None, Some(0), Some(0), Some(0), Some(0), Some(0)]
        );
    }

    #[test]
    fn unreachable_nodes() {
        // 2 is unreachable and branches into the reachable part; 3 is isolated.
        let (cfg, dt) = tree(&[&[1], &[], &[1], &[]]);
        assert_eq!(cfg.preds(N(1)), &[N(0), N(2)]);
        assert_eq!(dt.rpo(), &[N(0), N(1)]);
        assert!(!dt.is_reachable(N(2)));
        assert!(!dt.is_reachable(N(3)));
        assert_eq!(dt.idom(N(1)), Some(N(0)));
        assert_eq!(dt.idom(N(2)), None);
        assert!(!dt.dominates(N(2), N(2)));
        assert!(!dt.dominates(N(0), N(2)));
        assert!(!dt.dominates(N(2), N(1)));
        assert_eq!(dt.rpo_number(N(3)), None);
    }

    #[test]
    fn empty_graph() {
        let (cfg, dt) = tree(&[]);
        assert_eq!(cfg.entry(), None);
        assert!(dt.rpo().is_empty());
        assert!(!dt.is_reachable(N(0)));
    }

    #[test]
    fn self_loop_entry() {
        let (_, dt) = tree(&[&[0, 1], &[]]);
        assert_eq!(dt.idom(N(0)), None);
        assert_eq!(dt.idom(N(1)), Some(N(0)));
    }

    #[test]
    fn long_chain_does_not_overflow() {
        const LEN: u32 = 200_000;
        let cfg = ControlFlowGraph::compute(&chain(LEN));
        let dt = DominatorTree::compute(&cfg);
        assert_eq!(dt.rpo().len(), LEN as usize);
        assert_eq!(dt.idom(N(LEN - 1)), Some(N(LEN - 2)));
        assert!(dt.dominates(N(0), N(LEN - 1)));
        assert!(!dt.dominates(N(LEN - 1), N(0)));
    }

    /// Brute force: `a` dominates `b` iff `b` is unreachable from the entry once `a` is
    /// removed (for `a != b`).
    fn dominates_brute(edges: &[Vec<u32>], a: u32, b: u32) -> bool {
        let all = reach(edges, 0, &|_| true);
        if !all[a as usize] || !all[b as usize] {
            return false;
        }
        a == b || !reach(edges, 0, &|n| n != a)[b as usize]
    }

    #[test]
    fn random_graphs_match_brute_force() {
        for edges in random_graphs(7, 300, 12) {
            let n = edges.len() as u32;
            let cfg = ControlFlowGraph::compute(&Graph {
                edges: edges.clone(),
            });
            let dt = DominatorTree::compute(&cfg);
            for a in 0..n {
                for b in 0..n {
                    assert_eq!(
                        dt.dominates(N(a), N(b)),
                        dominates_brute(&edges, a, b),
                        "{a} dom {b} in {edges:?}"
                    );
                }
                // The immediate dominator strictly dominates and is dominated by every
                // other strict dominator.
                if let Some(d) = dt.idom(N(a)) {
                    assert!(dt.strictly_dominates(d, N(a)));
                    for c in 0..n {
                        if dt.strictly_dominates(N(c), N(a)) {
                            assert!(dt.dominates(N(c), d));
                        }
                    }
                }
            }
        }
    }
}
