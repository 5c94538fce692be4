//! The IR verifier.
//!
//! [`verify_function`] checks that a [`Function`] is well formed: every pass may assume
//! what it checks, and the interpreter relies on it. It never panics, whatever the
//! function holds, and it reports every error it finds rather than the first, each with
//! the source location and the text of the offending instruction. To avoid cascades, an
//! instruction whose structure is broken is not type-checked, an operand that does not
//! exist is not checked for dominance, and so on.
//!
//! The invariants checked:
//!
//! **Declarations**
//! - Every shared and local memory variable has a power-of-two alignment.
//! - Kernel parameter names are valid identifiers (`[A-Za-z_][A-Za-z0-9_]*`), each used
//!   once.
//!
//! **Structure**
//! - The function has at least one block; the first is the entry block.
//! - The entry block's parameters match the signature in number and types.
//! - The entry block is no branch destination: its parameters are the kernel's arguments,
//!   so it can have no predecessors.
//! - Every block of the layout exists, is not empty, ends with a terminator and has no
//!   terminator before its end.
//! - Every instruction of the layout exists and is placed exactly once, in the block the
//!   layout says it is in; its data has the format of its opcode; it has a result exactly
//!   when its opcode has one.
//! - Every block parameter knows its block and position.
//!
//! **SSA**
//! - Every value an instruction uses exists and is defined in the layout: a parameter of a
//!   block of the layout or the result of a placed instruction.
//! - Every use is dominated by its definition: by a definition earlier in the same block,
//!   or in a block that dominates the user's block. A branch argument is used at the
//!   branch. Uses in unreachable blocks are exempt (they are still type-checked).
//!
//! **Types** (the rules of `docs/ir.md`)
//! - Integer arithmetic, shifts, `ineg`, `popcnt`, `clz`, `ctz` and `icmp` take `i8` to
//!   `i64`; `band`, `bor`, `bxor` and `bnot` also take `i1`; float arithmetic, `fcmp` and
//!   `fma` take `f32` or `f64`. All operands of a binary or ternary operation have the
//!   same type, and the result has it too (`i1` for comparisons).
//! - `select` takes an `i1` condition and two operands of the result's type.
//! - `uextend`/`sextend` go to a strictly wider integer type, `ireduce` to a strictly
//!   narrower one; `fcvt_to_*` go from a float to `i8`..`i64`, `fcvt_from_*` the other way;
//!   `fpromote` goes from `f32` to `f64`, `fdemote` back; `bitcast` keeps the width.
//! - `iconst` has an integer type and an immediate within that type's width; `f32const`
//!   and `f64const` have their type and `f32const` a 32-bit pattern.
//! - Geometry reads, `lane_id`, `shared_addr` and `local_addr` give `i32`; the memory
//!   variable of an address exists.
//! - Addresses are `i64` in the global space and `i32` in the shared and local spaces;
//!   atomics operate on `i32` or `i64`, with operands and result of one type. (Offsets are
//!   `i32` immediates by construction; nothing more is required of them.)
//! - `brif` takes an `i1`, `br_table` an `i32` index and at least a default destination.
//! - Every branch destination exists and is in the layout, and receives as many arguments
//!   as it has parameters, of the parameters' types.

use crate::cfg::{ControlFlowGraph, DominatorTree};
use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::{InstructionData, InstructionFormat, Opcode};
use crate::srcloc::SourceLoc;
use crate::types::Type;
use crate::write::inst_to_string;
use crate::dfg::ValueDef;
use cranelift_entity::SecondaryMap;
use core::fmt;
use std::collections::HashSet;

/// One violated invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierError {
    /// The offending instruction, if the error is about one.
    pub inst: Option<Inst>,
    /// The block the error is in, if any.
    pub block: Option<Block>,
    /// The source location of the instruction (unknown for other errors).
    pub loc: SourceLoc,
    /// What the error is about, as printed: the instruction's text (`v7 = iadd v3, v6`),
    /// a block (`block3`), a memory variable (`smem0`) or the kernel (`kernel %name`).
    pub context: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.context.is_empty() {
            write!(f, "{}: {}", self.loc, self.message)
        } else {
            write!(f, "{}: {}: {}", self.loc, self.context, self.message)
        }
    }
}

