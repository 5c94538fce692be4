//! The opcode table and everything generated from it.
//!
//! `for_each_op!` lists every instruction of the bytecode once: its opcode byte, its
//! mnemonic and its fields in encoding order. From that one list come the decoded
//! instruction enum [`Op`], the encoder ([`Op::encode`]), the decoder
//! ([`Op::decode`]) and the disassembler ([`Op::display`]), so the three can never
//! disagree about a layout. A field's type says how it is encoded: each implements
//! `Field`, whose encodings are described in `docs/bytecode.md`.
//!
//! The table is exported so that other crates (the emulator's dispatch, statistics
//! tables) can generate their code from it too: `for_each_op!(my_macro)` calls
//! `my_macro!` with the whole list.
//!
//! This module defines the format only: which combinations of types and register classes
//! make sense is checked by the validator in [`crate::decode()`].

use crate::codes::ByteCode;
use crate::decode::DecodeError;
use crate::operands::{
    Address, BinOp, Cond, CvtOp, Guard, MType, Operand, SpecialReg, TernOp, UnOp,
};
use crate::regs::{Reg, RegClass};
use core::fmt::{self, Write};
use warplift_ir::write::{format_f32, format_f64, format_int_imm};
use warplift_ir::{AddrSpace, AtomicRmwOp, Type};

/// A program counter: the byte offset of an instruction in its kernel's code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pc(pub u32);

impl fmt::Display for Pc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

/// Calls `$m!` with the opcode table: one entry per instruction,
/// `Name = opcode, "mnemonic" { field: Type, ... };` with the fields in encoding order.
///
/// Opcodes are below `0x80`: the opcode byte's top bit says whether a guard byte follows.
#[macro_export]
macro_rules! for_each_op {
    ($m:ident) => {
        $m! {
            /// `dst = a OP b` at type `ty`.
            Bin = 0x01, "bin" { op: BinOp, ty: MType, dst: Reg, a: Reg, b: Operand };
            /// `dst = OP src` at type `ty`.
            Un = 0x02, "un" { op: UnOp, ty: MType, dst: Reg, src: Reg };
            /// Integer `dst = a * b + c`, wrapping.
            Mad = 0x03, "mad" { ty: MType, dst: Reg, a: Reg, b: Operand, c: Operand };
            /// Float `dst = a * b + c` with one rounding.
            Fma = 0x04, "fma" { ty: MType, dst: Reg, a: Reg, b: Reg, c: Reg };
            /// `dst = OP(a, b, c)` at type `ty` (the funnel shifts).
            Tern = 0x16, "tern" { op: TernOp, ty: MType, dst: Reg, a: Reg, b: Reg, c: Operand };
            /// `dst = a COND b` into a predicate register.
            Setp = 0x05, "setp" { cond: Cond, ty: MType, dst: Reg, a: Reg, b: Operand };
            /// `dst = pred ? a : b`.
            Selp = 0x06, "selp" { ty: MType, dst: Reg, a: Operand, b: Operand, pred: Reg };
            /// `dst = convert(src)` from type `from` to type `to`.
            Cvt = 0x07, "cvt" { op: CvtOp, to: MType, from: MType, dst: Reg, src: Reg };
            /// `dst = src`.
            Mov = 0x08, "mov" { ty: MType, dst: Reg, src: Operand };
            /// `dst = special register` (a `b32` value).
            ReadSpecial = 0x09, "sreg" { dst: Reg, sreg: SpecialReg };
            /// `dst = kernel parameter index`.
            LdParam = 0x0a, "ldparam" { ty: MType, dst: Reg, index: u32 };
            /// `dst = load ty from space [addr]`.
            Ld = 0x0b, "ld" { space: AddrSpace, ty: MType, dst: Reg, addr: Address };
            /// `store ty src to space [addr]`.
            St = 0x0c, "st" { space: AddrSpace, ty: MType, addr: Address, src: Operand };
            /// `dst = old [addr]; [addr] = old OP src`, atomically.
            Atom = 0x0d, "atom" {
                op: AtomicRmwOp, space: AddrSpace, ty: MType, dst: Reg, addr: Address,
                src: Operand
            };
            /// `dst = old [addr]; if old == expected { [addr] = replacement }`, atomically.
            Cas = 0x0e, "cas" {
                space: AddrSpace, ty: MType, dst: Reg, addr: Address, expected: Operand,
                replacement: Operand
            };
            /// Block-wide barrier.
            Bar = 0x0f, "bar" {};
            /// Stores register `src` into spill slot `slot` of the local frame.
            Spill = 0x10, "spill" { slot: u32, src: Reg };
            /// Loads register `dst` from spill slot `slot` of the local frame.
            Reload = 0x11, "reload" { dst: Reg, slot: u32 };
            /// Unconditional jump.
            Jump = 0x12, "jump" { target: Pc };
            /// Uniform two-way branch: every active lane goes the same way.
            BrUni = 0x13, "br.uni" { cond: Guard, taken: Pc, not_taken: Pc };
            /// Divergent two-way branch, with the point where the lanes reconverge (the
            /// immediate post-dominator's block start; `None`: at exit).
            BrDiv = 0x14, "br.div" {
                cond: Guard, taken: Pc, not_taken: Pc, reconv: Option<Pc>
            };
            /// Ends the thread.
            Ret = 0x15, "ret" {};
        }
    };
}

