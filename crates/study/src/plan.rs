//! From a parsed spec to the runs: kernels found and launched, pipelines' settings built,
//! machines of the sweep's cross product, and for every run its key and hash.
//!
//! The result is two things: the engine's [`Plan`] (what to run) and the study's
//! [`Meta`] (everything the tables and plots need, serialisable: a shard writes it
//! next to its results, and `warplift study merge` rebuilds the outputs from it without
//! the spec or the kernels). Runs are ordered kernel by kernel, then machine, then
//! pipeline; a shard `I/N` takes every N-th run from the I-th.

use crate::engine::{self, Job, Plan};
use crate::rows::{self, fnv1a, SPEEDUP};
use crate::source;
use crate::spec::{self, LaunchSpec, Source, Spec};
use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use toml::Spanned;
use warplift_codegen::Settings;
use warplift_emu::MachineConfig;
use warplift_ir::launch::Launch;

/// A pipeline as the outputs describe it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineInfo {
    /// Its name.
    pub label: String,
    /// Its passes.
    pub passes: Vec<String>,
    /// Its own settings.
    pub settings: BTreeMap<String, String>,
    /// What it is.
    pub description: Option<String>,
}

/// A machine as the outputs describe it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// Its label.
    pub label: String,
    /// The swept parameters' values.
    pub params: BTreeMap<String, String>,
}

/// One run as the outputs know it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// `kernel|pipeline|machine`.
    pub key: String,
    /// The hash a result must have.
    pub hash: String,
    /// Index into [`Meta::kernels`].
    pub kernel: usize,
    /// Index into [`Meta::pipelines`].
    pub pipeline: usize,
    /// Index into [`Meta::machines`].
    pub machine: usize,
    /// The run's trace file, relative to the output directory.
    pub trace: Option<String>,
}

/// A plot to draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// `bars`, `box`, `scatter` or `lines`.
    pub kind: String,
    /// The quantity.
    pub metric: String,
    /// The file name, without `.svg`.
    pub name: String,
    /// The title.
    pub title: String,
    /// Box plots: the grouping column.
    pub group_by: Option<String>,
    /// Line plots: the parameter on the x axis.
    pub x: Option<String>,
    /// The machines shown (indices).
    pub machines: Vec<usize>,
    /// The pipelines shown (indices).
    pub pipelines: Vec<usize>,
}

/// A number of the paper, to show next to ours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// What it is.
    pub what: String,
    /// The paper's value.
    pub paper: f64,
    /// Our quantity.
    pub metric: String,
    /// The pipeline compared with the baseline.
    pub pipeline: usize,
    /// `geomean`, `total`, `mean`, `min`, `max` or `max_increase`.
    pub statistic: String,
    /// The machines the value is taken over (indices).
    pub machines: Vec<usize>,
    /// The kernels the value is taken over (indices).
    pub kernels: Vec<usize>,
}

/// The statistics a claim can take.
pub const STATISTICS: &[&str] = &["geomean", "total", "mean", "min", "max", "max_increase"];

/// What the outputs of a study need.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The study's name.
    pub name: String,
    /// Its title.
    pub title: String,
    /// What it shows.
    pub description: String,
    /// The baseline pipeline (index).
    pub baseline: usize,
    /// The summary's metrics.
    pub metrics: Vec<String>,
    /// The swept machine parameters, in order.
    pub params: Vec<String>,
    /// The kernels' names.
    pub kernels: Vec<String>,
    /// The pipelines.
    pub pipelines: Vec<PipelineInfo>,
    /// The machines.
    pub machines: Vec<MachineInfo>,
    /// The runs, in order.
    pub runs: Vec<RunInfo>,
    /// The plots.
    pub plots: Vec<Plot>,
    /// The paper's numbers.
    pub claims: Vec<Claim>,
}

/// The summary's metrics when the spec names none.
const DEFAULT_METRICS: &[&str] = &[
    "cycles",
    "warp_instructions",
    "thread_instructions",
    "simt_efficiency",
    "redundant_block_executions",
    "max_stack_depth",
    "static_instructions",
    "registers",
];

