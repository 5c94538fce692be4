//! Tests of the reference interpreter: the scalar rules of every opcode at their edges,
//! memory, control flow, barriers, geometry, and the faults.

use super::ops::{self, binary, fcmp, icmp, unary};
use super::*;
use crate::condcodes::{AtomicRmwOp, Dim, FloatCC, IntCC};
use crate::function::{MemVarData, Param, Signature};
use crate::launch::{Launch, TypedValue};
use crate::write::{CANONICAL_NAN_F32, CANONICAL_NAN_F64};
use Opcode::*;
use Type::*;

// ---------------------------------------------------------------------------------------
// Scalar rules.

const M32: u64 = 0xffff_ffff;

fn b32(op: Opcode, a: i64, b: i64) -> i64 {
    ops::sext(
        binary(op, I32, a as u64 & M32, b as u64 & M32).unwrap(),
        I32,
    )
}

fn f32b(x: f32) -> u64 {
    u64::from(x.to_bits())
}

#[test]
fn integer_arithmetic_wraps() {
    assert_eq!(b32(Iadd, i32::MAX.into(), 1), i64::from(i32::MIN));
    assert_eq!(b32(Isub, i32::MIN.into(), 1), i64::from(i32::MAX));
    assert_eq!(b32(Imul, 0x10000, 0x10000), 0);
    assert_eq!(binary(Iadd, I8, 0xff, 1), Some(0));
    assert_eq!(binary(Iadd, I64, u64::MAX, 2), Some(1));
    assert_eq!(unary(Ineg, I16, I16, 0x8000), Some(0x8000));
    assert_eq!(unary(Ineg, I32, I32, 1), Some(M32));
    assert_eq!(unary(Bnot, I8, I8, 0x0f), Some(0xf0));
    assert_eq!(unary(Bnot, I1, I1, 1), Some(0));
    assert_eq!(binary(Bxor, I1, 1, 1), Some(0));
    assert_eq!(binary(Bor, I1, 0, 1), Some(1));
    // Arithmetic is not defined on i1.
    assert_eq!(binary(Iadd, I1, 1, 1), None);
    assert_eq!(unary(Ineg, I1, I1, 1), None);
}

#[test]
fn mulhi() {
    assert_eq!(b32(Smulhi, -1, -1), 0);
    assert_eq!(b32(Smulhi, i32::MIN.into(), i32::MIN.into()), 0x4000_0000);
    assert_eq!(b32(Smulhi, -2, 3), -1);
    assert_eq!(binary(Umulhi, I32, M32, M32), Some(0xffff_fffe));
    assert_eq!(binary(Umulhi, I64, u64::MAX, u64::MAX), Some(u64::MAX - 1));
    assert_eq!(binary(Smulhi, I64, u64::MAX, u64::MAX), Some(0));
    assert_eq!(binary(Umulhi, I8, 0x80, 0x80), Some(0x40));
}

#[test]
fn division_edges() {
    assert_eq!(b32(Sdiv, 7, 0), -1);
    assert_eq!(b32(Srem, 7, 0), 7);
    assert_eq!(b32(Sdiv, i32::MIN.into(), -1), i64::from(i32::MIN));
    assert_eq!(b32(Srem, i32::MIN.into(), -1), 0);
    assert_eq!(b32(Sdiv, -7, 2), -3);
    assert_eq!(b32(Srem, -7, 2), -1);
    assert_eq!(b32(Srem, 7, -2), 1);
    assert_eq!(binary(Udiv, I32, 7, 0), Some(M32));
    assert_eq!(binary(Urem, I32, 7, 0), Some(7));
    assert_eq!(binary(Udiv, I32, M32, 2), Some(0x7fff_ffff));
    assert_eq!(binary(Sdiv, I64, 1 << 63, u64::MAX), Some(1 << 63));
    assert_eq!(binary(Srem, I64, 1 << 63, u64::MAX), Some(0));
    assert_eq!(binary(Sdiv, I64, 5, 0), Some(u64::MAX));
    assert_eq!(binary(Sdiv, I8, 0x80, 0xff), Some(0x80));
    assert_eq!(binary(Srem, I8, 0x80, 0xff), Some(0));
    assert_eq!(binary(Udiv, I8, 5, 0), Some(0xff));
}

#[test]
fn min_max() {
    assert_eq!(b32(Smin, -1, 1), -1);
    assert_eq!(b32(Smax, -1, 1), 1);
    assert_eq!(binary(Umin, I32, M32, 1), Some(1));
    assert_eq!(binary(Umax, I32, M32, 1), Some(M32));
    assert_eq!(binary(Smin, I16, 0x8000, 0x7fff), Some(0x8000));
}

#[test]
fn shifts_clamp() {
    assert_eq!(binary(Ishl, I32, 1, 31), Some(0x8000_0000));
    assert_eq!(binary(Ishl, I32, 1, 32), Some(0));
    assert_eq!(binary(Ishl, I32, 1, M32), Some(0));
    assert_eq!(binary(Ushr, I32, 0x8000_0000, 31), Some(1));
    assert_eq!(binary(Ushr, I32, 0x8000_0000, 32), Some(0));
    assert_eq!(binary(Sshr, I32, 0x8000_0000, 31), Some(M32));
    assert_eq!(binary(Sshr, I32, 0x8000_0000, 32), Some(M32));
    assert_eq!(binary(Sshr, I32, 0x8000_0000, 1000), Some(M32));
    assert_eq!(binary(Sshr, I32, 0x4000_0000, 1000), Some(0));
    // The amount is unsigned: -1 is a huge amount.
    assert_eq!(binary(Ishl, I8, 1, 0xff), Some(0));
    assert_eq!(binary(Sshr, I8, 0x80, 0xff), Some(0xff));
    assert_eq!(binary(Ishl, I8, 0xff, 4), Some(0xf0));
    assert_eq!(binary(Ishl, I64, 1, 63), Some(1 << 63));
    assert_eq!(binary(Ishl, I64, 1, 64), Some(0));
    assert_eq!(binary(Sshr, I64, 1 << 63, 64), Some(u64::MAX));
    assert_eq!(binary(Ushr, I64, u64::MAX, u64::MAX), Some(0));
}

