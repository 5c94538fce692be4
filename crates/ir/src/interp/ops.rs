//! The scalar semantics of the IR: what every arithmetic, comparison and conversion
//! opcode computes, for every input.
//!
//! Values are passed as `u64` bit patterns holding the type's bits zero-extended (an `i1`
//! is 0 or 1, an `f32` sits in the low 32 bits), and results come back the same way. These
//! functions are the executable form of the rules in `docs/ir.md`; the interpreter calls
//! them, and so can any pass that folds constants, so that folding and running agree.
//!
//! The rules that differ from a naive host implementation: division by zero and
//! `MIN / -1` have defined results (RISC-V's), shift amounts at or above the width clamp
//! (PTX's), `clz`/`ctz` of zero give the width, float-to-int conversions saturate with NaN
//! giving 0, every float operation that produces a NaN produces the canonical NaN, and
//! `fmin`/`fmax` ignore a NaN operand and order `-0 < +0`.

use crate::condcodes::{AtomicRmwOp, FloatCC, IntCC};
use crate::instructions::Opcode;
use crate::types::Type;
use crate::write::{CANONICAL_NAN_F32, CANONICAL_NAN_F64};

/// `bits` of type `ty`, sign-extended to 64 bits.
#[inline]
pub fn sext(bits: u64, ty: Type) -> i64 {
    let shift = 64 - ty.bits();
    ((bits << shift) as i64) >> shift
}

#[inline]
fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

