//! Legality from the program dependence graph of an arm (the paper's Section 3.2, Fig. 2).
//!
//! Within an arm every instruction has the same control dependence (on the divergent
//! branch's edge into the arm), so what can block a move is a data or memory dependence:
//!
//! - **Data** dependences are the SSA edges of the expression DAG ([`super::dag`]); the
//!   matching only moves a node together with the operands it depends on in the arm, or
//!   renames them.
//! - **Memory** dependences order a load after every earlier store or atomic in the arm
//!   that may write the bytes it reads, and after every barrier; and before every later
//!   one. A load may be hoisted to the branch only when nothing in the arm precedes it in
//!   this order, and sunk to the reconvergence point only when nothing follows it.
//! - Stores, atomics and barriers themselves never move: a store or an atomic is a side
//!   effect whose order with the other lanes' accesses is the program's, and a barrier
//!   orders the whole block's memory.
//!
//! Two accesses may alias unless they are to different address spaces, or use the same
//! address value with byte ranges `[offset, offset + size)` that do not overlap. Every
//! lane that runs the moved instruction would have run its partner in the other arm with
//! the same operands (renaming selects exactly the arm's own operand for each lane), so
//! moving a matched load never reads an address a lane would not have read: a load that
//! may fault is safe to converge, but never to speculate, and the pass never speculates.

use super::dag::Arm;
use warplift_ir::{Function, Inst, InstructionData, Opcode};

/// Which direction an instruction may leave its arm in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    /// To the end of the block holding the divergent branch.
    Hoist,
    /// To the start of the branch's reconvergence point.
    Sink,
    /// To a temporary reconvergence point inside the arms (Split): the arm is cut in two
    /// around the merged instructions, and [`super::split::partition`] checks that every
    /// dependence of the arm still runs in its order.
    Split,
}

/// The memory dependence edges of an arm, as, for each node, the nodes it must stay after
/// (`preds`) and before (`succs`).
#[derive(Clone, Debug, Default)]
pub struct MemoryDeps {
    preds: Vec<Vec<usize>>,
    succs: Vec<Vec<usize>>,
}

impl MemoryDeps {
    /// The memory dependences of `arm`.
    pub fn compute(func: &Function, arm: &Arm) -> MemoryDeps {
        // Without a store, atomic or barrier there is no edge: nothing to allocate (most
        // arms; the matching computes the dependences of every arm it is given).
        if !arm.writes_memory() {
            return MemoryDeps::default();
        }
        let n = arm.len();
        let mut deps = MemoryDeps {
            preds: vec![Vec::new(); n],
            succs: vec![Vec::new(); n],
        };
        // Writers and barriers seen so far: a later load depends on each it may alias,
        // and a later writer on every earlier access (stores never move, but recording
        // the edge keeps the graph complete for the loads between them).
        let mut writers: Vec<usize> = Vec::new();
        let mut loads: Vec<usize> = Vec::new();
        for (node, &inst) in arm.insts.iter().enumerate() {
            let data = &func.dfg.insts[inst];
            match data.opcode() {
                Opcode::Load => {
                    for &w in &writers {
                        if may_alias(func, arm.insts[w], inst) {
                            deps.add(w, node);
                        }
                    }
                    loads.push(node);
                }
                Opcode::Store | Opcode::AtomicRmw | Opcode::AtomicCas | Opcode::Barrier => {
                    for &l in &loads {
                        if may_alias(func, inst, arm.insts[l]) {
                            deps.add(l, node);
                        }
                    }
                    for &w in &writers {
                        deps.add(w, node);
                    }
                    writers.push(node);
                }
                _ => {}
            }
        }
        deps
    }

    fn add(&mut self, from: usize, to: usize) {
        self.succs[from].push(to);
        self.preds[to].push(from);
    }

    /// The nodes `node` must stay after.
    pub fn preds(&self, node: usize) -> &[usize] {
        self.preds.get(node).map_or(&[], Vec::as_slice)
    }

    /// The nodes `node` must stay before.
    pub fn succs(&self, node: usize) -> &[usize] {
        self.succs.get(node).map_or(&[], Vec::as_slice)
    }
}

/// May the two memory instructions touch the same byte? A barrier orders everything.
fn may_alias(func: &Function, a: Inst, b: Inst) -> bool {
    let (da, db) = (&func.dfg.insts[a], &func.dfg.insts[b]);
    if da.opcode() == Opcode::Barrier || db.opcode() == Opcode::Barrier {
        return true;
    }
    match (access(func, a, da), access(func, b, db)) {
        (Some((sa, addr_a, lo_a, hi_a)), Some((sb, addr_b, lo_b, hi_b))) => {
            if sa != sb {
                return false;
            }
            if addr_a == addr_b {
                return lo_a < hi_b && lo_b < hi_a;
            }
            true
        }
        _ => true,
    }
}

/// The space, address value and byte range of a memory access.
fn access(
    func: &Function,
    inst: Inst,
    data: &InstructionData,
) -> Option<(warplift_ir::AddrSpace, warplift_ir::Value, i64, i64)> {
    let (space, addr, offset, bytes) = match *data {
        InstructionData::Load {
            space, arg, offset, ..
        } => {
            let ty = func.dfg.value_type(func.dfg.inst_result(inst)?);
            (space, arg, offset, ty.bytes())
        }
        InstructionData::Store {
            space,
            args,
            offset,
            ..
        } => (space, args[1], offset, func.dfg.value_type(args[0]).bytes()),
        InstructionData::AtomicRmw {
            space,
            args,
            offset,
            ..
        } => (space, args[0], offset, func.dfg.value_type(args[1]).bytes()),
        InstructionData::AtomicCas {
            space,
            args,
            offset,
            ..
        } => (space, args[0], offset, func.dfg.value_type(args[1]).bytes()),
        _ => return None,
    };
    let lo = i64::from(offset);
    Some((space, addr, lo, lo + i64::from(bytes.max(1))))
}

/// May node `node` of `arm` leave it in `dir`, as far as its own kind and its memory
/// dependences go (its operands and uses are the matching's concern)?
///
/// The kind of each node was read off its opcode when the arm was made (`func` is the
/// kernel the arm belongs to).
pub fn movable(
    _func: &Function,
    arm: &Arm,
    deps: &MemoryDeps,
    node: usize,
    dir: Direction,
) -> bool {
    if arm.is_load(node) {
        return match dir {
            Direction::Hoist => deps.preds(node).is_empty(),
            Direction::Sink => deps.succs(node).is_empty(),
            Direction::Split => true,
        };
    }
    arm.is_pure(node)
}
