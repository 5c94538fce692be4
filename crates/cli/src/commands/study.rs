//! `warplift study SPEC.toml`: sweeps kernels x pipelines x machines on the emulator and
//! writes one row per run (CSV and JSON), summary tables, SVG plots and an index; `warplift
//! study merge DIR...` combines the outputs of shards (`--shard I/N`) into those of one
//! unsharded run. The format of a spec and of the outputs is in docs/studies.md.
//!
//! The engine is the library `warplift_study` (also `warplift::study`); this command adds
//! the command line, a progress bar, Ctrl-C and the messages. Every finished run is
//! appended to `runs.jsonl` at once, so Ctrl-C (which lets the runs in progress finish)
//! and even a killed process keep what was done; a rerun skips every run whose key is in
//! the log with the hash the run has now.

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use warplift_study::{plan, RunOptions, Study};

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
    let study = Study::from_path(spec_path)?;
    let meta = &study.meta;
    let shard = args.shard.as_deref().map(plan::parse_shard).transpose()?;
    let selected = study.select(shard);
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
    install_ctrl_c();
    let bar = crate::progress::Bar::new(!args.quiet);
    let progress = |p| bar.update(p);
    let results = study.run(&RunOptions {
        out: Some(&out_dir),
        shard,
        threads: args.jobs,
        fresh: args.fresh,
        max_runs: args.max_runs,
        progress: Some(&progress),
        stop: Some(&STOP),
    })?;
    bar.finish();
    let finished = results.finished();
    let failed = results.failed().count();
    let work = &results.work;
    eprintln!(
        "study {}: {finished} of {} runs done ({} from earlier results, {} run now) in \
         {:.2} s (compiling {:.2} s, reference runs {:.2} s, emulator {:.2} s, summed over \
         threads); {failed} failed; {}",
        meta.name,
        selected.len(),
        results.reused,
        results.ran,
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
    for r in results.failed() {
        eprintln!(
            "error: {}: {}",
            r.key,
            r.error.as_deref().unwrap_or(&r.status)
        );
    }
    if !results.complete() {
        let why = if results.stopped {
            "interrupted"
        } else {
            "stopped"
        };
        eprintln!(
            "{why}: {} runs not done yet; run the same command again to do them",
            selected.len() - finished
        );
        return Ok(ExitCode::from(if results.stopped { 130 } else { 2 }));
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
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
    let merged = warplift_study::merge(&args.dirs, &args.out)?;
    let missing = merged.missing();
    let failed = merged.rows.iter().flatten().filter(|r| r.failed()).count();
    eprintln!(
        "study {}: merged {} of {} runs from {} directories; {failed} failed; see {}",
        merged.meta.name,
        merged.rows.len() - missing.len(),
        merged.rows.len(),
        args.dirs.len(),
        args.out.join("index.md").display()
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
