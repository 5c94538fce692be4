//! Machine instructions.
//!
//! A machine instruction is one operation of a SIMT machine, in three-address form over
//! [`Reg`]isters, with what both targets need made explicit: an operation type
//! ([`MType`]), immediates folded into operands, memory operands with a base register and
//! an offset, comparisons that produce predicates, and an optional **guard** (`@p` /
//! `@!p`): a guarded instruction acts only in the lanes where its predicate holds (or fails
//! to hold); in the other lanes it does nothing, its destination included.
//!
//! The operands and operation enums are the SIMT bytecode's own (`warplift_simt`): the
//! machine IR, the bytecode and the emulator share one definition of what each operation
//! computes.
//!
//! Before register allocation the machine IR is in SSA form: each virtual register is
//! defined once, and guarded instructions define no register (a guarded definition would
//! be a partial one). Block parameters carry values across edges, as in the IR.

use super::MBlock;
use warplift_ir::{AddrSpace, AtomicRmwOp, SourceLoc};
pub use warplift_simt::{
    Address, BinOp, Cond, CvtOp, Guard, MType, Operand, Reg, RegClass, SpecialReg, TernOp, UnOp,
};

/// A branch destination with the registers passed to its block parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockTarget {
    /// The destination block.
    pub block: MBlock,
    /// One register per parameter of `block` (empty after register allocation).
    pub args: Vec<Reg>,
}

impl BlockTarget {
    /// A target without arguments.
    pub fn new(block: MBlock) -> Self {
        BlockTarget {
            block,
            args: Vec::new(),
        }
    }
}

/// A spill slot in the thread's local memory, numbered from 0 after the kernel's own local
/// variables; its byte offset is decided by the target's frame layout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpillSlot(pub u32);

/// What a machine instruction does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // fields are named for what they are: dst, sources, type
pub enum MInstKind {
    /// `dst = a OP b`.
    Bin {
        op: BinOp,
        ty: MType,
        dst: Reg,
        a: Reg,
        b: Operand,
    },
    /// `dst = OP src`.
    Un {
        op: UnOp,
        ty: MType,
        dst: Reg,
        src: Reg,
    },
    /// Integer multiply-add, `dst = a * b + c` (low half, wrapping): exact, so the
    /// lowering may fuse `imul` and `iadd` into it.
    Mad {
        ty: MType,
        dst: Reg,
        a: Reg,
        b: Operand,
        c: Operand,
    },
    /// `dst = OP(a, b, c)`: the funnel shifts (`a` the high half, `b` the low half, `c`
    /// the amount).
    Tern {
        op: TernOp,
        ty: MType,
        dst: Reg,
        a: Reg,
        b: Reg,
        c: Operand,
    },
    /// Fused float multiply-add with one rounding (the IR's `fma`).
    Fma {
        ty: MType,
        dst: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `dst = a COND b` into a predicate register.
    Setp {
        cond: Cond,
        ty: MType,
        dst: Reg,
        a: Reg,
        b: Operand,
    },
    /// `dst = pred ? a : b`.
    Selp {
        ty: MType,
        dst: Reg,
        a: Operand,
        b: Operand,
        pred: Reg,
    },
    /// `dst = convert(src)` from type `from` to type `to`.
    Cvt {
        op: CvtOp,
        to: MType,
        from: MType,
        dst: Reg,
        src: Reg,
    },
    /// `dst = src`, a register copy or an immediate.
    Mov { ty: MType, dst: Reg, src: Operand },
    /// `dst = special register`.
    ReadSpecial { dst: Reg, sreg: SpecialReg },
    /// `dst = kernel parameter index` (entry block only).
    LdParam { ty: MType, dst: Reg, index: u32 },
    /// `dst = load ty from space [addr]`.
    Ld {
        space: AddrSpace,
        ty: MType,
        dst: Reg,
        addr: Address,
    },
    /// `store ty src to space [addr]`.
    St {
        space: AddrSpace,
        ty: MType,
        src: Operand,
        addr: Address,
    },
    /// Atomic read-modify-write: `dst = old [addr]; [addr] = old OP src`.
    Atom {
        op: AtomicRmwOp,
        space: AddrSpace,
        ty: MType,
        dst: Reg,
        addr: Address,
        src: Operand,
    },
    /// Atomic compare-and-swap: `dst = old [addr]; if old == expected { [addr] =
    /// replacement }`.
    Cas {
        space: AddrSpace,
        ty: MType,
        dst: Reg,
        addr: Address,
        expected: Operand,
        replacement: Operand,
    },
    /// Block-wide barrier.
    Bar,
    /// Stores register `src` into spill slot `slot` (inserted by register allocation).
    Spill { src: Reg, slot: SpillSlot },
    /// Loads register `dst` from spill slot `slot` (inserted by register allocation).
    Reload { dst: Reg, slot: SpillSlot },
    /// Unconditional jump.
    Jump { dest: BlockTarget },
    /// Two-way branch: to `taken` in lanes where `pred` holds (fails, if `negated`), to
    /// `not_taken` elsewhere. A divergent branch may split the warp; a uniform one is known
    /// to go one way for every active lane.
    Branch {
        pred: Reg,
        negated: bool,
        taken: BlockTarget,
        not_taken: BlockTarget,
        divergent: bool,
    },
    /// Ends the thread.
    Ret,
}

/// Whether a register operand is read or written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RegRole {
    /// Read by the instruction.
    Use,
    /// Written by the instruction.
    Def,
}

