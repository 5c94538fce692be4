//! The single-entry, single-exit regions of an SSA kernel that the IR-level
//! restructurings work on (`linearize_ssa`, and `restructure` in kernel mode): the whole
//! kernel, or its unstructured regions (Definition 4 and Algorithm 2 of "Taming Control
//! Divergence in GPUs through Control Flow Linearization", found by
//! [`warplift_ir::cfg::find_unstructured_regions`]), those holding a divergent branch or
//! all of them — in both cases only where some block can run twice per pass of a warp.

use crate::analysis::AnalysisCache;
use crate::settings::RegionMode;
use warplift_ir::cfg::{
    find_unstructured_regions, select_regions, RegionSelection, UnstructuredEdges,
};
use warplift_ir::{Block, Function, Opcode};

/// A single-entry, single-exit region of a kernel to linearize.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsaRegion {
    /// Outside the region, every edge into it comes from here (its CIDOM).
    pub entry: Block,
    /// The region's blocks, in any order.
    pub blocks: Vec<Block>,
    /// Every edge leaving the region goes here (its CIPDOM); `None`: the region returns
    /// (from one block or several), and linearization makes it a return block.
    pub exit: Option<Block>,
}

/// The regions `mode` selects in `func`: the whole kernel (every reachable block but the
/// entry and the single return block, if there is one), or its unstructured regions
/// (Definition 4, Algorithm 2) holding a divergent branch (`divergent`) or not (`all`).
/// Disjoint, none holding another's entry.
pub fn find_regions(func: &Function, mode: RegionMode) -> Vec<SsaRegion> {
    find_regions_in(func, mode, &mut AnalysisCache::new())
}

/// [`find_regions`], with the analyses taken from (and left in) `analyses`.
pub fn find_regions_in(
    func: &Function,
    mode: RegionMode,
    analyses: &mut AnalysisCache,
) -> Vec<SsaRegion> {
    let Some(kernel_entry) = func.entry_block() else {
        return Vec::new();
    };
    let cfg = analyses.cfg(func);
    let domtree = analyses.domtree(func);
    if mode == RegionMode::Kernel {
        let returns: Vec<Block> = domtree
            .rpo()
            .iter()
            .copied()
            .filter(|&b| {
                func.terminator(b)
                    .is_some_and(|t| func.dfg.insts[t].opcode() == Opcode::Return)
            })
            .collect();
        let exit = match returns[..] {
            [r] if r != kernel_entry => Some(r),
            _ => None,
        };
        let blocks: Vec<Block> = domtree
            .rpo()
            .iter()
            .copied()
            .filter(|&b| b != kernel_entry && Some(b) != exit)
            .collect();
        if blocks.is_empty() || !cfg.preds(kernel_entry).is_empty() {
            return Vec::new();
        }
        return vec![SsaRegion {
            entry: kernel_entry,
            blocks,
            exit,
        }];
    }
    let selection = match mode {
        RegionMode::All => RegionSelection::AllUnstructured,
        _ => RegionSelection::DivergentUnstructured,
    };
    let postdom = analyses.postdom(func);
    let loops = analyses.loops(func);
    let edges = UnstructuredEdges::compute(&cfg, &domtree, &postdom, &loops);
    if edges.is_empty() {
        return Vec::new();
    }
    let found = find_unstructured_regions(&cfg, &domtree, &postdom, &edges);
    let divergence = analyses.divergence(func);
    let selected = select_regions(&domtree, &edges, &found, selection, |b| {
        divergence.is_divergent_branch(b)
    });
    // A region in which no block can run twice per pass of a warp is left as it is (see
    // `Region::can_run_a_block_twice`); `all` counts every branch as one that may split.
    let can_split = |b: Block| match mode {
        RegionMode::All => cfg.succs(b).len() > 1,
        _ => divergence.is_divergent_branch(b),
    };
    let mut out = Vec::with_capacity(selected.len());
    for r in selected
        .iter()
        .filter(|r| r.can_run_a_block_twice(&cfg, &postdom, can_split))
    {
        let entry = match r.entry() {
            Some(d) => d,
            // The virtual entry: the kernel's entry block, which no branch may target,
            // stands outside the region instead.
            None if cfg.preds(kernel_entry).is_empty() => kernel_entry,
            None => continue,
        };
        let blocks: Vec<Block> = r.blocks().iter().copied().filter(|&b| b != entry).collect();
        if blocks.is_empty() {
            continue;
        }
        out.push(SsaRegion {
            entry,
            blocks,
            exit: r.exit(),
        });
    }
    out
}