/// Builds the study of `spec` (read from `src`).
pub fn build(src: &Source, spec: &Spec) -> Result<(Meta, Plan)> {
    let dir = src.path.parent().unwrap_or(Path::new("")).to_path_buf();
    let name = spec.name.get_ref();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(src.error(
            spec.name.span(),
            "name",
            "the study's name must be a word of letters, digits, `-`, `_` and `.`",
        ));
    }
    // Pipelines first: a pass this warplift lacks is the error to report, whatever the
    // kernels.
    let pipelines = pipelines(src, spec)?;
    let mut plan = Plan::default();
    let mut kernel_meta: Vec<(String, Option<u32>, u64)> = Vec::new();
    if spec.kernels.get_ref().is_empty() {
        return Err(src.error(spec.kernels.span(), "kernels", "the study names no kernel"));
    }
    for (i, k) in spec.kernels.get_ref().iter().enumerate() {
        for (kernel, block, hash) in kernels(src, &dir, i, k)? {
            if plan.kernels.iter().any(|o| o.id == kernel.id) {
                return Err(src.error(
                    k.files.span(),
                    &format!("kernels[{i}]"),
                    format!(
                        "a kernel named `{}` is already in the study; give this one a `name`",
                        kernel.id
                    ),
                ));
            }
            kernel_meta.push((kernel.id.clone(), block, hash));
            plan.kernels.push(kernel);
        }
    }
    let mut infos = Vec::new();
    for (info, pipeline) in pipelines {
        infos.push(info);
        plan.pipelines.push(pipeline);
    }
    let baseline = match &spec.baseline {
        None => 0,
        Some(b) => infos
            .iter()
            .position(|p| &p.label == b.get_ref())
            .ok_or_else(|| {
                src.error(
                    b.span(),
                    "baseline",
                    format!("no pipeline is called `{}`", b.get_ref()),
                )
            })?,
    };
    let (params, machines) = machines(src, spec)?;
    for m in &machines {
        plan.machines.push(engine::Machine {
            label: m.0.label.clone(),
            config: m.1.clone(),
        });
    }
    let machine_infos: Vec<MachineInfo> = machines.into_iter().map(|m| m.0).collect();
    let metrics = match &spec.metrics {
        None => DEFAULT_METRICS.iter().map(|s| s.to_string()).collect(),
        Some(list) => {
            for m in list.get_ref() {
                if rows::metric(m).is_none() {
                    return Err(src.error(
                        list.span(),
                        "metrics",
                        format!("unknown metric `{m}` (metrics: {})", rows::quantity_names()),
                    ));
                }
            }
            list.get_ref().clone()
        }
    };
    let mut meta = Meta {
        name: name.clone(),
        title: spec.title.clone().unwrap_or_else(|| name.clone()),
        description: spec.description.clone().unwrap_or_default(),
        baseline,
        metrics,
        params,
        kernels: kernel_meta.iter().map(|k| k.0.clone()).collect(),
        pipelines: infos,
        machines: machine_infos,
        runs: Vec::new(),
        plots: Vec::new(),
        claims: Vec::new(),
    };
    let traced = traces(src, spec, &meta)?;
    let version = env!("CARGO_PKG_VERSION");
    // Each part of a run's hash once: the hash of a run combines them.
    let pipeline_hashes: Vec<[u8; 8]> = plan
        .pipelines
        .iter()
        .map(|p| fnv1a([format!("{:?}", p.settings).as_bytes()]).to_le_bytes())
        .collect();
    let machine_hashes: Vec<[u8; 8]> = plan
        .machines
        .iter()
        .map(|m| Ok(fnv1a([serde_json::to_string(&m.config)?.as_bytes()]).to_le_bytes()))
        .collect::<Result<_>>()?;
    for (k, kernel) in plan.kernels.iter().enumerate() {
        let kernel_hash = kernel_meta[k].2.to_le_bytes();
        for (m, machine) in plan.machines.iter().enumerate() {
            for (p, pipeline) in plan.pipelines.iter().enumerate() {
                let hash = fnv1a([
                    version.as_bytes(),
                    &kernel_hash,
                    &pipeline_hashes[p],
                    &machine_hashes[m],
                ]);
                let key = format!("{}|{}|{}", kernel.id, pipeline.label, machine.label);
                let trace = traced.contains(&(k, p, m)).then(|| {
                    format!(
                        "traces/{}.json",
                        file_safe(&format!(
                            "{}--{}--{}",
                            kernel.id, pipeline.label, machine.label
                        ))
                    )
                });
                meta.runs.push(RunInfo {
                    key,
                    hash: format!("{hash:016x}"),
                    kernel: k,
                    pipeline: p,
                    machine: m,
                    trace,
                });
                plan.jobs.push(Job {
                    kernel: k,
                    pipeline: p,
                    machine: m,
                    trace: None,
                });
            }
        }
    }
    meta.plots = plots(src, spec, &meta)?;
    meta.claims = claims(src, spec, &meta)?;
    Ok((meta, plan))
}

