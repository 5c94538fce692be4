//! Common Subexpression Convergence (`--passes converge`): moves the expressions that both
//! arms of a divergent branch compute out of the arms, to where the warp runs converged.
//!
//! The algorithm is that of "Common Subexpression Convergence: A New Code Optimization
//! for SIMT Processors" (Algorithm 1), made fully automatic. On a SIMT machine the two
//! arms of a divergent branch run one after the other, each with part of the warp; an
//! instruction both arms execute is issued twice at half efficiency. Executed once before
//! the branch (Hoist) or once after the arms reconverge (Sink), it is issued once with
//! every lane active. Take Listing 1.7 of the paper, in warplift IR:
//!
//! ```text
//! block0:                              block0:
//!     brif v0, block1, block2              v9 = select v0, v1, v3   ; renamed operand
//! block1:                                  v10 = imul v9, v2        ; hoisted
//!     v5 = imul v1, v2     ; b * c         brif v0, block1, block2
//!     jump block3(v5)                  block1:
//! block2:                       ==>        jump block3(v10)
//!     v6 = imul v3, v2     ; d * c     block2:
//!     jump block3(v6)                      jump block3(v10)
//! ```
//!
//! Each divergent branch (by [`warplift_ir::divergence`]; [`DivergentBranches`] proves
//! most kernels' branches divergent from their conditions without the whole analysis)
//! is visited innermost first (post-order), as the paper's bottom-up walk of the program
//! structure tree does:
//!
//! 0. **Unify** ([`unify`], Listing 1.12): when the two sides are one code up to renamed
//!    operands (a compare's condition code may be swapped, `x < y` being `y > x`), the
//!    branch goes and both kinds of lanes run one copy, each differing operand a `select`
//!    on the condition — made when the removed side's latencies exceed the `select`s'.
//! 1. **Expression DAGs** ([`dag`]): the entry blocks of the two sides, when the branch is
//!    their only predecessor (every lane of a side runs its entry block exactly once).
//! 2. **Matching** ([`matching`]): the dynamic-programming table `T(i, j)` of Section 3.1
//!    with the benefit of a pair weighted by the emulator's latency of its opcode
//!    ([`cost`]) and a cost per renamed operand of what the warp issues for it (a
//!    `select` before the branch, a move in each arm for a join parameter); roots are
//!    chosen as in Algorithm 1 and kept when their profit exceeds the
//!    `converge_threshold` setting, loads whose latency the arm hides behind another
//!    load earning nothing (a tie, or a hidden load, is paid by warps that do not
//!    diverge at run time, and by the path before the branch).
//! 3. **Legality** ([`pdg`]): data dependences are the DAG's edges (a pair hoists only with
//!    the operands it depends on in the arm, or none); memory dependences keep a load
//!    behind the stores, atomics and barriers of its arm that may touch its bytes; stores,
//!    atomics and barriers never move.
//! 4. **Hoist** ([`hoist`]) to the end of the branch's block, operands renamed by `select`.
//! 5. **Sink** ([`sink`]): when the branch's reconvergence point has exactly the two
//!    blocks that jump to it as predecessors, the same matching over those blocks (rooted
//!    at the values they pass to it) moves pairs to its start, operands renamed through
//!    new block parameters. A pair sinks only when nothing but sunk pairs and the jump
//!    reads it (Listing 1.3 sinks, Listing 1.5 — whose one arm uses the product — does
//!    not).
//!
//! Every transformation keeps each lane's own sequence of operations and values: a lane
//! runs the merged instruction where it ran its arm's copy, with its arm's operands. So
//! nothing runs on a lane that would not have run it (no speculation: a load that may
//! fault, or a division, never reaches another lane), and the SIMT efficiency cannot
//! decrease — the paper's guarantee for all three transformations. Moves are only out of
//! the arms, never into one.
//!
//! 6. **Multi-way** ([`multiway`]): a reconvergence point with three or more predecessors
//!    ending in jumps to it (a divergent `br_table`, or a cascade of `brif`s) gets the
//!    expressions common to all of them, matched arm by arm against the first; the arms
//!    of a divergent `br_table` hoist to it what they all compute alike, an operand that
//!    differs between them renamed by a chain of `select`s on compares of the table's
//!    index, and the arms of a cascade of `brif`s (if / else-if / ... / else, found from
//!    its innermost branch, visited first) hoist to its head as one set, differing
//!    operands renamed by a chain of `select`s on the cascade's conditions when those are
//!    computed by the head — each chain made only when the cost model, counting its
//!    `select`s and compares, says it pays.
//!
//! 7. **Split** ([`split`], Listings 1.5/1.6): what can neither rise nor sink is merged at
//!    a temporary reconvergence point inside the arms — each arm cut into what the merged
//!    instructions need (its prefix) and the rest (its suffix), a second branch on the
//!    same condition between — when the cost model says the matched expressions pay for
//!    the branch, the jumps and the copies it adds.
//! 8. **Flattening** ([`flatten`], Algorithm 1's FlattenBranches, Listings 1.10/1.11):
//!    a divergent if-then(-else) whose sides are short, side-effect-free, non-faulting
//!    code becomes `select`s, so that the enclosing branch — visited next — sees its arm
//!    as one straight block and can hoist what it shares with the other arm (nested
//!    common code). It also turns an emptied diamond (Listing 1.3 after its Sink) into a
//!    `select`, as LLVM's SimplifyCFG does, and a divergent `br_table` whose arms all rose
//!    (each only jumps on, alike) into that jump. Flattening is the one step that runs
//!    code on lanes that would not have run it; it is limited to code that cannot fault or
//!    write.
//! 9. **Merging** ([`merge`]): after the walk, a flattened block takes the chain of
//!    blocks its new jump leads to that it alone enters, as SimplifyCFG merges a block
//!    into its only predecessor; a chain of flattened diamonds becomes one block, without
//!    the block parameters that made the register allocator slow.
//!
//! Not done: the matching itself does not pair compares with swapped condition codes
//! (only Unify does, when the whole sides are one code).

