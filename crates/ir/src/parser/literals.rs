//! Integer and float literals of the text format.
//!
//! Literals arrive from the lexer as raw text (a [`Number`](super::lexer::TokenKind::Number)
//! token, or the words `inf` and `nan`) with the sign the parser saw before them. These
//! functions check their form and range and return the bits the IR stores. Every
//! failure is an error message, never an overflow: digits are accumulated with checked
//! arithmetic, so `99999999999999999999999` is simply "too large".

use crate::types::Type;
use crate::write::{CANONICAL_NAN_F32, CANONICAL_NAN_F64};

/// An integer literal: its sign and its magnitude, saturated to `u128::MAX` when it does
/// not even fit 128 bits (no type of the IR is that wide, so it fits nothing anyway).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct IntLit {
    /// Was the literal written with a `-`?
    pub negative: bool,
    /// The absolute value.
    pub magnitude: u128,
}

impl IntLit {
    /// The literal's bits as an integer of type `ty` (masked to its width), if it fits the
    /// type read as signed or as unsigned: `i8` takes `-128..=255`.
    pub fn to_bits(self, ty: Type) -> Option<u64> {
        let bits = ty.bits();
        let fits = if self.negative {
            self.magnitude <= 1u128 << (bits - 1)
        } else {
            self.magnitude <= u128::from(ty.mask())
        };
        if !fits {
            return None;
        }
        // Fits in 64 bits here, so the cast is lossless.
        let m = self.magnitude as u64;
        let v = if self.negative { m.wrapping_neg() } else { m };
        Some(v & ty.mask())
    }

    /// The literal as an `i32` offset, if it is in range.
    pub fn to_i32(self) -> Option<i32> {
        let v = i128::try_from(self.magnitude).ok()?;
        i32::try_from(if self.negative { -v } else { v }).ok()
    }

    /// The literal as a `u32` (sizes and alignments), if it is non-negative and in range.
    pub fn to_u32(self) -> Option<u32> {
        if self.negative && self.magnitude != 0 {
            return None;
        }
        u32::try_from(self.magnitude).ok()
    }
}

/// Reads the digits of an integer literal: decimal, or hexadecimal after `0x`, with `_`
/// allowed anywhere after the first character. `None` when the text is not of that form.
pub(crate) fn parse_int(text: &str, negative: bool) -> Option<IntLit> {
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(rest) => (rest, 16),
        None => (text, 10),
    };
    let mut magnitude: u128 = 0;
    let mut any_digit = false;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c.to_digit(radix)?;
        any_digit = true;
        magnitude = magnitude
            .checked_mul(u128::from(radix))
            .and_then(|m| m.checked_add(u128::from(d)))
            .unwrap_or(u128::MAX);
    }
    any_digit.then_some(IntLit {
        negative,
        magnitude,
    })
}

/// The sign written before a float literal.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sign {
    /// No sign.
    None,
    /// `+`.
    Plus,
    /// `-`.
    Minus,
}

/// Reads a float literal of type `ty` (`F32` or `F64`) from `text` written after `sign`:
/// a decimal (`1.5`, `1e-30`, `3`), `inf`, `nan` (the canonical NaN) or raw bits
/// (`0x7fc00000`). Returns the bits (an `f32` in the low 32 bits), or a message saying
/// what is wrong.
pub(crate) fn parse_float(text: &str, sign: Sign, ty: Type) -> Result<u64, String> {
    let is_f32 = ty == Type::F32;
    let negative = sign == Sign::Minus;
    match text {
        "inf" => {
            return Ok(match (is_f32, negative) {
                (true, false) => u64::from(f32::INFINITY.to_bits()),
                (true, true) => u64::from(f32::NEG_INFINITY.to_bits()),
                (false, false) => f64::INFINITY.to_bits(),
                (false, true) => f64::NEG_INFINITY.to_bits(),
            });
        }
        "nan" => {
            if sign != Sign::None {
                return Err(
                    "`nan` takes no sign; write other NaNs as raw bits, such as `0xffc00000`"
                        .to_string(),
                );
            }
            return Ok(if is_f32 {
                u64::from(CANONICAL_NAN_F32)
            } else {
                CANONICAL_NAN_F64
            });
        }
        _ => {}
    }
    if text.starts_with("0x") || text.starts_with("0X") {
        if sign != Sign::None {
            return Err(format!(
                "raw float bits take no sign: flip the sign bit in {} instead",
                super::lexer::quote(text)
            ));
        }
        let lit = parse_int(text, false).ok_or_else(|| invalid_float(text, ty))?;
        let mask = if is_f32 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        return match u64::try_from(lit.magnitude) {
            Ok(bits) if bits <= mask => Ok(bits),
            _ => Err(format!(
                "float bits {} do not fit in {ty}",
                super::lexer::shorten(text)
            )),
        };
    }
    if !is_decimal_float(text) {
        return Err(invalid_float(text, ty));
    }
    let mut clean = String::with_capacity(text.len() + 1);
    if negative {
        clean.push('-');
    }
    clean.extend(text.chars().filter(|&c| c != '_'));
    // Parse straight to the target type: going through f64 for an f32 would round twice.
    let (bits, infinite) = if is_f32 {
        let x: f32 = clean.parse().map_err(|_| invalid_float(text, ty))?;
        (u64::from(x.to_bits()), x.is_infinite())
    } else {
        let x: f64 = clean.parse().map_err(|_| invalid_float(text, ty))?;
        (x.to_bits(), x.is_infinite())
    };
    if infinite {
        return Err(format!(
            "float literal {} is out of range for {ty} (write `inf` for infinity)",
            super::lexer::shorten(text)
        ));
    }
    Ok(bits)
}

