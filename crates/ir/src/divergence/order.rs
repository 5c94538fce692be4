//! The cycle-contiguous block order the sync-dependence propagation walks.
//!
//! A reverse post-order visits every block after its forward predecessors, but it may
//! interleave a loop's blocks with blocks after the loop. The propagation of
//! [`super::sync`] needs more: every loop is one contiguous interval of the order that
//! starts with its header, and every block that follows a loop (its exits) comes after
//! the whole interval. This is the order LLVM's uniformity analysis calls the *modified
//! post-order*, reversed. It is built level by level over the [`LoopForest`]: at each
//! level (the whole function, or one loop) the items are the blocks whose innermost loop
//! is that level and the loops nested directly in it; collapsing each nested loop into one
//! item and dropping the edges back to the level's own header leaves a DAG, sorted
//! topologically with ties broken by reverse post-order. A loop item then expands, in
//! place, into its own level's order, which starts with its header (the header has no
//! edge into it from within its level, and the lowest reverse post-order number).
//!
//! ```text
//!  block0 -> block1 -> block2 -> block1   (loop {1, 2})
//!  block1 -> block3, block0 -> block3
//!  reverse post-order might be 0 1 3 2; this order is 0 1 2 3.
//! ```
//!
//! The expansion works with an explicit stack, so loops nested thousands deep are fine.
//! Blocks unreachable from the entry have no position.

use crate::cfg::{ControlFlowGraph, DominatorTree, Loop, LoopForest};
use crate::entities::Block;
use cranelift_entity::{EntityRef, SecondaryMap};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The reachable blocks in cycle-contiguous order, with each block's position.
pub(super) struct CycleOrder {
    order: Vec<Block>,
    pos: SecondaryMap<Block, Option<u32>>,
}

/// An item of one level: a block, or a loop nested directly in the level.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Item {
    Block(Block),
    Loop(Loop),
}

