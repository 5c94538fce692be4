//! SESE subgraphs of a region's side (Definition 3 of the paper), in order, and the
//! correspondence of two isomorphic ones (Definition 6).
//!
//! A side is cut into a chain by post-dominance: starting at its first block `b`, a
//! block ending in a jump is a subgraph of its own (a single basic block with one
//! predecessor and one successor), and a block ending in a branch opens the simple
//! region `(b, ipdom(b))`, whose blocks are those reachable from `b` before its
//! immediate post-dominator; the chain goes on at the subgraph's continuation, until
//! the region's join. The chain is ordered as the paper orders subgraphs: each one's
//! first block post-dominates the previous one's blocks.
//!
//! A loop is such a simple region: its header ends in a branch, its blocks are those
//! reachable from the header before the header's post-dominator, and its back edges
//! stay inside it. A chain is accepted only when its subgraphs are disjoint and every
//! edge of a subgraph stays inside it or goes to its continuation, so each cycle of a
//! side lies inside one subgraph and two loops meld only when they are isomorphic
//! (Definition 6, case 1).

use std::collections::{HashMap, HashSet};
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};
use warplift_ir::{Block, Function, Opcode};

/// A SESE subgraph of a side.
#[derive(Clone, Debug)]
pub struct Subgraph {
    /// The first block.
    pub entry: Block,
    /// Where control goes after the subgraph (outside it).
    pub next: Block,
    /// The blocks, in pre-order from `entry` (dominators before the blocks they
    /// dominate).
    pub blocks: Vec<Block>,
}

impl Subgraph {
    /// Is it a single basic block?
    pub fn is_block(&self) -> bool {
        self.blocks.len() == 1
    }

    /// Does it hold a cycle (a loop, or a block branching to itself)?
    pub fn is_cyclic(&self, cfg: &ControlFlowGraph<Block>) -> bool {
        let blocks: HashSet<Block> = self.blocks.iter().copied().collect();
        !super::region::acyclic(cfg, self.entry, &blocks)
    }
}

/// The chain of subgraphs of the side whose blocks are `side`, from `first` to `join`;
/// `None` when some branch's post-dominator leaves the side (no chain exists).
pub fn chain(
    func: &Function,
    cfg: &ControlFlowGraph<Block>,
    postdom: &PostDominatorTree<Block>,
    side: &HashSet<Block>,
    first: Block,
    join: Block,
) -> Option<Vec<Subgraph>> {
    let mut out = Vec::new();
    let mut b = first;
    while b != join {
        if !side.contains(&b) {
            return None;
        }
        let term = func.terminator(b)?;
        let next = if func.inst(term).opcode() == Opcode::Jump {
            cfg.succs(b)[0]
        } else {
            postdom.ipdom(b)?
        };
        if next != join && !side.contains(&next) {
            return None;
        }
        out.push(Subgraph {
            entry: b,
            next,
            blocks: preorder(cfg, b, next),
        });
        b = next;
    }
    // Disjoint subgraphs whose edges stay inside or go on to the continuation: a cycle
    // through two subgraphs (a loop whose header ends in a jump, say) has no chain.
    let mut seen: HashSet<Block> = HashSet::new();
    for sub in &out {
        let inside: HashSet<Block> = sub.blocks.iter().copied().collect();
        for &x in &sub.blocks {
            if !seen.insert(x) {
                return None;
            }
            if cfg
                .succs(x)
                .iter()
                .any(|s| !inside.contains(s) && *s != sub.next)
            {
                return None;
            }
        }
    }
    Some(out)
}

/// The blocks reachable from `entry` before `stop`, in pre-order.
fn preorder(cfg: &ControlFlowGraph<Block>, entry: Block, stop: Block) -> Vec<Block> {
    let mut seen = HashSet::from([entry]);
    let mut order = Vec::new();
    let mut stack = vec![entry];
    while let Some(b) = stack.pop() {
        order.push(b);
        for &s in cfg.succs(b).iter().rev() {
            if s != stop && seen.insert(s) {
                stack.push(s);
            }
        }
    }
    order
}

/// The correspondence of the blocks of two subgraphs, in `a`'s pre-order, when they are
/// isomorphic: corresponding blocks end in the same kind of terminator, take parameters
/// of the same types, and their successors correspond in order (an exit of one is an
/// exit of the other). Neither may hold a barrier (melding would make lanes of the two
/// sides wait at one barrier). `None` otherwise.
pub fn correspondence(func: &Function, a: &Subgraph, b: &Subgraph) -> Option<Vec<(Block, Block)>> {
    if a.blocks.len() != b.blocks.len() {
        return None;
    }
    let in_a: HashSet<Block> = a.blocks.iter().copied().collect();
    let in_b: HashSet<Block> = b.blocks.iter().copied().collect();
    let mut fwd: HashMap<Block, Block> = HashMap::from([(a.entry, b.entry)]);
    let mut bwd: HashMap<Block, Block> = HashMap::from([(b.entry, a.entry)]);
    let mut work = vec![(a.entry, b.entry)];
    while let Some((x, y)) = work.pop() {
        let (tx, ty) = (func.terminator(x)?, func.terminator(y)?);
        let (dx, dy) = (func.inst(tx), func.inst(ty));
        if dx.opcode() != dy.opcode()
            || dx.branch_destinations().len() != dy.branch_destinations().len()
        {
            return None;
        }
        let (px, py) = (func.dfg.block_params(x), func.dfg.block_params(y));
        if px.len() != py.len()
            || px
                .iter()
                .zip(py)
                .any(|(&u, &v)| func.dfg.value_type(u) != func.dfg.value_type(v))
        {
            return None;
        }
        let barrier = |blk: Block| {
            func.layout
                .block_insts(blk)
                .iter()
                .any(|&i| func.inst(i).opcode() == Opcode::Barrier)
        };
        if barrier(x) || barrier(y) {
            return None;
        }
        for (cx, cy) in dx
            .branch_destinations()
            .iter()
            .zip(dy.branch_destinations())
        {
            let (sx, sy) = (cx.block, cy.block);
            match (in_a.contains(&sx), in_b.contains(&sy)) {
                (false, false) => {
                    if sx != a.next || sy != b.next {
                        return None;
                    }
                }
                (true, true) => match (fwd.get(&sx), bwd.get(&sy)) {
                    (Some(&m), Some(&n)) if m == sy && n == sx => {}
                    (None, None) => {
                        fwd.insert(sx, sy);
                        bwd.insert(sy, sx);
                        work.push((sx, sy));
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }
    if fwd.len() != a.blocks.len() {
        return None;
    }
    Some(a.blocks.iter().map(|x| (*x, fwd[x])).collect())
}
