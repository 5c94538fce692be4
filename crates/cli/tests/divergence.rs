//! Filetests of `warplift divergence`: every `tests/divergence/NAME.wir` holds a kernel
//! of one shape (loops with divergent exits, nested loops, irreducible cycles, joins of
//! uniform values, constant block parameters) followed by the command's expected output
//! for each target, as comment lines after a `; expect --target T` line:
//!
//! ```text
//! kernel %k(...) { ... }
//!
//! ; expect --target simt
//! ; kernel %k (reconvergence: ipdom)
//! ; ...
//! ; expect --target ptx
//! ; ...
//! ```
//!
//! The output must match exactly. When the analysis changes on purpose, rerun with
//! `WARPLIFT_BLESS=1 cargo test -p warplift-cli --test divergence` to rewrite the
//! expectations, and review the diff.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets every file is checked for, in the order their expectations appear.
const TARGETS: [&str; 2] = ["simt", "ptx"];

const EXPECT: &str = "; expect --target ";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/divergence")
}

fn actual(path: &Path, target: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(["divergence", "--target", target])
        .arg(path)
        .output()
        .expect("the warplift binary runs");
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The source part of a filetest and its expectations by target.
fn split(text: &str) -> (String, Vec<(String, String)>) {
    let mut source = String::new();
    let mut expected: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(target) = line.strip_prefix(EXPECT) {
            expected.push((target.trim().to_string(), String::new()));
        } else if let Some((_, body)) = expected.last_mut() {
            let content = line
                .strip_prefix("; ")
                .or_else(|| line.strip_prefix(';'))
                .unwrap_or(line);
            body.push_str(content);
            body.push('\n');
        } else {
            source.push_str(line);
            source.push('\n');
        }
    }
    (source.trim_end().to_string(), expected)
}

fn render(source: &str, outputs: &[(&str, String)]) -> String {
    let mut text = format!("{source}\n");
    for (target, output) in outputs {
        text.push_str(&format!("\n{EXPECT}{target}\n"));
        for line in output.lines() {
            text.push_str(&format!("; {line}\n"));
        }
    }
    text
}

#[test]
fn divergence_filetests() {
    let bless = std::env::var_os("WARPLIFT_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/divergence exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "only {} filetests", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (source, expected) = split(&text);
        let outputs: Vec<(&str, String)> = TARGETS.iter().map(|&t| (t, actual(path, t))).collect();
        let rendered = render(&source, &outputs);
        if rendered == text {
            continue;
        }
        if bless {
            std::fs::write(path, rendered).unwrap();
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy();
        for (target, output) in &outputs {
            match expected.iter().find(|(t, _)| t == target) {
                Some((_, want)) if want == output => {}
                Some((_, want)) => failures.push(format!(
                    "{name} --target {target}:\n--- expected\n{want}--- actual\n{output}"
                )),
                None => failures.push(format!("{name}: no expectation for --target {target}")),
            }
        }
        if failures.is_empty() {
            failures.push(format!(
                "{name}: the expectations are not in canonical form"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(WARPLIFT_BLESS=1 rewrites the expectations)",
        failures.join("\n")
    );
}

#[test]
fn bad_arguments_are_clear_errors() {
    let file = dir().join("nested_loops.wir");
    for (args, needle) in [
        (vec!["--target", "gpu"], "unknown target `gpu`"),
        (vec!["--kernel", "nope"], "has no kernel %nope"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_warplift"))
            .arg("divergence")
            .args(&args)
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // One kernel by name, and a triple for the target.
    let out = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(["divergence", "--kernel", "%nested_loops", "--target"])
        .arg("nvptx64-nvidia-cuda")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with("kernel %nested_loops (reconvergence: independent)\n"));
}
