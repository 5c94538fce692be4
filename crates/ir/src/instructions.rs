//! Opcodes and instruction data.
//!
//! Every opcode is declared once, in the table of the `for_each_opcode!` macro
//! (`opcode_table.rs`), with its text-format name, its builder method, its instruction
//! format, where its result type comes from, the types its operands take and its
//! documentation. The `Opcode` enum, the name lookup used by the parser, the format
//! dispatch, the typing rules, the builder methods, the code generator's ISLE declaration
//! of the opcodes and the fuzz generator's opcode lists all come from that one table. The
//! semantics of each opcode for every input are defined in `docs/ir.md` and implemented by
//! the reference interpreter.
//!
//! Every instruction produces at most one result. Branch arguments are carried by
//! [`BlockCall`]s: SSA here uses block parameters, not phis.

use crate::condcodes::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC};
use crate::entities::{Block, LocalVar, SharedVar, Value};
use crate::types::Type;
use core::fmt;

/// The shape of an instruction's operands and immediates; one per [`InstructionData`]
/// variant.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum InstructionFormat {
    /// No operands.
    Nullary,
    /// One integer immediate.
    UnaryImm,
    /// One float immediate, as raw bits.
    FloatConst,
    /// One value operand.
    Unary,
    /// Two value operands.
    Binary,
    /// Three value operands.
    Ternary,
    /// An integer comparison.
    IntCompare,
    /// A float comparison.
    FloatCompare,
    /// A grid dimension.
    Geometry,
    /// A load: address space, address, offset.
    Load,
    /// A store: address space, value, address, offset.
    Store,
    /// An atomic read-modify-write.
    AtomicRmw,
    /// An atomic compare-and-swap.
    AtomicCas,
    /// The address of a shared-memory variable.
    SharedAddr,
    /// The address of a local-memory variable.
    LocalAddr,
    /// An unconditional jump.
    Jump,
    /// A two-way conditional branch.
    Brif,
    /// A branch table.
    BrTable,
}

/// Where an opcode's result type comes from (the `Result` column of the opcode table).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// The instruction defines no value.
    None,
    /// The type of the value operand at this index.
    Operand(usize),
    /// Written in the text after a dot (`iconst.i32`), an argument of the builder method.
    Explicit,
    /// Always this type.
    Fixed(Type),
}

/// The types an opcode's value operands take (the `Class` column of the opcode table).
/// For every class but `Special`, all value operands have one type of the class, and so
/// does the result unless the opcode fixes it (comparisons give `i1`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// Integers of 8 to 64 bits.
    Int,
    /// Integers of 1 to 64 bits.
    IntOrBool,
    /// `f32` and `f64`.
    Float,
    /// Typed by a rule of its own (see the verifier).
    Special,
}

impl TypeClass {
    /// Does the class hold `ty`?
    pub fn contains(self, ty: Type) -> bool {
        match self {
            TypeClass::Int => ty.is_wide_int(),
            TypeClass::IntOrBool => ty.is_int(),
            TypeClass::Float => ty.is_float(),
            TypeClass::Special => true,
        }
    }
}

/// The `ResultType` of a `Result` column entry.
macro_rules! result_type {
    (None) => {
        ResultType::None
    };
    (Arg0) => {
        ResultType::Operand(0)
    };
    (Arg1) => {
        ResultType::Operand(1)
    };
    (Explicit) => {
        ResultType::Explicit
    };
    ($ty:ident) => {
        ResultType::Fixed(Type::$ty)
    };
}

macro_rules! declare_opcodes {
    ($( $(#[$doc:meta])* $variant:ident = $method:ident $name:literal,
        $format:ident -> $result:ident, $class:ident; )+) => {
        /// An instruction's operation.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $( $(#[$doc])* $variant, )+
        }

        impl Opcode {
            /// Every opcode, in order of declaration.
            pub const ALL: &'static [Opcode] = &[ $( Opcode::$variant, )+ ];

            /// The opcode's spelling in the text format.
            pub fn name(self) -> &'static str {
                match self { $( Opcode::$variant => $name, )+ }
            }

            /// The instruction format the opcode uses.
            pub fn format(self) -> InstructionFormat {
                match self { $( Opcode::$variant => InstructionFormat::$format, )+ }
            }

            /// Where the result type comes from.
            pub fn result_type(self) -> ResultType {
                match self { $( Opcode::$variant => result_type!($result), )+ }
            }

            /// The types the value operands take.
            pub fn type_class(self) -> TypeClass {
                match self { $( Opcode::$variant => TypeClass::$class, )+ }
            }
        }
    };
}

crate::for_each_opcode!(declare_opcodes);

