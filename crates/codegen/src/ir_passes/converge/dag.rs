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

use warplift_ir::{Block, Function, Inst, InstructionData, Opcode, Value, ValueDef};

/// One arm: a block and its non-terminator instructions.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Each node's operator and edges, found once when the arm is made.
    nodes: Vec<Node>,
    /// Does a node write memory (a store, an atomic) or wait at a barrier? Without one a
    /// load has no memory dependence in the arm.
    writes: bool,
}

/// What the matching asks of a node, read off its instruction once.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Node {
    /// Its operator ([`Operator::of`]).
    op: Option<Operator>,
    /// The DAG's edges: where each of its value operands (at most three) is defined, as
    /// [`Arm::def`] reads it.
    defs: [u32; 3],
    /// What kind of instruction it is ([`kind`]), read off its opcode once: the matching
    /// asks it of every node of both arms.
    kind: u8,
}

/// The kinds of node the matching and the legality checks tell apart.
mod kind {
    /// A load.
    pub const LOAD: u8 = 1;
    /// An instruction without side effects that has a result (free to move as far as
    /// the instruction itself goes).
    pub const PURE: u8 = 2;
    /// A store, an atomic or a barrier: it orders the arm's memory accesses.
    pub const WRITES: u8 = 4;
}

/// The [`kind`] of an instruction.
fn kind_of(data: &InstructionData) -> u8 {
    let op = data.opcode();
    let mut k = 0;
    if op == Opcode::Load {
        k |= kind::LOAD;
    }
    if !op.has_side_effects() && op.has_result() {
        k |= kind::PURE;
    }
    if matches!(
        op,
        Opcode::Store | Opcode::AtomicRmw | Opcode::AtomicCas | Opcode::Barrier
    ) {
        k |= kind::WRITES;
    }
    k
}

/// An operand defined outside the arm (before the branch, or a parameter of another
/// block): a leaf of the DAG.
const OUTSIDE: u32 = u32::MAX;
/// An operand that is a parameter of the arm's own block.
const PARAM: u32 = u32::MAX - 1;

/// Where an operand of a node is defined: by a node of the same arm, as a parameter of
/// the arm's block, or outside the arm.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Def {
    /// The node of the arm computing it.
    pub node: Option<usize>,
    /// It is a parameter of the arm's block.
    pub param: bool,
}

impl Def {
    /// Is the value defined in the arm (so not available before its branch)?
    pub fn in_arm(self) -> bool {
        self.node.is_some() || self.param
    }
}

impl Arm {
    /// The arm of `block`.
    pub fn new(func: &Function, block: Block) -> Arm {
        Arm::new_reusing(func, block, None)
    }

    /// [`Arm::new`], in the storage of `spare`, an arm the caller is done with (the pass
    /// makes two arms per divergent branch: reusing the vectors of the last branch's
    /// spares an allocation and a free per vector).
    pub fn new_reusing(func: &Function, block: Block, spare: Option<Arm>) -> Arm {
        let (mut insts, mut nodes) =
            spare.map_or_else(|| (Vec::new(), Vec::new()), |s| (s.insts, s.nodes));
        let all = func.layout.block_insts(block);
        // Only a block's last instruction is a terminator.
        let body = match all.last() {
            Some(&last) if func.dfg.insts[last].opcode().is_terminator() => &all[..all.len() - 1],
            _ => all,
        };
        debug_assert!(body
            .iter()
            .all(|&i| !func.dfg.insts[i].opcode().is_terminator()));
        insts.clear();
        insts.extend_from_slice(body);
        nodes.clear();
        nodes.reserve(insts.len());
        let mut arm = Arm {
            block,
            sorted: sorted_index(&insts),
            insts,
            nodes: Vec::new(),
            writes: false,
        };
        for &inst in &arm.insts {
            let mut defs = [OUTSIDE; 3];
            for (slot, &v) in defs.iter_mut().zip(func.dfg.insts[inst].args()) {
                *slot = match func.dfg.value_def(v) {
                    // Most operands come from outside the arm: one look at their block
                    // spares the search.
                    ValueDef::Result(d) if func.layout.inst_block(d) == Some(block) => {
                        arm.node(d).map_or(OUTSIDE, |n| n as u32)
                    }
                    ValueDef::Result(_) => OUTSIDE,
                    ValueDef::Param(b, _) if b == block => PARAM,
                    ValueDef::Param(..) => OUTSIDE,
                };
            }
            let kind = kind_of(&func.dfg.insts[inst]);
            arm.writes |= kind & kind::WRITES != 0;
            nodes.push(Node {
                op: Operator::of(func, inst),
                defs,
                kind,
            });
        }
        arm.nodes = nodes;
        arm
    }

