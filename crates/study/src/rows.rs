//! A study's results: one [`Row`] per run, its metrics by name, and the CSV and JSON forms.
//!
//! A row is what a run gave, flattened: the run's key (kernel, pipeline, machine), its
//! hash (of the kernel, its launch, the pipeline's settings, the machine and warplift's
//! version; a result with another hash is stale and is run again), the swept machine
//! parameters, the status with the error of a failed run, the dynamic numbers of the
//! emulator, the static numbers of the compilation, and the two timings. The timings are
//! the only numbers that differ between two runs of the same study: tables and plots
//! leave them out.

use crate::engine::Done;
use crate::measure::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What became of a run.
pub const STATUS_OK: &str = "ok";
/// The kernel has no launch: static numbers only.
pub const STATUS_STATIC: &str = "static";
/// Compiling, running or the reference run failed.
pub const STATUS_FAILED: &str = "failed";
/// The run's memory differs from the reference interpreter's.
pub const STATUS_MISMATCH: &str = "mismatch";

/// One run's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `kernel|pipeline|machine`.
    pub key: String,
    /// The hash the result is valid for (hex).
    pub hash: String,
    /// The kernel's name in the study.
    pub kernel: String,
    /// Its file.
    pub file: String,
    /// The kernel's name in its file.
    pub function: String,
    /// The pipeline.
    pub pipeline: String,
    /// The machine's label.
    pub machine: String,
    /// The swept machine parameters' values.
    pub params: BTreeMap<String, String>,
    /// Threads per warp.
    pub warp_width: u32,
    /// Threads per block in x, for a launched kernel.
    pub block: Option<u32>,
    /// [`STATUS_OK`], [`STATUS_STATIC`], [`STATUS_FAILED`] or [`STATUS_MISMATCH`].
    pub status: String,
    /// Why the run failed or mismatched.
    pub error: Option<String>,
    /// The metrics (see [`METRICS`]); absent when not measured.
    pub metrics: Metrics,
    /// Seconds compiling (shared by the runs of one kernel and pipeline), in ms.
    pub compile_ms: f64,
    /// Milliseconds in the emulator.
    pub run_ms: f64,
}

/// A metric: its name, what it is, and whether it comes from the run (dynamic) or from
/// the compilation (static).
pub struct Metric {
    /// The column name.
    pub name: &'static str,
    /// A short heading.
    pub title: &'static str,
    /// Measured by the emulator.
    pub dynamic: bool,
}

/// Every metric a row carries, in column order.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "cycles",
        title: "cycles",
        dynamic: true,
    },
    Metric {
        name: "warp_instructions",
        title: "warp-instructions",
        dynamic: true,
    },
    Metric {
        name: "thread_instructions",
        title: "thread-instructions",
        dynamic: true,
    },
    Metric {
        name: "simt_efficiency",
        title: "SIMT efficiency",
        dynamic: true,
    },
    Metric {
        name: "redundant_block_executions",
        title: "redundant block executions",
        dynamic: true,
    },
    Metric {
        name: "max_stack_depth",
        title: "max stack depth",
        dynamic: true,
    },
    Metric {
        name: "transactions_global",
        title: "global transactions",
        dynamic: true,
    },
    Metric {
        name: "transactions_shared",
        title: "shared transactions",
        dynamic: true,
    },
    Metric {
        name: "transactions_local",
        title: "local transactions",
        dynamic: true,
    },
    Metric {
        name: "occupancy",
        title: "occupancy",
        dynamic: true,
    },
    Metric {
        name: "static_instructions",
        title: "static instructions",
        dynamic: false,
    },
    Metric {
        name: "static_blocks",
        title: "static blocks",
        dynamic: false,
    },
    Metric {
        name: "registers",
        title: "registers",
        dynamic: false,
    },
    Metric {
        name: "registers_b32",
        title: "b32 registers",
        dynamic: false,
    },
    Metric {
        name: "registers_b64",
        title: "b64 registers",
        dynamic: false,
    },
    Metric {
        name: "registers_pred",
        title: "predicate registers",
        dynamic: false,
    },
    Metric {
        name: "spills",
        title: "spills",
        dynamic: false,
    },
    Metric {
        name: "reloads",
        title: "reloads",
        dynamic: false,
    },
];

