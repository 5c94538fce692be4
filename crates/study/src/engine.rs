//! The run engine behind a study (and `warplift report`): runs a list of jobs (kernel x
//! pipeline x machine) on all cores, each measured by [`crate::measure`].
//!
//! Work that several jobs share is done once, by whichever job needs it first: a kernel
//! is compiled once per pipeline (compilation does not depend on the machine), and the
//! reference interpreter runs once per kernel and warp width. Jobs run on a rayon pool;
//! each finished job is handed to a callback at once (the study appends it to its result
//! log there, so an interrupted study keeps it), and a progress callback hears of every
//! job done (the command line draws a bar from it). A stop flag (set by Ctrl-C in the
//! command line) lets the jobs in progress finish and starts no new one.

use crate::measure::{self, Measured, Outcome, Ptxas, Static};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use warplift_codegen::Settings;
use warplift_emu::{MachineConfig, Program, Trace};
use warplift_ir::launch::{GlobalMemory, Launch, PreparedLaunch};
use warplift_ir::Function;

/// A kernel to measure.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Its name in tables and result keys (unique in a plan).
    pub id: String,
    /// The file it comes from.
    pub file: PathBuf,
    /// The kernel.
    pub func: Function,
    /// How to run it; `None`: static numbers only.
    pub launch: Option<Launch>,
}

/// A pipeline: the settings a kernel compiles with.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// Its name in tables and result keys.
    pub label: String,
    /// The code generator's settings.
    pub settings: Settings,
}

/// A machine to run on.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Its name in tables and result keys.
    pub label: String,
    /// The emulated machine.
    pub config: MachineConfig,
}

/// One run: indices into the plan's kernels, pipelines and machines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The kernel.
    pub kernel: usize,
    /// The pipeline.
    pub pipeline: usize,
    /// The machine.
    pub machine: usize,
    /// Where to write the run's timeline, if asked for.
    pub trace: Option<PathBuf>,
}

/// Everything to run.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The kernels.
    pub kernels: Vec<Kernel>,
    /// The pipelines.
    pub pipelines: Vec<Pipeline>,
    /// The machines.
    pub machines: Vec<Machine>,
    /// The runs, in the order results are shown.
    pub jobs: Vec<Job>,
}

/// How far the jobs of one [`execute`] call are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Jobs finished.
    pub done: usize,
    /// Of those, jobs that failed (compilation, fault, or memory unlike the interpreter's).
    pub failed: usize,
    /// Jobs to run in all.
    pub total: usize,
}

/// A function told of every finished job (from the worker thread that ran it).
pub type ProgressFn<'a> = &'a (dyn Fn(Progress) + Sync);

/// How the engine runs.
pub struct Options<'a> {
    /// Worker threads; `None`: one per core.
    pub threads: Option<usize>,
    /// Told after every finished job.
    pub progress: Option<ProgressFn<'a>>,
    /// Whether and where `ptxas` counts registers.
    pub ptxas: Ptxas,
    /// What a pipeline is called in messages (`column`, `pipeline`).
    pub what: &'a str,
    /// Set to stop: jobs in progress finish, no new one starts.
    pub stop: Option<&'a AtomicBool>,
}

/// One finished job.
#[derive(Clone, Debug)]
pub struct Done {
    /// Its numbers.
    pub measured: Measured,
    /// Seconds the kernel's compilation for this pipeline took (shared by the jobs that
    /// differ only in the machine).
    pub compile_seconds: f64,
    /// Seconds the emulator run took (0 when it did not run).
    pub run_seconds: f64,
}

/// Where the time of [`execute`] went, summed over workers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Work {
    /// Compiling, in seconds.
    pub compile: f64,
    /// Running the reference interpreter.
    pub reference: f64,
    /// Running the emulator (and writing traces).
    pub emulate: f64,
    /// Wall-clock seconds of the whole call.
    pub wall: f64,
}

/// A finished job: its index, its numbers, and what the caller made of them.
pub type Finished<T> = (usize, Done, T);

/// A kernel compiled for one pipeline, or why it did not compile.
struct Compiled {
    result: Result<(Static, Program), String>,
    seconds: f64,
}

