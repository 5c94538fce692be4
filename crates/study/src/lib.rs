//! Studies: sweeps of kernels x pipelines x machines on the emulator, with one row of
//! numbers per run, summary tables, SVG plots and an index page. This is the engine behind
//! `warplift study` (and `warplift report`), for programs that embed warplift; the spec
//! format and the outputs are described in docs/studies.md.
//!
//! A [`Study`] is a spec read and planned: its kernels found, parsed, verified and bound to
//! their launches, its pipelines' settings checked, the machines of its sweep built, and
//! every run given a key (`kernel|pipeline|machine`) and a hash (of the kernel, its launch,
//! the pipeline's settings, the machine and warplift's version). [`Study::run`] runs the
//! runs on all cores, checks every run's memory against the reference interpreter, and
//! returns one typed [`Row`] per run; with an output directory it also keeps a result log
//! there (a rerun skips every run already done with the same hash) and writes the CSV,
//! JSON, tables, plots and index. [`merge`] combines the directories of shards.
//!
//! ```
//! use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
//! use warplift_study::{RunOptions, Study};
//!
//! # let dir = std::env::temp_dir().join(format!("warplift-study-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! // A kernel and its launch, as files (a spec's paths are relative to the spec).
//! std::fs::write(dir.join("twice.wir"), "kernel %twice(out: i64) {
//! block0(v0: i64):
//!     v1 = thread_id x
//!     v2 = uextend.i64 v1
//!     v3 = iconst.i64 2
//!     v4 = ishl v2, v3
//!     v5 = iadd v0, v4
//!     v6 = iconst.i32 1
//!     v7 = band v1, v6
//!     v8 = iconst.i32 0
//!     v9 = icmp ne v7, v8
//!     brif v9, block1, block2
//! block1:
//!     v10 = iadd v1, v1
//!     store global v10, v5
//!     jump block3
//! block2:
//!     store global v1, v5
//!     jump block3
//! block3:
//!     return
//! }")?;
//! let spec = r#"
//!     name = "doc"
//!     [sweep]
//!     warp_width = [4, 32]
//!     [[kernels]]
//!     files = "twice.wir"
//!     launch = { grid = [1], block = [32], buffers.out = { type = "i32", len = 32, init = "zeros" } }
//!     [[pipelines]]
//!     name = "base"
//!     [[pipelines]]
//!     name = "linearized"
//!     passes = ["linearize"]
//! "#;
//! // The path names the spec in errors and is where its relative paths start.
//! let study = Study::from_str(spec, dir.join("doc.toml"))?;
//! assert_eq!(study.runs().len(), 4); // 1 kernel x 2 machines x 2 pipelines
//!
//! let finished = AtomicUsize::new(0);
//! let progress = |p: warplift_study::Progress| finished.store(p.done, Ordering::Relaxed);
//! let stop = AtomicBool::new(false); // set it (from another thread) to stop early
//! let results = study.run(&RunOptions {
//!     threads: Some(2),
//!     progress: Some(&progress),
//!     stop: Some(&stop),
//!     ..RunOptions::default() // no output directory: nothing is written
//! })?;
//! assert_eq!(finished.load(Ordering::Relaxed), 4);
//! for row in results.rows() {
//!     assert_eq!(row.status, "ok"); // the emulator left the interpreter's memory
//!     assert!(row.get("cycles").unwrap() > 0.0);
//! }
//! // Odd and even lanes take different arms: a warp is half busy in each.
//! let base = results.row("twice|base|warp_width=32").unwrap();
//! assert!(base.get("simt_efficiency").unwrap() < 1.0);
//!
//! // The CSV, JSON, summary, plots and index of docs/studies.md.
//! study.write_outputs(&dir.join("out"), &results)?;
//! assert!(dir.join("out/index.md").is_file());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! The modules, for finer control:
//!
//! - [`spec`]: the spec file as typed values, each error naming its line and key;
//! - [`plan`]: the runs, their keys and hashes, and the study's [`Meta`];
//! - [`engine`]: runs jobs on all cores (also behind `warplift report`);
//! - [`measure`]: one kernel under one pipeline on one machine;
//! - [`rows`]: one run's results ([`Row`]), CSV and JSON;
//! - [`summary`] and [`plots`]: the tables and the SVGs; [`outputs`]: the directory;
//! - [`source`]: reading kernel files.

