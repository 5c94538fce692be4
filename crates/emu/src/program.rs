//! The emulator's input: a flat, pre-decoded program with its kernel metadata.
//!
//! A [`Program`] is one kernel as the emulator runs it: every instruction in one array,
//! blocks as ranges of it, registers as plain indices per class, branch targets as block
//! indices, and each divergent branch's reconvergence block computed in advance. It is
//! deliberately independent of where the code comes from:
//!
//! ```text
//!   allocated MirFunction ──Program::from_mir──────────────┐
//!                                                          ├──▶ Program ──validate──▶ run
//!   SIMT bytecode in an ELF object ──Program::from_decoded──┘
//! ```
//!
//! Both front doors produce the same format, and [`Program::validate`] checks everything
//! the executor relies on (register indices in range, operand types each operation
//! accepts, a terminator ending every block and nowhere else, targets inside the program),
//! so that no program, however it was made, can make the emulator panic.
//!
//! The operations are the machine IR's ([`BinOp`], [`CvtOp`], ...), with the meaning the
//! machine IR gives them: the IR's semantics (`docs/ir.md`) at the operation's type, where
//! an `i8`/`i16` operation reads only the low bits of its `b32` sources.

use core::fmt;
use warplift_codegen::isa::simt::{self, DecodedKernel, LineTable, LoadedKernel};
use warplift_codegen::mir::{
    self, BinOp, Cond, CvtOp, MInstKind, MType, MirFunction, Reg, RegClass, SpecialReg, UnOp,
};
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};
use warplift_ir::{AddrSpace, AtomicRmwOp, Param, SourceLoc};

/// A source operand: a register of the class the operation's type implies, or an
/// immediate (raw bits, read at the operation's type).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    /// A register index.
    Reg(u32),
    /// An immediate.
    Imm(u64),
}

/// A memory operand: the base register's value (or 0) plus a byte offset.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mem {
    /// The base register: `b64` for global addresses, `b32` for shared and local ones.
    pub base: Option<u32>,
    /// The offset added to the base.
    pub offset: i32,
}

/// A guard: the instruction acts only in the lanes where predicate register `pred` holds
/// (fails to hold, when `negated`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// The predicate register.
    pub pred: u32,
    /// Act where the predicate is false.
    pub negated: bool,
}

/// One operation. Register fields are indices in the class that the operation's type
/// (or, for predicates, the `pred` class) implies; see [`Op::visit_regs`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the fields mirror `MInstKind`'s
pub enum Op {
    /// `dst = a OP b`.
    Bin {
        op: BinOp,
        ty: MType,
        dst: u32,
        a: u32,
        b: Src,
    },
    /// `dst = OP src`.
    Un {
        op: UnOp,
        ty: MType,
        dst: u32,
        src: u32,
    },
    /// `dst = a * b + c`, wrapping.
    Mad {
        ty: MType,
        dst: u32,
        a: u32,
        b: Src,
        c: Src,
    },
    /// `dst = a * b + c`, one rounding.
    Fma {
        ty: MType,
        dst: u32,
        a: u32,
        b: u32,
        c: u32,
    },
    /// `dst (pred) = a COND b`.
    Setp {
        cond: Cond,
        ty: MType,
        dst: u32,
        a: u32,
        b: Src,
    },
    /// `dst = pred ? a : b`.
    Selp {
        ty: MType,
        dst: u32,
        a: Src,
        b: Src,
        pred: u32,
    },
    /// `dst (to) = convert(src (from))`.
    Cvt {
        op: CvtOp,
        to: MType,
        from: MType,
        dst: u32,
        src: u32,
    },
    /// `dst = src`.
    Mov { ty: MType, dst: u32, src: Src },
    /// `dst (b32) = special register`.
    ReadSpecial { dst: u32, sreg: SpecialReg },
    /// `dst = kernel parameter index`.
    LdParam { ty: MType, dst: u32, index: u32 },
    /// `dst = load ty from space [addr]`.
    Ld {
        space: AddrSpace,
        ty: MType,
        dst: u32,
        addr: Mem,
    },
    /// `store ty src to space [addr]`.
    St {
        space: AddrSpace,
        ty: MType,
        src: Src,
        addr: Mem,
    },
    /// `dst = old [addr]; [addr] = old OP src` (i32, i64).
    Atom {
        op: AtomicRmwOp,
        space: AddrSpace,
        ty: MType,
        dst: u32,
        addr: Mem,
        src: Src,
    },
    /// `dst = old [addr]; if old == expected { [addr] = replacement }` (i32, i64).
    Cas {
        space: AddrSpace,
        ty: MType,
        dst: u32,
        addr: Mem,
        expected: Src,
        replacement: Src,
    },
    /// Block-wide barrier.
    Bar,
    /// Jump to block `target`.
    Jump { target: u32 },
    /// To block `taken` where the predicate holds (fails, when `negated`), to `not_taken`
    /// elsewhere. Threads that split here run together again on entering block
    /// `reconverge`, or only at exit when it is `None`. A `uniform` branch is one the
    /// code generator proved never splits the warp (PTX `bra.uni`): the machine faults
    /// when its active threads disagree, so a wrong divergence analysis cannot go
    /// unnoticed.
    Branch {
        pred: u32,
        negated: bool,
        taken: u32,
        not_taken: u32,
        reconverge: Option<u32>,
        uniform: bool,
    },
    /// The active threads end.
    Ret,
}

