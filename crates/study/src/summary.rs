//! The study's numbers gathered for tables and plots: a [`Results`] index of rows by
//! kernel, pipeline and machine, speedups and ratios over the baseline, geometric means,
//! the paper's numbers next to ours, and the Markdown summary (`summary.md`).
//!
//! Speedup is the baseline's cycles over the pipeline's, per kernel and machine; the
//! ratio of another metric is the pipeline's value over the baseline's. Summary rows
//! take the geometric mean of the kernels that have a value in every column shown.

use crate::plan::{Claim, Meta};
use crate::rows::{self, Row, SPEEDUP};
use std::fmt::Write as _;

/// The rows of a study by kernel, pipeline and machine.
pub struct Results<'a> {
    /// The study.
    pub meta: &'a Meta,
    /// The row of kernel k, pipeline p, machine m at `(k * pipelines + p) * machines + m`.
    by_run: Vec<Option<&'a Row>>,
}

/// The geometric mean of the positive values, if any.
pub fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .filter(|v| *v > 0.0)
        .fold((0.0, 0u32), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / f64::from(n)).exp())
}

/// A value for a table cell: integers plainly, others with three decimals.
pub fn fmt_value(v: f64) -> String {
    let mut s = String::new();
    push_value(&mut s, v);
    s
}