/// The reference run of a kernel at one warp width.
type Reference = Option<Result<(PreparedLaunch, GlobalMemory), String>>;

/// Seconds as a fixed-point count, for summing from many threads.
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Runs the jobs `todo` (indices into `plan.jobs`) and returns what each gave, with what
/// `on_done` made of it, in the order of `todo`; a job not started because of a stop is
/// left out. `on_done` sees every finished job as soon as it finishes (from the worker
/// thread).
pub fn execute<F, T>(
    plan: &Plan,
    todo: &[usize],
    options: &Options,
    on_done: F,
) -> anyhow::Result<(Vec<Finished<T>>, Work)>
where
    F: Fn(usize, &Done) -> T + Sync,
    T: Send,
{
    let start = Instant::now();
    // A kernel compiles once per pipeline and warp width: the compiler is told the
    // machine's warp width (`warp_width_hint`), so the code may differ by width.
    let mut compiled: HashMap<(usize, usize, u32), OnceLock<Compiled>> = HashMap::new();
    let mut references: HashMap<(usize, u32), OnceLock<Reference>> = HashMap::new();
    for &j in todo {
        let job = &plan.jobs[j];
        let width = plan.machines[job.machine].config.warp_width;
        references.entry((job.kernel, width)).or_default();
        compiled
            .entry((job.kernel, job.pipeline, width))
            .or_default();
    }
    let times = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
    let failures = AtomicU64::new(0);
    let finished = AtomicU64::new(0);

    let run_one = |j: usize| -> Option<Finished<T>> {
        if options.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return None;
        }
        let job = &plan.jobs[j];
        let kernel = &plan.kernels[job.kernel];
        let pipeline = &plan.pipelines[job.pipeline];
        let machine = &plan.machines[job.machine];
        let what = format!("{} {}", options.what, pipeline.label);
        let width = machine.config.warp_width;
        let c = compiled[&(job.kernel, job.pipeline, width)].get_or_init(|| {
            let t = Instant::now();
            let result = compile(kernel, pipeline, width, &options.ptxas, &what);
            let elapsed = t.elapsed();
            times[0].fetch_add(micros(elapsed), Ordering::Relaxed);
            Compiled {
                result,
                seconds: elapsed.as_secs_f64(),
            }
        });
        let reference = references[&(job.kernel, width)].get_or_init(|| {
            let t = Instant::now();
            let r = kernel
                .launch
                .as_ref()
                .map(|l| measure::reference(&kernel.func, l, width));
            times[1].fetch_add(micros(t.elapsed()), Ordering::Relaxed);
            r
        });
        let t = Instant::now();
        let (static_, program) = match &c.result {
            Ok((s, p)) => (Ok(s.clone()), Some(p)),
            Err(e) => (Err(e.clone()), None),
        };
        let mut ran = false;
        let outcome = match (reference, program) {
            (None, _) => Outcome::NotRun,
            (Some(Err(why)), _) => Outcome::Failed(why.clone()),
            // The compilation error is the static numbers'.
            (Some(Ok(_)), None) => Outcome::NotRun,
            (Some(Ok((initial, expected))), Some(program)) => {
                ran = true;
                let mut trace = job.trace.as_ref().map(|_| Trace::new());
                let outcome = measure::emulate(
                    &kernel.func,
                    program,
                    initial,
                    expected,
                    &machine.config,
                    &what,
                    trace.as_mut(),
                );
                match (&job.trace, &trace) {
                    (Some(path), Some(trace)) => match write_trace(path, trace) {
                        Ok(()) => outcome,
                        Err(e) => Outcome::Failed(format!("{what}: {e}")),
                    },
                    _ => outcome,
                }
            }
        };
        let elapsed = t.elapsed();
        times[2].fetch_add(micros(elapsed), Ordering::Relaxed);
        let failed =
            static_.is_err() || matches!(outcome, Outcome::Failed(_) | Outcome::Mismatch(_));
        let done = Done {
            measured: Measured { static_, outcome },
            compile_seconds: c.seconds,
            run_seconds: if ran { elapsed.as_secs_f64() } else { 0.0 },
        };
        let made = on_done(j, &done);
        let failed_so_far =
            failures.fetch_add(u64::from(failed), Ordering::Relaxed) + u64::from(failed);
        let done_so_far = finished.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(progress) = options.progress {
            progress(Progress {
                done: usize::try_from(done_so_far).unwrap_or(usize::MAX),
                failed: usize::try_from(failed_so_far).unwrap_or(usize::MAX),
                total: todo.len(),
            });
        }
        Some((j, done, made))
    };

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads.unwrap_or(0))
        .build()?;
    let results: Vec<Finished<T>> = pool.install(|| {
        todo.par_iter()
            .with_max_len(1)
            .filter_map(|&j| run_one(j))
            .collect()
    });
    let seconds = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
    let work = Work {
        compile: seconds(&times[0]),
        reference: seconds(&times[1]),
        emulate: seconds(&times[2]),
        wall: start.elapsed().as_secs_f64(),
    };
    Ok((results, work))
}

