//! The MIR as regalloc2 sees it: an implementation of `regalloc2::Function`.
//!
//! regalloc2 numbers blocks and instructions densely: block `i` is the `i`-th block in
//! reverse postorder (see `prepare::reverse_postorder`; the MIR's own block order is kept
//! for the allocated function), and instructions are numbered consecutively through the
//! blocks in that order.
//! An instruction's operands are its registers in [`MInst::visit_regs`] order (the guard,
//! then the sources, then the destination); applying the allocation walks the same order.
//! Sources are early uses and destinations late definitions, each in some register.
//!
//! [`MInst::visit_regs`]: crate::mir::MInst::visit_regs

use super::{ra, ra_class, RegallocError, Reservation};
use crate::mir::{MBlock, MirFunction, Reg, RegClass, RegRole};
use cranelift_entity::SecondaryMap;

/// One block, in regalloc2's terms.
struct BlockInfo {
    insts: ra::InstRange,
    params: Vec<ra::VReg>,
    succs: Vec<ra::Block>,
    preds: Vec<ra::Block>,
    /// Branch arguments per successor, in `succs` order.
    args: Vec<Vec<ra::VReg>>,
}

/// One instruction, in regalloc2's terms.
struct InstInfo {
    operands: Vec<ra::Operand>,
    is_ret: bool,
    is_branch: bool,
    /// Where it is in the MIR: its block and position.
    block: MBlock,
    pos: usize,
}

/// A prepared MIR function flattened for regalloc2.
pub(super) struct Adapter {
    blocks: Vec<BlockInfo>,
    insts: Vec<InstInfo>,
    num_vregs: usize,
    /// The MIR block of each regalloc2 block.
    pub(super) order: Vec<MBlock>,
}

/// regalloc2's name for MIR virtual register `r`.
fn vreg(r: Reg) -> ra::VReg {
    ra::VReg::new(r.index() as usize, ra_class(r.class()))
}

impl Adapter {
    /// Flattens `f`, which has passed `prepare::check_input` and `prepare::prepare`, with
    /// its blocks in the order `order` (which starts with the entry and holds every placed
    /// block). Fails if an instruction needs more registers of a class at once than
    /// `reservation` leaves allocatable.
    pub(super) fn build(
        f: &mut MirFunction,
        order: Vec<MBlock>,
        reservation: &Reservation,
    ) -> Result<Adapter, RegallocError> {
        let mut index: SecondaryMap<MBlock, u32> = SecondaryMap::new();
        for (i, &block) in order.iter().enumerate() {
            index[block] = i as u32;
        }
        let mut blocks = Vec::with_capacity(order.len());
        let mut insts = Vec::with_capacity(f.num_insts());
        for &block in &order {
            let first = insts.len();
            let data = &mut f.blocks[block];
            let n = data.insts.len();
            for (pos, inst) in data.insts.iter_mut().enumerate() {
                let mut operands = Vec::new();
                // Registers an instruction holds at once, per class: its distinct sources
                // (read early), or its destinations (written late).
                let mut uses: Vec<Reg> = Vec::new();
                let mut defs = [0u32; 3];
                inst.visit_regs(|r, role| match role {
                    RegRole::Use => {
                        operands.push(ra::Operand::reg_use(vreg(*r)));
                        if !uses.contains(r) {
                            uses.push(*r);
                        }
                    }
                    RegRole::Def => {
                        operands.push(ra::Operand::reg_def(vreg(*r)));
                        defs[r.class().index()] += 1;
                    }
                });
                for class in RegClass::ALL {
                    let used = uses.iter().filter(|r| r.class() == class).count() as u32;
                    let needed = used.max(defs[class.index()]);
                    let available = reservation.allocatable(class);
                    if needed > available {
                        return Err(RegallocError::TooFewRegisters {
                            kernel: f.name.clone(),
                            block,
                            class,
                            needed,
                            available,
                        });
                    }
                }
                let is_ret = matches!(inst.kind, crate::mir::MInstKind::Ret);
                insts.push(InstInfo {
                    operands,
                    is_ret,
                    is_branch: pos + 1 == n && !is_ret,
                    block,
                    pos,
                });
            }
            let mut succs = Vec::new();
            let mut args = Vec::new();
            if let Some(term) = data.insts.last() {
                term.kind.for_each_target(|t| {
                    succs.push(ra::Block::new(index[t.block] as usize));
                    args.push(t.args.iter().map(|&r| vreg(r)).collect());
                });
            }
            blocks.push(BlockInfo {
                insts: ra::InstRange::new(ra::Inst::new(first), ra::Inst::new(insts.len())),
                params: data.params.iter().map(|&r| vreg(r)).collect(),
                succs,
                preds: Vec::new(),
                args,
            });
        }
        for b in 0..blocks.len() {
            for s in 0..blocks[b].succs.len() {
                let succ = blocks[b].succs[s].index();
                blocks[succ].preds.push(ra::Block::new(b));
            }
        }
        Ok(Adapter {
            blocks,
            insts,
            num_vregs: f.vreg_classes.len(),
            order,
        })
    }

