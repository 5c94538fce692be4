//! Control-flow melding (`--passes meld`): when the two sides of a divergent branch do
//! similar work, meld them so that the warp runs that work once, for all its lanes.
//!
//! The algorithm is DARM's, from "DARM: Control-Flow Melding for SIMT Thread Divergence
//! Reduction" (CGO 2022; its longer version "Control-Flow Melding"). Take the divergent
//! branch of bitonic sort (the paper's Fig. 1, lines 8–15; its Fig. 4a and 6a), in
//! warplift IR: both sides compare two elements and swap them, with opposite compares.
//!
//! ```text
//! block5:  brif v15, block6, block8           block5:  jump block13
//! block6:  v24 = icmp sgt v22, v23            block13: v24 = icmp sgt v22, v23
//!          brif v24, block7, block10                   v27 = icmp slt v22, v23
//! block7:  store global v23, v18      ==>              v30 = select v15, v24, v27
//!          store global v22, v21                       brif v30, block14, block10
//!          jump block10                       block14: store global v23, v18
//! block8:  v27 = icmp slt v22, v23                     store global v22, v21
//!          brif v27, block9, block10                   jump block10
//! block9:  store global v23, v18
//!          store global v22, v21
//!          jump block10
//! ```
//!
//! Every lane now runs the stores of its own side once, with every lane active; the
//! branch to `block14` is still divergent (it depends on the data), but the branch on
//! `v15` is gone. The steps, each in its own module:
//!
//! 1. **Meldable divergent regions** ([`region`], Section IV-B, Definition 5): a block
//!    ending in a divergent `brif` (by [`warplift_ir::divergence`]) whose successors do
//!    not post-dominate each other; each side, up to the branch's immediate
//!    post-dominator, is a closed subgraph, whose cycles each lie inside one SESE
//!    subgraph of its chain (loops meld with isomorphic loops). Simplification splits an
//!    edge into a side that takes arguments, or straight into a loop header.
//! 2. **SESE subgraphs** ([`subgraph`], Definitions 3 and 6): each side is cut into a
//!    chain of single blocks and simple regions ordered by post-dominance; two
//!    subgraphs are meldable when both are single blocks or they are isomorphic, or when
//!    one is a single block and the other a region: **region replication**
//!    ([`replicate`], Section IV-C case 2) copies the region's control structure around
//!    the block, placed at the region's block it shares most with, its branches
//!    concretized towards it, so that the two become isomorphic.
//! 3. **Profitability** ([`cost`], Section IV-C): `MP_B` of two blocks and `MP_S` of two
//!    subgraphs from a per-opcode latency table (the emulator's latency classes).
//! 4. **Subgraph alignment** ([`align`], Definition 7): the chains are aligned so that
//!    the aligned pairs, each with `MP_S` at least the `meld_threshold` setting, have the
//!    largest total profitability.
//! 5. **Instruction alignment** ([`align`]): Smith–Waterman's recurrences over the
//!    instructions of each pair of corresponding blocks, end to end, with the paper's
//!    scoring (an aligned pair saves its latency, less a `select` per differing
//!    operand; a gap run costs two branches).
//!    Memory accesses at different offsets align: the melded access adds the selected
//!    difference of the offsets to its address.
//! 6. **Melding** ([`codegen`], Algorithm 2, Section IV-D): aligned pairs become one
//!    instruction with `select`s on the branch condition for differing operands;
//!    unaligned runs go under a branch on the condition (**unpredication**, Section
//!    IV-E), so a store, atomic, load or division never runs on a lane that would not
//!    have run it; exits send each lane back to its own side unless both sides
//!    continue at the same block (perhaps through blocks that only jump on). A block of
//!    a replica that its side's lanes never run melds by taking its partner as it is.
//! 7. **Post-processing** ([`post`], Section IV-F): selects of equal operands, trivially
//!    uniform branches and forwarding blocks left by melding are removed; chains of
//!    melded blocks are merged (a join's parameters replaced by the jump's arguments);
//!    selects whose operands are defined before a melded loop leave it, and
//!    `select c, op(y, k), y` becomes `op(y, select c, k, e)` with `e` the identity.
//!
//! As Algorithm 1, the pass repeats until no region offers a profitable pair, visiting
//! regions in reverse post-order (an enclosing region before those inside it); one pair
//! per region is melded per sweep (a pair the cost model declines is left out and the
//! chains aligned again, so the next best pair gets its turn) (the rest of the region becomes the two regions before
//! and after the melded subgraph, aligned again on the next sweep), and regions that
//! share no block are melded in the same sweep. Before melding a pair, the cost model
//! ([`cost::Timing`]) times a warp through the two sides as they are and through the
//! melded code as [`codegen`] will make it (selects, address arithmetic, unpredication
//! branches and exits included), as the emulator issues instructions, expecting the
//! branch to diverge half the time — or, when its condition is a function of the
//! thread index and the block size, as often as it splits a warp at the block sizes
//! the pass considers, in warps of the machine's width when it is told it
//! ([`cost::divergent_share`]): the pair is melded only when that is
//! faster and
//! takes no more issue slots, or the region is left unchanged. With `meld_threshold=0`
//! every meldable pair that aligns at least one instruction (or two empty blocks whose
//! sides go on to the same blocks) is melded, profitable or not, as the paper's sensitivity study does. Once every region is
//! melded, each melded region's chain of jumps is merged into straight-line blocks.
//!
//! The `meld_branch_fusion` setting restricts melding to diamonds whose arms are single
//! blocks jumping to the join — branch fusion, the baseline the paper compares with
//! (Section VI-A).

