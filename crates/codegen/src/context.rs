//! The compilation context: the one short function that runs the pipeline in order.
//!
//! ```text
//! verify IR ─▶ IR passes ─▶ lower (ISLE) ─▶ verify MIR ─▶ allocate (regalloc2, leaving out
//! the registers the machine passes reserve) ─▶ machine passes ─▶ verify MIR ─▶ remove
//! empty edge blocks (cleanup) ─▶ emit
//! ```
//!
//! The kernel given is verified first (unless the caller has, see
//! [`Context::with_input_verified`]); the verifications after that check the compiler's own
//! work and run when the `verify` setting asks (by default in debug builds and tests).
//!
//! The optional passes are the `passes` setting, looked up in the [pass
//! registry](crate::passes). The IR passes share the kernel's analyses through the
//! context's [`AnalysisCache`]: each analysis is computed when a pass first asks for it and
//! kept for the next pass unless the pass [did not preserve](crate::passes::IrPass::preserved)
//! it. The context keeps the cache's allocations from one kernel to the next.
//!
//! [`Context::compile`] compiles one kernel; [`Context::compile_module`] several kernels
//! into one PTX module or one object. Every failure is a [`CodegenError`]; nothing the
//! caller passes in makes it panic.

use crate::analysis::{AnalysisCache, Computations};
use crate::isa::{EmitError, TargetIsa};
use crate::lower::{lower_for, LowerError};
use crate::machine_passes::cleanup::remove_empty_edge_blocks;
use crate::mir::verify::{verify_mir, verify_mir_with_limits, MirVerifyError};
use crate::mir::MirFunction;
use crate::passes::{PassError, PassReport, Pipeline, PipelineError};
use crate::regalloc::{
    allocate_prepared, prepare_owned, Algorithm, AllocOptions, RegallocError, RegallocStats,
};
use crate::settings::OptLevel;
use std::borrow::Cow;
use thiserror::Error;
use warplift_ir::verifier::{verify_function, VerifierErrors};
use warplift_ir::Function;

