//! Control-flow restructuring with predicates, after Reissmann, Falch, Bjørnseth, Bahmann,
//! Meyer and Jahre, "Efficient Control Flow Restructuring for GPUs" (HPCS 2016), applied
//! selectively as the paper's Section VII proposes.
//!
//! # Why
//!
//! A SIMT machine reconverges a divergent branch at its immediate post-dominator. In a
//! graph of tail-controlled loops and properly nested branches (a *tail-structured*
//! graph, Definition 2) that point comes before any block is reached twice, so no block
//! runs redundantly. In an unstructured graph it may not: Figure 1's short circuit
//! `if (c || d) S1; else S2; S3;` runs `S1` twice when one group of threads reaches it
//! from `c?` and another from `d?`. Restructuring rewrites the graph, with predicate
//! variables, into a tail-structured one that does the same thing for every thread:
//!
//! ```text
//!         c?                        c?
//!        /  \                      /  \
//!       |    d?                p:=0    d?
//!       |   /  \                 |    /  \
//!        S1     S2     ==>       |  p:=0  p:=1       every split joins before the next
//!          \   /                  \   |   /          split outside it: S1 runs once per
//!           S3                     `--p?--'          warp, whatever the threads decide
//!                                    /  \
//!                                  S1    S2
//!                                    \  /
//!                                     S3
//! ```
//!
//! # The algorithm (Section IV), on an abstract graph ([`graph`])
//!
//! **Loop restructuring (IV-A, Figure 2).** Every strongly connected component becomes a
//! tail-controlled loop with one entry node, one exit edge and one repetition edge. With
//! several entry nodes (an irreducible loop) a dispatch `b^E` on a new predicate `q`
//! becomes the only entry, and every entry edge and repetition edge assigns `q := m` for
//! the entry `m` it meant; with several exit targets, exits assign a predicate and meet
//! at a dispatch `b^X` after the loop; when repetition and exit edges leave from more than
//! one node, they assign `r := 1` and `r := 0` and meet at one branch `b^R` on `r`, the
//! loop's tail. A loop already tail-controlled is left alone. The repetition edge is then
//! set aside and the procedure repeats on the loop bodies until the graph is acyclic.
//!
//! **Loop restructuring with copying (IV-C, Figure 4).** A head-controlled loop (one
//! entry, one repetition and one exit edge, the exit taken from the last node of a linear
//! chain `S` that starts at the entry) is inverted instead: the repetition edge goes to a
//! copy of `S`, whose branch is the new repetition and exit, so no predicate is assigned
//! per iteration.
//!
//! **Branch restructuring (IV-B, Figure 3).** From the entry, follow single successors to
//! the first branch `b`; the nodes dominated by each out-edge `f_k` of `b` are its branch
//! subgraph `B_k`, the rest is the tail `T`, and the nodes of `T` entered from a `B_k` are
//! the continuation points. With one continuation point the construct is already nested;
//! with several, each edge into `c_m` assigns `p := m` and all of them meet at a dispatch
//! on `p` that enters `T`. A `B_k` left by several edges gets an empty join node, so that
//! it leaves by one. The procedure recurses into each `B_k` and into `T` (with a
//! worklist, not the call stack).
//!
//! **n-way dispatch (Section V-A, Figure 5).** A dispatch among more than two targets is
//! a cascade of two-way tests: `depth` (a chain `p == 0`, `p == 1`, ..., the paper's
//! choice), `breadth` (a balanced tree of `p < mid`), or one `br_table` (`table`). The
//! cascade is built before its own tail is restructured, so it is nested like any other
//! branch. A two-valued predicate is an `i1` the dispatch branches on directly.
//!
//! **Cleanup (beyond the paper, [`simplify`]).** Empty blocks are threaded past before
//! the phases; afterwards branches whose arms only assign predicates become assignments
//! computed from their condition, identical assignments into a join merge into it, and
//! (where no values cross the region's joins) an assignment on one arm of a branch moves
//! ahead of the branch when the other arm assigns the predicate again before reading it.
//! What the paper's construction costs on a warp is mostly these assignment blocks and
//! the splits of the warp at their branches.
//!
//! # Where it applies
//!
//! The paper restructures every kernel and pays 2.1% on structured ones; its conclusion
//! asks for the transformation to be applied only to unstructured subgraphs holding a
//! divergent branch. That is the default here (`restructure_regions=divergent`): the
//! regions are the minimal single-entry, single-exit regions around a branch the
//! divergence analysis cannot prove uniform that the paper's reduction rules do not
//! contract ([`find_regions`]); everything else keeps its bytes. `all` takes every unstructured region,
//! `kernel` the whole kernel (the paper's setting). A region whose restructuring would
//! change nothing is not touched either.
//!
//! # SSA form
//!
//! The IR is in SSA form, and restructuring moves joins: a value defined in a region
//! block may no longer dominate its uses, and a block parameter's edges may now go
//! through assignment blocks. So the region's cross-block values and its blocks'
//! parameters become variables (a parameter is assigned on each edge into its block; an
//! edge from a multi-way branch is split first so the assignment happens on that edge
//! only), and SSA form is rebuilt over the new graph, as the SSA-level linearization does
//! (`crate::linearize_ssa`'s repair). Every thread runs the same original blocks in the
//! same order as before, so every variable read sees the value it saw before.
//!
//! The kernel-wide parts of that work are shared by the regions of a run ([`shared`]):
//! the edges are computed once and updated for the blocks a region changes, the values
//! used outside their block are found once, and one SSA repair serves a batch of regions,
//! so a run costs about what its regions cost plus a few walks of the kernel, not a walk
//! of the kernel per region.
//!
//! # What it leaves alone
//!
//! A region holding a `barrier` and a divergent branch (a barrier must be reached by all
//! threads of the block together), a region with a loop that never exits, and a region
//! of more than `restructure_max_blocks` blocks are left as they are, each with a message
//! in [`Outcome::skipped`] and a count in the pass report. The pass never panics on a
//! verified kernel and never changes a kernel it could not finish.

pub mod check;
mod cost;
mod dead;
pub mod graph;
mod invert;
mod merge;
mod shared;
mod simplify;

