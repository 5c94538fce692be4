//! Post-processing after a melding (Section IV-F of the paper): what melding leaves
//! redundant is removed, in the blocks it touched only.
//!
//! - a `select` whose two operands are the same value is that value;
//! - a `brif` whose two destinations are the same block with the same arguments is a
//!   `jump` (a trivially uniform branch: both sides of the region start in the melded
//!   entry);
//! - a block that only jumps on, without parameters, is bypassed and removed (the
//!   melded exit blocks of the paper's Fig. 4c become direct edges);
//! - once every region is melded, a block that jumps to a block with no parameters and
//!   no other predecessor takes that block's instructions ([`merge_chains`]), among the
//!   regions' entries, joins and the blocks melding made: a melded region is a straight
//!   line from its entry (SB1's loop body becomes one block, the paper's Fig. 4e), and
//!   each jump removed is an issue and a taken branch less per pass.

use std::collections::{HashMap, HashSet};
use warplift_ir::{Block, Function, InstructionData, Opcode, Value};

/// Cleans `blocks`, redirecting the branches of `scope` (which must hold every
/// predecessor of a block of `blocks` for it to be removed); returns the number of
/// blocks removed.
pub fn cleanup(func: &mut Function, blocks: &[Block], scope: &[Block]) -> u64 {
    equal_selects(func, blocks);
    for &b in blocks {
        fold_branch(func, b);
    }
    let set: HashSet<Block> = scope.iter().copied().collect();
    let mut removed = 0;
    for &b in blocks {
        if func.entry_block() == Some(b) {
            continue;
        }
        if !func.layout.is_block_inserted(b) || !func.dfg.block_params(b).is_empty() {
            continue;
        }
        let insts = func.layout.block_insts(b);
        if insts.len() != 1 || func.inst(insts[0]).opcode() != Opcode::Jump {
            continue;
        }
        let target = func.inst(insts[0]).branch_destinations()[0].clone();
        if target.block == b {
            continue;
        }
        for &p in scope {
            if p == b || !func.layout.is_block_inserted(p) || !set.contains(&p) {
                continue;
            }
            if let Some(t) = func.terminator(p) {
                let mut changed = false;
                for call in func.dfg.insts[t].branch_destinations_mut() {
                    if call.block == b {
                        *call = target.clone();
                        changed = true;
                    }
                }
                if changed {
                    fold_branch(func, p);
                }
            }
        }
        // Only remove it once nothing else branches to it.
        let still_used = func.layout.blocks().iter().any(|&p| {
            func.terminator(p).is_some_and(|t| {
                func.inst(t)
                    .branch_destinations()
                    .iter()
                    .any(|c| c.block == b)
            })
        });
        if !still_used {
            func.layout.remove_block(b);
            removed += 1;
        }
    }
    removed
}

/// `brif c, B(a), B(a)` becomes `jump B(a)`.
pub fn fold_branch(func: &mut Function, block: Block) {
    let Some(t) = func.terminator(block) else {
        return;
    };
    if let InstructionData::Brif { dests, .. } = func.inst(t) {
        if dests[0] == dests[1] {
            func.dfg.insts[t] = InstructionData::Jump {
                opcode: Opcode::Jump,
                dest: dests[0].clone(),
            };
        }
    }
}

/// Replaces `select c, x, x` in `blocks` by `x`, in every use.
fn equal_selects(func: &mut Function, blocks: &[Block]) {
    let mut map: HashMap<Value, Value> = HashMap::new();
    let mut dead = Vec::new();
    for &b in blocks {
        if !func.layout.is_block_inserted(b) {
            continue;
        }
        for &i in func.layout.block_insts(b) {
            if let InstructionData::Ternary {
                opcode: Opcode::Select,
                args,
            } = func.inst(i)
            {
                if args[1] == args[2] {
                    if let Some(r) = func.dfg.inst_result(i) {
                        map.insert(r, args[1]);
                        dead.push(i);
                    }
                }
            }
        }
    }
    if map.is_empty() {
        return;
    }
    for i in dead {
        func.layout.remove_inst(i);
    }
    let blocks: Vec<Block> = func.layout.blocks().to_vec();
    for b in blocks {
        let insts = func.layout.block_insts(b).to_vec();
        for i in insts {
            func.dfg.insts[i].map_values(|v| map.get(&v).copied().unwrap_or(v));
        }
    }
}

/// Merges each block of `blocks` that ends in `jump C` with `C`, when `C` is also in
/// `blocks`, takes no parameters, is not the entry and has no other predecessor; returns
/// the blocks merged away, each with the block that took its instructions.
pub fn merge_chains(func: &mut Function, blocks: &[Block]) -> HashMap<Block, Block> {
    let scope: HashSet<Block> = blocks.iter().copied().collect();
    let mut preds: HashMap<Block, usize> = HashMap::new();
    for &b in func.layout.blocks() {
        if let Some(t) = func.terminator(b) {
            for call in func.inst(t).branch_destinations() {
                *preds.entry(call.block).or_insert(0) += 1;
            }
        }
    }
    let entry = func.entry_block();
    let mut merged = HashMap::new();
    for &b in blocks {
        loop {
            if !func.layout.is_block_inserted(b) {
                break;
            }
            let Some(t) = func.terminator(b) else {
                break;
            };
            let InstructionData::Jump { dest, .. } = func.inst(t) else {
                break;
            };
            let c = dest.block;
            if c == b
                || Some(c) == entry
                || !scope.contains(&c)
                || !func.layout.is_block_inserted(c)
                || !dest.args.is_empty()
                || !func.dfg.block_params(c).is_empty()
                || preds.get(&c) != Some(&1)
            {
                break;
            }
            func.layout.remove_inst(t);
            for i in func.layout.block_insts(c).to_vec() {
                func.layout.remove_inst(i);
                func.layout.append_inst(i, b);
            }
            func.layout.remove_block(c);
            merged.insert(c, b);
        }
    }
    merged
}
