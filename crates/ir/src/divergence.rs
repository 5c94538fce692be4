//! Divergence (uniformity) analysis: which values may differ between the threads of a
//! warp that execute their definition together, and which branches may therefore split a
//! warp — with, for each divergent one, the reason.
//!
//! A SIMT machine runs the threads of a warp in lock step. A conditional branch whose
//! condition is the same in every active thread (*uniform*) sends the whole warp one way
//! and needs no reconvergence bookkeeping: PTX marks it `bra.uni`, the SIMT bytecode gives
//! it no reconvergence point. Only a *divergent* branch may split the warp. This analysis
//! finds the values that may be divergent; everything else is proven uniform. It follows
//! the rules of LLVM's "Convergence and Uniformity" documentation and its
//! `GenericUniformityAnalysis` (Karrenberg and Hack, "Whole-function vectorization", CGO
//! 2011, for the classic formulation; Rosemann, Moll and Hack, "An abstract interpretation
//! for SPMD divergence on reducible control flow graphs", POPL 2021, Section 5, for the
//! joins): divergence starts at a few *sources* and spreads by *data dependence*, *sync
//! dependence* and *temporal divergence* until a fixpoint, worked through with a
//! worklist (never recursion, since the input is user code).
//!
//! # Sources
//!
//! - `thread_id` (every dimension) and `lane_id` differ from thread to thread.
//! - `atomic_rmw` and `atomic_cas` return a different old value to every thread.
//! - `local_addr` names a per-thread location, and every `load` from local memory reads
//!   per-thread memory: both are divergent.
//! - A `load` from global or shared memory is uniform only when its address is uniform
//!   *and* the kernel has no `store` or atomic to that address space at all: then the
//!   space is read-only for the whole launch and every thread reads the same bytes, at
//!   any time. Any store to the space could race with the load (another warp may write
//!   between the loads of two groups of lanes), so every load from it is divergent. This
//!   is deliberately simple and sound; an alias analysis could refine it.
//!
//! Kernel parameters, `block_id`, `block_dim`, `grid_dim`, constants and `shared_addr`
//! are uniform.
//!
//! # Data dependence
//!
//! An instruction with a divergent operand has a divergent result (a `select` on a
//! divergent condition included), and a divergent branch argument makes the parameter it
//! is passed to divergent.
//!
//! # Sync dependence: joins
//!
//! A `brif` or `br_table` whose condition or index is divergent is a divergent branch.
//! Its threads may go different ways and meet again at a *join*: a block where two paths
//! from the branch that start on different edges and share no other block meet. Threads
//! arrive there by different edges with different arguments, so the parameters of the
//! join are divergent even when every argument is uniform:
//!
//! ```text
//! block0:                      v1 = thread_id x
//!     brif v1, block1, block2  ; divergent: v1 comes from thread_id
//! block1:
//!     jump block3(v10)         ; v10 and v20 uniform (say, different constants)
//! block2:
//!     jump block3(v20)
//! block3(v3: i32):             ; a join of the divergent branch: v3 is divergent
//! ```
//!
//! Had `v1` been uniform (`block_id x`), `v3` would be uniform: every thread of the warp
//! takes the same edge. And a parameter whose incoming arguments, over every edge into
//! the join, are all the same value, or constants all equal, is that value in every
//! thread whichever edge it came by: it stays uniform (LLVM's rule for a phi with one
//! incoming value). A block named twice by the divergent branch itself is a join.
//!
//! The joins are found per divergent branch by the label propagation of [`sync`] (an SSA
//! construction for a variable defined anew on each edge out of the branch). Paths are
//! kept within one iteration of each loop around the branch: going round a back edge
//! reaches a loop's exits, not its body again, so a block after a loop is not a join just
//! because threads left the loop in different iterations, and a loop around the branch
//! never has its header made a join by the paths of an inner loop.
//!
//! # Temporal divergence
//!
//! A loop (a cycle of [`LoopForest`], irreducible ones included) around a divergent
//! branch has a *divergent exit* when an exit is reached both by a path leaving it from
//! the branch and by a path that first goes back to its header: threads leave it in
//! different iterations. Inside the loop the threads still running agree on a value
//! computed from uniform operands (an induction variable stays uniform), but each leaving
//! thread carries out the value of *its* last iteration. So every use outside the loop of
//! a value defined inside it is divergent — the results of instructions outside the loop
//! that read such a value, branches outside the loop that test it, and the parameters of
//! blocks outside the loop that receive it — while values defined outside the loop and
//! passed to an exit stay what they were:
//!
//! ```text
//! block1(v3: i32):              ; loop header: v3 stays uniform inside the loop
//!     v4 = icmp slt v3, v0      ; v0 = thread_id x: v4 divergent, the exit divergent
//!     brif v4, block2, block3(v3, v9)
//! block2:
//!     v5 = iadd v3, v1          ; uniform
//!     jump block1(v5)
//! block3(v6: i32, v7: i32):     ; v6 = the trip count of each thread: divergent;
//!                               ; v7 = v9, defined before the loop: uniform
//! ```
//!
//! The loop marked is the outermost one around the branch that does not contain the exit.
//! Constants and other values without operands (`block_id`, ...) are the same in every
//! iteration and never temporally divergent. The divergent exit itself is treated like a
//! join: threads reach it in different iterations, possibly by different edges out of the
//! loop, so a parameter whose arguments differ between those edges is divergent even when
//! each argument is uniform and defined before the loop (an edge from outside the loop,
//! like a uniform bypass, is reached by no thread that diverged at the branch, and is not
//! weighed). LLVM's own tests expect such a value uniform (its `divergent-cycle-exit-phi.ll`
//! records that as a known bug); the threads really do carry different values, and a
//! branch on one splits the warp.
//!
//! A loop with two back edges to one header is one loop of the forest, and a cycle
//! through a divergent branch can then end inside it: a header with a self-loop whose
//! branch is divergent, and a second latch further on. The branch's threads wait for each
//! other at its immediate post-dominator, inside the loop, and those that went round the
//! header meet the others there after more turns. The values defined on the paths from
//! the branch to that point (the header's included) are then divergent wherever they are
//! read past it, and the point's parameters are those of a join, exactly as for a loop
//! exit.
//!
//! # Irreducible cycles and the reconvergence model
//!
//! Where threads reconverge is a property of the machine, so the analysis takes its
//! [`Reconvergence`] model as a parameter:
//!
//! - [`Reconvergence::Ipdom`] (the SIMT target and its emulator): a split warp runs one
//!   group of threads at a time until the branch's immediate post-dominator. Threads that
//!   enter an irreducible cycle by different entries never run it together, so inside it
//!   the joins above are all there is to it.
//! - [`Reconvergence::Independent`] (PTX: machines with independent thread scheduling
//!   make no promise of when diverged threads run together again): when two disjoint paths
//!   from a divergent branch meet inside an irreducible cycle — it is entered divergently,
//!   or the branch is inside it and its header does not dominate the join — threads may
//!   run its blocks together in different iterations, and no reconvergence inside it is
//!   assumed: every value defined in the (outermost such) cycle is divergent, as in LLVM's
//!   "diverged entry" criterion. This keeps `bra.uni` off every branch that may split.
//!
//! The analysis runs on the IR, before lowering; the code generator keeps the IR's
//! branches and their post-dominators (the blocks it adds, like `br_table` search trees,
//! sit inside one IR block's region), so the flags stay true of the machine code.

