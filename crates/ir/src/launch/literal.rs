//! Scalar literals of launch descriptions and their conversion to typed bit patterns.
//!
//! Arguments, buffer contents and expected values arrive either as TOML values or as
//! strings from the command line. Both are first turned into a [`Literal`], which keeps
//! what the user wrote (an integer, a float, raw bits, a boolean), and only then converted
//! to the bits of a concrete type, so the range rules are the same whatever the source.

use crate::types::Type;
use crate::write::{CANONICAL_NAN_F32, CANONICAL_NAN_F64};

/// A scalar as written in a launch description.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Literal {
    /// A decimal integer; `i128` holds every value of every supported type, signed or
    /// unsigned.
    Int(i128),
    /// A hexadecimal integer (`0x...`): an integer for integer types, raw bits for floats.
    Hex(i128),
    /// A float known only as an `f64`: a bare TOML float (TOML parses floats to `f64`),
    /// `inf`, `-inf` or `nan` (NaN meaning the canonical NaN). An `f32` gets it rounded
    /// from the `f64`.
    Float(f64),
    /// A decimal float written as text (`"0.1"`, `1e-30` on the command line), rounded
    /// once to each float type from the text: going through `f64` for an `f32` would
    /// round twice and can land on the wrong `f32`. Either may be infinite when the
    /// decimal is out of that type's range; converting it to that type is then an error.
    Decimal {
        /// The decimal rounded to the nearest `f32`.
        f32: f32,
        /// The decimal rounded to the nearest `f64`.
        f64: f64,
    },
    /// A boolean, accepted for `i1` values only.
    Bool(bool),
}

/// Parses a scalar literal from text: a decimal or `0x` hexadecimal integer with an optional
/// sign and `_` separators, a decimal float (`1.5`, `-2e3`), `inf`, `-inf`, `nan`, `true` or
/// `false`.
pub fn parse_literal(text: &str) -> Result<Literal, String> {
    let s = text.trim();
    match s {
        "true" => return Ok(Literal::Bool(true)),
        "false" => return Ok(Literal::Bool(false)),
        "nan" | "+nan" | "-nan" => return Ok(Literal::Float(f64::NAN)),
        "inf" | "+inf" => return Ok(Literal::Float(f64::INFINITY)),
        "-inf" => return Ok(Literal::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    if let Some((v, hex)) = parse_int(s) {
        return Ok(if hex {
            Literal::Hex(v)
        } else {
            Literal::Int(v)
        });
    }
    if is_int_syntax(s) {
        // Integer syntax that `parse_int` refused can only be too large; reading it as a
        // float instead would report a misleading "float given" later.
        return Err(format!(
            "integer `{text}` does not fit in 64 bits, signed or unsigned"
        ));
    }
    let looks_float = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_'));
    if looks_float {
        let clean = s.replace('_', "");
        // Each float type gets its own rounding of the text (see `Literal::Decimal`).
        if let (Ok(x32), Ok(x64)) = (clean.parse::<f32>(), clean.parse::<f64>()) {
            if x64.is_infinite() {
                return Err(format!(
                    "float literal `{text}` is out of range (write `inf` for infinity)"
                ));
            }
            return Ok(Literal::Decimal { f32: x32, f64: x64 });
        }
    }
    Err(format!("`{text}` is not a number"))
}

/// Is `s` an optionally signed decimal or `0x` hexadecimal integer, `_` separators allowed
/// (whatever its magnitude)?
fn is_int_syntax(s: &str) -> bool {
    let rest = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (hex, digits) = match rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
        Some(d) => (true, d),
        None => (false, rest),
    };
    !digits.is_empty()
        && !digits.starts_with('_')
        && digits.chars().any(|c| c != '_')
        && digits.chars().all(|c| {
            c == '_'
                || if hex {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                }
        })
}

/// An integer literal as written: `-0x1`, not the two's complement of the `i128`.
fn hex_text(v: i128) -> String {
    if v < 0 {
        format!("-{:#x}", v.unsigned_abs())
    } else {
        format!("{v:#x}")
    }
}

/// Parses a decimal or `0x` hexadecimal integer with optional sign and `_` separators;
/// also says whether it was hexadecimal.
pub fn parse_int(s: &str) -> Option<(i128, bool)> {
    let (neg, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = match rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
        Some(d) => (16, d),
        None => (10, rest),
    };
    if digits.is_empty() || digits.starts_with('_') {
        return None;
    }
    let mut value: i128 = 0;
    let mut any = false;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c.to_digit(radix)?;
        value = value
            .checked_mul(i128::from(radix))?
            .checked_add(i128::from(d))?;
        // Nothing we convert to is wider than 64 bits; stop long before i128 overflows.
        if value > i128::from(u64::MAX) + 1 {
            return None;
        }
        any = true;
    }
    any.then_some((if neg { -value } else { value }, radix == 16))
}

