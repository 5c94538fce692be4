//! Linearization of unstructured control flow with a guard register, after Anantpur and
//! Govindarajan, "Taming Control Divergence in GPUs through Control Flow Linearization"
//! (CC 2014), implemented at the machine level as the paper's Section 6 proposes: "with
//! one integer guard register and one predicate register reserved from the register
//! allocator".
//!
//! # Why
//!
//! A SIMT machine reconverges the lanes of a divergent branch at the branch's immediate
//! post-dominator (IPDOM). In an *unstructured* CFG (Section 3.2, Definition 1: an edge
//! between a branch and a merge neither of which dominates or post-dominates the other,
//! or an edge into or out of the middle of a loop) lanes that split at a branch meet only
//! at that post-dominator, so the blocks in between run once per group of lanes that
//! reaches them. The paper's Figure 1,
//!
//! ```text
//!            B1 (c1)                  if ((c1() || c2()) && c3())
//!           /      \                      S1;                      (B4)
//!      B2 (c2)      |                 else
//!       |    \      |                     S2;                      (B5)
//!       |     `--> B3 (c3)            S3;                          (B6)
//!       |          /   \
//!       `-----> B5      B4
//!                 \    /
//!                   B6
//! ```
//!
//! with threads T1, T2 going B1→B3, T3 going B1→B2→B3 and T4 going B1→B2→B5, runs B3
//! twice (T1-T2, then T3) and B5 three times (T2, T3, T4), because every group waits for
//! the others only at B6, the IPDOM of B1.
//!
//! # How (Algorithm 1)
//!
//! Linearization replaces a region's control flow by a *guard variable* `g`, a software
//! program counter holding the id of the next block each lane must execute, and lays the
//! region's blocks out in one sequence of if-thens (Section 3.1, Figure 4):
//!
//! ```text
//!   D:    ...; g = id(B1); jump G1          ; the region's entry (CIDOM) sets g
//!   G1:   p = g == 1; @p bra B1 else G2     ; a guard block per block (line 6, 8)
//!   B1:   ...; g = c1 ? 3 : 2; jump G2      ; branches become assignments (line 7)
//!   G2:   p = g == 2; @p bra B2 else G3     ; fall-through to the next guard (12-17)
//!   B2:   ...; g = c2 ? 3 : 5; jump G3
//!   G3:   p = g == 3; @p bra B3 else G4
//!   B3:   ...; g = c3 ? 4 : 5; jump G4
//!   G4:   ...                               ; B4, B5 likewise
//!   G6:   p = g == 6; @p bra B6 else P      ; the last guard leaves to the exit (18-20)
//!   B6:   ...; g = EXIT; jump P
//! ```
//!
//! Blocks are ordered in reverse post-order (line 5; see *Order* below for the one we
//! pick), so along forward edges every lane finds the block it waits for further down; each guard's branch reconverges at the next
//! guard (its IPDOM), so the warp meets again after every block and each block runs at
//! most once per pass of the warp over it: in Figure 1, once each.
//!
//! A *retreating* edge (its destination comes no later than its source in the order, as
//! a loop's back edge) gets a back-edge guard after its source block (lines 24-33, the
//! paper's `B4_1_G` in Figure 5): lanes whose next block lies at or before the source go
//! back to the guard of the edge's destination, the others fall through. Block ids are
//! the blocks' positions in the order (1, 2, ...; `EXIT` is one past the last), so the
//! test is a single unsigned comparison `g <= id(source)`, which also covers a block
//! with several retreating edges and the paper's loop merging (Figure 8, where one back
//! edge serves the values of two loop headers). Back edges of the transformed CFG must
//! nest: when the interval of one (from its destination to its source) starts strictly
//! inside an earlier one and ends after it, its destination is *moved up* to the earlier
//! one's destination (Section 3.2, "moved up, to the closest back edge destination").
//! Irreducible loops (Figure 6 c/d) need nothing more: whichever block the order visits
//! first becomes the single header.
//!
//! The result is structured (Claim 1: a chain of if-thens and properly nested loops
//! whose only exits are their back-edge guards' fall-throughs), preserves the
//! program (Claim 2: a block sets `g` to exactly the successor it would have branched
//! to), and grows linearly (Claim 3): one guard block per region block plus one per
//! retreating source, and per region block one comparison in its guard and one
//! assignment to `g` (plus the guards' branches and the blocks' jumps, which the paper's
//! PTX counts as fall-throughs).
//!
//! # At the machine level
//!
//! The pass runs on *allocated* machine IR, so it may not create values: it writes only
//! the two registers it reserved before allocation ([`MachinePass::reservation`]), one
//! `b32` register for `g` and one predicate for the guard tests, and reads the branch
//! conditions where the branches read them. Every other register's live range is
//! untouched, so nothing spills and register pressure grows by exactly those two
//! registers (none when the kernel has nothing to linearize: the reservation looks for
//! regions first) — the paper's Section 6 remedy for the register growth its PTX-level
//! implementation suffered (Table 1, `mum`: 22 → 32 registers).
//!
//! # Regions
//!
//! The `linearize_regions` setting chooses what is linearized:
//! - `kernel`: the whole kernel, as the paper's Section 3 assumes: every block but the
//!   entry (the region's CIDOM) and the single return block (its CIPDOM; one is made
//!   when the kernel returns from several blocks, or never does) — where that can change
//!   what the IPDOM machine does: a region can run a block twice, a loop nest would be
//!   merged, or the reconvergence stack can get shallower (`regions::kernel_gains`;
//!   beyond the paper). Elsewhere the kernel is left as it is;
//! - `all`: every unstructured region (Definition 4, Algorithm 2) of the allocated
//!   kernel's control-flow graph, and `divergent` (the default): those holding a
//!   divergent branch; see [`regions`]. Each region is linearized on its own, its
//!   structured sub-regions (Algorithm 3) guarded at their entry only: the guard branches
//!   to the sub-region's entry, its blocks keep their branches, and its exit assigns `g`.
//!   A region holding the kernel's entry block takes that block as its entry; a region
//!   holding returns gets a return block of its own as its exit. A region in which no
//!   block can run twice per pass of a warp (no divergent branch has two successors that
//!   reach one block before its post-dominator, nor one that runs a block a pass ahead
//!   of the others around a cycle: `Region::can_run_a_block_twice`) is left as it is —
//!   beyond the paper, whose Definition 1 also marks, say, a loop left from two blocks
//!   to the block after it, or a branch table's range check joining its last entry. In
//!   `all` mode every branch that can go both ways counts, whatever the divergence
//!   analysis says, but not a range check every lane passes
//!   ([`MirFunction::one_way_branches`]). A cost model (`linearize_min_gain`, off by
//!   default) can leave alone a region whose estimated gain per pass of a warp — the
//!   instructions of the blocks that can run more than once, times their extra runs,
//!   minus the guards Algorithm 1 adds — falls short (`regions::estimated_regions`).
//!
//! Every region reuses the same two registers. The regions are disjoint and none holds
//! another's entry, so a lane's `g` is live only from its region's entry (which assigns
//! it on every path into the region) to the region's exit, and on that way the lane
//! meets no other region's entry; a region in a loop body is re-entered each iteration
//! through its entry, which assigns `g` afresh. `p` lives only from a guard test to its
//! branch.
//!
//! # Order
//!
//! Any order in which the region's forward edges go forward serves Algorithm 1; the pass
//! takes a pre-order of the dominator tree whose siblings keep their reverse post-order
//! (`dominance_order`), which keeps every block's dominator subtree contiguous so that O2
//! can nest guards — as long as it keeps every cycle of the region whole. Where it does
//! not (a block that runs after a loop would sit inside the loop's back-edge interval and
//! run once per pass in which lanes leave: Figure 5's `S3`), and in every region with an
//! irreducible cycle (whose first block the reverse post-order picks by the order of a
//! branch's successors: Figure 6), the loop-aware order of the `order` module is used
//! instead.
//! Regions whose cycles nest are linearized in `kernel` mode only: there a cycle-keeping
//! order holds back lanes that leave an inner cycle early, where the IPDOM machine lets
//! them run on, and can run blocks more often than before. Two settings bend the order:
//! - `linearize_merge_loops` (`cost` by default): in a loop nest, the rest of the outer
//!   iteration comes before the inner loop's body, so the inner back edge's interval
//!   overlaps the outer one and is moved up to the outer header — one back edge serves
//!   both loops, and lanes that finish the inner loop early run the rest of their outer
//!   iteration and rejoin the others in the inner loop's next invocation (loop merging,
//!   Section 5.2, Figure 8). The back-edge guard's single unsigned test `g <= id` covers
//!   every loop it serves, so merging needs no predicate beyond the reserved one (the paper
//!   tests each merged loop's header id separately, one predicate per loop). Merging
//!   trades passes of the inner loop for passes of the rest of the outer one, and which
//!   wins depends on the lanes' trip counts: `cost` merges a nest only where a pass of the
//!   inner loop outweighs a pass of the rest with its guards ([`merging_pays`]; on the
//!   paper's own Figure 2(b) it does not, and merging ran more blocks there), `always`
//!   merges every nest as the paper does, and `never` keeps each loop's blocks together
//!   behind its own back edge.
//! - `linearize_interleave` (off by default): branch interleaving (Section 5.1, in
//!   [`interleave`]): blocks are split between a long-latency load and its first use and
//!   the order alternates between the arms of divergent branches.
//!
//! # Guard optimisations
//!
//! `linearize_opt` (0 to 3) enables the optimisations of Section 4.2 in [`opt`], each level
//! including the ones below: O1 lets a block's exit skip guards it cannot match (and, beyond
//! the paper, threads past empty blocks), O2 nests the guards of dominated blocks inside
//! their dominator's guard, O3 merges a guard into its only predecessor — and, beyond the
//! paper, predicates short blocks in their guard's place (`linearize_predicate`), folds a
//! guard test into the branch condition it recomputes, and removes assignments to `g` that
//! no later test can see: on the synthetic CFG family the linearized kernel then runs fewer
//! warp-instructions than the plain one (docs/linearization.md).