mod order;
mod print;
mod proof;
mod sync;

pub use print::DivergenceDisplay;
pub use proof::{prove_divergent_branches, DivergentBranches, MAX_WALKS};

use crate::cfg::{ControlFlowGraph, DominatorTree, Loop, LoopForest, PostDominatorTree};
use crate::condcodes::AddrSpace;
use crate::dfg::ValueDef;
use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::{InstructionData, Opcode};
use core::fmt;
use cranelift_entity::{EntityRef, SecondaryMap};
use order::CycleOrder;

/// Where the threads of a split warp are assumed to run together again.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reconvergence {
    /// At the immediate post-dominator of the divergent branch, one group of threads at a
    /// time until then (a reconvergence stack: the SIMT target and its emulator).
    #[default]
    Ipdom,
    /// Nowhere in particular (independent thread scheduling: PTX). No reconvergence is
    /// assumed inside an irreducible cycle entered divergently.
    Independent,
}

impl Reconvergence {
    /// The model of the target called `name` (`ptx` or `simt`).
    pub fn for_target(name: &str) -> Option<Self> {
        match name {
            "ptx" => Some(Reconvergence::Independent),
            "simt" => Some(Reconvergence::Ipdom),
            _ => None,
        }
    }

    /// A short name: `ipdom` or `independent`.
    pub fn name(self) -> &'static str {
        match self {
            Reconvergence::Ipdom => "ipdom",
            Reconvergence::Independent => "independent",
        }
    }
}

