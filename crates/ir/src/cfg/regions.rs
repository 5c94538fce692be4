//! Unstructured edges, minimal unstructured regions and their structured sub-regions, after
//! Anantpur and Govindarajan, "Taming Control Divergence in GPUs through Control Flow
//! Linearization" (CC 2014).
//!
//! A SIMT machine reconverges the threads of a branch at its immediate post-dominator.
//! That is the earliest possible point for *structured* control flow only: in an
//! unstructured graph some blocks between a divergent branch and its post-dominator are
//! reached along several paths and run once per path. Linearization (Section 3 of the
//! paper) removes the problem by turning an unstructured region into a chain of guarded
//! blocks; this module finds *what* to linearize, so that the transformation touches as
//! little code as possible:
//!
//! 1. [`UnstructuredEdges`]: the edges of Definition 1 (Section 3.2).
//! 2. [`find_unstructured_regions`]: for each such edge its minimal single-entry,
//!    single-exit *unstructured region* (Definition 4, Algorithm 2 of Section 4), merged
//!    so that the regions returned are disjoint and can be linearized independently.
//! 3. [`Region::structured_subregions`]: the structured parts of a region (Definition 5,
//!    Algorithm 3 of Section 4.1), which the linearizer guards at their entry only
//!    instead of linearizing them block by block.
//! 4. [`select_regions`]: which regions to linearize (those with a divergent branch, by
//!    default).
//!
//! # The running example: Figure 1 of the paper
//!
//! `if ((c1() || c2()) && c3()) S1; else S2; S3;` compiles to the graph below (`Entry` and
//! `Exit` are the paper's virtual nodes):
//!
//! ```text
//!              Entry
//!                |
//!                B1: c1()
//!          false/  \true
//!              B2    |            unstructured edges (Definition 1, condition 1):
//!           c2()| \  |              B2 -> B3, B2 -> B5, B3 -> B5
//!          false|  \ v
//!               |   B3: c3()      region of all three (Algorithm 2):
//!               |  /    \           entry (CIDOM) B1, exit (CIPDOM) B6,
//!               v v      v          blocks B2, B3, B4, B5
//!          S2:  B5       B4: S1
//!                 \     /
//!                  v   v
//!                   B6: S3
//!                    |
//!                   Exit
//! ```
//!
//! **Definition 1** (Section 3.2) calls an edge `Bi -> Bj` unstructured when
//!
//! > – Block Bi has multiple successors, block Bj has multiple predecessors, and neither
//! > of Bi or Bj dominates nor postdominates the other,
//! >
//! > – Block Bj is in a loop, block Bi is not in the same loop and Bj does not dominate
//! > all other blocks of the loop,
//! >
//! > – Block Bi is in a loop, block Bj is not in the same loop and Bi does not
//! > postdominate all other blocks of the loop
//!
//! In Figure 1 `B2 -> B3` is unstructured by the first condition: `B2` branches, `B3` is
//! a join, `B1` (not `B2`) dominates `B3`, and `B2 -> B5` lets `B2` avoid `B3`. So are
//! `B2 -> B5` and `B3 -> B5`, while `B1 -> B3` is not (`B1` dominates `B3`). The second
//! condition catches jumps *into* a loop (Figure 6: `goto` into a `for` body), the third
//! jumps *out* of one other than through the block every iteration passes (Figure 5: a
//! `goto` out of a `for`).
//!
//! **Algorithm 2** (Section 4) grows a region from the two blocks of an edge: take their
//! common immediate dominator `D` (CIDOM, Definition 2) and post-dominator `P` (CIPDOM,
//! Definition 3), and add the blocks `D` dominates that can reach `P`, and the blocks `P`
//! post-dominates that `D` can reach; repeat with the `D` and `P` of the grown set until
//! nothing changes. For `B2 -> B3`: `D = B1`, `P = B6` (`B5` does not post-dominate
//! `B2`, since `B2 -> B3 -> B4 -> B6` avoids it), which adds `B4` and `B5`; the set
//! `{B2, B3, B4, B5}` has the same bounds, so it is the region. `B2 -> B5` and `B3 -> B5`
//! give the same region, which is returned once, with the three edges. Linearizing it
//! (Algorithm 1, Figure 4) makes `B1` set a guard variable and fall into a chain of
//! guards for `B2`, `B3`, `B4`, `B5` ending at `B6`.
//!
//! **Algorithm 3** (Section 4.1) then looks inside a region for blocks `b` that
//! immediately dominate their own immediate post-dominator `p`, with every block between
//! them dominated by `b`, post-dominated by `p` and free of unstructured edges
//! (Definition 5): such a sub-region needs a guard at `b` only. Figure 1's region has
//! none (`B3`'s post-dominator is `B6`, outside); had `S1` been an `if`/`else`, its
//! diamond would be one.
//!
//! # Reading the paper precisely
//!
//! The paper leaves a few points open; this module settles them as follows.
//!
//! - *"In a loop"* (Definition 1) is read for every loop of the [`LoopForest`]: an edge
//!   satisfies condition 2 when some loop contains `Bj` but not `Bi` and `Bj` does not
//!   dominate all of that loop's blocks (natural loops entered at their header never
//!   qualify, irreducible loops entered anywhere always do). `Bj` dominates all blocks of
//!   such a loop exactly when it is their nearest common dominator, which is precomputed
//!   per loop; condition 3 is the mirror image with post-dominators. Only predecessors
//!   reachable from the entry count for "multiple predecessors".
//! - *Region bounds.* Definition 4 wants `D` and `P` outside the region, and Definition 5
//!   speaks of "the CIDOM of all the blocks in SR except for D": the bounds of a set are
//!   the nearest blocks that dominate (post-dominate) all of it *and are not in it*. For
//!   the first step of Algorithm 2 the paper's Definition 2 applies to `{Bi, Bj}` as
//!   written, so an edge whose source dominates its destination is bounded by the source
//!   itself (Figure 6: `B1 -> B5` gets `D = B1`). Either virtual node may be a bound:
//!   `None` stands for the virtual entry or exit, as in the other analyses.
//! - *Closing the region.* Algorithm 2's iteration alone can stop at a set that violates
//!   the last two conditions of Definition 4 when the region sits in a cycle (in Figure 5,
//!   the edge `B3 -> B6` first gives `{B3, B4, B5}` bounded by `B2`, yet `B4` jumps back
//!   to `B2`). Blocks that break them (a predecessor of the region other than `D`, a
//!   successor other than `P`) join the region and the iteration goes on; so do the
//!   edge's blocks when a bound moved past them. This gives Figure 5 its region
//!   `{B2, B3, B4, B5}` between `B1` and `B6`, as the paper's Figure 5(c) linearizes it.
//!   An unstructured edge *lies in* a region when its source is in the region or is its
//!   entry, its destination is in the region or is its exit, and one of them is in it:
//!   linearization rewrites the terminators of the region's blocks and of its entry, so
//!   it removes all such edges.
//! - *Early joins (beyond Definition 1).* The three conditions miss some blocks that an
//!   IPDOM stack runs twice: in `B0 -> {B1, B4}, B1 -> {B2, B5}, B2 -> {B3, B4}, B3 -> B4,
//!   B4 -> B5`, `B4` is reached from both arms of `B0` before `B5`, yet `B0` dominates it,
//!   it post-dominates `B2`, and `B3 -> B4` leaves no branch. For every branch outside the
//!   loops, the blocks two of its successors reach before its immediate post-dominator
//!   (forward edges only) are joins its lanes meet only at the post-dominator; the edges
//!   entering them are unstructured ([`Conditions::joins_before_ipdom`]) where no edge of
//!   Definition 1 enters the join already. With them every minimal unstructured acyclic
//!   CFG of up to 7 nodes gets the regions that leave no block running twice.
//! - *Disjoint regions.* The paper observes that two regions are disjoint or nested. So
//!   that each can be linearized on its own, regions are merged (and closed again) when
//!   one holds a block or the entry of another, or both share an entry: the regions
//!   returned are the maximal ones, each listing every unstructured edge that lies in it.
//! - *Structured sub-regions.* Algorithm 3 tests "`hasUnstructEdge(blk)`" on each
//!   member `n1`; it is read as `n1`'s edges inside the sub-region (an unstructured edge
//!   into its entry or out of its exit is handled by the guard). Sub-regions must lie in
//!   the region, be entered only at `D` and left only from `P`. Sub-regions that follow
//!   each other (the exit of one immediately dominating the next, as in a chain of
//!   `if`/`else`) share a block, so they are chained into one; the result is the maximal,
//!   pairwise disjoint structured sub-regions.
//!
//! Every traversal is iterative. Each iteration of Algorithm 2 walks backwards from `P`
//! and forwards from `D`; the walks stop at blocks whose strongly connected component
//! comes before `D`'s or after `P`'s in topological order, which can neither be in the
//! answer nor lead to it (see `rank.rs`). Edges that already lie in a region found
//! earlier are not searched again. On a kernel made of a chain of regions (loop-free, or
//! with the regions between loops) an iteration therefore costs the size of its region,
//! and the whole search is linear in the kernel; only regions inside one large loop still
//! walk that loop each time. A region with a virtual bound scans the whole kernel.