#[test]
fn bit_counts() {
    for ty in [I8, I16, I32, I64] {
        let w = u64::from(ty.bits());
        assert_eq!(unary(Clz, ty, ty, 0), Some(w));
        assert_eq!(unary(Ctz, ty, ty, 0), Some(w));
        assert_eq!(unary(Popcnt, ty, ty, 0), Some(0));
        assert_eq!(unary(Popcnt, ty, ty, ty.mask()), Some(w));
        assert_eq!(unary(Clz, ty, ty, 1), Some(w - 1));
        assert_eq!(unary(Ctz, ty, ty, 1 << (w - 1)), Some(w - 1));
        assert_eq!(unary(Clz, ty, ty, ty.mask()), Some(0));
    }
    assert_eq!(unary(Clz, I1, I1, 0), None);
}

#[test]
fn comparisons() {
    assert!(icmp(IntCC::SignedLessThan, I32, M32, 0));
    assert!(!icmp(IntCC::UnsignedLessThan, I32, M32, 0));
    assert!(icmp(IntCC::UnsignedGreaterThanOrEqual, I8, 0x80, 0x7f));
    assert!(icmp(IntCC::SignedLessThanOrEqual, I8, 0x80, 0x7f));
    assert!(icmp(IntCC::Equal, I1, 1, 1));
    let nan = f32b(f32::NAN);
    let one = f32b(1.0);
    for cc in FloatCC::ALL {
        let unordered = matches!(
            cc,
            FloatCC::Unordered
                | FloatCC::UnorderedOrEqual
                | FloatCC::NotEqual
                | FloatCC::UnorderedOrLessThan
                | FloatCC::UnorderedOrLessThanOrEqual
                | FloatCC::UnorderedOrGreaterThan
                | FloatCC::UnorderedOrGreaterThanOrEqual
        );
        assert_eq!(fcmp(*cc, F32, nan, one), Some(unordered), "{cc}");
        assert_eq!(fcmp(*cc, F32, one, nan), Some(unordered), "{cc}");
    }
    assert_eq!(fcmp(FloatCC::Equal, F32, f32b(0.0), f32b(-0.0)), Some(true));
    assert_eq!(
        fcmp(FloatCC::LessThan, F64, (-1f64).to_bits(), 0),
        Some(true)
    );
    assert_eq!(fcmp(FloatCC::OrderedNotEqual, F64, 0, 0), Some(false));
    assert_eq!(fcmp(FloatCC::Ordered, F64, 0, 0), Some(true));
    assert_eq!(fcmp(FloatCC::Equal, I32, 0, 0), None);
}

#[test]
fn float_arithmetic_canonical_nan() {
    let cn = u64::from(CANONICAL_NAN_F32);
    let inf = f32b(f32::INFINITY);
    assert_eq!(binary(Fadd, F32, f32b(1.5), f32b(2.25)), Some(f32b(3.75)));
    assert_eq!(binary(Fsub, F32, inf, inf), Some(cn));
    assert_eq!(binary(Fmul, F32, 0, inf), Some(cn));
    assert_eq!(binary(Fdiv, F32, 0, 0), Some(cn));
    assert_eq!(binary(Fdiv, F32, f32b(1.0), 0), Some(inf));
    assert_eq!(
        binary(Fdiv, F32, f32b(1.0), f32b(-0.0)),
        Some(f32b(f32::NEG_INFINITY))
    );
    // A NaN input with a payload still gives the canonical NaN.
    assert_eq!(binary(Fadd, F32, 0x7fc0_0001, f32b(1.0)), Some(cn));
    assert_eq!(
        binary(Fadd, F64, 0xfff8_0000_0000_0000, 0),
        Some(CANONICAL_NAN_F64)
    );
    assert_eq!(unary(Sqrt, F32, F32, f32b(-1.0)), Some(cn));
    assert_eq!(unary(Sqrt, F32, F32, f32b(-0.0)), Some(f32b(-0.0)));
    assert_eq!(
        unary(Sqrt, F64, F64, 2f64.to_bits()),
        Some(2f64.sqrt().to_bits())
    );
    // Round to nearest even: 1 + 2^-24 rounds to 1 in f32.
    assert_eq!(
        binary(Fadd, F32, f32b(1.0), f32b(f32::EPSILON / 2.0)),
        Some(f32b(1.0))
    );
    // fneg and fabs move NaN bits exactly.
    assert_eq!(unary(Fneg, F32, F32, 0x7fc0_0001), Some(0xffc0_0001));
    assert_eq!(unary(Fabs, F32, F32, 0xffc0_0001), Some(0x7fc0_0001));
    assert_eq!(unary(Fneg, F64, F64, 0), Some(1 << 63));
    assert_eq!(
        unary(Fabs, F64, F64, (-2f64).to_bits()),
        Some(2f64.to_bits())
    );
}

#[test]
fn fma_single_rounding() {
    // a*b = 1 - 2^-46 exactly; rounded separately it would be 1 and the sum 0.
    let a = 1.0 + f32::EPSILON;
    let b = 1.0 - f32::EPSILON;
    let got = ops::fma(F32, f32b(a), f32b(b), f32b(-1.0)).unwrap();
    assert_eq!(f32::from_bits(got as u32), -(f32::EPSILON * f32::EPSILON));
    let inf = f32b(f32::INFINITY);
    assert_eq!(ops::fma(F32, inf, 0, 0), Some(u64::from(CANONICAL_NAN_F32)));
    assert_eq!(
        ops::fma(F64, 2f64.to_bits(), 3f64.to_bits(), 1f64.to_bits()),
        Some(7f64.to_bits())
    );
    assert_eq!(ops::fma(I32, 1, 1, 1), None);
}

#[test]
fn fmin_fmax() {
    let cn = u64::from(CANONICAL_NAN_F32);
    let (pz, nz) = (f32b(0.0), f32b(-0.0));
    let (one, two) = (f32b(1.0), f32b(2.0));
    let nan = 0x7fc0_0001;
    assert_eq!(binary(Fmin, F32, one, two), Some(one));
    assert_eq!(binary(Fmax, F32, one, two), Some(two));
    assert_eq!(binary(Fmin, F32, nan, two), Some(two));
    assert_eq!(binary(Fmin, F32, two, nan), Some(two));
    assert_eq!(binary(Fmax, F32, nan, two), Some(two));
    assert_eq!(binary(Fmax, F32, two, nan), Some(two));
    assert_eq!(binary(Fmin, F32, nan, nan), Some(cn));
    assert_eq!(binary(Fmax, F32, nan, cn), Some(cn));
    assert_eq!(binary(Fmin, F32, pz, nz), Some(nz));
    assert_eq!(binary(Fmin, F32, nz, pz), Some(nz));
    assert_eq!(binary(Fmax, F32, pz, nz), Some(pz));
    assert_eq!(binary(Fmax, F32, nz, pz), Some(pz));
    assert_eq!(binary(Fmin, F32, nz, nz), Some(nz));
    let (pz, nz) = (0f64.to_bits(), (-0f64).to_bits());
    assert_eq!(binary(Fmin, F64, pz, nz), Some(nz));
    assert_eq!(binary(Fmax, F64, nz, pz), Some(pz));
    assert_eq!(
        binary(Fmin, F64, CANONICAL_NAN_F64, 0x7ff8_0000_0000_0000),
        Some(CANONICAL_NAN_F64)
    );
    assert_eq!(
        binary(Fmin, F64, f64::NEG_INFINITY.to_bits(), 0),
        Some(f64::NEG_INFINITY.to_bits())
    );
}

