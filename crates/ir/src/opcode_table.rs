// The IR's opcode table: every opcode, once.
//
// This file holds nothing but the `for_each_opcode!` macro, so that the code generator's
// build script can `include!` it and write the ISLE declarations of the opcodes from the
// same table the IR crate compiles (see `crates/codegen/build.rs`). Everything else that
// lists opcodes is generated from it: the `Opcode` enum with its name, format and typing
// rules (`instructions.rs`), one builder method per opcode (`builder.rs`), the verifier's
// operand checks of arithmetic opcodes and the fuzz generator's opcode lists.
//
// A row is
//
//     /// documentation
//     Variant = method "name", Format -> Result, Class;
//
// - `method`: the builder method's name; `"name"`: the opcode in the text format;
// - `Format`: the `InstructionFormat` (the shape of operands and immediates);
// - `Result`: where the result type comes from: `None` (no result), `Arg0` / `Arg1` (the
//   type of that operand), `Explicit` (written after a dot in the text, an argument of
//   the builder method), or a fixed type `I1`, `I32`, `F32`, `F64`;
// - `Class`: the types the value operands take when they all share the result's type:
//   `Int` (8 to 64 bits), `IntOrBool` (also `i1`), `Float`, or `Special` (typed by a rule
//   of its own in the verifier).

