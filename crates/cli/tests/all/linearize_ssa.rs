//! `--passes linearize_ssa` on the command line: `run`, `compile` and `cfg` take the
//! SSA-level linearization like any registered pass.

use crate::common;
use common::*;

#[test]
fn run_compile_and_cfg_take_linearize_ssa() {
    let fig1 = "tests/corpus/short_circuit_fig1.wir";
    for mode in ["kernel", "divergent"] {
        let setting = format!("linearize_regions={mode}");
        let out = ok(&warplift(&[
            "run",
            fig1,
            "--warp-width",
            "4",
            "--passes",
            "linearize_ssa",
            "--set",
            &setting,
            "--json",
        ]));
        let run: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            run["buffers"]["out"],
            serde_json::json!([1346, 1356, 12356, 1256])
        );
        let execs = &run["stats"]["block_executions"];
        for b in 0..7 {
            assert_eq!(execs[format!("block{b}")], 1, "{mode}: block{b}: {execs}");
        }
    }
    let ptx = ok(&warplift(&[
        "compile",
        fig1,
        "--target",
        "ptx",
        "--passes",
        "linearize_ssa",
    ]));
    assert!(ptx.contains(".entry"), "{ptx}");
    let cfg = ok(&warplift(&[
        "cfg",
        fig1,
        "--passes",
        "linearize_ssa",
        "--after",
        "linearize_ssa",
    ]));
    // The four guard blocks the pass made are IR blocks, numbered after block6.
    for b in 7..=10 {
        assert!(cfg.contains(&format!("(block{b})")), "{cfg}");
    }
    assert!(ok(&warplift(&["passes"])).contains("linearize_ssa"));
}