pub mod cost;
pub mod dag;
pub mod edges;
pub mod flatten;
pub mod hoist;
pub mod matching;
pub mod merge;
pub mod multiway;
pub mod pdg;
pub mod sink;
pub mod split;
pub mod unify;
pub mod uses;

use crate::analysis::{AnalysisCache, Preserved};
use crate::passes::{IrPass, PassError, PassReport};
use crate::settings::Settings;
use dag::Arm;
use matching::Matcher;
use pdg::Direction;
use uses::Uses;
use warplift_ir::divergence::DivergentBranches;
use warplift_ir::{Block, Function, InstructionData, Opcode};

/// The `converge` IR pass.
pub struct Converge;

impl IrPass for Converge {
    fn name(&self) -> &'static str {
        "converge"
    }

    fn description(&self) -> &'static str {
        "Common Subexpression Convergence: hoist, sink and split the expressions the arms of a divergent branch share, flattening short branches (paper: CSC, Algorithm 1)"
    }

    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        // Everything on, and sinking alone (which then sees the expressions a hoist
        // would have taken); the threshold and renaming only ever remove moves.
        // The third splits wherever the matched code pays for its copies alone and keeps
        // the control flow it makes (no flattening), so the differential tests run Splits;
        // it also builds a table's renaming chains one by one.
        &[
            &[],
            &[("converge_hoist", "false")],
            &[
                ("converge_split_cost", "0"),
                ("converge_flatten", "false"),
                ("converge_joint_renaming", "false"),
            ],
        ]
    }

    fn run(
        &self,
        func: &mut Function,
        analyses: &mut AnalysisCache,
        settings: &Settings,
    ) -> Result<PassReport, PassError> {
        Ok(converge_in(func, &Options::from_settings(settings), analyses).report())
    }

    /// A run that moved nothing left the kernel as it was.
    fn preserved(&self, report: &PassReport) -> Preserved {
        let changed = [
            "hoisted",
            "sunk",
            "multi-way sinks",
            "splits",
            "flattened",
            "unified",
        ]
        .iter()
        .any(|count| report.get(count).unwrap_or(0) > 0);
        if !changed {
            Preserved::ALL
        } else {
            Preserved::NOTHING
        }
    }
}