pub mod check;
pub mod interleave;
mod local;
pub mod opt;
pub mod regions;
pub mod stack;

use crate::mir::{
    BlockKind, BlockTarget, Cond, MBlock, MInst, MInstKind, MType, MirFunction, Operand, Reg,
    RegClass,
};
use crate::pass_util::loop_order as order;
use crate::pass_util::region_order::{back_edge_targets, region_rpo_by};
use crate::passes::{Carried, MachinePass, PassError, PassReport, Plan};
use crate::regalloc::{ReservationRequest, ReservedRegs};
use crate::settings::Settings;
pub use crate::settings::{MergeLoops, RegionMode};
use cranelift_entity::EntityRef;
use rustc_hash::{FxHashMap, FxHashSet};
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree, Loop, LoopForest};
use warplift_ir::{IntCC, SourceLoc};

/// The `linearize` machine pass.
pub struct Linearize;

impl MachinePass for Linearize {
    fn name(&self) -> &'static str {
        "linearize"
    }

    fn description(&self) -> &'static str {
        "linearize unstructured regions with a guard register so no block runs twice per warp (Anantpur & Govindarajan 2014)"
    }

    fn reservation_bound(&self, _settings: &Settings) -> ReservationRequest {
        ReservationRequest::none()
            .with(RegClass::B32, 1)
            .with(RegClass::Pred, 1)
    }

    /// The guard registers, when the lowered kernel has a region to linearize: a kernel
    /// without one (no divergent unstructured region, in the default mode) pays nothing.
    /// The regions are looked for in the control flow allocation will give the kernel
    /// (its critical edges split), so they are the ones the pass finds after allocation.
    fn reservation(&self, settings: &Settings, func: &MirFunction) -> ReservationRequest {
        match crate::regalloc::allocation_cfg(func) {
            Some(shaped) => self.plan(settings, &shaped).request,
            None => self.reservation_bound(settings),
        }
    }

    /// Allocation adds instructions but no block or edge, so the regions found in the
    /// kernel's allocation shape are the ones the run would find: they travel to the run
    /// (with the kernel's [`regions::Shape`], which the run checks), which then looks for
    /// none.
    fn plan(&self, settings: &Settings, shaped: &MirFunction) -> Plan {
        let found = found_regions(shaped, settings);
        // The cost model's estimate counts instructions, and allocation adds some (moves),
        // so a region it declines now may pay after allocation: reserve for every region
        // the mode selects, whatever its estimate.
        let request = if found.any_kept(shaped, settings) {
            self.reservation_bound(settings)
        } else {
            ReservationRequest::none()
        };
        let carried: Option<Carried> = match found {
            Found::Candidates(candidates) => Some(Box::new(Planned {
                shape: regions::Shape::of(shaped),
                mode: settings.linearize_regions,
                candidates,
            })),
            Found::Kernel(_) => None,
        };
        Plan { request, carried }
    }

    fn variants(&self) -> &'static [&'static [(&'static str, &'static str)]] {
        &[
            &[("linearize_regions", "divergent")],
            // The cost model declining regions: what is left linearized must still be right.
            &[("linearize_min_gain", "0"), ("linearize_opt", "2")],
            &[("linearize_regions", "all"), ("linearize_opt", "3")],
            &[
                ("linearize_regions", "kernel"),
                ("linearize_merge_loops", "always"),
            ],
            &[("linearize_regions", "kernel"), ("linearize_opt", "1")],
            &[("linearize_regions", "kernel"), ("linearize_opt", "2")],
            &[("linearize_regions", "kernel"), ("linearize_opt", "3")],
            &[
                ("linearize_regions", "kernel"),
                ("linearize_interleave", "true"),
                ("linearize_merge_loops", "never"),
            ],
        ]
    }

    fn run(
        &self,
        func: &mut MirFunction,
        reserved: &ReservedRegs,
        settings: &Settings,
    ) -> Result<PassReport, PassError> {
        // With nothing carried, the planned run finds its regions itself.
        self.run_planned(func, reserved, settings, None)
    }

    fn run_planned(
        &self,
        func: &mut MirFunction,
        reserved: &ReservedRegs,
        settings: &Settings,
        carried: Option<Carried>,
    ) -> Result<PassReport, PassError> {
        let kernel = func.name.clone();
        let error = |message: String| PassError {
            pass: "linearize",
            kernel: kernel.clone(),
            message,
        };
        // What the plan found serves where the kernel still has the shape it was found in,
        // for the same mode.
        let planned = carried
            .and_then(|c| c.downcast::<Planned>().ok())
            .filter(|p| p.mode == settings.linearize_regions && p.shape == regions::Shape::of(func))
            .map(|p| Found::Candidates(p.candidates));
        linearize_kernel(func, reserved, settings, OptScope::Region, planned).map_err(error)
    }
}

