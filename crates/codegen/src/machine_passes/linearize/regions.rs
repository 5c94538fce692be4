//! Region selection for linearization: which single-entry single-exit parts of a kernel
//! the pass linearizes (the `linearize_regions` setting).
//!
//! - `kernel`: the whole kernel as one region ([`kernel_region`]), as the paper's
//!   Section 3 assumes, where linearizing it can gain ([`kernel_gains`]);
//! - `all`: every unstructured region, and `divergent`: those holding a divergent
//!   branch (in a block or at the entry) ([`unstructured_regions`]), found by
//!   `warplift_ir::cfg::regions` (Definition 1, Algorithms 2 and 3) on the allocated
//!   kernel's graph with its forwarding blocks (the edge blocks of critical-edge
//!   splitting) contracted, then widened again by the forwarding blocks on the edges that
//!   lie in each region or sub-region; of those, only the regions in which an IPDOM
//!   stack can run a block twice per pass of a warp (the others have nothing to gain),
//!   each with the cost model's estimate of its gain ([`estimated_regions`]).

use super::{MergeLoops, NestPass, Region, RegionMode, SubRegion};
use crate::mir::{BlockKind, MBlock, MInstKind, MirFunction};
use std::collections::HashSet;
use warplift_ir::cfg::{
    find_unstructured_regions, select_regions, Cfg, ControlFlowGraph, DominatorTree, Loop,
    LoopForest, PostDominatorTree, RegionSelection, UnstructuredEdges,
};

/// The blocks reachable from the entry, in depth-first preorder (iteratively).
pub(crate) fn reachable(func: &MirFunction) -> Vec<MBlock> {
    let mut out = Vec::new();
    let Some(entry) = func.entry() else {
        return out;
    };
    let mut seen = HashSet::from([entry]);
    let mut stack = vec![entry];
    while let Some(b) = stack.pop() {
        out.push(b);
        for s in func.successors(b).into_iter().rev() {
            if seen.insert(s) {
                stack.push(s);
            }
        }
    }
    out
}

/// The whole kernel as one region: every reachable block but the entry (the region's
/// CIDOM) and, when exactly one block returns, that block (its CIPDOM). `None` when there
/// is nothing to linearize (a kernel of one block) or the entry is a branch destination
/// (it could then not stand outside the region; the IR forbids it).
pub fn kernel_region(func: &MirFunction) -> Option<Region> {
    let entry = func.entry()?;
    let blocks = reachable(func);
    if blocks.iter().any(|&b| func.successors(b).contains(&entry)) {
        return None;
    }
    let returns: Vec<MBlock> = blocks
        .iter()
        .copied()
        .filter(|&b| matches!(func.terminator(b).map(|t| &t.kind), Some(MInstKind::Ret)))
        .collect();
    let exit = match returns[..] {
        [r] if r != entry => Some(r),
        _ => None,
    };
    let region: Vec<MBlock> = blocks
        .into_iter()
        .filter(|&b| b != entry && Some(b) != exit)
        .collect();
    if region.is_empty() {
        return None;
    }
    Some(Region {
        entry,
        blocks: region,
        exit,
        subregions: Vec::new(),
    })
}

/// The control-flow graph of a machine function without its *forwarding* blocks: the edge
/// blocks that critical-edge splitting makes and register allocation fills with moves
/// (a single predecessor, a jump). Only those: a kernel's own jump-only block (Figure
/// 1's `S1` with one predecessor, say) is a node of the graph the paper's definitions
/// speak of, and folding it away can hide an unstructured edge.
/// An edge through them stands for the IR edge they implement, so the analysis sees the
/// kernel's branch structure: Definition 1 would otherwise find no unstructured edge at
/// all once every critical edge is split (a split edge's source no longer reaches a join
/// directly).
pub(super) struct Contracted<'a> {
    func: &'a MirFunction,
    pub(super) forwarding: HashSet<MBlock>,
}

