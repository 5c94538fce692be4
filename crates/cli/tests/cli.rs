//! End-to-end tests of the `warplift` binary: exit codes, messages and output shapes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn warplift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the warplift binary runs")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
