//! Opcodes and instruction data.
//!
//! Every opcode is declared once, in the table inside the `for_each_opcode!` macro, with its
//! text-format name, its instruction format and its documentation. The `Opcode` enum, the
//! name lookup used by the parser and the format dispatch all come from that one table. The
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

/// Calls `$mac!` with the table of every opcode: `Variant = "name", Format, has_result;`
/// each preceded by its documentation.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_opcode {
    ($mac:ident) => {
        $mac! {
            /// An integer constant: `v = iconst.i32 42`.
            Iconst = "iconst", UnaryImm, true;
            /// An `f32` constant: `v = f32const 1.5`.
            F32const = "f32const", FloatConst, true;
            /// An `f64` constant: `v = f64const 1.5`.
            F64const = "f64const", FloatConst, true;

            /// Wrapping integer addition.
            Iadd = "iadd", Binary, true;
            /// Wrapping integer subtraction.
            Isub = "isub", Binary, true;
            /// Wrapping integer multiplication (low half of the product).
            Imul = "imul", Binary, true;
            /// High half of the signed double-width product.
            Smulhi = "smulhi", Binary, true;
            /// High half of the unsigned double-width product.
            Umulhi = "umulhi", Binary, true;
            /// Signed division rounding toward zero; `x / 0 = -1`, `MIN / -1 = MIN`.
            Sdiv = "sdiv", Binary, true;
            /// Unsigned division; `x / 0 = all ones`.
            Udiv = "udiv", Binary, true;
            /// Signed remainder with the sign of the dividend; `x % 0 = x`, `MIN % -1 = 0`.
            Srem = "srem", Binary, true;
            /// Unsigned remainder; `x % 0 = x`.
            Urem = "urem", Binary, true;
            /// Signed minimum.
            Smin = "smin", Binary, true;
            /// Signed maximum.
            Smax = "smax", Binary, true;
            /// Unsigned minimum.
            Umin = "umin", Binary, true;
            /// Unsigned maximum.
            Umax = "umax", Binary, true;
            /// Bitwise and (also on `i1`).
            Band = "band", Binary, true;
            /// Bitwise or (also on `i1`).
            Bor = "bor", Binary, true;
            /// Bitwise exclusive or (also on `i1`).
            Bxor = "bxor", Binary, true;
            /// Shift left; the amount is unsigned and clamped to the width (result 0).
            Ishl = "ishl", Binary, true;
            /// Logical shift right; the amount is unsigned and clamped to the width.
            Ushr = "ushr", Binary, true;
            /// Arithmetic shift right; the amount is unsigned and clamped to the width.
            Sshr = "sshr", Binary, true;
            /// Wrapping negation.
            Ineg = "ineg", Unary, true;
            /// Bitwise not (also on `i1`).
            Bnot = "bnot", Unary, true;
            /// Number of one bits.
            Popcnt = "popcnt", Unary, true;
            /// Number of leading zero bits (the width for 0).
            Clz = "clz", Unary, true;
            /// Number of trailing zero bits (the width for 0).
            Ctz = "ctz", Unary, true;
            /// Integer comparison, giving an `i1`.
            Icmp = "icmp", IntCompare, true;

            /// Float addition, rounding to nearest even.
            Fadd = "fadd", Binary, true;
            /// Float subtraction, rounding to nearest even.
            Fsub = "fsub", Binary, true;
            /// Float multiplication, rounding to nearest even.
            Fmul = "fmul", Binary, true;
            /// Float division, correctly rounded to nearest even.
            Fdiv = "fdiv", Binary, true;
            /// Float minimum; a NaN operand is ignored, `fmin(-0, +0) = -0`.
            Fmin = "fmin", Binary, true;
            /// Float maximum; a NaN operand is ignored, `fmax(-0, +0) = +0`.
            Fmax = "fmax", Binary, true;
            /// Float negation (flips the sign bit, NaN included).
            Fneg = "fneg", Unary, true;
            /// Float absolute value (clears the sign bit, NaN included).
            Fabs = "fabs", Unary, true;
            /// Square root, correctly rounded.
            Sqrt = "sqrt", Unary, true;
            /// Fused multiply-add `a * b + c` with a single rounding.
            Fma = "fma", Ternary, true;
            /// Float comparison, giving an `i1`.
            Fcmp = "fcmp", FloatCompare, true;

            /// `select c, a, b` is `a` where `c` holds and `b` elsewhere.
            Select = "select", Ternary, true;

            /// Zero-extension to a wider integer type.
            Uextend = "uextend", Unary, true;
            /// Sign-extension to a wider integer type (`i1` true becomes all ones).
            Sextend = "sextend", Unary, true;
            /// Truncation to a narrower integer type.
            Ireduce = "ireduce", Unary, true;
            /// Float to signed integer, rounding toward zero, saturating; NaN gives 0.
            FcvtToSint = "fcvt_to_sint", Unary, true;
            /// Float to unsigned integer, rounding toward zero, saturating; NaN gives 0.
            FcvtToUint = "fcvt_to_uint", Unary, true;
            /// Signed integer to float, rounding to nearest even.
            FcvtFromSint = "fcvt_from_sint", Unary, true;
            /// Unsigned integer to float, rounding to nearest even.
            FcvtFromUint = "fcvt_from_uint", Unary, true;
            /// `f32` to `f64`, exactly.
            Fpromote = "fpromote", Unary, true;
            /// `f64` to `f32`, rounding to nearest even.
            Fdemote = "fdemote", Unary, true;
            /// Reinterprets the bits of a value as another type of the same width.
            Bitcast = "bitcast", Unary, true;

            /// The thread's index within its block, in one dimension (`i32`).
            ThreadId = "thread_id", Geometry, true;
            /// The block's index within the grid, in one dimension (`i32`).
            BlockId = "block_id", Geometry, true;
            /// The number of threads per block, in one dimension (`i32`).
            BlockDim = "block_dim", Geometry, true;
            /// The number of blocks in the grid, in one dimension (`i32`).
            GridDim = "grid_dim", Geometry, true;
            /// The thread's lane within its warp: its linear index in the block modulo
            /// the warp width (`i32`).
            LaneId = "lane_id", Nullary, true;

            /// Loads a value of the result type from memory at `address + offset`.
            Load = "load", Load, true;
            /// Stores a value to memory at `address + offset`.
            Store = "store", Store, false;
            /// Atomically applies an operation to memory, giving the old value.
            AtomicRmw = "atomic_rmw", AtomicRmw, true;
            /// Atomic compare-and-swap, giving the old value.
            AtomicCas = "atomic_cas", AtomicCas, true;
            /// The `i32` address of a shared-memory variable.
            SharedAddr = "shared_addr", SharedAddr, true;
            /// The `i32` address of a local-memory variable.
            LocalAddr = "local_addr", LocalAddr, true;
            /// Waits until every thread of the block has reached this barrier; orders the
            /// memory accesses of the block around it.
            Barrier = "barrier", Nullary, false;

            /// Unconditional jump.
            Jump = "jump", Jump, false;
            /// Conditional branch on an `i1`: to the first destination when it holds.
            Brif = "brif", Brif, false;
            /// Branch table on an `i32` index, with a default for indices out of range.
            BrTable = "br_table", BrTable, false;
            /// Ends the thread.
            Return = "return", Nullary, false;
        }
    };
}

