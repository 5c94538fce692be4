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
use warplift_ir::{Block, Function, Inst, InstructionData, Opcode, Value};

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
/// `blocks`, is not the entry and has no other predecessor; returns the blocks merged
/// away, each with the block that took its instructions. `C`'s parameters become the
/// jump's arguments (DCT's join, whose parameter is the selected quotient: the melded
/// row is one block, without the jump and its branch latency).
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
    // Parameters of merged blocks, with the arguments that replace them.
    let mut replaced: HashMap<Value, Value> = HashMap::new();
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
                || dest.args.len() != func.dfg.block_params(c).len()
                || preds.get(&c) != Some(&1)
            {
                break;
            }
            for (&p, &a) in func.dfg.block_params(c).iter().zip(&dest.args) {
                replaced.insert(p, a);
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
    if !replaced.is_empty() {
        // An argument may itself be a parameter of a block merged later.
        let resolve = |mut v: Value| {
            while let Some(&a) = replaced.get(&v) {
                if a == v {
                    break;
                }
                v = a;
            }
            v
        };
        let insts: Vec<Inst> = func.layout.insts().collect();
        for i in insts {
            func.dfg.insts[i].map_values(resolve);
        }
    }
    merged
}

/// Takes the `select`s that melding left in loops out of them, where their operands
/// allow: melded loops choose each side's values on every iteration, but a choice
/// between two values defined before the loop is the same on every iteration.
///
/// - `s = select c, x, y` whose operands are all defined outside the innermost loop
///   holding it moves to the block that defines the last of them (which dominates the
///   loop, and whose own innermost loop holds the select's block, so it does not run
///   more often);
/// - `s = select c, op(y, k), y`, where the operation (`iadd`, `isub`, `imul`, `band`,
///   `bor`, `bxor`, shifts; `op(k, y)` too where it commutes) was speculated for that
///   select alone, is `op(y, select c, k, e)` with `e` the operation's identity
///   (`select c, y, op(y, k)` likewise, with `select c, e, k`): the select of `k`
///   leaves the loop when `k` and `c` are defined outside it. LUD's melded loops add a
///   row offset on one side only (`row + i` against `i`): each iteration ran the
///   speculated `iadd` and its select; it now runs one `iadd` of a selected offset,
///   what either side ran alone.
///
/// Returns the number of selects moved out of loops.
pub fn hoist_selects(func: &mut Function, scope: &[Block]) -> u64 {
    use warplift_ir::cfg::{ControlFlowGraph, DominatorTree, LoopForest};
    use warplift_ir::ValueDef;
    let cfg = ControlFlowGraph::compute(&*func);
    let domtree = DominatorTree::compute(&cfg);
    let loops = LoopForest::compute(&cfg);
    let mut uses: HashMap<Value, usize> = HashMap::new();
    for i in func.layout.insts() {
        for v in func.inst(i).all_values() {
            *uses.entry(v).or_insert(0) += 1;
        }
    }
    let Some(entry) = func.entry_block() else {
        return 0;
    };
    let def_block = |func: &Function, v: Value| match func.dfg.value_def(v) {
        ValueDef::Result(i) => func.layout.inst_block(i),
        ValueDef::Param(b, _) => Some(b),
    };
    // Where a select of `operands`, now in `block`, may go: the block defining the last
    // of them, outside `block`'s innermost loop, with `block` inside its own.
    let target = |func: &Function, block: Block, operands: &[Value]| -> Option<Block> {
        let inner = loops.innermost_loop(block)?;
        let mut at = entry;
        for &v in operands {
            let d = def_block(func, v)?;
            if domtree.dominates(at, d) {
                at = d;
            } else if !domtree.dominates(d, at) {
                return None;
            }
        }
        let outside = !loops.contains(inner, at);
        let encloses = loops
            .innermost_loop(at)
            .is_none_or(|l| loops.contains(l, block));
        (outside && encloses && domtree.strictly_dominates(at, block)).then_some(at)
    };
    let place = |func: &mut Function, inst: Inst, block: Block| {
        let at = func.layout.block_insts(block).len();
        let at = if func.terminator(block).is_some() {
            at - 1
        } else {
            at
        };
        func.layout.insert_inst(inst, block, at);
    };
    let mut moved = 0;
    let mut replace: HashMap<Value, Value> = HashMap::new();
    for &b in scope {
        if !func.layout.is_block_inserted(b) || loops.innermost_loop(b).is_none() {
            continue;
        }
        for s in func.layout.block_insts(b).to_vec() {
            let InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [c, x, y],
            } = *func.inst(s)
            else {
                continue;
            };
            if let Some(to) = target(func, b, &[c, x, y]) {
                func.layout.remove_inst(s);
                place(func, s, to);
                moved += 1;
                continue;
            }
            // `select c, op(y, k), y` or `select c, x, op(x, k)`.
            let speculated = |v: Value, other: Value| -> Option<(Inst, Value, usize)> {
                let ValueDef::Result(r) = func.dfg.value_def(v) else {
                    return None;
                };
                if func.layout.inst_block(r) != Some(b) || uses.get(&v) != Some(&1) {
                    return None;
                }
                let InstructionData::Binary { opcode, args } = *func.inst(r) else {
                    return None;
                };
                use Opcode::*;
                let commutes = matches!(opcode, Iadd | Imul | Band | Bor | Bxor);
                if !matches!(
                    opcode,
                    Iadd | Isub | Imul | Band | Bor | Bxor | Ishl | Ushr | Sshr
                ) {
                    return None;
                }
                if args[0] == other {
                    Some((r, args[1], 1))
                } else if commutes && args[1] == other {
                    Some((r, args[0], 0))
                } else {
                    None
                }
            };
            let (r, k, slot, first) = match (speculated(x, y), speculated(y, x)) {
                (Some((r, k, slot)), _) => (r, k, slot, true),
                (None, Some((r, k, slot))) => (r, k, slot, false),
                _ => continue,
            };
            let Some(to) = target(func, b, &[c, k]) else {
                continue;
            };
            let ty = func.dfg.value_type(k);
            let opcode = func.inst(r).opcode();
            let identity = match opcode {
                Opcode::Imul => 1,
                Opcode::Band => ty.mask(),
                _ => 0,
            };
            let e_inst = func.dfg.make_inst(
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm: identity & ty.mask(),
                },
                Some(ty),
            );
            place(func, e_inst, entry);
            let e = func
                .dfg
                .inst_result(e_inst)
                .expect("a constant has a result");
            let (t, f) = if first { (k, e) } else { (e, k) };
            let z_inst = func.dfg.make_inst(
                InstructionData::Ternary {
                    opcode: Opcode::Select,
                    args: [c, t, f],
                },
                Some(ty),
            );
            place(func, z_inst, to);
            let z = func.dfg.inst_result(z_inst).expect("a select has a result");
            func.dfg.insts[r].args_mut()[slot] = z;
            let (Some(sv), Some(rv)) = (func.dfg.inst_result(s), func.dfg.inst_result(r)) else {
                continue;
            };
            func.layout.remove_inst(s);
            replace.insert(sv, rv);
            moved += 1;
        }
    }
    // Melding makes one select per melded operand, and the kernel's entry block and
    // the blocks before melded loops now gather many of the same choice (LUD's thread
    // index against its offset for every access of a tile): a select dominated by
    // another of the same operands is that one.
    let mut seen: HashMap<[Value; 3], Vec<Inst>> = HashMap::new();
    for &b in domtree.rpo() {
        if !func.layout.is_block_inserted(b) {
            continue;
        }
        for s in func.layout.block_insts(b).to_vec() {
            let InstructionData::Ternary {
                opcode: Opcode::Select,
                args,
            } = *func.inst(s)
            else {
                continue;
            };
            let args = args.map(|v| replace.get(&v).copied().unwrap_or(v));
            let earlier = seen.get(&args).and_then(|list| {
                list.iter().copied().find(|&r| {
                    func.layout
                        .inst_block(r)
                        .is_some_and(|rb| domtree.dominates(rb, b))
                })
            });
            match earlier.and_then(|r| func.dfg.inst_result(r)) {
                Some(rv) => {
                    if let Some(sv) = func.dfg.inst_result(s) {
                        func.layout.remove_inst(s);
                        replace.insert(sv, rv);
                    }
                }
                None => seen.entry(args).or_default().push(s),
            }
        }
    }
    if !replace.is_empty() {
        // A replacement may itself be replaced.
        let resolve = |mut v: Value| {
            while let Some(&r) = replace.get(&v) {
                if r == v {
                    break;
                }
                v = r;
            }
            v
        };
        let insts: Vec<Inst> = func.layout.insts().collect();
        for i in insts {
            func.dfg.insts[i].map_values(resolve);
        }
    }
    moved
}