#[test]
fn float_to_int() {
    let s = |from: Type, to: Type, x: u64| unary(FcvtToSint, from, to, x).unwrap();
    let u = |from: Type, to: Type, x: u64| unary(FcvtToUint, from, to, x).unwrap();
    assert_eq!(s(F32, I32, f32b(-1.9)), M32); // -1, toward zero
    assert_eq!(s(F32, I32, f32b(1.9)), 1);
    assert_eq!(s(F32, I32, f32b(f32::NAN)), 0);
    assert_eq!(s(F32, I32, f32b(3e9)), 0x7fff_ffff);
    assert_eq!(s(F32, I32, f32b(-3e9)), 0x8000_0000);
    assert_eq!(s(F32, I32, f32b(f32::INFINITY)), 0x7fff_ffff);
    assert_eq!(s(F32, I8, f32b(200.0)), 0x7f);
    assert_eq!(s(F32, I8, f32b(-200.0)), 0x80);
    assert_eq!(s(F32, I16, f32b(-5.5)), 0xfffb);
    assert_eq!(s(F64, I64, f64::MAX.to_bits()), 0x7fff_ffff_ffff_ffff);
    assert_eq!(s(F64, I64, f64::MIN.to_bits()), 1 << 63);
    assert_eq!(s(F64, I64, f64::NAN.to_bits()), 0);
    assert_eq!(u(F32, I32, f32b(-1.0)), 0);
    assert_eq!(u(F32, I32, f32b(-0.5)), 0);
    assert_eq!(u(F32, I32, f32b(5e9)), M32);
    assert_eq!(u(F32, I32, f32b(f32::NAN)), 0);
    assert_eq!(u(F32, I8, f32b(255.9)), 255);
    assert_eq!(u(F32, I8, f32b(256.0)), 255);
    assert_eq!(u(F64, I64, 1e30f64.to_bits()), u64::MAX);
    assert_eq!(u(F64, I64, f64::NEG_INFINITY.to_bits()), 0);
    assert_eq!(unary(FcvtToSint, I32, I32, 0), None);
}

#[test]
fn int_to_float_and_float_conversions() {
    let fs = |from: Type, to: Type, x: u64| unary(FcvtFromSint, from, to, x).unwrap();
    let fu = |from: Type, to: Type, x: u64| unary(FcvtFromUint, from, to, x).unwrap();
    assert_eq!(fs(I32, F32, M32), f32b(-1.0));
    assert_eq!(fu(I32, F32, M32), f32b(4294967296.0));
    assert_eq!(fs(I8, F64, 0x80), (-128f64).to_bits());
    // 2^24 + 1 is halfway between two f32s: ties to even gives 2^24.
    assert_eq!(fs(I32, F32, (1 << 24) + 1), f32b(16777216.0));
    assert_eq!(fs(I32, F32, (1 << 24) + 3), f32b(16777220.0));
    assert_eq!(fu(I64, F64, u64::MAX), 18446744073709551616f64.to_bits());
    assert_eq!(fs(I64, F32, 1 << 63), f32b(-9223372036854775808.0));
    assert_eq!(
        unary(Fpromote, F32, F64, f32b(0.1)),
        Some(f64::from(0.1f32).to_bits())
    );
    assert_eq!(
        unary(Fpromote, F32, F64, 0x7fc0_0001),
        Some(CANONICAL_NAN_F64)
    );
    assert_eq!(unary(Fdemote, F64, F32, 0.1f64.to_bits()), Some(f32b(0.1)));
    assert_eq!(
        unary(Fdemote, F64, F32, 1e300f64.to_bits()),
        Some(f32b(f32::INFINITY))
    );
    assert_eq!(
        unary(Fdemote, F64, F32, CANONICAL_NAN_F64),
        Some(u64::from(CANONICAL_NAN_F32))
    );
    assert_eq!(unary(Fpromote, F64, F64, 0), None);
}

#[test]
fn int_conversions_and_bitcast() {
    assert_eq!(unary(Uextend, I8, I32, 0x80), Some(0x80));
    assert_eq!(unary(Sextend, I8, I32, 0x80), Some(0xffff_ff80));
    assert_eq!(unary(Sextend, I1, I32, 1), Some(M32));
    assert_eq!(unary(Sextend, I1, I64, 1), Some(u64::MAX));
    assert_eq!(unary(Uextend, I1, I8, 1), Some(1));
    assert_eq!(unary(Sextend, I32, I64, 0x7fff_ffff), Some(0x7fff_ffff));
    assert_eq!(unary(Ireduce, I64, I32, 0x1_2345_6789), Some(0x2345_6789));
    assert_eq!(unary(Ireduce, I32, I1, 2), Some(0));
    assert_eq!(unary(Ireduce, I32, I1, 3), Some(1));
    assert_eq!(unary(Bitcast, F32, I32, 0x7fc0_0001), Some(0x7fc0_0001));
    assert_eq!(unary(Bitcast, I64, F64, 1 << 63), Some(1 << 63));
    assert_eq!(unary(Bitcast, I32, I32, 5), Some(5));
    assert_eq!(unary(Bitcast, I32, F64, 5), None);
}

