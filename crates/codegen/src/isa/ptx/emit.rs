//! The PTX emitter proper: one pass over the blocks in order, one or a few PTX
//! instructions per machine instruction.
//!
//! Every expansion follows one rule so that guards and register reuse stay correct: the
//! intermediate values of an expansion go to emitter temporaries, computed without the
//! guard (they are pure, so computing them in inactive lanes is harmless), and only the
//! instructions with an effect — the final write of the destination, a memory access, a
//! branch — carry the instruction's guard. The destination is written last, so an
//! allocation that gives the destination the register of a source is safe.
//!
//! How each operation meets the IR's semantics (`docs/ir.md`) is said where it is
//! emitted; the module documentation of [`super`] describes the kernel's frame.

use core::fmt::Write;
use std::sync::OnceLock;

use warplift_ir::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC, Type};

use super::name::{name, push_u32, Name, ReadyNames};
use super::{is_ptx_identifier, PtxError, PtxOptions};
use crate::mir::{
    Address, BinOp, Cond, CvtOp, Guard, MBlock, MInst, MInstKind, MType, MirFunction, Operand, Reg,
    RegClass, SpecialReg, TernOp, UnOp,
};

type Result<T> = core::result::Result<T, PtxError>;

/// The canonical `f32` NaN of the IR.
const CANON_NAN_F32: &str = "0f7FFFFFFF";
/// The canonical `f64` NaN of the IR.
const CANON_NAN_F64: &str = "0d7FFFFFFFFFFFFFFF";

/// Register names of the allocated registers, by class (`%` and the class's prefix).
const REG_PREFIX: [&str; 3] = ["%r", "%rd", "%p"];

/// Register names of the emitter's temporaries, by class.
const TEMP_PREFIX: [&str; 3] = ["%tr", "%trd", "%tp"];

/// The names of the first registers and temporaries of each class, made once per
/// process: registers in the prefixes `0..3` (by class), temporaries in `3..6`. Register
/// allocation gives at most 64 registers of a class, and the reserved ones follow them.
fn ready_names() -> &'static ReadyNames {
    static NAMES: OnceLock<ReadyNames> = OnceLock::new();
    NAMES.get_or_init(|| {
        let prefixes = [REG_PREFIX, TEMP_PREFIX].concat();
        ReadyNames::new(&prefixes, 80)
    })
}

/// How a sub-word integer source must be widened before a 32-bit PTX instruction reads it.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Ext {
    /// The operation's low bits do not depend on the upper bits (add, and, shl, ...).
    Any,
    /// Sign-extend from the type's width.
    Sign,
    /// Zero-extend from the type's width.
    Zero,
}

/// The emitter's state for one function.
pub(super) struct Emitter<'a> {
    func: &'a MirFunction,
    opts: &'a PtxOptions,
    /// The instructions of the body.
    body: String,
    /// Per class, one more than the highest physical register number used.
    num_regs: [u32; 3],
    /// Per class, the most temporaries any one instruction needed.
    num_temps: [u32; 3],
    /// Per class, the next free temporary of the current instruction.
    temps: [u32; 3],
    /// Whether `%wl_sbase` / `%wl_lbase` (window bases) are needed.
    uses_shared: bool,
    uses_local: bool,
    /// The last source line given to `.loc`.
    last_line: u32,
    /// Where we are, for errors.
    block: MBlock,
    index: usize,
}

impl<'a> Emitter<'a> {
    pub(super) fn new(func: &'a MirFunction, opts: &'a PtxOptions) -> Self {
        Emitter {
            func,
            opts,
            // About as much text as the kernel needs (a line of some 30 bytes per
            // instruction and its `.loc`, some 42 bytes in all on branchy code), so that
            // the body is not copied as it grows.
            body: String::with_capacity(func.num_insts() * 48),
            num_regs: [0; 3],
            num_temps: [0; 3],
            temps: [0; 3],
            uses_shared: false,
            uses_local: false,
            last_line: 0,
            block: MBlock::from_u32(0),
            index: 0,
        }
    }

    /// Emits the kernel at the end of `out` (the module's text, so that the kernel is not
    /// copied into it afterwards). Nothing is appended when it fails.
    pub(super) fn run_into(mut self, out: &mut String) -> Result<()> {
        let func = self.func;
        if !is_ptx_identifier(&func.name) {
            return Err(PtxError::BadName(func.name.clone()));
        }
        if func.order.is_empty() {
            return Err(PtxError::Empty);
        }
        for (i, &block) in func.order.iter().enumerate() {
            self.block = block;
            let data = &func.blocks[block];
            if !data.params.is_empty() {
                return Err(self.not_allocated("block parameters"));
            }
            let n = data.insts.len();
            if n == 0 || !data.insts[n - 1].kind.is_terminator() {
                return Err(PtxError::BadTerminator(block));
            }
            if data.insts[..n - 1].iter().any(|i| i.kind.is_terminator()) {
                return Err(PtxError::BadTerminator(block));
            }
            self.body.push_str(LABEL_PREFIX);
            push_u32(&mut self.body, block.as_u32());
            self.body.push_str(":\n");
            let next = func.order.get(i + 1).copied();
            for (index, inst) in data.insts.iter().enumerate() {
                self.index = index;
                self.temps = [0; 3];
                self.loc(inst);
                self.inst(inst, next)?;
            }
        }
        self.finish(out);
        Ok(())
    }

    /// Appends header, declarations, prologue and body to `out`.
    fn finish(mut self, out: &mut String) {
        let func = self.func;
        let opts = self.opts;
        out.reserve(self.body.len() + 1024);
        let shared_bytes = func.shared_size.next_multiple_of(4);
        let zero_shared = opts.zero_init && shared_bytes > 0;
        if zero_shared {
            self.uses_shared = true;
        }
        let _ = write!(out, ".visible .entry {}(", func.name);
        for (i, p) in func.params.iter().enumerate() {
            let _ = write!(
                out,
                "{}\n\t.param .{} p{i}",
                if i > 0 { "," } else { "" },
                param_type(p.ty)
            );
        }
        let _ = writeln!(out, "\n)\n{{");
        // The shared window is declared in the kernel's scope, so the kernels of one module
        // each have their own.
        if self.uses_shared || shared_bytes > 0 {
            let _ = writeln!(
                out,
                "\t.shared .align 16 .b8 __wl_shared[{}];",
                shared_bytes.max(16)
            );
        }

        // Prologue first (it may need temporaries), then declarations in front of it.
        self.temps = [0; 3];
        let body = core::mem::take(&mut self.body);
        let local_zero_bytes = if opts.zero_init {
            func.local_size.next_multiple_of(4)
        } else {
            0
        };
        let frame = func
            .local_frame_size()
            .max(local_zero_bytes)
            .next_multiple_of(8);
        if local_zero_bytes > 0 {
            self.zero_local(local_zero_bytes);
        }
        if zero_shared {
            self.zero_shared(shared_bytes);
        }
        let prologue = core::mem::take(&mut self.body);

        for class in RegClass::ALL {
            let n = self.num_regs[class.index()];
            if n > 0 {
                let _ = writeln!(
                    out,
                    "\t.reg .{} %{}<{n}>;",
                    ptx_class(class),
                    class.prefix()
                );
            }
        }
        for class in RegClass::ALL {
            let n = self.num_temps[class.index()];
            if n > 0 {
                let _ = writeln!(
                    out,
                    "\t.reg .{} {}<{n}>;",
                    ptx_class(class),
                    TEMP_PREFIX[class.index()]
                );
            }
        }
        if self.uses_shared {
            let _ = writeln!(out, "\t.reg .b32 %wl_sbase;");
        }
        if self.uses_local || frame > 0 {
            let _ = writeln!(out, "\t.reg .b32 %wl_lbase;");
            let _ = writeln!(out, "\t.local .align 8 .b8 __wl_local[{}];", frame.max(8));
        }
        out.push('\n');
        if self.uses_shared {
            let _ = writeln!(out, "\tmov.u32 %wl_sbase, __wl_shared;");
        }
        if self.uses_local || frame > 0 {
            let _ = writeln!(out, "\tmov.u32 %wl_lbase, __wl_local;");
        }
        out.push_str(&prologue);
        out.push_str(&body);
        out.push_str("}\n");
    }

