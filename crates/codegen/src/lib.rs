//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR for the emitters
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! So far: the machine IR ([`mir`], with its verifier), the lowering to it ([`lower`]) and
//! register allocation ([`regalloc`]); linearization and the targets build on them.

extern crate alloc;

pub mod lower;
pub mod mir;
pub mod settings;
pub mod regalloc;
