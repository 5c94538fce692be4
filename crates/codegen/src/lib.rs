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
//!
//! Where things live:
//!
//! ```text
//!  passes/          the pass registry, the IrPass and MachinePass traits, pipelines
//!  analysis.rs      the cache of a kernel's analyses the IR passes share
//!  ir_passes/       one folder per IR pass (converge, restructure, linearize_ssa)
//!  machine_passes/  one folder or file per machine pass (linearize, cleanup)
//!  pass_util/       helpers more than one pass uses (region orders, SSA repair)
//!  settings.rs      every setting, declared once, typed, parsed once
//!  context.rs       the pipeline, in order
//!  lower/ regalloc/ mir/ isa/   lowering, allocation, machine IR, targets
//! ```

extern crate alloc;

pub mod analysis;
mod context;
pub mod ir_passes;
pub mod isa;
pub mod lower;
pub mod machine_passes;
pub mod mir;
mod pass_util;
pub mod passes;
pub mod regalloc;
pub mod settings;

// Every pass also answers at the crate root, by its name alone
// (`warplift_codegen::linearize`), as before the passes had folders of their own.
#[doc(no_inline)]
pub use ir_passes::{converge, licm, linearize_ssa, meld, restructure};
#[doc(no_inline)]
pub use machine_passes::{cleanup, linearize};

pub use context::{
    CodeKind, CodegenError, CompileStats, CompiledCode, CompiledKernel, CompiledModule, Context,
};
pub use isa::{lookup, lookup_by_name, TargetIsa};
pub use settings::Settings;
/// The target triples [`lookup`] takes, re-exported so embedders name the same version.
pub use target_lexicon;