impl std::error::Error for VerifierError {}

/// Every error found in a function, in the order of the checks; displayed one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", lines(.0))]
pub struct VerifierErrors(pub Vec<VerifierError>);

fn lines(errors: &[VerifierError]) -> String {
    errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks every invariant listed in the [module documentation](self).
pub fn verify_function(func: &Function) -> Result<(), VerifierErrors> {
    let mut v = Verifier {
        func,
        errors: Vec::new(),
        def_pos: SecondaryMap::new(),
        inst_ok: SecondaryMap::new(),
    };
    v.run();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifierErrors(v.errors))
    }
}

struct Verifier<'a> {
    func: &'a Function,
    errors: Vec<VerifierError>,
    /// Where each value defined in the layout is defined: its block and position (0 for
    /// parameters, 1 + index for results).
    def_pos: SecondaryMap<Value, Option<(Block, u32)>>,
    /// Instructions structurally sound enough to check operands and types of.
    inst_ok: SecondaryMap<Inst, bool>,
}

impl Verifier<'_> {
    fn kernel_error(&mut self, message: String) {
        let context = format!("kernel %{}", self.func.name);
        self.push(None, None, context, message);
    }

    fn block_error(&mut self, block: Block, message: String) {
        self.push(None, Some(block), block.to_string(), message);
    }

    fn inst_error(&mut self, inst: Inst, message: String) {
        let context = inst_to_string(self.func, inst);
        let block = self.func.layout.inst_block(inst);
        self.push(Some(inst), block, context, message);
    }

    fn push(
        &mut self,
        inst: Option<Inst>,
        block: Option<Block>,
        context: String,
        message: String,
    ) {
        let loc = inst.map_or_else(SourceLoc::default, |i| self.func.srclocs[i]);
        self.errors.push(VerifierError {
            inst,
            block,
            loc,
            context,
            message,
        });
    }

    fn run(&mut self) {
        self.check_declarations();
        self.check_layout();
        let Some(entry) = self.func.entry_block() else {
            self.kernel_error("kernel has no blocks".into());
            return;
        };
        self.check_entry(entry);
        let cfg = ControlFlowGraph::compute(self.func);
        let domtree = DominatorTree::compute(&cfg);
        for &block in self.func.layout.blocks() {
            if !self.func.dfg.block_is_valid(block) {
                continue;
            }
            for (pos, &inst) in self.func.layout.block_insts(block).iter().enumerate() {
                if !self.inst_ok[inst] {
                    continue;
                }
                let operands_ok = self.check_operands(inst, block, pos as u32 + 1, &domtree);
                self.check_destinations(inst, entry);
                if operands_ok {
                    if let Err(message) = self.check_types(inst) {
                        self.inst_error(inst, message);
                    }
                }
            }
        }
    }

    fn check_declarations(&mut self) {
        let func = self.func;
        for (var, data) in func.shared_vars.iter() {
            if !data.align.is_power_of_two() {
                let message = format!("alignment {} is not a power of two", data.align);
                self.push(None, None, var.to_string(), message);
            }
        }
        for (var, data) in func.local_vars.iter() {
            if !data.align.is_power_of_two() {
                let message = format!("alignment {} is not a power of two", data.align);
                self.push(None, None, var.to_string(), message);
            }
        }
        let mut seen = HashSet::new();
        for p in &func.signature.params {
            if !is_identifier(&p.name) {
                self.kernel_error(format!(
                    "parameter name {:?} is not a valid identifier",
                    p.name
                ));
            } else if !seen.insert(p.name.as_str()) {
                self.kernel_error(format!("parameter name {:?} is used twice", p.name));
            }
        }
    }

    /// Checks the shape of every block and records where each value is defined.
    fn check_layout(&mut self) {
        let func = self.func;
        let mut placed: HashSet<Inst> = HashSet::new();
        for &block in func.layout.blocks() {
            if !func.dfg.block_is_valid(block) {
                self.block_error(block, "block is in the layout but does not exist".into());
                continue;
            }
            for (n, &p) in func.dfg.block_params(block).iter().enumerate() {
                if func.dfg.value_def(p) != ValueDef::Param(block, n as u32) {
                    self.block_error(
                        block,
                        format!("parameter {p} does not know it is parameter {n} of {block}"),
                    );
                } else {
                    self.def_pos[p] = Some((block, 0));
                }
            }
            let insts = func.layout.block_insts(block);
            if insts.is_empty() {
                self.block_error(block, "block is empty".into());
                continue;
            }
            for (pos, &inst) in insts.iter().enumerate() {
                if !func.dfg.insts.is_valid(inst) {
                    self.block_error(block, format!("{inst} does not exist"));
                    continue;
                }
                if !placed.insert(inst) {
                    self.inst_error(inst, "instruction is placed more than once".into());
                    continue;
                }
                if func.layout.inst_block(inst) != Some(block) {
                    self.inst_error(
                        inst,
                        format!("instruction stands in {block}, but the layout does not know it"),
                    );
                    continue;
                }
                let data = func.inst(inst);
                let opcode = data.opcode();
                let last = pos + 1 == insts.len();
                if opcode.is_terminator() && !last {
                    self.inst_error(inst, "terminator before the end of the block".into());
                }
                if last && !opcode.is_terminator() {
                    self.inst_error(
                        inst,
                        format!("{block} does not end with a terminator"),
                    );
                }
                if format_of(data) != opcode.format() {
                    self.inst_error(
                        inst,
                        format!(
                            "instruction data has format {:?}, but {opcode} has format {:?}",
                            format_of(data),
                            opcode.format()
                        ),
                    );
                    continue;
                }
                match (opcode.has_result(), func.dfg.inst_result(inst)) {
                    (true, None) => {
                        self.inst_error(inst, format!("{opcode} must have a result"));
                        continue;
                    }
                    (false, Some(_)) => {
                        self.inst_error(inst, format!("{opcode} has no result"));
                        continue;
                    }
                    (_, Some(r)) => self.def_pos[r] = Some((block, pos as u32 + 1)),
                    (false, None) => {}
                }
                self.inst_ok[inst] = true;
            }
        }
    }

    fn check_entry(&mut self, entry: Block) {
        let func = self.func;
        if !func.dfg.block_is_valid(entry) {
            return;
        }
        let params = func.dfg.block_params(entry);
        let sig = &func.signature.params;
        if params.len() != sig.len() {
            self.block_error(
                entry,
                format!(
                    "entry block has {} parameters, but the signature has {}",
                    params.len(),
                    sig.len()
                ),
            );
            return;
        }
        for (&v, p) in params.iter().zip(sig) {
            let ty = func.dfg.value_type(v);
            if ty != p.ty {
                self.block_error(
                    entry,
                    format!(
                        "entry block parameter {v} has type {ty}, but kernel parameter {} \
                         has type {}",
                        p.name, p.ty
                    ),
                );
            }
        }
    }

    /// Checks that every value `inst` uses exists and that its definition dominates the
    /// use; returns whether every operand exists and is defined (so types can be read).
    fn check_operands(
        &mut self,
        inst: Inst,
        block: Block,
        pos: u32,
        domtree: &DominatorTree<Block>,
    ) -> bool {
        let func = self.func;
        let mut ok = true;
        let mut reported = Vec::new();
        for v in func.inst(inst).all_values() {
            if reported.contains(&v) {
                continue;
            }
            if !func.dfg.value_is_valid(v) {
                self.inst_error(inst, format!("{v} does not exist"));
                reported.push(v);
                ok = false;
                continue;
            }
            let Some((def_block, def_pos)) = self.def_pos[v] else {
                self.inst_error(
                    inst,
                    format!("{v} is not defined: its definition is not in the layout"),
                );
                reported.push(v);
                ok = false;
                continue;
            };
            if !domtree.is_reachable(block) {
                continue;
            }
            if def_block == block {
                if def_pos >= pos {
                    self.inst_error(inst, format!("{v} is used before its definition"));
                    reported.push(v);
                }
            } else if !domtree.dominates(def_block, block) {
                self.inst_error(
                    inst,
                    format!("{v} is defined in {def_block}, which does not dominate this use"),
                );
                reported.push(v);
            }
        }
        ok
    }

    fn check_destinations(&mut self, inst: Inst, entry: Block) {
        let func = self.func;
        let data = func.inst(inst);
        if let InstructionData::BrTable { dests, .. } = data {
            if dests.is_empty() {
                self.inst_error(inst, "br_table has no default destination".into());
            }
        }
        for call in data.branch_destinations() {
            let dest = call.block;
            if !func.dfg.block_is_valid(dest) {
                self.inst_error(inst, format!("destination {dest} does not exist"));
                continue;
            }
            if !func.layout.is_block_inserted(dest) {
                self.inst_error(inst, format!("destination {dest} is not in the layout"));
                continue;
            }
            if dest == entry {
                self.inst_error(
                    inst,
                    format!("branch to the entry block {dest}, which can have no predecessors"),
                );
            }
            let params = func.dfg.block_params(dest);
            if params.len() != call.args.len() {
                self.inst_error(
                    inst,
                    format!(
                        "{dest} takes {} arguments, but {} are passed",
                        params.len(),
                        call.args.len()
                    ),
                );
                continue;
            }
            for (n, (&arg, &param)) in call.args.iter().zip(params).enumerate() {
                if !func.dfg.value_is_valid(arg) {
                    continue; // reported by check_operands
                }
                let (at, pt) = (func.dfg.value_type(arg), func.dfg.value_type(param));
                if at != pt {
                    self.inst_error(
                        inst,
                        format!(
                            "argument {n} of {dest} is {arg} of type {at}, but {param} has \
                             type {pt}"
                        ),
                    );
                }
            }
        }
    }

    /// The type rules of `inst`, whose operands all exist and whose result is present
    /// exactly when its opcode has one.
    fn check_types(&self, inst: Inst) -> Result<(), String> {
        use InstructionData as D;
        use Opcode as O;
        let func = self.func;
        let ty = |v: Value| func.dfg.value_type(v);
        let data = func.inst(inst);
        let opcode = data.opcode();
        let result = func.dfg.inst_result(inst).map(ty);
        // `rt` is only read for opcodes with a result.
        let rt = result.unwrap_or(Type::I1);
        let same = |a: Type, b: Type| {
            if a == b {
                Ok(())
            } else {
                Err(format!("operands have different types ({a}, {b})"))
            }
        };
        let result_is = |want: Type| {
            if rt == want {
                Ok(())
            } else {
                Err(format!("result type {rt} should be {want}"))
            }
        };
        let wide_int = |t: Type| {
            if t.is_wide_int() {
                Ok(())
            } else {
                Err(format!("{opcode} needs integer operands of 8 to 64 bits, not {t}"))
            }
        };
        let int = |t: Type| {
            if t.is_int() {
                Ok(())
            } else {
                Err(format!("{opcode} needs integer operands, not {t}"))
            }
        };
        let float = |t: Type| {
            if t.is_float() {
                Ok(())
            } else {
                Err(format!("{opcode} needs float operands, not {t}"))
            }
        };
        let address = |space: crate::AddrSpace, addr: Value| {
            let (t, want) = (ty(addr), space.addr_type());
            if t == want {
                Ok(())
            } else {
                Err(format!(
                    "address {addr} has type {t}, but {space} addresses are {want}"
                ))
            }
        };
        let atomic = |t: Type| {
            if matches!(t, Type::I32 | Type::I64) {
                Ok(())
            } else {
                Err(format!("atomic operations need i32 or i64 operands, not {t}"))
            }
        };
        match (opcode, data) {
            (O::Iconst, &D::UnaryImm { imm, .. }) => {
                if rt.is_float() {
                    return Err(format!("iconst needs an integer type, not {rt}"));
                }
                if imm & !rt.mask() != 0 {
                    return Err(format!("immediate {imm:#x} does not fit in {rt}"));
                }
            }
            (O::F32const, &D::FloatConst { bits, .. }) => {
                result_is(Type::F32)?;
                if bits >> 32 != 0 {
                    return Err(format!("immediate {bits:#x} does not fit in f32"));
                }
            }
            (O::F64const, _) => result_is(Type::F64)?,
            (O::Band | O::Bor | O::Bxor, D::Binary { args, .. }) => {
                let t = ty(args[0]);
                same(t, ty(args[1]))?;
                int(t)?;
                result_is(t)?;
            }
            (O::Bnot, &D::Unary { arg, .. }) => {
                int(ty(arg))?;
                result_is(ty(arg))?;
            }
            (O::Fadd | O::Fsub | O::Fmul | O::Fdiv | O::Fmin | O::Fmax, D::Binary { args, .. }) => {
                let t = ty(args[0]);
                same(t, ty(args[1]))?;
                float(t)?;
                result_is(t)?;
            }
            (_, D::Binary { args, .. }) => {
                // Every other binary opcode is integer arithmetic or a shift.
                let t = ty(args[0]);
                same(t, ty(args[1]))?;
                wide_int(t)?;
                result_is(t)?;
            }
            (O::Ineg | O::Popcnt | O::Clz | O::Ctz, &D::Unary { arg, .. }) => {
                wide_int(ty(arg))?;
                result_is(ty(arg))?;
            }
            (O::Fneg | O::Fabs | O::Sqrt, &D::Unary { arg, .. }) => {
                float(ty(arg))?;
                result_is(ty(arg))?;
            }
            (O::Icmp, D::IntCompare { args, .. }) => {
                let t = ty(args[0]);
                same(t, ty(args[1]))?;
                wide_int(t)?;
                result_is(Type::I1)?;
            }
            (O::Fcmp, D::FloatCompare { args, .. }) => {
                let t = ty(args[0]);
                same(t, ty(args[1]))?;
                float(t)?;
                result_is(Type::I1)?;
            }
            (O::Fma, D::Ternary { args, .. }) => {
                let t = ty(args[0]);
                same(t, ty(args[1]))?;
                same(t, ty(args[2]))?;
                float(t)?;
                result_is(t)?;
            }
            (O::Select, D::Ternary { args, .. }) => {
                let c = ty(args[0]);
                if c != Type::I1 {
                    return Err(format!("select condition has type {c}, not i1"));
                }
                let t = ty(args[1]);
                same(t, ty(args[2]))?;
                result_is(t)?;
            }
            (O::Uextend | O::Sextend, &D::Unary { arg, .. }) => {
                let t = ty(arg);
                int(t)?;
                if !rt.is_int() || rt.bits() <= t.bits() {
                    return Err(format!("{opcode} from {t} to {rt} does not widen"));
                }
            }
            (O::Ireduce, &D::Unary { arg, .. }) => {
                let t = ty(arg);
                int(t)?;
                if !rt.is_int() || rt.bits() >= t.bits() {
                    return Err(format!("ireduce from {t} to {rt} does not narrow"));
                }
            }
            (O::FcvtToSint | O::FcvtToUint, &D::Unary { arg, .. }) => {
                float(ty(arg))?;
                if !rt.is_wide_int() {
                    return Err(format!(
                        "{opcode} converts to an integer type of 8 to 64 bits, not {rt}"
                    ));
                }
            }
            (O::FcvtFromSint | O::FcvtFromUint, &D::Unary { arg, .. }) => {
                wide_int(ty(arg))?;
                if !rt.is_float() {
                    return Err(format!("{opcode} converts to f32 or f64, not {rt}"));
                }
            }
            (O::Fpromote | O::Fdemote, &D::Unary { arg, .. }) => {
                let (from, to) = if opcode == O::Fpromote {
                    (Type::F32, Type::F64)
                } else {
                    (Type::F64, Type::F32)
                };
                let t = ty(arg);
                if t != from || rt != to {
                    return Err(format!(
                        "{opcode} converts {from} to {to}, not {t} to {rt}"
                    ));
                }
            }
            (O::Bitcast, &D::Unary { arg, .. }) => {
                let t = ty(arg);
                if t.bits() != rt.bits() {
                    return Err(format!(
                        "bitcast between types of different widths ({t}, {rt})"
                    ));
                }
            }
            (O::ThreadId | O::BlockId | O::BlockDim | O::GridDim | O::LaneId, _) => {
                result_is(Type::I32)?;
            }
            (O::Load, &D::Load { space, arg, .. }) => address(space, arg)?,
            (O::Store, &D::Store { space, args, .. }) => address(space, args[1])?,
            (O::AtomicRmw, &D::AtomicRmw { space, args, .. }) => {
                address(space, args[0])?;
                let t = ty(args[1]);
                atomic(t)?;
                result_is(t)?;
            }
            (O::AtomicCas, &D::AtomicCas { space, args, .. }) => {
                address(space, args[0])?;
                let t = ty(args[1]);
                same(t, ty(args[2]))?;
                atomic(t)?;
                result_is(t)?;
            }
            (O::SharedAddr, &D::SharedAddr { var, .. }) => {
                if !func.shared_vars.is_valid(var) {
                    return Err(format!("{var} is not declared"));
                }
                result_is(Type::I32)?;
            }
            (O::LocalAddr, &D::LocalAddr { var, .. }) => {
                if !func.local_vars.is_valid(var) {
                    return Err(format!("{var} is not declared"));
                }
                result_is(Type::I32)?;
            }
            (O::Brif, &D::Brif { arg, .. }) => {
                let t = ty(arg);
                if t != Type::I1 {
                    return Err(format!("branch condition has type {t}, not i1"));
                }
            }
            (O::BrTable, &D::BrTable { arg, .. }) => {
                let t = ty(arg);
                if t != Type::I32 {
                    return Err(format!("br_table index has type {t}, not i32"));
                }
            }
            // Barrier, Jump, Return and any pairing the format check already rejected.
            _ => {}
        }
        Ok(())
    }
}

/// The format of the data's variant.
fn format_of(data: &InstructionData) -> InstructionFormat {
    use InstructionData as D;
    use InstructionFormat as F;
    match data {
        D::Nullary { .. } => F::Nullary,
        D::UnaryImm { .. } => F::UnaryImm,
        D::FloatConst { .. } => F::FloatConst,
        D::Unary { .. } => F::Unary,
        D::Binary { .. } => F::Binary,
        D::Ternary { .. } => F::Ternary,
        D::IntCompare { .. } => F::IntCompare,
        D::FloatCompare { .. } => F::FloatCompare,
        D::Geometry { .. } => F::Geometry,
        D::Load { .. } => F::Load,
        D::Store { .. } => F::Store,
        D::AtomicRmw { .. } => F::AtomicRmw,
        D::AtomicCas { .. } => F::AtomicCas,
        D::SharedAddr { .. } => F::SharedAddr,
        D::LocalAddr { .. } => F::LocalAddr,
        D::Jump { .. } => F::Jump,
        D::Brif { .. } => F::Brif,
        D::BrTable { .. } => F::BrTable,
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