/// `s` with every character but letters, digits, `-`, `_`, `.` and `=` replaced by `_`.
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `path` with `.` and `dir/..` taken out without asking the file system
/// (`studies/../tests/x.wir` is `tests/x.wir`), so rows name files as a user would.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

/// The kernels of one `[[kernels]]` entry, each with its block size and hash.
fn kernels(
    src: &Source,
    dir: &Path,
    i: usize,
    k: &spec::KernelSpec,
) -> Result<Vec<(engine::Kernel, Option<u32>, u64)>> {
    let key = |k: &str| format!("kernels[{i}].{k}");
    let mut files = Vec::new();
    for pattern in &k.files.get_ref().0 {
        let full = lexical(&dir.join(pattern));
        let text = full.to_string_lossy().into_owned();
        let mut found: Vec<PathBuf> = glob::glob(&text)
            .map_err(|e| src.error(k.files.span(), &key("files"), format!("`{pattern}`: {e}")))?
            .filter_map(|p| p.ok())
            .filter(|p| p.is_file())
            .collect();
        if found.is_empty() {
            return Err(src.error(
                k.files.span(),
                &key("files"),
                format!("`{pattern}` names no kernel file (looked for {text})"),
            ));
        }
        found.sort();
        files.extend(found);
    }
    if let (Some(name), false) = (&k.name, files.len() == 1) {
        return Err(src.error(
            name.span(),
            &key("name"),
            format!(
                "a name is for one kernel file; the entry has {}",
                files.len()
            ),
        ));
    }
    // Files load, parse and verify in parallel; their kernels keep the files' order.
    use rayon::prelude::*;
    let per_file = files
        .par_iter()
        .map(|file| file_kernels(src, dir, i, k, file))
        .collect::<Result<Vec<_>>>()?;
    Ok(per_file.into_iter().flatten().collect())
}

/// The kernels of one file of a `[[kernels]]` entry.
fn file_kernels(
    src: &Source,
    dir: &Path,
    i: usize,
    k: &spec::KernelSpec,
    file: &Path,
) -> Result<Vec<(engine::Kernel, Option<u32>, u64)>> {
    let key = |k: &str| format!("kernels[{i}].{k}");
    let file = file.to_path_buf();
    let mut out = Vec::new();
    let err = |span: std::ops::Range<usize>, k: &str, e: String| {
        src.error(span, &key(k), format!("{}: {e}", file.display()))
    };
    let text =
        source::read_text(&file).map_err(|e| err(k.files.span(), "files", format!("{e:#}")))?;
    // Parsed from the text already read (which the kernel's hash covers).
    let funcs = source::parse_text(&file, &text)
        .and_then(|funcs| source::verify_all(&file, &funcs).map(|()| funcs))
        .map_err(|e| src.error(k.files.span(), &key("files"), format!("{e:#}")))?;
    let (launch, launch_text) = match &k.launch {
        Some(l) => {
            let (launch, text) = match l.get_ref() {
                LaunchSpec::File(path) => {
                    let path = dir.join(path);
                    let text = source::read_text(&path)
                        .map_err(|e| err(l.span(), "launch", format!("{e:#}")))?;
                    (Launch::from_toml_str(&text, &path), text)
                }
                LaunchSpec::Inline(table) => {
                    let text = toml::to_string(table)?;
                    (Launch::from_toml_str(&text, &src.path), text)
                }
            };
            let launch = launch.map_err(|e| err(l.span(), "launch", e.to_string()))?;
            (Some(launch), text)
        }
        None => {
            let path = Launch::path_next_to(&file);
            match path.exists() {
                true => {
                    let text = source::read_text(&path)?;
                    let launch = Launch::from_toml_str(&text, &path)
                        .map_err(|e| err(k.files.span(), "files", e.to_string()))?;
                    (Some(launch), text)
                }
                false => (None, String::new()),
            }
        }
    };
    let stem = file
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let base_id = k.name.as_ref().map_or(stem, |n| n.get_ref().clone());
    // The kernels of the file to measure.
    let chosen: Vec<(&warplift_ir::Function, Option<Launch>)> = match (&k.kernel, launch) {
        (Some(name), launch) => {
            let func = funcs
                .iter()
                .find(|f| &f.name == name.get_ref())
                .ok_or_else(|| {
                    let have: Vec<String> = funcs.iter().map(|f| format!("%{}", f.name)).collect();
                    err(
                        name.span(),
                        "kernel",
                        format!("no kernel %{} (have {})", name.get_ref(), have.join(", ")),
                    )
                })?;
            let launch = launch.map(|mut l| {
                l.set_kernel(&func.name);
                l
            });
            vec![(func, launch)]
        }
        (None, Some(launch)) => {
            let func = launch
                .select_kernel(&funcs)
                .map_err(|e| err(k.files.span(), "files", e.to_string()))?;
            vec![(func, Some(launch))]
        }
        (None, None) => funcs.iter().map(|f| (f, None)).collect(),
    };
    let several = chosen.len() > 1;
    for (func, launch) in chosen {
        let id = if several {
            format!("{base_id}:%{}", func.name)
        } else {
            base_id.clone()
        };
        let hash = fnv1a([
            text.as_bytes(),
            launch_text.as_bytes(),
            func.name.as_bytes(),
        ]);
        // Check the launch binds to the kernel now, not in every run.
        if let Some(l) = &launch {
            l.prepare(func)
                .map_err(|e| err(k.files.span(), "launch", e.to_string()))?;
        }
        match (&k.block, launch) {
            (Some(blocks), Some(launch)) => {
                if blocks.get_ref().is_empty() {
                    return Err(src.error(blocks.span(), &key("block"), "the list is empty"));
                }
                for &b in blocks.get_ref() {
                    let mut l = launch.clone();
                    l.block[0] = b;
                    l.prepare(func)
                        .map_err(|e| err(blocks.span(), "block", format!("block size {b}: {e}")))?;
                    let kernel = engine::Kernel {
                        id: format!("{id}@b{b}"),
                        file: file.clone(),
                        func: func.clone(),
                        launch: Some(l),
                    };
                    let h = fnv1a([hash.to_le_bytes().as_slice(), &b.to_le_bytes()]);
                    out.push((kernel, Some(b), h));
                }
            }
            (Some(blocks), None) => {
                return Err(src.error(
                    blocks.span(),
                    &key("block"),
                    format!("{} has no launch to set the block size of", file.display()),
                ))
            }
            (None, launch) => {
                let block = launch.as_ref().map(|l| l.block[0]);
                let kernel = engine::Kernel {
                    id,
                    file: file.clone(),
                    func: func.clone(),
                    launch,
                };
                out.push((kernel, block, hash));
            }
        }
    }
    Ok(out)
}