use crate::analysis::{AnalysisCache, Preserved};
use crate::pass_util::ssa_regions::SsaRegion;
use crate::pass_util::ssa_repair::{Repair, Slot, Src, Var, VarKind};
use crate::passes::{IrPass, PassError, PassReport};
pub use crate::settings::LoopMode;
use crate::settings::{RegionMode, Settings};
use cranelift_entity::SecondaryMap;
use graph::{Cascade, Graph, GraphStats, Kind, Node, PredVar};
use shared::Shared;
use std::collections::{HashMap, HashSet};
use warplift_ir::cfg::structure::unstructured_subgraphs;
use warplift_ir::cfg::ControlFlowGraph;
use warplift_ir::divergence::Divergence;
use warplift_ir::{Block, BlockCall, Function, Inst, InstructionData, IntCC, Opcode, Type, Value};

/// The `restructure` IR pass.
pub struct Restructure;

impl IrPass for Restructure {
    fn name(&self) -> &'static str {
        "restructure"
    }

    fn description(&self) -> &'static str {
        "restructure unstructured divergent regions into tail-controlled loops and properly nested branches, with predicates (Reissmann et al.)"
    }

    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        // Two variants keep the differential tests fast: the default (selective) and the
        // whole kernel with predicated loops and a breadth-first cascade; the other
        // options run in the pass's own tests.
        &[
            &[],
            &[
                ("restructure_regions", "kernel"),
                ("restructure_loops", "predicate"),
                ("restructure_cascade", "breadth"),
            ],
        ]
    }

    fn run(
        &self,
        func: &mut Function,
        analyses: &mut AnalysisCache,
        settings: &Settings,
    ) -> Result<PassReport, PassError> {
        let options = Options::from_settings(settings).map_err(|message| PassError {
            pass: "restructure",
            kernel: func.name.clone(),
            message,
        })?;
        Ok(restructure_in(func, &options, analyses).report())
    }

    /// A run that found no region left the kernel as it was.
    fn preserved(&self, report: &PassReport) -> Preserved {
        if report.get("regions") == Some(0) {
            Preserved::ALL
        } else {
            Preserved::NOTHING
        }
    }
}

/// The options of the pass (the `restructure_*` settings).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Which regions: divergent unstructured ones, all unstructured ones, or the kernel.
    pub regions: RegionMode,
    /// Loop restructuring.
    pub loops: LoopMode,
    /// Branch restructuring (Section IV-B).
    pub branches: bool,
    /// How dispatches of more than two ways are resolved.
    pub cascade: Cascade,
    /// Regions with more blocks are left as they are.
    pub max_blocks: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            regions: RegionMode::Divergent,
            loops: LoopMode::Copy,
            branches: true,
            cascade: Cascade::Depth,
            max_blocks: 100_000,
        }
    }
}

impl Options {
    /// The options `settings` ask for.
    pub fn from_settings(s: &Settings) -> Result<Options, String> {
        Ok(Options {
            regions: s.restructure_regions,
            loops: s.restructure_loops,
            branches: s.restructure_branches,
            cascade: s.restructure_cascade,
            max_blocks: s.restructure_max_blocks,
        })
    }

    /// The paper's configurations (Section V-D2, Figure 7), by the names it gives them:
    /// `none` (parse and reconvert), `loop`, `loop-copy`, `loop+branch`,
    /// `loop-copy+branch`; each on the whole kernel.
    pub fn paper_configuration(name: &str) -> Option<Options> {
        let (loops, branches) = match name {
            "none" => (LoopMode::None, false),
            "loop" => (LoopMode::Predicate, false),
            "loop-copy" => (LoopMode::Copy, false),
            "loop+branch" => (LoopMode::Predicate, true),
            "loop-copy+branch" => (LoopMode::Copy, true),
            _ => return None,
        };
        Some(Options {
            regions: RegionMode::Kernel,
            loops,
            branches,
            ..Options::default()
        })
    }
}

/// The regions `mode` selects in `func`: the whole kernel (every reachable block but the
/// entry and the single return block, if there is one), or the unstructured subgraphs
/// ([`warplift_ir::cfg::structure::unstructured_subgraphs`]: minimal single-entry,
/// single-exit regions around a branch that the paper's rules 1–4 do not contract)
/// around a divergent branch (`divergent`) or any branch (`all`). Disjoint.
pub fn find_regions(func: &Function, mode: RegionMode) -> Vec<SsaRegion> {
    if mode == RegionMode::Kernel {
        return crate::linearize_ssa::find_regions(func, mode);
    }
    let Some(kernel_entry) = func.entry_block() else {
        return Vec::new();
    };
    let cfg = ControlFlowGraph::compute(func);
    let divergence = (mode == RegionMode::Divergent).then(|| Divergence::compute(func));
    let found = unstructured_subgraphs(&cfg, |b| {
        divergence.as_ref().is_none_or(|d| d.is_divergent_branch(b))
    });
    let mut out = Vec::with_capacity(found.len());
    for r in found {
        let entry = match r.entry {
            Some(d) => d,
            // The virtual entry: the kernel's entry block, which no branch may target,
            // stands outside the region instead.
            None if cfg.preds(kernel_entry).is_empty() => kernel_entry,
            None => continue,
        };
        let blocks: Vec<Block> = r.blocks.iter().copied().filter(|&b| b != entry).collect();
        if !blocks.is_empty() {
            out.push(SsaRegion {
                entry,
                blocks,
                exit: r.exit,
            });
        }
    }
    out
}