/// Whether a register operand is read or written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read.
    Use,
    /// Written.
    Def,
}

/// The class of a global or window address register.
fn addr_class(space: AddrSpace) -> RegClass {
    match space {
        AddrSpace::Global => RegClass::B64,
        AddrSpace::Shared | AddrSpace::Local => RegClass::B32,
    }
}

impl Op {
    /// Calls `f` on every register operand with its class and role, uses first.
    pub fn visit_regs(&self, mut f: impl FnMut(RegClass, u32, Role)) {
        use Op::*;
        use Role::{Def, Use};
        let src = |f: &mut dyn FnMut(RegClass, u32, Role), c: RegClass, s: Src| {
            if let Src::Reg(r) = s {
                f(c, r, Use);
            }
        };
        let mem = |f: &mut dyn FnMut(RegClass, u32, Role), space: AddrSpace, m: Mem| {
            if let Some(b) = m.base {
                f(addr_class(space), b, Use);
            }
        };
        match *self {
            Bin { ty, dst, a, b, .. } => {
                f(ty.class(), a, Use);
                src(&mut f, ty.class(), b);
                f(ty.class(), dst, Def);
            }
            Un { ty, dst, src, .. } => {
                f(ty.class(), src, Use);
                f(ty.class(), dst, Def);
            }
            Mad { ty, dst, a, b, c } => {
                f(ty.class(), a, Use);
                src(&mut f, ty.class(), b);
                src(&mut f, ty.class(), c);
                f(ty.class(), dst, Def);
            }
            Fma { ty, dst, a, b, c } => {
                for r in [a, b, c] {
                    f(ty.class(), r, Use);
                }
                f(ty.class(), dst, Def);
            }
            Setp { ty, dst, a, b, .. } => {
                f(ty.class(), a, Use);
                src(&mut f, ty.class(), b);
                f(RegClass::Pred, dst, Def);
            }
            Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => {
                src(&mut f, ty.class(), a);
                src(&mut f, ty.class(), b);
                f(RegClass::Pred, pred, Use);
                f(ty.class(), dst, Def);
            }
            Cvt {
                to, from, dst, src, ..
            } => {
                f(from.class(), src, Use);
                f(to.class(), dst, Def);
            }
            Mov { ty, dst, src: s } => {
                src(&mut f, ty.class(), s);
                f(ty.class(), dst, Def);
            }
            ReadSpecial { dst, .. } => f(RegClass::B32, dst, Def),
            LdParam { ty, dst, .. } => f(ty.class(), dst, Def),
            Ld {
                space,
                ty,
                dst,
                addr,
            } => {
                mem(&mut f, space, addr);
                f(ty.class(), dst, Def);
            }
            St {
                space,
                ty,
                src: s,
                addr,
            } => {
                src(&mut f, ty.class(), s);
                mem(&mut f, space, addr);
            }
            Atom {
                space,
                ty,
                dst,
                addr,
                src: s,
                ..
            } => {
                mem(&mut f, space, addr);
                src(&mut f, ty.class(), s);
                f(ty.class(), dst, Def);
            }
            Cas {
                space,
                ty,
                dst,
                addr,
                expected,
                replacement,
            } => {
                mem(&mut f, space, addr);
                src(&mut f, ty.class(), expected);
                src(&mut f, ty.class(), replacement);
                f(ty.class(), dst, Def);
            }
            Branch { pred, .. } => f(RegClass::Pred, pred, Use),
            Bar | Jump { .. } | Ret => {}
        }
    }

    /// Is this a terminator (ends its block)?
    pub fn is_terminator(&self) -> bool {
        matches!(self, Op::Jump { .. } | Op::Branch { .. } | Op::Ret)
    }
}