/// The pipelines, each checked: known passes, known settings with valid values.
fn pipelines(src: &Source, spec: &Spec) -> Result<Vec<(PipelineInfo, engine::Pipeline)>> {
    let mut base = Settings::builder();
    if let Some(table) = &spec.settings {
        for (name, value) in table.get_ref() {
            let span = src.key_span(table.span(), name);
            let value = setting_value(src, span.clone(), &format!("settings.{name}"), value)?;
            base.set(name, &value)
                .map_err(|e| src.error(span, &format!("settings.{name}"), e))?;
        }
    }
    if spec.pipelines.get_ref().is_empty() {
        return Err(src.error(
            spec.pipelines.span(),
            "pipelines",
            "the study names no pipeline",
        ));
    }
    let mut out: Vec<(PipelineInfo, engine::Pipeline)> = Vec::new();
    for (i, p) in spec.pipelines.get_ref().iter().enumerate() {
        let label = p.name.get_ref();
        if label.is_empty() || label.contains(['|', ',', '\n']) {
            return Err(src.error(
                p.name.span(),
                &format!("pipelines[{i}].name"),
                "a pipeline's name must be non-empty, without `|` or `,`",
            ));
        }
        if out.iter().any(|(o, _)| &o.label == label) {
            return Err(src.error(
                p.name.span(),
                &format!("pipelines[{i}].name"),
                format!("there already is a pipeline called `{label}`"),
            ));
        }
        let mut builder = base.clone();
        let mut settings = BTreeMap::new();
        if let Some(table) = &p.settings {
            for (name, value) in table.get_ref() {
                let key = format!("pipelines[{i}].settings.{name}");
                let span = src.key_span(table.span(), name);
                let value = setting_value(src, span.clone(), &key, value)?;
                if name == "passes" {
                    return Err(src.error(span, &key, "name the passes with `passes = [...]`"));
                }
                builder
                    .set(name, &value)
                    .map_err(|e| src.error(span, &key, e))?;
                settings.insert(name.clone(), value);
            }
        }
        let passes = p
            .passes
            .as_ref()
            .map_or_else(Vec::new, |l| l.get_ref().clone());
        if let Some(list) = &p.passes {
            let key = format!("pipelines[{i}].passes");
            for pass in list.get_ref() {
                if warplift_codegen::passes::lookup(pass).is_none() {
                    let known: Vec<&str> = warplift_codegen::passes::REGISTRY
                        .iter()
                        .map(|p| p.name())
                        .collect();
                    return Err(src.error(
                        list.span(),
                        &key,
                        format!(
                            "unknown pass `{pass}`: this warplift has no such pass (passes: {})",
                            known.join(", ")
                        ),
                    ));
                }
            }
            builder
                .set("passes", &passes.join(","))
                .map_err(|e| src.error(list.span(), &key, e))?;
        }
        out.push((
            PipelineInfo {
                label: label.clone(),
                passes,
                settings,
                description: p.description.clone(),
            },
            engine::Pipeline {
                label: label.clone(),
                settings: builder.finish(),
            },
        ));
    }
    Ok(out)
}

