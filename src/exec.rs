//! Running kernels in one call: a compiled object on the emulator, or an IR function on
//! the reference interpreter, each returning the memory the run left and its statistics.
//!
//! Both take a [`Launch`] (built with [`Launch::builder`] or read from a launch file) and
//! choose the kernel as the command line does: the one the launch names, else the only
//! one. An object carries each kernel's signature, so running one needs no IR.
//!
//! ```
//! use warplift::codegen::{lookup_by_name, Context, Settings};
//! use warplift::emu::MachineConfig;
//! use warplift::ir::interp::InterpConfig;
//! use warplift::ir::launch::Launch;
//! use warplift::ir::parser::parse_function;
//!
//! let func = parse_function(
//!     "kernel %double(x: i64, n: i32) {
//!      block0(v0: i64, v1: i32):
//!          v2 = thread_id x
//!          v3 = icmp slt v2, v1
//!          brif v3, block1, block2
//!      block1:
//!          v4 = uextend.i64 v2
//!          v5 = iconst.i64 2
//!          v6 = ishl v4, v5
//!          v7 = iadd v0, v6
//!          v8 = load.i32 global v7
//!          v9 = iadd v8, v8
//!          store global v9, v7
//!          jump block2
//!      block2:
//!          return
//!      }",
//! )?;
//! let isa = lookup_by_name("simt", Settings::builder().finish())?;
//! let compiled = Context::new().compile(&func, isa.as_ref())?;
//!
//! let launch = Launch::builder()
//!     .block(8)
//!     .buffer("x", &[1i32, 2, 3, 4, 5, 6])
//!     .arg("n", 6)
//!     .build();
//! let machine = MachineConfig::builder().warp_width(4).build()?;
//! let emulated = warplift::run_object(compiled.bytes(), &launch, &machine)?;
//! let interpreted = warplift::interpret(&func, &launch, &InterpConfig::default())?;
//!
//! assert_eq!(emulated.buffer::<i32>("x")?, [2, 4, 6, 8, 10, 12]);
//! assert_eq!(emulated.memory, interpreted.memory);
//! assert_eq!(emulated.stats.warp_width, 4);
//! assert_eq!(interpreted.stats.threads, 8);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use warplift_codegen::isa::simt::{load_object, LoadError, LoadedObject};
use warplift_emu::program::ProgramError;
use warplift_emu::{EmuError, MachineConfig, Program, Stats};
use warplift_ir::interp::{InterpConfig, InterpError, InterpStats};
use warplift_ir::launch::{BufferError, Element, GlobalMemory, Launch, LaunchError};
use warplift_ir::Function;

/// What a run left: the kernel run, its global memory after the run, and the run's
/// statistics ([`Stats`] of the emulator, [`InterpStats`] of the interpreter).
#[derive(Clone, Debug, PartialEq)]
pub struct Run<S> {
    /// The kernel that ran.
    pub kernel: String,
    /// The buffers after the run.
    pub memory: GlobalMemory,
    /// What the run measured.
    pub stats: S,
}

impl<S> Run<S> {
    /// The buffer `name` after the run, as a `Vec<T>` of its element type (`f32` for an
    /// `f32` buffer): `run.buffer::<f32>("y")`.
    pub fn buffer<T: Element>(&self, name: &str) -> Result<Vec<T>, BufferError> {
        self.memory.read_buffer(name)
    }
}

