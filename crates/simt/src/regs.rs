//! Machine registers: classes, and register operands that are virtual before allocation
//! and physical after it.
//!
//! A register class is a *container width*, not a value type: `b32` registers hold every
//! value of 32 bits or fewer (`i8`, `i16`, `i32`, `f32`), `b64` registers every 64-bit
//! value (`i64`, `f64`), and `pred` registers the `i1` predicates that guard instructions.
//! Classing by width rather than by int/float keeps every move, spill and reload
//! width-correct without knowing what the moved value means — the register allocator's
//! moves carry no type — and it matches PTX, whose registers are declared by size and whose
//! `.f32` instructions accept `.b32` registers. regalloc2 has three classes; these are
//! they.

use core::fmt;

/// A register class: which register file a register lives in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    /// 32-bit registers: `i8`, `i16`, `i32` and `f32` values.
    B32,
    /// 64-bit registers: `i64` and `f64` values, global addresses.
    B64,
    /// Predicate registers: `i1` values, branch conditions and guards.
    Pred,
}

impl RegClass {
    /// Every class, in index order.
    pub const ALL: [RegClass; 3] = [RegClass::B32, RegClass::B64, RegClass::Pred];

    /// The class holding values of IR type `ty`.
    pub fn of_type(ty: warplift_ir::Type) -> RegClass {
        use warplift_ir::Type;
        match ty {
            Type::I1 => RegClass::Pred,
            Type::I8 | Type::I16 | Type::I32 | Type::F32 => RegClass::B32,
            Type::I64 | Type::F64 => RegClass::B64,
        }
    }

    /// 0, 1 or 2: the class's index in per-class tables.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class's name in MIR text and reports.
    pub fn name(self) -> &'static str {
        match self {
            RegClass::B32 => "b32",
            RegClass::B64 => "b64",
            RegClass::Pred => "pred",
        }
    }

    /// The register-name prefix of the class: `r`, `rd` or `p`.
    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::B32 => "r",
            RegClass::B64 => "rd",
            RegClass::Pred => "p",
        }
    }

    /// Bytes a register of this class takes in a spill slot.
    pub fn spill_bytes(self) -> u32 {
        match self {
            RegClass::B32 => 4,
            RegClass::B64 => 8,
            RegClass::Pred => 1,
        }
    }
}

impl fmt::Display for RegClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A register operand: a virtual register (before allocation) or a physical one (after).
///
/// Packed in 32 bits: the class in bits 30–31, the physical flag in bit 29, the index in
/// bits 0–28. Virtual register indices are dense over the whole function, across classes,
/// as regalloc2 wants them.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(u32);

const PHYS_BIT: u32 = 1 << 29;
const INDEX_MASK: u32 = PHYS_BIT - 1;

impl Reg {
    /// The largest virtual register index.
    pub const MAX_VIRTUAL: u32 = INDEX_MASK;

    /// Virtual register `index` of class `class`.
    pub fn virt(index: u32, class: RegClass) -> Reg {
        debug_assert!(index <= INDEX_MASK);
        Reg(((class as u32) << 30) | (index & INDEX_MASK))
    }

    /// Physical register `hw` of class `class`.
    pub fn phys(hw: u32, class: RegClass) -> Reg {
        debug_assert!(hw <= INDEX_MASK);
        Reg(((class as u32) << 30) | PHYS_BIT | (hw & INDEX_MASK))
    }

    /// The register's class.
    pub fn class(self) -> RegClass {
        match self.0 >> 30 {
            0 => RegClass::B32,
            1 => RegClass::B64,
            _ => RegClass::Pred,
        }
    }

    /// Is this a virtual register?
    pub fn is_virtual(self) -> bool {
        self.0 & PHYS_BIT == 0
    }

    /// The virtual register's index or the physical register's number.
    pub fn index(self) -> u32 {
        self.0 & INDEX_MASK
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sigil = if self.is_virtual() { "%" } else { "$" };
        write!(f, "{sigil}{}{}", self.class().prefix(), self.index())
    }
}

impl fmt::Debug for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_pack_class_kind_and_index() {
        for class in RegClass::ALL {
            let v = Reg::virt(12345, class);
            assert!(v.is_virtual());
            assert_eq!((v.class(), v.index()), (class, 12345));
            let p = Reg::phys(63, class);
            assert!(!p.is_virtual());
            assert_eq!((p.class(), p.index()), (class, 63));
            assert_ne!(v, Reg::virt(12345, RegClass::ALL[(class.index() + 1) % 3]));
        }
        assert_eq!(Reg::virt(3, RegClass::B64).to_string(), "%rd3");
        assert_eq!(Reg::phys(2, RegClass::Pred).to_string(), "$p2");
    }
}