/// The regions [`Linearize::plan`] found before allocation, for the run.
struct Planned {
    /// The shape of the kernel they were found in.
    shape: regions::Shape,
    /// The mode they were found for.
    mode: RegionMode,
    candidates: Vec<Judged>,
}

/// Where each region's guard optimisations run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum OptScope {
    /// On the region cut out of the kernel ([`local`]): linear in the kernel.
    Region,
    /// On the whole kernel, laid out before each region: what the region-local way must
    /// reproduce block for block, kept as the tests' oracle.
    #[cfg(test)]
    Kernel,
}

/// The pass on `func`: every selected region linearized, its guards optimised in `scope`.
/// `found`: the regions found in a kernel of `func`'s shape, if already known.
fn linearize_kernel(
    func: &mut MirFunction,
    reserved: &ReservedRegs,
    settings: &Settings,
    scope: OptScope,
    found: Option<Found>,
) -> Result<PassReport, String> {
    let found = found.unwrap_or_else(|| found_regions(func, settings));
    let Selection {
        regions,
        skipped_for_barrier,
        declined_by_cost,
    } = selected_regions(func, settings, found);
    let mut stats = Stats {
        skipped_barrier_regions: skipped_for_barrier,
        declined_by_cost,
        ..Stats::default()
    };
    if regions.is_empty() {
        return Ok(stats.report());
    }
    let regs = match (reserved.of(RegClass::B32), reserved.of(RegClass::Pred)) {
        ([g, ..], [p, ..]) => GuardRegs { g: *g, p: *p },
        _ => return Err("the guard registers were not reserved".into()),
    };
    let options = Options {
        merge_loops: settings.linearize_merge_loops,
        interleave: settings.linearize_interleave,
    };
    let analyses = KernelAnalyses::compute(func);
    let mut placement = Vec::new();
    // The optimisations read the layout around each region: kept as keys, so that the
    // kernel is placed once, at the end, however many regions there are.
    let mut layout = (settings.linearize_opt > 0).then(|| local::Layout::new(func));
    for region in &regions {
        let lin = linearize_region(func, region, regs, options, &analyses, &mut placement)?;
        stats.add(&lin.stats);
        let Some(layout) = layout.as_mut() else {
            continue;
        };
        let (level, predicate) = (settings.linearize_opt, settings.linearize_predicate);
        let o = match scope {
            OptScope::Region => {
                let placed = placement
                    .last_mut()
                    .ok_or("a linearized region was not placed")?;
                local::optimize_region(func, &lin, placed, layout, regs, level, predicate)?
            }
            #[cfg(test)]
            OptScope::Kernel => {
                place_regions(func, &mut placement);
                opt::optimize(func, &lin, regs, level, predicate)
            }
        };
        stats.add_opt(&o);
    }
    place_regions(func, &mut placement);
    Ok(stats.report())
}

/// The regions `mode` selects that the pass linearizes, and how many it leaves alone
/// because they hold a barrier and a divergent branch: linearized, a block runs only in
/// the lanes whose guard selects it, so where a divergent branch can give lanes different
/// guards, a barrier in the region could be reached by part of the block's threads only.
/// (The paper's kernels synchronise outside their unstructured regions.) `found` holds
/// the regions of `func` ([`found_regions`]); what is left is the cost model's decision.
fn selected_regions(func: &MirFunction, settings: &Settings, found: Found) -> Selection {
    let mut declined_by_cost = 0;
    let mut skipped_for_barrier = 0;
    let mut regions = Vec::new();
    match found {
        // The whole kernel, unless linearizing it can neither remove a redundant
        // execution nor make the reconvergence stack shallower.
        Found::Kernel(Some(r)) if regions::kernel_gains(func, settings.linearize_merge_loops) => {
            let verdict = judge(func, RegionMode::Kernel, &r);
            skipped_for_barrier += u64::from(verdict == Verdict::Barrier);
            if verdict == Verdict::Linearize {
                regions.push(r);
            }
        }
        Found::Kernel(Some(_)) => declined_by_cost = 1,
        Found::Kernel(None) => {}
        Found::Candidates(candidates) => {
            for c in candidates {
                let pays = !settings.linearize_min_gain.declines(c.candidate.gain(func));
                declined_by_cost += u64::from(!pays);
                if pays {
                    regions.extend(c.kept(&mut skipped_for_barrier));
                }
            }
        }
    }
    Selection {
        regions,
        skipped_for_barrier,
        declined_by_cost,
    }
}

/// The regions the mode finds in `func`, each judged, before the cost model has its say.
fn found_regions(func: &MirFunction, settings: &Settings) -> Found {
    let mode = settings.linearize_regions;
    match mode {
        RegionMode::Kernel => Found::Kernel(regions::kernel_region(func)),
        RegionMode::All | RegionMode::Divergent => Found::Candidates(
            regions::candidate_regions(func, mode)
                .into_iter()
                .map(|c| Judged {
                    verdict: judge(func, mode, &c.region),
                    candidate: c,
                })
                .collect(),
        ),
    }
}

/// The regions the mode finds (see [`found_regions`]).
enum Found {
    /// In kernel mode: the whole kernel, if it has something to linearize.
    Kernel(Option<Region>),
    /// In the other modes: the unstructured regions, judged.
    Candidates(Vec<Judged>),
}

impl Found {
    /// Whether some region of `func` would be linearized if the cost model took every
    /// one.
    fn any_kept(&self, func: &MirFunction, settings: &Settings) -> bool {
        match self {
            Found::Kernel(r) => r.as_ref().is_some_and(|r| {
                regions::kernel_gains(func, settings.linearize_merge_loops)
                    && judge(func, RegionMode::Kernel, r) == Verdict::Linearize
            }),
            Found::Candidates(c) => c.iter().any(|j| j.verdict == Verdict::Linearize),
        }
    }
}

/// A region with [`judge`]'s verdict on it.
struct Judged {
    candidate: regions::Candidate,
    verdict: Verdict,
}

impl Judged {
    /// The region, when the verdict is to linearize it; a region left alone for its
    /// barrier is counted in `skipped_for_barrier`.
    fn kept(self, skipped_for_barrier: &mut u64) -> Option<Region> {
        *skipped_for_barrier += u64::from(self.verdict == Verdict::Barrier);
        (self.verdict == Verdict::Linearize).then_some(self.candidate.region)
    }
}

