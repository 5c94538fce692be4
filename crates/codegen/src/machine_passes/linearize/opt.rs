//! Guard optimisations (Section 4.2 of the paper), enabled by `linearize_opt`.
//!
//! First a *guard-value analysis*: which values the guard variable may hold on each edge
//! of the linearized region. A block of the region (and the region's entry) leaves the
//! constants it assigns; a guard `g == k` passes `{k}` to its block and the rest to its
//! fall-through; a back-edge guard `g <= k` passes the values up to `k` back and the rest
//! on. The sets only grow and are bounded by the region's ids, so the iteration ends.
//!
//! Then, by level:
//! - **O1** (levels 1 and up): an edge leaving a block of the region (or the region's entry,
//!   or a back-edge guard) whose value set lacks the id of the guard it enters can only fall
//!   through that guard, so it goes to the guard's fall-through successor instead (the paper
//!   redirects when one edge has, or one edge lacks, the value; every such edge is safe to
//!   redirect). A guard whose remaining edges carry only its id always holds: it is removed
//!   and its edges go to its block.
//! - **O2** (levels 2 and up): the guards of the blocks a block dominates are nested inside
//!   its own guard: the guard's fall-through edge, taken by the lanes that do not run the
//!   block, skips the guards that test for the blocks it dominates. The linearized order
//!   keeps each block's dominator subtree contiguous (`dominance_order` in the parent module), so the
//!   skipped guards form one run and the guard becomes an if-then around the whole subtree;
//!   every skip is proved by the value analysis, which sees that no lane failing the guard
//!   can want a block the guard dominates (every path to such a block passes the dominator)
//!   — with loops the dominance argument alone would not do: a lane sent back over a back
//!   edge may hold the id of a dominated block without passing the dominator's guard again.
//!   Further guards that the failing lanes cannot match are skipped the same way.
//! - **O3** (level 3): a guard with a single predecessor that leaves a part of the region
//!   (a region block, or the exit of a structured sub-region) is merged into it (its test
//!   and branch replace the block's jump).
//!
//! Beyond the paper (the gap to a structurizer's flow blocks is in docs/linearization.md):
//! - **Empty parts** (O1 and up): a block that only jumps forward is threaded past: the
//!   assignments that name it name its successor instead ([`thread_empty_parts`]), and once
//!   no edge carries its id, [`skip_guard`] removes it with its guard.
//! - **Predication** (O3, `linearize_predicate`): a short guarded block runs under its
//!   guard's predicate in the guard's place ([`predicate_part`]); O3's merging then joins a
//!   run of them into one straight-line block.
//! - **Folded tests** (O3): a test that recomputes the block's own branch condition from the
//!   `selp` just before it reads the condition instead ([`fold_tests`]); and across blocks,
//!   at a join, where a forward analysis of `g`'s values per branch condition shows the
//!   test passes exactly where some condition holds ([`fold_tests_across_blocks`]).
//! - **Dead assignments** (O3, regions without back edges): an assignment to `g` that no
//!   later test can tell from the value it replaces goes ([`remove_dead_assignments`]).
//! - **Unread assignments** (O3): an assignment to `g` after which no path reads `g` goes
//!   (a liveness analysis of `g`, [`remove_unread_assignments`]); back edges allowed.
//!
//! Blocks inside a structured sub-region do not write `g`: the analysis passes their
//! input on unchanged.
//!
//! Every transformation keeps each guard's branch reconverging at its fall-through
//! successor, so the result stays structured.

use super::{GuardRegs, Linearized};
use crate::mir::{MBlock, MInst, MInstKind, MirFunction, Operand, Reg};
use cranelift_entity::{EntityRef, SecondaryMap};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;
use warplift_ir::cfg::{Cfg, ControlFlowGraph, PostDominatorTree};

/// What the optimisations did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OptStats {
    /// Guard blocks removed (always-true guards, and guards merged by O3).
    pub guards_removed: u64,
    /// Guard tests removed (always-true guards).
    pub tests_removed: u64,
    /// Edges redirected past a guard (O1).
    pub edges_redirected: u64,
    /// Empty parts threaded past and removed with their guards (O1 and up).
    pub empty_parts_removed: u64,
    /// Blocks predicated in their guard's place (O3).
    pub blocks_predicated: u64,
    /// Assignments to the guard variable that no later guard could tell apart from the
    /// value it replaced, removed (O3).
    pub assignments_removed: u64,
    /// Guard tests that read the branch condition they recompute instead (O3).
    pub tests_folded: u64,
}

/// The test a guard block makes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Test {
    /// `g == id`.
    Eq(u32),
    /// `g <= id`.
    Le(u32),
}

/// A set of guard values (block ids), iterated in increasing order. The ids below 128
/// (every id of a region of fewer than 127 parts) are the bits of one word, so the sets
/// the analyses copy and merge thousands of times cost no allocation; larger ids go to an
/// ordered set beside them, which is present only while it holds one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Values {
    small: u128,
    large: Option<BTreeSet<u32>>,
}

impl Values {
    fn new() -> Values {
        Values::default()
    }

    fn insert(&mut self, v: u32) {
        if v < 128 {
            self.small |= 1 << v;
        } else {
            self.large.get_or_insert_with(BTreeSet::new).insert(v);
        }
    }

    fn contains(&self, v: u32) -> bool {
        if v < 128 {
            self.small & (1 << v) != 0
        } else {
            self.large.as_ref().is_some_and(|l| l.contains(&v))
        }
    }

    fn len(&self) -> usize {
        self.small.count_ones() as usize + self.large.as_ref().map_or(0, BTreeSet::len)
    }

    fn is_empty(&self) -> bool {
        self.small == 0 && self.large.is_none()
    }

    /// The values, smallest first.
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let mut bits = self.small;
        core::iter::from_fn(move || {
            (bits != 0).then(|| {
                let v = bits.trailing_zeros();
                bits &= bits - 1;
                v
            })
        })
        .chain(self.large.iter().flatten().copied())
    }

    /// Adds every value of `other`.
    fn union_with(&mut self, other: &Values) {
        self.small |= other.small;
        if let Some(l) = &other.large {
            self.large
                .get_or_insert_with(BTreeSet::new)
                .extend(l.iter().copied());
        }
    }

    /// The values of both.
    fn union(&self, other: &Values) -> Values {
        let mut u = self.clone();
        u.union_with(other);
        u
    }
}

impl Extend<u32> for Values {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, values: I) {
        for v in values {
            self.insert(v);
        }
    }
}

impl FromIterator<u32> for Values {
    fn from_iter<I: IntoIterator<Item = u32>>(values: I) -> Values {
        let mut set = Values::new();
        set.extend(values);
        set
    }
}

impl<const N: usize> From<[u32; N]> for Values {
    fn from(values: [u32; N]) -> Values {
        values.into_iter().collect()
    }
}

/// The constants a block assigns to the guard variable (its last definition of `g`), or
/// `None` when it does not write `g` (a block inside a structured sub-region).
fn assigned(func: &MirFunction, b: MBlock, regs: GuardRegs) -> Option<Values> {
    let imm = |o: Operand| match o {
        Operand::Imm(v) => Some(v as u32),
        Operand::Reg(_) => None,
    };
    for i in func.blocks[b].insts.iter().rev() {
        match i.kind {
            MInstKind::Mov { dst, src, .. } if dst == regs.g => {
                return Some(imm(src).into_iter().collect());
            }
            MInstKind::Selp { dst, a, b, .. } if dst == regs.g => {
                return Some(imm(a).into_iter().chain(imm(b)).collect());
            }
            _ => {}
        }
    }
    None
}