    /// The arm of the same block after a Hoist or a Sink took some of its instructions
    /// out: its nodes still in the block, in their order, with their operators, and with
    /// the operands that read a node gone now defined outside the arm (a Hoist's or
    /// Sink's merged instruction, before the branch or in the reconvergence point, stands
    /// in for it). This is the arm [`Arm::new`] would make, found without looking at the
    /// operands again; when anything else changed the block (an instruction added or
    /// moved), it is made anew.
    pub fn after_moves(mut self, func: &Function) -> Arm {
        let n = self.insts.len();
        // Each node's index in the new arm (on the stack for arms of usual size).
        let mut small = [OUTSIDE; 64];
        let mut large = Vec::new();
        let index: &mut [u32] = if n <= small.len() {
            &mut small[..n]
        } else {
            large.resize(n, OUTSIDE);
            &mut large
        };
        // Kept nodes move down in place; a node's operands are earlier nodes, whose new
        // index is known by then.
        let mut kept = 0;
        for k in 0..n {
            let inst = self.insts[k];
            if func.layout.inst_block(inst) != Some(self.block) {
                continue;
            }
            index[k] = kept as u32;
            let mut node = self.nodes[k];
            for d in &mut node.defs {
                if *d != OUTSIDE && *d != PARAM {
                    *d = index[*d as usize];
                }
            }
            self.insts[kept] = inst;
            self.nodes[kept] = node;
            kept += 1;
        }
        self.insts.truncate(kept);
        self.nodes.truncate(kept);
        let all = func.layout.block_insts(self.block);
        let same = all.len() == kept + 1
            && all[..kept] == self.insts[..]
            && func.dfg.insts[all[kept]].opcode().is_terminator();
        if !same {
            let block = self.block;
            return Arm::new_reusing(func, block, Some(self));
        }
        if !self.sorted.is_empty() {
            self.sorted = sorted_index(&self.insts);
        }
        self
    }

    /// Do the two arms have an operator in common (two nodes that could be one
    /// instruction)? Without one no matching can pair anything, and none is built.
    pub fn shares_operator(&self, other: &Arm) -> bool {
        self.nodes
            .iter()
            .filter_map(|n| n.op)
            .any(|op| other.nodes.iter().any(|o| o.op == Some(op)))
    }

    /// Is node `node` a load?
    pub fn is_load(&self, node: usize) -> bool {
        self.nodes[node].kind & kind::LOAD != 0
    }

    /// Is node `node` free of side effects, with a result?
    pub fn is_pure(&self, node: usize) -> bool {
        self.nodes[node].kind & kind::PURE != 0
    }

    /// Does a node of the arm write memory or wait at a barrier (when the arm was made)?
    pub fn writes_memory(&self) -> bool {
        self.writes
    }

    /// The operator of node `node` (`None` for a branch).
    pub fn operator(&self, node: usize) -> Option<Operator> {
        self.nodes[node].op
    }

    /// Where operand `slot` of node `node` was defined when the arm was made (the
    /// operand of a later edit of the instruction is not followed).
    pub fn def(&self, node: usize, slot: usize) -> Def {
        match self.nodes[node].defs[slot] {
            OUTSIDE => Def {
                node: None,
                param: false,
            },
            PARAM => Def {
                node: None,
                param: true,
            },
            n => Def {
                node: Some(n as usize),
                param: false,
            },
        }
    }