    /// Zeroes the first `bytes` (a multiple of 4) of the thread's local window.
    fn zero_local(&mut self, bytes: u32) {
        let _ = writeln!(self.body, "\t// zero-initialise the local window");
        if bytes <= 64 {
            for off in (0..bytes).step_by(4) {
                self.ins("", format_args!("st.local.u32 [__wl_local+{off}], 0"));
            }
            return;
        }
        let i = self.tmp(RegClass::B32);
        let a = self.tmp(RegClass::B32);
        let p = self.tmp(RegClass::Pred);
        self.ins("", format_args!("mov.u32 {i}, 0"));
        let _ = writeln!(self.body, "$Lwl_zl:");
        self.ins("", format_args!("add.u32 {a}, %wl_lbase, {i}"));
        self.ins("", format_args!("st.local.u32 [{a}], 0"));
        self.ins("", format_args!("add.u32 {i}, {i}, 4"));
        self.ins("", format_args!("setp.lt.u32 {p}, {i}, {bytes}"));
        self.ins(&name!("@{p} "), format_args!("bra.uni $Lwl_zl"));
        self.uses_local = true;
    }

    /// Zeroes the `bytes` (a multiple of 4) of the block's shared window, every thread of
    /// the block taking a stride, then waits for the whole block.
    fn zero_shared(&mut self, bytes: u32) {
        let _ = writeln!(self.body, "\t// zero-initialise the shared window");
        let off = self.tmp(RegClass::B32);
        let step = self.tmp(RegClass::B32);
        let t = self.tmp(RegClass::B32);
        let p = self.tmp(RegClass::Pred);
        // Linear thread index x + y*bdx + z*bdx*bdy, and the block's thread count.
        self.ins("", format_args!("mov.u32 {off}, %tid.z"));
        self.ins("", format_args!("mov.u32 {t}, %ntid.y"));
        self.ins("", format_args!("mul.lo.u32 {off}, {off}, {t}"));
        self.ins("", format_args!("mov.u32 {t}, %tid.y"));
        self.ins("", format_args!("add.u32 {off}, {off}, {t}"));
        self.ins("", format_args!("mov.u32 {step}, %ntid.x"));
        self.ins("", format_args!("mul.lo.u32 {off}, {off}, {step}"));
        self.ins("", format_args!("mov.u32 {t}, %tid.x"));
        self.ins("", format_args!("add.u32 {off}, {off}, {t}"));
        self.ins("", format_args!("mov.u32 {t}, %ntid.y"));
        self.ins("", format_args!("mul.lo.u32 {step}, {step}, {t}"));
        self.ins("", format_args!("mov.u32 {t}, %ntid.z"));
        self.ins("", format_args!("mul.lo.u32 {step}, {step}, {t}"));
        self.ins("", format_args!("shl.b32 {off}, {off}, 2"));
        self.ins("", format_args!("shl.b32 {step}, {step}, 2"));
        let _ = writeln!(self.body, "$Lwl_zs:");
        self.ins("", format_args!("setp.ge.u32 {p}, {off}, {bytes}"));
        self.ins(&name!("@{p} "), format_args!("bra $Lwl_zs_done"));
        self.ins("", format_args!("add.u32 {t}, %wl_sbase, {off}"));
        self.ins("", format_args!("st.shared.u32 [{t}], 0"));
        self.ins("", format_args!("add.u32 {off}, {off}, {step}"));
        self.ins("", format_args!("bra $Lwl_zs"));
        let _ = writeln!(self.body, "$Lwl_zs_done:");
        self.ins("", format_args!("bar.sync 0"));
    }

    // ---------------------------------------------------------------------------------
    // Small helpers.

    fn ins(&mut self, guard: &str, text: core::fmt::Arguments<'_>) {
        self.body.push('\t');
        self.body.push_str(guard);
        let _ = self.body.write_fmt(text);
        self.body.push_str(";\n");
    }

    /// Writes one instruction line made of `parts` under `guard`: the frequent
    /// instructions are written piece by piece rather than through the formatting
    /// machinery, which cost more than the rest of emission.
    fn line(&mut self, guard: &str, parts: &[&str]) {
        self.body.push('\t');
        self.body.push_str(guard);
        for part in parts {
            self.body.push_str(part);
        }
        self.body.push_str(";\n");
    }

    /// A `.loc` before `inst` when its source line differs from the last one given.
    fn loc(&mut self, inst: &MInst) {
        if self.opts.file_name.is_none() || inst.srcloc.is_unknown() {
            return;
        }
        if inst.srcloc.line != self.last_line {
            self.last_line = inst.srcloc.line;
            self.body.push_str("\t.loc 1 ");
            push_u32(&mut self.body, inst.srcloc.line);
            self.body.push(' ');
            push_u32(&mut self.body, inst.srcloc.col);
            self.body.push('\n');
        }
    }

    fn not_allocated(&self, what: &str) -> PtxError {
        PtxError::NotAllocated {
            block: self.block,
            what: what.to_string(),
        }
    }

    fn invalid(&self, message: impl Into<String>) -> PtxError {
        PtxError::InvalidInst {
            block: self.block,
            index: self.index,
            message: message.into(),
        }
    }

    /// A fresh temporary of `class`, private to the current instruction.
    fn tmp(&mut self, class: RegClass) -> Name {
        let c = class.index();
        let n = self.temps[c];
        self.temps[c] += 1;
        self.num_temps[c] = self.num_temps[c].max(n + 1);
        ready_names()
            .get(3 + c, n)
            .unwrap_or_else(|| Name::numbered(TEMP_PREFIX[c], n))
    }

    /// The PTX name of physical register `reg`, which must be of class `class`.
    fn reg(&mut self, reg: Reg, class: RegClass) -> Result<Name> {
        if reg.is_virtual() {
            return Err(self.not_allocated(&format!("virtual register {reg}")));
        }
        if reg.class() != class {
            return Err(PtxError::WrongClass {
                block: self.block,
                index: self.index,
                reg,
            });
        }
        let c = class.index();
        self.num_regs[c] = self.num_regs[c].max(reg.index() + 1);
        Ok(ready_names()
            .get(c, reg.index())
            .unwrap_or_else(|| Name::numbered(REG_PREFIX[c], reg.index())))
    }

    /// The guard prefix of `inst`: `""`, `"@%p1 "` or `"@!%p1 "`.
    fn guard(&mut self, guard: Option<Guard>) -> Result<Name> {
        match guard {
            None => Ok(Name::Static("")),
            Some(g) => {
                let p = self.reg(g.pred, RegClass::Pred)?;
                let n = if g.negated { "!" } else { "" };
                Ok(Name::concat(&["@", n, &p, " "]))
            }
        }
    }

    /// An integer source of a 32- or 64-bit PTX instruction, widened as `ext` says when
    /// the type is sub-word.
    fn int_src(&mut self, op: Operand, ty: MType, ext: Ext) -> Result<Name> {
        match op {
            Operand::Imm(bits) => Ok(int_imm(bits, ty, ext)),
            Operand::Reg(r) => {
                let name = self.reg(r, ty.class())?;
                Ok(self.widen(name, ty, ext))
            }
        }
    }