pub mod align;
pub mod codegen;
pub mod cost;
pub mod post;
pub mod region;
pub mod replicate;
pub mod subgraph;

use crate::analysis::{AnalysisCache, Preserved};
use crate::passes::{IrPass, PassError, PassReport};
use crate::settings::Settings;
use align::{align_insts, align_subgraphs, body, Step};
use cost::{latency, Timing, BRANCH_LATENCY, SELECT_LATENCY};
use std::collections::{HashMap, HashSet};
use subgraph::Subgraph;
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree, PostDominatorTree};
use warplift_ir::divergence::Divergence;
use warplift_ir::{Block, Function, Inst, Opcode, Value, ValueDef};

/// The `meld` IR pass.
pub struct Meld;

impl IrPass for Meld {
    fn name(&self) -> &'static str {
        "meld"
    }

    fn description(&self) -> &'static str {
        "Control-flow melding: meld similar subgraphs of divergent if-then-else regions (paper: DARM, CGO 2022)"
    }

    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        &[
            &[],
            &[("meld_threshold", "0")],
            &[("meld_threshold", "0"), ("meld_if_convert", "false")],
            &[("meld_branch_fusion", "true")],
            &[("block_size_hint", "32")],
            &[("block_size_hint", "64"), ("warp_width_hint", "64")],
        ]
    }

    fn run(
        &self,
        func: &mut Function,
        _analyses: &mut AnalysisCache,
        settings: &Settings,
    ) -> Result<PassReport, PassError> {
        // Melding recomputes its analyses after every sweep (each meld changes the CFG),
        // so it takes none from the cache.
        Ok(meld(func, &Options::from_settings(settings)).report())
    }

    /// A run that melded nothing left the kernel as it was.
    fn preserved(&self, report: &PassReport) -> Preserved {
        if report.get("regions melded") == Some(0) {
            Preserved::ALL
        } else {
            Preserved::NOTHING
        }
    }
}

/// What the pass may do.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Options {
    /// The least `MP_S` of a melded pair (0 to 1; 0 melds every meldable pair).
    pub threshold: f64,
    /// Meld only diamonds with single-block arms (branch fusion).
    pub branch_fusion: bool,
    /// Blocks with more instructions than this are not aligned.
    pub align_limit: usize,
    /// Short runs of unaligned instructions that cannot fault stay in the melded block.
    pub if_convert: bool,
    /// The launch's threads per block in x, when known (`block_size_hint`): branches on
    /// the thread index are judged at this block size alone.
    pub block_size: Option<u64>,
    /// The machine's warp width, when known (`warp_width_hint`): branches on the thread
    /// index are judged in warps of this many lanes (32 when unknown).
    pub warp_width: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options::from_settings(&Settings::default())
    }
}

impl Options {
    /// The options the `meld_*` settings give.
    pub fn from_settings(s: &Settings) -> Options {
        Options {
            threshold: s.meld_threshold.as_f64(),
            branch_fusion: s.meld_branch_fusion,
            align_limit: s.meld_align_limit as usize,
            if_convert: s.meld_if_convert,
            block_size: (s.block_size_hint > 0).then_some(u64::from(s.block_size_hint)),
            warp_width: (s.warp_width_hint > 0).then_some(u64::from(s.warp_width_hint)),
        }
    }
}

/// What the pass did to one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Meldable divergent regions examined, summed over the sweeps (a region left as it
    /// was is examined again in the next sweep while other regions change).
    pub regions: u64,
    /// Subgraph pairs melded.
    pub melded: u64,
    /// Of those, pairs of a single block and a region melded by region replication.
    pub replicated: u64,
    /// Blocks made by melding two blocks.
    pub melded_blocks: u64,
    /// Instruction pairs melded into one.
    pub aligned: u64,
    /// `select`s added.
    pub selects: u64,
    /// Blocks added to run unaligned instructions under a branch (unpredication).
    pub unpredicated: u64,
    /// Blocks made by melding that are still in the kernel, in order of creation (what
    /// `warplift cfg --dot --after meld` highlights).
    pub melded_block_ids: Vec<Block>,
    /// The unpredicated blocks still in the kernel.
    pub unpredicated_block_ids: Vec<Block>,
}

