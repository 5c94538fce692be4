//! The control-flow edges of the kernel as the pass changes them.
//!
//! Split and branch flattening add and remove blocks while the pass walks the divergent
//! branches; recomputing the whole control-flow graph after each would make the pass
//! quadratic in the kernel. Instead each change refreshes the edges of the few blocks
//! whose terminators it touched. The post-dominator tree needs no refresh: the blocks a
//! change removes are arms that only their branch enters, which post-dominate no other
//! branch, and the blocks it adds are never visited.

use cranelift_entity::packed_option::ReservedValue;
use cranelift_entity::SecondaryMap;
use warplift_ir::{Block, Function};

/// Predecessors and successors of every placed block, in terminator order (a block named
/// twice by one terminator appears twice).
#[derive(Clone, Debug, Default)]
pub struct Edges {
    preds: SecondaryMap<Block, List>,
    succs: SecondaryMap<Block, List>,
}

/// The blocks at one end of a block's edges: up to two held in place (nearly every block
/// has one or two predecessors and successors), more in a vector. A vector per block and
/// direction was an allocation per block of the kernel, and more per refresh.
#[derive(Clone, Debug)]
struct List {
    /// The blocks, while there are at most two (`len` of them).
    inline: [Block; 2],
    len: u8,
    /// All the blocks, once there are more than two.
    more: Vec<Block>,
}

impl Default for List {
    fn default() -> Self {
        List {
            inline: [Block::reserved_value(); 2],
            len: 0,
            more: Vec::new(),
        }
    }
}

impl List {
    fn as_slice(&self) -> &[Block] {
        if self.more.is_empty() {
            &self.inline[..usize::from(self.len)]
        } else {
            &self.more
        }
    }

    fn push(&mut self, b: Block) {
        if !self.more.is_empty() {
            self.more.push(b);
        } else if self.len < 2 {
            self.inline[usize::from(self.len)] = b;
            self.len += 1;
        } else {
            self.more.reserve_exact(4);
            self.more.extend_from_slice(&self.inline);
            self.more.push(b);
        }
    }

    /// Removes the first `b`, if there is one.
    fn remove_first(&mut self, b: Block) {
        if !self.more.is_empty() {
            if let Some(k) = self.more.iter().position(|&x| x == b) {
                self.more.remove(k);
            }
            // Back in place once two or fewer are left.
            if self.more.len() <= 2 {
                self.len = self.more.len() as u8;
                self.inline[..self.more.len()].copy_from_slice(&self.more);
                self.more.clear();
            }
            return;
        }
        let n = usize::from(self.len);
        if let Some(k) = self.inline[..n].iter().position(|&x| x == b) {
            self.inline.copy_within(k + 1..n, k);
            self.len -= 1;
        }
    }
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
        self.preds.get(b).map_or(&[], List::as_slice)
    }

    /// The blocks `b` jumps to.
    pub fn succs(&self, b: Block) -> &[Block] {
        self.succs.get(b).map_or(&[], List::as_slice)
    }

    /// Reads again the terminators of `blocks` (removed blocks lose their edges).
    pub fn refresh(&mut self, func: &Function, blocks: &[Block]) {
        for &b in blocks {
            let succs = core::mem::take(&mut self.succs[b]);
            for &s in succs.as_slice() {
                self.preds[s].remove_first(b);
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
        let mut succs = List::default();
        for call in dests {
            let s = call.block;
            succs.push(s);
            self.preds[s].push(b);
        }
        self.succs[b] = succs;
    }
}
