//! Meldable divergent regions (Definition 5 of the paper) and their simplification.
//!
//! A block `E` ending in a divergent `brif c, T, F` whose immediate post-dominator is `X`
//! heads a region `(E, X)`. It is meldable when neither side is empty (`T ≠ X`, `F ≠ X`,
//! so neither successor post-dominates the other) and each side — the blocks reachable
//! from its successor before `X` — is closed (entered only through its first block),
//! disjoint from the other side, and ends only in jumps and two-way branches. Then every
//! lane that runs `E` runs exactly one side and reconverges at `X`. A side may hold
//! loops: [`super::subgraph::chain`] accepts a side only when each of its cycles lies
//! inside one SESE subgraph of its chain (a loop is a simple region entered at its
//! header, left at the header's post-dominator), so that cycles meld only with
//! isomorphic cycles.
//!
//! Simplification (Section IV-A) gives each side a first block with `E` as its only
//! predecessor and no parameters: an edge `E → T` where `T` has other predecessors or
//! takes arguments is split by a new block that jumps on to `T` with the arguments.

use std::collections::HashSet;
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};
use warplift_ir::{Block, BlockCall, Function, InstructionData, Opcode, Value};

/// One side of a divergent region.
#[derive(Clone, Debug)]
pub struct Side {
    /// The side's first block (the branch's successor).
    pub first: Block,
    /// Every block of the side.
    pub blocks: HashSet<Block>,
}

/// A meldable divergent region `(entry, join)`.
#[derive(Clone, Debug)]
pub struct Region {
    /// The block ending in the divergent branch.
    pub entry: Block,
    /// The branch condition.
    pub cond: Value,
    /// The immediate post-dominator of `entry`.
    pub join: Block,
    /// The true side, then the false side.
    pub sides: [Side; 2],
}

/// The shape of the region headed by the divergent branch at the end of `entry`, when it
/// is meldable once simplified; `None` otherwise.
pub fn candidate(
    func: &Function,
    postdom: &PostDominatorTree<Block>,
    entry: Block,
) -> Option<(Value, Block, [Block; 2])> {
    let term = func.terminator(entry)?;
    let InstructionData::Brif { arg, dests, .. } = func.inst(term) else {
        return None;
    };
    let join = postdom.ipdom(entry)?;
    let (t, f) = (dests[0].block, dests[1].block);
    if t == join || f == join || t == f || t == entry || f == entry {
        return None;
    }
    Some((*arg, join, [t, f]))
}

/// Collects the side starting at `first` (after simplification), checking that it is
/// closed and ends only in jumps and two-way branches (its cycles are checked by
/// [`super::subgraph::chain`]).
pub fn side(
    func: &Function,
    cfg: &ControlFlowGraph<Block>,
    entry: Block,
    first: Block,
    join: Block,
) -> Option<Side> {
    let mut blocks = HashSet::from([first]);
    let mut stack = vec![first];
    while let Some(b) = stack.pop() {
        let term = func.terminator(b)?;
        match func.inst(term).opcode() {
            Opcode::Jump | Opcode::Brif => {}
            _ => return None,
        }
        for &s in cfg.succs(b) {
            if s == entry {
                return None;
            }
            if s == join {
                continue;
            }
            if blocks.insert(s) {
                stack.push(s);
            }
        }
    }
    // Closed: only `entry` enters the first block, only side blocks the others.
    if cfg.preds(first) != [entry] {
        return None;
    }
    for &b in &blocks {
        if b != first && cfg.preds(b).iter().any(|p| !blocks.contains(p)) {
            return None;
        }
    }
    Some(Side { first, blocks })
}

/// Is the subgraph of `blocks` entered at `first` free of cycles? (Iterative DFS with
/// colours.)
pub fn acyclic(cfg: &ControlFlowGraph<Block>, first: Block, blocks: &HashSet<Block>) -> bool {
    let mut state: std::collections::HashMap<Block, u8> = std::collections::HashMap::new();
    let mut stack: Vec<(Block, usize)> = vec![(first, 0)];
    state.insert(first, 1);
    while let Some(&mut (b, ref mut i)) = stack.last_mut() {
        let succs = cfg.succs(b);
        if *i < succs.len() {
            let s = succs[*i];
            *i += 1;
            if !blocks.contains(&s) {
                continue;
            }
            match state.get(&s).copied().unwrap_or(0) {
                0 => {
                    state.insert(s, 1);
                    stack.push((s, 0));
                }
                1 => return false,
                _ => {}
            }
        } else {
            state.insert(b, 2);
            stack.pop();
        }
    }
    true
}

/// Does the edge `entry → succ` (destination `dest` of the branch) need a block of its
/// own: the successor has other predecessors or takes arguments?
pub fn needs_split(
    func: &Function,
    cfg: &ControlFlowGraph<Block>,
    entry: Block,
    succ: Block,
) -> bool {
    cfg.preds(succ) != [entry] || !func.dfg.block_params(succ).is_empty()
}

/// Splits destination `dest` of `entry`'s branch: a new block, placed at the end of the
/// layout, jumps to the old destination with the old arguments. Returns the new block,
/// which the caller places after `entry`: a pass that splits many edges places all its
/// new blocks at once with [`Layout::move_blocks_after`], since placing each one right
/// away searches and shifts the block order per edge, quadratic in the function.
///
/// [`Layout::move_blocks_after`]: warplift_ir::layout::Layout::move_blocks_after
pub fn split_edge_unplaced(func: &mut Function, entry: Block, dest: usize) -> Block {
    let term = func
        .terminator(entry)
        .expect("a region entry ends in a branch");
    let call = func.dfg.insts[term].branch_destinations()[dest].clone();
    let new = func.dfg.make_block();
    func.layout.append_block(new);
    let jump = func.dfg.make_inst(
        InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: call,
        },
        None,
    );
    func.layout.append_inst(jump, new);
    func.srclocs[jump] = func.srclocs[term];
    func.dfg.insts[term].branch_destinations_mut()[dest] = BlockCall::new(new, []);
    new
}
