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

/// One block, in regalloc2's terms. Its lists are ranges of the adapter's flat arrays:
/// regalloc2 asks for slices, and one array per kind of list costs a few allocations per
/// function instead of several per block.
struct BlockInfo {
    insts: ra::InstRange,
    /// Its parameters: `Adapter::vregs[params.0..params.1]`.
    params: (u32, u32),
    /// Its successors: `Adapter::succs[succs.0..succs.1]`; the successor `s` passes
    /// `Adapter::vregs[Adapter::args[succs.0 + s]]` (a range) as arguments.
    succs: (u32, u32),
    /// Its predecessors: `Adapter::preds[preds.0..preds.1]`.
    preds: (u32, u32),
}

/// One instruction, in regalloc2's terms.
struct InstInfo {
    /// Its operands: `Adapter::operands[operands.0..operands.1]`.
    operands: (u32, u32),
    is_ret: bool,
    is_branch: bool,
    /// Where it is in the MIR: its block and position.
    block: MBlock,
    pos: u32,
}

/// A prepared MIR function flattened for regalloc2.
pub(super) struct Adapter {
    blocks: Vec<BlockInfo>,
    insts: Vec<InstInfo>,
    operands: Vec<ra::Operand>,
    /// Block parameters and branch arguments.
    vregs: Vec<ra::VReg>,
    succs: Vec<ra::Block>,
    /// Per successor edge (in `succs` order), the range of its arguments in `vregs`.
    args: Vec<(u32, u32)>,
    preds: Vec<ra::Block>,
    num_vregs: usize,
    numbering: Numbering,
    /// The MIR block of each regalloc2 block.
    pub(super) order: Vec<MBlock>,
}

/// How the adapter numbers the MIR's virtual registers for regalloc2: in the MIR's order,
/// except that registers reaching across more than [`WIDE_REACH`] blocks come last, in
/// increasing order of reach.
///
/// When regalloc2 (0.15) inserts moves it visits virtual registers in index order, and for
/// each one clears a map of the blocks whose end the previous register's live range covered.
/// Clearing costs the map's capacity, which only grows: once a register live through the
/// whole kernel has been visited (a kernel parameter or the thread id, defined in the entry
/// block and read at the end), every later register read by a terminator pays for the whole
/// kernel, which made large branchy kernels quadratic (two thirds of the compile time of a
/// 100k-instruction chain of branches). Visited last, the wide registers make only each
/// other pay. The reach is estimated from the block order (first to last block that defines
/// or reads the register). Only the wide registers move: regalloc2 walks its list of block
/// parameters alongside the registers, and a wholesale renumbering (all registers by reach)
/// made that walk slower than the clearing it saved. Kernels of up to [`WIDE_REACH`] blocks
/// keep their numbering, and so their exact allocation. The MIR keeps its own register
/// numbers: only regalloc2's view is renumbered.
/// Registers whose definitions and uses span more blocks than this are numbered last.
const WIDE_REACH: u32 = 256;

struct Numbering {
    /// regalloc2's index of each MIR virtual register.
    to_ra: Vec<u32>,
    /// The MIR index of each regalloc2 virtual register.
    to_mir: Vec<u32>,
}

impl Numbering {
    fn compute(f: &mut MirFunction, order: &[MBlock]) -> Numbering {
        let n = f.vreg_classes.len();
        const UNSEEN: u32 = u32::MAX;
        let mut first = vec![UNSEEN; n];
        let mut last = vec![0u32; n];
        let mut see = |r: &Reg, at: u32| {
            if let Some(slot) = first.get_mut(r.index() as usize) {
                *slot = (*slot).min(at);
                last[r.index() as usize] = last[r.index() as usize].max(at);
            }
        };
        for (at, &block) in order.iter().enumerate() {
            let at = at as u32;
            let data = &mut f.blocks[block];
            for r in &data.params {
                see(r, at);
            }
            for inst in &mut data.insts {
                inst.visit_regs(|r, _| see(r, at));
                inst.kind.for_each_target(|t| {
                    for r in &t.args {
                        see(r, at);
                    }
                });
            }
        }
        let reach = |v: usize| last[v].saturating_sub(first[v].min(last[v]));
        let (mut to_mir, mut wide): (Vec<u32>, Vec<u32>) =
            (0..n as u32).partition(|&v| reach(v as usize) <= WIDE_REACH);
        // Stable: wide registers of equal reach keep their order.
        wide.sort_by_key(|&v| reach(v as usize));
        to_mir.extend(wide);
        let mut to_ra = vec![0u32; n];
        for (new, &old) in to_mir.iter().enumerate() {
            to_ra[old as usize] = new as u32;
        }
        Numbering { to_ra, to_mir }
    }

