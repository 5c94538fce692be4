//! Hoist: the matched pairs of the two arms' entry blocks move, as one instruction each,
//! to the end of the block holding the divergent branch (Listings 1.1/1.2).
//!
//! Every lane that reaches the branch runs exactly one of the two arms' entry blocks, so
//! it ran exactly one instruction of each pair; after the hoist it runs the merged
//! instruction once, with its own operands: where the arms read different values `x` and
//! `y`, a `select c, x, y` on the branch condition `c` gives each lane the operand of the
//! arm it takes (operand renaming, Listings 1.7/1.8). Every use of either original result
//! reads the merged one, which dominates both arms.

use super::dag::{operands, Arm};
use super::matching::Matching;
use super::uses::Uses;
use warplift_ir::{Block, Function, InstructionData, Opcode, Value};

/// What a hoist did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Hoisted {
    /// Pairs merged into one instruction before the branch.
    pub pairs: u64,
    /// `select`s inserted for renamed operands.
    pub selects: u64,
}

/// Hoists `matching`'s pairs of `then_arm` and `else_arm` into `branch_block`, whose
/// `brif` tests `cond`.
pub fn hoist(
    func: &mut Function,
    uses: &mut Uses,
    branch_block: Block,
    cond: Value,
    then_arm: &Arm,
    else_arm: &Arm,
    matching: &Matching,
) -> Hoisted {
    let mut done = Hoisted::default();
    // The renamed operand pairs and their `select`s: a few per hoist, searched linearly.
    let mut selects: Vec<((Value, Value), Value)> = Vec::new();
    // The selects and merged instructions, in order, placed before the branch together at
    // the end (none of them reads a value the loop replaces: their operands are values
    // from before the branch and earlier merged results).
    let mut placed = Vec::with_capacity(2 * matching.pairs.len());
    // The pairs' instructions, taken out of the arms together at the end (dead once
    // replaced: a reader of a replaced value still in the arm is rewritten for nothing).
    let mut removed = Vec::with_capacity(2 * matching.pairs.len());
    for pair in &matching.pairs {
        let (ia, ib) = (then_arm.insts[pair.a], else_arm.insts[pair.b]);
        let xs = operands(func, ia, false);
        let ys = operands(func, ib, pair.swapped);
        let mut data = func.dfg.insts[ia].clone();
        let mut args = xs;
        for (s, (&x, &y)) in xs.iter().zip(ys.iter()).enumerate() {
            if x == y {
                continue;
            }
            if let Some(&(_, v)) = selects.iter().find(|(k, _)| *k == (x, y)) {
                args[s] = v;
                continue;
            }
            let v = {
                let ty = func.dfg.value_type(x);
                let sel = func.dfg.make_inst(
                    InstructionData::Ternary {
                        opcode: Opcode::Select,
                        args: [cond, x, y],
                    },
                    Some(ty),
                );
                func.srclocs[sel] = func.srclocs[ia];
                placed.push(sel);
                uses.add(func, sel);
                done.selects += 1;
                func.dfg.inst_result(sel).expect("select has a result")
            };
            selects.push(((x, y), v));
            args[s] = v;
        }
        data.args_mut().copy_from_slice(&args);
        let ra = func
            .dfg
            .inst_result(ia)
            .expect("matched instructions have results");
        let rb = func
            .dfg
            .inst_result(ib)
            .expect("matched instructions have results");
        let ty = func.dfg.value_type(ra);
        let merged = func.dfg.make_inst(data, Some(ty));
        func.srclocs[merged] = func.srclocs[ia];
        placed.push(merged);
        uses.add(func, merged);
        let r = func.dfg.inst_result(merged).expect("merged has a result");
        removed.push(ia);
        removed.push(ib);
        uses.replace(func, ra, r);
        uses.replace(func, rb, r);
        done.pairs += 1;
    }
    let at = func
        .layout
        .block_insts(branch_block)
        .len()
        .saturating_sub(1);
    func.layout.insert_insts(branch_block, at, &placed);
    func.layout.remove_insts(&removed);
    done
}
