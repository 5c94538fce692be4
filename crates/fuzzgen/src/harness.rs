//! The differential harness: the reference interpreter against the emulator.
//!
//! A race-free kernel leaves the same memory whatever the machine: [`check_case`] runs the
//! interpreter at each warp width (only `lane_id` depends on it), then compiles the kernel
//! with every [`Pipeline`] for every register file, and runs the emulator at each width
//! (in its functional mode, which leaves the timed mode's memory); every buffer must hold
//! the same bytes. Anything else — a kernel that does not verify or
//! print back to itself, a compilation error, a fault on either side — is a [`Mismatch`]
//! too: the generator promises kernels for which none of these may happen.
//!
//! Pipelines are a list so that every pass pipeline registered later is checked the same
//! way: [`pipelines`] builds them from the pass registry.

use crate::gen::GeneratedCase;
use arbitrary::Unstructured;
use std::fmt;
use std::path::Path;
use warplift_codegen::isa::ptx::ptxas::{check_assembles, validate, CHECKED_ARCHS};
use warplift_codegen::isa::simt::encode;
use warplift_codegen::mir::MirFunction;
use warplift_codegen::regalloc::RegisterFile;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{MachineConfig, Program};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::PreparedLaunch;
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::Function;

/// A way to compile a kernel to final (register-allocated) machine IR for the emulator: the
/// settings that choose its passes and their options.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// Its name, printed in mismatches: `plain`, or `pass[option=value,...]`.
    pub name: String,
    /// The settings it sets (`passes` and the passes' options).
    pub settings: Vec<(&'static str, &'static str)>,
}

/// Every pipeline: the plain one (lower, allocate), then every registered pass in every
/// variant it declares ([`warplift_codegen::passes::Pass::variants`]).
pub fn pipelines() -> Vec<Pipeline> {
    let mut out = vec![Pipeline {
        name: "plain".to_string(),
        settings: Vec::new(),
    }];
    for pass in warplift_codegen::passes::REGISTRY {
        for variant in pass.variants() {
            let options: Vec<String> = variant.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut settings = vec![("passes", pass.name())];
            settings.extend_from_slice(variant);
            out.push(Pipeline {
                name: format!("{}[{}]", pass.name(), options.join(",")),
                settings,
            });
        }
    }
    out
}

impl Pipeline {
    /// Compiles `func` for the SIMT target with `settings` plus the pipeline's own. The
    /// registers the pipeline's passes reserve are added to the register file, so that a
    /// small file stays equally small for allocation whatever the pipeline.
    pub fn compile(&self, func: &Function, settings: Settings) -> Result<MirFunction, String> {
        use warplift_codegen::mir::RegClass;
        let mut builder = Settings::builder();
        for &(k, v) in &self.settings {
            builder.set(k, v).map_err(|e| e.to_string())?;
        }
        let with_passes = builder.finish();
        let reserved = warplift_codegen::passes::Pipeline::for_settings(&with_passes)
            .map_err(|e| e.to_string())?
            .reservation_bound(&with_passes);
        let grow = |n: u32, class| (n + reserved.count(class)).min(RegisterFile::MAX_PER_CLASS);
        let base = [
            ("regs_b32", grow(settings.regs_b32, RegClass::B32)),
            ("regs_b64", grow(settings.regs_b64, RegClass::B64)),
            ("regs_pred", grow(settings.regs_pred, RegClass::Pred)),
        ];
        for (k, n) in base {
            builder.set(k, &n.to_string()).map_err(|e| e.to_string())?;
        }
        let isa = lookup_by_name("simt", builder.finish()).map_err(|e| e.to_string())?;
        Context::new()
            .compile_kernel(func, isa.as_ref())
            .map(|k| k.mir)
            .map_err(|e| e.to_string())
    }
}

/// What [`check_case`] runs.
#[derive(Clone, Debug)]
pub struct CheckConfig {
    /// The pipelines to compile with.
    pub pipelines: Vec<Pipeline>,
    /// The warp widths to run at (the interpreter's `warp_width`, the emulator's width).
    pub warp_widths: Vec<u32>,
    /// The register files to allocate for.
    pub register_files: Vec<RegisterFile>,
    /// The interpreter's step limit.
    pub max_steps: u64,
}

