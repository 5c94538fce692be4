//! Launch options shared by every command that runs kernels (`interp` and `run`):
//! the flags that build or override a [`Launch`], and the rule for finding the launch file
//! kept next to a kernel.

use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use warplift_ir::launch::results::Detail;
use warplift_ir::launch::Launch;

/// Flags describing a launch. Each overrides the launch file's setting of the same thing.
#[derive(Args, Debug, Default)]
pub struct LaunchArgs {
    /// Launch file (TOML). Default: FILE's launch file next to it (`k.wir` -> `k.launch.toml`),
    /// when there is one.
    #[arg(long, value_name = "FILE")]
    launch: Option<PathBuf>,
    /// Ignore the launch file next to the kernel; describe the launch with flags only.
    #[arg(long, conflicts_with = "launch")]
    no_launch_file: bool,
    /// Which kernel of the file to launch (default: the only one, or the launch file's).
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// Grid dimensions in blocks: `X[,Y[,Z]]`.
    #[arg(long, value_name = "X,Y,Z")]
    grid: Option<String>,
    /// Block dimensions in threads: `X[,Y[,Z]]`.
    #[arg(long, value_name = "X,Y,Z")]
    block: Option<String>,
    /// A scalar argument: `NAME=VALUE` (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    args: Vec<String>,
    /// A buffer bound to a pointer parameter: `NAME=TYPE[LEN]:INIT` (repeatable); see
    /// docs/ir.md for INIT (zeros, iota, random, file, values).
    #[arg(long = "buffer", value_name = "SPEC")]
    buffers: Vec<String>,
    /// Which buffers to print: `all` (every buffer, every element), `none`, or buffer
    /// names, printed in full (repeatable). Default: every buffer, those of more than 1024
    /// elements summarised (length, first and last elements, checksum).
    #[arg(long = "print", value_name = "all|none|NAME")]
    prints: Vec<String>,
    /// Save a buffer's final contents as raw little-endian bytes: `NAME=PATH` (repeatable).
    #[arg(long = "save", value_name = "NAME=PATH")]
    saves: Vec<String>,
    /// What a buffer must hold after the run, every element: `NAME=V1,V2,...`
    /// (repeatable); a mismatch fails the run.
    #[arg(long = "expect", value_name = "NAME=V1,V2,...")]
    expects: Vec<String>,
}

impl LaunchArgs {
    /// How much of the printed buffers to show, from `--print`; `None` to print none.
    pub fn detail(&self) -> Option<Detail> {
        if self.prints.iter().any(|p| p == "none") {
            None
        } else if self.prints.is_empty() {
            Some(Detail::Auto)
        } else {
            Some(Detail::Full)
        }
    }

    /// Builds the launch for `kernel_path`: the launch file (given, or found next to the
    /// kernel), then the flags on top.
    pub fn resolve(&self, kernel_path: &Path) -> Result<Launch> {
        self.resolve_first(&[kernel_path])
    }

    /// [`LaunchArgs::resolve`] where the kernel may be known by several paths (an object
    /// and the source it names): the first launch file found next to one of them, in
    /// order, is used.
    pub fn resolve_first(&self, kernel_paths: &[&Path]) -> Result<Launch> {
        let file = match (&self.launch, self.no_launch_file) {
            (Some(path), _) => Some(path.clone()),
            (None, true) => None,
            (None, false) => kernel_paths
                .iter()
                .map(|p| Launch::path_next_to(p))
                .find(|p| p.exists()),
        };
        let mut launch = match &file {
            Some(path) => Launch::from_file(path)?,
            None => Launch::default(),
        };
        if let Some(k) = &self.kernel {
            launch.set_kernel(k);
        }
        if let Some(g) = &self.grid {
            launch.set_grid(g).context("--grid")?;
        }
        if let Some(b) = &self.block {
            launch.set_block(b).context("--block")?;
        }
        for a in &self.args {
            launch.add_arg(a).context("--arg")?;
        }
        for b in &self.buffers {
            launch.add_buffer(b).context("--buffer")?;
        }
        if !self.prints.iter().any(|p| p == "all" || p == "none") {
            for p in &self.prints {
                launch.add_print(p).context("--print")?;
            }
        }
        for s in &self.saves {
            launch.add_save(s).context("--save")?;
        }
        for e in &self.expects {
            launch.add_expect(e).context("--expect")?;
        }
        Ok(launch)
    }
}
