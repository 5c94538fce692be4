//! Decoding and validation of a kernel's bytecode.
//!
//! [`decode`] turns a kernel's code and its metadata ([`KernelInfo`]) into a
//! [`DecodedKernel`] an emulator can run without further checks. It never panics and
//! accepts only what the encoder could have produced from well-formed allocated MIR:
//!
//! - every instruction decodes: known opcode, known enum codes, well-formed numbers, no
//!   field past the end of the code;
//! - registers have the class their position requires (the operation type's class, `pred`
//!   for predicates, `b64` for global and `b32` for shared/local address bases) and a
//!   number below the kernel's declared count for that class;
//! - operations are defined on their types (no `fadd.i32`, atomics on `i32`/`i64` only,
//!   …) and immediates fit their type's width;
//! - parameter indices and types match the kernel's parameters, spill slots lie in the
//!   frame;
//! - the block table starts at pc 0, is strictly increasing, and every entry is an
//!   instruction boundary; every block ends with its only terminator, so the last
//!   instruction of the code is one;
//! - branch targets are block starts, and each divergent branch's reconvergence point is
//!   exactly the immediate post-dominator of its block (computed here again with
//!   `warplift_ir::cfg::PostDominatorTree`), or "exit" when there is none.

use crate::operands::{Address, Guard, MType, Operand};
use crate::ops::{Op, Pc, MAX_REGS_PER_CLASS};
use crate::regs::{Reg, RegClass};
use cranelift_entity::{entity_impl, EntityRef};
use warplift_ir::cfg::{Cfg, ControlFlowGraph, PostDominatorTree};
use warplift_ir::{AddrSpace, Block, Param};

/// Why a kernel's bytecode was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named for what they are
pub enum DecodeError {
    #[error("the kernel has no code")]
    Empty,
    #[error("instruction at pc {pc:#x} runs past the end of the code")]
    Truncated { pc: u32 },
    #[error("unknown opcode {byte:#04x} at pc {pc:#x}")]
    UnknownOpcode { pc: u32, byte: u8 },
    #[error("unknown {what} code {byte:#04x} at pc {pc:#x}")]
    BadCode {
        pc: u32,
        what: &'static str,
        byte: u8,
    },
    #[error("malformed register or operand byte {byte:#04x} at pc {pc:#x}")]
    BadRegister { pc: u32, byte: u8 },
    #[error("malformed number at pc {pc:#x}")]
    BadNumber { pc: u32 },
    #[error("register {reg} at pc {pc:#x} is out of range: the kernel declares {declared}")]
    RegisterOutOfRange { pc: u32, reg: Reg, declared: u32 },
    #[error("register {reg} at pc {pc:#x} should be of class {expected}")]
    WrongClass {
        pc: u32,
        reg: Reg,
        expected: RegClass,
    },
    #[error("immediate {imm:#x} at pc {pc:#x} does not fit type {ty}")]
    ImmediateTooWide { pc: u32, imm: u64, ty: MType },
    #[error("at pc {pc:#x}: {what}")]
    IllegalType { pc: u32, what: String },
    #[error("parameter index {index} at pc {pc:#x} is out of range or of another type")]
    BadParam { pc: u32, index: u32 },
    #[error("spill slot {slot} at pc {pc:#x} is outside the frame's {slots} slots")]
    BadSpillSlot { pc: u32, slot: u32, slots: u32 },
    #[error("declared register counts {0:?} exceed {MAX_REGS_PER_CLASS} per class")]
    TooManyRegisters([u32; 3]),
    #[error("the block table is empty or does not start at pc 0")]
    BlockTableStart,
    #[error("block {index} of the block table starts at {pc:#x}, not at an instruction after the previous block's")]
    BadBlockStart { index: usize, pc: u32 },
    #[error("block {index} does not end with a terminator")]
    MissingTerminator { index: usize },
    #[error("terminator at pc {pc:#x} is not the last instruction of its block")]
    TerminatorInsideBlock { pc: u32 },
    #[error("the barrier or terminator at pc {pc:#x} is guarded")]
    GuardedControl { pc: u32 },
    #[error("branch target {target:#x} at pc {pc:#x} is not the start of a block")]
    BadTarget { pc: u32, target: u32 },
    #[error("the divergent branch at pc {pc:#x} reconverges at {found}, but its immediate post-dominator is {expected}")]
    BadReconvergence {
        pc: u32,
        found: String,
        expected: String,
    },
}