/// What the pass does with a region, whatever its estimated gain.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Verdict {
    /// Linearize it (if the cost model agrees).
    Linearize,
    /// Leave it: it holds only edge-split blocks, or (outside kernel mode) nested cycles.
    Nothing,
    /// Leave it: it holds a barrier and a divergent branch.
    Barrier,
}

/// The checks a region must pass besides the cost model, in `mode`.
fn judge(func: &MirFunction, mode: RegionMode, region: &Region) -> Verdict {
    // A region of edge-split blocks only (a branch whose two edges meet at once) has
    // nothing to run twice: guarding it would cost registers and buy nothing.
    let only_edge_splits = region
        .blocks
        .iter()
        .all(|&b| func.blocks[b].kind == BlockKind::EdgeSplit);
    // Nested cycles: the order that keeps each cycle whole makes lanes that leave an
    // inner cycle early wait for the others before the rest of their outer iteration,
    // where the IPDOM machine lets them run on; on such regions linearization can run
    // blocks more often than the hardware does, so only kernel mode (which asks for the
    // whole kernel) linearizes them.
    if only_edge_splits || (mode != RegionMode::Kernel && has_nested_cycles(func, region)) {
        Verdict::Nothing
    } else {
        let insts = || {
            region
                .blocks
                .iter()
                .flat_map(|&b| func.blocks[b].insts.iter())
        };
        let has_barrier = insts().any(|i| matches!(i.kind, MInstKind::Bar));
        let divergent = insts().any(|i| {
            matches!(
                i.kind,
                MInstKind::Branch {
                    divergent: true,
                    ..
                }
            )
        });
        if has_barrier && divergent {
            Verdict::Barrier
        } else {
            Verdict::Linearize
        }
    }
}

/// The regions the pass linearizes, and the ones it leaves alone.
struct Selection {
    regions: Vec<Region>,
    /// Regions holding a barrier and a divergent branch.
    skipped_for_barrier: u64,
    /// Regions whose estimated gain is below `linearize_min_gain`; in kernel mode, 1 when
    /// the kernel is left alone because linearizing it could remove nothing
    /// ([`regions::kernel_gains`]).
    declined_by_cost: u64,
}

/// Whether a cycle of `region`'s graph encloses another.
fn has_nested_cycles(func: &MirFunction, region: &Region) -> bool {
    order::has_nested_cycles(region.entry, &region.blocks, |b| func.successors(b))
}

/// How a region is ordered (the `linearize_*` settings).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Which loop nests to order so that one back edge serves an inner and an outer loop
    /// (Section 5.2); the others keep each loop's blocks together.
    pub merge_loops: MergeLoops,
    /// Split blocks between a long-latency load and its first use, and interleave the arms
    /// of divergent branches (Section 5.1).
    pub interleave: bool,
}

/// The kernel's dominator tree and loops, computed once before any region is linearized.
/// Regions are disjoint and none holds another's entry, so linearizing one leaves the
/// dominators of every other region's blocks within that region, and the loops around
/// them, as they were: one computation serves every region, where recomputing per region
/// would make the pass quadratic in the number of regions.
pub struct KernelAnalyses {
    domtree: DominatorTree<MBlock>,
    loops: LoopForest<MBlock>,
}

impl KernelAnalyses {
    /// Analyses `func`.
    pub fn compute(func: &MirFunction) -> Self {
        let cfg = ControlFlowGraph::compute(func);
        KernelAnalyses {
            domtree: DominatorTree::compute(&cfg),
            loops: LoopForest::compute(&cfg),
        }
    }
}

/// The two reserved registers: the guard variable and the guard-test predicate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GuardRegs {
    /// The guard variable `g` (`b32`): the id of the next block the lane executes.
    pub g: Reg,
    /// The predicate guard tests write.
    pub p: Reg,
}

/// A region to linearize: single entry, single exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// The region's entry (CIDOM): outside the region, every edge into it comes from here.
    pub entry: MBlock,
    /// The region's blocks, in any order.
    pub blocks: Vec<MBlock>,
    /// The region's exit (CIPDOM): every edge leaving the region goes here. `None`: the
    /// region is the kernel, which returns from several blocks (or never): linearization
    /// makes a single return block.
    pub exit: Option<MBlock>,
    /// Structured sub-regions of the region (Algorithm 3), pairwise disjoint: each is
    /// guarded at its entry only and keeps its own control flow.
    pub subregions: Vec<SubRegion>,
}

/// A structured sub-region of a [`Region`] (Definition 5): entered only at `entry`, left
/// only from `exit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubRegion {
    /// The block its guard branches to; it dominates the others.
    pub entry: MBlock,
    /// The block that leaves it; it post-dominates the others, and only its terminator
    /// becomes an assignment to the guard variable.
    pub exit: MBlock,
    /// Its blocks, entry and exit included, in any order.
    pub blocks: Vec<MBlock>,
}

/// Counts of one linearization, for [`PassReport`] and the code-growth bounds of Claim 3.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Regions linearized.
    pub regions: u64,
    /// Regions left as they are because they hold a barrier and a divergent branch.
    pub skipped_barrier_regions: u64,
    /// Regions left as they are by the cost model (`linearize_min_gain`), or the kernel
    /// in kernel mode where linearizing it can neither remove a redundant execution nor
    /// lower the reconvergence stack.
    pub declined_by_cost: u64,
    /// Blocks in the regions.
    pub region_blocks: u64,
    /// Structured sub-regions, each guarded at its entry only.
    pub subregions: u64,
    /// Blocks of structured sub-regions other than their entries: they get no guard.
    pub subregion_blocks: u64,
    /// Blocks split between a load and its use for branch interleaving (each split adds a
    /// block to the region).
    pub blocks_split: u64,
    /// Retreating edges in the regions.
    pub retreating_edges: u64,
    /// Guard blocks made, one per region block outside structured sub-regions and one per
    /// sub-region.
    pub guard_blocks: u64,
    /// Back-edge guard blocks made, one per block with retreating edges.
    pub back_edge_guards: u64,
    /// Return blocks made (kernel mode, when the kernel does not return from one block).
    pub exit_blocks: u64,
    /// Guard tests (`setp`) in guard blocks.
    pub guard_tests: u64,
    /// Assignments to the guard variable: one per guard block and one in the entry.
    pub guard_assignments: u64,
    /// Guard blocks removed by the optimisations.
    pub guards_removed: u64,
    /// Edges redirected past a guard by O1.
    pub edges_redirected: u64,
    /// Empty parts (a block that only jumps) threaded past and removed with their guards.
    pub empty_parts_removed: u64,
    /// Blocks predicated in their guard's place (O3).
    pub blocks_predicated: u64,
    /// Assignments to the guard variable removed as dead (O3).
    pub assignments_removed: u64,
    /// Guard tests replaced by the branch condition they recompute (O3).
    pub tests_folded: u64,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.regions += o.regions;
        self.region_blocks += o.region_blocks;
        self.subregions += o.subregions;
        self.subregion_blocks += o.subregion_blocks;
        self.blocks_split += o.blocks_split;
        self.retreating_edges += o.retreating_edges;
        self.guard_blocks += o.guard_blocks;
        self.back_edge_guards += o.back_edge_guards;
        self.exit_blocks += o.exit_blocks;
        self.guard_tests += o.guard_tests;
        self.guard_assignments += o.guard_assignments;
    }

    fn add_opt(&mut self, o: &opt::OptStats) {
        self.guards_removed += o.guards_removed;
        self.edges_redirected += o.edges_redirected;
        self.empty_parts_removed += o.empty_parts_removed;
        self.blocks_predicated += o.blocks_predicated;
        self.assignments_removed += o.assignments_removed;
        self.tests_folded += o.tests_folded;
        self.guard_tests -= o.tests_folded.min(self.guard_tests);
        self.guard_tests -= o.tests_removed.min(self.guard_tests);
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
                ("regions declined by cost", self.declined_by_cost),
                ("region blocks", self.region_blocks),
                ("structured sub-regions", self.subregions),
                ("sub-region blocks", self.subregion_blocks),
                ("blocks split", self.blocks_split),
                ("retreating edges", self.retreating_edges),
                ("guard blocks", self.guard_blocks),
                ("back-edge guards", self.back_edge_guards),
                ("exit blocks", self.exit_blocks),
                ("guard tests", self.guard_tests),
                ("guard assignments", self.guard_assignments),
                ("guards removed", self.guards_removed),
                ("edges redirected", self.edges_redirected),
                ("empty parts removed", self.empty_parts_removed),
                ("blocks predicated", self.blocks_predicated),
                ("guard assignments removed", self.assignments_removed),
                ("guard tests folded", self.tests_folded),
            ],
        }
    }
}

