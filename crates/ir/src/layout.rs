//! The layout: the order of blocks in a function and of instructions in each block.
//!
//! Block order matters beyond printing: the entry block is the first one, and later
//! machine-level passes (linearization) take block order as part of their input. Blocks
//! hold their instructions in a vector, which keeps iteration cheap and cache-friendly;
//! passes that reshape a block rebuild its vector.

use crate::entities::{Block, Inst};
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::SecondaryMap;

/// Block order and instruction order of a function.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    blocks: Vec<Block>,
    inserted: SecondaryMap<Block, bool>,
    insts: SecondaryMap<Block, Vec<Inst>>,
    inst_block: SecondaryMap<Inst, PackedOption<Block>>,
}

impl Layout {
    /// An empty layout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `block` at the end of the function.
    ///
    /// # Panics
    /// If `block` is already in the layout (a programming error of the caller).
    pub fn append_block(&mut self, block: Block) {
        assert!(!self.inserted[block], "{block} is already in the layout");
        self.inserted[block] = true;
        self.blocks.push(block);
    }

    /// Inserts `block` right after `after`, which must be in the layout.
    pub fn insert_block_after(&mut self, block: Block, after: Block) {
        assert!(!self.inserted[block], "{block} is already in the layout");
        let pos = self
            .block_position(after)
            .expect("`after` is not in the layout");
        self.inserted[block] = true;
        self.blocks.insert(pos + 1, block);
    }

    /// Moves blocks, each right after its anchor, in one pass over the block order: the
    /// same order as removing each `(block, after)` of `moves` in turn and inserting it
    /// right after `after` (so of several blocks moved after one anchor, the last comes
    /// first, and a block may be the anchor of one moved later). Every block and anchor
    /// must be in the layout, and no block moved twice; the entry block stays first.
    /// [`Layout::insert_block_after`], one block at a time, searches and shifts the
    /// order per block: a pass that places a block after each of many others would be
    /// quadratic in the function.
    pub fn move_blocks_after(&mut self, moves: &[(Block, Block)]) {
        if moves.is_empty() {
            return;
        }
        let mut moved: SecondaryMap<Block, bool> = SecondaryMap::new();
        let mut followers: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
        for &(block, after) in moves {
            assert!(
                self.inserted[block] && self.inserted[after],
                "{block} or {after} is not in the layout"
            );
            moved[block] = true;
            followers[after].push(block);
        }
        let mut order = Vec::with_capacity(self.blocks.len());
        let mut stack: Vec<Block> = Vec::new();
        for &b in &self.blocks {
            if moved[b] {
                continue;
            }
            stack.push(b);
            while let Some(x) = stack.pop() {
                order.push(x);
                // The last moved after `x` comes right after it: pushed last, popped first.
                stack.extend(followers[x].iter().copied());
            }
        }
        debug_assert_eq!(order.len(), self.blocks.len());
        self.blocks = order;
    }

    /// Removes `block` and its instructions from the layout.
    pub fn remove_block(&mut self, block: Block) {
        if let Some(pos) = self.block_position(block) {
            self.blocks.remove(pos);
            self.inserted[block] = false;
            for inst in core::mem::take(&mut self.insts[block]) {
                self.inst_block[inst] = None.into();
            }
        }
    }

    /// Removes every block of `blocks` (those in the layout) and its instructions, in one
    /// pass over the block order: a pass that removes many blocks would otherwise search
    /// the order once per block, quadratic in the function.
    pub fn remove_blocks(&mut self, blocks: &[Block]) {
        for &block in blocks {
            if self.inserted[block] {
                self.inserted[block] = false;
                for inst in core::mem::take(&mut self.insts[block]) {
                    self.inst_block[inst] = None.into();
                }
            }
        }
        let inserted = &self.inserted;
        self.blocks.retain(|&b| inserted[b]);
    }

    /// Takes the instructions out of `block`, which stays in the order, empty.
    pub fn take_block_insts(&mut self, block: Block) -> Vec<Inst> {
        let insts = core::mem::take(&mut self.insts[block]);
        for &inst in &insts {
            self.inst_block[inst] = None.into();
        }
        insts
    }

    /// Replaces the block order; `order` must be a permutation of the blocks in the layout.
    pub fn set_block_order(&mut self, order: Vec<Block>) {
        debug_assert_eq!(order.len(), self.blocks.len());
        self.blocks = order;
    }

    /// Is `block` in the layout?
    #[inline]
    pub fn is_block_inserted(&self, block: Block) -> bool {
        self.inserted[block]
    }