/// The value sets on each edge `(from, to)` leaving a block of the linearized region.
fn guard_values(
    func: &MirFunction,
    lin: &Linearized,
    tests: &FxHashMap<MBlock, Test>,
    regs: GuardRegs,
) -> FxHashMap<(MBlock, MBlock), Values> {
    let mut edges: FxHashMap<(MBlock, MBlock), Values> = FxHashMap::default();
    let mut input: FxHashMap<MBlock, Values> = FxHashMap::default();
    // The analysis stays in the linearized region: lanes leave it at the exit, or at an
    // edge of the entry that bypasses the region.
    let inside: FxHashSet<MBlock> = tests
        .keys()
        .chain(&lin.blocks)
        .copied()
        .chain([lin.entry])
        .collect();
    let mut work: Vec<MBlock> = vec![lin.entry];
    let mut queued: FxHashSet<MBlock> = FxHashSet::from_iter([lin.entry]);
    while let Some(b) = work.pop() {
        queued.remove(&b);
        let outs: Vec<(MBlock, Values)> = match (tests.get(&b), func.terminator(b)) {
            (Some(&test), Some(t)) => match &t.kind {
                MInstKind::Branch {
                    taken, not_taken, ..
                } => {
                    let inp = input.get(&b).cloned().unwrap_or_default();
                    let (yes, no): (Values, Values) = inp.iter().partition(|&v| match test {
                        Test::Eq(k) => v == k,
                        Test::Le(k) => v <= k,
                    });
                    vec![(taken.block, yes), (not_taken.block, no)]
                }
                _ => continue,
            },
            _ => {
                // A block no lane reaches (a guard's taken edge that no value matches)
                // passes nothing on, whatever it assigns.
                let inp = input.get(&b).cloned().unwrap_or_default();
                if b != lin.entry && inp.is_empty() {
                    continue;
                }
                // A block that does not write `g` passes on what it received.
                let vals = assigned(func, b, regs).unwrap_or(inp);
                func.succs(b).map(|s| (s, vals.clone())).collect()
            }
        };
        for (s, vals) in outs {
            let first = !edges.contains_key(&(b, s));
            let e = edges.entry((b, s)).or_default();
            let before = e.len();
            e.union_with(&vals);
            let grew = e.len() != before;
            let inp = input.entry(s).or_default();
            let before = inp.len();
            inp.union_with(&vals);
            if (first || grew || inp.len() != before)
                && s != lin.exit
                && inside.contains(&s)
                && queued.insert(s)
            {
                work.push(s);
            }
        }
    }
    edges
}

/// The linearized region as a graph of its own: its entry, its blocks, guards and exit,
/// without the rest of the kernel. A region is entered only from its entry and left only
/// to its exit, so post-dominance among its blocks is the same as in the whole kernel, and
/// checking one region costs what the region costs, not what the kernel does.
struct RegionGraph<'a> {
    func: &'a MirFunction,
    /// The region's blocks still placed, entry first.
    nodes: Vec<MBlock>,
    members: FxHashSet<MBlock>,
}

impl Cfg for RegionGraph<'_> {
    type Node = MBlock;

    fn entry(&self) -> Option<MBlock> {
        self.nodes.first().copied()
    }

    fn num_nodes(&self) -> usize {
        self.func.blocks.len()
    }

    fn successors(&self, node: MBlock, out: &mut Vec<MBlock>) {
        // Straight from the terminator: asked once per block of every check, a list of
        // its own per call cost more than the check's analysis.
        if let Some(t) = self.func.terminator(node) {
            t.kind.for_each_target(|t| {
                if self.members.contains(&t.block) {
                    out.push(t.block);
                }
            });
        }
    }

    fn nodes(&self) -> impl Iterator<Item = MBlock> + '_ {
        self.nodes.iter().copied()
    }
}

/// Does every conditional branch among `blocks` reconverge at its fall-through successor
/// (the shape of Claim 1 that keeps each block to one execution per pass of the warp)?
/// `region` lists the region's blocks (entry first); `removed` those taken out.
fn structured(
    func: &MirFunction,
    region: &[MBlock],
    removed: &FxHashSet<MBlock>,
    blocks: &[MBlock],
) -> bool {
    let nodes: Vec<MBlock> = region
        .iter()
        .copied()
        .filter(|b| !removed.contains(b))
        .collect();
    let dense = DenseRegion::new(func, &nodes).and_then(|d| d.structured(func, blocks));
    if dense.is_some() && !cfg!(debug_assertions) {
        return dense == Some(true);
    }
    let members: FxHashSet<MBlock> = nodes.iter().copied().collect();
    let graph = RegionGraph {
        func,
        nodes,
        members,
    };
    let pdt = PostDominatorTree::compute(&ControlFlowGraph::compute(&graph));
    let general = blocks
        .iter()
        .filter(|b| graph.members.contains(b))
        .all(|&b| match func.terminator(b).map(|t| &t.kind) {
            Some(MInstKind::Branch { not_taken, .. }) => {
                pdt.reconvergence_point(b) == Some(not_taken.block)
            }
            _ => true,
        });
    // Test builds compute both: the dense way must agree with the general one.
    debug_assert!(
        dense.is_none_or(|d| d == general),
        "the dense check disagrees"
    );
    general
}

/// The region's placed blocks numbered densely, for [`structured`]'s post-dominators:
/// the check runs after every batch of changes (and every bisection probe), and the
/// general [`PostDominatorTree`] on a [`ControlFlowGraph`] of the region cost most of it
/// (hashed membership, a graph with predecessor lists, a search for regions that cannot
/// reach an exit). Here the tree is the classic iterative one of Cooper, Harvey and
/// Kennedy on the reversed graph, over plain vectors.
struct DenseRegion {
    /// Each node's index among the region's placed blocks (`NONE`: not one), by block.
    index: Vec<u32>,
    /// Immediate post-dominators by node; `n` (the node count) stands for the virtual
    /// exit.
    ipdom: Vec<u32>,
}

impl DenseRegion {
    const NONE: u32 = u32::MAX;

