//! Typed entity references of the IR.
//!
//! Every table of a [`Function`](crate::Function) is indexed by one of these small
//! `Copy` handles rather than by a bare `usize`, so a block can never be used where a value
//! is expected. Each prints with its own prefix (`block3`, `v7`, `inst2`, `smem0`,
//! `lmem1`), which is also its spelling in the text format.

use cranelift_entity::entity_impl;

/// A basic block of a function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(u32);
entity_impl!(Block, "block");

/// An SSA value: the result of an instruction or a block parameter.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(u32);
entity_impl!(Value, "v");

/// An instruction of a function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Inst(u32);
entity_impl!(Inst, "inst");

/// A static shared-memory variable of a kernel (one instance per thread block).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedVar(u32);
entity_impl!(SharedVar, "smem");

/// A static local-memory variable of a kernel (one instance per thread).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalVar(u32);
entity_impl!(LocalVar, "lmem");
