//! Post-allocation cleanup: removes the edge blocks that register allocation left empty,
//! and the control-flow blocks IR passes made that ended up as a lone jump.
//!
//! Before allocation every critical edge, and every edge out of a block whose terminator
//! reads a register into a merge, is split by a block of its own
//! (`regalloc::prepare`): regalloc2 needs a place for the edge's moves. Most such edges
//! need no move at all, and the block is left holding only `jump`. Kept, it costs a
//! warp-instruction every time the edge is taken, and a taken branch: a loop whose back
//! edge is split runs its body, its conditional branch, and the split block's jump on
//! every iteration.
//!
//! ```text
//!   before                              after
//!   mblock1:                            mblock1:
//!       ...body...                          ...body...
//!       @p bra mblock4 else mblock2         @p bra mblock1 else mblock2
//!   mblock4 (edge split):               mblock2:
//!       jump mblock1                        ...
//!   mblock2:
//!       ...
//! ```
//!
//! The pass, run once allocation and the machine passes are done (linearization works on
//! the allocated blocks and relies on every edge having its own place):
//!
//! 1. finds the edge-split blocks whose only instruction is an unguarded `jump`;
//! 2. retargets every branch and jump to one of them to where it leads (following a chain
//!    of them, should one jump to another);
//! 3. turns a two-way branch whose arms now meet into a `jump` (reading a predicate has
//!    no effect);
//! 4. drops the emptied blocks from the order; every other block keeps its place.
//!
//! Layout then does the rest: the emitters fall through to the next block and the PTX
//! emitter inverts a branch whose taken arm is the next block, so an if-then, which
//! used to read `@%p bra THEN; bra.uni JOIN; THEN:` (the second jump being the split
//! edge), reads `@!%p bra JOIN; THEN:`.
//!
//! The same holds for a block an IR pass made for control flow only
//! ([`BlockKind::PassMade`], from `warplift_ir::BlockOrigin::Pass`): restructuring's
//! empty join nodes, which tail structure needs in the IR (rule 2 of the paper's
//! Definition 2 contracts a branch only into a join of its own), and dispatches or
//! assignment blocks that the machine passes left holding only a jump. On the machine
//! each costs a warp-instruction per group of lanes that passes it and buys nothing: the
//! IPDOM stack reconverges at the block's destination just as well.
//!
//! Only such blocks are removed: a kernel's own blocks keep their identity (the emulator
//! counts executions per IR block, and a kernel's empty block is part of what it
//! measures). A removed pass-made block has no machine code, so the emulator's per-block
//! counts and redundant executions simply have no entry for it. Reconvergence
//! points stay right because they are computed from the final graph by the emitters
//! (immediate post-dominators): removing a block that only jumps moves a branch's
//! immediate post-dominator from that block to its destination at most, which every lane
//! reaches at the same point of its execution.

use crate::mir::{BlockKind, MBlock, MInstKind, MirFunction};
use cranelift_entity::SecondaryMap;

/// What [`remove_empty_edge_blocks`] did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupStats {
    /// Edge blocks and pass-made blocks removed.
    pub removed_blocks: usize,
    /// Branch and jump targets redirected past a removed block.
    pub retargeted: usize,
    /// Two-way branches whose arms met and became jumps.
    pub merged_branches: usize,
}