macro_rules! declare_opcodes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $format:ident, $result:literal; )+) => {
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

            /// Does an instruction with this opcode define a result value?
            pub fn has_result(self) -> bool {
                match self { $( Opcode::$variant => $result, )+ }
            }
        }
    };
}

for_each_opcode!(declare_opcodes);

impl Opcode {
    /// Looks an opcode up by its text-format name.
    pub fn from_name(name: &str) -> Option<Opcode> {
        Opcode::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// Does this opcode end a block?
    pub fn is_terminator(self) -> bool {
        matches!(
            self,
            Opcode::Jump | Opcode::Brif | Opcode::BrTable | Opcode::Return
        )
    }

    /// Is this a branch (a terminator with destinations)?
    pub fn is_branch(self) -> bool {
        matches!(self, Opcode::Jump | Opcode::Brif | Opcode::BrTable)
    }

    /// Does the text format write this opcode's result type after a dot
    /// (`iconst.i32`, `load.f32`, `uextend.i64`)? Other opcodes infer it from operands.
    pub fn has_explicit_type(self) -> bool {
        matches!(
            self,
            Opcode::Iconst
                | Opcode::Load
                | Opcode::Uextend
                | Opcode::Sextend
                | Opcode::Ireduce
                | Opcode::FcvtToSint
                | Opcode::FcvtToUint
                | Opcode::FcvtFromSint
                | Opcode::FcvtFromUint
                | Opcode::Bitcast
        )
    }

    /// The result type this opcode always produces, for opcodes whose result type is not
    /// written in the text and not taken from an operand; `None` otherwise.
    pub fn fixed_result_type(self) -> Option<Type> {
        use Opcode::*;
        match self {
            Icmp | Fcmp => Some(Type::I1),
            ThreadId | BlockId | BlockDim | GridDim | LaneId | SharedAddr | LocalAddr => {
                Some(Type::I32)
            }
            F32const | Fdemote => Some(Type::F32),
            F64const | Fpromote => Some(Type::F64),
            _ => None,
        }
    }

    /// Which operand gives its type to the result when neither the text nor the opcode
    /// fixes it: the second for `select c, a, b` and for atomics (the first is the
    /// condition or the address), the first for everything else.
    pub fn result_type_operand(self) -> usize {
        match self {
            Opcode::Select | Opcode::AtomicRmw | Opcode::AtomicCas => 1,
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
    pub fn branch_destinations(&self) -> &[BlockCall] {
        match self {
            InstructionData::Jump { dest, .. } => core::slice::from_ref(dest),
            InstructionData::Brif { dests, .. } => dests,
            InstructionData::BrTable { dests, .. } => dests,
            _ => &[],
        }
    }

    /// Mutable access to the branch destinations.
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