impl CycleOrder {
    /// Computes the order of `cfg`'s reachable blocks.
    pub(super) fn compute(
        cfg: &ControlFlowGraph<Block>,
        domtree: &DominatorTree<Block>,
        loops: &LoopForest<Block>,
    ) -> Self {
        let rpo = domtree.rpo();
        let nblocks = rpo.iter().map(|b| b.index() + 1).max().unwrap_or(0);
        let nloops = loops.len();
        // Items are numbered blocks first, then loops; levels are 0 (the function) and
        // 1 + loop index.
        let id = |item: Item| match item {
            Item::Block(b) => b.index(),
            Item::Loop(l) => nblocks + l.index(),
        };
        let item_of = |i: usize| {
            if i < nblocks {
                Item::Block(Block::new(i))
            } else {
                Item::Loop(Loop::new(i - nblocks))
            }
        };
        let level_of = |l: Option<Loop>| l.map_or(0, |l| 1 + l.index());
        let key = |item: Item| match item {
            Item::Block(b) => domtree.rpo_number(b).unwrap_or(usize::MAX),
            Item::Loop(l) => domtree.rpo_number(loops.header(l)).unwrap_or(usize::MAX),
        };
        // The item standing for `b` at level `level` (an ancestor-or-self of b's loop).
        let rep = |b: Block, level: Option<Loop>| {
            let mut l = loops.innermost_loop(b);
            if l == level {
                return Item::Block(b);
            }
            while let Some(cur) = l {
                let parent = loops.parent(cur);
                if parent == level {
                    return Item::Loop(cur);
                }
                l = parent;
            }
            Item::Block(b)
        };

        let mut level_items: Vec<Vec<Item>> = vec![Vec::new(); 1 + nloops];
        for &b in rpo {
            level_items[level_of(loops.innermost_loop(b))].push(Item::Block(b));
        }
        for l in loops.loops() {
            level_items[level_of(loops.parent(l))].push(Item::Loop(l));
        }
        // The level edges, then grouped by source item (a counting sort that keeps their
        // order): the successors of item `i` are `succ_list[succ_start[i]..succ_start[i + 1]]`,
        // one array for all items rather than a list each.
        let nitems = nblocks + nloops;
        let mut edges: Vec<(usize, Item)> = Vec::with_capacity(rpo.len() * 2);
        let mut indegree: Vec<u32> = vec![0; nitems];
        for &u in rpo {
            for &v in cfg.succs(u) {
                if !domtree.is_reachable(v) {
                    continue;
                }
                let level = common_loop(loops, loops.innermost_loop(u), loops.innermost_loop(v));
                if level.is_some_and(|l| loops.header(l) == v) {
                    continue; // a back edge of the level's loop
                }
                let (ru, rv) = (rep(u, level), rep(v, level));
                if ru == rv {
                    continue;
                }
                edges.push((id(ru), rv));
                indegree[id(rv)] += 1;
            }
        }
        let mut succ_start = vec![0u32; nitems + 1];
        for &(i, _) in &edges {
            succ_start[i + 1] += 1;
        }
        for i in 0..nitems {
            succ_start[i + 1] += succ_start[i];
        }
        let mut next: Vec<u32> = succ_start[..nitems].to_vec();
        let mut succ_list: Vec<Item> = vec![Item::Block(Block::new(0)); edges.len()];
        for &(i, item) in &edges {
            succ_list[next[i] as usize] = item;
            next[i] += 1;
        }
        let succs = |i: usize| &succ_list[succ_start[i] as usize..succ_start[i + 1] as usize];

        // Sort each level once it is reached, and expand loops in place.
        let mut order = Vec::with_capacity(rpo.len());
        let mut stack: Vec<(Vec<Item>, usize)> = Vec::new();
        let sort_level = |items: &[Item], indegree: &mut Vec<u32>| {
            let mut heap: BinaryHeap<Reverse<(usize, usize)>> = items
                .iter()
                .filter(|&&i| indegree[id(i)] == 0)
                .map(|&i| Reverse((key(i), id(i))))
                .collect();
            let mut sorted = Vec::with_capacity(items.len());
            while let Some(Reverse((_, i))) = heap.pop() {
                let item = item_of(i);
                sorted.push(item);
                for &s in succs(i) {
                    indegree[id(s)] -= 1;
                    if indegree[id(s)] == 0 {
                        heap.push(Reverse((key(s), id(s))));
                    }
                }
            }
            if sorted.len() < items.len() {
                // Not a DAG (never for a forest computed from this graph): keep the rest
                // in reverse post-order rather than lose blocks.
                let mut rest: Vec<Item> = items
                    .iter()
                    .copied()
                    .filter(|&i| indegree[id(i)] != 0)
                    .collect();
                rest.sort_by_key(|&i| key(i));
                sorted.extend(rest);
            }
            sorted
        };
        stack.push((sort_level(&level_items[0], &mut indegree), 0));
        while let Some((items, next)) = stack.last_mut() {
            let Some(&item) = items.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            match item {
                Item::Block(b) => order.push(b),
                Item::Loop(l) => {
                    let sorted = sort_level(&level_items[level_of(Some(l))], &mut indegree);
                    stack.push((sorted, 0));
                }
            }
        }
        let mut pos = SecondaryMap::with_default(None);
        pos.resize(nblocks);
        for (i, &b) in order.iter().enumerate() {
            pos[b] = Some(i as u32);
        }
        CycleOrder { order, pos }
    }

    /// The position of `b`, if it is reachable.
    pub(super) fn pos(&self, b: Block) -> Option<u32> {
        self.pos[b]
    }

    /// The block at position `i`.
    pub(super) fn block(&self, i: u32) -> Block {
        self.order[i as usize]
    }

    /// The reachable blocks, in order.
    #[cfg(test)]
    pub(super) fn blocks(&self) -> &[Block] {
        &self.order
    }
}

/// The innermost loop containing both loops (or blocks of them), if any.
pub(super) fn common_loop(
    loops: &LoopForest<Block>,
    mut a: Option<Loop>,
    mut b: Option<Loop>,
) -> Option<Loop> {
    let depth = |l: Option<Loop>| l.map_or(0, |l| loops.depth(l));
    while depth(a) > depth(b) {
        a = a.and_then(|l| loops.parent(l));
    }
    while depth(b) > depth(a) {
        b = b.and_then(|l| loops.parent(l));
    }
    while a != b {
        a = a.and_then(|l| loops.parent(l));
        b = b.and_then(|l| loops.parent(l));
    }
    a
}
