//! The report's output: plain-text tables laid out like the paper's Tables 1, 2 and 4,
//! and the same numbers as one JSON object.
//!
//! Table 1 has the static numbers, one column per configuration for each quantity and an
//! `incr` column, the last configuration over the first (the paper's AfOpt/Bf); Table 2
//! the dynamic numbers, one row per kernel and configuration; Table 4 the
//! warp-instructions and redundant block executions per configuration. Each ends with a
//! summary row: geometric means for Table 1 (of the kernels every column compiled), sums
//! for the counts of Tables 2 and 4, the aggregate SIMT efficiency and the geometric mean
//! of the `incr` ratios.

use super::kernels::KernelReport;
use super::Column;
use serde_json::{json, Value};
use std::fmt::Write as _;
use warplift_emu::MachineConfig;
use warplift_study::measure::{Dynamic, Outcome, Ptxas, Static};

/// Everything the report shows.
pub struct Report<'a> {
    /// The configurations.
    pub columns: &'a [Column],
    /// The kernels, in file order.
    pub kernels: &'a [KernelReport],
    /// The machine of the runs.
    pub config: &'a MachineConfig,
    /// The `linearize_regions` mode of the columns.
    pub regions: &'a str,
    /// Whether ptxas ran.
    pub ptxas: &'a Ptxas,
}

/// A plain-text table: a first, left-aligned column of names, then right-aligned
/// numeric columns under group titles.
struct Table {
    /// Group titles and how many columns each spans (the name column excluded).
    groups: Vec<(String, usize)>,
    /// Column headings, the name column's first.
    heads: Vec<String>,
    /// Body rows, then (after a rule) the summary rows.
    rows: Vec<Vec<String>>,
    summary: Vec<Vec<String>>,
}

impl Table {
    fn new(name_head: &str) -> Table {
        Table {
            groups: Vec::new(),
            heads: vec![name_head.to_string()],
            rows: Vec::new(),
            summary: Vec::new(),
        }
    }

    fn group(&mut self, title: &str, heads: impl IntoIterator<Item = String>) {
        let before = self.heads.len();
        self.heads.extend(heads);
        self.groups
            .push((title.to_string(), self.heads.len() - before));
    }

    fn render(&self) -> String {
        let ncols = self.heads.len();
        let mut widths: Vec<usize> = self.heads.iter().map(|h| h.chars().count()).collect();
        for row in self.rows.iter().chain(&self.summary) {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        // A group's title must fit over its columns: widen them evenly if not.
        let mut col = 1;
        for (title, span) in &self.groups {
            let span_width: usize =
                widths[col..col + span].iter().sum::<usize>() + 2 * span.saturating_sub(1);
            let need = title.chars().count();
            if need > span_width && *span > 0 {
                let extra = need - span_width;
                for (i, w) in widths[col..col + span].iter_mut().enumerate() {
                    *w += extra / span + usize::from(i < extra % span);
                }
            }
            col += span;
        }
        let mut out = String::new();
        if self.groups.iter().any(|(t, _)| !t.is_empty()) {
            let mut line = " ".repeat(widths[0]);
            let mut col = 1;
            for (title, span) in &self.groups {
                let span_width: usize =
                    widths[col..col + span].iter().sum::<usize>() + 2 * span.saturating_sub(1);
                let _ = write!(line, " | {title:^span_width$}");
                col += span;
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        let line = |cells: &[String]| {
            let mut line = String::new();
            let mut col = 1;
            let _ = write!(line, "{:<w$}", cells[0], w = widths[0]);
            for (_, span) in &self.groups {
                line.push_str(" |");
                for (i, w) in widths[col..col + span].iter().enumerate() {
                    let cell = cells.get(col + i).map(String::as_str).unwrap_or("");
                    if i > 0 {
                        line.push(' ');
                    }
                    let _ = write!(line, " {cell:>w$}");
                }
                col += span;
            }
            line.trim_end().to_string() + "\n"
        };
        out.push_str(&line(&self.heads));
        let rule: String = {
            let mut r = "-".repeat(widths[0]);
            let mut col = 1;
            for (_, span) in &self.groups {
                let span_width: usize =
                    widths[col..col + span].iter().sum::<usize>() + 2 * span.saturating_sub(1);
                r.push_str("-+-");
                r.push_str(&"-".repeat(span_width));
                col += span;
            }
            r + "\n"
        };
        out.push_str(&rule);
        for row in &self.rows {
            debug_assert_eq!(row.len(), ncols);
            out.push_str(&line(row));
        }
        if !self.summary.is_empty() {
            out.push_str(&rule);
            for row in &self.summary {
                out.push_str(&line(row));
            }
        }
        out
    }
}

/// The geometric mean of the positive values, if any.
fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .filter(|v| *v > 0.0)
        .fold((0.0, 0u32), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / f64::from(n)).exp())
}

/// `last / first`, when both are positive.
fn ratio(first: f64, last: f64) -> Option<f64> {
    (first > 0.0 && last > 0.0).then(|| last / first)
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{r:.2}"))
}

fn fmt_mean(m: Option<f64>) -> String {
    m.map_or_else(|| "-".to_string(), |m| format!("{m:.1}"))
}

/// A kernel's row name: `file.wir` for a file's only kernel, else `file.wir:%kernel`.
fn row_name(k: &KernelReport, kernels: &[KernelReport]) -> String {
    let file = k.file.file_stem().map_or_else(
        || k.file.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let shared = kernels.iter().filter(|o| o.file == k.file).count() > 1;
    if shared {
        format!("{file}:%{}", k.kernel)
    } else {
        file
    }
}

impl Report<'_> {
    fn labels(&self) -> impl Iterator<Item = String> + '_ {
        self.columns.iter().map(|c| c.label.clone())
    }

