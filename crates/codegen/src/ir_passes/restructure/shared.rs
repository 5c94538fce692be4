//! What the regions of one run share, so that restructuring a region costs what the
//! region costs, not what the kernel does.
//!
//! Restructuring a region reads three things of the whole kernel: the edges into its
//! blocks and its exit (to split those from multi-way branches and to assign the
//! parameters on them), the values of its blocks used in other blocks (they become
//! variables), and, to rebuild SSA form, the dominator tree and every use of its
//! variables. Computed afresh per region, they made a run quadratic in the kernel. Here
//! the edges are computed once and updated for the blocks each region changes, the
//! values used outside their block are found once, and one SSA repair serves a *batch*
//! of regions, run when a region would touch a batch's blocks and at the end.
//!
//! One repair for many regions is exact for the same reason as in `linearize_ssa`'s:
//! the regions are disjoint single-entry, single-exit subgraphs, so restructuring one
//! changes neither dominance among another's blocks nor where another's values are used,
//! and each variable belongs to one region, its zero in that region's entry. A region
//! may be entered from the block another one leaves to, and leave to the block another
//! is entered from: a variable of the one then reads the other's value through its
//! definitions (`Src::Old`), which the repair resolves over the final graph. Any other
//! contact (a shared entry or exit, a block another region changed) ends the batch
//! first, so such a region sees the kernel exactly as restructuring the regions one at
//! a time would leave it.
//!
//! The values used outside their block are those of the kernel before any region was
//! restructured, with the arguments of every edge split since (they move into the new
//! block): restructuring and repairing a region adds uses of another region's
//! values only where such a value was already used outside its block, and may remove
//! some; a value kept as a variable without uses outside its block gets no parameter
//! and no zero, so the superset changes nothing.

use crate::pass_util::ssa_repair::Repair;
use cranelift_entity::{EntityRef, SecondaryMap};
use std::collections::{HashMap, HashSet};
use warplift_ir::{Block, Function, Value, ValueDef};

/// A block's parts in the current batch (bits): a region's entry, a region's exit, or a
/// block of a region, one it made or one whose branch it changed.
const ENTRY: u8 = 1;
const EXIT: u8 = 2;
const INNER: u8 = 4;

/// The kernel-wide state of a run (see the [module documentation](self)).
pub(super) struct Shared {
    succs: SecondaryMap<Block, Vec<Block>>,
    preds: SecondaryMap<Block, Vec<Block>>,
    /// Layout positions (`u32::MAX`: not known; recomputed when asked for).
    position: SecondaryMap<Block, u32>,
    /// The values used in a block other than their definition's.
    pub used_elsewhere: HashSet<Value>,
    /// The SSA repair of the current batch.
    pub repair: Repair,
    batch: HashMap<Block, u8>,
    /// Blocks made to split an edge, appended at the end of the layout for now, each with
    /// the block it belongs after (see [`Shared::place`]).
    pending: Vec<(Block, Block)>,
    /// The conditions of the branches the cleanup folded, for [`super::dead`].
    pub folded_conditions: Vec<Value>,
}

impl Shared {
    /// The edges, layout positions and values used outside their block of `func`.
    pub fn new(func: &Function) -> Shared {
        let mut shared = Shared {
            succs: SecondaryMap::new(),
            preds: SecondaryMap::new(),
            position: SecondaryMap::with_default(u32::MAX),
            used_elsewhere: HashSet::new(),
            repair: new_repair(),
            batch: HashMap::new(),
            pending: Vec::new(),
            folded_conditions: Vec::new(),
        };
        for &b in func.layout.blocks() {
            shared.update(func, b);
            for &i in func.layout.block_insts(b) {
                for v in func.dfg.insts[i].all_values() {
                    if let ValueDef::Result(d) = func.dfg.value_def(v) {
                        if func.layout.inst_block(d) != Some(b) {
                            shared.used_elsewhere.insert(v);
                        }
                    }
                }
            }
        }
        shared.number(func);
        shared
    }

    /// Places the pending blocks and numbers the layout.
    fn renumber(&mut self, func: &mut Function) {
        self.place(func);
        self.number(func);
    }

