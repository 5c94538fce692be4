//! The printer of the text format.
//!
//! `Display` on [`Function`] prints the canonical `.wir` text that the parser reads back:
//! `parse(print(f)) == f` for every function. The grammar is described in `docs/text-format.md`.
//! Entities print with their own numbers, so what the verifier or the interpreter says
//! about `v7` can be found in the printed text.

use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::{BlockCall, InstructionData, Opcode};
use crate::types::Type;
use core::fmt::{self, Write};

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_function(f, self)
    }
}

/// Writes `func` in the text format.
pub fn write_function(w: &mut dyn Write, func: &Function) -> fmt::Result {
    write!(w, "kernel %{}(", func.name)?;
    for (i, p) in func.signature.params.iter().enumerate() {
        if i > 0 {
            w.write_str(", ")?;
        }
        write!(w, "{}: {}", p.name, p.ty)?;
    }
    w.write_str(") {\n")?;
    for (var, data) in func.shared_vars.iter() {
        writeln!(w, "    {var} = shared {}, align {}", data.size, data.align)?;
    }
    for (var, data) in func.local_vars.iter() {
        writeln!(w, "    {var} = local {}, align {}", data.size, data.align)?;
    }
    let has_decls = !func.shared_vars.is_empty() || !func.local_vars.is_empty();
    for (n, &block) in func.layout.blocks().iter().enumerate() {
        if n > 0 || has_decls {
            w.write_char('\n')?;
        }
        write_block_header(w, func, block)?;
        for &inst in func.layout.block_insts(block) {
            w.write_str("    ")?;
            write_inst(w, func, inst)?;
            w.write_char('\n')?;
        }
    }
    w.write_str("}\n")
}

/// Writes `blockN(v1: i32, ...):`.
pub fn write_block_header(w: &mut dyn Write, func: &Function, block: Block) -> fmt::Result {
    write!(w, "{block}")?;
    let params = func.dfg.block_params(block);
    if !params.is_empty() {
        w.write_char('(')?;
        for (i, &p) in params.iter().enumerate() {
            if i > 0 {
                w.write_str(", ")?;
            }
            write!(w, "{p}: {}", func.dfg.value_type(p))?;
        }
        w.write_char(')')?;
    }
    w.write_str(":\n")
}

/// The text of one instruction, without indentation or newline, e.g. `v3 = iadd v1, v2`.
pub fn inst_to_string(func: &Function, inst: Inst) -> String {
    let mut s = String::new();
    let _ = write_inst(&mut s, func, inst);
    s
}

/// Writes one instruction, without indentation or newline.
pub fn write_inst(w: &mut dyn Write, func: &Function, inst: Inst) -> fmt::Result {
    let data = &func.dfg.insts[inst];
    let opcode = data.opcode();
    let result = func.dfg.inst_result(inst);
    if let Some(r) = result {
        write!(w, "{r} = ")?;
    }
    w.write_str(opcode.name())?;
    if opcode.has_explicit_type() {
        match result {
            Some(r) => write!(w, ".{}", func.dfg.value_type(r))?,
            None => w.write_str(".?")?,
        }
    }
    use InstructionData::*;
    match data {
        Nullary { .. } => Ok(()),
        UnaryImm { imm, .. } => {
            let ty = result.map_or(Type::I64, |r| func.dfg.value_type(r));
            write!(w, " {}", format_int_imm(*imm, ty))
        }
        FloatConst { opcode, bits } => {
            w.write_char(' ')?;
            if *opcode == Opcode::F32const {
                w.write_str(&format_f32(*bits as u32))
            } else {
                w.write_str(&format_f64(*bits))
            }
        }
        Unary { arg, .. } => write!(w, " {arg}"),
        Binary { args, .. } => write!(w, " {}, {}", args[0], args[1]),
        Ternary { args, .. } => write!(w, " {}, {}, {}", args[0], args[1], args[2]),
        IntCompare { cond, args, .. } => write!(w, " {cond} {}, {}", args[0], args[1]),
        FloatCompare { cond, args, .. } => write!(w, " {cond} {}, {}", args[0], args[1]),
        Geometry { dim, .. } => write!(w, " {dim}"),
        Load {
            space, arg, offset, ..
        } => write!(w, " {space} {}", Address(*arg, *offset)),
        Store {
            space,
            args,
            offset,
            ..
        } => write!(w, " {space} {}, {}", args[0], Address(args[1], *offset)),
        AtomicRmw {
            op,
            space,
            args,
            offset,
            ..
        } => write!(
            w,
            " {op} {space} {}, {}",
            Address(args[0], *offset),
            args[1]
        ),
        AtomicCas {
            space,
            args,
            offset,
            ..
        } => write!(
            w,
            " {space} {}, {}, {}",
            Address(args[0], *offset),
            args[1],
            args[2]
        ),
        SharedAddr { var, .. } => write!(w, " {var}"),
        LocalAddr { var, .. } => write!(w, " {var}"),
        Jump { dest, .. } => write!(w, " {}", DisplayCall(dest)),
        Brif { arg, dests, .. } => write!(
            w,
            " {arg}, {}, {}",
            DisplayCall(&dests[0]),
            DisplayCall(&dests[1])
        ),
        BrTable { arg, dests, .. } => {
            // A verified br_table always has a default; print a malformed one without
            // panicking so that error messages can show it.
            let Some((default, targets)) = dests.split_first() else {
                return write!(w, " {arg}, <no default>, []");
            };
            write!(w, " {arg}, {}, [", DisplayCall(default))?;
            for (i, d) in targets.iter().enumerate() {
                if i > 0 {
                    w.write_str(", ")?;
                }
                write!(w, "{}", DisplayCall(d))?;
            }
            w.write_char(']')
        }
    }
}

