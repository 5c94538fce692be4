//! Lowering: a verified IR [`Function`] becomes a [`MirFunction`] in its lowered form
//! (SSA over virtual registers, block parameters, no guards).
//!
//! The choice of machine instructions is made by the ISLE rules in `isle/lower.isle`
//! (compiled by `build.rs`); this module drives them and `lower/isle.rs` holds the glue:
//!
//! 1. Blocks reachable from the entry get one machine block each, in layout order; their
//!    parameters become virtual registers. Unreachable blocks are dropped: they can never
//!    run, and the register allocator wants every block reachable. The entry block reads
//!    each kernel parameter with `LdParam` instead of having parameters.
//! 2. Blocks are lowered in reverse post-order, so every value is lowered before its
//!    uses (definitions dominate uses in a verified function), instruction by
//!    instruction through the rules' `lower` term. An instruction's result may be a
//!    fresh register or, for moves that change nothing (bitcasts, narrowing between
//!    `b32` types), the register of its operand.
//! 3. Instructions without side effects whose results nobody reads are removed: rules
//!    fold constants into immediates and merge producers into their users, leaving the
//!    originals dead.
//!
//! Whether each conditional branch may split the warp comes from the IR's
//! [divergence analysis](warplift_ir::divergence), computed once per function under the
//! target's reconvergence model ([`lower_for`]; PTX assumes independent thread
//! scheduling): a `brif` or `br_table` on a uniform condition lowers to uniform branches
//! (`br.uni`), which the targets emit without reconvergence bookkeeping. When every
//! conditional branch tests a value computed from `thread_id` or another source, each is
//! divergent under either model and the analysis is not run at all
//! ([`DivergentBranches`]): its answer would be the same.
//!
//! The function is assumed verified; anything unexpected is reported as a
//! [`LowerError`], never a panic.

mod isle;

use crate::mir::{BlockKind, MBlock, MInstKind, MirFunction, Reg, RegClass, RegRole};
use cranelift_entity::{EntityRef, SecondaryMap};
use std::collections::HashMap;
use std::sync::Arc;
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree};
use warplift_ir::divergence::{Divergence, DivergentBranches, Reconvergence};
use warplift_ir::{
    Block, BlockOrigin, Function, Inst, LocalVar, Opcode, SharedVar, SourceLoc, Value,
};

/// Why a function could not be lowered. Lowering expects a verified function; these
/// errors report what a verified function never has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// The function has no blocks.
    #[error("kernel %{0} has no blocks")]
    NoEntry(String),
    /// The entry block's parameters do not match the kernel's parameters.
    #[error(
        "the entry block of %{0} has {params}, the signature {2}",
        params = warplift_ir::write::count(.1, "parameter")
    )]
    EntryParams(String, usize, usize),
    /// No rule lowers this instruction (with these operand types).
    #[error("no lowering rule for {opcode} ({inst})")]
    Unsupported {
        /// The instruction.
        inst: Inst,
        /// Its opcode.
        opcode: Opcode,
    },
    /// A value was used before its definition was lowered (it does not dominate the use).
    #[error("{value} is used in {inst} before it is defined")]
    UndefinedValue {
        /// The value.
        value: Value,
        /// The instruction using it.
        inst: Inst,
    },
    /// A branch goes to a block that is not in the layout.
    #[error("{inst} branches to {block}, which is not in the layout")]
    BadTarget {
        /// The branch.
        inst: Inst,
        /// The destination.
        block: Block,
    },
    /// An instruction's lowering produced no register for its result, or one of the
    /// wrong register class.
    #[error("lowering {inst} gave a wrong result")]
    BadResult {
        /// The instruction.
        inst: Inst,
    },
    /// An instruction's data did not match its opcode.
    #[error("malformed instruction {inst}")]
    Malformed {
        /// The instruction.
        inst: Inst,
    },
}

/// Lowers a verified function to machine IR with virtual registers, for a machine that
/// reconverges at immediate post-dominators (the SIMT target; see [`lower_for`]).
pub fn lower(func: &Function) -> Result<MirFunction, LowerError> {
    lower_for(func, Reconvergence::Ipdom)
}

/// Lowers a verified function for a machine whose threads reconverge as `model` says:
/// the divergence analysis under that model decides which branches are uniform.
pub fn lower_for(func: &Function, model: Reconvergence) -> Result<MirFunction, LowerError> {
    let cfg = ControlFlowGraph::compute(func);
    let domtree = DominatorTree::compute(&cfg);
    Lower::new(func, model, &cfg, &domtree)?.run(&domtree)
}

/// The state of one lowering: the function being built and where the rules emit.
pub(crate) struct Lower<'f> {
    func: &'f Function,
    mir: MirFunction,
    /// The register of every lowered value.
    value_regs: Vec<Option<Reg>>,
    /// How many times each value is read, branch arguments included.
    use_counts: Vec<u32>,
    /// The machine block of every reachable IR block.
    block_map: SecondaryMap<Block, Option<MBlock>>,
    shared_offsets: SecondaryMap<SharedVar, u32>,
    local_offsets: SecondaryMap<LocalVar, u32>,
    /// Where instructions are appended.
    block: MBlock,
    /// The IR block and instruction being lowered.
    ir_block: Block,
    inst: Inst,
    srcloc: SourceLoc,
    /// Blocks made while lowering the current IR block (by `br_table`).
    extra_blocks: Vec<MBlock>,
    /// The first error met by the glue, which cannot return one through the rules.
    error: Option<LowerError>,
    /// Which IR branches may split the warp.
    divergence: DivergentBranches,
}

