//! warplift's code generator.
//!
//! ```text
//!  ir::Function ──lower (isle/*.isle)──▶ MIR, virtual registers (mir)
//!               ──regalloc2───────────▶ MIR, physical registers, spills explicit
//!               ──linearize───────────▶ MIR, linearized
//!               ──cleanup─────────────▶ MIR for the emitters (no empty edge blocks)
//!               ──emit────────────────▶ PTX text | SIMT bytecode in an ELF object
//! ```
//!
//! [`Context`] runs the pipeline; [`lookup`] picks a [`TargetIsa`] by triple.

extern crate alloc;

pub mod cleanup;
mod context;
pub mod converge;
pub mod isa;
pub mod linearize;
pub mod linearize_ssa;
pub mod lower;
pub mod meld;
pub mod mir;
pub mod passes;
pub mod regalloc;
pub mod restructure;
pub mod settings;

pub use context::{
    CodeKind, CodegenError, CompileStats, CompiledCode, CompiledKernel, CompiledModule, Context,
};
pub use isa::{lookup, lookup_by_name, TargetIsa};
pub use settings::Settings;
/// The target triples [`lookup`] takes, re-exported so embedders name the same version.
pub use target_lexicon;
