//! A study's output directory: what is in it, and writing and reading it.
//!
//! ```text
//! DIR/study.json     the study (plan::Meta) and which shard the directory holds
//! DIR/runs.jsonl     one JSON row per finished run, appended as runs finish (resume)
//! DIR/results.csv    one CSV row per run, in the study's order
//! DIR/results.json   the same rows as a JSON array
//! DIR/summary.md     tables: speedups and ratios over the baseline, geomeans, the paper
//! DIR/plots/*.svg    the plots
//! DIR/traces/*.json  the timelines of the runs the spec asked for
//! DIR/index.md       links to all of the above
//! ```
//!
//! A shard's directory has the first four; `warplift study merge` writes all of them.

use crate::plan::Meta;
use crate::plots;
use crate::rows::{self, Row};
use crate::summary::Results;
use anyhow::{anyhow, Context as _, Result};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `study.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StudyFile {
    /// The study.
    pub meta: Meta,
    /// `I/N` for a shard's directory.
    pub shard: Option<String>,
}

/// The result log's name.
pub const LOG: &str = "runs.jsonl";

/// Writes `text` to `path` through a temporary file, so a reader never sees half of it.
pub fn write_atomic(path: &Path, text: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Reads `study.json` of `dir`.
pub fn read_study(dir: &Path) -> Result<StudyFile> {
    let path = dir.join("study.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a study's output?)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Writes `study.json`.
pub fn write_study(dir: &Path, study: &StudyFile) -> Result<()> {
    write_atomic(
        &dir.join("study.json"),
        serde_json::to_string_pretty(study)?.as_bytes(),
    )
}

/// The rows of `dir`'s result log, each with its line, and whether some line was not a
/// row. A line cut short (the process was killed while writing it) is such a line: that
/// run is simply run again, and the log must be rewritten before anything is appended to
/// it.
pub fn read_log(dir: &Path) -> Result<(Vec<(Row, String)>, bool)> {
    let path = dir.join(LOG);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(anyhow!("cannot read {}: {e}", path.display())),
    };
    let mut bad = !text.is_empty() && !text.ends_with('\n');
    let mut rows = Vec::new();
    for line in text.lines() {
        match serde_json::from_str::<Row>(line) {
            Ok(r) => rows.push((r, line.to_string())),
            Err(_) => bad = true,
        }
    }
    Ok((rows, bad))
}

/// A row as one line of JSON (without the line break): its line in the log and in
/// `results.json`.
pub fn row_line(row: &Row) -> Result<String> {
    Ok(serde_json::to_string(row)?)
}

/// Rewrites the result log with exactly `rows`.
pub fn write_log(dir: &Path, rows: &[&Row]) -> Result<()> {
    let mut text = String::new();
    for r in rows {
        text.push_str(&row_line(r)?);
        text.push('\n');
    }
    write_atomic(&dir.join(LOG), text.as_bytes())
}

/// The result log, opened for appending.
pub fn append_log(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join(LOG);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// Appends one row's line (from [`row_line`]) to an open log, in one write.
pub fn log_line(file: &mut std::fs::File, line: &str) -> Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    file.write_all(&bytes)?;
    Ok(())
}

/// Writes `results.csv` and `results.json` with the rows there are. `lines` holds the
/// rows' JSON lines where already made (aligned with `rows`, or empty): each row is
/// serialised once, for the log and the results alike.
pub fn write_results(
    dir: &Path,
    meta: &Meta,
    rows: &[Option<Row>],
    lines: &[Option<String>],
) -> Result<()> {
    let present: Vec<&Row> = rows.iter().flatten().collect();
    write_atomic(
        &dir.join("results.csv"),
        rows::csv(&meta.params, &present).as_bytes(),
    )?;
    // One row per line: as readable as pretty-printing where it matters, and cheaper.
    let mut json = String::from("[\n");
    let mut first = true;
    for (i, row) in rows.iter().enumerate() {
        let Some(row) = row else { continue };
        if !first {
            json.push_str(",\n");
        }
        first = false;
        match lines.get(i).and_then(Option::as_ref) {
            Some(line) => json.push_str(line),
            None => json.push_str(&row_line(row)?),
        }
    }
    json.push_str(if first { "]\n" } else { "\n]\n" });
    write_atomic(&dir.join("results.json"), json.as_bytes())
}

/// Writes everything but the study file and the log: the results, and unless `shard`
/// the summary, the plots and the index (in parallel).
pub fn write_all(
    dir: &Path,
    meta: &Meta,
    rows: &[Option<Row>],
    lines: &[Option<String>],
    shard: bool,
) -> Result<()> {
    let (a, b) = rayon::join(
        || write_results(dir, meta, rows, lines),
        || match shard {
            true => Ok(()),
            false => write_report(dir, meta, rows, &existing_traces(dir, meta)),
        },
    );
    a.and(b)
}

/// Writes the summary, the plots and the index.
pub fn write_report(
    dir: &Path,
    meta: &Meta,
    rows: &[Option<Row>],
    traces: &[String],
) -> Result<()> {
    use rayon::prelude::*;
    let results = Results::new(meta, rows);
    let plot_dir = dir.join("plots");
    std::fs::create_dir_all(&plot_dir)
        .with_context(|| format!("cannot create {}", plot_dir.display()))?;
    // The summary and each plot are independent: drawn in parallel.
    let (summary, plot_files) = rayon::join(
        || write_atomic(&dir.join("summary.md"), results.markdown().as_bytes()),
        || {
            meta.plots
                .par_iter()
                .map(|plot| {
                    let svg = plots::draw(&results, plot)?;
                    let name = format!("plots/{}.svg", plot.name);
                    write_atomic(&dir.join(&name), svg.as_bytes())?;
                    Ok((name, plot.title.clone()))
                })
                .collect::<Result<Vec<_>>>()
        },
    );
    summary?;
    let plot_files = plot_files?;
    let mut index = String::new();
    let _ = writeln!(index, "# {}\n", meta.title);
    if !meta.description.trim().is_empty() {
        let _ = writeln!(index, "{}\n", meta.description.trim());
    }
    let _ = writeln!(
        index,
        "- [Summary tables](summary.md)\n- [Results, one row per run (CSV)](results.csv)\n- \
         [Results (JSON)](results.json)"
    );
    if !plot_files.is_empty() {
        index.push_str("\n## Plots\n\n");
        for (file, title) in &plot_files {
            let _ = writeln!(index, "### {title}\n\n![{title}]({file})\n");
        }
    }
    if !traces.is_empty() {
        index.push_str("\n## Traces (open in https://ui.perfetto.dev or chrome://tracing)\n\n");
        for t in traces {
            let _ = writeln!(index, "- [{t}]({t})");
        }
    }
    write_atomic(&dir.join("index.md"), index.as_bytes())
}

/// The trace files of the study that exist in `dir`, relative to it.
pub fn existing_traces(dir: &Path, meta: &Meta) -> Vec<String> {
    meta.runs
        .iter()
        .filter_map(|r| r.trace.clone())
        .filter(|t| dir.join(t).is_file())
        .collect()
}

/// Creates `dir` (and its parents).
pub fn create_dir(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir.to_path_buf())
}
