//! Divergence (uniformity) analysis: which values may differ between the threads of a
//! warp that execute their definition together, and which branches may therefore split a
//! warp.
//!
//! A SIMT machine runs the threads of a warp in lock step. A conditional branch whose
//! condition is the same in every active thread (*uniform*) sends the whole warp one way
//! and needs no reconvergence bookkeeping: PTX marks it `bra.uni`, the SIMT bytecode gives
//! it no reconvergence point. Only a *divergent* branch may split the warp. This analysis
//! finds the values that may be divergent; everything else is proven uniform. It is the
//! classic formulation of Karrenberg and Hack ("Whole-function vectorization", CGO 2011)
//! and of LLVM's `DivergenceAnalysis` / `UniformityInfo`: divergence starts at a few
//! *sources* and spreads by *data dependence*, *sync dependence* and *temporal
//! divergence* until a fixpoint, worked through with a worklist (never recursion, since
//! the input is user code).
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
//! # Sync dependence
//!
//! A `brif` or `br_table` whose condition or index is divergent is a divergent branch.
//! Its threads may go different ways and meet again at *join* blocks, arriving by
//! different edges with different arguments, so the parameters of the joins are
//! divergent even when every argument is uniform:
//!
//! ```text
//! block0:                      v1 = thread_id x
//!     brif v1, block1, block2  ; divergent: v1 comes from thread_id
//! block1:
//!     jump block3(v10)         ; v10 and v20 uniform (say, constants)
//! block2:
//!     jump block3(v20)
//! block3(v3: i32):             ; a join of the divergent branch: v3 is divergent
//! ```
//!
//! Had `v1` been uniform (`block_id x`), `v3` would be uniform: every thread of the warp
//! takes the same edge. The joins of a divergent branch in block `B` with reconvergence
//! point `P` (the immediate post-dominator of `B`, where the targets bring every thread
//! back together) are computed as the blocks reachable from *two different successors*
//! of `B` by paths that stop at `P` (`P` itself included), and that have two
//! predecessors or more; a successor named by two destinations of the branch (with
//! different arguments) is a join as well. This over-approximates the joins of the
//! classic definition (ends of two disjoint paths from `B`) and costs one pass over the
//! region between `B` and `P` per divergent branch.
//!
//! # Temporal divergence
//!
//! A loop (a cycle of [`LoopForest`], irreducible ones included) that a divergent branch
//! may leave — some block between the branch and its reconvergence point lies outside
//! the loop — has a *divergent exit*: threads leave it in different iterations. Inside
//! the loop the threads still running agree on a value computed from uniform operands
//! (an induction variable stays uniform), but each leaving thread carries out the value
//! of *its* last iteration. So every use outside the loop of a value defined inside it
//! is divergent: the results of instructions outside the loop that read such a value,
//! branches outside the loop that test it, and the parameters of blocks outside the
//! loop that receive it (the exit blocks' parameters in particular).
//!
//! ```text
//! block1(v3: i32):              ; loop header: v3 stays uniform inside the loop
//!     v4 = icmp slt v3, v0      ; v0 = thread_id x: v4 divergent, the exit divergent
//!     brif v4, block2, block3(v3)
//! block2:
//!     v5 = iadd v3, v1          ; uniform
//!     jump block1(v5)
//! block3(v6: i32):              ; v6 = the trip count of each thread: divergent
//! ```
//!
//! The same holds for a cycle through a divergent branch that stays short of the branch's
//! reconvergence point even when the loop forest sees no exit: a natural loop with two
//! back edges to one header contains the cycle through the inner back edge, and threads
//! leave that cycle, in different iterations, for a block of the same loop. The values of
//! such a cycle are divergent where they are used outside it.
//!
//! The analysis runs on the IR, before lowering; the code generator keeps the IR's
//! branches and their post-dominators (the blocks it adds, like `br_table` search trees,
//! sit inside one IR block's region), so the flags stay true of the machine code.

use crate::cfg::{ControlFlowGraph, Loop, LoopForest, PostDominatorTree};
use crate::condcodes::AddrSpace;
use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::{InstructionData, Opcode};
use cranelift_entity::{EntityRef, SecondaryMap};

