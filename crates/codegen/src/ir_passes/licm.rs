//! Loop-invariant code motion: instructions that compute the same value in every
//! iteration of a loop move to the loop's preheader, so they run once per entry into the
//! loop instead of once per iteration.
//!
//! # Algorithm
//!
//! The classic one (Aho, Lam, Sethi and Ullman, "Compilers: Principles, Techniques, and
//! Tools", 2nd ed., §9.5.2 "Loop-Invariant Computations" and §9.5.3 "Code Motion"), on SSA
//! form, where "invariant" needs no reaching-definitions analysis: a value is invariant
//! in a loop when its definition is outside the loop.
//!
//! 1. **Loops.** The loop nesting forest of [`warplift_ir::cfg::LoopForest`]. Only
//!    natural loops are touched: an irreducible loop (several entries) has no block that
//!    every lane passes before entering it, so nothing in it moves (loops nested in it
//!    may still be natural, and hoist into a preheader inside it). A loop headed by the
//!    kernel's entry block has no edge from outside to give a preheader, and is left too.
//! 2. **Innermost first.** Loops are visited children before parents, so that a value
//!    hoisted out of an inner loop lands in that loop's preheader, which is a block of
//!    the loop around it, and can climb further when that loop is visited.
//! 3. **Preheader.** The header's only predecessor outside the loop, when that block
//!    jumps to the header alone; otherwise a made block (`licm` counts these): it takes
//!    the header's parameters, every edge from outside the loop to the header goes to it
//!    instead with the same arguments, and it jumps to the header passing them on.
//! 4. **Hoisting.** The loop's blocks (and the preheaders made for loops nested in it,
//!    each just before its header) are visited in reverse post-order, so a definition is
//!    seen before its uses; an instruction moves to the end of the preheader (before its
//!    jump) when every operand is defined outside the loop, which includes what moved
//!    before it, and it is *movable*:
//!    - it has no effect but its result: no load (a store of the loop, or of another
//!      thread across a barrier, may change what it reads), store, atomic, barrier or
//!      terminator;
//!    - it cannot fault on any target: integer division and remainder only by a
//!      constant divisor that is not 0 (nor all ones, for the signed ones, where
//!      `MIN / -1` overflows);
//!    - it is not a constant (`iconst`, `f32const`, `f64const`): instruction selection
//!      folds constants into the instructions that use them wherever they are defined,
//!      so moving one saves nothing and would hold a register across the loop.
//!
//! ```text
//!   block4:                          block4:                   ; the j loop's preheader
//!       jump block5(v24)                 v29 = band v2, v22
//!   block5(v25):       ; j loop          v30 = icmp eq v29, v7
//!       ...                              jump block5(v24)
//!   block7:                          block5(v25):
//!       v29 = band v2, v22               ...
//!       v30 = icmp eq v29, v7        block7:
//!       brif v30, block8, block10        brif v30, block8, block10
//! ```
//!
//! That is bitonic sort's region condition `(tid & k) == 0`, which LLVM's LICM moves out
//! of the j loop the same way (`benches/llvm/darm_bit.O3.ll`, block `jbody.lr.ph`).
//!
//! # Why it is sound on SIMT
//!
//! The preheader dominates every block of the loop, so every lane that runs the loop (in
//! any iteration, on any path) ran the preheader first, and every use of a hoisted value
//! is dominated by its new definition. A movable instruction computes a function of its
//! operands alone (thread and block indices are functions of the lane), so it gives each
//! lane the value it would have given inside the loop; a lane that runs the preheader
//! but not the instruction's block computes a value it never uses, which is harmless as
//! the instruction cannot fault or write anything. Which lanes are active where does not
//! change, since no branch moves.
//!
//! # Cost
//!
//! A hoisted instruction runs once per entry into the loop instead of once per
//! iteration that reaches its block. The worst case is one extra execution per entry,
//! when no iteration of that entry reaches the block (a loop that exits at once, or an
//! instruction under a branch no lane takes); every entry where the block runs at least
//! once loses nothing, and every entry where it runs more gains. The price is register
//! pressure: a hoisted value is live across the whole loop. Nothing bounds that here:
//! the values moved are few (operands of the loop's own computations, which were live
//! in the loop already in most kernels), and the study (`studies/darm-melding.toml`,
//! pipeline `licm`) checks that no kernel gets slower.

