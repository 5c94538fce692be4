//! The study engine used as a library, as an embedder would: a spec from a string,
//! planned and run with a progress callback and a stop flag, its rows read as typed
//! values and checked against the emulator run directly, its outputs written and resumed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use warplift_codegen::isa::simt::load_object;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{MachineConfig, Program};
use warplift_ir::launch::Launch;
use warplift_study::{Progress, RunOptions, Study};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(name)
}

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("warplift-study-api-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// 2 kernels x 2 pipelines x 2 warp widths; relative paths start at `tests/corpus`.
const SPEC: &str = r#"
name = "api"
baseline = "base"
[settings]
linearize_regions = "kernel"
[sweep]
warp_width = [4, 32]
[[kernels]]
files = ["if_else_diamond.wir", "short_circuit_fig1.wir"]
[[pipelines]]
name = "base"
[[pipelines]]
name = "O3"
passes = ["linearize"]
settings = { linearize_opt = 3 }
"#;

fn study() -> Study {
    Study::from_str(SPEC, corpus("api.toml")).unwrap()
}

/// The cycles of `file` compiled with `passes` and run on the emulator at `width`.
fn cycles_directly(file: &str, passes: &[(&str, &str)], width: u32) -> u64 {
    let path = corpus(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let func = warplift_ir::parser::parse_function(&text).unwrap();
    let mut settings = Settings::builder();
    settings.set("linearize_regions", "kernel").unwrap();
    for (k, v) in passes {
        settings.set(k, v).unwrap();
    }
    let isa = lookup_by_name("simt", settings.finish()).unwrap();
    let module = Context::new()
        .compile_module(core::slice::from_ref(&func), isa.as_ref(), None)
        .unwrap();
    let object = load_object(&module.code).unwrap();
    let program = Program::from_loaded(object.kernel(&func.name).unwrap(), "").unwrap();
    let mut launch = Launch::from_file(&Launch::path_next_to(&path))
        .unwrap()
        .prepare(&func)
        .unwrap();
    let config = MachineConfig {
        warp_width: width,
        ..MachineConfig::default()
    };
    warplift_emu::run(&program, &mut launch, &config)
        .unwrap()
        .cycles
}

#[test]
fn a_study_runs_from_a_string_and_gives_typed_rows() {
    let study = study();
    assert_eq!(study.name(), "api");
    let keys: Vec<&str> = study.runs().iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "if_else_diamond|base|warp_width=4",
            "if_else_diamond|O3|warp_width=4",
            "if_else_diamond|base|warp_width=32",
            "if_else_diamond|O3|warp_width=32",
            "short_circuit_fig1|base|warp_width=4",
            "short_circuit_fig1|O3|warp_width=4",
            "short_circuit_fig1|base|warp_width=32",
            "short_circuit_fig1|O3|warp_width=32",
        ]
    );
    let reports: Mutex<Vec<Progress>> = Mutex::new(Vec::new());
    let progress = |p: Progress| reports.lock().unwrap().push(p);
    let results = study
        .run(&RunOptions {
            threads: Some(2),
            progress: Some(&progress),
            ..RunOptions::default()
        })
        .unwrap();
    assert!(results.complete() && !results.stopped);
    assert_eq!((results.ran, results.reused), (8, 0));
    assert_eq!(results.failed().count(), 0);
    // One report per run, counting up to the total.
    let mut done: Vec<usize> = reports.lock().unwrap().iter().map(|p| p.done).collect();
    done.sort();
    assert_eq!(done, (1..=8).collect::<Vec<_>>());
    assert!(reports
        .lock()
        .unwrap()
        .iter()
        .all(|p| p.total == 8 && p.failed == 0));
    // Every row's cycles are those of the emulator run directly.
    for row in results.rows() {
        let file = Path::new(&row.file).file_name().unwrap().to_string_lossy();
        let passes: &[(&str, &str)] = match row.pipeline.as_str() {
            "O3" => &[("passes", "linearize"), ("linearize_opt", "3")],
            _ => &[],
        };
        assert_eq!(
            row.get("cycles"),
            Some(cycles_directly(&file, passes, row.warp_width) as f64),
            "{}",
            row.key
        );
    }
    // Linearization removes Figure 1's redundant executions at width 4.
    let redundant = |key: &str| results.row(key).unwrap().get("redundant_block_executions");
    assert_eq!(redundant("short_circuit_fig1|base|warp_width=4"), Some(3.0));
    assert_eq!(redundant("short_circuit_fig1|O3|warp_width=4"), Some(0.0));
}

#[test]
fn a_set_stop_flag_runs_nothing_and_a_rerun_resumes() {
    let study = study();
    let dir = temp_dir("stop");
    let stop = AtomicBool::new(true);
    let results = study
        .run(&RunOptions {
            out: Some(&dir),
            stop: Some(&stop),
            ..RunOptions::default()
        })
        .unwrap();
    assert!(results.stopped && !results.complete());
    assert_eq!(results.finished(), 0);
    // Part of it, then the rest: only the rest runs.
    let results = study
        .run(&RunOptions {
            out: Some(&dir),
            max_runs: Some(3),
            threads: Some(1),
            ..RunOptions::default()
        })
        .unwrap();
    assert_eq!((results.ran, results.finished()), (3, 3));
    let calls = AtomicUsize::new(0);
    let progress = |_| {
        calls.fetch_add(1, Ordering::Relaxed);
    };
    let results = study
        .run(&RunOptions {
            out: Some(&dir),
            progress: Some(&progress),
            ..RunOptions::default()
        })
        .unwrap();
    assert_eq!((results.reused, results.ran), (3, 5));
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    assert!(results.complete());
    for file in [
        "index.md",
        "summary.md",
        "results.csv",
        "results.json",
        "runs.jsonl",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    // The outputs of a run in memory, written afterwards, are the same tables.
    let again = study.run(&RunOptions::default()).unwrap();
    let other = temp_dir("written");
    study.write_outputs(&other, &again).unwrap();
    for file in ["summary.md", "index.md", "plots/speedup-bars.svg"] {
        assert_eq!(
            std::fs::read(dir.join(file)).unwrap(),
            std::fs::read(other.join(file)).unwrap(),
            "{file}"
        );
    }
}

#[test]
fn spec_errors_name_the_line_and_key() {
    let bad = SPEC.replace("passes = [\"linearize\"]", "passes = [\"nonesuch\"]");
    let e = Study::from_str(&bad, corpus("api.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("api.toml:14: pipelines[1].passes: unknown pass `nonesuch`"),
        "{e}"
    );
    let e = Study::from_path(corpus("no-such-spec.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no-such-spec.toml"), "{e}");
}
