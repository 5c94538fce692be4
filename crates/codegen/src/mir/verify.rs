//! The MIR verifier: checks the invariants every pass after lowering relies on, and
//! reports every violation it finds (never panics).
//!
//! Always checked:
//! - the block order is non-empty, names each block once, and the entry has no
//!   parameters;
//! - every placed block ends with its only terminator, and branches go to placed blocks;
//! - register classes agree with the operation types (`b32` for `i8`..`f32`, `b64` for
//!   `i64`/`f64`, `pred` for predicates), and each operation is used at types it has
//!   (float operations on floats, integer ones on integers, atomics on `i32`/`i64`,
//!   memory accesses not on predicates, addresses `b64` for global and `b32` otherwise);
//! - `LdParam` only in the entry block, naming an existing parameter at its type.
//!
//! In the **lowered** form (virtual registers):
//! - SSA: each virtual register is defined once (block parameters included) with the
//!   class recorded in `MirFunction::vreg_classes`, and every use is dominated by its
//!   definition (same block: earlier; uses in unreachable blocks are not checked);
//! - branch arguments match the destination's parameters in number and class;
//! - guarded instructions define nothing; no spills or reloads; no physical registers.
//!
//! In the **allocated** form (no virtual registers): no block parameters or branch
//! arguments, physical registers below the register-file sizes when given, spill slots
//! below `MirFunction::spill_slots`.

use super::{
    Address, MBlock, MInst, MInstKind, MType, MirFunction, Operand, Reg, RegClass, RegRole,
};
use core::fmt;
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree};
use warplift_ir::AddrSpace;

/// One violated invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirError {
    /// The block, when the problem is in one.
    pub block: Option<MBlock>,
    /// The instruction's index in its block, when the problem is in one.
    pub inst: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for MirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.block, self.inst) {
            (Some(b), Some(i)) => write!(f, "{b}, instruction {i}: {}", self.message),
            (Some(b), None) => write!(f, "{b}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// Everything the verifier found wrong with a function.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MIR of %{name} is invalid:{}", list(.errors))]
pub struct MirVerifyError {
    /// The function's name.
    pub name: String,
    /// Each violation, in the order found.
    pub errors: Vec<MirError>,
}

fn list(errors: &[MirError]) -> String {
    errors.iter().map(|e| format!("\n  {e}")).collect()
}

/// Verifies `func`, in whichever form it is (lowered if it has virtual registers,
/// allocated otherwise), without register-file limits.
pub fn verify_mir(func: &MirFunction) -> Result<(), MirVerifyError> {
    verify_mir_with_limits(func, None)
}

/// Verifies `func`; in the allocated form, also checks that every physical register is
/// below `reg_file_sizes[class.index()]`.
pub fn verify_mir_with_limits(
    func: &MirFunction,
    reg_file_sizes: Option<[u32; 3]>,
) -> Result<(), MirVerifyError> {
    let mut v = Verifier {
        func,
        errors: Vec::new(),
        block: None,
        inst: None,
    };
    v.run(reg_file_sizes);
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(MirVerifyError {
            name: func.name.clone(),
            errors: v.errors,
        })
    }
}

struct Verifier<'a> {
    func: &'a MirFunction,
    errors: Vec<MirError>,
    block: Option<MBlock>,
    inst: Option<usize>,
}

/// Where a virtual register is defined: block, and instruction index (`None` for a
/// block parameter, which comes before every instruction).
type DefSite = (MBlock, Option<usize>);

