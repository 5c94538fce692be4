//! A topological rank of the strongly connected components, which bounds the region
//! search's reachability walks.
//!
//! Give every node reachable from the entry the position of its strongly connected
//! component in a topological order of the component graph. Along every edge the rank
//! never decreases (it stays the same inside a cycle), so a node reaches another only if
//! its rank is at most the other's. Algorithm 2 asks for the blocks strictly dominated by
//! `D` that reach `P`, and for the blocks strictly post-dominated by `P` that `D` reaches.
//! The first are reached from `D`, so their rank is at least `D`'s; the second reach `P`
//! (even in a loop that never exits, through the post-dominator tree's representative),
//! so their rank is at most `P`'s. A backward walk from `P` may therefore stop at blocks
//! ranked below `D`, and a forward walk from `D` at blocks ranked above `P`, without
//! missing any block of the answer: nothing below the first bound reaches back up, and
//! nothing above the second leads back down. On a kernel made of a chain of regions (the
//! usual shape, and any loop-free kernel) both walks stay between `D` and `P`, so growing
//! a region costs its own size rather than the kernel's.
//!
//! ```text
//!   B0 -> B1 -> {B2, B3} -> B4 -> B5 -> {B6, B7} -> B8     ranks 0 1 2 3 4 5 6 7 8
//!                      region B1..B4                      backward walk from B4 stops
//!                                                         at B0 (rank 0 < rank of B1)
//! ```
//!
//! The ranks come from Tarjan's algorithm, which finishes components sinks first, with an
//! explicit stack (no recursion over the kernel's shape).

use super::super::ControlFlowGraph;
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::EntityRef;

/// Ranks of unreachable nodes: above every real rank, never used by the search.
const UNRANKED: u32 = u32::MAX;

/// The rank of every node's strongly connected component in a topological order of the
/// component graph, for the nodes reachable from the entry.
pub(super) struct SccRank {
    rank: Vec<u32>,
}

impl SccRank {
    /// Ranks the components of `cfg` reachable from its entry.
    pub(super) fn compute<N: EntityRef + Copy + Eq + Hash + Debug>(
        cfg: &ControlFlowGraph<N>,
    ) -> Self {
        let n = cfg.num_nodes();
        let mut rank = vec![UNRANKED; n];
        let Some(entry) = cfg.entry() else {
            return SccRank { rank };
        };
        // Tarjan's algorithm: discovery index and low link per node, the component stack,
        // and a frame per node on the walk (the node and its next successor).
        const UNSEEN: u32 = u32::MAX;
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut components: Vec<N> = Vec::new();
        let mut frames: Vec<(N, usize)> = Vec::new();
        let mut next = 0u32;
        // Components are numbered as they finish: sinks first.
        let mut finished = 0u32;
        let mut visit = |v: N,
                         index: &mut Vec<u32>,
                         low: &mut Vec<u32>,
                         on_stack: &mut Vec<bool>,
                         components: &mut Vec<N>,
                         frames: &mut Vec<(N, usize)>| {
            index[v.index()] = next;
            low[v.index()] = next;
            next += 1;
            on_stack[v.index()] = true;
            components.push(v);
            frames.push((v, 0));
        };
        visit(
            entry,
            &mut index,
            &mut low,
            &mut on_stack,
            &mut components,
            &mut frames,
        );
        while let Some(top) = frames.last_mut() {
            let (v, i) = *top;
            if let Some(&w) = cfg.succs(v).get(i) {
                top.1 += 1;
                if index[w.index()] == UNSEEN {
                    visit(
                        w,
                        &mut index,
                        &mut low,
                        &mut on_stack,
                        &mut components,
                        &mut frames,
                    );
                } else if on_stack[w.index()] {
                    low[v.index()] = low[v.index()].min(index[w.index()]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent.index()] = low[parent.index()].min(low[v.index()]);
            }
            if low[v.index()] == index[v.index()] {
                while let Some(w) = components.pop() {
                    on_stack[w.index()] = false;
                    rank[w.index()] = finished;
                    if w == v {
                        break;
                    }
                }
                finished += 1;
            }
        }
        // Sinks finished first: reverse so that ranks grow along edges.
        for r in &mut rank {
            if *r != UNRANKED {
                *r = finished - 1 - *r;
            }
        }
        SccRank { rank }
    }

    /// The rank of `n` (reachable from the entry).
    pub(super) fn of<N: EntityRef>(&self, n: N) -> u32 {
        self.rank[n.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::testgraph::{graph, random_graphs, reach};
    use super::*;

    /// Ranks never decrease along an edge, and are equal exactly within a cycle.
    #[test]
    fn ranks_grow_along_edges_and_tie_within_cycles() {
        for edges in random_graphs(0x5cc, 400, 16) {
            let g = graph(&edges.iter().map(|e| e.as_slice()).collect::<Vec<_>>());
            let cfg = ControlFlowGraph::compute(&g);
            let ranks = SccRank::compute(&cfg);
            let reached = reach(&edges, 0, &|_| true);
            for (u, succs) in edges.iter().enumerate() {
                if !reached[u] {
                    continue;
                }
                for &v in succs {
                    let (ru, rv) = (ranks.rank[u], ranks.rank[v as usize]);
                    assert!(ru <= rv, "edge {u} -> {v} ranks {ru} > {rv}");
                    let cycle = reach(&edges, v, &|_| true)[u];
                    assert_eq!(ru == rv, cycle, "edge {u} -> {v}");
                }
            }
        }
    }
}
