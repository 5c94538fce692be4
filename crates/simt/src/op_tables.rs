// The operation enums of the SIMT instructions: which operation a `bin`, `un`, `tern` or
// `cvt` instruction performs.
//
// This file holds nothing but the `for_each_operation!` macro, so that the code
// generator's build script can `include!` it and write the ISLE declarations of these
// enums from the same table this crate compiles (see `crates/codegen/build.rs`). From it
// come each enum, its name in MIR text and disassembly, its one-byte code in the binary
// format, and the IR opcode whose semantics it has (the emulator evaluates an operation
// with the reference interpreter's rule for that opcode).
//
// A row is `Variant = code, "name", IrOpcode;`, or `Variant = code, "name", IrOpcode:
// [types];` for an operation the machine defines at fewer types than its IR opcode (the
// lowering expands the others). Codes are spelled out, never derived from the order of the
// rows, so that reordering rows cannot change the binary format.

/// Calls `$m!` with every operation enum:
/// `Enum "what it is" { Variant = code, "name", IrOpcode [: [MType, ...]]; ... }`.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_operation {
    ($m:ident) => {
        $m! {
            /// Two-operand operations (`bin`).
            BinOp "binary operation" {
                Add = 0, "add", Iadd;
                Sub = 1, "sub", Isub;
                Mul = 2, "mul", Imul;
                MulHiS = 3, "mulhi.s", Smulhi;
                MulHiU = 4, "mulhi.u", Umulhi;
                DivS = 5, "div.s", Sdiv;
                DivU = 6, "div.u", Udiv;
                RemS = 7, "rem.s", Srem;
                RemU = 8, "rem.u", Urem;
                MinS = 9, "min.s", Smin;
                MinU = 10, "min.u", Umin;
                MaxS = 11, "max.s", Smax;
                MaxU = 12, "max.u", Umax;
                And = 13, "and", Band;
                Or = 14, "or", Bor;
                Xor = 15, "xor", Bxor;
                Shl = 16, "shl", Ishl;
                ShrU = 17, "shr.u", Ushr;
                ShrS = 18, "shr.s", Sshr;
                FAdd = 19, "fadd", Fadd;
                FSub = 20, "fsub", Fsub;
                FMul = 21, "fmul", Fmul;
                FDiv = 22, "fdiv", Fdiv;
                FMin = 23, "fmin", Fmin;
                FMax = 24, "fmax", Fmax;
            }
            /// One-operand operations (`un`).
            UnOp "unary operation" {
                Neg = 0, "neg", Ineg;
                Not = 1, "not", Bnot;
                Popc = 2, "popc", Popcnt;
                Clz = 3, "clz", Clz;
                Ctz = 4, "ctz", Ctz;
                FNeg = 5, "fneg", Fneg;
                FAbs = 6, "fabs", Fabs;
                FSqrt = 7, "fsqrt", Sqrt;
            }
            /// Three-operand operations (`tern`) other than the multiply-adds, which
            /// have instructions of their own. The funnel shifts are 32-bit, like PTX's
            /// `shf`.
            TernOp "ternary operation" {
                ShfL = 0, "shf.l", Fshl: [I32];
                ShfR = 1, "shf.r", Fshr: [I32];
            }
            /// Conversions (`cvt`).
            CvtOp "conversion" {
                Zext = 0, "zext", Uextend;
                Sext = 1, "sext", Sextend;
                Trunc = 2, "trunc", Ireduce;
                FToS = 3, "ftos", FcvtToSint;
                FToU = 4, "ftou", FcvtToUint;
                SToF = 5, "stof", FcvtFromSint;
                UToF = 6, "utof", FcvtFromUint;
                FExt = 7, "fext", Fpromote;
                FTrunc = 8, "ftrunc", Fdemote;
                Bitcast = 9, "bitcast", Bitcast;
            }
        }
    };
}
