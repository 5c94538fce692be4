//! Measuring one kernel under one pipeline on one machine, shared by `warplift study` and
//! `warplift report`: compile, optionally assemble the PTX with `ptxas`, run on the
//! emulator and check the memory against the reference interpreter.
//!
//! A kernel compiles to a SIMT object in memory and runs loaded back from it, as `warplift
//! run` does, so the numbers are those of the bytecode `warplift compile` writes. A
//! failure (a compilation error, an emulator fault, memory that differs from the
//! interpreter's) is recorded as the run's outcome and never stops the other runs.

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use warplift_codegen::isa::ptx::ptxas;
use warplift_codegen::isa::simt::load_object;
use warplift_codegen::mir::RegClass;
use warplift_codegen::regalloc::RegallocStats;
use warplift_codegen::{lookup_by_name, CompileStats, Context, Settings};
use warplift_emu::{MachineConfig, Program, RunOptions, Stats, Trace};
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
    /// The numbers of a compilation's statistics.
    pub fn new(stats: &CompileStats) -> Static {
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

/// Compiles `func` into a SIMT object in memory and loads it back.
pub fn compile(
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

/// What every run of a kernel starts from, and the memory the reference interpreter
/// leaves from it at `warp_width` (the width its warp-level operations see).
pub fn reference(
    func: &Function,
    launch: &Launch,
    warp_width: u32,
) -> Result<(PreparedLaunch, GlobalMemory), String> {
    let initial = launch.prepare(func).map_err(|e| e.to_string())?;
    let mut prepared = initial.clone();
    let interp_config = InterpConfig {
        warp_width,
        ..InterpConfig::default()
    };
    interp::run(func, &mut prepared, &interp_config)
        .map_err(|e| format!("the reference interpreter failed: {e}"))?;
    Ok((initial, prepared.memory))
}

/// Runs `program` from `initial` (recording a timeline into `trace` if given) and
/// compares the memory it leaves with `expected`; `what` ("column base") starts the
/// messages of a failure.
pub fn emulate(
    func: &Function,
    program: &Program,
    initial: &PreparedLaunch,
    expected: &GlobalMemory,
    config: &MachineConfig,
    what: &str,
    trace: Option<&mut Trace>,
) -> Outcome {
    let mut launch = initial.clone();
    let options = RunOptions {
        redundancy: true,
        trace,
        ..RunOptions::default()
    };
    let stats = match warplift_emu::run_with(program, &mut launch, config, options) {
        Ok(stats) => stats,
        Err(e) => return Outcome::Failed(format!("{what}: the emulator failed: {e}")),
    };
    if let Some(why) = memory_difference(expected, &launch.memory) {
        return Outcome::Mismatch(format!(
            "{what}: the emulated memory differs from the reference interpreter's: {why}"
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
pub fn ptxas_registers(ptxas: &Path, func: &Function, settings: &Settings) -> Result<u32, String> {
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
