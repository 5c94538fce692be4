//! A loop-aware order for Algorithm 1: the region's cycles kept contiguous, every block
//! that runs after a cycle placed after all of it, and each multi-entry (irreducible)
//! cycle entered first at the entry its lanes reach last.
//!
//! # Why
//!
//! Algorithm 1 ("Taming Control Divergence in GPUs through Control Flow Linearization",
//! Section 3.2) is correct in any order whose forward edges go forward: a retreating
//! edge gets a back-edge guard, and every block between the (moved-up) destination and
//! the source of that back edge is inside the transformed loop. What the order decides
//! is *how often* a block runs. A block that runs after a loop but is placed inside the
//! back-edge interval runs in every pass of the warp over the loop in which some lane
//! has just left it: Figure 5's `S3` (B5), reached by lanes leaving at different
//! iterations, would run once per exit iteration instead of once after the loop, where
//! the IPDOM machine runs it once per group of lanes — the linearization would be no
//! better than the hardware, or worse. Reverse post-order alone (line 5 of Algorithm 1)
//! places such blocks inside the loop whenever the depth-first search happens to visit
//! the loop's exit before its latch, so the result also depended on the order of a
//! branch's successors.
//!
//! # How
//!
//! A recursive strongly-connected-component decomposition of the region's graph (the
//! usual loop-nesting-forest construction, as in Havlak's or Ramalingam's): at each
//! level the components are ordered topologically (Kahn's algorithm, ties broken by a
//! caller-given rank, the dominance pre-order for the machine pass), a single block is
//! emitted as it is, and a cycle is emitted whole, recursively, after choosing its
//! header and removing the edges into it. For a cycle with one entry (a natural loop)
//! the header is that entry. For an irreducible cycle it is the entry whose outside
//! predecessors are placed last: in Figure 6(b),
//!
//! ```text
//!   B1 ─┬─▶ B2 (i = 0) ─▶ B3 (i < N) ─▶ B4 (S1) ─▶ B5 (L1: S2; i++) ─┐
//!       │                  ▲   │                    ▲                 │
//!       │                  │   └──▶ B6 (S3)         │                 │
//!       └──────────────────┼────────────────────────┘  (goto L1)      │
//!                          └──────────────────────────────────────────┘
//! ```
//!
//! the cycle {B3, B4, B5} is entered at B5 (from B1) and at B3 (from B2, which comes
//! after B1). Taking B3 first gives B2 B3 B4 B5 | B6: the lanes that jumped to L1 wait
//! at B5's guard for the lanes that start the loop at B3, and all of them run B5 in
//! the first pass. Taking B5 first would run B5 for the jumping lanes alone in the first
//! pass and for the others in the second — one more execution of B5 than the busiest
//! lane needs. The choice depends only on the graph, not on which successor a branch
//! names first.
//!
//! The decomposition's cycles also check a given order (`keeps_cycles_together`): no
//! block outside a cycle lies between the cycle's first and last block, except, with
//! loop merging (Section 5.2, Figure 8), blocks of an enclosing cycle — the rest of the
//! outer iteration placed before the inner loop's body, which is what merging is.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::Hash;

/// A cycle of the region found by the decomposition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cycle {
    /// Its nodes.
    pub nodes: Vec<usize>,
    /// The innermost cycle enclosing it.
    pub parent: Option<usize>,
    /// How many of its nodes are entered from outside it.
    pub entries: usize,
}

/// The decomposition's order and cycles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LoopOrder {
    /// Every node once, cycles contiguous.
    pub order: Vec<usize>,
    /// Every cycle, outer ones before the ones they enclose.
    pub cycles: Vec<Cycle>,
}

impl LoopOrder {
    /// Whether some cycle has more than one entry (is irreducible).
    pub fn irreducible(&self) -> bool {
        self.cycles.iter().any(|c| c.entries > 1)
    }

