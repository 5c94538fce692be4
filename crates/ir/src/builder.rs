//! Instruction builders: one method per opcode.
//!
//! [`InstBuilder`] is implemented by anything that can place a new instruction somewhere:
//! the SSA-constructing [`FunctionBuilder`](crate::frontend::FunctionBuilder) of embedders,
//! and the plain [`BlockAppender`] here, which appends to a given block of a
//! [`Function`] and is what passes and tests use. The trait's provided methods build the
//! [`InstructionData`] and compute the result type from the operands, following the rules
//! of the text format: comparisons give `i1`; geometry, `lane_id`, `shared_addr` and
//! `local_addr` give `i32`; `select`, `atomic_rmw` and `atomic_cas` give the type of their
//! second operand; `fpromote` gives `f64` and `fdemote` `f32`; conversions, `iconst` and
//! `load` take their result type as an argument; every other operation gives the type of
//! its first operand.
//!
//! The builders check nothing: a kernel built from ill-typed operands is built as asked,
//! and the [verifier](crate::verifier) says what is wrong with it.

use crate::condcodes::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC};
use crate::entities::{Block, Inst, LocalVar, SharedVar, Value};
use crate::function::Function;
use crate::instructions::{BlockCall, InstructionData, Opcode};
use crate::srcloc::SourceLoc;
use crate::types::Type;

/// Builds instructions, one method per opcode.
///
/// Implementors provide [`InstBuilder::value_type`] (for result type inference) and
/// [`InstBuilder::build`] (to create and place the instruction). The builder is consumed by
/// each call, like Cranelift's: write `b.ins().iadd(x, y)`.
pub trait InstBuilder: Sized {
    /// The type of an existing value.
    fn value_type(&self, v: Value) -> Type;

    /// Creates an instruction with `data` and, when `result` is given, a result of that
    /// type; places it; returns it and its result.
    fn build(self, data: InstructionData, result: Option<Type>) -> (Inst, Option<Value>);

    /// Builds an instruction that has a result and returns the result.
    #[doc(hidden)]
    fn build_value(self, data: InstructionData, ty: Type) -> Value {
        let (_, v) = self.build(data, Some(ty));
        v.expect("an instruction built with a result type has a result")
    }

    /// Builds an instruction without a result.
    #[doc(hidden)]
    fn build_effect(self, data: InstructionData) -> Inst {
        self.build(data, None).0
    }

    /// A binary operation whose result has the type of its first operand.
    #[doc(hidden)]
    fn binary(self, opcode: Opcode, a: Value, b: Value) -> Value {
        let ty = self.value_type(a);
        self.build_value(
            InstructionData::Binary {
                opcode,
                args: [a, b],
            },
            ty,
        )
    }

    /// A unary operation with an explicit result type.
    #[doc(hidden)]
    fn unary_to(self, opcode: Opcode, ty: Type, arg: Value) -> Value {
        self.build_value(InstructionData::Unary { opcode, arg }, ty)
    }

    /// A unary operation whose result has the type of its operand.
    #[doc(hidden)]
    fn unary(self, opcode: Opcode, arg: Value) -> Value {
        let ty = self.value_type(arg);
        self.unary_to(opcode, ty, arg)
    }

    /// A geometry read (`i32`).
    #[doc(hidden)]
    fn geometry(self, opcode: Opcode, dim: Dim) -> Value {
        self.build_value(InstructionData::Geometry { opcode, dim }, Type::I32)
    }

    // ---- constants ----