#[test]
fn atomic_ops() {
    use AtomicRmwOp::*;
    assert_eq!(ops::atomic_rmw(Add, I32, M32, 2), 1);
    assert_eq!(ops::atomic_rmw(Smin, I32, M32, 1), M32);
    assert_eq!(ops::atomic_rmw(Smax, I32, M32, 1), 1);
    assert_eq!(ops::atomic_rmw(Umin, I32, M32, 1), 1);
    assert_eq!(ops::atomic_rmw(Umax, I32, M32, 1), M32);
    assert_eq!(ops::atomic_rmw(And, I64, 0b1100, 0b1010), 0b1000);
    assert_eq!(ops::atomic_rmw(Or, I64, 0b1100, 0b1010), 0b1110);
    assert_eq!(ops::atomic_rmw(Xor, I64, 0b1100, 0b1010), 0b0110);
    assert_eq!(ops::atomic_rmw(Xchg, I64, 1, 2), 2);
    assert_eq!(ops::atomic_rmw(Add, I64, u64::MAX, 1), 0);
}

// ---------------------------------------------------------------------------------------
// A small function builder for the tests (the crate's builder is not needed for this).

struct Fb {
    f: Function,
    cur: Block,
    line: u32,
}

impl Fb {
    fn new(params: &[(&str, Type)]) -> Fb {
        let mut f = Function::with_name_signature(
            "k",
            Signature {
                params: params.iter().map(|&(n, t)| Param::new(n, t)).collect(),
            },
        );
        let entry = f.dfg.make_block();
        f.layout.append_block(entry);
        for &(_, t) in params {
            f.dfg.append_block_param(entry, t);
        }
        Fb {
            f,
            cur: entry,
            line: 1,
        }
    }

    fn param(&self, i: usize) -> Value {
        let entry = self.f.entry_block().unwrap();
        self.f.dfg.block_params(entry)[i]
    }

    fn block(&mut self, params: &[Type]) -> (Block, Vec<Value>) {
        let b = self.f.dfg.make_block();
        self.f.layout.append_block(b);
        let vs = params
            .iter()
            .map(|&t| self.f.dfg.append_block_param(b, t))
            .collect();
        (b, vs)
    }

    fn switch(&mut self, b: Block) {
        self.cur = b;
    }

    fn ins(&mut self, data: InstructionData, ty: Option<Type>) -> Option<Value> {
        let inst = self.f.dfg.make_inst(data, ty);
        self.f.layout.append_inst(inst, self.cur);
        self.line += 1;
        self.f.srclocs[inst] = SourceLoc::new(self.line, 5);
        self.f.dfg.inst_result(inst)
    }

    fn iconst(&mut self, ty: Type, imm: i64) -> Value {
        self.ins(
            InstructionData::UnaryImm {
                opcode: Iconst,
                imm: imm as u64 & ty.mask(),
            },
            Some(ty),
        )
        .unwrap()
    }

    fn bin(&mut self, opcode: Opcode, a: Value, b: Value) -> Value {
        let ty = self.f.dfg.value_type(a);
        self.ins(
            InstructionData::Binary {
                opcode,
                args: [a, b],
            },
            Some(ty),
        )
        .unwrap()
    }

    fn un(&mut self, opcode: Opcode, a: Value, ty: Type) -> Value {
        self.ins(InstructionData::Unary { opcode, arg: a }, Some(ty))
            .unwrap()
    }

    fn geo(&mut self, opcode: Opcode, dim: Dim) -> Value {
        self.ins(InstructionData::Geometry { opcode, dim }, Some(I32))
            .unwrap()
    }

    fn icmp(&mut self, cond: IntCC, a: Value, b: Value) -> Value {
        self.ins(
            InstructionData::IntCompare {
                opcode: Icmp,
                cond,
                args: [a, b],
            },
            Some(I1),
        )
        .unwrap()
    }

    fn load(&mut self, ty: Type, space: AddrSpace, addr: Value, offset: i32) -> Value {
        self.ins(
            InstructionData::Load {
                opcode: Load,
                space,
                arg: addr,
                offset,
            },
            Some(ty),
        )
        .unwrap()
    }

    fn store(&mut self, space: AddrSpace, v: Value, addr: Value, offset: i32) {
        self.ins(
            InstructionData::Store {
                opcode: Store,
                space,
                args: [v, addr],
                offset,
            },
            None,
        );
    }

    fn nullary(&mut self, opcode: Opcode) -> Option<Value> {
        let ty = (opcode == LaneId).then_some(I32);
        self.ins(InstructionData::Nullary { opcode }, ty)
    }

    fn jump(&mut self, b: Block, args: &[Value]) {
        self.ins(
            InstructionData::Jump {
                opcode: Jump,
                dest: BlockCall::new(b, args),
            },
            None,
        );
    }

    fn brif(&mut self, c: Value, t: (Block, &[Value]), e: (Block, &[Value])) {
        self.ins(
            InstructionData::Brif {
                opcode: Brif,
                arg: c,
                dests: [BlockCall::new(t.0, t.1), BlockCall::new(e.0, e.1)],
            },
            None,
        );
    }

    fn ret(&mut self) {
        self.nullary(Return);
    }

    /// `&out[index]` for an i32 buffer parameter `out`.
    fn elem_addr(&mut self, out: Value, index: Value, size: i64) -> Value {
        let wide = self.un(Uextend, index, I64);
        let sz = self.iconst(I64, size);
        let off = self.bin(Imul, wide, sz);
        self.bin(Iadd, out, off)
    }

    /// The linear thread id across the grid (x only).
    fn global_x(&mut self) -> Value {
        let t = self.geo(ThreadId, Dim::X);
        let b = self.geo(BlockId, Dim::X);
        let d = self.geo(BlockDim, Dim::X);
        let bd = self.bin(Imul, b, d);
        self.bin(Iadd, bd, t)
    }
}

fn run_launch(f: &Function, launch: &Launch) -> Result<(PreparedLaunch, InterpStats), InterpError> {
    run_cfg(f, launch, &InterpConfig::default())
}

fn run_cfg(
    f: &Function,
    launch: &Launch,
    cfg: &InterpConfig,
) -> Result<(PreparedLaunch, InterpStats), InterpError> {
    if let Err(e) = crate::verifier::verify_function(f) {
        // The malformed-kernel tests run unverified functions on purpose.
        assert!(
            f.name.starts_with("bad"),
            "test kernel does not verify: {e}"
        );
    }
    let mut p = launch.prepare(f).expect("launch binds");
    let stats = run(f, &mut p, cfg)?;
    Ok((p, stats))
}

