//! Linearization on the SSA IR, before register allocation: the paper's own PTX-level
//! implementation (Anantpur and Govindarajan, CC 2014, Section 5), kept beside the
//! machine-level pass [`crate::linearize`] so that the register cost of both can be
//! measured.
//!
//! # What it does
//!
//! The same Algorithm 1 as [`crate::linearize`], on the same regions (the
//! `linearize_regions` setting: `divergent`, `all` or `kernel`), found by the same
//! analyses (`warplift_ir::cfg::regions`, with `warplift_ir::divergence` choosing the
//! divergent ones), in the same order ([`crate::linearize`]'s reverse post-order and
//! moved-up back edges are shared code):
//!
//! - the region's entry assigns the guard variable `g` (an `i32`: the id of the next
//!   block a lane runs, ids being positions in the order, `EXIT` one past the last) and
//!   jumps to the first guard;
//! - one guard block per region block, `p = icmp eq g, id; brif p, Bk, next`;
//! - each region block's branch becomes an assignment of `g` (`iconst`, or `select` on the
//!   branch condition) and a jump to the next guard;
//! - a block with retreating edges is followed by a back-edge guard, `icmp ule g, id`,
//!   going back to the guard of the (moved-up) destination;
//! - in kernel mode, or for a region holding returns, a new return block is the exit.
//!
//! Every region block is its own step of the sequence: structured sub-regions
//! (Algorithm 3) are not kept whole, unlike in the machine pass. Regions ending a block
//! with `br_table`, or entered from one, are left as they are and counted, and so are
//! regions holding a barrier and a divergent branch, as the machine pass does.
//!
//! # Why it costs registers
//!
//! At the SSA level restructuring breaks SSA form: a value defined in a region block no
//! longer dominates its uses in later blocks (the guard chain passes around it), and a
//! block parameter's branch became an assignment of `g`. The `ssa` submodule rebuilds SSA
//! form over the new graph for those values, the parameters of region blocks and of the
//! exit, and `g`, with block parameters at the guard blocks where their definitions merge
//! and a zero defined in the region's entry on the paths of the new graph where a value is
//! not defined. No lane ever reads such a zero, but the register allocator must assume one
//! may: every value live across a guard is live from the region's entry to its last use.
//! That is the growth the paper reports (Table 1, `mum`: 22 → 32 registers) and the reason
//! warplift linearizes after allocation by default.

use crate::analysis::{AnalysisCache, Preserved};
use crate::pass_util::loop_order::loop_order_by;
use crate::pass_util::region_order::{back_edge_targets, region_rpo_by};
pub use crate::pass_util::ssa_regions::{find_regions, find_regions_in, SsaRegion};
use crate::pass_util::ssa_repair::{Repair, Slot, Src, Var, VarKind};
use crate::passes::{IrPass, PassError, PassReport};
use crate::settings::RegionMode;
use crate::settings::Settings;
use rustc_hash::{FxHashMap, FxHashSet};
use warplift_ir::cfg::DominatorTree;
use warplift_ir::{
    Block, BlockCall, Function, Inst, InstructionData, IntCC, Opcode, SourceLoc, Type, Value,
    ValueDef,
};

/// The `linearize_ssa` IR pass.
pub struct LinearizeSsa;

impl IrPass for LinearizeSsa {
    fn name(&self) -> &'static str {
        "linearize_ssa"
    }

    fn description(&self) -> &'static str {
        "linearize unstructured regions on the SSA IR, before register allocation, as the paper's PTX-level implementation does (costs registers)"
    }

    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        &[
            &[("linearize_regions", "divergent")],
            &[("linearize_regions", "all")],
            &[("linearize_regions", "kernel")],
        ]
    }

    fn run(
        &self,
        func: &mut Function,
        analyses: &mut AnalysisCache,
        settings: &Settings,
    ) -> Result<PassReport, PassError> {
        let stats =
            linearize_in(func, settings.linearize_regions, analyses).map_err(|message| {
                PassError {
                    pass: "linearize_ssa",
                    kernel: func.name.clone(),
                    message,
                }
            })?;
        Ok(stats.report())
    }

    /// A run that linearized no region left the kernel as it was.
    fn preserved(&self, report: &PassReport) -> Preserved {
        if report.get("regions") == Some(0) {
            Preserved::ALL
        } else {
            Preserved::NOTHING
        }
    }
}