/// The top bit of the opcode byte: a guard byte follows.
pub(crate) const GUARD_FLAG: u8 = 0x80;

macro_rules! define_ops {
    ( $( $(#[$doc:meta])* $name:ident = $code:literal, $mnemonic:literal
         { $( $field:ident : $fty:ty ),* $(,)? } ; )* ) => {
        /// A decoded instruction's operation: one variant per opcode of the table.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)] // fields as in the MIR instruction they encode
        pub enum Op {
            $( $(#[$doc])* $name { $( $field: $fty ),* }, )*
        }

        /// The opcode bytes, by name.
        #[allow(non_upper_case_globals, missing_docs)]
        pub mod opcode {
            $( pub const $name: u8 = $code; )*
        }

        impl Op {
            /// The opcode byte (without the guard flag).
            pub fn opcode(&self) -> u8 {
                match self {
                    $( Op::$name { .. } => $code, )*
                }
            }

            /// The mnemonic in the disassembly.
            pub fn mnemonic(&self) -> &'static str {
                match self {
                    $( Op::$name { .. } => $mnemonic, )*
                }
            }

            /// Appends the operation's fields (not the opcode byte) to `out`.
            pub(crate) fn encode_fields(&self, out: &mut Vec<u8>) {
                match self {
                    $( Op::$name { $( $field ),* } => {
                        $( Field::put($field, out); )*
                    } )*
                }
            }

            /// Reads the fields of opcode `code`; `None` if `code` is no opcode.
            pub(crate) fn decode_fields(
                code: u8,
                r: &mut Reader<'_>,
            ) -> Result<Option<Op>, DecodeError> {
                match code {
                    $( $code => {
                        $( let $field = <$fty as Field>::get(r)?; )*
                        Ok(Some(Op::$name { $( $field ),* }))
                    } )*
                    _ => Ok(None),
                }
            }

            /// Writes the fields of the disassembly: modifiers as `.x` after the
            /// mnemonic, then operands separated by commas.
            fn display_fields(&self, ctx: &ShowCtx, out: &mut String) -> fmt::Result {
                let mut mods = String::new();
                let mut operands: Vec<String> = Vec::new();
                match self {
                    $( Op::$name { $( $field ),* } => {
                        $( Field::show($field, ctx, &mut mods, &mut operands)?; )*
                    } )*
                }
                out.push_str(self.mnemonic());
                out.push_str(&mods);
                for (i, o) in operands.iter().enumerate() {
                    out.push_str(if i == 0 { " " } else { ", " });
                    out.push_str(o);
                }
                Ok(())
            }
        }

        /// Every opcode byte and its mnemonic, in table order.
        pub const OPCODES: &[(u8, &str)] = &[ $( ($code, $mnemonic), )* ];
    };
}

for_each_op!(define_ops);

/// What the disassembly of a field may need to know about its instruction.
pub(crate) struct ShowCtx {
    /// The type immediates are read at.
    pub imm_ty: Option<MType>,
}

impl Op {
    /// Encodes the instruction (`guard` and operation) at the end of `out`.
    pub fn encode(&self, guard: Option<Guard>, out: &mut Vec<u8>) {
        match guard {
            None => out.push(self.opcode()),
            Some(g) => {
                out.push(self.opcode() | GUARD_FLAG);
                g.put(out);
            }
        }
        self.encode_fields(out);
    }

    /// Decodes the instruction at byte `pc` of `code`: its guard, operation and the pc of
    /// the next instruction. Checks the encoding only (see [`crate::decode()`] for meaning).
    pub fn decode(code: &[u8], pc: u32) -> Result<(Option<Guard>, Op, u32), DecodeError> {
        let mut r = Reader::new(code, pc);
        let byte = r.u8()?;
        let guard = if byte & GUARD_FLAG != 0 {
            Some(Guard::get(&mut r)?)
        } else {
            None
        };
        let op = Op::decode_fields(byte & !GUARD_FLAG, &mut r)?
            .ok_or(DecodeError::UnknownOpcode { pc, byte })?;
        Ok((guard, op, r.pos))
    }

    /// The type the operation's immediates (and same-class register operands) have.
    pub fn imm_type(&self) -> Option<MType> {
        match *self {
            Op::Bin { ty, .. }
            | Op::Un { ty, .. }
            | Op::Mad { ty, .. }
            | Op::Fma { ty, .. }
            | Op::Tern { ty, .. }
            | Op::Setp { ty, .. }
            | Op::Selp { ty, .. }
            | Op::Mov { ty, .. }
            | Op::LdParam { ty, .. }
            | Op::Ld { ty, .. }
            | Op::St { ty, .. }
            | Op::Atom { ty, .. }
            | Op::Cas { ty, .. } => Some(ty),
            _ => None,
        }
    }

    /// Calls `f` on every register operand with its role, uses first (in field order),
    /// then the definition. Branch conditions are uses; the guard is not part of the
    /// operation.
    pub fn visit_regs(&self, mut f: impl FnMut(Reg, Role)) {
        use Role::{Def, Use};
        let operand = |o: Operand, f: &mut dyn FnMut(Reg, Role)| {
            if let Operand::Reg(r) = o {
                f(r, Use);
            }
        };
        let base = |a: Address, f: &mut dyn FnMut(Reg, Role)| {
            if let Some(r) = a.base {
                f(r, Use);
            }
        };
        match *self {
            Op::Bin { dst, a, b, .. } | Op::Setp { dst, a, b, .. } => {
                f(a, Use);
                operand(b, &mut f);
                f(dst, Def);
            }
            Op::Un { dst, src, .. } | Op::Cvt { dst, src, .. } => {
                f(src, Use);
                f(dst, Def);
            }
            Op::Mad { dst, a, b, c, .. } => {
                f(a, Use);
                operand(b, &mut f);
                operand(c, &mut f);
                f(dst, Def);
            }
            Op::Fma { dst, a, b, c, .. } => {
                for r in [a, b, c] {
                    f(r, Use);
                }
                f(dst, Def);
            }
            Op::Tern { dst, a, b, c, .. } => {
                f(a, Use);
                f(b, Use);
                operand(c, &mut f);
                f(dst, Def);
            }
            Op::Selp {
                dst, a, b, pred, ..
            } => {
                operand(a, &mut f);
                operand(b, &mut f);
                f(pred, Use);
                f(dst, Def);
            }
            Op::Mov { dst, src, .. } => {
                operand(src, &mut f);
                f(dst, Def);
            }
            Op::ReadSpecial { dst, .. } | Op::LdParam { dst, .. } | Op::Reload { dst, .. } => {
                f(dst, Def)
            }
            Op::Ld { dst, addr, .. } => {
                base(addr, &mut f);
                f(dst, Def);
            }
            Op::St { addr, src, .. } => {
                operand(src, &mut f);
                base(addr, &mut f);
            }
            Op::Atom { dst, addr, src, .. } => {
                base(addr, &mut f);
                operand(src, &mut f);
                f(dst, Def);
            }
            Op::Cas {
                dst,
                addr,
                expected,
                replacement,
                ..
            } => {
                base(addr, &mut f);
                operand(expected, &mut f);
                operand(replacement, &mut f);
                f(dst, Def);
            }
            Op::Spill { src, .. } => f(src, Use),
            Op::BrUni { cond, .. } | Op::BrDiv { cond, .. } => f(cond.pred, Use),
            Op::Bar {} | Op::Jump { .. } | Op::Ret {} => {}
        }
    }

    /// Is this a terminator (the last instruction of a block)?
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            Op::Jump { .. } | Op::BrUni { .. } | Op::BrDiv { .. } | Op::Ret {}
        )
    }

    /// Calls `f` on every branch destination.
    pub fn for_each_target(&self, mut f: impl FnMut(Pc)) {
        match *self {
            Op::Jump { target } => f(target),
            Op::BrUni {
                taken, not_taken, ..
            }
            | Op::BrDiv {
                taken, not_taken, ..
            } => {
                f(taken);
                f(not_taken);
            }
            _ => {}
        }
    }

    /// The disassembly of the operation (without guard).
    pub fn display(&self) -> String {
        let mut out = String::new();
        let ctx = ShowCtx {
            imm_ty: self.imm_type(),
        };
        // Writing into a String cannot fail.
        let _ = self.display_fields(&ctx, &mut out);
        out
    }
}