use super::{ControlFlowGraph, DominatorTree, Loop, LoopForest, PostDominatorTree};
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::{EntityRef, SecondaryMap};
use rank::SccRank;
use rustc_hash::{FxHashMap, FxHashSet};

/// Which conditions of Definition 1 an unstructured edge satisfies (at least one).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// Condition 1: the source branches, the destination joins, and neither dominates
    /// nor post-dominates the other.
    pub branch_to_join: bool,
    /// Condition 2: the outermost loop that contains the destination but not the
    /// source, and not all of whose other blocks the destination dominates (a jump into
    /// a loop).
    pub enters_loop: Option<Loop>,
    /// Condition 3: the outermost loop that contains the source but not the
    /// destination, and not all of whose other blocks the source post-dominates (a jump
    /// out of a loop).
    pub exits_loop: Option<Loop>,
    /// Beyond Definition 1: the edge enters a block that two successors of one branch
    /// outside every loop reach before the branch's immediate post-dominator (without a
    /// back edge), from a
    /// block only one of them reaches (or from the branch itself). Lanes split at that
    /// branch meet there only at the post-dominator, so the block runs once per group:
    /// in `B0 -> {B1, B4}, B1 -> {B2, B5}, B2 -> {B3, B4}, B3 -> B4, B4 -> B5`, `B4` is
    /// reached from both arms of `B0`, yet no edge meets the three conditions: `B3 -> B4`
    /// leaves no branch, `B0` dominates `B4`, and `B4` post-dominates `B2`.
    pub joins_before_ipdom: bool,
}

/// An unstructured edge (Definition 1) and why it is one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UnstructuredEdge<N> {
    /// The source block.
    pub from: N,
    /// The destination block.
    pub to: N,
    /// The conditions of Definition 1 it satisfies.
    pub conditions: Conditions,
    /// Is it a retreating edge (its destination does not come after its source in
    /// reverse post-order)? Linearization gives each such edge a back-edge guard.
    pub retreating: bool,
}