impl<'a> Contracted<'a> {
    pub(super) fn new(func: &'a MirFunction) -> Self {
        let real = ControlFlowGraph::compute(func);
        let entry = func.entry();
        let forwarding = func
            .order
            .iter()
            .copied()
            .filter(|&b| {
                Some(b) != entry
                    && func.blocks[b].kind == BlockKind::EdgeSplit
                    && real.preds(b).len() == 1
                    && matches!(
                        func.terminator(b).map(|t| &t.kind),
                        Some(MInstKind::Jump { .. })
                    )
            })
            .collect();
        Contracted { func, forwarding }
    }

    /// The block a successor `s` stands for, past forwarding blocks, and the forwarding
    /// blocks passed. A cycle of forwarding blocks (unreachable: each has its single
    /// predecessor in the cycle) stops where it closes.
    fn follow(&self, mut s: MBlock) -> (MBlock, Vec<MBlock>) {
        let mut chain = Vec::new();
        while self.forwarding.contains(&s) && !chain.contains(&s) {
            chain.push(s);
            match self.func.terminator(s).map(|t| &t.kind) {
                Some(MInstKind::Jump { dest }) => s = dest.block,
                _ => break,
            }
        }
        (s, chain)
    }
}

impl Cfg for Contracted<'_> {
    type Node = MBlock;

    fn entry(&self) -> Option<MBlock> {
        self.func.entry()
    }

    fn num_nodes(&self) -> usize {
        self.func.blocks.len()
    }

    fn successors(&self, node: MBlock, out: &mut Vec<MBlock>) {
        for s in self.func.succs(node) {
            let (v, _) = self.follow(s);
            if !self.forwarding.contains(&v) {
                out.push(v);
            }
        }
    }

    fn nodes(&self) -> impl Iterator<Item = MBlock> + '_ {
        self.func
            .order
            .iter()
            .copied()
            .filter(|b| !self.forwarding.contains(b))
    }
}

/// Whether the branch ending `b` counts, in `mode`, as one that can split a warp: in
/// `divergent` mode a divergent branch; otherwise any two-way branch but one every lane
/// provably takes the same way ([`MirFunction::one_way_branches`]), whatever the
/// divergence analysis says.
pub(super) fn can_split(func: &MirFunction, mode: RegionMode, b: MBlock) -> bool {
    match func.terminator(b).map(|t| &t.kind) {
        Some(MInstKind::Branch { divergent, .. }) => match mode {
            RegionMode::Divergent => *divergent,
            _ => !func.one_way_branches.contains(&b),
        },
        _ => false,
    }
}

/// The unstructured regions of `func` selected by `mode` (`all` or `divergent`), found on
/// its control-flow graph as it stands (the allocated machine IR, after every change that
/// could alter its shape), with their structured sub-regions.
///
/// A region whose entry is the virtual entry (it holds the kernel's entry block) takes
/// that block as its entry, as [`kernel_region`] does; a region whose exit is the virtual
/// exit (it holds returns) keeps `exit: None`, and linearization makes it a return block.
pub fn unstructured_regions(func: &MirFunction, mode: RegionMode) -> Vec<Region> {
    estimated_regions(func, mode)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// [`unstructured_regions`], each with the cost model's estimate of what linearizing it
/// gains per pass of a warp, in instructions ([`Candidate::gain`]).
pub fn estimated_regions(func: &MirFunction, mode: RegionMode) -> Vec<(Region, i64)> {
    if mode == RegionMode::Kernel {
        return kernel_region(func).into_iter().map(|r| (r, 0)).collect();
    }
    candidate_regions(func, mode)
        .into_iter()
        .map(|c| {
            let gain = c.gain(func);
            (c.region, gain)
        })
        .collect()
}

/// A region [`candidate_regions`] found, with what the cost model's estimate of its gain
/// needs besides the instruction counts of its blocks. Everything here follows from the
/// shape of the control-flow graph (and the branches' divergence), so it holds for every
/// function of that shape: register allocation, which adds instructions but no block or
/// edge, leaves it as it was ([`Shape`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The region.
    pub region: Region,
    /// The blocks an IPDOM stack can run more than once per pass of a warp, and how many
    /// extra times (`Region::reruns`).
    reruns: Vec<(MBlock, u32)>,
    /// What Algorithm 1 adds to every pass (see [`Candidate::gain`]).
    guard_cost: i64,
}