    /// Widens a sub-word value held in register `name` into a temporary.
    fn widen(&mut self, name: Name, ty: MType, ext: Ext) -> Name {
        match (ty, ext) {
            (MType::I8 | MType::I16, Ext::Sign) => {
                let t = self.tmp(RegClass::B32);
                let s = if ty == MType::I8 { "s8" } else { "s16" };
                self.ins("", format_args!("cvt.s32.{s} {t}, {name}"));
                t
            }
            (MType::I8 | MType::I16, Ext::Zero) => {
                let t = self.tmp(RegClass::B32);
                self.ins(
                    "",
                    format_args!("and.b32 {t}, {name}, {}", mask_hex(ty.bits())),
                );
                t
            }
            _ => name,
        }
    }

    /// Any source operand printed for a bit-moving instruction of type `ty`.
    fn bits_src(&mut self, op: Operand, ty: MType) -> Result<Name> {
        match op {
            Operand::Reg(r) => self.reg(r, ty.class()),
            Operand::Imm(bits) => Ok(match ty {
                MType::F32 => Name::hex("0f", bits, 8),
                MType::F64 => Name::hex("0d", bits, 16),
                MType::Pred => name!("{}", bits & 1),
                _ => int_imm(bits, ty, Ext::Any),
            }),
        }
    }

    /// A predicate source: the register, or an immediate put in a temporary (the
    /// predicate instructions take no immediates).
    fn pred_src(&mut self, op: Operand) -> Result<Name> {
        match op {
            Operand::Reg(r) => self.reg(r, RegClass::Pred),
            Operand::Imm(bits) => {
                let t = self.tmp(RegClass::Pred);
                self.ins("", format_args!("mov.pred {t}, {}", bits & 1));
                Ok(t)
            }
        }
    }

    /// Replaces a NaN in `value` (of type `ty`, `F32` or `F64`) by the IR's canonical
    /// NaN, writing `dst` under `guard`.
    fn canonicalize(&mut self, guard: &str, ty: MType, dst: &str, value: &str) {
        let p = self.tmp(RegClass::Pred);
        let (t, c, nan) = if ty == MType::F64 {
            ("f64", "b64", CANON_NAN_F64)
        } else {
            ("f32", "b32", CANON_NAN_F32)
        };
        self.ins("", format_args!("testp.notanumber.{t} {p}, {value}"));
        self.ins(guard, format_args!("selp.{c} {dst}, {nan}, {value}, {p}"));
    }

    // ---------------------------------------------------------------------------------
    // Instructions.

    fn inst(&mut self, inst: &MInst, next: Option<MBlock>) -> Result<()> {
        use MInstKind::*;
        if inst.kind.is_terminator() && inst.guard.is_some() {
            return Err(self.invalid("a terminator cannot be guarded"));
        }
        let g = self.guard(inst.guard)?;
        let g = g.as_str();
        match &inst.kind {
            &Bin { op, ty, dst, a, b } => self.bin(g, op, ty, dst, a, b),
            &Un { op, ty, dst, src } => self.un(g, op, ty, dst, src),
            &Mad { ty, dst, a, b, c } => {
                self.require_int(ty, "mad")?;
                let w = width(ty);
                let d = self.reg(dst, ty.class())?;
                let a = self.reg(a, ty.class())?;
                let b = self.int_src(b, ty, Ext::Any)?;
                let c = self.int_src(c, ty, Ext::Any)?;
                self.ins(g, format_args!("mad.lo.s{w} {d}, {a}, {b}, {c}"));
                Ok(())
            }
            &Tern {
                op,
                ty,
                dst,
                a,
                b,
                c,
            } => {
                if !op.accepts(ty) {
                    return Err(self.invalid(format!("{} on {ty}", op.name())));
                }
                let d = self.reg(dst, ty.class())?;
                let a = self.reg(a, ty.class())?;
                let b = self.reg(b, ty.class())?;
                let c = self.int_src(c, ty, Ext::Any)?;
                // `shf` takes the low half first; `wrap` reduces the amount modulo 32.
                let dir = match op {
                    TernOp::ShfL => "l",
                    TernOp::ShfR => "r",
                };
                self.ins(g, format_args!("shf.{dir}.wrap.b32 {d}, {b}, {a}, {c}"));
                Ok(())
            }
            &Fma { ty, dst, a, b, c } => {
                self.require_float(ty, "fma")?;
                let t = float_name(ty);
                let d = self.reg(dst, ty.class())?;
                let a = self.reg(a, ty.class())?;
                let b = self.reg(b, ty.class())?;
                let c = self.reg(c, ty.class())?;
                self.float_result(g, ty, &d, |_| name!("fma.rn.{t}"), &name!("{a}, {b}, {c}"));
                Ok(())
            }
            &Setp {
                cond,
                ty,
                dst,
                a,
                b,
            } => self.setp(g, cond, ty, dst, a, b),
            &Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => {
                let c = self.reg(pred, RegClass::Pred)?;
                if ty == MType::Pred {
                    // No selp.pred: (c & a) | (!c & b).
                    let a = self.pred_src(a)?;
                    let b = self.pred_src(b)?;
                    let d = self.reg(dst, RegClass::Pred)?;
                    let t1 = self.tmp(RegClass::Pred);
                    let t2 = self.tmp(RegClass::Pred);
                    self.ins("", format_args!("and.pred {t1}, {c}, {a}"));
                    self.ins("", format_args!("and.pred {t2}, !{c}, {b}"));
                    self.ins(g, format_args!("or.pred {d}, {t1}, {t2}"));
                } else {
                    let a = self.bits_src(a, ty)?;
                    let b = self.bits_src(b, ty)?;
                    let d = self.reg(dst, ty.class())?;
                    self.ins(g, format_args!("selp.{} {d}, {a}, {b}, {c}", bits_name(ty)));
                }
                Ok(())
            }
            &Cvt {
                op,
                to,
                from,
                dst,
                src,
            } => self.cvt(g, op, to, from, dst, src),
            &Mov { ty, dst, src } => {
                let s = self.bits_src(src, ty)?;
                let d = self.reg(dst, ty.class())?;
                self.line(g, &["mov.", bits_name(ty), " ", &d, ", ", &s]);
                Ok(())
            }
            &ReadSpecial { dst, sreg } => {
                let d = self.reg(dst, RegClass::B32)?;
                let s = match sreg {
                    SpecialReg::Tid(dim) => name!("%tid.{}", dim_name(dim)),
                    SpecialReg::Ctaid(dim) => name!("%ctaid.{}", dim_name(dim)),
                    SpecialReg::Ntid(dim) => name!("%ntid.{}", dim_name(dim)),
                    SpecialReg::Nctaid(dim) => name!("%nctaid.{}", dim_name(dim)),
                    // The IR's lane is the linear thread index modulo the warp size; with
                    // PTX's 32-thread warps, formed from consecutive linear indices, that
                    // is %laneid.
                    SpecialReg::LaneId => Name::from("%laneid"),
                };
                self.ins(g, format_args!("mov.u32 {d}, {s}"));
                Ok(())
            }
            &LdParam { ty, dst, index } => {
                let Some(param) = self.func.params.get(index as usize) else {
                    return Err(self.invalid(format!("no kernel parameter {index}")));
                };
                if MType::from_ir(param.ty) != ty {
                    return Err(self.invalid(format!(
                        "ld.param.{ty} of parameter {index}, which is {}",
                        param.ty
                    )));
                }
                let d = self.reg(dst, ty.class())?;
                if ty == MType::Pred {
                    let t = self.tmp(RegClass::B32);
                    self.ins("", format_args!("ld.param.u8 {t}, [p{index}]"));
                    self.ins(g, format_args!("setp.ne.b32 {d}, {t}, 0"));
                } else {
                    self.ins(
                        g,
                        format_args!("ld.param.{} {d}, [p{index}]", param_type(param.ty)),
                    );
                }
                Ok(())
            }
            &Ld {
                space,
                ty,
                dst,
                addr,
            } => {
                let a = self.address(space, addr)?;
                let sp = space_name(space);
                let d = self.reg(dst, ty.class())?;
                if ty == MType::Pred {
                    // One byte; true when non-zero.
                    let t = self.tmp(RegClass::B32);
                    self.ins(g, format_args!("ld.{sp}.u8 {t}, {a}"));
                    self.ins(g, format_args!("setp.ne.b32 {d}, {t}, 0"));
                } else {
                    self.ins(g, format_args!("ld.{sp}.{} {d}, {a}", mem_type(ty)));
                }
                Ok(())
            }
            &St {
                space,
                ty,
                src,
                addr,
            } => {
                let a = self.address(space, addr)?;
                let sp = space_name(space);
                if ty == MType::Pred {
                    // One byte, 0 or 1.
                    let v = match src {
                        Operand::Imm(bits) => name!("{}", bits & 1),
                        Operand::Reg(r) => {
                            let p = self.reg(r, RegClass::Pred)?;
                            let t = self.tmp(RegClass::B32);
                            self.ins("", format_args!("selp.u32 {t}, 1, 0, {p}"));
                            t
                        }
                    };
                    self.ins(g, format_args!("st.{sp}.u8 {a}, {v}"));
                } else {
                    // Stores take no float literals: write a float immediate's bits.
                    let v = match (src, ty) {
                        (Operand::Imm(bits), MType::F32) => int_imm(bits, MType::I32, Ext::Any),
                        (Operand::Imm(bits), MType::F64) => int_imm(bits, MType::I64, Ext::Any),
                        _ => self.bits_src(src, ty)?,
                    };
                    self.ins(g, format_args!("st.{sp}.{} {a}, {v}", mem_type(ty)));
                }
                Ok(())
            }
            &Atom {
                op,
                space,
                ty,
                dst,
                addr,
                src,
            } => self.atom(g, Some(op), space, ty, dst, addr, src, None),
            &Cas {
                space,
                ty,
                dst,
                addr,
                expected,
                replacement,
            } => self.atom(g, None, space, ty, dst, addr, expected, Some(replacement)),
            Bar => {
                self.ins(g, format_args!("bar.sync 0"));
                Ok(())
            }
            &Spill { src, slot } => {
                if slot.0 >= self.func.spill_slots {
                    return Err(self.invalid(format!("spill slot {} out of range", slot.0)));
                }
                let off = self.func.spill_slot_offset(slot);
                let class = src.class();
                let s = self.reg(src, class)?;
                match class {
                    RegClass::B32 => {
                        self.ins(g, format_args!("st.local.u32 [__wl_local+{off}], {s}"))
                    }
                    RegClass::B64 => {
                        self.ins(g, format_args!("st.local.u64 [__wl_local+{off}], {s}"))
                    }
                    RegClass::Pred => {
                        let t = self.tmp(RegClass::B32);
                        self.ins("", format_args!("selp.u32 {t}, 1, 0, {s}"));
                        self.ins(g, format_args!("st.local.u8 [__wl_local+{off}], {t}"));
                    }
                }
                Ok(())
            }
            &Reload { dst, slot } => {
                if slot.0 >= self.func.spill_slots {
                    return Err(self.invalid(format!("spill slot {} out of range", slot.0)));
                }
                let off = self.func.spill_slot_offset(slot);
                let class = dst.class();
                let d = self.reg(dst, class)?;
                match class {
                    RegClass::B32 => {
                        self.ins(g, format_args!("ld.local.u32 {d}, [__wl_local+{off}]"))
                    }
                    RegClass::B64 => {
                        self.ins(g, format_args!("ld.local.u64 {d}, [__wl_local+{off}]"))
                    }
                    RegClass::Pred => {
                        let t = self.tmp(RegClass::B32);
                        self.ins(g, format_args!("ld.local.u8 {t}, [__wl_local+{off}]"));
                        self.ins(g, format_args!("setp.ne.b32 {d}, {t}, 0"));
                    }
                }
                Ok(())
            }
            Jump { dest } => {
                if !dest.args.is_empty() {
                    return Err(self.not_allocated("branch arguments"));
                }
                if Some(dest.block) != next {
                    self.line("", &["bra.uni ", &label(dest.block)]);
                }
                Ok(())
            }
            Branch {
                pred,
                negated,
                taken,
                not_taken,
                divergent,
            } => {
                if !taken.args.is_empty() || !not_taken.args.is_empty() {
                    return Err(self.not_allocated("branch arguments"));
                }
                let p = self.reg(*pred, RegClass::Pred)?;
                let bra = if *divergent { "bra" } else { "bra.uni" };
                let (mut first, mut second, mut neg) = (taken.block, not_taken.block, *negated);
                // Branch on the inverted condition when that lets the second half fall
                // through.
                if Some(first) == next && Some(second) != next {
                    core::mem::swap(&mut first, &mut second);
                    neg = !neg;
                }
                let n = if neg { "!" } else { "" };
                if first != second {
                    self.line("", &["@", n, &p, " ", bra, " ", &label(first)]);
                }
                if Some(second) != next {
                    self.line("", &["bra.uni ", &label(second)]);
                }
                Ok(())
            }
            Ret => {
                self.ins("", format_args!("ret"));
                Ok(())
            }
        }
    }