/// The unstructured edges of a graph (Definition 1), among the edges between blocks
/// reachable from the entry.
#[derive(Clone, Debug)]
pub struct UnstructuredEdges<N> {
    /// In reverse post-order of the source, then in successor order.
    edges: Vec<UnstructuredEdge<N>>,
    set: FxHashSet<(N, N)>,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> UnstructuredEdges<N> {
    /// Finds the unstructured edges of `cfg`, given its dominator and post-dominator
    /// trees and loop forest.
    pub fn compute(
        cfg: &ControlFlowGraph<N>,
        domtree: &DominatorTree<N>,
        postdom: &PostDominatorTree<N>,
        loops: &LoopForest<N>,
    ) -> Self {
        // For each loop, the nearest common (post-)dominator of its blocks: a block of
        // the loop dominates all of them exactly when it is that block.
        let mut loop_dom: SecondaryMap<Loop, Option<N>> = SecondaryMap::new();
        let mut loop_pdom: SecondaryMap<Loop, Option<N>> = SecondaryMap::new();
        for l in loops.loops() {
            let blocks = loops.blocks(l);
            loop_dom[l] = common_dominator(domtree, blocks.iter().copied());
            loop_pdom[l] = blocks
                .split_first()
                .and_then(|(&first, rest)| common_post_dominator(postdom, first, rest));
        }
        let reachable_preds = |n: N| -> usize {
            cfg.preds(n)
                .iter()
                .filter(|&&p| domtree.is_reachable(p))
                .count()
        };

        let early_joins = early_join_edges(cfg, domtree, postdom, loops);
        let mut edges = Vec::new();
        for &u in domtree.rpo() {
            let succs = cfg.succs(u);
            for &v in succs {
                let branch_to_join = succs.len() > 1
                    && reachable_preds(v) > 1
                    && !domtree.dominates(u, v)
                    && !domtree.dominates(v, u)
                    && !postdom.post_dominates(u, v)
                    && !postdom.post_dominates(v, u);
                let mut enters_loop = None;
                let mut l = loops.innermost_loop(v);
                while let Some(lp) = l {
                    if loops.contains(lp, u) {
                        break;
                    }
                    if loop_dom[lp] != Some(v) {
                        enters_loop = Some(lp);
                    }
                    l = loops.parent(lp);
                }
                let mut exits_loop = None;
                let mut l = loops.innermost_loop(u);
                while let Some(lp) = l {
                    if loops.contains(lp, v) {
                        break;
                    }
                    if loop_pdom[lp] != Some(u) {
                        exits_loop = Some(lp);
                    }
                    l = loops.parent(lp);
                }
                let conditions = Conditions {
                    branch_to_join,
                    enters_loop,
                    exits_loop,
                    joins_before_ipdom: false,
                };
                if conditions != Conditions::default() {
                    edges.push(UnstructuredEdge {
                        from: u,
                        to: v,
                        conditions,
                        retreating: domtree.rpo_number(v) <= domtree.rpo_number(u),
                    });
                }
            }
        }
        // The joins no edge of Definition 1 enters: the regions of those edges hold the
        // others.
        let entered: FxHashSet<N> = edges.iter().map(|e| e.to).collect();
        let mut extra: Vec<(N, N)> = early_joins
            .into_iter()
            .filter(|(_, j)| !entered.contains(j))
            .collect();
        if !extra.is_empty() {
            extra.sort_by_key(|&(u, v)| (domtree.rpo_number(u), domtree.rpo_number(v)));
            for (u, v) in extra {
                edges.push(UnstructuredEdge {
                    from: u,
                    to: v,
                    conditions: Conditions {
                        joins_before_ipdom: true,
                        ..Conditions::default()
                    },
                    retreating: false,
                });
            }
            edges.sort_by_key(|e| domtree.rpo_number(e.from));
        }
        let set = edges.iter().map(|e| (e.from, e.to)).collect();
        UnstructuredEdges { edges, set }
    }

    /// The unstructured edges, in reverse post-order of their source, then in successor
    /// order.
    pub fn edges(&self) -> &[UnstructuredEdge<N>] {
        &self.edges
    }

    /// The unstructured edges as `(from, to)` pairs.
    pub fn pairs(&self) -> Vec<(N, N)> {
        self.edges.iter().map(|e| (e.from, e.to)).collect()
    }

    /// Is `from -> to` an unstructured edge?
    pub fn contains(&self, from: N, to: N) -> bool {
        self.set.contains(&(from, to))
    }

    /// Is the graph free of unstructured edges (structured)?
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// The number of unstructured edges.
    pub fn len(&self) -> usize {
        self.edges.len()
    }
}

/// The edges of [`Conditions::joins_before_ipdom`]: for every branch `b`, the blocks two
/// of its successors reach before `ipdom(b)` (forward edges only, not through `b`), and
/// the edges entering that set (from `b`, or from a block one successor alone reaches).
/// Each search stops at the branch's post-dominator, so it covers the branch's own
/// region only. Only branches outside every loop are searched.
fn early_join_edges<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    domtree: &DominatorTree<N>,
    postdom: &PostDominatorTree<N>,
    loops: &LoopForest<N>,
) -> FxHashSet<(N, N)> {
    let mut out = FxHashSet::default();
    for &b in domtree.rpo() {
        // Branches in cycles are left to Definition 1's loop conditions: a region grown
        // from an early join inside a loop can hold the loop's exits, and linearizing
        // those was seen to run blocks more often, not less.
        if loops.innermost_loop(b).is_some() {
            continue;
        }
        let mut succs: Vec<N> = cfg.succs(b).to_vec();
        succs.dedup();
        if succs.len() < 2 {
            continue;
        }
        let stop = postdom.ipdom(b);
        // The first successor (index) each block was reached from, and the joins.
        let mut first: FxHashMap<N, usize> = FxHashMap::default();
        let mut joins: FxHashSet<N> = FxHashSet::default();
        for (i, &s) in succs.iter().enumerate() {
            let mut seen: FxHashSet<N> = FxHashSet::default();
            let mut stack = vec![s];
            while let Some(n) = stack.pop() {
                if Some(n) == stop || n == b || !seen.insert(n) {
                    continue;
                }
                match first.get(&n) {
                    Some(&j) if j != i => {
                        joins.insert(n);
                    }
                    Some(_) => {}
                    None => {
                        first.insert(n, i);
                    }
                }
                for &v in cfg.succs(n) {
                    if !domtree.dominates(v, n) {
                        stack.push(v);
                    }
                }
            }
        }
        for &j in &joins {
            for &p in cfg.preds(j) {
                if p == b || (first.contains_key(&p) && !joins.contains(&p)) {
                    out.insert((p, j));
                }
            }
        }
    }
    out
}

/// The nearest block that dominates every block of `set` (Definition 2 applied to a set
/// that may contain it), or `None` for an empty set or unreachable blocks.
fn common_dominator<N: EntityRef + Copy + Eq + Hash + Debug>(
    domtree: &DominatorTree<N>,
    set: impl IntoIterator<Item = N>,
) -> Option<N> {
    let mut it = set.into_iter();
    let mut d = it.next()?;
    for b in it {
        // `d` only climbs, so a fold costs the size of the set plus the tree's height.
        while !domtree.dominates(d, b) {
            d = domtree.idom(d)?;
        }
    }
    Some(d)
}