    /// Whether `order` (a permutation of the nodes) keeps every cycle's nodes together:
    /// nothing outside a cycle between its first and last node, except, when `merge`,
    /// nodes of a cycle enclosing it (loop merging).
    pub fn keeps_cycles_together(&self, order: &[usize], merge: bool) -> bool {
        let mut pos = vec![0; order.len()];
        for (i, &k) in order.iter().enumerate() {
            pos[k] = i;
        }
        let sets: Vec<HashSet<usize>> = self
            .cycles
            .iter()
            .map(|c| c.nodes.iter().copied().collect())
            .collect();
        self.cycles.iter().enumerate().all(|(c, cycle)| {
            let lo = cycle.nodes.iter().map(|&k| pos[k]).min().unwrap_or(0);
            let hi = cycle.nodes.iter().map(|&k| pos[k]).max().unwrap_or(0);
            order[lo..=hi].iter().all(|k| {
                if sets[c].contains(k) {
                    return true;
                }
                let mut up = cycle.parent;
                while let Some(p) = up {
                    if merge && sets[p].contains(k) {
                        return true;
                    }
                    up = self.cycles[p].parent;
                }
                false
            })
        })
    }
}

/// [`loop_order`] over any graph: `rpo` holds the region's blocks in reverse post-order
/// (the preference), `entry` is the region's entry. Used by the SSA-level pass.
pub(crate) fn loop_order_by<N: Copy + Eq + Hash>(
    entry: N,
    rpo: &[N],
    successors: impl Fn(N) -> Vec<N>,
) -> Vec<N> {
    let index: HashMap<N, usize> = rpo.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let succs: Vec<Vec<usize>> = rpo
        .iter()
        .map(|&b| {
            successors(b)
                .iter()
                .filter_map(|s| index.get(s).copied())
                .collect()
        })
        .collect();
    let entered: Vec<usize> = successors(entry)
        .iter()
        .filter_map(|s| index.get(s).copied())
        .collect();
    let rank: Vec<usize> = (0..rpo.len()).collect();
    loop_order(&succs, &entered, &rank, &vec![false; rpo.len()])
        .order
        .into_iter()
        .map(|k| rpo[k])
        .collect()
}

/// Whether a cycle of a region's graph (its `blocks`, entered from `entry`) encloses
/// another. Regions whose cycles nest are linearized in `kernel` mode only (by both
/// linearizers): the order that keeps each cycle whole makes lanes that leave an inner
/// cycle early wait for the others before the rest of their outer iteration, where the
/// IPDOM machine lets them run on.
pub(crate) fn has_nested_cycles<N: Copy + Eq + Hash>(
    entry: N,
    blocks: &[N],
    successors: impl Fn(N) -> Vec<N>,
) -> bool {
    let index: HashMap<N, usize> = blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let inside = |b: N| -> Vec<usize> {
        successors(b)
            .iter()
            .filter_map(|s| index.get(s).copied())
            .collect()
    };
    let succs: Vec<Vec<usize>> = blocks.iter().map(|&b| inside(b)).collect();
    let rank: Vec<usize> = (0..succs.len()).collect();
    loop_order(&succs, &inside(entry), &rank, &vec![false; succs.len()])
        .cycles
        .iter()
        .any(|c| c.parent.is_some())
}

/// Orders the nodes `0..succs.len()` of a region. `succs[k]`: the successors of node
/// `k` inside the region; `entered`: the nodes the region's entry leads to; `rank`:
/// the preference among nodes free to come next (lower first); `transparent`: the empty
/// edge-split blocks.
pub(crate) fn loop_order(
    succs: &[Vec<usize>],
    entered: &[usize],
    rank: &[usize],
    transparent: &[bool],
) -> LoopOrder {
    let n = succs.len();
    let mut preds = vec![Vec::new(); n];
    for (u, ss) in succs.iter().enumerate() {
        for &v in ss {
            preds[v].push(u);
        }
    }
    let mut from_outside = vec![false; n];
    for &k in entered {
        from_outside[k] = true;
    }
    let mut st = Decomposition {
        succs,
        preds,
        from_outside,
        rank,
        transparent,
        pos: vec![None; n],
        out: LoopOrder {
            order: Vec::with_capacity(n),
            cycles: Vec::new(),
        },
    };
    let all: Vec<usize> = (0..n).collect();
    st.level(&all, None, None);
    st.out
}