/// One entry of a kernel's block table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockInfo {
    /// The pc of the block's first instruction.
    pub pc: u32,
    /// The IR block it implements, if any (so executions can be counted per IR block).
    pub origin: Option<Block>,
}

/// What a kernel's metadata says about it: everything but its code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelInfo {
    /// The kernel's name.
    pub name: String,
    /// The kernel's parameters, read by `ldparam`.
    pub params: Vec<Param>,
    /// Registers used per class, indexed by [`RegClass::index`]: registers are numbered
    /// from 0 below these.
    pub num_regs: [u32; 3],
    /// Bytes of shared memory per thread block.
    pub shared_size: u32,
    /// Bytes of the kernel's own local variables per thread (spill slots follow).
    pub local_size: u32,
    /// Number of 8-byte spill slots.
    pub spill_slots: u32,
    /// The block table, in code order.
    pub blocks: Vec<BlockInfo>,
}

impl KernelInfo {
    /// The byte offset of spill slot `slot` in the thread's local window (the layout of
    /// `MirFunction::spill_slot_offset`).
    pub fn spill_slot_offset(&self, slot: u32) -> u64 {
        u64::from(self.local_size).next_multiple_of(8) + 8 * u64::from(slot)
    }

    /// Bytes of local memory per thread: the kernel's local variables and spill slots.
    pub fn local_frame_size(&self) -> u64 {
        if self.spill_slots == 0 {
            u64::from(self.local_size)
        } else {
            self.spill_slot_offset(self.spill_slots)
        }
    }
}

/// A decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Inst {
    /// Its pc: the byte offset in the kernel's code.
    pub pc: u32,
    /// The guard, if the instruction is predicated.
    pub guard: Option<Guard>,
    /// The operation.
    pub op: Op,
}

/// A decoded, validated kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedKernel {
    /// The kernel's metadata.
    pub info: KernelInfo,
    /// The instructions, in pc order.
    pub insts: Vec<Inst>,
    /// The index in `insts` of each block's first instruction, parallel to
    /// `info.blocks`.
    pub block_starts: Vec<usize>,
    /// Bytes of code.
    pub code_len: u32,
}

impl DecodedKernel {
    /// The index in `insts` of the instruction at `pc`, if one starts there.
    pub fn index_of(&self, pc: u32) -> Option<usize> {
        self.insts.binary_search_by_key(&pc, |i| i.pc).ok()
    }

    /// The index in the block table of the block holding the instruction at index `inst`
    /// (the last block if `inst` is past the end).
    pub fn block_of(&self, inst: usize) -> usize {
        self.block_starts
            .partition_point(|&s| s <= inst)
            .saturating_sub(1)
    }

    /// The index in the block table of the block starting at `pc`, if one does.
    pub fn block_at(&self, pc: u32) -> Option<usize> {
        self.info.blocks.binary_search_by_key(&pc, |b| b.pc).ok()
    }

    /// The range of instruction indices of block `block`.
    ///
    /// # Panics
    ///
    /// If `block` is not an index of the block table.
    pub fn block_insts(&self, block: usize) -> core::ops::Range<usize> {
        let start = self.block_starts[block];
        let end = self
            .block_starts
            .get(block + 1)
            .copied()
            .unwrap_or(self.insts.len());
        start..end
    }
}