/// The nearest block that post-dominates `first` and every block of `rest`, or `None`
/// for the virtual exit.
fn common_post_dominator<N: EntityRef + Copy + Eq + Hash + Debug>(
    postdom: &PostDominatorTree<N>,
    first: N,
    rest: &[N],
) -> Option<N> {
    let mut p = first;
    for &b in rest {
        while !postdom.post_dominates(p, b) {
            p = postdom.ipdom(p)?;
        }
    }
    Some(p)
}

/// A single-entry, single-exit unstructured region (Definition 4): the unit of
/// linearization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region<N> {
    entry: Option<N>,
    exit: Option<N>,
    blocks: Vec<N>,
    sorted: Vec<N>,
    edges: Vec<UnstructuredEdge<N>>,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> Region<N> {
    fn new(
        domtree: &DominatorTree<N>,
        entry: Option<N>,
        exit: Option<N>,
        mut blocks: Vec<N>,
        edges: Vec<UnstructuredEdge<N>>,
    ) -> Self {
        blocks.sort_by_key(|&b| domtree.rpo_number(b));
        let mut sorted = blocks.clone();
        sorted.sort_by_key(|b| b.index());
        Region {
            entry,
            exit,
            blocks,
            sorted,
            edges,
        }
    }

    /// The region's entry `D`, the common immediate dominator of its blocks (Definition
    /// 2), outside the region; `None` is the virtual entry (the region holds the
    /// kernel's entry block).
    pub fn entry(&self) -> Option<N> {
        self.entry
    }

    /// The region's exit `P`, the common immediate post-dominator of its blocks
    /// (Definition 3), outside the region; `None` is the virtual exit.
    pub fn exit(&self) -> Option<N> {
        self.exit
    }

    /// The blocks of the region, in reverse post-order: the order in which the
    /// linearizer chains their guards.
    pub fn blocks(&self) -> &[N] {
        &self.blocks
    }

    /// The unstructured edges that lie in the region (see the [module
    /// documentation](self)), in the order of [`UnstructuredEdges::edges`].
    pub fn unstructured_edges(&self) -> &[UnstructuredEdge<N>] {
        &self.edges
    }

    /// Is `n` a block of the region (its entry and exit are not)?
    pub fn contains(&self, n: N) -> bool {
        self.sorted
            .binary_search_by_key(&n.index(), |b| b.index())
            .is_ok()
    }

    /// Does the edge `from -> to` lie in the region: from the region or its entry, to
    /// the region or its exit, and not from the entry straight to the exit?
    pub fn holds_edge(&self, from: N, to: N) -> bool {
        lies_in(
            self.contains(from),
            self.contains(to),
            self.entry == Some(from),
            self.exit == Some(to),
        )
    }

    /// Whether an IPDOM stack can run one of the region's blocks more than once in one
    /// pass of a warp: whether some divergent branch of the region (or of its entry) has
    /// two successors from which the same block of the region can be reached without
    /// passing the branch's immediate post-dominator. Under the stack, the lanes of each
    /// successor run on alone until that post-dominator, so such a block is the only
    /// kind a group of lanes can run after another group ran it (cycles included: lanes
    /// that leave a loop at different iterations by the same exit are two groups that
    /// reach the exit from the branch's two successors). So is a block that one group
    /// runs before the post-dominator and all lanes can run again after it, around a
    /// cycle that does not lead back to the branch: the group runs it a pass ahead of
    /// the others. (A cycle that leads back to the branch, as an outer loop around it, is
    /// passed over: its lanes split afresh at every pass, and what an inner loop's
    /// uneven trip counts cost, only loop merging, Section 5.2, could recover; the
    /// pass's `divergent` and `all` modes do not linearize nested cycles.) Where there is none, every block
    /// runs at most once per pass already, and linearizing the region removes nothing
    /// but costs its guards: the linearizer leaves it as it is. A branch in a nested
    /// divergence is seen on its own, with its own post-dominator.
    ///
    /// Linear in the region per divergent branch and successor.
    pub fn can_run_a_block_twice(
        &self,
        cfg: &ControlFlowGraph<N>,
        postdom: &PostDominatorTree<N>,
        is_divergent_branch: impl Fn(N) -> bool,
    ) -> bool {
        !self.reruns(cfg, postdom, is_divergent_branch).is_empty()
    }

    /// How many more times than once per pass of a warp an IPDOM stack can run each block
    /// of the region, at most (the blocks it can run only once left out), by the two
    /// cases of [`Self::can_run_a_block_twice`]: for every divergent branch of the region
    /// or its entry, a block reached from `k` of its successors before its
    /// post-dominator can run `k - 1` more times (one per further group of lanes), and a
    /// block one group runs a pass ahead of the others once more; the branches' counts
    /// add up (Figure 1: `B3` once more, `B5` twice more, `B4` once more — a bound: with
    /// the figure's lanes `B4` runs once). In reverse post-order of the region. The
    /// weights of linearization's cost model, against the guards it adds.
    ///
    /// Linear in the region per divergent branch and successor.
    pub fn reruns(
        &self,
        cfg: &ControlFlowGraph<N>,
        postdom: &PostDominatorTree<N>,
        is_divergent_branch: impl Fn(N) -> bool,
    ) -> Vec<(N, u32)> {
        // Per block: the walk that last visited it (one stamp per branch and successor)
        // and how many walks of the current branch reached it. Maps of the region's own
        // blocks: a table indexed by block would cost the whole kernel per region.
        let mut stamp: FxHashMap<N, u32> = FxHashMap::default();
        let mut groups: FxHashMap<N, u32> = FxHashMap::default();
        let mut extra: FxHashMap<N, u32> = FxHashMap::default();
        let mut next_stamp = 0u32;
        let mut stack = Vec::new();
        let branches = self.entry.iter().chain(self.blocks.iter());
        for &d in branches.filter(|&&d| is_divergent_branch(d)) {
            let ipdom = postdom.ipdom(d);
            let mut succs: Vec<N> = cfg.succs(d).to_vec();
            succs.sort_by_key(|s| s.index());
            succs.dedup();
            if succs.len() < 2 {
                continue; // it cannot split a warp
            }
            // The groups that run on alone: those bound for the region's blocks before
            // the post-dominator.
            succs.retain(|&s| self.contains(s) && Some(s) != ipdom);
            groups.clear();
            for &s in &succs {
                next_stamp += 1;
                stack.clear();
                stack.push(s);
                while let Some(b) = stack.pop() {
                    if stamp.insert(b, next_stamp) == Some(next_stamp) {
                        continue;
                    }
                    *groups.entry(b).or_insert(0) += 1;
                    stack.extend(
                        cfg.succs(b)
                            .iter()
                            .copied()
                            .filter(|&t| self.contains(t) && Some(t) != ipdom),
                    );
                }
            }
            for (&b, &g) in &groups {
                if g > 1 {
                    *extra.entry(b).or_insert(0) += g - 1;
                }
            }
            // A block one group ran before the post-dominator that the lanes can run
            // again after it, around a cycle of the region that does not come back to
            // `d`: the group ran it a pass ahead of the others (Figure 6's lanes that
            // jump into the loop), which the linearized order lines up. Where the cycle
            // comes back to `d` (a loop around an `if`/`else`, or an inner loop's exit
            // inside an outer loop), the lanes split afresh in each pass, in step.
            let Some(p) = ipdom.filter(|&p| self.contains(p)) else {
                continue;
            };
            let mut back_at_d = false;
            let mut ahead: Vec<N> = Vec::new();
            let mut seen: FxHashSet<N> = FxHashSet::default();
            stack.clear();
            stack.push(p);
            while let Some(b) = stack.pop() {
                for &t in cfg.succs(b) {
                    if !self.contains(t) || !seen.insert(t) {
                        continue;
                    }
                    if groups.get(&t).is_some_and(|&g| g > 0) {
                        ahead.push(t);
                    }
                    back_at_d |= t == d;
                    stack.push(t);
                }
            }
            if !back_at_d {
                for t in ahead {
                    *extra.entry(t).or_insert(0) += 1;
                }
            }
        }
        self.blocks
            .iter()
            .filter_map(|b| extra.get(b).map(|&n| (*b, n)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// The maximal structured sub-regions of the region (Definition 5, Algorithm 3),
    /// pairwise disjoint, in reverse post-order of their entries. The linearizer guards
    /// each at its entry only and keeps its blocks as they are.
    pub fn structured_subregions(
        &self,
        cfg: &ControlFlowGraph<N>,
        domtree: &DominatorTree<N>,
        postdom: &PostDominatorTree<N>,
        edges: &UnstructuredEdges<N>,
    ) -> Vec<StructuredRegion<N>> {
        // Sets of the region's blocks: a table indexed by block would cost the whole kernel
        // per region.
        let mut covered: FxHashSet<N> = FxHashSet::default();
        let mut in_piece: FxHashSet<N> = FxHashSet::default();
        let mut out = Vec::new();
        for &b in &self.blocks {
            if covered.contains(&b) {
                continue;
            }
            // Algorithm 3, lines 4-6: `b` immediately dominates its immediate
            // post-dominator. Then keep chaining through the next post-dominators while
            // each step is again such a structured piece.
            let mut blocks: Vec<N> = Vec::new();
            let mut exit = None;
            let mut x = b;
            while let Some(p) = postdom.ipdom(x) {
                if !self.contains(p) || domtree.idom(p) != Some(x) || covered.contains(&p) {
                    break;
                }
                let Some(piece) =
                    self.structured_piece(cfg, domtree, postdom, edges, x, p, &mut in_piece)
                else {
                    break;
                };
                // Later pieces must not reach back into earlier ones.
                if piece.iter().any(|&n| n != x && covered.contains(&n)) {
                    break;
                }
                for &n in &piece {
                    if covered.insert(n) {
                        blocks.push(n);
                    }
                }
                exit = Some(p);
                x = p;
            }
            if let Some(exit) = exit {
                blocks.sort_by_key(|&n| domtree.rpo_number(n));
                out.push(StructuredRegion {
                    entry: b,
                    exit,
                    blocks,
                });
            }
        }
        out
    }

    /// The blocks between `d` and its immediate post-dominator `p`, both included, if
    /// they form a structured sub-region of this region (Algorithm 3, lines 7-19).
    #[allow(clippy::too_many_arguments)]
    fn structured_piece(
        &self,
        cfg: &ControlFlowGraph<N>,
        domtree: &DominatorTree<N>,
        postdom: &PostDominatorTree<N>,
        edges: &UnstructuredEdges<N>,
        d: N,
        p: N,
        mark: &mut FxHashSet<N>,
    ) -> Option<Vec<N>> {
        // visit(idom, ipdom) forwards, then visit(ipdom, idom) backwards.
        let mut nodes = vec![d, p];
        mark.insert(d);
        mark.insert(p);
        let mut stack = vec![d];
        while let Some(n) = stack.pop() {
            for &s in cfg.succs(n) {
                if mark.insert(s) {
                    nodes.push(s);
                    stack.push(s);
                }
            }
        }
        stack.push(p);
        while let Some(n) = stack.pop() {
            for &s in cfg.preds(n) {
                if domtree.is_reachable(s) && mark.insert(s) {
                    nodes.push(s);
                    stack.push(s);
                }
            }
        }
        let ok = nodes.iter().all(|&n| {
            self.contains(n)
                && (n == d || domtree.strictly_dominates(d, n))
                && (n == p || postdom.strictly_post_dominates(p, n))
                && (n == d
                    || cfg
                        .preds(n)
                        .iter()
                        .all(|&k| !domtree.is_reachable(k) || mark.contains(&k)))
                && if n == p {
                    // The exit leaves the sub-region (or loops back to its entry).
                    cfg.succs(n).iter().all(|&s| !mark.contains(&s) || s == d)
                } else {
                    cfg.succs(n)
                        .iter()
                        .all(|&s| mark.contains(&s) && !edges.contains(n, s))
                }
        });
        mark.clear();
        ok.then_some(nodes)
    }
}

/// A structured sub-region of an unstructured region (Definition 5): entered only at
/// `entry`, left only from `exit`, both included, and free of unstructured edges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructuredRegion<N> {
    entry: N,
    exit: N,
    blocks: Vec<N>,
}

impl<N: Copy> StructuredRegion<N> {
    /// The entry block `D`, which dominates every other block of the sub-region.
    pub fn entry(&self) -> N {
        self.entry
    }

    /// The exit block `P`, which post-dominates every other block of the sub-region.
    pub fn exit(&self) -> N {
        self.exit
    }

    /// The blocks, entry and exit included, in reverse post-order.
    pub fn blocks(&self) -> &[N] {
        &self.blocks
    }
}

/// Scratch state of the region search: generation-stamped marks indexed by node, so that
/// each pass starts clean without clearing whole tables.
struct Search<'a, N: EntityRef> {
    cfg: &'a ControlFlowGraph<N>,
    domtree: &'a DominatorTree<N>,
    postdom: &'a PostDominatorTree<N>,
    /// Bounds the reachability walks to the blocks between a region's bounds.
    rank: SccRank,
    /// Walk the whole kernel and scan every block per step, as Algorithm 2 is written
    /// (the tests' reference for the bounded walks).
    exhaustive: bool,
    member: Vec<u32>,
    reach: Vec<u32>,
    from: Vec<u32>,
    /// The blocks the last walks marked in `reach` and in `from`.
    reach_list: Vec<N>,
    from_list: Vec<N>,
    generation: u32,
    stack: Vec<N>,
}

/// A region under construction.
struct Grown<N> {
    entry: Option<N>,
    exit: Option<N>,
    blocks: Vec<N>,
}

impl<'a, N: EntityRef + Copy + Eq + Hash + Debug> Search<'a, N> {
    fn new(
        cfg: &'a ControlFlowGraph<N>,
        domtree: &'a DominatorTree<N>,
        postdom: &'a PostDominatorTree<N>,
    ) -> Self {
        let n = cfg.num_nodes();
        Search {
            cfg,
            domtree,
            postdom,
            rank: SccRank::compute(cfg),
            exhaustive: false,
            member: vec![0; n],
            reach: vec![0; n],
            from: vec![0; n],
            reach_list: Vec::new(),
            from_list: Vec::new(),
            generation: 0,
            stack: Vec::new(),
        }
    }

    fn bump(&mut self) -> u32 {
        self.generation += 1;
        self.generation
    }

    /// The bounds of Definition 4 for `set`: the nearest blocks outside it that dominate
    /// and post-dominate all of it.
    fn strict_bounds(&self, set: &[N], member: u32) -> (Option<N>, Option<N>) {
        let mut d = common_dominator(self.domtree, set.iter().copied());
        if let Some(x) = d {
            if self.member[x.index()] == member {
                d = self.domtree.idom(x);
            }
        }
        let mut p = set
            .split_first()
            .and_then(|(&first, rest)| common_post_dominator(self.postdom, first, rest));
        if let Some(x) = p {
            if self.member[x.index()] == member {
                p = self.postdom.ipdom(x);
            }
        }
        (d, p)
    }

    /// Marks in `reach` the blocks other than `p` that can reach `p` (all reachable
    /// blocks for the virtual exit), and in `from` those other than `d` that `d` can
    /// reach (all of them for the virtual entry), listing them in `reach_list` and
    /// `from_list`. Between two real bounds the walks stop at blocks ranked below `d`
    /// (backwards) or above `p` (forwards): those are neither dominated by `d` nor
    /// post-dominated by `p`, and lead to no block that is (see [`SccRank`]), so every
    /// block Algorithm 2 asks about is still marked exactly.
    fn mark_reachability(&mut self, d: Option<N>, p: Option<N>) -> (u32, u32) {
        let lowest = match d {
            Some(d) if !self.exhaustive => self.rank.of(d),
            _ => 0,
        };
        let highest = match p {
            Some(p) if !self.exhaustive => self.rank.of(p),
            _ => u32::MAX,
        };
        let g_reach = self.bump();
        self.reach_list.clear();
        match p {
            None => {
                for &n in self.domtree.rpo() {
                    self.reach[n.index()] = g_reach;
                }
            }
            Some(p) => {
                self.stack.clear();
                self.stack.push(p);
                while let Some(n) = self.stack.pop() {
                    for &k in self.cfg.preds(n) {
                        if self.domtree.is_reachable(k)
                            && self.reach[k.index()] != g_reach
                            && self.rank.of(k) >= lowest
                        {
                            self.reach[k.index()] = g_reach;
                            self.reach_list.push(k);
                            self.stack.push(k);
                        }
                    }
                }
            }
        }
        let g_from = self.bump();
        self.from_list.clear();
        match d {
            None => {
                for &n in self.domtree.rpo() {
                    self.from[n.index()] = g_from;
                }
            }
            Some(d) => {
                self.stack.clear();
                self.stack.push(d);
                while let Some(n) = self.stack.pop() {
                    for &s in self.cfg.succs(n) {
                        if self.from[s.index()] != g_from && self.rank.of(s) <= highest {
                            self.from[s.index()] = g_from;
                            self.from_list.push(s);
                            self.stack.push(s);
                        }
                    }
                }
            }
        }
        (g_reach, g_from)
    }

    /// Adds to the region the blocks of Algorithm 2, lines 10-14: `(N1 ∩ N2) ∪ (N3 ∩ N4)`
    /// without `d` and `p`, from the marks of [`Self::mark_reachability`]. Between real
    /// bounds only the marked blocks can qualify, so only they are looked at; a virtual
    /// bound marks every block, and then every block is.
    fn add_between(&mut self, d: Option<N>, p: Option<N>, member: u32, blocks: &mut Vec<N>) {
        let (g_reach, g_from) = self.mark_reachability(d, p);
        let candidates = if self.exhaustive || d.is_none() || p.is_none() {
            self.domtree.rpo().to_vec()
        } else {
            let mut all = core::mem::take(&mut self.reach_list);
            all.append(&mut self.from_list);
            all
        };
        for &x in &candidates {
            if Some(x) == d || Some(x) == p || self.member[x.index()] == member {
                continue;
            }
            let n1 = d.is_none_or(|d| self.domtree.strictly_dominates(d, x));
            let n3 = p.is_none_or(|p| self.postdom.strictly_post_dominates(p, x));
            if (n1 && self.reach[x.index()] == g_reach) || (n3 && self.from[x.index()] == g_from) {
                self.member[x.index()] = member;
                blocks.push(x);
            }
        }
    }

    /// Grows `blocks` into a region satisfying Definition 4 that holds every edge of
    /// `edges` (Algorithm 2 with the closure described in the module documentation).
    /// `first` gives the bounds of the first iteration; otherwise they are computed
    /// from `blocks`.
    fn grow(
        &mut self,
        mut blocks: Vec<N>,
        edges: &[(N, N)],
        first: Option<(Option<N>, Option<N>)>,
    ) -> Grown<N> {
        let member = self.bump();
        blocks.retain(|&b| self.domtree.is_reachable(b));
        blocks.sort_by_key(|b| b.index());
        blocks.dedup();
        for &b in &blocks {
            self.member[b.index()] = member;
        }
        let (mut d, mut p) = match first {
            Some(bounds) => bounds,
            None => self.strict_bounds(&blocks, member),
        };
        loop {
            let before = blocks.len();
            // Algorithm 2, lines 10-14: (N1 ∩ N2) ∪ (N3 ∩ N4), without D and P.
            self.add_between(d, p, member, &mut blocks);
            // Definition 4: edges enter only from D and leave only to P.
            for i in 0..blocks.len() {
                let x = blocks[i];
                for &k in self.cfg.preds(x) {
                    if self.domtree.is_reachable(k)
                        && self.member[k.index()] != member
                        && Some(k) != d
                    {
                        self.member[k.index()] = member;
                        blocks.push(k);
                    }
                }
                for &s in self.cfg.succs(x) {
                    if self.member[s.index()] != member && Some(s) != p {
                        self.member[s.index()] = member;
                        blocks.push(s);
                    }
                }
            }
            // The edges must still lie in the region.
            for &(u, v) in edges {
                let in_u = self.member[u.index()] == member;
                let in_v = self.member[v.index()] == member;
                // The source is in the region or its entry, the destination in it or its
                // exit, and at least one of them in it.
                let add_u = !in_u && (Some(u) != d || (!in_v && Some(v) == p));
                let add_v = !in_v && Some(v) != p;
                if add_u {
                    self.member[u.index()] = member;
                    blocks.push(u);
                }
                if add_v {
                    self.member[v.index()] = member;
                    blocks.push(v);
                }
            }
            let bounds = self.strict_bounds(&blocks, member);
            if blocks.len() == before && bounds == (d, p) {
                break;
            }
            (d, p) = bounds;
        }
        Grown {
            entry: d,
            exit: p,
            blocks,
        }
    }

    /// The minimal region of one unstructured edge.
    fn minimal(&mut self, u: N, v: N) -> Grown<N> {
        // Definitions 2 and 3 applied to {u, v}, which may contain its own bounds.
        let d = common_dominator(self.domtree, [u, v]);
        let p = common_post_dominator(self.postdom, u, &[v]);
        let seed: Vec<N> = [u, v]
            .into_iter()
            .filter(|&b| Some(b) != d && Some(b) != p)
            .collect();
        self.grow(seed, &[(u, v)], Some((d, p)))
    }
}

/// Does an edge lie in a region, given whether its source and destination are blocks of
/// the region, whether the source is the region's entry and the destination its exit?
fn lies_in(src_in: bool, dst_in: bool, src_is_entry: bool, dst_is_exit: bool) -> bool {
    match (src_in, dst_in) {
        (true, true) => true,
        (true, false) => dst_is_exit,
        (false, true) => src_is_entry,
        (false, false) => false,
    }
}

/// A region found by [`find_unstructured_regions`], with the edges lying in it; `None`
/// once merged into another.
type Slot<N> = Option<(Grown<N>, Vec<UnstructuredEdge<N>>)>;

/// The minimal unstructured region of the unstructured edge `edge` alone (Definition 4,
/// Algorithm 2), before any merging with the regions of other edges.
pub fn minimal_region<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    domtree: &DominatorTree<N>,
    postdom: &PostDominatorTree<N>,
    edge: &UnstructuredEdge<N>,
) -> Region<N> {
    MinimalRegions::new(cfg, domtree, postdom).of(edge)
}

