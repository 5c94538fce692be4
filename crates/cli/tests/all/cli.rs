//! End-to-end tests of the `warplift` binary: exit codes, messages and output shapes.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common;
use common::*;

/// A failure must be an error message and exit code 1, never a panic (exit code 101).
fn assert_fails_with(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(o));
    assert!(
        stderr(o).contains(needle),
        "expected {needle:?} in stderr: {}",
        stderr(o)
    );
}

fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warplift-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn fmt_prints_canonical_text_that_fmt_check_accepts() {
    let o = warplift(&["fmt", "examples/saxpy.wir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("kernel %saxpy(x: i64, y: i64, a: f32, n: i32) {"));
    let canonical = temp_file("canonical.wir", text.as_bytes());
    let o = warplift(&["fmt", "--check", canonical.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The example has comments, so it is not canonical.
    let o = warplift(&["fmt", "--check", "examples/saxpy.wir"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn verify_reports_ok_and_errors_with_file_line_and_column() {
    let o = warplift(&["verify", "examples/saxpy.wir"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("%saxpy: ok"));
    let bad = temp_file(
        "bad_types.wir",
        b"kernel %k(p: i64) {\nblock0(v0: i64):\n    v1 = iconst.i32 1\n    v2 = iadd v0, v1\n    return\n}\n",
    );
    let o = warplift(&["verify", bad.to_str().unwrap()]);
    assert_fails_with(&o, "bad_types.wir:4:5: v2 = iadd v0, v1:");
}

#[test]
fn parse_errors_name_file_line_and_column() {
    let bad = temp_file("syntax.wir", b"kernel %k() {\nblock0:\n    v1 = iadd v0\n");
    let o = warplift(&["fmt", bad.to_str().unwrap()]);
    assert_fails_with(&o, "syntax.wir:4:1: unexpected end of input");
}

#[test]
fn interp_uses_the_launch_file_next_to_the_kernel() {
    let o = warplift(&["interp", "examples/saxpy.wir", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let y = json["buffers"]["y"].as_array().unwrap();
    assert_eq!(y.len(), 80);
    // y[i] = 2 * i + i
    assert_eq!(y[5].as_f64(), Some(15.0));
    assert_eq!(json["kernel"], "saxpy");
    assert_eq!(json["stats"]["threads"], 96);
    assert_eq!(json["stats"]["block_executions"]["block1"], 80);
}

#[test]
fn interp_flags_override_the_launch_file() {
    let o = warplift(&[
        "interp",
        "examples/saxpy.wir",
        "--arg",
        "n=3",
        "--print",
        "y",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let y = json["buffers"]["y"].as_array().unwrap();
    assert_eq!(y[2].as_f64(), Some(6.0));
    assert_eq!(y[3].as_f64(), Some(3.0), "threads past n leave y alone");
    assert!(json["buffers"].get("x").is_none());
}

#[test]
fn interp_without_launch_file_describes_the_launch_with_flags() {
    let o = warplift(&[
        "interp",
        "examples/saxpy.wir",
        "--no-launch-file",
        "--block",
        "4",
        "--arg",
        "n=4",
        "--arg",
        "a=0.5",
        "--buffer",
        "x=f32[4]:values:2,4,6,8",
        "--buffer",
        "y=f32[4]:zeros",
        "--print",
        "y",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("1.0 2.0 3.0 4.0"), "{}", stdout(&o));
}

#[test]
fn interp_expect_checks_the_results() {
    let flags = |expect_y: &str| {
        warplift(&[
            "interp",
            "examples/saxpy.wir",
            "--no-launch-file",
            "--block",
            "4",
            "--arg",
            "n=4",
            "--arg",
            "a=0.5",
            "--buffer",
            "x=f32[4]:values:2,4,6,8",
            "--buffer",
            "y=f32[4]:zeros",
            "--expect",
            "x=2,4,6,8",
            "--expect",
            expect_y,
        ])
    };
    let o = flags("y=1,2,3,4");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = flags("y=1,2,3,5");
    assert_fails_with(
        &o,
        "buffer y: element [3] is 4.0, expected 5.0 (1 of 4 elements differ)",
    );
    assert_fails_with(
        &flags("y=1,2,3"),
        "3 values given for a buffer of 4 elements",
    );
    assert_fails_with(&flags("y"), "--expect");
}

#[test]
fn interp_faults_name_kernel_block_thread_and_line() {
    let o = warplift(&["interp", "examples/saxpy.wir", "--arg", "n=81"]);
    assert_fails_with(&o, "out-of-bounds global load");
    assert!(stderr(&o).contains("kernel %saxpy, block (2,0,0), thread (16,0,0), at 19:5"));
}

#[test]
fn bad_input_is_an_error_not_a_crash() {
    let garbage = temp_file("garbage.wir", &[0xff, 0xfe, 0x00, 0x41]);
    assert_fails_with(&warplift(&["fmt", garbage.to_str().unwrap()]), "not UTF-8");
    assert_fails_with(&warplift(&["verify", "no/such/file.wir"]), "cannot read");
    let kernel = temp_file(
        "k.wir",
        b"kernel %k(n: i32) {\nblock0(v0: i32):\n    return\n}\n",
    );
    let launch = temp_file("k.launch.toml", b"grid = [1]\nblokc = [2]\n");
    let o = warplift(&["interp", kernel.to_str().unwrap()]);
    assert_fails_with(&o, "blokc");
    assert_fails_with(
        &warplift(&[
            "interp",
            kernel.to_str().unwrap(),
            "--launch",
            launch.to_str().unwrap(),
        ]),
        "blokc",
    );
    let o = warplift(&["interp", kernel.to_str().unwrap(), "--no-launch-file"]);
    assert_fails_with(&o, "n");
    let o = warplift(&[
        "interp",
        kernel.to_str().unwrap(),
        "--no-launch-file",
        "--arg",
        "n=1",
        "--warp-size",
        "0",
    ]);
    assert_fails_with(&o, "--warp-size");
}

#[test]
fn compile_to_ptx_prints_ptx_and_stats() {
    let o = warplift(&[
        "compile",
        "examples/saxpy.wir",
        "--target",
        "ptx",
        "--stats",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(".visible .entry saxpy("));
    assert!(
        stderr(&o).contains("%saxpy: 18 IR instructions"),
        "{}",
        stderr(&o)
    );
    let o = warplift(&[
        "compile",
        "examples/saxpy.wir",
        "--target",
        "nvptx64-nvidia-cuda",
        "--set",
        "ptx_target=sm_80",
    ]);
    assert!(stdout(&o).contains(".target sm_80"));
}

#[test]
fn compile_print_mir_shows_lowered_and_final_machine_ir() {
    let o = warplift(&["compile", "examples/saxpy.wir", "--print-mir=lowered"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("setp.slt.i32 %p"), "{}", stdout(&o));
    let o = warplift(&["compile", "examples/saxpy.wir", "--print-mir"]);
    assert!(stdout(&o).contains("setp.slt.i32 $p0"), "{}", stdout(&o));
}

#[test]
fn compile_to_an_object_and_objdump_it_with_source_lines() {
    let dir = std::env::temp_dir().join(format!("warplift-objdump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wir = dir.join("saxpy.wir");
    std::fs::copy(repo_root().join("examples/saxpy.wir"), &wir).unwrap();
    let o = warplift(&["compile", wir.to_str().unwrap(), "--target", "simt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let obj = dir.join("saxpy.o");
    assert!(obj.is_file());
    let o = warplift(&["objdump", obj.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let listing = stdout(&o);
    assert!(listing.contains("kernel %saxpy"), "{listing}");
    assert!(listing.contains("; saxpy.wir:10:5"), "{listing}");
    assert!(listing.contains("v9 = icmp slt v8, v3"), "{listing}");
    assert!(listing.contains("br.div $p0"), "{listing}");
}

#[test]
fn compile_and_objdump_reject_bad_input() {
    assert_fails_with(
        &warplift(&["compile", "examples/saxpy.wir", "--target", "x86"]),
        "unknown target `x86`",
    );
    assert_fails_with(
        &warplift(&["compile", "examples/saxpy.wir", "--set", "regs_b32=0"]),
        "regs_b32",
    );
    let garbage = temp_file("garbage.o", b"\x7fELF\x02\x01\x01garbage");
    let o = warplift(&["objdump", garbage.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------
// warplift run

fn json_of(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    serde_json::from_str(&stdout(o)).expect("one JSON object")
}

#[test]
fn run_prints_the_buffers_and_a_statistics_summary() {
    let o = warplift(&["run", "examples/saxpy.wir", "--stats"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("x: f32[80]"), "{text}");
    for part in [
        "y: f32[80]",
        "cycles",
        "warp-instructions",
        "thread-instructions",
        "SIMT efficiency",
        "max stack depth",
        "stall cycles",
        "transactions",
        "occupancy",
        "block executions:",
    ] {
        assert!(text.contains(part), "{part:?} missing: {text}");
    }
    // Without --stats, the buffers exactly as the interpreter prints them.
    let run = warplift(&["run", "examples/saxpy.wir"]);
    let interp = warplift(&["interp", "examples/saxpy.wir"]);
    assert_eq!(stdout(&run), stdout(&interp));
}

#[test]
fn run_json_is_interps_object_plus_the_emulators_statistics() {
    let run = json_of(&warplift(&["run", "examples/saxpy.wir", "--json"]));
    let interp = json_of(&warplift(&["interp", "examples/saxpy.wir", "--json"]));
    assert_eq!(run["buffers"], interp["buffers"]);
    assert_eq!(run["kernel"], interp["kernel"]);
    let stats = &run["stats"];
    for key in [
        "cycles",
        "warp_instructions",
        "thread_instructions",
        "simt_efficiency",
        "block_executions",
        "max_stack_depth",
        "stalls",
        "transactions",
        "occupancy",
    ] {
        assert!(!stats[key].is_null(), "stats.{key} missing: {stats}");
    }
    assert!(stats["cycles"].as_u64().unwrap() > 0);
}

#[test]
fn run_counts_the_redundant_block_executions_of_figure_1() {
    // One warp of the paper's 4 threads: B3 runs twice (T1, T2 from B1; T3 from B2) and
    // B5 three times (T2 from B3; T3 from B3 again; T4 from B2), as the paper states.
    let run = json_of(&warplift(&[
        "run",
        "tests/corpus/short_circuit_fig1.wir",
        "--warp-width",
        "4",
        "--json",
    ]));
    let execs = &run["stats"]["block_executions"];
    assert_eq!(execs["block3"], 2, "{execs}");
    assert_eq!(execs["block5"], 3, "{execs}");
    for b in ["block0", "block1", "block2", "block4", "block6"] {
        assert_eq!(execs[b], 1, "{b}: {execs}");
    }
    assert_eq!(
        run["buffers"]["out"],
        serde_json::json!([1346, 1356, 12356, 1256])
    );
}

#[test]
fn run_takes_a_config_file_and_flags_override_it() {
    let config = temp_file(
        "machine.toml",
        b"warp_width = 4\nsms = 1\n[latency]\nglobal = 100\n",
    );
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "tests/corpus/short_circuit_fig1.wir",
            "--json",
            "--config",
            config.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        json_of(&warplift(&a))
    };
    let from_file = args(&[]);
    assert_eq!(from_file["stats"]["warp_width"], 4);
    assert_eq!(from_file["stats"]["block_executions"]["block5"], 3);
    let overridden = args(&["--warp-width", "1", "--latency", "global=7"]);
    assert_eq!(overridden["stats"]["warp_width"], 1);
    assert_eq!(overridden["stats"]["warps"], 4);
    assert!(
        overridden["stats"]["cycles"].as_u64() != from_file["stats"]["cycles"].as_u64(),
        "the flags changed nothing"
    );
    let bad = temp_file("bad-machine.toml", b"warp_size = 4\n");
    let o = warplift(&[
        "run",
        "examples/saxpy.wir",
        "--config",
        bad.to_str().unwrap(),
    ]);
    assert_fails_with(&o, "bad-machine.toml");
}

#[test]
fn run_writes_a_chrome_trace() {
    let dir = temp_file("x", b"").parent().unwrap().to_path_buf();
    let trace = dir.join("fig1.trace.json");
    let o = warplift(&[
        "run",
        "tests/corpus/short_circuit_fig1.wir",
        "--warp-width",
        "4",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).expect("JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    assert!(!events.is_empty());
    for e in events {
        assert_eq!(e["ph"], "X");
        assert!(e["ts"].is_u64() && e["dur"].is_u64() && e["name"].is_string());
    }
    let b5 = events.iter().filter(|e| e["name"] == "block5").count();
    assert_eq!(b5, 3);
}

#[test]
fn run_runs_an_object_with_the_launch_file_of_its_source() {
    // The object is named differently from its source: the launch file is found next to
    // the source the object names.
    let dir = temp_file("x", b"").parent().unwrap().join("objects");
    std::fs::create_dir_all(&dir).unwrap();
    let src = repo_root().join("tests/corpus/short_circuit_fig1.wir");
    std::fs::copy(&src, dir.join("short_circuit_fig1.wir")).unwrap();
    std::fs::copy(
        repo_root().join("tests/corpus/short_circuit_fig1.launch.toml"),
        dir.join("short_circuit_fig1.launch.toml"),
    )
    .unwrap();
    let obj = dir.join("fig1-renamed.o");
    let o = warplift(&[
        "compile",
        dir.join("short_circuit_fig1.wir").to_str().unwrap(),
        "-o",
        obj.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let from_obj = json_of(&warplift(&[
        "run",
        obj.to_str().unwrap(),
        "--warp-width",
        "4",
        "--json",
    ]));
    let from_wir = json_of(&warplift(&[
        "run",
        "tests/corpus/short_circuit_fig1.wir",
        "--warp-width",
        "4",
        "--json",
    ]));
    assert_eq!(from_obj, from_wir);
    // --kernel chooses among the object's kernels as among a file's.
    let o = warplift(&["run", obj.to_str().unwrap(), "--kernel", "nope"]);
    assert_fails_with(&o, "no kernel %nope");
    // --set is for compiling.
    let o = warplift(&["run", obj.to_str().unwrap(), "--set", "opt_level=none"]);
    assert_fails_with(&o, "--set");
}

#[test]
fn run_faults_name_the_source_line_pc_and_instruction() {
    let wir = temp_file(
        "oob.wir",
        b"kernel %oob(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = uextend.i64 v1
    v3 = iconst.i64 2
    v4 = ishl v2, v3
    v5 = iadd v0, v4
    v6 = load.i32 global v5
    v7 = iadd v6, v1
    store global v7, v5
    return
}
",
    );
    let o = warplift(&[
        "run",
        wir.to_str().unwrap(),
        "--block",
        "4",
        "--buffer",
        "out=i32[3]:zeros",
    ]);
    assert_fails_with(&o, "out-of-bounds global load of 4 bytes");
    let err = stderr(&o);
    for part in [
        "kernel %oob",
        "thread (3,0,0)",
        "pc 0x",
        "(`ld.global.i32 $r",
        "oob.wir:8:5",
    ] {
        assert!(err.contains(part), "{part:?} missing: {err}");
    }
}

#[test]
fn run_checks_expectations_and_rejects_bad_machine_flags() {
    let o = warplift(&[
        "run",
        "tests/corpus/short_circuit_fig1.wir",
        "--expect",
        "out=1,2,3,4",
    ]);
    assert_fails_with(&o, "expectations");
    let o = warplift(&["run", "examples/saxpy.wir", "--warp-width", "65"]);
    assert_fails_with(&o, "warp_width");
    let o = warplift(&["run", "examples/saxpy.wir", "--latency", "dram=4"]);
    assert_fails_with(&o, "unknown class");
    let o = warplift(&["run", "examples/saxpy.wir", "--latency", "global"]);
    assert_fails_with(&o, "CLASS=N");
    let o = warplift(&["run", "examples/saxpy.wir", "--max-cycles", "10"]);
    assert_fails_with(&o, "cycle limit of 10 exceeded");
    let garbage = temp_file("garbage.o", b"\x7fELF not really");
    let o = warplift(&["run", garbage.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn a_closed_output_pipe_ends_quietly() {
    // Far more output than a pipe buffers, and a reader that reads nothing.
    let mut child = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args([
            "interp",
            "examples/saxpy.wir",
            "--no-launch-file",
            "--arg",
            "n=0",
            "--arg",
            "a=1",
            "--buffer",
            "x=f32[200000]:iota",
            "--buffer",
            "y=f32[1]:zeros",
        ])
        .current_dir(repo_root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cfg_prints_edges_or_graphviz() {
    let o = warplift(&["cfg", "tests/corpus/short_circuit_fig1.wir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("mblock0 (block0) -> mblock1\n"), "{text}");
    // The edge blocks register allocation left empty are gone from the final graph.
    assert!(!text.contains("[edge split]"), "{text}");
    let o = warplift(&["cfg", "tests/corpus/short_circuit_fig1.wir", "--dot"]);
    assert!(stdout(&o).starts_with("digraph \"short_circuit_fig1\" {"));
    assert_fails_with(
        &warplift(&[
            "cfg",
            "tests/corpus/short_circuit_fig1.wir",
            "--after",
            "nonesuch",
        ]),
        "nonesuch",
    );
}

#[test]
fn unknown_passes_are_refused() {
    assert_fails_with(
        &warplift(&["compile", "examples/saxpy.wir", "--passes", "nonesuch"]),
        "unknown pass `nonesuch`",
    );
    let o = warplift(&["passes"]);
    assert!(o.status.success());
}

#[test]
fn linearize_runs_figure_1_once_per_block_and_draws_guard_blocks() {
    let run = json_of(&warplift(&[
        "run",
        "tests/corpus/short_circuit_fig1.wir",
        "--warp-width",
        "4",
        "--passes",
        "linearize",
        "--set",
        "linearize_regions=kernel",
        "--json",
    ]));
    let execs = &run["stats"]["block_executions"];
    for b in 0..7 {
        assert_eq!(execs[format!("block{b}")], 1, "block{b}: {execs}");
    }
    assert_eq!(
        run["buffers"]["out"],
        serde_json::json!([1346, 1356, 12356, 1256])
    );
    let o = warplift(&[
        "run",
        "tests/corpus/short_circuit_fig1.wir",
        "--passes",
        "linearize",
        "--stats",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("max stack depth                     2"),
        "{}",
        stdout(&o)
    );
    let o = warplift(&[
        "cfg",
        "tests/corpus/short_circuit_fig1.wir",
        "--passes",
        "linearize",
        "--after",
        "linearize",
        "--dot",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dot = stdout(&o);
    // The default mode linearizes the unstructured region between block1 (its entry, which
    // sets the guard variable) and block6 (its exit): one guard per region block,
    // block2..block5 and the four edge splits of register allocation.
    assert_eq!(dot.matches("(guard)").count(), 8, "{dot}");
    assert!(dot.contains("fillcolor=lightgray"), "{dot}");
    assert!(stdout(&warplift(&["passes"])).contains("linearize"));
    assert_fails_with(
        &warplift(&[
            "run",
            "tests/corpus/short_circuit_fig1.wir",
            "--passes",
            "linearize",
            "--set",
            "linearize_regions=some",
        ]),
        "linearize_regions",
    );
}

// ---------------------------------------------------------------------------------------
// warplift report

/// The report's entry for `label` in a kernel's JSON.
fn report_column<'a>(kernel: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    kernel["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .find(|c| c["label"] == label)
        .unwrap_or_else(|| panic!("no column {label}: {kernel}"))
}

#[test]
fn report_shows_figure_1_losing_its_redundant_executions() {
    let args = [
        "report",
        "tests/corpus/short_circuit_fig1.wir",
        "--warp-width",
        "4",
    ];
    let json = json_of(&warplift(&[&args[..], &["--json"]].concat()));
    assert_eq!(json["ok"], true, "{json}");
    assert_eq!(json["warp_width"], 4);
    assert_eq!(json["linearize_regions"], "kernel");
    let labels: Vec<&str> = json["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["base", "ssa", "O0", "O1", "O2", "O3"]);
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    let k = &kernels[0];
    assert_eq!(k["kernel"], "short_circuit_fig1");
    assert_eq!(k["launched"], true);
    // The paper's Figure 1 at warp width 4: B3 runs once too often and B5 twice.
    let base = &report_column(k, "base")["dynamic"];
    assert_eq!(base["redundant_block_executions"], 3, "{base}");
    assert_eq!(base["redundant_by_block"]["block3"], 1, "{base}");
    assert_eq!(base["redundant_by_block"]["block5"], 2, "{base}");
    assert_eq!(base["block_executions"]["block3"], 2, "{base}");
    assert_eq!(base["block_executions"]["block5"], 3, "{base}");
    // Linearized, at the SSA level and at every level of the machine pass: every IR block
    // once, nothing redundant.
    for label in ["ssa", "O0", "O1", "O2", "O3"] {
        let d = &report_column(k, label)["dynamic"];
        assert_eq!(d["redundant_block_executions"], 0, "{label}: {d}");
        for b in 0..7 {
            let runs = &d["block_executions"][format!("block{b}")];
            // O3 predicates short blocks inside others: those are not counted on their own.
            if label == "O3" && runs.is_null() {
                continue;
            }
            assert_eq!(runs, 1, "{label}: {d}");
        }
        assert!(d["max_stack_depth"].as_u64() < base["max_stack_depth"].as_u64());
        // On the program's CFG: the IR's after `linearize_ssa`, the linearized CFG (the
        // machine CFG without its edge-split blocks) after the machine pass.
        let ir = &d["max_stack_depth_ir_cfg"];
        assert_eq!(ir.as_u64(), Some(2), "{label}: {d}");
    }
    assert_eq!(base["max_stack_depth_ir_cfg"], 4, "{base}");
    // The static numbers are the compiler's own statistics.
    let blocks = |label: &str| {
        report_column(k, label)["static"]["blocks"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(blocks("base"), 7);
    assert_eq!(blocks("O0"), 20);
    // O3 predicates the short blocks into straight-line chains: as many blocks as before.
    assert_eq!(blocks("O3"), 7);
    let regs = &report_column(k, "O0")["static"]["registers"];
    assert_eq!(
        regs["total"].as_u64(),
        Some(
            ["b32", "b64", "pred"]
                .map(|c| regs[c].as_u64().unwrap())
                .iter()
                .sum()
        )
    );
    // The text shows the same in the paper's tables.
    let o = warplift(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for part in [
        "Table 1:",
        "Table 1b:",
        "Table 2:",
        "Table 4:",
        "geomean",
        "incr",
    ] {
        assert!(text.contains(part), "{part:?} missing: {text}");
    }
    let row = text
        .lines()
        .rfind(|l| l.starts_with("short_circuit_fig1"))
        .expect("a Table 4 row");
    let redundant: Vec<&str> = row.rsplit('|').next().unwrap().split_whitespace().collect();
    assert_eq!(redundant, ["3", "0", "0", "0", "0", "0"], "{text}");
}

#[test]
fn report_on_the_corpus_has_a_row_per_kernel_and_takes_extra_columns() {
    let o = warplift(&["report", "--regions", "divergent"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let kernels: Vec<String> = warplift_filetests::Walk::corpus()
        .files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(kernels.len() >= 40);
    for k in &kernels {
        // One row in each of Tables 1, 1b, 2 and 4 (every corpus kernel has a launch).
        let rows = text
            .lines()
            .filter(|l| l.starts_with(&format!("{k} ")))
            .count();
        assert_eq!(rows, 4, "{k}: {text}");
    }
    assert!(!text.contains("MISMATCH"), "{text}");
    let json = json_of(&warplift(&[
        "report",
        "tests/corpus/if_else_diamond.wir",
        "examples",
        "--no-default-columns",
        "--column",
        "plain=",
        "--column",
        "all3=linearize,linearize_opt=3,linearize_regions=all",
        "--json",
    ]));
    let labels: Vec<&str> = json["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["plain", "all3"]);
    assert_eq!(json["columns"][1]["settings"]["linearize_regions"], "all");
    assert!(json["kernels"].as_array().unwrap().len() >= 2, "{json}");
    assert_fails_with(
        &warplift(&["report", "examples", "--column", "x=nonesuch"]),
        "unknown pass `nonesuch`",
    );
    assert_fails_with(
        &warplift(&["report", "examples", "--column", "base=linearize"]),
        "already is a column base",
    );
    assert_fails_with(&warplift(&["report", "no/such/dir"]), "does not exist");
}

#[test]
fn report_lists_kernels_without_a_launch_with_static_numbers_only() {
    let text =
        std::fs::read_to_string(repo_root().join("tests/corpus/if_else_diamond.wir")).unwrap();
    let path = temp_file("unlaunched.wir", text.as_bytes());
    let o = warplift(&["report", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Table 1:"), "{out}");
    assert!(!out.contains("Table 2:"), "{out}");
    assert!(out.contains("Not run (no launch file"), "{out}");
    let json = json_of(&warplift(&["report", path.to_str().unwrap(), "--json"]));
    let k = &json["kernels"][0];
    assert_eq!(k["launched"], false);
    assert!(report_column(k, "base")["dynamic"].is_null());
    assert!(report_column(k, "O3")["static"]["instructions"].as_u64() > Some(0));
}

#[test]
fn report_marks_a_run_whose_memory_differs_from_the_interpreters() {
    // A race: each thread sets its flag, then reads its right neighbour's. The interpreter
    // runs thread 0 to the end before thread 1 starts, so thread 0 sees 0; a warp runs
    // both stores before both loads, so lane 0 sees 1.
    let kernel = temp_file(
        "race.wir",
        b"kernel %race(flags: i64, out: i64) {\n\
          block0(v0: i64, v1: i64):\n\
              v2 = thread_id x\n\
              v3 = uextend.i64 v2\n\
              v4 = iconst.i64 2\n\
              v5 = ishl v3, v4\n\
              v6 = iadd v0, v5\n\
              v7 = iconst.i32 1\n\
              store global v7, v6\n\
              v8 = iconst.i64 4\n\
              v9 = iadd v6, v8\n\
              v10 = load.i32 global v9\n\
              v11 = iadd v1, v5\n\
              store global v10, v11\n\
              return\n\
          }\n",
    );
    temp_file(
        "race.launch.toml",
        b"grid = [1]\nblock = [2]\n[buffers.flags]\ntype = \"i32\"\nlen = 3\ninit = \"zeros\"\n\
          [buffers.out]\ntype = \"i32\"\nlen = 2\ninit = \"zeros\"\n",
    );
    let o = warplift(&["report", kernel.to_str().unwrap()]);
    assert_fails_with(&o, "differs from the reference interpreter's");
    let text = stdout(&o);
    assert!(text.contains("MISMATCH"), "{text}");
    assert!(text.contains("FAILED OR MISMATCHED RUNS"), "{text}");
    let o = warplift(&["report", kernel.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(json["ok"], false);
    let base = report_column(&json["kernels"][0], "base");
    assert!(base["dynamic"]["mismatch"].is_string(), "{base}");
    assert!(base["dynamic"]["cycles"].is_null(), "{base}");
}

#[test]
fn report_adds_the_registers_ptxas_allocates() {
    let fig1 = "tests/corpus/short_circuit_fig1.wir";
    let Some(ptxas) = warplift_codegen::isa::ptx::ptxas::ptxas_for_tests() else {
        // Without ptxas the report says so and goes on without the numbers.
        let o = Command::new(env!("CARGO_BIN_EXE_warplift"))
            .args(["report", fig1, "--ptxas"])
            .env("WARPLIFT_PTXAS", "/nonexistent/ptxas")
            .current_dir(repo_root())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("ptxas: not found"), "{}", stdout(&o));
        return;
    };
    let o = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(["report", fig1, "--ptxas", "--json"])
        .env("WARPLIFT_PTXAS", &ptxas)
        .current_dir(repo_root())
        .output()
        .unwrap();
    let json = json_of(&o);
    for c in json["kernels"][0]["columns"].as_array().unwrap() {
        let n = c["static"]["ptxas_registers"].as_u64();
        assert!(n.is_some_and(|n| n > 0), "{c}");
    }
}

#[test]
fn settings_lists_every_setting_with_its_documentation_on_one_line() {
    let text = stdout(&warplift(&["settings"]));
    for name in [
        "opt_level",
        "passes",
        "linearize_regions",
        "linearize_stage",
        "linearize_opt",
        "linearize_merge_loops",
        "linearize_interleave",
    ] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"));
        let doc = line[name.len()..].trim_start();
        assert!(!doc.is_empty() && !doc.contains("  "), "{line}");
    }
}

#[test]
fn interp_takes_the_emulators_warp_width_flag() {
    let o = warplift(&[
        "interp",
        "examples/saxpy.wir",
        "--json",
        "--warp-width",
        "8",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(json["stats"]["warp_width"], 8);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    // The old name still works, with a deprecation warning.
    let o = warplift(&["interp", "examples/saxpy.wir", "--json", "--warp-size", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(json["stats"]["warp_width"], 4);
    assert!(stderr(&o).contains("--warp-size is deprecated; use --warp-width"));
    let o = warplift(&["interp", "examples/saxpy.wir", "--warp-width", "65"]);
    assert_fails_with(&o, "--warp-width must be 1 to 64, not 65");
    // Messages count in the singular too.
    let o = warplift(&[
        "interp",
        "examples/saxpy.wir",
        "--stats",
        "--grid",
        "1",
        "--block",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 thread in 1 block, "),
        "{}",
        stdout(&o)
    );
}