/// Compiles `kernel` for `pipeline` (and asks ptxas for its registers if it runs).
fn compile(
    kernel: &Kernel,
    pipeline: &Pipeline,
    warp_width: u32,
    ptxas: &Ptxas,
    what: &str,
) -> Result<(Static, Program), String> {
    let source_name = kernel
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let settings = settings_for(kernel, pipeline, warp_width);
    let (mut s, program) = measure::compile(&kernel.func, &settings, source_name.as_deref())
        .map_err(|e| format!("{what}: {e}"))?;
    if let Ptxas::At(path) = ptxas {
        s.ptxas_regs = Some(measure::ptxas_registers(path, &kernel.func, &settings));
    }
    Ok((s, program))
}

/// The settings `kernel` compiles with in `pipeline` for a machine of `warp_width`: the
/// pipeline's, told the launch's block size in x (`block_size_hint`, as CUDA's
/// `__launch_bounds__` tells a compiler) and the machine's warp width
/// (`warp_width_hint`, as a compiler knows its target's) unless the pipeline sets a
/// hint itself. Each block size of a sweep is a kernel of its own, compiled for that
/// size, and each machine's code is compiled for its width, as a program compiled for
/// its launch and its target would be.
fn settings_for(kernel: &Kernel, pipeline: &Pipeline, warp_width: u32) -> Settings {
    let mut settings = pipeline.settings.clone();
    if settings.block_size_hint == 0 {
        if let Some(launch) = &kernel.launch {
            settings.block_size_hint = launch.block[0];
        }
    }
    if settings.warp_width_hint == 0 {
        settings.warp_width_hint = warp_width;
    }
    settings
}

/// Writes a run's timeline as Chrome trace-event JSON.
fn write_trace(path: &std::path::Path, trace: &Trace) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string(&trace.to_json()).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launched kernel compiles for its block size and each machine's warp width
    /// unless the pipeline names them; a kernel without a launch keeps the pipeline's
    /// block size hint.
    #[test]
    fn kernels_compile_for_their_launch_block_size_and_warp_width() {
        let func =
            warplift_ir::parser::parse_function("kernel %k() {\nblock0:\n    return\n}\n").unwrap();
        let launch = Launch {
            block: [64, 1, 1],
            ..Launch::default()
        };
        let kernel = |launch: Option<Launch>| Kernel {
            id: "k@b64".into(),
            file: PathBuf::from("k.wir"),
            func: func.clone(),
            launch,
        };
        let pipeline = |hint: &str, width: &str| {
            let mut b = Settings::builder();
            b.set("block_size_hint", hint).unwrap();
            b.set("warp_width_hint", width).unwrap();
            Pipeline {
                label: "p".into(),
                settings: b.finish(),
            }
        };
        let launched = kernel(Some(launch));
        let hints = |k: &Kernel, p: &Pipeline, width| {
            let s = settings_for(k, p, width);
            (s.block_size_hint, s.warp_width_hint)
        };
        assert_eq!(hints(&launched, &pipeline("0", "0"), 64), (64, 64));
        assert_eq!(hints(&launched, &pipeline("0", "0"), 32), (64, 32));
        assert_eq!(hints(&launched, &pipeline("32", "16"), 64), (32, 16));
        assert_eq!(hints(&kernel(None), &pipeline("0", "0"), 32), (0, 32));
    }
}