    fn incr_head(&self) -> String {
        "incr".to_string()
    }

    /// The report as text: a heading, Tables 1, 1b, 2 and 4, and notes.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let labels: Vec<String> = self.labels().collect();
        let _ = writeln!(
            out,
            "warplift report: {} kernels; columns {}; linearize_regions={}; warp width {}",
            self.kernels.len(),
            labels.join(", "),
            self.regions,
            self.config.warp_width
        );
        for c in self.columns {
            let mut what = if c.passes.is_empty() {
                "no optional pass".to_string()
            } else {
                format!("passes={}", c.passes)
            };
            for (n, v) in &c.settings {
                let _ = write!(what, ", {n}={v}");
            }
            let _ = writeln!(out, "  {:>6}: {what}", c.label);
        }
        let (first, last) = (labels.first(), labels.last());
        let incr = match (first, last) {
            (Some(f), Some(l)) => format!("incr = {l} / {f}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "\nTable 1: final machine code (instructions, blocks, registers of all classes \
             with the reserved ones{}); {incr}",
            if matches!(self.ptxas, Ptxas::At(_)) {
                "; ptxas: registers ptxas allocates"
            } else {
                ""
            }
        );
        out.push_str(&self.table1().render());
        let _ = writeln!(
            out,
            "\nTable 1b: registers per class (b32/b64/pred, reserved included) and spill + \
             reload instructions"
        );
        out.push_str(&self.table1b().render());
        let run = self.kernels.iter().any(|k| k.launched);
        if run {
            let _ = writeln!(
                out,
                "\nTable 2: emulator runs, memory checked against the reference interpreter\n  \
                 warp-insts: one per warp per issue; thread-insts: lanes that did the work;\n  \
                 SIMT eff = thread-insts / (warp-insts x {}); stack: the deepest reconvergence \
                 stack\n  on the machine CFG the emulator runs (edge-split and guard blocks \
                 included);\n  IR stack: the same on the program's CFG, by an IPDOM stack \
                 model replaying the lanes' paths:\n  the IR CFG (interpreter's paths) where \
                 the pipeline ends in IR; after a machine pass the\n  linearized CFG, the \
                 machine CFG without its edge-split blocks (emulator's paths);\n  \
                 redundant: per warp and IR block, executions beyond the busiest lane's, \
                 summed",
                self.config.warp_width
            );
            out.push_str(&self.table2().render());
            let _ = writeln!(
                out,
                "\nTable 4: warp-instructions executed (the paper's \"instructions executed\" \
                 are warp-level) and redundant block executions per configuration; {incr}"
            );
            out.push_str(&self.table4().render());
        }
        let not_run: Vec<String> = self
            .kernels
            .iter()
            .filter(|k| !k.launched)
            .map(|k| row_name(k, self.kernels))
            .collect();
        if !not_run.is_empty() {
            let _ = writeln!(
                out,
                "\nNot run (no launch file, or not the kernel it launches): {}",
                not_run.join(", ")
            );
        }
        match self.ptxas {
            Ptxas::NotFound => {
                let _ = writeln!(
                    out,
                    "\nptxas: not found (set WARPLIFT_PTXAS or run scripts/install-ptxas.sh); \
                     its register counts are left out"
                );
            }
            Ptxas::At(path) => {
                let _ = writeln!(out, "\nptxas: {}", path.display());
            }
            Ptxas::NotAsked => {}
        }
        let failures: Vec<String> = self.kernels.iter().flat_map(|k| k.failures()).collect();
        if !failures.is_empty() {
            let _ = writeln!(
                out,
                "\n!!! {} FAILED OR MISMATCHED RUNS: their numbers are not shown !!!",
                failures.len()
            );
            for f in failures {
                let _ = writeln!(out, "  {f}");
            }
        }
        out
    }