    fn require_int(&self, ty: MType, what: &str) -> Result<()> {
        if matches!(ty, MType::I8 | MType::I16 | MType::I32 | MType::I64) {
            Ok(())
        } else {
            Err(self.invalid(format!("{what} on {ty}")))
        }
    }

    fn require_float(&self, ty: MType, what: &str) -> Result<()> {
        if ty.is_float() {
            Ok(())
        } else {
            Err(self.invalid(format!("{what} on {ty}")))
        }
    }

    /// A float operation `opcode operands` whose result is written to `dst` under
    /// `guard`: `f32` results of the hardware's arithmetic are already the canonical NaN
    /// (`0x7fffffff`); `f64` results and the software-expanded `f32` operations
    /// (`div.rn`, `sqrt.rn`) are canonicalised explicitly.
    fn float_result(
        &mut self,
        guard: &str,
        ty: MType,
        dst: &str,
        opcode: impl Fn(MType) -> Name,
        operands: &str,
    ) {
        let opc = opcode(ty);
        let hardware_canonical =
            ty == MType::F32 && !opc.starts_with("div") && !opc.starts_with("sqrt");
        if hardware_canonical {
            self.ins(guard, format_args!("{opc} {dst}, {operands}"));
        } else {
            let t = self.tmp(ty.class());
            self.ins("", format_args!("{opc} {t}, {operands}"));
            self.canonicalize(guard, ty, dst, &t);
        }
    }