/// [`minimal_region`] for many edges of one graph: the search's set-up (the topological
/// rank of the strongly connected components and the marks per block, work proportional
/// to the graph) is done once, not once per edge.
pub struct MinimalRegions<'a, N: EntityRef>(Search<'a, N>);

impl<'a, N: EntityRef + Copy + Eq + Hash + Debug> MinimalRegions<'a, N> {
    /// A search over `cfg`.
    pub fn new(
        cfg: &'a ControlFlowGraph<N>,
        domtree: &'a DominatorTree<N>,
        postdom: &'a PostDominatorTree<N>,
    ) -> Self {
        MinimalRegions(Search::new(cfg, domtree, postdom))
    }

    /// The minimal unstructured region of `edge` alone, as [`minimal_region`] finds it.
    pub fn of(&mut self, edge: &UnstructuredEdge<N>) -> Region<N> {
        let g = self.0.minimal(edge.from, edge.to);
        Region::new(self.0.domtree, g.entry, g.exit, g.blocks, vec![*edge])
    }
}

/// The unstructured regions of the graph (Algorithm 2 for each unstructured edge, merged
/// as described in the [module documentation](self)): pairwise disjoint, none holding the
/// entry of another, every unstructured edge lying in exactly one of them. In reverse
/// post-order of their first blocks.
pub fn find_unstructured_regions<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    domtree: &DominatorTree<N>,
    postdom: &PostDominatorTree<N>,
    edges: &UnstructuredEdges<N>,
) -> Vec<Region<N>> {
    find_regions(Search::new(cfg, domtree, postdom), edges)
}

