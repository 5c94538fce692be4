//! The machine IR (MIR): one target-independent low-level IR shared by every target.
//!
//! In the style of Cranelift's VCode: a kernel becomes blocks of [`MInst`]s over
//! registers of three classes ([`RegClass`]: `b32`, `b64`, `pred`), with guards,
//! predicates and memory operands explicit. Block identities and block order are explicit
//! and stable, because the linearizer works on them; every block remembers the IR block it
//! implements, so the emulator can count executions per IR block.
//!
//! The MIR goes through three states, each a [`MirFunction`]:
//! 1. **lowered**: SSA over virtual registers, with block parameters;
//! 2. **allocated**: physical registers only, no block parameters, spills and reloads
//!    explicit (register allocation);
//! 3. **final**: after linearization, ready for the emitters.
//!
//! The generic CFG analyses of `warplift_ir::cfg` run on it through the [`Cfg`] trait.

pub mod dot;
mod inst;
mod print;
pub mod verify;

pub use inst::*;

use cranelift_entity::{entity_impl, PrimaryMap};
use warplift_ir::cfg::Cfg;
use warplift_ir::{Block, Param};

/// A machine block.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MBlock(u32);
entity_impl!(MBlock, "mblock");

/// A block of machine instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MBlockData {
    /// Parameters (virtual registers), before register allocation.
    pub params: Vec<Reg>,
    /// The instructions; the last one is the block's only terminator.
    pub insts: Vec<MInst>,
    /// The IR block this block implements, if any (blocks made by the code generator,
    /// such as split critical edges, have none).
    pub origin: Option<Block>,
    /// Why the code generator made the block.
    pub kind: BlockKind,
}

/// Why a machine block exists: shown in CFG drawings and MIR text, so blocks made by
/// passes can be told from the kernel's own.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// A block of the kernel (or a part of one, such as a branch-table test).
    #[default]
    Code,
    /// A block splitting a critical edge for register allocation.
    EdgeSplit,
    /// A guard block made by linearization.
    Guard,
    /// A block an IR pass made for control flow only (a restructuring's join, dispatch
    /// or predicate assignment, `warplift_ir::BlockOrigin::Pass`): the post-allocation
    /// cleanup may drop it when it ends up as a lone jump.
    PassMade,
}

impl BlockKind {
    /// The kind's name in MIR text and CFG drawings.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Code => "code",
            BlockKind::EdgeSplit => "edge split",
            BlockKind::Guard => "guard",
            BlockKind::PassMade => "pass-made",
        }
    }

    /// Does the block hold code of the kernel's control flow, as opposed to a block the
    /// code generator or linearization made on an edge? A pass-made block of an IR pass
    /// counts as code: it is part of the IR the machine passes were given.
    pub fn is_code(self) -> bool {
        matches!(self, BlockKind::Code | BlockKind::PassMade)
    }
}

/// A kernel in machine IR.
#[derive(Clone, Debug, Default)]
pub struct MirFunction {
    /// The kernel's name.
    pub name: String,
    /// The kernel's parameters (read by `LdParam`).
    pub params: Vec<Param>,
    /// Every block.
    pub blocks: PrimaryMap<MBlock, MBlockData>,
    /// Block order; the first block is the entry.
    pub order: Vec<MBlock>,
    /// The class of every virtual register, by index.
    pub vreg_classes: Vec<RegClass>,
    /// Bytes of shared memory per thread block.
    pub shared_size: u32,
    /// Bytes of the kernel's own local variables per thread (spill slots come after).
    pub local_size: u32,
    /// Number of spill slots, once allocated.
    pub spill_slots: u32,
    /// The blocks whose two-way branch every lane takes to its `taken` side, whatever
    /// its values: a branch table's range check where the index provably stays below the
    /// table's length. Such a branch is uniform, and more than that: it never splits a
    /// warp even where the divergence analysis is not consulted (linearization's `all`
    /// mode), so its `not_taken` edge is no second way into a block. Set by the lowering;
    /// read by region selection, before any pass rewrites the branch.
    pub one_way_branches: std::collections::HashSet<MBlock>,
}

impl MirFunction {
    /// An empty function called `name`.
    pub fn new(name: impl Into<String>, params: Vec<Param>) -> Self {
        MirFunction {
            name: name.into(),
            params,
            ..Default::default()
        }
    }

    /// Creates a new virtual register of class `class`.
    pub fn new_vreg(&mut self, class: RegClass) -> Reg {
        let index = self.vreg_classes.len() as u32;
        self.vreg_classes.push(class);
        Reg::virt(index, class)
    }

    /// Creates a block, not yet placed in the order.
    pub fn new_block(&mut self, origin: Option<Block>) -> MBlock {
        self.blocks.push(MBlockData {
            origin,
            ..Default::default()
        })
    }

    /// The entry block.
    pub fn entry(&self) -> Option<MBlock> {
        self.order.first().copied()
    }

    /// The terminator of `block`, if it has one.
    pub fn terminator(&self, block: MBlock) -> Option<&MInst> {
        self.blocks[block]
            .insts
            .last()
            .filter(|i| i.kind.is_terminator())
    }

    /// The successors of `block`, in branch order.
    pub fn successors(&self, block: MBlock) -> Vec<MBlock> {
        let mut out = Vec::new();
        Cfg::successors(self, block, &mut out);
        out
    }

    /// [`MirFunction::successors`] without a list of their own: for the loops that ask for
    /// every block's successors many times.
    pub fn succs(&self, block: MBlock) -> impl Iterator<Item = MBlock> + Clone {
        let (a, b) = match self.terminator(block).map(|t| &t.kind) {
            Some(MInstKind::Jump { dest }) => (Some(dest.block), None),
            Some(MInstKind::Branch {
                taken, not_taken, ..
            }) => (Some(taken.block), Some(not_taken.block)),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }

    /// Bytes of a spill slot: every slot can hold a register of any class.
    pub const SPILL_SLOT_BYTES: u32 = 8;

    /// The byte offset of spill slot `slot` in the thread's local window: slots follow the
    /// kernel's own local variables, 8-byte aligned.
    pub fn spill_slot_offset(&self, slot: SpillSlot) -> u32 {
        self.local_size.next_multiple_of(Self::SPILL_SLOT_BYTES) + slot.0 * Self::SPILL_SLOT_BYTES
    }

    /// Bytes of local memory per thread: the kernel's local variables and the spill slots.
    pub fn local_frame_size(&self) -> u32 {
        if self.spill_slots == 0 {
            self.local_size
        } else {
            self.spill_slot_offset(SpillSlot(self.spill_slots))
        }
    }

    /// The number of instructions in placed blocks.
    pub fn num_insts(&self) -> usize {
        self.order.iter().map(|&b| self.blocks[b].insts.len()).sum()
    }
}

impl Cfg for MirFunction {
    type Node = MBlock;

    fn entry(&self) -> Option<MBlock> {
        MirFunction::entry(self)
    }

    fn num_nodes(&self) -> usize {
        self.blocks.len()
    }

    fn successors(&self, block: MBlock, out: &mut Vec<MBlock>) {
        if let Some(t) = self.terminator(block) {
            t.kind.for_each_target(|target| out.push(target.block));
        }
    }

    fn nodes(&self) -> impl Iterator<Item = MBlock> + '_ {
        self.order.iter().copied()
    }
}