    fn bin(&mut self, g: &str, op: BinOp, ty: MType, dst: Reg, a: Reg, b: Operand) -> Result<()> {
        use BinOp::*;
        let class = ty.class();
        match op {
            And | Or | Xor if ty == MType::Pred => {
                let a = self.reg(a, RegClass::Pred)?;
                let d = self.reg(dst, RegClass::Pred)?;
                let name = match op {
                    And => "and",
                    Or => "or",
                    _ => "xor",
                };
                match b {
                    Operand::Reg(b) => {
                        let b = self.reg(b, RegClass::Pred)?;
                        self.ins(g, format_args!("{name}.pred {d}, {a}, {b}"));
                    }
                    Operand::Imm(bits) => {
                        let one = bits & 1 == 1;
                        let text = match (op, one) {
                            (And, true) | (Or, false) | (Xor, false) => {
                                name!("mov.pred {d}, {a}")
                            }
                            (And, false) => name!("mov.pred {d}, 0"),
                            (Or, true) => name!("mov.pred {d}, 1"),
                            _ => name!("not.pred {d}, {a}"),
                        };
                        self.ins(g, format_args!("{text}"));
                    }
                }
                return Ok(());
            }
            FAdd | FSub | FMul | FDiv | FMin | FMax => {
                self.require_float(ty, op.name())?;
                let t = float_name(ty);
                let a = self.reg(a, class)?;
                let b = self.bits_src(b, ty)?;
                let d = self.reg(dst, class)?;
                match op {
                    FMin | FMax => self.fminmax(g, op == FMin, ty, &d, &a, &b),
                    _ => {
                        let opc = match op {
                            FAdd => "add",
                            FSub => "sub",
                            FMul => "mul",
                            _ => "div",
                        };
                        if ty == MType::F32 && op != FDiv {
                            // The hardware's result is canonical (see `float_result`).
                            self.line(g, &[opc, ".rn.f32 ", &d, ", ", &a, ", ", &b]);
                        } else {
                            let operands = Name::concat(&[&a, ", ", &b]);
                            self.float_result(
                                g,
                                ty,
                                &d,
                                |_| Name::concat(&[opc, ".rn.", t]),
                                &operands,
                            );
                        }
                    }
                }
                return Ok(());
            }
            _ => self.require_int(ty, op.name())?,
        }
        let w = width(ty);
        let sub = matches!(ty, MType::I8 | MType::I16);
        let a_reg = self.reg(a, class)?;
        match op {
            Add | Sub | Mul | And | Or | Xor => {
                let b = self.int_src(b, ty, Ext::Any)?;
                let d = self.reg(dst, class)?;
                let opc = match op {
                    Add => "add.s",
                    Sub => "sub.s",
                    Mul => "mul.lo.s",
                    And => "and.b",
                    Or => "or.b",
                    _ => "xor.b",
                };
                self.line(g, &[opc, width_digits(w), " ", &d, ", ", &a_reg, ", ", &b]);
            }
            MulHiS | MulHiU => {
                let (ext, s) = if op == MulHiS {
                    (Ext::Sign, "s")
                } else {
                    (Ext::Zero, "u")
                };
                let a = self.widen(a_reg, ty, ext);
                let b = self.int_src(b, ty, ext)?;
                let d = self.reg(dst, class)?;
                if sub {
                    // The whole 2W-bit product fits 32 bits; its high half is a shift away.
                    let t = self.tmp(RegClass::B32);
                    self.ins("", format_args!("mul.lo.s32 {t}, {a}, {b}"));
                    self.ins(g, format_args!("shr.{s}32 {d}, {t}, {}", ty.bits()));
                } else {
                    self.ins(g, format_args!("mul.hi.{s}{w} {d}, {a}, {b}"));
                }
            }
            DivU | RemU => {
                let a = self.widen(a_reg, ty, Ext::Zero);
                let d = self.reg(dst, class)?;
                let opc = if op == DivU { "div" } else { "rem" };
                match b {
                    Operand::Imm(bits) if mask(bits, ty.bits()) == 0 => {
                        // udiv by 0 is all ones; urem by 0 is the dividend.
                        if op == DivU {
                            self.ins(g, format_args!("mov.b{w} {d}, -1"));
                        } else {
                            self.ins(g, format_args!("mov.b{w} {d}, {a}"));
                        }
                    }
                    Operand::Imm(_) => {
                        let b = self.int_src(b, ty, Ext::Zero)?;
                        self.ins(g, format_args!("{opc}.u{w} {d}, {a}, {b}"));
                    }
                    Operand::Reg(_) => {
                        // PTX leaves division by zero unspecified: select the IR's result.
                        let b = self.int_src(b, ty, Ext::Zero)?;
                        let z = self.tmp(RegClass::Pred);
                        let q = self.tmp(class);
                        self.ins("", format_args!("setp.eq.u{w} {z}, {b}, 0"));
                        self.ins("", format_args!("{opc}.u{w} {q}, {a}, {b}"));
                        let on_zero = if op == DivU {
                            Name::from("-1")
                        } else {
                            a.clone()
                        };
                        self.ins(g, format_args!("selp.b{w} {d}, {on_zero}, {q}, {z}"));
                    }
                }
            }
            DivS | RemS => {
                let a = self.widen(a_reg, ty, Ext::Sign);
                let d = self.reg(dst, class)?;
                let is_div = op == DivS;
                match b {
                    Operand::Imm(bits) => {
                        let m = mask(bits, ty.bits());
                        if m == 0 {
                            // sdiv by 0 is -1; srem by 0 is the dividend.
                            if is_div {
                                self.ins(g, format_args!("mov.b{w} {d}, -1"));
                            } else {
                                self.ins(g, format_args!("mov.b{w} {d}, {a}"));
                            }
                        } else if m == mask(u64::MAX, ty.bits()) {
                            // x / -1 = -x, wrapping (MIN / -1 = MIN); x % -1 = 0.
                            if is_div {
                                self.ins(g, format_args!("neg.s{w} {d}, {a}"));
                            } else {
                                self.ins(g, format_args!("mov.b{w} {d}, 0"));
                            }
                        } else {
                            let b = int_imm(bits, ty, Ext::Sign);
                            let opc = if is_div { "div" } else { "rem" };
                            self.ins(g, format_args!("{opc}.s{w} {d}, {a}, {b}"));
                        }
                    }
                    Operand::Reg(_) => {
                        // Divide by 1 instead of 0 or -1 (PTX leaves both unspecified for
                        // MIN), then select the IR's results for those divisors.
                        let b = self.int_src(b, ty, Ext::Sign)?;
                        let z = self.tmp(RegClass::Pred);
                        let m1 = self.tmp(RegClass::Pred);
                        let either = self.tmp(RegClass::Pred);
                        let safe = self.tmp(class);
                        let q = self.tmp(class);
                        self.ins("", format_args!("setp.eq.s{w} {z}, {b}, 0"));
                        self.ins("", format_args!("setp.eq.s{w} {m1}, {b}, -1"));
                        self.ins("", format_args!("or.pred {either}, {z}, {m1}"));
                        self.ins("", format_args!("selp.b{w} {safe}, 1, {b}, {either}"));
                        if is_div {
                            let n = self.tmp(class);
                            self.ins("", format_args!("div.s{w} {q}, {a}, {safe}"));
                            self.ins("", format_args!("neg.s{w} {n}, {a}"));
                            self.ins("", format_args!("selp.b{w} {q}, {n}, {q}, {m1}"));
                            self.ins(g, format_args!("selp.b{w} {d}, -1, {q}, {z}"));
                        } else {
                            // x % 1 = 0 covers the -1 divisor.
                            self.ins("", format_args!("rem.s{w} {q}, {a}, {safe}"));
                            self.ins(g, format_args!("selp.b{w} {d}, {a}, {q}, {z}"));
                        }
                    }
                }
            }
            MinS | MinU | MaxS | MaxU => {
                let signed = matches!(op, MinS | MaxS);
                let ext = if signed { Ext::Sign } else { Ext::Zero };
                let a = self.widen(a_reg, ty, ext);
                let b = self.int_src(b, ty, ext)?;
                let d = self.reg(dst, class)?;
                let m = if matches!(op, MinS | MinU) {
                    "min"
                } else {
                    "max"
                };
                let s = if signed { "s" } else { "u" };
                self.ins(g, format_args!("{m}.{s}{w} {d}, {a}, {b}"));
            }
            Shl | ShrU | ShrS => {
                // PTX clamps shift amounts above the width, as the IR does; the amount is
                // a u32 operand, so sub-word amounts are zero-extended and 64-bit ones
                // clamped to 64 before narrowing.
                let ext = match op {
                    Shl => Ext::Any,
                    ShrU => Ext::Zero,
                    _ => Ext::Sign,
                };
                let a = self.widen(a_reg, ty, ext);
                let amount = match b {
                    Operand::Imm(bits) => {
                        // At most 64.
                        Name::numbered("", mask(bits, ty.bits()).min(ty.bits() as u64) as u32)
                    }
                    Operand::Reg(r) => {
                        let name = self.reg(r, class)?;
                        if ty == MType::I64 {
                            let c = self.tmp(RegClass::B64);
                            let t = self.tmp(RegClass::B32);
                            self.ins("", format_args!("min.u64 {c}, {name}, 64"));
                            self.ins("", format_args!("cvt.u32.u64 {t}, {c}"));
                            t
                        } else {
                            self.widen(name, ty, Ext::Zero)
                        }
                    }
                };
                let d = self.reg(dst, class)?;
                let opc = match op {
                    Shl => "shl.b",
                    ShrU => "shr.u",
                    _ => "shr.s",
                };
                self.line(g, &[opc, width_digits(w), " ", &d, ", ", &a, ", ", &amount]);
            }
            _ => unreachable!("float and predicate operations are handled above"),
        }
        Ok(())
    }