impl Opcode {
    /// Looks an opcode up by its text-format name.
    pub fn from_name(name: &str) -> Option<Opcode> {
        Opcode::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// Does an instruction with this opcode define a result value?
    pub fn has_result(self) -> bool {
        self.result_type() != ResultType::None
    }

    /// Does this opcode end a block?
    #[inline]
    pub fn is_terminator(self) -> bool {
        matches!(
            self,
            Opcode::Jump | Opcode::Brif | Opcode::BrTable | Opcode::Return
        )
    }

    /// Is this a branch (a terminator with destinations)?
    #[inline]
    pub fn is_branch(self) -> bool {
        matches!(self, Opcode::Jump | Opcode::Brif | Opcode::BrTable)
    }

    /// Does the text format write this opcode's result type after a dot
    /// (`iconst.i32`, `load.f32`, `uextend.i64`)? Other opcodes infer it from operands.
    pub fn has_explicit_type(self) -> bool {
        self.result_type() == ResultType::Explicit
    }

    /// The result type this opcode always produces, for opcodes whose result type is not
    /// written in the text and not taken from an operand; `None` otherwise.
    pub fn fixed_result_type(self) -> Option<Type> {
        match self.result_type() {
            ResultType::Fixed(ty) => Some(ty),
            _ => None,
        }
    }

    /// Which operand gives its type to the result when neither the text nor the opcode
    /// fixes it: the second for `select c, a, b` and for atomics (the first is the
    /// condition or the address), the first for everything else.
    pub fn result_type_operand(self) -> usize {
        match self.result_type() {
            ResultType::Operand(i) => i,
            _ => 0,
        }
    }

    /// Does the instruction read or write memory, or synchronise?
    pub fn has_side_effects(self) -> bool {
        matches!(
            self,
            Opcode::Store | Opcode::AtomicRmw | Opcode::AtomicCas | Opcode::Barrier
        ) || self.is_terminator()
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A branch destination: a block and the arguments passed to its parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockCall {
    /// The destination block.
    pub block: Block,
    /// One argument per parameter of `block`.
    pub args: Vec<Value>,
}

impl BlockCall {
    /// A call of `block` with `args`.
    pub fn new(block: Block, args: impl Into<Vec<Value>>) -> Self {
        BlockCall {
            block,
            args: args.into(),
        }
    }
}

/// The contents of an instruction: its opcode, value operands and immediates. The result
/// value, if any, lives in the [`DataFlowGraph`](crate::DataFlowGraph).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the fields are described by the variants
pub enum InstructionData {
    /// `lane_id`, `barrier`, `return`.
    Nullary { opcode: Opcode },
    /// `iconst`; `imm` holds the constant's bits, masked to the result type's width.
    UnaryImm { opcode: Opcode, imm: u64 },
    /// `f32const` (bits in the low 32 bits) and `f64const`.
    FloatConst { opcode: Opcode, bits: u64 },
    /// One operand.
    Unary { opcode: Opcode, arg: Value },
    /// Two operands.
    Binary { opcode: Opcode, args: [Value; 2] },
    /// `fma a, b, c` and `select c, a, b`.
    Ternary { opcode: Opcode, args: [Value; 3] },
    /// `icmp cond, a, b`.
    IntCompare {
        opcode: Opcode,
        cond: IntCC,
        args: [Value; 2],
    },
    /// `fcmp cond, a, b`.
    FloatCompare {
        opcode: Opcode,
        cond: FloatCC,
        args: [Value; 2],
    },
    /// `thread_id x` and the other geometry reads.
    Geometry { opcode: Opcode, dim: Dim },
    /// `load.ty space addr+offset`.
    Load {
        opcode: Opcode,
        space: AddrSpace,
        arg: Value,
        offset: i32,
    },
    /// `store space value, addr+offset`: `args = [value, addr]`.
    Store {
        opcode: Opcode,
        space: AddrSpace,
        args: [Value; 2],
        offset: i32,
    },
    /// `atomic_rmw op space addr+offset, operand`: `args = [addr, operand]`.
    AtomicRmw {
        opcode: Opcode,
        op: AtomicRmwOp,
        space: AddrSpace,
        args: [Value; 2],
        offset: i32,
    },
    /// `atomic_cas space addr+offset, expected, replacement`:
    /// `args = [addr, expected, replacement]`.
    AtomicCas {
        opcode: Opcode,
        space: AddrSpace,
        args: [Value; 3],
        offset: i32,
    },
    /// `shared_addr smemN`.
    SharedAddr { opcode: Opcode, var: SharedVar },
    /// `local_addr lmemN`.
    LocalAddr { opcode: Opcode, var: LocalVar },
    /// `jump blockN(args)`.
    Jump { opcode: Opcode, dest: BlockCall },
    /// `brif c, then(args), else(args)`: `dests = [then, else]`.
    Brif {
        opcode: Opcode,
        arg: Value,
        dests: [BlockCall; 2],
    },
    /// `br_table index, default(args), [t0(args), t1(args), ...]`: `dests[0]` is the
    /// default and `dests[1 + i]` the destination of index `i`.
    BrTable {
        opcode: Opcode,
        arg: Value,
        dests: Vec<BlockCall>,
    },
}

impl InstructionData {
    /// The constant zero of `ty` (`f32const`/`f64const` 0.0, else `iconst` 0): what SSA
    /// construction reads where a variable was never defined.
    pub fn zero(ty: Type) -> InstructionData {
        match ty {
            Type::F32 => InstructionData::FloatConst {
                opcode: Opcode::F32const,
                bits: 0,
            },
            Type::F64 => InstructionData::FloatConst {
                opcode: Opcode::F64const,
                bits: 0,
            },
            _ => InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm: 0,
            },
        }
    }

    /// The instruction's opcode.
    #[inline]
    pub fn opcode(&self) -> Opcode {
        use InstructionData::*;
        match *self {
            Nullary { opcode }
            | UnaryImm { opcode, .. }
            | FloatConst { opcode, .. }
            | Unary { opcode, .. }
            | Binary { opcode, .. }
            | Ternary { opcode, .. }
            | IntCompare { opcode, .. }
            | FloatCompare { opcode, .. }
            | Geometry { opcode, .. }
            | Load { opcode, .. }
            | Store { opcode, .. }
            | AtomicRmw { opcode, .. }
            | AtomicCas { opcode, .. }
            | SharedAddr { opcode, .. }
            | LocalAddr { opcode, .. }
            | Jump { opcode, .. }
            | Brif { opcode, .. }
            | BrTable { opcode, .. } => opcode,
        }
    }

    /// The instruction's own value operands, in text order (branch arguments excluded).
    #[inline]
    pub fn args(&self) -> &[Value] {
        use InstructionData::*;
        match self {
            Nullary { .. }
            | UnaryImm { .. }
            | FloatConst { .. }
            | Geometry { .. }
            | SharedAddr { .. }
            | LocalAddr { .. }
            | Jump { .. } => &[],
            Unary { arg, .. } | Load { arg, .. } | Brif { arg, .. } | BrTable { arg, .. } => {
                core::slice::from_ref(arg)
            }
            Binary { args, .. }
            | IntCompare { args, .. }
            | FloatCompare { args, .. }
            | Store { args, .. }
            | AtomicRmw { args, .. } => args,
            Ternary { args, .. } | AtomicCas { args, .. } => args,
        }
    }

    /// Mutable access to the instruction's own value operands.
    #[inline]
    pub fn args_mut(&mut self) -> &mut [Value] {
        use InstructionData::*;
        match self {
            Nullary { .. }
            | UnaryImm { .. }
            | FloatConst { .. }
            | Geometry { .. }
            | SharedAddr { .. }
            | LocalAddr { .. }
            | Jump { .. } => &mut [],
            Unary { arg, .. } | Load { arg, .. } | Brif { arg, .. } | BrTable { arg, .. } => {
                core::slice::from_mut(arg)
            }
            Binary { args, .. }
            | IntCompare { args, .. }
            | FloatCompare { args, .. }
            | Store { args, .. }
            | AtomicRmw { args, .. } => args,
            Ternary { args, .. } | AtomicCas { args, .. } => args,
        }
    }

    /// The branch destinations (empty for non-branches). For `brif`, `[then, else]`; for
    /// `br_table`, the default first.
    #[inline]
    pub fn branch_destinations(&self) -> &[BlockCall] {
        match self {
            InstructionData::Jump { dest, .. } => core::slice::from_ref(dest),
            InstructionData::Brif { dests, .. } => dests,
            InstructionData::BrTable { dests, .. } => dests,
            _ => &[],
        }
    }

    /// Mutable access to the branch destinations.
    #[inline]
    pub fn branch_destinations_mut(&mut self) -> &mut [BlockCall] {
        match self {
            InstructionData::Jump { dest, .. } => core::slice::from_mut(dest),
            InstructionData::Brif { dests, .. } => dests,
            InstructionData::BrTable { dests, .. } => dests,
            _ => &mut [],
        }
    }

    /// Every value the instruction reads: its operands, then each destination's arguments.
    pub fn all_values(&self) -> impl Iterator<Item = Value> + '_ {
        self.args().iter().copied().chain(
            self.branch_destinations()
                .iter()
                .flat_map(|call| call.args.iter().copied()),
        )
    }

    /// Applies `f` to every value the instruction reads.
    #[inline]
    pub fn map_values(&mut self, mut f: impl FnMut(Value) -> Value) {
        for v in self.args_mut() {
            *v = f(*v);
        }
        for call in self.branch_destinations_mut() {
            for v in &mut call.args {
                *v = f(*v);
            }
        }
    }

    /// The memory address space the instruction accesses, if any.
    pub fn addr_space(&self) -> Option<AddrSpace> {
        match *self {
            InstructionData::Load { space, .. }
            | InstructionData::Store { space, .. }
            | InstructionData::AtomicRmw { space, .. }
            | InstructionData::AtomicCas { space, .. } => Some(space),
            _ => None,
        }
    }
}
