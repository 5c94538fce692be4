//! `warplift classify`: the structural class of every kernel (Table I of Reissmann et
//! al., "Efficient Control Flow Restructuring for GPUs"), its unstructured subgraphs and
//! whether each holds a divergent branch; with several kernels, the table of classes by
//! cyclicity.

use crate::output::outln;
use crate::source;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use warplift_ir::cfg::{classify, Classification, StructureClass};
use warplift_ir::divergence::Divergence;
use warplift_ir::{Block, Function};

/// Arguments of `warplift classify`.
#[derive(Args)]
pub struct ClassifyArgs {
    /// The .wir files, or directories whose .wir files to classify.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// One kernel's classification.
struct Row {
    file: String,
    kernel: String,
    result: Classification<Block>,
    /// Per unstructured subgraph: does it (or its entry) end with a divergent branch?
    divergent: Vec<bool>,
}

/// The `.wir` files named by `paths` (directories expanded, sorted).
fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "wir"))
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Classifies one kernel.
pub fn classify_kernel(func: &Function) -> (Classification<Block>, Vec<bool>) {
    let result = classify(func);
    let divergence = Divergence::compute(func);
    let divergent = result
        .unstructured
        .iter()
        .map(|r| {
            r.blocks
                .iter()
                .chain(r.entry.iter())
                .any(|&b| divergence.is_divergent_branch(b))
        })
        .collect();
    (result, divergent)
}

fn rows_of(path: &Path) -> Result<Vec<Row>> {
    let funcs = source::load_verified(path)?;
    Ok(funcs
        .iter()
        .map(|f| {
            let (result, divergent) = classify_kernel(f);
            Row {
                file: path.display().to_string(),
                kernel: f.name.clone(),
                result,
                divergent,
            }
        })
        .collect())
}

fn block_name(b: Option<Block>, none: &str) -> String {
    b.map_or_else(|| none.to_string(), |b| b.to_string())
}

/// Runs `warplift classify`.
pub fn run(args: &ClassifyArgs) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for f in files(&args.paths)? {
        rows.extend(rows_of(&f)?);
    }
    if args.json {
        let kernels: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "file": r.file,
                    "kernel": r.kernel,
                    "class": r.result.class.name(),
                    "cyclic": r.result.cyclic,
                    "blocks": r.result.reachable_blocks,
                    "unstructured": r.result.unstructured.iter().zip(&r.divergent).map(|(u, d)| json!({
                        "entry": block_name(u.entry, "entry"),
                        "exit": block_name(u.exit, "exit"),
                        "blocks": u.blocks.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
                        "divergent": d,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let table: serde_json::Map<String, serde_json::Value> = StructureClass::ALL
            .iter()
            .map(|&c| {
                let (a, y) = counts(&rows, c);
                (c.name().to_string(), json!({"acyclic": a, "cyclic": y}))
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({"kernels": kernels, "table": table}))?
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    for r in &rows {
        outln!(
            "{} %{}: {}, {}, {} blocks",
            r.file,
            r.kernel,
            r.result.class,
            if r.result.cyclic { "cyclic" } else { "acyclic" },
            r.result.reachable_blocks
        )?;
        for (u, &d) in r.result.unstructured.iter().zip(&r.divergent) {
            let blocks: Vec<String> = u.blocks.iter().map(|b| b.to_string()).collect();
            outln!(
                "  unstructured subgraph {} .. {}: blocks {}; {}",
                block_name(u.entry, "entry"),
                block_name(u.exit, "exit"),
                blocks.join(" "),
                if d {
                    "holds a divergent branch"
                } else {
                    "uniform branches only"
                }
            )?;
        }
    }
    if rows.len() > 1 {
        outln!("")?;
        outln!("{:16} {:>8} {:>8}", "class", "acyclic", "cyclic")?;
        for c in StructureClass::ALL {
            let (a, y) = counts(&rows, c);
            outln!("{:16} {a:>8} {y:>8}", c.name())?;
        }
        outln!("{:16} {:>8}", "total", rows.len())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Kernels of class `c`: (acyclic, cyclic).
fn counts(rows: &[Row], c: StructureClass) -> (usize, usize) {
    let of = |cyclic: bool| {
        rows.iter()
            .filter(|r| r.result.class == c && r.result.cyclic == cyclic)
            .count()
    };
    (of(false), of(true))
}