/// Calls `$mac!` with the table of every opcode:
/// `Variant = method "name", Format -> Result, Class;` each preceded by its documentation.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_opcode {
    ($mac:ident) => {
        $mac! {
            /// An integer constant: `v = iconst.i32 42`. The builder truncates the
            /// immediate to the width of the type, so both `-1` and `0xff` give the
            /// all-ones `i8`.
            Iconst = iconst "iconst", UnaryImm -> Explicit, Special;
            /// An `f32` constant: `v = f32const 1.5`, keeping the exact bits (NaN
            /// payloads included).
            F32const = f32const "f32const", FloatConst -> F32, Special;
            /// An `f64` constant: `v = f64const 1.5`, keeping the exact bits.
            F64const = f64const "f64const", FloatConst -> F64, Special;

            /// Wrapping integer addition.
            Iadd = iadd "iadd", Binary -> Arg0, Int;
            /// Wrapping integer subtraction.
            Isub = isub "isub", Binary -> Arg0, Int;
            /// Wrapping integer multiplication (low half of the product).
            Imul = imul "imul", Binary -> Arg0, Int;
            /// High half of the signed double-width product.
            Smulhi = smulhi "smulhi", Binary -> Arg0, Int;
            /// High half of the unsigned double-width product.
            Umulhi = umulhi "umulhi", Binary -> Arg0, Int;
            /// Signed division rounding toward zero; `x / 0 = -1`, `MIN / -1 = MIN`.
            Sdiv = sdiv "sdiv", Binary -> Arg0, Int;
            /// Unsigned division; `x / 0 = all ones`.
            Udiv = udiv "udiv", Binary -> Arg0, Int;
            /// Signed remainder with the sign of the dividend; `x % 0 = x`, `MIN % -1 = 0`.
            Srem = srem "srem", Binary -> Arg0, Int;
            /// Unsigned remainder; `x % 0 = x`.
            Urem = urem "urem", Binary -> Arg0, Int;
            /// Signed minimum.
            Smin = smin "smin", Binary -> Arg0, Int;
            /// Signed maximum.
            Smax = smax "smax", Binary -> Arg0, Int;
            /// Unsigned minimum.
            Umin = umin "umin", Binary -> Arg0, Int;
            /// Unsigned maximum.
            Umax = umax "umax", Binary -> Arg0, Int;
            /// Bitwise and (also on `i1`).
            Band = band "band", Binary -> Arg0, IntOrBool;
            /// Bitwise or (also on `i1`).
            Bor = bor "bor", Binary -> Arg0, IntOrBool;
            /// Bitwise exclusive or (also on `i1`).
            Bxor = bxor "bxor", Binary -> Arg0, IntOrBool;
            /// Shift left; the amount is unsigned and clamped to the width (result 0).
            Ishl = ishl "ishl", Binary -> Arg0, Int;
            /// Logical shift right; the amount is unsigned and clamped to the width.
            Ushr = ushr "ushr", Binary -> Arg0, Int;
            /// Arithmetic shift right; the amount is unsigned and clamped to the width.
            Sshr = sshr "sshr", Binary -> Arg0, Int;
            /// Funnel shift left: `fshl a, b, n` shifts the double-width value `a:b` (`a`
            /// the high half) left by `n` modulo the width and gives the high half, so
            /// `fshl x, x, n` rotates `x` left.
            Fshl = fshl "fshl", Ternary -> Arg0, Int;
            /// Funnel shift right: `fshr a, b, n` shifts `a:b` right by `n` modulo the
            /// width and gives the low half, so `fshr x, x, n` rotates `x` right.
            Fshr = fshr "fshr", Ternary -> Arg0, Int;
            /// Wrapping negation.
            Ineg = ineg "ineg", Unary -> Arg0, Int;
            /// Bitwise not (also on `i1`).
            Bnot = bnot "bnot", Unary -> Arg0, IntOrBool;
            /// Number of one bits.
            Popcnt = popcnt "popcnt", Unary -> Arg0, Int;
            /// Number of leading zero bits (the width for 0).
            Clz = clz "clz", Unary -> Arg0, Int;
            /// Number of trailing zero bits (the width for 0).
            Ctz = ctz "ctz", Unary -> Arg0, Int;
            /// Integer comparison, giving an `i1`.
            Icmp = icmp "icmp", IntCompare -> I1, Int;

            /// Float addition, rounding to nearest even.
            Fadd = fadd "fadd", Binary -> Arg0, Float;
            /// Float subtraction, rounding to nearest even.
            Fsub = fsub "fsub", Binary -> Arg0, Float;
            /// Float multiplication, rounding to nearest even.
            Fmul = fmul "fmul", Binary -> Arg0, Float;
            /// Float division, correctly rounded to nearest even.
            Fdiv = fdiv "fdiv", Binary -> Arg0, Float;
            /// Float minimum; a NaN operand is ignored, `fmin(-0, +0) = -0`.
            Fmin = fmin "fmin", Binary -> Arg0, Float;
            /// Float maximum; a NaN operand is ignored, `fmax(-0, +0) = +0`.
            Fmax = fmax "fmax", Binary -> Arg0, Float;
            /// Float negation (flips the sign bit, NaN included).
            Fneg = fneg "fneg", Unary -> Arg0, Float;
            /// Float absolute value (clears the sign bit, NaN included).
            Fabs = fabs "fabs", Unary -> Arg0, Float;
            /// Square root, correctly rounded.
            Sqrt = sqrt "sqrt", Unary -> Arg0, Float;
            /// Fused multiply-add `a * b + c` with a single rounding.
            Fma = fma "fma", Ternary -> Arg0, Float;
            /// Float comparison, giving an `i1`.
            Fcmp = fcmp "fcmp", FloatCompare -> I1, Float;

            /// `select c, a, b` is `a` where `c` holds and `b` elsewhere.
            Select = select "select", Ternary -> Arg1, Special;

            /// Zero-extension to a wider integer type.
            Uextend = uextend "uextend", Unary -> Explicit, Special;
            /// Sign-extension to a wider integer type (`i1` true becomes all ones).
            Sextend = sextend "sextend", Unary -> Explicit, Special;
            /// Truncation to a narrower integer type.
            Ireduce = ireduce "ireduce", Unary -> Explicit, Special;
            /// Float to signed integer, rounding toward zero, saturating; NaN gives 0.
            FcvtToSint = fcvt_to_sint "fcvt_to_sint", Unary -> Explicit, Special;
            /// Float to unsigned integer, rounding toward zero, saturating; NaN gives 0.
            FcvtToUint = fcvt_to_uint "fcvt_to_uint", Unary -> Explicit, Special;
            /// Signed integer to float, rounding to nearest even.
            FcvtFromSint = fcvt_from_sint "fcvt_from_sint", Unary -> Explicit, Special;
            /// Unsigned integer to float, rounding to nearest even.
            FcvtFromUint = fcvt_from_uint "fcvt_from_uint", Unary -> Explicit, Special;
            /// `f32` to `f64`, exactly.
            Fpromote = fpromote "fpromote", Unary -> F64, Special;
            /// `f64` to `f32`, rounding to nearest even.
            Fdemote = fdemote "fdemote", Unary -> F32, Special;
            /// Reinterprets the bits of a value as another type of the same width.
            Bitcast = bitcast "bitcast", Unary -> Explicit, Special;

            /// The thread's index within its block, in one dimension (`i32`).
            ThreadId = thread_id "thread_id", Geometry -> I32, Special;
            /// The block's index within the grid, in one dimension (`i32`).
            BlockId = block_id "block_id", Geometry -> I32, Special;
            /// The number of threads per block, in one dimension (`i32`).
            BlockDim = block_dim "block_dim", Geometry -> I32, Special;
            /// The number of blocks in the grid, in one dimension (`i32`).
            GridDim = grid_dim "grid_dim", Geometry -> I32, Special;
            /// The thread's lane within its warp: its linear index in the block modulo
            /// the warp width (`i32`).
            LaneId = lane_id "lane_id", Nullary -> I32, Special;

            /// Loads a value of the result type from memory at `address + offset`.
            Load = load "load", Load -> Explicit, Special;
            /// Stores a value to memory at `address + offset`.
            Store = store "store", Store -> None, Special;
            /// Atomically applies an operation to memory, giving the old value.
            AtomicRmw = atomic_rmw "atomic_rmw", AtomicRmw -> Arg1, Special;
            /// Atomic compare-and-swap, giving the old value.
            AtomicCas = atomic_cas "atomic_cas", AtomicCas -> Arg1, Special;
            /// The `i32` address of a shared-memory variable.
            SharedAddr = shared_addr "shared_addr", SharedAddr -> I32, Special;
            /// The `i32` address of a local-memory variable.
            LocalAddr = local_addr "local_addr", LocalAddr -> I32, Special;
            /// Waits until every thread of the block has reached this barrier; orders the
            /// memory accesses of the block around it.
            Barrier = barrier "barrier", Nullary -> None, Special;

            /// Unconditional jump.
            Jump = jump "jump", Jump -> None, Special;
            /// Conditional branch on an `i1`: to the first destination when it holds.
            Brif = brif "brif", Brif -> None, Special;
            /// Branch table on an `i32` index, with a default for indices out of range.
            BrTable = br_table "br_table", BrTable -> None, Special;
            /// Ends the thread.
            Return = return_ "return", Nullary -> None, Special;
        }
    };
}