/// Linearizes the regions of `func` that `mode` selects; returns what it did.
///
/// The kernel-wide work is done once, however many regions there are: the dominator
/// tree and the values used outside their block are computed before any region is
/// restructured, every region's restructuring is then recorded in one [`Repair`], the new
/// block order is set once, and SSA form is rebuilt once, over the whole restructured
/// kernel. This is exact because the regions are disjoint single-entry, single-exit
/// subgraphs, none holding another's entry: restructuring one changes neither which of
/// another region's blocks dominates which (every path keeps its blocks outside the
/// region, in order) nor where another region's values are used, and each repair variable
/// belongs to one region, with its zero in that region's entry.
pub fn linearize(func: &mut Function, mode: RegionMode) -> Result<Stats, String> {
    linearize_in(func, mode, &mut AnalysisCache::new())
}

/// [`linearize`], with the kernel's analyses taken from `analyses`: the divergence
/// analysis and the dominator tree that select the regions also serve their
/// linearization, computed once. They are asked for before the kernel changes; what the
/// SSA repair needs afterwards it computes on the new graph.
pub fn linearize_in(
    func: &mut Function,
    mode: RegionMode,
    analyses: &mut AnalysisCache,
) -> Result<Stats, String> {
    let regions = find_regions_in(func, mode, analyses);
    let mut stats = Stats::default();
    if regions.is_empty() {
        return Ok(stats);
    }
    let divergence = analyses.divergence(func);
    let domtree = analyses.domtree(func);
    let used_elsewhere = values_used_elsewhere(func);
    let mut repair = Repair::new();
    // In kernel mode the region's entry is the kernel's first block: every zero there is
    // live from the top of the kernel to its variable's reads, as many values at once as
    // the kernel has variables, which made allocation spill and slow on long kernels
    // (30k instructions of short circuits: 4799 spills, 3 s). There each zero goes near
    // its reads instead. A `divergent` or `all` region keeps its zeros in its entry, as
    // the paper's implementation has them: that register cost is what the pass exists to
    // measure, and there it is bounded by the region. (Near its reads, a zero read only
    // on a guard's fall-through would sit in that guard, which then no longer has
    // Algorithm 1's shape; in kernel mode it does.)
    if mode == RegionMode::Kernel {
        repair.place_zeros_near_reads();
    }
    let mut sequences: Vec<(FxHashSet<Block>, Vec<Block>)> = Vec::new();
    for region in &regions {
        let blocks = || region.blocks.iter().copied();
        let terminators = || {
            blocks()
                .chain([region.entry])
                .filter_map(|b| func.terminator(b))
        };
        if terminators().any(|t| func.dfg.insts[t].opcode() == Opcode::BrTable) {
            stats.skipped_br_table_regions += 1;
            continue;
        }
        let has_barrier = blocks().any(|b| {
            func.layout
                .block_insts(b)
                .iter()
                .any(|&i| func.dfg.insts[i].opcode() == Opcode::Barrier)
        });
        let divergent = blocks()
            .chain([region.entry])
            .any(|b| divergence.is_divergent_branch(b));
        if has_barrier && divergent {
            // A guarded barrier could be reached by part of the block's threads only.
            stats.skipped_barrier_regions += 1;
            continue;
        }
        let kernel = Kernel {
            domtree: &domtree,
            used_elsewhere: &used_elsewhere,
        };
        let s = linearize_region(func, region, &kernel, &mut repair, &mut sequences)?;
        stats.add(&s);
    }
    if sequences.is_empty() {
        return Ok(stats);
    }
    place_sequences(func, &sequences);
    let r = repair.run(func)?;
    stats.block_params_added = r.params_added;
    stats.trivial_params_removed = r.trivial_params;
    stats.zero_constants = r.zeros;
    debug_assert_eq!(r.params_removed, stats.param_variables);
    Ok(stats)
}

/// What every region's restructuring reads of the kernel as it was before any.
struct Kernel<'a> {
    /// Dominance before restructuring (see `assign_params`).
    domtree: &'a DominatorTree<Block>,
    /// The values used in a block other than their definition's.
    used_elsewhere: &'a FxHashSet<Value>,
}

