//! Sync dependence: the joins and the divergent cycle exits of one divergent branch.
//!
//! A block `J` is a *join* of a divergent branch in block `B` when two paths from `B`
//! that start on different edges and share no block but `B` and `J` meet at `J`: threads
//! that took different sides arrive there by different edges, so the parameters of `J`
//! may differ between them. A *divergent cycle exit* `X` of a cycle `C` around `B` is an
//! exit reached by a path from `B` that leaves `C` and by one that first goes back to
//! `C`'s header: threads leave `C` for `X` in different iterations (temporal
//! divergence). Both sets are computed as LLVM's uniformity analysis does (its
//! `GenericSyncDependenceAnalysis`, after Rosemann, Moll and Hack, "An abstract
//! interpretation for SPMD divergence on reducible control flow graphs", POPL 2021,
//! Section 5), by an SSA construction for a virtual variable defined anew on each edge out
//! of `B`: a block needs a phi for it exactly where two disjoint paths meet.
//!
//! Each block reached gets a *label*, the block where the value of the virtual variable
//! reaching it was defined (a successor of `B`, or a join, which defines a phi).
//! Labels travel along edges in the [cycle-contiguous order](super::order); a block
//! reached with two different labels is a join, and labels itself. Two rules keep the
//! paths within one iteration of every loop around `B`, and skip loops `B` is not in:
//!
//! - The header of a *reducible* loop passes its label to the loop's exits instead of its
//!   successors. For a loop around `B`, reaching the header means going round the back
//!   edge: an exit already labelled otherwise is a divergent cycle exit rather than a
//!   join (the threads meeting there left in different iterations; the analysis treats
//!   its parameters like a join's, and the loop's values as temporally divergent). For a
//!   loop elsewhere, a path entering at the header leaves it with the same label, so its
//!   inside is skipped.
//! - `B` itself passes nothing on: a path through `B` again is not disjoint from the
//!   first.
//!
//! Irreducible loops are walked through like any blocks, until a fixpoint. Propagation
//! stops early once a single block holds a label not yet passed on and it lies in no
//! irreducible loop around `B`: everything after it can only receive that one label.
//! For an irreducible loop around `B`, its exits whose label differs from its header's
//! are divergent exits; an immediate successor of `B` outside `B`'s innermost loop is one
//! as well.
//!
//! ```text
//! block1:  brif v_tid, block2, block3   ; B, in the loop {1, 2}
//! block2:  jump block1                  ; label block2, reaches the header block1:
//!                                       ; block1's exit block3 gets label block2 too
//! block3:  ...                          ; label block3 from B: a divergent cycle exit,
//!                                       ; not a join
//! ```

use super::order::CycleOrder;
use crate::cfg::{ControlFlowGraph, Loop, LoopForest};
use crate::entities::Block;
use cranelift_entity::EntityRef;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The joins and divergent cycle exits of one branch.
#[derive(Default)]
pub(super) struct SyncDeps {
    /// Blocks where disjoint paths from the branch meet, in increasing order.
    pub joins: Vec<Block>,
    /// Exits of loops around the branch that threads reach in different iterations, in
    /// increasing order.
    pub cycle_exits: Vec<Block>,
}

/// Tables the propagation reuses from branch to branch, sized once per function: a kernel
/// with thousands of divergent branches would otherwise build a map and a set for each.
/// Between two propagations every label is `None` and nothing is pending.
#[derive(Default)]
pub(super) struct SyncScratch {
    /// The label of each block reached, by block index.
    labels: Vec<Option<Block>>,
    /// The blocks given a label, to clear them afterwards.
    touched: Vec<Block>,
    /// The positions (in the cycle order) of the blocks whose label is still to be passed
    /// on, smallest first; each at most once, as `is_pending` records.
    pending: BinaryHeap<Reverse<u32>>,
    is_pending: Vec<bool>,
}

impl SyncScratch {
    /// Tables for a function of `blocks` block numbers and `positions` ordered blocks.
    pub(super) fn new(blocks: usize, positions: usize) -> Self {
        SyncScratch {
            labels: vec![None; blocks],
            touched: Vec::new(),
            pending: BinaryHeap::new(),
            is_pending: vec![false; positions],
        }
    }

    fn label(&self, b: Block) -> Option<Block> {
        self.labels.get(b.index()).copied().flatten()
    }

    fn set_label(&mut self, b: Block, label: Block) {
        if let Some(slot) = self.labels.get_mut(b.index()) {
            if slot.is_none() {
                self.touched.push(b);
            }
            *slot = Some(label);
        }
    }

