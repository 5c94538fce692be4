//! Scalar value types.
//!
//! warplift kernels compute on scalars only: booleans (`i1`), integers of 8 to 64 bits and
//! IEEE binary32/binary64 floats. Integers carry no sign; operations that care (`sdiv`,
//! `ult`, `sextend`, ...) say how they read their operands. Pointers are `i64` addresses
//! in the global space and `i32` byte offsets in the shared and local spaces.

use core::fmt;
use core::str::FromStr;

/// A scalar type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    /// A boolean, the result of comparisons and the condition of branches.
    I1,
    /// An 8-bit integer.
    I8,
    /// A 16-bit integer.
    I16,
    /// A 32-bit integer.
    I32,
    /// A 64-bit integer; also the type of global addresses.
    I64,
    /// An IEEE 754 binary32 float.
    F32,
    /// An IEEE 754 binary64 float.
    F64,
}

impl Type {
    /// Every type, in order of declaration.
    pub const ALL: [Type; 7] = [
        Type::I1,
        Type::I8,
        Type::I16,
        Type::I32,
        Type::I64,
        Type::F32,
        Type::F64,
    ];

    /// Width of the type in bits (1 for `i1`).
    pub fn bits(self) -> u32 {
        match self {
            Type::I1 => 1,
            Type::I8 => 8,
            Type::I16 => 16,
            Type::I32 | Type::F32 => 32,
            Type::I64 | Type::F64 => 64,
        }
    }

    /// Size of the type in memory, in bytes; an `i1` occupies one byte holding 0 or 1.
    pub fn bytes(self) -> u32 {
        match self {
            Type::I1 | Type::I8 => 1,
            Type::I16 => 2,
            Type::I32 | Type::F32 => 4,
            Type::I64 | Type::F64 => 8,
        }
    }

    /// Is this `i1`?
    pub fn is_bool(self) -> bool {
        self == Type::I1
    }

    /// Is this an integer type, `i1` included?
    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    /// Is this an integer type of 8 bits or more (the types integer arithmetic accepts)?
    pub fn is_wide_int(self) -> bool {
        matches!(self, Type::I8 | Type::I16 | Type::I32 | Type::I64)
    }

    /// Is this a float type?
    pub fn is_float(self) -> bool {
        matches!(self, Type::F32 | Type::F64)
    }

    /// A mask of the type's bits within a `u64`.
    pub fn mask(self) -> u64 {
        match self.bits() {
            64 => u64::MAX,
            b => (1u64 << b) - 1,
        }
    }

    /// The name of the type in the text format.
    pub fn name(self) -> &'static str {
        match self {
            Type::I1 => "i1",
            Type::I8 => "i8",
            Type::I16 => "i16",
            Type::I32 => "i32",
            Type::I64 => "i64",
            Type::F32 => "f32",
            Type::F64 => "f64",
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Type {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Type::ALL.into_iter().find(|t| t.name() == s).ok_or(())
    }
}