/// One instruction: an operation, its guard, and where it came from in the source.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Inst {
    /// The operation.
    pub op: Op,
    /// The guard, if predicated.
    pub guard: Option<Guard>,
    /// The source location (line 0: unknown).
    pub srcloc: SourceLoc,
}

/// A basic block: a range of instructions, ending with its only terminator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The name statistics count its executions under: the IR block it implements
    /// (`block3`), or its own name when it implements none. Several blocks may share a
    /// name; their counts add up.
    pub name: String,
    /// Index of its first instruction.
    pub start: u32,
    /// Index one past its last instruction.
    pub end: u32,
}

/// A kernel ready to run: code and metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// The kernel's name.
    pub name: String,
    /// The kernel's parameters, read by `LdParam` (index into this list).
    pub params: Vec<Param>,
    /// Registers used per class, indexed by [`RegClass::index`].
    pub num_regs: [u32; 3],
    /// Bytes of shared memory per thread block.
    pub shared_size: u32,
    /// Bytes of local memory per thread (local variables and spill slots).
    pub local_size: u32,
    /// Every instruction.
    pub insts: Vec<Inst>,
    /// The blocks; block 0 is the entry.
    pub blocks: Vec<BlockInfo>,
    /// The address of each instruction in the code the program was decoded from: its byte
    /// pc in the SIMT bytecode. Empty for a program built from machine IR, whose
    /// instructions are known by their index. Only messages use it.
    pub pcs: Vec<u32>,
    /// The `.wir` file the source locations refer to, when known (an object names it).
    pub source_name: Option<String>,
}

/// Why a program cannot be built or run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid program for kernel %{kernel}{}: {message}", self.at())]
pub struct ProgramError {
    /// The kernel.
    pub kernel: String,
    /// The block, when the problem is in one.
    pub block: Option<String>,
    /// The instruction index, when the problem is at one.
    pub pc: Option<u32>,
    /// What is wrong.
    pub message: String,
}

impl ProgramError {
    fn at(&self) -> String {
        match (&self.block, self.pc) {
            (Some(b), Some(pc)) => format!(" in {b} at pc {pc}"),
            (Some(b), None) => format!(" in {b}"),
            (None, Some(pc)) => format!(" at pc {pc}"),
            (None, None) => String::new(),
        }
    }
}

/// The most registers of one class a program may use.
pub const MAX_REGS_PER_CLASS: u32 = 1 << 16;