impl<'f> Lower<'f> {
    fn new(
        func: &'f Function,
        model: Reconvergence,
        cfg: &ControlFlowGraph<Block>,
        domtree: &DominatorTree<Block>,
    ) -> Result<Self, LowerError> {
        let entry = func
            .entry_block()
            .ok_or_else(|| LowerError::NoEntry(func.name.clone()))?;
        let mut mir = MirFunction::new(func.name.clone(), func.signature.params.clone());
        mir.shared_size = func.shared_size();
        mir.local_size = func.local_size();
        let mut use_counts = vec![0u32; func.dfg.num_values()];
        for inst in func.layout.insts() {
            // The rules index the DFG by these values and blocks: make sure they exist.
            if !func.dfg.insts.is_valid(inst) {
                return Err(LowerError::Malformed { inst });
            }
            let data = &func.dfg.insts[inst];
            for v in data.all_values() {
                match use_counts.get_mut(v.index()) {
                    Some(c) => *c += 1,
                    None => return Err(LowerError::Malformed { inst }),
                }
            }
            for call in data.branch_destinations() {
                if !func.dfg.block_is_valid(call.block) {
                    return Err(LowerError::BadTarget {
                        inst,
                        block: call.block,
                    });
                }
            }
        }
        let first = mir.new_block(Some(entry));
        Ok(Lower {
            func,
            mir,
            value_regs: vec![None; func.dfg.num_values()],
            use_counts,
            block_map: SecondaryMap::new(),
            shared_offsets: func.shared_offsets(),
            local_offsets: func.local_offsets(),
            block: first,
            ir_block: entry,
            inst: Inst::new(0),
            srcloc: SourceLoc::default(),
            extra_blocks: Vec::new(),
            error: None,
            // Only the branches' divergence is asked: proven from their conditions when it
            // can be, without the analysis's post-dominators, loops and joins.
            divergence: DivergentBranches::find_with(func, || {
                Arc::new(Divergence::compute_with(func, model, cfg, domtree))
            }),
        })
    }

    fn run(mut self, domtree: &DominatorTree<Block>) -> Result<MirFunction, LowerError> {
        let func = self.func;
        let entry = self.ir_block;

        // Machine blocks for the reachable blocks, parameters as registers. Each block's
        // lists are sized from its IR block (most IR instructions lower to one machine
        // instruction), so that they are not grown push by push.
        let first = self.block;
        self.block_map.resize(func.dfg.num_blocks());
        for &b in func.layout.blocks() {
            if !domtree.is_reachable(b) {
                continue;
            }
            let mb = if b == entry {
                first
            } else {
                self.mir.new_block(Some(b))
            };
            self.block_map[b] = Some(mb);
            self.mir.blocks[mb]
                .insts
                .reserve_exact(func.layout.block_insts(b).len());
            // A block an IR pass made for control flow only may go after allocation
            // when it is left a lone jump (`machine_passes::cleanup`).
            if func.dfg.block_origin(b) == BlockOrigin::Pass {
                self.mir.blocks[mb].kind = BlockKind::PassMade;
            }
            if b != entry {
                self.mir.blocks[mb]
                    .params
                    .reserve_exact(func.dfg.block_params(b).len());
                for &p in func.dfg.block_params(b) {
                    let r = self.mir.new_vreg(RegClass::of_type(func.dfg.value_type(p)));
                    self.value_regs[p.index()] = Some(r);
                    self.mir.blocks[mb].params.push(r);
                }
            }
        }

        // The kernel parameters, read at the top of the entry block.
        let entry_params = func.dfg.block_params(entry);
        if entry_params.len() != func.signature.params.len() {
            return Err(LowerError::EntryParams(
                func.name.clone(),
                entry_params.len(),
                func.signature.params.len(),
            ));
        }
        self.srcloc = func.block_srclocs[entry];
        for (index, &p) in entry_params.iter().enumerate() {
            let ty = crate::mir::MType::from_ir(func.dfg.value_type(p));
            let dst = self.mir.new_vreg(ty.class());
            self.value_regs[p.index()] = Some(dst);
            self.emit(MInstKind::LdParam {
                ty,
                dst,
                index: index as u32,
            });
        }

        // Lower in reverse post-order; collect the br_table blocks of each IR block.
        let mut extra: HashMap<Block, Vec<MBlock>> = HashMap::new();
        for &b in domtree.rpo() {
            self.lower_block(b)?;
            if !self.extra_blocks.is_empty() {
                extra.insert(b, core::mem::take(&mut self.extra_blocks));
            }
        }

        // Layout order, each IR block followed by the blocks its br_table made.
        for &b in func.layout.blocks() {
            if let Some(mb) = self.block_map[b] {
                self.mir.order.push(mb);
                // Most kernels have no br_table: no lookup per block then.
                if extra.is_empty() {
                    continue;
                }
                if let Some(more) = extra.remove(&b) {
                    self.mir.order.extend(more);
                }
            }
        }

        remove_dead_code(&mut self.mir);
        Ok(self.mir)
    }