    /// The post-dominator tree of the region's blocks reached from its entry (`nodes[0]`),
    /// edges to blocks outside `nodes` left out; `None` where some reached block cannot
    /// reach a block without successors, the case the general tree handles by choosing
    /// representatives (a region whose exit branches back to its entry, say).
    fn new(func: &MirFunction, nodes: &[MBlock]) -> Option<DenseRegion> {
        const NONE: u32 = DenseRegion::NONE;
        let n = nodes.len();
        if n == 0 {
            return None;
        }
        let mut index = vec![NONE; func.blocks.len()];
        for (i, &b) in nodes.iter().enumerate() {
            *index.get_mut(b.index())? = i as u32;
        }
        // Distinct successors, in the order the terminator names them.
        let mut succ_start: Vec<u32> = Vec::with_capacity(n + 1);
        let mut succ: Vec<u32> = Vec::with_capacity(2 * n);
        for &b in nodes {
            succ_start.push(succ.len() as u32);
            let first = succ.len();
            if let Some(t) = func.terminator(b) {
                t.kind.for_each_target(|t| {
                    let j = index.get(t.block.index()).copied().unwrap_or(NONE);
                    if j != NONE && !succ[first..].contains(&j) {
                        succ.push(j);
                    }
                });
            }
        }
        succ_start.push(succ.len() as u32);
        let succs = |i: usize| &succ[succ_start[i] as usize..succ_start[i + 1] as usize];
        // The blocks the entry reaches.
        let mut reached = vec![false; n];
        let mut stack: Vec<u32> = vec![0];
        reached[0] = true;
        while let Some(i) = stack.pop() {
            for &s in succs(i as usize) {
                if !reached[s as usize] {
                    reached[s as usize] = true;
                    stack.push(s);
                }
            }
        }
        // Their predecessors among them.
        let mut pred_count = vec![0u32; n + 1];
        for i in (0..n).filter(|&i| reached[i]) {
            for &s in succs(i) {
                pred_count[s as usize + 1] += 1;
            }
        }
        for i in 0..n {
            pred_count[i + 1] += pred_count[i];
        }
        let pred_start = pred_count;
        let mut next = pred_start[..n].to_vec();
        let mut pred = vec![0u32; pred_start[n] as usize];
        for i in (0..n).filter(|&i| reached[i]) {
            for &s in succs(i) {
                pred[next[s as usize] as usize] = i as u32;
                next[s as usize] += 1;
            }
        }
        let preds = |i: usize| &pred[pred_start[i] as usize..pred_start[i + 1] as usize];
        // Post-order of the reversed graph from the virtual exit, whose successors there
        // are the reached blocks without successors.
        let exit = n as u32;
        let sinks: Vec<u32> = (0..n as u32)
            .filter(|&i| reached[i as usize] && succs(i as usize).is_empty())
            .collect();
        let mut po_number = vec![NONE; n + 1];
        let mut po: Vec<u32> = Vec::with_capacity(n + 1);
        let mut seen = vec![false; n + 1];
        seen[n] = true;
        let mut frames: Vec<(u32, usize)> = vec![(exit, 0)];
        while let Some(top) = frames.last_mut() {
            let (x, k) = *top;
            let next = if x == exit {
                sinks.get(k)
            } else {
                preds(x as usize).get(k)
            };
            match next {
                Some(&y) => {
                    top.1 += 1;
                    if !seen[y as usize] {
                        seen[y as usize] = true;
                        frames.push((y, 0));
                    }
                }
                None => {
                    po_number[x as usize] = po.len() as u32;
                    po.push(x);
                    frames.pop();
                }
            }
        }
        if (0..n).any(|i| reached[i] && !seen[i]) {
            return None;
        }
        // Immediate dominators of the reversed graph, in its reverse post-order.
        let mut ipdom = vec![NONE; n + 1];
        ipdom[n] = exit;
        let intersect = |ipdom: &[u32], mut a: u32, mut b: u32| {
            while a != b {
                while po_number[a as usize] < po_number[b as usize] {
                    a = ipdom[a as usize];
                }
                while po_number[b as usize] < po_number[a as usize] {
                    b = ipdom[b as usize];
                }
            }
            a
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &x in po.iter().rev().filter(|&&x| x != exit) {
                // Its predecessors in the reversed graph: its successors, and the exit for
                // a block without any.
                let s = succs(x as usize);
                let mut new = if s.is_empty() { Some(exit) } else { None };
                for &y in s {
                    if ipdom[y as usize] == NONE {
                        continue;
                    }
                    new = Some(match new {
                        None => y,
                        Some(d) => intersect(&ipdom, d, y),
                    });
                }
                let new = new.unwrap_or(NONE);
                if new != ipdom[x as usize] {
                    ipdom[x as usize] = new;
                    changed = true;
                }
            }
        }
        Some(DenseRegion { index, ipdom })
    }

    /// [`structured`] on this region: does every branch among `blocks` that is one of its
    /// nodes have its fall-through as immediate post-dominator? (A block the entry does not
    /// reach has none.)
    fn structured(&self, func: &MirFunction, blocks: &[MBlock]) -> Option<bool> {
        let n = self.ipdom.len() as u32 - 1;
        let node = |b: MBlock| {
            self.index
                .get(b.index())
                .copied()
                .filter(|&i| i != Self::NONE)
        };
        Some(blocks.iter().all(|&b| {
            let Some(i) = node(b) else { return true };
            match func.terminator(b).map(|t| &t.kind) {
                Some(MInstKind::Branch { not_taken, .. }) => {
                    let d = self.ipdom[i as usize];
                    d != Self::NONE && d != n && node(not_taken.block) == Some(d)
                }
                _ => true,
            }
        }))
    }
}

/// What the optimisations change; a [`Snapshot`] of its changeable part rolls a batch of
/// changes back.
struct State {
    func: MirFunction,
    /// The guard values on each edge (updated as edges move).
    edges: FxHashMap<(MBlock, MBlock), Values>,
    /// The predecessors of every block of the region (updated as edges move).
    preds: FxHashMap<MBlock, Vec<MBlock>>,
    /// Guards taken out of the code.
    removed: FxHashSet<MBlock>,
    stats: OptStats,
    /// While a batch of steps runs ([`apply_checked`]): the instructions of every block a
    /// step rewrote, as they were before the batch, for [`Snapshot::restore`].
    saved: Option<Vec<(MBlock, Vec<MInst>)>>,
}

impl State {
    /// Keeps a copy of `b`'s instructions before a step of the running batch first
    /// rewrites them.
    fn touch(&mut self, b: MBlock) {
        if let Some(saved) = &mut self.saved {
            if !saved.iter().any(|&(x, _)| x == b) {
                saved.push((b, self.func.blocks[b].insts.clone()));
            }
        }
    }

    /// Moves edge `from -> old` to `new`, with its value set: later guards decide on it.
    fn retarget(&mut self, from: MBlock, old: MBlock, new: MBlock) {
        self.touch(from);
        let vals = self.edges.remove(&(from, old)).unwrap_or_default();
        self.edges.entry((from, new)).or_default().union_with(&vals);
        if let Some(t) = self.func.blocks[from].insts.last_mut() {
            t.kind.for_each_target_mut(|t| {
                if t.block == old {
                    t.block = new;
                }
            });
        }
        if let Some(p) = self.preds.get_mut(&old) {
            p.retain(|&b| b != from);
        }
        let p = self.preds.entry(new).or_default();
        if !p.contains(&from) {
            p.push(from);
        }
    }
}

/// What a step can change in a [`State`], saved to roll a batch of steps back: the block
/// order and the region's own maps; the blocks a step rewrites are saved by the step
/// itself ([`State::touch`]), when it first rewrites them.
///
/// Saving only what a batch changes, rather than the whole function, keeps a region's cost
/// to what the region holds: a copy of the kernel per batch made the pass quadratic in the
/// kernel. And most batches pass the check and are never rolled back, so the blocks are
/// copied only as steps rewrite them (a copy of every block a step could rewrite, made
/// before each batch, was a tenth of the optimisations' time).
struct Snapshot {
    order: Vec<MBlock>,
    edges: FxHashMap<(MBlock, MBlock), Values>,
    preds: FxHashMap<MBlock, Vec<MBlock>>,
    removed: FxHashSet<MBlock>,
    stats: OptStats,
}

impl Snapshot {
    /// Saves `state` and starts saving the blocks the steps rewrite.
    fn take(state: &mut State) -> Snapshot {
        state.saved = Some(Vec::new());
        Snapshot {
            order: state.func.order.clone(),
            edges: state.edges.clone(),
            preds: state.preds.clone(),
            removed: state.removed.clone(),
            stats: state.stats,
        }
    }

    /// Puts `state` back as it was when the snapshot was taken.
    fn restore(&self, state: &mut State) {
        for (b, insts) in state.saved.replace(Vec::new()).unwrap_or_default() {
            state.func.blocks[b].insts = insts;
        }
        state.func.order.clone_from(&self.order);
        state.edges.clone_from(&self.edges);
        state.preds.clone_from(&self.preds);
        state.removed.clone_from(&self.removed);
        state.stats = self.stats;
    }
}

/// Applies `step` to every item in turn, keeping only changes after which `check` holds.
///
/// Checking after every step would cost a whole-function analysis per guard, quadratic in
/// the kernel; instead the remaining steps are tried all at once, and only when the result
/// fails the check is the first failing step found by bisection (each probe replays a
/// prefix from the last good state, restored from a [`Snapshot`]), dropped, and the rest
/// tried again. A step is kept exactly when it would have been kept checking one step at a
/// time, provided that a failing prefix stays failing as it grows; otherwise some later
/// good step may be dropped too, never a bad one kept.
fn apply_checked<T: Copy>(
    state: &mut State,
    items: &[T],
    step: impl Fn(&mut State, T),
    check: impl Fn(&State) -> bool,
) {
    let mut rest = items;
    while !rest.is_empty() {
        let base = Snapshot::take(state);
        for &item in rest {
            step(state, item);
        }
        if check(state) {
            state.saved = None;
            return;
        }
        // `rest[..good]` passes, `rest[..bad]` fails.
        let (mut good, mut bad) = (0, rest.len());
        while bad - good > 1 {
            let mid = (good + bad) / 2;
            base.restore(state);
            for &item in &rest[..mid] {
                step(state, item);
            }
            if check(state) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        base.restore(state);
        for &item in &rest[..good] {
            step(state, item);
        }
        rest = &rest[good + 1..];
    }
    state.saved = None;
}

/// Edges moving together: from each of `sources`, `from` becomes `to`.
struct Move<'a> {
    sources: &'a [MBlock],
    from: MBlock,
    to: MBlock,
}

