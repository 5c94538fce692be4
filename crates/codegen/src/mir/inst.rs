//! Machine instructions.
//!
//! A machine instruction is one operation of a SIMT machine, in three-address form over
//! [`Reg`]isters, with what both targets need made explicit: an operation type
//! ([`MType`]), immediates folded into operands, memory operands with a base register and
//! an offset, comparisons that produce predicates, and an optional **guard** (`@p` /
//! `@!p`): a guarded instruction acts only in the lanes where its predicate holds (or fails
//! to hold); in the other lanes it does nothing, its destination included.
//!
//! Each operation computes exactly what the IR instruction it comes from computes
//! (`docs/ir.md`): division by zero, shift clamping, NaN rules and saturating conversions
//! are part of the operation, so the emulator implements them directly and the PTX emitter
//! expands them where PTX differs.
//!
//! Before register allocation the machine IR is in SSA form: each virtual register is
//! defined once, and guarded instructions define no register (a guarded definition would
//! be a partial one). Block parameters carry values across edges, as in the IR.

use super::regs::Reg;
use super::MBlock;
use core::fmt;
use warplift_ir::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC, Opcode, SourceLoc, Type};

/// The type an instruction operates on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MType {
    /// 8-bit integer (in a `b32` register, only the low 8 bits are meaningful).
    I8,
    /// 16-bit integer (in a `b32` register, only the low 16 bits are meaningful).
    I16,
    /// 32-bit integer.
    I32,
    /// 64-bit integer.
    I64,
    /// binary32 float.
    F32,
    /// binary64 float.
    F64,
    /// A predicate.
    Pred,
}

impl MType {
    /// The machine type of IR type `ty`.
    pub fn from_ir(ty: Type) -> MType {
        match ty {
            Type::I1 => MType::Pred,
            Type::I8 => MType::I8,
            Type::I16 => MType::I16,
            Type::I32 => MType::I32,
            Type::I64 => MType::I64,
            Type::F32 => MType::F32,
            Type::F64 => MType::F64,
        }
    }

    /// The register class holding values of this type.
    pub fn class(self) -> super::RegClass {
        use super::RegClass;
        match self {
            MType::I8 | MType::I16 | MType::I32 | MType::F32 => RegClass::B32,
            MType::I64 | MType::F64 => RegClass::B64,
            MType::Pred => RegClass::Pred,
        }
    }

    /// Width in bits (1 for predicates).
    pub fn bits(self) -> u32 {
        match self {
            MType::Pred => 1,
            MType::I8 => 8,
            MType::I16 => 16,
            MType::I32 | MType::F32 => 32,
            MType::I64 | MType::F64 => 64,
        }
    }

    /// Bytes the type occupies in memory (a predicate takes one byte).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    /// The IR type this machine type stands for.
    pub fn to_ir(self) -> Type {
        match self {
            MType::I8 => Type::I8,
            MType::I16 => Type::I16,
            MType::I32 => Type::I32,
            MType::I64 => Type::I64,
            MType::F32 => Type::F32,
            MType::F64 => Type::F64,
            MType::Pred => Type::I1,
        }
    }

    /// Is this a float type?
    pub fn is_float(self) -> bool {
        matches!(self, MType::F32 | MType::F64)
    }

    /// The name used in MIR text.
    pub fn name(self) -> &'static str {
        match self {
            MType::I8 => "i8",
            MType::I16 => "i16",
            MType::I32 => "i32",
            MType::I64 => "i64",
            MType::F32 => "f32",
            MType::F64 => "f64",
            MType::Pred => "pred",
        }
    }
}

impl fmt::Display for MType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A source operand: a register, or an immediate whose bits are read at the operation's
/// type (masked to its width).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A register.
    Reg(Reg),
    /// An immediate, as raw bits.
    Imm(u64),
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Operand {
        Operand::Reg(r)
    }
}

impl Operand {
    /// The register, if the operand is one.
    pub fn reg(self) -> Option<Reg> {
        match self {
            Operand::Reg(r) => Some(r),
            Operand::Imm(_) => None,
        }
    }
}

/// Two-operand operations, with the semantics of the IR opcode of the same meaning.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // named after the IR opcodes they implement
pub enum BinOp {
    Add,
    Sub,
    Mul,
    MulHiS,
    MulHiU,
    DivS,
    DivU,
    RemS,
    RemU,
    MinS,
    MinU,
    MaxS,
    MaxU,
    And,
    Or,
    Xor,
    Shl,
    ShrU,
    ShrS,
    FAdd,
    FSub,
    FMul,
    FDiv,
    FMin,
    FMax,
}

impl BinOp {
    /// The IR opcode whose semantics the operation has.
    pub fn ir_opcode(self) -> Opcode {
        use BinOp::*;
        match self {
            Add => Opcode::Iadd,
            Sub => Opcode::Isub,
            Mul => Opcode::Imul,
            MulHiS => Opcode::Smulhi,
            MulHiU => Opcode::Umulhi,
            DivS => Opcode::Sdiv,
            DivU => Opcode::Udiv,
            RemS => Opcode::Srem,
            RemU => Opcode::Urem,
            MinS => Opcode::Smin,
            MinU => Opcode::Umin,
            MaxS => Opcode::Smax,
            MaxU => Opcode::Umax,
            And => Opcode::Band,
            Or => Opcode::Bor,
            Xor => Opcode::Bxor,
            Shl => Opcode::Ishl,
            ShrU => Opcode::Ushr,
            ShrS => Opcode::Sshr,
            FAdd => Opcode::Fadd,
            FSub => Opcode::Fsub,
            FMul => Opcode::Fmul,
            FDiv => Opcode::Fdiv,
            FMin => Opcode::Fmin,
            FMax => Opcode::Fmax,
        }
    }