impl<'a> Results<'a> {
    /// Indexes `rows` (aligned with `meta.runs`; `None` for a run without a result).
    pub fn new(meta: &'a Meta, rows: &'a [Option<Row>]) -> Results<'a> {
        let (np, nm) = (meta.pipelines.len(), meta.machines.len());
        let mut by_run = vec![None; meta.kernels.len() * np * nm];
        for (run, row) in meta.runs.iter().zip(rows) {
            by_run[(run.kernel * np + run.pipeline) * nm + run.machine] = row.as_ref();
        }
        Results { meta, by_run }
    }

    /// The row of a run.
    pub fn row(&self, k: usize, p: usize, m: usize) -> Option<&'a Row> {
        let (np, nm) = (self.meta.pipelines.len(), self.meta.machines.len());
        if p >= np || m >= nm {
            return None;
        }
        self.by_run.get((k * np + p) * nm + m).copied().flatten()
    }

    /// The rows there are.
    fn present(&self) -> impl Iterator<Item = &'a Row> + '_ {
        self.by_run.iter().flatten().copied()
    }

    /// The quantity `q` (a metric or [`SPEEDUP`]) of a run.
    pub fn value(&self, q: &str, k: usize, p: usize, m: usize) -> Option<f64> {
        if q == SPEEDUP {
            let base = self.row(k, self.meta.baseline, m)?.get("cycles")?;
            let this = self.row(k, p, m)?.get("cycles")?;
            (base > 0.0 && this > 0.0).then(|| base / this)
        } else {
            self.row(k, p, m)?.get(q)
        }
    }

    /// The quantity as a ratio over the baseline (speedup is one already).
    pub fn ratio(&self, q: &str, k: usize, p: usize, m: usize) -> Option<f64> {
        if q == SPEEDUP {
            return self.value(q, k, p, m);
        }
        let base = self.value(q, k, self.meta.baseline, m)?;
        let this = self.value(q, k, p, m)?;
        (base > 0.0 && this > 0.0).then(|| this / base)
    }

    /// Our number for a claim of the paper.
    pub fn claim(&self, c: &Claim) -> Option<f64> {
        let b = self.meta.baseline;
        let pairs = || {
            c.machines
                .iter()
                .flat_map(move |&m| c.kernels.iter().map(move |&k| (k, m)))
        };
        let ratios = || pairs().filter_map(|(k, m)| self.ratio(&c.metric, k, c.pipeline, m));
        match c.statistic.as_str() {
            "total" => {
                let (mut base, mut this) = (0.0, 0.0);
                for (k, m) in pairs() {
                    if let (Some(x), Some(y)) = (
                        self.value(&c.metric, k, b, m),
                        self.value(&c.metric, k, c.pipeline, m),
                    ) {
                        base += x;
                        this += y;
                    }
                }
                (base > 0.0).then(|| this / base)
            }
            "mean" => {
                let v: Vec<f64> = pairs()
                    .filter_map(|(k, m)| self.value(&c.metric, k, c.pipeline, m))
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            }
            "min" => ratios().reduce(f64::min),
            "max" => ratios().reduce(f64::max),
            "max_increase" => pairs()
                .filter_map(|(k, m)| {
                    let base = self.value(&c.metric, k, b, m)?;
                    Some(self.value(&c.metric, k, c.pipeline, m)? - base)
                })
                .reduce(f64::max),
            _ => geomean(ratios()),
        }
    }

    /// Appends a run's cell to `out`: its value, or why there is none.
    fn push_cell(&self, out: &mut String, q: &str, (k, p, m): (usize, usize, usize), ratio: bool) {
        match self.row(k, p, m) {
            None => out.push_str("missing"),
            Some(r) if r.failed() => out.push_str(&r.status.to_uppercase()),
            Some(_) => match self.value(q, k, p, m) {
                None => out.push('-'),
                Some(v) => {
                    push_value(out, v);
                    if ratio && p != self.meta.baseline {
                        if let Some(r) = self.ratio(q, k, p, m) {
                            out.push_str(" (");
                            push_fixed(out, r, 2);
                            out.push_str("x)");
                        }
                    }
                }
            },
        }
    }

    /// A Markdown table of `q`, kernels by pipelines, on machine `m`, with a geomean row.
    fn table(&self, q: &str, m: usize, pipelines: &[usize]) -> String {
        let meta = self.meta;
        let mut out = String::from("| kernel |");
        for &p in pipelines {
            let _ = write!(out, " {} |", meta.pipelines[p].label);
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(pipelines.len()));
        out.push('\n');
        let with_ratio = q != SPEEDUP;
        // Cells are appended in place (no string per cell): a study's summary has
        // thousands of them.
        for (k, name) in meta.kernels.iter().enumerate() {
            out.push_str("| ");
            out.push_str(name);
            out.push_str(" |");
            for &p in pipelines {
                out.push(' ');
                self.push_cell(&mut out, q, (k, p, m), with_ratio);
                out.push_str(" |");
            }
            out.push('\n');
        }
        // Geomean of the kernels with a value in every column.
        let complete: Vec<usize> = (0..meta.kernels.len())
            .filter(|&k| pipelines.iter().all(|&p| self.ratio(q, k, p, m).is_some()))
            .collect();
        let _ = write!(out, "| geomean ({} kernels) |", complete.len());
        for &p in pipelines {
            let g = if with_ratio {
                geomean(complete.iter().filter_map(|&k| self.value(q, k, p, m)))
            } else {
                geomean(complete.iter().filter_map(|&k| self.ratio(q, k, p, m)))
            };
            let r = geomean(complete.iter().filter_map(|&k| self.ratio(q, k, p, m)));
            out.push(' ');
            match (g, r, with_ratio && p != meta.baseline) {
                (Some(g), Some(r), true) => {
                    push_mean(&mut out, g);
                    out.push_str(" (");
                    push_fixed(&mut out, r, 2);
                    out.push_str("x)");
                }
                (Some(g), _, _) => push_mean(&mut out, g),
                _ => out.push('-'),
            }
            out.push_str(" |");
        }
        out.push('\n');
        out
    }

    /// The Markdown summary.
    pub fn markdown(&self) -> String {
        let meta = self.meta;
        let mut out = String::new();
        let _ = writeln!(out, "# {}\n", meta.title);
        if !meta.description.trim().is_empty() {
            let _ = writeln!(out, "{}\n", meta.description.trim());
        }
        let count = |s: &str| self.present().filter(|r| r.status == s).count();
        let missing = meta.runs.len() - self.present().count();
        let _ = writeln!(
            out,
            "{} runs: {} kernels x {} pipelines x {} machines; {} ok, {} static only, {} failed, \
             {} mismatched{}.\n",
            meta.runs.len(),
            meta.kernels.len(),
            meta.pipelines.len(),
            meta.machines.len(),
            count(rows::STATUS_OK),
            count(rows::STATUS_STATIC),
            count(rows::STATUS_FAILED),
            count(rows::STATUS_MISMATCH),
            if missing > 0 {
                format!(", {missing} MISSING")
            } else {
                String::new()
            }
        );
        out.push_str(
            "## Pipelines\n\n| pipeline | passes | settings | description |\n|---|---|---|---|\n",
        );
        for (i, p) in meta.pipelines.iter().enumerate() {
            let settings: Vec<String> =
                p.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(
                out,
                "| {}{} | {} | {} | {} |",
                p.label,
                if i == meta.baseline {
                    " (baseline)"
                } else {
                    ""
                },
                if p.passes.is_empty() {
                    "-".into()
                } else {
                    p.passes.join(", ")
                },
                if settings.is_empty() {
                    "-".into()
                } else {
                    settings.join(", ")
                },
                p.description.as_deref().unwrap_or("")
            );
        }
        if meta.machines.len() > 1 || !meta.params.is_empty() {
            let _ = writeln!(
                out,
                "\nMachines (swept: {}): {}.",
                meta.params.join(", "),
                meta.machines
                    .iter()
                    .map(|m| format!("`{}`", m.label))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !meta.claims.is_empty() {
            out.push_str("\n## The paper's numbers and ours\n\n| what | pipeline | quantity | paper | warplift |\n|---|---|---|---:|---:|\n");
            for c in &meta.claims {
                let ours = self.claim(c).map_or_else(|| "-".into(), fmt_value);
                let over = if c.kernels.len() == meta.kernels.len() {
                    String::new()
                } else {
                    format!(" over {} kernels", c.kernels.len())
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} of {}{over} | {} | {ours} |",
                    c.what,
                    meta.pipelines[c.pipeline].label,
                    c.statistic,
                    c.metric,
                    fmt_value(c.paper),
                );
            }
        }
        let all: Vec<usize> = (0..meta.pipelines.len()).collect();
        let others: Vec<usize> = all
            .iter()
            .copied()
            .filter(|&p| p != meta.baseline)
            .collect();
        let dynamic = self.present().any(|r| r.status == rows::STATUS_OK);
        if dynamic && !others.is_empty() {
            let _ = writeln!(
                out,
                "\n## Speedup over {} (its cycles / the pipeline's)\n",
                meta.pipelines[meta.baseline].label
            );
            for (m, machine) in meta.machines.iter().enumerate() {
                if meta.machines.len() > 1 {
                    let _ = writeln!(out, "Machine `{}`:\n", machine.label);
                }
                out.push_str(&self.table(SPEEDUP, m, &others));
                out.push('\n');
            }
        }
        for q in &meta.metrics {
            let Some(metric) = rows::metric(q) else {
                continue;
            };
            if metric.dynamic && !dynamic {
                continue;
            }
            let _ = writeln!(
                out,
                "\n## {} (ratio over {})\n",
                metric.title, meta.pipelines[meta.baseline].label
            );
            // Static numbers do not depend on the machine.
            let machines = if metric.dynamic {
                meta.machines.len()
            } else {
                1
            };
            for m in 0..machines {
                if machines > 1 {
                    let _ = writeln!(out, "Machine `{}`:\n", meta.machines[m].label);
                }
                out.push_str(&self.table(q, m, &all));
                out.push('\n');
            }
        }
        let failed: Vec<&Row> = meta
            .runs
            .iter()
            .filter_map(|r| self.row(r.kernel, r.pipeline, r.machine))
            .filter(|r| r.failed())
            .collect();
        if !failed.is_empty() {
            let _ = writeln!(out, "\n## Failed runs ({})\n", failed.len());
            for r in failed {
                let _ = writeln!(
                    out,
                    "- {} / {} / {}: {}: {}",
                    r.kernel,
                    r.pipeline,
                    r.machine,
                    r.status,
                    r.error.as_deref().unwrap_or("").replace('\n', " ")
                );
            }
        }
        if missing > 0 {
            let _ = writeln!(out, "\n## Missing runs ({missing})\n");
            for r in &meta.runs {
                if self.row(r.kernel, r.pipeline, r.machine).is_none() {
                    let _ = writeln!(out, "- {}", r.key);
                }
            }
        }
        out
    }
}

