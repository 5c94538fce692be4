//! Rust types that buffer elements and scalar arguments can be written as.
//!
//! A buffer's element type is an [`ElemType`]; each one has exactly one Rust type that is
//! an [`Element`]: `i8`..`i64` for the signed integer types, `u8`..`u64` for the unsigned
//! ones, `f32` and `f64`. Buffers are initialised from slices of these types
//! ([`LaunchBuilder::buffer`](super::LaunchBuilder::buffer)) and read back as vectors of
//! them ([`GlobalMemory::read_buffer`](super::GlobalMemory::read_buffer)), which checks
//! that the Rust type is the buffer's element type: an `i32` buffer does not read as
//! `u32` or `f32` by accident. Floats travel as their raw bits, so NaN payloads and
//! negative zeros survive the round trip.
//!
//! Scalar arguments take any of these types, and `bool` (for `i1` parameters), through
//! `From<T> for Literal`; the parameter's IR type decides how the value is stored, with
//! the same range rules as a launch file.

use super::literal::Literal;
use super::memory::ElemType;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is the element type of buffers: one for each [`ElemType`].
///
/// Sealed: exactly the ten types below implement it.
pub trait Element: Copy + sealed::Sealed + 'static {
    /// The buffer element type this Rust type is.
    const ELEM: ElemType;

    /// The element's bits, zero-extended to 64 (floats: their raw bits).
    fn to_bits(self) -> u64;

    /// The element whose bits are the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;

    /// The literal that converts back to exactly this element: integers by value, floats
    /// by their raw bits (so a NaN keeps its payload).
    fn to_literal(self) -> Literal;
}

macro_rules! int_element {
    ($($t:ty => $elem:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ELEM: ElemType = ElemType::$elem;
            fn to_bits(self) -> u64 {
                // Sign bits above the width are dropped by the cast to the unsigned type
                // of the same width.
                self as u64 & (u64::MAX >> (64 - 8 * core::mem::size_of::<$t>()))
            }
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            fn to_literal(self) -> Literal {
                Literal::Int(i128::from(self))
            }
        }
        impl From<$t> for Literal {
            fn from(v: $t) -> Literal {
                Literal::Int(i128::from(v))
            }
        }
    )*};
}

int_element! {
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
}

impl sealed::Sealed for f32 {}
impl Element for f32 {
    const ELEM: ElemType = ElemType::F32;
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_literal(self) -> Literal {
        Literal::Hex(i128::from(f32::to_bits(self)))
    }
}

impl sealed::Sealed for f64 {}
impl Element for f64 {
    const ELEM: ElemType = ElemType::F64;
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn to_literal(self) -> Literal {
        Literal::Hex(i128::from(f64::to_bits(self)))
    }
}

impl From<f32> for Literal {
    /// A finite `f32` converts exactly to an `f32` or `f64` parameter; infinities stay
    /// infinite, and a NaN becomes the canonical NaN (as `nan` in a launch file).
    fn from(x: f32) -> Literal {
        if x.is_finite() {
            Literal::Decimal {
                f32: x,
                f64: f64::from(x),
            }
        } else {
            Literal::Float(f64::from(x))
        }
    }
}

impl From<f64> for Literal {
    /// An `f64` is exact for an `f64` parameter and rounded once for an `f32` one.
    fn from(x: f64) -> Literal {
        Literal::Float(x)
    }
}

impl From<usize> for Literal {
    /// A length or an index, as `.arg("n", xs.len())` passes it.
    fn from(v: usize) -> Literal {
        Literal::Int(v as i128)
    }
}

impl From<isize> for Literal {
    fn from(v: isize) -> Literal {
        Literal::Int(v as i128)
    }
}

impl From<bool> for Literal {
    /// For `i1` parameters.
    fn from(b: bool) -> Literal {
        Literal::Bool(b)
    }
}

/// The little-endian bytes of `values`.
pub(crate) fn to_le_bytes<T: Element>(values: &[T]) -> Vec<u8> {
    let size = T::ELEM.bytes();
    let mut bytes = Vec::with_capacity(values.len() * size);
    for &v in values {
        bytes.extend_from_slice(&v.to_bits().to_le_bytes()[..size]);
    }
    bytes
}

/// The elements of little-endian `bytes` (whose length is a multiple of the size).
pub(crate) fn from_le_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(T::ELEM.bytes())
        .map(|c| T::from_bits(super::memory::read_le(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::literal::{literal_bits, Scalar};

    #[test]
    fn bits_round_trip() {
        assert_eq!((-1i8).to_bits(), 0xff);
        assert_eq!((-2i32).to_bits(), 0xffff_fffe);
        assert_eq!(<i32 as Element>::from_bits(0xffff_fffe), -2);
        assert_eq!(<u16 as Element>::from_bits(0x1_2345), 0x2345);
        let nan = f32::from_bits(0x7fc0_1234);
        assert_eq!(
            <f32 as Element>::from_bits(Element::to_bits(nan)).to_bits(),
            0x7fc0_1234
        );
        let bytes = to_le_bytes(&[1.5f32, -0.0, nan]);
        assert_eq!(bytes.len(), 12);
        let back: Vec<f32> = from_le_bytes(&bytes);
        assert_eq!(back[0], 1.5);
        assert_eq!(back[1].to_bits(), 0x8000_0000);
        assert_eq!(back[2].to_bits(), 0x7fc0_1234);
    }

    #[test]
    fn literals_convert_exactly() {
        let nan = f64::from_bits(0x7ff0_0000_0000_0001);
        assert_eq!(
            literal_bits(nan.to_literal(), Scalar::F64),
            Ok(0x7ff0_0000_0000_0001)
        );
        assert_eq!(
            literal_bits((-3i16).to_literal(), Scalar::Int(16)),
            Ok(0xfffd)
        );
        assert_eq!(
            literal_bits(u64::MAX.to_literal(), Scalar::Int(64)),
            Ok(u64::MAX)
        );
        // Arguments: an f32 is exact for f32 and f64 parameters; 0.1f32 is not 0.1.
        let x = Literal::from(0.1f32);
        assert_eq!(
            literal_bits(x, Scalar::F32),
            Ok(u64::from(0.1f32.to_bits()))
        );
        assert_eq!(
            literal_bits(x, Scalar::F64),
            Ok(f64::from(0.1f32).to_bits())
        );
        assert_eq!(
            literal_bits(Literal::from(f32::INFINITY), Scalar::F32),
            Ok(u64::from(f32::INFINITY.to_bits()))
        );
        assert!(literal_bits(Literal::from(1.5f32), Scalar::Int(32)).is_err());
        assert_eq!(literal_bits(Literal::from(true), Scalar::Int(1)), Ok(1));
        assert_eq!(literal_bits(Literal::from(3usize), Scalar::Int(32)), Ok(3));
        assert_eq!(
            literal_bits(Literal::from(-1isize), Scalar::Int(8)),
            Ok(0xff)
        );
    }
}
