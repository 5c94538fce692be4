//! Kernels: signature, memory declarations, data-flow graph, layout and source locations.

use crate::dfg::DataFlowGraph;
use crate::entities::{Block, Inst, LocalVar, SharedVar, Value};
use crate::instructions::{BlockCall, InstructionData};
use crate::layout::Layout;
use crate::srcloc::SourceLoc;
use crate::types::Type;
use cranelift_entity::{PrimaryMap, SecondaryMap};
use std::collections::HashMap;

/// A named, typed kernel parameter. Pointers to global memory are `i64` parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    /// The parameter's name, used by launch descriptions to bind arguments and buffers.
    pub name: String,
    /// The parameter's type.
    pub ty: Type,
}

impl Param {
    /// A parameter called `name` of type `ty`.
    pub fn new(name: impl Into<String>, ty: Type) -> Self {
        Param {
            name: name.into(),
            ty,
        }
    }
}

/// A kernel's signature. Kernels return nothing: their results are the memory they leave.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The parameters, in order; the entry block has one parameter of the same type each.
    pub params: Vec<Param>,
}

/// A static memory variable: `size` bytes aligned to `align` (a power of two).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemVarData {
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes, a power of two.
    pub align: u32,
}

/// A kernel in SSA form.
#[derive(Clone, Debug, Default)]
pub struct Function {
    /// The kernel's name (without the `%` of the text format).
    pub name: String,
    /// The kernel's parameters.
    pub signature: Signature,
    /// Shared-memory variables, one instance per thread block.
    pub shared_vars: PrimaryMap<SharedVar, MemVarData>,
    /// Local-memory variables, one instance per thread.
    pub local_vars: PrimaryMap<LocalVar, MemVarData>,
    /// Instructions, values and blocks.
    pub dfg: DataFlowGraph,
    /// Block and instruction order.
    pub layout: Layout,
    /// The source location of every instruction.
    pub srclocs: SecondaryMap<Inst, SourceLoc>,
    /// The source location of every block: where the parser read its header, or the
    /// builder's current location when the block was first switched to. Errors about a
    /// whole block (an empty block, entry parameters that do not match the signature)
    /// are reported here. Unknown (the default) for blocks made otherwise.
    pub block_srclocs: SecondaryMap<Block, SourceLoc>,
}

impl Function {
    /// An empty kernel called `name` with signature `signature`.
    pub fn with_name_signature(name: impl Into<String>, signature: Signature) -> Self {
        Function {
            name: name.into(),
            signature,
            ..Default::default()
        }
    }

    /// The entry block, if the kernel has any block.
    pub fn entry_block(&self) -> Option<Block> {
        self.layout.entry_block()
    }

    /// The data of `inst`.
    pub fn inst(&self, inst: Inst) -> &InstructionData {
        &self.dfg.insts[inst]
    }

    /// The terminator of `block`, if its last instruction is one.
    #[inline]
    pub fn terminator(&self, block: Block) -> Option<Inst> {
        self.layout
            .last_inst(block)
            .filter(|&i| self.dfg.insts[i].opcode().is_terminator())
    }

    /// The successors of `block`, in the order its terminator names them (a block named
    /// twice appears twice).
    pub fn successors(&self, block: Block) -> impl Iterator<Item = Block> + '_ {
        self.terminator(block)
            .into_iter()
            .flat_map(move |t| self.dfg.insts[t].branch_destinations().iter())
            .map(|call| call.block)
    }

    /// The number of instructions placed in the layout.
    pub fn num_placed_insts(&self) -> usize {
        self.layout
            .blocks()
            .iter()
            .map(|&b| self.layout.block_insts(b).len())
            .sum()
    }

    /// Total bytes of shared memory, with each variable at its aligned offset in
    /// declaration order (see [`Function::shared_offsets`]).
    pub fn shared_size(&self) -> u32 {
        layout_vars(self.shared_vars.values()).1
    }

    /// The byte offset of every shared variable within the block's shared window.
    pub fn shared_offsets(&self) -> SecondaryMap<SharedVar, u32> {
        let (offsets, _) = layout_vars(self.shared_vars.values());
        let mut map = SecondaryMap::new();
        for (var, off) in self.shared_vars.keys().zip(offsets) {
            map[var] = off;
        }
        map
    }

    /// Total bytes of local memory per thread.
    pub fn local_size(&self) -> u32 {
        layout_vars(self.local_vars.values()).1
    }

    /// The byte offset of every local variable within the thread's local window.
    pub fn local_offsets(&self) -> SecondaryMap<LocalVar, u32> {
        let (offsets, _) = layout_vars(self.local_vars.values());
        let mut map = SecondaryMap::new();
        for (var, off) in self.local_vars.keys().zip(offsets) {
            map[var] = off;
        }
        map
    }

    /// Do `self` and `other` describe the same kernel, up to the numbering of values and
    /// blocks? Source locations are debug information and are not compared.
    pub fn structurally_eq(&self, other: &Function) -> bool {
        Equivalence::default().check(self, other)
    }
}