impl Stats {
    /// The statistics as a pass report.
    pub fn report(&self) -> PassReport {
        PassReport {
            counts: vec![
                ("divergent regions", self.regions),
                ("regions melded", self.melded),
                ("regions replicated", self.replicated),
                ("melded blocks", self.melded_blocks),
                ("instructions aligned", self.aligned),
                ("selects", self.selects),
                ("unpredicated blocks", self.unpredicated),
            ],
        }
    }
}

/// Runs control-flow melding on `func`.
pub fn meld(func: &mut Function, opts: &Options) -> Stats {
    let mut stats = Stats::default();
    let mut melded_ids: Vec<Block> = Vec::new();
    let mut unpred_ids: Vec<Block> = Vec::new();
    let mut created: Vec<Block> = Vec::new();
    // The entries and joins of melded regions, where straight-line chains are merged.
    let mut chains: Vec<Block> = Vec::new();
    // Region simplification splits edges before it knows whether any pair will pay; a run
    // that melds nothing hands the kernel back exactly as it came.
    let original = func.clone();
    // Every sweep melds at least one pair, which removes at least one block or one
    // instruction from the sides of divergent regions; the bound only guards time.
    let max_sweeps = 4 * func.layout.num_blocks() + func.num_placed_insts() + 16;
    for _ in 0..max_sweeps {
        simplify(func);
        let cfg = ControlFlowGraph::compute(&*func);
        let postdom = PostDominatorTree::compute(&cfg);
        let domtree = DominatorTree::compute(&cfg);
        let divergence = Divergence::compute(func);
        let mut touched: HashSet<Block> = HashSet::new();
        let mut changed = false;
        // In the order of Algorithm 1 ("for BB in F"): an enclosing region before the
        // regions inside its sides, so that SB4's D2 melds with the region D3 → D4, D5 by
        // replication before D4 and D5 meld with each other.
        for entry in cfg.reverse_post_order() {
            if touched.contains(&entry) || !divergence.is_divergent_branch(entry) {
                continue;
            }
            let Some(done) = meld_region(
                func,
                &cfg,
                (&postdom, &domtree, &divergence),
                entry,
                opts,
                &touched,
            ) else {
                continue;
            };
            stats.regions += 1;
            let Some((region_blocks, m, replicated)) = done else {
                continue;
            };
            stats.replicated += u64::from(replicated);
            chains.extend([region_blocks[0], region_blocks[1]]);
            touched.extend(region_blocks);
            touched.extend(m.created.iter().copied());
            stats.melded += 1;
            stats.melded_blocks += m.melded_blocks.len() as u64;
            stats.aligned += m.aligned;
            stats.selects += m.selects;
            stats.unpredicated += m.unpredicated.len() as u64;
            melded_ids.extend(m.melded_blocks.iter().copied());
            unpred_ids.extend(m.unpredicated.iter().copied());
            let mut scope = vec![entry];
            scope.extend(m.created.iter().copied());
            post::cleanup(func, &scope, &scope);
            created.extend(m.created.iter().copied());
            changed = true;
        }
        if !changed {
            break;
        }
    }
    if stats.melded == 0 {
        *func = original;
        return stats;
    }
    if !created.is_empty() {
        // The forwarding blocks melding left, now that every predecessor is known.
        let all: Vec<Block> = func.layout.blocks().to_vec();
        post::cleanup(func, &created, &all);
    }
    chains.extend(created.iter().copied());
    let merged = post::merge_chains(func, &chains);
    // A block merged into another is now part of it.
    let into = |mut b: Block| {
        while let Some(&c) = merged.get(&b) {
            b = c;
        }
        b
    };
    // Selects in melded loops whose operands are defined before the loop.
    let mut scope: Vec<Block> = Vec::new();
    let mut in_scope = HashSet::new();
    for &b in &chains {
        let b = into(b);
        if func.layout.is_block_inserted(b) && in_scope.insert(b) {
            scope.push(b);
        }
    }
    post::hoist_selects(func, &scope);
    let mut seen = HashSet::new();
    stats.melded_block_ids = melded_ids
        .into_iter()
        .map(into)
        .filter(|&b| func.layout.is_block_inserted(b) && seen.insert(b))
        .collect();
    stats.unpredicated_block_ids = unpred_ids
        .into_iter()
        .map(into)
        .filter(|&b| func.layout.is_block_inserted(b) && seen.insert(b))
        .collect();
    stats
}