impl Default for CheckConfig {
    /// Every pipeline; warps of 1, 7, 32 and 64 threads; the full register file and one of
    /// 4 `b32`, 3 `b64` and 3 predicate registers, which makes most kernels spill. (Two
    /// predicate registers are too few for the code generator's `select` of `i1` values,
    /// whose machine instruction reads three predicates at once.)
    fn default() -> Self {
        CheckConfig {
            pipelines: pipelines(),
            warp_widths: CheckConfig::WIDTHS.to_vec(),
            register_files: vec![
                RegisterFile::MAX,
                RegisterFile {
                    b32: 4,
                    b64: 3,
                    pred: 3,
                },
            ],
            max_steps: 20_000_000,
        }
    }
}

impl CheckConfig {
    /// The warp widths a run covers.
    pub const WIDTHS: [u32; 4] = [1, 7, 32, 64];

    /// One check out of [`CheckConfig::default`]'s, chosen by `u`: one pipeline, one warp
    /// width and one register file. A fuzzing run that takes its inputs' first bytes for
    /// this covers every pipeline (every registered pass in every variant), every width
    /// and both register files, at the cost of one compilation, one interpreter run and
    /// one emulator run per input instead of all of them.
    pub fn sample(u: &mut Unstructured) -> arbitrary::Result<CheckConfig> {
        let all = CheckConfig::default();
        let pipeline = all.pipelines[u.choose_index(all.pipelines.len())?].clone();
        let width = Self::WIDTHS[u.choose_index(Self::WIDTHS.len())?];
        let regs = all.register_files[u.choose_index(all.register_files.len())?];
        Ok(CheckConfig {
            pipelines: vec![pipeline],
            warp_widths: vec![width],
            register_files: vec![regs],
            ..all
        })
    }

    /// The `i`-th check of [`CheckConfig::default`]'s, in the order pipeline, then
    /// register file, then width: `i` from 0 to [`CheckConfig::num_single_checks`]
    /// enumerates them all, so a test over consecutive seeds using seed `i` for check `i`
    /// covers every one.
    pub fn single(i: usize) -> CheckConfig {
        let all = CheckConfig::default();
        let n = all.pipelines.len() * all.register_files.len() * Self::WIDTHS.len();
        let i = i % n;
        let width = Self::WIDTHS[i % Self::WIDTHS.len()];
        let rest = i / Self::WIDTHS.len();
        let regs = all.register_files[rest % all.register_files.len()];
        let pipeline = all.pipelines[rest / all.register_files.len()].clone();
        CheckConfig {
            pipelines: vec![pipeline],
            warp_widths: vec![width],
            register_files: vec![regs],
            ..all
        }
    }

    /// Every pipeline at one warp width and one register file, taking turns with `i`:
    /// over 8 consecutive values of `i` every pipeline runs at every width with both
    /// register files. A test over many seeds thus checks every combination on many
    /// kernels at an eighth of the cost of [`CheckConfig::default`] per seed.
    pub fn rotating(i: usize) -> CheckConfig {
        let all = CheckConfig::default();
        let width = Self::WIDTHS[i % Self::WIDTHS.len()];
        let regs = all.register_files[(i / Self::WIDTHS.len()) % all.register_files.len()];
        CheckConfig {
            warp_widths: vec![width],
            register_files: vec![regs],
            ..all
        }
    }

    /// How many single checks [`CheckConfig::single`] enumerates.
    pub fn num_single_checks() -> usize {
        let all = CheckConfig::default();
        all.pipelines.len() * all.register_files.len() * Self::WIDTHS.len()
    }
}

/// A case on which two machines disagree, or which broke a promise of the generator.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// What went wrong.
    pub what: String,
    /// The pipeline, if one was involved.
    pub pipeline: Option<String>,
    /// The warp width, if a run was involved.
    pub warp_width: Option<u32>,
    /// The register file, if a compilation was involved.
    pub register_file: Option<RegisterFile>,
    /// The kernel (`.wir`).
    pub text: String,
    /// The launch (`.launch.toml`).
    pub launch_text: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.what)?;
        if let Some(p) = &self.pipeline {
            writeln!(f, "pipeline: {p}")?;
        }
        if let Some(w) = self.warp_width {
            writeln!(f, "warp width: {w}")?;
        }
        if let Some(r) = self.register_file {
            writeln!(
                f,
                "register file: b32 {}, b64 {}, pred {}",
                r.b32, r.b64, r.pred
            )?;
        }
        writeln!(f, "---- kernel (.wir) ----\n{}", self.text)?;
        write!(f, "---- launch (.launch.toml) ----\n{}", self.launch_text)
    }
}

