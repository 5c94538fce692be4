//! The byte codes of the small closed enums that instructions and metadata carry.
//!
//! The codes are spelled out here, not derived from declaration order in the IR or MIR
//! crates, so reordering a Rust enum can never silently change the binary format. Each
//! table is declared once and gives both directions; a byte without a variant is a
//! decoding error. The codes of the operation enums (`BinOp`, `UnOp`, `TernOp`, `CvtOp`)
//! are in their table, `op_tables.rs`.

use crate::operands::{Cond, MType, SpecialReg};
use warplift_ir::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC, Type};

/// A type with a one-byte code in the binary format.
pub(crate) trait ByteCode: Sized + Copy {
    /// What the value is, for error messages.
    const WHAT: &'static str;
    /// The value's code.
    fn code(self) -> u8;
    /// The value of `code`, if any.
    fn from_code(code: u8) -> Option<Self>;
}

/// Declares the codes of an enum with unit variants.
macro_rules! byte_codes {
    ($ty:ty, $what:literal { $( [$($variant:tt)+] = $code:literal, )+ }) => {
        impl ByteCode for $ty {
            const WHAT: &'static str = $what;
            fn code(self) -> u8 {
                match self {
                    $( $($variant)+ => $code, )+
                }
            }
            fn from_code(code: u8) -> Option<Self> {
                match code {
                    $( $code => Some($($variant)+), )+
                    _ => None,
                }
            }
        }
    };
}

byte_codes!(MType, "type" {
    [MType::I8] = 0,
    [MType::I16] = 1,
    [MType::I32] = 2,
    [MType::I64] = 3,
    [MType::F32] = 4,
    [MType::F64] = 5,
    [MType::Pred] = 6,
});

byte_codes!(Type, "parameter type" {
    [Type::I1] = 0,
    [Type::I8] = 1,
    [Type::I16] = 2,
    [Type::I32] = 3,
    [Type::I64] = 4,
    [Type::F32] = 5,
    [Type::F64] = 6,
});

byte_codes!(AddrSpace, "address space" {
    [AddrSpace::Global] = 0,
    [AddrSpace::Shared] = 1,
    [AddrSpace::Local] = 2,
});

byte_codes!(AtomicRmwOp, "atomic operation" {
    [AtomicRmwOp::Add] = 0,
    [AtomicRmwOp::Smin] = 1,
    [AtomicRmwOp::Smax] = 2,
    [AtomicRmwOp::Umin] = 3,
    [AtomicRmwOp::Umax] = 4,
    [AtomicRmwOp::And] = 5,
    [AtomicRmwOp::Or] = 6,
    [AtomicRmwOp::Xor] = 7,
    [AtomicRmwOp::Xchg] = 8,
});

byte_codes!(Cond, "condition" {
    [Cond::Int(IntCC::Equal)] = 0x00,
    [Cond::Int(IntCC::NotEqual)] = 0x01,
    [Cond::Int(IntCC::SignedLessThan)] = 0x02,
    [Cond::Int(IntCC::SignedLessThanOrEqual)] = 0x03,
    [Cond::Int(IntCC::SignedGreaterThan)] = 0x04,
    [Cond::Int(IntCC::SignedGreaterThanOrEqual)] = 0x05,
    [Cond::Int(IntCC::UnsignedLessThan)] = 0x06,
    [Cond::Int(IntCC::UnsignedLessThanOrEqual)] = 0x07,
    [Cond::Int(IntCC::UnsignedGreaterThan)] = 0x08,
    [Cond::Int(IntCC::UnsignedGreaterThanOrEqual)] = 0x09,
    [Cond::Float(FloatCC::Ordered)] = 0x10,
    [Cond::Float(FloatCC::Unordered)] = 0x11,
    [Cond::Float(FloatCC::Equal)] = 0x12,
    [Cond::Float(FloatCC::OrderedNotEqual)] = 0x13,
    [Cond::Float(FloatCC::LessThan)] = 0x14,
    [Cond::Float(FloatCC::LessThanOrEqual)] = 0x15,
    [Cond::Float(FloatCC::GreaterThan)] = 0x16,
    [Cond::Float(FloatCC::GreaterThanOrEqual)] = 0x17,
    [Cond::Float(FloatCC::UnorderedOrEqual)] = 0x18,
    [Cond::Float(FloatCC::NotEqual)] = 0x19,
    [Cond::Float(FloatCC::UnorderedOrLessThan)] = 0x1a,
    [Cond::Float(FloatCC::UnorderedOrLessThanOrEqual)] = 0x1b,
    [Cond::Float(FloatCC::UnorderedOrGreaterThan)] = 0x1c,
    [Cond::Float(FloatCC::UnorderedOrGreaterThanOrEqual)] = 0x1d,
});

byte_codes!(SpecialReg, "special register" {
    [SpecialReg::Tid(Dim::X)] = 0x00,
    [SpecialReg::Tid(Dim::Y)] = 0x01,
    [SpecialReg::Tid(Dim::Z)] = 0x02,
    [SpecialReg::Ctaid(Dim::X)] = 0x04,
    [SpecialReg::Ctaid(Dim::Y)] = 0x05,
    [SpecialReg::Ctaid(Dim::Z)] = 0x06,
    [SpecialReg::Ntid(Dim::X)] = 0x08,
    [SpecialReg::Ntid(Dim::Y)] = 0x09,
    [SpecialReg::Ntid(Dim::Z)] = 0x0a,
    [SpecialReg::Nctaid(Dim::X)] = 0x0c,
    [SpecialReg::Nctaid(Dim::Y)] = 0x0d,
    [SpecialReg::Nctaid(Dim::Z)] = 0x0e,
    [SpecialReg::LaneId] = 0x10,
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operands::{BinOp, CvtOp, TernOp, UnOp};

    /// Every code maps back to its value, and the codes of a table are distinct.
    fn bijective<T: ByteCode + PartialEq + core::fmt::Debug>() -> usize {
        let mut n = 0;
        for code in 0..=255u8 {
            if let Some(v) = T::from_code(code) {
                assert_eq!(v.code(), code, "{}", T::WHAT);
                n += 1;
            }
        }
        n
    }

    #[test]
    fn code_tables_are_bijections_covering_every_variant() {
        assert_eq!(bijective::<MType>(), 7);
        assert_eq!(bijective::<Type>(), Type::ALL.len());
        assert_eq!(bijective::<BinOp>(), BinOp::ALL.len());
        assert_eq!(bijective::<UnOp>(), UnOp::ALL.len());
        assert_eq!(bijective::<TernOp>(), TernOp::ALL.len());
        assert_eq!(bijective::<CvtOp>(), CvtOp::ALL.len());
        assert_eq!(bijective::<AddrSpace>(), AddrSpace::ALL.len());
        assert_eq!(bijective::<AtomicRmwOp>(), AtomicRmwOp::ALL.len());
        assert_eq!(bijective::<Cond>(), IntCC::ALL.len() + FloatCC::ALL.len());
        assert_eq!(bijective::<SpecialReg>(), 13);
    }
}