use crate::analysis::{AnalysisCache, Preserved};
use crate::passes::{IrPass, PassError, PassReport};
use crate::settings::Settings;
use cranelift_entity::SecondaryMap;
use std::collections::{HashMap, HashSet};
use warplift_ir::cfg::loops::Loop;
use warplift_ir::cfg::ControlFlowGraph;
use warplift_ir::{Block, BlockCall, Function, Inst, InstructionData, Opcode, Value, ValueDef};

/// The registered pass.
pub struct Licm;

impl IrPass for Licm {
    fn name(&self) -> &'static str {
        "licm"
    }

    fn description(&self) -> &'static str {
        "loop-invariant code motion: pure, non-faulting invariant instructions to the preheader"
    }

    fn run(
        &self,
        func: &mut Function,
        analyses: &mut AnalysisCache,
        _settings: &Settings,
    ) -> Result<PassReport, PassError> {
        Ok(licm(func, analyses).report())
    }

    /// A run that moved nothing and made no block left the kernel as it was; one that
    /// moved instructions but made no block kept every block and edge.
    fn preserved(&self, report: &PassReport) -> Preserved {
        match (
            report.get("instructions hoisted"),
            report.get("preheaders made"),
        ) {
            (Some(0), Some(0)) => Preserved::ALL,
            (Some(_), Some(0)) => Preserved::CFG,
            _ => Preserved::NOTHING,
        }
    }
}

/// What one run did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions moved (one moved out of two nested loops counts twice).
    pub hoisted: u64,
    /// Loops out of which at least one instruction moved.
    pub loops: u64,
    /// Preheaders the pass made.
    pub preheaders: u64,
}

impl Stats {
    /// The counts as a [`PassReport`].
    pub fn report(&self) -> PassReport {
        PassReport {
            counts: vec![
                ("instructions hoisted", self.hoisted),
                ("loops touched", self.loops),
                ("preheaders made", self.preheaders),
            ],
        }
    }
}

/// Moves the loop-invariant, movable instructions of `func` to their loops' preheaders
/// (see the module documentation). `analyses` must describe `func` as it is.
pub fn licm(func: &mut Function, analyses: &mut AnalysisCache) -> Stats {
    let mut stats = Stats::default();
    let forest = analyses.loops(func);
    if forest.is_empty() {
        return stats;
    }
    let cfg = analyses.cfg(func);
    let domtree = analyses.domtree(func);
    let Some(entry) = func.layout.entry_block() else {
        return stats;
    };
    // The innermost loop of every block, made blocks included (a made preheader belongs
    // to the loop around the loop it serves).
    let mut innermost: SecondaryMap<Block, Option<Loop>> = SecondaryMap::new();
    for &b in cfg.nodes() {
        innermost[b] = forest.innermost_loop(b);
    }
    // The preheader made for a header, visited just before it.
    let mut made: HashMap<Block, Block> = HashMap::new();
    let rpo: Vec<Block> = domtree.rpo().to_vec();
    // Loops are numbered parents first, so the reverse visits children first.
    let loops: Vec<Loop> = forest.loops().collect();
    for &l in loops.iter().rev() {
        let header = forest.header(l);
        if forest.is_irreducible(l) || header == entry {
            continue;
        }
        let inside = |innermost: &SecondaryMap<Block, Option<Loop>>, b: Block| {
            innermost[b].is_some_and(|i| forest.loop_contains(l, i))
        };
        // Candidates first: a preheader is made only for a loop that has something to
        // move, so a run that moves nothing changes nothing.
        let mut order = Vec::new();
        for &b in &rpo {
            if inside(&innermost, b) {
                if let Some(&p) = made.get(&b) {
                    order.push(p);
                }
                order.push(b);
            }
        }
        let mut moving: Vec<Inst> = Vec::new();
        let mut moved: HashSet<Value> = HashSet::new();
        for &b in &order {
            for &inst in func.layout.block_insts(b) {
                let data = &func.dfg.insts[inst];
                if !movable(func, data) {
                    continue;
                }
                let invariant = data.args().iter().all(|&v| {
                    moved.contains(&v)
                        || match func.dfg.value_def(v) {
                            ValueDef::Result(d) => func
                                .layout
                                .inst_block(d)
                                .is_some_and(|db| !inside(&innermost, db)),
                            ValueDef::Param(pb, _) => !inside(&innermost, pb),
                        }
                });
                if invariant {
                    moving.push(inst);
                    if let Some(r) = func.dfg.inst_result(inst) {
                        moved.insert(r);
                    }
                }
            }
        }
        if moving.is_empty() {
            continue;
        }
        let pre = match existing_preheader(func, &cfg, header, |b| inside(&innermost, b)) {
            Some(p) => p,
            None => {
                let p = make_preheader(func, &cfg, header, |b| inside(&innermost, b));
                innermost[p] = forest.parent(l);
                made.insert(header, p);
                stats.preheaders += 1;
                p
            }
        };
        for inst in moving {
            func.layout.remove_inst(inst);
            let at = func.layout.block_insts(pre).len() - 1;
            func.layout.insert_inst(inst, pre, at);
            stats.hoisted += 1;
        }
        stats.loops += 1;
    }
    stats
}

