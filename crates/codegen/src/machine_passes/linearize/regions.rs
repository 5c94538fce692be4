//! Region selection for linearization: which single-entry single-exit parts of a kernel
//! the pass linearizes (the `linearize_regions` setting).
//!
//! - `kernel`: the whole kernel as one region ([`kernel_region`]), as the paper's
//!   Section 3 assumes;
//! - `all`: every unstructured region, and `divergent`: those holding a divergent
//!   branch (in a block or at the entry) ([`unstructured_regions`]), found by
//!   `warplift_ir::cfg::regions` (Definition 1, Algorithms 2 and 3) on the allocated
//!   kernel's graph with its forwarding blocks (the edge blocks of critical-edge
//!   splitting) contracted, then widened again by the forwarding blocks on the edges that
//!   lie in each region or sub-region; of those, only the regions in which an IPDOM
//!   stack can run a block twice per pass of a warp (the others have nothing to gain).

use super::{Region, RegionMode, SubRegion};
use crate::mir::{BlockKind, MBlock, MInstKind, MirFunction};
use std::collections::HashSet;
use warplift_ir::cfg::{
    find_unstructured_regions, select_regions, Cfg, ControlFlowGraph, DominatorTree, LoopForest,
    PostDominatorTree, RegionSelection, UnstructuredEdges,
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
        for s in self.func.successors(node) {
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

/// The unstructured regions of `func` selected by `mode` (`all` or `divergent`), found on
/// its control-flow graph as it stands (the allocated machine IR, after every change that
/// could alter its shape), with their structured sub-regions.
///
/// A region whose entry is the virtual entry (it holds the kernel's entry block) takes
/// that block as its entry, as [`kernel_region`] does; a region whose exit is the virtual
/// exit (it holds returns) keeps `exit: None`, and linearization makes it a return block.
pub fn unstructured_regions(func: &MirFunction, mode: RegionMode) -> Vec<Region> {
    let selection = match mode {
        RegionMode::All => RegionSelection::AllUnstructured,
        RegionMode::Divergent => RegionSelection::DivergentUnstructured,
        RegionMode::Kernel => return kernel_region(func).into_iter().collect(),
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
    // split a warp are the divergent ones (a `br_table`'s range check that every lane
    // passes is uniform); `all` asks for every unstructured region whatever the
    // divergence analysis says, so there any branch counts.
    let can_split = |b: MBlock| match mode {
        RegionMode::Divergent => divergent(b),
        _ => matches!(
            func.terminator(b).map(|t| &t.kind),
            Some(MInstKind::Branch { .. })
        ),
    };
    let mut out = Vec::with_capacity(selected.len());
    for r in selected
        .iter()
        .filter(|r| r.can_run_a_block_twice(&cfg, &postdom, can_split))
    {
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
            for s in func.successors(u) {
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
                    for s in func.successors(u) {
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
        out.push(Region {
            entry,
            blocks,
            exit: r.exit(),
            subregions,
        });
    }
    out
}