    /// Table 1: instructions, blocks, registers (and ptxas registers) per column.
    fn table1(&self) -> Table {
        type Get = fn(&Static) -> Option<f64>;
        let mut quantities: Vec<(&str, Get)> = vec![
            ("instructions", |s| Some(s.insts as f64)),
            ("blocks", |s| Some(s.blocks as f64)),
            ("registers", |s| Some(f64::from(s.regs_total()))),
        ];
        if matches!(self.ptxas, Ptxas::At(_)) {
            quantities.push(("ptxas registers", |s| match &s.ptxas_regs {
                Some(Ok(n)) => Some(f64::from(*n)),
                _ => None,
            }));
        }
        let mut t = Table::new("kernel");
        for (title, _) in &quantities {
            t.group(title, self.labels().chain([self.incr_head()]));
        }
        let n = self.columns.len();
        // Per quantity and column, the values of the kernels every column compiled; and
        // the ratios.
        let mut values = vec![vec![Vec::new(); n]; quantities.len()];
        let mut ratios = vec![Vec::new(); quantities.len()];
        for k in self.kernels {
            let mut row = vec![row_name(k, self.kernels)];
            let all_ok = k.columns.iter().all(|m| m.static_.is_ok());
            for (q, (_, get)) in quantities.iter().enumerate() {
                let got: Vec<Option<f64>> = k
                    .columns
                    .iter()
                    .map(|m| m.static_.as_ref().ok().and_then(get))
                    .collect();
                for (c, v) in got.iter().enumerate() {
                    row.push(match (v, &k.columns[c].static_) {
                        (Some(v), _) => format!("{v}"),
                        (None, Err(_)) => "error".into(),
                        (None, Ok(_)) => "-".into(),
                    });
                    if let (Some(v), true) = (v, all_ok) {
                        values[q][c].push(*v);
                    }
                }
                let r = match (got.first(), got.last()) {
                    (Some(Some(f)), Some(Some(l))) => ratio(*f, *l),
                    _ => None,
                };
                if let Some(r) = r {
                    ratios[q].push(r);
                }
                row.push(fmt_ratio(r));
            }
            t.rows.push(row);
        }
        let mut summary = vec!["geomean".to_string()];
        for (values, ratios) in values.iter().zip(&ratios) {
            for v in values {
                summary.push(fmt_mean(geomean(v.iter().copied())));
            }
            summary.push(fmt_ratio(geomean(ratios.iter().copied())));
        }
        t.summary.push(summary);
        t
    }

    /// Table 1b: registers per class and spill code per column.
    fn table1b(&self) -> Table {
        let mut t = Table::new("kernel");
        t.group("registers b32/b64/pred", self.labels());
        t.group("spills + reloads", self.labels());
        for k in self.kernels {
            let mut row = vec![row_name(k, self.kernels)];
            for m in &k.columns {
                row.push(match &m.static_ {
                    Ok(s) => format!("{}/{}/{}", s.regs[0], s.regs[1], s.regs[2]),
                    Err(_) => "error".into(),
                });
            }
            for m in &k.columns {
                row.push(match &m.static_ {
                    Ok(s) => (s.spills + s.reloads).to_string(),
                    Err(_) => "error".into(),
                });
            }
            t.rows.push(row);
        }
        t
    }