/// What the pass may do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The least profit (cycles of benefit minus copies) a matched expression must bring.
    pub threshold: i64,
    /// Match instructions whose operands differ, renaming them (`select`, join parameter).
    pub rename: bool,
    /// Hoist to the branch.
    pub hoist: bool,
    /// Sink to the reconvergence point.
    pub sink: bool,
    /// Split the arms around what can neither rise nor sink.
    pub split: bool,
    /// What each branch or jump a Split adds costs, in cycles.
    pub split_cost: i64,
    /// Flatten short side-effect-free if-then(-else) regions into `select`s.
    pub flatten: bool,
    /// Remove a divergent branch whose sides are one code up to renamed operands.
    pub unify: bool,
    /// Choose a `br_table`'s renaming chains together (else chain by chain).
    pub joint_renaming: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options::from_settings(&Settings::default())
    }
}

impl Options {
    /// The options the `converge_*` settings give.
    pub fn from_settings(s: &Settings) -> Options {
        Options {
            threshold: i64::from(s.converge_threshold),
            rename: s.converge_rename,
            hoist: s.converge_hoist,
            sink: s.converge_sink,
            split: s.converge_split,
            split_cost: i64::from(s.converge_split_cost),
            flatten: s.converge_flatten,
            unify: s.converge_unify,
            joint_renaming: s.converge_joint_renaming,
        }
    }
}

/// What the pass did to one kernel.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Divergent branches visited.
    pub divergent_branches: u64,
    /// Instruction pairs hoisted (each pair became one instruction).
    pub hoisted: u64,
    /// Instruction pairs sunk.
    pub sunk: u64,
    /// `select`s inserted by hoists for renamed operands.
    pub selects: u64,
    /// Parameters added to reconvergence points by sinks for renamed operands.
    pub join_params: u64,
    /// Reconvergence points of three or more arms that expressions sank into.
    pub multiway: u64,
    /// Divergent `br_table`s whose arms' common expressions rose to the branch.
    pub multiway_hoists: u64,
    /// Instructions made to tell a `br_table`'s arms apart for renamed operands: compares
    /// of its index, their constants, and the `bor`s joining an arm's compares.
    pub table_tests: u64,
    /// Instructions moved from a cascade's inner levels to its head, so that renamed
    /// operands can be chosen by the levels' conditions there.
    pub cascade_conditions: u64,
    /// Divergent branches whose arms were split around a temporary reconvergence point.
    pub splits: u64,
    /// Instruction pairs merged at temporary reconvergence points.
    pub split_pairs: u64,
    /// Parameters of temporary reconvergence points (renamed or carried values).
    pub split_params: u64,
    /// Divergent branches flattened into `select`s.
    pub flattened: u64,
    /// Instructions the flattenings moved out of their arms (run by every lane).
    pub speculated: u64,
    /// Blocks merged into the flattened block that jumped to them, their only predecessor.
    pub merged: u64,
    /// Divergent branches removed because their sides were one code (Unify).
    pub unified: u64,
    /// The summed profit of the moved expressions, in cycles.
    pub profit: i64,
}

impl Stats {
    /// The statistics as a pass report.
    pub fn report(&self) -> PassReport {
        PassReport {
            counts: vec![
                ("divergent branches", self.divergent_branches),
                ("hoisted", self.hoisted),
                ("sunk", self.sunk),
                ("selects", self.selects),
                ("join params", self.join_params),
                ("multi-way sinks", self.multiway),
                ("multi-way hoists", self.multiway_hoists),
                ("table tests", self.table_tests),
                ("cascade conditions", self.cascade_conditions),
                ("splits", self.splits),
                ("split pairs", self.split_pairs),
                ("split params", self.split_params),
                ("flattened", self.flattened),
                ("speculated", self.speculated),
                ("merged blocks", self.merged),
                ("unified", self.unified),
                ("profit", self.profit.max(0) as u64),
            ],
        }
    }
}

/// Runs Common Subexpression Convergence on `func`.
pub fn converge(func: &mut Function, opts: &Options) -> Stats {
    converge_in(func, opts, &mut AnalysisCache::new())
}

