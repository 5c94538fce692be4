//! What the emulator's corpus tests share: loading the corpus kernels that have a launch
//! file, compiling and running them, and the main check — the emulator leaves the memory
//! the reference interpreter leaves (or both fault) at warp widths 1, 7, 32 and 64.
#![allow(dead_code)] // each test file uses its own subset

use std::fmt::Display;
use std::path::{Path, PathBuf};
use warplift_codegen::isa::simt::encode;
use warplift_codegen::{lookup_by_name, CompiledKernel, Context, Settings};
use warplift_emu::{run, MachineConfig, Program, Stats};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;
use warplift_ir::Function;

/// The warp widths every corpus kernel runs at.
pub const WIDTHS: [u32; 4] = [1, 7, 32, 64];

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// The corpus kernels that have a launch file: file name, kernel, prepared launch.
pub fn corpus() -> Vec<(String, Function, PreparedLaunch)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter(|p| Launch::path_next_to(p).exists())
        .map(|p| load(&p.file_name().unwrap().to_string_lossy()))
        .collect()
}

/// The corpus kernel in `file` with its launch.
pub fn load(file: &str) -> (String, Function, PreparedLaunch) {
    let path = corpus_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let funcs = parse_functions(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let launch =
        Launch::from_file(&Launch::path_next_to(&path)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let func = launch.select_kernel(&funcs).unwrap().clone();
    let prepared = launch
        .prepare(&func)
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    (file.to_string(), func, prepared)
}

/// Compiles `func` for the SIMT target with `settings` (`name=value` each).
pub fn compile(func: &Function, settings: &[&str]) -> CompiledKernel {
    let mut b = Settings::builder();
    for s in settings {
        b.set_assignment(s).unwrap();
    }
    let isa = lookup_by_name("simt", b.finish()).unwrap();
    Context::new()
        .compile_kernel(func, &*isa)
        .unwrap_or_else(|e| panic!("%{}: {settings:?}: {e}", func.name))
}

/// Runs `func` compiled with `settings` at warp width `width`.
pub fn emulate(func: &Function, prepared: &PreparedLaunch, settings: &[&str], width: u32) -> Stats {
    let kernel = compile(func, settings);
    let prog = Program::from_code(&encode(&kernel.mir).unwrap()).unwrap();
    let config = MachineConfig::builder().warp_width(width).build().unwrap();
    let mut launch = prepared.clone();
    run(&prog, &mut launch, &config)
        .unwrap_or_else(|e| panic!("%{}: {settings:?}: {e}\n{}", func.name, kernel.mir))
}

/// The reference interpreter's outcome and memory for one kernel at each of [`WIDTHS`]
/// (`lane_id` depends on the warp width, so the reference runs at each width too).
pub struct References {
    name: String,
    prepared: PreparedLaunch,
    runs: Vec<(
        Result<interp::InterpStats, interp::InterpError>,
        PreparedLaunch,
    )>,
}

impl References {
    /// Runs the interpreter on `func` once per width.
    pub fn compute(name: &str, func: &Function, prepared: &PreparedLaunch) -> Self {
        let runs = WIDTHS
            .map(|warp_width| {
                let mut reference = prepared.clone();
                let config = InterpConfig {
                    warp_width,
                    ..Default::default()
                };
                (interp::run(func, &mut reference, &config), reference)
            })
            .into_iter()
            .collect();
        References {
            name: name.to_string(),
            prepared: prepared.clone(),
            runs,
        }
    }

    /// Runs `prog` at every width and asserts that it leaves the interpreter's memory, or
    /// faults where the interpreter does; `what` names the compilation and `listing` is
    /// shown on failure. Returns the number of runs.
    pub fn check(&self, prog: &Program, what: &dyn Display, listing: &dyn Display) -> usize {
        let name = &self.name;
        for (width, (interp, reference)) in WIDTHS.into_iter().zip(&self.runs) {
            let config = MachineConfig::builder().warp_width(width).build().unwrap();
            let mut emulated = self.prepared.clone();
            match (interp, run(prog, &mut emulated, &config)) {
                (Ok(_), Ok(_)) => {
                    for (a, b) in reference
                        .memory
                        .buffers
                        .iter()
                        .zip(&emulated.memory.buffers)
                    {
                        assert!(
                            a.bytes == b.bytes,
                            "{name}: buffer {} differs at width {width} ({what})\n\
                             interpreter: {}\nemulator: {}\n{listing}",
                            a.name,
                            reference.memory.results_json(),
                            emulated.memory.results_json(),
                        );
                    }
                }
                (Err(_), Err(_)) => {}
                (Ok(_), Err(e)) => panic!("{name}: width {width} ({what}): {e}\n{listing}"),
                (Err(e), Ok(_)) => {
                    panic!("{name}: the interpreter faults ({e}), the emulator does not")
                }
            }
        }
        WIDTHS.len()
    }
}