impl std::error::Error for Mismatch {}

/// Builds mismatches for one case.
struct Reporter<'a> {
    case: &'a GeneratedCase,
}

impl Reporter<'_> {
    fn err(&self, what: impl Into<String>) -> Mismatch {
        Mismatch {
            what: what.into(),
            pipeline: None,
            warp_width: None,
            register_file: None,
            text: self.case.text.clone(),
            launch_text: self.case.launch_text.clone(),
        }
    }
}

/// Runs `case` on the interpreter and on the emulator after every pipeline of `config`,
/// at every warp width and register file, and compares the memory they leave.
pub fn check_case(case: &GeneratedCase, config: &CheckConfig) -> Result<(), Mismatch> {
    let r = Reporter { case };
    let func = &case.func;
    verify_function(func)
        .map_err(|e| r.err(format!("the generated kernel does not verify:\n{e}")))?;
    check_text_round_trip(&case.text)
        .map_err(|e| r.err(format!("the generated kernel's text: {e}")))?;
    let prepared = case
        .launch
        .prepare(func)
        .map_err(|e| r.err(format!("the generated launch: {e}")))?;

    let mut references = Vec::new();
    for &width in &config.warp_widths {
        let mut reference = prepared.clone();
        let interp_config = InterpConfig {
            warp_width: width,
            max_steps: config.max_steps,
        };
        interp::run(func, &mut reference, &interp_config).map_err(|e| Mismatch {
            warp_width: Some(width),
            ..r.err(format!("the interpreter faults on a generated kernel: {e}"))
        })?;
        references.push(reference);
    }

    for pipeline in &config.pipelines {
        for &regs in &config.register_files {
            let at = |m: Mismatch| Mismatch {
                pipeline: Some(pipeline.name.clone()),
                register_file: Some(regs),
                ..m
            };
            let settings = Settings {
                regs_b32: regs.b32,
                regs_b64: regs.b64,
                regs_pred: regs.pred,
                ..Settings::default()
            };
            let mir = pipeline
                .compile(func, settings)
                .map_err(|e| at(r.err(format!("compilation failed: {e}"))))?;
            let program = encode(&mir)
                .map_err(|e| e.to_string())
                .and_then(|code| Program::from_code(&code).map_err(|e| e.to_string()))
                .map_err(|e| at(r.err(format!("the emulator rejects the program: {e}\n{mir}"))))?;
            for (&width, reference) in config.warp_widths.iter().zip(&references) {
                let at = |m: Mismatch| Mismatch {
                    warp_width: Some(width),
                    ..at(m)
                };
                // Narrow warps need more warp slots than a real SM has for a full block.
                let machine = MachineConfig::builder()
                    .warp_width(width)
                    .warp_slots(1024)
                    .build()
                    .map_err(|e| at(r.err(format!("machine configuration: {e}"))))?;
                let mut emulated = prepared.clone();
                // Only memory is compared: the functional mode leaves the timed mode's
                // memory (its own tests check that) at a fraction of the cost.
                warplift_emu::run_functional(&program, &mut emulated, &machine)
                    .map_err(|e| at(r.err(format!("the emulator faults: {e}\n{mir}"))))?;
                if let Some(diff) = compare(reference, &emulated) {
                    return Err(at(r.err(format!(
                        "the emulator's memory differs from the interpreter's: {diff}\n{mir}"
                    ))));
                }
            }
        }
    }
    Ok(())
}

/// The first difference between the buffers of two runs, described.
fn compare(reference: &PreparedLaunch, emulated: &PreparedLaunch) -> Option<String> {
    for (a, b) in reference
        .memory
        .buffers
        .iter()
        .zip(&emulated.memory.buffers)
    {
        if a.bytes == b.bytes {
            continue;
        }
        let (va, vb) = (a.values(), b.values());
        let i = va.iter().zip(&vb).position(|(x, y)| x != y).unwrap_or(0);
        return Some(format!(
            "buffer {} element {i}: interpreter {:?}, emulator {:?}",
            a.name,
            va.get(i),
            vb.get(i)
        ));
    }
    None
}