/// What linearizing one region made: the blocks in their new order, for the
/// optimisations.
#[derive(Clone, Debug)]
pub struct Linearized {
    /// The region's entry block (it sets `g` and jumps to the first guard).
    pub entry: MBlock,
    /// The block each guard branches to, in reverse post-order; `order[i]` has id
    /// `i + 1`. A region block, or the entry of a structured sub-region.
    pub order: Vec<MBlock>,
    /// The block that leaves each `order[i]`'s part of the region, assigning the guard
    /// variable: `order[i]` itself, or the exit of the structured sub-region.
    pub tails: Vec<MBlock>,
    /// Every block of the region.
    pub blocks: Vec<MBlock>,
    /// The guard block of each region block, same indices as `order`.
    pub guards: Vec<MBlock>,
    /// The back-edge guard after each region block, if it has retreating edges.
    pub back_edge_guards: Vec<Option<MBlock>>,
    /// Index in `order` whose guard each back-edge guard branches back to.
    pub back_edge_targets: Vec<Option<usize>>,
    /// The exit block.
    pub exit: MBlock,
    /// The id meaning "left the region".
    pub exit_id: u32,
    /// Counts.
    pub stats: Stats,
}

/// An instruction made by the pass: no source location of its own.
fn inst(kind: MInstKind) -> MInst {
    MInst::new(kind, SourceLoc::default())
}

/// `g = id`.
fn set_guard(regs: GuardRegs, id: u32) -> MInst {
    inst(MInstKind::Mov {
        ty: MType::I32,
        dst: regs.g,
        src: Operand::Imm(u64::from(id)),
    })
}

/// `p = g CC id`.
fn test_guard(regs: GuardRegs, cc: IntCC, id: u32) -> MInst {
    inst(MInstKind::Setp {
        cond: Cond::Int(cc),
        ty: MType::I32,
        dst: regs.p,
        a: regs.g,
        b: Operand::Imm(u64::from(id)),
    })
}

/// `@p bra taken else not_taken`: a guard's branch, divergent unless every lane of the
/// warp holds the same `g`.
fn guard_branch(regs: GuardRegs, taken: MBlock, not_taken: MBlock, divergent: bool) -> MInst {
    inst(MInstKind::Branch {
        pred: regs.p,
        negated: false,
        taken: BlockTarget::new(taken),
        not_taken: BlockTarget::new(not_taken),
        divergent,
    })
}

fn jump(to: MBlock) -> MInst {
    inst(MInstKind::Jump {
        dest: BlockTarget::new(to),
    })
}

/// The region's blocks in reverse post-order of the region's graph, entered from
/// `entry`'s successors (an iterative depth-first search: kernels may be deep).
pub fn region_rpo(func: &MirFunction, entry: MBlock, members: &FxHashSet<MBlock>) -> Vec<MBlock> {
    region_rpo_by(entry, members, |b| func.successors(b))
}

/// One step of the linearized sequence: a region block, or a whole structured
/// sub-region, behind one guard.
struct Part {
    /// Where its guard branches to.
    head: MBlock,
    /// Whose terminator leaves it (and becomes an assignment to `g`).
    tail: MBlock,
    /// Its blocks in reverse post-order, `head` first.
    blocks: Vec<MBlock>,
}