/// [`converge`], with the kernel's analyses taken from `analyses`.
pub fn converge_in(func: &mut Function, opts: &Options, analyses: &mut AnalysisCache) -> Stats {
    let cfg = analyses.cfg(func);
    let postdom = analyses.postdom(func);
    // Only the branches' divergence is asked: proven from their conditions when it can
    // be, rather than by the whole analysis.
    let divergence = DivergentBranches::find_with(func, || analyses.divergence(func));
    let mut edges = edges::Edges::compute(func);
    // The pass adds selects, moved copies and split blocks' instructions: room for them
    // up front costs less than the tables' doublings as they come.
    let room = func.dfg.num_insts() / 2;
    func.dfg.reserve(room, room);
    // The source-location table grows one entry per new instruction otherwise (entries
    // past the last instruction are never read, so none is lost).
    func.srclocs.resize(func.dfg.num_insts() + room);
    let mut uses = Uses::compute(func);
    let mut stats = Stats::default();
    let order = cfg.reverse_post_order();
    let mut flattened_jumps = Vec::new();
    // One table's storage for every matching of the walk, and the storage of the arms
    // the last branches were done with.
    let mut tables = matching::Tables::default();
    let mut spare_arms: Vec<Arm> = Vec::new();
    for &block in order.iter().rev() {
        // A Split, a flattening or Unify empties blocks (removed at the end).
        if func.layout.block_insts(block).is_empty() || !divergence.is_divergent_branch(block) {
            continue;
        }
        stats.divergent_branches += 1;
        // The two arms the last matching of this branch looked at: the next one, on the
        // same blocks, takes them as its moves left them instead of reading them again.
        let mut latest: Option<(Arm, Arm)> = None;
        if opts.unify {
            let done = postdom.ipdom(block).and_then(|join| {
                unify::unify(func, &mut uses, &edges, block, join, opts.threshold)
            });
            if let Some(done) = done {
                stats.unified += 1;
                stats.selects += done.selects;
                stats.profit += done.profit;
                edges.refresh(func, &done.touched);
                // The branch is gone: nothing is left to hoist, sink, split or flatten.
                continue;
            }
        }
        // The branch's two sides as Hoist found them, for Split to take when nothing
        // between the two could have changed them (a pairwise hoist or sink moves
        // instructions and adds parameters to the reconvergence point only; a table's or
        // a cascade's moves are not followed, and Split looks again after them).
        let mut sides_for_split = None;
        if opts.hoist {
            let arms = postdom
                .ipdom(block)
                .and_then(|join| hoist_arms(func, &edges, block, join));
            let table = postdom
                .ipdom(block)
                .and_then(|join| table_arms(func, &edges, block, join));
            let table_found = table.is_some();
            if let Some(blocks) = table {
                let arms: Vec<Arm> = blocks.iter().map(|&b| Arm::new(func, b)).collect();
                // A differing operand is chosen by compares of the table's index.
                let choice = multiway::Table::of(func, block, &blocks)
                    .map_or(multiway::Choice::None, multiway::Choice::Table);
                let done = multiway::hoist_tuples(func, &mut uses, block, &arms, &choice, opts);
                stats.hoisted += done.tuples;
                stats.selects += done.selects;
                stats.table_tests += done.tests;
                stats.profit += done.profit;
                stats.multiway_hoists += u64::from(done.tuples > 0);
            }
            // The innermost branch of a cascade of `brif`s (visited first) hoists what
            // every arm of the whole cascade computes alike to its head, before the
            // pairwise hoist below looks at its own two arms.
            let cascade = postdom.ipdom(block).and_then(|join| {
                arms.and_then(|(cond, t, e)| {
                    multiway::Cascade::find(func, &edges, &postdom, block, join, (cond, t, e))
                })
            });
            if !table_found && cascade.is_none() {
                sides_for_split = Some(arms);
            }
            if let Some(cascade) = cascade {
                let arms: Vec<Arm> = cascade.arms.iter().map(|&b| Arm::new(func, b)).collect();
                let done = multiway::hoist_cascade(func, &mut uses, &cascade, &arms, opts);
                stats.hoisted += done.tuples;
                stats.selects += done.selects;
                stats.cascade_conditions += done.conditions;
                stats.profit += done.profit;
                stats.multiway_hoists += u64::from(done.tuples > 0);
            }
            if let Some((cond, then_block, else_block)) = arms {
                let a = Arm::new_reusing(func, then_block, spare_arms.pop());
                let b = Arm::new_reusing(func, else_block, spare_arms.pop());
                let matcher = Matcher::new_in(
                    core::mem::take(&mut tables),
                    func,
                    &a,
                    &b,
                    Direction::Hoist,
                    opts.rename,
                    &[],
                    &[],
                );
                let m = matcher.best(opts.threshold);
                tables = matcher.into_tables();
                if !m.pairs.is_empty() {
                    let done = hoist::hoist(func, &mut uses, block, cond, &a, &b, &m);
                    stats.hoisted += done.pairs;
                    stats.selects += done.selects;
                    stats.profit += m.profit;
                }
                latest = Some((a, b));
            }
        }
        if opts.sink {
            let join = postdom.ipdom(block);
            match join.map(|j| (j, sink_arms(func, &edges, j))) {
                Some((join, Some(preds))) if preds.len() == 2 => {
                    let (a, b) =
                        arms_after_moves(func, latest.take(), preds[0], preds[1], &mut spare_arms);
                    sink_pair(func, &mut uses, &mut tables, join, &a, &b, opts, &mut stats);
                    latest = Some((a, b));
                }
                Some((join, Some(preds))) => {
                    let arms: Vec<Arm> = preds.iter().map(|&p| Arm::new(func, p)).collect();
                    let done = multiway::sink_tuples(
                        func,
                        &mut uses,
                        join,
                        &arms,
                        opts.rename,
                        opts.threshold,
                    );
                    stats.sunk += done.tuples;
                    stats.join_params += done.params;
                    stats.profit += done.profit;
                    stats.multiway += u64::from(done.tuples > 0);
                }
                _ => {}
            }
        }
        if opts.split {
            let arms = sides_for_split.unwrap_or_else(|| {
                postdom
                    .ipdom(block)
                    .and_then(|join| hoist_arms(func, &edges, block, join))
            });
            if let Some((cond, then_block, else_block)) = arms {
                let (a, b) =
                    arms_after_moves(func, latest.take(), then_block, else_block, &mut spare_arms);
                let done = split::split(func, &mut uses, block, cond, &a, &b, opts, &mut tables);
                spare_arms.extend([a, b]);
                if let Some(done) = done {
                    stats.splits += 1;
                    stats.split_pairs += done.pairs;
                    stats.split_params += done.params;
                    stats.profit += done.profit;
                    // The control flow changed: what later (outer) branches look at must
                    // see the new blocks.
                    edges.refresh(func, &done.touched);
                }
            }
        }
        if opts.flatten {
            let mut done = flatten::flatten(func, &mut uses, &edges, block);
            if done.is_none() {
                done = flatten::flatten_table(func, &mut uses, &edges, block);
            }
            if let Some(done) = done {
                stats.flattened += 1;
                stats.speculated += done.speculated;
                stats.selects += done.selects;
                edges.refresh(func, &done.touched);
                flattened_jumps.extend(done.jump);
            }
        }
        if let Some((a, b)) = latest.take() {
            spare_arms.extend([a, b]);
        }
    }
    stats.merged = merge::merge_chains(func, &mut uses, &mut edges, &order, &flattened_jumps);
    // The blocks the transformations emptied (a placed block of a well-formed kernel holds
    // at least its terminator) leave the layout in one pass over the block order;
    // removing each as it was emptied searched the order every time, quadratic in the
    // kernel.
    let emptied: Vec<Block> = func
        .layout
        .blocks()
        .iter()
        .copied()
        .filter(|&b| func.layout.block_insts(b).is_empty())
        .collect();
    func.layout.remove_blocks(&emptied);
    stats
}

