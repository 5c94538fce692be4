//! Malformed kernels: every `tests/malformed/*.wir` must be rejected, by the parser or the
//! verifier, with one specific error.
//!
//! Each file is a filetest (see `warplift_filetests`): its header names the stage that
//! must reject it (`; test parse-error` or `; test verify`) and the error it must report
//! (`; error: LINE:COL: TEXT`). The position is part of the check, so an error reported
//! at the wrong place, by the wrong stage, or a different error, fails the test. Neither
//! stage may panic: a panic becomes a failure naming the file.

use warplift_filetests::run_filetests;

/// The fewest malformed inputs the suite may hold.
const MIN_FILES: usize = 24;

#[test]
fn malformed_inputs_fail_with_their_expected_error() {
    let summary = run_filetests(&["tests/malformed"]);
    assert_eq!(
        summary.skipped, 0,
        "malformed inputs without a `; test` line"
    );
    assert!(
        summary.files >= MIN_FILES,
        "{} malformed inputs, fewer than {MIN_FILES}",
        summary.files
    );
    // Every file is rejected by one of the two stages, and each says which.
    let by_stage = summary.commands.get("parse-error").copied().unwrap_or(0)
        + summary.commands.get("verify").copied().unwrap_or(0);
    assert_eq!(by_stage, summary.files, "{summary:?}");
}