struct Decomposition<'a> {
    succs: &'a [Vec<usize>],
    preds: Vec<Vec<usize>>,
    from_outside: Vec<bool>,
    rank: &'a [usize],
    transparent: &'a [bool],
    /// Where each emitted node went.
    pos: Vec<Option<usize>>,
    out: LoopOrder,
}

impl Decomposition<'_> {
    /// Emits `nodes` (one level of the nest; the edges into `header` are its back edges).
    fn level(&mut self, nodes: &[usize], header: Option<usize>, parent: Option<usize>) {
        let local: HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let adj: Vec<Vec<usize>> = nodes
            .iter()
            .map(|&u| {
                self.succs[u]
                    .iter()
                    .filter(|&&v| Some(v) != header)
                    .filter_map(|v| local.get(v).copied())
                    .collect()
            })
            .collect();
        let (comp, ncomp) = tarjan(&adj);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); ncomp];
        for (i, &c) in comp.iter().enumerate() {
            members[c].push(nodes[i]);
        }
        let mut indeg = vec![0usize; ncomp];
        let mut cyclic = vec![false; ncomp];
        let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); ncomp];
        for (i, ss) in adj.iter().enumerate() {
            for &j in ss {
                if comp[i] == comp[j] {
                    cyclic[comp[i]] = true;
                } else {
                    out_edges[comp[i]].push(comp[j]);
                    indeg[comp[j]] += 1;
                }
            }
        }
        let key = |c: usize| members[c].iter().map(|&k| self.rank[k]).min();
        let mut ready: BinaryHeap<Reverse<(Option<usize>, usize)>> = (0..ncomp)
            .filter(|&c| indeg[c] == 0)
            .map(|c| Reverse((key(c), c)))
            .collect();
        while let Some(Reverse((_, c))) = ready.pop() {
            if cyclic[c] {
                self.cycle(&members[c], parent);
            } else {
                let k = members[c][0];
                self.pos[k] = Some(self.out.order.len());
                self.out.order.push(k);
            }
            for &d in &out_edges[c] {
                indeg[d] -= 1;
                if indeg[d] == 0 {
                    ready.push(Reverse((key(d), d)));
                }
            }
        }
    }

    /// Emits the cycle `nodes`: picks its header and orders it as a level of its own.
    fn cycle(&mut self, nodes: &[usize], parent: Option<usize>) {
        let inside: HashSet<usize> = nodes.iter().copied().collect();
        // An entry's score: where its latest predecessor outside the cycle was placed
        // (the region's entry counts as placed before everything).
        // An empty edge-split block stands for the edge it splits: the place of its own
        // predecessor counts.
        let score = |k: usize| -> Option<i64> {
            let mut best: Option<i64> = self.from_outside[k].then_some(-1);
            let mut seen: HashSet<usize> = HashSet::new();
            let mut work: Vec<usize> = self.preds[k]
                .iter()
                .copied()
                .filter(|p| !inside.contains(p))
                .collect();
            while let Some(p) = work.pop() {
                if !seen.insert(p) {
                    continue;
                }
                if self.transparent[p] {
                    best = best.max(self.from_outside[p].then_some(-1));
                    work.extend(self.preds[p].iter().filter(|q| !inside.contains(q)));
                } else {
                    best = best.max(Some(self.pos[p].map_or(-1, |i| i as i64)));
                }
            }
            best
        };
        let entries: Vec<(i64, usize)> = nodes
            .iter()
            .filter_map(|&k| score(k).map(|s| (s, k)))
            .collect();
        let header = entries
            .iter()
            .copied()
            .max_by_key(|&(s, k)| (s, Reverse(self.rank[k])))
            .map(|(_, k)| k)
            // Unreachable for a region's cycles (every node is reached from the entry);
            // any node would do.
            .unwrap_or_else(|| *nodes.iter().min_by_key(|&&k| self.rank[k]).unwrap());
        let id = self.out.cycles.len();
        self.out.cycles.push(Cycle {
            nodes: nodes.to_vec(),
            parent,
            entries: entries.len(),
        });
        self.level(nodes, Some(header), Some(id));
    }
}