/// Region simplification: a divergent-looking two-way branch whose successor takes
/// arguments and has the branch's block as its only predecessor gets a block of its own
/// on that edge, so that each side starts with a block without parameters. So does a
/// divergent branch straight into a loop header whose other predecessors are its back
/// edges (a side that starts with a loop, as once a melded block before two loops sends
/// each lane back to its own side's loop): the side then starts with a block of its own
/// and the loop is a subgraph of its chain.
fn simplify(func: &mut Function) {
    let cfg = ControlFlowGraph::compute(&*func);
    let domtree = DominatorTree::compute(&cfg);
    // Computed only if some branch goes straight into a loop header.
    let mut divergence: Option<Divergence> = None;
    let blocks: Vec<Block> = func.layout.blocks().to_vec();
    // The new blocks, each with the block it is to follow.
    let mut moves: Vec<(Block, Block)> = Vec::new();
    for b in blocks {
        let Some(t) = func.terminator(b) else {
            continue;
        };
        if func.inst(t).opcode() != Opcode::Brif {
            continue;
        }
        let dests: Vec<Block> = func
            .inst(t)
            .branch_destinations()
            .iter()
            .map(|c| c.block)
            .collect();
        if dests[0] == dests[1] {
            continue;
        }
        for (k, &d) in dests.iter().enumerate() {
            let header = d != b
                && cfg.preds(d).iter().filter(|&&p| p == b).count() == 1
                && cfg.preds(d).len() > 1
                && cfg
                    .preds(d)
                    .iter()
                    .all(|&p| p == b || domtree.dominates(d, p))
                && divergence
                    .get_or_insert_with(|| Divergence::compute(func))
                    .is_divergent_branch(b);
            if (cfg.preds(d) == [b] && !func.dfg.block_params(d).is_empty()) || header {
                moves.push((region::split_edge_unplaced(func, b, k), b));
            }
        }
    }
    // Each new block right after its branch's block, the second split of a branch
    // before the first: the order that placing each one as it is made would give.
    func.layout.move_blocks_after(&moves);
}

/// The outcome of one region: `None` when it is not a meldable divergent region;
/// `Some(None)` when nothing in it is melded; otherwise the region's blocks before
/// melding, what the melding did, and whether it replicated a region.
type RegionOutcome = Option<Option<(Vec<Block>, codegen::Melded, bool)>>;