pub mod engine;
pub mod measure;
pub mod outputs;
pub mod plan;
pub mod plots;
pub mod rows;
pub mod source;
pub mod spec;
pub mod summary;

pub use engine::{Progress, Work};
pub use plan::{Meta, RunInfo};
pub use rows::Row;

use anyhow::{anyhow, bail, Result};
use outputs::StudyFile;
use rows::RowId;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A study: its spec read and checked, and its runs planned.
#[derive(Clone, Debug)]
pub struct Study {
    /// What the outputs need: kernels', pipelines' and machines' names, the runs with
    /// their keys and hashes, the plots and the paper's numbers.
    pub meta: Meta,
    /// What to run: the kernels themselves, the pipelines' settings, the machines.
    pub plan: engine::Plan,
}

/// How [`Study::run`] runs.
#[derive(Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// The output directory: with one, every finished run is appended to its result log
    /// at once, earlier valid results there are reused (unless `fresh`), and the outputs
    /// are written at the end, with the traces the spec asks for. Without, nothing is
    /// read or written.
    pub out: Option<&'a Path>,
    /// Only the `I`-th of `N` disjoint parts of the sweep (`(I, N)`, 1 <= I <= N); a
    /// shard's directory gets the rows but no tables, plots or index ([`merge`] does).
    pub shard: Option<(usize, usize)>,
    /// Worker threads; `None`: one per core.
    pub threads: Option<usize>,
    /// Ignore earlier results in `out`.
    pub fresh: bool,
    /// Run at most this many runs (the rest are left for the next call).
    pub max_runs: Option<usize>,
    /// Told after every finished run, from the worker thread that ran it.
    pub progress: Option<engine::ProgressFn<'a>>,
    /// Set it to stop: the runs in progress finish, no new one starts, and what is done is
    /// kept (and written).
    pub stop: Option<&'a AtomicBool>,
}

/// What [`Study::run`] did.
#[derive(Clone, Debug)]
pub struct Results {
    /// One entry per run of the study (aligned with [`Study::runs`]): its row, or `None`
    /// for a run outside the shard or not done (stopped, or past `max_runs`).
    pub rows: Vec<Option<Row>>,
    /// The runs of the shard (all runs without one), as indices.
    pub selected: Vec<usize>,
    /// Rows taken from earlier results in the output directory.
    pub reused: usize,
    /// Runs run by this call.
    pub ran: usize,
    /// Where the time went.
    pub work: Work,
    /// Whether the stop flag ended the call early.
    pub stopped: bool,
    /// The rows' JSON lines, as logged (aligned with `rows`), so that `results.json` does
    /// not serialise them again.
    lines: Vec<Option<String>>,
}

impl Results {
    /// The rows there are, in the study's order.
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().flatten()
    }

    /// The row of the run with this key (`kernel|pipeline|machine`).
    pub fn row(&self, key: &str) -> Option<&Row> {
        self.rows().find(|r| r.key == key)
    }

    /// The selected runs that have a row.
    pub fn finished(&self) -> usize {
        self.rows().count()
    }

    /// The rows of runs that failed or whose memory differed from the interpreter's.
    pub fn failed(&self) -> impl Iterator<Item = &Row> {
        self.rows().filter(|r| r.failed())
    }

    /// Whether every selected run has a row.
    pub fn complete(&self) -> bool {
        self.finished() == self.selected.len()
    }
}