/// Strongly connected components of `adj` (Tarjan's algorithm, iterative): each node's
/// component and the number of components.
fn tarjan(adj: &[Vec<usize>]) -> (Vec<usize>, usize) {
    const UNSEEN: usize = usize::MAX;
    let m = adj.len();
    let mut index = vec![UNSEEN; m];
    let mut low = vec![0; m];
    let mut on_stack = vec![false; m];
    let mut stack = Vec::new();
    let mut comp = vec![UNSEEN; m];
    let mut ncomp = 0;
    let mut counter = 0;
    for s in 0..m {
        if index[s] != UNSEEN {
            continue;
        }
        index[s] = counter;
        low[s] = counter;
        counter += 1;
        stack.push(s);
        on_stack[s] = true;
        let mut calls: Vec<(usize, usize)> = vec![(s, 0)];
        while let Some(&mut (u, ref mut i)) = calls.last_mut() {
            if let Some(&v) = adj[u].get(*i) {
                *i += 1;
                if index[v] == UNSEEN {
                    index[v] = counter;
                    low[v] = counter;
                    counter += 1;
                    stack.push(v);
                    on_stack[v] = true;
                    calls.push((v, 0));
                } else if on_stack[v] {
                    low[u] = low[u].min(index[v]);
                }
            } else {
                calls.pop();
                if let Some(&(p, _)) = calls.last() {
                    low[p] = low[p].min(low[u]);
                }
                if low[u] == index[u] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = ncomp;
                        if w == u {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
    }
    (comp, ncomp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figure 6(b) without B1 (the region's entry): B2=0, B3=1, B4=2, B5=3, B6=4.
    fn figure_6(rank: &[usize]) -> LoopOrder {
        let succs = vec![vec![1], vec![2, 4], vec![3], vec![1], vec![]];
        loop_order(&succs, &[0, 3], rank, &[false; 5])
    }

    #[test]
    fn figure_6_starts_its_cycle_where_the_last_lanes_enter() {
        // Whatever the preference (two reverse post-orders of the two successor orders).
        for rank in [[0, 1, 2, 3, 4], [0, 2, 4, 1, 3], [4, 3, 2, 1, 0]] {
            let o = figure_6(&rank);
            assert_eq!(o.order, vec![0, 1, 2, 3, 4], "{rank:?}");
            assert_eq!(o.cycles.len(), 1);
            assert_eq!(o.cycles[0].entries, 2);
            assert!(o.irreducible());
        }
    }

    #[test]
    fn figure_5_places_the_loop_exit_after_the_loop() {
        // B2=0 (i < N), B3=1 (S1; goto?), B4=2 (S2; i++), B5=3 (S3), B6=4 (S4).
        let succs = vec![vec![1, 3], vec![4, 2], vec![0], vec![4], vec![]];
        // The reverse post-order that visits B5 first puts it inside the loop.
        let rank = [0, 2, 3, 1, 4];
        let o = loop_order(&succs, &[0], &rank, &[false; 5]);
        assert_eq!(o.order, vec![0, 1, 2, 3, 4]);
        assert!(!o.irreducible());
        assert!(!o.keeps_cycles_together(&[0, 3, 1, 2, 4], true));
        assert!(o.keeps_cycles_together(&[0, 1, 2, 3, 4], true));
    }

    #[test]
    fn merging_may_place_the_outer_iteration_inside_the_inner_loop() {
        // Outer header 0 -> 1 -> inner header 2 <-> 3; 2 -> 4 (outer latch) -> 0; 0 -> 5.
        let succs = vec![vec![1, 5], vec![2], vec![3, 4], vec![2], vec![0], vec![]];
        let o = loop_order(&succs, &[0], &[0, 1, 2, 3, 4, 5], &[false; 6]);
        assert_eq!(o.order, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(o.cycles.len(), 2);
        let merged = [0, 1, 2, 4, 3, 5];
        assert!(o.keeps_cycles_together(&merged, true));
        assert!(!o.keeps_cycles_together(&merged, false));
        // Never the block after the outer loop.
        assert!(!o.keeps_cycles_together(&[0, 1, 2, 5, 3, 4], true));
    }
}
