//! Finding and running NVIDIA's PTX assembler, `ptxas`, to check emitted PTX.
//!
//! `ptxas` comes from the PyPI wheel `nvidia-cuda-nvcc-cu12` and runs without a GPU;
//! `scripts/install-ptxas.sh` puts it under `.tools/` in the repository. [`find_ptxas`]
//! looks, in order, at `$WARPLIFT_PTXAS`, at `.tools/` in the current directory or any of
//! its ancestors, and on `PATH`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use thiserror::Error;

/// The environment variable naming a `ptxas` binary.
pub const PTXAS_ENV: &str = "WARPLIFT_PTXAS";

/// Where `scripts/install-ptxas.sh` installs `ptxas`, relative to the repository root.
pub const TOOLS_PTXAS: &str = ".tools/cuda-nvcc-12.9.86/nvidia/cuda_nvcc/bin/ptxas";

/// Why assembling failed.
#[derive(Debug, Error)]
pub enum PtxasError {
    /// `ptxas` could not be started or its files written.
    #[error("could not run {ptxas}: {error}")]
    Io {
        /// The binary.
        ptxas: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// `ptxas` rejected the PTX.
    #[error("ptxas -arch={arch} rejected the PTX (exit status {status}):\n{output}")]
    Rejected {
        /// The architecture assembled for.
        arch: String,
        /// The exit status (`-1` when killed by a signal).
        status: i32,
        /// What `ptxas` printed.
        output: String,
    },
}

/// The `ptxas` to use, if one can be found.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(PTXAS_ENV) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Ok(mut dir) = std::env::current_dir() {
        loop {
            let candidate = dir.join(TOOLS_PTXAS);
            if candidate.is_file() {
                return Some(candidate);
            }
            if !dir.pop() {
                break;
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file())
}

/// Assembles `ptx` for architecture `arch` (`sm_70`, ...) with the `ptxas` at `ptxas`;
/// returns what `ptxas -v` printed (registers, spills) on success.
pub fn assemble(ptxas: &Path, ptx: &str, arch: &str) -> Result<String, PtxasError> {
    run_ptxas(ptxas, ptx, arch, "-v")
}

/// Checks that the `ptxas` at `ptxas` accepts `ptx` for architecture `arch`, without
/// optimising it (`-O0`): every check of the assembler's front end (syntax, types,
/// operands, declarations) at about half the cost of [`assemble`], which is what a fuzzer
/// assembling thousands of kernels needs.
pub fn validate(ptxas: &Path, ptx: &str, arch: &str) -> Result<(), PtxasError> {
    run_ptxas(ptxas, ptx, arch, "-O0").map(|_| ())
}

/// Runs `ptxas FLAG -arch=ARCH` on `ptx`; what it printed, or why it failed.
fn run_ptxas(ptxas: &Path, ptx: &str, arch: &str, flag: &str) -> Result<String, PtxasError> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let io = |error| PtxasError::Io {
        ptxas: ptxas.to_path_buf(),
        error,
    };
    let stem = format!(
        "warplift-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir();
    let input = dir.join(format!("{stem}.ptx"));
    let output = dir.join(format!("{stem}.cubin"));
    std::fs::write(&input, ptx).map_err(io)?;
    let result = Command::new(ptxas)
        .arg(flag)
        .arg(format!("-arch={arch}"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    let out = result.map_err(io)?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(PtxasError::Rejected {
            arch: arch.to_string(),
            status: out.status.code().unwrap_or(-1),
            output: text,
        })
    }
}

/// The `ptxas` that tests assemble with. When there is none, says so loudly on stderr and
/// returns `None` so the test can skip the assembly — except on CI (`CI` set), where a
/// missing `ptxas` fails the test: there, every emitted PTX must be assembled.
pub fn ptxas_for_tests() -> Option<PathBuf> {
    let found = find_ptxas();
    if found.is_none() {
        let msg = "\n!!!!!!!! ptxas NOT FOUND: the emitted PTX was NOT assembled !!!!!!!!\n\
                   Run scripts/install-ptxas.sh or set WARPLIFT_PTXAS.\n";
        eprintln!("{msg}");
        assert!(std::env::var_os("CI").is_none(), "{msg}");
    }
    found
}

/// The architectures every emitted PTX must assemble for.
pub const CHECKED_ARCHS: [&str; 3] = ["sm_70", "sm_80", "sm_90"];

/// Assembles `ptx` for each of [`CHECKED_ARCHS`] that its `.target` allows (a PTX for
/// `sm_90` only for `sm_90`); on a rejection, the error holds ptxas's message and the PTX
/// with line numbers.
pub fn check_assembles(ptxas: &Path, ptx: &str) -> Result<(), String> {
    let target_90 = ptx.contains(".target sm_90");
    for arch in CHECKED_ARCHS {
        if target_90 && arch != "sm_90" {
            continue;
        }
        if let Err(e) = assemble(ptxas, ptx, arch) {
            let numbered: String = ptx
                .lines()
                .enumerate()
                .map(|(i, l)| format!("{:5} {l}\n", i + 1))
                .collect();
            return Err(format!("{e}\n--- PTX ---\n{numbered}"));
        }
    }
    Ok(())
}