impl Program {
    /// Builds the program of an allocated machine function (physical registers only, no
    /// block parameters), computing each branch's reconvergence point: the immediate
    /// post-dominator of its block in the function's CFG.
    pub fn from_mir(func: &MirFunction) -> Result<Program, ProgramError> {
        let err = |block: Option<mir::MBlock>, message: String| ProgramError {
            kernel: func.name.clone(),
            block: block.map(|b| b.to_string()),
            pc: None,
            message,
        };
        let cfg = ControlFlowGraph::compute(func);
        let pdt = PostDominatorTree::compute(&cfg);
        let mut index: cranelift_entity::SecondaryMap<mir::MBlock, Option<u32>> =
            cranelift_entity::SecondaryMap::new();
        for (i, &b) in func.order.iter().enumerate() {
            if !func.blocks.is_valid(b) {
                return Err(err(None, format!("{b} is in the order but not a block")));
            }
            if index[b].is_some() {
                return Err(err(Some(b), "placed twice in the block order".into()));
            }
            index[b] = Some(i as u32);
        }
        let target = |from: mir::MBlock, t: &mir::BlockTarget| -> Result<u32, ProgramError> {
            if !t.args.is_empty() {
                return Err(err(Some(from), "branch arguments before allocation".into()));
            }
            if !func.blocks.is_valid(t.block) {
                return Err(err(Some(from), format!("branch to unknown {}", t.block)));
            }
            index[t.block].ok_or_else(|| err(Some(from), format!("{} is not placed", t.block)))
        };
        let mut prog = Program {
            name: func.name.clone(),
            params: func.params.clone(),
            num_regs: [0; 3],
            shared_size: func.shared_size,
            local_size: func.local_frame_size(),
            insts: Vec::with_capacity(func.num_insts()),
            blocks: Vec::with_capacity(func.order.len()),
            pcs: Vec::new(),
            source_name: None,
        };
        let mut bad_reg = None;
        for (position, &b) in func.order.iter().enumerate() {
            let data = &func.blocks[b];
            if !data.params.is_empty() {
                return Err(err(Some(b), "block parameters before allocation".into()));
            }
            let start = prog.insts.len() as u32;
            for inst in &data.insts {
                let mut inst = inst.clone();
                inst.visit_regs(|r, _| {
                    if r.is_virtual() {
                        bad_reg.get_or_insert(*r);
                    }
                });
                if let Some(r) = bad_reg {
                    return Err(err(
                        Some(b),
                        format!("virtual register {r} after allocation"),
                    ));
                }
                let src = |o: mir::Operand| match o {
                    mir::Operand::Reg(r) => Src::Reg(r.index()),
                    mir::Operand::Imm(i) => Src::Imm(i),
                };
                let mem = |a: mir::Address| Mem {
                    base: a.base.map(|r| r.index()),
                    offset: a.offset,
                };
                let spill_ty = |class: RegClass| match class {
                    RegClass::B32 => MType::I32,
                    RegClass::B64 => MType::I64,
                    RegClass::Pred => MType::Pred,
                };
                let slot_addr = |slot: mir::SpillSlot| -> Result<Mem, ProgramError> {
                    let off = func.spill_slot_offset(slot);
                    Ok(Mem {
                        base: None,
                        offset: i32::try_from(off)
                            .map_err(|_| err(Some(b), format!("spill slot {} too far", slot.0)))?,
                    })
                };
                use MInstKind as K;
                let op = match inst.kind {
                    K::Bin { op, ty, dst, a, b } => Op::Bin {
                        op,
                        ty,
                        dst: dst.index(),
                        a: a.index(),
                        b: src(b),
                    },
                    K::Un { op, ty, dst, src } => Op::Un {
                        op,
                        ty,
                        dst: dst.index(),
                        src: src.index(),
                    },
                    K::Mad { ty, dst, a, b, c } => Op::Mad {
                        ty,
                        dst: dst.index(),
                        a: a.index(),
                        b: src(b),
                        c: src(c),
                    },
                    K::Fma { ty, dst, a, b, c } => Op::Fma {
                        ty,
                        dst: dst.index(),
                        a: a.index(),
                        b: b.index(),
                        c: c.index(),
                    },
                    K::Setp {
                        cond,
                        ty,
                        dst,
                        a,
                        b,
                    } => Op::Setp {
                        cond,
                        ty,
                        dst: dst.index(),
                        a: a.index(),
                        b: src(b),
                    },
                    K::Selp {
                        ty,
                        dst,
                        a,
                        b,
                        pred,
                    } => Op::Selp {
                        ty,
                        dst: dst.index(),
                        a: src(a),
                        b: src(b),
                        pred: pred.index(),
                    },
                    K::Cvt {
                        op,
                        to,
                        from,
                        dst,
                        src,
                    } => Op::Cvt {
                        op,
                        to,
                        from,
                        dst: dst.index(),
                        src: src.index(),
                    },
                    K::Mov { ty, dst, src: s } => Op::Mov {
                        ty,
                        dst: dst.index(),
                        src: src(s),
                    },
                    K::ReadSpecial { dst, sreg } => Op::ReadSpecial {
                        dst: dst.index(),
                        sreg,
                    },
                    K::LdParam { ty, dst, index } => Op::LdParam {
                        ty,
                        dst: dst.index(),
                        index,
                    },
                    K::Ld {
                        space,
                        ty,
                        dst,
                        addr,
                    } => Op::Ld {
                        space,
                        ty,
                        dst: dst.index(),
                        addr: mem(addr),
                    },
                    K::St {
                        space,
                        ty,
                        src: s,
                        addr,
                    } => Op::St {
                        space,
                        ty,
                        src: src(s),
                        addr: mem(addr),
                    },
                    K::Atom {
                        op,
                        space,
                        ty,
                        dst,
                        addr,
                        src: s,
                    } => Op::Atom {
                        op,
                        space,
                        ty,
                        dst: dst.index(),
                        addr: mem(addr),
                        src: src(s),
                    },
                    K::Cas {
                        space,
                        ty,
                        dst,
                        addr,
                        expected,
                        replacement,
                    } => Op::Cas {
                        space,
                        ty,
                        dst: dst.index(),
                        addr: mem(addr),
                        expected: src(expected),
                        replacement: src(replacement),
                    },
                    K::Bar => Op::Bar,
                    K::Spill { src: r, slot } => Op::St {
                        space: AddrSpace::Local,
                        ty: spill_ty(r.class()),
                        src: Src::Reg(r.index()),
                        addr: slot_addr(slot)?,
                    },
                    K::Reload { dst, slot } => Op::Ld {
                        space: AddrSpace::Local,
                        ty: spill_ty(dst.class()),
                        dst: dst.index(),
                        addr: slot_addr(slot)?,
                    },
                    K::Jump { ref dest } => Op::Jump {
                        target: target(b, dest)?,
                    },
                    K::Branch {
                        pred,
                        negated,
                        ref taken,
                        ref not_taken,
                        divergent,
                    } => {
                        let reconverge = match pdt.reconvergence_point(b) {
                            Some(r) => Some(index[r].ok_or_else(|| {
                                err(Some(b), format!("reconvergence point {r} is not placed"))
                            })?),
                            None => None,
                        };
                        Op::Branch {
                            pred: pred.index(),
                            negated,
                            taken: target(b, taken)?,
                            not_taken: target(b, not_taken)?,
                            reconverge,
                            uniform: !divergent,
                        }
                    }
                    K::Ret => Op::Ret,
                };
                // Registers must agree with the classes the operation implies (a spill of
                // a `b64` register reads a `b64` register, and so on); checked below by
                // comparing the MIR operand classes with `Op::visit_regs`.
                let mut mir_classes = Vec::with_capacity(6);
                inst.kind.visit_regs(|r, _| mir_classes.push(r.class()));
                let mut op_classes = Vec::with_capacity(6);
                op.visit_regs(|c, _, _| op_classes.push(c));
                if mir_classes != op_classes {
                    return Err(err(
                        Some(b),
                        format!(
                            "register classes {mir_classes:?} do not fit the operation \
                             ({op_classes:?} expected)"
                        ),
                    ));
                }
                let guard = inst.guard.map(|g| Guard {
                    pred: g.pred.index(),
                    negated: g.negated,
                });
                if let Some(g) = inst.guard {
                    if g.pred.class() != RegClass::Pred {
                        return Err(err(Some(b), format!("guard {} is not a predicate", g.pred)));
                    }
                }
                prog.insts.push(Inst {
                    op,
                    guard,
                    srcloc: inst.srcloc,
                });
            }
            let name = block_name(data.origin, position);
            prog.blocks.push(BlockInfo {
                name,
                start,
                end: prog.insts.len() as u32,
            });
        }
        prog.num_regs = used_registers(&prog.insts);
        prog.validate()?;
        Ok(prog)
    }