/// The parts of a region in reverse post-order of their heads: each block outside the
/// structured sub-regions on its own, each sub-region as one part where its entry comes.
fn parts(order: &[MBlock], subregions: &[SubRegion]) -> Result<Vec<Part>, String> {
    let mut sub_of: FxHashMap<MBlock, usize> = FxHashMap::default();
    for (k, sr) in subregions.iter().enumerate() {
        for &b in &sr.blocks {
            if sub_of.insert(b, k).is_some() {
                return Err(format!("structured sub-regions overlap at {b}"));
            }
        }
    }
    let mut out = Vec::with_capacity(order.len());
    for &b in order {
        match sub_of.get(&b) {
            None => out.push(Part {
                head: b,
                tail: b,
                blocks: vec![b],
            }),
            Some(&k) if subregions[k].entry == b => {
                let sr = &subregions[k];
                let mut blocks = vec![b];
                blocks.extend(sr.blocks.iter().copied().filter(|&x| x != b));
                out.push(Part {
                    head: b,
                    tail: sr.exit,
                    blocks,
                });
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// Reorders the parts (given in reverse post-order) into a pre-order of the dominator tree:
/// every part is followed, contiguously, by the parts it dominates, which is what lets the
/// guard of a part enclose (nest) the guards of the parts it dominates (optimisation O2).
///
/// Siblings are kept in reverse post-order, with one preference: where the innermost loop
/// of their parent is merged ([`loops_to_merge`]), the children that leave it for the
/// enclosing loop come first (the rest of the outer iteration before the inner loop's
/// body, so that the inner back edge's interval overlaps the outer one and is moved up to
/// it: loop merging, Section 5.2);
/// otherwise the children that stay in the loop come first, so each loop's blocks stay
/// together and keep their own back edge.
///
/// With siblings in reverse post-order the order is topological for every forward edge of
/// the reverse post-order: an edge `u -> v` either goes down the dominator tree (`u`
/// dominates `v`) or from the subtree of one child `c1` of some part to the subtree of a
/// sibling `c2`; then `v` is `c2` itself (a path to `u` avoiding `c2`, followed by the
/// edge, would avoid it too), and `c1` precedes `c2`. The loop preference can break this
/// only in irreducible loops; an order that would is not used.
fn dominance_order(
    func: &MirFunction,
    parts: Vec<Part>,
    analyses: &KernelAnalyses,
    split_of: &FxHashMap<MBlock, MBlock>,
    merge_loops: MergeLoops,
) -> Vec<Part> {
    let KernelAnalyses { domtree, loops } = analyses;
    // The second half of a block split for interleaving is new to the analyses: it sits
    // where its first half is, right below it in the dominator tree.
    let original = |b: MBlock| split_of.get(&b).copied().unwrap_or(b);
    let idom = |b: MBlock| match split_of.get(&b) {
        Some(&first) => Some(first),
        None => domtree.idom(b),
    };
    let index: FxHashMap<MBlock, usize> =
        parts.iter().enumerate().map(|(i, p)| (p.head, i)).collect();
    let inside: FxHashSet<MBlock> = parts
        .iter()
        .flat_map(|p| p.blocks.iter().copied())
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); parts.len()];
    let mut roots = Vec::new();
    for (k, part) in parts.iter().enumerate() {
        // The nearest strict dominator that heads a part; a structured sub-region's other
        // blocks are passed on the way to its head.
        let mut d = idom(part.head);
        let parent = loop {
            match d {
                Some(b) if index.contains_key(&b) => break Some(index[&b]),
                Some(b) if inside.contains(&b) => d = idom(b),
                _ => break None,
            }
        };
        match parent {
            Some(p) => children[p].push(k),
            None => roots.push(k),
        }
    }
    let preorder = |children: &[Vec<usize>]| {
        let mut order = Vec::with_capacity(parts.len());
        let mut stack: Vec<usize> = roots.iter().rev().copied().collect();
        while let Some(k) = stack.pop() {
            order.push(k);
            stack.extend(children[k].iter().rev());
        }
        order
    };
    let rpo_order = preorder(&children);
    let merged = loops_to_merge(func, &parts, loops, &original, merge_loops);
    // The loop preference: 0 runs first.
    let rank = |parent: usize, child: usize| -> u8 {
        // An irreducible loop has no single header to keep its blocks behind.
        let Some(l) = loops
            .innermost_loop(original(parts[parent].head))
            .filter(|&l| !loops.is_irreducible(l))
        else {
            return 0;
        };
        let head = original(parts[child].head);
        let stays = loops.contains(l, head);
        let to_outer = !stays
            && loops
                .parent(l)
                .is_some_and(|o| !loops.is_irreducible(o) && loops.contains(o, head));
        match (merged.contains(&l), stays, to_outer) {
            (true, _, true) | (false, true, _) => 0,
            _ => 1,
        }
    };
    let mut ranked = children.clone();
    for (p, c) in ranked.iter_mut().enumerate() {
        c.sort_by_key(|&k| rank(p, k)); // stable: reverse post-order within a rank
    }
    let mut order = preorder(&ranked);
    if order != rpo_order {
        let pos: FxHashMap<usize, usize> = order.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let forward_kept = parts.iter().enumerate().all(|(k, part)| {
            func.succs(part.tail)
                .filter_map(|s| index.get(&s))
                .all(|&j| j <= k || pos[&k] < pos[&j])
        });
        if !forward_kept {
            order = rpo_order;
        }
    }
    // Cycles kept whole, blocks after a loop placed after it, irreducible cycles entered
    // at a header that does not depend on the successors' order: see [`order`]. The
    // dominance order is kept where it already does all that (loop merging's overlap
    // allowed), so that O2 can nest guards.
    let succs: Vec<Vec<usize>> = parts
        .iter()
        .map(|p| {
            func.succs(p.tail)
                .filter_map(|s| index.get(&s).copied())
                .collect()
        })
        .collect();
    let mut rank = vec![0; parts.len()];
    for (i, &k) in order.iter().enumerate() {
        rank[k] = i;
    }
    // Where every edge between parts goes forward in the order, the parts have no cycle
    // to keep whole or enter: the order stands as it is (the common case, an acyclic
    // region, skips the loop analysis).
    let acyclic = succs
        .iter()
        .enumerate()
        .all(|(k, out)| out.iter().all(|&j| rank[j] > rank[k]));
    if !acyclic {
        // Parts entered from outside the region have no dominating part (an
        // over-estimate that only matters to an irreducible cycle's choice of header, as
        // "entered first").
        let transparent: Vec<bool> = parts
            .iter()
            .map(|p| p.blocks.len() == 1 && func.blocks[p.head].kind == BlockKind::EdgeSplit)
            .collect();
        let nest = order::loop_order(&succs, &roots, &rank, &transparent);
        if nest.irreducible() || !nest.keeps_cycles_together(&order, !merged.is_empty()) {
            order = nest.order;
        }
    }
    let mut slots: Vec<Option<Part>> = parts.into_iter().map(Some).collect();
    order.into_iter().filter_map(|k| slots[k].take()).collect()
}

/// The loops whose nest [`dominance_order`] merges (Section 5.2): each a reducible loop
/// inside a reducible loop, with a block in the region; under [`MergeLoops::Cost`] only
/// those for which [`merging_pays`].
fn loops_to_merge(
    func: &MirFunction,
    parts: &[Part],
    loops: &LoopForest<MBlock>,
    original: &dyn Fn(MBlock) -> MBlock,
    mode: MergeLoops,
) -> FxHashSet<Loop> {
    if mode == MergeLoops::Never {
        return FxHashSet::default();
    }
    loops
        .loops()
        .filter(|&l| {
            let Some(outer) = loops.parent(l) else {
                return false;
            };
            !loops.is_irreducible(l)
                && !loops.is_irreducible(outer)
                && parts.iter().any(|p| loops.contains(l, original(p.head)))
                && (mode == MergeLoops::Always
                    || merging_pays(func, parts, loops, original, l, outer))
        })
        .collect()
}

/// The cost model of loop merging: whether merging inner loop `inner` into `outer` is
/// expected to run fewer block executions and fewer instructions than keeping them apart.
///
/// Merging lets a lane that finishes its inner loop early run the rest of its outer
/// iteration (the *rest*: `outer`'s parts outside `inner`) and join the other lanes in
/// its next invocation of the inner loop; what the lanes' trip counts make of that is
/// unknown when compiling. The model takes the shape of the paper's Figure 2(c) — one
/// group of lanes finishes the inner loop before the others and overlaps its next
/// invocation with their remaining passes — at its least favourable, an overlap of one
/// pass: merging then saves one pass of the inner loop and pays one more pass of the
/// rest, and, in every pass of the merged loop, the guard tests of the rest's parts
/// (`setp` and `bra`), which the inner loop's passes skip when the loops are apart. So it
/// merges only where a pass of the inner loop runs more of the kernel's blocks than a pass
/// of the rest, and more instructions than the rest with its guards. On Figure 2(b) the
/// rest (outer header, `S1`, `S3`) outweighs the inner loop (header and `S2`) and the nest
/// is left apart: merged, at Figure 2(c)'s trip counts, the warp ran 16 redundant block
/// executions against 10 and 774 warp-instructions against 521 (kernel mode, O0).
/// Merging can still lose where lanes leave the inner loop early with no further outer
/// iteration to overlap (its last one); no static model sees that, and `always` merges
/// regardless.
fn merging_pays(
    func: &MirFunction,
    parts: &[Part],
    loops: &LoopForest<MBlock>,
    original: &dyn Fn(MBlock) -> MBlock,
    inner: Loop,
    outer: Loop,
) -> bool {
    let (mut inside, mut rest) = (NestPass::default(), NestPass::default());
    for p in parts {
        let head = original(p.head);
        if !loops.contains(outer, head) {
            continue;
        }
        let side = if loops.contains(inner, head) {
            &mut inside
        } else {
            &mut rest
        };
        side.guards += 1;
        for &b in &p.blocks {
            side.insts += func.blocks[b].insts.len();
            side.blocks += usize::from(func.blocks[b].kind.is_code());
        }
    }
    inside.outweighs(&rest)
}

/// A pass over some parts of a loop nest, for [`merging_pays`]: the kernel's own blocks,
/// their instructions, and the guards the parts get.
#[derive(Default)]
pub(crate) struct NestPass {
    pub(crate) blocks: usize,
    pub(crate) insts: usize,
    pub(crate) guards: usize,
}

impl NestPass {
    /// Whether a pass of the inner loop (`self`) runs more of the kernel's blocks than a
    /// pass of the rest of the outer one, and more instructions than the rest with its
    /// guards (a guard is a test and a branch): merging is then expected to pay.
    pub(crate) fn outweighs(&self, rest: &NestPass) -> bool {
        self.blocks > rest.blocks && self.insts > rest.insts + 2 * rest.guards
    }
}

/// Linearizes `region` of `func` (Algorithm 1), writing only `regs`. Each structured
/// sub-region is one step of the sequence (Section 4.1): its guard branches to its
/// entry, its blocks keep their branches, and only its exit assigns `g`.
pub fn linearize_region(
    func: &mut MirFunction,
    region: &Region,
    regs: GuardRegs,
    options: Options,
    analyses: &KernelAnalyses,
    placement: &mut Vec<Placed>,
) -> Result<Linearized, String> {
    let merge_loops = options.merge_loops;
    let mut members: FxHashSet<MBlock> = region.blocks.iter().copied().collect();
    // Blocks split for branch interleaving: the first halves, which wait on a load.
    let mut awaiting: FxHashSet<MBlock> = FxHashSet::default();
    let mut split_of: FxHashMap<MBlock, MBlock> = FxHashMap::default();
    if options.interleave {
        let in_subregion: FxHashSet<MBlock> = region
            .subregions
            .iter()
            .flat_map(|sr| sr.blocks.iter().copied())
            .collect();
        let candidates: Vec<MBlock> = region
            .blocks
            .iter()
            .copied()
            .filter(|b| !in_subregion.contains(b))
            .collect();
        for (first, second) in interleave::split_at_load_uses(func, &candidates) {
            members.insert(second);
            awaiting.insert(first);
            split_of.insert(second, first);
        }
    }
    let block_order = region_rpo(func, region.entry, &members);
    if block_order.len() != members.len() {
        return Err(format!(
            "region entered at {} reaches {} of its {} blocks",
            region.entry,
            block_order.len(),
            members.len()
        ));
    }
    if let Some(b) = region
        .subregions
        .iter()
        .flat_map(|sr| &sr.blocks)
        .find(|b| !members.contains(b))
    {
        return Err(format!(
            "{b} of a structured sub-region lies outside its region"
        ));
    }
    let mut parts = dominance_order(
        func,
        parts(&block_order, &region.subregions)?,
        analyses,
        &split_of,
        merge_loops,
    );
    if !awaiting.is_empty() {
        parts = interleave::interleave(func, parts, &awaiting);
    }
    let order: Vec<MBlock> = parts.iter().map(|p| p.head).collect();
    let tails: Vec<MBlock> = parts.iter().map(|p| p.tail).collect();
    let n = order.len();
    let pos: FxHashMap<MBlock, usize> = order.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let id = |i: usize| (i + 1) as u32;
    let exit_id = id(n);
    let mut stats = Stats {
        regions: 1,
        region_blocks: members.len() as u64,
        subregions: region.subregions.len() as u64,
        subregion_blocks: (members.len() - n) as u64,
        blocks_split: awaiting.len() as u64,
        ..Stats::default()
    };

    let branches_uniform = |b: MBlock| {
        !matches!(
            func.terminator(b).map(|t| &t.kind),
            Some(MInstKind::Branch {
                divergent: true,
                ..
            })
        )
    };
    let uniform_region =
        branches_uniform(region.entry) && members.iter().all(|&b| branches_uniform(b));

    // The exit: the given one, or a new return block.
    let exit = match region.exit {
        Some(e) => e,
        None => {
            let e = func.new_block(None);
            func.blocks[e].kind = BlockKind::Guard;
            func.blocks[e].insts.push(inst(MInstKind::Ret));
            stats.exit_blocks += 1;
            e
        }
    };
    // The id a branch to `s` assigns: its position, or EXIT for the region's exit (or a
    // return, when the pass made the exit).
    let target_id = |s: MBlock| -> Result<u32, String> {
        match pos.get(&s) {
            Some(&i) => Ok(id(i)),
            None if s == exit => Ok(exit_id),
            None => Err(format!(
                "the region's edges leave it to {s}, not its exit or the head of a part"
            )),
        }
    };

    let (targets, retreating) = back_edge_targets(&tails, &pos, |b| func.successors(b));
    stats.retreating_edges = retreating;
    let guards: Vec<MBlock> = (0..n)
        .map(|_| {
            let g = func.new_block(None);
            func.blocks[g].kind = BlockKind::Guard;
            g
        })
        .collect();
    let be_guards: Vec<Option<MBlock>> = targets
        .iter()
        .map(|t| {
            t.map(|_| {
                let g = func.new_block(None);
                func.blocks[g].kind = BlockKind::Guard;
                g
            })
        })
        .collect();
    let after = |i: usize| if i + 1 < n { guards[i + 1] } else { exit };

    // Branches leaving a part become assignments to the guard variable (line 7); every
    // part then continues at the next guard, or at its back-edge guard (lines 15-17, 27).
    for i in 0..n {
        let b = tails[i];
        let next = be_guards[i].unwrap_or_else(|| after(i));
        let term = func.blocks[b].insts.pop();
        let assign = match term.as_ref().map(|t| &t.kind) {
            Some(MInstKind::Jump { dest }) => set_guard(regs, target_id(dest.block)?),
            Some(&MInstKind::Branch {
                pred,
                negated,
                ref taken,
                ref not_taken,
                ..
            }) => {
                let (t, f) = (target_id(taken.block)?, target_id(not_taken.block)?);
                let (a, c) = if negated { (f, t) } else { (t, f) };
                if a == c {
                    set_guard(regs, a)
                } else {
                    inst(MInstKind::Selp {
                        ty: MType::I32,
                        dst: regs.g,
                        a: Operand::Imm(u64::from(a)),
                        b: Operand::Imm(u64::from(c)),
                        pred,
                    })
                }
            }
            Some(MInstKind::Ret) if region.exit.is_none() => set_guard(regs, exit_id),
            _ => {
                return Err(format!(
                    "{b} of the region does not end with a jump or branch"
                ))
            }
        };
        let srcloc = term.map(|t| t.srcloc).unwrap_or_default();
        let insts = &mut func.blocks[b].insts;
        insts.push(MInst { srcloc, ..assign });
        insts.push(MInst {
            srcloc,
            ..jump(next)
        });
        stats.guard_assignments += 1;
    }

    // Guard blocks (lines 6, 8, 12-14, 18-19) and back-edge guards (lines 24-33). Lanes
    // that enter the region together and take only uniform branches (the divergence
    // analysis's verdict, which the emulator checks) hold one `g` between them: then no
    // guard splits the warp, and its branch is uniform too.
    let divergent = !uniform_region;
    for i in 0..n {
        let next = be_guards[i].unwrap_or_else(|| after(i));
        func.blocks[guards[i]].insts = vec![
            test_guard(regs, IntCC::Equal, id(i)),
            guard_branch(regs, order[i], next, divergent),
        ];
        stats.guard_blocks += 1;
        stats.guard_tests += 1;
        if let (Some(be), Some(t)) = (be_guards[i], targets[i]) {
            // Lanes whose next block is at or before this one go back; the destination's
            // guard is the first one such a lane may need.
            func.blocks[be].insts = vec![
                test_guard(regs, IntCC::UnsignedLessThanOrEqual, id(i)),
                guard_branch(regs, guards[t], after(i), divergent),
            ];
            stats.back_edge_guards += 1;
            stats.guard_tests += 1;
        }
    }

    // The entry sets the guard variable and enters the first guard (lines 9-11).
    redirect_entry(func, region.entry, &pos, regs, guards[0])?;
    stats.guard_assignments += 1;

    // Layout: the linearized sequence where the first region block was, set by
    // [`place_regions`] once for every region (a rebuild of the whole layout per region
    // made the pass quadratic in the kernel).
    let mut sequence = Vec::with_capacity(members.len() + 2 * n + 1);
    for (i, part) in parts.iter().enumerate() {
        sequence.push(guards[i]);
        sequence.extend(part.blocks.iter().copied());
        sequence.extend(be_guards[i]);
    }
    placement.push(Placed {
        members: members.into_iter().collect(),
        sequence,
        new_exit: region.exit.is_none().then_some(exit),
    });

    Ok(Linearized {
        entry: region.entry,
        order,
        tails,
        blocks: block_order,
        guards,
        back_edge_guards: be_guards,
        back_edge_targets: targets,
        exit,
        exit_id,
        stats,
    })
}

/// Where a linearized region's blocks go in the layout (see [`place_regions`]).
pub struct Placed {
    /// The region's blocks before linearization (and the halves of blocks split for
    /// interleaving).
    members: Vec<MBlock>,
    /// Its guards and blocks in their linearized order.
    sequence: Vec<MBlock>,
    /// The return block made as its exit, if one was made.
    new_exit: Option<MBlock>,
}

/// Sets the layout of the linearized regions `placed` (emptying it), in one walk of the
/// layout however many regions there are: each region's sequence where its first block
/// was, every block outside the regions where it was, and the return blocks made as
/// exits at the end, in the order of their regions. Placing the regions one at a time
/// gives the same layout, because the regions are disjoint: placing one moves no other
/// region's blocks relative to each other or to the blocks outside.
fn place_regions(func: &mut MirFunction, placed: &mut Vec<Placed>) {
    if placed.is_empty() {
        return;
    }
    const NONE: u32 = u32::MAX;
    let mut region_of = vec![NONE; func.blocks.len()];
    for (r, p) in placed.iter().enumerate() {
        for &b in &p.members {
            region_of[b.index()] = r as u32;
        }
    }
    let extra: usize = placed.iter().map(|p| p.sequence.len() + 1).sum();
    let mut done = vec![false; placed.len()];
    let mut order = Vec::with_capacity(func.order.len() + extra);
    for &b in &func.order {
        match region_of[b.index()] {
            NONE => order.push(b),
            r if !done[r as usize] => {
                done[r as usize] = true;
                order.extend(placed[r as usize].sequence.iter().copied());
            }
            _ => {}
        }
    }
    // A region none of whose blocks was laid out goes where placing it alone would put
    // it: at the end, after the exits made before it.
    for (p, done) in placed.iter().zip(done) {
        if !done {
            order.extend(p.sequence.iter().copied());
        }
        order.extend(p.new_exit);
    }
    func.order = order;
    placed.clear();
}

/// Makes the region's entry set the guard variable to the region block it branched to
/// and go to the first guard instead. Where the entry also branches past the region (to
/// its exit), the branch stays and only its edges into the region move.
fn redirect_entry(
    func: &mut MirFunction,
    entry: MBlock,
    pos: &FxHashMap<MBlock, usize>,
    regs: GuardRegs,
    first_guard: MBlock,
) -> Result<(), String> {
    let id_of = |s: MBlock| pos.get(&s).map(|&i| (i + 1) as u32);
    let term = func.blocks[entry]
        .insts
        .pop()
        .ok_or_else(|| format!("the region's entry {entry} is empty"))?;
    let srcloc = term.srcloc;
    let mut out = Vec::with_capacity(2);
    match term.kind {
        MInstKind::Jump { dest } => {
            let i = id_of(dest.block).ok_or("the region's entry does not enter it")?;
            out.push(set_guard(regs, i));
            out.push(jump(first_guard));
        }
        MInstKind::Branch {
            pred,
            negated,
            taken,
            not_taken,
            divergent,
        } => match (id_of(taken.block), id_of(not_taken.block)) {
            (Some(t), Some(f)) => {
                let (a, c) = if negated { (f, t) } else { (t, f) };
                out.push(inst(MInstKind::Selp {
                    ty: MType::I32,
                    dst: regs.g,
                    a: Operand::Imm(u64::from(a)),
                    b: Operand::Imm(u64::from(c)),
                    pred,
                }));
                out.push(jump(first_guard));
            }
            (Some(i), None) | (None, Some(i)) => {
                out.push(set_guard(regs, i));
                let mv = |t: BlockTarget| {
                    if id_of(t.block).is_some() {
                        BlockTarget::new(first_guard)
                    } else {
                        t
                    }
                };
                out.push(inst(MInstKind::Branch {
                    pred,
                    negated,
                    taken: mv(taken),
                    not_taken: mv(not_taken),
                    divergent,
                }));
            }
            (None, None) => return Err("the region's entry does not enter it".into()),
        },
        _ => return Err(format!("the region's entry {entry} ends without a branch")),
    }
    func.blocks[entry]
        .insts
        .extend(out.into_iter().map(|i| MInst { srcloc, ..i }));
    Ok(())
}