/// Converts a TOML value to a literal. Strings are parsed with [`parse_literal`], so
/// `"0xff"`, `"nan"` and `"-inf"` are accepted where TOML itself has no spelling.
pub fn literal_from_toml(value: &toml::Value) -> Result<Literal, String> {
    match value {
        toml::Value::Integer(i) => Ok(Literal::Int(i128::from(*i))),
        toml::Value::Float(x) => Ok(Literal::Float(*x)),
        toml::Value::Boolean(b) => Ok(Literal::Bool(*b)),
        toml::Value::String(s) => parse_literal(s),
        other => Err(format!("expected a number, found a {}", other.type_str())),
    }
}

/// The kind of bits a literal converts to: an integer of `bits` width or a float.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// An integer of this many bits (1 to 64); accepts any value that fits as signed or
    /// as unsigned, stored masked to the width.
    Int(u32),
    /// An `f32`.
    F32,
    /// An `f64`.
    F64,
}

impl Scalar {
    /// The scalar kind of an IR type.
    pub fn of_type(ty: Type) -> Scalar {
        match ty {
            Type::F32 => Scalar::F32,
            Type::F64 => Scalar::F64,
            t => Scalar::Int(t.bits()),
        }
    }
}

/// Converts a literal to the bits of `kind`.
///
/// Integers must fit the width as signed or unsigned (an 8-bit element accepts -128..=255);
/// booleans are accepted only for 1-bit integers; floats only for float kinds. Decimal
/// integers and decimal floats convert to a float type rounding once to nearest even (a
/// bare TOML float is already an `f64`, so an `f32` gets it rounded from that `f64`); a
/// finite value that overflows the type is an error (write `inf` for infinity).
/// Non-negative hexadecimal integers give a float's raw bits (`"0x7fc00000"`). Any NaN
/// written as `nan` becomes the canonical NaN, matching the `nan` of the text format.
pub fn literal_bits(lit: Literal, kind: Scalar) -> Result<u64, String> {
    match (kind, lit) {
        (Scalar::Int(1), Literal::Bool(b)) => Ok(u64::from(b)),
        (Scalar::Int(_), Literal::Bool(_)) => {
            Err("a boolean is only accepted for an i1 value".to_string())
        }
        (Scalar::Int(bits), Literal::Int(v) | Literal::Hex(v)) => {
            let lo = if bits == 1 { 0 } else { -(1i128 << (bits - 1)) };
            let hi = (1i128 << bits) - 1;
            if v < lo || v > hi {
                let v = match lit {
                    Literal::Hex(_) => hex_text(v),
                    _ => v.to_string(),
                };
                return Err(format!("{v} does not fit in {bits} bits"));
            }
            Ok((v as u64) & mask(bits))
        }
        (Scalar::Int(bits), Literal::Float(x) | Literal::Decimal { f64: x, .. }) => {
            Err(format!("float {x} given for a {bits}-bit integer"))
        }
        (Scalar::F32 | Scalar::F64, Literal::Bool(_)) => {
            Err("a boolean is not a float".to_string())
        }
        (Scalar::F32 | Scalar::F64, Literal::Hex(v)) if v < 0 => Err(format!(
            "{} is negative: a hexadecimal float gives raw bits",
            hex_text(v)
        )),
        (Scalar::F32, Literal::Hex(v)) => u32::try_from(v)
            .map(u64::from)
            .map_err(|_| format!("{v:#x} does not fit the 32 bits of an f32")),
        (Scalar::F64, Literal::Hex(v)) => {
            u64::try_from(v).map_err(|_| format!("{v:#x} does not fit the 64 bits of an f64"))
        }
        (Scalar::F32, Literal::Int(v)) => finite_f32(v as f32, &v.to_string()),
        (Scalar::F64, Literal::Int(v)) => finite_f64(v as f64, &v.to_string()),
        (Scalar::F32, Literal::Float(x)) if x.is_infinite() => Ok(u64::from(f32_bits(x as f32))),
        (Scalar::F32, Literal::Float(x)) => finite_f32(x as f32, &format!("{x:e}")),
        (Scalar::F32, Literal::Decimal { f32, f64 }) => finite_f32(f32, &format!("{f64:e}")),
        (Scalar::F64, Literal::Float(x) | Literal::Decimal { f64: x, .. }) => Ok(f64_bits(x)),
    }
}