    /// regalloc2's name for MIR virtual register `r`.
    fn vreg(&self, r: Reg) -> ra::VReg {
        ra::VReg::new(self.to_ra[r.index() as usize] as usize, ra_class(r.class()))
    }
}

/// `v[range.0..range.1]`.
fn slice<T>(v: &[T], range: (u32, u32)) -> &[T] {
    &v[range.0 as usize..range.1 as usize]
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
        let mut index: SecondaryMap<MBlock, u32> = SecondaryMap::with_capacity(f.blocks.len());
        for (i, &block) in order.iter().enumerate() {
            index[block] = i as u32;
        }
        let numbering = Numbering::compute(f, &order);
        let vreg = |r: Reg| numbering.vreg(r);
        let num_insts = f.num_insts();
        let mut blocks = Vec::with_capacity(order.len());
        let mut insts = Vec::with_capacity(num_insts);
        let mut operands = Vec::with_capacity(num_insts * 3);
        let mut vregs = Vec::new();
        let mut succs = Vec::with_capacity(order.len() * 2);
        let mut args = Vec::with_capacity(order.len() * 2);
        for &block in &order {
            let first = insts.len();
            let data = &mut f.blocks[block];
            let n = data.insts.len();
            for (pos, inst) in data.insts.iter_mut().enumerate() {
                let start = operands.len();
                // Registers an instruction holds at once, per class: its distinct sources
                // (read early), or its destinations (written late).
                let mut uses = [0u32; 3];
                let mut defs = [0u32; 3];
                inst.visit_regs(|r, role| {
                    let v = vreg(*r);
                    match role {
                        RegRole::Use => {
                            // An instruction has a handful of operands: a scan of those
                            // listed so far finds a repeated source.
                            let repeated = operands[start..].iter().any(|o: &ra::Operand| {
                                o.vreg() == v && o.kind() == ra::OperandKind::Use
                            });
                            if !repeated {
                                uses[r.class().index()] += 1;
                            }
                            operands.push(ra::Operand::reg_use(v));
                        }
                        RegRole::Def => {
                            operands.push(ra::Operand::reg_def(v));
                            defs[r.class().index()] += 1;
                        }
                    }
                });
                for class in RegClass::ALL {
                    let needed = uses[class.index()].max(defs[class.index()]);
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
                    operands: (start as u32, operands.len() as u32),
                    is_ret,
                    is_branch: pos + 1 == n && !is_ret,
                    block,
                    pos: pos as u32,
                });
            }
            let first_succ = succs.len() as u32;
            if let Some(term) = data.insts.last() {
                term.kind.for_each_target(|t| {
                    succs.push(ra::Block::new(index[t.block] as usize));
                    let a = vregs.len() as u32;
                    vregs.extend(t.args.iter().map(|&r| vreg(r)));
                    args.push((a, vregs.len() as u32));
                });
            }
            let first_param = vregs.len() as u32;
            vregs.extend(data.params.iter().map(|&r| vreg(r)));
            blocks.push(BlockInfo {
                insts: ra::InstRange::new(ra::Inst::new(first), ra::Inst::new(insts.len())),
                params: (first_param, vregs.len() as u32),
                succs: (first_succ, succs.len() as u32),
                preds: (0, 0),
            });
        }
        // Predecessors, grouped by block: count, then place each edge (a counting sort, in
        // source order within a block, as regalloc2 saw them before).
        let mut counts = vec![0u32; blocks.len() + 1];
        for &s in &succs {
            counts[s.index() + 1] += 1;
        }
        for b in 0..blocks.len() {
            counts[b + 1] += counts[b];
            blocks[b].preds = (counts[b], counts[b + 1]);
        }
        let mut preds = vec![ra::Block::new(0); succs.len()];
        let mut next: Vec<u32> = counts[..blocks.len()].to_vec();
        for (b, info) in blocks.iter().enumerate() {
            for &s in slice(&succs, info.succs) {
                preds[next[s.index()] as usize] = ra::Block::new(b);
                next[s.index()] += 1;
            }
        }
        Ok(Adapter {
            blocks,
            insts,
            operands,
            vregs,
            succs,
            args,
            preds,
            num_vregs: f.vreg_classes.len(),
            numbering,
            order,
        })
    }

    /// The MIR block and position of regalloc2 instruction `inst`.
    pub(super) fn locate(&self, inst: ra::Inst) -> (MBlock, usize) {
        let info = &self.insts[inst.index()];
        (info.block, info.pos as usize)
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
            let index = self
                .numbering
                .to_mir
                .get(v.vreg())
                .copied()
                .unwrap_or(v.vreg() as u32);
            match f.vreg_classes.get(index as usize) {
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
        slice(&self.succs, self.blocks[block.index()].succs)
    }

    fn block_preds(&self, block: ra::Block) -> &[ra::Block] {
        slice(&self.preds, self.blocks[block.index()].preds)
    }

    fn block_params(&self, block: ra::Block) -> &[ra::VReg] {
        slice(&self.vregs, self.blocks[block.index()].params)
    }

    fn is_ret(&self, inst: ra::Inst) -> bool {
        self.insts[inst.index()].is_ret
    }

    fn is_branch(&self, inst: ra::Inst) -> bool {
        self.insts[inst.index()].is_branch
    }

    fn branch_blockparams(&self, block: ra::Block, _inst: ra::Inst, succ: usize) -> &[ra::VReg] {
        let edge = self.blocks[block.index()].succs.0 as usize + succ;
        slice(&self.vregs, self.args[edge])
    }

    fn inst_operands(&self, inst: ra::Inst) -> &[ra::Operand] {
        slice(&self.operands, self.insts[inst.index()].operands)
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

#[cfg(test)]
mod tests {
    use super::super::{prepare, RegisterFile, ReservationRequest};
    use super::*;
    use crate::mir::MInstKind;
    use warplift_ir::parser::parse_function;

    /// A chain of `blocks` blocks, each adding the thread id to the running value.
    fn chain(blocks: usize) -> (MirFunction, Vec<MBlock>, Reg) {
        let mut text = String::from(
            "kernel %k(out: i64) {\nblock0(v0: i64):\n    v1 = thread_id x\n    jump block1(v1)\n",
        );
        for b in 1..blocks {
            let (p, q) = (2 * b, 2 * b + 1);
            text.push_str(&format!(
                "\nblock{b}(v{p}: i32):\n    v{q} = iadd v{p}, v1\n    jump block{}(v{q})\n",
                b + 1
            ));
        }
        let last = 2 * blocks;
        text.push_str(&format!(
            "\nblock{blocks}(v{last}: i32):\n    store global v{last}, v0\n    return\n}}\n"
        ));
        let func = parse_function(&text).unwrap();
        let mut mir = crate::lower::lower(&func).unwrap();
        prepare::check_input(&mut mir).unwrap();
        prepare::prepare(&mut mir);
        let order = prepare::reverse_postorder(&mir);
        let entry = mir.blocks[order[0]].insts.iter();
        let tid = entry
            .filter_map(|i| match i.kind {
                MInstKind::ReadSpecial { dst, .. } => Some(dst),
                _ => None,
            })
            .next()
            .unwrap();
        (mir, order, tid)
    }

    #[test]
    fn registers_read_across_the_kernel_are_numbered_last() {
        let reservation = RegisterFile::MAX
            .reserve(&ReservationRequest::none())
            .unwrap();
        // Long: the thread id and the output address reach across every block and go
        // last; every other register keeps its order.
        let (mut mir, order, tid) = chain(400);
        let n = mir.vreg_classes.len();
        let a = Adapter::build(&mut mir, order, &reservation).unwrap();
        let to_ra = &a.numbering.to_ra;
        assert!(to_ra[tid.index() as usize] as usize >= n - 2);
        let kept: Vec<u32> = (0..n as u32)
            .filter(|&v| to_ra[v as usize] < n as u32 - 2)
            .collect();
        assert!(kept
            .windows(2)
            .all(|w| to_ra[w[0] as usize] < to_ra[w[1] as usize]));
        for (ra_index, &mir_index) in a.numbering.to_mir.iter().enumerate() {
            assert_eq!(to_ra[mir_index as usize] as usize, ra_index);
        }
        // Short: numbered as in the MIR.
        let (mut mir, order, _) = chain(20);
        let a = Adapter::build(&mut mir, order, &reservation).unwrap();
        assert!(a
            .numbering
            .to_ra
            .iter()
            .enumerate()
            .all(|(i, &r)| r as usize == i));
    }
}