/// Why a kernel could not be run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The object could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The launch names no kernel of the object or module, or does not fit the kernel.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A loaded kernel is not a program the emulator can run.
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// The emulated kernel faulted (out of bounds, barrier divergence, limits, ...).
    #[error(transparent)]
    Emu(#[from] EmuError),
    /// The interpreted kernel faulted.
    #[error(transparent)]
    Interp(#[from] InterpError),
}

/// Runs the kernel of a SIMT object (the bytes the `simt` target emits, or an object file
/// read from disk) that `launch` chooses, on the emulator configured by `machine`.
pub fn run_object(
    object: &[u8],
    launch: &Launch,
    machine: &MachineConfig,
) -> Result<Run<Stats>, Error> {
    run_loaded(&load_object(object)?, launch, machine)
}

/// [`run_object`] for an object already loaded (to run it several times without decoding
/// it again, or after inspecting it).
pub fn run_loaded(
    object: &LoadedObject,
    launch: &Launch,
    machine: &MachineConfig,
) -> Result<Run<Stats>, Error> {
    let kernel = launch.select(&object.kernels, |k| &k.kernel.info.name)?;
    let program = Program::from_loaded(kernel, &object.source_name)?;
    run_program(&program, launch, machine)
}

/// Runs `program` on the emulator with `launch` (whose `kernel`, if set, is not checked
/// against the program's name).
///
/// This is [`run_object`] after its first steps; by hand, with the emulator's own API,
/// those steps are:
///
/// ```
/// use warplift::codegen::isa::simt::load_object;
/// use warplift::codegen::{lookup_by_name, Context, Settings};
/// use warplift::emu::{MachineConfig, Program};
/// use warplift::ir::launch::Launch;
/// # let func = warplift::ir::parser::parse_function(
/// #     "kernel %k(out: i64) {\nblock0(v0: i64):\n    v1 = thread_id x\n    \
/// #      v2 = uextend.i64 v1\n    v3 = iconst.i64 2\n    v4 = ishl v2, v3\n    \
/// #      v5 = iadd v0, v4\n    store global v1, v5\n    return\n}")?;
/// # let isa = lookup_by_name("simt", Settings::builder().finish())?;
/// # let bytes = Context::new().compile(&func, isa.as_ref())?.code;
///
/// let object = load_object(&bytes)?; // bytes: the simt target's output, or a file's
/// let program = Program::from_loaded(&object.kernels[0], &object.source_name)?;
/// // The object knows the kernel's name and parameters: no IR function is needed.
/// let launch = Launch::builder().block(4).zeros::<i32>("out", 4).build();
/// let mut prepared = launch.prepare_for(&program.name, &program.params)?;
/// let stats = warplift::emu::run(&program, &mut prepared, &MachineConfig::default())?;
/// assert_eq!(prepared.memory.read_buffer::<i32>("out")?, [0, 1, 2, 3]);
/// assert_eq!(stats.warps, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_program(
    program: &Program,
    launch: &Launch,
    machine: &MachineConfig,
) -> Result<Run<Stats>, Error> {
    let mut prepared = launch.prepare_for(&program.name, &program.params)?;
    let stats = warplift_emu::run(program, &mut prepared, machine)?;
    Ok(Run {
        kernel: program.name.clone(),
        memory: prepared.memory,
        stats,
    })
}

/// Runs `func` on the reference interpreter with `launch`: the memory every target must
/// leave for a race-free kernel.
pub fn interpret(
    func: &Function,
    launch: &Launch,
    config: &InterpConfig,
) -> Result<Run<InterpStats>, Error> {
    let mut prepared = launch.prepare(func)?;
    let stats = warplift_ir::interp::run(func, &mut prepared, config)?;
    Ok(Run {
        kernel: func.name.clone(),
        memory: prepared.memory,
        stats,
    })
}

/// [`interpret`] for the kernel of `funcs` (a parsed `.wir` file) that `launch` chooses.
pub fn interpret_module(
    funcs: &[Function],
    launch: &Launch,
    config: &InterpConfig,
) -> Result<Run<InterpStats>, Error> {
    interpret(launch.select_kernel(funcs)?, launch, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_error<E: std::error::Error + Send + Sync + 'static>() {}

    #[test]
    fn errors_are_send_sync() {
        assert_send_sync_error::<Error>();
        assert_send_sync_error::<BufferError>();
        assert_send_sync_error::<warplift_ir::frontend::DefVariableError>();
        assert_send_sync_error::<warplift_ir::frontend::UseVariableError>();
    }

    #[test]
    fn the_launch_chooses_among_an_objects_kernels() {
        use warplift_codegen::{lookup_by_name, Context, Settings};
        let funcs = warplift_ir::parser::parse_functions(
            "kernel %one(out: i64) {
             block0(v0: i64):
                 v1 = iconst.i32 1
                 store global v1, v0
                 return
             }
             kernel %two(out: i64) {
             block0(v0: i64):
                 v1 = iconst.i32 2
                 store global v1, v0
                 return
             }",
        )
        .unwrap();
        let isa = lookup_by_name("simt", Settings::builder().finish()).unwrap();
        let module = Context::new()
            .compile_module(&funcs, isa.as_ref(), Some("two.wir"))
            .unwrap();
        let machine = MachineConfig::default();
        let launch = Launch::builder().zeros::<i32>("out", 1);
        let e = run_object(module.bytes(), &launch.clone().build(), &machine).unwrap_err();
        assert!(
            e.to_string().contains("several kernels (%one, %two)"),
            "{e}"
        );
        let launch = launch.kernel("two").build();
        let run = run_object(module.bytes(), &launch, &machine).unwrap();
        assert_eq!(run.kernel, "two");
        assert_eq!(run.buffer::<i32>("out").unwrap(), [2]);
        let reference = interpret_module(&funcs, &launch, &InterpConfig::default()).unwrap();
        assert_eq!(run.memory, reference.memory);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = run_object(
            b"not an object",
            &Launch::default(),
            &MachineConfig::default(),
        )
        .unwrap_err();
        assert!(matches!(e, Error::Load(_)), "{e}");
        let func = warplift_ir::parser::parse_function(
            "kernel %k(n: i32) {\nblock0(v0: i32):\n    return\n}",
        )
        .unwrap();
        let e = interpret(&func, &Launch::default(), &InterpConfig::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel %k: n: parameter `n: i32` is not bound"
        );
    }
}