impl Study {
    /// Reads and plans the spec at `path`.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Study> {
        let (source, spec) = spec::read(path.as_ref())?;
        Study::from_source(&source, &spec)
    }

    /// Reads and plans a spec's text; `path` names it in errors (`PATH:LINE: KEY: ...`)
    /// and is where its relative paths start (it need not exist).
    #[allow(clippy::should_implement_trait)] // it takes a path too: not `FromStr`
    pub fn from_str(text: &str, path: impl Into<PathBuf>) -> Result<Study> {
        let source = spec::Source {
            path: path.into(),
            text: text.to_string(),
        };
        let spec = spec::parse(&source)?;
        Study::from_source(&source, &spec)
    }

    /// Plans a parsed spec.
    pub fn from_source(source: &spec::Source, spec: &spec::Spec) -> Result<Study> {
        let (meta, plan) = plan::build(source, spec)?;
        Ok(Study { meta, plan })
    }

    /// The study's name (a word).
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// Every run, in order: kernel by kernel, then machine, then pipeline.
    pub fn runs(&self) -> &[RunInfo] {
        &self.meta.runs
    }

    /// The runs of shard `(i, n)` (all runs for `None`), as indices into [`Study::runs`].
    pub fn select(&self, shard: Option<(usize, usize)>) -> Vec<usize> {
        match shard {
            Some(s) => plan::shard(self.meta.runs.len(), s),
            None => (0..self.meta.runs.len()).collect(),
        }
    }

    /// Runs the study (see [`RunOptions`]); failed and mismatched runs are rows too, with
    /// their error. With an output directory, writes its outputs before returning.
    pub fn run(&self, options: &RunOptions<'_>) -> Result<Results> {
        let meta = &self.meta;
        let n = meta.runs.len();
        if let Some((i, k)) = options.shard {
            if k == 0 || i == 0 || i > k {
                bail!("shard {i}/{k}: expected 1 <= I <= N");
            }
        }
        let selected = self.select(options.shard);
        let mut is_selected = vec![false; n];
        for &i in &selected {
            is_selected[i] = true;
        }
        let mut rows: Vec<Option<Row>> = vec![None; n];
        let mut lines: Vec<Option<String>> = vec![None; n];
        let mut plan = self.plan.clone();
        let mut log = None;
        if let Some(dir) = options.out {
            outputs::create_dir(dir)?;
            // Earlier results that are still valid.
            let mut log_dirty = options.fresh;
            if !options.fresh {
                let index: HashMap<&str, usize> = meta
                    .runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.key.as_str(), i))
                    .collect();
                let (earlier, bad_lines) = outputs::read_log(dir)?;
                log_dirty |= bad_lines;
                for (row, line) in earlier {
                    match index.get(row.key.as_str()) {
                        Some(&i)
                            if is_selected[i]
                                && meta.runs[i].hash == row.hash
                                && rows[i].is_none() =>
                        {
                            rows[i] = Some(row);
                            lines[i] = Some(line);
                        }
                        _ => log_dirty = true,
                    }
                }
            }
            outputs::write_study(
                dir,
                &StudyFile {
                    meta: meta.clone(),
                    shard: options.shard.map(|(i, n)| format!("{i}/{n}")),
                },
            )?;
            if log_dirty {
                outputs::write_log(dir, &rows.iter().flatten().collect::<Vec<_>>())?;
            }
            log = Some(Mutex::new(outputs::append_log(dir)?));
        }
        for (job, run) in plan.jobs.iter_mut().zip(&meta.runs) {
            job.trace = match (&run.trace, options.out) {
                (Some(t), Some(dir)) => Some(dir.join(t)),
                _ => None,
            };
        }
        let reused = rows.iter().flatten().count();
        let mut todo: Vec<usize> = selected
            .iter()
            .copied()
            .filter(|&i| rows[i].is_none())
            .collect();
        if let Some(max) = options.max_runs {
            todo.truncate(max);
        }
        let log_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
        let engine_options = engine::Options {
            threads: options.threads,
            progress: options.progress,
            ptxas: measure::Ptxas::NotAsked,
            what: "pipeline",
            stop: options.stop,
        };
        let (done, work) = engine::execute(&plan, &todo, &engine_options, |j, d| {
            let row = self.row_of(j, d);
            let Some(log) = &log else {
                return (row, None);
            };
            // Serialised once: the same line goes into results.json.
            let line = outputs::row_line(&row).and_then(|line| {
                let mut file = log.lock().map_err(|_| anyhow!("the result log's lock"))?;
                outputs::log_line(&mut file, &line)?;
                Ok(line)
            });
            match line {
                Ok(line) => (row, Some(line)),
                Err(e) => {
                    if let Ok(mut slot) = log_error.lock() {
                        slot.get_or_insert(e);
                    }
                    (row, None)
                }
            }
        })?;
        if let Some(e) = log_error.into_inner().ok().flatten() {
            return Err(e.context("writing the result log"));
        }
        let ran = done.len();
        for (j, _, (row, line)) in done {
            rows[j] = Some(row);
            lines[j] = line;
        }
        let results = Results {
            rows,
            selected,
            reused,
            ran,
            work,
            stopped: options.stop.is_some_and(|s| s.load(Ordering::SeqCst)),
            lines,
        };
        if let Some(dir) = options.out {
            outputs::write_all(
                dir,
                meta,
                &results.rows,
                &results.lines,
                options.shard.is_some(),
            )?;
        }
        Ok(results)
    }

    /// Writes the outputs of `results` into `dir`: `study.json`, the result log, the CSV
    /// and JSON rows, the summary, the plots and the index (docs/studies.md).
    pub fn write_outputs(&self, dir: &Path, results: &Results) -> Result<()> {
        outputs::create_dir(dir)?;
        outputs::write_study(
            dir,
            &StudyFile {
                meta: self.meta.clone(),
                shard: None,
            },
        )?;
        outputs::write_log(dir, &results.rows().collect::<Vec<_>>())?;
        outputs::write_all(dir, &self.meta, &results.rows, &results.lines, false)
    }

    /// The row of finished job `j`.
    fn row_of(&self, j: usize, done: &engine::Done) -> Row {
        let (meta, plan) = (&self.meta, &self.plan);
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
}