/// Why a value or a branch is divergent: the rule that made it so first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The instruction differs between threads whatever its operands.
    Source(Opcode),
    /// Data dependence: an operand (the condition, for a branch) is divergent.
    Data(Value),
    /// A parameter of a join of a divergent branch.
    Join {
        /// The block ending with the divergent branch.
        branch: Block,
        /// The join.
        join: Block,
    },
    /// A use, outside a loop with a divergent exit, of a value defined inside it.
    Temporal {
        /// The value defined in the loop.
        value: Value,
        /// The loop's header.
        header: Block,
    },
    /// Defined in an irreducible cycle entered divergently (independent scheduling only).
    Irreducible {
        /// The cycle's header.
        header: Block,
        /// The block ending with the divergent branch whose paths meet in the cycle.
        branch: Block,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Source(op) => write!(f, "source: {op}"),
            Reason::Data(v) => write!(f, "data dependence on {v}"),
            Reason::Join { branch, join } => write!(f, "join of branch {branch} at {join}"),
            Reason::Temporal { value, header } => {
                write!(f, "temporal divergence of {value} out of loop {header}")
            }
            Reason::Irreducible { header, branch } => write!(
                f,
                "irreducible cycle {header} entered divergently by branch {branch}"
            ),
        }
    }
}

/// The result of the divergence analysis of one function: which values and which
/// branches may be divergent, and why (see the [module documentation](self) for the
/// rules).
#[derive(Clone, Debug)]
pub struct Divergence {
    model: Reconvergence,
    values: Vec<Option<Reason>>,
    branches: SecondaryMap<Block, Option<Reason>>,
    divergent_values: Vec<Value>,
    divergent_exits: Vec<Block>,
    assumed_divergent: Vec<Block>,
}

/// Analyses `func` under the immediate-post-dominator model (see [`Divergence::compute`]).
pub fn analyze(func: &Function) -> Divergence {
    Divergence::compute(func)
}

impl Divergence {
    /// Analyses `func` under the immediate-post-dominator model of the SIMT target
    /// ([`Reconvergence::Ipdom`]). The function should be verified; on an unverified one
    /// the analysis does not panic, and anything it cannot make sense of counts as
    /// divergent.
    pub fn compute(func: &Function) -> Self {
        Self::compute_for(func, Reconvergence::Ipdom)
    }

    /// Analyses `func` for a machine whose threads reconverge as `model` says.
    pub fn compute_for(func: &Function, model: Reconvergence) -> Self {
        let cfg = ControlFlowGraph::compute(func);
        let domtree = DominatorTree::compute(&cfg);
        Self::compute_with(func, model, &cfg, &domtree)
    }

    /// [`Divergence::compute_for`] for a caller that has computed the function's control
    /// flow graph and dominator tree already (and so does not pay for them twice).
    pub fn compute_with(
        func: &Function,
        model: Reconvergence,
        cfg: &ControlFlowGraph<Block>,
        domtree: &DominatorTree<Block>,
    ) -> Self {
        let postdom = PostDominatorTree::compute(cfg);
        let loops = LoopForest::compute(cfg);
        Self::compute_with_all(func, model, cfg, domtree, &postdom, &loops)
    }

    /// [`Divergence::compute_with`] for a caller that also has the post-dominator tree and
    /// the loop forest of the same graph (an analysis cache): nothing is computed twice.
    pub fn compute_with_all(
        func: &Function,
        model: Reconvergence,
        cfg: &ControlFlowGraph<Block>,
        domtree: &DominatorTree<Block>,
        postdom: &PostDominatorTree<Block>,
        loops: &LoopForest<Block>,
    ) -> Self {
        Analysis::new(func, model, cfg, domtree, postdom, loops).run()
    }

    /// The reconvergence model the analysis assumed.
    pub fn model(&self) -> Reconvergence {
        self.model
    }

    /// May `v` differ between threads that execute its definition together? Values that
    /// are not in the function count as divergent.
    pub fn is_divergent(&self, v: Value) -> bool {
        self.values.get(v.index()).is_none_or(|r| r.is_some())
    }

    /// Is `v` the same in every thread that executes its definition together?
    pub fn is_uniform(&self, v: Value) -> bool {
        !self.is_divergent(v)
    }

    /// Why `v` is divergent (`None` when it is uniform or not in the function).
    pub fn value_reason(&self, v: Value) -> Option<&Reason> {
        self.values.get(v.index()).and_then(|r| r.as_ref())
    }

