//! End-to-end tests of what makes large launches usable from the command line: large
//! buffers summarised unless asked for (`--print all|none|NAME`), JSON with summaries, and
//! an infinite loop stopped by the per-warp runaway budget with a precise message.

use std::path::PathBuf;
use std::process::Command;

use crate::common;
use common::*;

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warplift-scale-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// `out[i] = i` for 2048 threads, and a small buffer `tiny` left as initialised.
const IOTA: &str = "kernel %iota(out: i64, tiny: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = block_id x
    v4 = block_dim x
    v5 = imul v3, v4
    v6 = iadd v5, v2
    v7 = uextend.i64 v6
    v8 = iconst.i64 2
    v9 = ishl v7, v8
    v10 = iadd v0, v9
    store global v6, v10
    return
}
";

const IOTA_LAUNCH: &str = "grid = [8]
block = [256]
[buffers.out]
type = \"i32\"
len = 2048
init = \"zeros\"
[buffers.tiny]
type = \"i32\"
len = 3
init = \"iota\"
";

fn iota() -> String {
    let wir = temp_file("iota.wir", IOTA);
    temp_file("iota.launch.toml", IOTA_LAUNCH);
    wir.to_string_lossy().into_owned()
}

#[test]
fn large_buffers_are_summarised_unless_asked_for() {
    let wir = iota();
    for cmd in ["run", "interp"] {
        let o = warplift(&[cmd, &wir]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..3],
            [
                "out: i32[2048] (summary: --print out for every element)",
                "  [   0] 0 1 2 3 4 5 6 7",
                "  [2040] 2040 2041 2042 2043 2044 2045 2046 2047",
            ],
            "{cmd}: {text}"
        );
        assert!(lines[3].starts_with("  fnv1a64 0x"), "{text}");
        // Small buffers still print in full.
        assert_eq!(lines[4..], ["tiny: i32[3]", "  [0] 0 1 2"], "{text}");
    }
    // Both tools computed the same memory: the same checksum.
    let sum = |cmd| {
        stdout(&warplift(&[cmd, &wir]))
            .lines()
            .nth(3)
            .unwrap()
            .to_owned()
    };
    assert_eq!(sum("run"), sum("interp"));
    // Every element of every buffer.
    let all = stdout(&warplift(&["run", &wir, "--print", "all"]));
    assert_eq!(all.lines().count(), 1 + 2048 / 8 + 2, "{all}");
    assert!(all.contains("\n  [2040] 2040 2041 2042 2043 2044 2045 2046 2047\n"));
    // One buffer, in full.
    let out = stdout(&warplift(&["interp", &wir, "--print", "out"]));
    assert_eq!(out.lines().count(), 1 + 2048 / 8, "{out}");
    // Nothing, but the statistics.
    let o = warplift(&["run", &wir, "--print", "none", "--stats"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).trim_start().starts_with("kernel %iota"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn json_summarises_large_buffers_as_objects() {
    let wir = iota();
    let o = warplift(&["run", &wir, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    let out = &j["buffers"]["out"];
    assert_eq!(out["len"], 2048);
    assert_eq!(out["type"], "i32");
    assert_eq!(out["first"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
    assert_eq!(out["last"][7], 2047);
    assert_eq!(j["buffers"]["tiny"], serde_json::json!([0, 1, 2]));
    assert_eq!(j["kernel"], "iota");
    assert_eq!(j["stats"]["thread_blocks"], 8);
    let o = warplift(&["run", &wir, "--json", "--print", "all"]);
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(j["buffers"]["out"].as_array().unwrap().len(), 2048);
    let o = warplift(&["interp", &wir, "--json", "--print", "none"]);
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(j["buffers"], serde_json::json!({}));
}

#[test]
fn an_infinite_loop_stops_with_a_runaway_fault_naming_the_thread_and_line() {
    // Thread 5 of block 3 never leaves the loop; the other threads end.
    let wir = temp_file(
        "spin.wir",
        "kernel %spin(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = block_id x
    v3 = iconst.i32 0
    v4 = iconst.i32 5
    v5 = iconst.i32 3
    v6 = icmp eq v1, v4
    v7 = icmp eq v2, v5
    v8 = band v6, v7
    jump block1(v3)
block1(v9: i32):
    v10 = iconst.i32 1
    v11 = iadd v9, v10
    v12 = icmp ult v11, v1
    v13 = bor v12, v8
    brif v13, block1(v11), block2
block2:
    return
}
",
    );
    temp_file(
        "spin.launch.toml",
        "grid = [64]\nblock = [64]\n[buffers.out]\ntype = \"i32\"\nlen = 1\ninit = \"zeros\"\n",
    );
    let o = warplift(&["run", wir.to_str().unwrap(), "--max-warp-steps", "5000"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("runaway warp"), "{e}");
    assert!(e.contains("block (3,0,0), thread (5,0,0)"), "{e}");
    assert!(e.contains("in block1"), "{e}");
    assert!(e.contains("spin.wir:1"), "{e}");
}

#[test]
fn functional_runs_print_the_timed_buffers_and_counts_without_cycles() {
    let wir = iota();
    let timed = warplift(&["run", &wir, "--print", "all", "--json"]);
    let functional = warplift(&["run", &wir, "--print", "all", "--json", "--functional"]);
    assert!(functional.status.success(), "{}", stderr(&functional));
    let t: serde_json::Value = serde_json::from_str(&stdout(&timed)).unwrap();
    let f: serde_json::Value = serde_json::from_str(&stdout(&functional)).unwrap();
    assert_eq!(t["buffers"], f["buffers"]);
    for key in [
        "warp_instructions",
        "thread_instructions",
        "block_executions",
    ] {
        assert_eq!(t["stats"][key], f["stats"][key], "{key}");
    }
    assert_eq!(f["stats"]["cycles"], 0);
    let o = warplift(&["run", &wir, "--functional", "--trace", "t.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn ctrl_c_stops_a_run_and_prints_where_each_warp_stood() {
    let wir = temp_file(
        "forever.wir",
        "kernel %forever(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 0
    jump block1(v2)
block1(v3: i32):
    v4 = iadd v3, v1
    jump block1(v4)
}
",
    );
    temp_file(
        "forever.launch.toml",
        "grid = [2]\nblock = [64]\n[buffers.out]\ntype = \"i32\"\nlen = 1\ninit = \"zeros\"\n",
    );
    let child = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args([
            "run",
            wir.to_str().unwrap(),
            "--max-warp-steps",
            "1000000000000",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(
        e.contains("run of kernel %forever interrupted after"),
        "{e}"
    );
    // Two blocks of two warps, each named with its next instruction and source line.
    for block in ["block (0,0,0)", "block (1,0,0)"] {
        assert!(
            e.contains(&format!("{block} warp of thread (0,0,0)")),
            "{e}"
        );
        assert!(
            e.contains(&format!("{block} warp of thread (32,0,0)")),
            "{e}"
        );
    }
    assert!(e.contains("in block1"), "{e}");
    assert!(e.contains("warp-instructions"), "{e}");
}
