//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR for the emitters
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! The machine IR and the PTX target (`isa::ptx`) exist so far; lowering and allocation build
//! the MIR the target consumes.

pub mod isa;
pub mod mir;