    /// Does `block` end with a `brif` or `br_table` whose condition or index may be
    /// divergent, so that it may split the warp?
    pub fn is_divergent_branch(&self, block: Block) -> bool {
        self.branches[block].is_some()
    }

    /// Why the branch ending `block` is divergent (`None` when it is uniform).
    pub fn branch_reason(&self, block: Block) -> Option<&Reason> {
        self.branches[block].as_ref()
    }

    /// The divergent values, in increasing order.
    pub fn divergent_values(&self) -> &[Value] {
        &self.divergent_values
    }

    /// The blocks ending with a divergent branch, in increasing order.
    pub fn divergent_branches(&self) -> Vec<Block> {
        self.branches
            .iter()
            .filter(|(_, r)| r.is_some())
            .map(|(b, _)| b)
            .collect()
    }

    /// The headers of the loops with a divergent exit, in increasing order.
    pub fn loops_with_divergent_exit(&self) -> &[Block] {
        &self.divergent_exits
    }

    /// The headers of the irreducible cycles assumed divergent as a whole (under
    /// [`Reconvergence::Independent`] only), in increasing order.
    pub fn cycles_assumed_divergent(&self) -> &[Block] {
        &self.assumed_divergent
    }

    /// The analysis of `func` in the stable text format of `warplift divergence`.
    pub fn display<'a>(&'a self, func: &'a Function) -> DivergenceDisplay<'a> {
        DivergenceDisplay::new(self, func)
    }
}

/// The state of one analysis.
struct Analysis<'f> {
    func: &'f Function,
    model: Reconvergence,
    cfg: &'f ControlFlowGraph<Block>,
    domtree: &'f DominatorTree<Block>,
    /// Where the threads of a split warp wait for each other (see `mark_late_reconvergence`).
    postdom: &'f PostDominatorTree<Block>,
    loops: &'f LoopForest<Block>,
    order: CycleOrder,
    /// The tables of sync dependence, reused by every divergent branch.
    sync: sync::SyncScratch,
    /// The block of every placed instruction.
    inst_block: SecondaryMap<Inst, Option<Block>>,
    /// The placed instructions reading each value, each once, in layout order:
    /// `user_list[user_start[v]..user_start[v + 1]]` for value `v` (one list for all
    /// values rather than one allocation per value).
    user_start: Vec<u32>,
    user_list: Vec<Inst>,
    reasons: Vec<Option<Reason>>,
    branches: SecondaryMap<Block, Option<Reason>>,
    /// Loops already known to have a divergent exit.
    divergent_exit: SecondaryMap<Loop, bool>,
    /// Irreducible cycles whose every value is divergent.
    assumed_divergent: Vec<Loop>,
    /// Values newly found divergent whose users are still to be visited.
    worklist: Vec<Value>,
    /// Address spaces the kernel stores to (or updates atomically).
    written: WrittenSpaces,
}

impl<'f> Analysis<'f> {
    fn new(
        func: &'f Function,
        model: Reconvergence,
        cfg: &'f ControlFlowGraph<Block>,
        domtree: &'f DominatorTree<Block>,
        postdom: &'f PostDominatorTree<Block>,
        loops: &'f LoopForest<Block>,
    ) -> Self {
        let order = CycleOrder::compute(cfg, domtree, loops);
        let mut inst_block = SecondaryMap::new();
        // Sized once rather than grown instruction by instruction.
        inst_block.resize(func.dfg.num_insts());
        let num_values = func.dfg.num_values();
        // Per value, the last instruction counted as its reader, so that an instruction
        // reading a value twice is listed once.
        let mut last_reader: Vec<Option<Inst>> = vec![None; num_values];
        let mut user_start = vec![0u32; num_values + 1];
        let mut written = WrittenSpaces::default();
        for &b in func.layout.blocks() {
            for &inst in func.layout.block_insts(b) {
                if !func.dfg.insts.is_valid(inst) {
                    continue;
                }
                inst_block[inst] = Some(b);
                let data = &func.dfg.insts[inst];
                written.note(data);
                for v in data.all_values() {
                    if let Some(last) = last_reader.get_mut(v.index()) {
                        if *last != Some(inst) {
                            *last = Some(inst);
                            user_start[v.index() + 1] += 1;
                        }
                    }
                }
            }
        }
        for i in 0..num_values {
            user_start[i + 1] += user_start[i];
        }
        // Second walk: place each reader at the next free slot of its value's range.
        let mut next: Vec<u32> = user_start[..num_values].to_vec();
        let mut user_list = vec![Inst::from_u32(0); user_start[num_values] as usize];
        last_reader.fill(None);
        for &b in func.layout.blocks() {
            for &inst in func.layout.block_insts(b) {
                if !func.dfg.insts.is_valid(inst) {
                    continue;
                }
                for v in func.dfg.insts[inst].all_values() {
                    if let Some(last) = last_reader.get_mut(v.index()) {
                        if *last != Some(inst) {
                            *last = Some(inst);
                            user_list[next[v.index()] as usize] = inst;
                            next[v.index()] += 1;
                        }
                    }
                }
            }
        }
        Analysis {
            func,
            model,
            cfg,
            domtree,
            postdom,
            loops,
            sync: sync::SyncScratch::new(cfg.num_nodes(), domtree.rpo().len()),
            order,
            inst_block,
            user_start,
            user_list,
            reasons: vec![None; func.dfg.num_values()],
            branches: SecondaryMap::new(),
            divergent_exit: SecondaryMap::new(),
            assumed_divergent: Vec::new(),
            worklist: Vec::new(),
            written,
        }
    }