fn ints(p: &PreparedLaunch, name: &str) -> Vec<i64> {
    p.memory
        .buffer_values(name)
        .unwrap()
        .into_iter()
        .map(|v| match v {
            TypedValue::Signed(i) => i,
            TypedValue::Unsigned(u) => u as i64,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn launch(grid: &str, block: &str, buffers: &[&str]) -> Launch {
    let mut l = Launch::default();
    l.set_grid(grid).unwrap();
    l.set_block(block).unwrap();
    for b in buffers {
        l.add_buffer(b).unwrap();
    }
    l
}

// ---------------------------------------------------------------------------------------
// Whole kernels.

/// out[gid] = gid * 2 + n
#[test]
fn geometry_and_arithmetic() {
    let mut b = Fb::new(&[("out", I64), ("n", I32)]);
    let (out, n) = (b.param(0), b.param(1));
    let gid = b.global_x();
    let two = b.iconst(I32, 2);
    let g2 = b.bin(Imul, gid, two);
    let v = b.bin(Iadd, g2, n);
    let addr = b.elem_addr(out, gid, 4);
    b.store(AddrSpace::Global, v, addr, 0);
    b.ret();
    let mut l = launch("2", "4", &["out=i32[8]"]);
    l.add_arg("n=100").unwrap();
    let (p, stats) = run_launch(&b.f, &l).unwrap();
    assert_eq!(
        ints(&p, "out"),
        vec![100, 102, 104, 106, 108, 110, 112, 114]
    );
    assert_eq!(stats.threads, 8);
    assert_eq!(stats.thread_blocks, 2);
    assert_eq!(stats.insts_executed, 8 * b.f.num_placed_insts() as u64);
    assert_eq!(stats.block_execs[b.f.entry_block().unwrap()], 8);
}

/// Stores every geometry read of a 3-D launch, one i32 each, per thread.
#[test]
fn three_d_geometry_and_lane_id() {
    let mut b = Fb::new(&[("out", I64)]);
    let out = b.param(0);
    let mut reads = Vec::new();
    for op in [ThreadId, BlockId, BlockDim, GridDim] {
        for d in [Dim::X, Dim::Y, Dim::Z] {
            reads.push(b.geo(op, d));
        }
    }
    reads.push(b.nullary(LaneId).unwrap());
    // slot = ((((bz*gy+by)*gx+bx)*bdz + tz)*bdy + ty)*bdx + tx
    let [tx, ty, tz, bx, by, bz, bdx, bdy, bdz, gx, gy, _gz, _lane] =
        <[Value; 13]>::try_from(reads.clone()).unwrap();
    let mut s = bz;
    for (dim, idx) in [(gy, by), (gx, bx), (bdz, tz), (bdy, ty), (bdx, tx)] {
        let m = b.bin(Imul, s, dim);
        s = b.bin(Iadd, m, idx);
    }
    let k = b.iconst(I32, 13);
    let slot = b.bin(Imul, s, k);
    for (i, &r) in reads.iter().enumerate() {
        let a = b.elem_addr(out, slot, 4);
        b.store(AddrSpace::Global, r, a, 4 * i as i32);
    }
    b.ret();
    let l = launch("2,1,2", "3,2,2", &["out=i32[624]"]);
    let cfg = InterpConfig {
        warp_width: 5,
        ..Default::default()
    };
    let (p, _) = run_cfg(&b.f, &l, &cfg).unwrap();
    let v = ints(&p, "out");
    let mut slot = 0;
    for bz in 0..2 {
        for bx in 0..2 {
            for tz in 0..2 {
                for ty in 0..2 {
                    for tx in 0..3 {
                        let linear = tx + ty * 3 + tz * 6;
                        let want = [tx, ty, tz, bx, 0, bz, 3, 2, 2, 2, 1, 2, linear % 5];
                        assert_eq!(&v[slot * 13..slot * 13 + 13], &want, "slot {slot}");
                        slot += 1;
                    }
                }
            }
        }
    }
}

/// A loop with block arguments: out[0] = sum 0..n, and the arguments swap in a
/// parallel copy: jump block1(b, a) must not see the new a when reading b.
#[test]
fn loops_and_parallel_copy() {
    let mut b = Fb::new(&[("out", I64), ("n", I32)]);
    let (out, n) = (b.param(0), b.param(1));
    let zero = b.iconst(I32, 0);
    let one = b.iconst(I32, 1);
    let (head, hp) = b.block(&[I32, I32, I32, I32]);
    let (exit, _) = b.block(&[]);
    b.jump(head, &[zero, zero, zero, one]);
    b.switch(head);
    let (i, acc, x, y) = (hp[0], hp[1], hp[2], hp[3]);
    let acc2 = b.bin(Iadd, acc, i);
    let i2 = b.bin(Iadd, i, one);
    let more = b.icmp(IntCC::SignedLessThan, i2, n);
    b.brif(more, (head, &[i2, acc2, y, x]), (exit, &[]));
    b.switch(exit);
    b.store(AddrSpace::Global, acc2, out, 0);
    b.store(AddrSpace::Global, x, out, 4);
    b.store(AddrSpace::Global, y, out, 8);
    b.ret();
    let mut l = launch("1", "1", &["out=i32[3]"]);
    l.add_arg("n=10").unwrap();
    let (p, stats) = run_launch(&b.f, &l).unwrap();
    // After 10 iterations the swap has happened 9 times: (x, y) = (1, 0).
    assert_eq!(ints(&p, "out"), vec![45, 1, 0]);
    assert_eq!(stats.block_execs[head], 10);
    assert_eq!(stats.block_execs[exit], 1);
}

/// br_table: index read as unsigned i32; out of range (including "negative") -> default.
#[test]
fn br_table_out_of_range() {
    let mut b = Fb::new(&[("out", I64), ("idx", I64)]);
    let (out, idx) = (b.param(0), b.param(1));
    let t = b.geo(ThreadId, Dim::X);
    let a = b.elem_addr(idx, t, 4);
    let i = b.load(I32, AddrSpace::Global, a, 0);
    let (dflt, dp) = b.block(&[I32]);
    let (t0, _) = b.block(&[]);
    let (t1, _) = b.block(&[]);
    let (done, donep) = b.block(&[I32]);
    let c7 = b.iconst(I32, 7);
    b.ins(
        InstructionData::BrTable {
            opcode: BrTable,
            arg: i,
            dests: vec![
                BlockCall::new(dflt, [c7]),
                BlockCall::new(t0, []),
                BlockCall::new(t1, []),
            ],
        },
        None,
    );
    b.switch(dflt);
    b.jump(done, &[dp[0]]);
    b.switch(t0);
    let c10 = b.iconst(I32, 10);
    b.jump(done, &[c10]);
    b.switch(t1);
    let c11 = b.iconst(I32, 11);
    b.jump(done, &[c11]);
    b.switch(done);
    let oa = b.elem_addr(out, t, 4);
    b.store(AddrSpace::Global, donep[0], oa, 0);
    b.ret();
    let l = launch(
        "1",
        "5",
        &["out=i32[5]", "idx=i32:values:0,1,2,-1,0x7fffffff"],
    );
    let (p, _) = run_launch(&b.f, &l).unwrap();
    assert_eq!(ints(&p, "out"), vec![10, 11, 7, 7, 7]);
}

/// i1 values occupy one byte: store writes 0 or 1, load reads "byte != 0".
#[test]
fn i1_memory() {
    let mut b = Fb::new(&[("out", I64)]);
    let out = b.param(0);
    let one = b.iconst(I32, 1);
    let two = b.iconst(I32, 2);
    let t = b.icmp(IntCC::SignedLessThan, one, two);
    b.store(AddrSpace::Global, t, out, 0);
    // out[1] holds 0x40 from the launch; it loads as true.
    let l1 = b.load(I1, AddrSpace::Global, out, 1);
    let w = b.un(Uextend, l1, I8);
    b.store(AddrSpace::Global, w, out, 2);
    let l2 = b.load(I1, AddrSpace::Global, out, 3);
    let w2 = b.un(Sextend, l2, I8);
    b.store(AddrSpace::Global, w2, out, 3);
    b.ret();
    let l = launch("1", "1", &["out=u8:values:9,0x40,0,0"]);
    let (p, _) = run_launch(&b.f, &l).unwrap();
    assert_eq!(ints(&p, "out"), vec![1, 0x40, 1, 0]);
}

/// Shared memory is per block and zeroed, local memory per thread and zeroed; barriers
/// order the block's accesses: each thread writes its slot, then reads its neighbour's.
#[test]
fn shared_local_and_barrier() {
    let mut b = Fb::new(&[("out", I64)]);
    let out = b.param(0);
    let smem = b.f.shared_vars.push(MemVarData {
        size: 64,
        align: 16,
    });
    let _pad = b.f.local_vars.push(MemVarData { size: 4, align: 4 });
    let lmem = b.f.local_vars.push(MemVarData { size: 8, align: 8 });
    let base = b
        .ins(
            InstructionData::SharedAddr {
                opcode: SharedAddr,
                var: smem,
            },
            Some(I32),
        )
        .unwrap();
    let laddr = b
        .ins(
            InstructionData::LocalAddr {
                opcode: LocalAddr,
                var: lmem,
            },
            Some(I32),
        )
        .unwrap();
    let t = b.geo(ThreadId, Dim::X);
    let four = b.iconst(I32, 4);
    let toff = b.bin(Imul, t, four);
    let slot = b.bin(Iadd, base, toff);
    // Shared memory starts zeroed in every block: read before writing.
    let before = b.load(I32, AddrSpace::Shared, slot, 0);
    let bid = b.geo(BlockId, Dim::X);
    let hundred = b.iconst(I32, 100);
    let tag0 = b.bin(Imul, bid, hundred);
    let tag = b.bin(Iadd, tag0, t);
    let tagb = b.bin(Iadd, tag, before);
    b.store(AddrSpace::Shared, tagb, slot, 0);
    // Local memory is per thread: each writes its own id and reads it back later.
    let lbefore = b.load(I64, AddrSpace::Local, laddr, 0);
    let t64 = b.un(Uextend, t, I64);
    let tl = b.bin(Iadd, t64, lbefore);
    b.store(AddrSpace::Local, tl, laddr, 0);
    b.nullary(Barrier);
    let one = b.iconst(I32, 1);
    let t1 = b.bin(Iadd, t, one);
    let bd = b.geo(BlockDim, Dim::X);
    let nb = b.bin(Urem, t1, bd);
    let noff = b.bin(Imul, nb, four);
    let nslot = b.bin(Iadd, base, noff);
    let neighbour = b.load(I32, AddrSpace::Shared, nslot, 0);
    let mine = b.load(I64, AddrSpace::Local, laddr, 0);
    let mine32 = b.un(Ireduce, mine, I32);
    let thousand = b.iconst(I32, 1000);
    let m = b.bin(Imul, mine32, thousand);
    let v = b.bin(Iadd, m, neighbour);
    let gid = b.global_x();
    let oa = b.elem_addr(out, gid, 4);
    b.store(AddrSpace::Global, v, oa, 0);
    b.ret();
    let l = launch("2", "4", &["out=i32[8]"]);
    let (p, stats) = run_launch(&b.f, &l).unwrap();
    assert_eq!(
        ints(&p, "out"),
        vec![1, 1002, 2003, 3000, 101, 1102, 2103, 3100]
    );
    assert_eq!(stats.barriers, 2);
}

/// Atomics are sequentially consistent and return the old value; every thread adds 1 to
/// a counter and records the old value, so the old values are a permutation of 0..n.
#[test]
fn atomics() {
    let mut b = Fb::new(&[("out", I64), ("ctr", I64)]);
    let (out, ctr) = (b.param(0), b.param(1));
    let one = b.iconst(I32, 1);
    let old = b
        .ins(
            InstructionData::AtomicRmw {
                opcode: AtomicRmw,
                op: AtomicRmwOp::Add,
                space: AddrSpace::Global,
                args: [ctr, one],
                offset: 0,
            },
            Some(I32),
        )
        .unwrap();
    let gid = b.global_x();
    let oa = b.elem_addr(out, gid, 4);
    b.store(AddrSpace::Global, old, oa, 0);
    // cas on ctr+8 (i64): only the thread that sees 0 swaps in its gid+1.
    let zero = b.iconst(I64, 0);
    let g64 = b.un(Uextend, gid, I64);
    let one64 = b.iconst(I64, 1);
    let g1 = b.bin(Iadd, g64, one64);
    b.ins(
        InstructionData::AtomicCas {
            opcode: AtomicCas,
            space: AddrSpace::Global,
            args: [ctr, zero, g1],
            offset: 8,
        },
        Some(I64),
    );
    // atomic smax on shared memory, then thread 0 publishes it after a barrier.
    let s = b.f.shared_vars.push(MemVarData { size: 4, align: 4 });
    let sa = b
        .ins(
            InstructionData::SharedAddr {
                opcode: SharedAddr,
                var: s,
            },
            Some(I32),
        )
        .unwrap();
    let neg = b.bin(Isub, zero, g64);
    let neg32 = b.un(Ireduce, neg, I32);
    b.ins(
        InstructionData::AtomicRmw {
            opcode: AtomicRmw,
            op: AtomicRmwOp::Smin,
            space: AddrSpace::Shared,
            args: [sa, neg32],
            offset: 0,
        },
        Some(I32),
    );
    b.nullary(Barrier);
    let m = b.load(I32, AddrSpace::Shared, sa, 0);
    b.store(AddrSpace::Global, m, ctr, 4);
    b.ret();
    let l = launch("2", "8", &["out=i32[16]", "ctr=i32[4]"]);
    let (p, _) = run_launch(&b.f, &l).unwrap();
    let mut olds = ints(&p, "out");
    olds.sort();
    assert_eq!(olds, (0..16).collect::<Vec<_>>());
    // ctr[0] = 16; ctr[1] = min over the last block = -15; ctr[2..4] = i64 1 (gid 0 + 1).
    assert_eq!(ints(&p, "ctr"), vec![16, -15, 1, 0]);
}

// ---------------------------------------------------------------------------------------
// Faults.

fn oob_kernel(offset: i32) -> Function {
    let mut b = Fb::new(&[("y", I64)]);
    let y = b.param(0);
    let t = b.geo(ThreadId, Dim::X);
    let a = b.elem_addr(y, t, 4);
    let v = b.load(I32, AddrSpace::Global, a, offset);
    b.store(AddrSpace::Global, v, a, 0);
    b.ret();
    b.f
}

#[test]
fn out_of_bounds_global() {
    let f = oob_kernel(0);
    let l = launch("1", "8", &["y=i32[3]"]);
    let e = run_launch(&f, &l).unwrap_err();
    assert_eq!(
        e.to_string(),
        "out-of-bounds global load of 4 bytes at 0x1000000c (buffer y ends at 0x1000000c) in \
         kernel %k, block (0,0,0), thread (3,0,0), at 7:5 `v6 = load.i32 global v5` in block0"
    );
    // The guard gap below the first buffer and a negative offset.
    let f = oob_kernel(-4);
    let e = run_launch(&f, &l).unwrap_err().to_string();
    assert!(
        e.starts_with("out-of-bounds global load of 4 bytes at 0xffffffc (no buffer at or below"),
        "{e}"
    );
    // Global memory keeps what earlier threads wrote.
    let f = oob_kernel(8);
    let mut l = launch("1", "4", &[]);
    l.add_buffer("y=i32:values:1,2,3").unwrap();
    let mut p = l.prepare(&f).unwrap();
    assert!(run(&f, &mut p, &InterpConfig::default()).is_err());
    assert_eq!(ints(&p, "y"), vec![3, 2, 3]);
}

#[test]
fn misaligned() {
    let f = oob_kernel(2);
    let l = launch("1", "1", &["y=i32[3]"]);
    let e = run_launch(&f, &l).unwrap_err();
    assert!(matches!(
        &e,
        InterpError::Fault(f) if matches!(f.kind, FaultKind::Misaligned { size: 4, .. })
    ));
    assert!(e
        .to_string()
        .starts_with("misaligned global load of 4 bytes at 0x10000002"));
}

/// Counts in messages agree with their nouns: `1 byte`, `1 instruction`.
#[test]
fn messages_use_singular_for_one() {
    let mut b = Fb::new(&[]);
    b.f.local_vars.push(MemVarData { size: 1, align: 1 });
    let a = b.iconst(I32, 1);
    let v = b.load(I8, AddrSpace::Local, a, 0);
    b.store(AddrSpace::Local, v, a, 0);
    b.ret();
    let e = run_launch(&b.f, &launch("1", "1", &[]))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("out-of-bounds local load of 1 byte at 0x1 (the local window is 1 byte)"),
        "{e}"
    );
    let cfg = InterpConfig {
        max_steps: 1,
        ..Default::default()
    };
    let e = run_cfg(&b.f, &launch("1", "1", &[]), &cfg)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("step limit of 1 instruction exceeded"), "{e}");
    let cfg = InterpConfig {
        max_steps: 0,
        ..Default::default()
    };
    let e = run_cfg(&b.f, &launch("1", "1", &[]), &cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("step limit of 0 instructions exceeded"),
        "{e}"
    );
}

#[test]
fn shared_and_local_bounds() {
    for space in [AddrSpace::Shared, AddrSpace::Local] {
        for (addr, offset, ok) in [
            (12, 0, true),
            (16, 0, false),
            (0, -4, false),
            (-4i64, 0, false),
            (8, 4, true),
            (0, 2, false),
        ] {
            let mut b = Fb::new(&[]);
            b.f.shared_vars.push(MemVarData { size: 16, align: 4 });
            b.f.local_vars.push(MemVarData { size: 16, align: 4 });
            let a = b.iconst(I32, addr);
            let v = b.load(I32, space, a, offset);
            b.store(space, v, a, offset);
            b.ret();
            let r = run_launch(&b.f, &launch("1", "2", &[]));
            assert_eq!(r.is_ok(), ok, "{space} {addr}{offset:+}: {r:?}");
            if let Err(e) = r {
                let e = e.to_string();
                assert!(e.contains(&format!("{space} load")), "{e}");
            }
        }
    }
}

#[test]
fn barrier_divergence() {
    // Threads with odd ids return early; the others wait at the barrier.
    let mut b = Fb::new(&[]);
    let t = b.geo(ThreadId, Dim::X);
    let one = b.iconst(I32, 1);
    let odd = b.bin(Band, t, one);
    let zero = b.iconst(I32, 0);
    let c = b.icmp(IntCC::NotEqual, odd, zero);
    let (early, _) = b.block(&[]);
    let (wait, _) = b.block(&[]);
    b.brif(c, (early, &[]), (wait, &[]));
    b.switch(early);
    b.ret();
    b.switch(wait);
    b.nullary(Barrier);
    b.ret();
    let e = run_launch(&b.f, &launch("1", "12", &[]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "barrier divergence in kernel %k, block (0,0,0): threads (0,0,0), (2,0,0), (4,0,0), \
         (6,0,0), 2 more wait at 9:5 `barrier` in block2; threads (1,0,0), (3,0,0), (5,0,0), \
         (7,0,0), 2 more returned"
    );
    // A single thread waiting alone at a barrier is fine.
    assert!(run_launch(&b.f, &launch("1", "1", &[])).is_ok());
}

#[test]
fn different_barriers() {
    let mut b = Fb::new(&[]);
    let t = b.geo(ThreadId, Dim::X);
    let zero = b.iconst(I32, 0);
    let c = b.icmp(IntCC::Equal, t, zero);
    let (b1, _) = b.block(&[]);
    let (b2, _) = b.block(&[]);
    let (end, _) = b.block(&[]);
    b.brif(c, (b1, &[]), (b2, &[]));
    for blk in [b1, b2] {
        b.switch(blk);
        b.nullary(Barrier);
        b.jump(end, &[]);
    }
    b.switch(end);
    b.ret();
    let e = run_launch(&b.f, &launch("1", "2", &[]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("thread (0,0,0) waits at") && e.contains("in block1; thread (1,0,0) waits at"),
        "{e}"
    );
}

#[test]
fn step_limit() {
    let mut b = Fb::new(&[]);
    let (l, _) = b.block(&[]);
    b.jump(l, &[]);
    b.switch(l);
    b.jump(l, &[]);
    let cfg = InterpConfig {
        max_steps: 1000,
        ..Default::default()
    };
    let e = run_cfg(&b.f, &launch("1", "1", &[]), &cfg).unwrap_err();
    assert_eq!(
        e.to_string(),
        "step limit of 1000 instructions exceeded in kernel %k, block (0,0,0), thread \
         (0,0,0), at 3:5 `jump block1` in block1"
    );
    // A huge grid of trivial threads also stops at the limit.
    let mut b = Fb::new(&[]);
    b.ret();
    let e = run_cfg(&b.f, &launch("2147483647,65535,65535", "1024", &[]), &cfg).unwrap_err();
    assert!(matches!(
        &e,
        InterpError::Fault(f) if matches!(f.kind, FaultKind::StepLimit { limit: 1000 })
    ));
    // 2^21 * 2^21 * 2^22 blocks is 2^64, which a u64 count wraps to 0 (the run would
    // then succeed without running a thread); the count must not wrap.
    let big = launch("2097152,2097152,4194304", "1", &[]);
    let prepared = big.prepare(&b.f).unwrap();
    assert_eq!(prepared.num_blocks(), 1u128 << 64);
    let e = run_cfg(&b.f, &big, &cfg).unwrap_err();
    assert!(matches!(
        &e,
        InterpError::Fault(f) if matches!(f.kind, FaultKind::StepLimit { limit: 1000 })
    ));
}

#[test]
fn setup_errors_and_malformed() {
    let mut b = Fb::new(&[]);
    b.ret();
    let cfg = InterpConfig {
        warp_width: 0,
        ..Default::default()
    };
    assert!(matches!(
        run_cfg(&b.f, &launch("1", "1", &[]), &cfg),
        Err(InterpError::Setup { .. })
    ));
    // No blocks at all.
    let f = Function::with_name_signature("e", Signature::default());
    let mut p = Launch::default().prepare(&f).unwrap();
    assert!(run(&f, &mut p, &InterpConfig::default()).is_err());
    // A block without a terminator.
    let mut b = Fb::new(&[]);
    b.f.name = "bad1".into();
    b.iconst(I32, 1);
    let e = run_launch(&b.f, &launch("1", "1", &[]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("malformed kernel: block0 does not end with a terminator"),
        "{e}"
    );
    // Ill-typed arithmetic is reported, not executed.
    let mut b = Fb::new(&[]);
    b.f.name = "bad2".into();
    let x = b.iconst(I32, 1);
    let y = b.iconst(I32, 1);
    b.ins(
        InstructionData::Binary {
            opcode: Fadd,
            args: [x, y],
        },
        Some(I32),
    );
    b.ret();
    let e = run_launch(&b.f, &launch("1", "1", &[]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("malformed kernel"), "{e}");
    // Too much local memory for the block.
    let mut b = Fb::new(&[]);
    b.f.local_vars.push(MemVarData {
        size: u32::MAX,
        align: 4,
    });
    b.ret();
    assert!(matches!(
        run_launch(&b.f, &launch("1", "1024", &[])),
        Err(InterpError::Setup { .. })
    ));
}

#[test]
fn select_and_float_kernel() {
    // out[t] = select(t < 2, fma(x, 2, 1), fmin(x, nan))
    let mut b = Fb::new(&[("x", I64), ("out", I64)]);
    let (x, out) = (b.param(0), b.param(1));
    let t = b.geo(ThreadId, Dim::X);
    let xa = b.elem_addr(x, t, 4);
    let xv = b.load(F32, AddrSpace::Global, xa, 0);
    let two = b
        .ins(
            InstructionData::FloatConst {
                opcode: F32const,
                bits: u64::from(2f32.to_bits()),
            },
            Some(F32),
        )
        .unwrap();
    let one = b
        .ins(
            InstructionData::FloatConst {
                opcode: F32const,
                bits: u64::from(1f32.to_bits()),
            },
            Some(F32),
        )
        .unwrap();
    let nan = b
        .ins(
            InstructionData::FloatConst {
                opcode: F32const,
                bits: 0x7fc0_0000,
            },
            Some(F32),
        )
        .unwrap();
    let f = b
        .ins(
            InstructionData::Ternary {
                opcode: Fma,
                args: [xv, two, one],
            },
            Some(F32),
        )
        .unwrap();
    let m = b.bin(Fmin, xv, nan);
    let c2 = b.iconst(I32, 2);
    let c = b.icmp(IntCC::SignedLessThan, t, c2);
    let s = b
        .ins(
            InstructionData::Ternary {
                opcode: Select,
                args: [c, f, m],
            },
            Some(F32),
        )
        .unwrap();
    let oa = b.elem_addr(out, t, 4);
    b.store(AddrSpace::Global, s, oa, 0);
    b.ret();
    let mut l = launch("1", "4", &["x=f32:values:1.5,-0.5,3,nan", "out=f32[4]"]);
    l.add_expect("out=4,0,3,nan").unwrap();
    let (p, _) = run_launch(&b.f, &l).unwrap();
    p.memory.check_expectations().unwrap();
    assert_eq!(
        p.memory.results_json().to_string(),
        r#"{"buffers":{"out":[4.0,0.0,3.0,"nan"],"x":[1.5,-0.5,3.0,"nan"]}}"#
    );
}