    /// The MIR block and position of regalloc2 instruction `inst`.
    pub(super) fn locate(&self, inst: ra::Inst) -> (MBlock, usize) {
        let info = &self.insts[inst.index()];
        (info.block, info.pos)
    }

    /// Says what a regalloc2 error means, in MIR terms.
    pub(super) fn describe_error(&self, f: &MirFunction, error: &ra::RegAllocError) -> String {
        use ra::RegAllocError as E;
        let block = |b: ra::Block| {
            self.order
                .get(b.index())
                .map_or_else(|| format!("block #{}", b.index()), |b| b.to_string())
        };
        let inst = |i: ra::Inst| {
            if i.is_valid() && i.index() < self.insts.len() {
                let (b, pos) = self.locate(i);
                format!("instruction {pos} of {b}")
            } else {
                "a block parameter".to_string()
            }
        };
        let reg = |v: ra::VReg| {
            let index = v.vreg() as u32;
            match f.vreg_classes.get(v.vreg()) {
                Some(&class) => Reg::virt(index, class).to_string(),
                None => format!("virtual register #{index}"),
            }
        };
        match *error {
            E::CritEdge(from, to) => {
                format!(
                    "critical edge {} -> {} is not split",
                    block(from),
                    block(to)
                )
            }
            E::SSA(v, i) => format!(
                "{} is defined twice, or used where its definition does not dominate ({})",
                reg(v),
                inst(i)
            ),
            E::BB(b) => format!("{} is not a well-formed block", block(b)),
            E::Branch(i) => format!("the branch at {} has malformed arguments", inst(i)),
            E::EntryLivein => {
                "a register is used on some path before any definition of it".to_string()
            }
            E::DisallowedBranchArg(i) => format!(
                "the terminator at {} reads a register and branches to a merge block",
                inst(i)
            ),
            E::TooManyLiveRegs => {
                "more registers must be live at once than the register file holds".to_string()
            }
            E::TooManyOperands => "an instruction has too many operands".to_string(),
        }
    }
}

impl ra::Function for Adapter {
    fn num_insts(&self) -> usize {
        self.insts.len()
    }

    fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    fn entry_block(&self) -> ra::Block {
        ra::Block::new(0)
    }

    fn block_insns(&self, block: ra::Block) -> ra::InstRange {
        self.blocks[block.index()].insts
    }

    fn block_succs(&self, block: ra::Block) -> &[ra::Block] {
        &self.blocks[block.index()].succs
    }

    fn block_preds(&self, block: ra::Block) -> &[ra::Block] {
        &self.blocks[block.index()].preds
    }

    fn block_params(&self, block: ra::Block) -> &[ra::VReg] {
        &self.blocks[block.index()].params
    }

    fn is_ret(&self, inst: ra::Inst) -> bool {
        self.insts[inst.index()].is_ret
    }

    fn is_branch(&self, inst: ra::Inst) -> bool {
        self.insts[inst.index()].is_branch
    }

    fn branch_blockparams(&self, block: ra::Block, _inst: ra::Inst, succ: usize) -> &[ra::VReg] {
        &self.blocks[block.index()].args[succ]
    }

    fn inst_operands(&self, inst: ra::Inst) -> &[ra::Operand] {
        &self.insts[inst.index()].operands
    }

    fn inst_clobbers(&self, _inst: ra::Inst) -> ra::PRegSet {
        ra::PRegSet::empty()
    }

    fn num_vregs(&self) -> usize {
        self.num_vregs
    }

    fn spillslot_size(&self, _class: ra::RegClass) -> usize {
        // Every spill slot holds a register of any class (`MirFunction::SPILL_SLOT_BYTES`).
        1
    }
}