/// The condition and the two sides of `block`'s `brif`, when each side's entry block has
/// `block` as its only predecessor and no parameters, and every lane at the branch runs
/// exactly one of them once before reconverging at `join`: neither is `join` itself
/// (that side is empty) nor leads back to the branch before `join` (a loop's body, whose
/// exit runs once while the body runs every iteration).
pub(crate) fn hoist_arms(
    func: &Function,
    cfg: &edges::Edges,
    block: Block,
    join: Block,
) -> Option<(warplift_ir::Value, Block, Block)> {
    let term = func.terminator(block)?;
    let InstructionData::Brif { arg, dests, .. } = &func.dfg.insts[term] else {
        return None;
    };
    let (t, e) = (dests[0].block, dests[1].block);
    let alone = |b: Block| {
        b != join
            && cfg.preds(b) == [block]
            && func.dfg.block_params(b).is_empty()
            && !returns_to(cfg, b, block, join)
    };
    (t != e && alone(t) && alone(e)).then_some((*arg, t, e))
}

/// The distinct destinations of `block`'s `br_table`, when each has `block` as its only
/// predecessor, no parameters and no arguments, and every lane at the branch runs exactly
/// one of them once before reconverging at `join` (as [`hoist_arms`] asks of a `brif`).
fn table_arms(
    func: &Function,
    cfg: &edges::Edges,
    block: Block,
    join: Block,
) -> Option<Vec<Block>> {
    let term = func.terminator(block)?;
    let InstructionData::BrTable { dests, .. } = &func.dfg.insts[term] else {
        return None;
    };
    let mut arms: Vec<Block> = Vec::new();
    for call in dests {
        if !call.args.is_empty() {
            return None;
        }
        if !arms.contains(&call.block) {
            arms.push(call.block);
        }
    }
    let alone = |b: Block| {
        b != join
            && b != block
            && cfg.preds(b).iter().all(|&p| p == block)
            && func.dfg.block_params(b).is_empty()
            && !returns_to(cfg, b, block, join)
    };
    (arms.len() >= 2 && arms.iter().all(|&b| alone(b))).then_some(arms)
}