/// What one run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Regions considered (selected by `restructure_regions`).
    pub regions: u64,
    /// Regions restructured.
    pub restructured: u64,
    /// Regions already in shape (restructuring would change nothing): untouched.
    pub unchanged: u64,
    /// Why each region left alone was left alone.
    pub skipped: Vec<String>,
    /// Regions the cost model declined (selective mode only): the block each is entered
    /// from, and why.
    pub declined: Vec<(Block, String)>,
    /// Counts of the graph transformations, over all regions.
    pub graph: GraphStats,
    /// Edges split so that a parameter's assignment happens on its edge only.
    pub split_edges: u64,
    /// Return blocks made for regions that returned from several blocks.
    pub exit_blocks: u64,
    /// Blocks added in all (after merging).
    pub blocks_added: u64,
    /// Blocks merged into their only predecessor after restructuring.
    pub merged_blocks: u64,
    /// Instructions removed because they computed the condition of a branch the
    /// cleanup removed, and nothing else read them ([`dead`]).
    pub dead_removed: u64,
    /// Negations of comparisons made by the pass that became the comparison inverted
    /// ([`invert`]).
    pub inverted: u64,
    /// Instructions before and after.
    pub insts_before: u64,
    /// Instructions after.
    pub insts_after: u64,
}

impl Outcome {
    /// The counts as a [`PassReport`].
    pub fn report(&self) -> PassReport {
        let g = &self.graph;
        PassReport {
            counts: vec![
                ("regions", self.regions),
                ("regions restructured", self.restructured),
                ("regions already structured", self.unchanged),
                ("regions skipped", self.skipped.len() as u64),
                (
                    "regions declined by the cost model",
                    self.declined.len() as u64,
                ),
                ("loops", g.loops),
                ("loops restructured", g.loops_restructured),
                ("loops inverted", g.loops_inverted),
                ("copied blocks", g.copied_blocks),
                ("entry dispatches", g.entry_dispatches),
                ("exit dispatches", g.exit_dispatches),
                ("repetition branches", g.repetition_dispatches),
                ("branches", g.branches),
                ("branch dispatches", g.branch_dispatches),
                ("cascade tests", g.cascade_tests),
                ("predicates", g.predicates),
                ("predicate assignments", g.assignments),
                ("join blocks", g.dummies),
                ("empty blocks threaded past", g.threaded),
                ("branches folded into assignments", g.folded),
                ("assignments sunk into joins", g.assignments_sunk),
                ("assignments hoisted into branches", g.hoisted),
                ("assignments of known values dropped", g.known_dropped),
                ("split edges", self.split_edges),
                ("exit blocks", self.exit_blocks),
                ("blocks added", self.blocks_added),
                ("blocks merged", self.merged_blocks),
                ("dead condition instructions removed", self.dead_removed),
                ("negated comparisons inverted", self.inverted),
                ("instructions before", self.insts_before),
                ("instructions after", self.insts_after),
            ],
        }
    }

    fn add_graph(&mut self, g: &GraphStats) {
        let s = &mut self.graph;
        s.loops += g.loops;
        s.loops_restructured += g.loops_restructured;
        s.loops_inverted += g.loops_inverted;
        s.copied_blocks += g.copied_blocks;
        s.entry_dispatches += g.entry_dispatches;
        s.exit_dispatches += g.exit_dispatches;
        s.repetition_dispatches += g.repetition_dispatches;
        s.branch_dispatches += g.branch_dispatches;
        s.branches += g.branches;
        s.assignments += g.assignments;
        s.dummies += g.dummies;
        s.cascade_tests += g.cascade_tests;
        s.predicates += g.predicates;
        s.threaded += g.threaded;
        s.folded += g.folded;
        s.assignments_sunk += g.assignments_sunk;
        s.hoisted += g.hoisted;
        s.known_dropped += g.known_dropped;
    }
}

/// Restructures the regions of `func` that `options` select. Never fails: a region it
/// cannot handle is left as it is, with a message in [`Outcome::skipped`]; should
/// anything go wrong after the kernel was changed, the whole kernel is restored.
pub fn restructure(func: &mut Function, options: &Options) -> Outcome {
    restructure_in(func, options, &mut AnalysisCache::new())
}

/// [`restructure`], with the kernel's divergence taken from `analyses`.
pub fn restructure_in(
    func: &mut Function,
    options: &Options,
    analyses: &mut AnalysisCache,
) -> Outcome {
    let mut out = Outcome {
        insts_before: func.num_placed_insts() as u64,
        ..Outcome::default()
    };
    let blocks_before = func.layout.num_blocks() as u64;
    let first_new = func.dfg.num_blocks();
    let first_new_inst = func.dfg.num_insts();
    let regions = find_regions(func, options.regions);
    if regions.is_empty() {
        out.insts_after = out.insts_before;
        return out;
    }
    let divergence = analyses.divergence(func);
    let backup = func.clone();
    let mut shared = Shared::new(func);
    let insts_before = out.insts_before;
    let restore = |func: &mut Function, entry: Block, message: String| {
        let mut restored = Outcome {
            regions: regions.len() as u64,
            insts_before,
            insts_after: insts_before,
            ..Outcome::default()
        };
        restored.skipped.push(format!(
            "%{}: region entered from {entry}: {message}; the kernel is left as it was",
            func.name
        ));
        *func = backup.clone();
        restored
    };
    for region in &regions {
        out.regions += 1;
        match restructure_region(func, region, options, &divergence, &mut shared, &mut out) {
            Ok(()) => {}
            Err(Skip::Before(message)) => out.skipped.push(format!(
                "%{}: region entered from {}: {message}; left as it is",
                func.name, region.entry
            )),
            Err(Skip::After(message)) => return restore(func, region.entry, message),
        }
    }
    if let Err(message) = shared.flush(func) {
        return restore(func, regions[regions.len() - 1].entry, message);
    }
    if out.restructured > 0 {
        out.merged_blocks = merge::merge_chains(func, first_new);
        out.dead_removed = dead::remove_dead_conditions(func, &shared.folded_conditions);
        out.inverted = invert::invert_negated_compares(func, first_new_inst);
    }
    out.blocks_added = (func.layout.num_blocks() as u64).saturating_sub(blocks_before);
    out.insts_after = func.num_placed_insts() as u64;
    out
}

/// Why a region was not restructured: found before anything changed, or after.
enum Skip {
    Before(String),
    After(String),
}