/// The result of the divergence analysis of one function: which values and which
/// branches may be divergent (see the [module documentation](self) for the rules).
#[derive(Clone, Debug)]
pub struct Divergence {
    values: Vec<bool>,
    branches: SecondaryMap<Block, bool>,
    divergent_values: Vec<Value>,
}

/// Analyses `func` (see [`Divergence::compute`]).
pub fn analyze(func: &Function) -> Divergence {
    Divergence::compute(func)
}

impl Divergence {
    /// Analyses `func`. The function should be verified; on an unverified one the
    /// analysis does not panic, and anything it cannot make sense of counts as divergent.
    pub fn compute(func: &Function) -> Self {
        Analysis::new(func).run()
    }

    /// May `v` differ between threads that execute its definition together? Values that
    /// are not in the function count as divergent.
    pub fn is_divergent(&self, v: Value) -> bool {
        self.values.get(v.index()).copied().unwrap_or(true)
    }

    /// Is `v` the same in every thread that executes its definition together?
    pub fn is_uniform(&self, v: Value) -> bool {
        !self.is_divergent(v)
    }

    /// Does `block` end with a `brif` or `br_table` whose condition or index may be
    /// divergent, so that it may split the warp?
    pub fn is_divergent_branch(&self, block: Block) -> bool {
        self.branches[block]
    }

    /// The divergent values, in increasing order.
    pub fn divergent_values(&self) -> &[Value] {
        &self.divergent_values
    }

    /// The blocks ending with a divergent branch, in increasing order.
    pub fn divergent_branches(&self) -> Vec<Block> {
        self.branches
            .iter()
            .filter(|&(_, &d)| d)
            .map(|(b, _)| b)
            .collect()
    }
}

/// The state of one analysis.
struct Analysis<'f> {
    func: &'f Function,
    cfg: ControlFlowGraph<Block>,
    pdt: PostDominatorTree<Block>,
    loops: LoopForest<Block>,
    /// The block of every placed instruction.
    inst_block: SecondaryMap<Inst, Option<Block>>,
    /// The placed instructions reading each value (an instruction once per read).
    users: Vec<Vec<Inst>>,
    divergent: Vec<bool>,
    branches: SecondaryMap<Block, bool>,
    /// Loops already known to have a divergent exit.
    divergent_exit: SecondaryMap<Loop, bool>,
    /// Values newly found divergent whose users are still to be visited.
    worklist: Vec<Value>,
    /// Address spaces the kernel stores to (or updates atomically).
    written_global: bool,
    written_shared: bool,
}

/// How the region of a divergent branch has reached a block.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Reach {
    /// Not reached.
    No,
    /// Reached from the successor with this index only.
    From(u32),
    /// Reached from two successors or more.
    Many,
}