    /// The nodes of the arm that node `node`'s operands are the results of, as they were
    /// when the arm was made (one per operand slot: an operand read twice appears twice).
    pub fn operand_nodes(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes[node]
            .defs
            .iter()
            .filter(|&&d| d != OUTSIDE && d != PARAM)
            .map(|&d| d as usize)
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

/// The nodes sorted by instruction, when `insts` is not sorted itself (see
/// [`Arm::node`]).
fn sorted_index(insts: &[Inst]) -> Vec<(Inst, u32)> {
    if insts.windows(2).all(|w| w[0] < w[1]) {
        return Vec::new();
    }
    let mut s: Vec<(Inst, u32)> = insts
        .iter()
        .enumerate()
        .map(|(n, &i)| (i, n as u32))
        .collect();
    s.sort_unstable();
    s
}

/// What two instructions must share to be one operator in the matching: everything but
/// their value operands (opcode, immediates, condition codes, address spaces, offsets),
/// and their result type. A small copied value, read off the instruction without cloning
/// it: the matching computes one per node of every arm it is given, and compares it with
/// the operators of the other arm. So it is packed into two words (the opcode, the
/// result type, which field the instruction carries besides its operands, and that
/// field's small parts in one; an immediate, offset or variable in the other), and
/// comparing two operators is comparing them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operator {
    /// Opcode, result type (0 for none), kind of detail and its small parts, a byte each.
    head: u32,
    /// An immediate's bits, a memory offset, or a variable's number.
    bits: u64,
}

/// Which field an operator carries besides its opcode and result type (the third byte
/// of [`Operator::head`]).
mod detail {
    pub const NONE: u32 = 0;
    pub const BITS: u32 = 1;
    pub const INT: u32 = 2;
    pub const FLOAT: u32 = 3;
    pub const DIM: u32 = 4;
    pub const MEMORY: u32 = 5;
    pub const RMW: u32 = 6;
    pub const SHARED: u32 = 7;
    pub const LOCAL: u32 = 8;
}

impl Operator {
    /// The operator of `inst`; `None` for a branch, whose destinations are the walk's to
    /// compare (no matching moves a terminator).
    pub fn of(func: &Function, inst: Inst) -> Option<Operator> {
        use InstructionData as D;
        let data = &func.dfg.insts[inst];
        // (kind, small parts, bits)
        let (kind, small, bits): (u32, u32, u64) = match *data {
            D::Nullary { .. } | D::Unary { .. } | D::Binary { .. } | D::Ternary { .. } => {
                (detail::NONE, 0, 0)
            }
            D::UnaryImm { imm: bits, .. } | D::FloatConst { bits, .. } => (detail::BITS, 0, bits),
            D::IntCompare { cond, .. } => (detail::INT, cond as u32, 0),
            D::FloatCompare { cond, .. } => (detail::FLOAT, cond as u32, 0),
            D::Geometry { dim, .. } => (detail::DIM, dim as u32, 0),
            D::Load { space, offset, .. }
            | D::Store { space, offset, .. }
            | D::AtomicCas { space, offset, .. } => {
                (detail::MEMORY, space as u32, u64::from(offset as u32))
            }
            D::AtomicRmw {
                op, space, offset, ..
            } => (
                detail::RMW,
                op as u32 | (space as u32) << 8,
                u64::from(offset as u32),
            ),
            D::SharedAddr { var, .. } => (detail::SHARED, 0, u64::from(var.as_u32())),
            D::LocalAddr { var, .. } => (detail::LOCAL, 0, u64::from(var.as_u32())),
            D::Jump { .. } | D::Brif { .. } | D::BrTable { .. } => return None,
        };
        let ty = func
            .dfg
            .inst_result(inst)
            .map_or(0, |v| func.dfg.value_type(v) as u32 + 1);
        Some(Operator {
            head: data.opcode() as u32 | ty << 8 | kind << 12 | small << 16,
            bits,
        })
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
    use warplift_ir::Type;

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
        // Pairs of one opcode told apart by an immediate, condition, space, offset,
        // variable or type: the cases a key could get wrong.
        let (mut same_opcode_differ, mut equal) = (0, 0);
        for (path, func) in super::super::corpus_functions() {
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
        assert!(same_opcode_differ > 1000 && equal > 1000);
    }
}