/// The values of `func` used in a block other than the one defining them.
fn values_used_elsewhere(func: &Function) -> FxHashSet<Value> {
    let mut used_elsewhere: FxHashSet<Value> = FxHashSet::default();
    for &b in func.layout.blocks() {
        for &i in func.layout.block_insts(b) {
            for v in func.dfg.insts[i].all_values() {
                if let ValueDef::Result(d) = func.dfg.value_def(v) {
                    if func.layout.inst_block(d) != Some(b) {
                        used_elsewhere.insert(v);
                    }
                }
            }
        }
    }
    used_elsewhere
}

/// Sets the block order once for all linearized regions: each region's sequence (its
/// guard chain and blocks) where its first block was, every other block in its place,
/// the blocks the regions made (appended at the end of the layout) moved into their
/// sequences.
fn place_sequences(func: &mut Function, sequences: &[(FxHashSet<Block>, Vec<Block>)]) {
    let made: FxHashSet<Block> = sequences
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .collect();
    let mut region_of: FxHashMap<Block, usize> = FxHashMap::default();
    for (r, (members, _)) in sequences.iter().enumerate() {
        for &b in members {
            region_of.insert(b, r);
        }
    }
    let mut placed = vec![false; sequences.len()];
    let mut new_order: Vec<Block> = Vec::with_capacity(func.layout.blocks().len());
    for &b in func.layout.blocks() {
        if let Some(&r) = region_of.get(&b) {
            if !placed[r] {
                placed[r] = true;
                new_order.extend(sequences[r].1.iter().copied());
            }
        } else if !made.contains(&b) {
            new_order.push(b);
        }
    }
    func.layout.set_block_order(new_order);
}

/// Counts of one run, for [`PassReport`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Regions linearized.
    pub regions: u64,
    /// Regions left as they are because they hold a barrier and a divergent branch.
    pub skipped_barrier_regions: u64,
    /// Regions left as they are because a block of theirs, or their entry, ends with a
    /// `br_table`.
    pub skipped_br_table_regions: u64,
    /// Blocks in the regions.
    pub region_blocks: u64,
    /// Retreating edges in the regions.
    pub retreating_edges: u64,
    /// Guard blocks made, one per region block.
    pub guard_blocks: u64,
    /// Back-edge guard blocks made, one per block with retreating edges.
    pub back_edge_guards: u64,
    /// Return blocks made (regions that return).
    pub exit_blocks: u64,
    /// Guard tests (`icmp`) in guard blocks.
    pub guard_tests: u64,
    /// Assignments to the guard variable: one per region block and one in the entry.
    pub guard_assignments: u64,
    /// Values defined in a region block and used in another, made variables.
    pub value_variables: u64,
    /// Parameters of region blocks, made variables (and removed).
    pub param_variables: u64,
    /// Parameters of region exits, whose new edges pass a variable.
    pub exit_param_variables: u64,
    /// Block parameters made by the SSA repair (at guard blocks and other merges).
    pub block_params_added: u64,
    /// Block parameters the SSA repair made and removed again as trivial.
    pub trivial_params_removed: u64,
    /// Zero constants placed in region entries for paths where a variable is undefined.
    pub zero_constants: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.regions += o.regions;
        self.skipped_barrier_regions += o.skipped_barrier_regions;
        self.skipped_br_table_regions += o.skipped_br_table_regions;
        self.region_blocks += o.region_blocks;
        self.retreating_edges += o.retreating_edges;
        self.guard_blocks += o.guard_blocks;
        self.back_edge_guards += o.back_edge_guards;
        self.exit_blocks += o.exit_blocks;
        self.guard_tests += o.guard_tests;
        self.guard_assignments += o.guard_assignments;
        self.value_variables += o.value_variables;
        self.param_variables += o.param_variables;
        self.exit_param_variables += o.exit_param_variables;
        self.block_params_added += o.block_params_added;
        self.trivial_params_removed += o.trivial_params_removed;
        self.zero_constants += o.zero_constants;
    }

    /// The counts as a [`PassReport`].
    pub fn report(&self) -> PassReport {
        PassReport {
            counts: vec![
                ("regions", self.regions),
                (
                    "regions skipped for a barrier",
                    self.skipped_barrier_regions,
                ),
                (
                    "regions skipped for a br_table",
                    self.skipped_br_table_regions,
                ),
                ("region blocks", self.region_blocks),
                ("retreating edges", self.retreating_edges),
                ("guard blocks", self.guard_blocks),
                ("back-edge guards", self.back_edge_guards),
                ("exit blocks", self.exit_blocks),
                ("guard tests", self.guard_tests),
                ("guard assignments", self.guard_assignments),
                ("value variables", self.value_variables),
                ("parameter variables", self.param_variables),
                ("exit parameter variables", self.exit_param_variables),
                ("block params added", self.block_params_added),
                ("trivial params removed", self.trivial_params_removed),
                ("zero constants added", self.zero_constants),
            ],
        }
    }
}