    /// Where the readers of `v` are in `user_list` (empty for a value not in the function).
    fn users(&self, v: Value) -> core::ops::Range<usize> {
        match (
            self.user_start.get(v.index()),
            self.user_start.get(v.index() + 1),
        ) {
            (Some(&s), Some(&e)) => s as usize..e as usize,
            _ => 0..0,
        }
    }

    fn run(mut self) -> Divergence {
        let func = self.func;
        // The sources.
        for &b in func.layout.blocks() {
            for &inst in func.layout.block_insts(b) {
                if !func.dfg.insts.is_valid(inst) {
                    continue;
                }
                let data = &func.dfg.insts[inst];
                if self.is_source(data) {
                    if let Some(v) = func.dfg.inst_result(inst) {
                        self.mark(v, Reason::Source(data.opcode()));
                    }
                }
            }
        }
        // Data dependence from the worklist; sync dependence and temporal divergence
        // whenever a branch turns divergent.
        while let Some(v) = self.worklist.pop() {
            for k in self.users(v) {
                let inst = self.user_list[k];
                self.visit_use(inst, v, Reason::Data(v));
            }
        }
        let divergent_values = (0..self.reasons.len())
            .filter(|&i| self.reasons[i].is_some())
            .map(Value::new)
            .collect();
        let mut divergent_exits: Vec<Block> = self
            .divergent_exit
            .iter()
            .filter(|&(_, &d)| d)
            .map(|(l, _)| self.loops.header(l))
            .collect();
        divergent_exits.sort_unstable();
        let mut assumed_divergent: Vec<Block> = self
            .assumed_divergent
            .iter()
            .map(|&l| self.loops.header(l))
            .collect();
        assumed_divergent.sort_unstable();
        Divergence {
            model: self.model,
            values: self.reasons,
            branches: self.branches,
            divergent_values,
            divergent_exits,
            assumed_divergent,
        }
    }

    /// Is the result of `data` divergent whatever its operands?
    fn is_source(&self, data: &InstructionData) -> bool {
        self.written.is_source(data)
    }

    /// Records that `v` is divergent, for `reason` (unless it already is).
    fn mark(&mut self, v: Value, reason: Reason) {
        if let Some(r) = self.reasons.get_mut(v.index()) {
            if r.is_none() {
                *r = Some(reason);
                self.worklist.push(v);
            }
        }
    }

    /// `inst` reads `v`, which is divergent where `inst` reads it, for `reason`: its
    /// result, the branch it may be, and the parameters it passes `v` to are divergent.
    fn visit_use(&mut self, inst: Inst, v: Value, reason: Reason) {
        let func = self.func;
        let data = &func.dfg.insts[inst];
        if let Some(r) = func.dfg.inst_result(inst) {
            self.mark(r, reason.clone());
        }
        if matches!(data, InstructionData::Brif { arg, .. } | InstructionData::BrTable { arg, .. } if *arg == v)
        {
            if let Some(b) = self.inst_block[inst] {
                self.mark_branch(b, reason.clone());
            }
        }
        self.mark_params_receiving(inst, v, &reason, |_| true);
    }

