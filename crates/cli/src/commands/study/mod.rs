//! `warplift study SPEC.toml`: sweeps kernels x pipelines x machines on the emulator and
//! writes one row per run (CSV and JSON), summary tables, SVG plots and an index; `warplift
//! study merge DIR...` combines the outputs of shards (`--shard I/N`) into those of one
//! unsharded run. The format of a spec and of the outputs is in docs/studies.md.
//!
//! - [`spec`]: the spec file, with the line and key of every error;
//! - [`plan`]: the runs, their keys and hashes, and the study's [`plan::Meta`];
//! - [`engine`]: runs jobs on all cores (also behind `warplift report`);
//! - [`rows`]: one run's results, CSV and JSON;
//! - [`summary`] and [`plots`]: the tables and the SVGs; [`outputs`]: the directory.
//!
//! Every finished run is appended to `runs.jsonl` at once, so Ctrl-C (which lets the runs
//! in progress finish) and even a killed process keep what was done; a rerun skips every
//! run whose key is in the log with the hash the run has now.

pub mod engine;
pub mod outputs;
pub mod plan;
pub mod plots;
pub mod rows;
pub mod spec;
pub mod summary;

use crate::commands::measure::Ptxas;
use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use outputs::StudyFile;
use plan::Meta;
use rows::{Row, RowId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Arguments of `warplift study`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct StudyArgs {
    #[command(subcommand)]
    command: Option<StudyCommand>,
    /// The study's specification (TOML; see docs/studies.md and studies/).
    #[arg(required = true, value_name = "SPEC.toml")]
    spec: Option<PathBuf>,
    /// The output directory (default: study-out/NAME, or study-out/NAME/shard-I-of-N).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only the I-th of N disjoint parts of the sweep (1 <= I <= N); combine the
    /// parts with `warplift study merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Ignore the results of earlier runs in the output directory.
    #[arg(long)]
    fresh: bool,
    /// Stop after this many runs (the rest are done by the next call).
    #[arg(long, value_name = "N")]
    max_runs: Option<usize>,
    /// Check the spec and list its runs without running them.
    #[arg(long)]
    dry_run: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Subcommand)]
enum StudyCommand {
    /// Combine the output directories of a study's shards into one study's outputs.
    Merge(MergeArgs),
}

