//! Writes regalloc2's result back into the MIR.
//!
//! Each instruction's registers become the physical registers regalloc2 assigned to its
//! operands (in the order the adapter listed them); each edit becomes an instruction in
//! front of the instruction it precedes, with that instruction's source location:
//! register to register a `Mov` of the class's width, register to stack a `Spill`, stack to
//! register a `Reload`. Block parameters and branch arguments disappear: regalloc2 has
//! turned them into edits. Last, registers are renumbered densely (see the module
//! documentation of `regalloc`).

use super::adapter::Adapter;
use super::{mir_class, ra, Reservation, ReservedRegs};
use crate::mir::{MInst, MInstKind, MType, MirFunction, Operand, Reg, RegClass, SpillSlot};

/// Instructions inserted by [`apply`].
#[derive(Default)]
pub(super) struct Counts {
    pub spills: u32,
    pub reloads: u32,
    pub moves: u32,
}

/// The MIR register of physical register `preg`.
fn phys(preg: ra::PReg) -> Reg {
    Reg::phys(preg.hw_enc() as u32, mir_class(preg.class()))
}

/// The type of a whole-register copy of class `class`.
pub(super) fn move_type(class: RegClass) -> MType {
    match class {
        RegClass::B32 => MType::I32,
        RegClass::B64 => MType::I64,
        RegClass::Pred => MType::Pred,
    }
}

/// The instruction of a regalloc2 move edit.
fn edit_inst(
    from: ra::Allocation,
    to: ra::Allocation,
    counts: &mut Counts,
) -> Result<MInstKind, String> {
    match (from.as_reg(), from.as_stack(), to.as_reg(), to.as_stack()) {
        (Some(src), _, Some(dst), _) => {
            counts.moves += 1;
            let src = phys(src);
            Ok(MInstKind::Mov {
                ty: move_type(src.class()),
                dst: phys(dst),
                src: Operand::Reg(src),
            })
        }
        (Some(src), _, None, Some(slot)) => {
            counts.spills += 1;
            Ok(MInstKind::Spill {
                src: phys(src),
                slot: SpillSlot(slot.index() as u32),
            })
        }
        (None, Some(slot), Some(dst), _) => {
            counts.reloads += 1;
            Ok(MInstKind::Reload {
                dst: phys(dst),
                slot: SpillSlot(slot.index() as u32),
            })
        }
        _ => Err(format!(
            "register allocation produced the move {from} -> {to}"
        )),
    }
}

/// Rewrites the placed blocks of `f` with regalloc2's `out`, and sets `f.spill_slots`.
pub(super) fn apply(
    f: &mut MirFunction,
    adapter: &Adapter,
    out: &ra::Output,
) -> Result<Counts, String> {
    let mut counts = Counts::default();
    // One list of pending moves, and one spare instruction list that each block's old
    // list becomes after it is rewritten: a block's instructions are read from its old
    // list and written into the spare one, so the lists are allocated a few times in all
    // rather than twice per block.
    let mut pending = Vec::new();
    let mut spare: Vec<MInst> = Vec::new();
    for (i, &block) in adapter.order.iter().enumerate() {
        let data = &mut f.blocks[block];
        data.params.clear();
        let mut insts = std::mem::take(&mut spare);
        insts.clear();
        if insts.capacity() < data.insts.len() {
            // A fresh list rather than `reserve`: growing the spare one would copy its
            // whole old allocation (`realloc` does not know it is empty), about a third
            // of the write-back's copying on branchy code.
            insts = Vec::with_capacity(data.insts.len());
        }
        let mut old = data.insts.drain(..);
        pending.clear();
        for item in out.block_insts_and_edits(adapter, ra::Block::new(i)) {
            match item {
                ra::InstOrEdit::Edit(ra::Edit::Move { from, to }) => {
                    // regalloc2 reports a move between equal locations when only the
                    // value's name changes.
                    if from != to {
                        pending.push(edit_inst(*from, *to, &mut counts)?);
                    }
                }
                ra::InstOrEdit::Inst(index) => {
                    let Some(mut inst) = old.next() else {
                        return Err(format!("{block}: allocation has too many instructions"));
                    };
                    for kind in pending.drain(..) {
                        insts.push(MInst::new(kind, inst.srcloc));
                    }
                    let allocs = out.inst_allocs(index);
                    let mut next = allocs.iter();
                    let mut missing = false;
                    inst.visit_regs(|r, _| match next.next().and_then(|a| a.as_reg()) {
                        Some(preg) => *r = phys(preg),
                        None => missing = true,
                    });
                    if missing {
                        return Err(format!("{block}: an operand was not given a register"));
                    }
                    inst.kind.for_each_target_mut(|t| t.args.clear());
                    insts.push(inst);
                }
            }
        }
        if !pending.is_empty() || old.next().is_some() {
            return Err(format!("{block}: allocation does not match the block"));
        }
        drop(old);
        spare = std::mem::replace(&mut data.insts, insts);
    }
    f.spill_slots =
        u32::try_from(out.num_spillslots).map_err(|_| "too many spill slots".to_string())?;
    Ok(counts)
}

/// Renumbers the physical registers of each class densely, in order, onto `0..k`, and
/// names the reserved registers `k..k+n`. Returns `k` per class and the reserved registers.
pub(super) fn renumber(f: &mut MirFunction, reservation: &Reservation) -> ([u32; 3], ReservedRegs) {
    // At most 64 registers per class: one bit each.
    let mut used = [0u64; 3];
    for &block in &f.order {
        for inst in &mut f.blocks[block].insts {
            inst.visit_regs(|r, _| used[r.class().index()] |= 1 << (r.index() & 63));
        }
    }
    let mut new_number = [[0u32; 64]; 3];
    let mut regs_used = [0u32; 3];
    for class in RegClass::ALL {
        let c = class.index();
        for (hw, number) in new_number[c].iter_mut().enumerate() {
            if used[c] & (1 << hw) != 0 {
                *number = regs_used[c];
                regs_used[c] += 1;
            }
        }
    }
    for &block in &f.order {
        for inst in &mut f.blocks[block].insts {
            inst.visit_regs(|r, _| {
                let hw = new_number[r.class().index()][(r.index() & 63) as usize];
                *r = Reg::phys(hw, r.class());
            });
        }
    }
    let mut reserved = ReservedRegs::default();
    for class in RegClass::ALL {
        let first = regs_used[class.index()];
        reserved.regs[class.index()] = (first..first + reservation.reserved(class))
            .map(|hw| Reg::phys(hw, class))
            .collect();
    }
    (regs_used, reserved)
}