impl Verifier<'_> {
    fn error(&mut self, message: impl Into<String>) {
        self.errors.push(MirError {
            block: self.block,
            inst: self.inst,
            message: message.into(),
        });
    }

    /// Every register an instruction mentions, with its role; branch arguments as uses.
    fn regs_of(inst: &MInst) -> Vec<(Reg, RegRole)> {
        let mut out = Vec::new();
        let mut copy = inst.clone();
        copy.visit_regs(|r, role| out.push((*r, role)));
        inst.kind.for_each_target(|t| {
            out.extend(t.args.iter().map(|&r| (r, RegRole::Use)));
        });
        out
    }

    fn run(&mut self, reg_file_sizes: Option<[u32; 3]>) {
        let func = self.func;
        let Some(entry) = func.entry() else {
            self.error("the function has no blocks");
            return;
        };
        let mut placed = vec![false; func.blocks.len()];
        for &b in &func.order {
            if !func.blocks.is_valid(b) {
                self.error(format!("the order names {b}, which does not exist"));
                return;
            }
            if std::mem::replace(&mut placed[b.as_u32() as usize], true) {
                self.error(format!("the order names {b} twice"));
            }
        }
        if !func.blocks[entry].params.is_empty() {
            self.block = Some(entry);
            self.error("the entry block has parameters");
        }

        let mut any_virtual = false;
        let mut any_physical = false;
        for &b in &func.order {
            for &p in &func.blocks[b].params {
                any_virtual |= p.is_virtual();
                any_physical |= !p.is_virtual();
            }
            for inst in &func.blocks[b].insts {
                for (r, _) in Self::regs_of(inst) {
                    any_virtual |= r.is_virtual();
                    any_physical |= !r.is_virtual();
                }
            }
        }
        if any_virtual && any_physical {
            self.block = None;
            self.inst = None;
            self.error("virtual and physical registers are mixed");
        }

        for &b in &func.order {
            self.block = Some(b);
            self.inst = None;
            self.check_block(b, entry, &placed);
        }
        self.block = None;
        self.inst = None;
        if any_virtual {
            self.check_ssa();
        } else {
            self.check_allocated(reg_file_sizes);
        }
    }

    fn check_block(&mut self, b: MBlock, entry: MBlock, placed: &[bool]) {
        let data = &self.func.blocks[b];
        if data.insts.is_empty() {
            self.error("the block is empty");
            return;
        }
        let last = data.insts.len() - 1;
        for (i, inst) in data.insts.iter().enumerate() {
            self.inst = Some(i);
            if inst.kind.is_terminator() != (i == last) {
                if i == last {
                    self.error("the block does not end with a terminator");
                } else {
                    self.error("a terminator before the end of the block");
                }
            }
            if let MInstKind::LdParam { .. } = inst.kind {
                if b != entry {
                    self.error("ld.param outside the entry block");
                }
            }
            let mut bad_target = None;
            inst.kind.for_each_target(|t| {
                if !self.func.blocks.is_valid(t.block) || !placed[t.block.as_u32() as usize] {
                    bad_target = Some(t.block);
                }
            });
            if let Some(t) = bad_target {
                self.error(format!("branch to {t}, which is not placed"));
                continue;
            }
            if let Some(g) = inst.guard {
                self.class(g.pred, RegClass::Pred, "guard");
            }
            self.check_types(inst);
        }
    }

    fn class(&mut self, r: Reg, class: RegClass, what: &str) {
        if r.class() != class {
            self.error(format!("{what} {r} is not a {class} register"));
        }
    }

    fn operand(&mut self, o: Operand, class: RegClass, what: &str) {
        if let Operand::Reg(r) = o {
            self.class(r, class, what);
        }
    }

    fn address(&mut self, space: AddrSpace, a: Address) {
        if let Some(base) = a.base {
            let class = RegClass::of_type(space.addr_type());
            self.class(base, class, "address base");
        }
    }

    fn check_types(&mut self, inst: &MInst) {
        use MInstKind::*;
        match inst.kind {
            Bin { op, ty, dst, a, b } => {
                let ok = op.accepts(ty);
                if !ok {
                    self.error(format!("{} at type {ty}", op.name()));
                }
                self.class(dst, ty.class(), "destination");
                self.class(a, ty.class(), "operand");
                self.operand(b, ty.class(), "operand");
                if ty == MType::Pred && b.reg().is_none() {
                    self.error("a predicate operation with an immediate");
                }
            }
            Un { op, ty, dst, src } => {
                let ok = op.accepts(ty);
                if !ok {
                    self.error(format!("{} at type {ty}", op.name()));
                }
                self.class(dst, ty.class(), "destination");
                self.class(src, ty.class(), "operand");
            }
            Mad { ty, dst, a, b, c } => {
                if !ty.is_int() {
                    self.error(format!("mad at type {ty}"));
                }
                self.class(dst, ty.class(), "destination");
                self.class(a, ty.class(), "operand");
                self.operand(b, ty.class(), "operand");
                self.operand(c, ty.class(), "operand");
            }
            Tern {
                op,
                ty,
                dst,
                a,
                b,
                c,
            } => {
                if !op.accepts(ty) {
                    self.error(format!("{} at type {ty}", op.name()));
                }
                self.class(dst, ty.class(), "destination");
                self.class(a, ty.class(), "operand");
                self.class(b, ty.class(), "operand");
                self.operand(c, ty.class(), "operand");
            }
            Fma { ty, dst, a, b, c } => {
                if !ty.is_float() {
                    self.error(format!("fma at type {ty}"));
                }
                for r in [dst, a, b, c] {
                    self.class(r, ty.class(), "register");
                }
            }
            Setp {
                cond,
                ty,
                dst,
                a,
                b,
            } => {
                if !cond.accepts(ty) {
                    self.error(format!("setp.{cond} at type {ty}"));
                }
                self.class(dst, RegClass::Pred, "destination");
                self.class(a, ty.class(), "operand");
                self.operand(b, ty.class(), "operand");
            }
            Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => {
                self.class(dst, ty.class(), "destination");
                self.operand(a, ty.class(), "operand");
                self.operand(b, ty.class(), "operand");
                self.class(pred, RegClass::Pred, "selector");
                if ty == MType::Pred && (a.reg().is_none() || b.reg().is_none()) {
                    self.error("a predicate selection with an immediate");
                }
            }
            Cvt {
                op,
                to,
                from,
                dst,
                src,
            } => {
                if to == MType::Pred || from == MType::Pred {
                    self.error("a conversion of predicates");
                } else if !op.accepts(from, to) {
                    self.error(format!("cvt.{} from {from} to {to}", op.name()));
                }
                self.class(dst, to.class(), "destination");
                self.class(src, from.class(), "operand");
            }
            Mov { ty, dst, src } => {
                self.class(dst, ty.class(), "destination");
                self.operand(src, ty.class(), "source");
            }
            ReadSpecial { dst, .. } => self.class(dst, RegClass::B32, "destination"),
            LdParam { ty, dst, index } => {
                self.class(dst, ty.class(), "destination");
                match self.func.params.get(index as usize) {
                    Some(p) if MType::from_ir(p.ty) == ty => {}
                    Some(p) => self.error(format!("ld.param.{ty} of a {} parameter", p.ty)),
                    None => self.error(format!(
                        "ld.param of parameter {index}, which does not exist"
                    )),
                }
            }
            Ld {
                space,
                ty,
                dst,
                addr,
            } => {
                self.memory_type(ty);
                self.class(dst, ty.class(), "destination");
                self.address(space, addr);
            }
            St {
                space,
                ty,
                src,
                addr,
            } => {
                self.memory_type(ty);
                self.operand(src, ty.class(), "stored value");
                self.address(space, addr);
            }
            Atom {
                space,
                ty,
                dst,
                addr,
                src,
                ..
            } => {
                self.atomic_type(ty);
                self.class(dst, ty.class(), "destination");
                self.operand(src, ty.class(), "operand");
                self.address(space, addr);
            }
            Cas {
                space,
                ty,
                dst,
                addr,
                expected,
                replacement,
            } => {
                self.atomic_type(ty);
                self.class(dst, ty.class(), "destination");
                self.operand(expected, ty.class(), "operand");
                self.operand(replacement, ty.class(), "operand");
                self.address(space, addr);
            }
            Branch { pred, .. } => self.class(pred, RegClass::Pred, "branch condition"),
            Bar | Spill { .. } | Reload { .. } | Jump { .. } | Ret => {}
        }
    }

    fn memory_type(&mut self, ty: MType) {
        if ty == MType::Pred {
            self.error("a memory access of a predicate");
        }
    }

    fn atomic_type(&mut self, ty: MType) {
        if !ty.is_atomic() {
            self.error(format!("an atomic at type {ty}"));
        }
    }

    fn check_ssa(&mut self) {
        let func = self.func;
        let n = func.vreg_classes.len();
        let mut defs: Vec<Option<DefSite>> = vec![None; n];
        let mut define = |v: &mut Self, r: Reg, site: DefSite| {
            if !r.is_virtual() {
                return;
            }
            let i = r.index() as usize;
            match func.vreg_classes.get(i) {
                None => v.error(format!("{r} has no recorded class")),
                Some(&c) if c != r.class() => {
                    v.error(format!("{r} is recorded as a {c} register"));
                }
                Some(_) => {
                    if defs[i].is_some() {
                        v.error(format!("{r} is defined twice"));
                    } else {
                        defs[i] = Some(site);
                    }
                }
            }
        };
        for &b in &func.order {
            self.block = Some(b);
            self.inst = None;
            for &p in &func.blocks[b].params {
                define(self, p, (b, None));
            }
            for (i, inst) in func.blocks[b].insts.iter().enumerate() {
                self.inst = Some(i);
                if matches!(
                    inst.kind,
                    MInstKind::Spill { .. } | MInstKind::Reload { .. }
                ) {
                    self.error("a spill or reload before register allocation");
                }
                if let Some(d) = inst.kind.def() {
                    if inst.guard.is_some() {
                        self.error(format!("a guarded instruction defines {d}"));
                    }
                    define(self, d, (b, Some(i)));
                }
            }
        }

        let cfg = ControlFlowGraph::compute(func);
        let domtree = DominatorTree::compute(&cfg);
        for &b in &func.order {
            self.block = Some(b);
            for (i, inst) in func.blocks[b].insts.iter().enumerate() {
                self.inst = Some(i);
                for (r, role) in Self::regs_of(inst) {
                    if role != RegRole::Use || !r.is_virtual() {
                        continue;
                    }
                    let Some(Some((db, di))) = defs.get(r.index() as usize).copied() else {
                        self.error(format!("{r} is used but never defined"));
                        continue;
                    };
                    if !domtree.is_reachable(b) {
                        continue;
                    }
                    let dominated = if db == b {
                        di.is_none_or(|di| di < i)
                    } else {
                        domtree.dominates(db, b)
                    };
                    if !dominated {
                        self.error(format!("the definition of {r} does not dominate its use"));
                    }
                }
                let mut mismatch = Vec::new();
                inst.kind.for_each_target(|t| {
                    let Some(target) = func.blocks.get(t.block) else {
                        return;
                    };
                    let params = &target.params;
                    if params.len() != t.args.len() {
                        mismatch.push(format!(
                            "{} takes {}, the branch passes {}",
                            t.block,
                            warplift_ir::write::count(params.len(), "argument"),
                            t.args.len()
                        ));
                    } else if let Some((a, p)) = t
                        .args
                        .iter()
                        .zip(params)
                        .find(|(a, p)| a.class() != p.class())
                    {
                        mismatch.push(format!("argument {a} passed to parameter {p}"));
                    }
                });
                for m in mismatch {
                    self.error(m);
                }
            }
        }
    }

    fn check_allocated(&mut self, reg_file_sizes: Option<[u32; 3]>) {
        let func = self.func;
        for &b in &func.order {
            self.block = Some(b);
            self.inst = None;
            if !func.blocks[b].params.is_empty() {
                self.error("block parameters after register allocation");
            }
            for (i, inst) in func.blocks[b].insts.iter().enumerate() {
                self.inst = Some(i);
                let mut args = false;
                inst.kind.for_each_target(|t| args |= !t.args.is_empty());
                if args {
                    self.error("branch arguments after register allocation");
                }
                if let MInstKind::Spill { slot, .. } | MInstKind::Reload { slot, .. } = inst.kind {
                    if slot.0 >= func.spill_slots {
                        self.error(format!(
                            "spill slot {} of {} slots",
                            slot.0, func.spill_slots
                        ));
                    }
                }
                if let Some(sizes) = reg_file_sizes {
                    for (r, _) in Self::regs_of(inst) {
                        if r.index() >= sizes[r.class().index()] {
                            self.error(format!(
                                "{r} is outside the {} {} registers",
                                sizes[r.class().index()],
                                r.class()
                            ));
                        }
                    }
                }
            }
        }
    }
}
