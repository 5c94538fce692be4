//! Measuring one kernel in every column of the report: compile, optionally assemble the
//! PTX with `ptxas`, run on the emulator and check the memory against the reference
//! interpreter.
//!
//! Each column compiles to a SIMT object in memory and runs the kernel loaded back from
//! it, as `warplift run` does, so the numbers are those of the bytecode `warplift compile`
//! writes. A failure of one column (a compilation error, an emulator fault, memory that
//! differs from the interpreter's) is recorded in that column and does not stop the
//! others: the report shows every kernel and fails at the end.

use super::Column;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use warplift_codegen::isa::ptx::ptxas;
use warplift_codegen::isa::simt::load_object;
use warplift_codegen::mir::RegClass;
use warplift_codegen::regalloc::RegallocStats;
use warplift_codegen::{lookup_by_name, CompileStats, Context, Settings};
use warplift_emu::{MachineConfig, Program, RunOptions, Stats};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::{GlobalMemory, Launch, PreparedLaunch};
use warplift_ir::Function;

/// Whether and where `ptxas` runs.
pub enum Ptxas {
    /// `--ptxas` was not given.
    NotAsked,
    /// `--ptxas` was given but no `ptxas` was found.
    NotFound,
    /// The `ptxas` to run.
    At(PathBuf),
}

/// The static numbers of one compilation (the paper's Table 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Static {
    /// Machine instructions of the final code.
    pub insts: usize,
    /// Machine blocks of the final code.
    pub blocks: usize,
    /// Registers per class (b32, b64, pred), reserved ones included.
    pub regs: [u32; 3],
    /// `Spill` instructions register allocation inserted.
    pub spills: u32,
    /// `Reload` instructions register allocation inserted.
    pub reloads: u32,
    /// The registers `ptxas` allocates for the kernel's PTX, or why there is no number.
    pub ptxas_regs: Option<Result<u32, String>>,
}

impl Static {
    fn new(stats: &CompileStats) -> Static {
        let ra: &RegallocStats = &stats.regalloc;
        Static {
            insts: stats.final_insts,
            blocks: stats.final_blocks,
            regs: RegClass::ALL.map(|c| ra.regs_total(c)),
            spills: ra.spills,
            reloads: ra.reloads,
            ptxas_regs: None,
        }
    }

    /// Registers of every class together.
    pub fn regs_total(&self) -> u32 {
        self.regs.iter().sum()
    }
}

/// The dynamic numbers of one run (the paper's Tables 2 and 4).
#[derive(Clone, Debug, PartialEq)]
pub struct Dynamic {
    /// The emulator's statistics.
    pub stats: Stats,
    /// Redundant executions of the kernel's IR blocks, by block (see
    /// [`Stats::redundant_block_executions`]); blocks the code generator made are left
    /// out.
    pub redundant_by_block: BTreeMap<String, u64>,
}

impl Dynamic {
    /// Redundant executions of all the kernel's IR blocks.
    pub fn redundant(&self) -> u64 {
        self.redundant_by_block.values().sum()
    }
}

/// What running one column gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The kernel has no launch: static numbers only.
    NotRun,
    /// The run's numbers; its memory equals the interpreter's.
    Ran(Box<Dynamic>),
    /// The run's memory differs from the interpreter's: how.
    Mismatch(String),
    /// The kernel could not be compiled or run, or the reference run failed: why.
    Failed(String),
}

/// One kernel in one column.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The static numbers, or why the compilation failed.
    pub static_: Result<Static, String>,
    /// The dynamic numbers.
    pub outcome: Outcome,
}

/// One kernel in every column.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelReport {
    /// The file the kernel comes from.
    pub file: PathBuf,
    /// The kernel's name.
    pub kernel: String,
    /// Whether it was run (it has a launch).
    pub launched: bool,
    /// One entry per column, in column order.
    pub columns: Vec<Measured>,
}

impl KernelReport {
    /// Every failure and mismatch, one line each (a failure shared by every column, as
    /// the reference run's, once).
    pub fn failures(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .columns
            .iter()
            .filter_map(|m| match &m.outcome {
                Outcome::Mismatch(why) => Some(format!("MISMATCH {why}")),
                Outcome::Failed(why) => Some(why.clone()),
                Outcome::NotRun | Outcome::Ran(_) => match &m.static_ {
                    Err(why) => Some(why.clone()),
                    Ok(_) => None,
                },
            })
            .map(|why| format!("{} %{}: {why}", self.file.display(), self.kernel))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        lines.retain(|l| seen.insert(l.clone()));
        lines
    }
}

/// Measures `func` (from `file`) in every column; `launch` runs it, if given.
pub fn kernel(
    file: &Path,
    func: &Function,
    launch: Option<&Launch>,
    columns: &[Column],
    settings: &[Settings],
    config: &MachineConfig,
    ptxas: &Ptxas,
) -> Result<KernelReport> {
    // What every run starts from, and the memory the reference interpreter leaves.
    let reference: Option<Result<(PreparedLaunch, GlobalMemory), String>> = launch.map(|launch| {
        let initial = launch.prepare(func).map_err(|e| e.to_string())?;
        let mut prepared = initial.clone();
        let interp_config = InterpConfig {
            warp_width: config.warp_width,
            ..InterpConfig::default()
        };
        interp::run(func, &mut prepared, &interp_config)
            .map_err(|e| format!("the reference interpreter failed: {e}"))?;
        Ok((initial, prepared.memory))
    });
    let source_name = file.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut measured = Vec::with_capacity(columns.len());
    for (column, settings) in columns.iter().zip(settings) {
        let label = &column.label;
        let compiled = compile(func, settings, source_name.as_deref());
        let (static_, program) = match compiled {
            Ok((mut s, program)) => {
                if let Ptxas::At(path) = ptxas {
                    s.ptxas_regs = Some(ptxas_registers(path, func, settings));
                }
                (Ok(s), Some(program))
            }
            Err(e) => (Err(format!("column {label}: {e}")), None),
        };
        let outcome = match (&reference, program) {
            (None, _) => Outcome::NotRun,
            (Some(Err(why)), _) => Outcome::Failed(why.clone()),
            // The compilation error is the static column's.
            (Some(Ok(_)), None) => Outcome::NotRun,
            (Some(Ok((initial, expected))), Some(program)) => {
                emulate(func, &program, initial, expected, config, label)
            }
        };
        measured.push(Measured { static_, outcome });
    }
    Ok(KernelReport {
        file: file.to_path_buf(),
        kernel: func.name.clone(),
        launched: launch.is_some(),
        columns: measured,
    })
}