/// Places a new instruction at the end of `block`; returns it and its result.
fn append(
    func: &mut Function,
    block: Block,
    data: InstructionData,
    ty: Option<Type>,
    loc: SourceLoc,
) -> (Inst, Option<Value>) {
    let inst = func.dfg.make_inst(data, ty);
    func.layout.append_inst(inst, block);
    func.srclocs[inst] = loc;
    (inst, func.dfg.inst_result(inst))
}

/// `iconst.i32 n` at the end of `block`.
fn const_i32(func: &mut Function, block: Block, n: u32, loc: SourceLoc) -> Value {
    let data = InstructionData::UnaryImm {
        opcode: Opcode::Iconst,
        imm: u64::from(n),
    };
    let (_, v) = append(func, block, data, Some(Type::I32), loc);
    v.expect("iconst has a result")
}

/// `select c, a, b` of type `ty` at the end of `block`.
fn select(
    func: &mut Function,
    block: Block,
    ty: Type,
    [c, a, b]: [Value; 3],
    loc: SourceLoc,
) -> Value {
    let data = InstructionData::Ternary {
        opcode: Opcode::Select,
        args: [c, a, b],
    };
    let (_, v) = append(func, block, data, Some(ty), loc);
    v.expect("select has a result")
}

/// The guard variable's value for a branch: `iconst` or `select c, t, f`.
fn assign_guard(
    func: &mut Function,
    block: Block,
    cond: Option<Value>,
    ids: (u32, u32),
    loc: SourceLoc,
) -> Value {
    match cond {
        Some(c) if ids.0 != ids.1 => {
            let t = const_i32(func, block, ids.0, loc);
            let f = const_i32(func, block, ids.1, loc);
            select(func, block, Type::I32, [c, t, f], loc)
        }
        _ => const_i32(func, block, ids.0, loc),
    }
}

/// What a block's terminator did, taken apart.
struct Branch {
    /// The `brif` condition, if it is one.
    cond: Option<Value>,
    /// Destinations: `[dest]` for a jump, `[then, else]` for a `brif`, `[]` for a return.
    dests: Vec<BlockCall>,
    loc: SourceLoc,
}

/// Removes `block`'s terminator and returns it taken apart.
fn take_terminator(func: &mut Function, block: Block) -> Result<Branch, String> {
    let term = func
        .terminator(block)
        .ok_or_else(|| format!("{block} has no terminator"))?;
    let loc = func.srclocs[term];
    let branch = match &func.dfg.insts[term] {
        InstructionData::Jump { dest, .. } => Branch {
            cond: None,
            dests: vec![dest.clone()],
            loc,
        },
        InstructionData::Brif { arg, dests, .. } => Branch {
            cond: Some(*arg),
            dests: dests.to_vec(),
            loc,
        },
        InstructionData::Nullary {
            opcode: Opcode::Return,
        } => Branch {
            cond: None,
            dests: Vec::new(),
            loc,
        },
        _ => return Err(format!("{block} ends with a br_table")),
    };
    func.layout.remove_inst(term);
    Ok(branch)
}

/// The variables of the region's blocks' and exit's parameters.
type ParamVars = FxHashMap<Block, Vec<Var>>;