/// Whether a register operand is read or written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read by the instruction.
    Use,
    /// Written by the instruction.
    Def,
}

/// Disassembles a guard: `@$p1 ` or `@!$p1 `.
pub fn display_guard(guard: Option<Guard>) -> String {
    match guard {
        None => String::new(),
        Some(g) => format!("@{}{} ", if g.negated { "!" } else { "" }, g.pred),
    }
}

/// A cursor over a kernel's code, for decoding one instruction.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    /// The next byte to read.
    pub pos: u32,
    /// The instruction being decoded, for error messages.
    pc: u32,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], pc: u32) -> Self {
        Reader { bytes, pos: pc, pc }
    }

    fn truncated(&self) -> DecodeError {
        DecodeError::Truncated { pc: self.pc }
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = *self
            .bytes
            .get(self.pos as usize)
            .ok_or_else(|| self.truncated())?;
        self.pos += 1;
        Ok(b)
    }

    fn le(&mut self, n: u32) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for i in 0..n {
            v |= u64::from(self.u8()?) << (8 * i);
        }
        Ok(v)
    }

    fn uleb(&mut self) -> Result<u32, DecodeError> {
        let mut v = 0u64;
        for i in 0..5 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| DecodeError::BadNumber { pc: self.pc });
            }
        }
        Err(DecodeError::BadNumber { pc: self.pc })
    }

    fn sleb(&mut self) -> Result<i32, DecodeError> {
        let mut v = 0i64;
        for i in 0..5 {
            let b = self.u8()?;
            v |= i64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                let shift = 7 * (i + 1);
                if shift < 64 && b & 0x40 != 0 {
                    v |= -1i64 << shift;
                }
                return i32::try_from(v).map_err(|_| DecodeError::BadNumber { pc: self.pc });
            }
        }
        Err(DecodeError::BadNumber { pc: self.pc })
    }
}

