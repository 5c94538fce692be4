//! Generic control-flow-graph analyses: predecessors, reverse post-order and dominators.
//!
//! The analyses are written once, over the small [`Cfg`] trait, rather than over
//! [`Function`] directly: the machine IR of the code generator implements the same trait
//! and reuses them unchanged. A [`ControlFlowGraph`] snapshots the edges once (successors
//! *and* predecessors), and every later analysis reads that snapshot, so analyses never
//! depend on how a particular IR stores its terminators. Post-dominators (dominators of the
//! reversed graph with a virtual exit) and loop forests are meant to live next to these,
//! over the same snapshot.
//!
//! Every traversal is iterative with an explicit stack: the graphs come from user input
//! and may be chains of hundreds of thousands of blocks, which must not overflow the call
//! stack.
//!
//! Dominators are computed with the algorithm of Cooper, Harvey and Kennedy, "A Simple,
//! Fast Dominance Algorithm" (2001): iterate `idom(b) = ⋂ idom(preds(b))` over reverse
//! post-order until nothing changes, intersecting by walking up the tree with RPO numbers.
//! It handles irreducible graphs, and it converges in a few passes on the graphs compilers
//! see. Dominance queries are then answered in constant time from pre- and post-order
//! numbers of the dominator tree.

use crate::entities::Block;
use crate::function::Function;
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::{EntityRef, SecondaryMap};

/// A directed graph with an entry node: what the analyses of this module need to know of
/// an IR.
pub trait Cfg {
    /// The node type (a basic block).
    type Node: EntityRef + Copy + Eq + Hash + Debug;

    /// The entry node, or `None` for an empty graph.
    fn entry(&self) -> Option<Self::Node>;

    /// An upper bound of the node indices (`node.index() < num_nodes()` for every node),
    /// used to size side tables.
    fn num_nodes(&self) -> usize;

    /// Appends the successors of `node` to `out`, in the order the node's terminator
    /// names them. Duplicates are allowed; edges to nodes outside the graph must not be
    /// reported.
    fn successors(&self, node: Self::Node, out: &mut Vec<Self::Node>);

    /// The nodes of the graph, in layout order.
    fn nodes(&self) -> impl Iterator<Item = Self::Node> + '_;
}

impl Cfg for Function {
    type Node = Block;

    fn entry(&self) -> Option<Block> {
        self.entry_block()
    }

    fn num_nodes(&self) -> usize {
        self.dfg.num_blocks()
    }

    /// The destinations of the block's terminator that are blocks of the layout; edges to
    /// anything else (which the verifier reports) are left out so that analyses can run on
    /// unverified functions without panicking.
    fn successors(&self, block: Block, out: &mut Vec<Block>) {
        let Some(last) = self.layout.last_inst(block) else {
            return;
        };
        if !self.dfg.insts.is_valid(last) {
            return;
        }
        for call in self.dfg.insts[last].branch_destinations() {
            if self.dfg.block_is_valid(call.block) && self.layout.is_block_inserted(call.block) {
                out.push(call.block);
            }
        }
    }

    fn nodes(&self) -> impl Iterator<Item = Block> + '_ {
        self.layout.blocks().iter().copied()
    }
}