/// Defines, at the end of `block`, the parameter variables of the destinations in
/// `dests` that have them, from the branch's arguments. When both arms of a `brif` go to
/// one block, each argument is a `select` on the condition.
///
/// The assignment happens whichever arm a lane takes. For a lane that takes the other
/// arm, it clobbers the parameter's current value, which that lane may still read when
/// `block` lies in the part of the kernel the destination dominates (a loop body leaving
/// through a side exit reads the header's parameter after the exit). There the
/// assignment keeps the current value on the other arm: `select c, arg, param`.
fn assign_params(
    func: &mut Function,
    repair: &mut Repair,
    param_vars: &ParamVars,
    block: Block,
    branch: &Branch,
    only: impl Fn(Block) -> bool,
    dominated_by: impl Fn(Block) -> bool,
) {
    let dests: Vec<&BlockCall> = branch.dests.iter().filter(|d| only(d.block)).collect();
    match (&dests[..], branch.cond) {
        ([a, b], Some(c)) if a.block == b.block && branch.dests.len() == 2 => {
            let Some(vars) = param_vars.get(&a.block) else {
                return;
            };
            for (k, &var) in vars.iter().enumerate() {
                let (Some(&x), Some(&y)) = (a.args.get(k), b.args.get(k)) else {
                    continue;
                };
                let src = if x == y {
                    Src::Old(x)
                } else {
                    let ty = func.dfg.value_type(x);
                    Src::Fresh(select(func, block, ty, [c, x, y], branch.loc))
                };
                repair.def_at_end(block, var, src);
            }
        }
        _ => {
            for d in dests {
                let Some(vars) = param_vars.get(&d.block) else {
                    continue;
                };
                // The arm this destination is, when the branch has another one.
                let arm = match (branch.cond, &branch.dests[..]) {
                    (Some(c), [t, f]) if t.block != f.block && dominated_by(d.block) => {
                        Some((c, t.block == d.block))
                    }
                    _ => None,
                };
                let params = func.dfg.block_params(d.block).to_vec();
                for (k, (&var, &x)) in vars.iter().zip(&d.args).enumerate() {
                    let src = match (arm, params.get(k)) {
                        (Some((c, taken)), Some(&current)) => {
                            let ty = func.dfg.value_type(x);
                            let [a, b] = if taken { [x, current] } else { [current, x] };
                            Src::Fresh(select(func, block, ty, [c, a, b], branch.loc))
                        }
                        _ => Src::Old(x),
                    };
                    repair.def_at_end(block, var, src);
                }
            }
        }
    }
}