/// Appends `v` as unsigned LEB128.
pub(crate) fn put_uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Appends `v` as signed LEB128.
pub(crate) fn put_sleb(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if (v == 0 && b & 0x40 == 0) || (v == -1 && b & 0x40 != 0) {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// How one kind of instruction field is encoded, decoded and disassembled.
pub(crate) trait Field: Sized {
    /// Appends the encoding.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads the encoding, checking that it is well formed.
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
    /// Adds the disassembly: a modifier to `mods` or an operand to `operands`.
    fn show(&self, ctx: &ShowCtx, mods: &mut String, operands: &mut Vec<String>) -> fmt::Result;
}

/// The enums with byte codes are modifiers in the disassembly.
macro_rules! code_fields {
    ($( $ty:ty ),*) => { $(
        impl Field for $ty {
            fn put(&self, out: &mut Vec<u8>) {
                out.push(self.code());
            }
            fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                let byte = r.u8()?;
                <$ty>::from_code(byte).ok_or(DecodeError::BadCode {
                    pc: r.pc,
                    what: <$ty as ByteCode>::WHAT,
                    byte,
                })
            }
            fn show(&self, _: &ShowCtx, mods: &mut String, _: &mut Vec<String>) -> fmt::Result {
                write!(mods, ".{}", self.mod_name())
            }
        }
    )* };
}

code_fields!(
    BinOp,
    UnOp,
    TernOp,
    CvtOp,
    MType,
    AddrSpace,
    AtomicRmwOp,
    Cond
);

/// The disassembly name of a modifier.
trait ModName {
    fn mod_name(self) -> String;
}

macro_rules! mod_names {
    ($( $ty:ty => |$v:ident| $e:expr ),* $(,)?) => { $(
        impl ModName for $ty {
            fn mod_name(self) -> String {
                let $v = self;
                $e
            }
        }
    )* };
}

mod_names!(
    BinOp => |v| v.name().to_string(),
    UnOp => |v| v.name().to_string(),
    TernOp => |v| v.name().to_string(),
    CvtOp => |v| v.name().to_string(),
    MType => |v| v.name().to_string(),
    AddrSpace => |v| v.name().to_string(),
    AtomicRmwOp => |v| v.name().to_string(),
    Cond => |v| v.to_string(),
);

impl Field for SpecialReg {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(self.code());
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let byte = r.u8()?;
        SpecialReg::from_code(byte).ok_or(DecodeError::BadCode {
            pc: r.pc,
            what: SpecialReg::WHAT,
            byte,
        })
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(format!("%{self}"));
        Ok(())
    }
}

