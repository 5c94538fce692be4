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

use warplift_ir::{
    AddrSpace, AtomicRmwOp, Block, Dim, FloatCC, Function, Inst, InstructionData, IntCC, LocalVar,
    Opcode, SharedVar, Type, Value, ValueDef,
};

/// One arm: a block and its non-terminator instructions.
#[derive(Clone, Debug)]
pub struct Arm {
    /// The block.
    pub block: Block,
    /// Its instructions, terminator excluded, in order: the DAG's interior nodes.
    pub insts: Vec<Inst>,
    /// The nodes sorted by instruction, to find a node from its instruction by binary
    /// search; empty when [`Arm::insts`] is itself sorted (a block as the parser numbered
    /// it). Arms are a few instructions each and made once per branch and direction: a
    /// hash map per arm cost more to build than it saved.
    sorted: Vec<(Inst, u32)>,
}

impl Arm {
    /// The arm of `block`.
    pub fn new(func: &Function, block: Block) -> Arm {
        let all = func.layout.block_insts(block);
        // Sized once (a filtered collect grows its vector step by step).
        let mut insts = Vec::with_capacity(all.len());
        insts.extend(
            all.iter()
                .copied()
                .filter(|&i| !func.dfg.insts[i].opcode().is_terminator()),
        );
        let sorted = if insts.windows(2).all(|w| w[0] < w[1]) {
            Vec::new()
        } else {
            let mut s: Vec<(Inst, u32)> = insts
                .iter()
                .enumerate()
                .map(|(n, &i)| (i, n as u32))
                .collect();
            s.sort_unstable();
            s
        };
        Arm {
            block,
            insts,
            sorted,
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

    /// The node of instruction `inst`, when it is one of the arm's.
    pub fn node(&self, inst: Inst) -> Option<usize> {
        if self.sorted.is_empty() {
            self.insts.binary_search(&inst).ok()
        } else {
            self.sorted
                .binary_search_by_key(&inst, |&(i, _)| i)
                .ok()
                .map(|k| self.sorted[k].1 as usize)
        }
    }

    /// The node defining `v`, when `v` is the result of an instruction of this arm;
    /// `None` for a leaf.
    pub fn node_of(&self, func: &Function, v: Value) -> Option<usize> {
        match func.dfg.value_def(v) {
            ValueDef::Result(inst) => self.node(inst),
            ValueDef::Param(..) => None,
        }
    }

    /// Is `v` a parameter of the arm's block?
    pub fn defines_param(&self, func: &Function, v: Value) -> bool {
        matches!(func.dfg.value_def(v), ValueDef::Param(b, _) if b == self.block)
    }

    /// Is `v` defined in the arm (by one of its instructions or as its block's parameter)?
    pub fn defines(&self, func: &Function, v: Value) -> bool {
        match func.dfg.value_def(v) {
            ValueDef::Result(inst) => self.node(inst).is_some(),
            ValueDef::Param(b, _) => b == self.block,
        }
    }
}

/// What two instructions must share to be one operator in the matching: everything but
/// their value operands (opcode, immediates, condition codes, address spaces, offsets),
/// and their result type. A small copied value, read off the instruction without cloning
/// it: the matching computes one per node of every arm it is given.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operator {
    opcode: Opcode,
    ty: Option<Type>,
    detail: Detail,
}

/// The fields of an instruction besides its opcode and value operands.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Detail {
    None,
    Bits(u64),
    Int(IntCC),
    Float(FloatCC),
    Dim(Dim),
    Memory(AddrSpace, i32),
    Rmw(AtomicRmwOp, AddrSpace, i32),
    Shared(SharedVar),
    Local(LocalVar),
}

