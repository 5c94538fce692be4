//! Post-dominator trees, with a virtual exit, and the reconvergence points of branches.
//!
//! Node `a` post-dominates `b` when every path from `b` to the exit goes through `a`.
//! Divergent threads of a warp that split at a branch can run together again at the
//! branch's immediate post-dominator, its *reconvergence point*, so this analysis is what
//! the SIMT passes ask for it.
//!
//! A kernel has no single exit: it may `return` from several blocks, and it may contain
//! loops that never reach a `return` (`while (true) { ... }`, or a loop that only leaves
//! through a trap). Post-dominance is therefore defined on the graph extended with a
//! *virtual exit* `X`, reached from:
//!
//! - every exit node (a node without successors), and
//! - for each region of nodes that cannot reach any exit, one *representative* node. As
//!   LLVM does for infinite loops, only the regions that cannot even leave to another
//!   such region need one: they are the sink strongly connected components of the nodes
//!   that cannot reach an exit, and every node that cannot reach an exit reaches one of
//!   them. The representative is the member that comes **last in reverse post-order**
//!   from the entry: that is the bottom of the region (in a `while (true)` loop, its
//!   latch), so a branch inside the loop still reconverges where its arms join, not only
//!   at `X`. Had the loop header been chosen, every branch of the loop body would seem to
//!   reconverge only at `X`.
//!
//! The tree is then the dominator tree of the reversed extended graph rooted at `X`,
//! computed with the same Cooper–Harvey–Kennedy fixpoint as [`super::DominatorTree`]
//! (shared through `domtree::DomCore`):
//!
//! ```text
//!            0            0: brif -> 1, 2      3, 4: return
//!           / \           1: brif -> 3, 4      2: jump 5 ; 5: jump 2  (never exits)
//!          1   2 <-+
//!         / \  |   |      RPO from 0: 0 2 5 1 4 3;  {2, 5} cannot reach an exit and
//!        3   4 5 --+      5 is its last node in RPO, so X has the predecessors 3, 4, 5
//!
//!   ipdom: 2 -> 5;  0, 1, 3, 4, 5 -> X (None: 1's arms only meet at the virtual exit)
//! ```
//!
//! Only the nodes reachable from the entry take part (unreachable code has no
//! reconvergence point and is left out, as in [`super::DominatorTree`]); the virtual exit
//! itself never appears in the API: an immediate post-dominator of `None` means `X`.
//! Every traversal (the backward reachability, Tarjan's algorithm for the regions without
//! exit, the reversed depth-first search) uses an explicit stack.

use super::domtree::{DomCore, Preds};
use super::{ControlFlowGraph, NONE};
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::{EntityRef, SecondaryMap};