    /// Marks divergent the parameters that branch `inst` passes `v` to, on the edges to
    /// blocks accepted by `filter`.
    fn mark_params_receiving(
        &mut self,
        inst: Inst,
        v: Value,
        reason: &Reason,
        filter: impl Fn(Block) -> bool,
    ) {
        let func = self.func;
        for call in func.dfg.insts[inst].branch_destinations() {
            if !func.dfg.block_is_valid(call.block) || !filter(call.block) {
                continue;
            }
            let params = func.dfg.block_params(call.block);
            for (&a, &p) in call.args.iter().zip(params) {
                if a == v {
                    self.mark(p, reason.clone());
                }
            }
        }
    }

    /// The branch ending `block` is divergent: its joins, the irreducible cycles it makes
    /// divergent, and the loops it leaves divergently.
    fn mark_branch(&mut self, block: Block, reason: Reason) {
        if self.branches[block].is_some() {
            return;
        }
        self.branches[block] = Some(reason);
        let func = self.func;
        let Some(term) = func.layout.last_inst(block) else {
            return;
        };
        if !func.dfg.insts.is_valid(term) {
            return;
        }
        // Successors named by several destinations are joins on their own.
        let dests = func.dfg.insts[term].branch_destinations();
        let mut repeated: Vec<Block> = dests
            .iter()
            .map(|d| d.block)
            .filter(|&s| dests.iter().filter(|d| d.block == s).count() > 1)
            .collect();
        repeated.sort_unstable();
        repeated.dedup();
        let deps = sync::sync_deps(
            self.cfg,
            self.loops,
            &self.order,
            block,
            &repeated,
            &mut self.sync,
        );

        // A divergent cycle exit is reached by threads that left in different iterations,
        // perhaps by different edges: its parameters are divergent unless every edge
        // passes the same value (a value that leaves a loop by different exits in
        // different iterations differs between threads, whatever LLVM's tests say).
        // Only the edges out of the loop they leave bring such threads to a cycle exit that
        // is no join: an edge from elsewhere is not reached from the branch at all.
        let mut merges: Vec<(Block, Option<Loop>)> =
            deps.joins.iter().map(|&j| (j, None)).collect();
        for &exit in &deps.cycle_exits {
            if deps.joins.binary_search(&exit).is_err() {
                merges.push((exit, self.exited_loop(block, exit)));
            }
        }
        let mut cycles: Vec<Loop> = Vec::new();
        for &(join, from) in &merges {
            if self.model == Reconvergence::Independent {
                if let Some(c) = self.outermost_divergent_cycle(join, block) {
                    cycles.push(c);
                    continue;
                }
            }
            self.mark_join(join, block, from);
        }
        // Outer cycles first, so that the inner ones they contain are skipped.
        cycles.sort_by_key(|&c| self.loops.depth(c));
        for c in cycles {
            self.assume_divergent(c, block);
        }

        for &exit in &deps.cycle_exits {
            if let Some(l) = self.exited_loop(block, exit) {
                self.mark_divergent_exit(l);
            }
        }
        self.mark_late_reconvergence(block);
    }

    /// The threads split by the divergent branch ending `branch` wait for each other at
    /// its immediate post-dominator `p`. When `p` lies in the innermost loop around the
    /// branch and a path from the branch reaches the loop's header before `p`, the threads
    /// meet at `p` in different iterations: the branch closes a cycle through the header
    /// that the loop forest does not tell apart from the loop itself (a self-loop on a
    /// header that an outer latch also targets). Sync dependence keeps its paths within
    /// one iteration and sees no join there, so this is temporal divergence inside the
    /// loop: every value defined on those paths (the blocks reached from the branch
    /// without passing `p`) is divergent wherever it is read outside them, and `p`'s
    /// parameters are those of a join.
    fn mark_late_reconvergence(&mut self, branch: Block) {
        let Some(l) = self.loops.innermost_loop(branch) else {
            return;
        };
        let Some(p) = self.postdom.ipdom(branch) else {
            return;
        };
        if !self.loops.contains(l, p) {
            return;
        }
        let header = self.loops.header(l);
        let mut reached: Vec<Block> = Vec::new();
        let mut seen: SecondaryMap<Block, bool> = SecondaryMap::new();
        let mut stack: Vec<Block> = self.cfg.succs(branch).to_vec();
        while let Some(b) = stack.pop() {
            if b == p || seen[b] || !self.loops.contains(l, b) {
                continue;
            }
            seen[b] = true;
            reached.push(b);
            stack.extend_from_slice(self.cfg.succs(b));
        }
        if !seen[header] {
            return;
        }
        self.mark_join(p, branch, None);
        self.mark_read_outside(&reached, header, &seen);
    }