impl<'f> Analysis<'f> {
    fn new(func: &'f Function) -> Self {
        let cfg = ControlFlowGraph::compute(func);
        let pdt = PostDominatorTree::compute(&cfg);
        let loops = LoopForest::compute(&cfg);
        let mut inst_block = SecondaryMap::new();
        let mut users = vec![Vec::new(); func.dfg.num_values()];
        let mut written_global = false;
        let mut written_shared = false;
        for &b in func.layout.blocks() {
            for &inst in func.layout.block_insts(b) {
                if !func.dfg.insts.is_valid(inst) {
                    continue;
                }
                inst_block[inst] = Some(b);
                let data = &func.dfg.insts[inst];
                if matches!(
                    data.opcode(),
                    Opcode::Store | Opcode::AtomicRmw | Opcode::AtomicCas
                ) {
                    match data.addr_space() {
                        Some(AddrSpace::Global) => written_global = true,
                        Some(AddrSpace::Shared) => written_shared = true,
                        _ => {}
                    }
                }
                for v in data.all_values() {
                    if let Some(list) = users.get_mut(v.index()) {
                        if list.last() != Some(&inst) {
                            list.push(inst);
                        }
                    }
                }
            }
        }
        Analysis {
            func,
            cfg,
            pdt,
            loops,
            inst_block,
            users,
            divergent: vec![false; func.dfg.num_values()],
            branches: SecondaryMap::new(),
            divergent_exit: SecondaryMap::new(),
            worklist: Vec::new(),
            written_global,
            written_shared,
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
                if self.is_source(&func.dfg.insts[inst]) {
                    if let Some(v) = func.dfg.inst_result(inst) {
                        self.mark(v);
                    }
                }
            }
        }
        // Data dependence from the worklist; sync dependence and temporal divergence
        // whenever a branch turns divergent.
        while let Some(v) = self.worklist.pop() {
            let Some(users) = self.users.get(v.index()) else {
                continue;
            };
            for i in 0..users.len() {
                let inst = self.users[v.index()][i];
                self.visit_use(inst, v);
            }
        }
        let divergent_values = (0..self.divergent.len())
            .filter(|&i| self.divergent[i])
            .map(Value::new)
            .collect();
        Divergence {
            values: self.divergent,
            branches: self.branches,
            divergent_values,
        }
    }

    /// Is the result of `data` divergent whatever its operands?
    fn is_source(&self, data: &InstructionData) -> bool {
        match data.opcode() {
            Opcode::ThreadId
            | Opcode::LaneId
            | Opcode::AtomicRmw
            | Opcode::AtomicCas
            | Opcode::LocalAddr => true,
            Opcode::Load => match data.addr_space() {
                Some(AddrSpace::Global) => self.written_global,
                Some(AddrSpace::Shared) => self.written_shared,
                _ => true,
            },
            _ => false,
        }
    }

    /// Records that `v` is divergent.
    fn mark(&mut self, v: Value) {
        if let Some(d) = self.divergent.get_mut(v.index()) {
            if !*d {
                *d = true;
                self.worklist.push(v);
            }
        }
    }

    /// Marks every parameter of `block` divergent.
    fn mark_params(&mut self, block: Block) {
        if !self.func.dfg.block_is_valid(block) {
            return;
        }
        for i in 0..self.func.dfg.block_params(block).len() {
            let p = self.func.dfg.block_params(block)[i];
            self.mark(p);
        }
    }

    /// `inst` reads the divergent value `v`: data dependence.
    fn visit_use(&mut self, inst: Inst, v: Value) {
        let func = self.func;
        let data = &func.dfg.insts[inst];
        if let Some(r) = func.dfg.inst_result(inst) {
            self.mark(r);
        }
        if matches!(data, InstructionData::Brif { arg, .. } | InstructionData::BrTable { arg, .. } if *arg == v)
        {
            if let Some(b) = self.inst_block[inst] {
                self.mark_branch(b);
            }
        }
        self.mark_params_receiving(inst, v, |_| true);
    }

    /// Marks divergent the parameters that branch `inst` passes `v` to, on the edges to
    /// blocks accepted by `filter`.
    fn mark_params_receiving(&mut self, inst: Inst, v: Value, filter: impl Fn(Block) -> bool) {
        let func = self.func;
        for call in func.dfg.insts[inst].branch_destinations() {
            if !func.dfg.block_is_valid(call.block) || !filter(call.block) {
                continue;
            }
            let params = func.dfg.block_params(call.block);
            for (&a, &p) in call.args.iter().zip(params) {
                if a == v {
                    self.mark(p);
                }
            }
        }
    }

    /// The branch ending `block` is divergent: its joins and the loops it leaves.
    fn mark_branch(&mut self, block: Block) {
        if self.branches[block] {
            return;
        }
        self.branches[block] = true;
        let func = self.func;
        let Some(term) = func.layout.last_inst(block) else {
            return;
        };
        if !func.dfg.insts.is_valid(term) {
            return;
        }
        let dests = func.dfg.insts[term].branch_destinations();

        // Successors named by several destinations are joins on their own (the threads
        // may pass different arguments); the others start one label each.
        let mut reach: SecondaryMap<Block, Reach> = SecondaryMap::with_default(Reach::No);
        let mut stack: Vec<Block> = Vec::new();
        let succs = self.cfg.succs(block);
        for (i, &s) in succs.iter().enumerate() {
            let named = dests.iter().filter(|d| d.block == s).count();
            reach[s] = if named > 1 {
                Reach::Many
            } else {
                Reach::From(i as u32)
            };
            stack.push(s);
        }
        let stop = self.pdt.reconvergence_point(block);
        let mut visited: Vec<Block> = succs.to_vec();
        // Labels spread forward, stopping at the reconvergence point; a block whose label
        // changes is visited again, at most twice in all (`From` then `Many`).
        while let Some(n) = stack.pop() {
            if Some(n) == stop {
                continue;
            }
            let label = reach[n];
            for &s in self.cfg.succs(n) {
                let new = match (reach[s], label) {
                    (Reach::No, l) => l,
                    (Reach::From(a), Reach::From(b)) if a == b => continue,
                    (Reach::Many, _) => continue,
                    _ => Reach::Many,
                };
                if reach[s] == Reach::No {
                    visited.push(s);
                }
                reach[s] = new;
                stack.push(s);
            }
        }
        let mut joins: Vec<Block> = Vec::new();
        for &n in &visited {
            if reach[n] == Reach::Many
                && (self.cfg.preds(n).len() > 1 || self.cfg.succs(block).contains(&n))
            {
                joins.push(n);
            }
        }
        for j in joins {
            self.mark_params(j);
        }

        // A cycle through `block` that stays short of the reconvergence point: threads
        // leave it for the reconvergence point in different iterations, so its values are
        // temporally divergent wherever they are used outside it. The loops of the loop
        // forest below catch the cycles the region leaves; this one may lie inside a
        // larger loop that the region never leaves (two back edges to one header: the
        // inner cycle's exit is a block of the same natural loop).
        if reach[block] != Reach::No {
            let mut cycle: SecondaryMap<Block, bool> = SecondaryMap::new();
            let mut members = vec![block];
            cycle[block] = true;
            let mut i = 0;
            while let Some(&n) = members.get(i) {
                i += 1;
                for &p in self.cfg.preds(n) {
                    if reach[p] != Reach::No && Some(p) != stop && !cycle[p] {
                        cycle[p] = true;
                        members.push(p);
                    }
                }
            }
            self.mark_cycle_exit(&members, &cycle);
        }

        // The loops around `block` that the region leaves. They nest, so if a block of
        // the region is outside a loop it is outside every loop inside that one: count,
        // from the innermost, how many loops are left.
        let mut chain: Vec<Loop> = Vec::new();
        let mut l = self.loops.innermost_loop(block);
        while let Some(cur) = l {
            chain.push(cur);
            l = self.loops.parent(cur);
        }
        let mut left = 0;
        for &n in &visited {
            while left < chain.len() && !self.loops.contains(chain[left], n) {
                left += 1;
            }
        }
        for &l in &chain[..left] {
            self.mark_divergent_exit(l);
        }
    }

    /// The cycle `members` (membership in `inside`: a loop of the forest, or a cycle through
    /// a divergent branch) has a divergent exit: every use of its values outside it is
    /// divergent, and inside it the edges that leave it carry them out.
    fn mark_cycle_exit(&mut self, members: &[Block], inside: &SecondaryMap<Block, bool>) {
        let func = self.func;
        for &b in members {
            if !func.dfg.block_is_valid(b) {
                continue;
            }
            let params = func.dfg.block_params(b).iter().copied();
            let results = func
                .layout
                .block_insts(b)
                .iter()
                .filter(|&&i| func.dfg.insts.is_valid(i))
                .filter_map(|&i| func.dfg.inst_result(i));
            let defined: Vec<Value> = params.chain(results).collect();
            for v in defined {
                let Some(users) = self.users.get(v.index()) else {
                    continue;
                };
                for k in 0..users.len() {
                    let inst = self.users[v.index()][k];
                    let Some(ub) = self.inst_block[inst] else {
                        continue;
                    };
                    if inside[ub] {
                        self.mark_params_receiving(inst, v, |d| !inside[d]);
                    } else {
                        self.visit_use(inst, v);
                    }
                }
            }
        }
    }

    /// Loop `l` has a divergent exit: every use of its values outside it is divergent.
    fn mark_divergent_exit(&mut self, l: Loop) {
        if self.divergent_exit[l] {
            return;
        }
        self.divergent_exit[l] = true;
        let blocks: Vec<Block> = self.loops.blocks(l).to_vec();
        let mut inside: SecondaryMap<Block, bool> = SecondaryMap::new();
        for &b in &blocks {
            inside[b] = true;
        }
        self.mark_cycle_exit(&blocks, &inside);
    }
}

#[cfg(test)]
mod tests;
