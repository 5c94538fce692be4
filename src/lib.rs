//! warplift: a retargetable compiler backend for SIMT kernels.
//!
//! This umbrella crate re-exports the public API of the workspace's crates, so an embedder
//! depends on one crate:
//!
//! - [`ir`]: the SSA IR — entities, text format, builder, verifier, reference interpreter
//!   and launch descriptions;
//! - [`codegen`]: the code generator — lowering to machine IR, register allocation, the
//!   PTX and SIMT-bytecode targets, and the [`codegen::Context`] that runs them;
//! - [`emu`]: the multi-warp SIMT emulator that runs the bytecode and measures it;
//! - [`target_lexicon`]: the target triples [`codegen::lookup`] takes;
//! - [`run_object`] and [`interpret`]: one call each to run a compiled object on the
//!   emulator or a kernel on the reference interpreter, returning the memory the run left
//!   and its statistics as a [`Run`] (see [`mod@exec`]).
//!
//! `docs/embedding.md` walks through the whole path (build a kernel, verify, compile for
//! PTX and for the emulator, launch, run, read back, interpret) side by side with the
//! Cranelift calls it mirrors; `examples/embed.rs` is that walk-through as a program.
//!
//! ```
//! use warplift::ir::parser::parse_function;
//! use warplift::ir::verifier::verify_function;
//!
//! let func = parse_function(
//!     "kernel %double(out: i64) {
//!      block0(v0: i64):
//!          v1 = thread_id x
//!          v2 = uextend.i64 v1
//!          v3 = iconst.i64 2
//!          v4 = ishl v2, v3
//!          v5 = iadd v0, v4
//!          v6 = iadd v1, v1
//!          store global v6, v5
//!          return
//!      }",
//! )
//! .unwrap();
//! verify_function(&func).unwrap();
//! assert_eq!(func.name, "double");
//! ```

pub mod exec;

pub use exec::{interpret, interpret_module, run_loaded, run_object, run_program, Error, Run};
pub use warplift_codegen as codegen;
pub use warplift_codegen::target_lexicon;
pub use warplift_emu as emu;
pub use warplift_ir as ir;
