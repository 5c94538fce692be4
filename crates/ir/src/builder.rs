//! Instruction builders: one method per opcode, generated from the opcode table
//! (`for_each_opcode!`), each carrying the table's documentation of its opcode.
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
use crate::instructions::{BlockCall, InstructionData, Opcode, ResultType};
use crate::srcloc::SourceLoc;
use crate::types::Type;

/// One builder method per row of the opcode table: the row's documentation, its method
/// name, and the parameters its instruction format takes.
macro_rules! builder_methods {
    ($( $(#[$doc:meta])* $variant:ident = $method:ident $name:literal,
        $format:ident -> $result:ident, $class:ident; )+) => {
        $( builder_method! { [$(#[$doc])*] $variant $method $format $result } )+
    };
}

/// The builder method of one opcode, by instruction format (and, where the format alone
/// does not say, by where the result type comes from).
macro_rules! builder_method {
    ([$($doc:tt)*] $v:ident $m:ident Nullary None) => {
        $($doc)*
        fn $m(self) -> Inst {
            self.build_effect(InstructionData::Nullary { opcode: Opcode::$v })
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Nullary $r:ident) => {
        $($doc)*
        fn $m(self) -> Value {
            self.build_value(InstructionData::Nullary { opcode: Opcode::$v }, Type::$r)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident UnaryImm $r:ident) => {
        $($doc)*
        fn $m(self, ty: Type, imm: i64) -> Value {
            let imm = imm as u64 & ty.mask();
            self.build_value(InstructionData::UnaryImm { opcode: Opcode::$v, imm }, ty)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident FloatConst F32) => {
        $($doc)*
        fn $m(self, x: f32) -> Value {
            let bits = u64::from(x.to_bits());
            self.build_value(InstructionData::FloatConst { opcode: Opcode::$v, bits }, Type::F32)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident FloatConst F64) => {
        $($doc)*
        fn $m(self, x: f64) -> Value {
            let bits = x.to_bits();
            self.build_value(InstructionData::FloatConst { opcode: Opcode::$v, bits }, Type::F64)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Unary Explicit) => {
        $($doc)*
        fn $m(self, ty: Type, arg: Value) -> Value {
            self.unary_to(Opcode::$v, ty, arg)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Unary $r:ident) => {
        $($doc)*
        fn $m(self, arg: Value) -> Value {
            self.unary(Opcode::$v, arg)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Binary $r:ident) => {
        $($doc)*
        fn $m(self, a: Value, b: Value) -> Value {
            self.binary(Opcode::$v, a, b)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Ternary $r:ident) => {
        $($doc)*
        fn $m(self, a: Value, b: Value, c: Value) -> Value {
            self.ternary(Opcode::$v, a, b, c)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident IntCompare $r:ident) => {
        $($doc)*
        fn $m(self, cond: IntCC, a: Value, b: Value) -> Value {
            let data = InstructionData::IntCompare { opcode: Opcode::$v, cond, args: [a, b] };
            self.build_value(data, Type::I1)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident FloatCompare $r:ident) => {
        $($doc)*
        fn $m(self, cond: FloatCC, a: Value, b: Value) -> Value {
            let data = InstructionData::FloatCompare { opcode: Opcode::$v, cond, args: [a, b] };
            self.build_value(data, Type::I1)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Geometry $r:ident) => {
        $($doc)*
        fn $m(self, dim: Dim) -> Value {
            self.build_value(InstructionData::Geometry { opcode: Opcode::$v, dim }, Type::I32)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Load $r:ident) => {
        $($doc)*
        fn $m(self, ty: Type, space: AddrSpace, addr: Value, offset: i32) -> Value {
            let data = InstructionData::Load { opcode: Opcode::$v, space, arg: addr, offset };
            self.build_value(data, ty)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Store $r:ident) => {
        $($doc)*
        fn $m(self, space: AddrSpace, value: Value, addr: Value, offset: i32) -> Inst {
            let args = [value, addr];
            self.build_effect(InstructionData::Store { opcode: Opcode::$v, space, args, offset })
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident AtomicRmw $r:ident) => {
        $($doc)*
        fn $m(
            self,
            op: AtomicRmwOp,
            space: AddrSpace,
            addr: Value,
            offset: i32,
            operand: Value,
        ) -> Value {
            let ty = self.value_type(operand);
            let args = [addr, operand];
            let data = InstructionData::AtomicRmw { opcode: Opcode::$v, op, space, args, offset };
            self.build_value(data, ty)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident AtomicCas $r:ident) => {
        $($doc)*
        fn $m(
            self,
            space: AddrSpace,
            addr: Value,
            offset: i32,
            expected: Value,
            replacement: Value,
        ) -> Value {
            let ty = self.value_type(expected);
            let args = [addr, expected, replacement];
            let data = InstructionData::AtomicCas { opcode: Opcode::$v, space, args, offset };
            self.build_value(data, ty)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident SharedAddr $r:ident) => {
        $($doc)*
        fn $m(self, var: SharedVar) -> Value {
            self.build_value(InstructionData::SharedAddr { opcode: Opcode::$v, var }, Type::I32)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident LocalAddr $r:ident) => {
        $($doc)*
        fn $m(self, var: LocalVar) -> Value {
            self.build_value(InstructionData::LocalAddr { opcode: Opcode::$v, var }, Type::I32)
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Jump $r:ident) => {
        $($doc)*
        fn $m(self, dest: Block, args: &[Value]) -> Inst {
            let dest = BlockCall::new(dest, args);
            self.build_effect(InstructionData::Jump { opcode: Opcode::$v, dest })
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident Brif $r:ident) => {
        $($doc)*
        fn $m(
            self,
            c: Value,
            then: Block,
            then_args: &[Value],
            else_: Block,
            else_args: &[Value],
        ) -> Inst {
            let dests = [BlockCall::new(then, then_args), BlockCall::new(else_, else_args)];
            self.build_effect(InstructionData::Brif { opcode: Opcode::$v, arg: c, dests })
        }
    };
    ([$($doc:tt)*] $v:ident $m:ident BrTable $r:ident) => {
        $($doc)*
        ///
        /// `targets[i]` is the destination of index `i`; `default` that of an index
        /// (unsigned) out of range.
        fn $m(self, index: Value, default: BlockCall, targets: &[BlockCall]) -> Inst {
            let mut dests = Vec::with_capacity(targets.len() + 1);
            dests.push(default);
            dests.extend_from_slice(targets);
            self.build_effect(InstructionData::BrTable { opcode: Opcode::$v, arg: index, dests })
        }
    };
}

/// Builds instructions, one method per opcode.
///
/// Implementors provide [`InstBuilder::value_type`] (for result type inference) and
/// [`InstBuilder::build`] (to create and place the instruction). The builder is consumed by
/// each call, like Cranelift's: write `b.ins().iadd(x, y)`. The per-opcode methods are
/// generated from the opcode table (`for_each_opcode!`) and carry its documentation.
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

    /// The result type of an `opcode` instruction on `args` by the opcode table: a fixed
    /// type, or the type of the operand the table names (the first one otherwise).
    #[doc(hidden)]
    fn inferred_type(&self, opcode: Opcode, args: &[Value]) -> Type {
        match opcode.result_type() {
            ResultType::Fixed(ty) => ty,
            ResultType::Operand(i) => self.value_type(args.get(i).copied().unwrap_or(args[0])),
            ResultType::Explicit | ResultType::None => self.value_type(args[0]),
        }
    }

    /// A one-operand instruction of `opcode` (format `Unary`), its result typed by the
    /// opcode table.
    fn unary(self, opcode: Opcode, arg: Value) -> Value {
        let ty = self.inferred_type(opcode, &[arg]);
        self.unary_to(opcode, ty, arg)
    }

    /// A one-operand instruction of `opcode` with the result type `ty`.
    fn unary_to(self, opcode: Opcode, ty: Type, arg: Value) -> Value {
        self.build_value(InstructionData::Unary { opcode, arg }, ty)
    }

    /// A two-operand instruction of `opcode` (format `Binary`), its result typed by the
    /// opcode table.
    fn binary(self, opcode: Opcode, a: Value, b: Value) -> Value {
        let ty = self.inferred_type(opcode, &[a, b]);
        let args = [a, b];
        self.build_value(InstructionData::Binary { opcode, args }, ty)
    }

    /// A three-operand instruction of `opcode` (format `Ternary`), its result typed by
    /// the opcode table.
    fn ternary(self, opcode: Opcode, a: Value, b: Value, c: Value) -> Value {
        let ty = self.inferred_type(opcode, &[a, b, c]);
        let args = [a, b, c];
        self.build_value(InstructionData::Ternary { opcode, args }, ty)
    }

    crate::for_each_opcode!(builder_methods);
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