    /// Builds the program of a decoded SIMT bytecode kernel, with every instruction's
    /// source location from the kernel's line table.
    ///
    /// The result runs exactly as [`Program::from_mir`] of the machine function the
    /// bytecode was encoded from: same instructions in the same order, blocks named the
    /// same way, and each divergent branch's reconvergence point taken from the bytecode
    /// (which the decoder checked is the immediate post-dominator). A uniform branch
    /// (`br.uni`) carries no reconvergence point; it gets its immediate post-dominator, as
    /// [`Program::from_mir`] gives every branch, so that lanes that split there against
    /// the compiler's promise still meet again.
    pub fn from_decoded(
        kernel: &DecodedKernel,
        lines: &LineTable,
    ) -> Result<Program, ProgramError> {
        let mir = kernel.to_mir(|pc| lines.lookup(pc));
        let mut prog = Program::from_mir(&mir)?;
        prog.pcs = kernel.insts.iter().map(|i| i.pc).collect();
        // The decoder validated each reconvergence point; the bytecode's word is final.
        for (inst, decoded) in prog.insts.iter_mut().zip(&kernel.insts) {
            if let (Op::Branch { reconverge, .. }, simt::Op::BrDiv { reconv, .. }) =
                (&mut inst.op, &decoded.op)
            {
                *reconverge = match reconv {
                    Some(pc) => Some(kernel.block_at(pc.0).ok_or_else(|| ProgramError {
                        kernel: kernel.info.name.clone(),
                        block: None,
                        pc: Some(decoded.pc),
                        message: format!("reconvergence point {pc} is not a block start"),
                    })? as u32),
                    None => None,
                };
            }
        }
        prog.validate()?;
        Ok(prog)
    }

    /// [`Program::from_decoded`] of a kernel loaded from an object, with the object's
    /// source file name for messages.
    pub fn from_loaded(kernel: &LoadedKernel, source_name: &str) -> Result<Program, ProgramError> {
        let mut prog = Program::from_decoded(&kernel.kernel, &kernel.lines)?;
        prog.source_name = Some(source_name.to_string());
        Ok(prog)
    }