    /// `fmin`/`fmax`: PTX's `min`/`max` already return the other operand when one is NaN
    /// and a NaN when both are; the emitter canonicalises that NaN and orders the
    /// zeros (`fmin(-0, +0) = -0`, `fmax(-0, +0) = +0`), which PTX leaves open: when the
    /// operands compare equal, the bitwise or (min) / and (max) of the two is the answer.
    fn fminmax(&mut self, g: &str, is_min: bool, ty: MType, d: &str, a: &str, b: &str) {
        let t = float_name(ty);
        let c = bits_name(ty);
        let class = ty.class();
        let m = self.tmp(class);
        let opc = if is_min { "min" } else { "max" };
        self.ins("", format_args!("{opc}.{t} {m}, {a}, {b}"));
        {
            let (nan, f) = if ty == MType::F64 {
                (CANON_NAN_F64, "f64")
            } else {
                (CANON_NAN_F32, "f32")
            };
            let p = self.tmp(RegClass::Pred);
            self.ins("", format_args!("testp.notanumber.{f} {p}, {m}"));
            self.ins("", format_args!("selp.{c} {m}, {nan}, {m}, {p}"));
        }
        let z = self.tmp(class);
        let bits_b = match b.strip_prefix("0f").or_else(|| b.strip_prefix("0d")) {
            Some(hex) => name!("0x{hex}"),
            None => Name::from(b),
        };
        let logic = if is_min { "or" } else { "and" };
        self.ins("", format_args!("{logic}.{c} {z}, {a}, {bits_b}"));
        let eq = self.tmp(RegClass::Pred);
        self.ins("", format_args!("setp.eq.{t} {eq}, {a}, {b}"));
        self.ins(g, format_args!("selp.{c} {d}, {z}, {m}, {eq}"));
    }

    fn un(&mut self, g: &str, op: UnOp, ty: MType, dst: Reg, src: Reg) -> Result<()> {
        use UnOp::*;
        let class = ty.class();
        if op == Not && ty == MType::Pred {
            let s = self.reg(src, class)?;
            let d = self.reg(dst, class)?;
            self.ins(g, format_args!("not.pred {d}, {s}"));
            return Ok(());
        }
        match op {
            FNeg | FAbs | FSqrt => self.require_float(ty, op.name())?,
            _ => self.require_int(ty, op.name())?,
        }
        let w = width(ty);
        let s = self.reg(src, class)?;
        match op {
            Neg => {
                let d = self.reg(dst, class)?;
                self.ins(g, format_args!("neg.s{w} {d}, {s}"));
            }
            Not => {
                let d = self.reg(dst, class)?;
                self.ins(g, format_args!("not.b{w} {d}, {s}"));
            }
            Popc | Clz => {
                let name = if op == Popc { "popc" } else { "clz" };
                let v = self.widen(s, ty, Ext::Zero);
                let d = self.reg(dst, class)?;
                match ty {
                    MType::I64 => {
                        // The count is a u32 in PTX.
                        let t = self.tmp(RegClass::B32);
                        self.ins("", format_args!("{name}.b64 {t}, {v}"));
                        self.ins(g, format_args!("cvt.u64.u32 {d}, {t}"));
                    }
                    MType::I32 => self.ins(g, format_args!("{name}.b32 {d}, {v}")),
                    _ if op == Popc => self.ins(g, format_args!("popc.b32 {d}, {v}")),
                    _ => {
                        // Leading zeros of the zero-extended value, less the 32 - W bits
                        // above the type (so clz 0 = W).
                        let t = self.tmp(RegClass::B32);
                        self.ins("", format_args!("clz.b32 {t}, {v}"));
                        self.ins(g, format_args!("sub.s32 {d}, {t}, {}", 32 - ty.bits()));
                    }
                }
            }
            Ctz => {
                // ctz x = clz (bit-reverse x); for sub-word types a one just above the
                // type's bits makes ctz 0 = W.
                let d = self.reg(dst, class)?;
                if ty == MType::I64 {
                    let r = self.tmp(RegClass::B64);
                    let t = self.tmp(RegClass::B32);
                    self.ins("", format_args!("brev.b64 {r}, {s}"));
                    self.ins("", format_args!("clz.b64 {t}, {r}"));
                    self.ins(g, format_args!("cvt.u64.u32 {d}, {t}"));
                } else {
                    let r = self.tmp(RegClass::B32);
                    let v = if ty == MType::I32 {
                        s
                    } else {
                        let v = self.tmp(RegClass::B32);
                        self.ins(
                            "",
                            format_args!("or.b32 {v}, {s}, {:#x}", 1u32 << ty.bits()),
                        );
                        v
                    };
                    self.ins("", format_args!("brev.b32 {r}, {v}"));
                    self.ins(g, format_args!("clz.b32 {d}, {r}"));
                }
            }
            FNeg | FAbs => {
                // Bit operations on the sign, so NaN payloads pass unchanged.
                let d = self.reg(dst, class)?;
                let (opc, m) = match (op, ty) {
                    (FNeg, MType::F32) => ("xor", "0x80000000"),
                    (FNeg, _) => ("xor", "0x8000000000000000"),
                    (_, MType::F32) => ("and", "0x7FFFFFFF"),
                    _ => ("and", "0x7FFFFFFFFFFFFFFF"),
                };
                self.ins(g, format_args!("{opc}.b{w} {d}, {s}, {m}"));
            }
            FSqrt => {
                let d = self.reg(dst, class)?;
                let t = float_name(ty);
                self.float_result(g, ty, &d, |_| name!("sqrt.rn.{t}"), &s);
            }
        }
        Ok(())
    }

    fn setp(&mut self, g: &str, cond: Cond, ty: MType, dst: Reg, a: Reg, b: Operand) -> Result<()> {
        let class = ty.class();
        match cond {
            Cond::Int(cc) => {
                if ty == MType::Pred && matches!(cc, IntCC::Equal | IntCC::NotEqual) {
                    let a = self.reg(a, class)?;
                    let b = self.pred_src(b)?;
                    let d = self.reg(dst, RegClass::Pred)?;
                    if cc == IntCC::NotEqual {
                        self.ins(g, format_args!("xor.pred {d}, {a}, {b}"));
                    } else {
                        let t = self.tmp(RegClass::Pred);
                        self.ins("", format_args!("xor.pred {t}, {a}, {b}"));
                        self.ins(g, format_args!("not.pred {d}, {t}"));
                    }
                    return Ok(());
                }
                self.require_int(ty, "an integer comparison")?;
                let (name, signed) = int_cc(cc);
                let ext = if signed { Ext::Sign } else { Ext::Zero };
                let w = width(ty);
                let a = self.reg(a, class)?;
                let a = self.widen(a, ty, ext);
                let b = self.int_src(b, ty, ext)?;
                let d = self.reg(dst, RegClass::Pred)?;
                let s = if signed { "s" } else { "u" };
                let w = width_digits(w);
                self.line(g, &["setp.", name, ".", s, w, " ", &d, ", ", &a, ", ", &b]);
            }
            Cond::Float(cc) => {
                self.require_float(ty, "a float comparison")?;
                let a = self.reg(a, class)?;
                let b = self.bits_src(b, ty)?;
                let d = self.reg(dst, RegClass::Pred)?;
                let (cc, t) = (float_cc(cc), float_name(ty));
                self.line(g, &["setp.", cc, ".", t, " ", &d, ", ", &a, ", ", &b]);
            }
        }
        Ok(())
    }