fn restructure_region(
    func: &mut Function,
    region: &SsaRegion,
    options: &Options,
    divergence: &Divergence,
    shared: &mut Shared,
    out: &mut Outcome,
) -> Result<(), Skip> {
    // A region touching the pending batch sees the kernel as restructured and repaired.
    if shared.conflicts(region.entry, &region.blocks, region.exit) {
        shared.flush(func).map_err(Skip::After)?;
    }
    if region.blocks.len() > options.max_blocks as usize {
        return Err(Skip::Before(format!(
            "{} blocks, more than restructure_max_blocks = {}",
            region.blocks.len(),
            options.max_blocks
        )));
    }
    let has_barrier = region.blocks.iter().any(|&b| {
        func.layout
            .block_insts(b)
            .iter()
            .any(|&i| func.dfg.insts[i].opcode() == Opcode::Barrier)
    });
    let divergent = region
        .blocks
        .iter()
        .chain([&region.entry])
        .any(|&b| divergence.is_divergent_branch(b));
    if has_barrier && divergent {
        return Err(Skip::Before(
            "it holds a barrier and a divergent branch".to_string(),
        ));
    }
    // Hoisting an assignment onto a branch leaves an edge from the branch straight to a
    // join; where the region carries values through its joins (block parameters, values
    // used in other blocks) that edge would need a block of its own for their moves.
    let carries_values = region.blocks.iter().chain(region.exit.as_ref()).any(|&b| {
        !func.dfg.block_params(b).is_empty()
            || func.layout.block_insts(b).iter().any(|&i| {
                func.dfg
                    .inst_result(i)
                    .is_some_and(|v| shared.used_elsewhere.contains(&v))
            })
    });
    let hoist = !carries_values;
    // A trial on the graph alone: does the region need restructuring at all?
    let (mut trial, _) = build_graph(func, region, options.cascade).map_err(Skip::Before)?;
    let selective = options.regions == RegionMode::Divergent;
    let plain = selective.then(|| trial.clone());
    // Selective mode decides on the paper's construction alone, the estimate its cost
    // model is tested against; the cleanup ([`simplify`]) then only takes work out of
    // what it approved.
    transform(&mut trial, func, options, hoist, !selective).map_err(Skip::Before)?;
    if !trial.changed {
        out.unchanged += 1;
        return Ok(());
    }
    // Selective mode: only where the cost model says it pays.
    if let Some(plain) = plain {
        // Constants mostly become immediates of the instructions that use them.
        let insts = |b: Block| {
            func.layout
                .block_insts(b)
                .iter()
                .filter(|&&i| func.dfg.insts[i].opcode() != Opcode::Iconst)
                .count()
        };
        let weight = |k: &Kind| cost::kind_weight(k, &insts);
        let params: Vec<usize> = region
            .blocks
            .iter()
            .chain(region.exit.as_ref())
            .map(|&b| func.dfg.block_params(b).len())
            .collect();
        let moves = params.iter().copied().max().unwrap_or(0) as f64;
        // Every variable of the repair starts with a definition in the region's entry.
        let setup = (trial.preds_values.len() + params.iter().sum::<usize>()) as f64;
        if let cost::Verdict::Declines(why) = cost::decide(&plain, &trial, &weight, moves, setup) {
            out.declined.push((region.entry, why));
            return Ok(());
        }
    }
    // From here on the kernel changes.
    let first_new = func.dfg.num_blocks();
    let prepared = prepare(func, region, shared).map_err(Skip::After)?;
    let (mut g, node_of) =
        build_graph(func, &prepared.region, options.cascade).map_err(Skip::After)?;
    transform(&mut g, func, options, hoist, true).map_err(Skip::After)?;
    materialize(
        func,
        &g,
        &node_of,
        &mut shared.repair,
        &prepared.edge_defs,
        &mut shared.folded_conditions,
    )
    .map_err(Skip::After)?;
    let r = &prepared.region;
    let exit = r
        .exit
        .ok_or("the prepared region has no exit")
        .map_err(|e| Skip::After(e.into()))?;
    shared.add(
        func,
        r.entry,
        &r.blocks,
        exit,
        &prepared.split_sources,
        first_new,
    );
    out.split_edges += prepared.split_edges;
    out.exit_blocks += u64::from(prepared.made_exit);
    out.restructured += 1;
    out.add_graph(&g.stats);
    Ok(())
}

/// Runs the phases `options` ask for on `g`, a graph of `func`'s blocks; with `cleanup`,
/// empty blocks are threaded past first and the graph cleaned up last ([`simplify`];
/// `hoist` allows its hoisting).
fn transform(
    g: &mut Graph,
    func: &Function,
    options: &Options,
    hoist: bool,
    cleanup: bool,
) -> Result<(), String> {
    if !g.every_node_reaches_exit() {
        return Err("a loop in it never exits".to_string());
    }
    let opcode = |b: Block| func.terminator(b).map(|t| (t, func.dfg.insts[t].opcode()));
    let empty = |b: Block| {
        func.layout.block_insts(b).len() == 1
            && func.dfg.block_params(b).is_empty()
            && opcode(b).is_some_and(|(t, op)| {
                op == Opcode::Jump && func.dfg.insts[t].branch_destinations()[0].args.is_empty()
            })
    };
    if cleanup {
        g.thread_empty(&empty);
    }
    if options.loops != LoopMode::None {
        g.restructure_loops(options.loops == LoopMode::Copy, &|_| true);
    }
    if options.branches && g.is_acyclic() {
        g.restructure_branches()?;
    }
    if cleanup && g.changed {
        g.simplify(
            &|b| opcode(b).is_some_and(|(_, op)| op == Opcode::Brif),
            hoist,
        );
    }
    Ok(())
}