impl Operator {
    /// The operator of `inst`; `None` for a branch, whose destinations are the walk's to
    /// compare (no matching moves a terminator).
    pub fn of(func: &Function, inst: Inst) -> Option<Operator> {
        use InstructionData as D;
        let data = &func.dfg.insts[inst];
        let detail = match *data {
            D::Nullary { .. } | D::Unary { .. } | D::Binary { .. } | D::Ternary { .. } => {
                Detail::None
            }
            D::UnaryImm { imm: bits, .. } | D::FloatConst { bits, .. } => Detail::Bits(bits),
            D::IntCompare { cond, .. } => Detail::Int(cond),
            D::FloatCompare { cond, .. } => Detail::Float(cond),
            D::Geometry { dim, .. } => Detail::Dim(dim),
            D::Load { space, offset, .. }
            | D::Store { space, offset, .. }
            | D::AtomicCas { space, offset, .. } => Detail::Memory(space, offset),
            D::AtomicRmw {
                op, space, offset, ..
            } => Detail::Rmw(op, space, offset),
            D::SharedAddr { var, .. } => Detail::Shared(var),
            D::LocalAddr { var, .. } => Detail::Local(var),
            D::Jump { .. } | D::Brif { .. } | D::BrTable { .. } => return None,
        };
        let ty = func.dfg.inst_result(inst).map(|v| func.dfg.value_type(v));
        Some(Operator {
            opcode: data.opcode(),
            ty,
            detail,
        })
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }
}

/// The value operands of an instruction, the first two swapped when `swapped` (the B side
/// of a pair matched in swapped order): a copy on the stack, since the pass reads the
/// operands of every pair it moves and no instruction has more than three.
#[derive(Copy, Clone, Debug)]
pub struct Operands {
    values: [Value; 3],
    len: usize,
}

impl core::ops::Deref for Operands {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        &self.values[..self.len]
    }
}

impl core::ops::DerefMut for Operands {
    fn deref_mut(&mut self) -> &mut [Value] {
        &mut self.values[..self.len]
    }
}

/// The operands of `inst` (see [`Operands`]).
pub fn operands(func: &Function, inst: Inst, swapped: bool) -> Operands {
    let args = func.dfg.insts[inst].args();
    let mut values = [Value::from_u32(0); 3];
    values[..args.len()].copy_from_slice(args);
    if swapped {
        values.swap(0, 1);
    }
    Operands {
        values,
        len: args.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::parser::parse_functions;

    /// Everything but the value operands, and the result type: the definition of one
    /// operator, by cloning the instruction with its values blanked.
    fn blanked(func: &Function, inst: Inst) -> (InstructionData, Option<Type>) {
        let mut data = func.dfg.insts[inst].clone();
        data.map_values(|_| Value::from_u32(0));
        let ty = func.dfg.inst_result(inst).map(|v| func.dfg.value_type(v));
        (data, ty)
    }

    #[test]
    fn operators_are_equal_exactly_when_the_blanked_instructions_are() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "wir"))
            .collect();
        files.sort();
        // Pairs of one opcode told apart by an immediate, condition, space, offset,
        // variable or type: the cases a key could get wrong.
        let (mut same_opcode_differ, mut equal) = (0, 0);
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            for func in parse_functions(&text).unwrap() {
                let insts: Vec<Inst> = func
                    .layout
                    .insts()
                    .filter(|&i| !func.dfg.insts[i].opcode().is_branch())
                    .collect();
                for &a in &insts {
                    for &b in &insts {
                        let (oa, ob) = (Operator::of(&func, a), Operator::of(&func, b));
                        let same = blanked(&func, a) == blanked(&func, b);
                        assert_eq!(oa == ob, same, "{path:?}: {a} and {b}");
                        assert!(oa.is_some());
                        let same_opcode = func.dfg.insts[a].opcode() == func.dfg.insts[b].opcode();
                        same_opcode_differ += usize::from(same_opcode && !same);
                        equal += usize::from(a != b && same);
                    }
                }
            }
        }
        assert!(same_opcode_differ > 1000 && equal > 1000);
    }
}