/// Arguments of `warplift study merge`.
#[derive(Args)]
struct MergeArgs {
    /// The shards' output directories.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Where to write the merged outputs.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Set by Ctrl-C: finish the runs in progress, start no more.
static STOP: AtomicBool = AtomicBool::new(false);

/// Runs `warplift study`.
pub fn run(args: &StudyArgs) -> Result<ExitCode> {
    if let Some(StudyCommand::Merge(m)) = &args.command {
        return merge(m);
    }
    let spec_path = args.spec.as_ref().ok_or_else(|| anyhow!("no spec given"))?;
    let (source, spec) = spec::read(spec_path)?;
    let (meta, mut plan) = plan::build(&source, &spec)?;
    let shard = args.shard.as_deref().map(plan::parse_shard).transpose()?;
    let selected = match shard {
        Some(s) => plan::shard(meta.runs.len(), s),
        None => (0..meta.runs.len()).collect(),
    };
    if args.dry_run {
        let mut out = format!(
            "study {}: {} runs ({} kernels x {} pipelines x {} machines){}\n",
            meta.name,
            meta.runs.len(),
            meta.kernels.len(),
            meta.pipelines.len(),
            meta.machines.len(),
            shard.map_or_else(String::new, |(i, n)| format!(
                "; shard {i}/{n}: {}",
                selected.len()
            ))
        );
        for &i in &selected {
            out.push_str(&meta.runs[i].key);
            out.push('\n');
        }
        crate::output::out!("{out}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = match (&args.out, shard) {
        (Some(d), _) => d.clone(),
        (None, None) => Path::new("study-out").join(&meta.name),
        (None, Some((i, n))) => Path::new("study-out")
            .join(&meta.name)
            .join(format!("shard-{i}-of-{n}")),
    };
    outputs::create_dir(&out_dir)?;
    // Earlier results that are still valid.
    let mut rows: Vec<Option<Row>> = vec![None; meta.runs.len()];
    let index: HashMap<&str, usize> = meta
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.key.as_str(), i))
        .collect();
    let is_selected = {
        let mut v = vec![false; meta.runs.len()];
        for &i in &selected {
            v[i] = true;
        }
        v
    };
    // Whether the log holds anything but the kept rows (then it is rewritten).
    let mut log_dirty = args.fresh;
    if !args.fresh {
        let (earlier, bad_lines) = outputs::read_log(&out_dir)?;
        log_dirty |= bad_lines;
        for row in earlier {
            match index.get(row.key.as_str()) {
                Some(&i)
                    if is_selected[i] && meta.runs[i].hash == row.hash && rows[i].is_none() =>
                {
                    rows[i] = Some(row);
                }
                _ => log_dirty = true,
            }
        }
    }
    let reused = rows.iter().flatten().count();
    outputs::write_study(
        &out_dir,
        &StudyFile {
            meta: meta.clone(),
            shard: shard.map(|(i, n)| format!("{i}/{n}")),
        },
    )?;
    if log_dirty {
        outputs::write_log(&out_dir, &rows.iter().flatten().collect::<Vec<_>>())?;
    }
    for (job, run) in plan.jobs.iter_mut().zip(&meta.runs) {
        job.trace = run.trace.as_ref().map(|t| out_dir.join(t));
    }
    let mut todo: Vec<usize> = selected
        .iter()
        .copied()
        .filter(|&i| rows[i].is_none())
        .collect();
    if let Some(n) = args.max_runs {
        todo.truncate(n);
    }
    install_ctrl_c();
    let log = Mutex::new(outputs::append_log(&out_dir)?);
    let log_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let options = engine::Options {
        threads: args.jobs,
        progress: !args.quiet,
        ptxas: Ptxas::NotAsked,
        what: "pipeline",
        stop: Some(&STOP),
    };
    let (done, work) = engine::execute(&plan, &todo, &options, |j, d| {
        let row = row_of(&meta, &plan, j, d);
        if let Ok(mut file) = log.lock() {
            if let Err(e) = outputs::log_row(&mut file, &row) {
                if let Ok(mut slot) = log_error.lock() {
                    slot.get_or_insert(e);
                }
            }
        }
        row
    })?;
    if let Some(e) = log_error.into_inner().ok().flatten() {
        return Err(e.context("writing the result log"));
    }
    let ran = done.len();
    for (j, _, row) in done {
        rows[j] = Some(row);
    }
    let selected_rows: Vec<Option<Row>> = (0..meta.runs.len())
        .map(|i| {
            if is_selected[i] {
                rows[i].clone()
            } else {
                None
            }
        })
        .collect();
    outputs::write_all(&out_dir, &meta, &selected_rows, shard.is_some())?;
    let finished = selected_rows.iter().flatten().count();
    let failed = selected_rows
        .iter()
        .flatten()
        .filter(|r| r.failed())
        .count();
    eprintln!(
        "study {}: {finished} of {} runs done ({reused} from earlier results, {ran} run now) in \
         {:.2} s (compiling {:.2} s, reference runs {:.2} s, emulator {:.2} s, summed over \
         threads); {failed} failed; {}",
        meta.name,
        selected.len(),
        work.wall,
        work.compile,
        work.reference,
        work.emulate,
        if shard.is_none() {
            format!("see {}", out_dir.join("index.md").display())
        } else {
            format!("results in {}", out_dir.display())
        }
    );
    for r in selected_rows.iter().flatten().filter(|r| r.failed()) {
        eprintln!(
            "error: {}: {}",
            r.key,
            r.error.as_deref().unwrap_or(&r.status)
        );
    }
    if finished < selected.len() {
        let why = if STOP.load(Ordering::SeqCst) {
            "interrupted"
        } else {
            "stopped"
        };
        eprintln!(
            "{why}: {} runs not done yet; run the same command again to do them",
            selected.len() - finished
        );
        return Ok(ExitCode::from(if STOP.load(Ordering::SeqCst) {
            130
        } else {
            2
        }));
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The row of job `j` of the plan.
fn row_of(meta: &Meta, plan: &engine::Plan, j: usize, done: &engine::Done) -> Row {
    let run = &meta.runs[j];
    let kernel = &plan.kernels[run.kernel];
    let file = kernel.file.display().to_string();
    let id = RowId {
        key: &run.key,
        hash: &run.hash,
        kernel: &kernel.id,
        file: &file,
        function: &kernel.func.name,
        pipeline: &meta.pipelines[run.pipeline].label,
        machine: &meta.machines[run.machine].label,
        params: &meta.machines[run.machine].params,
        warp_width: plan.machines[run.machine].config.warp_width,
        block: kernel.launch.as_ref().map(|l| l.block[0]),
    };
    Row::new(&id, done)
}

/// Ctrl-C once: stop starting runs; twice: quit at once.
fn install_ctrl_c() {
    // Only the first installation in a process succeeds; later ones keep the first.
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!(
            "\nstopping: finishing the runs in progress (Ctrl-C again to quit at once; finished \
             runs are kept)"
        );
    });
}