/// Compiles `case` to PTX with the plain pipeline and assembles it with the `ptxas` at
/// `ptxas` for every checked architecture.
pub fn check_ptx(case: &GeneratedCase, ptxas: &Path) -> Result<(), Mismatch> {
    let r = Reporter { case };
    let isa = lookup_by_name("ptx", Settings::default())
        .map_err(|e| r.err(format!("no PTX target: {e}")))?;
    let code = Context::new()
        .compile(&case.func, isa.as_ref())
        .map_err(|e| r.err(format!("PTX compilation failed: {e}")))?;
    let ptx = String::from_utf8(code.code).map_err(|e| r.err(format!("PTX is not UTF-8: {e}")))?;
    check_assembles(ptxas, &ptx).map_err(|e| r.err(format!("ptxas rejects the PTX: {e}")))
}

/// Compiles every case to PTX with the plain pipeline, as the kernels of one module, and
/// assembles the module with `ptxas` once, for every checked architecture: starting
/// `ptxas` dominates the cost of [`check_ptx`], so a batch of 64 kernels costs about what
/// one does. When the batch fails, each case is checked on its own, and the first one
/// that fails is reported (a batch whose kernels are accepted one by one is reported as
/// such, with the first case).
pub fn check_ptx_batch(cases: &[GeneratedCase], ptxas: &Path) -> Result<(), Mismatch> {
    let Some(first) = cases.first() else {
        return Ok(());
    };
    let isa = lookup_by_name("ptx", Settings::default())
        .map_err(|e| Reporter { case: first }.err(format!("no PTX target: {e}")))?;
    let funcs = distinct_names(cases);
    let batch = Context::new()
        .compile_module(&funcs, isa.as_ref(), None)
        .map_err(|e| e.to_string())
        .and_then(|m| String::from_utf8(m.code).map_err(|e| e.to_string()))
        .and_then(|ptx| check_assembles(ptxas, &ptx));
    let Err(batch_error) = batch else {
        return Ok(());
    };
    for case in cases {
        check_ptx(case, ptxas)?;
    }
    Err(Reporter { case: first }.err(format!(
        "a batch of {} kernels fails although each passes alone: {batch_error}",
        cases.len()
    )))
}

/// The `ptx` fuzz target's work, shared with the `fuzz_rate` example and bench: every
/// kernel is compiled to PTX on its own (the compilation must not fail), and the kernels
/// are assembled by `ptxas` in batches of [`PtxBatches::SIZE`], as one module.
///
/// Economies against [`check_ptx_batch`], none of which checks less over a run:
/// - a batch is assembled for one of the checked architectures, taken in turn from batch
///   to batch (or `sm_90` when the PTX targets it), and without optimisation
///   ([`validate`](warplift_codegen::isa::ptx::ptxas::validate)), so that a fuzzer still
///   assembles for each architecture;
/// - the batch's module is emitted from the kernels' final machine IR, kept from their
///   own compilation, rather than compiled a second time;
/// - a kernel whose PTX is the same text as one assembled before is not queued again:
///   `ptxas` accepted that text once, and a fuzzer's mutations often leave the kernel
///   unchanged (a byte the generator never reads), so that `ptxas`, which costs far more
///   per kernel than the compiler, would otherwise assemble many kernels several times.
///
/// When a batch fails, each of its kernels gets the full [`check_ptx`], which names the
/// culprit.
pub struct PtxBatches {
    ptxas: Option<std::path::PathBuf>,
    pending: Vec<(GeneratedCase, MirFunction)>,
    /// Hashes of the PTX texts queued so far.
    queued: std::collections::HashSet<u64>,
    batches: usize,
    assembled: u64,
}

impl PtxBatches {
    /// Kernels per `ptxas` run.
    pub const SIZE: usize = 64;

    /// Batches for the `ptxas` at `ptxas`; without one, [`PtxBatches::add`] only compiles.
    pub fn new(ptxas: Option<std::path::PathBuf>) -> PtxBatches {
        PtxBatches {
            ptxas,
            pending: Vec::new(),
            queued: std::collections::HashSet::new(),
            batches: 0,
            assembled: 0,
        }
    }