/// The bits of `x`, which was rounded from the finite value `text`: overflowing to
/// infinity is an error, as for `f32const` in the text format.
fn finite_f32(x: f32, text: &str) -> Result<u64, String> {
    if x.is_infinite() {
        return Err(format!(
            "{text} is out of range for f32 (write `inf` for infinity)"
        ));
    }
    Ok(u64::from(f32_bits(x)))
}

/// As [`finite_f32`], for `f64`.
fn finite_f64(x: f64, text: &str) -> Result<u64, String> {
    if x.is_infinite() {
        return Err(format!(
            "{text} is out of range for f64 (write `inf` for infinity)"
        ));
    }
    Ok(f64_bits(x))
}

/// The value a literal converts to for a float kind, widened to `f64` (exact for an
/// `f32`): the number that converting `lit` to `kind` stores.
pub fn literal_float(lit: Literal, kind: Scalar) -> Result<f64, String> {
    let bits = literal_bits(lit, kind)?;
    Ok(match kind {
        Scalar::F32 => f64::from(f32::from_bits(bits as u32)),
        _ => f64::from_bits(bits),
    })
}

/// Parses a literal from text and converts it to the bits of `kind`.
pub fn parse_bits(text: &str, kind: Scalar) -> Result<u64, String> {
    literal_bits(parse_literal(text)?, kind)
}