/// Linearizes one region, recording its variables in `repair` (SSA form is rebuilt once
/// all regions are done) and its new block sequence in `sequences`.
fn linearize_region(
    func: &mut Function,
    region: &SsaRegion,
    kernel: &Kernel,
    repair: &mut Repair,
    sequences: &mut Vec<(FxHashSet<Block>, Vec<Block>)>,
) -> Result<Stats, String> {
    let members: FxHashSet<Block> = region.blocks.iter().copied().collect();
    let succs = |f: &Function, b: Block| f.successors(b).collect::<Vec<_>>();
    let rpo = region_rpo_by(region.entry, &members, |b| succs(func, b));
    // Loops kept whole and blocks after a loop after it, as the machine pass orders them.
    // Where every edge among the region's blocks goes forward in the reverse post-order
    // the region has no cycle, and that order is the loop-aware one (its topological
    // sort, ties broken by the same order, takes the blocks as they are): most regions
    // are acyclic, and the decomposition was a tenth of the pass.
    let rpo_pos: FxHashMap<Block, usize> = rpo.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let acyclic = rpo.iter().enumerate().all(|(i, &b)| {
        func.successors(b)
            .all(|s| rpo_pos.get(&s).is_none_or(|&j| j > i))
    });
    let order = if acyclic {
        rpo
    } else {
        loop_order_by(region.entry, &rpo, |b| succs(func, b))
    };
    if order.len() != members.len() {
        return Err(format!(
            "region entered at {} reaches {} of its {} blocks",
            region.entry,
            order.len(),
            members.len()
        ));
    }
    let n = order.len();
    let pos: FxHashMap<Block, usize> = order.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let id = |i: usize| (i + 1) as u32;
    let exit_id = id(n);
    let (targets, retreating) = back_edge_targets(&order, &pos, |b| succs(func, b));
    let domtree = kernel.domtree;
    let mut stats = Stats {
        regions: 1,
        region_blocks: n as u64,
        retreating_edges: retreating,
        ..Stats::default()
    };

    // Variables, from the function as it is.
    repair.set_zero_block(region.entry);
    let first_var = repair.num_vars();
    let used_elsewhere = kernel.used_elsewhere;
    let mut param_vars: ParamVars = FxHashMap::default();
    for &b in &order {
        for &i in func.layout.block_insts(b) {
            if let Some(v) = func.dfg.inst_result(i) {
                if used_elsewhere.contains(&v) {
                    repair.add_var(
                        func.dfg.value_type(v),
                        VarKind::Value {
                            value: v,
                            def_block: b,
                        },
                    );
                    stats.value_variables += 1;
                }
            }
        }
        let vars = func
            .dfg
            .block_params(b)
            .iter()
            .map(|&p| repair.add_var(func.dfg.value_type(p), VarKind::Param(p)))
            .collect::<Vec<_>>();
        stats.param_variables += vars.len() as u64;
        param_vars.insert(b, vars);
    }
    let mut exit_placeholders: Vec<Value> = Vec::new();
    if let Some(p) = region.exit {
        exit_placeholders = func.dfg.block_params(p).to_vec();
        let vars = exit_placeholders
            .iter()
            .map(|&q| repair.add_var(func.dfg.value_type(q), VarKind::Slot))
            .collect::<Vec<_>>();
        stats.exit_param_variables += vars.len() as u64;
        param_vars.insert(p, vars);
    }
    for var in first_var..repair.num_vars() {
        repair.def_at_end(region.entry, var, Src::Zero);
    }
    let g = repair.add_var(Type::I32, VarKind::Slot);
    let exit_vars: Vec<Var> = region
        .exit
        .and_then(|p| param_vars.get(&p).cloned())
        .unwrap_or_default();

    // The exit: the given one, or a new return block.
    let exit = match region.exit {
        Some(e) => e,
        None => {
            let e = func.dfg.make_block();
            func.layout.append_block(e);
            append(
                func,
                e,
                InstructionData::Nullary {
                    opcode: Opcode::Return,
                },
                None,
                SourceLoc::default(),
            );
            stats.exit_blocks += 1;
            e
        }
    };
    let new_block = |func: &mut Function| {
        let b = func.dfg.make_block();
        func.layout.append_block(b);
        b
    };
    let guards: Vec<Block> = (0..n).map(|_| new_block(func)).collect();
    let be_guards: Vec<Option<Block>> =
        targets.iter().map(|t| t.map(|_| new_block(func))).collect();
    let after = |i: usize| if i + 1 < n { guards[i + 1] } else { exit };
    // A call of `to`: to the exit, it passes the exit's parameter variables.
    let call = |to: Block| {
        if to == exit {
            BlockCall::new(to, exit_placeholders.clone())
        } else {
            BlockCall::new(to, Vec::new())
        }
    };
    let note_exit_args = |repair: &mut Repair, inst: Inst, dest: usize, to: Block| {
        if to == exit {
            for (k, &var) in exit_vars.iter().enumerate() {
                repair.use_slot(inst, Slot::BranchArg(dest, k), var);
            }
        }
    };

    // The entry assigns `g` and enters the first guard (Algorithm 1, lines 9-11).
    let branch = take_terminator(func, region.entry)?;
    let in_region = |b: Block| members.contains(&b);
    assign_params(
        func,
        repair,
        &param_vars,
        region.entry,
        &branch,
        in_region,
        |_| false,
    );
    let entry_ids: Vec<Option<u32>> = branch
        .dests
        .iter()
        .map(|d| pos.get(&d.block).map(|&i| id(i)))
        .collect();
    let g0 = match (&entry_ids[..], branch.cond) {
        ([Some(a), Some(b)], Some(c)) => {
            assign_guard(func, region.entry, Some(c), (*a, *b), branch.loc)
        }
        ([Some(a)], _) | ([Some(a), None], _) | ([None, Some(a)], _) => {
            assign_guard(func, region.entry, None, (*a, *a), branch.loc)
        }
        _ => {
            return Err(format!(
                "the region's entry {} does not enter it",
                region.entry
            ))
        }
    };
    repair.def_at_end(region.entry, g, Src::Fresh(g0));
    let data = match (branch.cond, &branch.dests[..]) {
        (Some(c), [a, b]) if !(in_region(a.block) && in_region(b.block)) => {
            let mv = |d: &BlockCall| {
                if in_region(d.block) {
                    BlockCall::new(guards[0], Vec::new())
                } else {
                    d.clone()
                }
            };
            InstructionData::Brif {
                opcode: Opcode::Brif,
                arg: c,
                dests: [mv(a), mv(b)],
            }
        }
        _ => InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: BlockCall::new(guards[0], Vec::new()),
        },
    };
    append(func, region.entry, data, None, branch.loc);
    stats.guard_assignments += 1;

    // Branches of region blocks become assignments to `g` (line 7) and a jump to the next
    // guard or the block's back-edge guard (lines 15-17, 27).
    for i in 0..n {
        let b = order[i];
        let next = be_guards[i].unwrap_or_else(|| after(i));
        let branch = take_terminator(func, b)?;
        let target_id = |to: Block| -> Result<u32, String> {
            match pos.get(&to) {
                Some(&j) => Ok(id(j)),
                None if to == exit => Ok(exit_id),
                None => Err(format!(
                    "{b} of the region branches to {to}, neither in the region nor its exit"
                )),
            }
        };
        let gv = match (&branch.dests[..], branch.cond) {
            ([], _) if region.exit.is_none() => {
                assign_guard(func, b, None, (exit_id, exit_id), branch.loc)
            }
            ([d], _) => {
                let t = target_id(d.block)?;
                assign_guard(func, b, None, (t, t), branch.loc)
            }
            ([x, y], Some(c)) => {
                let ids = (target_id(x.block)?, target_id(y.block)?);
                assign_guard(func, b, Some(c), ids, branch.loc)
            }
            _ => {
                return Err(format!(
                    "{b} of the region returns, yet the region has an exit"
                ))
            }
        };
        // Only a region block's own parameters can be read after the branch by a lane that
        // did not take the edge to it (the exit's variables are read on edges to the exit
        // only).
        let dominated_by = |h: Block| members.contains(&h) && domtree.dominates(h, b);
        assign_params(
            func,
            repair,
            &param_vars,
            b,
            &branch,
            |_| true,
            dominated_by,
        );
        repair.def_at_end(b, g, Src::Fresh(gv));
        let dest = call(next);
        let (jump, _) = append(
            func,
            b,
            InstructionData::Jump {
                opcode: Opcode::Jump,
                dest,
            },
            None,
            branch.loc,
        );
        note_exit_args(repair, jump, 0, next);
        stats.guard_assignments += 1;
    }

    // Guard blocks (lines 6, 8, 12-14, 18-19) and back-edge guards (lines 24-33).
    let loc = SourceLoc::default();
    let guard = |func: &mut Function,
                 repair: &mut Repair,
                 block: Block,
                 cc: IntCC,
                 i: usize,
                 taken: Block,
                 not_taken: Block| {
        let k = const_i32(func, block, id(i), loc);
        let (test, p) = append(
            func,
            block,
            InstructionData::IntCompare {
                opcode: Opcode::Icmp,
                cond: cc,
                args: [g0, k],
            },
            Some(Type::I1),
            loc,
        );
        repair.use_slot(test, Slot::Arg(0), g);
        let (br, _) = append(
            func,
            block,
            InstructionData::Brif {
                opcode: Opcode::Brif,
                arg: p.expect("icmp has a result"),
                dests: [call(taken), call(not_taken)],
            },
            None,
            loc,
        );
        note_exit_args(repair, br, 0, taken);
        note_exit_args(repair, br, 1, not_taken);
    };
    for i in 0..n {
        let next = be_guards[i].unwrap_or_else(|| after(i));
        guard(func, repair, guards[i], IntCC::Equal, i, order[i], next);
        stats.guard_blocks += 1;
        stats.guard_tests += 1;
        if let (Some(be), Some(t)) = (be_guards[i], targets[i]) {
            // Lanes whose next block is at or before this one go back; the destination's
            // guard is the first one such a lane may need.
            guard(
                func,
                repair,
                be,
                IntCC::UnsignedLessThanOrEqual,
                i,
                guards[t],
                after(i),
            );
            stats.back_edge_guards += 1;
            stats.guard_tests += 1;
        }
    }

    // Layout: the linearized sequence where the first region block was.
    let mut sequence = Vec::with_capacity(3 * n);
    for i in 0..n {
        sequence.push(guards[i]);
        sequence.push(order[i]);
        sequence.extend(be_guards[i]);
    }
    sequences.push((members, sequence));
    Ok(stats)
}