    /// Compiles `case` to PTX and queues it for `ptxas` unless the same PTX was queued
    /// before; assembles the queue when it is full. A compilation failure or a rejected
    /// batch is a mismatch.
    pub fn add(&mut self, case: GeneratedCase) -> Result<(), Mismatch> {
        use std::hash::{Hash, Hasher};
        let r = Reporter { case: &case };
        let isa = lookup_by_name("ptx", Settings::default())
            .map_err(|e| r.err(format!("no PTX target: {e}")))?;
        let code = Context::new()
            .compile(&case.func, isa.as_ref())
            .map_err(|e| r.err(format!("PTX compilation failed: {e}")))?;
        if self.ptxas.is_none() {
            return Ok(());
        }
        // `DefaultHasher::new` has fixed keys: the same text always hashes alike.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        code.code.hash(&mut h);
        if !self.queued.insert(h.finish()) {
            return Ok(());
        }
        self.pending.push((case, code.kernel.mir));
        if self.pending.len() < Self::SIZE {
            return Ok(());
        }
        self.flush()
    }

    /// Assembles the queued kernels now, if any.
    pub fn flush(&mut self) -> Result<(), Mismatch> {
        let Some(ptxas) = &self.ptxas else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let (cases, mut kernels): (Vec<GeneratedCase>, Vec<MirFunction>) =
            std::mem::take(&mut self.pending).into_iter().unzip();
        // The entries of one module need distinct names.
        for (i, k) in kernels.iter_mut().enumerate() {
            k.name = format!("{}_{i}", k.name);
        }
        let arch = CHECKED_ARCHS[self.batches % CHECKED_ARCHS.len()];
        self.batches += 1;
        self.assembled += cases.len() as u64;
        let isa = lookup_by_name("ptx", Settings::default())
            .map_err(|e| Reporter { case: &cases[0] }.err(format!("no PTX target: {e}")))?;
        let ptx = isa
            .emit_module(&kernels, None)
            .map_err(|e| e.to_string())
            .and_then(|code| String::from_utf8(code).map_err(|e| e.to_string()));
        let assembled = ptx.and_then(|ptx| {
            let arch = if ptx.contains(".target sm_90") {
                "sm_90"
            } else {
                arch
            };
            validate(ptxas, &ptx, arch).map_err(|e| e.to_string())
        });
        let Err(batch_error) = assembled else {
            return Ok(());
        };
        for case in &cases {
            check_ptx(case, ptxas)?;
        }
        Err(Reporter { case: &cases[0] }.err(format!(
            "a batch of {} kernels fails although each passes alone: {batch_error}",
            cases.len()
        )))
    }

    /// Kernels assembled so far (each distinct PTX text once).
    pub fn assembled(&self) -> u64 {
        self.assembled
    }
}

/// The cases' kernels, renamed apart: generated kernels may share their names, the entries
/// of one module may not.
fn distinct_names(cases: &[GeneratedCase]) -> Vec<Function> {
    cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut f = c.func.clone();
            f.name = format!("{}_{i}", f.name);
            f
        })
        .collect()
}

/// The text format's round trip: when `text` parses, printing the kernels and parsing the
/// print again must succeed and print the same text (`parse(print(parse(x))) == parse(x)`,
/// comparing kernels by their canonical print). Text that does not parse is fine: only a
/// panic (which the caller sees) would be a bug.
pub fn check_text_round_trip(text: &str) -> Result<(), String> {
    let Ok(funcs) = parse_functions(text) else {
        return Ok(());
    };
    let printed: String = funcs.iter().map(|f| format!("{f}\n")).collect();
    let again = parse_functions(&printed)
        .map_err(|e| format!("the print of a parsed text does not parse: {e}\n{printed}"))?;
    let reprinted: String = again.iter().map(|f| format!("{f}\n")).collect();
    if reprinted != printed {
        return Err(format!(
            "printing is not stable:\n---- first ----\n{printed}---- second ----\n{reprinted}"
        ));
    }
    // The verifier must take whatever parses without panicking.
    for f in &funcs {
        let _ = verify_function(f);
    }
    Ok(())
}

/// Feeds arbitrary bytes to the SIMT object loader (ELF, metadata, bytecode decoder, line
/// tables); it must return an error, never panic. A loaded object's kernels are
/// disassembled too.
pub fn check_object_bytes(bytes: &[u8]) {
    if let Ok(obj) = warplift_codegen::isa::simt::load_object(bytes) {
        for k in &obj.kernels {
            let _ = warplift_codegen::isa::simt::disassemble(&k.kernel);
        }
    }
}