/// A setting's value as a string.
fn setting_value(
    src: &Source,
    span: std::ops::Range<usize>,
    key: &str,
    value: &toml::Value,
) -> Result<String> {
    spec::scalar_string(value).ok_or_else(|| {
        src.error(
            span,
            key,
            format!(
                "a setting is a string, number or boolean, not {}",
                value.type_str()
            ),
        )
    })
}

/// The machine parameters a spec may set or sweep (`latency.global` for nested keys).
pub fn machine_params() -> Vec<String> {
    // Through JSON rather than TOML: the default limits are `u64::MAX`, which TOML's
    // 64-bit signed integers cannot hold, and only the keys matter here.
    fn keys(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let name = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    keys(&name, v, out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let mut out = Vec::new();
    if let Ok(default) = serde_json::to_value(MachineConfig::default()) {
        keys("", &default, &mut out);
    }
    out.sort();
    out
}

/// Nests dotted keys back into tables.
fn unflatten(flat: &BTreeMap<String, toml::Value>) -> toml::Table {
    let mut out = toml::Table::new();
    for (key, value) in flat {
        let mut table = &mut out;
        let parts: Vec<&str> = key.split('.').collect();
        for part in &parts[..parts.len() - 1] {
            let entry = table
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = match entry {
                toml::Value::Table(t) => t,
                _ => unreachable!("a parameter is either a table or a value"),
            };
        }
        table.insert(parts[parts.len() - 1].to_string(), value.clone());
    }
    out
}

/// The swept parameters and the machines of the sweep's cross product.
type Machines = (Vec<String>, Vec<(MachineInfo, MachineConfig)>);

/// The machines: `[machine]`, then every combination of the `[sweep]` values.
fn machines(src: &Source, spec: &Spec) -> Result<Machines> {
    let known = machine_params();
    let check = |table: &Spanned<toml::Table>, what: &str, name: &str| -> Result<()> {
        if known.iter().any(|k| k == name) {
            Ok(())
        } else {
            Err(src.error(
                src.key_span(table.span(), name),
                &format!("{what}.{name}"),
                format!(
                    "unknown machine parameter (parameters: {})",
                    known.join(", ")
                ),
            ))
        }
    };
    let mut base = BTreeMap::new();
    if let Some(table) = &spec.machine {
        for (name, value) in spec::flatten(table.get_ref()) {
            check(table, "machine", &name)?;
            base.insert(name, value);
        }
        let text = toml::to_string(&unflatten(&base))?;
        MachineConfig::from_toml_str(&text).map_err(|e| src.error(table.span(), "machine", e))?;
    }
    let mut axes: Vec<(String, Vec<toml::Value>)> = Vec::new();
    if let Some(table) = &spec.sweep {
        for (name, value) in spec::flatten(table.get_ref()) {
            check(table, "sweep", &name)?;
            let span = src.key_span(table.span(), &name);
            let values = match value {
                toml::Value::Array(a) if !a.is_empty() => a,
                toml::Value::Array(_) => {
                    return Err(src.error(span, &format!("sweep.{name}"), "the list is empty"))
                }
                other => {
                    return Err(src.error(
                        span,
                        &format!("sweep.{name}"),
                        format!(
                            "expected a list of values to sweep, found {}",
                            other.type_str()
                        ),
                    ))
                }
            };
            // Each value alone on the base machine, so the error names it.
            for v in &values {
                let mut one = base.clone();
                one.insert(name.clone(), v.clone());
                let text = toml::to_string(&unflatten(&one))?;
                MachineConfig::from_toml_str(&text).map_err(|e| {
                    src.error(
                        span.clone(),
                        &format!("sweep.{name}"),
                        format!("value {v}: {e}"),
                    )
                })?;
            }
            axes.push((name, values));
        }
    }
    let params: Vec<String> = axes.iter().map(|(n, _)| n.clone()).collect();
    let mut combos: Vec<Vec<toml::Value>> = vec![Vec::new()];
    for (_, values) in &axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(v.clone());
                    c
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for combo in combos {
        let mut flat = base.clone();
        let mut shown = BTreeMap::new();
        let mut label = Vec::new();
        for ((name, _), v) in axes.iter().zip(&combo) {
            flat.insert(name.clone(), v.clone());
            let text = spec::scalar_string(v).unwrap_or_else(|| v.to_string());
            label.push(format!("{name}={text}"));
            shown.insert(name.clone(), text);
        }
        let text = toml::to_string(&unflatten(&flat))?;
        let config = MachineConfig::from_toml_str(&text).map_err(|e| {
            let span = spec.sweep.as_ref().map_or(0..0, |s| s.span());
            src.error(
                span,
                "sweep",
                format!("the machine {}: {e}", label.join(" ")),
            )
        })?;
        let label = if label.is_empty() {
            "default".to_string()
        } else {
            label.join(" ")
        };
        out.push((
            MachineInfo {
                label,
                params: shown,
            },
            config,
        ));
    }
    Ok((params, out))
}

/// The machines whose parameters match `filter` (all when there is none).
fn select_machines(
    src: &Source,
    meta: &Meta,
    filter: Option<&Spanned<toml::Table>>,
    key: &str,
) -> Result<Vec<usize>> {
    let Some(filter) = filter else {
        return Ok((0..meta.machines.len()).collect());
    };
    let wanted = spec::flatten(filter.get_ref());
    for name in wanted.keys() {
        if !meta.params.contains(name) {
            return Err(src.error(
                filter.span(),
                key,
                format!(
                    "`{name}` is not a swept parameter (swept: {})",
                    if meta.params.is_empty() {
                        "none".to_string()
                    } else {
                        meta.params.join(", ")
                    }
                ),
            ));
        }
    }
    let chosen: Vec<usize> = meta
        .machines
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            wanted.iter().all(|(n, v)| {
                m.params.get(n).map(String::as_str) == spec::scalar_string(v).as_deref()
            })
        })
        .map(|(i, _)| i)
        .collect();
    if chosen.is_empty() {
        return Err(src.error(
            filter.span(),
            key,
            "no machine of the sweep has these values",
        ));
    }
    Ok(chosen)
}