    fn cvt(
        &mut self,
        g: &str,
        op: CvtOp,
        to: MType,
        from: MType,
        dst: Reg,
        src: Reg,
    ) -> Result<()> {
        use CvtOp::*;
        use MType::*;
        let is_int = |t: MType| matches!(t, I8 | I16 | I32 | I64);
        let bad = || format!("cvt.{}.{to}.{from}", op.name());
        let ok = match op {
            Zext | Sext => (is_int(from) || from == Pred) && is_int(to) && to.bits() > from.bits(),
            Trunc => is_int(from) && (is_int(to) || to == Pred) && to.bits() < from.bits(),
            FToS | FToU => from.is_float() && is_int(to),
            SToF | UToF => is_int(from) && to.is_float(),
            FExt => from == F32 && to == F64,
            FTrunc => from == F64 && to == F32,
            Bitcast => from.bits() == to.bits() && from.class() == to.class(),
        };
        if !ok {
            return Err(self.invalid(bad()));
        }
        let s = self.reg(src, from.class())?;
        let d = self.reg(dst, to.class())?;
        match op {
            Zext | Sext => {
                let signed = op == Sext;
                let w = width(to);
                if from == Pred {
                    let (v, k) = if signed { ("-1", "s") } else { ("1", "u") };
                    self.ins(g, format_args!("selp.{k}{w} {d}, {v}, 0, {s}"));
                    return Ok(());
                }
                // Zext and Sext produce the full register, not just the type's bits.
                let ext = if signed { Ext::Sign } else { Ext::Zero };
                let k = if signed { "s" } else { "u" };
                match (from, w) {
                    (I8 | I16, 32) => {
                        if signed {
                            let t = if from == I8 { "s8" } else { "s16" };
                            self.ins(g, format_args!("cvt.s32.{t} {d}, {s}"));
                        } else {
                            self.ins(
                                g,
                                format_args!("and.b32 {d}, {s}, {}", mask_hex(from.bits())),
                            );
                        }
                    }
                    _ => {
                        let v = self.widen(s, from, ext);
                        self.ins(g, format_args!("cvt.{k}64.{k}32 {d}, {v}"));
                    }
                }
            }
            Trunc => {
                if to == Pred {
                    let w = width(from);
                    let t = self.tmp(from.class());
                    self.ins("", format_args!("and.b{w} {t}, {s}, 1"));
                    self.ins(g, format_args!("setp.ne.b{w} {d}, {t}, 0"));
                } else if from == I64 {
                    self.ins(g, format_args!("cvt.u32.u64 {d}, {s}"));
                } else {
                    // The low bits are already there; the upper ones are free.
                    self.ins(g, format_args!("mov.b32 {d}, {s}"));
                }
            }
            FToS | FToU => {
                // cvt.rzi truncates and saturates to the 32- or 64-bit range; sub-word
                // results are clamped further; a NaN gives 0.
                let signed = op == FToS;
                let k = if signed { "s" } else { "u" };
                let w = width(to);
                let f = float_name(from);
                let nan = self.tmp(RegClass::Pred);
                let t = self.tmp(to.class());
                self.ins("", format_args!("testp.notanumber.{f} {nan}, {s}"));
                self.ins("", format_args!("cvt.rzi.{k}{w}.{f} {t}, {s}"));
                if matches!(to, I8 | I16) {
                    let bits = to.bits();
                    if signed {
                        let lo = -(1i64 << (bits - 1));
                        let hi = (1i64 << (bits - 1)) - 1;
                        self.ins("", format_args!("max.s32 {t}, {t}, {lo}"));
                        self.ins("", format_args!("min.s32 {t}, {t}, {hi}"));
                    } else {
                        self.ins("", format_args!("min.u32 {t}, {t}, {}", (1u32 << bits) - 1));
                    }
                }
                self.ins(g, format_args!("selp.b{w} {d}, 0, {t}, {nan}"));
            }
            SToF | UToF => {
                let signed = op == SToF;
                let ext = if signed { Ext::Sign } else { Ext::Zero };
                let k = if signed { "s" } else { "u" };
                let v = self.widen(s, from, ext);
                self.ins(
                    g,
                    format_args!("cvt.rn.{}.{k}{} {d}, {v}", float_name(to), width(from)),
                );
            }
            FExt => {
                let t = self.tmp(RegClass::B64);
                self.ins("", format_args!("cvt.f64.f32 {t}, {s}"));
                self.canonicalize(g, F64, &d, &t);
            }
            FTrunc => {
                let t = self.tmp(RegClass::B32);
                self.ins("", format_args!("cvt.rn.f32.f64 {t}, {s}"));
                self.canonicalize(g, F32, &d, &t);
            }
            Bitcast => {
                self.ins(g, format_args!("mov.{} {d}, {s}", bits_name(to)));
            }
        }
        Ok(())
    }

    /// An atomic read-modify-write (`op` given) or compare-and-swap (`replacement`
    /// given). Global and shared atomics are sequentially consistent, as the IR's are:
    /// `fence.sc` then an `acq_rel` atomic (the PTX memory model's mapping for a
    /// sequentially consistent read-modify-write), at `.gpu` scope for global memory and
    /// `.cta` for shared. Local memory is private to the thread, so a local "atomic" is
    /// a load, the operation and a store.
    #[allow(clippy::too_many_arguments)]
    fn atom(
        &mut self,
        g: &str,
        op: Option<AtomicRmwOp>,
        space: AddrSpace,
        ty: MType,
        dst: Reg,
        addr: Address,
        src: Operand,
        replacement: Option<Operand>,
    ) -> Result<()> {
        if !matches!(ty, MType::I32 | MType::I64) {
            return Err(self.invalid(format!("atomic on {ty}")));
        }
        let w = width(ty);
        let class = ty.class();
        let a = self.address(space, addr)?;
        let x = self.int_src(src, ty, Ext::Any)?;
        let r = match replacement {
            Some(r) => Some(self.int_src(r, ty, Ext::Any)?),
            None => None,
        };
        let d = self.reg(dst, class)?;
        let (opname, k) = match op {
            None => ("cas", "b"),
            Some(AtomicRmwOp::Add) => ("add", "u"),
            Some(AtomicRmwOp::Smin) => ("min", "s"),
            Some(AtomicRmwOp::Smax) => ("max", "s"),
            Some(AtomicRmwOp::Umin) => ("min", "u"),
            Some(AtomicRmwOp::Umax) => ("max", "u"),
            Some(AtomicRmwOp::And) => ("and", "b"),
            Some(AtomicRmwOp::Or) => ("or", "b"),
            Some(AtomicRmwOp::Xor) => ("xor", "b"),
            Some(AtomicRmwOp::Xchg) => ("exch", "b"),
        };
        if space == AddrSpace::Local {
            let old = self.tmp(class);
            let new = self.tmp(class);
            self.ins(g, format_args!("ld.local.u{w} {old}, {a}"));
            match (op, &r) {
                (None, Some(r)) => {
                    let p = self.tmp(RegClass::Pred);
                    self.ins("", format_args!("setp.eq.b{w} {p}, {old}, {x}"));
                    self.ins("", format_args!("selp.b{w} {new}, {r}, {old}, {p}"));
                }
                (Some(AtomicRmwOp::Xchg), _) => self.ins("", format_args!("mov.b{w} {new}, {x}")),
                (Some(AtomicRmwOp::Add), _) => {
                    self.ins("", format_args!("add.s{w} {new}, {old}, {x}"))
                }
                _ => self.ins("", format_args!("{opname}.{k}{w} {new}, {old}, {x}")),
            }
            self.ins(g, format_args!("st.local.u{w} {a}, {new}"));
            self.ins(g, format_args!("mov.b{w} {d}, {old}"));
            return Ok(());
        }
        let scope = if space == AddrSpace::Global {
            "gpu"
        } else {
            "cta"
        };
        let sp = space_name(space);
        self.ins(g, format_args!("fence.sc.{scope}"));
        let operands = match r {
            Some(r) => name!("{x}, {r}"),
            None => x,
        };
        self.ins(
            g,
            format_args!("atom.acq_rel.{scope}.{sp}.{opname}.{k}{w} {d}, {a}, {operands}"),
        );
        Ok(())
    }

