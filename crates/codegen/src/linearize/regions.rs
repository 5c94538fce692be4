//! Region selection for linearization: which single-entry single-exit parts of a kernel
//! the pass linearizes (the `linearize_regions` setting).
//!
//! - `kernel`: the whole kernel as one region ([`kernel_region`]), as the paper's
//!   Section 3 assumes;
//! - `all`: every unstructured region, and `divergent`: those holding a divergent
//!   branch ([`unstructured_regions`]).

use super::Region;
use crate::mir::{MBlock, MInstKind, MirFunction};
use std::collections::HashSet;

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
    })
}

/// The maximal unstructured regions of `func` (only those holding a divergent branch when
/// `divergent_only`).
pub fn unstructured_regions(func: &MirFunction, divergent_only: bool) -> Vec<Region> {
    // Until the region analysis is available, the whole kernel stands for its regions
    // when it has any conditional branch (a divergent one, when asked).
    let has_branch = reachable(func).into_iter().any(|b| {
        matches!(
            func.terminator(b).map(|t| &t.kind),
            Some(MInstKind::Branch { divergent, .. }) if *divergent || !divergent_only
        )
    });
    if has_branch {
        kernel_region(func).into_iter().collect()
    } else {
        Vec::new()
    }
}
