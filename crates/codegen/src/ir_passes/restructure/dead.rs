//! Removal of the conditions restructuring left unread.
//!
//! The cleanup ([`super::simplify`]) turns a two-way branch whose arms lead to one node
//! into a jump, and one whose arms only assign predicates into assignments computed
//! from its condition; when every assignment is a constant, nothing reads the condition
//! any more. Its computation (in the CFG family's kernels: a load, a widening and a
//! comparison) then runs for nothing on every lane that passes the block. The machine
//! IR's dead-code removal takes the pure instructions but keeps loads, as it must for
//! kernels as written; here the pass itself made them dead, so it removes them, as
//! LLVM's pipeline removes the conditions its CFG simplification leaves unread.
//!
//! The algorithm: count the uses of every value in the kernel once; then, from the
//! conditions of the branches the pass removed, a worklist takes each value no longer
//! read whose instruction has no side effect (the IR's `has_side_effects`: stores,
//! atomics, barriers and terminators have; loads do not), removes the instruction and
//! decrements the uses of its operands, which may join the worklist in turn. Linear in
//! the kernel. Code that was dead before the pass is not a root and stays: the pass only
//! removes what it made dead. The blocks emptied stay, as jumps: they are the kernel's
//! own blocks (`warplift_ir::BlockOrigin::Kernel`), whose executions the emulator
//! counts.

use std::collections::HashMap;
use warplift_ir::{Function, Inst, Value, ValueDef};

/// Removes the instructions computing `roots` (and, transitively, their operands) that
/// nothing in `func` reads and that have no side effect; returns how many went.
pub(crate) fn remove_dead_conditions(func: &mut Function, roots: &[Value]) -> u64 {
    if roots.is_empty() {
        return 0;
    }
    let mut uses: HashMap<Value, u32> = HashMap::new();
    for &b in func.layout.blocks() {
        for &i in func.layout.block_insts(b) {
            for v in func.dfg.insts[i].all_values() {
                *uses.entry(v).or_default() += 1;
            }
        }
    }
    let removable = |func: &Function, v: Value| -> Option<Inst> {
        let ValueDef::Result(inst) = func.dfg.value_def(v) else {
            return None;
        };
        let op = func.dfg.insts[inst].opcode();
        (func.layout.inst_block(inst).is_some() && !op.has_side_effects()).then_some(inst)
    };
    let mut removed = 0;
    let mut work: Vec<Value> = roots.to_vec();
    while let Some(v) = work.pop() {
        if uses.get(&v).copied().unwrap_or(0) != 0 {
            continue;
        }
        let Some(inst) = removable(func, v) else {
            continue;
        };
        let args: Vec<Value> = func.dfg.insts[inst].all_values().collect();
        func.layout.remove_inst(inst);
        removed += 1;
        for a in args {
            if let Some(n) = uses.get_mut(&a) {
                *n -= 1;
                if *n == 0 {
                    work.push(a);
                }
            }
        }
    }
    removed
}