    /// The outermost loop around `branch` that does not contain `exit`.
    fn exited_loop(&self, branch: Block, exit: Block) -> Option<Loop> {
        let mut outer = None;
        let mut l = self.loops.innermost_loop(branch);
        while let Some(cur) = l {
            if self.loops.contains(cur, exit) {
                break;
            }
            outer = Some(cur);
            l = self.loops.parent(cur);
        }
        outer
    }

    /// `join` is a join of the divergent branch ending `branch` (or a divergent exit of the
    /// loop `from`): its parameters are divergent, except those whose arguments are the
    /// same on every incoming edge (from a block of `from`, if given).
    fn mark_join(&mut self, join: Block, branch: Block, from: Option<Loop>) {
        if !self.func.dfg.block_is_valid(join) {
            return;
        }
        for i in 0..self.func.dfg.block_params(join).len() {
            if self.same_on_every_edge(join, i, from) {
                continue;
            }
            let p = self.func.dfg.block_params(join)[i];
            self.mark(p, Reason::Join { branch, join });
        }
    }

    /// Is the `i`-th argument passed to `block` the same value, or equal constants, on
    /// every edge into it (from a block of `from`, if given)?
    fn same_on_every_edge(&self, block: Block, i: usize, from: Option<Loop>) -> bool {
        let func = self.func;
        let mut first: Option<Value> = None;
        // The graph lists each predecessor once; the answer does not depend on their
        // order (every argument must equal the first), so they are read in place.
        let preds = self.cfg.preds(block).iter().copied();
        for p in preds.filter(|&p| from.is_none_or(|l| self.loops.contains(l, p))) {
            let Some(term) = func.layout.last_inst(p) else {
                return false;
            };
            if !func.dfg.insts.is_valid(term) {
                return false;
            }
            for call in func.dfg.insts[term].branch_destinations() {
                if call.block != block {
                    continue;
                }
                let Some(&a) = call.args.get(i) else {
                    return false;
                };
                match first {
                    None => first = Some(a),
                    Some(f) if f == a || self.equal_constants(f, a) => {}
                    Some(_) => return false,
                }
            }
        }
        first.is_some()
    }

    /// Are `a` and `b` results of constant instructions with the same type and bits?
    fn equal_constants(&self, a: Value, b: Value) -> bool {
        let dfg = &self.func.dfg;
        let n = dfg.num_values();
        if a.index() >= n || b.index() >= n || dfg.value_type(a) != dfg.value_type(b) {
            return false;
        }
        let constant = |v: Value| match dfg.value_def(v) {
            ValueDef::Result(inst) if dfg.insts.is_valid(inst) => {
                let data = &dfg.insts[inst];
                matches!(
                    data.opcode(),
                    Opcode::Iconst | Opcode::F32const | Opcode::F64const
                )
                .then_some(data)
            }
            _ => None,
        };
        matches!((constant(a), constant(b)), (Some(x), Some(y)) if x == y)
    }

    /// Under independent scheduling: the outermost irreducible cycle in which the
    /// disjoint paths from `branch` meeting at `join` show that threads may run the cycle
    /// together in different iterations (LLVM's "diverged entry" criterion), if any.
    fn outermost_divergent_cycle(&self, join: Block, branch: Block) -> Option<Loop> {
        let loops = &self.loops;
        let cycle = loops.innermost_loop(join)?;
        // The branch is inside a cycle whose header does not dominate the join.
        if !self.domtree.strictly_dominates(branch, join) {
            let mut c = Some(cycle);
            while let Some(cur) = c {
                if loops.contains(cur, branch) {
                    break;
                }
                c = loops.parent(cur);
            }
            if let Some(mut c) = c {
                if loops.is_irreducible(c)
                    && !self.domtree.strictly_dominates(loops.header(c), join)
                {
                    while let Some(p) = loops.parent(c) {
                        if self.domtree.strictly_dominates(loops.header(p), join) {
                            break;
                        }
                        c = p;
                    }
                    return Some(c);
                }
            }
        }
        // The paths enter a cycle from outside: the outermost cycle without the branch.
        if loops.contains(cycle, branch) {
            return None;
        }
        let mut c = cycle;
        while let Some(p) = loops.parent(c) {
            if loops.contains(p, branch) {
                break;
            }
            c = p;
        }
        loops.is_irreducible(c).then_some(c)
    }