impl Candidate {
    /// The cost model's estimate of what linearizing the region of `func` gains per pass
    /// of a warp, in instructions: what the blocks an IPDOM stack can run more than once
    /// cost in their extra runs, minus what Algorithm 1 adds to every pass before the
    /// guard optimisations — per guarded part (a block, or a structured sub-region) its
    /// guard's test and branch and its assignment to `g`, two per back-edge guard (one
    /// after each block with a retreating edge), and the entry's assignment. Each guard
    /// runs once per pass whichever lanes want its block, so that is a pass's cost; a
    /// block's own branch becomes its assignment, and costs nothing extra. The
    /// optimisations of O1-O3 remove much of the guards' cost (on the synthetic CFG
    /// family O3 runs fewer instructions than the plain kernel), which the estimate does
    /// not count: it is the gain of Algorithm 1 as the paper states it.
    pub fn gain(&self, func: &MirFunction) -> i64 {
        let saved: i64 = self
            .reruns
            .iter()
            .map(|&(b, n)| i64::from(n) * func.blocks[b].insts.len() as i64)
            .sum();
        saved - self.guard_cost
    }
}

/// What region finding reads of a function: its entry and layout, each block's kind,
/// its terminator's targets and divergence, whether every lane takes its branch one way,
/// and whether it holds a barrier. Two functions of one shape have the same
/// [`candidate_regions`], so regions found before register allocation (which changes
/// none of this) serve after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    entry: Option<MBlock>,
    order: Vec<MBlock>,
    blocks: Vec<BlockShape>,
}

/// One block of a [`Shape`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct BlockShape {
    kind: BlockKind,
    /// 0: no jump, branch or return at the end; 1: a jump; 2: a uniform branch; 3: a
    /// divergent one; 4: a return.
    terminator: u8,
    targets: [Option<MBlock>; 2],
    one_way: bool,
    barrier: bool,
}

impl Shape {
    /// The shape of `func`.
    pub fn of(func: &MirFunction) -> Shape {
        let blocks = func
            .blocks
            .iter()
            .map(|(b, data)| {
                let (terminator, targets) = match data.insts.last().map(|t| &t.kind) {
                    Some(MInstKind::Jump { dest }) => (1, [Some(dest.block), None]),
                    Some(MInstKind::Branch {
                        taken,
                        not_taken,
                        divergent,
                        ..
                    }) => (
                        2 + u8::from(*divergent),
                        [Some(taken.block), Some(not_taken.block)],
                    ),
                    Some(MInstKind::Ret) => (4, [None, None]),
                    _ => (0, [None, None]),
                };
                BlockShape {
                    kind: data.kind,
                    terminator,
                    targets,
                    one_way: func.one_way_branches.contains(&b),
                    barrier: data.insts.iter().any(|i| matches!(i.kind, MInstKind::Bar)),
                }
            })
            .collect();
        Shape {
            entry: func.entry(),
            order: func.order.clone(),
            blocks,
        }
    }
}

