//! The control-flow edges of the kernel as the pass changes them.
//!
//! Split and branch flattening add and remove blocks while the pass walks the divergent
//! branches; recomputing the whole control-flow graph after each would make the pass
//! quadratic in the kernel. Instead each change refreshes the edges of the few blocks
//! whose terminators it touched. The post-dominator tree needs no refresh: the blocks a
//! change removes are arms that only their branch enters, which post-dominate no other
//! branch, and the blocks it adds are never visited.

use cranelift_entity::SecondaryMap;
use warplift_ir::{Block, Function};

/// Predecessors and successors of every placed block, in terminator order (a block named
/// twice by one terminator appears twice).
#[derive(Clone, Debug, Default)]
pub struct Edges {
    preds: SecondaryMap<Block, Vec<Block>>,
    succs: SecondaryMap<Block, Vec<Block>>,
}

impl Edges {
    /// The edges of `func`.
    pub fn compute(func: &Function) -> Edges {
        let mut edges = Edges::default();
        // Sized once, with room for the blocks a Split makes, rather than grown by one
        // entry per block.
        let blocks = func.dfg.num_blocks();
        edges.preds.resize(blocks + blocks / 4);
        edges.succs.resize(blocks + blocks / 4);
        for &b in func.layout.blocks() {
            edges.link(func, b);
        }
        edges
    }

    /// The blocks jumping to `b`.
    pub fn preds(&self, b: Block) -> &[Block] {
        self.preds.get(b).map_or(&[], Vec::as_slice)
    }

    /// The blocks `b` jumps to.
    pub fn succs(&self, b: Block) -> &[Block] {
        self.succs.get(b).map_or(&[], Vec::as_slice)
    }

    /// Reads again the terminators of `blocks` (removed blocks lose their edges).
    pub fn refresh(&mut self, func: &Function, blocks: &[Block]) {
        for &b in blocks {
            for s in core::mem::take(&mut self.succs[b]) {
                let ps = &mut self.preds[s];
                if let Some(k) = ps.iter().position(|&p| p == b) {
                    ps.remove(k);
                }
            }
        }
        for &b in blocks {
            if func.layout.is_block_inserted(b) {
                self.link(func, b);
            }
        }
    }

    fn link(&mut self, func: &Function, b: Block) {
        // `func.successors(b)`, sized at once from the terminator's destinations.
        let dests = func
            .terminator(b)
            .map_or(&[][..], |t| func.dfg.insts[t].branch_destinations());
        let mut succs = Vec::with_capacity(dests.len());
        for call in dests {
            let s = call.block;
            succs.push(s);
            let preds = &mut self.preds[s];
            if preds.capacity() == 0 {
                // Most blocks have one or two predecessors.
                preds.reserve_exact(2);
            }
            preds.push(b);
        }
        self.succs[b] = succs;
    }
}