    /// Every value defined in the irreducible cycle `c` is divergent.
    fn assume_divergent(&mut self, c: Loop, branch: Block) {
        if self
            .assumed_divergent
            .iter()
            .any(|&a| self.loops.loop_contains(a, c))
        {
            return;
        }
        self.assumed_divergent.push(c);
        let header = self.loops.header(c);
        let blocks: Vec<Block> = self.loops.blocks(c).to_vec();
        for b in blocks {
            for v in self.defined_in(b) {
                self.mark(v, Reason::Irreducible { header, branch });
            }
        }
    }

    /// The values defined in `b`: its parameters, then its instructions' results.
    fn defined_in(&self, b: Block) -> Vec<Value> {
        let func = self.func;
        if !func.dfg.block_is_valid(b) {
            return Vec::new();
        }
        let params = func.dfg.block_params(b).iter().copied();
        let results = func
            .layout
            .block_insts(b)
            .iter()
            .filter(|&&i| func.dfg.insts.is_valid(i))
            .filter_map(|&i| func.dfg.inst_result(i));
        params.chain(results).collect()
    }

    /// Is `v` the same in every iteration of any loop, like a constant or the block's
    /// index (the result of an instruction without operands that is no source)? Such a
    /// value is never temporally divergent (LLVM's constants are not even instructions).
    fn is_invariant(&self, v: Value) -> bool {
        let dfg = &self.func.dfg;
        match dfg.value_def(v) {
            ValueDef::Result(inst) if dfg.insts.is_valid(inst) => {
                let data = &dfg.insts[inst];
                data.all_values().next().is_none() && !self.is_source(data)
            }
            _ => false,
        }
    }

    /// Loop `l` has a divergent exit: every use of its values outside it is divergent,
    /// and inside it the edges that leave it carry them out.
    fn mark_divergent_exit(&mut self, l: Loop) {
        if self.divergent_exit[l] {
            return;
        }
        self.divergent_exit[l] = true;
        let header = self.loops.header(l);
        let blocks: Vec<Block> = self.loops.blocks(l).to_vec();
        let mut inside: SecondaryMap<Block, bool> = SecondaryMap::new();
        for &b in &blocks {
            inside[b] = true;
        }
        self.mark_read_outside(&blocks, header, &inside);
    }

    /// Temporal divergence out of `blocks` (the blocks `inside` holds), which threads
    /// leave at different turns through `header`: every value they define is divergent
    /// where it is read outside them, and the edges that leave them carry it out.
    fn mark_read_outside(
        &mut self,
        blocks: &[Block],
        header: Block,
        inside: &SecondaryMap<Block, bool>,
    ) {
        for &b in blocks {
            for v in self.defined_in(b) {
                if self.is_invariant(v) {
                    continue;
                }
                let reason = Reason::Temporal { value: v, header };
                for k in self.users(v) {
                    let inst = self.user_list[k];
                    let Some(ub) = self.inst_block[inst] else {
                        continue;
                    };
                    if inside[ub] {
                        let outside: Vec<Block> = self.func.dfg.insts[inst]
                            .branch_destinations()
                            .iter()
                            .map(|d| d.block)
                            .filter(|&d| !inside[d])
                            .collect();
                        self.mark_params_receiving(inst, v, &reason, |d| outside.contains(&d));
                    } else {
                        self.visit_use(inst, v, reason.clone());
                    }
                }
            }
        }
    }
}

/// The address spaces a kernel writes (stores to or updates atomically). A load from a
/// space nothing writes reads what the launch put there, the same for every thread that
/// reads the same address, so only loads from written spaces are divergence sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WrittenSpaces {
    global: bool,
    shared: bool,
}

impl WrittenSpaces {
    /// Notes the space `data` writes, if it is a store or an atomic update.
    pub fn note(&mut self, data: &InstructionData) {
        if matches!(
            data.opcode(),
            Opcode::Store | Opcode::AtomicRmw | Opcode::AtomicCas
        ) {
            match data.addr_space() {
                Some(AddrSpace::Global) => self.global = true,
                Some(AddrSpace::Shared) => self.shared = true,
                _ => {}
            }
        }
    }

    /// Is the result of `data` divergent whatever its operands (a divergence source), in a
    /// kernel that writes these spaces?
    pub fn is_source(self, data: &InstructionData) -> bool {
        match data.opcode() {
            Opcode::ThreadId
            | Opcode::LaneId
            | Opcode::AtomicRmw
            | Opcode::AtomicCas
            | Opcode::LocalAddr => true,
            Opcode::Load => match data.addr_space() {
                Some(AddrSpace::Global) => self.global,
                Some(AddrSpace::Shared) => self.shared,
                _ => true,
            },
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests;