/// Decodes and validates the bytecode `code` of the kernel `info` describes.
pub fn decode(code: &[u8], info: &KernelInfo) -> Result<DecodedKernel, DecodeError> {
    if code.is_empty() {
        return Err(DecodeError::Empty);
    }
    if info.num_regs.iter().any(|&n| n > MAX_REGS_PER_CLASS) {
        return Err(DecodeError::TooManyRegisters(info.num_regs));
    }
    let code_len = u32::try_from(code.len()).map_err(|_| DecodeError::Truncated { pc: 0 })?;
    let mut insts = Vec::new();
    let mut pc = 0u32;
    while pc < code_len {
        let (guard, op, next) = Op::decode(code, pc)?;
        insts.push(Inst { pc, guard, op });
        pc = next;
    }

    // Block table: strictly increasing instruction boundaries from 0.
    if info.blocks.first().map(|b| b.pc) != Some(0) {
        return Err(DecodeError::BlockTableStart);
    }
    let mut block_starts = Vec::with_capacity(info.blocks.len());
    for (index, b) in info.blocks.iter().enumerate() {
        let found = insts.binary_search_by_key(&b.pc, |i| i.pc);
        match found {
            Ok(i) if block_starts.last().is_none_or(|&prev| i > prev) => block_starts.push(i),
            _ => return Err(DecodeError::BadBlockStart { index, pc: b.pc }),
        }
    }
    let kernel = DecodedKernel {
        info: info.clone(),
        insts,
        block_starts,
        code_len,
    };
    for block in 0..kernel.block_starts.len() {
        let range = kernel.block_insts(block);
        let last = range.end - 1;
        for i in range {
            let inst = &kernel.insts[i];
            if inst.op.is_terminator() != (i == last) {
                return Err(if i == last {
                    DecodeError::MissingTerminator { index: block }
                } else {
                    DecodeError::TerminatorInsideBlock { pc: inst.pc }
                });
            }
        }
    }
    let limits = Limits::of(&kernel.info);
    for inst in &kernel.insts {
        validate_inst(inst.pc, inst.guard, &inst.op, &limits, |t| {
            kernel.block_at(t.0).is_some()
        })?;
    }
    check_reconvergence(&kernel)?;
    Ok(kernel)
}

/// What the validator needs to know about the kernel around an instruction.
#[derive(Copy, Clone, Debug)]
pub struct Limits<'a> {
    /// Registers declared per class, indexed by [`RegClass::index`].
    pub num_regs: [u32; 3],
    /// The kernel's parameters, which `ldparam` reads.
    pub params: &'a [Param],
    /// Spill slots in the frame.
    pub spill_slots: u32,
}

impl<'a> Limits<'a> {
    /// The limits a kernel's metadata sets.
    pub fn of(info: &'a KernelInfo) -> Self {
        Limits {
            num_regs: info.num_regs,
            params: &info.params,
            spill_slots: info.spill_slots,
        }
    }
}

