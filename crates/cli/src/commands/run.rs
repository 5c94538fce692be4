//! `warplift run`: runs a kernel on the multi-warp SIMT emulator and prints its buffers,
//! optionally with the run's statistics and a timeline.
//!
//! The kernel comes from a `.wir` file, compiled here for the SIMT target (settings from
//! `--set`), or from a SIMT object written by `warplift compile`, whose bytecode runs as
//! it is. The launch is described exactly as for `interp` (the same flags, the same launch
//! file next to the kernel); for an object the launch file is looked up next to the
//! object (`k.o` → `k.launch.toml`), then next to the `.wir` file the object names, in the
//! object's directory. The machine is the default one, then the `--config` file, then the
//! machine flags, each overriding the one before.

use crate::codegen_args::CodegenArgs;
use crate::launch_args::LaunchArgs;
use crate::source;
use anyhow::{anyhow, bail, Context as _, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use warplift_codegen::isa::simt::load_object;
use warplift_codegen::Context;
use warplift_emu::{
    EmuError, MachineConfig, PartialBarrier, Program, RunOptions, SchedulerPolicy, Stats, Trace,
};
use warplift_ir::launch::Launch;

/// The scheduler policies, as flag values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchedulerArg {
    /// Loose round-robin.
    Lrr,
    /// Greedy-then-oldest.
    Gto,
}

/// What a partially reached barrier does, as flag values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum PartialBarrierArg {
    /// A barrier-divergence fault.
    Error,
    /// The warp counts as arrived.
    CountWarp,
}

/// The machine flags: each overrides the configuration file's key of the same name.
#[derive(Args, Debug, Default)]
pub struct MachineArgs {
    /// Machine configuration file (TOML; keys as in docs/emulator.md).
    #[arg(long, value_name = "FILE.toml")]
    config: Option<PathBuf>,
    /// Threads per warp (1 to 64).
    #[arg(long, value_name = "N")]
    warp_width: Option<u32>,
    /// Streaming multiprocessors.
    #[arg(long, value_name = "N")]
    sms: Option<u32>,
    /// Resident warps per SM.
    #[arg(long, value_name = "N")]
    warp_slots: Option<u32>,
    /// Resident thread blocks per SM.
    #[arg(long, value_name = "N")]
    block_slots: Option<u32>,
    /// 32-bit registers per SM.
    #[arg(long, value_name = "N")]
    registers: Option<u32>,
    /// Bytes of shared memory per SM.
    #[arg(long, value_name = "BYTES")]
    shared_memory: Option<u32>,
    /// The warp scheduler's policy.
    #[arg(long, value_enum)]
    scheduler: Option<SchedulerArg>,
    /// A latency in cycles: `CLASS=N` with CLASS one of alu, mul, sfu, shared, global,
    /// branch (repeatable).
    #[arg(long = "latency", value_name = "CLASS=N")]
    latencies: Vec<String>,
    /// Bytes of a coalescing segment (a power of two, 8 to 4096).
    #[arg(long, value_name = "BYTES")]
    segment_bytes: Option<u32>,
    /// Shared-memory banks.
    #[arg(long, value_name = "N")]
    shared_banks: Option<u32>,
    /// What a barrier reached by part of a warp does.
    #[arg(long, value_enum)]
    partial_barrier: Option<PartialBarrierArg>,
    /// Fault after this many cycles.
    #[arg(long, value_name = "N")]
    max_cycles: Option<u64>,
    /// Fault after this many warp-instructions in all (default: no limit).
    #[arg(long, value_name = "N")]
    max_warp_instructions: Option<u64>,
    /// A warp that issues more than this many instructions (and more than 8 times the
    /// longest finished warp) faults as a runaway.
    #[arg(long, value_name = "N")]
    max_warp_steps: Option<u64>,
}

impl MachineArgs {
    /// The machine: defaults, then the configuration file, then the flags.
    pub fn resolve(&self) -> Result<MachineConfig> {
        let mut c = match &self.config {
            Some(path) => {
                let text = source::read_text(path)?;
                MachineConfig::from_toml_str(&text)
                    .map_err(|e| anyhow!("{}: {e}", path.display()))?
            }
            None => MachineConfig::default(),
        };
        let set = |slot: &mut u32, v: Option<u32>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        set(&mut c.warp_width, self.warp_width);
        set(&mut c.sms, self.sms);
        set(&mut c.warp_slots, self.warp_slots);
        set(&mut c.block_slots, self.block_slots);
        set(&mut c.registers, self.registers);
        set(&mut c.shared_memory, self.shared_memory);
        set(&mut c.segment_bytes, self.segment_bytes);
        set(&mut c.shared_banks, self.shared_banks);
        if let Some(s) = self.scheduler {
            c.scheduler = match s {
                SchedulerArg::Lrr => SchedulerPolicy::Lrr,
                SchedulerArg::Gto => SchedulerPolicy::Gto,
            };
        }
        if let Some(p) = self.partial_barrier {
            c.partial_barrier = match p {
                PartialBarrierArg::Error => PartialBarrier::Error,
                PartialBarrierArg::CountWarp => PartialBarrier::CountWarp,
            };
        }
        if let Some(n) = self.max_cycles {
            c.max_cycles = n;
        }
        if let Some(n) = self.max_warp_instructions {
            c.max_warp_instructions = n;
        }
        if let Some(n) = self.max_warp_steps {
            c.max_warp_steps = n;
        }
        for l in &self.latencies {
            let (class, n) = l
                .split_once('=')
                .ok_or_else(|| anyhow!("--latency {l:?}: expected CLASS=N"))?;
            let n: u32 = n
                .trim()
                .parse()
                .map_err(|_| anyhow!("--latency {l:?}: {n:?} is not a number of cycles"))?;
            let lat = &mut c.latency;
            let slot = match class.trim() {
                "alu" => &mut lat.alu,
                "mul" => &mut lat.mul,
                "sfu" => &mut lat.sfu,
                "shared" => &mut lat.shared,
                "global" => &mut lat.global,
                "branch" => &mut lat.branch,
                other => bail!(
                    "--latency {l:?}: unknown class {other:?} (alu, mul, sfu, shared, global, branch)"
                ),
            };
            *slot = n;
        }
        c.validate()?;
        Ok(c)
    }
}