    /// The address of instruction `index` for messages: `0x0040` (its byte pc) for a
    /// program decoded from bytecode, `#12` (its index) for one built from machine IR.
    pub fn pc_label(&self, index: u32) -> String {
        match self.pcs.get(index as usize) {
            Some(&pc) => format!("{pc:#06x}"),
            None => format!("#{index}"),
        }
    }

    /// The text of instruction `index` in the SIMT bytecode's assembly syntax
    /// (`@!$p0 ld.global.f32 $r3, [$rd2+4]`), whichever way the program was built; branch
    /// targets are shown as the addresses of [`Program::pc_label`]. Empty when `index` is
    /// out of range.
    pub fn inst_text(&self, index: u32) -> String {
        let Some(inst) = self.insts.get(index as usize) else {
            return String::new();
        };
        let block_pc = |b: u32| {
            let start = self.blocks.get(b as usize).map_or(u32::MAX, |b| b.start);
            simt::Pc(self.pcs.get(start as usize).copied().unwrap_or(start))
        };
        let guard = inst.guard.map(|g| mir::Guard {
            pred: Reg::phys(g.pred, RegClass::Pred),
            negated: g.negated,
        });
        let op = to_simt(&inst.op, &block_pc);
        format!("{}{}", simt::ops::display_guard(guard), op.display())
    }
}

/// The name statistics give a block: the IR block it implements, else `code` and its
/// position in the code (the same for a machine function and its bytecode).
fn block_name(origin: Option<warplift_ir::Block>, position: usize) -> String {
    match origin {
        Some(origin) => origin.to_string(),
        None => format!("code{position}"),
    }
}

/// The bytecode operation of the same meaning as `op`, for display: spills and reloads
/// show as the local loads and stores they became.
fn to_simt(op: &Op, block_pc: &dyn Fn(u32) -> simt::Pc) -> simt::Op {
    let r = |class: RegClass, i: u32| Reg::phys(i, class);
    let operand = |class: RegClass, s: Src| match s {
        Src::Reg(i) => mir::Operand::Reg(Reg::phys(i, class)),
        Src::Imm(v) => mir::Operand::Imm(v),
    };
    let addr = |space: AddrSpace, m: Mem| mir::Address {
        base: m.base.map(|b| Reg::phys(b, addr_class(space))),
        offset: m.offset,
    };
    use simt::Op as S;
    match *op {
        Op::Bin { op, ty, dst, a, b } => S::Bin {
            op,
            ty,
            dst: r(ty.class(), dst),
            a: r(ty.class(), a),
            b: operand(ty.class(), b),
        },
        Op::Un { op, ty, dst, src } => S::Un {
            op,
            ty,
            dst: r(ty.class(), dst),
            src: r(ty.class(), src),
        },
        Op::Mad { ty, dst, a, b, c } => S::Mad {
            ty,
            dst: r(ty.class(), dst),
            a: r(ty.class(), a),
            b: operand(ty.class(), b),
            c: operand(ty.class(), c),
        },
        Op::Fma { ty, dst, a, b, c } => S::Fma {
            ty,
            dst: r(ty.class(), dst),
            a: r(ty.class(), a),
            b: r(ty.class(), b),
            c: r(ty.class(), c),
        },
        Op::Setp {
            cond,
            ty,
            dst,
            a,
            b,
        } => S::Setp {
            cond,
            ty,
            dst: r(RegClass::Pred, dst),
            a: r(ty.class(), a),
            b: operand(ty.class(), b),
        },
        Op::Selp {
            ty,
            dst,
            a,
            b,
            pred,
        } => S::Selp {
            ty,
            dst: r(ty.class(), dst),
            a: operand(ty.class(), a),
            b: operand(ty.class(), b),
            pred: r(RegClass::Pred, pred),
        },
        Op::Cvt {
            op,
            to,
            from,
            dst,
            src,
        } => S::Cvt {
            op,
            to,
            from,
            dst: r(to.class(), dst),
            src: r(from.class(), src),
        },
        Op::Mov { ty, dst, src } => S::Mov {
            ty,
            dst: r(ty.class(), dst),
            src: operand(ty.class(), src),
        },
        Op::ReadSpecial { dst, sreg } => S::ReadSpecial {
            dst: r(RegClass::B32, dst),
            sreg,
        },
        Op::LdParam { ty, dst, index } => S::LdParam {
            ty,
            dst: r(ty.class(), dst),
            index,
        },
        Op::Ld {
            space,
            ty,
            dst,
            addr: m,
        } => S::Ld {
            space,
            ty,
            dst: r(ty.class(), dst),
            addr: addr(space, m),
        },
        Op::St {
            space,
            ty,
            src,
            addr: m,
        } => S::St {
            space,
            ty,
            addr: addr(space, m),
            src: operand(ty.class(), src),
        },
        Op::Atom {
            op,
            space,
            ty,
            dst,
            addr: m,
            src,
        } => S::Atom {
            op,
            space,
            ty,
            dst: r(ty.class(), dst),
            addr: addr(space, m),
            src: operand(ty.class(), src),
        },
        Op::Cas {
            space,
            ty,
            dst,
            addr: m,
            expected,
            replacement,
        } => S::Cas {
            space,
            ty,
            dst: r(ty.class(), dst),
            addr: addr(space, m),
            expected: operand(ty.class(), expected),
            replacement: operand(ty.class(), replacement),
        },
        Op::Bar => S::Bar {},
        Op::Jump { target } => S::Jump {
            target: block_pc(target),
        },
        Op::Branch {
            pred,
            negated,
            taken,
            not_taken,
            reconverge,
            uniform,
        } => {
            let cond = mir::Guard {
                pred: r(RegClass::Pred, pred),
                negated,
            };
            if uniform {
                S::BrUni {
                    cond,
                    taken: block_pc(taken),
                    not_taken: block_pc(not_taken),
                }
            } else {
                S::BrDiv {
                    cond,
                    taken: block_pc(taken),
                    not_taken: block_pc(not_taken),
                    reconv: reconverge.map(block_pc),
                }
            }
        }
        Op::Ret => S::Ret {},
    }
}