/// A row's metrics, in the order of [`METRICS`]; serialised as a map from name to value
/// of the metrics measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics([Option<f64>; METRICS.len()]);

impl Metrics {
    /// The metric `name`, if measured (and known).
    pub fn get(&self, name: &str) -> Option<f64> {
        METRICS
            .iter()
            .position(|m| m.name == name)
            .and_then(|i| self.0[i])
    }

    /// Sets the metric `name` (one of [`METRICS`]).
    fn set(&mut self, name: &str, value: f64) {
        if let Some(i) = METRICS.iter().position(|m| m.name == name) {
            self.0[i] = Some(value);
        }
    }
}

impl Serialize for Metrics {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.iter().flatten().count()))?;
        for (m, v) in METRICS.iter().zip(&self.0) {
            if let Some(v) = v {
                map.serialize_entry(m.name, v)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Metrics {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, f64>::deserialize(d)?;
        let mut out = Metrics::default();
        for (name, v) in map {
            match METRICS.iter().position(|m| m.name == name) {
                Some(i) => out.0[i] = Some(v),
                None => return Err(serde::de::Error::custom(format!("unknown metric `{name}`"))),
            }
        }
        Ok(out)
    }
}

/// The pseudo-metric of cycles of the baseline over cycles of the pipeline.
pub const SPEEDUP: &str = "speedup";

/// The metric called `name`.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Every name a spec may use for a quantity.
pub fn quantity_names() -> String {
    let mut names: Vec<&str> = vec![SPEEDUP];
    names.extend(METRICS.iter().map(|m| m.name));
    names.join(", ")
}

/// What identifies a run, apart from its hash.
#[derive(Clone, Debug)]
pub struct RowId<'a> {
    /// The key.
    pub key: &'a str,
    /// The hash.
    pub hash: &'a str,
    /// The kernel's study name.
    pub kernel: &'a str,
    /// Its file.
    pub file: &'a str,
    /// Its name in the file.
    pub function: &'a str,
    /// The pipeline.
    pub pipeline: &'a str,
    /// The machine.
    pub machine: &'a str,
    /// The swept parameters.
    pub params: &'a BTreeMap<String, String>,
    /// The warp width.
    pub warp_width: u32,
    /// The block size in x.
    pub block: Option<u32>,
}

impl Row {
    /// The row of a finished run.
    pub fn new(id: &RowId<'_>, done: &Done) -> Row {
        let mut metrics = Metrics::default();
        let mut error = None;
        if let Ok(s) = &done.measured.static_ {
            metrics.set("static_instructions", s.insts as f64);
            metrics.set("static_blocks", s.blocks as f64);
            metrics.set("registers", f64::from(s.regs_total()));
            metrics.set("registers_b32", f64::from(s.regs[0]));
            metrics.set("registers_b64", f64::from(s.regs[1]));
            metrics.set("registers_pred", f64::from(s.regs[2]));
            metrics.set("spills", f64::from(s.spills));
            metrics.set("reloads", f64::from(s.reloads));
        }
        let status = match (&done.measured.static_, &done.measured.outcome) {
            (_, Outcome::Ran(d)) => {
                let s = &d.stats;
                for (name, v) in [
                    ("cycles", s.cycles as f64),
                    ("warp_instructions", s.warp_instructions as f64),
                    ("thread_instructions", s.thread_instructions as f64),
                    ("simt_efficiency", s.simt_efficiency),
                    ("redundant_block_executions", d.redundant() as f64),
                    ("max_stack_depth", s.max_stack_depth as f64),
                    ("transactions_global", s.transactions.global as f64),
                    ("transactions_shared", s.transactions.shared as f64),
                    ("transactions_local", s.transactions.local as f64),
                    ("occupancy", s.occupancy),
                ] {
                    metrics.set(name, v);
                }
                STATUS_OK
            }
            (_, Outcome::Mismatch(why)) => {
                error = Some(why.clone());
                STATUS_MISMATCH
            }
            (_, Outcome::Failed(why)) | (Err(why), Outcome::NotRun) => {
                error = Some(why.clone());
                STATUS_FAILED
            }
            (Ok(_), Outcome::NotRun) => STATUS_STATIC,
        };
        Row {
            key: id.key.to_string(),
            hash: id.hash.to_string(),
            kernel: id.kernel.to_string(),
            file: id.file.to_string(),
            function: id.function.to_string(),
            pipeline: id.pipeline.to_string(),
            machine: id.machine.to_string(),
            params: id.params.clone(),
            warp_width: id.warp_width,
            block: id.block,
            status: status.to_string(),
            error,
            metrics,
            // Rounded to microseconds: the CSV and the JSON show the same number.
            compile_ms: (done.compile_seconds * 1e6).round() / 1e3,
            run_ms: (done.run_seconds * 1e6).round() / 1e3,
        }
    }