/// The pipeline called `name`.
fn pipeline_index(src: &Source, meta: &Meta, name: &Spanned<String>, key: &str) -> Result<usize> {
    meta.pipelines
        .iter()
        .position(|p| &p.label == name.get_ref())
        .ok_or_else(|| {
            let have: Vec<&str> = meta.pipelines.iter().map(|p| p.label.as_str()).collect();
            src.error(
                name.span(),
                key,
                format!(
                    "no pipeline is called `{}` (have {})",
                    name.get_ref(),
                    have.join(", ")
                ),
            )
        })
}

/// The runs to trace, as (kernel, pipeline, machine).
fn traces(src: &Source, spec: &Spec, meta: &Meta) -> Result<BTreeSet<(usize, usize, usize)>> {
    let mut out = BTreeSet::new();
    for (i, t) in spec.traces.iter().enumerate() {
        let k = meta
            .kernels
            .iter()
            .position(|k| k == t.kernel.get_ref())
            .ok_or_else(|| {
                src.error(
                    t.kernel.span(),
                    &format!("traces[{i}].kernel"),
                    format!(
                        "no kernel is called `{}` (have {})",
                        t.kernel.get_ref(),
                        meta.kernels.join(", ")
                    ),
                )
            })?;
        let p = pipeline_index(src, meta, &t.pipeline, &format!("traces[{i}].pipeline"))?;
        for m in select_machines(
            src,
            meta,
            t.machine.as_ref(),
            &format!("traces[{i}].machine"),
        )? {
            out.insert((k, p, m));
        }
    }
    Ok(out)
}

/// A quantity's name, checked.
fn quantity(src: &Source, name: &Spanned<String>, key: &str) -> Result<String> {
    let n = name.get_ref();
    if n == SPEEDUP || rows::metric(n).is_some() {
        Ok(n.clone())
    } else {
        Err(src.error(
            name.span(),
            key,
            format!(
                "unknown quantity `{n}` (quantities: {})",
                rows::quantity_names()
            ),
        ))
    }
}