/// [`find_unstructured_regions`] with unbounded walks and whole-kernel scans in every
/// step of Algorithm 2: the reference the bounded search is checked against.
#[cfg(test)]
fn find_unstructured_regions_exhaustively<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    domtree: &DominatorTree<N>,
    postdom: &PostDominatorTree<N>,
    edges: &UnstructuredEdges<N>,
) -> Vec<Region<N>> {
    let mut search = Search::new(cfg, domtree, postdom);
    search.exhaustive = true;
    find_regions(search, edges)
}

/// The body of [`find_unstructured_regions`], with the search to use.
fn find_regions<N: EntityRef + Copy + Eq + Hash + Debug>(
    mut search: Search<'_, N>,
    edges: &UnstructuredEdges<N>,
) -> Vec<Region<N>> {
    const FREE: u32 = u32::MAX;
    let (cfg, domtree) = (search.cfg, search.domtree);
    // Slots of regions found so far; merged ones are emptied.
    let mut slots: Vec<Slot<N>> = Vec::new();
    // The slot holding each block, and the slot whose entry each block is.
    let mut owner: Vec<u32> = vec![FREE; cfg.num_nodes()];
    let mut entry_owner: Vec<u32> = vec![FREE; cfg.num_nodes()];
    let mut virtual_entry_owner = FREE;

    for e in edges.edges() {
        let holds = |i: u32, slots: &[Slot<N>]| {
            let Some((g, _)) = &slots[i as usize] else {
                return false;
            };
            lies_in(
                owner[e.from.index()] == i,
                owner[e.to.index()] == i,
                g.entry == Some(e.from),
                g.exit == Some(e.to),
            )
        };
        let known = [owner[e.from.index()], owner[e.to.index()]]
            .into_iter()
            .find(|&i| i != FREE && holds(i, &slots));
        if let Some(i) = known {
            if let Some((_, list)) = &mut slots[i as usize] {
                list.push(*e);
            }
            continue;
        }
        let mut grown = search.minimal(e.from, e.to);
        let mut list = vec![*e];
        loop {
            // The regions this one overlaps: a shared block, or an entry of one in the
            // other, or a shared entry.
            let mut hit: Vec<u32> = Vec::new();
            for &b in &grown.blocks {
                hit.push(owner[b.index()]);
                hit.push(entry_owner[b.index()]);
            }
            match grown.entry {
                Some(d) => {
                    hit.push(owner[d.index()]);
                    hit.push(entry_owner[d.index()]);
                }
                None => hit.push(virtual_entry_owner),
            }
            hit.retain(|&i| i != FREE);
            hit.sort_unstable();
            hit.dedup();
            if hit.is_empty() {
                break;
            }
            let mut blocks = core::mem::take(&mut grown.blocks);
            for i in hit {
                if let Some((g, l)) = slots[i as usize].take() {
                    for &b in &g.blocks {
                        owner[b.index()] = FREE;
                    }
                    match g.entry {
                        Some(d) => entry_owner[d.index()] = FREE,
                        None => virtual_entry_owner = FREE,
                    }
                    blocks.extend(g.blocks);
                    list.extend(l);
                }
            }
            let pairs: Vec<(N, N)> = list.iter().map(|e| (e.from, e.to)).collect();
            grown = search.grow(blocks, &pairs, None);
        }
        let slot = slots.len() as u32;
        for &b in &grown.blocks {
            owner[b.index()] = slot;
        }
        match grown.entry {
            Some(d) => entry_owner[d.index()] = slot,
            None => virtual_entry_owner = slot,
        }
        slots.push(Some((grown, list)));
    }

    // Edges in the order of `edges`, which is also the order they were found in.
    let order: FxHashMap<(N, N), usize> = edges
        .edges()
        .iter()
        .enumerate()
        .map(|(i, e)| ((e.from, e.to), i))
        .collect();
    let mut regions: Vec<Region<N>> = slots
        .into_iter()
        .flatten()
        .map(|(g, mut list)| {
            list.sort_by_key(|e| order.get(&(e.from, e.to)).copied());
            Region::new(domtree, g.entry, g.exit, g.blocks, list)
        })
        .collect();
    regions.sort_by_key(|r| r.blocks.first().and_then(|&b| domtree.rpo_number(b)));
    regions
}