    /// `iconst.ty imm`: the immediate is truncated to the width of `ty`, so both `-1` and
    /// `0xff` give the all-ones `i8`.
    fn iconst(self, ty: Type, imm: i64) -> Value {
        let imm = imm as u64 & ty.mask();
        self.build_value(
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            },
            ty,
        )
    }

    /// `f32const x`, keeping the exact bits of `x` (NaN payloads included).
    fn f32const(self, x: f32) -> Value {
        self.build_value(
            InstructionData::FloatConst {
                opcode: Opcode::F32const,
                bits: u64::from(x.to_bits()),
            },
            Type::F32,
        )
    }

    /// `f64const x`, keeping the exact bits of `x`.
    fn f64const(self, x: f64) -> Value {
        self.build_value(
            InstructionData::FloatConst {
                opcode: Opcode::F64const,
                bits: x.to_bits(),
            },
            Type::F64,
        )
    }

    // ---- integer arithmetic ----

    /// Wrapping `a + b`.
    fn iadd(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Iadd, a, b)
    }
    /// Wrapping `a - b`.
    fn isub(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Isub, a, b)
    }
    /// Wrapping `a * b`.
    fn imul(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Imul, a, b)
    }
    /// High half of the signed product.
    fn smulhi(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Smulhi, a, b)
    }
    /// High half of the unsigned product.
    fn umulhi(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Umulhi, a, b)
    }
    /// Signed division.
    fn sdiv(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Sdiv, a, b)
    }
    /// Unsigned division.
    fn udiv(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Udiv, a, b)
    }
    /// Signed remainder.
    fn srem(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Srem, a, b)
    }
    /// Unsigned remainder.
    fn urem(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Urem, a, b)
    }
    /// Signed minimum.
    fn smin(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Smin, a, b)
    }
    /// Signed maximum.
    fn smax(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Smax, a, b)
    }
    /// Unsigned minimum.
    fn umin(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Umin, a, b)
    }
    /// Unsigned maximum.
    fn umax(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Umax, a, b)
    }
    /// Bitwise and.
    fn band(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Band, a, b)
    }
    /// Bitwise or.
    fn bor(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Bor, a, b)
    }
    /// Bitwise exclusive or.
    fn bxor(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Bxor, a, b)
    }
    /// Shift left.
    fn ishl(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Ishl, a, b)
    }
    /// Logical shift right.
    fn ushr(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Ushr, a, b)
    }
    /// Arithmetic shift right.
    fn sshr(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Sshr, a, b)
    }
    /// Wrapping negation.
    fn ineg(self, a: Value) -> Value {
        self.unary(Opcode::Ineg, a)
    }
    /// Bitwise not.
    fn bnot(self, a: Value) -> Value {
        self.unary(Opcode::Bnot, a)
    }
    /// Population count.
    fn popcnt(self, a: Value) -> Value {
        self.unary(Opcode::Popcnt, a)
    }
    /// Leading zeros.
    fn clz(self, a: Value) -> Value {
        self.unary(Opcode::Clz, a)
    }
    /// Trailing zeros.
    fn ctz(self, a: Value) -> Value {
        self.unary(Opcode::Ctz, a)
    }
    /// Integer comparison (`i1`).
    fn icmp(self, cond: IntCC, a: Value, b: Value) -> Value {
        self.build_value(
            InstructionData::IntCompare {
                opcode: Opcode::Icmp,
                cond,
                args: [a, b],
            },
            Type::I1,
        )
    }

    // ---- float arithmetic ----

    /// Float `a + b`.
    fn fadd(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Fadd, a, b)
    }
    /// Float `a - b`.
    fn fsub(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Fsub, a, b)
    }
    /// Float `a * b`.
    fn fmul(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Fmul, a, b)
    }
    /// Float `a / b`.
    fn fdiv(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Fdiv, a, b)
    }
    /// Float minimum.
    fn fmin(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Fmin, a, b)
    }
    /// Float maximum.
    fn fmax(self, a: Value, b: Value) -> Value {
        self.binary(Opcode::Fmax, a, b)
    }
    /// Float negation.
    fn fneg(self, a: Value) -> Value {
        self.unary(Opcode::Fneg, a)
    }
    /// Float absolute value.
    fn fabs(self, a: Value) -> Value {
        self.unary(Opcode::Fabs, a)
    }
    /// Square root.
    fn sqrt(self, a: Value) -> Value {
        self.unary(Opcode::Sqrt, a)
    }
    /// Fused `a * b + c`.
    fn fma(self, a: Value, b: Value, c: Value) -> Value {
        let ty = self.value_type(a);
        self.build_value(
            InstructionData::Ternary {
                opcode: Opcode::Fma,
                args: [a, b, c],
            },
            ty,
        )
    }
    /// Float comparison (`i1`).
    fn fcmp(self, cond: FloatCC, a: Value, b: Value) -> Value {
        self.build_value(
            InstructionData::FloatCompare {
                opcode: Opcode::Fcmp,
                cond,
                args: [a, b],
            },
            Type::I1,
        )
    }

    /// `a` where `c` holds, `b` elsewhere.
    fn select(self, c: Value, a: Value, b: Value) -> Value {
        let ty = self.value_type(a);
        self.build_value(
            InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [c, a, b],
            },
            ty,
        )
    }

    // ---- conversions ----

    /// Zero-extension to the wider `ty`.
    fn uextend(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::Uextend, ty, v)
    }
    /// Sign-extension to the wider `ty`.
    fn sextend(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::Sextend, ty, v)
    }
    /// Truncation to the narrower `ty`.
    fn ireduce(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::Ireduce, ty, v)
    }
    /// Float to signed integer `ty`, saturating.
    fn fcvt_to_sint(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::FcvtToSint, ty, v)
    }
    /// Float to unsigned integer `ty`, saturating.
    fn fcvt_to_uint(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::FcvtToUint, ty, v)
    }
    /// Signed integer to float `ty`.
    fn fcvt_from_sint(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::FcvtFromSint, ty, v)
    }
    /// Unsigned integer to float `ty`.
    fn fcvt_from_uint(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::FcvtFromUint, ty, v)
    }
    /// `f32` to `f64`.
    fn fpromote(self, v: Value) -> Value {
        self.unary_to(Opcode::Fpromote, Type::F64, v)
    }
    /// `f64` to `f32`.
    fn fdemote(self, v: Value) -> Value {
        self.unary_to(Opcode::Fdemote, Type::F32, v)
    }
    /// The bits of `v` as the same-width `ty`.
    fn bitcast(self, ty: Type, v: Value) -> Value {
        self.unary_to(Opcode::Bitcast, ty, v)
    }

    // ---- geometry ----

    /// The thread's index in its block along `dim`.
    fn thread_id(self, dim: Dim) -> Value {
        self.geometry(Opcode::ThreadId, dim)
    }
    /// The block's index in the grid along `dim`.
    fn block_id(self, dim: Dim) -> Value {
        self.geometry(Opcode::BlockId, dim)
    }
    /// Threads per block along `dim`.
    fn block_dim(self, dim: Dim) -> Value {
        self.geometry(Opcode::BlockDim, dim)
    }
    /// Blocks in the grid along `dim`.
    fn grid_dim(self, dim: Dim) -> Value {
        self.geometry(Opcode::GridDim, dim)
    }
    /// The thread's lane in its warp.
    fn lane_id(self) -> Value {
        self.build_value(
            InstructionData::Nullary {
                opcode: Opcode::LaneId,
            },
            Type::I32,
        )
    }

    // ---- memory ----

    /// Loads a `ty` from `addr + offset` in `space`.
    fn load(self, ty: Type, space: AddrSpace, addr: Value, offset: i32) -> Value {
        self.build_value(
            InstructionData::Load {
                opcode: Opcode::Load,
                space,
                arg: addr,
                offset,
            },
            ty,
        )
    }
    /// Stores `value` at `addr + offset` in `space`.
    fn store(self, space: AddrSpace, value: Value, addr: Value, offset: i32) -> Inst {
        self.build_effect(InstructionData::Store {
            opcode: Opcode::Store,
            space,
            args: [value, addr],
            offset,
        })
    }
    /// Atomic `op` of `operand` into `addr + offset`; gives the old value.
    fn atomic_rmw(
        self,
        op: AtomicRmwOp,
        space: AddrSpace,
        addr: Value,
        offset: i32,
        operand: Value,
    ) -> Value {
        let ty = self.value_type(operand);
        self.build_value(
            InstructionData::AtomicRmw {
                opcode: Opcode::AtomicRmw,
                op,
                space,
                args: [addr, operand],
                offset,
            },
            ty,
        )
    }
    /// Atomic compare-and-swap at `addr + offset`; gives the old value.
    fn atomic_cas(
        self,
        space: AddrSpace,
        addr: Value,
        offset: i32,
        expected: Value,
        replacement: Value,
    ) -> Value {
        let ty = self.value_type(expected);
        self.build_value(
            InstructionData::AtomicCas {
                opcode: Opcode::AtomicCas,
                space,
                args: [addr, expected, replacement],
                offset,
            },
            ty,
        )
    }
    /// The address of shared variable `var`.
    fn shared_addr(self, var: SharedVar) -> Value {
        self.build_value(
            InstructionData::SharedAddr {
                opcode: Opcode::SharedAddr,
                var,
            },
            Type::I32,
        )
    }
    /// The address of local variable `var`.
    fn local_addr(self, var: LocalVar) -> Value {
        self.build_value(
            InstructionData::LocalAddr {
                opcode: Opcode::LocalAddr,
                var,
            },
            Type::I32,
        )
    }
    /// A block-wide barrier.
    fn barrier(self) -> Inst {
        self.build_effect(InstructionData::Nullary {
            opcode: Opcode::Barrier,
        })
    }

    // ---- control flow ----

    /// Jumps to `dest` with `args`.
    fn jump(self, dest: Block, args: &[Value]) -> Inst {
        self.build_effect(InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: BlockCall::new(dest, args),
        })
    }
    /// Branches to `then` when `c` holds, to `else_` otherwise.
    fn brif(
        self,
        c: Value,
        then: Block,
        then_args: &[Value],
        else_: Block,
        else_args: &[Value],
    ) -> Inst {
        self.build_effect(InstructionData::Brif {
            opcode: Opcode::Brif,
            arg: c,
            dests: [
                BlockCall::new(then, then_args),
                BlockCall::new(else_, else_args),
            ],
        })
    }
    /// Branches to `targets[index]`, or to `default` when `index` (unsigned) is out of
    /// range.
    fn br_table(self, index: Value, default: BlockCall, targets: &[BlockCall]) -> Inst {
        let mut dests = Vec::with_capacity(targets.len() + 1);
        dests.push(default);
        dests.extend_from_slice(targets);
        self.build_effect(InstructionData::BrTable {
            opcode: Opcode::BrTable,
            arg: index,
            dests,
        })
    }
    /// Ends the thread.
    fn return_(self) -> Inst {
        self.build_effect(InstructionData::Nullary {
            opcode: Opcode::Return,
        })
    }
}

