//! The layout that keeps the test build short: each package's integration tests are the
//! modules of one test binary, `tests/all/main.rs`. Every test binary links the whole
//! workspace, so a file directly in a `tests` folder (its own binary, by Cargo's rules) costs
//! a link of its own; and a file in `tests/all` that `main.rs` does not declare is never
//! compiled, so its tests would silently not run.

use std::path::{Path, PathBuf};

/// The `tests` folders of the workspace's packages.
fn test_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("tests"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    let mut dirs = vec![root.join("tests")];
    dirs.extend(crates);
    dirs
}

/// The entries of a folder, sorted.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

#[test]
fn each_package_has_one_test_binary_that_declares_every_file() {
    let dirs = test_dirs();
    // The root package and the seven crates that have integration tests.
    assert!(dirs.len() >= 8, "{dirs:?}");
    for dir in &dirs {
        // A target the package declares itself (a `harness = false` test must be one).
        let manifest = std::fs::read_to_string(dir.join("../Cargo.toml")).unwrap();
        for path in entries(dir) {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let binary = if path.is_dir() {
                name != "all" && path.join("main.rs").is_file()
            } else {
                name.ends_with(".rs") && !manifest.contains(&format!("\"tests/{name}\""))
            };
            assert!(
                !binary,
                "{}: a test binary of its own; move it into {}/all/ and declare it in \
                 all/main.rs (`mod NAME;`)",
                path.display(),
                dir.display()
            );
        }
        let all = dir.join("all");
        let main = std::fs::read_to_string(all.join("main.rs"))
            .unwrap_or_else(|e| panic!("{}/main.rs: {e}", all.display()));
        let declared: Vec<&str> = main
            .lines()
            .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
            .collect();
        for path in entries(&all) {
            let file = path.file_name().unwrap().to_str().unwrap();
            let module = match file.strip_suffix(".rs") {
                Some("main") => continue,
                Some(stem) if path.is_file() => stem,
                // A folder is a module when it has a `mod.rs`; otherwise it holds data.
                _ if path.join("mod.rs").is_file() => file,
                _ => continue,
            };
            assert!(
                declared.contains(&module),
                "{}: never compiled; declare it in {}/main.rs (`mod {module};`)",
                path.display(),
                all.display()
            );
        }
    }
}