/// How far [`breaks_structure`] looks: it only has to be right often, the whole-function
/// check decides.
pub(super) const LOCAL_SCAN: usize = 64;

/// Would moving an edge of `p` forward to `new` make a branch reconverge past its
/// fall-through? In the linearized layout a branch's lanes split at it and meet at its
/// fall-through successor, so the blocks between the two are its span, and the spans nest.
/// An edge from inside the innermost span around `p` to beyond that span's end leaves it;
/// and when the edge is a guard's fall-through, the guard's span grows to `new`, which
/// every edge from inside must then stay within. Looking at most [`LOCAL_SCAN`] blocks
/// away, this predicts what the whole-function check would refuse, so that refused steps
/// need not be found by bisection.
fn breaks_structure(
    state: &State,
    layout: &[MBlock],
    position: &Positions,
    guarded: &FxHashSet<MBlock>,
    moves: &Move,
    p: MBlock,
) -> bool {
    let new = moves.to;
    let (Some(&from), Some(&to)) = (position.get(&p), position.get(&new)) else {
        return false;
    };
    let placed = |i: &usize| !state.removed.contains(&layout[*i]);
    // Only the guards (and the blocks guards merged into) reconverge at their fall-through;
    // the branches of structured sub-regions keep their own shape.
    let span_end = |x: MBlock| match state.func.terminator(x).map(|t| &t.kind) {
        Some(MInstKind::Branch { not_taken, .. }) if guarded.contains(&x) => {
            // A fall-through moving in the same step ends where it is going.
            let end = if not_taken.block == moves.from && moves.sources.contains(&x) {
                moves.to
            } else {
                not_taken.block
            };
            position.get(&end).copied()
        }
        _ => None,
    };
    // The innermost span around `p`: the nearest branch before it that meets after it.
    let enclosing = (0..from)
        .rev()
        .filter(placed)
        .take(LOCAL_SCAN)
        .find_map(|i| span_end(layout[i]).filter(|&e| e > from));
    if enclosing.is_some_and(|e| e < to) {
        return true;
    }
    // A guard's own span grows to `new`: nothing inside may leave it.
    if span_end(p).is_some() {
        return (from + 1..to.min(layout.len()))
            .filter(placed)
            .take(LOCAL_SCAN)
            .any(|i| {
                state
                    .func
                    .succs(layout[i])
                    .any(|s| position.get(&s).is_some_and(|&j| j > to))
            });
    }
    false
}

/// Each placed block's index in the layout. Built for every region over the whole kernel,
/// it is a dense table indexed by block: a hashed map cost a hash and an insertion per
/// block of the kernel per region.
struct Positions(SecondaryMap<MBlock, usize>);

impl Positions {
    /// Marks a block that is not placed.
    const NONE: usize = usize::MAX;

    fn of(func: &MirFunction) -> Positions {
        let mut map = SecondaryMap::with_default(Self::NONE);
        map.resize(func.blocks.len());
        for (i, &b) in func.order.iter().enumerate() {
            map[b] = i;
        }
        Positions(map)
    }

    /// The index of `b`, if it is placed.
    fn get(&self, b: &MBlock) -> Option<&usize> {
        self.0.get(*b).filter(|&&i| i != Self::NONE)
    }
}

impl core::ops::Index<&MBlock> for Positions {
    type Output = usize;

    /// The index of a placed block.
    fn index(&self, b: &MBlock) -> &usize {
        &self.0[*b]
    }
}

/// What the optimisation steps read and do not change.
#[derive(Copy, Clone)]
struct Layout<'a> {
    lin: &'a Linearized,
    tests: &'a FxHashMap<MBlock, Test>,
    /// The blocks in their order before the optimisations.
    layout: &'a [MBlock],
    /// Each block's index in `layout`.
    position: &'a Positions,
    /// The guards, back-edge guards and blocks guards may merge into.
    guarded: &'a FxHashSet<MBlock>,
    /// The empty parts (see [`empty_parts`]), by index.
    empty: &'a FxHashSet<usize>,
    level: u32,
}

/// O1 and O2 at guard `i`: moves the forward edges into it whose values lack its id to its
/// fall-through successor, and removes it when the edges left always match.
fn skip_guard(state: &mut State, cx: &Layout<'_>, i: usize) {
    let Layout {
        lin,
        tests,
        layout,
        position,
        guarded,
        level,
        ..
    } = *cx;
    let g = lin.guards[i];
    let k = i as u32 + 1;
    let (block, fall) = match state.func.terminator(g).map(|t| &t.kind) {
        Some(MInstKind::Branch {
            taken, not_taken, ..
        }) => (taken.block, not_taken.block),
        _ => return,
    };
    let incoming = state.preds.get(&g).cloned().unwrap_or_default();
    let forward = |p: &MBlock| position[p] < position[&g];
    // Below O2 a guard's fall-through is not moved: lanes that fail one guard test the
    // next, however few values they can carry.
    let movable = |p: &MBlock| level >= 2 || !matches!(tests.get(p), Some(Test::Eq(_)));
    let lacking: Vec<MBlock> = incoming
        .iter()
        .copied()
        .filter(|p| {
            forward(p) && movable(p) && !state.edges.get(&(*p, g)).is_some_and(|v| v.contains(k))
        })
        .collect();
    // The guard's edges move together or not at all, as the whole-function check would
    // take or refuse them.
    let moves = Move {
        sources: &lacking,
        from: g,
        to: fall,
    };
    if lacking
        .iter()
        .any(|&p| breaks_structure(state, layout, position, guarded, &moves, p))
    {
        return;
    }
    if lacking.len() == incoming.len() {
        // No lane wants the block: when it is an empty part (threaded past by
        // `thread_empty_parts`), it goes with its guard; any other block keeps its guard.
        if !lacking.is_empty() && cx.empty.contains(&i) {
            for &p in &lacking {
                state.retarget(p, g, fall);
            }
            state.stats.edges_redirected += lacking.len() as u64;
            remove_block(state, g);
            remove_block(state, block);
            state.stats.guards_removed += 1;
            state.stats.tests_removed += 1;
            state.stats.empty_parts_removed += 1;
        }
        return;
    }
    for &p in &lacking {
        state.retarget(p, g, fall);
    }
    state.stats.edges_redirected += lacking.len() as u64;
    let rest: Vec<MBlock> = incoming
        .into_iter()
        .filter(|p| !lacking.contains(p))
        .collect();
    let always = rest.iter().all(|p| {
        state
            .edges
            .get(&(*p, g))
            .is_some_and(|v| v.iter().all(|x| x == k))
    });
    if always {
        for &p in &rest {
            state.retarget(p, g, block);
        }
        remove_block(state, g);
        state.stats.guards_removed += 1;
        state.stats.tests_removed += 1;
    }
}

/// Takes block `b`, which no lane reaches any more, out of the code.
fn remove_block(state: &mut State, b: MBlock) {
    state.func.order.retain(|&x| x != b);
    for s in state.func.succs(b) {
        if let Some(ps) = state.preds.get_mut(&s) {
            ps.retain(|&x| x != b);
        }
    }
    state.removed.insert(b);
}