#[inline]
fn f64_of(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// The bits of an `f32` result, NaN made canonical.
#[inline]
pub fn canon_f32(x: f32) -> u64 {
    if x.is_nan() {
        u64::from(CANONICAL_NAN_F32)
    } else {
        u64::from(x.to_bits())
    }
}

/// The bits of an `f64` result, NaN made canonical.
#[inline]
pub fn canon_f64(x: f64) -> u64 {
    if x.is_nan() {
        CANONICAL_NAN_F64
    } else {
        x.to_bits()
    }
}

/// Evaluates a two-operand opcode on operands of type `ty` (both operands, and the
/// result, have that type). Returns `None` for an opcode that is not a binary operation
/// or a type it does not accept.
pub fn binary(op: Opcode, ty: Type, a: u64, b: u64) -> Option<u64> {
    if ty.is_float() {
        return float_binary(op, ty, a, b);
    }
    let bits = ty.bits();
    let mask = ty.mask();
    let (sa, sb) = (sext(a, ty), sext(b, ty));
    let r = match op {
        Opcode::Band => a & b,
        Opcode::Bor => a | b,
        Opcode::Bxor => a ^ b,
        _ if !ty.is_wide_int() => return None,
        Opcode::Iadd => a.wrapping_add(b),
        Opcode::Isub => a.wrapping_sub(b),
        Opcode::Imul => a.wrapping_mul(b),
        Opcode::Smulhi => ((i128::from(sa) * i128::from(sb)) >> bits) as u64,
        Opcode::Umulhi => ((u128::from(a) * u128::from(b)) >> bits) as u64,
        // Sign-extended to 64 bits, `MIN / -1` of a narrower type does not overflow and
        // its masked quotient is MIN again; for i64 `wrapping_div` gives MIN.
        Opcode::Sdiv if b == 0 => mask,
        Opcode::Sdiv => sa.wrapping_div(sb) as u64,
        Opcode::Udiv if b == 0 => mask,
        Opcode::Udiv => a / b,
        Opcode::Srem if b == 0 => a,
        Opcode::Srem => sa.wrapping_rem(sb) as u64,
        Opcode::Urem if b == 0 => a,
        Opcode::Urem => a % b,
        Opcode::Smin => sa.min(sb) as u64,
        Opcode::Smax => sa.max(sb) as u64,
        Opcode::Umin => a.min(b),
        Opcode::Umax => a.max(b),
        Opcode::Ishl if b >= u64::from(bits) => 0,
        Opcode::Ishl => a << b,
        Opcode::Ushr if b >= u64::from(bits) => 0,
        Opcode::Ushr => a >> b,
        Opcode::Sshr => (sa >> b.min(u64::from(bits) - 1)) as u64,
        _ => return None,
    };
    Some(r & mask)
}

fn float_binary(op: Opcode, ty: Type, a: u64, b: u64) -> Option<u64> {
    if ty == Type::F32 {
        let (x, y) = (f32_of(a), f32_of(b));
        Some(match op {
            Opcode::Fadd => canon_f32(x + y),
            Opcode::Fsub => canon_f32(x - y),
            Opcode::Fmul => canon_f32(x * y),
            Opcode::Fdiv => canon_f32(x / y),
            Opcode::Fmin => fminmax(x.is_nan(), y.is_nan(), a, b, x < y, x == y, true)
                .unwrap_or(u64::from(CANONICAL_NAN_F32)),
            Opcode::Fmax => fminmax(x.is_nan(), y.is_nan(), a, b, x > y, x == y, false)
                .unwrap_or(u64::from(CANONICAL_NAN_F32)),
            _ => return None,
        })
    } else {
        let (x, y) = (f64_of(a), f64_of(b));
        Some(match op {
            Opcode::Fadd => canon_f64(x + y),
            Opcode::Fsub => canon_f64(x - y),
            Opcode::Fmul => canon_f64(x * y),
            Opcode::Fdiv => canon_f64(x / y),
            Opcode::Fmin => fminmax(x.is_nan(), y.is_nan(), a, b, x < y, x == y, true)
                .unwrap_or(CANONICAL_NAN_F64),
            Opcode::Fmax => fminmax(x.is_nan(), y.is_nan(), a, b, x > y, x == y, false)
                .unwrap_or(CANONICAL_NAN_F64),
            _ => return None,
        })
    }
}

/// `fmin`/`fmax` on bit patterns: a NaN operand yields the other one (`None` when both
/// are NaN); equal operands can only differ as `-0`/`+0`, where the sign bit decides.
/// `a_wins` says whether `a` is strictly preferred (smaller for min, larger for max).
fn fminmax(
    a_nan: bool,
    b_nan: bool,
    a: u64,
    b: u64,
    a_wins: bool,
    equal: bool,
    is_min: bool,
) -> Option<u64> {
    match (a_nan, b_nan) {
        (true, true) => None,
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ if equal => {
            // -0 has the sign bit; for min take the operand with it set, for max the one
            // without (a OR of the bit patterns for min, AND for max: the other bits are
            // equal, or both values are zeros).
            Some(if is_min { a | b } else { a & b })
        }
        _ => Some(if a_wins { a } else { b }),
    }
}

/// Evaluates a one-operand opcode: `arg` of type `from`, result of type `to` (the same as
/// `from` except for conversions). Returns `None` for an opcode that is not a unary
/// operation or types it does not accept.
pub fn unary(op: Opcode, from: Type, to: Type, a: u64) -> Option<u64> {
    let bits = from.bits();
    let r = match op {
        Opcode::Bnot => !a & from.mask(),
        Opcode::Ineg if from.is_wide_int() => a.wrapping_neg() & from.mask(),
        Opcode::Popcnt if from.is_wide_int() => u64::from(a.count_ones()),
        Opcode::Clz if from.is_wide_int() => u64::from(a.leading_zeros() - (64 - bits)),
        Opcode::Ctz if from.is_wide_int() => u64::from(a.trailing_zeros().min(bits)),
        Opcode::Fneg if from == Type::F32 => a ^ 0x8000_0000,
        Opcode::Fneg if from == Type::F64 => a ^ (1 << 63),
        Opcode::Fabs if from == Type::F32 => a & 0x7fff_ffff,
        Opcode::Fabs if from == Type::F64 => a & !(1 << 63),
        Opcode::Sqrt if from == Type::F32 => canon_f32(f32_of(a).sqrt()),
        Opcode::Sqrt if from == Type::F64 => canon_f64(f64_of(a).sqrt()),
        Opcode::Uextend if from.is_int() && to.is_int() => a & from.mask(),
        Opcode::Sextend if from.is_int() && to.is_int() => (sext(a, from) as u64) & to.mask(),
        Opcode::Ireduce if from.is_int() && to.is_int() => a & to.mask(),
        Opcode::Bitcast if from.bits() == to.bits() => a & to.mask(),
        Opcode::FcvtToSint if from.is_float() && to.is_int() => {
            // `as` truncates toward zero, saturates and maps NaN to 0; clamping the
            // saturated i64 to the target's range is the same as saturating to it.
            let x = if from == Type::F32 {
                f32_of(a) as i64
            } else {
                f64_of(a) as i64
            };
            let lo = sext(1 << (to.bits() - 1), to);
            let hi = (to.mask() >> 1) as i64;
            (x.clamp(lo, hi) as u64) & to.mask()
        }
        Opcode::FcvtToUint if from.is_float() && to.is_int() => {
            let x = if from == Type::F32 {
                f32_of(a) as u64
            } else {
                f64_of(a) as u64
            };
            x.min(to.mask())
        }
        // Rust's integer-to-float `as` rounds to nearest, ties to even.
        Opcode::FcvtFromSint if from.is_int() && to == Type::F32 => canon_f32(sext(a, from) as f32),
        Opcode::FcvtFromSint if from.is_int() && to == Type::F64 => canon_f64(sext(a, from) as f64),
        Opcode::FcvtFromUint if from.is_int() && to == Type::F32 => {
            canon_f32((a & from.mask()) as f32)
        }
        Opcode::FcvtFromUint if from.is_int() && to == Type::F64 => {
            canon_f64((a & from.mask()) as f64)
        }
        Opcode::Fpromote if from == Type::F32 && to == Type::F64 => canon_f64(f64::from(f32_of(a))),
        Opcode::Fdemote if from == Type::F64 && to == Type::F32 => canon_f32(f64_of(a) as f32),
        _ => return None,
    };
    Some(r)
}

/// `fma a, b, c` = `a * b + c` with a single rounding. Returns `None` for a non-float type.
pub fn fma(ty: Type, a: u64, b: u64, c: u64) -> Option<u64> {
    match ty {
        Type::F32 => Some(canon_f32(f32_of(a).mul_add(f32_of(b), f32_of(c)))),
        Type::F64 => Some(canon_f64(f64_of(a).mul_add(f64_of(b), f64_of(c)))),
        _ => None,
    }
}

/// Evaluates a three-operand opcode other than `select` on operands of type `ty` (all
/// three, and the result, have that type). Returns `None` for an opcode that is not such
/// an operation or a type it does not accept.
pub fn ternary(op: Opcode, ty: Type, a: u64, b: u64, c: u64) -> Option<u64> {
    match op {
        Opcode::Fma => fma(ty, a, b, c),
        Opcode::Fshl | Opcode::Fshr if ty.is_wide_int() => {
            let (bits, mask) = (ty.bits(), ty.mask());
            let (a, b) = (a & mask, b & mask);
            // The amount is taken modulo the width; by 0 the result is one operand whole
            // (a shift by the full width would be out of range).
            let n = (c & mask) % u64::from(bits);
            Some(match op {
                _ if n == 0 && op == Opcode::Fshl => a,
                _ if n == 0 => b,
                Opcode::Fshl => ((a << n) | (b >> (u64::from(bits) - n))) & mask,
                _ => ((b >> n) | (a << (u64::from(bits) - n))) & mask,
            })
        }
        _ => None,
    }
}

/// Integer comparison of two operands of type `ty`.
pub fn icmp(cc: IntCC, ty: Type, a: u64, b: u64) -> bool {
    let (sa, sb) = (sext(a, ty), sext(b, ty));
    let (a, b) = (a & ty.mask(), b & ty.mask());
    match cc {
        IntCC::Equal => a == b,
        IntCC::NotEqual => a != b,
        IntCC::SignedLessThan => sa < sb,
        IntCC::SignedLessThanOrEqual => sa <= sb,
        IntCC::SignedGreaterThan => sa > sb,
        IntCC::SignedGreaterThanOrEqual => sa >= sb,
        IntCC::UnsignedLessThan => a < b,
        IntCC::UnsignedLessThanOrEqual => a <= b,
        IntCC::UnsignedGreaterThan => a > b,
        IntCC::UnsignedGreaterThanOrEqual => a >= b,
    }
}

/// Float comparison of two operands of type `ty`: ordered conditions are false and
/// unordered ones true when either operand is NaN. Returns `None` for a non-float type.
pub fn fcmp(cc: FloatCC, ty: Type, a: u64, b: u64) -> Option<bool> {
    let (x, y) = match ty {
        Type::F32 => (f64::from(f32_of(a)), f64::from(f32_of(b))),
        Type::F64 => (f64_of(a), f64_of(b)),
        _ => return None,
    };
    let uno = x.is_nan() || y.is_nan();
    Some(match cc {
        FloatCC::Ordered => !uno,
        FloatCC::Unordered => uno,
        FloatCC::Equal => x == y,
        FloatCC::OrderedNotEqual => !uno && x != y,
        FloatCC::LessThan => x < y,
        FloatCC::LessThanOrEqual => x <= y,
        FloatCC::GreaterThan => x > y,
        FloatCC::GreaterThanOrEqual => x >= y,
        FloatCC::UnorderedOrEqual => uno || x == y,
        FloatCC::NotEqual => uno || x != y,
        FloatCC::UnorderedOrLessThan => uno || x < y,
        FloatCC::UnorderedOrLessThanOrEqual => uno || x <= y,
        FloatCC::UnorderedOrGreaterThan => uno || x > y,
        FloatCC::UnorderedOrGreaterThanOrEqual => uno || x >= y,
    })
}

/// The value an `atomic_rmw` stores: `old OP operand`, both of type `ty`.
pub fn atomic_rmw(op: AtomicRmwOp, ty: Type, old: u64, operand: u64) -> u64 {
    let (so, sx) = (sext(old, ty), sext(operand, ty));
    let r = match op {
        AtomicRmwOp::Add => old.wrapping_add(operand),
        AtomicRmwOp::Smin => so.min(sx) as u64,
        AtomicRmwOp::Smax => so.max(sx) as u64,
        AtomicRmwOp::Umin => old.min(operand),
        AtomicRmwOp::Umax => old.max(operand),
        AtomicRmwOp::And => old & operand,
        AtomicRmwOp::Or => old | operand,
        AtomicRmwOp::Xor => old ^ operand,
        AtomicRmwOp::Xchg => operand,
    };
    r & ty.mask()
}
