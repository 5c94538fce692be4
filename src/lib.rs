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
//! - `study` (the default feature `study`): the engine of `warplift study` — load a study
//!   spec, run its kernels x pipelines x machines on all cores, get one typed row per run,
//!   write its tables and plots (see `warplift_study` and docs/studies.md);
//! - [`run_object`] and [`interpret`]: one call each to run a compiled object on the
//!   emulator or a kernel on the reference interpreter, returning the memory the run left
//!   and its statistics as a [`Run`] (see [`mod@exec`]).
//!
//! `docs/embedding.md` walks through the whole path (build a kernel, verify, compile for
//! PTX and for the emulator, launch, run, read back, interpret) side by side with the
//! Cranelift calls it mirrors; `examples/embed.rs` is that walk-through as a program.
//!
//! # The path, step by step
//!
//! **Parse and verify** a kernel written as text:
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
//! )?;
//! verify_function(&func)?;
//! assert_eq!(func.name, "double");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Build** the same kernel in code, as with `cranelift-frontend` (variables, sealing and
//! block parameters are in [`ir::frontend`]), and print it:
//!
//! ```
//! use warplift::ir::builder::InstBuilder;
//! use warplift::ir::frontend::{FunctionBuilder, FunctionBuilderContext};
//! use warplift::ir::verifier::verify_function;
//! use warplift::ir::{AddrSpace, Dim, Function, Param, Signature, Type};
//!
//! let sig = Signature { params: vec![Param::new("out", Type::I64)] };
//! let mut func = Function::with_name_signature("double", sig);
//! let mut fctx = FunctionBuilderContext::new();
//! let mut b = FunctionBuilder::new(&mut func, &mut fctx);
//! let entry = b.create_block();
//! b.append_block_params_for_function_params(entry);
//! b.switch_to_block(entry);
//! b.seal_block(entry);
//! let out = b.block_params(entry)[0];
//! let tid = b.ins().thread_id(Dim::X);
//! let wide = b.ins().uextend(Type::I64, tid);
//! let two = b.ins().iconst(Type::I64, 2);
//! let offset = b.ins().ishl(wide, two);
//! let addr = b.ins().iadd(out, offset);
//! let doubled = b.ins().iadd(tid, tid);
//! b.ins().store(AddrSpace::Global, doubled, addr, 0);
//! b.ins().return_();
//! b.finalize();
//! verify_function(&func)?;
//! assert!(func.to_string().starts_with("kernel %double(out: i64) {"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Compile** for a target chosen by triple (or by its short name, `ptx` or `simt`) with
//! settings: PTX comes back as text, the SIMT target's output is an object to load.
//!
//! ```
//! use warplift::codegen::isa::simt::load_object;
//! use warplift::codegen::{lookup, lookup_by_name, Context, Settings};
//! use warplift::target_lexicon::triple;
//! # let func = warplift::ir::parser::parse_function(
//! #     "kernel %double(out: i64) {\nblock0(v0: i64):\n    return\n}")?;
//!
//! let mut settings = Settings::builder();
//! settings.set("ptx_target", "sm_80")?;
//! let isa = lookup(triple!("nvptx64-nvidia-cuda"), settings.finish())?;
//! let mut ctx = Context::new();
//! let ptx: String = ctx.compile(&func, isa.as_ref())?.into_text().unwrap();
//! assert!(ptx.contains(".entry double("));
//!
//! let mut settings = Settings::builder();
//! settings.set("passes", "linearize")?;
//! let isa = lookup_by_name("simt", settings.finish())?;
//! let compiled = ctx.compile(&func, isa.as_ref())?;
//! assert!(compiled.text().is_none());
//! let object = load_object(compiled.bytes())?; // or std::fs::write it to `double.o`
//! assert_eq!(object.kernels[0].kernel.info.params[0].name, "out");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Launch, run, read back, interpret**: [`mod@exec`] shows a launch built in code run
//! on the emulator and on the interpreter, and the results read back as typed vectors.
//!
//! **Sweep** kernels over pipelines and machines with a study (feature `study`, on by
//! default), from a spec file or its text:
//!
//! ```
//! # #[cfg(feature = "study")] {
//! use warplift::study::{RunOptions, Study};
//!
//! let spec = r#"
//!     name = "fig1"
//!     [[kernels]]
//!     files = "tests/corpus/short_circuit_fig1.wir"
//!     [[pipelines]]
//!     name = "base"
//!     [[pipelines]]
//!     name = "O3"
//!     passes = ["linearize"]
//!     settings = { linearize_opt = 3, linearize_regions = "kernel" }
//! "#;
//! // Relative paths start at the spec's path (here: the repository root).
//! let study = Study::from_str(spec, concat!(env!("CARGO_MANIFEST_DIR"), "/fig1.toml"))?;
//! let results = study.run(&RunOptions::default())?;
//! let redundant = |p: &str| {
//!     let row = results.row(&format!("short_circuit_fig1|{p}|default")).unwrap();
//!     row.get("redundant_block_executions").unwrap()
//! };
//! assert!(redundant("O3") < redundant("base"));
//! # }
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod exec;

pub use exec::{interpret, interpret_module, run_loaded, run_object, run_program, Error, Run};
pub use warplift_codegen as codegen;
pub use warplift_codegen::target_lexicon;
pub use warplift_emu as emu;
pub use warplift_ir as ir;
#[cfg(feature = "study")]
pub use warplift_study as study;