/// The parts of the region that do nothing: a single block holding only the assignment
/// the pass gave it (its jump, before linearization) and its jump to the next guard. Their
/// indices, and for each the id it sends its lanes on to.
fn empty_parts(func: &MirFunction, lin: &Linearized, regs: GuardRegs) -> FxHashMap<usize, u32> {
    let mut out = FxHashMap::default();
    for (i, (&head, &tail)) in lin.order.iter().zip(&lin.tails).enumerate() {
        if head != tail || lin.back_edge_guards[i].is_some() {
            continue;
        }
        if let [mv, j] = &func.blocks[head].insts[..] {
            if let (
                MInstKind::Mov {
                    dst,
                    src: Operand::Imm(v),
                    ..
                },
                MInstKind::Jump { .. },
            ) = (&mv.kind, &j.kind)
            {
                // Only forward: a lane sent back must still pass the block's guard.
                if *dst == regs.g && mv.guard.is_none() && *v as u32 > i as u32 + 1 {
                    out.insert(i, *v as u32);
                }
            }
        }
    }
    out
}

/// Jump threading over the guard variable (O1 and up): a lane bound for an empty part
/// (see [`empty_parts`]) is sent straight on to where the part would send it, so the part
/// runs for no lane and [`skip_guard`] removes it with its guard. Only assignments that
/// go forward change (a lane sent back over a retreating edge keeps the id of its
/// destination, which its back-edge guard tests).
fn thread_empty_parts(
    func: &mut MirFunction,
    lin: &Linearized,
    regs: GuardRegs,
    empty: &FxHashMap<usize, u32>,
) {
    let resolve = |mut v: u32| {
        while let Some(&next) = v.checked_sub(1).and_then(|i| empty.get(&(i as usize))) {
            v = next;
        }
        v
    };
    let writers = std::iter::once((lin.entry, 0u32)).chain(
        lin.tails
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i as u32 + 1)),
    );
    for (b, own) in writers {
        let map = |o: &mut Operand| {
            if let Operand::Imm(v) = o {
                if (*v as u32) > own {
                    *v = u64::from(resolve(*v as u32));
                }
            }
        };
        let last = func.blocks[b].insts.iter_mut().rev().find(|i| {
            matches!(i.kind, MInstKind::Mov { dst, .. } | MInstKind::Selp { dst, .. } if dst == regs.g)
        });
        if let Some(inst) = last {
            match &mut inst.kind {
                MInstKind::Mov { src, .. } => map(src),
                MInstKind::Selp { a, b, .. } => {
                    map(a);
                    map(b);
                }
                _ => {}
            }
        }
    }
}

/// Predication (O3, within `limit` instructions): guard `i`'s block, a single block with
/// nothing guarded, no barrier and at most `limit` instructions besides its assignment to
/// `g`, that only its guard enters and that leaves to the guard's fall-through (or past
/// it, to a guard that the fall-through reaches without a lane of the block matching on
/// the way), runs in the guard's place under the guard's predicate: `setp p; @p body; @p
/// g = ...; jump fall`. Lanes that fail the test do nothing in the block, exactly as when
/// the branch took them past it, and the guard's branch and the block's jump are gone —
/// the target predicates what the paper's guard blocks branch around. Blocks that no lane
/// wants now cost their instructions, hence the limit.
fn predicate_part(state: &mut State, cx: &Layout<'_>, regs: GuardRegs, limit: u32, i: usize) {
    let lin = cx.lin;
    let g = lin.guards[i];
    let b = lin.order[i];
    if state.removed.contains(&g) || state.removed.contains(&b) || b != lin.tails[i] {
        return;
    }
    if lin.back_edge_guards[i].is_some() {
        return;
    }
    let (test, fall) = match &state.func.blocks[g].insts[..] {
        [test, br] => match (&test.kind, &br.kind) {
            (
                MInstKind::Setp { dst, .. },
                MInstKind::Branch {
                    pred,
                    negated: false,
                    taken,
                    not_taken,
                    ..
                },
            ) if *dst == regs.p && *pred == regs.p && taken.block == b => {
                (test.clone(), not_taken.block)
            }
            _ => return,
        },
        _ => return,
    };
    if state.preds.get(&b).map(Vec::as_slice) != Some(&[g][..]) {
        return;
    }
    let insts = &state.func.blocks[b].insts;
    let Some((last, body)) = insts.split_last() else {
        return;
    };
    let MInstKind::Jump { dest } = &last.kind else {
        return;
    };
    let dest = dest.block;
    // Predicated, the block's lanes leave the way the guard's other lanes go: each must
    // meet the same block first along that way as along the block's own exit (which O1
    // may have sent past guards its values cannot match).
    if dest != fall {
        let vals = state.edges.get(&(b, dest)).cloned().unwrap_or_default();
        let same = vals.iter().all(|v| {
            let a = first_stop(state, cx.tests, fall, v);
            a.is_some() && a == first_stop(state, cx.tests, dest, v)
        });
        if !same {
            return;
        }
    }
    let writes_g = |k: &MInstKind| k.def() == Some(regs.g);
    let size = body.iter().filter(|x| !writes_g(&x.kind)).count();
    let predicable = body.iter().all(|x| {
        x.guard.is_none() && !matches!(x.kind, MInstKind::Bar) && x.kind.def() != Some(regs.p)
    });
    if size > limit as usize || !predicable {
        return;
    }
    let guard = crate::mir::Guard {
        pred: regs.p,
        negated: false,
    };
    let mut code = Vec::with_capacity(body.len() + 2);
    code.push(test);
    code.extend(body.iter().map(|x| crate::mir::MInst {
        guard: Some(guard),
        ..x.clone()
    }));
    code.push(crate::mir::MInst::new(
        MInstKind::Jump {
            dest: crate::mir::BlockTarget::new(fall),
        },
        last.srcloc,
    ));
    state.func.blocks[g].insts = code;
    let vals = state.edges.remove(&(b, dest)).unwrap_or_default();
    state.edges.remove(&(g, b));
    state.edges.entry((g, fall)).or_default().union_with(&vals);
    remove_block(state, b);
    if let Some(ps) = state.preds.get_mut(&b) {
        ps.clear();
    }
    state.stats.blocks_predicated += 1;
}

/// The first block that a lane holding guard value `v` runs from `from` on, passing
/// the guards (branching or predicated) that do not match it; `None` when that is not
/// decided within the region's guards, or only after a back-edge guard sends it back.
fn first_stop(
    state: &State,
    tests: &FxHashMap<MBlock, Test>,
    from: MBlock,
    v: u32,
) -> Option<MBlock> {
    let mut at = from;
    for _ in 0..=tests.len() {
        let Some(&test) = tests.get(&at) else {
            return Some(at);
        };
        let hit = match test {
            Test::Eq(k) => v == k,
            // Sent back over a back edge: the lane would run its block in a later pass of
            // the warp than along the other way (Figure 6's lanes would wait a pass).
            Test::Le(k) if v <= k => return None,
            Test::Le(_) => false,
        };
        match state.func.terminator(at).map(|t| &t.kind) {
            Some(MInstKind::Branch {
                taken, not_taken, ..
            }) => at = if hit { taken.block } else { not_taken.block },
            // A predicated guard: its lanes run it.
            Some(MInstKind::Jump { dest }) => {
                if hit {
                    return Some(at);
                }
                at = dest.block;
            }
            _ => return None,
        }
    }
    None
}

/// O3 at guard `g`: merged into its single predecessor when that is a block of the region
/// that jumps to it (a region block, the region's entry, or a guard whose block was
/// predicated into it: a chain of predicated blocks becomes one block).
fn merge_guard(state: &mut State, region: &FxHashSet<MBlock>, g: MBlock) {
    if state.removed.contains(&g) {
        return;
    }
    let p = match state.preds.get(&g).map(Vec::as_slice) {
        Some(&[p]) => p,
        _ => return,
    };
    let jumps_here = matches!(
        state.func.terminator(p).map(|t| &t.kind),
        Some(MInstKind::Jump { dest }) if dest.block == g
    );
    if !region.contains(&p) || !jumps_here {
        return;
    }
    let body = state.func.blocks[g].insts.clone();
    state.touch(p);
    let insts = &mut state.func.blocks[p].insts;
    insts.pop();
    insts.extend(body);
    state.func.order.retain(|&b| b != g);
    // `p` now branches where `g` did.
    for s in state.func.succs(p) {
        if let Some(ps) = state.preds.get_mut(&s) {
            for b in ps.iter_mut().filter(|b| **b == g) {
                *b = p;
            }
        }
        if let Some(vals) = state.edges.remove(&(g, s)) {
            state.edges.insert((p, s), vals);
        }
    }
    state.removed.insert(g);
    state.stats.guards_removed += 1;
}