/// Converts a TOML value to the bits of `kind`.
pub fn toml_bits(value: &toml::Value, kind: Scalar) -> Result<u64, String> {
    literal_bits(literal_from_toml(value)?, kind)
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn f32_bits(x: f32) -> u32 {
    if x.is_nan() {
        CANONICAL_NAN_F32
    } else {
        x.to_bits()
    }
}

fn f64_bits(x: f64) -> u64 {
    if x.is_nan() {
        CANONICAL_NAN_F64
    } else {
        x.to_bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_bits("100", Scalar::Int(32)), Ok(100));
        assert_eq!(parse_bits("-1", Scalar::Int(8)), Ok(0xff));
        assert_eq!(parse_bits("255", Scalar::Int(8)), Ok(0xff));
        assert!(parse_bits("256", Scalar::Int(8)).is_err());
        assert!(parse_bits("-129", Scalar::Int(8)).is_err());
        assert_eq!(parse_bits("0xffff_ffff", Scalar::Int(32)), Ok(0xffff_ffff));
        assert_eq!(parse_bits("-0x8000_0000", Scalar::Int(32)), Ok(0x8000_0000));
        assert_eq!(
            parse_bits("18446744073709551615", Scalar::Int(64)),
            Ok(u64::MAX)
        );
        assert!(parse_bits("18446744073709551616", Scalar::Int(64)).is_err());
        assert!(parse_bits(
            "999999999999999999999999999999999999999999",
            Scalar::Int(64)
        )
        .is_err());
        assert_eq!(parse_bits("true", Scalar::Int(1)), Ok(1));
        assert!(parse_bits("2", Scalar::Int(1)).is_err());
        assert!(parse_bits("true", Scalar::Int(32)).is_err());
        assert!(parse_bits("1.5", Scalar::Int(32)).is_err());
        assert!(parse_bits("", Scalar::Int(32)).is_err());
        assert!(parse_bits("-", Scalar::Int(32)).is_err());
        assert!(parse_bits("0x", Scalar::Int(32)).is_err());
        assert!(parse_bits("abc", Scalar::Int(32)).is_err());
    }

    #[test]
    fn floats() {
        assert_eq!(
            parse_bits("1.5", Scalar::F32),
            Ok(u64::from(1.5f32.to_bits()))
        );
        assert_eq!(parse_bits("2", Scalar::F64), Ok(2f64.to_bits()));
        assert_eq!(
            parse_bits("nan", Scalar::F32),
            Ok(u64::from(CANONICAL_NAN_F32))
        );
        assert_eq!(
            parse_bits("-inf", Scalar::F64),
            Ok(f64::NEG_INFINITY.to_bits())
        );
        assert_eq!(parse_bits("0x7fc00000", Scalar::F32), Ok(0x7fc0_0000));
        assert!(parse_bits("0x1_0000_0000", Scalar::F32).is_err());
        assert_eq!(
            parse_bits("-0.0", Scalar::F32),
            Ok(u64::from((-0.0f32).to_bits()))
        );
        assert_eq!(parse_bits("1e3", Scalar::F64), Ok(1000f64.to_bits()));
        assert!(parse_bits("1.2.3", Scalar::F64).is_err());
        assert!(parse_bits("infinity", Scalar::F64).is_err());
    }

    #[test]
    fn decimals_round_once_to_f32() {
        // Through f64 this rounds twice: 1 + 2^-24 + 2^-60 rounds to 1 + 2^-24 in f64
        // (a tie for f32, broken to even: 1.0), but once to f32 it is above the tie.
        let text = "1.00000005960464477550";
        assert_eq!(text.parse::<f32>().unwrap(), 1.0000001);
        assert_eq!((text.parse::<f64>().unwrap() as f32), 1.0);
        assert_eq!(
            parse_bits(text, Scalar::F32),
            Ok(u64::from(1.0000001f32.to_bits()))
        );
        assert_eq!(
            parse_bits(text, Scalar::F64),
            Ok(text.parse::<f64>().unwrap().to_bits())
        );
        let v = toml::Value::String(text.into());
        assert_eq!(
            toml_bits(&v, Scalar::F32),
            Ok(u64::from(1.0000001f32.to_bits()))
        );
        // A bare TOML float is an f64 already.
        let v = toml::Value::Float(text.parse().unwrap());
        assert_eq!(toml_bits(&v, Scalar::F32), Ok(u64::from(1f32.to_bits())));
    }

    #[test]
    fn overflow_to_infinity_is_an_error() {
        let e = parse_bits("1e39", Scalar::F32).unwrap_err();
        assert!(e.contains("out of range for f32"), "{e}");
        assert_eq!(parse_bits("1e39", Scalar::F64), Ok(1e39f64.to_bits()));
        assert!(parse_bits("-3.5e38", Scalar::F32).is_err());
        assert!(parse_bits("1e309", Scalar::F64).is_err());
        assert!(toml_bits(&toml::Value::Float(1e39), Scalar::F32).is_err());
        assert!(
            toml_bits(&toml::Value::Integer(i64::MAX), Scalar::F32).is_ok(),
            "9.2e18 fits an f32"
        );
        assert_eq!(
            parse_bits("inf", Scalar::F32),
            Ok(u64::from(f32::INFINITY.to_bits()))
        );
        assert_eq!(
            toml_bits(&toml::Value::Float(f64::NEG_INFINITY), Scalar::F32),
            Ok(u64::from(f32::NEG_INFINITY.to_bits()))
        );
    }

    #[test]
    fn error_messages_say_what_was_written() {
        // Too large for any type: not "float ... given for a 64-bit integer".
        let e = parse_bits("18446744073709551617", Scalar::Int(64)).unwrap_err();
        assert_eq!(
            e,
            "integer `18446744073709551617` does not fit in 64 bits, signed or unsigned"
        );
        assert!(parse_literal("-0x1_0000_0000_0000_0000_0")
            .unwrap_err()
            .contains("does not fit"));
        assert_eq!(
            parse_bits("18446744073709551616", Scalar::Int(64)).unwrap_err(),
            "18446744073709551616 does not fit in 64 bits"
        );
        // Negative hex for a float: the literal as written, not a 128-bit pattern.
        assert_eq!(
            parse_bits("-0x1", Scalar::F32).unwrap_err(),
            "-0x1 is negative: a hexadecimal float gives raw bits"
        );
        assert_eq!(
            parse_bits("-0x100", Scalar::Int(8)).unwrap_err(),
            "-0x100 does not fit in 8 bits"
        );
        // Not integer syntax: still "not a number".
        assert!(parse_literal("1_").is_ok());
        assert!(parse_literal("0x_1").unwrap_err().contains("not a number"));
    }

    #[test]
    fn toml_values() {
        let v = toml::Value::Float(f64::NAN);
        assert_eq!(toml_bits(&v, Scalar::F64), Ok(CANONICAL_NAN_F64));
        let v = toml::Value::String("0xff".into());
        assert_eq!(toml_bits(&v, Scalar::F32), Ok(0xff));
        let v = toml::Value::Array(vec![]);
        assert!(toml_bits(&v, Scalar::F32).is_err());
    }
}