/// Appends instructions at the end of one block of a [`Function`], with a source location.
///
/// It is the builder of passes and tests: it neither tracks predecessors nor builds SSA
/// form, and it accepts any instruction at any point (even after a terminator), so that
/// malformed kernels can be built on purpose.
pub struct BlockAppender<'f> {
    func: &'f mut Function,
    block: Block,
    srcloc: SourceLoc,
}

impl<'f> BlockAppender<'f> {
    /// A builder appending to `block`, which is added to the layout if it is not there.
    pub fn new(func: &'f mut Function, block: Block) -> Self {
        if !func.layout.is_block_inserted(block) {
            func.layout.append_block(block);
        }
        BlockAppender {
            func,
            block,
            srcloc: SourceLoc::default(),
        }
    }

    /// Gives every instruction built from now on the location `loc`.
    pub fn with_srcloc(mut self, loc: SourceLoc) -> Self {
        self.srcloc = loc;
        self
    }
}

impl InstBuilder for BlockAppender<'_> {
    fn value_type(&self, v: Value) -> Type {
        self.func.dfg.value_type(v)
    }

    fn build(self, data: InstructionData, result: Option<Type>) -> (Inst, Option<Value>) {
        let inst = self.func.dfg.make_inst(data, result);
        self.func.layout.append_inst(inst, self.block);
        self.func.srclocs[inst] = self.srcloc;
        (inst, self.func.dfg.inst_result(inst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::{Param, Signature};

    fn ins(func: &mut Function, block: Block) -> BlockAppender<'_> {
        BlockAppender::new(func, block)
    }

    #[test]
    fn result_types_follow_the_inference_rules() {
        let sig = Signature {
            params: vec![Param::new("p", Type::I64), Param::new("x", Type::F32)],
        };
        let mut f = Function::with_name_signature("k", sig);
        let b0 = f.dfg.make_block();
        let p = f.dfg.append_block_param(b0, Type::I64);
        let x = f.dfg.append_block_param(b0, Type::F32);
        let t = |f: &Function, v: Value| f.dfg.value_type(v);

        let c = ins(&mut f, b0).iconst(Type::I8, -1);
        assert_eq!(t(&f, c), Type::I8);
        let s = ins(&mut f, b0).iadd(p, p);
        assert_eq!(t(&f, s), Type::I64);
        let cmp = ins(&mut f, b0).icmp(IntCC::Equal, p, s);
        assert_eq!(t(&f, cmp), Type::I1);
        let fc = ins(&mut f, b0).fcmp(FloatCC::LessThan, x, x);
        assert_eq!(t(&f, fc), Type::I1);
        let sel = ins(&mut f, b0).select(cmp, x, x);
        assert_eq!(t(&f, sel), Type::F32);
        let wide = ins(&mut f, b0).fpromote(x);
        assert_eq!(t(&f, wide), Type::F64);
        let narrow = ins(&mut f, b0).fdemote(wide);
        assert_eq!(t(&f, narrow), Type::F32);
        let tid = ins(&mut f, b0).thread_id(Dim::Y);
        assert_eq!(t(&f, tid), Type::I32);
        let lane = ins(&mut f, b0).lane_id();
        assert_eq!(t(&f, lane), Type::I32);
        let ext = ins(&mut f, b0).sextend(Type::I64, tid);
        assert_eq!(t(&f, ext), Type::I64);
        let old = ins(&mut f, b0).atomic_rmw(AtomicRmwOp::Add, AddrSpace::Global, p, 8, ext);
        assert_eq!(t(&f, old), Type::I64);
        let cas = ins(&mut f, b0).atomic_cas(AddrSpace::Global, p, 0, tid, tid);
        assert_eq!(t(&f, cas), Type::I32);
        let ld = ins(&mut f, b0).load(Type::F64, AddrSpace::Global, p, -8);
        assert_eq!(t(&f, ld), Type::F64);
        let smem = f.shared_vars.push(crate::MemVarData { size: 64, align: 8 });
        let sa = ins(&mut f, b0).shared_addr(smem);
        assert_eq!(t(&f, sa), Type::I32);
        ins(&mut f, b0).store(AddrSpace::Shared, ld, sa, 4);
        ins(&mut f, b0).barrier();
        ins(&mut f, b0).return_();
        assert_eq!(
            f.to_string(),
            "kernel %k(p: i64, x: f32) {
    smem0 = shared 64, align 8

block0(v0: i64, v1: f32):
    v2 = iconst.i8 -1
    v3 = iadd v0, v0
    v4 = icmp eq v0, v3
    v5 = fcmp lt v1, v1
    v6 = select v4, v1, v1
    v7 = fpromote v1
    v8 = fdemote v7
    v9 = thread_id y
    v10 = lane_id
    v11 = sextend.i64 v9
    v12 = atomic_rmw add global v0+8, v11
    v13 = atomic_cas global v0, v9, v9
    v14 = load.f64 global v0-8
    v15 = shared_addr smem0
    store shared v14, v15+4
    barrier
    return
}
"
        );
    }

    #[test]
    fn iconst_masks_the_immediate() {
        let mut f = Function::default();
        let b0 = f.dfg.make_block();
        let a = ins(&mut f, b0).iconst(Type::I16, -2);
        let b = ins(&mut f, b0).iconst(Type::I1, 3);
        let imm = |v: Value| match f.dfg.value_def(v) {
            crate::ValueDef::Result(i) => match f.dfg.insts[i] {
                InstructionData::UnaryImm { imm, .. } => imm,
                _ => unreachable!(),
            },
            _ => unreachable!(),
        };
        assert_eq!(imm(a), 0xfffe);
        assert_eq!(imm(b), 1);
    }

    #[test]
    fn branches_print() {
        let mut f = Function::default();
        let b0 = f.dfg.make_block();
        let b1 = f.dfg.make_block();
        let x = f.dfg.append_block_param(b1, Type::I32);
        let c = ins(&mut f, b0).iconst(Type::I32, 7);
        ins(&mut f, b0).f32const(1.5);
        let cond = ins(&mut f, b0).icmp(IntCC::UnsignedLessThan, c, c);
        ins(&mut f, b0).brif(cond, b1, &[c], b1, &[c]);
        let b2 = f.dfg.make_block();
        ins(&mut f, b1).br_table(x, BlockCall::new(b2, []), &[BlockCall::new(b1, [x])]);
        ins(&mut f, b2).return_();
        let text = f.to_string();
        assert!(text.contains("brif v3, block1(v1), block1(v1)"), "{text}");
        assert!(text.contains("br_table v0, block2, [block1(v0)]"), "{text}");
        assert!(text.contains("v2 = f32const 1.5"), "{text}");
    }
}
