//! The operands and modifiers of SIMT instructions, shared by the compiler's machine IR
//! and the emulator: operation types, register-or-immediate operands, the operation
//! enums of `bin`, `un`, `cvt` and `setp`, special registers, memory operands and guards.
//!
//! Each operation computes exactly what the IR instruction it comes from computes
//! (`docs/ir.md`): division by zero, shift clamping, NaN rules and saturating conversions
//! are part of the operation, so the emulator implements them directly and the PTX emitter
//! expands them where PTX differs.

use crate::regs::{Reg, RegClass};
use core::fmt;
use warplift_ir::{Dim, FloatCC, IntCC, Opcode, Type};

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
    pub fn class(self) -> RegClass {
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

    /// Is this an integer type (not a predicate)?
    pub fn is_int(self) -> bool {
        matches!(self, MType::I8 | MType::I16 | MType::I32 | MType::I64)
    }

    /// Can atomics operate at this type (`i32`, `i64`)?
    pub fn is_atomic(self) -> bool {
        matches!(self, MType::I32 | MType::I64)
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

    /// Is the operation defined at type `ty`? Float operations on floats, bitwise ones
    /// on integers and predicates, the rest on integers.
    pub fn accepts(self, ty: MType) -> bool {
        use BinOp::*;
        match self {
            FAdd | FSub | FMul | FDiv | FMin | FMax => ty.is_float(),
            And | Or | Xor => ty.is_int() || ty == MType::Pred,
            _ => ty.is_int(),
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

    /// Is the operation defined at type `ty`? Float operations on floats, `not` on
    /// integers and predicates, the rest on integers.
    pub fn accepts(self, ty: MType) -> bool {
        match self {
            UnOp::FNeg | UnOp::FAbs | UnOp::FSqrt => ty.is_float(),
            UnOp::Not => ty.is_int() || ty == MType::Pred,
            _ => ty.is_int(),
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

impl Cond {
    /// Is the comparison defined at type `ty`? Integer conditions on integers, float
    /// conditions on floats.
    pub fn accepts(self, ty: MType) -> bool {
        match self {
            Cond::Int(_) => ty.is_int(),
            Cond::Float(_) => ty.is_float(),
        }
    }
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

    /// Is the conversion defined from type `from` to type `to`? Integer conversions
    /// take integers or predicates, float ↔ integer ones integers on the integer side,
    /// `fext` widens `f32` to `f64`, `ftrunc` the reverse, and a bitcast keeps the width.
    pub fn accepts(self, from: MType, to: MType) -> bool {
        let int_or_pred = |t: MType| t.is_int() || t == MType::Pred;
        match self {
            CvtOp::Zext | CvtOp::Sext | CvtOp::Trunc => int_or_pred(to) && int_or_pred(from),
            CvtOp::FToS | CvtOp::FToU => to.is_int() && from.is_float(),
            CvtOp::SToF | CvtOp::UToF => to.is_float() && from.is_int(),
            CvtOp::FExt => to == MType::F64 && from == MType::F32,
            CvtOp::FTrunc => to == MType::F32 && from == MType::F64,
            CvtOp::Bitcast => to.bits() == from.bits(),
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

/// A guard: the instruction acts only in lanes where `pred` is true (or false, when
/// `negated`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// The predicate register.
    pub pred: Reg,
    /// Act where the predicate is false instead.
    pub negated: bool,
}
