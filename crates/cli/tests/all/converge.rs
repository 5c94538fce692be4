//! `--passes converge` from the command line: listed, configurable, and run by `run`.

use crate::common;
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
        "converge_unify",
        "converge_joint_renaming",
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

/// `report` shows what `converge` does, alone and composed with `meld` and `restructure`
/// in either order (each column's memory checked against the interpreter): on the switch
/// over four bases (`csc_micro_bases`, width 32) every order issues fewer warp
/// instructions at a higher SIMT efficiency than the plain compilation.
#[test]
fn report_shows_the_effect_of_converge_in_any_order_with_meld_and_restructure() {
    let columns = [
        ("base", ""),
        ("conv", "converge"),
        ("mc", "meld,converge"),
        ("cm", "converge,meld"),
        ("rc", "restructure,converge"),
        ("cr", "converge,restructure"),
    ];
    let specs: Vec<String> = columns.iter().map(|(l, p)| format!("{l}={p}")).collect();
    let mut args = vec![
        "report",
        "tests/corpus/csc_micro_bases.wir",
        "--no-default-columns",
        "--warp-width",
        "32",
        "--json",
    ];
    for spec in &specs {
        args.extend(["--column", spec]);
    }
    let report = json(&args);
    assert_eq!(report["failures"], serde_json::json!([]), "{report:#}");
    let cols = report["kernels"][0]["columns"].as_array().unwrap();
    let dynamic = |label: &str| {
        let c = cols.iter().find(|c| c["label"] == label).unwrap();
        let d = &c["dynamic"];
        (
            d["warp_instructions"].as_u64().unwrap(),
            d["simt_efficiency"].as_f64().unwrap(),
        )
    };
    let base = dynamic("base");
    assert_eq!(base.0, 376);
    assert_eq!(dynamic("conv").0, 328);
    for (label, _) in &columns[1..] {
        let (insts, eff) = dynamic(label);
        assert!(insts < base.0 && eff > base.1, "{label}: {insts} {eff}");
    }
}
