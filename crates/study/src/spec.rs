//! Reading a study specification (`SPEC.toml`, the format of docs/studies.md) into typed
//! values, each with the place in the file it came from.
//!
//! The file's shape and types are checked by serde (unknown keys and wrong types are
//! errors); what only the rest of warplift can check (kernel files, passes, settings,
//! machine parameters) is checked by [`super::plan`], which reports through
//! [`Source::error`] the line and key of the offending value. Every error reads
//! `FILE:LINE: KEY: what is wrong`.

use anyhow::{anyhow, Result};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The text of a spec and where it came from, for error messages.
pub struct Source {
    /// The spec file.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

impl Source {
    /// The line (1-based) of byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// An error about the value at `span`, whose key is `key`.
    pub fn error(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl std::fmt::Display,
    ) -> anyhow::Error {
        anyhow!(
            "{}:{}: {key}: {message}",
            self.path.display(),
            self.line(span.start)
        )
    }

    /// The span of `key` in the table at `table` (its first occurrence as a key at the
    /// start of a line, up to the next table header: the span of a `[table]` is only its
    /// header), or the table's own span when it is not found.
    pub fn key_span(&self, table: Range<usize>, key: &str) -> Range<usize> {
        let start = table.start.min(self.text.len());
        let body = &self.text[start..];
        let last = key.rsplit('.').next().unwrap_or(key);
        let mut offset = start;
        for (i, line) in body.split_inclusive('\n').enumerate() {
            let trimmed = line.trim_start();
            if i > 0 && offset >= table.end && trimmed.starts_with('[') {
                break;
            }
            let trimmed = trimmed.trim_start_matches(['"', '\'', '{']).trim_start();
            let first = trimmed.split(['=', ' ', '"', '\'']).next().unwrap_or("");
            if first == key || first == last || first.ends_with(&format!(".{last}")) {
                return offset..offset + line.len();
            }
            // Inline tables: `settings = { name = 1 }` on one line.
            if line.contains(&format!("{{ {key} ")) || line.contains(&format!(", {key} ")) {
                return offset..offset + line.len();
            }
            offset += line.len();
        }
        table
    }
}

/// A string or a list of strings.
#[derive(Clone, Debug, PartialEq)]
pub struct OneOrMany(pub Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(OneOrMany(vec![s])),
            toml::Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    toml::Value::String(s) => Ok(s),
                    other => Err(D::Error::custom(format!(
                        "expected a string, found {}",
                        other.type_str()
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(OneOrMany),
            other => Err(D::Error::custom(format!(
                "expected a string or a list of strings, found {}",
                other.type_str()
            ))),
        }
    }
}

/// How a kernel is launched: a launch file, or a launch table written in the spec.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum LaunchSpec {
    /// A launch file, relative to the spec.
    File(String),
    /// A launch table (the keys of a launch file).
    Inline(toml::Table),
}

/// One `[[kernels]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// Files or glob patterns, relative to the spec.
    pub files: Spanned<OneOrMany>,
    /// Which kernel of each file (default: the launch's, or the file's only one).
    pub kernel: Option<Spanned<String>>,
    /// The kernel's name in the tables (default: the file's stem); only for one file.
    pub name: Option<Spanned<String>>,
    /// The launch (default: the launch file next to each kernel file, if any).
    pub launch: Option<Spanned<LaunchSpec>>,
    /// Block sizes (threads in x) to sweep, for kernels whose launch takes any.
    pub block: Option<Spanned<Vec<u32>>>,
}

/// One `[[pipelines]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    /// Its name in the tables.
    pub name: Spanned<String>,
    /// The optional passes, in order.
    pub passes: Option<Spanned<Vec<String>>>,
    /// Settings (`warplift settings`), on top of the study's.
    pub settings: Option<Spanned<toml::Table>>,
    /// A line saying what the pipeline is (for the tables' legend).
    pub description: Option<String>,
}

/// One `[[plots]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// `bars`, `box`, `scatter` or `lines`.
    pub kind: Spanned<String>,
    /// The quantity (a metric name, or `speedup`).
    pub metric: Option<Spanned<String>>,
    /// The file name (without `.svg`).
    pub name: Option<Spanned<String>>,
    /// The plot's title.
    pub title: Option<String>,
    /// Box plots: the column grouping the boxes (`pipeline`, `kernel`, `machine` or a
    /// swept parameter).
    pub group_by: Option<Spanned<String>>,
    /// Line plots: the swept parameter on the x axis.
    pub x: Option<Spanned<String>>,
    /// Only the machines with these parameter values.
    pub machine: Option<Spanned<toml::Table>>,
    /// Only these pipelines (default: all but the baseline for ratios, all otherwise).
    pub pipelines: Option<Spanned<Vec<String>>>,
}

/// One `[[traces]]` entry: the runs to record a timeline of.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The kernel.
    pub kernel: Spanned<String>,
    /// The pipeline.
    pub pipeline: Spanned<String>,
    /// Only the machines with these parameter values (default: every machine).
    pub machine: Option<Spanned<toml::Table>>,
}