/// Does a path from `from` reach `target` without passing `stop`?
pub(crate) fn returns_to(cfg: &edges::Edges, from: Block, target: Block, stop: Block) -> bool {
    // Neither allocates until a block past `from` is to be visited: an arm that goes
    // straight to `stop` (most) costs a look at its successors.
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack = Vec::new();
    let mut b = from;
    loop {
        for &s in cfg.succs(b) {
            if s == target {
                return true;
            }
            if s != stop && s != from && seen.insert(s) {
                stack.push(s);
            }
        }
        match stack.pop() {
            Some(next) => b = next,
            None => return false,
        }
    }
}

/// Sinks the common expressions of the two arms `a` and `b` into `join`: the matching is
/// recomputed with the nodes whose results are read where the merged result cannot stand
/// in forbidden, until what is left is legal.
#[allow(clippy::too_many_arguments)]
fn sink_pair(
    func: &mut Function,
    uses: &mut Uses,
    tables: &mut matching::Tables,
    join: Block,
    a: &Arm,
    b: &Arm,
    opts: &Options,
    stats: &mut Stats,
) {
    // Allocated when a first node is forbidden (most matchings are legal at once).
    let mut forbid_a: Vec<bool> = Vec::new();
    let mut forbid_b: Vec<bool> = Vec::new();
    // Each round forbids at least one more node, so this ends.
    loop {
        let matcher = Matcher::new_in(
            core::mem::take(tables),
            func,
            a,
            b,
            Direction::Sink,
            opts.rename,
            &forbid_a,
            &forbid_b,
        );
        let m = matcher.choose(sink::roots(func, a, b), opts.threshold);
        *tables = matcher.into_tables();
        if m.pairs.is_empty() {
            return;
        }
        let (bad_a, bad_b) = sink::illegal_uses(func, uses, a, b, &m);
        if bad_a.is_empty() && bad_b.is_empty() {
            let done = sink::sink(func, uses, join, a, b, &m);
            stats.sunk += done.pairs;
            stats.join_params += done.params;
            stats.profit += m.profit;
            return;
        }
        for n in bad_a {
            forbid_a.resize(a.len(), false);
            forbid_a[n] = true;
        }
        for n in bad_b {
            forbid_b.resize(b.len(), false);
            forbid_b[n] = true;
        }
    }
}