/// Appends a mean: one decimal for large values, three for small ones.
fn push_mean(out: &mut String, v: f64) {
    push_fixed(out, v, if v.abs() >= 100.0 { 1 } else { 3 });
}

/// Appends a value as [`fmt_value`] writes it.
fn push_value(out: &mut String, v: f64) {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        push_fixed(out, v, 3);
    }
}

/// Appends `v` with `decimals` digits after the point (at most 6), rounded half away from
/// zero: integer arithmetic, several times cheaper than `{:.N}` (a summary formats
/// thousands of numbers). Values too large for it are left to `{:.N}`.
pub fn push_fixed(out: &mut String, v: f64, decimals: u32) {
    let decimals = decimals.min(6);
    let scale = 10u64.pow(decimals);
    let scaled = (v.abs() * scale as f64).round();
    if !scaled.is_finite() || scaled >= 1e15 {
        let _ = write!(out, "{v:.prec$}", prec = decimals as usize);
        return;
    }
    let n = scaled as u64;
    if v < 0.0 && n != 0 {
        out.push('-');
    }
    let _ = write!(out, "{}", n / scale);
    if decimals > 0 {
        let _ = write!(out, ".{:0width$}", n % scale, width = decimals as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomeans_skip_what_has_no_value() {
        assert_eq!(geomean([]), None);
        assert!((geomean([2.0, 8.0, 0.0]).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(fmt_value(3.0), "3");
        assert_eq!(fmt_value(0.5), "0.500");
        let fixed = |v: f64, d: u32| {
            let mut s = String::new();
            push_fixed(&mut s, v, d);
            s
        };
        assert_eq!(fixed(1.23456, 3), "1.235");
        assert_eq!(fixed(0.996, 2), "1.00");
        assert_eq!(fixed(-0.5, 1), "-0.5");
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(7.0, 0), "7");
        assert_eq!(fixed(1e300, 2), format!("{:.2}", 1e300));
        assert_eq!(fixed(f64::NAN, 2), "NaN");
    }
}