/// O3, in a region without back-edge guards (every lane moves forward through the layout):
/// a block's last assignment to `g` is removed when no guard test after it in the layout
/// accepts any value it assigns or the block's own id, which the lanes running the block
/// hold: a lane then fails every later test with either value, and `g` is dead after the
/// region's exit (the next region's entry assigns it afresh). Typically the blocks that
/// leave the region.
fn remove_dead_assignments(
    state: &mut State,
    lin: &Linearized,
    region: &[MBlock],
    regs: GuardRegs,
) {
    if lin.back_edge_guards.iter().any(Option::is_some) {
        return;
    }
    let placed: Vec<MBlock> = {
        let members: FxHashSet<MBlock> = region.iter().copied().collect();
        state
            .func
            .order
            .iter()
            .copied()
            .filter(|b| members.contains(b) && !state.removed.contains(b))
            .collect()
    };
    // Every guard test of the region in layout order: (block index, inst index, test).
    let mut tests: Vec<(usize, usize, Test)> = Vec::new();
    for (bi, &b) in placed.iter().enumerate() {
        for (ii, x) in state.func.blocks[b].insts.iter().enumerate() {
            if let MInstKind::Setp {
                cond: crate::mir::Cond::Int(cc),
                dst,
                a,
                b: Operand::Imm(k),
                ..
            } = x.kind
            {
                if dst == regs.p && a == regs.g {
                    let k = k as u32;
                    let t = match cc {
                        warplift_ir::IntCC::Equal => Test::Eq(k),
                        warplift_ir::IntCC::UnsignedLessThanOrEqual => Test::Le(k),
                        // Not a test the pass makes: keep every assignment.
                        _ => return,
                    };
                    tests.push((bi, ii, t));
                }
            }
        }
    }
    let own: FxHashMap<MBlock, u32> = lin
        .tails
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, i as u32 + 1))
        .collect();
    for (bi, &b) in placed.iter().enumerate() {
        // Every assignment of the block, last first (removing one leaves the indices of
        // the earlier ones as they are).
        let writers: Vec<usize> = (0..state.func.blocks[b].insts.len())
            .rev()
            .filter(|&w| state.func.blocks[b].insts[w].kind.def() == Some(regs.g))
            .collect();
        for wi in writers {
            let insts = &state.func.blocks[b].insts;
            let first_writer = !insts[..wi].iter().any(|x| x.kind.def() == Some(regs.g));
            // The value the lanes running the assignment hold before it; `None`: not
            // known (any value).
            let held: Option<u32> = match insts[wi].guard {
                // A region block leaving its part runs with its own id.
                None if first_writer => own.get(&b).copied(),
                // A predicated block runs where its guard's `g == k` held.
                Some(gd) if gd.pred == regs.p && !gd.negated => insts[..wi]
                    .iter()
                    .rposition(|x| x.kind.def() == Some(regs.p))
                    .and_then(|ti| tests.iter().find(|&&(tb, tii, _)| tb == bi && tii == ti))
                    .and_then(|&(_, _, t)| match t {
                        Test::Eq(k) => Some(k),
                        Test::Le(_) => None,
                    }),
                _ => None,
            };
            let mut vals: Vec<u32> = held.into_iter().collect();
            match insts[wi].kind {
                MInstKind::Mov {
                    src: Operand::Imm(v),
                    ..
                } => vals.push(v as u32),
                MInstKind::Selp {
                    a: Operand::Imm(a),
                    b: Operand::Imm(c),
                    ..
                } => vals.extend([a as u32, c as u32]),
                _ => continue,
            }
            let accepted = tests
                .iter()
                .filter(|&&(tb, tii, _)| tb > bi || (tb == bi && tii > wi))
                .any(|&(_, _, t)| {
                    held.is_none()
                        || vals.iter().any(|&v| match t {
                            Test::Eq(k) => v == k,
                            Test::Le(k) => v <= k,
                        })
                });
            if !accepted {
                state.func.blocks[b].insts.remove(wi);
                // Later tests of this block moved up by one.
                for t in tests.iter_mut().filter(|t| t.0 == bi && t.1 > wi) {
                    t.1 -= 1;
                }
                state.stats.assignments_removed += 1;
            }
        }
    }
}

/// O3: assignments to `g` whose value no instruction reads: a backward liveness analysis
/// of `g` over the whole function (an unguarded write kills it; a predicated one does
/// not, since the lanes it skips keep the old value; any read, guard tests included,
/// makes it live; it is dead past every return). An assignment after which `g` is not
/// live on any path goes — the region's entry's `g = id(first)`, say, where every lane
/// meets another assignment before any test (the test-based removal above cannot see
/// that: it does not know what the lanes hold on entering the region). Sound with back
/// edges too: liveness is a fixpoint over the cycles.
fn remove_unread_assignments(state: &mut State, regs: GuardRegs) {
    // `visit_regs` takes the instruction mutably; it changes nothing here. Reading the
    // instructions in place, rather than a copy of each per visit, matters: this runs once
    // per region and the fixpoint visits every block at least twice.
    let reads_g = |inst: &mut MInst| {
        let mut read = false;
        inst.visit_regs(|r, role| read |= *r == regs.g && role == crate::mir::RegRole::Use);
        read
    };
    let blocks: Vec<MBlock> = state.func.order.clone();
    // What a block does to the liveness of `g` on its entry: the first of its instructions
    // that reads `g` or writes it unguarded decides (live when it reads, dead when it only
    // writes); with neither, `g` is live on entry where it is live on exit.
    let mut first: Vec<Option<bool>> = Vec::with_capacity(blocks.len());
    for &b in &blocks {
        let mut decides = None;
        for inst in state.func.blocks[b].insts.iter_mut() {
            let reads = reads_g(inst);
            if reads || (inst.kind.def() == Some(regs.g) && inst.guard.is_none()) {
                decides = Some(reads);
                break;
            }
        }
        first.push(decides);
    }
    let func = &state.func;
    // Live on entry to each block (by block index): the fixpoint of the usual backward
    // equations.
    let mut live_in = vec![false; func.blocks.len()];
    let live_after =
        |b: MBlock, live_in: &[bool]| func.succs(b).any(|s| live_in.get(s.index()) == Some(&true));
    let mut changed = true;
    while changed {
        changed = false;
        for (&b, decides) in blocks.iter().zip(&first).rev() {
            let live = decides.unwrap_or_else(|| live_after(b, &live_in));
            if live && !live_in[b.index()] {
                live_in[b.index()] = true;
                changed = true;
            }
        }
    }
    let live_out: Vec<bool> = blocks.iter().map(|&b| live_after(b, &live_in)).collect();
    for (&b, &out) in blocks.iter().zip(&live_out) {
        let mut live = out;
        let mut dead = Vec::new();
        for (i, inst) in state.func.blocks[b].insts.iter_mut().enumerate().rev() {
            let writes = inst.kind.def() == Some(regs.g);
            let reads = reads_g(inst);
            if writes && !live && !reads {
                dead.push(i);
                continue;
            }
            if writes && inst.guard.is_none() {
                live = false;
            }
            live |= reads;
        }
        // `dead` runs last to first: each removal leaves the earlier indices as they are.
        for i in dead {
            state.func.blocks[b].insts.remove(i);
            state.stats.assignments_removed += 1;
        }
    }
}

