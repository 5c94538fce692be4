//! Corruption of valid kernels, to fuzz the verifier on invalid IR.
//!
//! Arbitrary text rarely parses into a kernel deep enough to exercise the verifier's
//! checks of types, dominance, block parameters and terminators. [`corrupt`] starts from a
//! generated (valid) kernel and applies a few random edits that the parser would never
//! produce: operands replaced by values of other types, from other blocks or that do not
//! exist; branch targets and arguments changed; instructions and blocks removed from the
//! layout; blocks reordered. The verifier must report each such kernel's errors without
//! panicking (and, if it accepts one, the kernel must still be valid — which the
//! interpreter and the code generator then rely on).

use arbitrary::{Result, Unstructured};
use warplift_ir::{Block, Function, Value};

/// Applies 1 to 8 random edits to `func`.
pub fn corrupt(func: &mut Function, u: &mut Unstructured) -> Result<()> {
    let edits = u.int_in_range(1..=8)?;
    for _ in 0..edits {
        let insts: Vec<_> = func.layout.insts().collect();
        let blocks: Vec<Block> = func.layout.blocks().to_vec();
        let num_values = func.dfg.num_values() as u32;
        let num_blocks = func.dfg.num_blocks() as u32;
        // A value or block index: mostly existing ones, sometimes one past the end.
        let value = |u: &mut Unstructured| -> Result<Value> {
            Ok(Value::from_u32(u.int_in_range(0..=num_values)?))
        };
        let block = |u: &mut Unstructured| -> Result<Block> {
            Ok(Block::from_u32(u.int_in_range(0..=num_blocks)?))
        };
        if insts.is_empty() || blocks.is_empty() {
            return Ok(());
        }
        let inst = insts[u.choose_index(insts.len())?];
        match u.int_in_range(0..=6)? {
            0 | 1 => {
                let v = value(u)?;
                let args = func.dfg.insts[inst].args_mut();
                if !args.is_empty() {
                    let i = u.choose_index(args.len())?;
                    args[i] = v;
                }
            }
            2 => {
                let b = block(u)?;
                let dests = func.dfg.insts[inst].branch_destinations_mut();
                if !dests.is_empty() {
                    let i = u.choose_index(dests.len())?;
                    dests[i].block = b;
                }
            }
            3 => {
                let v = value(u)?;
                let dests = func.dfg.insts[inst].branch_destinations_mut();
                if !dests.is_empty() {
                    let i = u.choose_index(dests.len())?;
                    if dests[i].args.is_empty() || u.arbitrary()? {
                        dests[i].args.push(v);
                    } else {
                        dests[i].args.pop();
                    }
                }
            }
            4 => func.layout.remove_inst(inst),
            5 => {
                let b = blocks[u.choose_index(blocks.len())?];
                func.layout.remove_block(b);
            }
            _ => {
                let mut order = blocks.clone();
                let i = u.choose_index(order.len())?;
                let j = u.choose_index(order.len())?;
                order.swap(i, j);
                func.layout.set_block_order(order);
            }
        }
    }
    Ok(())
}