    /// Table 2: one row per launched kernel and column.
    fn table2(&self) -> Table {
        let mut t = Table::new("kernel");
        t.group("", ["config".to_string()]);
        t.group(
            "",
            [
                "cycles",
                "warp-insts",
                "thread-insts",
                "SIMT eff",
                "stack",
                "IR stack",
                "redundant",
            ]
            .map(String::from),
        );
        let n = self.columns.len();
        let mut totals = vec![(0u64, 0u64, 0u64, 0u64, 0u64); n];
        // The deepest IR-CFG stack per column, when every kernel had one.
        let mut ir_totals: Vec<Option<u64>> = vec![Some(0); n];
        let mut complete = vec![true; n];
        for k in self.kernels.iter().filter(|k| k.launched) {
            for (c, (m, column)) in k.columns.iter().zip(self.columns).enumerate() {
                let name = if c == 0 {
                    row_name(k, self.kernels)
                } else {
                    String::new()
                };
                let mut row = vec![name, column.label.clone()];
                match &m.outcome {
                    Outcome::Ran(d) => {
                        let s = &d.stats;
                        row.extend([
                            s.cycles.to_string(),
                            s.warp_instructions.to_string(),
                            s.thread_instructions.to_string(),
                            format!("{:.1}%", s.simt_efficiency * 100.0),
                            s.max_stack_depth.to_string(),
                            match k.ir_stack.get(c) {
                                Some(Some(Ok(n))) => n.to_string(),
                                Some(Some(Err(_))) => "error".into(),
                                _ => "-".into(),
                            },
                            d.redundant().to_string(),
                        ]);
                        ir_totals[c] = match (ir_totals[c], k.ir_stack.get(c)) {
                            (Some(t), Some(Some(Ok(n)))) => Some(t.max(*n)),
                            _ => None,
                        };
                        let t = &mut totals[c];
                        t.0 += s.cycles;
                        t.1 += s.warp_instructions;
                        t.2 += s.thread_instructions;
                        t.3 = t.3.max(s.max_stack_depth);
                        t.4 += d.redundant();
                    }
                    other => {
                        complete[c] = false;
                        let what = match other {
                            Outcome::Mismatch(_) => "MISMATCH",
                            Outcome::Failed(_) => "FAILED",
                            _ => "not run",
                        };
                        row.push(what.to_string());
                        row.extend((0..6).map(|_| String::new()));
                    }
                }
                t.rows.push(row);
            }
        }
        let width = f64::from(self.config.warp_width);
        for (c, column) in self.columns.iter().enumerate() {
            let (cycles, warp, thread, stack, redundant) = totals[c];
            let eff = if warp > 0 {
                format!("{:.1}%", thread as f64 / (warp as f64 * width) * 100.0)
            } else {
                "-".into()
            };
            let name = match (c, complete[c]) {
                (0, true) => "total",
                (0, false) => "total (incomplete)",
                _ => "",
            };
            t.summary.push(vec![
                name.to_string(),
                column.label.clone(),
                cycles.to_string(),
                warp.to_string(),
                thread.to_string(),
                eff,
                stack.to_string(),
                ir_totals[c].map_or("-".into(), |d| d.to_string()),
                redundant.to_string(),
            ]);
        }
        t
    }

    /// Table 4: warp-instructions and redundant block executions per column.
    fn table4(&self) -> Table {
        type Get = fn(&Dynamic) -> u64;
        let quantities: [(&str, Get); 2] = [
            ("warp-instructions", |d| d.stats.warp_instructions),
            ("redundant block executions", Dynamic::redundant),
        ];
        let mut t = Table::new("kernel");
        t.group(quantities[0].0, self.labels().chain([self.incr_head()]));
        t.group(quantities[1].0, self.labels());
        let n = self.columns.len();
        let mut totals = vec![vec![0u64; n]; 2];
        let mut ratios = Vec::new();
        for k in self.kernels.iter().filter(|k| k.launched) {
            let mut row = vec![row_name(k, self.kernels)];
            for (q, (_, get)) in quantities.iter().enumerate() {
                let got: Vec<Option<u64>> = k
                    .columns
                    .iter()
                    .map(|m| match &m.outcome {
                        Outcome::Ran(d) => Some(get(d)),
                        _ => None,
                    })
                    .collect();
                for (c, (v, m)) in got.iter().zip(&k.columns).enumerate() {
                    row.push(match (v, &m.outcome) {
                        (Some(v), _) => {
                            totals[q][c] += v;
                            v.to_string()
                        }
                        (None, Outcome::Mismatch(_)) => "MISMATCH".into(),
                        (None, _) => "FAILED".into(),
                    });
                }
                if q == 0 {
                    let r = match (got.first(), got.last()) {
                        (Some(Some(f)), Some(Some(l))) => ratio(*f as f64, *l as f64),
                        _ => None,
                    };
                    ratios.extend(r);
                    row.push(fmt_ratio(r));
                }
            }
            t.rows.push(row);
        }
        let mut summary = vec!["total; incr: geomean".to_string()];
        for (q, totals) in totals.iter().enumerate() {
            summary.extend(totals.iter().map(u64::to_string));
            if q == 0 {
                summary.push(fmt_ratio(geomean(ratios.iter().copied())));
            }
        }
        t.summary.push(summary);
        t
    }

