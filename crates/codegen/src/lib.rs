//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR for the emitters
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! The machine IR ([`mir`], with its verifier), the lowering to it ([`lower`]), register
//! allocation ([`regalloc`]) and the PTX target ([`isa::ptx`]).

extern crate alloc;

pub mod isa;
pub mod lower;
pub mod mir;
pub mod regalloc;
pub mod settings;
