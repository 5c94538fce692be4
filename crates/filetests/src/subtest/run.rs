//! `test run`: the emulator, after a pass pipeline, leaves the memory the reference
//! interpreter leaves (or both fault), at every warp width.
//!
//! [`References`] computes the interpreter's outcome once per width, so a test that
//! checks many pipelines of one kernel (the corpus tests of every pass) runs the
//! interpreter once.

use crate::subtest::{settings, widths};
use crate::{Command, Failure, TestFile};
use std::fmt::Display;
use warplift_codegen::{lookup_by_name, CompiledKernel, Context, Settings};
use warplift_emu::{run, MachineConfig, Program, Stats};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::PreparedLaunch;
use warplift_ir::Function;

/// The warp widths a kernel runs at unless its test says otherwise.
pub const WIDTHS: [u32; 4] = [1, 7, 32, 64];

/// Compiles `func` for the SIMT target with `settings` (`name=value` each); panics with
/// the kernel and the settings on an error.
pub fn compile(func: &Function, settings: &[&str]) -> CompiledKernel {
    let mut b = Settings::builder();
    for s in settings {
        b.set_assignment(s)
            .unwrap_or_else(|e| panic!("{settings:?}: {e}"));
    }
    compile_with(func, b.finish()).unwrap_or_else(|e| panic!("%{}: {settings:?}: {e}", func.name))
}

fn compile_with(func: &Function, settings: Settings) -> Result<CompiledKernel, String> {
    let isa = lookup_by_name("simt", settings).map_err(|e| e.to_string())?;
    Context::new()
        .compile_kernel(func, &*isa)
        .map_err(|e| e.to_string())
}

/// Runs `func` compiled with `settings` at warp width `width`; panics on an error.
pub fn emulate(func: &Function, prepared: &PreparedLaunch, settings: &[&str], width: u32) -> Stats {
    let kernel = compile(func, settings);
    let prog =
        Program::from_code(&warplift_codegen::isa::simt::encode(&kernel.mir).unwrap()).unwrap();
    let config = MachineConfig::builder().warp_width(width).build().unwrap();
    let mut launch = prepared.clone();
    run(&prog, &mut launch, &config)
        .unwrap_or_else(|e| panic!("%{}: {settings:?}: {e}\n{}", func.name, kernel.mir))
}

/// The reference interpreter's outcome and memory for one kernel at each of some warp
/// widths (`lane_id` depends on the warp width, so the reference runs at each width).
pub struct References {
    name: String,
    prepared: PreparedLaunch,
    runs: Vec<(
        u32,
        Result<interp::InterpStats, interp::InterpError>,
        PreparedLaunch,
    )>,
}

impl References {
    /// Runs the interpreter on `func` once per width of [`WIDTHS`].
    pub fn compute(name: &str, func: &Function, prepared: &PreparedLaunch) -> Self {
        References::at_widths(name, func, prepared, &WIDTHS)
    }

    /// Runs the interpreter on `func` once per width of `widths`.
    pub fn at_widths(
        name: &str,
        func: &Function,
        prepared: &PreparedLaunch,
        widths: &[u32],
    ) -> Self {
        let runs = widths
            .iter()
            .map(|&warp_width| {
                let mut reference = prepared.clone();
                let config = InterpConfig {
                    warp_width,
                    ..Default::default()
                };
                (
                    warp_width,
                    interp::run(func, &mut reference, &config),
                    reference,
                )
            })
            .collect();
        References {
            name: name.to_string(),
            prepared: prepared.clone(),
            runs,
        }
    }

    /// Runs `prog` at every width and checks that it leaves the interpreter's memory, or
    /// faults where the interpreter does; `what` names the compilation and `listing` is
    /// shown on failure. Returns the number of runs.
    pub fn try_check(
        &self,
        prog: &Program,
        what: &dyn Display,
        listing: &dyn Display,
    ) -> Result<usize, String> {
        let name = &self.name;
        for (width, interp, reference) in &self.runs {
            let width = *width;
            let config = MachineConfig::builder()
                .warp_width(width)
                .build()
                .map_err(|e| format!("{name}: width {width}: {e}"))?;
            let mut emulated = self.prepared.clone();
            match (interp, run(prog, &mut emulated, &config)) {
                (Ok(_), Ok(_)) => {
                    for (a, b) in reference.memory.buffers.iter().zip(&emulated.memory.buffers) {
                        if a.bytes != b.bytes {
                            return Err(format!(
                                "{name}: buffer {} differs at width {width} ({what})\n\
                                 interpreter: {}\nemulator: {}\n{listing}",
                                a.name,
                                reference.memory.results_json(),
                                emulated.memory.results_json(),
                            ));
                        }
                    }
                }
                (Err(_), Err(_)) => {}
                (Ok(_), Err(e)) => return Err(format!("{name}: width {width} ({what}): {e}\n{listing}")),
                (Err(e), Ok(_)) => {
                    return Err(format!(
                        "{name}: width {width} ({what}): the interpreter faults ({e}), the emulator does not"
                    ))
                }
            }
        }
        Ok(self.runs.len())
    }

    /// Like [`References::try_check`], panicking on a mismatch.
    pub fn check(&self, prog: &Program, what: &dyn Display, listing: &dyn Display) -> usize {
        self.try_check(prog, what, listing)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Runs one `test run` command of `file`.
pub(crate) fn run_command(file: &TestFile, command: &Command) -> Result<(), Failure> {
    let settings = settings(file, command, &["widths"])?;
    let widths = widths(command, &WIDTHS)?;
    let (func, prepared) = file.kernel()?;
    let kernel = compile_with(&func, settings).map_err(|e| Failure::at(command.line, e))?;
    let prog = Program::from_code(&warplift_codegen::isa::simt::encode(&kernel.mir).unwrap())
        .map_err(|e| Failure::at(command.line, e.to_string()))?;
    let what = command
        .options
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    References::at_widths(file.stem(), &func, &prepared, &widths)
        .try_check(&prog, &format!("test run {what}"), &kernel.mir)
        .map(|_| ())
        .map_err(|e| Failure::at(command.line, e))
}