/// Examines the region headed by `entry` and melds its first profitable pair.
fn meld_region(
    func: &mut Function,
    cfg: &ControlFlowGraph<Block>,
    (postdom, domtree, divergence): (
        &PostDominatorTree<Block>,
        &DominatorTree<Block>,
        &Divergence,
    ),
    entry: Block,
    opts: &Options,
    touched: &HashSet<Block>,
) -> RegionOutcome {
    let (cond, join, [t, f]) = region::candidate(func, postdom, entry)?;
    let guards = cost::guards(func, cfg, domtree, entry);
    let shares = cost::divergent_share(
        func,
        divergence,
        cond,
        &guards,
        opts.block_size,
        opts.warp_width,
    );
    if touched.contains(&join) {
        return None;
    }
    let st = region::side(func, cfg, entry, t, join)?;
    let sf = region::side(func, cfg, entry, f, join)?;
    if st
        .blocks
        .iter()
        .any(|b| sf.blocks.contains(b) || touched.contains(b))
        || sf.blocks.iter().any(|b| touched.contains(b))
    {
        return None;
    }
    let ct = subgraph::chain(func, cfg, postdom, &st.blocks, t, join)?;
    let cf = subgraph::chain(func, cfg, postdom, &sf.blocks, f, join)?;
    if opts.branch_fusion
        && !(ct.len() == 1
            && cf.len() == 1
            && ct[0].is_block()
            && cf[0].is_block()
            && !ct[0].is_cyclic(cfg)
            && !cf[0].is_cyclic(cfg))
    {
        return Some(None);
    }
    // The helpers take the kernel as an argument: replication changes it in place.
    let too_big = |func: &Function, s: &Subgraph| {
        s.blocks
            .iter()
            .any(|&b| func.layout.block_insts(b).len() > opts.align_limit)
    };
    // A single block against a larger region of the other side: region replication.
    let replication = |func: &Function, i: usize, j: usize| -> Option<(usize, replicate::Plan)> {
        // A replica's concretized branches are made for acyclic regions only.
        if opts.branch_fusion || ct[i].is_cyclic(cfg) || cf[j].is_cyclic(cfg) {
            return None;
        }
        replicate::plan(func, &ct[i], &cf[j], &st.blocks)
            .map(|p| (0, p))
            .or_else(|| replicate::plan(func, &cf[j], &ct[i], &sf.blocks).map(|p| (1, p)))
    };
    let score = |func: &Function, i: usize, j: usize| {
        if too_big(func, &ct[i]) || too_big(func, &cf[j]) {
            return None;
        }
        let mp = match subgraph::correspondence(func, &ct[i], &cf[j]) {
            Some(pairs) => cost::mp_subgraph(func, &pairs),
            None => replication(func, i, j)?.1.mp,
        };
        (mp >= opts.threshold).then_some(mp)
    };
    // A pair the cost model declines is left out and the chains aligned again, so that
    // the next best pairs get their turn (each round declines at least one pair).
    let mut declined: HashSet<(usize, usize)> = HashSet::new();
    loop {
        let alignment = align_subgraphs(ct.len(), cf.len(), |i, j| {
            if declined.contains(&(i, j)) {
                None
            } else {
                score(func, i, j)
            }
        });
        if alignment.is_empty() {
            return Some(None);
        }
        for (i, j) in alignment {
            // With replication, the replica is made in place and taken back unless the
            // cost model accepts the melding.
            let mut trial: Option<(replicate::Replica, usize)> = None;
            let pairs = match subgraph::correspondence(func, &ct[i], &cf[j]) {
                Some(pairs) => pairs,
                None => {
                    let Some((side, plan)) = replication(func, i, j) else {
                        declined.insert((i, j));
                        continue;
                    };
                    let (single, region) = if side == 0 {
                        (&ct[i], &cf[j])
                    } else {
                        (&cf[j], &ct[i])
                    };
                    let rep = replicate::replicate(func, cfg, single, region, &plan);
                    let subs = if side == 0 {
                        [&rep.subgraph, &cf[j]]
                    } else {
                        [&ct[i], &rep.subgraph]
                    };
                    let Some(pairs) = subgraph::correspondence(func, subs[0], subs[1]) else {
                        replicate::undo(func, &rep);
                        declined.insert((i, j));
                        continue;
                    };
                    trial = Some((rep, side));
                    pairs
                }
            };
            let target: &Function = func;
            let melded_subs: [&Subgraph; 2] = match &trial {
                Some((rep, 0)) => [&rep.subgraph, &cf[j]],
                Some((rep, _)) => [&ct[i], &rep.subgraph],
                None => [&ct[i], &cf[j]],
            };
            let absent = trial
                .as_ref()
                .map(|t| t.0.absent.clone())
                .unwrap_or_default();
            // Values melding makes one need no select: the parameters of corresponding
            // blocks, and the results aligned in the blocks before (pairs come
            // dominators first).
            let mut same: HashMap<Value, Value> = HashMap::new();
            for &(a, b) in &pairs {
                let (pa, pb) = (target.dfg.block_params(a), target.dfg.block_params(b));
                same.extend(pa.iter().copied().zip(pb.iter().copied()));
            }
            let steps: Vec<Vec<Step>> = pairs
                .iter()
                .map(|&(a, b)| {
                    let (ia, ib) = (body(target, a), body(target, b));
                    let steps = align_insts(target, &ia, &ib, &same, cond);
                    for step in &steps {
                        if let Step::Match(i, j) = *step {
                            if let (Some(x), Some(y)) =
                                (target.dfg.inst_result(ia[i]), target.dfg.inst_result(ib[j]))
                            {
                                same.insert(x, y);
                            }
                        }
                    }
                    steps
                })
                .collect();
            let verdict = Verdict {
                pairs: &pairs,
                steps: &steps,
                subgraphs: melded_subs,
                original: [&ct[i], &cf[j]],
                absent: &absent,
                shares,
                first: i == 0 && j == 0,
            };
            if !worth_it(target, &verdict, cond, opts) {
                if let Some((rep, _)) = &trial {
                    replicate::undo(func, rep);
                }
                declined.insert((i, j));
                continue;
            }
            let before = [
                ct[..i]
                    .iter()
                    .flat_map(|s| s.blocks.iter().copied())
                    .collect(),
                cf[..j]
                    .iter()
                    .flat_map(|s| s.blocks.iter().copied())
                    .collect(),
            ];
            let after = [
                ct[i + 1..]
                    .iter()
                    .flat_map(|s| s.blocks.iter().copied())
                    .collect(),
                cf[j + 1..]
                    .iter()
                    .flat_map(|s| s.blocks.iter().copied())
                    .collect(),
            ];
            let mut region_blocks: Vec<Block> = vec![entry, join];
            region_blocks.extend(st.blocks.iter().copied());
            region_blocks.extend(sf.blocks.iter().copied());
            let replicated = trial.is_some();
            let subgraphs: [Subgraph; 2] = [melded_subs[0].clone(), melded_subs[1].clone()];
            let sides = codegen::Sides {
                cond,
                entry,
                subgraphs: [&subgraphs[0], &subgraphs[1]],
                before,
                after,
                absent,
                shares,
            };
            let m = codegen::meld(func, &sides, &pairs, &steps, opts.if_convert);
            return Some(Some((region_blocks, m, replicated)));
        }
    }
}