/// Register byte: class in bits 6–7 (0 `b32`, 1 `b64`, 2 `pred`), number in bits 0–5.
const CLASS_SHIFT: u32 = 6;
/// Registers per class the bytecode can name: register numbers fit in six bits.
pub const MAX_REGS_PER_CLASS: u32 = 64;
/// The register-byte class code that marks an immediate operand or a missing base.
const NOT_A_REG: u8 = 3;

fn reg_byte(r: Reg) -> u8 {
    ((r.class() as u8) << CLASS_SHIFT) | (r.index() as u8 & 0x3f)
}

fn reg_of_byte(pc: u32, byte: u8) -> Result<Reg, DecodeError> {
    let class = match byte >> CLASS_SHIFT {
        0 => RegClass::B32,
        1 => RegClass::B64,
        2 => RegClass::Pred,
        _ => return Err(DecodeError::BadRegister { pc, byte }),
    };
    Ok(Reg::phys(u32::from(byte & 0x3f), class))
}

impl Field for Reg {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(reg_byte(*self));
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let byte = r.u8()?;
        reg_of_byte(r.pc, byte)
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(self.to_string());
        Ok(())
    }
}

/// A predicate operand, possibly negated: bit 7 negation, bit 6 zero, bits 0–5 the `pred`
/// register number.
impl Field for Guard {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(((self.negated as u8) << 7) | (self.pred.index() as u8 & 0x3f));
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let byte = r.u8()?;
        if byte & 0x40 != 0 {
            return Err(DecodeError::BadRegister { pc: r.pc, byte });
        }
        Ok(Guard {
            pred: Reg::phys(u32::from(byte & 0x3f), RegClass::Pred),
            negated: byte & 0x80 != 0,
        })
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(format!(
            "{}{}",
            if self.negated { "!" } else { "" },
            self.pred
        ));
        Ok(())
    }
}

/// The tag byte of an immediate operand: `0b11_0000ss`, `ss` = log2 of its byte count.
const IMM_TAG: u8 = NOT_A_REG << CLASS_SHIFT;

