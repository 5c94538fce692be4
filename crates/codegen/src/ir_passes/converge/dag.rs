//! Expression DAGs of one arm of a divergent branch.
//!
//! An *arm* is one block that every lane taking that side of the branch runs exactly once:
//! the entry block of a side (for Hoist) or a block ending in a jump to the branch's
//! reconvergence point (for Sink). Its instructions, in order, are the interior nodes of
//! the arm's expression DAG; an operand defined outside the block (before the branch, or
//! a block parameter) is a leaf. SSA makes the DAG explicit: an edge from a node to its
//! operand's definition, and since a definition precedes its uses within a block, every
//! node's children come before it in [`Arm::insts`] — the order the matching table is
//! filled in, bottom-up, without recursion.

use rustc_hash::FxHashMap as HashMap;
use warplift_ir::{Block, Function, Inst, InstructionData, Value, ValueDef};

/// One arm: a block and its non-terminator instructions.
#[derive(Clone, Debug)]
pub struct Arm {
    /// The block.
    pub block: Block,
    /// Its instructions, terminator excluded, in order: the DAG's interior nodes.
    pub insts: Vec<Inst>,
    index: HashMap<Inst, usize>,
}

impl Arm {
    /// The arm of `block`.
    pub fn new(func: &Function, block: Block) -> Arm {
        let all = func.layout.block_insts(block);
        let insts: Vec<Inst> = all
            .iter()
            .copied()
            .filter(|&i| !func.dfg.insts[i].opcode().is_terminator())
            .collect();
        let index = insts.iter().enumerate().map(|(n, &i)| (i, n)).collect();
        Arm {
            block,
            insts,
            index,
        }
    }

    /// The number of interior nodes.
    pub fn len(&self) -> usize {
        self.insts.len()
    }

    /// Is the arm empty?
    pub fn is_empty(&self) -> bool {
        self.insts.is_empty()
    }

    /// The node defining `v`, when `v` is the result of an instruction of this arm;
    /// `None` for a leaf.
    pub fn node_of(&self, func: &Function, v: Value) -> Option<usize> {
        match func.dfg.value_def(v) {
            ValueDef::Result(inst) => self.index.get(&inst).copied(),
            ValueDef::Param(..) => None,
        }
    }

    /// Is `v` defined in the arm (by one of its instructions or as its block's parameter)?
    pub fn defines(&self, func: &Function, v: Value) -> bool {
        match func.dfg.value_def(v) {
            ValueDef::Result(inst) => self.index.contains_key(&inst),
            ValueDef::Param(b, _) => b == self.block,
        }
    }
}

/// What two instructions must share to be one operator in the matching: everything but
/// their value operands (opcode, immediates, condition codes, address spaces, offsets),
/// and their result type.
pub fn operator_key(func: &Function, inst: Inst) -> (InstructionData, Option<warplift_ir::Type>) {
    let mut data = func.dfg.insts[inst].clone();
    data.map_values(|_| Value::from_u32(0));
    let ty = func.dfg.inst_result(inst).map(|v| func.dfg.value_type(v));
    (data, ty)
}
