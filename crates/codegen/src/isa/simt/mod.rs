//! The SIMT bytecode target: allocated machine IR encoded into the bytecode of
//! [`warplift_simt`], in an ELF object.
//!
//! ```text
//!  MirFunction (allocated) ──encode──▶ KernelCode (bytecode, block table, pc → srcloc)
//!  [KernelCode] ──write_object──▶ ELF (warplift_simt::object)
//! ```
//!
//! The instruction set itself (the opcode table, encoding, decoder + validator,
//! disassembler and object format) lives in the leaf crate `warplift-simt`, which the
//! emulator shares; it is re-exported here so that the target's users find it in one
//! place. This module holds only what needs the compiler: [`encode`] (machine IR to
//! bytecode), [`decoded_to_mir`] (bytecode back to machine IR, for printing) and the
//! [`TargetIsa`](crate::isa::TargetIsa) implementation.

pub mod encode;
mod isa;

pub use encode::{decoded_to_mir, encode, EncodeError};
pub use isa::{SimtIsa, SIMT_TRIPLE};
pub use warplift_simt::*;