/// O3: a guard test that follows, in the same block, the block's own unguarded
/// `g = c ? a : b` tests the branch condition `c` itself whenever exactly one of `a`
/// and `b` passes it: `g == a` holds exactly where `c` does. The test is dropped and what
/// read its predicate (the guard's branch, the instructions predicated on it) reads `c`,
/// or its negation. The block's branch is then, in effect, back — and the assignment
/// often becomes dead ([`remove_dead_assignments`] runs after this).
fn fold_tests(state: &mut State, region: &[MBlock], regs: GuardRegs) {
    for &b in region {
        if state.removed.contains(&b) {
            continue;
        }
        let mut i = 0;
        while i < state.func.blocks[b].insts.len() {
            if let Some((c, negated)) = foldable(&state.func.blocks[b].insts, i, regs) {
                let insts = &mut state.func.blocks[b].insts;
                insts.remove(i);
                for x in insts[i..].iter_mut() {
                    read_condition_for_test(x, regs.p, c, negated);
                    if x.kind.def() == Some(regs.p) {
                        break;
                    }
                }
                state.stats.tests_folded += 1;
                continue;
            }
            i += 1;
        }
    }
}

/// Makes `x` read the condition `c` (negated when `negated`) where it read the guard test's
/// predicate `p`: as its guard, and as its branch's predicate. Both folds of a guard test
/// rewrite the test's readers this way.
fn read_condition_for_test(x: &mut MInst, p: Reg, c: Reg, negated: bool) {
    if let Some(gd) = x.guard.as_mut().filter(|gd| gd.pred == p) {
        gd.pred = c;
        gd.negated ^= negated;
    }
    if let MInstKind::Branch {
        pred, negated: n, ..
    } = &mut x.kind
    {
        if *pred == p {
            *pred = c;
            *n ^= negated;
        }
    }
}

/// What the cross-block fold knows at a program point, for every lane there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Known {
    /// Per predicate register `c`: the values `g` may hold in the lanes where `c` is
    /// false (`.0`) and where it is true (`.1`); `None`: any value.
    facts: FxHashMap<crate::mir::Reg, [Option<Values>; 2]>,
    /// Predicate registers with one value in every lane (set by the branch edges taken).
    preds: FxHashMap<crate::mir::Reg, bool>,
}

impl Known {
    /// The meet of two points' knowledge (a merge): what holds on both ways in.
    fn meet(&self, other: &Known) -> Known {
        let union = |a: &Option<Values>, b: &Option<Values>| match (a, b) {
            (Some(a), Some(b)) => Some(a.union(b)),
            _ => None,
        };
        Known {
            facts: self
                .facts
                .iter()
                .filter_map(|(c, [f, t])| {
                    let [f2, t2] = other.facts.get(c)?;
                    Some((*c, [union(f, f2), union(t, t2)]))
                })
                .collect(),
            preds: self
                .preds
                .iter()
                .filter(|(c, v)| other.preds.get(c) == Some(v))
                .map(|(c, v)| (*c, *v))
                .collect(),
        }
    }

    /// A predicate known in every lane: the side of each of its facts no lane is on
    /// holds no values.
    fn learn(&mut self, c: crate::mir::Reg, value: bool) {
        self.preds.insert(c, value);
        if let Some(f) = self.facts.get_mut(&c) {
            f[usize::from(!value)] = Some(Values::new());
        }
    }

    /// The effect of `inst`.
    fn step(&mut self, inst: &crate::mir::MInst, regs: GuardRegs) {
        let imm = |o: Operand| match o {
            Operand::Imm(v) => Some(v as u32),
            Operand::Reg(_) => None,
        };
        let def = inst.kind.def();
        if def == Some(regs.g) {
            let written: Option<Values> = match inst.kind {
                MInstKind::Mov { src, .. } => imm(src).map(|v| [v].into()),
                MInstKind::Selp { a, b, .. } => imm(a).zip(imm(b)).map(|(a, b)| [a, b].into()),
                _ => None,
            };
            let guarded = inst.guard.is_some();
            for (c, sides) in self.facts.iter_mut() {
                for (x, side) in sides.iter_mut().enumerate() {
                    if self.preds.get(c) == Some(&(x == 0)) {
                        *side = Some(Values::new());
                    } else if guarded {
                        *side = match (side.take(), &written) {
                            (Some(mut s), Some(w)) => {
                                s.union_with(w);
                                Some(s)
                            }
                            _ => None,
                        };
                    } else {
                        *side = written.clone();
                    }
                }
            }
            if let (
                None,
                MInstKind::Selp {
                    a: Operand::Imm(a),
                    b: Operand::Imm(b),
                    pred,
                    ..
                },
            ) = (&inst.guard, &inst.kind)
            {
                self.facts
                    .insert(*pred, [Some([*b as u32].into()), Some([*a as u32].into())]);
                if let Some(&v) = self.preds.get(pred) {
                    self.learn(*pred, v);
                }
            }
        } else if let Some(r) = def {
            // A predicate written (predicated or not) is no longer what the facts say.
            self.facts.remove(&r);
            self.preds.remove(&r);
        }
    }
}

/// O3, across blocks: a guard test `g == k` (or `g <= k`) reads a predicate `c` (or its
/// negation) instead where a forward analysis shows that, for every lane reaching it,
/// the test passes exactly where `c` holds. The facts come from a block's `g = c ? a : b`
/// and follow the lanes: a branch edge tells which value a predicate has in all its
/// lanes, so later assignments to `g` on the way of the lanes where `c` is false (say)
/// leave the values of the lanes where it is true as they were; a merge joins the value
/// sets of both ways; a redefinition of `c` ends its fact. This is what the same-block
/// fold ([`fold_tests`]) does for a join: the guard of a block reached from several
/// blocks tests the condition of the branch that chose it. Not where the guard predicate
/// is live across a block boundary (it never is as the pass makes it), nor where `c` is
/// redefined before the test's last reader.
fn fold_tests_across_blocks(state: &mut State, regs: GuardRegs) {
    let func = &state.func;
    let blocks: Vec<MBlock> = func
        .order
        .iter()
        .copied()
        .filter(|b| !state.removed.contains(b))
        .collect();
    // The guard predicate must be read only in the block that set it.
    let p_read_before_set = blocks.iter().any(|&b| {
        for inst in &func.blocks[b].insts {
            let mut x = inst.clone();
            let mut read = false;
            x.visit_regs(|r, role| read |= *r == regs.p && role == crate::mir::RegRole::Use);
            if read {
                return true;
            }
            if inst.kind.def() == Some(regs.p) {
                return false;
            }
        }
        false
    });
    if p_read_before_set {
        return;
    }
    let entry = func.entry();
    // Knowledge on entry to each block; `None`: not reached yet.
    let mut at_entry: FxHashMap<MBlock, Known> = FxHashMap::default();
    if let Some(e) = entry {
        at_entry.insert(e, Known::default());
    }
    let out_edges = |b: MBlock, mut k: Known| -> Vec<(MBlock, Known)> {
        let insts = &func.blocks[b].insts;
        for x in insts {
            k.step(x, regs);
        }
        match insts.last().map(|t| &t.kind) {
            Some(&MInstKind::Branch {
                pred,
                negated,
                ref taken,
                ref not_taken,
                ..
            }) if insts.last().is_some_and(|t| t.guard.is_none()) => {
                let mut t = k.clone();
                t.learn(pred, !negated);
                let mut f = k;
                f.learn(pred, negated);
                vec![(taken.block, t), (not_taken.block, f)]
            }
            _ => func.succs(b).map(|s| (s, k.clone())).collect(),
        }
    };
    let mut changed = true;
    let mut rounds = 0;
    while changed && rounds < 64 {
        changed = false;
        rounds += 1;
        for &b in &blocks {
            let Some(k) = at_entry.get(&b).cloned() else {
                continue;
            };
            for (s, ks) in out_edges(b, k) {
                let merged = match at_entry.get(&s) {
                    Some(old) => old.meet(&ks),
                    None => ks,
                };
                if at_entry.get(&s) != Some(&merged) {
                    at_entry.insert(s, merged);
                    changed = true;
                }
            }
        }
    }
    if changed {
        return; // no fixpoint in reasonable time: fold nothing
    }
    for &b in &blocks {
        let Some(mut k) = at_entry.get(&b).cloned() else {
            continue;
        };
        let mut i = 0;
        while i < state.func.blocks[b].insts.len() {
            let insts = &state.func.blocks[b].insts;
            let folded = match insts[i].kind {
                MInstKind::Setp {
                    cond: crate::mir::Cond::Int(cc),
                    dst,
                    a,
                    b: Operand::Imm(kv),
                    ..
                } if dst == regs.p && a == regs.g && insts[i].guard.is_none() => {
                    let test = |v: u32| match cc {
                        warplift_ir::IntCC::Equal => Some(v == kv as u32),
                        warplift_ir::IntCC::UnsignedLessThanOrEqual => Some(v <= kv as u32),
                        _ => None,
                    };
                    let all = |set: &Option<Values>, want: bool| {
                        set.as_ref()
                            .is_some_and(|s| s.iter().all(|v| test(v) == Some(want)))
                    };
                    // The readers of the test, up to the predicate's next definition.
                    let end = insts[i + 1..]
                        .iter()
                        .position(|x| x.kind.def() == Some(regs.p))
                        .map_or(insts.len(), |j| i + 1 + j);
                    k.facts.iter().find_map(|(&c, [f, t])| {
                        let negated = if all(t, true) && all(f, false) {
                            false
                        } else if all(t, false) && all(f, true) {
                            true
                        } else {
                            return None;
                        };
                        let redefined = insts[i + 1..end].iter().any(|x| x.kind.def() == Some(c));
                        (!redefined).then_some((c, negated, end))
                    })
                }
                _ => None,
            };
            match folded {
                Some((c, negated, end)) => {
                    let insts = &mut state.func.blocks[b].insts;
                    insts.remove(i);
                    for x in insts[i..end - 1].iter_mut() {
                        read_condition_for_test(x, regs.p, c, negated);
                    }
                    state.stats.tests_folded += 1;
                }
                None => {
                    k.step(&state.func.blocks[b].insts[i], regs);
                    i += 1;
                }
            }
        }
    }
}