fn invalid_float(text: &str, ty: Type) -> String {
    format!(
        "invalid {ty} literal {}: expected a decimal such as `1.5` or `1e-30`, `inf`, `nan` \
         or raw bits such as `0x7fc00000`",
        super::lexer::quote(text)
    )
}

/// Is `text` of the form `DIGITS [. DIGITS] [(e|E) [+|-] DIGITS]`, where DIGITS is at least
/// one digit with `_` allowed after the first?
fn is_decimal_float(text: &str) -> bool {
    fn digits(s: &[u8]) -> usize {
        if !s.first().is_some_and(u8::is_ascii_digit) {
            return 0;
        }
        s.iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'_')
            .count()
    }
    let s = text.as_bytes();
    let mut i = digits(s);
    if i == 0 {
        return false;
    }
    if s.get(i) == Some(&b'.') {
        let n = digits(&s[i + 1..]);
        if n == 0 {
            return false;
        }
        i += 1 + n;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(&s[i..]);
        if n == 0 {
            return false;
        }
        i += n;
    }
    i == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(text: &str, negative: bool, ty: Type) -> Option<u64> {
        parse_int(text, negative).and_then(|l| l.to_bits(ty))
    }

    #[test]
    fn integer_ranges() {
        assert_eq!(int("255", false, Type::I8), Some(0xff));
        assert_eq!(int("128", true, Type::I8), Some(0x80));
        assert_eq!(int("129", true, Type::I8), None);
        assert_eq!(int("256", false, Type::I8), None);
        assert_eq!(int("1", false, Type::I1), Some(1));
        assert_eq!(int("1", true, Type::I1), Some(1));
        assert_eq!(int("2", false, Type::I1), None);
        assert_eq!(int("4294967295", false, Type::I32), Some(0xffff_ffff));
        assert_eq!(int("2147483648", true, Type::I32), Some(0x8000_0000));
        assert_eq!(
            int("0xffff_ffff_ffff_ffff", false, Type::I64),
            Some(u64::MAX)
        );
        assert_eq!(int("9223372036854775808", true, Type::I64), Some(1 << 63));
        assert_eq!(int("9223372036854775809", true, Type::I64), None);
        assert_eq!(int("18446744073709551616", false, Type::I64), None);
        assert_eq!(int("0", true, Type::I64), Some(0));
        let huge = "9".repeat(100);
        assert_eq!(parse_int(&huge, false).unwrap().magnitude, u128::MAX);
        assert_eq!(int(&huge, false, Type::I64), None);
    }

    #[test]
    fn malformed_integers() {
        for t in ["0x", "0x_", "12a", "1.5", "0xg", "1e5"] {
            assert_eq!(parse_int(t, false), None, "{t}");
        }
        assert!(parse_int("1_000", false).is_some());
    }

    #[test]
    fn offsets_and_sizes() {
        let l = |t: &str, n: bool| parse_int(t, n).unwrap();
        assert_eq!(l("2147483647", false).to_i32(), Some(i32::MAX));
        assert_eq!(l("2147483648", true).to_i32(), Some(i32::MIN));
        assert_eq!(l("2147483648", false).to_i32(), None);
        assert_eq!(l(&"9".repeat(60), true).to_i32(), None);
        assert_eq!(l("4294967295", false).to_u32(), Some(u32::MAX));
        assert_eq!(l("1", true).to_u32(), None);
    }

    #[test]
    fn floats() {
        let f32b = |t: &str, s: Sign| parse_float(t, s, Type::F32).map(|b| b as u32);
        assert_eq!(f32b("1.5", Sign::None), Ok(1.5f32.to_bits()));
        assert_eq!(f32b("0.0", Sign::Minus), Ok((-0.0f32).to_bits()));
        assert_eq!(f32b("1e-30", Sign::None), Ok(1e-30f32.to_bits()));
        assert_eq!(f32b("1e-45", Sign::None), Ok(1));
        assert_eq!(f32b("3", Sign::Plus), Ok(3.0f32.to_bits()));
        assert_eq!(f32b("inf", Sign::Minus), Ok(f32::NEG_INFINITY.to_bits()));
        assert_eq!(f32b("nan", Sign::None), Ok(CANONICAL_NAN_F32));
        assert_eq!(f32b("0x7fc00001", Sign::None), Ok(0x7fc0_0001));
        assert!(f32b("0x1_0000_0000", Sign::None).is_err());
        assert!(f32b("1e39", Sign::None).is_err());
        assert!(f32b("nan", Sign::Minus).is_err());
        assert!(f32b("0x1", Sign::Minus).is_err());
        for bad in ["1.", "1.e5", "1e", "1e+", "1x", "1.5.5", "infinity"] {
            assert!(f32b(bad, Sign::None).is_err(), "{bad}");
        }
        assert_eq!(
            parse_float("0.1", Sign::None, Type::F64),
            Ok(0.1f64.to_bits())
        );
        assert_eq!(
            parse_float("0xffffffffffffffff", Sign::None, Type::F64),
            Ok(u64::MAX)
        );
        assert_eq!(
            parse_float("5e-324", Sign::None, Type::F64),
            Ok(1),
            "smallest subnormal"
        );
        let err = parse_float(&format!("1{}", "0".repeat(400)), Sign::None, Type::F64);
        assert!(err.unwrap_err().contains("is out of range for f64"));
    }
}