    /// The position of `block` in block order.
    pub fn block_position(&self, block: Block) -> Option<usize> {
        if !self.inserted[block] {
            return None;
        }
        self.blocks.iter().position(|&b| b == block)
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The number of blocks in the layout.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// The entry block: the first one.
    pub fn entry_block(&self) -> Option<Block> {
        self.blocks.first().copied()
    }

    /// The instructions of `block`, in order.
    #[inline]
    pub fn block_insts(&self, block: Block) -> &[Inst] {
        &self.insts[block]
    }

    /// The last instruction of `block` (its terminator in a well-formed function).
    #[inline]
    pub fn last_inst(&self, block: Block) -> Option<Inst> {
        self.insts[block].last().copied()
    }

    /// Makes room for blocks numbered below `blocks` and instructions numbered below
    /// `insts`, so that a function built entity by entity (the parser's) does not grow
    /// the per-entity tables one step at a time.
    pub fn reserve(&mut self, blocks: usize, insts: usize) {
        self.blocks
            .reserve(blocks.saturating_sub(self.blocks.len()));
        if self.inserted.as_values_slice().len() < blocks {
            self.inserted.resize(blocks);
        }
        if self.insts.as_values_slice().len() < blocks {
            self.insts.resize(blocks);
        }
        if self.inst_block.as_values_slice().len() < insts {
            self.inst_block.resize(insts);
        }
    }

    /// Makes room for `additional` more instructions in `block`, so that appending a
    /// block's known number of instructions allocates its list once.
    pub fn reserve_block_insts(&mut self, block: Block, additional: usize) {
        self.insts[block].reserve_exact(additional);
    }

    /// Appends `inst` at the end of `block`.
    pub fn append_inst(&mut self, inst: Inst, block: Block) {
        debug_assert!(self.inst_block[inst].is_none(), "{inst} is already placed");
        self.insts[block].push(inst);
        self.inst_block[inst] = block.into();
    }

    /// Inserts `inst` at position `index` of `block`.
    pub fn insert_inst(&mut self, inst: Inst, block: Block, index: usize) {
        debug_assert!(self.inst_block[inst].is_none(), "{inst} is already placed");
        self.insts[block].insert(index, inst);
        self.inst_block[inst] = block.into();
    }

    /// Inserts `insts`, in order, at position `index` of `block`: the same as inserting
    /// each at `index`, `index + 1`, ... in turn, with the block's instructions shifted
    /// once rather than once per instruction.
    pub fn insert_insts(&mut self, block: Block, index: usize, insts: &[Inst]) {
        // The map grows once, to the largest instruction, not once per new instruction.
        if let Some(&last) = insts.iter().max() {
            if self.inst_block.get(last).is_none() {
                self.inst_block[last] = None.into();
            }
        }
        for &inst in insts {
            debug_assert!(self.inst_block[inst].is_none(), "{inst} is already placed");
            self.inst_block[inst] = block.into();
        }
        let list = &mut self.insts[block];
        list.splice(index..index, insts.iter().copied());
    }

    /// Removes `inst` from its block. The search starts at the block's end, so removing
    /// a terminator costs nothing however long the block is.
    pub fn remove_inst(&mut self, inst: Inst) {
        if let Some(block) = self.inst_block[inst].take() {
            let insts = &mut self.insts[block];
            if let Some(pos) = insts.iter().rposition(|&i| i == inst) {
                insts.remove(pos);
            }
        }
    }

    /// Removes every instruction of `insts` from its block: the same as
    /// [`Layout::remove_inst`] on each, with each block's instructions shifted once rather
    /// than once per instruction removed.
    pub fn remove_insts(&mut self, insts: &[Inst]) {
        let mut blocks: Vec<Block> = Vec::new();
        for &inst in insts {
            if let Some(block) = self.inst_block[inst].take() {
                if !blocks.contains(&block) {
                    blocks.push(block);
                }
            }
        }
        let inst_block = &self.inst_block;
        for block in blocks {
            self.insts[block].retain(|&i| inst_block[i] == block.into());
        }
    }

    /// The block `inst` stands in.
    #[inline]
    pub fn inst_block(&self, inst: Inst) -> Option<Block> {
        self.inst_block[inst].expand()
    }

    /// Every placed instruction, block by block.
    pub fn insts(&self) -> impl Iterator<Item = Inst> + '_ {
        self.blocks
            .iter()
            .flat_map(move |&b| self.insts[b].iter().copied())
    }
}