/// Checks one instruction's registers (class and range), the types its operation is
/// defined on, its immediates, parameter and spill-slot indices, and that every branch
/// target and reconvergence point is a block start (`is_block_start`). This is the one
/// place that says which operation takes which types: the decoder runs it on every
/// instruction it accepts, and the emulator on every program it runs.
pub fn validate_inst(
    pc: u32,
    guard: Option<Guard>,
    op: &Op,
    info: &Limits<'_>,
    is_block_start: impl Fn(Pc) -> bool,
) -> Result<(), DecodeError> {
    let reg = |r: Reg, class: RegClass| -> Result<(), DecodeError> {
        if r.class() != class {
            return Err(DecodeError::WrongClass {
                pc,
                reg: r,
                expected: class,
            });
        }
        let declared = info.num_regs[class.index()];
        if r.index() >= declared {
            return Err(DecodeError::RegisterOutOfRange {
                pc,
                reg: r,
                declared,
            });
        }
        Ok(())
    };
    let operand = |o: Operand, ty: MType| -> Result<(), DecodeError> {
        match o {
            Operand::Reg(r) => reg(r, ty.class()),
            Operand::Imm(imm) => {
                if ty.bits() < 64 && imm >> ty.bits() != 0 {
                    Err(DecodeError::ImmediateTooWide { pc, imm, ty })
                } else {
                    Ok(())
                }
            }
        }
    };
    let addr = |a: Address, space: AddrSpace| -> Result<(), DecodeError> {
        match a.base {
            Some(b) if space == AddrSpace::Global => reg(b, RegClass::B64),
            Some(b) => reg(b, RegClass::B32),
            None => Ok(()),
        }
    };
    let illegal = |what: String| Err(DecodeError::IllegalType { pc, what });
    let check_guard = |g: Guard| reg(g.pred, RegClass::Pred);
    let target = |t: Pc| -> Result<(), DecodeError> {
        if is_block_start(t) {
            Ok(())
        } else {
            Err(DecodeError::BadTarget { pc, target: t.0 })
        }
    };

    if let Some(g) = guard {
        if matches!(op, Op::Bar {}) || op.is_terminator() {
            return Err(DecodeError::GuardedControl { pc });
        }
        check_guard(g)?;
    }
    match *op {
        Op::Bin { op, ty, dst, a, b } => {
            let ok = op.accepts(ty);
            if !ok {
                return illegal(format!("{} is not defined on {ty}", op.name()));
            }
            reg(dst, ty.class())?;
            reg(a, ty.class())?;
            operand(b, ty)?;
        }
        Op::Un { op, ty, dst, src } => {
            let ok = op.accepts(ty);
            if !ok {
                return illegal(format!("{} is not defined on {ty}", op.name()));
            }
            reg(dst, ty.class())?;
            reg(src, ty.class())?;
        }
        Op::Mad { ty, dst, a, b, c } => {
            if !ty.is_int() {
                return illegal(format!("mad is not defined on {ty}"));
            }
            reg(dst, ty.class())?;
            reg(a, ty.class())?;
            operand(b, ty)?;
            operand(c, ty)?;
        }
        Op::Tern {
            op,
            ty,
            dst,
            a,
            b,
            c,
        } => {
            if !op.accepts(ty) {
                return illegal(format!("{} is not defined on {ty}", op.name()));
            }
            reg(dst, ty.class())?;
            reg(a, ty.class())?;
            reg(b, ty.class())?;
            operand(c, ty)?;
        }
        Op::Fma { ty, dst, a, b, c } => {
            if !ty.is_float() {
                return illegal(format!("fma is not defined on {ty}"));
            }
            for r in [dst, a, b, c] {
                reg(r, ty.class())?;
            }
        }
        Op::Setp {
            cond,
            ty,
            dst,
            a,
            b,
        } => {
            if !cond.accepts(ty) {
                return illegal(format!("comparison {cond} is not defined on {ty}"));
            }
            reg(dst, RegClass::Pred)?;
            reg(a, ty.class())?;
            operand(b, ty)?;
        }
        Op::Selp {
            ty,
            dst,
            a,
            b,
            pred,
        } => {
            reg(dst, ty.class())?;
            operand(a, ty)?;
            operand(b, ty)?;
            reg(pred, RegClass::Pred)?;
        }
        Op::Cvt {
            op,
            to,
            from,
            dst,
            src,
        } => {
            let ok = op.accepts(from, to);
            if !ok {
                return illegal(format!("cvt.{} from {from} to {to}", op.name()));
            }
            reg(dst, to.class())?;
            reg(src, from.class())?;
        }
        Op::Mov { ty, dst, src } => {
            reg(dst, ty.class())?;
            operand(src, ty)?;
        }
        Op::ReadSpecial { dst, .. } => reg(dst, RegClass::B32)?,
        Op::LdParam { ty, dst, index } => {
            match info.params.get(index as usize) {
                Some(p) if MType::from_ir(p.ty) == ty => {}
                _ => return Err(DecodeError::BadParam { pc, index }),
            }
            reg(dst, ty.class())?;
        }
        Op::Ld {
            space,
            ty,
            dst,
            addr: a,
        } => {
            reg(dst, ty.class())?;
            addr(a, space)?;
        }
        Op::St {
            space,
            ty,
            addr: a,
            src,
        } => {
            operand(src, ty)?;
            addr(a, space)?;
        }
        Op::Atom {
            space,
            ty,
            dst,
            addr: a,
            src,
            ..
        } => {
            if !ty.is_atomic() {
                return illegal(format!("atomics are not defined on {ty}"));
            }
            reg(dst, ty.class())?;
            addr(a, space)?;
            operand(src, ty)?;
        }
        Op::Cas {
            space,
            ty,
            dst,
            addr: a,
            expected,
            replacement,
        } => {
            if !ty.is_atomic() {
                return illegal(format!("atomics are not defined on {ty}"));
            }
            reg(dst, ty.class())?;
            addr(a, space)?;
            operand(expected, ty)?;
            operand(replacement, ty)?;
        }
        Op::Spill { slot, src: r } | Op::Reload { dst: r, slot } => {
            if slot >= info.spill_slots {
                return Err(DecodeError::BadSpillSlot {
                    pc,
                    slot,
                    slots: info.spill_slots,
                });
            }
            reg(r, r.class())?;
        }
        Op::BrUni { cond, .. } | Op::BrDiv { cond, .. } => check_guard(cond)?,
        Op::Bar {} | Op::Jump { .. } | Op::Ret {} => {}
    }
    let mut result = Ok(());
    op.for_each_target(|t| {
        if result.is_ok() {
            result = target(t);
        }
    });
    if let Op::BrDiv {
        reconv: Some(r), ..
    } = *op
    {
        result = result.and_then(|()| target(r));
    }
    result
}

