//! What the `linearize` pass promises, checked on a kernel before and after it runs: the
//! tests (over the corpus) and the fuzz harness (over random unstructured and irreducible
//! kernels) hold every run to the paper's claims with this one function.
//!
//! - **Registers** (Section 6): every instruction of the kernel survives unchanged but the
//!   branches the pass replaces (at O3 perhaps predicated: run only by the lanes its guard
//!   selects), and every instruction the pass adds writes only the registers it reserved —
//!   so no live range moves and nothing spills.
//! - **Structure** (Claim 1): every guard's branch reconverges at its fall-through
//!   successor, so the warp meets again after every guarded block; in kernel mode every
//!   branch but the entry's is such a guard test.
//! - **Code growth** (Claim 3): per linearized kernel, at most one block per region block
//!   plus one per retreating edge (and the return block it may make, and the second
//!   halves of blocks split for interleaving), and at most two instructions per region
//!   block plus one per retreating edge and one per region; without optimisations, exactly
//!   the guard blocks and the guard tests and assignments the pass reports.

use super::RegionMode;
use crate::mir::{BlockKind, MInst, MInstKind, MirFunction};
use crate::passes::PassReport;
use crate::regalloc::ReservedRegs;
use crate::settings::Settings;
use rustc_hash::FxHashMap;
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};

/// How much one run of the pass grew a kernel, with the bounds' inputs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Growth {
    /// Blocks in the linearized regions (`n`).
    pub region_blocks: u64,
    /// Retreating edges in them (`r`).
    pub retreating_edges: u64,
    /// Blocks added to the kernel's order.
    pub added_blocks: u64,
    /// Non-terminator instructions added.
    pub added_insts: u64,
}

/// Checks that `after` is `before` correctly linearized by a run with `settings` that
/// reported `report` and was given `reserved` (see the module documentation); returns
/// the growth, or what is wrong.
pub fn check_linearized(
    before: &MirFunction,
    after: &MirFunction,
    reserved: &ReservedRegs,
    report: &PassReport,
    settings: &Settings,
) -> Result<Growth, String> {
    let count = |name: &str| {
        report
            .get(name)
            .ok_or_else(|| format!("the report has no count `{name}`"))
    };

    // Registers: match the instructions of `after` against those of `before`.
    let mut original: FxHashMap<&MInst, usize> = FxHashMap::default();
    for &b in &before.order {
        for i in &before.blocks[b].insts {
            if !i.kind.is_terminator() {
                *original.entry(i).or_default() += 1;
            }
        }
    }
    for &b in &after.order {
        for i in &after.blocks[b].insts {
            // O3 predicates short blocks under their guard's test (or the branch
            // condition it folds to): the instruction is the kernel's, run by the lanes
            // the guard selects.
            let unguarded;
            let i = match i.guard {
                Some(_) if original.get(i).is_none_or(|&n| n == 0) => {
                    unguarded = MInst {
                        guard: None,
                        ..i.clone()
                    };
                    &unguarded
                }
                _ => i,
            };
            match original.get_mut(i) {
                Some(n) if *n > 0 && !i.kind.is_terminator() => *n -= 1,
                _ => {
                    if let Some(d) = i.kind.def().filter(|d| !reserved.contains(*d)) {
                        return Err(format!("{b}: `{i:?}` writes {d}, not a reserved register"));
                    }
                }
            }
        }
    }
    if let Some((i, _)) = original.iter().find(|(_, &n)| n > 0) {
        return Err(format!("`{i:?}` of the kernel is gone"));
    }

    // Structure.
    let regions = count("regions")?;
    let kernel_mode = settings.linearize_regions == RegionMode::Kernel;
    let pdt = PostDominatorTree::compute(&ControlFlowGraph::compute(after));
    for &b in &after.order {
        if let Some(MInstKind::Branch { not_taken, .. }) = after.terminator(b).map(|t| &t.kind) {
            // O3 merges guard tests into the blocks before them: in kernel mode every
            // branch but the entry's is one.
            let guard = after.blocks[b].kind == BlockKind::Guard
                || (kernel_mode && regions > 0 && Some(b) != after.entry());
            if guard && pdt.reconvergence_point(b) != Some(not_taken.block) {
                return Err(format!("{b} does not reconverge at its fall-through"));
            }
        }
    }

    // Code growth.
    let body = |f: &MirFunction| -> usize {
        f.order
            .iter()
            .map(|&b| {
                f.blocks[b]
                    .insts
                    .iter()
                    .filter(|i| !i.kind.is_terminator())
                    .count()
            })
            .sum()
    };
    let growth = Growth {
        region_blocks: count("region blocks")?,
        retreating_edges: count("retreating edges")?,
        added_blocks: after.order.len().saturating_sub(before.order.len()) as u64,
        added_insts: body(after).saturating_sub(body(before)) as u64,
    };
    let (n, r) = (growth.region_blocks, growth.retreating_edges);
    let (exits, split) = (count("exit blocks")?, count("blocks split")?);
    if growth.added_blocks > n + r + exits + split {
        return Err(format!(
            "{} blocks added to {n} region blocks with {r} retreating edges",
            growth.added_blocks
        ));
    }
    if growth.added_insts > 2 * n + r + regions {
        return Err(format!(
            "{} instructions added to {n} region blocks with {r} retreating edges",
            growth.added_insts
        ));
    }
    if settings.linearize_opt == 0 {
        let (guards, back) = (count("guard blocks")?, count("back-edge guards")?);
        let exact = [
            (growth.added_blocks, guards + back + exits + split, "blocks"),
            (guards, n - count("sub-region blocks")?, "guard blocks"),
            (
                growth.added_insts,
                count("guard tests")? + count("guard assignments")?,
                "instructions",
            ),
        ];
        if let Some((got, want, what)) = exact.iter().find(|(got, want, _)| got != want) {
            return Err(format!(
                "{got} {what} added, the report accounts for {want}"
            ));
        }
        if back > r {
            return Err(format!("{back} back-edge guards for {r} retreating edges"));
        }
    }
    Ok(growth)
}