/// Runs `warplift study merge`.
fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let mut meta: Option<Meta> = None;
    let mut by_key: HashMap<String, Row> = HashMap::new();
    let mut trace_dirs = Vec::new();
    for dir in &args.dirs {
        let study = outputs::read_study(dir)?;
        match &meta {
            None => meta = Some(study.meta),
            Some(m) if *m == study.meta => {}
            Some(m) => bail!(
                "{} holds study {} with other kernels, pipelines, machines or settings than {} \
                 (from {}); only shards of one study merge",
                dir.display(),
                study.meta.name,
                m.name,
                args.dirs[0].display()
            ),
        }
        for row in outputs::read_log(dir)?.0 {
            by_key.insert(row.key.clone(), row);
        }
        trace_dirs.push(dir.clone());
    }
    let meta = meta.ok_or_else(|| anyhow!("no directory to merge"))?;
    let rows: Vec<Option<Row>> = meta
        .runs
        .iter()
        .map(|r| by_key.remove(&r.key).filter(|row| row.hash == r.hash))
        .collect();
    let out = outputs::create_dir(&args.out)?;
    outputs::write_study(
        &out,
        &StudyFile {
            meta: meta.clone(),
            shard: None,
        },
    )?;
    outputs::write_log(&out, &rows.iter().flatten().collect::<Vec<_>>())?;
    outputs::write_results(&out, &meta, &rows)?;
    for run in &meta.runs {
        let Some(t) = &run.trace else { continue };
        for dir in &trace_dirs {
            let from = dir.join(t);
            if from.is_file() && from != out.join(t) {
                outputs::create_dir(out.join(t).parent().unwrap_or(&out))?;
                std::fs::copy(&from, out.join(t))
                    .map_err(|e| anyhow!("cannot copy {}: {e}", from.display()))?;
            }
        }
    }
    let traces = outputs::existing_traces(&out, &meta);
    outputs::write_report(&out, &meta, &rows, &traces)?;
    let missing: Vec<&str> = meta
        .runs
        .iter()
        .zip(&rows)
        .filter(|(_, r)| r.is_none())
        .map(|(run, _)| run.key.as_str())
        .collect();
    let failed = rows.iter().flatten().filter(|r| r.failed()).count();
    eprintln!(
        "study {}: merged {} of {} runs from {} directories; {failed} failed; see {}",
        meta.name,
        rows.len() - missing.len(),
        rows.len(),
        args.dirs.len(),
        out.join("index.md").display()
    );
    if !missing.is_empty() {
        bail!(
            "{} runs are in none of the directories (a shard not run or not finished), e.g. {}",
            missing.len(),
            missing[0]
        );
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
