//! The operands and modifiers of SIMT instructions, shared by the compiler's machine IR
//! and the emulator: operation types, register-or-immediate operands, the operation
//! enums of `bin`, `un`, `tern`, `cvt` (generated from the table in `op_tables.rs`) and
//! `setp`, special registers, memory operands and guards.
//!
//! Each operation computes exactly what the IR instruction it comes from computes
//! (`docs/ir.md`): division by zero, shift clamping, NaN rules and saturating conversions
//! are part of the operation, so the emulator implements them directly and the PTX emitter
//! expands them where PTX differs.

use crate::regs::{Reg, RegClass};
use core::fmt;
use warplift_ir::{Dim, FloatCC, IntCC, Opcode, Type, TypeClass};

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

/// The `machine_types` of a table row: its type list, if it has one.
macro_rules! machine_types {
    () => {
        None
    };
    ($( $ty:ident ),+) => {
        Some(&[ $( MType::$ty ),+ ])
    };
}

macro_rules! declare_operations {
    ($( $(#[$doc:meta])* $enum:ident $what:literal {
        $( $variant:ident = $code:literal, $name:literal, $ir:ident
           $( : [ $( $ty:ident ),+ ] )?; )+
    } )+) => { $(
        $(#[$doc])*
        /// Each has the semantics of the IR opcode it names ([`Self::ir_opcode`]).
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)] // named after the IR opcodes they implement
        pub enum $enum {
            $( $variant, )+
        }

        impl $enum {
            /// Every operation, in table order.
            pub const ALL: &'static [$enum] = &[ $( $enum::$variant, )+ ];

            /// The IR opcode whose semantics the operation has.
            pub fn ir_opcode(self) -> Opcode {
                match self { $( $enum::$variant => Opcode::$ir, )+ }
            }

            /// The operation's name in MIR text and disassembly.
            pub fn name(self) -> &'static str {
                match self { $( $enum::$variant => $name, )+ }
            }

            /// The types the machine defines the operation at, when they are fewer than
            /// its IR opcode's; `None`: all of them.
            pub fn machine_types(self) -> Option<&'static [MType]> {
                match self {
                    $( $enum::$variant => machine_types!($( $( $ty ),+ )?), )+
                }
            }
        }

        impl crate::codes::ByteCode for $enum {
            const WHAT: &'static str = $what;
            fn code(self) -> u8 {
                match self { $( $enum::$variant => $code, )+ }
            }
            fn from_code(code: u8) -> Option<Self> {
                match code {
                    $( $code => Some($enum::$variant), )+
                    _ => None,
                }
            }
        }
    )+ };
}

crate::for_each_operation!(declare_operations);

/// Is an operation with the semantics of IR opcode `op` defined at type `ty`? By the
/// opcode's type class (float operations on floats, bitwise ones on integers and
/// predicates, the rest on integers), within the operation's `machine_types` if it has
/// them.
fn accepts(op: Opcode, machine_types: Option<&[MType]>, ty: MType) -> bool {
    let class = match op.type_class() {
        TypeClass::Float => ty.is_float(),
        TypeClass::IntOrBool => ty.is_int() || ty == MType::Pred,
        TypeClass::Int | TypeClass::Special => ty.is_int(),
    };
    class && machine_types.is_none_or(|types| types.contains(&ty))
}

impl BinOp {
    /// Is the operation defined at type `ty`? As its IR opcode: float operations on
    /// floats, bitwise ones on integers and predicates, the rest on integers.
    pub fn accepts(self, ty: MType) -> bool {
        accepts(self.ir_opcode(), self.machine_types(), ty)
    }
}

impl UnOp {
    /// Is the operation defined at type `ty`? Float operations on floats, `not` on
    /// integers and predicates, the rest on integers.
    pub fn accepts(self, ty: MType) -> bool {
        accepts(self.ir_opcode(), self.machine_types(), ty)
    }
}

impl TernOp {
    /// Is the operation defined at type `ty`? At the types of its table row (the funnel
    /// shifts at `i32`, like PTX's `shf`; the lowering expands the other widths).
    pub fn accepts(self, ty: MType) -> bool {
        accepts(self.ir_opcode(), self.machine_types(), ty)
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

impl CvtOp {
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
