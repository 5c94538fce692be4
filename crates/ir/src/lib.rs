//! warplift's SSA intermediate representation.
//!
//! A kernel is a [`Function`]: a signature of named scalar parameters, static shared- and
//! local-memory declarations, and a body in SSA form with block parameters instead of
//! phis. This crate holds everything that defines the IR and its meaning:
//!
//! - the entities, types and instructions ([`entities`], [`types`], [`instructions`]),
//! - the text format: [`parser`] and `Display` on [`Function`],
//! - the builder API for embedders ([`builder`], [`frontend`]),
//! - the [`verifier`],
//! - analyses: the generic [`cfg`](mod@cfg) analyses and the [`divergence`] (uniformity) analysis,
//! - the reference interpreter ([`interp`]), which *defines* the semantics every target
//!   must reproduce, and the [`launch`] description shared by every tool that runs kernels.
//!
//! The semantics of every instruction, for every input, are written down in `docs/ir.md`.

pub mod builder;
pub mod cfg;
pub mod condcodes;
pub mod dfg;
pub mod divergence;
pub mod entities;
pub mod frontend;
pub mod function;
pub mod instructions;
pub mod interp;
pub mod launch;
pub mod layout;
mod named_enum;
mod opcode_table;
pub mod parser;
pub mod srcloc;
pub mod types;
pub mod verifier;
pub mod write;

pub use crate::condcodes::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC};
pub use crate::dfg::{BlockOrigin, DataFlowGraph, ValueDef};
pub use crate::entities::{Block, Inst, LocalVar, SharedVar, Value};
pub use crate::function::{Function, MemVarData, Param, Signature};
pub use crate::instructions::{
    BlockCall, InstructionData, InstructionFormat, Opcode, ResultType, TypeClass,
};
pub use crate::layout::Layout;
pub use crate::srcloc::SourceLoc;
pub use crate::types::Type;