/// The abstract graph of a region: its entry, blocks and exit (a region without exit
/// block has its returns lead to the graph's exit node).
fn build_graph(
    func: &Function,
    region: &SsaRegion,
    cascade: Cascade,
) -> Result<(Graph, HashMap<Block, Node>), String> {
    let mut g = Graph::new(Kind::Orig(region.entry), cascade);
    let mut node_of: HashMap<Block, Node> = HashMap::new();
    node_of.insert(region.entry, g.entry);
    if let Some(p) = region.exit {
        node_of.insert(p, g.exit);
    }
    for &b in &region.blocks {
        let n = g.add(Kind::Orig(b), Vec::new());
        node_of.insert(b, n);
    }
    let mut outside: HashMap<Block, Node> = HashMap::new();
    for &b in [region.entry].iter().chain(&region.blocks) {
        let term = func
            .terminator(b)
            .ok_or_else(|| format!("{b} has no terminator"))?;
        let data = &func.dfg.insts[term];
        let n = node_of[&b];
        if data.opcode() == Opcode::Return {
            if region.exit.is_some() || b == region.entry {
                return Err(format!("{b} returns inside a region with an exit block"));
            }
            g.set_succs(n, vec![g.exit]);
            continue;
        }
        let mut succs = Vec::new();
        let mut hide = Vec::new();
        for (i, call) in data.branch_destinations().iter().enumerate() {
            match node_of.get(&call.block) {
                Some(&t) if t != g.entry => succs.push(t),
                _ if b == region.entry => {
                    let t = *outside
                        .entry(call.block)
                        .or_insert_with(|| g.add(Kind::Outside(call.block), Vec::new()));
                    succs.push(t);
                    hide.push(i as u32);
                }
                _ => return Err(format!("{b} branches to {} outside the region", call.block)),
            }
        }
        g.set_succs(n, succs);
        for i in hide {
            g.hide(n, i);
        }
    }
    Ok((g, node_of))
}

/// The region made ready for restructuring: variables for its values and parameters,
/// edges to parameterised blocks split where they leave a multi-way branch, an exit
/// block where it had none.
struct Prepared {
    region: SsaRegion,
    /// Blocks outside the region whose edges into it were split.
    split_sources: Vec<Block>,
    /// Parameter assignments at the end of blocks with one destination, by block: what a
    /// copy of the block must assign too.
    edge_defs: HashMap<Block, Vec<(Var, Value)>>,
    split_edges: u64,
    made_exit: bool,
}

fn new_inst(func: &mut Function, block: Block, data: InstructionData, ty: Option<Type>) -> Inst {
    let inst = func.dfg.make_inst(data, ty);
    func.layout.append_inst(inst, block);
    inst
}

fn jump(func: &mut Function, block: Block, to: Block) -> Inst {
    let data = InstructionData::Jump {
        opcode: Opcode::Jump,
        dest: BlockCall::new(to, Vec::new()),
    };
    new_inst(func, block, data, None)
}

fn prepare(
    func: &mut Function,
    region: &SsaRegion,
    shared: &mut Shared,
) -> Result<Prepared, String> {
    let mut region = region.clone();
    let mut made_exit = false;
    // A region that returns gets one return block as its exit.
    let exit = match region.exit {
        Some(p) => p,
        None => {
            let x = func.dfg.make_pass_block();
            func.layout.append_block(x);
            new_inst(
                func,
                x,
                InstructionData::Nullary {
                    opcode: Opcode::Return,
                },
                None,
            );
            for &b in &region.blocks {
                if let Some(t) = func.terminator(b) {
                    if func.dfg.insts[t].opcode() == Opcode::Return {
                        func.layout.remove_inst(t);
                        jump(func, b, x);
                    }
                }
            }
            region.exit = Some(x);
            made_exit = true;
            x
        }
    };
    let in_region: HashSet<Block> = region.blocks.iter().copied().collect();
    let with_params: HashSet<Block> = region
        .blocks
        .iter()
        .chain([&exit])
        .copied()
        .filter(|&b| !func.dfg.block_params(b).is_empty())
        .collect();
    // Edges into a parameterised block from a multi-way branch get a block of their
    // own, which takes the arguments: assigning the parameters' variables there happens
    // on that edge only.
    // Only the blocks with an edge into a parameterised block matter, taken in layout
    // order; `sources` lists them as they are after the splits, in layout order too (the
    // blocks split off a branch follow it, the last made first).
    let mut split_edges = 0;
    let targets: Vec<Block> = region
        .blocks
        .iter()
        .chain([&exit])
        .copied()
        .filter(|b| with_params.contains(b))
        .collect();
    let mut sources: Vec<Block> = Vec::new();
    let mut split_sources: Vec<Block> = Vec::new();
    for u in shared.sources(func, &targets) {
        let Some(term) = func.terminator(u) else {
            continue;
        };
        let dests: Vec<BlockCall> = func.dfg.insts[term].branch_destinations().to_vec();
        if dests.len() < 2 {
            sources.push(u);
            continue;
        }
        let made = sources.len();
        for (d, call) in dests.iter().enumerate() {
            if !with_params.contains(&call.block) {
                continue;
            }
            let e = func.dfg.make_pass_block();
            func.layout.append_block(e);
            shared.place_after(e, u);
            // The arguments are used in the new block now.
            shared.used_elsewhere.extend(call.args.iter().copied());
            jump_to(func, e, call.clone());
            let dest = &mut func.dfg.insts[term].branch_destinations_mut()[d];
            dest.block = e;
            dest.args.clear();
            if u == region.entry || in_region.contains(&u) {
                region.blocks.push(e);
            } else {
                split_sources.push(u);
            }
            sources.push(e);
            split_edges += 1;
        }
        sources[made..].reverse();
    }
    let repair = &mut shared.repair;
    repair.set_zero_block(region.entry);
    let first_var = repair.num_vars();

    // Values defined in a region block and used in another block.
    for &b in &region.blocks {
        for &i in func.layout.block_insts(b) {
            if let Some(v) = func.dfg.inst_result(i) {
                if shared.used_elsewhere.contains(&v) {
                    repair.add_var(
                        func.dfg.value_type(v),
                        VarKind::Value {
                            value: v,
                            def_block: b,
                        },
                    );
                }
            }
        }
    }
    // Parameters of the region's blocks and its exit.
    let mut param_vars: HashMap<Block, Vec<Var>> = HashMap::new();
    for &b in region.blocks.iter().chain([&exit]) {
        let params = func.dfg.block_params(b).to_vec();
        if params.is_empty() {
            continue;
        }
        let vars = params
            .iter()
            .map(|&p| repair.add_var(func.dfg.value_type(p), VarKind::Param(p)))
            .collect();
        param_vars.insert(b, vars);
    }
    for var in first_var..repair.num_vars() {
        repair.def_at_end(region.entry, var, Src::Zero);
    }
    // Every edge into a parameterised block (now from a block with one destination)
    // assigns its parameters' variables at the end of its source.
    let mut edge_defs: HashMap<Block, Vec<(Var, Value)>> = HashMap::new();
    for u in sources {
        let Some(term) = func.terminator(u) else {
            continue;
        };
        let dests: Vec<BlockCall> = func.dfg.insts[term].branch_destinations().to_vec();
        for call in &dests {
            let Some(vars) = param_vars.get(&call.block) else {
                continue;
            };
            for (k, &var) in vars.iter().enumerate() {
                let Some(&arg) = call.args.get(k) else {
                    return Err(format!(
                        "a branch from {u} to {} lacks arguments",
                        call.block
                    ));
                };
                repair.def_at_end(u, var, Src::Old(arg));
                edge_defs.entry(u).or_default().push((var, arg));
            }
        }
    }
    split_sources.dedup();
    Ok(Prepared {
        region,
        split_sources,
        edge_defs,
        split_edges,
        made_exit,
    })
}

