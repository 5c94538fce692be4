//! Checks that a function is lowered MIR, and reshapes its CFG the way regalloc2 needs it.
//!
//! regalloc2 places the moves of an edge (block-parameter copies, live-range fix-ups) either
//! at the end of the edge's source, before its terminator, or at the start of its
//! destination. That requires:
//! - **no critical edge** — an edge from a block with several successors to a block with
//!   several predecessors has no place of its own;
//! - **no terminator operand on an edge into a merge** — moves before a terminator would run
//!   before the terminator reads its operands, so a block whose terminator reads a register
//!   (a conditional branch reads its predicate; a guarded jump its guard) may only branch to
//!   blocks with a single predecessor.
//!
//! Both are met by splitting every edge out of a block with several successors or with a
//! register-reading terminator into a block with several incoming edges: a new block (origin
//! `None`) holding a single `Jump` that carries the edge's arguments. Incoming edges are
//! counted with multiplicity, so `brif p, b1, b1` splits both edges. Each new block is
//! placed right after its predecessor, in branch order (`taken` first): the predecessor's
//! code then flows into the first of them, and blocks of one source stay together.
//!
//! Blocks unreachable from the entry are dropped from the order first, and emptied: they
//! never run, and regalloc2 reasons about dominance only over reachable blocks.

use crate::mir::{MBlock, MInst, MInstKind, MirFunction, Reg, RegRole};
use cranelift_entity::SecondaryMap;

/// Checks the shape lowered MIR must have; on failure, says what and where.
pub(super) fn check_input(f: &mut MirFunction) -> Result<(), String> {
    let Some(entry) = f.entry() else {
        return Err("the function has no blocks".into());
    };
    let mut placed: SecondaryMap<MBlock, bool> = SecondaryMap::new();
    for &block in &f.order {
        if !f.blocks.is_valid(block) {
            return Err(format!("{block} is placed but does not exist"));
        }
        if std::mem::replace(&mut placed[block], true) {
            return Err(format!("{block} is placed twice"));
        }
    }
    if !f.blocks[entry].params.is_empty() {
        return Err(format!("the entry block {entry} has parameters"));
    }
    let vreg_classes = std::mem::take(&mut f.vreg_classes);
    let result = check_blocks(f, &placed, &vreg_classes);
    f.vreg_classes = vreg_classes;
    result
}

fn check_blocks(
    f: &mut MirFunction,
    placed: &SecondaryMap<MBlock, bool>,
    vreg_classes: &[crate::mir::RegClass],
) -> Result<(), String> {
    let check_reg = |r: Reg, block: MBlock| -> Result<(), String> {
        if !r.is_virtual() {
            return Err(format!("physical register {r} in {block}"));
        }
        match vreg_classes.get(r.index() as usize) {
            Some(&c) if c == r.class() => Ok(()),
            Some(&c) => Err(format!("{r} in {block} is a {c} register")),
            None => Err(format!("{r} in {block} was never created")),
        }
    };
    // Single definitions: the cheap half of SSA, checked always (regalloc2 validates
    // dominance in debug builds only).
    let mut defined = vec![false; vreg_classes.len()];
    let mut define = |r: Reg, block: MBlock| -> Result<(), String> {
        check_reg(r, block)?;
        if std::mem::replace(&mut defined[r.index() as usize], true) {
            return Err(format!("{r} is defined twice (second time in {block})"));
        }
        Ok(())
    };
    for i in 0..f.order.len() {
        let block = f.order[i];
        for &p in &f.blocks[block].params {
            define(p, block)?;
        }
        let n = f.blocks[block].insts.len();
        if n == 0 || !f.blocks[block].insts[n - 1].kind.is_terminator() {
            return Err(format!("{block} does not end with a terminator"));
        }
        for (k, inst) in f.blocks[block].insts.iter_mut().enumerate() {
            if k + 1 < n && inst.kind.is_terminator() {
                return Err(format!("{block} has a terminator before its end"));
            }
            let guarded = inst.guard.is_some();
            let mut result = Ok(());
            inst.visit_regs(|r, role| {
                if result.is_ok() {
                    result = match role {
                        RegRole::Use => check_reg(*r, block),
                        RegRole::Def => define(*r, block),
                    };
                }
                if result.is_ok() && guarded && role == RegRole::Def {
                    result = Err(format!("guarded instruction in {block} defines {r}"));
                }
            });
            result?;
        }
        // Each destination in branch order, read in place (no copy of the arguments).
        let mut result = Ok(());
        f.blocks[block].insts[n - 1].kind.for_each_target(|t| {
            if result.is_ok() {
                result = check_target(f, placed, block, t.block, &t.args, &check_reg);
            }
        });
        result?;
    }
    Ok(())
}