/// The unstructured regions `mode` (`all` or `divergent`) selects in `func`, as
/// [`unstructured_regions`] finds them, each with what its cost estimate needs; none in
/// `kernel` mode, whose region is the whole kernel ([`kernel_region`]).
pub fn candidate_regions(func: &MirFunction, mode: RegionMode) -> Vec<Candidate> {
    let selection = match mode {
        RegionMode::All => RegionSelection::AllUnstructured,
        RegionMode::Divergent => RegionSelection::DivergentUnstructured,
        RegionMode::Kernel => return Vec::new(),
    };
    let Some(kernel_entry) = func.entry() else {
        return Vec::new();
    };
    let view = Contracted::new(func);
    let cfg = ControlFlowGraph::compute(&view);
    let domtree = DominatorTree::compute(&cfg);
    let postdom = PostDominatorTree::compute(&cfg);
    let loops = LoopForest::compute(&cfg);
    let edges = UnstructuredEdges::compute(&cfg, &domtree, &postdom, &loops);
    if edges.is_empty() {
        return Vec::new();
    }
    let found = find_unstructured_regions(&cfg, &domtree, &postdom, &edges);
    let divergent = |b: MBlock| {
        matches!(
            func.terminator(b).map(|t| &t.kind),
            Some(MInstKind::Branch {
                divergent: true,
                ..
            })
        )
    };
    let selected = select_regions(&domtree, &edges, &found, selection, divergent);
    // A region in which no block can run twice per pass of a warp is left as it is:
    // its guards would cost and remove nothing. In `divergent` mode the branches that can
    // split a warp are the divergent ones; `all` asks for every unstructured region
    // whatever the divergence analysis says, so there any branch counts that can go both
    // ways — not a branch every lane provably takes one way (a `br_table`'s range check
    // whose index stays below the table's length), which splits nothing in any mode.
    let can_split = |b: MBlock| can_split(func, mode, b);
    let mut out = Vec::with_capacity(selected.len());
    for (r, reruns) in selected.iter().filter_map(|r| {
        let reruns = r.reruns(&cfg, &postdom, can_split);
        (!reruns.is_empty()).then_some((r, reruns))
    }) {
        let entry = match r.entry() {
            Some(d) => d,
            // The virtual entry: the kernel's entry block stands outside the region
            // instead. It has no predecessors (the IR forbids branches to it), so every
            // edge into the rest of the region comes from it or from the region.
            None if cfg.preds(kernel_entry).is_empty() => kernel_entry,
            None => continue,
        };
        // The region's blocks and the forwarding blocks on the edges that lie in it.
        let mut blocks: Vec<MBlock> = Vec::new();
        for &u in r.blocks().iter().chain(r.entry().as_ref()) {
            if u != entry {
                blocks.push(u);
            }
            for s in func.succs(u) {
                let (v, chain) = view.follow(s);
                if r.holds_edge(u, v) {
                    blocks.extend(chain);
                }
            }
        }
        blocks.sort();
        blocks.dedup();
        if blocks.is_empty() {
            continue;
        }
        let subregions = r
            .structured_subregions(&cfg, &domtree, &postdom, &edges)
            .into_iter()
            .filter(|s| !s.blocks().contains(&entry))
            .map(|sr| {
                // Forwarding blocks on the sub-region's own edges (not on an edge from its
                // exit back to its entry, which leaves it).
                let mut blocks = Vec::new();
                for &u in sr.blocks() {
                    blocks.push(u);
                    if u == sr.exit() {
                        continue;
                    }
                    for s in func.succs(u) {
                        let (v, chain) = view.follow(s);
                        if sr.blocks().contains(&v) {
                            blocks.extend(chain);
                        }
                    }
                }
                blocks.sort();
                blocks.dedup();
                SubRegion {
                    entry: sr.entry(),
                    exit: sr.exit(),
                    blocks,
                }
            })
            .collect();
        let region = Region {
            entry,
            blocks,
            exit: r.exit(),
            subregions,
        };
        let guard_cost = guard_cost(&cfg, &domtree, &region);
        out.push(Candidate {
            region,
            reruns,
            guard_cost,
        });
    }
    out
}

/// What Algorithm 1 adds to every pass of a warp over `region` (see [`Candidate::gain`]):
/// three instructions per guarded part, two per block with a retreating edge, and one for
/// the entry's assignment.
fn guard_cost(
    cfg: &ControlFlowGraph<MBlock>,
    domtree: &DominatorTree<MBlock>,
    region: &Region,
) -> i64 {
    let in_sub: HashSet<MBlock> = region
        .subregions
        .iter()
        .flat_map(|s| s.blocks.iter().copied())
        .collect();
    let parts =
        region.blocks.iter().filter(|b| !in_sub.contains(b)).count() + region.subregions.len();
    let members: HashSet<MBlock> = region.blocks.iter().copied().collect();
    let retreating = region
        .blocks
        .iter()
        .filter(|&&b| {
            domtree.rpo_number(b).is_some_and(|nb| {
                cfg.succs(b).iter().any(|s| {
                    members.contains(s) && domtree.rpo_number(*s).is_some_and(|ns| ns <= nb)
                })
            })
        })
        .count();
    3 * parts as i64 + 2 * retreating as i64 + 1
}