/// Whether the guard test at `insts[at]` can read the branch condition of the block's
/// last assignment to `g` instead (see [`fold_tests`]): that condition and whether it is
/// negated.
fn foldable(
    insts: &[crate::mir::MInst],
    at: usize,
    regs: GuardRegs,
) -> Option<(crate::mir::Reg, bool)> {
    let MInstKind::Setp {
        cond: crate::mir::Cond::Int(cc),
        dst,
        a: ga,
        b: Operand::Imm(k),
        ..
    } = insts[at].kind
    else {
        return None;
    };
    if dst != regs.p || ga != regs.g || insts[at].guard.is_some() {
        return None;
    }
    let test = |v: u64| match cc {
        warplift_ir::IntCC::Equal => Some(v as u32 == k as u32),
        warplift_ir::IntCC::UnsignedLessThanOrEqual => Some(v as u32 <= k as u32),
        _ => None,
    };
    let w = insts[..at]
        .iter()
        .rposition(|x| x.kind.def() == Some(regs.g))?;
    let MInstKind::Selp {
        dst: _,
        a: Operand::Imm(a),
        b: Operand::Imm(bv),
        pred: c,
        ..
    } = insts[w].kind
    else {
        return None;
    };
    if insts[w].guard.is_some() {
        return None;
    }
    let negated = match (test(a)?, test(bv)?) {
        (true, false) => false,
        (false, true) => true,
        _ => return None,
    };
    // `c` must hold its value from the assignment to the last reader of the test.
    let end = insts[at + 1..]
        .iter()
        .position(|x| x.kind.def() == Some(regs.p))
        .map_or(insts.len(), |j| at + 1 + j);
    let redefined = insts[w + 1..end].iter().any(|x| x.kind.def() == Some(c));
    (!redefined).then_some((c, negated))
}

/// Optimises the guards of one linearized region at `level` (1 to 3); at level 3, blocks
/// of at most `predicate` instructions are predicated (0: none).
pub fn optimize(
    func: &mut MirFunction,
    lin: &Linearized,
    regs: GuardRegs,
    level: u32,
    predicate: u32,
) -> OptStats {
    let mut tests: FxHashMap<MBlock, Test> = FxHashMap::default();
    for (i, &g) in lin.guards.iter().enumerate() {
        tests.insert(g, Test::Eq(i as u32 + 1));
        if let Some(be) = lin.back_edge_guards[i] {
            tests.insert(be, Test::Le(i as u32 + 1));
        }
    }
    let empty_targets = empty_parts(func, lin, regs);
    thread_empty_parts(func, lin, regs, &empty_targets);
    let empty: FxHashSet<usize> = empty_targets.keys().copied().collect();
    let edges = guard_values(func, lin, &tests, regs);
    let layout = func.order.clone();
    let position = Positions::of(func);
    // The region's own blocks: every edge into a guard comes from one of them.
    let mut region: Vec<MBlock> = vec![lin.entry];
    region.extend(lin.blocks.iter().copied());
    region.extend(lin.guards.iter().copied());
    region.extend(lin.back_edge_guards.iter().flatten().copied());
    region.push(lin.exit);
    let mut preds: FxHashMap<MBlock, Vec<MBlock>> = FxHashMap::default();
    for &b in &region {
        for s in func.succs(b) {
            let p = preds.entry(s).or_default();
            if !p.contains(&b) {
                p.push(b);
            }
        }
    }
    let mut state = State {
        func: std::mem::take(func),
        edges,
        preds,
        removed: FxHashSet::default(),
        stats: OptStats::default(),
        saved: None,
    };
    // Skipping guards can make two groups of lanes meet a guard along different paths
    // (e.g. two overlapping skips); a change is kept only while every branch of the region
    // still reconverges at its fall-through successor.
    let mut checked: Vec<MBlock> = lin.guards.clone();
    checked.extend(lin.back_edge_guards.iter().flatten());
    checked.extend(lin.tails.iter().copied());
    let check = |s: &State| structured(&s.func, &region, &s.removed, &checked);
    let guarded: FxHashSet<MBlock> = checked.iter().copied().collect();
    let cx = Layout {
        lin,
        tests: &tests,
        layout: &layout,
        position: &position,
        guarded: &guarded,
        empty: &empty,
        level,
    };

    let guards: Vec<usize> = (0..lin.guards.len()).collect();
    apply_checked(&mut state, &guards, |s, i| skip_guard(s, &cx, i), check);
    if level >= 3 {
        if predicate > 0 {
            // Straight-line code: nothing to check.
            for &i in &guards {
                predicate_part(&mut state, &cx, regs, predicate, i);
            }
        }
        let mut merge_into: FxHashSet<MBlock> = lin.tails.iter().copied().collect();
        merge_into.extend(lin.guards.iter().copied());
        merge_into.insert(lin.entry);
        let all_guards: Vec<MBlock> = lin
            .guards
            .iter()
            .chain(lin.back_edge_guards.iter().flatten())
            .copied()
            .collect();
        apply_checked(
            &mut state,
            &all_guards,
            |s, g| merge_guard(s, &merge_into, g),
            check,
        );
        // Before folding, while each predicated block's guard still names the id its
        // lanes hold; and after, when folded tests no longer read `g`.
        remove_dead_assignments(&mut state, lin, &region, regs);
        fold_tests(&mut state, &region, regs);
        fold_tests_across_blocks(&mut state, regs);
        remove_dead_assignments(&mut state, lin, &region, regs);
        remove_unread_assignments(&mut state, regs);
    }
    *func = state.func;
    state.stats
}