/// Registers used per class: one more than the highest index used.
fn used_registers(insts: &[Inst]) -> [u32; 3] {
    let mut num_regs = [0u32; 3];
    for inst in insts {
        let mut note = |c: RegClass, r: u32| {
            let n = &mut num_regs[c.index()];
            *n = (*n).max(r.saturating_add(1));
        };
        inst.op.visit_regs(|c, r, _| note(c, r));
        if let Some(g) = inst.guard {
            note(RegClass::Pred, g.pred);
        }
    }
    num_regs
}

impl Program {
    /// Checks everything the executor relies on; see the [module documentation](self).
    pub fn validate(&self) -> Result<(), ProgramError> {
        let err = |block: Option<usize>, pc: Option<u32>, message: String| ProgramError {
            kernel: self.name.clone(),
            block: block.map(|b| self.block_label(b)),
            pc,
            message,
        };
        if self.blocks.is_empty() {
            return Err(err(None, None, "the program has no blocks".into()));
        }
        if !self.pcs.is_empty() && self.pcs.len() != self.insts.len() {
            return Err(err(
                None,
                None,
                format!(
                    "{} pcs for {} instructions",
                    self.pcs.len(),
                    self.insts.len()
                ),
            ));
        }
        for (c, &n) in self.num_regs.iter().enumerate() {
            if n > MAX_REGS_PER_CLASS {
                return Err(err(
                    None,
                    None,
                    format!(
                        "{n} {} registers (at most {MAX_REGS_PER_CLASS})",
                        RegClass::ALL[c]
                    ),
                ));
            }
        }
        let nblocks = self.blocks.len() as u32;
        let mut expected_start = 0u32;
        for (bi, block) in self.blocks.iter().enumerate() {
            let e = |pc: Option<u32>, m: String| err(Some(bi), pc, m);
            if block.start != expected_start || block.end <= block.start {
                return Err(e(None, "blocks must be non-empty and contiguous".into()));
            }
            if block.end as usize > self.insts.len() {
                return Err(e(None, "block ends past the instructions".into()));
            }
            expected_start = block.end;
            for pc in block.start..block.end {
                let inst = &self.insts[pc as usize];
                let e = |m: String| e(Some(pc), m);
                let last = pc + 1 == block.end;
                if inst.op.is_terminator() != last {
                    return Err(e(if last {
                        "the block does not end with a terminator".into()
                    } else {
                        "a terminator before the end of the block".into()
                    }));
                }
                let mut bad = None;
                inst.op.visit_regs(|c, r, _| {
                    if r >= self.num_regs[c.index()] {
                        bad.get_or_insert((c, r));
                    }
                });
                if let Some(g) = inst.guard {
                    if g.pred >= self.num_regs[RegClass::Pred.index()] {
                        bad.get_or_insert((RegClass::Pred, g.pred));
                    }
                    if matches!(inst.op, Op::Bar) || inst.op.is_terminator() {
                        return Err(e("barriers and terminators cannot be guarded".into()));
                    }
                }
                if let Some((c, r)) = bad {
                    return Err(e(format!("{c} register {r} out of range")));
                }
                self.check_types(&inst.op).map_err(e)?;
                match inst.op {
                    Op::Jump { target } if target >= nblocks => {
                        return Err(e(format!("jump to block {target} of {nblocks}")));
                    }
                    Op::Branch {
                        taken,
                        not_taken,
                        reconverge,
                        ..
                    } if taken.max(not_taken).max(reconverge.unwrap_or(0)) >= nblocks => {
                        return Err(e(format!("branch to a block outside 0..{nblocks}")));
                    }
                    _ => {}
                }
            }
        }
        if expected_start as usize != self.insts.len() {
            return Err(err(None, None, "instructions outside every block".into()));
        }
        Ok(())
    }