/// Kernel mode's test: whether linearizing the whole kernel can change what the IPDOM
/// machine does. It can where some unstructured region can run a block twice per pass of
/// a warp (by its divergent branches: a uniform one never splits a warp, which the
/// emulator checks on every run), and where
/// the reconvergence stack can get shallower: the whole kernel linearized runs its guards
/// as a chain of if-thens, one stack entry above the warp's, plus one per loop around
/// them (its back-edge guard), and a divergent branch before linearization adds an entry
/// per way that does not start at its post-dominator for the blocks it encloses (those
/// its lanes reach before that post-dominator). So can loop merging (Section 5.2), where
/// `merge_loops` would merge a nest: `always` any, `cost` one whose inner loop outweighs
/// the rest of the outer one ([`super::NestPass::outweighs`], on the nest's blocks).
/// Where none of these holds (a kernel whose only divergence is an if-then, or a loop's
/// exit, say), the kernel is left as it is: its guards would cost instructions and a
/// deeper stack, and remove nothing.
///
/// The enclosure walks stop as soon as one block is enclosed deeper than the linearized
/// kernel would be, so the test is linear in the kernel times that depth.
pub fn kernel_gains(func: &MirFunction, merge_loops: MergeLoops) -> bool {
    if !unstructured_regions(func, RegionMode::Divergent).is_empty() {
        return true;
    }
    let view = Contracted::new(func);
    let cfg = ControlFlowGraph::compute(&view);
    let domtree = DominatorTree::compute(&cfg);
    let postdom = PostDominatorTree::compute(&cfg);
    let loops = LoopForest::compute(&cfg);
    let would_merge = |inner: Loop, outer: Loop| {
        let (mut inside, mut rest) = (NestPass::default(), NestPass::default());
        for &b in loops.blocks(outer) {
            let side = if loops.contains(inner, b) {
                &mut inside
            } else {
                &mut rest
            };
            side.guards += 1;
            side.insts += func.blocks[b].insts.len();
            side.blocks += usize::from(func.blocks[b].kind.is_code());
        }
        inside.outweighs(&rest)
    };
    let merges = loops.loops().any(|l| {
        loops.parent(l).is_some_and(|outer| {
            !loops.is_irreducible(l)
                && !loops.is_irreducible(outer)
                && match merge_loops {
                    MergeLoops::Always => true,
                    MergeLoops::Never => false,
                    MergeLoops::Cost => would_merge(l, outer),
                }
        })
    });
    if merges {
        return true;
    }
    let divergent = |b: MBlock| {
        matches!(
            func.terminator(b).map(|t| &t.kind),
            Some(MInstKind::Branch {
                divergent: true,
                ..
            })
        )
    };
    let blocks: Vec<MBlock> = domtree.rpo().to_vec();
    if !blocks.iter().any(|&b| divergent(b)) {
        // Uniform guards: the stack stays one entry deep either way.
        return false;
    }
    let after = 2 + blocks
        .iter()
        .map(|&b| loops.loop_depth(b))
        .max()
        .unwrap_or(0);
    let mut depth: cranelift_entity::SecondaryMap<MBlock, u32> =
        cranelift_entity::SecondaryMap::with_default(1);
    let mut seen: cranelift_entity::SecondaryMap<MBlock, u32> =
        cranelift_entity::SecondaryMap::with_default(0);
    let mut walk = 0u32;
    let mut stack = Vec::new();
    for &d in blocks.iter().filter(|&&b| divergent(b)) {
        let ipdom = postdom.ipdom(d);
        let mut ways: Vec<MBlock> = cfg.succs(d).to_vec();
        ways.sort();
        ways.dedup();
        if ways.len() < 2 {
            continue;
        }
        ways.retain(|&s| Some(s) != ipdom);
        let entries = ways.len() as u32;
        walk += 1;
        stack.clear();
        stack.extend(ways);
        while let Some(b) = stack.pop() {
            if seen[b] == walk {
                continue;
            }
            seen[b] = walk;
            depth[b] += entries;
            if depth[b] > after {
                return true;
            }
            stack.extend(cfg.succs(b).iter().copied().filter(|&t| Some(t) != ipdom));
        }
    }
    false
}
