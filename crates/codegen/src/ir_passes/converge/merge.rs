//! Block merging after flattening: a block that a flattened branch now ends with
//! `jump J(args)`, where `J` has no other predecessor, takes `J`'s instructions, and `J`
//! goes — what LLVM's SimplifyCFG does after folding a branch into a `select`
//! (`MergeBlockIntoPredecessor`).
//!
//! ```text
//! block1(v100: i32):                      block1(v100: i32):
//!     ...                                     ...
//!     v20 = select v6, v18, v19               v20 = select v6, v18, v19
//!     jump block4(v20)              ==>       v22 = band v20, v21
//! block4(v21: i32):                           ...
//!     v22 = band v21, v21                     brif v6, block5, block6
//!     ...
//!     brif v6, block5, block6
//! ```
//!
//! Nothing about what runs changes: every lane that runs the block runs `J` right after
//! it, with the arguments as `J`'s parameters. The merge saves the jump where `J` was not
//! the next block in the layout, and it removes a shape that made the register
//! allocator slow. Flattening a chain of diamonds leaves one block per diamond, each
//! entered by a jump with the value the diamond computed as its only parameter, read in
//! that block alone. regalloc2 (0.15) finds the moves into block parameters by scanning
//! its list of parameter inputs from a position that only advances past a parameter
//! live in more than one range; with thousands of such single-range parameters (which
//! the lowering numbers first) every later value live across many blocks rescans the
//! whole list once per block it crosses. On the 100k-instruction bench kernel that made
//! the allocator a fifth of the whole compilation; merged, the kernel is one block with no
//! parameters (docs/convergence.md, "Compile time").
//!
//! The merges are made once, after the walk over the branches, front to back in reverse
//! post-order: a block then takes its whole chain of successors in one sweep, each
//! instruction moved once. (Merging as each branch flattens, innermost first, would move
//! the growing tail of a chain again at every diamond: quadratic.) Only the jumps that
//! flattening made are followed: a kernel's own jumps, and the blocks they lead to, are
//! left as written.

use super::edges::Edges;
use super::uses::Uses;
use cranelift_entity::SecondaryMap;
use warplift_ir::{Block, Function, Inst, InstructionData};

/// Merges into each block ending in one of `jumps` (the jumps flattening made), visited
/// in the order of `order` (a reverse post-order of the kernel before the pass), the
/// block the jump leads to when it has no other predecessor, and so on while the block
/// ends in another of `jumps`. Returns the number of blocks merged away (left empty in
/// the layout, for the pass to remove with the others).
pub fn merge_chains(
    func: &mut Function,
    uses: &mut Uses,
    edges: &mut Edges,
    order: &[Block],
    jumps: &[Inst],
) -> u64 {
    let entry = func.layout.entry_block();
    let mut made: SecondaryMap<Inst, bool> = SecondaryMap::new();
    // Sized once: the jumps are the newest instructions, and growing the map to each in
    // turn copied it every time it outgrew its room.
    made.resize(func.dfg.num_insts());
    for &j in jumps {
        made[j] = true;
    }
    let mut merged = 0;
    for &block in order {
        // Emptied blocks (already merged into a predecessor) have no terminator.
        while let Some(term) = func.terminator(block).filter(|&t| made[t]) {
            let InstructionData::Jump { dest, .. } = &func.dfg.insts[term] else {
                break;
            };
            let next = dest.block;
            let alone = next != block && Some(next) != entry && edges.preds(next) == [block];
            if !alone || func.layout.block_insts(next).is_empty() {
                break;
            }
            let args = dest.args.clone();
            let params = func.dfg.block_params(next).to_vec();
            if args.len() != params.len() {
                break;
            }
            func.layout.remove_inst(term);
            for (p, a) in params.into_iter().zip(args) {
                uses.replace(func, p, a);
            }
            for inst in func.layout.take_block_insts(next) {
                func.layout.append_inst(inst, block);
            }
            // `next` lost its terminator and `block` took it: the successors' predecessor
            // lists now name `block`.
            edges.refresh(func, &[block, next]);
            merged += 1;
        }
    }
    merged
}