/// The post-dominator tree of the nodes reachable from the entry, rooted at a virtual
/// exit (see the [module documentation](self)).
///
/// Every reachable node post-dominates itself; unreachable nodes neither post-dominate
/// nor are post-dominated, and have no immediate post-dominator.
#[derive(Clone, Debug)]
pub struct PostDominatorTree<N: EntityRef> {
    /// The node of each tree index but 0 (the virtual exit): `order[i - 1]` has index `i`.
    /// The indices are a reverse post-order of the reversed graph from the virtual exit.
    order: Vec<N>,
    /// The tree index of each node, or `NONE` when unreachable from the entry.
    index: SecondaryMap<N, u32>,
    /// The nodes without successors, in reverse post-order from the entry.
    exits: Vec<N>,
    /// The representatives of the regions that cannot reach an exit, in reverse
    /// post-order from the entry.
    representatives: Vec<N>,
    /// The tree over the indices.
    core: DomCore,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> PostDominatorTree<N> {
    /// Computes the post-dominator tree of `cfg`.
    pub fn compute(cfg: &ControlFlowGraph<N>) -> Self {
        let rpo = cfg.reverse_post_order();
        let mut rpo_number: SecondaryMap<N, u32> = SecondaryMap::with_default(NONE);
        // Sized once (as `index` below): grown node by node, a map costs a call per node.
        rpo_number.resize(cfg.num_nodes());
        for (i, &n) in rpo.iter().enumerate() {
            rpo_number[n] = i as u32;
        }
        // Every successor of a reachable node is reachable, so the successor lists of
        // `rpo` need no filtering below; predecessor lists do.
        let exits: Vec<N> = rpo
            .iter()
            .copied()
            .filter(|&n| cfg.succs(n).is_empty())
            .collect();
        let reaches_exit = Self::reaching(cfg, &rpo_number, rpo.len(), &exits);
        let representatives = Self::find_representatives(cfg, &rpo, &rpo_number, &reaches_exit);

        // The roots of the reversed graph: exits and representatives, merged in RPO.
        let mut roots: Vec<N> = exits.iter().chain(&representatives).copied().collect();
        roots.sort_by_key(|&n| rpo_number[n]);

        let order = Self::reversed_rpo(cfg, &rpo_number, rpo.len(), &roots);
        let mut index: SecondaryMap<N, u32> = SecondaryMap::with_default(NONE);
        index.resize(cfg.num_nodes());
        for (i, &n) in order.iter().enumerate() {
            index[n] = i as u32 + 1;
        }
        // Predecessors in the reversed graph are successors in the original one, plus
        // the virtual exit (index 0) for the roots.
        let mut is_root = vec![false; rpo.len()];
        for &r in &roots {
            is_root[rpo_number[r] as usize] = true;
        }
        let mut preds = Preds::with_capacity(order.len() + 1, order.len() * 2 + roots.len());
        preds.finish_node();
        for &n in &order {
            for &s in cfg.succs(n) {
                debug_assert!(index[s] != NONE);
                preds.push(index[s]);
            }
            if is_root[rpo_number[n] as usize] {
                preds.push(0);
            }
            preds.finish_node();
        }
        PostDominatorTree {
            core: DomCore::compute(&preds),
            order,
            index,
            exits,
            representatives,
        }
    }

    /// Marks (by RPO number) the reachable nodes from which one of `targets` can be
    /// reached, by a backward search.
    fn reaching(
        cfg: &ControlFlowGraph<N>,
        rpo_number: &SecondaryMap<N, u32>,
        len: usize,
        targets: &[N],
    ) -> Vec<bool> {
        let mut marked = vec![false; len];
        let mut stack: Vec<N> = Vec::new();
        for &t in targets {
            marked[rpo_number[t] as usize] = true;
            stack.push(t);
        }
        while let Some(n) = stack.pop() {
            for &p in cfg.preds(n) {
                let i = rpo_number[p];
                if i != NONE && !marked[i as usize] {
                    marked[i as usize] = true;
                    stack.push(p);
                }
            }
        }
        marked
    }

    /// The representatives of the sink strongly connected components of the reachable
    /// nodes that cannot reach an exit: the last member of each in RPO. Tarjan's
    /// algorithm, with an explicit stack of (node, next successor) frames.
    fn find_representatives(
        cfg: &ControlFlowGraph<N>,
        rpo: &[N],
        rpo_number: &SecondaryMap<N, u32>,
        reaches_exit: &[bool],
    ) -> Vec<N> {
        let len = rpo.len();
        // The usual case, where every node reaches an exit, needs none of the tables.
        if reaches_exit.iter().all(|&r| r) {
            return Vec::new();
        }
        let mut order = vec![NONE; len]; // Tarjan's discovery index
        let mut low = vec![NONE; len];
        let mut on_stack = vec![false; len];
        let mut component = vec![NONE; len];
        let mut components = 0u32;
        let mut counter = 0u32;
        let mut scc_stack: Vec<u32> = Vec::new();
        let mut frames: Vec<(u32, usize)> = Vec::new();
        for start in 0..len {
            if reaches_exit[start] || order[start] != NONE {
                continue;
            }
            order[start] = counter;
            low[start] = counter;
            counter += 1;
            scc_stack.push(start as u32);
            on_stack[start] = true;
            frames.push((start as u32, 0));
            while let Some(top) = frames.last_mut() {
                let (v, i) = (top.0 as usize, top.1);
                // Successors of a node that cannot reach an exit cannot either.
                if let Some(&s) = cfg.succs(rpo[v]).get(i) {
                    top.1 += 1;
                    let w = rpo_number[s] as usize;
                    if order[w] == NONE {
                        order[w] = counter;
                        low[w] = counter;
                        counter += 1;
                        scc_stack.push(w as u32);
                        on_stack[w] = true;
                        frames.push((w as u32, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(order[w]);
                    }
                } else {
                    frames.pop();
                    if let Some(&(u, _)) = frames.last() {
                        low[u as usize] = low[u as usize].min(low[v]);
                    }
                    if low[v] == order[v] {
                        while let Some(w) = scc_stack.pop() {
                            on_stack[w as usize] = false;
                            component[w as usize] = components;
                            if w as usize == v {
                                break;
                            }
                        }
                        components += 1;
                    }
                }
            }
        }
        // A component is a sink when no edge leaves it; its representative is its
        // member with the largest RPO number.
        let mut is_sink = vec![true; components as usize];
        let mut last = vec![NONE; components as usize];
        for v in 0..len {
            let c = component[v];
            if c == NONE {
                continue;
            }
            last[c as usize] = v as u32; // `v` increases, so this ends with the largest
            if cfg
                .succs(rpo[v])
                .iter()
                .any(|&s| component[rpo_number[s] as usize] != c)
            {
                is_sink[c as usize] = false;
            }
        }
        let mut reps: Vec<u32> = (0..components as usize)
            .filter(|&c| is_sink[c])
            .map(|c| last[c])
            .collect();
        reps.sort_unstable();
        reps.into_iter().map(|v| rpo[v as usize]).collect()
    }

    /// The reachable nodes in reverse post-order of a depth-first search of the reversed
    /// graph from the virtual exit (which is left out), visiting `roots` in order and
    /// then predecessors in order.
    fn reversed_rpo(
        cfg: &ControlFlowGraph<N>,
        rpo_number: &SecondaryMap<N, u32>,
        len: usize,
        roots: &[N],
    ) -> Vec<N> {
        let mut visited = vec![false; len];
        let mut po: Vec<N> = Vec::with_capacity(len);
        let mut frames: Vec<(N, usize)> = Vec::new();
        for &root in roots {
            if visited[rpo_number[root] as usize] {
                continue;
            }
            visited[rpo_number[root] as usize] = true;
            frames.push((root, 0));
            while let Some(top) = frames.last_mut() {
                let (n, i) = *top;
                if let Some(&p) = cfg.preds(n).get(i) {
                    top.1 += 1;
                    let j = rpo_number[p];
                    if j != NONE && !visited[j as usize] {
                        visited[j as usize] = true;
                        frames.push((p, 0));
                    }
                } else {
                    po.push(n);
                    frames.pop();
                }
            }
        }
        // The virtual exit would finish last, after every root: reversing the post-order
        // of the forest of roots gives its reverse post-order without it.
        po.reverse();
        po
    }

    /// Is `n` reachable from the entry (and so part of the tree)?
    pub fn is_reachable(&self, n: N) -> bool {
        self.index[n] != NONE
    }

    /// The tree index of `n`, if reachable.
    fn index_of(&self, n: N) -> Option<usize> {
        match self.index[n] {
            NONE => None,
            i => Some(i as usize),
        }
    }

    /// The immediate post-dominator of `n`: `None` when it is the virtual exit, or when
    /// `n` is unreachable.
    pub fn ipdom(&self, n: N) -> Option<N> {
        let i = self.index_of(n)?;
        match self.core.idom(i)? {
            0 => None,
            d => Some(self.order[d - 1]),
        }
    }

    /// The nodes `n` immediately post-dominates, in the tree's order.
    pub fn children(&self, n: N) -> impl Iterator<Item = N> + '_ {
        let list: &[u32] = match self.index_of(n) {
            Some(i) => self.core.children(i),
            None => &[],
        };
        list.iter().map(move |&c| self.order[c as usize - 1])
    }

    /// Does `a` post-dominate `b`? Every reachable node post-dominates itself.
    pub fn post_dominates(&self, a: N, b: N) -> bool {
        match (self.index_of(a), self.index_of(b)) {
            (Some(a), Some(b)) => self.core.dominates(a, b),
            _ => false,
        }
    }

    /// Does `a` strictly post-dominate `b` (post-dominate it and differ from it)?
    pub fn strictly_post_dominates(&self, a: N, b: N) -> bool {
        a != b && self.post_dominates(a, b)
    }

    /// The point where the threads that diverge at the branch ending `branch` all meet
    /// again: its immediate post-dominator. `None` means they meet only at the virtual
    /// exit (for instance when each arm returns on its own), or that `branch` is
    /// unreachable.
    pub fn reconvergence_point(&self, branch: N) -> Option<N> {
        self.ipdom(branch)
    }

    /// The reachable nodes without successors (each an edge to the virtual exit), in
    /// reverse post-order from the entry.
    pub fn exits(&self) -> &[N] {
        &self.exits
    }

    /// The representatives of the regions that cannot reach an exit (each given an edge
    /// to the virtual exit), in reverse post-order from the entry.
    pub fn representatives(&self) -> &[N] {
        &self.representatives
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::{chain, graph, random_graphs, reach, reach_matrix, Graph, N};
    use super::*;

    fn tree(edges: &[&[u32]]) -> PostDominatorTree<N> {
        PostDominatorTree::compute(&ControlFlowGraph::compute(&graph(edges)))
    }

    fn ipdoms(pdt: &PostDominatorTree<N>, n: usize) -> Vec<Option<u32>> {
        (0..n as u32)
            .map(|i| pdt.ipdom(N(i)).map(|d| d.0))
            .collect()
    }

    #[test]
    fn diamond() {
        // 0 -> 1, 2; 1 -> 3; 2 -> 3
        let pdt = tree(&[&[1, 2], &[3], &[3], &[]]);
        assert_eq!(ipdoms(&pdt, 4), vec![Some(3), Some(3), Some(3), None]);
        assert_eq!(pdt.reconvergence_point(N(0)), Some(N(3)));
        assert!(pdt.post_dominates(N(3), N(0)));
        assert!(!pdt.post_dominates(N(1), N(0)));
        assert!(pdt.post_dominates(N(1), N(1)));
        assert!(!pdt.strictly_post_dominates(N(1), N(1)));
        assert_eq!(pdt.exits(), &[N(3)]);
        assert!(pdt.representatives().is_empty());
        let mut kids: Vec<_> = pdt.children(N(3)).collect();
        kids.sort();
        assert_eq!(kids, vec![N(0), N(1), N(2)]);
    }

    #[test]
    fn multiple_returns() {
        // 0 -> 1, 2; 1 returns; 2 -> 3, 4; 3 -> 4; 4 returns.
        let pdt = tree(&[&[1, 2], &[], &[3, 4], &[4], &[]]);
        assert_eq!(ipdoms(&pdt, 5), vec![None, None, Some(4), Some(4), None]);
        assert_eq!(pdt.reconvergence_point(N(0)), None);
        assert_eq!(pdt.reconvergence_point(N(2)), Some(N(4)));
        assert_eq!(pdt.exits(), &[N(4), N(1)]);
    }

    #[test]
    fn loop_with_two_exits() {
        // 0 -> 1; 1 -> 2, 4; 2 -> 3, 5; 3 -> 1; 4 returns; 5 returns.
        let pdt = tree(&[&[1], &[2, 4], &[3, 5], &[1], &[], &[]]);
        assert_eq!(
            ipdoms(&pdt, 6),
            vec![Some(1), None, None, Some(1), None, None]
        );
    }

    #[test]
    fn loop_exit_reconverges_after_the_loop() {
        // 0 -> 1; 1 -> 2, 3; 2 -> 1; 3 returns: a branch inside a loop body.
        let pdt = tree(&[&[1], &[2, 3], &[1], &[]]);
        assert_eq!(ipdoms(&pdt, 4), vec![Some(1), Some(3), Some(1), None]);
        assert!(pdt.post_dominates(N(3), N(2)));
    }

    #[test]
    fn infinite_loop_without_exit() {
        // The example of the module documentation.
        let pdt = tree(&[&[1, 2], &[3, 4], &[5], &[], &[], &[2]]);
        assert_eq!(pdt.exits(), &[N(4), N(3)]);
        assert_eq!(pdt.representatives(), &[N(5)]);
        assert_eq!(ipdoms(&pdt, 6), vec![None, None, Some(5), None, None, None]);
        assert_eq!(pdt.reconvergence_point(N(1)), None);
    }

    #[test]
    fn branch_inside_an_infinite_loop_reconverges_at_its_join() {
        // 0 -> 1; 1 -> 2, 3; 2 -> 4; 3 -> 4; 4 -> 1: no exit at all.
        let pdt = tree(&[&[1], &[2, 3], &[4], &[4], &[1]]);
        assert!(pdt.exits().is_empty());
        assert_eq!(pdt.representatives(), &[N(4)]);
        assert_eq!(pdt.reconvergence_point(N(1)), Some(N(4)));
        assert_eq!(
            ipdoms(&pdt, 5),
            vec![Some(1), Some(4), Some(4), Some(4), None]
        );
    }

    #[test]
    fn self_loop_forever() {
        // 0 -> 1, 2; 1 -> 1; 2 returns.
        let pdt = tree(&[&[1, 2], &[1], &[]]);
        assert_eq!(pdt.representatives(), &[N(1)]);
        assert_eq!(ipdoms(&pdt, 3), vec![None, None, None]);
    }

    #[test]
    fn only_sink_regions_get_representatives() {
        // {1, 2} loops and may fall into {3, 4}, which loops forever: only the latter is
        // a sink region. 0 -> 1; 1 -> 2; 2 -> 1, 3; 3 -> 4; 4 -> 3.
        let pdt = tree(&[&[1], &[2], &[1, 3], &[4], &[3]]);
        assert_eq!(pdt.representatives(), &[N(4)]);
        assert_eq!(
            ipdoms(&pdt, 5),
            vec![Some(1), Some(2), Some(3), Some(4), None]
        );
    }

    #[test]
    fn unreachable_nodes() {
        // 2 is unreachable and branches into the reachable part.
        let pdt = tree(&[&[1], &[], &[1]]);
        assert!(!pdt.is_reachable(N(2)));
        assert_eq!(pdt.ipdom(N(2)), None);
        assert!(!pdt.post_dominates(N(1), N(2)));
        assert!(!pdt.post_dominates(N(2), N(2)));
        assert_eq!(pdt.ipdom(N(0)), Some(N(1)));
    }

    #[test]
    fn empty_graph() {
        let pdt = tree(&[]);
        assert!(!pdt.is_reachable(N(0)));
        assert!(pdt.exits().is_empty());
    }

    #[test]
    fn long_chain_does_not_overflow() {
        const LEN: u32 = 200_000;
        let pdt = PostDominatorTree::compute(&ControlFlowGraph::compute(&chain(LEN)));
        assert_eq!(pdt.ipdom(N(0)), Some(N(1)));
        assert_eq!(pdt.ipdom(N(LEN - 1)), None);
        assert!(pdt.post_dominates(N(LEN - 1), N(0)));
    }

    #[test]
    fn long_infinite_loop_does_not_overflow() {
        const LEN: u32 = 200_000;
        let mut g = chain(LEN);
        g.edges[LEN as usize - 1].push(0);
        let pdt = PostDominatorTree::compute(&ControlFlowGraph::compute(&g));
        assert_eq!(pdt.representatives(), &[N(LEN - 1)]);
        assert_eq!(pdt.ipdom(N(0)), Some(N(1)));
    }

    /// Brute force: the extended graph (node `n` is the virtual exit) is built from the
    /// definitions — exits, sink regions by mutual reachability, their last member in
    /// RPO — and `a` post-dominates `b` iff `b` cannot reach the virtual exit once `a` is
    /// removed.
    #[test]
    fn random_graphs_match_brute_force() {
        for edges in random_graphs(11, 400, 12) {
            let n = edges.len() as u32;
            let cfg = ControlFlowGraph::compute(&Graph {
                edges: edges.clone(),
            });
            let pdt = PostDominatorTree::compute(&cfg);
            let rpo = cfg.reverse_post_order();
            let reachable = reach(&edges, 0, &|_| true);
            let m = reach_matrix(&edges, &|_| true);
            let is_exit = |v: u32| reachable[v as usize] && edges[v as usize].is_empty();
            let reaches_exit = |v: u32| (0..n).any(|e| is_exit(e) && m[v as usize][e as usize]);
            // Nodes without exit whose region (mutually reachable nodes) is a sink.
            let stuck: Vec<u32> = (0..n)
                .filter(|&v| reachable[v as usize] && !reaches_exit(v))
                .collect();
            let mut reps = Vec::new();
            for &v in &stuck {
                let region: Vec<u32> = stuck
                    .iter()
                    .copied()
                    .filter(|&w| m[v as usize][w as usize] && m[w as usize][v as usize])
                    .collect();
                let sink = stuck
                    .iter()
                    .all(|&w| !m[v as usize][w as usize] || region.contains(&w));
                let last = *rpo.iter().rfind(|r| region.contains(&r.0)).unwrap();
                if sink && last == N(v) {
                    reps.push(N(v));
                }
            }
            reps.sort_by_key(|r| rpo.iter().position(|x| x == r));
            assert_eq!(pdt.representatives(), &reps[..], "{edges:?}");

            let mut ext = edges.clone();
            ext.push(Vec::new());
            for v in 0..n {
                if is_exit(v) || reps.contains(&N(v)) {
                    ext[v as usize].push(n);
                }
            }
            for a in 0..n {
                for b in 0..n {
                    let expected = reachable[a as usize]
                        && reachable[b as usize]
                        && (a == b || !reach(&ext, b, &|x| x != a)[n as usize]);
                    assert_eq!(
                        pdt.post_dominates(N(a), N(b)),
                        expected,
                        "{a} pdom {b} in {edges:?}"
                    );
                }
                // The immediate post-dominator is the nearest strict one.
                if let Some(d) = pdt.ipdom(N(a)) {
                    assert!(pdt.strictly_post_dominates(d, N(a)));
                    for c in 0..n {
                        if pdt.strictly_post_dominates(N(c), N(a)) {
                            assert!(pdt.post_dominates(N(c), d));
                        }
                    }
                } else if reachable[a as usize] {
                    assert!((0..n).all(|c| !pdt.strictly_post_dominates(N(c), N(a))));
                }
            }
        }
    }
}
