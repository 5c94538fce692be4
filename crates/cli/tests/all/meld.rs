//! `--passes meld` from the command line: listed, configurable, run by `run`, and drawn
//! by `cfg --dot` with its melded and unpredicated blocks marked.

use crate::common;
use common::*;

#[test]
fn meld_is_listed_with_its_settings_and_refuses_bad_thresholds() {
    let passes = String::from_utf8(warplift(&["passes"]).stdout).unwrap();
    assert!(passes.lines().any(|l| l.starts_with("meld ")), "{passes}");
    let settings = String::from_utf8(warplift(&["settings"]).stdout).unwrap();
    for name in [
        "meld_threshold",
        "meld_branch_fusion",
        "meld_align_limit",
        "meld_if_convert",
        "block_size_hint",
        "warp_width_hint",
    ] {
        assert!(
            settings.lines().any(|l| l.starts_with(name)),
            "{name}:\n{settings}"
        );
    }
    for bad in [
        "meld_threshold=2",
        "meld_threshold=-0.1",
        "meld_threshold=x",
        "warp_width_hint=65",
    ] {
        let o = warplift(&[
            "run",
            "tests/corpus/meld_sb1.wir",
            "--passes",
            "meld",
            "--set",
            bad,
        ]);
        assert!(!o.status.success(), "{bad}");
    }
}

#[test]
fn run_with_meld_keeps_the_results_and_saves_cycles() {
    let base = [
        "run",
        "tests/corpus/meld_sb1.wir",
        "--warp-width",
        "32",
        "--json",
    ];
    let plain = json(&base);
    let melded = json(&[&base[..], &["--passes", "meld"]].concat());
    assert_eq!(plain["buffers"], melded["buffers"]);
    let cycles = |v: &serde_json::Value| v["stats"]["cycles"].as_u64().unwrap();
    assert!(cycles(&melded) < cycles(&plain), "{plain}\n{melded}");
}

#[test]
fn cfg_dot_after_meld_marks_melded_and_unpredicated_blocks() {
    let file = "tests/corpus/meld_bitonic_fig4.wir";
    let draw = |extra: &[&str]| {
        let mut args = vec!["cfg", file, "--dot", "--passes", "meld", "--after", "meld"];
        args.extend_from_slice(extra);
        let o = warplift(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let dot = draw(&[]);
    assert!(dot.contains("melded") && dot.contains("palegreen"), "{dot}");
    assert!(!dot.contains("unpredicated"), "{dot}");
    // Unpredicated compares (Fig. 4d) do not pay; the cost model is off at threshold 0.
    let dot = draw(&[
        "--set",
        "meld_if_convert=false",
        "--set",
        "meld_threshold=0",
    ]);
    assert_eq!(dot.matches("lightsalmon").count(), 2, "{dot}");
    let plain = warplift(&["cfg", file, "--dot"]);
    assert!(!String::from_utf8(plain.stdout).unwrap().contains("melded"));
}