/// Can `data` run where its operands are available rather than where it stands: it has
/// no effect but its result and cannot fault (see the module documentation).
fn movable(func: &Function, data: &InstructionData) -> bool {
    use Opcode::*;
    let op = data.opcode();
    if op.has_side_effects() || matches!(op, Load | Iconst | F32const | F64const) {
        return false;
    }
    match op {
        Udiv | Urem | Sdiv | Srem => {
            let divisor = data.args()[1];
            let ty = func.dfg.value_type(divisor);
            let all_ones = if ty.bits() >= 64 {
                u64::MAX
            } else {
                (1u64 << ty.bits()) - 1
            };
            match constant(func, divisor) {
                Some(0) => false,
                Some(c) if matches!(op, Sdiv | Srem) => c != all_ones,
                Some(_) => true,
                None => false,
            }
        }
        _ => true,
    }
}

/// The bits of `v` when an `iconst` defines it.
fn constant(func: &Function, v: Value) -> Option<u64> {
    match func.dfg.value_def(v) {
        ValueDef::Result(i) => match func.dfg.insts[i] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } => Some(imm),
            _ => None,
        },
        ValueDef::Param(..) => None,
    }
}

/// The block that already serves `l` as a preheader: the header's only predecessor
/// outside the loop, ending in a plain jump to the header.
fn existing_preheader(
    func: &Function,
    cfg: &ControlFlowGraph<Block>,
    header: Block,
    inside: impl Fn(Block) -> bool,
) -> Option<Block> {
    let mut outside = cfg.preds(header).iter().copied().filter(|&p| !inside(p));
    let p = outside.next()?;
    if outside.next().is_some() {
        return None;
    }
    let term = func.terminator(p)?;
    (func.dfg.insts[term].opcode() == Opcode::Jump).then_some(p)
}

/// Makes a preheader for the loop headed by `header`: every edge from outside the loop
/// to the header goes to it instead, with the same arguments, and it passes them on.
fn make_preheader(
    func: &mut Function,
    cfg: &ControlFlowGraph<Block>,
    header: Block,
    inside: impl Fn(Block) -> bool,
) -> Block {
    let pre = func.dfg.make_pass_block();
    let params: Vec<Value> = func
        .dfg
        .block_params(header)
        .to_vec()
        .into_iter()
        .map(|v| {
            let ty = func.dfg.value_type(v);
            func.dfg.append_block_param(pre, ty)
        })
        .collect();
    // The graph was computed before this run made any block, but the edges into a header
    // are only ever redirected by the header's own loop, which is visited once.
    let mut preds = cfg.preds(header).to_vec();
    preds.sort();
    preds.dedup();
    for p in preds.into_iter().filter(|&p| !inside(p)) {
        if let Some(term) = func.terminator(p) {
            for dest in func.dfg.insts[term].branch_destinations_mut() {
                if dest.block == header {
                    dest.block = pre;
                }
            }
        }
    }
    let before = func.layout.block_position(header).unwrap_or(0);
    match before.checked_sub(1).map(|i| func.layout.blocks()[i]) {
        Some(prev) => func.layout.insert_block_after(pre, prev),
        None => func.layout.append_block(pre),
    }
    let jump = func.dfg.make_inst(
        InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: BlockCall::new(header, params),
        },
        None,
    );
    func.layout.append_inst(jump, pre);
    pre
}
