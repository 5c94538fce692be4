//! warplift: a retargetable compiler backend for SIMT kernels.
//!
//! This umbrella crate re-exports the public API of the workspace's crates, so an embedder
//! depends on one crate:
//!
//! - [`ir`]: the SSA IR — entities, text format, builder, verifier, reference interpreter
//!   and launch descriptions;
//! - [`codegen`]: the code generator — lowering to machine IR, register allocation, the
//!   PTX and SIMT-bytecode targets, and the [`codegen::Context`] that runs them;
//! - [`emu`]: the multi-warp SIMT emulator that runs the bytecode and measures it.
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

pub use warplift_codegen as codegen;
pub use warplift_emu as emu;
pub use warplift_ir as ir;