/// Successors and predecessors of every node, computed once.
///
/// Each list is free of duplicates (a `brif` whose two arms go to the same block makes a
/// single edge here) and in the order edges were first seen: successors in terminator
/// order, predecessors in layout order of their source.
#[derive(Clone, Debug)]
pub struct ControlFlowGraph<N: EntityRef> {
    entry: Option<N>,
    num_nodes: usize,
    nodes: Vec<N>,
    succs: SecondaryMap<N, Vec<N>>,
    preds: SecondaryMap<N, Vec<N>>,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> ControlFlowGraph<N> {
    /// Snapshots the edges of `graph`.
    pub fn compute<G: Cfg<Node = N> + ?Sized>(graph: &G) -> Self {
        let mut cfg = ControlFlowGraph {
            entry: graph.entry(),
            num_nodes: graph.num_nodes(),
            nodes: graph.nodes().collect(),
            succs: SecondaryMap::with_capacity(graph.num_nodes()),
            preds: SecondaryMap::with_capacity(graph.num_nodes()),
        };
        let mut out = Vec::new();
        for i in 0..cfg.nodes.len() {
            let n = cfg.nodes[i];
            out.clear();
            graph.successors(n, &mut out);
            for &s in &out {
                // Out-degrees are tiny (a br_table has the most), so a linear scan beats
                // a hash set here.
                if !cfg.succs[n].contains(&s) {
                    cfg.succs[n].push(s);
                    cfg.preds[s].push(n);
                }
            }
        }
        cfg
    }

    /// The entry node.
    pub fn entry(&self) -> Option<N> {
        self.entry
    }

    /// The nodes, in layout order.
    pub fn nodes(&self) -> &[N] {
        &self.nodes
    }

    /// The distinct successors of `n`.
    pub fn succs(&self, n: N) -> &[N] {
        &self.succs[n]
    }

    /// The distinct predecessors of `n`.
    pub fn preds(&self, n: N) -> &[N] {
        &self.preds[n]
    }

    /// An upper bound of the node indices.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// The nodes reachable from the entry, in reverse post-order of a depth-first search
    /// that visits successors in order. Every node comes before its successors, back
    /// edges excepted.
    pub fn reverse_post_order(&self) -> Vec<N> {
        let mut po = Vec::with_capacity(self.nodes.len());
        let Some(entry) = self.entry else {
            return po;
        };
        let mut visited: SecondaryMap<N, bool> = SecondaryMap::new();
        // Each frame is a node and the index of the next successor to visit.
        let mut stack: Vec<(N, usize)> = vec![(entry, 0)];
        visited[entry] = true;
        while let Some(top) = stack.last_mut() {
            let (n, i) = *top;
            if let Some(&s) = self.succs[n].get(i) {
                top.1 += 1;
                if !visited[s] {
                    visited[s] = true;
                    stack.push((s, 0));
                }
            } else {
                po.push(n);
                stack.pop();
            }
        }
        po.reverse();
        po
    }
}

/// Sentinel for "no node" in the index-based tables below.
const NONE: u32 = u32::MAX;

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
    /// Immediate dominator of each node of `rpo`, as an RPO index (`NONE` for the entry).
    idom: Vec<u32>,
    /// Children of each node in the dominator tree, as RPO indices, in RPO.
    children: Vec<Vec<u32>>,
    /// Pre-order and post-order numbers of each node in the dominator tree, by RPO index:
    /// `a` dominates `b` iff `pre[a] <= pre[b] && post[b] <= post[a]`.
    pre: Vec<u32>,
    post: Vec<u32>,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> DominatorTree<N> {
    /// Computes the dominator tree of `cfg`.
    pub fn compute(cfg: &ControlFlowGraph<N>) -> Self {
        let rpo = cfg.reverse_post_order();
        let mut rpo_number: SecondaryMap<N, u32> = SecondaryMap::with_default(NONE);
        for (i, &n) in rpo.iter().enumerate() {
            rpo_number[n] = i as u32;
        }
        // Predecessors as RPO indices, unreachable ones dropped: they cannot constrain
        // dominance of reachable nodes.
        let preds: Vec<Vec<u32>> = rpo
            .iter()
            .map(|&n| {
                cfg.preds(n)
                    .iter()
                    .map(|&p| rpo_number[p])
                    .filter(|&p| p != NONE)
                    .collect()
            })
            .collect();
        let idom = Self::iterate(&preds);
        let mut tree = DominatorTree {
            children: vec![Vec::new(); rpo.len()],
            pre: vec![0; rpo.len()],
            post: vec![0; rpo.len()],
            rpo,
            rpo_number,
            idom,
        };
        tree.number();
        tree
    }

    /// The Cooper–Harvey–Kennedy fixpoint over RPO indices; index 0 is the entry.
    fn iterate(preds: &[Vec<u32>]) -> Vec<u32> {
        let n = preds.len();
        let mut idom = vec![NONE; n];
        if n == 0 {
            return idom;
        }
        // The entry is its own dominator during the iteration; `NONE` afterwards.
        idom[0] = 0;
        let mut changed = true;
        while changed {
            changed = false;
            for b in 1..n {
                let mut new_idom = NONE;
                for &p in &preds[b] {
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

    /// Builds the child lists and numbers the tree in pre- and post-order, iteratively.
    fn number(&mut self) {
        for b in 1..self.rpo.len() {
            let parent = self.idom[b];
            self.children[parent as usize].push(b as u32);
        }
        if self.rpo.is_empty() {
            return;
        }
        let (mut pre, mut post) = (0u32, 0u32);
        let mut stack: Vec<(u32, usize)> = vec![(0, 0)];
        self.pre[0] = pre;
        pre += 1;
        while let Some(top) = stack.last_mut() {
            let (n, i) = *top;
            if let Some(&c) = self.children[n as usize].get(i) {
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
        match self.idom[i] {
            NONE => None,
            d => Some(self.rpo[d as usize]),
        }
    }

    /// The children of `n` in the dominator tree (the nodes it immediately dominates), in
    /// reverse post-order.
    pub fn children(&self, n: N) -> impl Iterator<Item = N> + '_ {
        let list: &[u32] = match self.rpo_number(n) {
            Some(i) => &self.children[i],
            None => &[],
        };
        list.iter().map(move |&c| self.rpo[c as usize])
    }

    /// Does `a` dominate `b`? Every reachable node dominates itself; an unreachable node
    /// neither dominates nor is dominated.
    pub fn dominates(&self, a: N, b: N) -> bool {
        match (self.rpo_number(a), self.rpo_number(b)) {
            (Some(a), Some(b)) => self.pre[a] <= self.pre[b] && self.post[b] <= self.post[a],
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
    use super::*;
    use cranelift_entity::entity_impl;

    #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
    struct N(u32);
    entity_impl!(N, "n");

    /// A hand-made graph: node `i` has successors `edges[i]`, entry is node 0.
    struct Graph {
        edges: Vec<Vec<u32>>,
    }

    impl Cfg for Graph {
        type Node = N;
        fn entry(&self) -> Option<N> {
            (!self.edges.is_empty()).then_some(N(0))
        }
        fn num_nodes(&self) -> usize {
            self.edges.len()
        }
        fn successors(&self, n: N, out: &mut Vec<N>) {
            out.extend(self.edges[n.0 as usize].iter().map(|&s| N(s)));
        }
        fn nodes(&self) -> impl Iterator<Item = N> + '_ {
            (0..self.edges.len() as u32).map(N)
        }
    }

    fn tree(edges: &[&[u32]]) -> (ControlFlowGraph<N>, DominatorTree<N>) {
        let g = Graph {
            edges: edges.iter().map(|e| e.to_vec()).collect(),
        };
        let cfg = ControlFlowGraph::compute(&g);
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
        let edges: Vec<Vec<u32>> = (0..LEN)
            .map(|i| if i + 1 < LEN { vec![i + 1] } else { vec![] })
            .collect();
        let cfg = ControlFlowGraph::compute(&Graph { edges });
        let dt = DominatorTree::compute(&cfg);
        assert_eq!(dt.rpo().len(), LEN as usize);
        assert_eq!(dt.idom(N(LEN - 1)), Some(N(LEN - 2)));
        assert!(dt.dominates(N(0), N(LEN - 1)));
        assert!(!dt.dominates(N(LEN - 1), N(0)));
    }

    /// Brute force: `a` dominates `b` iff `b` is unreachable from the entry once `a` is
    /// removed (for `a != b`).
    fn dominates_brute(edges: &[Vec<u32>], a: u32, b: u32) -> bool {
        let reach = |skip: Option<u32>| {
            let mut seen = vec![false; edges.len()];
            let mut stack = vec![0u32];
            if skip == Some(0) {
                return seen;
            }
            seen[0] = true;
            while let Some(n) = stack.pop() {
                for &s in &edges[n as usize] {
                    if Some(s) != skip && !seen[s as usize] {
                        seen[s as usize] = true;
                        stack.push(s);
                    }
                }
            }
            seen
        };
        let all = reach(None);
        if !all[a as usize] || !all[b as usize] {
            return false;
        }
        a == b || !reach(Some(a))[b as usize]
    }

    #[test]
    fn random_graphs_match_brute_force() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let n = rng.random_range(1..12u32);
            let edges: Vec<Vec<u32>> = (0..n)
                .map(|_| {
                    (0..rng.random_range(0..3))
                        .map(|_| rng.random_range(0..n))
                        .collect()
                })
                .collect();
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
