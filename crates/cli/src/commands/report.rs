//! `warplift report`: the linearization report, the paper's Tables 1, 2 and 4 for a set
//! of kernels (by default the corpus in `tests/corpus`).
//!
//! Every kernel is compiled for the SIMT target once per *column*, a labelled set of
//! code-generator settings: by default `base` (no optional pass) and `O0` to `O3`
//! (`passes=linearize` at `linearize_opt=0..3`), all with the `linearize_regions` mode of
//! `--regions`. Each compilation gives the static numbers of Table 1 (final machine
//! instructions, blocks, registers, spills; optionally the registers `ptxas` reports for
//! the PTX). A kernel with a launch file next to it (`k.wir` → `k.launch.toml`) is also run
//! on the emulator in every column, which gives the dynamic numbers of Tables 2 and 4
//! (cycles, warp- and thread-instructions, SIMT efficiency, reconvergence-stack depth and
//! redundant block executions), and once on the reference interpreter: every run's memory
//! must equal the interpreter's, and a run whose memory differs is reported as a mismatch,
//! without numbers, and makes the command fail.
//!
//! The report is a fixed study: its columns are the pipelines, its kernels every kernel
//! of the files named, its machine the one of the flags, and the runs go through the
//! study's engine ([`warplift_study::engine`]), in parallel. This file holds the
//! command line, the columns and the driver, [`kernels`] a kernel's runs gathered by
//! column, and [`tables`] the text and JSON.

mod ir_stack;
mod kernels;
mod tables;

use crate::commands::run::MachineArgs;
use crate::source;
use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use warplift_codegen::settings::SettingsBuilder;
use warplift_codegen::Settings;
use warplift_ir::launch::Launch;
use warplift_study::{engine, measure};

use kernels::KernelReport;

/// Which regions `linearize` transforms in every column (`linearize_regions`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum RegionsArg {
    /// Unstructured regions holding a divergent branch (the compiler's default).
    Divergent,
    /// Every unstructured region.
    All,
    /// The whole kernel, as the paper's Section 3 linearizes kernels.
    Kernel,
}

impl RegionsArg {
    /// The value of the `linearize_regions` setting.
    fn setting(self) -> &'static str {
        match self {
            RegionsArg::Divergent => "divergent",
            RegionsArg::All => "all",
            RegionsArg::Kernel => "kernel",
        }
    }
}

/// Arguments of `warplift report`.
#[derive(Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct ReportArgs {
    /// .wir files, or directories whose .wir files (not their subdirectories') to report
    /// on, in name order. Default: tests/corpus.
    paths: Vec<PathBuf>,
    /// What `linearize` linearizes in every column: the whole kernel (as the paper's
    /// Section 3), the unstructured regions holding a divergent branch, or all
    /// unstructured regions.
    #[arg(long, value_enum, default_value = "kernel")]
    regions: RegionsArg,
    /// An extra column: `LABEL=ITEM,ITEM,...`, each ITEM a pass to run (in order) or a
    /// setting `NAME=VALUE` (repeatable). `--column ssa=linearize_ssa` runs that pass;
    /// `--column all3=linearize,linearize_opt=3,linearize_regions=all` overrides
    /// `--regions`; `--column plain=` runs no pass.
    #[arg(long = "column", value_name = "LABEL=ITEMS")]
    columns: Vec<String>,
    /// Leave out the default columns (base, ssa, O0..O3): only the `--column`s.
    #[arg(long, requires = "columns")]
    no_default_columns: bool,
    /// A code-generator setting for every column, `NAME=VALUE` (repeatable; see `warplift
    /// settings`); `--regions` and a column's own settings take precedence.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    settings: Vec<String>,
    #[command(flatten)]
    machine: MachineArgs,
    /// Also assemble each column's PTX with ptxas and report the registers it allocates
    /// (skipped, with a note, when no ptxas is found; see scripts/install-ptxas.sh).
    #[arg(long)]
    ptxas: bool,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
}

/// The long help's appendix: what the numbers mean.
const AFTER_HELP: &str = "\
Columns: base = no optional pass; On = passes=linearize, linearize_opt=n. Every column
compiles with linearize_regions from --regions unless it sets its own.

Static numbers (Table 1): final machine instructions and blocks, registers (per class
b32/b64/pred and their sum, reserved registers included), spill instructions, and with
--ptxas the registers ptxas allocates. `incr` is the last column over the first, as the
paper's AfOpt/Bf.