/// Arguments of `warplift run`.
#[derive(Args)]
pub struct RunArgs {
    /// The kernel: a .wir file (compiled for the SIMT target) or a SIMT object (.o).
    file: PathBuf,
    #[command(flatten)]
    launch: LaunchArgs,
    /// Code-generator options for a .wir file.
    #[command(flatten)]
    codegen: CodegenArgs,
    #[command(flatten)]
    machine: MachineArgs,
    /// Also print a summary of the run's statistics.
    #[arg(long)]
    stats: bool,
    /// Print one JSON object: `{"kernel", "buffers", "stats"}`.
    #[arg(long)]
    json: bool,
    /// Write a timeline of the run as Chrome trace-event JSON (for chrome://tracing or
    /// Perfetto).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Run without the timing model, thread blocks on all cores: the same buffers and
    /// instruction and block counts, no cycles or stalls.
    #[arg(long, conflicts_with = "trace")]
    functional: bool,
}

/// Runs `warplift run`.
pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let config = args.machine.resolve()?;
    let is_object = args.file.extension().is_some_and(|e| e == "o");
    let (launch, program) = if is_object {
        load_from_object(args)?
    } else {
        load_from_source(args)?
    };
    // The program knows its kernel's name and parameters: all a launch is bound to.
    let mut prepared = launch.prepare_for(&program.name, &program.params)?;
    let mut trace = args.trace.as_ref().map(|_| Trace::new());
    let mut watch = crate::watch::Watch::new();
    let options = RunOptions {
        trace: trace.as_mut(),
        monitor: Some(&mut watch),
        functional: args.functional,
        ..RunOptions::default()
    };
    let result = warplift_emu::run_with(&program, &mut prepared, &config, options);
    drop(watch);
    // A trace is most useful when the run went wrong: write it either way.
    if let (Some(path), Some(t)) = (&args.trace, &trace) {
        let text = serde_json::to_string(&t.to_json())?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let stats = match result {
        Err(EmuError::Interrupted(stop)) => {
            eprint!("{stop}");
            eprint!("{}", summary(&stop.stats));
            return Ok(ExitCode::from(130));
        }
        r => r?,
    };
    prepared.memory.save_buffers()?;
    let memory = &prepared.memory;
    let stats_json = stats.to_json();
    let json = args.json.then_some((program.name.as_str(), &stats_json));
    let tail = if args.stats {
        summary(&stats)
    } else {
        String::new()
    };
    crate::output::print_results(memory, args.launch.detail(), json, &tail)?;
    memory
        .check_expectations()
        .map_err(|e| anyhow!("the results differ from the launch's expectations:\n{e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Compiles the chosen kernel of a `.wir` file into a SIMT object in memory and loads
/// it: the emulator runs the very bytecode `warplift compile` would write, and faults
/// show its pcs and the source lines of its line table.
fn load_from_source(args: &RunArgs) -> Result<(Launch, Program)> {
    let funcs = source::load_verified(&args.file)?;
    let launch = args.launch.resolve(&args.file)?;
    let func = launch.select_kernel(&funcs)?;
    let isa = args.codegen.target("simt")?;
    let source_name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let module = Context::new()
        .compile_module(
            core::slice::from_ref(func),
            isa.as_ref(),
            source_name.as_deref(),
        )
        .with_context(|| format!("compiling {}", args.file.display()))?;
    let object = load_object(&module.code)?;
    let kernel = object
        .kernel(&func.name)
        .ok_or_else(|| anyhow!("the object lacks kernel %{}", func.name))?;
    let program = Program::from_loaded(kernel, &object.source_name)?;
    Ok((launch, program))
}

/// Loads the chosen kernel of a SIMT object.
fn load_from_object(args: &RunArgs) -> Result<(Launch, Program)> {
    if !args.codegen.is_empty() {
        bail!("--set and --passes apply to compiling a .wir file; an object is already compiled");
    }
    let path = &args.file;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let object = load_object(&bytes).with_context(|| format!("{}", path.display()))?;
    // The source is looked for in the object's directory only, by its file name.
    let source_path: Option<PathBuf> = Path::new(&object.source_name)
        .file_name()
        .map(|n| path.with_file_name(n));
    let mut candidates: Vec<&Path> = vec![path];
    candidates.extend(source_path.as_deref());
    let launch = args.launch.resolve_first(&candidates)?;
    // The object carries each kernel's signature: no IR is needed to bind the launch.
    let kernel = launch.select(&object.kernels, |k| &k.kernel.info.name)?;
    let program = Program::from_loaded(kernel, &object.source_name)?;
    Ok((launch, program))
}

/// The short human summary `--stats` prints.
fn summary(s: &Stats) -> String {
    let mut out = String::from("\n");
    out.push_str(&s.to_string());
    out
}