    /// The metric `name`, if measured.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics.get(name)
    }

    /// Whether the run failed or mismatched.
    pub fn failed(&self) -> bool {
        self.status == STATUS_FAILED || self.status == STATUS_MISMATCH
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The swept parameters with a CSV column of their own (the warp width always has one).
fn param_columns(params: &[String]) -> Vec<String> {
    params
        .iter()
        .filter(|p| *p != "warp_width")
        .cloned()
        .collect()
}

/// The CSV's columns, the swept parameters' (`params`, in order) after the machine.
pub fn csv_header(params: &[String]) -> Vec<String> {
    let params = param_columns(params);
    let mut h: Vec<String> = ["kernel", "file", "function", "pipeline", "machine"]
        .map(String::from)
        .to_vec();
    h.extend(params);
    h.extend(["warp_width", "block", "status"].map(String::from));
    h.extend(METRICS.iter().map(|m| m.name.to_string()));
    h.extend(["compile_ms", "run_ms", "hash", "error"].map(String::from));
    h
}

/// The rows as CSV (one header line, then one line per row).
pub fn csv(params: &[String], rows: &[&Row]) -> String {
    use std::fmt::Write as _;
    let params = &param_columns(params);
    let mut out = csv_header(params).join(",");
    out.push('\n');
    for r in rows {
        for s in [&r.kernel, &r.file, &r.function, &r.pipeline, &r.machine] {
            push_field(&mut out, s);
            out.push(',');
        }
        for p in params {
            push_field(&mut out, r.params.get(p).map_or("", String::as_str));
            out.push(',');
        }
        let _ = write!(out, "{},", r.warp_width);
        if let Some(b) = r.block {
            let _ = write!(out, "{b}");
        }
        out.push(',');
        out.push_str(&r.status);
        out.push(',');
        for v in r.metrics.0 {
            if let Some(v) = v {
                push_number(&mut out, v);
            }
            out.push(',');
        }
        let _ = write!(out, "{:.3},{:.3},{},", r.compile_ms, r.run_ms, r.hash);
        push_field(&mut out, r.error.as_deref().unwrap_or(""));
        out.push('\n');
    }
    out
}

/// Appends `s` as a CSV field.
fn push_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push_str(&field(s));
    } else {
        out.push_str(s);
    }
}

/// Appends a number as the CSV shows it: integers without a fraction, other values in
/// their shortest exact form.
fn push_number(out: &mut String, v: f64) {
    use std::fmt::Write as _;
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

/// The 64-bit FNV-1a hash of `parts` (each followed by a separator byte): stable across
/// builds and machines, unlike std's hasher.
pub fn fnv1a<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_numbers_exact() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("plain"), "plain");
        let number = |v: f64| {
            let mut s = String::new();
            push_number(&mut s, v);
            s
        };
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.1 + 0.2), "0.30000000000000004");
        assert_ne!(
            fnv1a([b"ab".as_slice(), b"c"]),
            fnv1a([b"a".as_slice(), b"bc"])
        );
        assert_eq!(fnv1a([]), 0xcbf2_9ce4_8422_2325);
    }
}