/// Compiles `func` into a SIMT object in memory and loads it back.
fn compile(
    func: &Function,
    settings: &Settings,
    source_name: Option<&str>,
) -> Result<(Static, Program)> {
    let isa = lookup_by_name("simt", settings.clone())?;
    let module =
        Context::new().compile_module(core::slice::from_ref(func), isa.as_ref(), source_name)?;
    let stats = match module.kernels.first() {
        Some(k) => Static::new(&k.stats),
        None => anyhow::bail!("the module holds no kernel"),
    };
    let object = load_object(&module.code)?;
    let kernel = object
        .kernel(&func.name)
        .ok_or_else(|| anyhow::anyhow!("the object lacks kernel %{}", func.name))?;
    let program = Program::from_loaded(kernel, &object.source_name)?;
    Ok((stats, program))
}

/// Runs `program` from `initial` and compares the memory it leaves with `expected`.
fn emulate(
    func: &Function,
    program: &Program,
    initial: &PreparedLaunch,
    expected: &GlobalMemory,
    config: &MachineConfig,
    label: &str,
) -> Outcome {
    let mut launch = initial.clone();
    let options = RunOptions {
        redundancy: true,
        ..RunOptions::default()
    };
    let stats = match warplift_emu::run_with(program, &mut launch, config, options) {
        Ok(stats) => stats,
        Err(e) => return Outcome::Failed(format!("column {label}: the emulator failed: {e}")),
    };
    if let Some(why) = memory_difference(expected, &launch.memory) {
        return Outcome::Mismatch(format!(
            "column {label}: the emulated memory differs from the reference interpreter's: \
             {why}"
        ));
    }
    let all = stats.redundant_block_executions.clone().unwrap_or_default();
    let redundant_by_block = func
        .layout
        .blocks()
        .iter()
        .map(|b| {
            let name = b.to_string();
            let n = all.get(&name).copied().unwrap_or(0);
            (name, n)
        })
        .collect();
    Outcome::Ran(Box::new(Dynamic {
        stats,
        redundant_by_block,
    }))
}

/// Where `got` first differs from `expected`, if anywhere.
pub fn memory_difference(expected: &GlobalMemory, got: &GlobalMemory) -> Option<String> {
    if expected.buffers.len() != got.buffers.len() {
        return Some(format!(
            "{} buffers instead of {}",
            got.buffers.len(),
            expected.buffers.len()
        ));
    }
    for (e, g) in expected.buffers.iter().zip(&got.buffers) {
        if e.bytes.len() != g.bytes.len() {
            return Some(format!(
                "buffer {} has {} bytes instead of {}",
                e.name,
                g.bytes.len(),
                e.bytes.len()
            ));
        }
        if let Some(i) = e.bytes.iter().zip(&g.bytes).position(|(a, b)| a != b) {
            let differing = e.bytes.iter().zip(&g.bytes).filter(|(a, b)| a != b).count();
            return Some(format!(
                "buffer {}: {differing} bytes differ, the first at byte {i} ({:#04x} instead \
                 of {:#04x})",
                e.name, g.bytes[i], e.bytes[i]
            ));
        }
    }
    None
}

/// The registers `ptxas` allocates for `func` compiled to PTX with `settings`.
fn ptxas_registers(ptxas: &Path, func: &Function, settings: &Settings) -> Result<u32, String> {
    let isa = lookup_by_name("ptx", settings.clone()).map_err(|e| e.to_string())?;
    let module = Context::new()
        .compile_module(core::slice::from_ref(func), isa.as_ref(), None)
        .map_err(|e| e.to_string())?;
    let ptx = String::from_utf8_lossy(&module.code);
    let output = ptxas::assemble(ptxas, &ptx, &settings.ptx_target).map_err(|e| e.to_string())?;
    parse_ptxas_registers(&output)
        .ok_or_else(|| format!("no register count in ptxas's output: {output}"))
}

/// The `N` of ptxas's `Used N registers` line.
fn parse_ptxas_registers(output: &str) -> Option<u32> {
    let (_, rest) = output.split_once("Used ")?;
    let (n, rest) = rest.split_once(' ')?;
    rest.starts_with("register")
        .then(|| n.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_register_counts_are_read_from_its_verbose_output() {
        let out = "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function \
                   'k' for 'sm_70'\nptxas info    : Function properties for k\n    0 bytes \
                   stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : \
                   Used 12 registers, 368 bytes cmem[0]\n";
        assert_eq!(parse_ptxas_registers(out), Some(12));
        assert_eq!(parse_ptxas_registers("Used 1 register, 8 bytes"), Some(1));
        assert_eq!(parse_ptxas_registers("nothing"), None);
        assert_eq!(parse_ptxas_registers("Used many registers"), None);
    }
}
