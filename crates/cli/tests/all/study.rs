//! End-to-end tests of `warplift study`: a small study's rows against individual `warplift
//! run` calls, its plots and traces; sharding and merging; resuming; bad specs; and the
//! shipped specs in studies/.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn warplift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the warplift binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("warplift-study-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn corpus(name: &str) -> String {
    repo_root()
        .join("tests/corpus")
        .join(name)
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// The small study of the issue: 2 kernels x 2 pipelines x 2 warp widths, one traced run.
fn small_spec(dir: &Path) -> PathBuf {
    let spec = format!(
        r#"
name = "small"
baseline = "base"

[settings]
linearize_regions = "kernel"

[sweep]
warp_width = [4, 8]

[[kernels]]
files = ["{}", "{}"]

[[pipelines]]
name = "base"

[[pipelines]]
name = "O3"
passes = ["linearize"]
settings = {{ linearize_opt = 3 }}

[[traces]]
kernel = "if_else_diamond"
pipeline = "base"
machine = {{ warp_width = 4 }}
"#,
        corpus("if_else_diamond.wir"),
        corpus("short_circuit_fig1.wir")
    );
    let path = dir.join("small.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

fn run_study(spec: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "study",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ];
    args.extend(extra);
    warplift(&args)
}

/// The CSV as rows of named cells.
fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            // The small study's cells hold no commas (errors are empty).
            head.iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

/// The CSV without its timing columns.
fn csv_without_timings(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let skip: Vec<usize> = head
        .iter()
        .enumerate()
        .filter(|(_, h)| **h == "compile_ms" || **h == "run_ms")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(skip.len(), 2, "{text}");
    text.lines()
        .map(|l| {
            l.split(',')
                .enumerate()
                .filter(|(i, _)| !skip.contains(i))
                .map(|(_, c)| c)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON rows without their timings.
fn json_without_timings(path: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for row in v.as_array_mut().unwrap() {
        let o = row.as_object_mut().unwrap();
        o.remove("compile_ms");
        o.remove("run_ms");
    }
    v
}

#[test]
fn a_small_study_matches_individual_runs_and_draws_its_series() {
    let dir = temp_dir("small");
    let spec = small_spec(&dir);
    let out = dir.join("out");
    let o = run_study(&spec, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&out.join("results.csv"));
    let keys: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {} {}", r["kernel"], r["pipeline"], r["warp_width"]))
        .collect();
    assert_eq!(
        keys,
        [
            "if_else_diamond base 4",
            "if_else_diamond O3 4",
            "if_else_diamond base 8",
            "if_else_diamond O3 8",
            "short_circuit_fig1 base 4",
            "short_circuit_fig1 O3 4",
            "short_circuit_fig1 base 8",
            "short_circuit_fig1 O3 8",
        ]
    );
    // Every number equals that of `warplift run --stats --json` with the same settings.
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        let mut args = vec![
            "run",
            r["file"].as_str(),
            "--stats",
            "--json",
            "--warp-width",
        ];
        args.push(r["warp_width"].as_str());
        args.extend(["--set", "linearize_regions=kernel"]);
        if r["pipeline"] == "O3" {
            args.extend(["--passes", "linearize", "--set", "linearize_opt=3"]);
        }
        let o = warplift(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let stats = &json["stats"];
        for (column, stat) in [
            ("cycles", &stats["cycles"]),
            ("warp_instructions", &stats["warp_instructions"]),
            ("thread_instructions", &stats["thread_instructions"]),
            ("max_stack_depth", &stats["max_stack_depth"]),
            ("transactions_global", &stats["transactions"]["global"]),
            ("transactions_shared", &stats["transactions"]["shared"]),
            ("transactions_local", &stats["transactions"]["local"]),
        ] {
            assert_eq!(r[column], stat.to_string(), "{column} of {r:?}");
        }
        for column in ["simt_efficiency", "occupancy"] {
            let ours: f64 = r[column].parse().unwrap();
            assert_eq!(ours, stats[column].as_f64().unwrap(), "{column} of {r:?}");
        }
        // The static numbers equal those `warplift compile --stats` prints:
        // `%k: N IR instructions -> L lowered -> F final in B blocks; ...`.
        let object = dir.join("k.o");
        let mut args = vec!["compile", r["file"].as_str(), "--stats", "-o"];
        args.push(object.to_str().unwrap());
        args.extend(["--set", "linearize_regions=kernel"]);
        if r["pipeline"] == "O3" {
            args.extend(["--passes", "linearize", "--set", "linearize_opt=3"]);
        }
        let o = warplift(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let tail = err.split(" -> ").nth(2).unwrap_or_else(|| panic!("{err}"));
        let words: Vec<&str> = tail.split_whitespace().collect();
        assert_eq!(words[1..3], ["final", "in"], "{err}");
        assert_eq!(r["static_instructions"], words[0], "{err}");
        assert_eq!(r["static_blocks"], words[3], "{err}");
    }
    // Linearization removes Figure 1's redundant executions at width 4 (the paper's 3).
    let fig1 = |p: &str| {
        rows.iter()
            .find(|r| {
                r["kernel"] == "short_circuit_fig1" && r["pipeline"] == p && r["warp_width"] == "4"
            })
            .unwrap()["redundant_block_executions"]
            .clone()
    };
    assert_eq!((fig1("base").as_str(), fig1("O3").as_str()), ("3", "0"));
    // The JSON has the same rows.
    let json = json_without_timings(&out.join("results.json"));
    assert_eq!(json.as_array().unwrap().len(), 8);
    assert_eq!(json[0]["key"], "if_else_diamond|base|warp_width=4");
    // The plots parse as XML and name their series.
    let plots = out.join("plots");
    let expect: [(&str, &[&str]); 4] = [
        (
            "speedup-bars.svg",
            &["O3", "if_else_diamond", "short_circuit_fig1"],
        ),
        ("speedup-box.svg", &["O3"]),
        ("static-size.svg", &["O3"]),
        ("cycles-over-warp_width.svg", &["base", "O3", "warp_width"]),
    ];
    for (file, series) in expect {
        let text = std::fs::read_to_string(plots.join(file)).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect();
        for s in series {
            assert!(
                texts.iter().any(|t| t == s),
                "{file} lacks series {s}: {texts:?}"
            );
        }
    }
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    for link in [
        "summary.md",
        "results.csv",
        "plots/speedup-bars.svg",
        "traces/",
    ] {
        assert!(index.contains(link), "{index}");
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("| short_circuit_fig1 | 3 | 0 |"),
        "{summary}"
    );
}

#[test]
fn a_traced_runs_slices_are_its_block_executions() {
    let dir = temp_dir("trace");
    let spec = small_spec(&dir);
    let out = dir.join("out");
    let o = run_study(&spec, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace_path = out.join("traces/if_else_diamond--base--warp_width=4.json");
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(!events.is_empty());
    // One slice per block execution, per block.
    let mut slices: BTreeMap<String, u64> = BTreeMap::new();
    let mut tracks = std::collections::BTreeSet::new();
    for e in events {
        assert_eq!(e["ph"], "X");
        let lanes = e["args"]["lanes"].as_u64().unwrap();
        assert!((1..=4).contains(&lanes), "{e}");
        *slices
            .entry(e["name"].as_str().unwrap().to_string())
            .or_default() += 1;
        tracks.insert((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()));
    }
    let o = warplift(&[
        "run",
        &corpus("if_else_diamond.wir"),
        "--json",
        "--warp-width",
        "4",
        "--set",
        "linearize_regions=kernel",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let executions: BTreeMap<String, u64> =
        serde_json::from_value(json["stats"]["block_executions"].clone()).unwrap();
    let executions: BTreeMap<String, u64> =
        executions.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(slices, executions);
    // 16 threads at width 4: four warps, each on its own track.
    assert_eq!(tracks.len(), 4, "{tracks:?}");
}

#[test]
fn sharded_then_merged_equals_unsharded() {
    let dir = temp_dir("shard");
    let spec = small_spec(&dir);
    let whole = dir.join("whole");
    let o = run_study(&spec, &whole, &["-j", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut shards = Vec::new();
    for i in 1..=3 {
        let d = dir.join(format!("shard{i}"));
        let o = run_study(&spec, &d, &["--shard", &format!("{i}/3")]);
        assert!(o.status.success(), "{}", stderr(&o));
        // A shard holds its own part only.
        let n = csv_rows(&d.join("results.csv")).len();
        assert_eq!(n, [3, 3, 2][i - 1]);
        shards.push(d);
    }
    let merged = dir.join("merged");
    let mut args = vec!["study", "merge"];
    let names: Vec<String> = shards.iter().map(|d| d.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let merged_name = merged.display().to_string();
    args.extend(["--out", &merged_name]);
    let o = warplift(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    for file in [
        "summary.md",
        "index.md",
        "plots/speedup-bars.svg",
        "plots/speedup-box.svg",
        "plots/static-size.svg",
        "plots/cycles-over-warp_width.svg",
        "traces/if_else_diamond--base--warp_width=4.json",
    ] {
        let a = std::fs::read(whole.join(file)).unwrap();
        let b = std::fs::read(merged.join(file)).unwrap();
        assert!(a == b, "{file} differs");
    }
    assert_eq!(
        csv_without_timings(&whole.join("results.csv")),
        csv_without_timings(&merged.join("results.csv"))
    );
    assert_eq!(
        json_without_timings(&whole.join("results.json")),
        json_without_timings(&merged.join("results.json"))
    );
    // Merging an incomplete set of shards says what is missing, and fails.
    let o = warplift(&[
        "study",
        "merge",
        &names[0],
        "--out",
        &dir.join("part").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("runs are in none of the directories"),
        "{}",
        stderr(&o)
    );
    // Shards of another study do not merge.
    let other = dir.join("other.toml");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("[4, 8]", "[4, 16]");
    std::fs::write(&other, text).unwrap();
    let o = run_study(&other, &dir.join("other"), &["--shard", "1/3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = warplift(&[
        "study",
        "merge",
        &names[0],
        &dir.join("other").display().to_string(),
        "--out",
        &dir.join("bad").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("only shards of one study merge"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_interrupted_study_resumes_where_it_stopped() {
    let dir = temp_dir("resume");
    let spec = small_spec(&dir);
    let out = dir.join("out");
    let o = run_study(&spec, &out, &["--max-runs", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("5 runs not done yet"), "{}", stderr(&o));
    let log = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 3);
    // A line cut short by a kill is ignored.
    std::fs::write(out.join("runs.jsonl"), format!("{log}{{\"key\": \"if_else")).unwrap();
    let o = run_study(&spec, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("8 of 8 runs done (3 from earlier results, 5 run now)"),
        "{}",
        stderr(&o)
    );
    let o = run_study(&spec, &out, &[]);
    assert!(
        stderr(&o).contains("(8 from earlier results, 0 run now)"),
        "{}",
        stderr(&o)
    );
    // The resumed study equals one run at once.
    let whole = dir.join("whole");
    let o = run_study(&spec, &whole, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        csv_without_timings(&whole.join("results.csv")),
        csv_without_timings(&out.join("results.csv"))
    );
    assert_eq!(
        std::fs::read(whole.join("summary.md")).unwrap(),
        std::fs::read(out.join("summary.md")).unwrap()
    );
    // A changed pipeline makes its results stale: only its runs run again.
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("linearize_opt = 3", "linearize_opt = 2");
    std::fs::write(&spec, text).unwrap();
    let o = run_study(&spec, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("(4 from earlier results, 4 run now)"),
        "{}",
        stderr(&o)
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_keeps_the_finished_runs() {
    let dir = temp_dir("sigint");
    let spec = dir.join("corpus.toml");
    let corpus_dir = repo_root().join("tests/corpus").canonicalize().unwrap();
    std::fs::write(
        &spec,
        format!(
            "name = \"corpus\"\n[[kernels]]\nfiles = \"{}/*.wir\"\n[[pipelines]]\nname = \"base\"\n\
             [[pipelines]]\nname = \"O3\"\npasses = [\"linearize\"]\nsettings = {{ linearize_opt = 3 }}\n",
            corpus_dir.display()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args([
            "study",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
            "-j",
            "1",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a first result, then interrupt.
    let log = out.join("runs.jsonl");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&log).map_or(0, |t| t.lines().count()) == 0 {
        assert!(start.elapsed().as_secs() < 60, "no run finished");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    // Two pipelines over every corpus kernel.
    let kernels = warplift_filetests::Walk::corpus().files().len();
    let total = 2 * kernels;
    let kept = std::fs::read_to_string(&log).unwrap().lines().count();
    if output.status.code() == Some(0) {
        // The study finished before the signal arrived: nothing to check.
        assert_eq!(kept, total);
        return;
    }
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(kept > 0 && kept < total, "{kept}");
    let o = run_study(&spec, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "({kept} from earlier results, {} run now)",
            total - kept
        )),
        "{}",
        stderr(&o)
    );
}

/// A race: each thread sets its flag, then reads its right neighbour's. The interpreter
/// runs thread 0 to the end before thread 1 starts, so thread 0 sees 0; a warp runs both
/// stores before both loads, so lane 0 sees 1.
const RACE: &str = "kernel %race(flags: i64, out: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = uextend.i64 v2
    v4 = iconst.i64 2
    v5 = ishl v3, v4
    v6 = iadd v0, v5
    v7 = iconst.i32 1
    store global v7, v6
    v8 = iconst.i64 4
    v9 = iadd v6, v8
    v10 = load.i32 global v9
    v11 = iadd v1, v5
    store global v10, v11
    return
}
";

#[test]
fn faulting_and_mismatched_runs_are_recorded_and_the_study_goes_on() {
    let dir = temp_dir("fault");
    std::fs::write(dir.join("race.wir"), RACE).unwrap();
    let spec = dir.join("fault.toml");
    std::fs::write(
        &spec,
        format!(
            "name = \"fault\"\n[sweep]\nmax_warp_instructions = [5, 1000000]\n[[kernels]]\nfiles = \"{}\"\n\
             [[kernels]]\nfiles = \"race.wir\"\n\
             launch = {{ grid = [1], block = [2], buffers.flags = {{ type = \"i32\", len = 3, init = \"zeros\" }}, \
             buffers.out = {{ type = \"i32\", len = 2, init = \"zeros\" }} }}\n\
             [[pipelines]]\nname = \"base\"\n",
            corpus("if_else_diamond.wir")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = run_study(&spec, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let rows = json.as_array().unwrap();
    let status: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        [
            ("if_else_diamond|base|max_warp_instructions=5", "failed"),
            ("if_else_diamond|base|max_warp_instructions=1000000", "ok"),
            ("race|base|max_warp_instructions=5", "failed"),
            ("race|base|max_warp_instructions=1000000", "mismatch"),
        ]
    );
    let error = rows[0]["error"].as_str().unwrap();
    assert!(error.contains("the emulator failed"), "{error}");
    assert!(stderr(&o).contains(error), "{}", stderr(&o));
    // A mismatch is never tabulated: no dynamic numbers, only its static ones.
    let race = &rows[3];
    assert!(race["error"]
        .as_str()
        .unwrap()
        .contains("differs from the reference interpreter's"));
    assert!(race["metrics"].get("cycles").is_none(), "{race}");
    assert!(race["metrics"]["static_instructions"].as_f64().unwrap() > 0.0);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("## Failed runs (3)"), "{summary}");
    assert!(summary.contains("| race | MISMATCH |"), "{summary}");
    assert!(
        summary.contains("| if_else_diamond | FAILED |"),
        "{summary}"
    );
}

#[test]
fn bad_specs_name_the_line_and_the_key() {
    let dir = temp_dir("bad");
    let kernel = corpus("if_else_diamond.wir");
    let good = format!(
        "name = \"bad\"\n[[kernels]]\nfiles = \"{kernel}\"\n[[pipelines]]\nname = \"base\"\n"
    );
    let cases: Vec<(String, &str)> = vec![
        (
            "name = \"bad\"\n[[kernels]]\nfiles = \"no/such/*.wir\"\n[[pipelines]]\nname = \"b\"\n"
                .into(),
            ":3: kernels[0].files: `no/such/*.wir` names no kernel file",
        ),
        (
            format!("{good}[[pipelines]]\nname = \"m\"\npasses = [\"nonesuch\"]\n"),
            ":8: pipelines[1].passes: unknown pass `nonesuch`",
        ),
        (
            format!("{good}settings = {{ no_such_setting = 1 }}\n"),
            ":6: pipelines[0].settings.no_such_setting: unknown setting `no_such_setting`",
        ),
        (
            format!("{good}settings = {{ linearize_opt = \"high\" }}\n"),
            ":6: pipelines[0].settings.linearize_opt:",
        ),
        (
            format!(
                "{good}[[paper]]\nwhat = \"x\"\npaper = 1.0\nmetric = \"cycles\"\n\
                 pipeline = \"base\"\nkernels = [\"nope*\"]\n"
            ),
            ":11: paper[0].kernels: no kernel of the study matches",
        ),
        (
            format!(
                "{good}[[paper]]\nwhat = \"x\"\npaper = 1.0\nmetric = \"speed\"\n\
                 pipeline = \"base\"\n"
            ),
            ":9: paper[0].metric: unknown quantity `speed`",
        ),
        (
            format!("{good}[sweep]\nwarp_width = [8]\nwarp_wdth = [4]\n"),
            ":8: sweep.warp_wdth: unknown machine parameter",
        ),
        (
            format!("{good}[sweep]\nwarp_width = [8, \"wide\"]\n"),
            ":7: sweep.warp_width: value \"wide\"",
        ),
        (
            format!("{good}[sweep]\nwarp_width = 8\n"),
            ":7: sweep.warp_width: expected a list of values",
        ),
        (
            format!("{good}[machine]\nwarp_width = 1000\n"),
            ":6: machine:",
        ),
        (
            format!("baseline = 3\n{good}"),
            ":1: `baseline = 3`: invalid type: integer `3`, expected a string",
        ),
        (
            format!("colour = \"red\"\n{good}"),
            ":1: `colour = \"red\"`: unknown field `colour`",
        ),
        (
            format!("{good}[[traces]]\nkernel = \"nope\"\npipeline = \"base\"\n"),
            ":7: traces[0].kernel: no kernel is called `nope`",
        ),
        (
            format!("{good}[[plots]]\nkind = \"pie\"\n"),
            ":7: plots[0].kind: unknown kind of plot `pie`",
        ),
        (
            format!("{good}[[plots]]\nkind = \"lines\"\nx = \"sms\"\n"),
            ":8: plots[0].x: `sms` is not a swept parameter",
        ),
        (
            format!("{good}[[kernels]]\nfiles = \"{kernel}\"\n"),
            ":7: kernels[1]: a kernel named `if_else_diamond` is already in the study",
        ),
        (
            format!("{good}[[kernels]]\nfiles = \"{kernel}\"\nkernel = \"other\"\nname = \"x\"\n"),
            ":8: kernels[1].kernel:",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let spec = dir.join(format!("bad{i}.toml"));
        std::fs::write(&spec, text).unwrap();
        let o = warplift(&["study", spec.to_str().unwrap(), "--dry-run"]);
        assert_eq!(o.status.code(), Some(1), "case {i}: {}", stderr(&o));
        let err = stderr(&o);
        let want = format!("error: {}{expected}", spec.display());
        assert!(
            err.starts_with(&want),
            "case {i}: expected {want:?}, got {err}"
        );
    }
}

/// Every spec in studies/.
fn shipped_specs() -> Vec<String> {
    let mut specs: Vec<String> = std::fs::read_dir(repo_root().join("studies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| format!("studies/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    specs.sort();
    specs
}

#[test]
fn every_shipped_spec_plans() {
    let specs = shipped_specs();
    assert_eq!(specs.len(), 5, "{specs:?}");
    for spec in &specs {
        let o = warplift(&["study", spec, "--dry-run"]);
        assert!(o.status.success(), "{spec}: {}", stderr(&o));
    }
    let o = warplift(&["study", "studies/anantpur-sensitivity.toml", "--dry-run"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.starts_with(
            "study anantpur-sensitivity: 252 runs (7 kernels x 3 pipelines x 12 machines)"
        ),
        "{text}"
    );
}

/// Every shipped spec runs end to end: a sample of each (one run in 40, as a shard) is
/// compiled, run and checked against the interpreter, cheaply; whole studies are left to
/// docs/studies.md's commands.
#[test]
fn a_sample_of_every_shipped_spec_runs() {
    let dir = temp_dir("shipped");
    for spec in shipped_specs() {
        let name = Path::new(&spec)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = dir.join(&name);
        let o = warplift(&[
            "study",
            &spec,
            "--shard",
            "1/40",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{spec}: {}", stderr(&o));
        let rows = std::fs::read_to_string(out.join("results.csv")).unwrap();
        assert!(rows.lines().count() > 1, "{spec}: {rows}");
    }
}

/// The whole CSC study is small: it runs, and prints the paper's number beside ours.
#[test]
fn the_csc_study_runs_and_prints_the_papers_number() {
    let dir = temp_dir("csc");
    let out = dir.join("out");
    let o = warplift(&[
        "study",
        "studies/csc-microbenchmarks.toml",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let line = summary
        .lines()
        .find(|l| l.contains("up to 26x"))
        .unwrap_or_else(|| panic!("{summary}"));
    // | what | pipeline | quantity | paper | warplift |
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    assert_eq!(cells[2], "converge", "{line}");
    assert_eq!(cells[3], "min of transactions_global", "{line}");
    assert_eq!(cells[4], "0.038", "{line}");
    let ours: f64 = cells[5].parse().unwrap_or_else(|_| panic!("{line}"));
    // The 32-way fan-out: 160 of 4128 global transactions are left at width 32.
    assert_eq!(cells[5], "0.039", "{line}");
    assert!(ours > 0.0 && ours < 1.0, "{line}");
}
