//! End-to-end tests of `warplift classify` and of the `restructure` pass from the command
//! line.

use crate::common;
use common::*;

#[test]
fn classify_prints_classes_subgraphs_and_the_table() {
    let o = warplift(&[
        "classify",
        "tests/corpus/short_circuit_fig1.wir",
        "tests/corpus/if_else_diamond.wir",
        "tests/corpus/irreducible_loop.wir",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("%short_circuit_fig1: reducible, acyclic, 7 blocks"),
        "{text}"
    );
    assert!(
        text.contains(
            "unstructured subgraph block1 .. block6: blocks block2 block3 block5 block4; holds a divergent branch"
        ),
        "{text}"
    );
    assert!(
        text.contains("%if_else_diamond: tail-structured, acyclic"),
        "{text}"
    );
    assert!(
        text.contains("%irreducible_loop: irreducible, cyclic"),
        "{text}"
    );
    assert!(text.contains("total                   3"), "{text}");
}

#[test]
fn classify_json_is_one_object_with_kernels_and_table() {
    let o = warplift(&["classify", "--json", "tests/corpus/loop_jump_out_fig5.wir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let k = &v["kernels"][0];
    assert_eq!(k["class"], "reducible");
    assert_eq!(k["cyclic"], true);
    assert_eq!(k["unstructured"][0]["divergent"], true);
    assert_eq!(v["table"]["reducible"]["cyclic"], 1);
}

#[test]
fn classify_reports_a_missing_file_as_an_error() {
    let o = warplift(&["classify", "tests/corpus/no_such_kernel.wir"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no_such_kernel"), "{}", stderr(&o));
}