/// The cost model's verdict on melding two subgraphs with these block pairs and
/// instruction alignments ([`cost`]): the expected time of a warp through the two
/// subgraphs as they are (both, one after the other, when the branch diverges; one of
/// them when it does not) against its expected time through the melded code as
/// [`codegen`] will make it — the selects of differing operands, the address arithmetic
/// of differing offsets, the branches and jumps of unpredicated runs (both arms when the
/// branch diverges, one when it does not), the melded terminators and the exit branch
/// sending lanes back to their sides. With a zero threshold, any pair that aligns an
/// instruction (or pairs empty blocks) is melded.
/// What [`worth_it`] judges.
struct Verdict<'a> {
    /// The corresponding blocks of the subgraphs as melded.
    pairs: &'a [(Block, Block)],
    /// The instruction alignment of each pair.
    steps: &'a [Vec<Step>],
    /// The subgraphs melded (a replica in place of a single block).
    subgraphs: [&'a Subgraph; 2],
    /// The subgraphs as they are (a single block where a replica is melded).
    original: [&'a Subgraph; 2],
    /// The blocks of a replica that their side's lanes never run.
    absent: &'a HashSet<Block>,
    /// How often the region's branch diverges or goes one way ([`cost::divergent_share`]).
    shares: cost::Shares,
    /// Whether the subgraphs begin their sides: melded, the region's branch goes to one
    /// block on both edges and is removed (post-processing), its issue and latency saved.
    first: bool,
}

fn worth_it(func: &Function, v: &Verdict, cond: Value, opts: &Options) -> bool {
    let (pairs, steps, subgraphs) = (v.pairs, v.steps, v.subgraphs);
    let matches = steps.iter().flatten().any(|s| matches!(s, Step::Match(..)));
    let empty = pairs
        .iter()
        .all(|&(a, b)| body(func, a).is_empty() && body(func, b).is_empty());
    // Empty blocks meld only where the sides go on to the same blocks: melding two
    // empty blocks that send each lane back to its own side would leave an exit
    // branch where the region's branch was, a region of the same shape again, melded
    // again on the next sweep. (The cost model would count the region's branch as
    // removed and the exit branch as added: no gain, but none lost either, and with the
    // branch divergent every time, as LUD's at a known block size of 16 or 32, moving
    // the loops' initial values into selected arguments looked a hair faster.)
    let inside: HashSet<Block> = subgraphs[0].blocks.iter().copied().collect();
    let converge = pairs.iter().all(|&(a, b)| {
        let (Some(ta), Some(tb)) = (func.terminator(a), func.terminator(b)) else {
            return false;
        };
        func.inst(ta)
            .branch_destinations()
            .iter()
            .zip(func.inst(tb).branch_destinations())
            .all(|(x, y)| {
                inside.contains(&x.block)
                    || codegen::resolve(func, x).block == codegen::resolve(func, y).block
            })
    });
    if empty && !converge {
        return false;
    }
    if opts.threshold <= 0.0 {
        return matches || empty;
    }
    // As they are: each side alone; a divergent warp runs both and reconverges.
    let alone = |s: &Subgraph| {
        let mut t = Timing::default();
        t.run_blocks(func, &s.blocks);
        t
    };
    let (t, f) = (alone(v.original[0]), alone(v.original[1]));
    let share = v.shares;
    // The region's branch, when melding removes it: one issue and a taken branch.
    let (entry_cycles, entry_issues) = if v.first {
        (u64::from(BRANCH_LATENCY), 1)
    } else {
        (0, 0)
    };
    let before = (
        share.expected(
            t.now() + f.now() + u64::from(BRANCH_LATENCY),
            t.now(),
            f.now(),
        ) + entry_cycles as f64,
        share.expected(t.issued() + f.issued(), t.issued(), f.issued()) + entry_issues as f64,
    );
    let inside: HashSet<Block> = subgraphs[0].blocks.iter().copied().collect();
    // Values defined in the kernel's entry block: a select or address of those alone is
    // placed there by codegen, run once, not in the region.
    let entry = func.layout.entry_block();
    let at_entry = |v: Value| match func.dfg.value_def(v) {
        ValueDef::Result(i) => func.layout.inst_block(i) == entry,
        ValueDef::Param(b, _) => Some(b) == entry,
    };

    // Melded: three timelines, the branch divergent, all lanes true, all lanes false.
    let mut sims: [Timing; 3] = Default::default();
    // Values of the two sides that melding makes one (parameters of corresponding
    // blocks, results of aligned pairs): operands that need no select.
    let mut same: HashMap<Value, Value> = HashMap::new();
    for &(a, b) in pairs {
        for (&x, &y) in func
            .dfg
            .block_params(a)
            .iter()
            .zip(func.dfg.block_params(b))
        {
            same.insert(x, y);
        }
    }
    let differ =
        |same: &HashMap<Value, Value>, x: Value, y: Value| x != y && same.get(&x) != Some(&y);
    let alu = SELECT_LATENCY;
    // An operand pair as the melded code reads it: `x`, or a select issued now.
    let operand = |sim: &mut Timing, same: &HashMap<Value, Value>, x: Value, y: Value| {
        if differ(same, x, y) && !(at_entry(cond) && at_entry(x) && at_entry(y)) {
            let r = [sim.ready(cond), sim.ready(x), sim.ready(y)];
            sim.issue(r, alu)
        } else {
            sim.ready(x)
        }
    };
    // Who reads each value, in the blocks being melded.
    let mut readers: HashMap<Value, Vec<Inst>> = HashMap::new();
    for &(a, b) in pairs {
        for blk in [a, b] {
            for &i in func.layout.block_insts(blk) {
                for x in func.inst(i).all_values() {
                    readers.entry(x).or_default().push(i);
                }
            }
        }
    }
    for (&(a, b), steps) in pairs.iter().zip(steps) {
        if v.absent.contains(&a) || v.absent.contains(&b) {
            // Run as it was, by the lanes of its own side only.
            let (present, skip) = if v.absent.contains(&a) {
                (b, 1)
            } else {
                (a, 2)
            };
            for (k, sim) in sims.iter_mut().enumerate() {
                if k != skip {
                    sim.run_blocks(func, &[present]);
                }
            }
            continue;
        }
        let (ia, ib) = (body(func, a), body(func, b));
        // Addresses made for differing offsets in this block pair, as codegen shares them.
        let mut addresses: HashMap<(Value, Value, i64, i64), [u64; 3]> = HashMap::new();
        let mut run: (Vec<Inst>, Vec<Inst>) = (Vec::new(), Vec::new());
        // The results of a run read outside it (by the pair's blocks): the values the
        // unpredication tail carries.
        let escaping = |list: &Vec<Inst>| -> usize {
            list.iter()
                .filter_map(|&i| func.dfg.inst_result(i))
                .filter(|r| {
                    readers
                        .get(r)
                        .is_some_and(|us| us.iter().any(|u| !list.contains(u)))
                })
                .count()
        };
        let close = |sims: &mut [Timing; 3], run: &mut (Vec<Inst>, Vec<Inst>)| {
            if run.0.is_empty() && run.1.is_empty() {
                return;
            }
            let zeros = [escaping(&run.1), escaping(&run.0)];
            let cheap = codegen::speculate(func, &run.0, &run.1, zeros, share, opts.if_convert);
            // Speculated, the run issues in the order codegen gives it.
            let speculated = if cheap {
                cost::speculated_order(func, &run.0, &run.1)
            } else {
                Vec::new()
            };
            for (k, sim) in sims.iter_mut().enumerate() {
                if cheap {
                    for &i in &speculated {
                        sim.run(func, i);
                    }
                    continue;
                }
                // `brif c`, then each side's arm (its instructions and a jump to the
                // tail) on the lanes that take it.
                let r = sim.ready(cond);
                sim.issue([r], alu);
                sim.transfer();
                for (side, list) in [&run.0, &run.1].into_iter().enumerate() {
                    if (k == 1 && side == 1) || (k == 2 && side == 0) {
                        continue;
                    }
                    // The tail's parameters this path fills with the zero of a value the
                    // other arm defines: a move each (on an edge of its own where the
                    // side has no arm).
                    let zeros = escaping(if side == 0 { &run.1 } else { &run.0 });
                    if list.is_empty() {
                        if zeros > 0 {
                            for _ in 0..zeros {
                                sim.issue([], alu);
                            }
                            sim.issue([], alu);
                            sim.transfer();
                        }
                        continue;
                    }
                    for &i in list {
                        sim.run(func, i);
                    }
                    for _ in 0..zeros {
                        sim.issue([], alu);
                    }
                    sim.issue([], alu);
                    sim.transfer();
                }
            }
            run.0.clear();
            run.1.clear();
        };
        for step in steps {
            match *step {
                Step::GapA(i) => run.0.push(ia[i]),
                Step::GapB(j) => run.1.push(ib[j]),
                Step::Match(i, j) => {
                    close(&mut sims, &mut run);
                    let (da, db) = (func.inst(ia[i]), func.inst(ib[j]));
                    let addr = align::address(da).zip(align::address(db));
                    let mut at = [0u64; 3];
                    let moved = addr.filter(|((oa, _), (ob, _))| oa != ob);
                    for (k, sim) in sims.iter_mut().enumerate() {
                        let mut ops: Vec<u64> = da
                            .args()
                            .iter()
                            .zip(db.args())
                            .enumerate()
                            .map(|(n, (&x, &y))| match moved {
                                Some(((_, m), _)) if m == n => 0,
                                _ => operand(sim, &same, x, y),
                            })
                            .collect();
                        if let Some(((oa, n), (ob, _))) = moved {
                            let low = oa.min(ob);
                            let (x, y) = (da.args()[n], db.args()[n]);
                            let key = (
                                x,
                                y,
                                i64::from(oa) - i64::from(low),
                                i64::from(ob) - i64::from(low),
                            );
                            // Placed in the entry block when the condition and the base
                            // are defined there.
                            let hoisted = at_entry(cond) && x == y && at_entry(x);
                            ops[n] = match addresses.get(&key) {
                                Some(t) => t[k],
                                None if hoisted => 0,
                                None => {
                                    let base = operand(sim, &same, x, y);
                                    let r = sim.ready(cond);
                                    let d = sim.issue([r], alu);
                                    sim.issue([base, d], alu)
                                }
                            };
                            addresses.entry(key).or_insert([0; 3])[k] = ops[n];
                        }
                        at[k] = sim.issue(ops, latency(da));
                    }
                    if let (Some(x), Some(y)) =
                        (func.dfg.inst_result(ia[i]), func.dfg.inst_result(ib[j]))
                    {
                        same.insert(x, y);
                        for (sim, &t) in sims.iter_mut().zip(&at) {
                            sim.define(x, t);
                            sim.define(y, t);
                        }
                    }
                }
            }
        }
        close(&mut sims, &mut run);
        // The melded terminator: selects of differing condition and arguments; an exit
        // to different continuations goes through a branch on the condition.
        let (Some(ta), Some(tb)) = (func.terminator(a), func.terminator(b)) else {
            continue;
        };
        let (da, db) = (func.inst(ta), func.inst(tb));
        let exits = da
            .branch_destinations()
            .iter()
            .zip(db.branch_destinations())
            .any(|(x, y)| {
                !inside.contains(&x.block)
                    && codegen::resolve(func, x).block != codegen::resolve(func, y).block
            });
        for sim in sims.iter_mut() {
            let ops: Vec<u64> = da
                .all_values()
                .zip(db.all_values())
                .map(|(x, y)| operand(sim, &same, x, y))
                .collect();
            sim.issue(ops, alu);
            sim.transfer();
            if exits {
                let r = sim.ready(cond);
                sim.issue([r], alu);
                sim.transfer();
            }
        }
    }
    let after = (
        share.expected(sims[0].now(), sims[1].now(), sims[2].now()),
        share.expected(sims[0].issued(), sims[1].issued(), sims[2].issued()),
    );
    // Faster alone, and no more of the SM's issue slots: with other warps to hide its
    // stalls, a warp's time is its issues; alone, it is its latencies.
    let pays = after.0 < before.0 && after.1 <= before.1;
    // At a block size where the branch splits no warp, melding saves nothing and costs
    // what the melded code takes beyond the side a warp runs: at most 1%, the bound the
    // pass promises for every launch. (LUD's solving loops, melded, run an address
    // addition more per iteration than either side alone: 0.958x at block 64, warp
    // width 32, where `tid < block_dim / 2` is uniform in every warp.)
    let bounded = |uniform: bool, melded: &Timing, alone: &Timing| {
        !uniform || melded.now() * 100 <= (alone.now() + entry_cycles) * 101
    };
    pays && bounded(share.uniform_at[0], &sims[1], &t) && bounded(share.uniform_at[1], &sims[2], &f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::parser::parse_functions;

    /// The block a block made by [`simplify`] jumps to.
    fn jump_target(func: &Function, b: Block) -> Block {
        let t = func.terminator(b).unwrap();
        assert_eq!(func.inst(t).opcode(), Opcode::Jump);
        func.inst(t).branch_destinations()[0].block
    }

    /// The blocks [`simplify`] makes land where placing each one after its branch's block
    /// as it is made would put them: both splits of one branch right after it, the second
    /// destination's first, and a loop exit's split right after the loop's branch.
    #[test]
    fn simplify_places_split_blocks_after_their_branch() {
        let text = "kernel %k(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 0
    v3 = icmp slt v1, v2
    brif v3, block1(v1), block2(v2)
block1(v4: i32):
    jump block3(v4)
block2(v5: i32):
    jump block3(v5)
block3(v6: i32):
    v7 = iconst.i32 1
    v8 = iadd v6, v7
    v9 = icmp slt v8, v1
    brif v9, block3(v8), block4(v8)
block4(v10: i32):
    return
}
";
        let mut func = parse_functions(text).unwrap().remove(0);
        let old: Vec<Block> = func.layout.blocks().to_vec();
        simplify(&mut func);
        let order = func.layout.blocks();
        assert_eq!(order.len(), old.len() + 3);
        assert_eq!(order[0], old[0]);
        assert_eq!(jump_target(&func, order[1]), old[2]);
        assert_eq!(jump_target(&func, order[2]), old[1]);
        assert_eq!(order[3..6], old[1..4]);
        assert_eq!(jump_target(&func, order[6]), old[4]);
        assert_eq!(order[7], old[4]);
    }
}