/// Which parts of a kernel the linearizer transforms.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum RegionSelection {
    /// The unstructured regions that contain a divergent branch (in a block of the
    /// region or at its entry): elsewhere the warp stays converged, and the hardware's
    /// reconvergence at post-dominators costs nothing.
    #[default]
    DivergentUnstructured,
    /// Every unstructured region.
    AllUnstructured,
    /// The whole kernel as one region (Section 3 of the paper): every reachable block,
    /// between the virtual entry and exit.
    WholeKernel,
}

/// The regions to linearize under `selection`, given the unstructured `regions` of
/// [`find_unstructured_regions`] and which blocks end with a divergent branch.
pub fn select_regions<N: EntityRef + Copy + Eq + Hash + Debug>(
    domtree: &DominatorTree<N>,
    edges: &UnstructuredEdges<N>,
    regions: &[Region<N>],
    selection: RegionSelection,
    is_divergent_branch: impl Fn(N) -> bool,
) -> Vec<Region<N>> {
    match selection {
        RegionSelection::WholeKernel => {
            if domtree.rpo().is_empty() {
                return Vec::new();
            }
            vec![Region::new(
                domtree,
                None,
                None,
                domtree.rpo().to_vec(),
                edges.edges().to_vec(),
            )]
        }
        RegionSelection::AllUnstructured => regions.to_vec(),
        RegionSelection::DivergentUnstructured => regions
            .iter()
            .filter(|r| {
                r.entry.is_some_and(&is_divergent_branch)
                    || r.blocks.iter().any(|&b| is_divergent_branch(b))
            })
            .cloned()
            .collect(),
    }
}

mod rank;
#[cfg(test)]
mod tests;