    fn insert_pending(&mut self, pos: u32) {
        if let Some(flag) = self.is_pending.get_mut(pos as usize) {
            if !*flag {
                *flag = true;
                self.pending.push(Reverse(pos));
            }
        }
    }

    /// Empties the tables for the next branch.
    fn clear(&mut self) {
        for b in self.touched.drain(..) {
            self.labels[b.index()] = None;
        }
        for Reverse(pos) in self.pending.drain() {
            self.is_pending[pos as usize] = false;
        }
    }
}

/// The propagation of labels for one branch.
struct Propagation<'a> {
    order: &'a CycleOrder,
    tables: &'a mut SyncScratch,
    deps: SyncDeps,
}

impl Propagation<'_> {
    /// Pushes `label` along an edge (or a virtual cycle-exit edge) into `succ`.
    fn visit(&mut self, succ: Block, label: Block, cycle_exit: bool) {
        let Some(pos) = self.order.pos(succ) else {
            return;
        };
        let old = self.tables.label(succ);
        if old == Some(label) {
            return;
        }
        if old != Some(succ) {
            self.tables.insert_pending(pos);
        }
        if old.is_none() {
            self.tables.set_label(succ, label);
            return;
        }
        // Two different definitions meet: a phi, labelled by the block itself.
        self.tables.set_label(succ, succ);
        if cycle_exit {
            self.deps.cycle_exits.push(succ);
        } else {
            self.deps.joins.push(succ);
        }
    }
}

/// The joins and divergent cycle exits of the divergent branch ending `branch`;
/// `repeated` lists its successors named by several of its destinations (joins already,
/// since their arguments may differ between the edges).
pub(super) fn sync_deps(
    cfg: &ControlFlowGraph<Block>,
    loops: &LoopForest<Block>,
    order: &CycleOrder,
    branch: Block,
    repeated: &[Block],
    tables: &mut SyncScratch,
) -> SyncDeps {
    if order.pos(branch).is_none() {
        return SyncDeps::default();
    }
    let mut p = Propagation {
        order,
        tables,
        deps: SyncDeps::default(),
    };
    let branch_loop = loops.innermost_loop(branch);
    // The outermost of the irreducible loops around `branch` that no reducible loop
    // separates from it: inside it, labels may come back, and propagation goes on.
    let irreducible_ancestor = {
        let mut found = None;
        let mut l = branch_loop;
        while let Some(cur) = l {
            if !loops.is_irreducible(cur) {
                break;
            }
            found = Some(cur);
            l = loops.parent(cur);
        }
        found
    };
    let around_branch = |l: Loop| loops.contains(l, branch);

    let mut succs: Vec<Block> = cfg.succs(branch).to_vec();
    succs.dedup();
    for &s in &succs {
        if branch_loop.is_some_and(|l| !loops.contains(l, s)) {
            p.deps.cycle_exits.push(s);
        }
        p.visit(s, s, false);
    }
    p.deps.joins.extend_from_slice(repeated);

    while let Some(&Reverse(pos)) = p.tables.pending.peek() {
        let block = order.block(pos);
        let header_of = loops
            .innermost_loop(block)
            .filter(|&l| loops.header(l) == block);
        let may_come_back = irreducible_ancestor.is_some_and(|l| loops.contains(l, block))
            || header_of.is_some_and(around_branch);
        if p.tables.pending.len() == 1 && !may_come_back {
            break;
        }
        p.tables.pending.pop();
        p.tables.is_pending[pos as usize] = false;
        if block == branch {
            continue;
        }
        // Every pending block has a label: `visit` gives it one as it queues it.
        let Some(label) = p.tables.label(block) else {
            continue;
        };
        match header_of {
            Some(l) if !loops.is_irreducible(l) => {
                let inside = around_branch(l);
                for &x in loops.exits(l) {
                    p.visit(x, label, inside);
                }
            }
            _ => {
                for &s in cfg.succs(block) {
                    p.visit(s, label, false);
                }
            }
        }
    }

    // Irreducible loops around the branch: an exit labelled unlike the header is left in
    // different iterations.
    let mut l = branch_loop;
    while let Some(cur) = l {
        if loops.is_irreducible(cur) {
            let header_label = p.tables.label(loops.header(cur));
            for &x in loops.exits(cur) {
                if p.tables.label(x) != header_label {
                    p.deps.cycle_exits.push(x);
                }
            }
        }
        l = loops.parent(cur);
    }

    p.tables.clear();
    let mut deps = p.deps;
    deps.joins.sort_unstable();
    deps.joins.dedup();
    deps.cycle_exits.sort_unstable();
    deps.cycle_exits.dedup();
    deps
}