    /// Checks the operation accepts its types.
    fn check_types(&self, op: &Op) -> Result<(), String> {
        use MType::*;
        let int = |t: MType| matches!(t, I8 | I16 | I32 | I64);
        let ok = match *op {
            Op::Bin { op, ty, .. } => match op {
                BinOp::And | BinOp::Or | BinOp::Xor => int(ty) || ty == Pred,
                BinOp::FAdd
                | BinOp::FSub
                | BinOp::FMul
                | BinOp::FDiv
                | BinOp::FMin
                | BinOp::FMax => ty.is_float(),
                _ => int(ty),
            },
            Op::Un { op, ty, .. } => match op {
                UnOp::Not => int(ty) || ty == Pred,
                UnOp::FNeg | UnOp::FAbs | UnOp::FSqrt => ty.is_float(),
                _ => int(ty),
            },
            Op::Mad { ty, .. } => int(ty),
            Op::Fma { ty, .. } => ty.is_float(),
            Op::Setp { cond, ty, .. } => match cond {
                Cond::Int(_) => int(ty),
                Cond::Float(_) => ty.is_float(),
            },
            Op::Cvt { op, to, from, .. } => {
                let anyint = |t: MType| int(t) || t == Pred;
                match op {
                    CvtOp::Zext | CvtOp::Sext => anyint(from) && int(to),
                    CvtOp::Trunc => int(from) && anyint(to),
                    CvtOp::FToS | CvtOp::FToU => from.is_float() && int(to),
                    CvtOp::SToF | CvtOp::UToF => anyint(from) && to.is_float(),
                    CvtOp::FExt => from == F32 && to == F64,
                    CvtOp::FTrunc => from == F64 && to == F32,
                    CvtOp::Bitcast => from.bits() == to.bits(),
                }
            }
            Op::LdParam { ty, index, .. } => match self.params.get(index as usize) {
                Some(p) => MType::from_ir(p.ty).class() == ty.class(),
                None => return Err(format!("parameter {index} of {}", self.params.len())),
            },
            Op::Atom { ty, .. } | Op::Cas { ty, .. } => matches!(ty, I32 | I64),
            Op::Selp { .. }
            | Op::Mov { .. }
            | Op::ReadSpecial { .. }
            | Op::Ld { .. }
            | Op::St { .. }
            | Op::Bar
            | Op::Jump { .. }
            | Op::Branch { .. }
            | Op::Ret => true,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("operand types not accepted by {op:?}"))
        }
    }

    /// `block3 (mblock2)`-style label of block `b` for messages.
    fn block_label(&self, b: usize) -> String {
        format!("block #{b} ({})", self.blocks[b].name)
    }

    /// The block holding instruction `pc` (binary search; for messages, not the hot path).
    pub fn block_of(&self, pc: u32) -> Option<usize> {
        let i = self.blocks.partition_point(|b| b.start <= pc);
        (i > 0 && pc < self.blocks[i - 1].end).then(|| i - 1)
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "program %{}: {} params, regs b32/b64/pred {}/{}/{}, shared {} B, local {} B",
            self.name,
            self.params.len(),
            self.num_regs[0],
            self.num_regs[1],
            self.num_regs[2],
            self.shared_size,
            self.local_size
        )?;
        for (bi, b) in self.blocks.iter().enumerate() {
            writeln!(f, "#{bi} {}:", b.name)?;
            for pc in b.start..b.end {
                let inst = &self.insts[pc as usize];
                write!(f, "  {pc:5}: ")?;
                if let Some(g) = inst.guard {
                    write!(f, "@{}p{} ", if g.negated { "!" } else { "" }, g.pred)?;
                }
                writeln!(f, "{:?}", inst.op)?;
            }
        }
        Ok(())
    }
}
