//! Negated conditions without a negation: inverting the comparison.
//!
//! A two-valued predicate takes a branch condition where only one arm's lanes read it
//! ([`super::materialize`]); when the value that arm needs is the condition's negation,
//! the pass writes `n = bnot c`, an instruction every lane passing the block runs. When
//! `c` is an integer comparison read by nothing but that negation and, perhaps, the
//! block's own `brif`, the comparison can compute the negation itself: its condition code
//! is inverted (`icmp eq` becomes `icmp ne`), the `brif`'s two destinations are swapped,
//! and the negation's readers read the comparison. Every lane computes the same branch
//! decision and the same predicate value as before, one instruction sooner.
//!
//! Only negations the pass made (instructions created during the run) are rewritten, and
//! only where the comparison stands in the same block; one walk counts the uses of every
//! value, one rewrites, one renames: linear in the kernel.

use cranelift_entity::EntityRef;
use std::collections::HashMap;
use warplift_ir::{Function, InstructionData, Opcode, Value, ValueDef};

/// Rewrites the negations of comparisons made by the pass (instructions numbered from
/// `first_new_inst`) as above; returns how many went.
pub(crate) fn invert_negated_compares(func: &mut Function, first_new_inst: usize) -> u64 {
    let mut uses: HashMap<Value, u32> = HashMap::new();
    for &b in func.layout.blocks() {
        for &i in func.layout.block_insts(b) {
            for v in func.dfg.insts[i].all_values() {
                *uses.entry(v).or_default() += 1;
            }
        }
    }
    let mut alias: HashMap<Value, Value> = HashMap::new();
    let blocks: Vec<_> = func.layout.blocks().to_vec();
    for b in blocks {
        let insts: Vec<_> = func.layout.block_insts(b).to_vec();
        let term = func.terminator(b);
        for i in insts {
            if i.index() < first_new_inst {
                continue;
            }
            let InstructionData::Unary {
                opcode: Opcode::Bnot,
                arg: c,
            } = func.dfg.insts[i]
            else {
                continue;
            };
            let Some(n) = func.dfg.inst_result(i) else {
                continue;
            };
            let ValueDef::Result(ci) = func.dfg.value_def(c) else {
                continue;
            };
            if func.layout.inst_block(ci) != Some(b)
                || !matches!(func.dfg.insts[ci], InstructionData::IntCompare { .. })
            {
                continue;
            }
            // The negation and, perhaps, the block's `brif`: nothing else reads `c`.
            let brif = term.filter(
                |&t| matches!(func.dfg.insts[t], InstructionData::Brif { arg, .. } if arg == c),
            );
            let others = uses.get(&c).copied().unwrap_or(0);
            if others != 1 + u32::from(brif.is_some()) {
                continue;
            }
            if let InstructionData::IntCompare { cond, .. } = &mut func.dfg.insts[ci] {
                *cond = cond.inverse();
            }
            if let Some(t) = brif {
                if let InstructionData::Brif { dests, .. } = &mut func.dfg.insts[t] {
                    dests.swap(0, 1);
                }
            }
            func.layout.remove_inst(i);
            alias.insert(n, c);
            // `c` is now read where `n` was; no second rewrite of it.
            uses.insert(c, u32::MAX);
        }
    }
    let count = alias.len() as u64;
    if count > 0 {
        let blocks: Vec<_> = func.layout.blocks().to_vec();
        for b in blocks {
            for &i in func.layout.block_insts(b) {
                func.dfg.insts[i].map_values(|v| alias.get(&v).copied().unwrap_or(v));
            }
        }
    }
    count
}