/// One `[[paper]]` entry: a number the paper reports, shown next to ours.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSpec {
    /// What the number is (`Table 1: PTX instructions, AfOpt/Bf`).
    pub what: String,
    /// The paper's number.
    pub paper: f64,
    /// Our quantity: a metric name or `speedup`.
    pub metric: Spanned<String>,
    /// The pipeline compared with the baseline.
    pub pipeline: Spanned<String>,
    /// How kernels are combined: `geomean` of per-kernel ratios over the baseline
    /// (default), `total` ratio of sums, `mean` of the pipeline's values, `min` or `max`
    /// of the per-kernel ratios, or `max_increase`, the largest pipeline-minus-baseline
    /// difference.
    pub statistic: Option<Spanned<String>>,
    /// Only the kernels whose names match one of these glob patterns (default: all).
    pub kernels: Option<Spanned<Vec<String>>>,
    /// Only the machines with these parameter values (default: the first machine).
    pub machine: Option<Spanned<toml::Table>>,
}

/// A whole study specification.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The study's name (a word: it names the output directory).
    pub name: Spanned<String>,
    /// A title for the summary.
    pub title: Option<String>,
    /// What the study shows (Markdown, copied to the summary).
    pub description: Option<String>,
    /// The pipeline ratios and speedups are taken over (default: the first).
    pub baseline: Option<Spanned<String>>,
    /// The summary's metrics (default: cycles, warp- and thread-instructions, SIMT
    /// efficiency, redundant block executions, stack depth, static instructions,
    /// registers).
    pub metrics: Option<Spanned<Vec<String>>>,
    /// Settings for every pipeline.
    pub settings: Option<Spanned<toml::Table>>,
    /// The machine every run starts from (keys of a machine configuration file).
    pub machine: Option<Spanned<toml::Table>>,
    /// Machine parameters to sweep, each a list of values: the runs take the cross
    /// product.
    pub sweep: Option<Spanned<toml::Table>>,
    /// The kernels.
    pub kernels: Spanned<Vec<KernelSpec>>,
    /// The pipelines.
    pub pipelines: Spanned<Vec<PipelineSpec>>,
    /// The plots (default: one of each kind that applies).
    #[serde(default)]
    pub plots: Vec<PlotSpec>,
    /// The runs to trace.
    #[serde(default)]
    pub traces: Vec<TraceSpec>,
    /// The paper's numbers.
    #[serde(default)]
    pub paper: Vec<ClaimSpec>,
}

/// Parses the spec file at `path`.
pub fn read(path: &Path) -> Result<(Source, Spec)> {
    let text = crate::source::read_text(path)?;
    let source = Source {
        path: path.to_path_buf(),
        text,
    };
    let spec = parse(&source)?;
    Ok((source, spec))
}

/// Parses a spec's text; an error names the line, the key and what is wrong.
pub fn parse(source: &Source) -> Result<Spec> {
    toml::from_str::<Spec>(&source.text).map_err(|e| {
        let line = e.span().map_or(0, |s| source.line(s.start));
        let text = source
            .text
            .lines()
            .nth(line.saturating_sub(1))
            .unwrap_or("")
            .trim();
        let at = if text.is_empty() {
            String::new()
        } else {
            format!(" `{text}`:")
        };
        anyhow!(
            "{}:{line}:{at} {}",
            source.path.display(),
            e.message().trim()
        )
    })
}

/// A TOML scalar as the string a setting or a table cell takes.
pub fn scalar_string(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A table of TOML values flattened to dotted keys (`latency.global`), in key order.
pub fn flatten(table: &toml::Table) -> BTreeMap<String, toml::Value> {
    let mut out = BTreeMap::new();
    for (k, v) in table {
        match v {
            toml::Value::Table(t) => {
                for (inner, v) in flatten(t) {
                    out.insert(format!("{k}.{inner}"), v);
                }
            }
            other => {
                out.insert(k.clone(), other.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> Source {
        Source {
            path: PathBuf::from("s.toml"),
            text: text.to_string(),
        }
    }

    #[test]
    fn shape_errors_name_the_line_and_key() {
        let s = source("name = \"x\"\nkernels = []\npipelines = []\nbaseline = 3\n");
        let e = parse(&s).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:4: `baseline = 3`:"), "{e}");
        let s = source(
            "name = \"x\"\nkernels = []\npipelines = []\n[[plots]]\nkind = \"bars\"\ncolour = 1\n",
        );
        let e = parse(&s).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:6: `colour = 1`:"), "{e}");
        assert!(e.contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn keys_are_found_inside_their_table() {
        let text = "[sweep]\nwarp_width = [1]\nlatency.global = [2]\n\"sms\" = [3]\n";
        let s = source(text);
        let all = 0..text.len();
        assert_eq!(s.line(s.key_span(all.clone(), "latency.global").start), 3);
        assert_eq!(s.line(s.key_span(all.clone(), "sms").start), 4);
        assert_eq!(s.line(s.key_span(all, "warp_width").start), 2);
        let mut t = toml::Table::new();
        let mut lat = toml::Table::new();
        lat.insert("global".into(), toml::Value::Integer(1));
        t.insert("latency".into(), toml::Value::Table(lat));
        assert_eq!(
            flatten(&t).keys().collect::<Vec<_>>(),
            vec!["latency.global"]
        );
    }
}
