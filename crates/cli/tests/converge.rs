//! `--passes converge` from the command line: listed, configurable, and run by `run`.

mod common;
use common::*;

#[test]
fn converge_is_listed_with_its_settings() {
    let passes = String::from_utf8(warplift(&["passes"]).stdout).unwrap();
    assert!(
        passes.lines().any(|l| l.starts_with("converge ")),
        "{passes}"
    );
    let settings = String::from_utf8(warplift(&["settings"]).stdout).unwrap();
    for name in [
        "converge_threshold",
        "converge_rename",
        "converge_hoist",
        "converge_sink",
        "converge_split",
        "converge_split_cost",
        "converge_flatten",
    ] {
        assert!(
            settings.lines().any(|l| l.starts_with(name)),
            "{name}:\n{settings}"
        );
    }
    let o = warplift(&[
        "run",
        "tests/corpus/csc_micro_switch.wir",
        "--passes",
        "converge",
        "--set",
        "converge_threshold=-1",
    ]);
    assert!(!o.status.success());
}

#[test]
fn run_with_converge_keeps_the_results_and_raises_efficiency() {
    let file = "tests/corpus/csc_micro_switch.wir";
    let base = ["run", file, "--warp-width", "32", "--json"];
    let plain = json(&base);
    let converged = json(&[&base[..], &["--passes", "converge"]].concat());
    let held_back = json(
        &[
            &base[..],
            &["--passes", "converge", "--set", "converge_threshold=100000"],
        ]
        .concat(),
    );
    assert_eq!(plain["buffers"], converged["buffers"]);
    let eff = |v: &serde_json::Value| v["stats"]["simt_efficiency"].as_f64().unwrap();
    assert!(
        (eff(&plain) - 101.0 / 196.0).abs() < 1e-9,
        "{}",
        eff(&plain)
    );
    assert!(
        (eff(&converged) - 101.0 / 136.0).abs() < 1e-9,
        "{}",
        eff(&converged)
    );
    assert_eq!(eff(&held_back), eff(&plain));
}