/// Why a compilation failed.
#[derive(Debug, Error)]
pub enum CodegenError {
    /// The kernel is not valid IR.
    #[error("kernel %{kernel} is not valid IR:\n{errors}")]
    Verifier {
        /// The kernel.
        kernel: String,
        /// What the verifier found.
        errors: VerifierErrors,
    },
    /// The kernel uses something the code generator does not support.
    #[error(transparent)]
    Unsupported(#[from] LowerError),
    /// A pass produced invalid machine IR (a bug in the code generator).
    #[error("internal error: {0}")]
    InvalidMir(#[from] MirVerifyError),
    /// Register allocation failed, e.g. under register pressure the target's register file
    /// cannot satisfy.
    #[error(transparent)]
    Regalloc(#[from] RegallocError),
    /// The target's emitter failed.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// The `passes` setting names no valid pipeline.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// An optional pass failed.
    #[error(transparent)]
    Pass(#[from] PassError),
    /// An IR pass produced invalid IR (a bug in the pass).
    #[error("internal error: pass `{pass}` left kernel %{kernel} invalid:\n{errors}")]
    PassBrokeIr {
        /// The pass.
        pass: &'static str,
        /// The kernel.
        kernel: String,
        /// What the verifier found.
        errors: VerifierErrors,
    },
}

/// What the code generator did to one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// IR instructions in the kernel.
    pub ir_insts: usize,
    /// Machine instructions after lowering.
    pub lowered_insts: usize,
    /// Machine instructions in the final code.
    pub final_insts: usize,
    /// Machine blocks in the final code.
    pub final_blocks: usize,
    /// Register allocation: registers per class, spill slots, spills, reloads, moves.
    pub regalloc: RegallocStats,
    /// Edge blocks left empty by register allocation and removed at the end.
    pub removed_edge_blocks: usize,
    /// What each optional pass reported, in pipeline order.
    pub passes: Vec<(&'static str, PassReport)>,
    /// How many times the IR passes had each analysis of the kernel computed.
    pub analyses: Computations,
}

/// One compiled kernel: its final machine IR and what it took.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    /// The final machine IR, as the emitters see it.
    pub mir: MirFunction,
    /// Statistics of the compilation.
    pub stats: CompileStats,
}

/// What a target's output is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// Text (PTX): [`CompiledCode::text`] gives it as a `&str`.
    Text,
    /// A binary object (the SIMT target's ELF object), for
    /// [`load_object`](crate::isa::simt::load_object).
    Object,
}

/// One kernel compiled and emitted on its own.
#[derive(Clone, Debug)]
pub struct CompiledCode {
    /// The kernel.
    pub kernel: CompiledKernel,
    /// The target's output: PTX text or an object file (see [`CompiledCode::text`] and
    /// [`CompiledCode::bytes`]).
    pub code: Vec<u8>,
    /// Whether `code` is text or an object.
    pub kind: CodeKind,
}

/// Several kernels emitted into one module.
#[derive(Clone, Debug)]
pub struct CompiledModule {
    /// The kernels, in the order given.
    pub kernels: Vec<CompiledKernel>,
    /// The target's output: PTX text or an object file (see [`CompiledModule::text`] and
    /// [`CompiledModule::bytes`]).
    pub code: Vec<u8>,
    /// Whether `code` is text or an object.
    pub kind: CodeKind,
}

/// The text of `code` when it is text.
fn code_text(kind: CodeKind, code: &[u8]) -> Option<&str> {
    match kind {
        // The text emitters write ASCII; a failure would be a bug, and shows as `None`.
        CodeKind::Text => core::str::from_utf8(code).ok(),
        CodeKind::Object => None,
    }
}

macro_rules! code_accessors {
    ($t:ty) => {
        impl $t {
            /// The output as text: the PTX of the `ptx` target; `None` for an object.
            pub fn text(&self) -> Option<&str> {
                code_text(self.kind, &self.code)
            }

            /// The output as text, by value; `None` for an object.
            pub fn into_text(self) -> Option<String> {
                match self.kind {
                    CodeKind::Text => String::from_utf8(self.code).ok(),
                    CodeKind::Object => None,
                }
            }

            /// The output's bytes: the PTX text's, or the object file to write to disk
            /// or hand to [`load_object`](crate::isa::simt::load_object).
            pub fn bytes(&self) -> &[u8] {
                &self.code
            }
        }
    };
}

code_accessors!(CompiledCode);
code_accessors!(CompiledModule);

fn code_kind(isa: &dyn TargetIsa) -> CodeKind {
    if isa.emits_text() {
        CodeKind::Text
    } else {
        CodeKind::Object
    }
}

/// Emits compiled `kernels` into one module for `isa`.
fn emit_module(
    mut kernels: Vec<CompiledKernel>,
    isa: &dyn TargetIsa,
    source_name: Option<&str>,
) -> Result<CompiledModule, CodegenError> {
    // The emitter takes the functions side by side: they are moved out and back rather
    // than copied.
    let mirs: Vec<MirFunction> = kernels
        .iter_mut()
        .map(|k| core::mem::take(&mut k.mir))
        .collect();
    let code = isa.emit_module(&mirs, source_name);
    for (k, mir) in kernels.iter_mut().zip(mirs) {
        k.mir = mir;
    }
    let code = code?;
    let kind = code_kind(isa);
    Ok(CompiledModule {
        kernels,
        code,
        kind,
    })
}

/// A reusable compilation context.
#[derive(Default)]
pub struct Context {
    /// The analyses of the kernel being compiled, shared by its IR passes.
    analyses: AnalysisCache,
    /// The caller verifies every kernel before handing it over (see
    /// [`Context::with_input_verified`]).
    input_verified: bool,
}

impl Context {
    /// A new context.
    pub fn new() -> Self {
        Self::default()
    }

    /// A context for a caller that has verified every kernel it compiles with
    /// [`verify_function`] beforehand, such as the command line, which verifies a whole file
    /// first to report all its errors at once: the context then does not verify the kernels
    /// again. Lowering still reports what it cannot lower as an error rather than
    /// panicking, but a kernel that was not verified may be rejected with a less precise
    /// message, or miscompiled by an optional pass.
    pub fn with_input_verified() -> Self {
        Context {
            input_verified: true,
            ..Self::default()
        }
    }

    /// The analysis cache, as the last kernel's IR passes left it.
    pub fn analyses(&self) -> &AnalysisCache {
        &self.analyses
    }

    /// Compiles and emits one kernel for `isa`.
    ///
    /// ```
    /// use warplift_codegen::{lookup_by_name, CodeKind, Context, Settings};
    /// use warplift_ir::parser::parse_function;
    ///
    /// let func = parse_function("kernel %k(n: i32) {\nblock0(v0: i32):\n    return\n}")?;
    /// let mut settings = Settings::builder();
    /// settings.set("ptx_target", "sm_80")?;
    /// let ptx = Context::new().compile(&func, lookup_by_name("ptx", settings.finish())?.as_ref())?;
    /// assert_eq!(ptx.kind, CodeKind::Text);
    /// assert!(ptx.text().unwrap().contains(".target sm_80"));
    ///
    /// let simt = lookup_by_name("simt", Settings::builder().finish())?;
    /// let object = Context::new().compile(&func, simt.as_ref())?;
    /// assert_eq!(object.kind, CodeKind::Object);
    /// assert!(object.text().is_none() && object.bytes().starts_with(b"\x7fELF"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile(
        &mut self,
        func: &Function,
        isa: &dyn TargetIsa,
    ) -> Result<CompiledCode, CodegenError> {
        let kernel = self.compile_kernel(func, isa)?;
        let code = isa.emit_module(core::slice::from_ref(&kernel.mir), None)?;
        let kind = code_kind(isa);
        Ok(CompiledCode { kernel, code, kind })
    }

    /// Compiles `funcs` for `isa` and emits them into one module; `source_name` names the
    /// `.wir` file in the line information.
    pub fn compile_module(
        &mut self,
        funcs: &[Function],
        isa: &dyn TargetIsa,
        source_name: Option<&str>,
    ) -> Result<CompiledModule, CodegenError> {
        let kernels = funcs
            .iter()
            .map(|f| self.compile_kernel(f, isa))
            .collect::<Result<Vec<_>, _>>()?;
        emit_module(kernels, isa, source_name)
    }

    /// [`Context::compile_module`] for a caller that is done with its functions: each
    /// kernel's IR is freed as soon as it is lowered (and IR passes transform it in place
    /// instead of a copy), so that allocation and emission reuse its memory rather than
    /// fresh pages. The output is the same.
    pub fn compile_module_owned(
        &mut self,
        funcs: Vec<Function>,
        isa: &dyn TargetIsa,
        source_name: Option<&str>,
    ) -> Result<CompiledModule, CodegenError> {
        let kernels = funcs
            .into_iter()
            .map(|f| self.compile_kernel_from(Cow::Owned(f), isa))
            .collect::<Result<Vec<_>, _>>()?;
        emit_module(kernels, isa, source_name)
    }

    /// Runs the pipeline up to the final machine IR, without emitting.
    pub fn compile_kernel(
        &mut self,
        func: &Function,
        isa: &dyn TargetIsa,
    ) -> Result<CompiledKernel, CodegenError> {
        self.compile_kernel_from(Cow::Borrowed(func), isa)
    }

    /// [`Context::compile_kernel`] of a borrowed function (IR passes work on a copy, the
    /// caller's function is left as it was) or an owned one (transformed in place, and
    /// freed once lowered).
    fn compile_kernel_from(
        &mut self,
        mut func: Cow<'_, Function>,
        isa: &dyn TargetIsa,
    ) -> Result<CompiledKernel, CodegenError> {
        let settings = isa.settings();
        if !self.input_verified {
            verify_function(&func).map_err(|errors| CodegenError::Verifier {
                kernel: func.name.clone(),
                errors,
            })?;
        }
        let pipeline = Pipeline::for_settings(settings)?;
        let mut reports = Vec::new();
        self.analyses.reset();

        if !pipeline.ir.is_empty() {
            let transformed = func.to_mut();
            for pass in &pipeline.ir {
                let report = pass.run(transformed, &mut self.analyses, settings)?;
                self.analyses.invalidate(pass.preserved(&report));
                reports.push((pass.name(), report));
                if settings.verify {
                    verify_function(transformed).map_err(|errors| CodegenError::PassBrokeIr {
                        pass: pass.name(),
                        kernel: transformed.name.clone(),
                        errors,
                    })?;
                }
            }
        }

        let lowered = lower_for(&func, isa.reconvergence())?;
        let ir_insts = func.num_placed_insts();
        // Nothing reads the IR past lowering; an owned function's memory goes back to the
        // allocator here, for the tables allocation builds next.
        drop(func);
        if settings.verify {
            verify_mir(&lowered)?;
        }
        let regs = isa.register_file();
        let options = AllocOptions {
            algorithm: match settings.opt_level {
                OptLevel::None => Algorithm::Fast,
                OptLevel::Speed => Algorithm::Backtracking,
            },
            ..AllocOptions::default()
        };
        let lowered_insts = lowered.num_insts();
        // The machine passes plan on the shape allocation gives the kernel: it is given
        // once, for both.
        let prepared = prepare_owned(lowered)?;
        let (reservation, mut carried) = pipeline.plan(settings, prepared.func());
        let mut allocated = allocate_prepared(prepared, &regs, &reservation, &options)?;
        let limits = Some([regs.b32, regs.b64, regs.pred]);
        if settings.verify {
            verify_mir_with_limits(&allocated.func, limits)?;
        }
        for (pass, carried) in pipeline.machine.iter().zip(carried.drain(..)) {
            let report =
                pass.run_planned(&mut allocated.func, &allocated.reserved, settings, carried)?;
            reports.push((pass.name(), report));
            if settings.verify {
                verify_mir_with_limits(&allocated.func, limits)?;
            }
        }
        // Last, once nothing relies on every edge having a block of its own any more.
        let cleanup = remove_empty_edge_blocks(&mut allocated.func);
        if settings.verify && cleanup.removed_blocks > 0 {
            verify_mir_with_limits(&allocated.func, limits)?;
        }
        let stats = CompileStats {
            ir_insts,
            lowered_insts,
            final_insts: allocated.func.num_insts(),
            final_blocks: allocated.func.order.len(),
            regalloc: allocated.stats,
            removed_edge_blocks: cleanup.removed_blocks,
            passes: reports,
            analyses: self.analyses.computations(),
        };
        Ok(CompiledKernel {
            mir: allocated.func,
            stats,
        })
    }
}
