//! Branch interleaving (Section 5.1 of the paper), enabled by `linearize_interleave`.
//!
//! A SIMT machine with a reconvergence stack runs one arm of a divergent branch to the
//! post-dominator before it starts the other, so a long-latency load in one arm stalls the
//! warp at the load's first use although the other arm's lanes have work that does not
//! depend on it. Linearization lays the region out as one sequence of guarded blocks, and
//! any topological order of the region's forward edges is a valid sequence; choosing one
//! that alternates between the arms puts the other arm's work between a load and its use.
//!
//! Two steps:
//! - [`split_at_load_uses`]: a block of the region that loads from global or local memory
//!   and uses the loaded value later in the same block is split before that use, into a
//!   first half ending with the load's issue and a second half, its only successor, starting
//!   with the use (the paper's `B6_1`, `B6_2`). The second half is a block of the region of
//!   its own with its own guard, so the sequence may place other blocks between the halves.
//!   Registers are untouched: the halves hold the same instructions, joined by a jump.
//! - [`interleave`]: the region's parts are re-ordered by list scheduling over the forward
//!   edges of the given order: normally the earliest ready part of that order comes next,
//!   but after a part that issued a load whose use was split off, a ready part that is not
//!   its successor comes first (a block of the other arm), so the load's latency overlaps
//!   that part's instructions.

use super::Part;
use crate::mir::{MBlock, MInst, MInstKind, MirFunction, Reg, RegRole};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;
use warplift_ir::AddrSpace;

/// Where `block` should be split: the index of the first instruction that reads a value a
/// global or local load earlier in the block wrote, if that is not the block's terminator.
fn split_point(insts: &[MInst]) -> Option<usize> {
    let mut pending: FxHashSet<Reg> = FxHashSet::default();
    let body = insts.len().checked_sub(1)?;
    for (i, inst) in insts[..body].iter().enumerate() {
        let mut reads = false;
        let mut defs = Vec::new();
        inst.clone().visit_regs(|r, role| match role {
            RegRole::Use => reads |= pending.contains(r),
            RegRole::Def => defs.push(*r),
        });
        if reads {
            return Some(i);
        }
        for d in defs {
            pending.remove(&d);
        }
        if let MInstKind::Ld {
            space: AddrSpace::Global | AddrSpace::Local,
            dst,
            ..
        } = inst.kind
        {
            pending.insert(dst);
        }
    }
    None
}

/// Splits each of `blocks` between its first long-latency load and that load's first use
/// (see the module documentation). Returns the pairs `(first half, second half)`; the
/// first half keeps the block's name, the second is a new block placed right after it.
pub fn split_at_load_uses(func: &mut MirFunction, blocks: &[MBlock]) -> Vec<(MBlock, MBlock)> {
    let mut pairs = Vec::new();
    for &b in blocks {
        let Some(at) = split_point(&func.blocks[b].insts) else {
            continue;
        };
        let rest = func.blocks[b].insts.split_off(at);
        let srcloc = rest[0].srcloc;
        let second = func.new_block(None);
        func.blocks[second].insts = rest;
        func.blocks[b].insts.push(MInst::new(
            MInstKind::Jump {
                dest: crate::mir::BlockTarget::new(second),
            },
            srcloc,
        ));
        let at = func
            .order
            .iter()
            .position(|&x| x == b)
            .map_or(func.order.len(), |i| i + 1);
        func.order.insert(at, second);
        pairs.push((b, second));
    }
    pairs
}

/// Re-orders `parts` (in an order topological for the region's forward edges) so that a
/// part in `awaiting` (the first half of a split block) is followed, where the edges allow,
/// by a part that does not depend on it.
pub(super) fn interleave(
    func: &MirFunction,
    parts: Vec<Part>,
    awaiting: &FxHashSet<MBlock>,
) -> Vec<Part> {
    let n = parts.len();
    let index: FxHashMap<MBlock, usize> =
        parts.iter().enumerate().map(|(i, p)| (p.head, i)).collect();
    // Forward edges of the given order; it is topological for them, so the list scheduler
    // always finds a ready part.
    let succs: Vec<Vec<usize>> = parts
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let mut s: Vec<usize> = func
                .successors(p.tail)
                .iter()
                .filter_map(|b| index.get(b).copied())
                .filter(|&j| j > k)
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        })
        .collect();
    let mut preds = vec![0usize; n];
    for s in succs.iter().flatten() {
        preds[*s] += 1;
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&k| preds[k] == 0).collect();
    let mut order = Vec::with_capacity(n);
    let mut last: Option<usize> = None;
    while let Some(&first) = ready.first() {
        let pick = last
            .filter(|&l| awaiting.contains(&parts[l].head))
            .and_then(|l| ready.iter().copied().find(|k| !succs[l].contains(k)))
            .unwrap_or(first);
        ready.remove(&pick);
        order.push(pick);
        for &s in &succs[pick] {
            preds[s] -= 1;
            if preds[s] == 0 {
                ready.insert(s);
            }
        }
        last = Some(pick);
    }
    debug_assert_eq!(order.len(), n, "the given order is topological");
    let mut slots: Vec<Option<Part>> = parts.into_iter().map(Some).collect();
    order.into_iter().filter_map(|k| slots[k].take()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{Address, MType, Operand, RegClass};

    fn ld(dst: Reg, base: Reg) -> MInst {
        MInst::new(
            MInstKind::Ld {
                space: AddrSpace::Global,
                ty: MType::I32,
                dst,
                addr: Address {
                    base: Some(base),
                    offset: 0,
                },
            },
            Default::default(),
        )
    }

    fn mov(dst: Reg, src: Reg) -> MInst {
        MInst::new(
            MInstKind::Mov {
                ty: MType::I32,
                dst,
                src: Operand::Reg(src),
            },
            Default::default(),
        )
    }

    #[test]
    fn a_block_splits_before_the_first_use_of_a_loaded_value() {
        let r = |n| Reg::phys(n, RegClass::B32);
        let a = Reg::phys(0, RegClass::B64);
        let ret = MInst::new(MInstKind::Ret, Default::default());
        // Load, independent work, use: split before the use.
        let insts = [ld(r(0), a), mov(r(1), r(2)), mov(r(3), r(0)), ret.clone()];
        assert_eq!(split_point(&insts), Some(2));
        // A value overwritten before it is read is no longer pending.
        let insts = [ld(r(0), a), mov(r(0), r(2)), mov(r(3), r(0)), ret.clone()];
        assert_eq!(split_point(&insts), None);
        // No use before the terminator: nothing to split.
        let insts = [ld(r(0), a), ret];
        assert_eq!(split_point(&insts), None);
    }
}