    fn number(&mut self, func: &Function) {
        for (i, &b) in func.layout.blocks().iter().enumerate() {
            self.position[b] = i as u32;
        }
    }

    /// Recomputes the successors of `block` from its terminator, and the predecessors
    /// that change with them.
    fn update(&mut self, func: &Function, block: Block) {
        for s in std::mem::take(&mut self.succs[block]) {
            self.preds[s].retain(|&p| p != block);
        }
        let mut succs: Vec<Block> = Vec::new();
        if let Some(t) = func.terminator(block) {
            for call in func.dfg.insts[t].branch_destinations() {
                if !succs.contains(&call.block) {
                    succs.push(call.block);
                }
            }
        }
        for &s in &succs {
            self.preds[s].push(block);
        }
        self.succs[block] = succs;
    }

    /// Records that `block`, just appended to the layout, belongs right after `after`.
    /// Inserting each such block in place would search and shift the block order once
    /// per block, quadratic in the kernel; the pending ones are placed in one pass
    /// whenever the order is read next (new positions, the SSA repair, the end of the run).
    pub fn place_after(&mut self, block: Block, after: Block) {
        self.pending.push((block, after));
    }

    /// Moves the pending blocks to their places, in one pass over the block order.
    pub fn place(&mut self, func: &mut Function) {
        if !self.pending.is_empty() {
            func.layout.move_blocks_after(&self.pending);
            self.pending.clear();
        }
    }

    /// The blocks with an edge into one of `targets`, in layout order.
    pub fn sources(&mut self, func: &mut Function, targets: &[Block]) -> Vec<Block> {
        let mut out: Vec<Block> = targets
            .iter()
            .flat_map(|&t| self.preds[t].iter().copied())
            .collect();
        if out.iter().any(|&b| self.position[b] == u32::MAX) {
            self.renumber(func);
        }
        out.sort_by_key(|&b| self.position[b]);
        out.dedup();
        out
    }

    /// Would restructuring the region entered at `entry`, left to `exit`, with `blocks`
    /// touch the current batch other than by entering where a batch region leaves or
    /// leaving where one is entered?
    pub fn conflicts(&self, entry: Block, blocks: &[Block], exit: Option<Block>) -> bool {
        let role = |b: Block| self.batch.get(&b).copied().unwrap_or(0);
        role(entry) & !EXIT != 0
            || exit.is_some_and(|x| role(x) & !ENTRY != 0)
            || blocks.iter().any(|&b| role(b) != 0)
    }

    /// Records a restructured region in the batch and updates the edges of the blocks it
    /// changed: its entry, its blocks, `changed` (blocks outside it whose branches it
    /// moved), and every block made since `first_new`.
    pub fn add(
        &mut self,
        func: &Function,
        entry: Block,
        blocks: &[Block],
        exit: Block,
        changed: &[Block],
        first_new: usize,
    ) {
        let made = (first_new..func.dfg.num_blocks()).map(Block::new);
        let inner: Vec<Block> = blocks.iter().chain(changed).copied().chain(made).collect();
        for &b in [entry].iter().chain(&inner) {
            self.update(func, b);
        }
        for b in inner {
            *self.batch.entry(b).or_default() |= INNER;
        }
        *self.batch.entry(entry).or_default() |= ENTRY;
        *self.batch.entry(exit).or_default() |= EXIT;
    }

    /// Runs the batch's SSA repair, if it has a region.
    pub fn flush(&mut self, func: &mut Function) -> Result<(), String> {
        self.place(func);
        if self.batch.is_empty() {
            return Ok(());
        }
        self.batch.clear();
        std::mem::replace(&mut self.repair, new_repair()).run(func)?;
        Ok(())
    }
}

/// An SSA repair for a batch. Its zeros go near their reads, not into their region's
/// entry: restructuring the whole kernel makes the kernel's first block every variable's
/// region entry, and zeros there were live across the kernel.
fn new_repair() -> Repair {
    let mut repair = Repair::new();
    repair.place_zeros_near_reads();
    repair
}