/// `v3`, `v3+8` or `v3-4`.
struct Address(Value, i32);

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            0 => write!(f, "{}", self.0),
            o if o > 0 => write!(f, "{}+{}", self.0, o),
            o => write!(f, "{}{}", self.0, o),
        }
    }
}

/// `block3` or `block3(v1, v2)`.
struct DisplayCall<'a>(&'a BlockCall);

impl fmt::Display for DisplayCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.block)?;
        if !self.0.args.is_empty() {
            f.write_char('(')?;
            for (i, a) in self.0.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{a}")?;
            }
            f.write_char(')')?;
        }
        Ok(())
    }
}

/// An integer immediate of type `ty`, from its masked bits: `i1` as 0 or 1, wider types as
/// signed decimal.
pub fn format_int_imm(bits: u64, ty: Type) -> String {
    let bits = bits & ty.mask();
    if ty.bits() <= 1 {
        return bits.to_string();
    }
    let shift = 64 - ty.bits();
    (((bits << shift) as i64) >> shift).to_string()
}

/// The canonical NaN of `f32`, produced by every float operation whose result is NaN.
pub const CANONICAL_NAN_F32: u32 = 0x7fff_ffff;
/// The canonical NaN of `f64`.
pub const CANONICAL_NAN_F64: u64 = 0x7fff_ffff_ffff_ffff;

/// An `f32` literal that parses back to exactly `bits`: decimal for finite values,
/// `inf`/`-inf`, `nan` for the canonical NaN, raw bits (`0x7fc00000`) for other NaNs.
pub fn format_f32(bits: u32) -> String {
    let x = f32::from_bits(bits);
    if x.is_nan() {
        if bits == CANONICAL_NAN_F32 {
            "nan".to_string()
        } else {
            format!("0x{bits:08x}")
        }
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format_finite(format!("{x:?}"))
    }
}

/// An `f64` literal that parses back to exactly `bits` (see [`format_f32`]).
pub fn format_f64(bits: u64) -> String {
    let x = f64::from_bits(bits);
    if x.is_nan() {
        if bits == CANONICAL_NAN_F64 {
            "nan".to_string()
        } else {
            format!("0x{bits:016x}")
        }
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format_finite(format!("{x:?}"))
    }
}

/// Rust's `Debug` for floats is the shortest text that round-trips; make sure it always
/// reads as a float (has a `.` or an exponent).
fn format_finite(s: String) -> String {
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        s + ".0"
    }
}

/// `n` and `noun`, plural unless `n` is one: `1 argument`, `0 arguments`; for messages.
/// Any integer type (sizes are `u32`, step counts `u64`, lengths `usize`).
pub fn count(n: impl fmt::Display, noun: &str) -> String {
    let n = n.to_string();
    let plural = if n == "1" { "" } else { "s" };
    format!("{n} {noun}{plural}")
}