    fn lower_block(&mut self, b: Block) -> Result<(), LowerError> {
        let func = self.func;
        self.ir_block = b;
        for &inst in func.layout.block_insts(b) {
            let Some(mb) = self.block_map[b] else {
                return Ok(());
            };
            self.block = mb;
            self.inst = inst;
            self.srcloc = func.srclocs[inst];
            let out = isle::generated::constructor_lower(self, inst);
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            let opcode = func.dfg.insts[inst].opcode();
            let out = out.ok_or(LowerError::Unsupported { inst, opcode })?;
            match (func.dfg.inst_result(inst), out) {
                (Some(v), Some(r)) if r.class() == RegClass::of_type(func.dfg.value_type(v)) => {
                    self.value_regs[v.index()] = Some(r);
                }
                (None, None) => {}
                _ => return Err(LowerError::BadResult { inst }),
            }
        }
        Ok(())
    }

    /// The register of `v`; records an error (and returns a placeholder) when `v` has
    /// not been lowered yet.
    fn value_reg(&mut self, v: Value) -> Reg {
        if let Some(Some(r)) = self.value_regs.get(v.index()) {
            return *r;
        }
        self.error.get_or_insert(LowerError::UndefinedValue {
            value: v,
            inst: self.inst,
        });
        Reg::virt(0, RegClass::B32)
    }

    /// The machine block of IR block `b`; records an error when it has none.
    fn mblock_of(&mut self, b: Block) -> MBlock {
        if let Some(Some(mb)) = self.block_map.get(b) {
            return *mb;
        }
        self.error.get_or_insert(LowerError::BadTarget {
            inst: self.inst,
            block: b,
        });
        self.block
    }

    /// Records that the current instruction's data did not match what its rule expected.
    fn fail_unexpected(&mut self) {
        self.error
            .get_or_insert(LowerError::Malformed { inst: self.inst });
    }
}

/// Does `kind` only compute its destination (no memory access, no control)?
fn is_pure(kind: &MInstKind) -> bool {
    use MInstKind::*;
    matches!(
        kind,
        Bin { .. }
            | Un { .. }
            | Mad { .. }
            | Fma { .. }
            | Tern { .. }
            | Setp { .. }
            | Selp { .. }
            | Cvt { .. }
            | Mov { .. }
            | ReadSpecial { .. }
            | LdParam { .. }
    )
}

/// Removes pure, unguarded instructions whose destination is never read, and then those
/// that only they read, with a worklist (linear in the function's size).
fn remove_dead_code(mir: &mut MirFunction) {
    let n = mir.vreg_classes.len();
    let mut uses = vec![0u32; n];
    // Where each register is defined by a removable instruction.
    let mut def_at: Vec<Option<(MBlock, usize)>> = vec![None; n];
    let count = |r: &Reg, uses: &mut Vec<u32>| {
        if r.is_virtual() {
            if let Some(u) = uses.get_mut(r.index() as usize) {
                *u += 1;
            }
        }
    };
    for &b in &mir.order {
        for (i, inst) in mir.blocks[b].insts.iter_mut().enumerate() {
            if inst.guard.is_none() && is_pure(&inst.kind) {
                if let Some(d) = inst.kind.def() {
                    if let Some(slot) = def_at.get_mut(d.index() as usize) {
                        *slot = Some((b, i));
                    }
                }
            }
            inst.visit_regs(|r, role| {
                if role == RegRole::Use {
                    count(r, &mut uses);
                }
            });
            inst.kind.for_each_target(|t| {
                for r in &t.args {
                    count(r, &mut uses);
                }
            });
        }
    }
    let mut dead: Vec<(MBlock, usize)> = Vec::new();
    let mut work: Vec<usize> = (0..n).filter(|&r| uses[r] == 0).collect();
    while let Some(r) = work.pop() {
        let Some((b, i)) = def_at[r].take() else {
            continue;
        };
        dead.push((b, i));
        mir.blocks[b].insts[i].visit_regs(|u, role| {
            if role == RegRole::Use && u.is_virtual() {
                let k = u.index() as usize;
                if let Some(c) = uses.get_mut(k) {
                    *c -= 1;
                    if *c == 0 {
                        work.push(k);
                    }
                }
            }
        });
    }
    // Grouped by block, in increasing position: each block is then filtered once, with a
    // cursor into its sorted dead positions instead of a set per block.
    dead.sort_unstable();
    dead.dedup();
    for group in dead.chunk_by(|x, y| x.0 == y.0) {
        let b = group[0].0;
        let mut next = group.iter().map(|&(_, i)| i).peekable();
        let mut i = 0;
        mir.blocks[b].insts.retain(|_| {
            let keep = next.next_if_eq(&i).is_none();
            i += 1;
            keep
        });
    }
}