    /// The PTX memory operand of an MIR address in `space`.
    fn address(&mut self, space: AddrSpace, addr: Address) -> Result<Name> {
        let off = addr.offset;
        let with_off = |base: &str| {
            if off == 0 {
                name!("[{base}]")
            } else {
                name!("[{base}+{off}]")
            }
        };
        Ok(match space {
            AddrSpace::Global => match addr.base {
                Some(b) => {
                    let b = self.reg(b, RegClass::B64)?;
                    with_off(&b)
                }
                None => {
                    // PTX takes no immediate global addresses.
                    let t = self.tmp(RegClass::B64);
                    self.ins("", format_args!("mov.b64 {t}, {}", off as i64));
                    name!("[{t}]")
                }
            },
            AddrSpace::Shared | AddrSpace::Local => {
                let (base, var) = if space == AddrSpace::Shared {
                    self.uses_shared = true;
                    ("%wl_sbase", "__wl_shared")
                } else {
                    self.uses_local = true;
                    ("%wl_lbase", "__wl_local")
                };
                match addr.base {
                    Some(b) => {
                        let b = self.reg(b, RegClass::B32)?;
                        let t = self.tmp(RegClass::B32);
                        self.ins("", format_args!("add.u32 {t}, {base}, {b}"));
                        with_off(&t)
                    }
                    None => with_off(var),
                }
            }
        })
    }
}

/// The label of `block`.
fn label(block: MBlock) -> Name {
    Name::numbered(LABEL_PREFIX, block.as_u32())
}

/// What a block's label starts with: its number follows.
const LABEL_PREFIX: &str = "$Lbb";

/// The digits of a PTX instruction's width (see [`width`]) in its opcode.
fn width_digits(w: u32) -> &'static str {
    if w == 64 {
        "64"
    } else {
        "32"
    }
}

/// The PTX register type of a class.
fn ptx_class(class: RegClass) -> &'static str {
    match class {
        RegClass::B32 => "b32",
        RegClass::B64 => "b64",
        RegClass::Pred => "pred",
    }
}

/// The `.param` type of a kernel parameter: integers unsigned of their width, floats as
/// themselves, `i1` as one byte (0 or 1, as in memory).
fn param_type(ty: Type) -> &'static str {
    match ty {
        Type::I1 | Type::I8 => "u8",
        Type::I16 => "u16",
        Type::I32 => "u32",
        Type::I64 => "u64",
        Type::F32 => "f32",
        Type::F64 => "f64",
    }
}

/// The memory type of a load or store of `ty` (predicates are handled apart).
fn mem_type(ty: MType) -> &'static str {
    match ty {
        MType::I8 | MType::Pred => "u8",
        MType::I16 => "u16",
        MType::I32 | MType::F32 => "u32",
        MType::I64 | MType::F64 => "u64",
    }
}

/// The width of the PTX instruction operating on `ty`: sub-word types operate in 32 bits.
fn width(ty: MType) -> u32 {
    if ty.class() == RegClass::B64 {
        64
    } else {
        32
    }
}

/// `b32`, `b64` or `pred`: the untyped name for moves and selects.
fn bits_name(ty: MType) -> &'static str {
    ptx_class(ty.class())
}

fn float_name(ty: MType) -> &'static str {
    if ty == MType::F64 {
        "f64"
    } else {
        "f32"
    }
}

fn space_name(space: AddrSpace) -> &'static str {
    match space {
        AddrSpace::Global => "global",
        AddrSpace::Shared => "shared",
        AddrSpace::Local => "local",
    }
}

fn dim_name(dim: Dim) -> &'static str {
    match dim {
        Dim::X => "x",
        Dim::Y => "y",
        Dim::Z => "z",
    }
}

/// The low `bits` bits of `v`.
fn mask(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

fn mask_hex(bits: u32) -> Name {
    name!("0x{:X}", mask(u64::MAX, bits))
}

/// An integer immediate of type `ty` as a PTX literal of the instruction's width (32 bits
/// for sub-word types, widened as `ext` says).
fn int_imm(bits: u64, ty: MType, ext: Ext) -> Name {
    let b = ty.bits().max(1);
    let m = mask(bits, b);
    let v = match (ty, ext) {
        (MType::I8 | MType::I16, Ext::Sign) => {
            let shift = 64 - b;
            (((m << shift) as i64) >> shift) as u64 & 0xFFFF_FFFF
        }
        _ => m,
    };
    if v < 10 {
        // The digit as a static name: an inline one would be checked as UTF-8 each time
        // it is written, and small constants are common operands.
        const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
        Name::Static(DIGITS[v as usize])
    } else if width(ty) == 64 {
        Name::hex("0x", v, 16)
    } else {
        Name::hex("0x", v, 8)
    }
}

/// The PTX comparison of an integer condition, and whether it is signed.
fn int_cc(cc: IntCC) -> (&'static str, bool) {
    use IntCC::*;
    match cc {
        Equal => ("eq", false),
        NotEqual => ("ne", false),
        SignedLessThan => ("lt", true),
        SignedLessThanOrEqual => ("le", true),
        SignedGreaterThan => ("gt", true),
        SignedGreaterThanOrEqual => ("ge", true),
        UnsignedLessThan => ("lo", false),
        UnsignedLessThanOrEqual => ("ls", false),
        UnsignedGreaterThan => ("hi", false),
        UnsignedGreaterThanOrEqual => ("hs", false),
    }
}

/// The PTX comparison of a float condition (same NaN rules: `ne` is ordered, the `u`
/// forms unordered, `num`/`nan` test for NaNs).
fn float_cc(cc: FloatCC) -> &'static str {
    use FloatCC::*;
    match cc {
        Ordered => "num",
        Unordered => "nan",
        Equal => "eq",
        OrderedNotEqual => "ne",
        LessThan => "lt",
        LessThanOrEqual => "le",
        GreaterThan => "gt",
        GreaterThanOrEqual => "ge",
        UnorderedOrEqual => "equ",
        NotEqual => "neu",
        UnorderedOrLessThan => "ltu",
        UnorderedOrLessThanOrEqual => "leu",
        UnorderedOrGreaterThan => "gtu",
        UnorderedOrGreaterThanOrEqual => "geu",
    }
}

/// The module header: `.version`, `.target`, `.address_size` and the `.file` that `.loc`
/// directives refer to.
pub(super) fn header(opts: &PtxOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "//\n// Generated by warplift\n//\n");
    let _ = writeln!(out, ".version {}.{}", opts.version.0, opts.version.1);
    let _ = writeln!(out, ".target {}", opts.target);
    let _ = writeln!(out, ".address_size 64\n");
    if let Some(name) = &opts.file_name {
        // PTX strings have no escapes worth relying on: keep the name printable.
        let name: String = name
            .chars()
            .map(|c| {
                if c == '"' || c == '\\' || c.is_control() {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        let _ = writeln!(out, ".file 1 \"{name}\"\n");
    }
    out
}
