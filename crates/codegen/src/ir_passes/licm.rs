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
    // Each loop's blocks in reverse post-order, found in one walk: a block belongs to its
    // innermost loop and every loop around it. (Scanning the whole order per loop made the
    // pass quadratic on kernels of many loops.)
    let mut blocks_of: SecondaryMap<Loop, Vec<Block>> = SecondaryMap::new();
    for &b in domtree.rpo() {
        let mut l = innermost[b];
        while let Some(inner) = l {
            blocks_of[inner].push(b);
            l = forest.parent(inner);
        }
    }
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
        for &b in &blocks_of[l] {
            if let Some(&p) = made.get(&b) {
                order.push(p);
            }
            order.push(b);
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

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::parser::parse_function;
    use warplift_ir::verifier::verify_function;

    /// Runs the pass on `text`; the result must verify.
    fn run(text: &str) -> (Function, Stats) {
        let mut func = parse_function(text).expect("the test kernel parses");
        let stats = licm(&mut func, &mut AnalysisCache::new());
        if let Err(e) = verify_function(&func) {
            panic!("{e:?}\n{func}");
        }
        (func, stats)
    }

    /// The opcodes of `block` in order.
    fn opcodes(func: &Function, block: Block) -> Vec<Opcode> {
        func.layout
            .block_insts(block)
            .iter()
            .map(|&i| func.dfg.insts[i].opcode())
            .collect()
    }

    fn block(n: u32) -> Block {
        Block::from_u32(n)
    }

    /// Bitonic sort's shape: the k loop around the j loop, the region condition
    /// `(tid & k) == 0` computed under a branch of the j loop.
    const NESTED: &str = "
kernel %nested(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = iconst.i32 1
    v5 = iconst.i32 2
    jump block1(v5)
block1(v6: i32):
    v7 = icmp ule v6, v1
    brif v7, block2, block7
block2:
    v8 = ushr v6, v4
    jump block3(v8)
block3(v9: i32):
    v10 = icmp ugt v9, v3
    brif v10, block4, block6
block4:
    v11 = bxor v2, v9
    v12 = icmp ugt v11, v2
    brif v12, block5, block8
block5:
    v13 = band v2, v6
    v14 = icmp eq v13, v3
    v15 = uextend.i64 v2
    v16 = iadd v0, v15
    v17 = uextend.i32 v14
    store global v17, v16
    jump block8
block8:
    v18 = ushr v9, v4
    jump block3(v18)
block6:
    v19 = ishl v6, v4
    jump block1(v19)
block7:
    return
}";

    #[test]
    fn the_region_condition_leaves_the_j_loop_and_the_address_both_loops() {
        let (func, stats) = run(NESTED);
        // Out of the j loop into block2 (its preheader): the condition, its extension,
        // and the address computation, which then climbs out of the k loop too, into
        // block0 (the k loop's preheader, as it ends in a jump to the header).
        assert_eq!(
            opcodes(&func, block(2)),
            [
                Opcode::Ushr,
                Opcode::Band,
                Opcode::Icmp,
                Opcode::Uextend,
                Opcode::Jump
            ]
        );
        assert_eq!(
            opcodes(&func, block(0)),
            [
                Opcode::ThreadId,
                Opcode::Iconst,
                Opcode::Iconst,
                Opcode::Iconst,
                Opcode::Uextend,
                Opcode::Iadd,
                Opcode::Jump
            ]
        );
        // The store stays; the condition's extension is invariant in the j loop only.
        assert_eq!(opcodes(&func, block(5)), [Opcode::Store, Opcode::Jump]);
        assert_eq!(
            stats,
            Stats {
                hoisted: 7,
                loops: 2,
                preheaders: 0
            }
        );
    }

    #[test]
    fn a_header_entered_from_two_blocks_gets_a_made_preheader() {
        let (func, stats) = run("
kernel %two(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = iconst.i32 1
    v5 = icmp eq v2, v3
    brif v5, block1(v3), block2
block2:
    jump block1(v4)
block1(v6: i32):
    v7 = imul v1, v1
    v8 = iadd v6, v7
    v9 = icmp ult v8, v1
    brif v9, block1(v8), block3
block3:
    return
}");
        assert_eq!(
            stats,
            Stats {
                hoisted: 1,
                loops: 1,
                preheaders: 1
            }
        );
        // The made preheader stands just before the header in the layout.
        let at = func
            .layout
            .block_position(block(1))
            .expect("the header is placed");
        let pre = func.layout.blocks()[at - 1];
        assert_ne!(pre, block(2));
        assert_eq!(opcodes(&func, pre), [Opcode::Imul, Opcode::Jump]);
        assert_eq!(func.dfg.block_params(pre).len(), 1);
        // Both entries now go through the preheader; the back edge still goes to the
        // header.
        for b in [block(0), block(2)] {
            assert!(func.successors(b).all(|s| s != block(1)), "{func}");
        }
        assert!(func.successors(block(1)).any(|s| s == block(1)));
    }

    #[test]
    fn loads_stores_and_divisions_by_a_varying_value_stay() {
        let (func, stats) = run("
kernel %stay(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = iconst.i32 1
    v5 = iconst.i32 7
    v20 = iconst.i32 -1
    jump block1(v3)
block1(v6: i32):
    store global v6, v0
    v7 = load.i32 global v0
    v8 = udiv v1, v2
    v9 = sdiv v1, v20
    v10 = urem v1, v3
    v11 = iadd v6, v7
    v12 = iadd v11, v8
    v13 = iadd v12, v9
    v14 = iadd v13, v10
    v15 = icmp ult v14, v1
    brif v15, block1(v14), block2
block2:
    return
}");
        // The load reads what the store of the same iteration wrote; the divisions
        // divide by the thread index (0 on lane 0), by -1 and by 0.
        assert_eq!(stats, Stats::default());
        assert_eq!(
            opcodes(&func, block(1)),
            [
                Opcode::Store,
                Opcode::Load,
                Opcode::Udiv,
                Opcode::Sdiv,
                Opcode::Urem,
                Opcode::Iadd,
                Opcode::Iadd,
                Opcode::Iadd,
                Opcode::Iadd,
                Opcode::Icmp,
                Opcode::Brif
            ]
        );
        assert_eq!(
            Licm.preserved(&stats.report()),
            Preserved::ALL,
            "nothing moved"
        );
    }

    #[test]
    fn a_division_by_a_safe_constant_moves() {
        let (func, stats) = run("
kernel %div(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v3 = iconst.i32 0
    v5 = iconst.i32 7
    jump block1(v3)
block1(v6: i32):
    v8 = sdiv v1, v5
    v9 = iadd v6, v8
    v10 = icmp ult v9, v1
    brif v10, block1(v9), block2
block2:
    return
}");
        assert_eq!(stats.hoisted, 1);
        assert_eq!(
            opcodes(&func, block(0)),
            [Opcode::Iconst, Opcode::Iconst, Opcode::Sdiv, Opcode::Jump]
        );
        assert_eq!(Licm.preserved(&stats.report()), Preserved::CFG);
    }

    #[test]
    fn nothing_leaves_an_irreducible_cycle() {
        // {1, 2} is entered at 1 and at 2: no block runs before every entry into it.
        let (func, stats) = run("
kernel %irr(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = icmp eq v2, v3
    brif v4, block1(v3), block2(v3)
block1(v5: i32):
    v6 = imul v1, v1
    v7 = iadd v5, v6
    jump block2(v7)
block2(v8: i32):
    v9 = imul v1, v2
    v10 = iadd v8, v9
    v11 = icmp ult v10, v1
    brif v11, block1(v10), block3
block3:
    return
}");
        assert_eq!(stats, Stats::default());
        assert_eq!(
            opcodes(&func, block(1)),
            [Opcode::Imul, Opcode::Iadd, Opcode::Jump]
        );
        assert_eq!(
            opcodes(&func, block(2)),
            [Opcode::Imul, Opcode::Iadd, Opcode::Icmp, Opcode::Brif]
        );
    }
}
