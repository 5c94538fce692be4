//! Expected output in comments, and blessing it.
//!
//! The expected outputs of a file follow its source, each as a block of comment lines
//! that opens with `; expect LABEL`:
//!
//! ```text
//! kernel %k(...) { ... }
//!
//! ; expect divergence --target simt
//! ; kernel %k (reconvergence: ipdom)
//! ; ...
//! ```
//!
//! The label says which output a block holds (the test kind and its arguments, as the CLI
//! command that prints it would take them). A file is in canonical form when its text is
//! its source, trimmed, followed by one block per output in the order the commands
//! produce them: so a check compares the whole rendered text with the file, and a
//! blessing run (`WARPLIFT_BLESS=1`) writes the rendered text back.

use crate::Failure;
use std::path::Path;

/// The environment variable that makes a run rewrite expected output instead of
/// comparing with it: `WARPLIFT_BLESS=1`.
pub const BLESS_VAR: &str = "WARPLIFT_BLESS";

/// The prefix of the line that opens an expectation block.
const EXPECT: &str = "; expect ";

/// Whether `WARPLIFT_BLESS=1` asks to rewrite expected output.
pub fn bless_requested() -> bool {
    std::env::var_os(BLESS_VAR).is_some_and(|v| v == "1")
}

/// One expected output of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    /// What the block holds (`divergence --target simt`).
    pub label: String,
    /// The block's text, without the comment markers, one `\n` after each line.
    pub text: String,
    /// The 1-based line of the `; expect` line.
    pub line: usize,
}

/// Splits a file into its source (trimmed at the end) and its expectation blocks.
pub fn split(text: &str) -> (String, Vec<Expectation>) {
    let mut source = String::new();
    let mut blocks: Vec<Expectation> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(label) = line.strip_prefix(EXPECT) {
            blocks.push(Expectation {
                label: label.trim().to_string(),
                text: String::new(),
                line: i + 1,
            });
        } else if let Some(block) = blocks.last_mut() {
            // Blank lines separate blocks; anything else but a comment is not canonical,
            // and the comparison of the rendered text finds it.
            if let Some(comment) = line.strip_prefix(';') {
                block
                    .text
                    .push_str(comment.strip_prefix(' ').unwrap_or(comment));
                block.text.push('\n');
            }
        } else {
            source.push_str(line);
            source.push('\n');
        }
    }
    (source.trim_end().to_string(), blocks)
}

/// The canonical text of a file with `source` and the `outputs` (label, text).
pub fn render(source: &str, outputs: &[(String, String)]) -> String {
    let mut text = format!("{source}\n");
    for (label, output) in outputs {
        text.push_str(&format!("\n{EXPECT}{label}\n"));
        for line in output.lines() {
            if line.is_empty() {
                text.push_str(";\n");
            } else {
                text.push_str(&format!("; {line}\n"));
            }
        }
    }
    text
}

/// Compares the file at `path` (whose text is `text`) with the `outputs` its commands
/// produced. With [`bless_requested`], rewrites the file instead and succeeds; otherwise
/// returns one failure per differing, missing or extra block, each naming the line of
/// the block and the first line that differs.
pub fn check_expectations(
    path: &Path,
    text: &str,
    outputs: &[(String, String)],
) -> Result<(), Vec<Failure>> {
    let (source, expected) = split(text);
    if outputs.is_empty() && expected.is_empty() {
        // Nothing to compare: the file's text is its own (a malformed input may end
        // without a newline, on purpose).
        return Ok(());
    }
    let rendered = render(&source, outputs);
    if rendered == text {
        return Ok(());
    }
    if bless_requested() {
        std::fs::write(path, rendered)
            .map_err(|e| vec![Failure::new(format!("cannot bless the file: {e}"))])?;
        return Ok(());
    }
    let hint = format!("({BLESS_VAR}=1 rewrites the expected output)");
    let mut failures = Vec::new();
    for (label, output) in outputs {
        match expected.iter().find(|e| &e.label == label) {
            None => failures.push(Failure::new(format!(
                "no `{EXPECT}{label}` block {hint}\n--- actual\n{output}"
            ))),
            Some(e) if &e.text != output => {
                let (offset, want, got) = first_difference(&e.text, output);
                failures.push(Failure::at(
                    e.line + 1 + offset,
                    format!(
                        "`{label}` differs from the expected output {hint}\n  expected: {want}\n  actual:   {got}\n--- expected\n{}--- actual\n{output}",
                        e.text
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    for e in &expected {
        if !outputs.iter().any(|(label, _)| *label == e.label) {
            failures.push(Failure::at(
                e.line,
                format!(
                    "`{EXPECT}{}` is produced by no command of the file {hint}",
                    e.label
                ),
            ));
        }
    }
    if failures.is_empty() {
        failures.push(Failure::new(format!(
            "the expected output is not in canonical form (blocks out of order, or text between them) {hint}"
        )));
    }
    Err(failures)
}

/// The 0-based index of the first line where `want` and `got` differ, and both lines
/// (`<end>` past the last).
fn first_difference(want: &str, got: &str) -> (usize, String, String) {
    let mut w = want.lines();
    let mut g = got.lines();
    let mut i = 0;
    loop {
        match (w.next(), g.next()) {
            (Some(a), Some(b)) if a == b => i += 1,
            (None, None) => return (i, "<end>".into(), "<end>".into()),
            (a, b) => {
                return (
                    i,
                    a.unwrap_or("<end>").to_string(),
                    b.unwrap_or("<end>").to_string(),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_render_are_inverse_on_canonical_text() {
        let text =
            "; test compile\nkernel %k() {\n}\n\n; expect a\n; x\n;\n; y\n\n; expect b\n; z\n";
        let (source, blocks) = split(text);
        assert_eq!(source, "; test compile\nkernel %k() {\n}");
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].text, "x\n\ny\n");
        assert_eq!(blocks[0].line, 5);
        let outputs: Vec<_> = blocks
            .iter()
            .map(|b| (b.label.clone(), b.text.clone()))
            .collect();
        assert_eq!(render(&source, &outputs), text);
    }

    #[test]
    fn a_mismatch_names_the_first_differing_line() {
        let text = "kernel\n\n; expect a\n; x\n; y\n";
        let outputs = vec![("a".to_string(), "x\nz\n".to_string())];
        if bless_requested() {
            return;
        }
        let e = check_expectations(Path::new("f.wir"), text, &outputs).unwrap_err();
        assert_eq!(e[0].line, Some(5));
        assert!(e[0].message.contains("expected: y"), "{}", e[0].message);
        assert!(e[0].message.contains("actual:   z"), "{}", e[0].message);
    }
}