impl MInstKind {
    /// Is this a terminator (ends its block)?
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            MInstKind::Jump { .. } | MInstKind::Branch { .. } | MInstKind::Ret
        )
    }

    /// Calls `f` on every branch destination, in order (`taken` before `not_taken`).
    pub fn for_each_target(&self, mut f: impl FnMut(&BlockTarget)) {
        match self {
            MInstKind::Jump { dest } => f(dest),
            MInstKind::Branch {
                taken, not_taken, ..
            } => {
                f(taken);
                f(not_taken);
            }
            _ => {}
        }
    }

    /// Calls `f` on every branch destination, mutably.
    pub fn for_each_target_mut(&mut self, mut f: impl FnMut(&mut BlockTarget)) {
        match self {
            MInstKind::Jump { dest } => f(dest),
            MInstKind::Branch {
                taken, not_taken, ..
            } => {
                f(taken);
                f(not_taken);
            }
            _ => {}
        }
    }

    /// Calls `f` on every register operand with its role: uses first, then the definition.
    /// Branch arguments are not included (they are block-parameter copies, handled by the
    /// register allocator's edge moves); guards are part of [`MInst`].
    pub fn visit_regs(&mut self, mut f: impl FnMut(&mut Reg, RegRole)) {
        use MInstKind::*;
        use RegRole::{Def, Use};
        let op = |o: &mut Operand, f: &mut dyn FnMut(&mut Reg, RegRole)| {
            if let Operand::Reg(r) = o {
                f(r, Use);
            }
        };
        let addr = |a: &mut Address, f: &mut dyn FnMut(&mut Reg, RegRole)| {
            if let Some(r) = &mut a.base {
                f(r, Use);
            }
        };
        match self {
            Bin { dst, a, b, .. } => {
                f(a, Use);
                op(b, &mut f);
                f(dst, Def);
            }
            Un { dst, src, .. } => {
                f(src, Use);
                f(dst, Def);
            }
            Mad { dst, a, b, c, .. } => {
                f(a, Use);
                op(b, &mut f);
                op(c, &mut f);
                f(dst, Def);
            }
            Fma { dst, a, b, c, .. } => {
                f(a, Use);
                f(b, Use);
                f(c, Use);
                f(dst, Def);
            }
            Tern { dst, a, b, c, .. } => {
                f(a, Use);
                f(b, Use);
                op(c, &mut f);
                f(dst, Def);
            }
            Setp { dst, a, b, .. } => {
                f(a, Use);
                op(b, &mut f);
                f(dst, Def);
            }
            Selp {
                dst, a, b, pred, ..
            } => {
                op(a, &mut f);
                op(b, &mut f);
                f(pred, Use);
                f(dst, Def);
            }
            Cvt { dst, src, .. } => {
                f(src, Use);
                f(dst, Def);
            }
            Mov { dst, src, .. } => {
                op(src, &mut f);
                f(dst, Def);
            }
            ReadSpecial { dst, .. } | LdParam { dst, .. } | Reload { dst, .. } => f(dst, Def),
            Ld { dst, addr: a, .. } => {
                addr(a, &mut f);
                f(dst, Def);
            }
            St { src, addr: a, .. } => {
                op(src, &mut f);
                addr(a, &mut f);
            }
            Atom {
                dst, addr: a, src, ..
            } => {
                addr(a, &mut f);
                op(src, &mut f);
                f(dst, Def);
            }
            Cas {
                dst,
                addr: a,
                expected,
                replacement,
                ..
            } => {
                addr(a, &mut f);
                op(expected, &mut f);
                op(replacement, &mut f);
                f(dst, Def);
            }
            Spill { src, .. } => f(src, Use),
            Branch { pred, .. } => f(pred, Use),
            Bar | Jump { .. } | Ret => {}
        }
    }

    /// The register the instruction defines, if any.
    pub fn def(&self) -> Option<Reg> {
        use MInstKind::*;
        match *self {
            Bin { dst, .. }
            | Un { dst, .. }
            | Mad { dst, .. }
            | Fma { dst, .. }
            | Tern { dst, .. }
            | Setp { dst, .. }
            | Selp { dst, .. }
            | Cvt { dst, .. }
            | Mov { dst, .. }
            | ReadSpecial { dst, .. }
            | LdParam { dst, .. }
            | Ld { dst, .. }
            | Atom { dst, .. }
            | Cas { dst, .. }
            | Reload { dst, .. } => Some(dst),
            St { .. } | Bar | Spill { .. } | Jump { .. } | Branch { .. } | Ret => None,
        }
    }
}

/// A machine instruction: an operation, an optional guard and the source location of the
/// IR instruction it implements.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MInst {
    /// The operation.
    pub kind: MInstKind,
    /// The guard, if the instruction is predicated.
    pub guard: Option<Guard>,
    /// Where the IR instruction came from in the source.
    pub srcloc: SourceLoc,
}

impl MInst {
    /// An unguarded instruction.
    pub fn new(kind: MInstKind, srcloc: SourceLoc) -> Self {
        MInst {
            kind,
            guard: None,
            srcloc,
        }
    }

    /// Calls `f` on every register operand, the guard's predicate included (as a use).
    pub fn visit_regs(&mut self, mut f: impl FnMut(&mut Reg, RegRole)) {
        if let Some(g) = &mut self.guard {
            f(&mut g.pred, RegRole::Use);
        }
        self.kind.visit_regs(f);
    }
}