/// A block of a decoded kernel, by its index in the block table.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockIndex(u32);
entity_impl!(BlockIndex, "block");

impl Cfg for DecodedKernel {
    type Node = BlockIndex;

    fn entry(&self) -> Option<BlockIndex> {
        (!self.block_starts.is_empty()).then(|| BlockIndex::new(0))
    }

    fn num_nodes(&self) -> usize {
        self.block_starts.len()
    }

    fn successors(&self, block: BlockIndex, out: &mut Vec<BlockIndex>) {
        let range = self.block_insts(block.index());
        if let Some(last) = self.insts.get(range.end.wrapping_sub(1)) {
            last.op.for_each_target(|t| {
                if let Some(b) = self.block_at(t.0) {
                    out.push(BlockIndex::new(b));
                }
            });
        }
    }

    fn nodes(&self) -> impl Iterator<Item = BlockIndex> + '_ {
        (0..self.block_starts.len()).map(BlockIndex::new)
    }
}

/// Checks that every divergent branch reconverges at its block's immediate
/// post-dominator.
fn check_reconvergence(k: &DecodedKernel) -> Result<(), DecodeError> {
    if !k.insts.iter().any(|i| matches!(i.op, Op::BrDiv { .. })) {
        return Ok(());
    }
    let cfg = ControlFlowGraph::compute(k);
    let pdt = PostDominatorTree::compute(&cfg);
    let show = |p: Option<Pc>| p.map_or("exit".to_string(), |p| p.to_string());
    for block in 0..k.block_starts.len() {
        let last = &k.insts[k.block_insts(block).end - 1];
        if let Op::BrDiv { reconv, .. } = last.op {
            let expected = pdt
                .reconvergence_point(BlockIndex::new(block))
                .map(|b| Pc(k.info.blocks[b.index()].pc));
            if reconv != expected {
                return Err(DecodeError::BadReconvergence {
                    pc: last.pc,
                    found: show(reconv),
                    expected: show(expected),
                });
            }
        }
    }
    Ok(())
}