impl Field for Operand {
    fn put(&self, out: &mut Vec<u8>) {
        match *self {
            Operand::Reg(reg) => out.push(reg_byte(reg)),
            Operand::Imm(bits) => {
                let log = match bits {
                    0..=0xff => 0,
                    0x100..=0xffff => 1,
                    0x1_0000..=0xffff_ffff => 2,
                    _ => 3,
                };
                out.push(IMM_TAG | log);
                out.extend_from_slice(&bits.to_le_bytes()[..1 << log]);
            }
        }
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let byte = r.u8()?;
        if byte & IMM_TAG != IMM_TAG {
            return reg_of_byte(r.pc, byte).map(Operand::Reg);
        }
        if byte & !IMM_TAG > 3 {
            return Err(DecodeError::BadRegister { pc: r.pc, byte });
        }
        Ok(Operand::Imm(r.le(1 << (byte & 3))?))
    }
    fn show(&self, ctx: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(match *self {
            Operand::Reg(reg) => reg.to_string(),
            Operand::Imm(bits) => format_imm(bits, ctx.imm_ty),
        });
        Ok(())
    }
}

/// An immediate in the disassembly, at its operation's type.
fn format_imm(bits: u64, ty: Option<MType>) -> String {
    let ir = match ty {
        Some(MType::F32) => return format_f32(bits as u32),
        Some(MType::F64) => return format_f64(bits),
        Some(MType::Pred) => Type::I1,
        Some(MType::I8) => Type::I8,
        Some(MType::I16) => Type::I16,
        Some(MType::I32) => Type::I32,
        Some(MType::I64) | None => Type::I64,
    };
    format_int_imm(bits, ir)
}

/// A memory operand: the base register byte (or `0xff` for none), then the offset as
/// signed LEB128.
impl Field for Address {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(self.base.map_or(0xff, reg_byte));
        put_sleb(out, i64::from(self.offset));
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let byte = r.u8()?;
        let base = if byte == 0xff {
            None
        } else {
            Some(reg_of_byte(r.pc, byte)?)
        };
        let offset = r.sleb()?;
        Ok(Address { base, offset })
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(self.to_string());
        Ok(())
    }
}

/// Parameter indices and spill slots: unsigned LEB128.
impl Field for u32 {
    fn put(&self, out: &mut Vec<u8>) {
        put_uleb(out, u64::from(*self));
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.uleb()
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(self.to_string());
        Ok(())
    }
}

/// Branch targets: 4 bytes, little-endian, so that an instruction's length does not
/// depend on where its targets are (the encoder lays code out in one pass).
impl Field for Pc {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Pc(r.le(4)? as u32))
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(self.to_string());
        Ok(())
    }
}

/// The value of a reconvergence field that means "at exit".
pub(crate) const RECONV_EXIT: u32 = u32::MAX;

/// Reconvergence points: like a [`Pc`], with `0xffff_ffff` for "at exit".
impl Field for Option<Pc> {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.map_or(RECONV_EXIT, |p| p.0).to_le_bytes());
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let v = r.le(4)? as u32;
        Ok((v != RECONV_EXIT).then_some(Pc(v)))
    }
    fn show(&self, _: &ShowCtx, _: &mut String, operands: &mut Vec<String>) -> fmt::Result {
        operands.push(match self {
            Some(pc) => format!("reconv {pc}"),
            None => "reconv exit".to_string(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_distinct_and_leave_the_guard_bit_free() {
        let mut seen = std::collections::HashSet::new();
        for &(code, name) in OPCODES {
            assert!(code & GUARD_FLAG == 0, "{name}");
            assert!(seen.insert(code), "{name}");
        }
    }

    #[test]
    fn leb128_round_trips_at_the_limits() {
        for v in [0u32, 1, 63, 64, 127, 128, 300, u32::MAX - 1, u32::MAX] {
            let mut out = Vec::new();
            put_uleb(&mut out, u64::from(v));
            let mut r = Reader::new(&out, 0);
            assert_eq!(r.uleb().unwrap(), v);
            assert_eq!(r.pos as usize, out.len());
        }
        for v in [0i32, 1, -1, 63, -64, 64, -65, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            put_sleb(&mut out, i64::from(v));
            let mut r = Reader::new(&out, 0);
            assert_eq!(r.sleb().unwrap(), v, "{out:x?}");
            assert_eq!(r.pos as usize, out.len());
        }
        // Too long, or out of range.
        let mut r = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 0);
        assert!(r.uleb().is_err());
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x1f], 0);
        assert!(r.uleb().is_err());
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f], 0);
        assert!(r.sleb().is_err());
    }
}