/// When `n`'s only way in is one arm of an original block's two-way `brif` (not folded),
/// that branch's condition and whether the arm is the taken one (the condition holds
/// there); every lane at `n` took that arm.
fn edge_condition(func: &Function, g: &Graph, n: Node) -> Option<(Value, bool)> {
    let [(m, slot)] = g.preds[n][..] else {
        return None;
    };
    let Kind::Orig(bm) = g.kinds[m] else {
        return None;
    };
    if g.succs[m].len() != 2 || g.succs[m][0] == g.succs[m][1] || !g.hidden[m].is_empty() {
        return None;
    }
    let term = func.terminator(bm)?;
    match func.dfg.insts[term] {
        InstructionData::Brif { arg, .. } => Some((arg, slot == 0)),
        _ => None,
    }
}

/// Is `n` a two-way branch the cleanup turned into a jump (both arms led to one node)?
fn is_folded_jump(func: &Function, g: &Graph, n: Node, b: Block) -> bool {
    g.succs[n].len() == 1
        && func
            .terminator(b)
            .is_some_and(|t| func.dfg.insts[t].opcode() == Opcode::Brif)
}

/// Replaces the `brif` ending `b` by the predicate assignments `list` computed from its
/// condition (`(p, if true, if false)`: the condition, its negation, a constant or a
/// `select`) and a jump to `to` ([`simplify`]'s folding); returns the condition, which
/// may be left unread.
fn fold_branch(
    func: &mut Function,
    b: Block,
    list: &[(PredVar, u32, u32)],
    pred_var: &SecondaryMap<PredVar, Option<(Var, Type)>>,
    repair: &mut Repair,
    ph: &mut HashMap<Type, Value>,
    to: Block,
) -> Result<Value, String> {
    let term = func
        .terminator(b)
        .ok_or_else(|| format!("{b} has no terminator"))?;
    let InstructionData::Brif { arg: cond, .. } = func.dfg.insts[term] else {
        return Err(format!("{b}: a folded branch that is not a brif"));
    };
    func.layout.remove_inst(term);
    assign_from(func, b, cond, list, pred_var, repair)?;
    let c = call_to(func, ph, to);
    jump_to(func, b, c);
    Ok(cond)
}

/// Appends to `b` the predicate assignments `list` computed from `cond` (see
/// [`fold_branch`]).
fn assign_from(
    func: &mut Function,
    b: Block,
    cond: Value,
    list: &[(PredVar, u32, u32)],
    pred_var: &SecondaryMap<PredVar, Option<(Var, Type)>>,
    repair: &mut Repair,
) -> Result<(), String> {
    let iconst = |func: &mut Function, ty: Type, value: u32| {
        let data = InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm: u64::from(value),
        };
        let inst = new_inst(func, b, data, Some(ty));
        func.dfg.inst_result(inst).expect("iconst has a result")
    };
    for &(p, yes, no) in list {
        let (var, ty) = pred_var[p].ok_or("a predicate without a variable")?;
        let src = if yes == no {
            Src::Fresh(iconst(func, ty, yes))
        } else if ty == Type::I1 && (yes, no) == (1, 0) {
            Src::Old(cond)
        } else if ty == Type::I1 {
            let data = InstructionData::Unary {
                opcode: Opcode::Bnot,
                arg: cond,
            };
            let inst = new_inst(func, b, data, Some(Type::I1));
            Src::Fresh(func.dfg.inst_result(inst).expect("bnot has a result"))
        } else {
            let (y, n) = (iconst(func, ty, yes), iconst(func, ty, no));
            let data = InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [cond, y, n],
            };
            let inst = new_inst(func, b, data, Some(ty));
            Src::Fresh(func.dfg.inst_result(inst).expect("select has a result"))
        };
        repair.def_at_end(b, var, src);
    }
    Ok(())
}

/// A placeholder value of type `ty`: the result of a constant placed nowhere, for an
/// operand the SSA repair rewrites or removes.
fn placeholder(func: &mut Function, cache: &mut HashMap<Type, Value>, ty: Type) -> Value {
    *cache.entry(ty).or_insert_with(|| {
        let inst = func.dfg.make_inst(InstructionData::zero(ty), Some(ty));
        func.dfg.inst_result(inst).expect("constants have a result")
    })
}

/// A branch to `t`. The parameters of a block that still has them are variables now,
/// defined on the edges; they get placeholder arguments, which the SSA repair removes
/// with the parameters.
fn call_to(func: &mut Function, cache: &mut HashMap<Type, Value>, t: Block) -> BlockCall {
    let tys: Vec<Type> = func
        .dfg
        .block_params(t)
        .iter()
        .map(|&p| func.dfg.value_type(p))
        .collect();
    let args = tys
        .into_iter()
        .map(|ty| placeholder(func, cache, ty))
        .collect::<Vec<_>>();
    BlockCall::new(t, args)
}

