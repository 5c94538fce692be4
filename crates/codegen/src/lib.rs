//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR for the emitters
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! The machine IR and register allocation exist so far; lowering, linearization and the
//! targets build on them.

pub mod mir;
pub mod regalloc;