/// The arms of blocks `x` and `y`: those of `latest` (the arms the previous matching of
/// the branch looked at) as its moves left them, when they are the same two blocks
/// (in either order), else made anew.
fn arms_after_moves(
    func: &Function,
    latest: Option<(Arm, Arm)>,
    x: Block,
    y: Block,
    spare: &mut Vec<Arm>,
) -> (Arm, Arm) {
    match latest {
        Some((a, b)) if (a.block, b.block) == (x, y) => (a.after_moves(func), b.after_moves(func)),
        Some((a, b)) if (b.block, a.block) == (x, y) => (b.after_moves(func), a.after_moves(func)),
        other => {
            spare.extend(other.into_iter().flat_map(|(a, b)| [a, b]));
            (
                Arm::new_reusing(func, x, spare.pop()),
                Arm::new_reusing(func, y, spare.pop()),
            )
        }
    }
}

/// The predecessors of the reconvergence point `join`, when it has two or more, all
/// distinct, and each ends in a jump to it.
fn sink_arms(func: &Function, cfg: &edges::Edges, join: Block) -> Option<Vec<Block>> {
    let preds = cfg.preds(join);
    let repeated = if preds.len() <= 16 {
        (1..preds.len()).any(|k| preds[..k].contains(&preds[k]))
    } else {
        let mut sorted = preds.to_vec();
        sorted.sort_unstable();
        sorted.windows(2).any(|w| w[0] == w[1])
    };
    if preds.len() < 2 || repeated {
        return None;
    }
    let jumps_here = |b: Block| {
        func.terminator(b).is_some_and(|t| {
            let data = &func.dfg.insts[t];
            data.opcode() == Opcode::Jump && data.branch_destinations()[0].block == join
        })
    };
    preds.iter().all(|&b| jumps_here(b)).then(|| preds.to_vec())
}

/// Every function of the corpus kernels (`tests/corpus/*.wir`), parsed, with its file, in
/// file order: the input of the unit tests that check the pass's parts against the whole.
#[cfg(test)]
fn corpus_functions() -> Vec<(std::path::PathBuf, Function)> {
    use warplift_ir::parser::parse_functions;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    let mut funcs = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for func in parse_functions(&text).unwrap() {
            funcs.push((path.clone(), func));
        }
    }
    funcs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arms Sink and Split take from the matching before them (`Arm::after_moves`, in
    /// either order of the two blocks) are the arms made anew from the blocks, after every
    /// hoist the corpus kernels' divergent branches make.
    #[test]
    fn arms_after_a_hoist_are_the_arms_made_anew() {
        let mut hoists = 0;
        for (path, mut func) in super::corpus_functions() {
            let mut analyses = AnalysisCache::new();
            let postdom = analyses.postdom(&func);
            let divergence = analyses.divergence(&func);
            let edges = edges::Edges::compute(&func);
            let mut uses = Uses::compute(&func);
            let blocks = func.layout.blocks().to_vec();
            for block in blocks {
                if !divergence.is_divergent_branch(block) {
                    continue;
                }
                let Some(join) = postdom.ipdom(block) else {
                    continue;
                };
                let Some((cond, t, e)) = hoist_arms(&func, &edges, block, join) else {
                    continue;
                };
                let (a, b) = (Arm::new(&func, t), Arm::new(&func, e));
                let m = Matcher::new(&func, &a, &b, Direction::Hoist, true, &[], &[]).best(0);
                if m.pairs.is_empty() {
                    continue;
                }
                hoist::hoist(&mut func, &mut uses, block, cond, &a, &b, &m);
                hoists += 1;
                let (fresh_t, fresh_e) = (Arm::new(&func, t), Arm::new(&func, e));
                let (y, x) =
                    arms_after_moves(&func, Some((a.clone(), b.clone())), e, t, &mut vec![]);
                assert_eq!((&x, &y), (&fresh_t, &fresh_e), "{path:?}: {block}");
                let (x, y) = arms_after_moves(&func, Some((a, b)), t, e, &mut vec![]);
                assert_eq!((x, y), (fresh_t, fresh_e), "{path:?}: {block}");
            }
        }
        assert!(hoists >= 5, "{hoists} hoists");
    }
}