/// The plots: the spec's, or one of each kind that applies.
fn plots(src: &Source, spec: &Spec, meta: &Meta) -> Result<Vec<Plot>> {
    let non_baseline: Vec<usize> = (0..meta.pipelines.len())
        .filter(|&p| p != meta.baseline)
        .collect();
    let all_machines: Vec<usize> = (0..meta.machines.len()).collect();
    let mut out = Vec::new();
    if spec.plots.is_empty() {
        let swept: Vec<&String> = meta
            .params
            .iter()
            .filter(|p| {
                meta.machines
                    .iter()
                    .map(|m| &m.params[*p])
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect();
        let first = vec![0];
        if !non_baseline.is_empty() {
            out.push(Plot {
                kind: "bars".into(),
                metric: SPEEDUP.into(),
                name: "speedup-bars".into(),
                title: format!(
                    "Speedup over {} ({})",
                    meta.pipelines[meta.baseline].label, meta.machines[0].label
                ),
                group_by: None,
                x: None,
                machines: first.clone(),
                pipelines: non_baseline.clone(),
            });
            out.push(Plot {
                kind: "box".into(),
                metric: SPEEDUP.into(),
                name: "speedup-box".into(),
                title: format!(
                    "Speedup over {} by pipeline",
                    meta.pipelines[meta.baseline].label
                ),
                group_by: Some("pipeline".into()),
                x: None,
                machines: all_machines.clone(),
                pipelines: non_baseline.clone(),
            });
            out.push(Plot {
                kind: "scatter".into(),
                metric: "static_instructions".into(),
                name: "static-size".into(),
                title: "Static instructions before and after".into(),
                group_by: None,
                x: None,
                machines: first,
                pipelines: non_baseline.clone(),
            });
        }
        for p in swept {
            out.push(Plot {
                kind: "lines".into(),
                metric: "cycles".into(),
                name: format!("cycles-over-{}", file_safe(p)),
                title: format!("Cycles (mean over kernels) by {p}"),
                group_by: None,
                x: Some(p.clone()),
                machines: all_machines.clone(),
                pipelines: (0..meta.pipelines.len()).collect(),
            });
        }
        return Ok(out);
    }
    let mut names = BTreeSet::new();
    for (i, p) in spec.plots.iter().enumerate() {
        let key = |k: &str| format!("plots[{i}].{k}");
        let kind = p.kind.get_ref().as_str();
        if !["bars", "box", "scatter", "lines"].contains(&kind) {
            return Err(src.error(
                p.kind.span(),
                &key("kind"),
                format!("unknown kind of plot `{kind}` (bars, box, scatter, lines)"),
            ));
        }
        let metric = match &p.metric {
            Some(m) => quantity(src, m, &key("metric"))?,
            None if kind == "scatter" => "static_instructions".into(),
            None => SPEEDUP.into(),
        };
        let group_by = match (&p.group_by, kind) {
            (Some(g), "box") => {
                let n = g.get_ref();
                if !["pipeline", "kernel", "machine"].contains(&n.as_str())
                    && !meta.params.contains(n)
                {
                    return Err(src.error(
                        g.span(),
                        &key("group_by"),
                        format!("cannot group by `{n}` (pipeline, kernel, machine or a swept parameter)"),
                    ));
                }
                Some(n.clone())
            }
            (None, "box") => Some("pipeline".into()),
            (Some(g), _) => {
                return Err(src.error(g.span(), &key("group_by"), "only box plots are grouped"))
            }
            (None, _) => None,
        };
        let x = match (&p.x, kind) {
            (Some(x), "lines") => {
                if !meta.params.contains(x.get_ref()) {
                    return Err(src.error(
                        x.span(),
                        &key("x"),
                        format!(
                            "`{}` is not a swept parameter (swept: {})",
                            x.get_ref(),
                            meta.params.join(", ")
                        ),
                    ));
                }
                Some(x.get_ref().clone())
            }
            (None, "lines") => {
                return Err(src.error(
                    p.kind.span(),
                    &key("x"),
                    "a line plot needs `x`, a swept parameter",
                ))
            }
            (Some(x), _) => return Err(src.error(x.span(), &key("x"), "only line plots take `x`")),
            (None, _) => None,
        };
        let machines = select_machines(src, meta, p.machine.as_ref(), &key("machine"))?;
        let ratio = metric == SPEEDUP || kind == "scatter";
        let pipelines = match &p.pipelines {
            Some(list) => list
                .get_ref()
                .iter()
                .map(|n| {
                    let spanned = Spanned::new(list.span(), n.clone());
                    pipeline_index(src, meta, &spanned, &key("pipelines"))
                })
                .collect::<Result<Vec<_>>>()?,
            None if ratio => non_baseline.clone(),
            None => (0..meta.pipelines.len()).collect(),
        };
        let name = match &p.name {
            Some(n) => file_safe(n.get_ref()),
            None => format!("{i}-{kind}-{}", file_safe(&metric)),
        };
        if !names.insert(name.clone()) {
            return Err(src.error(
                p.kind.span(),
                &key("name"),
                format!("two plots are called `{name}`"),
            ));
        }
        let title = p.title.clone().unwrap_or_else(|| match kind {
            "scatter" => format!(
                "{metric}: {} (x) and each pipeline (y)",
                meta.pipelines[meta.baseline].label
            ),
            _ => format!("{kind} of {metric}"),
        });
        out.push(Plot {
            kind: kind.into(),
            metric,
            name,
            title,
            group_by,
            x,
            machines,
            pipelines,
        });
    }
    Ok(out)
}

/// The paper's numbers, checked.
fn claims(src: &Source, spec: &Spec, meta: &Meta) -> Result<Vec<Claim>> {
    let mut out = Vec::new();
    for (i, c) in spec.paper.iter().enumerate() {
        let key = |k: &str| format!("paper[{i}].{k}");
        let metric = quantity(src, &c.metric, &key("metric"))?;
        let pipeline = pipeline_index(src, meta, &c.pipeline, &key("pipeline"))?;
        let statistic = match &c.statistic {
            None => "geomean".to_string(),
            Some(s) if STATISTICS.contains(&s.get_ref().as_str()) => s.get_ref().clone(),
            Some(s) => {
                return Err(src.error(
                    s.span(),
                    &key("statistic"),
                    format!(
                        "unknown statistic `{}` ({})",
                        s.get_ref(),
                        STATISTICS.join(", ")
                    ),
                ))
            }
        };
        let kernels = match &c.kernels {
            None => (0..meta.kernels.len()).collect(),
            Some(list) => {
                let mut patterns = Vec::new();
                for p in list.get_ref() {
                    patterns.push(glob::Pattern::new(p).map_err(|e| {
                        src.error(list.span(), &key("kernels"), format!("`{p}`: {e}"))
                    })?);
                }
                let chosen: Vec<usize> = (0..meta.kernels.len())
                    .filter(|&k| patterns.iter().any(|p| p.matches(&meta.kernels[k])))
                    .collect();
                if chosen.is_empty() {
                    return Err(src.error(
                        list.span(),
                        &key("kernels"),
                        "no kernel of the study matches these patterns",
                    ));
                }
                chosen
            }
        };
        let machines = match &c.machine {
            Some(_) => select_machines(src, meta, c.machine.as_ref(), &key("machine"))?,
            None => vec![0],
        };
        out.push(Claim {
            what: c.what.clone(),
            paper: c.paper,
            metric,
            pipeline,
            statistic,
            machines,
            kernels,
        });
    }
    Ok(out)
}

/// Parses `I/N` (1 ≤ I ≤ N).
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| anyhow!("--shard {s:?}: expected I/N, e.g. 2/8"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| anyhow!("--shard {s:?}: I is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| anyhow!("--shard {s:?}: N is not a number"))?;
    if n == 0 || i == 0 || i > n {
        return Err(anyhow!("--shard {s:?}: expected 1 <= I <= N"));
    }
    Ok((i, n))
}

/// The runs of shard `i` of `n`: every `n`-th run from the `i`-th, so that each shard
/// gets its share of every kernel and pipeline.
pub fn shard(runs: usize, (i, n): (usize, usize)) -> Vec<usize> {
    (i - 1..runs).step_by(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_and_cover_the_runs() {
        let mut all: Vec<usize> = (1..=3).flat_map(|i| shard(10, (i, 3))).collect();
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(shard(10, (2, 3)), vec![1, 4, 7]);
        assert_eq!(parse_shard("2/8").unwrap(), (2, 8));
        for bad in ["0/2", "3/2", "x/2", "2", "1/0"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_lose_their_dot_dots() {
        assert_eq!(
            lexical(Path::new("studies/../tests/x.wir")),
            PathBuf::from("tests/x.wir")
        );
        assert_eq!(lexical(Path::new("./a/./b")), PathBuf::from("a/b"));
        assert_eq!(lexical(Path::new("../a")), PathBuf::from("../a"));
        assert_eq!(lexical(Path::new("/x/../y")), PathBuf::from("/y"));
    }

    #[test]
    fn machine_parameters_come_from_the_configuration() {
        let p = machine_params();
        assert!(p.contains(&"warp_width".to_string()));
        assert!(p.contains(&"latency.global".to_string()));
        assert!(p.contains(&"scheduler".to_string()));
    }
}
