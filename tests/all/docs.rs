//! The code the embedding guide and the README show is code that runs: every line of their
//! Rust blocks must be quoted from `examples/embed.rs`, which `cargo test` runs (see its
//! `[[example]]` entry in Cargo.toml).
//!
//! A block is a run of consecutive lines of the example (blank lines and `//` comment lines
//! do not count on either side); a `// ...` line in a block separates runs that follow
//! each other in the example. The docs also must not use paths an embedder cannot write
//! (`warplift_ir::` instead of `warplift::ir::`).

use std::path::Path;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The lines that count: trimmed, neither blank nor comments.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect()
}

/// The ```rust blocks of a markdown text, each split at `// ...` lines into runs.
fn rust_blocks(markdown: &str) -> Vec<Vec<Vec<&str>>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Vec<&str>>> = None;
    for line in markdown.lines() {
        let t = line.trim();
        match &mut current {
            None if t == "```rust" => current = Some(vec![Vec::new()]),
            None => {}
            Some(_) if t == "```" => blocks.push(current.take().unwrap()),
            Some(runs) if t == "// ..." => runs.push(Vec::new()),
            Some(runs) if !t.is_empty() && !t.starts_with("//") => runs.last_mut().unwrap().push(t),
            Some(_) => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```rust block");
    blocks
}

/// Checks every block of `doc` quotes `example`; returns how many blocks there were.
fn check_quotes(doc_path: &str, example: &[&str]) -> usize {
    let doc = read(doc_path);
    let blocks = rust_blocks(&doc);
    for (n, runs) in blocks.iter().enumerate() {
        let mut from = 0;
        for run in runs.iter().filter(|r| !r.is_empty()) {
            let at = (from..=example.len().saturating_sub(run.len()))
                .find(|&i| example[i..i + run.len()] == run[..])
                .unwrap_or_else(|| {
                    panic!(
                        "{doc_path}: Rust block {} is not quoted from examples/embed.rs \
                         (in order, consecutive lines):\n{}",
                        n + 1,
                        run.join("\n")
                    )
                });
            from = at + run.len();
        }
    }
    blocks.len()
}

#[test]
fn the_guide_and_the_readme_quote_the_tested_example() {
    let example = read("examples/embed.rs");
    let lines = code_lines(&example);
    assert!(check_quotes("docs/embedding.md", &lines) >= 8);
    assert!(check_quotes("README.md", &lines) >= 1);
}

#[test]
fn docs_use_the_paths_an_embedder_writes() {
    let mut docs = vec!["README.md".to_string()];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(format!(
                "docs/{}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    for doc in docs {
        let text = read(&doc);
        for krate in [
            "warplift_ir::",
            "warplift_codegen::",
            "warplift_emu::",
            "warplift_study::",
        ] {
            assert!(
                !text.contains(krate),
                "{doc} uses `{krate}`: an embedder depending on `warplift` writes `warplift::{}::`",
                &krate["warplift_".len()..krate.len() - 2]
            );
        }
    }
}

#[test]
fn the_checker_catches_a_misquote() {
    let example = ["let a = 1;", "let b = 2;", "let c = 3;"];
    let ok = rust_blocks("```rust\nlet a = 1;\n\nlet b = 2;\n// ...\nlet c = 3;\n```\n");
    assert_eq!(
        ok,
        vec![vec![vec!["let a = 1;", "let b = 2;"], vec!["let c = 3;"]]]
    );
    let find =
        |run: &[&str]| (0..=example.len() - run.len()).any(|i| example[i..i + run.len()] == *run);
    assert!(find(&ok[0][0]));
    assert!(!find(&["let a = 1;", "let c = 3;"]));
}