    /// The report as one JSON object.
    pub fn json(&self) -> Value {
        let columns: Vec<Value> = self
            .columns
            .iter()
            .map(|c| {
                let settings: serde_json::Map<String, Value> = c
                    .settings
                    .iter()
                    .map(|(n, v)| (n.clone(), Value::String(v.clone())))
                    .collect();
                json!({ "label": c.label, "passes": c.passes, "settings": settings })
            })
            .collect();
        let kernels: Vec<Value> = self
            .kernels
            .iter()
            .map(|k| {
                let per_column: Vec<Value> = k
                    .columns
                    .iter()
                    .zip(self.columns)
                    .enumerate()
                    .map(|(ci, (m, c))| {
                        let static_ = match &m.static_ {
                            Ok(s) => json!({
                                "instructions": s.insts,
                                "blocks": s.blocks,
                                "registers": {
                                    "b32": s.regs[0],
                                    "b64": s.regs[1],
                                    "pred": s.regs[2],
                                    "total": s.regs_total(),
                                },
                                "spills": s.spills,
                                "reloads": s.reloads,
                                "ptxas_registers": match &s.ptxas_regs {
                                    Some(Ok(n)) => json!(n),
                                    Some(Err(e)) => json!({ "error": e }),
                                    None => Value::Null,
                                },
                            }),
                            Err(e) => json!({ "error": e }),
                        };
                        let dynamic = match &m.outcome {
                            Outcome::NotRun => Value::Null,
                            Outcome::Ran(d) => {
                                let s = &d.stats;
                                json!({
                                    "cycles": s.cycles,
                                    "warp_instructions": s.warp_instructions,
                                    "thread_instructions": s.thread_instructions,
                                    "simt_efficiency": s.simt_efficiency,
                                    "max_stack_depth": s.max_stack_depth,
                                    "max_stack_depth_ir_cfg": match k.ir_stack.get(ci) {
                                        Some(Some(Ok(n))) => json!(n),
                                        Some(Some(Err(e))) => json!({ "error": e }),
                                        _ => Value::Null,
                                    },
                                    "redundant_block_executions": d.redundant(),
                                    "redundant_by_block": d.redundant_by_block,
                                    "block_executions": s.block_executions,
                                })
                            }
                            Outcome::Mismatch(e) => json!({ "mismatch": e }),
                            Outcome::Failed(e) => json!({ "error": e }),
                        };
                        json!({ "label": c.label, "static": static_, "dynamic": dynamic })
                    })
                    .collect();
                json!({
                    "file": k.file.display().to_string(),
                    "kernel": k.kernel,
                    "launched": k.launched,
                    "columns": per_column,
                })
            })
            .collect();
        let failures: Vec<String> = self.kernels.iter().flat_map(|k| k.failures()).collect();
        json!({
            "warp_width": self.config.warp_width,
            "linearize_regions": self.regions,
            "ptxas": match self.ptxas {
                Ptxas::NotAsked => Value::Null,
                Ptxas::NotFound => json!("not found"),
                Ptxas::At(p) => json!(p.display().to_string()),
            },
            "columns": columns,
            "kernels": kernels,
            "failures": failures,
            "ok": failures.is_empty(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_and_ratios_skip_what_has_no_value() {
        assert_eq!(geomean([]), None);
        assert_eq!(geomean([0.0]), None);
        let g = geomean([2.0, 8.0, 0.0]).unwrap();
        assert!((g - 4.0).abs() < 1e-9);
        assert_eq!(ratio(0.0, 3.0), None);
        assert_eq!(ratio(2.0, 3.0), Some(1.5));
        assert_eq!(fmt_ratio(Some(1.0 / 3.0)), "0.33");
    }

    #[test]
    fn tables_align_under_their_group_titles() {
        let mut t = Table::new("kernel");
        t.group("a long group title", ["x".to_string(), "y".to_string()]);
        t.group("b", ["z".to_string()]);
        t.rows
            .push(vec!["k".into(), "1".into(), "22".into(), "333".into()]);
        t.summary
            .push(vec!["total".into(), "1".into(), "22".into(), "333".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[0].contains("a long group title"), "{text}");
        // Every row's separators line up with the heading's.
        let bars = |l: &str| l.match_indices('|').map(|(i, _)| i).collect::<Vec<_>>();
        for l in [lines[1], lines[3], lines[5]] {
            assert_eq!(bars(l), bars(lines[0]), "{text}");
        }
        assert!(lines[3].ends_with("333"), "{text}");
    }
}
