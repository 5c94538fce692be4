//! The MIR's text form, printed by `warplift compile --print-mir` and used in snapshot
//! tests. It reads like PTX: `opcode.modifiers.type dst, sources`, with `@%p` / `@!%p`
//! guards, `%`-registers when virtual and `$`-registers when physical.

use super::*;
use core::fmt::{self, Write};
use warplift_ir::write::{format_f32, format_f64, format_int_imm};
use warplift_ir::Type;

impl fmt::Display for MirFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mir %{}(", self.name)?;
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}: {}", p.name, p.ty)?;
        }
        writeln!(f, ") {{")?;
        writeln!(
            f,
            "    ; shared {} bytes, local {} bytes, {} spill slots",
            self.shared_size, self.local_size, self.spill_slots
        )?;
        for &block in &self.order {
            let data = &self.blocks[block];
            write!(f, "{block}")?;
            if !data.params.is_empty() {
                f.write_char('(')?;
                for (i, p) in data.params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_char(')')?;
            }
            f.write_char(':')?;
            match (data.origin, data.kind) {
                (Some(origin), BlockKind::Code) => write!(f, "  ; {origin}")?,
                (Some(origin), kind) => write!(f, "  ; {origin}, {}", kind.name())?,
                (None, BlockKind::Code) => {}
                (None, kind) => write!(f, "  ; {}", kind.name())?,
            }
            f.write_char('\n')?;
            for inst in &data.insts {
                writeln!(f, "    {}", DisplayInst(inst, self))?;
            }
        }
        f.write_str("}\n")
    }
}

/// Displays one instruction; the function gives parameter names.
pub struct DisplayInst<'a>(pub &'a MInst, pub &'a MirFunction);

impl fmt::Display for DisplayInst<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inst = self.0;
        if let Some(g) = inst.guard {
            write!(f, "@{}{} ", if g.negated { "!" } else { "" }, g.pred)?;
        }
        use MInstKind::*;
        match &inst.kind {
            Bin { op, ty, dst, a, b } => {
                write!(f, "{}.{ty} {dst}, {a}, {}", op.name(), Imm(*b, *ty))
            }
            Un { op, ty, dst, src } => write!(f, "{}.{ty} {dst}, {src}", op.name()),
            Mad { ty, dst, a, b, c } => {
                write!(f, "mad.{ty} {dst}, {a}, {}, {}", Imm(*b, *ty), Imm(*c, *ty))
            }
            Fma { ty, dst, a, b, c } => write!(f, "fma.{ty} {dst}, {a}, {b}, {c}"),
            Tern {
                op,
                ty,
                dst,
                a,
                b,
                c,
            } => write!(f, "{}.{ty} {dst}, {a}, {b}, {}", op.name(), Imm(*c, *ty)),
            Setp {
                cond,
                ty,
                dst,
                a,
                b,
            } => {
                write!(f, "setp.{cond}.{ty} {dst}, {a}, {}", Imm(*b, *ty))
            }
            Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => write!(
                f,
                "selp.{ty} {dst}, {}, {}, {pred}",
                Imm(*a, *ty),
                Imm(*b, *ty)
            ),
            Cvt {
                op,
                to,
                from,
                dst,
                src,
            } => write!(f, "cvt.{}.{to}.{from} {dst}, {src}", op.name()),
            Mov { ty, dst, src } => write!(f, "mov.{ty} {dst}, {}", Imm(*src, *ty)),
            ReadSpecial { dst, sreg } => write!(f, "mov.i32 {dst}, {sreg}"),
            LdParam { ty, dst, index } => {
                let name = self
                    .1
                    .params
                    .get(*index as usize)
                    .map_or("?", |p| p.name.as_str());
                write!(f, "ld.param.{ty} {dst}, {name}")
            }
            Ld {
                space,
                ty,
                dst,
                addr,
            } => write!(f, "ld.{space}.{ty} {dst}, {addr}"),
            St {
                space,
                ty,
                src,
                addr,
            } => write!(f, "st.{space}.{ty} {addr}, {}", Imm(*src, *ty)),
            Atom {
                op,
                space,
                ty,
                dst,
                addr,
                src,
            } => write!(
                f,
                "atom.{space}.{op}.{ty} {dst}, {addr}, {}",
                Imm(*src, *ty)
            ),
            Cas {
                space,
                ty,
                dst,
                addr,
                expected,
                replacement,
            } => write!(
                f,
                "atom.{space}.cas.{ty} {dst}, {addr}, {}, {}",
                Imm(*expected, *ty),
                Imm(*replacement, *ty)
            ),
            Bar => f.write_str("bar.sync"),
            Spill { src, slot } => write!(f, "spill.{} [slot{}], {src}", src.class(), slot.0),
            Reload { dst, slot } => write!(f, "reload.{} {dst}, [slot{}]", dst.class(), slot.0),
            Jump { dest } => write!(f, "jump {}", Target(dest)),
            Branch {
                pred,
                negated,
                taken,
                not_taken,
                divergent,
            } => write!(
                f,
                "br.{} {}{pred}, {}, {}",
                if *divergent { "div" } else { "uni" },
                if *negated { "!" } else { "" },
                Target(taken),
                Target(not_taken)
            ),
            Ret => f.write_str("ret"),
        }
    }
}

/// An operand, immediates printed at the operation's type.
struct Imm(Operand, MType);

impl fmt::Display for Imm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Operand::Reg(r) => write!(f, "{r}"),
            Operand::Imm(bits) => match self.1 {
                MType::F32 => f.write_str(&format_f32(bits as u32)),
                MType::F64 => f.write_str(&format_f64(bits)),
                MType::Pred => f.write_str(&format_int_imm(bits, Type::I1)),
                MType::I8 => f.write_str(&format_int_imm(bits, Type::I8)),
                MType::I16 => f.write_str(&format_int_imm(bits, Type::I16)),
                MType::I32 => f.write_str(&format_int_imm(bits, Type::I32)),
                MType::I64 => f.write_str(&format_int_imm(bits, Type::I64)),
            },
        }
    }
}

/// `mblock3` or `mblock3(%r1, %r2)`.
struct Target<'a>(&'a BlockTarget);

impl fmt::Display for Target<'_> {
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
