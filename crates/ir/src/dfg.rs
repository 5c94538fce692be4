//! The data-flow graph: instructions, values and blocks with their parameters.
//!
//! The DFG owns what instructions *are*; the [`Layout`](crate::Layout) owns where they
//! *stand*. A value is either the single result of an instruction or a parameter of a
//! block, and knows its type and its definition, so every pass can walk from a use to its
//! definition without a side table.

use crate::entities::{Block, Inst, Value};
use crate::instructions::InstructionData;
use crate::types::Type;
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{PrimaryMap, SecondaryMap};

/// Where a value is defined.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// The result of an instruction.
    Result(Inst),
    /// The `n`-th parameter of a block.
    Param(Block, u32),
}

/// What the DFG knows of a value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueData {
    /// The value's type.
    pub ty: Type,
    /// The value's definition.
    pub def: ValueDef,
}

/// What the DFG knows of a block: its parameters, and who made it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockData {
    /// The block's parameters, in order.
    pub params: Vec<Value>,
    /// Whether the block is the kernel's or a pass made it to hold only control flow.
    pub origin: BlockOrigin,
}

/// Who made a block. Passes that restructure control flow add blocks that hold no code
/// of the kernel (joins, dispatches, predicate assignments); the code generator may drop
/// such a block when it ends up as a lone jump, where a kernel's own block keeps its
/// identity (the emulator counts executions per IR block, and a kernel's empty block is
/// part of what is measured). Like source locations, the origin is metadata: the IR text
/// does not show it (a parsed kernel's blocks are all the kernel's) and structural
/// equality does not compare it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockOrigin {
    /// A block of the kernel as written, or one holding some of its code (a copy, a
    /// split part of a block).
    #[default]
    Kernel,
    /// A block a pass made for control flow only: its instructions are the pass's own
    /// (a jump, a branch on a predicate the pass introduced, predicate assignments).
    Pass,
}

/// Instructions, values and blocks of one function.
#[derive(Clone, Debug, Default)]
pub struct DataFlowGraph {
    /// Every instruction ever created, in or out of the layout.
    pub insts: PrimaryMap<Inst, InstructionData>,
    results: SecondaryMap<Inst, PackedOption<Value>>,
    values: PrimaryMap<Value, ValueData>,
    blocks: PrimaryMap<Block, BlockData>,
}

impl DataFlowGraph {
    /// An empty DFG.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates an instruction; when `result` is given, also its result value of that type.
    /// The instruction is not placed in any block.
    pub fn make_inst(&mut self, data: InstructionData, result: Option<Type>) -> Inst {
        let inst = self.insts.push(data);
        if let Some(ty) = result {
            let v = self.values.push(ValueData {
                ty,
                def: ValueDef::Result(inst),
            });
            self.results[inst] = v.into();
        }
        inst
    }

    /// The result of `inst`, if it has one.
    #[inline]
    pub fn inst_result(&self, inst: Inst) -> Option<Value> {
        self.results[inst].expand()
    }

    /// Makes room for `insts` more instructions and `values` more values, so that a pass
    /// that knows it will create many does not grow the tables one doubling at a time.
    pub fn reserve(&mut self, insts: usize, values: usize) {
        self.insts.reserve(insts);
        self.results.resize(self.insts.len() + insts);
        self.values.reserve(values);
    }

    /// The number of instructions ever created.
    pub fn num_insts(&self) -> usize {
        self.insts.len()
    }

    /// The number of values ever created.
    pub fn num_values(&self) -> usize {
        self.values.len()
    }

    /// The number of blocks ever created.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Is `v` a value of this DFG?
    pub fn value_is_valid(&self, v: Value) -> bool {
        self.values.is_valid(v)
    }

    /// Is `b` a block of this DFG?
    pub fn block_is_valid(&self, b: Block) -> bool {
        self.blocks.is_valid(b)
    }

    /// The type of `v`.
    #[inline]
    pub fn value_type(&self, v: Value) -> Type {
        self.values[v].ty
    }

    /// The definition of `v`.
    #[inline]
    pub fn value_def(&self, v: Value) -> ValueDef {
        self.values[v].def
    }

    /// Creates a block with no parameters. It is not placed in the layout.
    pub fn make_block(&mut self) -> Block {
        self.blocks.push(BlockData::default())
    }

    /// Creates a block with no parameters that a pass makes for control flow only
    /// ([`BlockOrigin::Pass`]). It is not placed in the layout.
    pub fn make_pass_block(&mut self) -> Block {
        self.blocks.push(BlockData {
            origin: BlockOrigin::Pass,
            ..BlockData::default()
        })
    }

    /// Who made `block`.
    pub fn block_origin(&self, block: Block) -> BlockOrigin {
        self.blocks[block].origin
    }

    /// Records who made `block` (a pass moving kernel code into a block it made marks
    /// the block [`BlockOrigin::Kernel`]).
    pub fn set_block_origin(&mut self, block: Block, origin: BlockOrigin) {
        self.blocks[block].origin = origin;
    }

    /// Makes room for `additional` more parameters of `block`, so that appending a known
    /// number of them allocates the block's list once.
    pub fn reserve_block_params(&mut self, block: Block, additional: usize) {
        self.blocks[block].params.reserve_exact(additional);
    }

    /// Appends a parameter of type `ty` to `block`.
    pub fn append_block_param(&mut self, block: Block, ty: Type) -> Value {
        let n = self.blocks[block].params.len() as u32;
        let v = self.values.push(ValueData {
            ty,
            def: ValueDef::Param(block, n),
        });
        self.blocks[block].params.push(v);
        v
    }

    /// Removes the `index`-th parameter of `block`; later parameters move down by one. The
    /// value itself stays allocated but must no longer be used.
    pub fn remove_block_param(&mut self, block: Block, index: usize) {
        self.blocks[block].params.remove(index);
        for (n, &v) in self.blocks[block].params.iter().enumerate().skip(index) {
            self.values[v].def = ValueDef::Param(block, n as u32);
        }
    }

    /// The parameters of `block`.
    #[inline]
    pub fn block_params(&self, block: Block) -> &[Value] {
        &self.blocks[block].params
    }

    /// Every block ever created (placed in the layout or not).
    pub fn blocks(&self) -> impl Iterator<Item = Block> + '_ {
        self.blocks.keys()
    }

    /// Every value ever created.
    pub fn values(&self) -> impl Iterator<Item = Value> + '_ {
        self.values.keys()
    }
}
