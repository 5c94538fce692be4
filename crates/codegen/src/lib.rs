//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR for the emitters
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! So far: the machine IR ([`mir`], with its verifier) and the lowering to it ([`lower`]);
//! allocation and the targets build on them.

extern crate alloc;

pub mod lower;
pub mod mir;
pub mod settings;