/// Checks one destination of `block`'s terminator: placed, and passed arguments that match
/// its parameters in number and class.
fn check_target(
    f: &MirFunction,
    placed: &SecondaryMap<MBlock, bool>,
    block: MBlock,
    target: MBlock,
    args: &[Reg],
    check_reg: &dyn Fn(Reg, MBlock) -> Result<(), String>,
) -> Result<(), String> {
    if !placed.get(target).copied().unwrap_or(false) {
        return Err(format!("{block} branches to {target}, which is not placed"));
    }
    let params = &f.blocks[target].params;
    if params.len() != args.len() {
        return Err(format!(
            "{block} passes {} to {target}, which has {}",
            warplift_ir::write::count(args.len(), "argument"),
            warplift_ir::write::count(params.len(), "parameter")
        ));
    }
    for (&a, &p) in args.iter().zip(params) {
        check_reg(a, block)?;
        if a.class() != p.class() {
            return Err(format!(
                "{block} passes {a} to {target}'s {} parameter {p}",
                p.class()
            ));
        }
    }
    Ok(())
}

/// Drops unreachable blocks from the order and splits the edges regalloc2 cannot place
/// moves on. Returns the number of blocks inserted. The function must pass
/// [`check_input`].
pub(super) fn prepare(f: &mut MirFunction) -> u32 {
    let mut reachable: SecondaryMap<MBlock, bool> = SecondaryMap::new();
    for block in reverse_postorder(f) {
        reachable[block] = true;
    }
    f.order.retain(|&b| reachable[b]);
    // Blocks left out of the order are emptied, so no virtual register survives anywhere.
    for (block, data) in f.blocks.iter_mut() {
        if !reachable[block] {
            data.params.clear();
            data.insts.clear();
        }
    }

    let mut incoming: SecondaryMap<MBlock, u32> = SecondaryMap::new();
    for &block in &f.order {
        for succ in f.succs(block) {
            incoming[succ] += 1;
        }
    }

    let old_order = std::mem::take(&mut f.order);
    let mut order = Vec::with_capacity(old_order.len());
    let mut split = 0;
    for block in old_order {
        order.push(block);
        let Some(mut term) = f.blocks[block].insts.pop() else {
            continue;
        };
        let mut reads_regs = false;
        term.visit_regs(|_, _| reads_regs = true);
        let mut edges = 0;
        term.kind.for_each_target(|_| edges += 1);
        if reads_regs || edges > 1 {
            let srcloc = term.srcloc;
            term.kind.for_each_target_mut(|target| {
                if incoming[target.block] > 1 {
                    let edge = f.new_block(None);
                    f.blocks[edge].kind = crate::mir::BlockKind::EdgeSplit;
                    let dest = std::mem::replace(target, crate::mir::BlockTarget::new(edge));
                    f.blocks[edge]
                        .insts
                        .push(MInst::new(MInstKind::Jump { dest }, srcloc));
                    order.push(edge);
                    split += 1;
                }
            });
        }
        f.blocks[block].insts.push(term);
    }
    f.order = order;
    split
}

/// The blocks reachable from the entry, in reverse postorder (successors in branch order).
/// regalloc2 sees the blocks in this order: its checker's dataflow analysis needs a block's
/// forward predecessors to come before it (a block analysed before any predecessor starts
/// from an empty state and wrongly forgets every value), and the allocators' heuristics
/// expect it too.
pub(super) fn reverse_postorder(f: &MirFunction) -> Vec<MBlock> {
    let mut postorder = Vec::new();
    let Some(entry) = f.entry() else {
        return postorder;
    };
    let mut visited: SecondaryMap<MBlock, bool> = SecondaryMap::new();
    // An explicit stack of (block, its successors not yet visited): CFGs can be deep. The
    // successors are read from the terminator in place, without a list per block.
    let mut stack = vec![(entry, f.succs(entry))];
    visited[entry] = true;
    while let Some((block, succs)) = stack.last_mut() {
        if let Some(succ) = succs.next() {
            if !std::mem::replace(&mut visited[succ], true) {
                stack.push((succ, f.succs(succ)));
            }
        } else {
            postorder.push(*block);
            stack.pop();
        }
    }
    postorder.reverse();
    postorder
}