/// What [`merge`] combined.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The study.
    pub meta: Meta,
    /// One entry per run: its row, or `None` when no directory had it.
    pub rows: Vec<Option<Row>>,
}

impl Merged {
    /// The keys of the runs no directory had.
    pub fn missing(&self) -> Vec<&str> {
        self.meta
            .runs
            .iter()
            .zip(&self.rows)
            .filter(|(_, r)| r.is_none())
            .map(|(run, _)| run.key.as_str())
            .collect()
    }
}

/// Combines the output directories of a study's shards into `out`, with the same outputs
/// as one unsharded run (byte for byte, apart from the timing columns); runs that no
/// directory has are left out (see [`Merged::missing`]). Fails if the directories hold
/// different studies.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged> {
    let mut meta: Option<Meta> = None;
    let mut by_key: HashMap<String, Row> = HashMap::new();
    for dir in dirs {
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
                dirs[0].display()
            ),
        }
        for (row, _) in outputs::read_log(dir)?.0 {
            by_key.insert(row.key.clone(), row);
        }
    }
    let meta = meta.ok_or_else(|| anyhow!("no directory to merge"))?;
    let rows: Vec<Option<Row>> = meta
        .runs
        .iter()
        .map(|r| by_key.remove(&r.key).filter(|row| row.hash == r.hash))
        .collect();
    let out = outputs::create_dir(out)?;
    outputs::write_study(
        &out,
        &StudyFile {
            meta: meta.clone(),
            shard: None,
        },
    )?;
    outputs::write_log(&out, &rows.iter().flatten().collect::<Vec<_>>())?;
    outputs::write_results(&out, &meta, &rows, &[])?;
    for run in &meta.runs {
        let Some(t) = &run.trace else { continue };
        for dir in dirs {
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
    Ok(Merged { meta, rows })
}