impl PartialEq for Function {
    /// Structural equality: see [`Function::structurally_eq`].
    fn eq(&self, other: &Function) -> bool {
        self.structurally_eq(other)
    }
}

/// Places variables one after another at their alignment; returns each offset and the
/// total size. A window larger than `u32::MAX` bytes is rejected by the verifier; for
/// an unverified function the offsets and size saturate at `u32::MAX` so the layout
/// stays total.
fn layout_vars<'a>(vars: impl Iterator<Item = &'a MemVarData>) -> (Vec<u32>, u32) {
    let clamp = |x: u64| x.min(u64::from(u32::MAX)) as u32;
    let mut offsets = Vec::new();
    let mut end = 0;
    for (start, var_end) in var_extents(vars) {
        offsets.push(clamp(start));
        end = var_end;
    }
    (offsets, clamp(end))
}

/// The `[start, end)` byte range of each variable in the layout of
/// [`Function::shared_offsets`] and [`Function::local_offsets`], computed in `u64` (and
/// saturating there, so no declaration can wrap) for the verifier to check against the
/// `u32` address space.
pub(crate) fn var_extents<'a>(vars: impl Iterator<Item = &'a MemVarData>) -> Vec<(u64, u64)> {
    let mut end: u64 = 0;
    vars.map(|var| {
        let align = u64::from(var.align.max(1));
        let start = end.div_ceil(align).saturating_mul(align);
        end = start.saturating_add(u64::from(var.size));
        (start, end)
    })
    .collect()
}

/// The bijection between two functions' values and blocks built while comparing them.
#[derive(Default)]
struct Equivalence {
    values: HashMap<Value, Value>,
    blocks: HashMap<Block, Block>,
}

impl Equivalence {
    fn check(mut self, a: &Function, b: &Function) -> bool {
        if a.name != b.name
            || a.signature != b.signature
            || a.shared_vars != b.shared_vars
            || a.local_vars != b.local_vars
            || a.layout.num_blocks() != b.layout.num_blocks()
        {
            return false;
        }
        // First pair every definition, so uses that precede their definition in block
        // order (loop-carried values) can be mapped in the second pass.
        for (&ba, &bb) in a.layout.blocks().iter().zip(b.layout.blocks()) {
            self.blocks.insert(ba, bb);
            let (pa, pb) = (a.dfg.block_params(ba), b.dfg.block_params(bb));
            if pa.len() != pb.len() {
                return false;
            }
            for (&va, &vb) in pa.iter().zip(pb) {
                if a.dfg.value_type(va) != b.dfg.value_type(vb) {
                    return false;
                }
                self.values.insert(va, vb);
            }
            let (ia, ib) = (a.layout.block_insts(ba), b.layout.block_insts(bb));
            if ia.len() != ib.len() {
                return false;
            }
            for (&x, &y) in ia.iter().zip(ib) {
                match (a.dfg.inst_result(x), b.dfg.inst_result(y)) {
                    (Some(vx), Some(vy)) => {
                        if a.dfg.value_type(vx) != b.dfg.value_type(vy) {
                            return false;
                        }
                        self.values.insert(vx, vy);
                    }
                    (None, None) => {}
                    _ => return false,
                }
            }
        }
        a.layout
            .blocks()
            .iter()
            .zip(b.layout.blocks())
            .all(|(&ba, &bb)| {
                let (ia, ib) = (a.layout.block_insts(ba), b.layout.block_insts(bb));
                ia.iter()
                    .zip(ib)
                    .all(|(&x, &y)| self.same_inst(a.inst(x), b.inst(y)))
            })
    }

    fn same_value(&self, a: Value, b: Value) -> bool {
        self.values.get(&a).map_or(a == b, |&m| m == b)
    }

    fn same_call(&self, a: &BlockCall, b: &BlockCall) -> bool {
        self.blocks
            .get(&a.block)
            .map_or(a.block == b.block, |&m| m == b.block)
            && a.args.len() == b.args.len()
            && a.args
                .iter()
                .zip(&b.args)
                .all(|(&x, &y)| self.same_value(x, y))
    }

    fn same_inst(&self, a: &InstructionData, b: &InstructionData) -> bool {
        // Compare everything but the operands by blanking them, then the operands through
        // the value and block maps.
        let blank = |d: &InstructionData| {
            let mut d = d.clone();
            d.map_values(|_| Value::from_u32(0));
            for call in d.branch_destinations_mut() {
                call.block = Block::from_u32(0);
            }
            d
        };
        blank(a) == blank(b)
            && a.args()
                .iter()
                .zip(b.args())
                .all(|(&x, &y)| self.same_value(x, y))
            && a.branch_destinations()
                .iter()
                .zip(b.branch_destinations())
                .all(|(x, y)| self.same_call(x, y))
    }
}