    /// The operation's name in MIR text.
    pub fn name(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            MulHiS => "mulhi.s",
            MulHiU => "mulhi.u",
            DivS => "div.s",
            DivU => "div.u",
            RemS => "rem.s",
            RemU => "rem.u",
            MinS => "min.s",
            MinU => "min.u",
            MaxS => "max.s",
            MaxU => "max.u",
            And => "and",
            Or => "or",
            Xor => "xor",
            Shl => "shl",
            ShrU => "shr.u",
            ShrS => "shr.s",
            FAdd => "fadd",
            FSub => "fsub",
            FMul => "fmul",
            FDiv => "fdiv",
            FMin => "fmin",
            FMax => "fmax",
        }
    }
}

/// One-operand operations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // named after the IR opcodes they implement
pub enum UnOp {
    Neg,
    Not,
    Popc,
    Clz,
    Ctz,
    FNeg,
    FAbs,
    FSqrt,
}

impl UnOp {
    /// The IR opcode whose semantics the operation has.
    pub fn ir_opcode(self) -> Opcode {
        match self {
            UnOp::Neg => Opcode::Ineg,
            UnOp::Not => Opcode::Bnot,
            UnOp::Popc => Opcode::Popcnt,
            UnOp::Clz => Opcode::Clz,
            UnOp::Ctz => Opcode::Ctz,
            UnOp::FNeg => Opcode::Fneg,
            UnOp::FAbs => Opcode::Fabs,
            UnOp::FSqrt => Opcode::Sqrt,
        }
    }

    /// The operation's name in MIR text.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Popc => "popc",
            UnOp::Clz => "clz",
            UnOp::Ctz => "ctz",
            UnOp::FNeg => "fneg",
            UnOp::FAbs => "fabs",
            UnOp::FSqrt => "fsqrt",
        }
    }
}

/// The condition of a comparison.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cond {
    /// An integer comparison.
    Int(IntCC),
    /// A float comparison.
    Float(FloatCC),
}

impl fmt::Display for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cond::Int(cc) => write!(f, "{cc}"),
            Cond::Float(cc) => write!(f, "{cc}"),
        }
    }
}

/// Conversions, with the semantics of the IR conversion of the same meaning.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // named after the IR opcodes they implement
pub enum CvtOp {
    Zext,
    Sext,
    Trunc,
    FToS,
    FToU,
    SToF,
    UToF,
    FExt,
    FTrunc,
    Bitcast,
}

impl CvtOp {
    /// The IR opcode whose semantics the conversion has.
    pub fn ir_opcode(self) -> Opcode {
        match self {
            CvtOp::Zext => Opcode::Uextend,
            CvtOp::Sext => Opcode::Sextend,
            CvtOp::Trunc => Opcode::Ireduce,
            CvtOp::FToS => Opcode::FcvtToSint,
            CvtOp::FToU => Opcode::FcvtToUint,
            CvtOp::SToF => Opcode::FcvtFromSint,
            CvtOp::UToF => Opcode::FcvtFromUint,
            CvtOp::FExt => Opcode::Fpromote,
            CvtOp::FTrunc => Opcode::Fdemote,
            CvtOp::Bitcast => Opcode::Bitcast,
        }
    }

    /// The conversion's name in MIR text.
    pub fn name(self) -> &'static str {
        match self {
            CvtOp::Zext => "zext",
            CvtOp::Sext => "sext",
            CvtOp::Trunc => "trunc",
            CvtOp::FToS => "ftos",
            CvtOp::FToU => "ftou",
            CvtOp::SToF => "stof",
            CvtOp::UToF => "utof",
            CvtOp::FExt => "fext",
            CvtOp::FTrunc => "ftrunc",
            CvtOp::Bitcast => "bitcast",
        }
    }
}

/// A special (read-only, per-thread) register.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SpecialReg {
    /// Thread index in the block.
    Tid(Dim),
    /// Block index in the grid.
    Ctaid(Dim),
    /// Block dimensions.
    Ntid(Dim),
    /// Grid dimensions.
    Nctaid(Dim),
    /// Lane in the warp.
    LaneId,
}

impl fmt::Display for SpecialReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecialReg::Tid(d) => write!(f, "tid.{d}"),
            SpecialReg::Ctaid(d) => write!(f, "ctaid.{d}"),
            SpecialReg::Ntid(d) => write!(f, "ntid.{d}"),
            SpecialReg::Nctaid(d) => write!(f, "nctaid.{d}"),
            SpecialReg::LaneId => f.write_str("laneid"),
        }
    }
}

/// A memory operand: `[base + offset]`, or the absolute address `[offset]` without a
/// base. Shared and local addresses are offsets in the block's or thread's window.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    /// The base register (`b64` for global, `b32` for shared and local), if any.
    pub base: Option<Reg>,
    /// The byte offset added to the base.
    pub offset: i32,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.base, self.offset) {
            (Some(b), 0) => write!(f, "[{b}]"),
            (Some(b), o) if o > 0 => write!(f, "[{b}+{o}]"),
            (Some(b), o) => write!(f, "[{b}{o}]"),
            (None, o) => write!(f, "[{o}]"),
        }
    }
}

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

/// A guard: the instruction acts only in lanes where `pred` is true (or false, when
/// `negated`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// The predicate register.
    pub pred: Reg,
    /// Act where the predicate is false instead.
    pub negated: bool,
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