Dynamic numbers (Tables 2 and 4), for kernels with a launch file, on the emulator at the
machine of the flags: cycles, warp-instructions (one per warp per issue; the paper's
\"instructions executed\" count warp-level SASS instructions), thread-instructions, SIMT
efficiency, the deepest reconvergence stack on the machine CFG the emulator runs
(`stack`: edge-split and guard blocks included) and on the IR's own CFG (`IR stack`: an
IPDOM stack model replaying the reference interpreter's per-lane paths; `-` for columns
with a machine pass, after which there is no IR CFG), and redundant block executions: for each warp
and IR block, the warp's executions of the block minus the largest number of times any
one of its lanes executed it, summed (an ideal SIMT machine runs a block once per
lane-iteration; the paper's Figure 1 at warp width 4 has 3). Every run's memory is
compared with the reference interpreter's; a mismatch shows instead of the numbers and
the command fails.";

/// A column of the report: a label and the settings its kernels compile with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's heading.
    pub label: String,
    /// The optional passes, comma-separated, in order.
    pub passes: String,
    /// Further settings, `(name, value)`, applied after `--set` and `--regions`.
    pub settings: Vec<(String, String)>,
}

impl Column {
    /// The default columns: `base` and `O0` to `O3`.
    pub fn defaults() -> Vec<Column> {
        let mut columns = vec![Column {
            label: "base".into(),
            passes: String::new(),
            settings: Vec::new(),
        }];
        // The paper's own stage: linearized on the SSA IR, before register allocation.
        columns.push(Column {
            label: "ssa".into(),
            passes: "linearize_ssa".into(),
            settings: Vec::new(),
        });
        for level in 0..=3 {
            columns.push(Column {
                label: format!("O{level}"),
                passes: "linearize".into(),
                settings: vec![("linearize_opt".into(), level.to_string())],
            });
        }
        columns
    }

    /// Parses `LABEL=ITEM,ITEM,...`, each item a pass name or a `NAME=VALUE` setting.
    pub fn parse(spec: &str) -> Result<Column> {
        let (label, items) = spec
            .split_once('=')
            .ok_or_else(|| anyhow!("--column {spec:?}: expected LABEL=PASS,NAME=VALUE,..."))?;
        let label = label.trim();
        if label.is_empty() || label.contains(char::is_whitespace) {
            bail!("--column {spec:?}: the label must be a word");
        }
        let mut passes = Vec::new();
        let mut settings = Vec::new();
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some((name, value)) => settings.push((name.trim().into(), value.trim().into())),
                None => passes.push(item),
            }
        }
        if settings.iter().any(|(n, _)| n == "passes") {
            bail!("--column {spec:?}: name the passes as items, not with passes=");
        }
        Ok(Column {
            label: label.into(),
            passes: passes.join(","),
            settings,
        })
    }

    /// This column's settings on top of `base` (the `--set`s and `--regions`).
    fn settings(&self, base: &SettingsBuilder) -> Result<Settings> {
        let mut builder = base.clone();
        for (name, value) in &self.settings {
            builder
                .set(name, value)
                .map_err(|e| anyhow!("column {}: {e}", self.label))?;
        }
        builder
            .set("passes", &self.passes)
            .map_err(|e| anyhow!("column {}: {e}", self.label))?;
        Ok(builder.finish())
    }
}