fn jump_to(func: &mut Function, block: Block, dest: BlockCall) -> Inst {
    let data = InstructionData::Jump {
        opcode: Opcode::Jump,
        dest,
    };
    new_inst(func, block, data, None)
}

/// Writes the graph into the kernel: new blocks for the new nodes, copies for copied
/// ones, every original terminator pointed at its slots' blocks; variable definitions
/// and uses go to `repair`.
fn materialize(
    func: &mut Function,
    g: &Graph,
    node_of: &HashMap<Block, Node>,
    repair: &mut Repair,
    edge_defs: &HashMap<Block, Vec<(Var, Value)>>,
    folded_conditions: &mut Vec<Value>,
) -> Result<(), String> {
    let exit_block = node_of
        .iter()
        .find(|&(_, &n)| n == g.exit)
        .map(|(&b, _)| b)
        .ok_or("the region has no exit block")?;
    // Blocks for every node.
    let mut block_of: SecondaryMap<Node, Option<Block>> = SecondaryMap::new();
    for n in g.nodes() {
        block_of[n] = Some(match &g.kinds[n] {
            Kind::Orig(b) | Kind::Outside(b) => *b,
            Kind::Exit => exit_block,
            // An empty block threaded past leaves the kernel; a removed node never had
            // a block.
            Kind::Removed(b) => {
                if let Some(b) = *b {
                    func.layout.remove_block(b);
                }
                continue;
            }
            // A copy (loop inversion's copied condition) is made by whoever made the
            // original: kernel code, or a block an earlier region's restructuring made.
            Kind::Copy(orig) => {
                let b = func.dfg.make_block();
                let origin = func.dfg.block_origin(*orig);
                func.dfg.set_block_origin(b, origin);
                func.layout.append_block(b);
                b
            }
            // The rest hold only the construction's control flow: the code generator
            // may drop one left as a lone jump (an empty join, most often).
            Kind::Assign(_)
            | Kind::Dispatch(_)
            | Kind::TestEq(..)
            | Kind::TestLt(..)
            | Kind::Dummy => {
                let b = func.dfg.make_pass_block();
                func.layout.append_block(b);
                b
            }
        });
    }
    let block = |n: Node| block_of[n].expect("every node has a block");
    // Predicate variables: `i1` when two-valued (a `brif` tests them), else `i32`.
    let mut pred_var: SecondaryMap<PredVar, Option<(Var, Type)>> = SecondaryMap::new();
    for (p, &values) in g.preds_values.iter() {
        let ty = if values <= 2 { Type::I1 } else { Type::I32 };
        let var = repair.add_var(ty, VarKind::Slot);
        // Zero where the region is entered, before any assignment there: a path on which
        // the graph reads a predicate it did not assign (the lanes never take it) then
        // reads that zero, and the predicate is not live above the region, whose blocks
        // the repair would otherwise search, per predicate, back to the kernel's entry.
        repair.def_at_end(block(g.entry), var, Src::Zero);
        pred_var[p] = Some((var, ty));
    }
    let pv = |p: PredVar| pred_var[p].expect("every predicate has a variable");
    let mut ph: HashMap<Type, Value> = HashMap::new();
    let mut remap: HashMap<Value, Value> = HashMap::new();
    for n in g.nodes() {
        let Some(b) = block_of[n] else {
            continue;
        };
        let succ = |i: usize| block(g.succs[n][i]);
        match &g.kinds[n] {
            Kind::Exit | Kind::Outside(_) | Kind::Removed(_) => {}
            Kind::Orig(_) if is_folded_jump(func, g, n, b) => {
                let cond = fold_branch(func, b, &g.folded[n], &pred_var, repair, &mut ph, succ(0))?;
                folded_conditions.push(cond);
            }
            Kind::Orig(_) => {
                let term = func
                    .terminator(b)
                    .ok_or_else(|| format!("{b} has no terminator"))?;
                // Assignments hoisted ahead of the branch: both edges carry them, but
                // only the lanes taking the arm they came from read them (the others
                // assign again first). So a two-valued predicate takes the branch
                // condition where that equals the value on that arm (no instruction),
                // else its negation; a wider one takes the constant.
                let cond = match func.dfg.insts[term] {
                    InstructionData::Brif { arg, .. } => Some(arg),
                    _ => None,
                };
                for &(p, value) in &g.hoisted[n] {
                    let (var, ty) = pv(p);
                    let taken = g.hoist_slot[n] == 0;
                    let at = func.layout.block_insts(b).len() - 1;
                    let src = match cond {
                        Some(c) if ty == Type::I1 && (value == 1) == taken => Src::Old(c),
                        Some(c) if ty == Type::I1 => {
                            let data = InstructionData::Unary {
                                opcode: Opcode::Bnot,
                                arg: c,
                            };
                            let inst = func.dfg.make_inst(data, Some(Type::I1));
                            func.layout.insert_inst(inst, b, at);
                            Src::Fresh(func.dfg.inst_result(inst).expect("bnot has a result"))
                        }
                        _ => {
                            let data = InstructionData::UnaryImm {
                                opcode: Opcode::Iconst,
                                imm: u64::from(value),
                            };
                            let inst = func.dfg.make_inst(data, Some(ty));
                            func.layout.insert_inst(inst, b, at);
                            Src::Fresh(func.dfg.inst_result(inst).expect("iconst has a result"))
                        }
                    };
                    repair.def_at_end(b, var, src);
                }
                let targets: Vec<Block> = (0..g.succs[n].len()).map(succ).collect();
                let data = &mut func.dfg.insts[term];
                if data.opcode() == Opcode::Return {
                    // A return the trial graph saw as an edge to the exit.
                    return Err(format!("{b} still returns"));
                }
                let dests = data.branch_destinations_mut();
                if dests.len() != targets.len() {
                    return Err(format!("{b}: terminator and graph disagree"));
                }
                let calls: Vec<Option<BlockCall>> = dests
                    .iter()
                    .zip(&targets)
                    .map(|(d, &t)| (d.block != t).then_some(t))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|t| t.map(|t| call_to(func, &mut ph, t)))
                    .collect();
                let data = &mut func.dfg.insts[term];
                for (d, c) in data.branch_destinations_mut().iter_mut().zip(calls) {
                    if let Some(c) = c {
                        *d = c;
                    }
                }
            }
            Kind::Assign(list) => {
                // On one arm of a two-way branch, every lane here took that arm, so the
                // branch condition holds a known value. When every assignment is of a
                // two-valued predicate to that value, each takes the condition itself:
                // no instruction, and the block is left a lone jump, which the code
                // generator drops. (A negation would cost what the constant costs and
                // keep the condition live longer; so would a partial copy.)
                let copies = edge_condition(func, g, n).filter(|&(_, taken)| {
                    list.iter()
                        .all(|&(p, value)| pv(p).1 == Type::I1 && (value == 1) == taken)
                });
                for &(p, value) in list {
                    let (var, ty) = pv(p);
                    let src = match copies {
                        Some((c, _)) => Src::Old(c),
                        None => {
                            let data = InstructionData::UnaryImm {
                                opcode: Opcode::Iconst,
                                imm: u64::from(value),
                            };
                            let inst = new_inst(func, b, data, Some(ty));
                            Src::Fresh(func.dfg.inst_result(inst).expect("iconst has a result"))
                        }
                    };
                    repair.def_at_end(b, var, src);
                }
                let c = call_to(func, &mut ph, succ(0));
                jump_to(func, b, c);
            }
            Kind::Dummy => {
                let c = call_to(func, &mut ph, succ(0));
                jump_to(func, b, c);
            }
            Kind::Dispatch(p) => {
                let (var, ty) = pv(*p);
                let k = g.succs[n].len();
                if k == 1 {
                    let c = call_to(func, &mut ph, succ(0));
                    jump_to(func, b, c);
                } else if k == 2 && ty == Type::I1 {
                    let arg = placeholder(func, &mut ph, ty);
                    let data = InstructionData::Brif {
                        opcode: Opcode::Brif,
                        arg,
                        dests: [
                            call_to(func, &mut ph, succ(1)),
                            call_to(func, &mut ph, succ(0)),
                        ],
                    };
                    let inst = new_inst(func, b, data, None);
                    repair.use_slot(inst, Slot::Arg(0), var);
                } else {
                    let arg = placeholder(func, &mut ph, ty);
                    let mut dests = vec![call_to(func, &mut ph, succ(k - 1))];
                    dests.extend((0..k - 1).map(|i| call_to(func, &mut ph, succ(i))));
                    let data = InstructionData::BrTable {
                        opcode: Opcode::BrTable,
                        arg,
                        dests,
                    };
                    let inst = new_inst(func, b, data, None);
                    repair.use_slot(inst, Slot::Arg(0), var);
                }
            }
            Kind::TestEq(p, c) | Kind::TestLt(p, c) => {
                let (var, ty) = pv(*p);
                let cond = if matches!(g.kinds[n], Kind::TestEq(..)) {
                    IntCC::Equal
                } else {
                    IntCC::UnsignedLessThan
                };
                let data = InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm: u64::from(*c),
                };
                let k = new_inst(func, b, data, Some(ty));
                let k = func.dfg.inst_result(k).expect("iconst has a result");
                let arg = placeholder(func, &mut ph, ty);
                let data = InstructionData::IntCompare {
                    opcode: Opcode::Icmp,
                    cond,
                    args: [arg, k],
                };
                let cmp = new_inst(func, b, data, Some(Type::I1));
                repair.use_slot(cmp, Slot::Arg(0), var);
                let t = func.dfg.inst_result(cmp).expect("icmp has a result");
                if g.succs[n].len() == 1 {
                    // Folded: the test's outcome assigns predicates.
                    assign_from(func, b, t, &g.folded[n], &pred_var, repair)?;
                    let c = call_to(func, &mut ph, succ(0));
                    jump_to(func, b, c);
                    continue;
                }
                let data = InstructionData::Brif {
                    opcode: Opcode::Brif,
                    arg: t,
                    dests: [
                        call_to(func, &mut ph, succ(0)),
                        call_to(func, &mut ph, succ(1)),
                    ],
                };
                new_inst(func, b, data, None);
            }
            Kind::Copy(orig) => {
                let orig = *orig;
                let insts: Vec<Inst> = func.layout.block_insts(orig).to_vec();
                let Some((&term, body)) = insts.split_last() else {
                    return Err(format!("{orig} is empty"));
                };
                for &i in body {
                    let mut data = func.dfg.insts[i].clone();
                    data.map_values(|v| remap.get(&v).copied().unwrap_or(v));
                    let ty = func.dfg.inst_result(i).map(|r| func.dfg.value_type(r));
                    let copy = new_inst(func, b, data, ty);
                    func.srclocs[copy] = func.srclocs[i];
                    if let (Some(old), Some(new)) =
                        (func.dfg.inst_result(i), func.dfg.inst_result(copy))
                    {
                        remap.insert(old, new);
                        if let Some(var) = repair.var_of(old) {
                            repair.def_at_end(b, var, Src::Fresh(new));
                        }
                    }
                }
                for &(var, arg) in edge_defs.get(&orig).map(Vec::as_slice).unwrap_or(&[]) {
                    let src = match remap.get(&arg) {
                        Some(&v) => Src::Fresh(v),
                        None => Src::Old(arg),
                    };
                    repair.def_at_end(b, var, src);
                }
                let mut data = func.dfg.insts[term].clone();
                data.map_values(|v| remap.get(&v).copied().unwrap_or(v));
                let targets: Vec<Block> = (0..g.succs[n].len()).map(succ).collect();
                if data.branch_destinations().len() != targets.len() {
                    return Err(format!("copy of {orig}: terminator and graph disagree"));
                }
                let calls: Vec<BlockCall> = targets
                    .into_iter()
                    .map(|t| call_to(func, &mut ph, t))
                    .collect();
                for (d, c) in data.branch_destinations_mut().iter_mut().zip(calls) {
                    *d = c;
                }
                let copy = new_inst(func, b, data, None);
                func.srclocs[copy] = func.srclocs[term];
            }
        }
    }
    Ok(())
}
