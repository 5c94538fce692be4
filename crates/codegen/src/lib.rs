//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR for the emitters
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! [`Context`] runs the pipeline; [`lookup`] picks a [`TargetIsa`] by triple.

extern crate alloc;

mod context;
pub mod isa;
pub mod linearize;
pub mod linearize_ssa;
pub mod lower;
pub mod mir;
pub mod passes;
pub mod regalloc;
pub mod restructure;
pub mod settings;

pub use context::{
    CodegenError, CompileStats, CompiledCode, CompiledKernel, CompiledModule, Context,
};
pub use isa::{lookup, lookup_by_name, TargetIsa};
pub use settings::Settings;
