//! Block merging after restructuring: a block that ends with a jump to a block with no
//! other predecessor absorbs that block (rule 1 of the paper's Definition 1, so the
//! structure is unchanged). The restructuring makes many such chains (an assignment block
//! followed by the block on its edge, a split edge followed by an assignment), and each
//! link costs a jump per execution.
//!
//! Only links that touch a block the pass made are merged: the rest of the kernel keeps
//! its blocks as they were. A merged block is the kernel's ([`BlockOrigin::Kernel`]) when
//! either part was.

use cranelift_entity::EntityRef;
use std::collections::{HashMap, HashSet};
use warplift_ir::{Block, BlockOrigin, Function, InstructionData, Value};

/// Merges chains in `func` where one of the two blocks has an index of at least
/// `first_new`; returns the number of blocks merged away.
pub(crate) fn merge_chains(func: &mut Function, first_new: usize) -> u64 {
    let Some(entry) = func.entry_block() else {
        return 0;
    };
    // Incoming edges of every block, counted with multiplicity.
    let mut incoming: HashMap<Block, u32> = HashMap::new();
    for &b in func.layout.blocks() {
        if let Some(t) = func.terminator(b) {
            for call in func.dfg.insts[t].branch_destinations() {
                *incoming.entry(call.block).or_default() += 1;
            }
        }
    }
    let mut alias: HashMap<Value, Value> = HashMap::new();
    let mut merged = 0;
    // The blocks merged away leave the order in one pass at the end: one at a time,
    // each removal would scan the order.
    let mut gone: HashSet<Block> = HashSet::new();
    let blocks: Vec<Block> = func.layout.blocks().to_vec();
    for a in blocks {
        if gone.contains(&a) {
            continue;
        }
        while let Some(term) = func.terminator(a) {
            let InstructionData::Jump { dest, .. } = &func.dfg.insts[term] else {
                break;
            };
            let b = dest.block;
            let new = a.index() >= first_new || b.index() >= first_new;
            if b == a || b == entry || !new || incoming.get(&b).copied() != Some(1) {
                break;
            }
            let args = dest.args.clone();
            for (&p, &v) in func.dfg.block_params(b).iter().zip(&args) {
                alias.insert(p, v);
            }
            func.layout.remove_inst(term);
            for i in func.layout.take_block_insts(b) {
                func.layout.append_inst(i, a);
            }
            // A block the pass made that takes in kernel code is the kernel's now: the
            // code generator must not drop it should that code be a lone jump.
            if func.dfg.block_origin(b) == BlockOrigin::Kernel {
                func.dfg.set_block_origin(a, BlockOrigin::Kernel);
            }
            gone.insert(b);
            merged += 1;
        }
    }
    if !gone.is_empty() {
        let gone: Vec<Block> = gone.into_iter().collect();
        func.layout.remove_blocks(&gone);
    }
    if !alias.is_empty() {
        let resolve = |mut v: Value| {
            while let Some(&w) = alias.get(&v) {
                v = w;
            }
            v
        };
        let blocks: Vec<Block> = func.layout.blocks().to_vec();
        for b in blocks {
            for &i in func.layout.block_insts(b) {
                func.dfg.insts[i].map_values(resolve);
            }
        }
    }
    merged
}
