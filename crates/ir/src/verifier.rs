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
//! - Every shared and local memory variable has a power-of-two alignment, and each ends,
//!   as laid out by [`Function::shared_offsets`] / [`Function::local_offsets`], within
//!   the `u32::MAX` bytes an `i32` window address can reach.
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
use crate::dfg::ValueDef;
use crate::entities::{Block, Inst, Value};
use crate::function::{var_extents, Function};
use crate::instructions::{InstructionData, InstructionFormat, Opcode, TypeClass};
use crate::srcloc::SourceLoc;
use crate::types::Type;
use crate::write::{count, inst_to_string};
use core::fmt;
use cranelift_entity::{EntitySet, SecondaryMap};
use std::collections::HashSet;

/// One violated invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierError {
    /// The offending instruction, if the error is about one.
    pub inst: Option<Inst>,
    /// The block the error is in, if any.
    pub block: Option<Block>,
    /// The source location of the instruction, or for an error about a whole block, of
    /// the block ([`Function::block_srclocs`]); unknown for other errors.
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
    // Sized up front: growing a map one entity at a time costs a call per entity.
    let mut def_pos = SecondaryMap::new();
    def_pos.resize(func.dfg.num_values());
    let mut inst_ok = SecondaryMap::new();
    inst_ok.resize(func.dfg.insts.len());
    let mut v = Verifier {
        func,
        errors: Vec::new(),
        def_pos,
        inst_ok,
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
        let context = match self.func.inst(inst) {
            // The printer needs the default destination of a br_table.
            InstructionData::BrTable { arg, dests, .. } if dests.is_empty() => {
                format!("br_table {arg}")
            }
            _ => inst_to_string(self.func, inst),
        };
        let block = self.func.layout.inst_block(inst);
        self.push(Some(inst), block, context, message);
    }

    fn push(&mut self, inst: Option<Inst>, block: Option<Block>, context: String, message: String) {
        let loc = match (inst, block) {
            (Some(i), _) => self.func.srclocs[i],
            (None, Some(b)) => self.func.block_srclocs[b],
            (None, None) => SourceLoc::default(),
        };
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
        // Window offsets are u32: the layout of a window that does not fit would have to
        // be clamped, placing variables on top of each other. Report the first variable
        // that does not fit (the rest follow it, so one error says it all).
        let shared = var_extents(func.shared_vars.values());
        if let Some((var, end)) = first_past_u32(func.shared_vars.keys().zip(shared)) {
            self.push(None, None, var.to_string(), window_message("shared", end));
        }
        let local = var_extents(func.local_vars.values());
        if let Some((var, end)) = first_past_u32(func.local_vars.keys().zip(local)) {
            self.push(None, None, var.to_string(), window_message("local", end));
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
        // One bit per instruction: a hashed set cost as much as the rest of this walk.
        let mut placed: EntitySet<Inst> = EntitySet::with_capacity(func.dfg.insts.len());
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
                    self.inst_error(inst, format!("{block} does not end with a terminator"));
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
                    "entry block has {}, but the signature has {}",
                    count(params.len(), "parameter"),
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
                        "{dest} takes {}, but {} {} passed",
                        count(params.len(), "argument"),
                        call.args.len(),
                        if call.args.len() == 1 { "is" } else { "are" }
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
                Err(format!(
                    "{opcode} needs integer operands of 8 to 64 bits, not {t}"
                ))
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
                Err(format!(
                    "atomic operations need i32 or i64 operands, not {t}"
                ))
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
            // Arithmetic, bitwise and comparison opcodes, typed by the opcode table: all
            // operands of one type of the opcode's class, the result of that type too
            // unless the opcode fixes it (`i1` for comparisons).
            (
                _,
                D::Unary { .. }
                | D::Binary { .. }
                | D::Ternary { .. }
                | D::IntCompare { .. }
                | D::FloatCompare { .. },
            ) if opcode.type_class() != TypeClass::Special => {
                let args = data.args();
                let t = ty(args[0]);
                for &v in &args[1..] {
                    same(t, ty(v))?;
                }
                match opcode.type_class() {
                    TypeClass::Int => wide_int(t)?,
                    TypeClass::IntOrBool => int(t)?,
                    TypeClass::Float => float(t)?,
                    TypeClass::Special => {}
                }
                result_is(opcode.fixed_result_type().unwrap_or(t))?;
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
                    return Err(format!("{opcode} converts {from} to {to}, not {t} to {rt}"));
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

/// The first variable whose extent ends past `u32::MAX`, with that end.
fn first_past_u32<V>(mut vars: impl Iterator<Item = (V, (u64, u64))>) -> Option<(V, u64)> {
    vars.find(|(_, (_, end))| *end > u64::from(u32::MAX))
        .map(|(var, (_, end))| (var, end))
}

fn window_message(space: &str, end: u64) -> String {
    format!(
        "the {space} window would end at byte {end}, past the {} bytes its 32-bit \
         addresses can reach",
        u32::MAX
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{BlockAppender, InstBuilder};
    use crate::condcodes::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC};
    use crate::function::{MemVarData, Param, Signature};
    use crate::instructions::BlockCall;
    use crate::LocalVar;
    use crate::SharedVar;

    /// A kernel `%k` with the given parameters and its entry block (in the layout).
    fn kernel(params: &[(&str, Type)]) -> (Function, Block, Vec<Value>) {
        let sig = Signature {
            params: params.iter().map(|&(n, t)| Param::new(n, t)).collect(),
        };
        let mut f = Function::with_name_signature("k", sig);
        let b0 = f.dfg.make_block();
        f.layout.append_block(b0);
        let vals = params
            .iter()
            .map(|&(_, t)| f.dfg.append_block_param(b0, t))
            .collect();
        (f, b0, vals)
    }

    fn ins(f: &mut Function, b: Block) -> BlockAppender<'_> {
        BlockAppender::new(f, b)
    }

    fn errors(f: &Function) -> Vec<String> {
        match verify_function(f) {
            Ok(()) => Vec::new(),
            Err(e) => e.0.iter().map(|e| e.to_string()).collect(),
        }
    }

    /// Asserts that verifying `f` gives exactly the error `want`.
    #[track_caller]
    fn assert_error(f: &Function, want: &str) {
        assert_eq!(errors(f), vec![want.to_string()], "in\n{f}");
    }

    /// A kernel whose entry block holds `body` then `return`, and the value it returns.
    fn with_body(
        params: &[(&str, Type)],
        body: impl FnOnce(&mut Function, Block, &[Value]),
    ) -> Function {
        let (mut f, b0, vals) = kernel(params);
        body(&mut f, b0, &vals);
        ins(&mut f, b0).return_();
        f
    }

    #[test]
    fn a_well_formed_kernel_verifies() {
        let (mut f, b0, v) = kernel(&[("x", Type::I64), ("a", Type::F32), ("n", Type::I32)]);
        let smem = f.shared_vars.push(MemVarData {
            size: 64,
            align: 16,
        });
        let lmem = f.local_vars.push(MemVarData { size: 8, align: 8 });
        let (b1, b2, b3) = (f.dfg.make_block(), f.dfg.make_block(), f.dfg.make_block());
        let p2 = f.dfg.append_block_param(b2, Type::I32);
        let tid = ins(&mut f, b0).thread_id(Dim::X);
        let c = ins(&mut f, b0).icmp(IntCC::SignedLessThan, tid, v[2]);
        ins(&mut f, b0).brif(c, b1, &[], b2, &[tid]);
        let w = ins(&mut f, b1).uextend(Type::I64, tid);
        let addr = ins(&mut f, b1).iadd(v[0], w);
        let x = ins(&mut f, b1).load(Type::F32, AddrSpace::Global, addr, 4);
        let y = ins(&mut f, b1).fma(v[1], x, x);
        ins(&mut f, b1).store(AddrSpace::Global, y, addr, -4);
        let sa = ins(&mut f, b1).shared_addr(smem);
        ins(&mut f, b1).atomic_rmw(AtomicRmwOp::Add, AddrSpace::Shared, sa, 0, tid);
        let la = ins(&mut f, b1).local_addr(lmem);
        ins(&mut f, b1).atomic_cas(AddrSpace::Local, la, 0, w, w);
        ins(&mut f, b1).barrier();
        ins(&mut f, b1).jump(b2, &[tid]);
        ins(&mut f, b2).br_table(p2, BlockCall::new(b3, []), &[BlockCall::new(b1, [])]);
        ins(&mut f, b3).return_();
        assert_eq!(errors(&f), Vec::<String>::new(), "{f}");
    }

    #[test]
    fn the_documented_example() {
        let (mut f, b0, v) = kernel(&[("a", Type::I32), ("b", Type::I64)]);
        ins(&mut f, b0)
            .with_srcloc(SourceLoc::new(12, 5))
            .iadd(v[0], v[1]);
        ins(&mut f, b0).return_();
        assert_error(
            &f,
            "12:5: v2 = iadd v0, v1: operands have different types (i32, i64)",
        );
        let e = verify_function(&f).unwrap_err();
        assert_eq!(e.0[0].inst, Some(Inst::from_u32(0)));
        assert_eq!(e.0[0].block, Some(b0));
        assert_eq!(e.0[0].loc, SourceLoc::new(12, 5));
        assert_eq!(e.0[0].message, "operands have different types (i32, i64)");
    }

    #[test]
    fn errors_are_collected_one_per_line() {
        let (mut f, b0, v) = kernel(&[("a", Type::I32), ("b", Type::I64)]);
        ins(&mut f, b0).iadd(v[0], v[1]);
        ins(&mut f, b0).fneg(v[0]);
        ins(&mut f, b0).return_();
        let e = verify_function(&f).unwrap_err();
        assert_eq!(
            e.to_string(),
            "?: v2 = iadd v0, v1: operands have different types (i32, i64)\n\
             ?: v3 = fneg v0: fneg needs float operands, not i32"
        );
    }

    #[test]
    fn memory_alignment() {
        let mut f = with_body(&[], |_, _, _| {});
        f.shared_vars.push(MemVarData { size: 4, align: 3 });
        f.local_vars.push(MemVarData { size: 4, align: 0 });
        assert_eq!(
            errors(&f),
            vec![
                "?: smem0: alignment 3 is not a power of two",
                "?: lmem0: alignment 0 is not a power of two"
            ]
        );
    }

    #[test]
    fn memory_windows_fit_u32_addresses() {
        // Exactly u32::MAX bytes fit.
        let mut f = with_body(&[], |_, _, _| {});
        f.shared_vars.push(MemVarData {
            size: u32::MAX - 16,
            align: 1,
        });
        f.shared_vars.push(MemVarData { size: 16, align: 1 });
        f.local_vars.push(MemVarData {
            size: u32::MAX,
            align: 16,
        });
        assert_eq!(errors(&f), Vec::<String>::new());
        assert_eq!(f.shared_size(), u32::MAX);
        // One byte more, in size or by alignment padding, does not.
        f.shared_vars.push(MemVarData { size: 1, align: 1 });
        f.local_vars.push(MemVarData { size: 0, align: 4 });
        assert_eq!(
            errors(&f),
            vec![
                "?: smem2: the shared window would end at byte 4294967296, past the \
                 4294967295 bytes its 32-bit addresses can reach",
                "?: lmem1: the local window would end at byte 4294967296, past the \
                 4294967295 bytes its 32-bit addresses can reach"
            ]
        );
        // The layout functions stay total on such a function.
        assert_eq!(f.shared_size(), u32::MAX);
        assert_eq!(f.local_offsets()[LocalVar::from_u32(1)], u32::MAX);
        // Many huge variables: the u64 sums saturate rather than wrap.
        let mut f = with_body(&[], |_, _, _| {});
        for _ in 0..8 {
            f.local_vars.push(MemVarData {
                size: u32::MAX,
                align: 1 << 31,
            });
        }
        assert_eq!(
            errors(&f),
            vec![
                "?: lmem1: the local window would end at byte 8589934591, past the \
                 4294967295 bytes its 32-bit addresses can reach"
            ]
        );
        assert_eq!(f.local_size(), u32::MAX);
    }

    #[test]
    fn parameter_names() {
        let mut f = with_body(&[("x", Type::I32), ("x", Type::I32)], |_, _, _| {});
        assert_error(&f, "?: kernel %k: parameter name \"x\" is used twice");
        f.signature.params[1].name = "1x".into();
        assert_error(
            &f,
            "?: kernel %k: parameter name \"1x\" is not a valid identifier",
        );
        f.signature.params[1].name = String::new();
        assert_error(
            &f,
            "?: kernel %k: parameter name \"\" is not a valid identifier",
        );
        f.signature.params[1].name = "_y2".into();
        assert_eq!(errors(&f), Vec::<String>::new());
    }

    #[test]
    fn no_blocks() {
        let f = Function::with_name_signature("k", Signature::default());
        assert_error(&f, "?: kernel %k: kernel has no blocks");
    }

    #[test]
    fn entry_params_match_the_signature() {
        let mut f = with_body(&[("x", Type::I32)], |_, _, _| {});
        f.signature.params.push(Param::new("y", Type::F32));
        assert_error(
            &f,
            "?: block0: entry block has 1 parameter, but the signature has 2",
        );
        f.signature.params.pop();
        f.signature.params[0].ty = Type::I64;
        assert_error(
            &f,
            "?: block0: entry block parameter v0 has type i32, but kernel parameter x has type i64",
        );
    }

    #[test]
    fn empty_block() {
        let (mut f, b0, _) = kernel(&[]);
        let _ = b0;
        assert_error(&f, "?: block0: block is empty");
        let b1 = f.dfg.make_block();
        ins(&mut f, b0).jump(b1, &[]);
        f.layout.append_block(b1);
        assert_error(&f, "?: block1: block is empty");
        // Block-level errors stand where the block does.
        f.block_srclocs[b1] = SourceLoc::new(7, 1);
        assert_error(&f, "7:1: block1: block is empty");
    }

    #[test]
    fn missing_terminator() {
        let (mut f, b0, _) = kernel(&[]);
        ins(&mut f, b0).lane_id();
        assert_error(&f, "?: v0 = lane_id: block0 does not end with a terminator");
    }

    #[test]
    fn terminator_before_the_end() {
        let (mut f, b0, _) = kernel(&[]);
        ins(&mut f, b0).return_();
        ins(&mut f, b0).return_();
        assert_error(&f, "?: return: terminator before the end of the block");
    }

    #[test]
    fn format_and_result_presence() {
        let (mut f, b0, _) = kernel(&[]);
        let i = f.dfg.make_inst(
            InstructionData::Nullary {
                opcode: Opcode::Iconst,
            },
            Some(Type::I32),
        );
        f.layout.append_inst(i, b0);
        let i = f.dfg.make_inst(
            InstructionData::Nullary {
                opcode: Opcode::LaneId,
            },
            None,
        );
        f.layout.append_inst(i, b0);
        let i = f.dfg.make_inst(
            InstructionData::Nullary {
                opcode: Opcode::Barrier,
            },
            Some(Type::I32),
        );
        f.layout.append_inst(i, b0);
        ins(&mut f, b0).return_();
        assert_eq!(
            errors(&f),
            vec![
                "?: v0 = iconst.i32: instruction data has format Nullary, but iconst has \
                 format UnaryImm",
                "?: lane_id: lane_id must have a result",
                "?: v1 = barrier: barrier has no result",
            ]
        );
    }

    #[test]
    fn value_does_not_exist() {
        let f = with_body(&[], |f, b0, _| {
            let c = ins(f, b0).iconst(Type::I32, 1);
            ins(f, b0).iadd(c, Value::from_u32(99));
        });
        assert_error(&f, "?: v1 = iadd v0, v99: v99 does not exist");
    }

    #[test]
    fn value_not_in_the_layout() {
        let f = with_body(&[], |f, b0, _| {
            let i = f.dfg.make_inst(
                InstructionData::Nullary {
                    opcode: Opcode::LaneId,
                },
                Some(Type::I32),
            );
            let v = f.dfg.inst_result(i).unwrap();
            ins(f, b0).ineg(v);
        });
        assert_error(
            &f,
            "?: v1 = ineg v0: v0 is not defined: its definition is not in the layout",
        );
    }

    #[test]
    fn removed_block_param_is_not_defined() {
        let (mut f, b0, _) = kernel(&[]);
        let b1 = f.dfg.make_block();
        let p = f.dfg.append_block_param(b1, Type::I32);
        ins(&mut f, b0).jump(b1, &[]);
        ins(&mut f, b1).ineg(p);
        ins(&mut f, b1).return_();
        f.dfg.remove_block_param(b1, 0);
        assert_error(
            &f,
            "?: v1 = ineg v0: v0 is not defined: its definition is not in the layout",
        );
    }

    #[test]
    fn use_before_definition_in_a_block() {
        let (mut f, b0, _) = kernel(&[]);
        let c = ins(&mut f, b0).iconst(Type::I32, 1);
        let bad = ins(&mut f, b0).iadd(c, c);
        // Make the iadd read its own result.
        let Some(ValueDef::Result(i)) = Some(f.dfg.value_def(bad)) else {
            unreachable!()
        };
        f.dfg.insts[i].map_values(|_| bad);
        ins(&mut f, b0).return_();
        assert_error(&f, "?: v1 = iadd v1, v1: v1 is used before its definition");
    }

    #[test]
    fn definition_does_not_dominate() {
        // block0 -> block1 | block2 -> block3; block3 uses a value of block1.
        let (mut f, b0, v) = kernel(&[("c", Type::I1)]);
        let (b1, b2, b3) = (f.dfg.make_block(), f.dfg.make_block(), f.dfg.make_block());
        ins(&mut f, b0).brif(v[0], b1, &[], b2, &[]);
        let x = ins(&mut f, b1).lane_id();
        ins(&mut f, b1).jump(b3, &[]);
        ins(&mut f, b2).jump(b3, &[x]);
        f.dfg.append_block_param(b3, Type::I32);
        // block1's jump passes nothing: fix it so only the dominance errors remain.
        let j = f.layout.last_inst(b1).unwrap();
        f.dfg.insts[j].branch_destinations_mut()[0].args.push(x);
        ins(&mut f, b3).ineg(x);
        ins(&mut f, b3).return_();
        assert_eq!(
            errors(&f),
            vec![
                "?: jump block3(v1): v1 is defined in block1, which does not dominate this use",
                "?: v3 = ineg v1: v1 is defined in block1, which does not dominate this use",
            ]
        );
    }

    #[test]
    fn unreachable_blocks_skip_dominance_but_not_types() {
        let (mut f, b0, v) = kernel(&[("x", Type::I32)]);
        let (b1, b2) = (f.dfg.make_block(), f.dfg.make_block());
        let y = ins(&mut f, b1).lane_id();
        ins(&mut f, b1).return_();
        ins(&mut f, b0).return_();
        // block2 is unreachable: it may use block1's value, but types still count.
        ins(&mut f, b2).iadd(y, v[0]);
        let z = ins(&mut f, b2).iconst(Type::I64, 0);
        ins(&mut f, b2).iadd(y, z);
        ins(&mut f, b2).return_();
        assert_error(
            &f,
            "?: v4 = iadd v1, v3: operands have different types (i32, i64)",
        );
    }

    /// Builds one instruction with `build` in a kernel with parameters of every type
    /// (`i1 i8 i16 i32 i64 f32 f64`, as `v0..v6`) and returns the verifier's errors.
    fn one<R>(build: impl FnOnce(BlockAppender<'_>, &[Value]) -> R) -> Vec<String> {
        let params: Vec<(String, Type)> = Type::ALL.iter().map(|t| (format!("p{t}"), *t)).collect();
        let params: Vec<(&str, Type)> = params.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let f = with_body(&params, |f, b0, v| {
            build(ins(f, b0), v);
        });
        errors(&f)
    }

    /// Asserts that the instruction gives exactly the error `want` (after `?: TEXT: `).
    #[track_caller]
    fn type_error<R>(build: impl FnOnce(BlockAppender<'_>, &[Value]) -> R, want: &str) {
        let errs = one(build);
        assert_eq!(errs.len(), 1, "{errs:?}");
        let msg = errs[0].splitn(3, ": ").nth(2).unwrap();
        assert_eq!(msg, want, "{errs:?}");
    }

    #[track_caller]
    fn type_ok<R>(build: impl FnOnce(BlockAppender<'_>, &[Value]) -> R) {
        assert_eq!(one(build), Vec::<String>::new());
    }

    const B: usize = 0;
    const I8: usize = 1;
    const I32: usize = 3;
    const I64: usize = 4;
    const F32: usize = 5;
    const F64: usize = 6;

    #[test]
    fn integer_operations() {
        type_ok(|b, v| b.sdiv(v[I8], v[I8]));
        type_error(
            |b, v| b.iadd(v[I32], v[I64]),
            "operands have different types (i32, i64)",
        );
        type_error(
            |b, v| b.imul(v[B], v[B]),
            "imul needs integer operands of 8 to 64 bits, not i1",
        );
        type_error(
            |b, v| b.ishl(v[F32], v[F32]),
            "ishl needs integer operands of 8 to 64 bits, not f32",
        );
        type_error(
            |b, v| b.clz(v[B]),
            "clz needs integer operands of 8 to 64 bits, not i1",
        );
        type_error(
            |b, v| b.icmp(IntCC::Equal, v[B], v[B]),
            "icmp needs integer operands of 8 to 64 bits, not i1",
        );
    }

    #[test]
    fn bitwise_operations_take_i1() {
        type_ok(|b, v| b.band(v[B], v[B]));
        type_ok(|b, v| b.bnot(v[B]));
        type_error(
            |b, v| b.bxor(v[F64], v[F64]),
            "bxor needs integer operands, not f64",
        );
        type_error(
            |b, v| b.bnot(v[F32]),
            "bnot needs integer operands, not f32",
        );
    }

    #[test]
    fn float_operations() {
        type_ok(|b, v| b.fcmp(FloatCC::Unordered, v[F64], v[F64]));
        type_error(
            |b, v| b.fadd(v[I32], v[I32]),
            "fadd needs float operands, not i32",
        );
        type_error(
            |b, v| b.fmin(v[F32], v[F64]),
            "operands have different types (f32, f64)",
        );
        type_error(|b, v| b.sqrt(v[I64]), "sqrt needs float operands, not i64");
        type_error(
            |b, v| b.fcmp(FloatCC::Equal, v[I8], v[I8]),
            "fcmp needs float operands, not i8",
        );
        type_error(
            |b, v| b.fma(v[F32], v[F32], v[F64]),
            "operands have different types (f32, f64)",
        );
        type_error(
            |b, v| b.fma(v[I32], v[I32], v[I32]),
            "fma needs float operands, not i32",
        );
    }

    #[test]
    fn result_types() {
        let bad_result = |opcode, ty| {
            move |b: BlockAppender<'_>, v: &[Value]| {
                b.build(
                    InstructionData::Binary {
                        opcode,
                        args: [v[I32], v[I32]],
                    },
                    Some(ty),
                );
            }
        };
        type_error(
            bad_result(Opcode::Iadd, Type::I64),
            "result type i64 should be i32",
        );
        let cmp = |b: BlockAppender<'_>, v: &[Value]| {
            b.build(
                InstructionData::IntCompare {
                    opcode: Opcode::Icmp,
                    cond: IntCC::Equal,
                    args: [v[I32], v[I32]],
                },
                Some(Type::I32),
            );
        };
        type_error(cmp, "result type i32 should be i1");
        let geo = |b: BlockAppender<'_>, _: &[Value]| {
            b.build(
                InstructionData::Geometry {
                    opcode: Opcode::GridDim,
                    dim: Dim::Z,
                },
                Some(Type::I64),
            );
        };
        type_error(geo, "result type i64 should be i32");
    }

    #[test]
    fn select() {
        type_ok(|b, v| b.select(v[B], v[F32], v[F32]));
        type_error(
            |b, v| b.select(v[I32], v[F32], v[F32]),
            "select condition has type i32, not i1",
        );
        type_error(
            |b, v| b.select(v[B], v[I8], v[I32]),
            "operands have different types (i8, i32)",
        );
    }

    #[test]
    fn integer_conversions() {
        type_ok(|b, v| b.sextend(Type::I8, v[B]));
        type_ok(|b, v| b.ireduce(Type::I1, v[I64]));
        type_error(
            |b, v| b.uextend(Type::I32, v[I32]),
            "uextend from i32 to i32 does not widen",
        );
        type_error(
            |b, v| b.sextend(Type::F64, v[I32]),
            "sextend from i32 to f64 does not widen",
        );
        type_error(
            |b, v| b.uextend(Type::I64, v[F32]),
            "uextend needs integer operands, not f32",
        );
        type_error(
            |b, v| b.ireduce(Type::I64, v[I32]),
            "ireduce from i32 to i64 does not narrow",
        );
    }

    #[test]
    fn float_conversions() {
        type_ok(|b, v| b.fcvt_to_uint(Type::I8, v[F64]));
        type_ok(|b, v| b.fcvt_from_sint(Type::F32, v[I64]));
        type_error(
            |b, v| b.fcvt_to_sint(Type::I1, v[F32]),
            "fcvt_to_sint converts to an integer type of 8 to 64 bits, not i1",
        );
        type_error(
            |b, v| b.fcvt_to_sint(Type::I32, v[I32]),
            "fcvt_to_sint needs float operands, not i32",
        );
        type_error(
            |b, v| b.fcvt_from_uint(Type::F32, v[B]),
            "fcvt_from_uint needs integer operands of 8 to 64 bits, not i1",
        );
        type_error(
            |b, v| b.fcvt_from_uint(Type::I32, v[I32]),
            "fcvt_from_uint converts to f32 or f64, not i32",
        );
        type_error(
            |b, v| b.fpromote(v[F64]),
            "fpromote converts f32 to f64, not f64 to f64",
        );
        type_error(
            |b, v| b.fdemote(v[F32]),
            "fdemote converts f64 to f32, not f32 to f32",
        );
    }

    #[test]
    fn bitcast() {
        type_ok(|b, v| b.bitcast(Type::F32, v[I32]));
        type_ok(|b, v| b.bitcast(Type::I64, v[I64]));
        type_error(
            |b, v| b.bitcast(Type::F64, v[I32]),
            "bitcast between types of different widths (i32, f64)",
        );
    }

    #[test]
    fn constants() {
        type_ok(|b, _| b.iconst(Type::I1, 1));
        let raw = |ty: Type, imm: u64| {
            move |b: BlockAppender<'_>, _: &[Value]| {
                b.build(
                    InstructionData::UnaryImm {
                        opcode: Opcode::Iconst,
                        imm,
                    },
                    Some(ty),
                );
            }
        };
        type_error(raw(Type::I8, 0x100), "immediate 0x100 does not fit in i8");
        type_error(raw(Type::I1, 2), "immediate 0x2 does not fit in i1");
        type_error(raw(Type::F32, 0), "iconst needs an integer type, not f32");
        let f32c = |b: BlockAppender<'_>, _: &[Value]| {
            b.build(
                InstructionData::FloatConst {
                    opcode: Opcode::F32const,
                    bits: 1 << 40,
                },
                Some(Type::F32),
            );
        };
        type_error(f32c, "immediate 0x10000000000 does not fit in f32");
        let f64c = |b: BlockAppender<'_>, _: &[Value]| {
            b.build(
                InstructionData::FloatConst {
                    opcode: Opcode::F64const,
                    bits: 0,
                },
                Some(Type::F32),
            );
        };
        type_error(f64c, "result type f32 should be f64");
    }

    #[test]
    fn addresses() {
        type_ok(|b, v| b.load(Type::I1, AddrSpace::Shared, v[I32], -4));
        type_error(
            |b, v| b.load(Type::F32, AddrSpace::Global, v[I32], 0),
            "address v3 has type i32, but global addresses are i64",
        );
        type_error(
            |b, v| b.store(AddrSpace::Local, v[F32], v[I64], 0),
            "address v4 has type i64, but local addresses are i32",
        );
        type_error(
            |b, v| b.atomic_rmw(AtomicRmwOp::Xchg, AddrSpace::Shared, v[I64], 0, v[I32]),
            "address v4 has type i64, but shared addresses are i32",
        );
    }

    #[test]
    fn atomics() {
        type_ok(|b, v| b.atomic_cas(AddrSpace::Global, v[I64], 8, v[I64], v[I64]));
        type_error(
            |b, v| b.atomic_rmw(AtomicRmwOp::Add, AddrSpace::Global, v[I64], 0, v[F32]),
            "atomic operations need i32 or i64 operands, not f32",
        );
        type_error(
            |b, v| b.atomic_cas(AddrSpace::Global, v[I64], 0, v[I8], v[I8]),
            "atomic operations need i32 or i64 operands, not i8",
        );
        type_error(
            |b, v| b.atomic_cas(AddrSpace::Global, v[I64], 0, v[I32], v[I64]),
            "operands have different types (i32, i64)",
        );
    }

    #[test]
    fn memory_variables_must_be_declared() {
        type_error(
            |b, _| b.shared_addr(SharedVar::from_u32(0)),
            "smem0 is not declared",
        );
        type_error(
            |b, _| b.local_addr(LocalVar::from_u32(2)),
            "lmem2 is not declared",
        );
    }

    #[test]
    fn branch_conditions() {
        let (mut f, b0, v) = kernel(&[("c", Type::I32)]);
        let b1 = f.dfg.make_block();
        ins(&mut f, b0).brif(v[0], b1, &[], b1, &[]);
        ins(&mut f, b1).return_();
        assert_error(
            &f,
            "?: brif v0, block1, block1: branch condition has type i32, not i1",
        );

        let (mut f, b0, v) = kernel(&[("c", Type::I64)]);
        let b1 = f.dfg.make_block();
        ins(&mut f, b0).br_table(v[0], BlockCall::new(b1, []), &[]);
        ins(&mut f, b1).return_();
        assert_error(
            &f,
            "?: br_table v0, block1, []: br_table index has type i64, not i32",
        );
    }

    #[test]
    fn br_table_needs_a_default() {
        let (mut f, b0, v) = kernel(&[("c", Type::I32)]);
        let i = f.dfg.make_inst(
            InstructionData::BrTable {
                opcode: Opcode::BrTable,
                arg: v[0],
                dests: vec![],
            },
            None,
        );
        f.layout.append_inst(i, b0);
        assert_error(&f, "?: br_table v0: br_table has no default destination");
    }

    #[test]
    fn branch_destinations() {
        let (mut f, b0, _) = kernel(&[]);
        ins(&mut f, b0).jump(Block::from_u32(7), &[]);
        assert_error(&f, "?: jump block7: destination block7 does not exist");

        let (mut f, b0, _) = kernel(&[]);
        let b1 = f.dfg.make_block();
        ins(&mut f, b0).jump(b1, &[]);
        assert_error(
            &f,
            "?: jump block1: destination block1 is not in the layout",
        );

        let (mut f, b0, _) = kernel(&[]);
        ins(&mut f, b0).jump(b0, &[]);
        assert_error(
            &f,
            "?: jump block0: branch to the entry block block0, which can have no predecessors",
        );
    }

    #[test]
    fn branch_arguments() {
        let (mut f, b0, v) = kernel(&[("x", Type::I32), ("y", Type::I64)]);
        let b1 = f.dfg.make_block();
        f.dfg.append_block_param(b1, Type::I32);
        let b2 = f.dfg.make_block();
        ins(&mut f, b0).jump(b1, &[v[0], v[0]]);
        ins(&mut f, b1).jump(b2, &[]);
        ins(&mut f, b2).return_();
        assert_error(
            &f,
            "?: jump block1(v0, v0): block1 takes 1 argument, but 2 are passed",
        );
        let j = f.layout.last_inst(b0).unwrap();
        f.dfg.insts[j].branch_destinations_mut()[0].args = vec![];
        assert_error(
            &f,
            "?: jump block1: block1 takes 1 argument, but 0 are passed",
        );
        f.dfg.append_block_param(b1, Type::I32);
        f.dfg.insts[j].branch_destinations_mut()[0].args = vec![v[0]];
        assert_error(
            &f,
            "?: jump block1(v0): block1 takes 2 arguments, but 1 is passed",
        );
        f.dfg.remove_block_param(b1, 1);
        f.dfg.insts[j].branch_destinations_mut()[0].args = vec![v[1]];
        assert_error(
            &f,
            "?: jump block1(v1): argument 0 of block1 is v1 of type i64, but v2 has type i32",
        );
    }

    #[test]
    fn broken_instructions_do_not_cascade() {
        // An operand that does not exist gives one error, not a type error too; an
        // undefined operand used twice is reported once.
        let f = with_body(&[("x", Type::I32)], |f, b0, v| {
            let i = f.dfg.make_inst(
                InstructionData::Nullary {
                    opcode: Opcode::LaneId,
                },
                Some(Type::I64),
            );
            let u = f.dfg.inst_result(i).unwrap();
            ins(f, b0).iadd(u, u);
            ins(f, b0).iadd(v[0], Value::from_u32(50));
        });
        assert_eq!(
            errors(&f),
            vec![
                "?: v2 = iadd v1, v1: v1 is not defined: its definition is not in the layout",
                "?: v3 = iadd v0, v50: v50 does not exist",
            ]
        );
    }

    #[test]
    fn malformed_layouts_do_not_panic() {
        // A block in the layout that the DFG does not know, and an instruction id that
        // does not exist.
        let (mut f, b0, _) = kernel(&[]);
        ins(&mut f, b0).return_();
        f.layout.append_block(Block::from_u32(5));
        let errs = errors(&f);
        assert_eq!(
            errs,
            vec!["?: block5: block is in the layout but does not exist"]
        );
    }

    #[test]
    fn long_chain_verifies_quickly() {
        let (mut f, b0, _) = kernel(&[]);
        let c = ins(&mut f, b0).iconst(Type::I32, 1);
        let mut prev = b0;
        for _ in 0..100_000 {
            let b = f.dfg.make_block();
            ins(&mut f, prev).jump(b, &[]);
            ins(&mut f, b).iadd(c, c);
            prev = b;
        }
        ins(&mut f, prev).return_();
        assert_eq!(errors(&f), Vec::<String>::new());
    }
}