/// Removes the edge-split and pass-made blocks of the allocated function `f` that only
/// jump, and redirects the branches to them (see the [module documentation](self)).
pub fn remove_empty_edge_blocks(f: &mut MirFunction) -> CleanupStats {
    let mut stats = CleanupStats::default();
    let Some(entry) = f.entry() else {
        return stats;
    };
    // Where each removable block jumps.
    let mut forward: SecondaryMap<MBlock, Option<MBlock>> = SecondaryMap::new();
    let mut any = false;
    for &b in &f.order {
        let data = &f.blocks[b];
        let removable = matches!(data.kind, BlockKind::EdgeSplit | BlockKind::PassMade);
        if b == entry || !removable || !data.params.is_empty() {
            continue;
        }
        if let [only] = &data.insts[..] {
            if let (MInstKind::Jump { dest }, None) = (&only.kind, &only.guard) {
                if dest.args.is_empty() && dest.block != b {
                    forward[b] = Some(dest.block);
                    any = true;
                }
            }
        }
    }
    if !any {
        return stats;
    }
    // The final destination past a chain of removable blocks; a chain that closes on
    // itself (never made by edge splitting) keeps its blocks.
    let limit = f.order.len();
    let resolve = |mut b: MBlock| -> Option<MBlock> {
        for _ in 0..=limit {
            match forward[b] {
                Some(next) => b = next,
                None => return Some(b),
            }
        }
        None
    };
    let mut removed: SecondaryMap<MBlock, bool> = SecondaryMap::new();
    for &b in &f.order {
        if forward[b].is_some() && resolve(b).is_some() {
            removed[b] = true;
        }
    }
    for &b in &f.order {
        if removed[b] {
            continue;
        }
        let Some(term) = f.blocks[b].insts.last_mut() else {
            continue;
        };
        term.kind.for_each_target_mut(|t| {
            if removed[t.block] {
                if let Some(to) = resolve(t.block) {
                    t.block = to;
                    stats.retargeted += 1;
                }
            }
        });
        if let MInstKind::Branch {
            taken, not_taken, ..
        } = &term.kind
        {
            if taken.block == not_taken.block && taken.args == not_taken.args {
                let dest = taken.clone();
                term.kind = MInstKind::Jump { dest };
                stats.merged_branches += 1;
            }
        }
    }
    f.order.retain(|&b| !removed[b]);
    for (b, data) in f.blocks.iter_mut() {
        if removed[b] {
            data.insts.clear();
            stats.removed_blocks += 1;
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{BlockTarget, MInst, Reg, RegClass};
    use warplift_ir::SourceLoc;

    fn jump(to: MBlock) -> MInst {
        MInst::new(
            MInstKind::Jump {
                dest: BlockTarget::new(to),
            },
            SourceLoc::default(),
        )
    }

    fn branch(p: Reg, taken: MBlock, not_taken: MBlock) -> MInst {
        MInst::new(
            MInstKind::Branch {
                pred: p,
                negated: false,
                taken: BlockTarget::new(taken),
                not_taken: BlockTarget::new(not_taken),
                divergent: true,
            },
            SourceLoc::default(),
        )
    }

    /// entry -> loop; loop: branch back through an empty edge block, or out.
    #[test]
    fn a_loops_empty_back_edge_block_goes_and_the_branch_targets_the_header() {
        let mut f = MirFunction::new("k", Vec::new());
        let p = Reg::phys(0, RegClass::Pred);
        let [entry, body, edge, exit] = [(); 4].map(|_| f.new_block(None));
        f.blocks[edge].kind = BlockKind::EdgeSplit;
        f.blocks[entry].insts.push(jump(body));
        f.blocks[body].insts.push(branch(p, edge, exit));
        f.blocks[edge].insts.push(jump(body));
        f.blocks[exit]
            .insts
            .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
        f.order = vec![entry, body, edge, exit];
        let stats = remove_empty_edge_blocks(&mut f);
        assert_eq!(
            stats,
            CleanupStats {
                removed_blocks: 1,
                retargeted: 1,
                merged_branches: 0
            }
        );
        assert_eq!(f.order, vec![entry, body, exit]);
        assert_eq!(f.successors(body), vec![body, exit]);
        assert!(f.blocks[edge].insts.is_empty());
    }

    /// An if-then whose arms meet at a pass-made join that only jumps on: the join goes
    /// and both arms jump to its destination; the kernel's own empty block stays.
    #[test]
    fn a_pass_made_join_that_only_jumps_goes() {
        let mut f = MirFunction::new("k", Vec::new());
        let p = Reg::phys(0, RegClass::Pred);
        let [entry, then, join, own, exit] = [(); 5].map(|_| f.new_block(None));
        f.blocks[join].kind = BlockKind::PassMade;
        f.blocks[entry].insts.push(branch(p, then, join));
        f.blocks[then].insts.push(jump(join));
        f.blocks[join].insts.push(jump(own));
        f.blocks[own].insts.push(jump(exit));
        f.blocks[exit]
            .insts
            .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
        f.order = vec![entry, then, join, own, exit];
        let stats = remove_empty_edge_blocks(&mut f);
        assert_eq!(
            stats,
            CleanupStats {
                removed_blocks: 1,
                retargeted: 2,
                merged_branches: 0
            }
        );
        assert_eq!(f.order, vec![entry, then, own, exit]);
        assert_eq!(f.successors(entry), vec![then, own]);
        assert_eq!(f.successors(then), vec![own]);

        // A pass-made block that does work, or that takes parameters, stays.
        let mut g = MirFunction::new("k", Vec::new());
        let [entry, made, exit] = [(); 3].map(|_| g.new_block(None));
        g.blocks[made].kind = BlockKind::PassMade;
        g.blocks[entry].insts.push(jump(made));
        g.blocks[made].insts.push(branch(p, exit, exit));
        g.blocks[exit]
            .insts
            .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
        g.order = vec![entry, made, exit];
        assert_eq!(remove_empty_edge_blocks(&mut g).removed_blocks, 0);
        assert_eq!(g.order, vec![entry, made, exit]);
    }

    /// Both arms of a branch through empty edge blocks to one block become one jump; a
    /// kernel block that only jumps, and an edge block doing work, stay.
    #[test]
    fn arms_that_meet_become_a_jump_and_other_blocks_stay() {
        let mut f = MirFunction::new("k", Vec::new());
        let p = Reg::phys(0, RegClass::Pred);
        let [entry, e1, e2, own, join] = [(); 5].map(|_| f.new_block(None));
        f.blocks[e1].kind = BlockKind::EdgeSplit;
        f.blocks[e2].kind = BlockKind::EdgeSplit;
        f.blocks[entry].insts.push(branch(p, e1, e2));
        f.blocks[e1].insts.push(jump(join));
        f.blocks[e2].insts.push(jump(own));
        f.blocks[own].insts.push(jump(join));
        f.blocks[join]
            .insts
            .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
        f.order = vec![entry, e1, e2, own, join];
        let stats = remove_empty_edge_blocks(&mut f);
        assert_eq!(stats.removed_blocks, 2);
        assert_eq!(stats.merged_branches, 0);
        assert_eq!(f.order, vec![entry, own, join]);
        assert_eq!(f.successors(entry), vec![join, own]);

        // Now the second arm goes straight to the join too: one jump.
        let mut f2 = MirFunction::new("k", Vec::new());
        let [entry, e1, e2, join] = [(); 4].map(|_| f2.new_block(None));
        for e in [e1, e2] {
            f2.blocks[e].kind = BlockKind::EdgeSplit;
            f2.blocks[e].insts.push(jump(join));
        }
        f2.blocks[entry].insts.push(branch(p, e1, e2));
        f2.blocks[join]
            .insts
            .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
        f2.order = vec![entry, e1, e2, join];
        let stats = remove_empty_edge_blocks(&mut f2);
        assert_eq!(stats.merged_branches, 1);
        assert_eq!(f2.order, vec![entry, join]);
        assert!(matches!(
            f2.blocks[entry].insts[0].kind,
            MInstKind::Jump { .. }
        ));
    }
}