/// Runs `warplift report`.
pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let config = args.machine.resolve()?;
    let mut base = Settings::builder();
    for s in &args.settings {
        base.set_assignment(s).map_err(|e| anyhow!("--set: {e}"))?;
    }
    base.set("linearize_regions", args.regions.setting())?;
    let mut columns = if args.no_default_columns {
        Vec::new()
    } else {
        Column::defaults()
    };
    for spec in &args.columns {
        let column = Column::parse(spec)?;
        if columns.iter().any(|c| c.label == column.label) {
            bail!(
                "--column {spec:?}: there already is a column {}",
                column.label
            );
        }
        columns.push(column);
    }
    // Every column's settings are checked before anything is compiled.
    let settings: Vec<Settings> = columns
        .iter()
        .map(|c| c.settings(&base))
        .collect::<Result<_>>()?;
    let ptxas = match args.ptxas {
        false => measure::Ptxas::NotAsked,
        true => match warplift_codegen::isa::ptx::ptxas::find_ptxas() {
            Some(path) => measure::Ptxas::At(path),
            None => measure::Ptxas::NotFound,
        },
    };
    let files = kernel_files(&args.paths)?;
    let mut plan = engine::Plan {
        pipelines: columns
            .iter()
            .zip(settings)
            .map(|(c, settings)| engine::Pipeline {
                label: c.label.clone(),
                settings,
            })
            .collect(),
        machines: vec![engine::Machine {
            label: String::new(),
            config: config.clone(),
        }],
        ..engine::Plan::default()
    };
    for file in &files {
        let funcs = source::load_verified(file)?;
        let launch_path = Launch::path_next_to(file);
        let launch = match launch_path.exists() {
            true => Some(Launch::from_file(&launch_path)?),
            false => None,
        };
        // The launch names the kernel it runs; the file's other kernels get static
        // numbers only.
        let launched = match &launch {
            Some(l) => Some(l.select_kernel(&funcs)?.name.clone()),
            None => None,
        };
        for func in funcs {
            let launch = launch
                .as_ref()
                .filter(|_| launched.as_ref() == Some(&func.name))
                .cloned();
            plan.kernels.push(engine::Kernel {
                id: func.name.clone(),
                file: file.clone(),
                func,
                launch,
            });
        }
    }
    for kernel in 0..plan.kernels.len() {
        for pipeline in 0..columns.len() {
            plan.jobs.push(engine::Job {
                kernel,
                pipeline,
                machine: 0,
                trace: None,
            });
        }
    }
    let options = engine::Options {
        threads: None,
        progress: None,
        ptxas,
        what: "column",
        stop: None,
    };
    let todo: Vec<usize> = (0..plan.jobs.len()).collect();
    let (done, _) = engine::execute(&plan, &todo, &options, |_, _| {})?;
    let mut done = done.into_iter().map(|(_, d, ())| d.measured);
    let kernels: Vec<KernelReport> = plan
        .kernels
        .iter()
        .map(|k| KernelReport {
            file: k.file.clone(),
            kernel: k.func.name.clone(),
            launched: k.launch.is_some(),
            columns: done.by_ref().take(columns.len()).collect(),
            ir_stack: plan
                .pipelines
                .iter()
                .map(|p| {
                    k.launch.as_ref().and_then(|launch| {
                        ir_stack::ir_stack_depth(&k.func, launch, &p.settings, &config)
                    })
                })
                .collect(),
        })
        .collect();
    let ptxas = &options.ptxas;
    let report = tables::Report {
        columns: &columns,
        kernels: &kernels,
        config: &config,
        regions: args.regions.setting(),
        ptxas,
    };
    if args.json {
        crate::output::outln!("{}", serde_json::to_string_pretty(&report.json())?)?;
    } else {
        crate::output::out!("{}", report.text())?;
    }
    let failures: Vec<String> = kernels.iter().flat_map(KernelReport::failures).collect();
    if failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &failures {
            eprintln!("error: {f}");
        }
        eprintln!(
            "error: {} of the report's runs failed or differ from the reference interpreter",
            failures.len()
        );
        Ok(ExitCode::FAILURE)
    }
}

/// The `.wir` files named by `paths` (default `tests/corpus`), each directory's in name
/// order.
fn kernel_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let default = [PathBuf::from("tests/corpus")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| anyhow!("cannot read directory {}: {e}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && has_wir_extension(p))
                .collect();
            if found.is_empty() {
                bail!("{} holds no .wir files", path.display());
            }
            found.sort();
            files.extend(found);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            bail!("{} does not exist", path.display());
        }
    }
    Ok(files)
}

fn has_wir_extension(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wir")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_parse_passes_and_settings() {
        let c = Column::parse("ssa=linearize_ssa").unwrap();
        assert_eq!(c.label, "ssa");
        assert_eq!(c.passes, "linearize_ssa");
        assert!(c.settings.is_empty());
        let c = Column::parse(" x = linearize, linearize_opt=3 ,linearize_regions=all").unwrap();
        assert_eq!(c.label, "x");
        assert_eq!(c.passes, "linearize");
        assert_eq!(
            c.settings,
            vec![
                ("linearize_opt".to_string(), "3".to_string()),
                ("linearize_regions".to_string(), "all".to_string())
            ]
        );
        let c = Column::parse("plain=").unwrap();
        assert_eq!(c.passes, "");
        for bad in [
            "noequals",
            "=linearize",
            "two words=x",
            "p=passes=linearize",
        ] {
            assert!(Column::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn column_settings_override_the_common_ones() {
        let mut base = Settings::builder();
        base.set("linearize_regions", "kernel").unwrap();
        let s = Column::parse("x=linearize,linearize_regions=all")
            .unwrap()
            .settings(&base)
            .unwrap();
        assert_eq!(s.linearize_regions, "all");
        assert_eq!(s.passes, "linearize");
        let defaults = Column::defaults();
        let labels: Vec<&str> = defaults.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["base", "ssa", "O0", "O1", "O2", "O3"]);
        let o2 = defaults[4].settings(&base).unwrap();
        assert_eq!(
            (o2.linearize_opt, o2.linearize_regions.as_str()),
            (2, "kernel")
        );
        assert!(Column::parse("x=nonesuch")
            .unwrap()
            .settings(&base)
            .is_err());
        assert!(Column::parse("x=linearize_opt=9")
            .unwrap()
            .settings(&base)
            .is_err());
    }
}
