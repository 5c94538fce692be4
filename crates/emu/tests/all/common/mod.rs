//! What the emulator's corpus tests share: the corpus walk (every kernel that has a launch
//! file, in parallel, failures named by file), compiling and running a kernel, and the
//! main check — the emulator leaves the memory the reference interpreter leaves (or both
//! fault) at warp widths 1, 7, 32 and 64. The walk and the check are the filetest
//! runner's (`warplift_filetests`), which `test run` filetests use too.
#![allow(dead_code, unused_imports)] // each test file uses its own subset

pub use warplift_filetests::{compile, emulate, References, WIDTHS};
use warplift_filetests::{repo_root, TestFile, Walk};
use warplift_ir::launch::PreparedLaunch;
use warplift_ir::Function;

/// Runs `check` on every corpus kernel that has a launch file (file name, kernel,
/// prepared launch), in parallel; returns the results in file order, and fails naming
/// every file whose check panicked.
pub fn each_kernel<T: Send>(check: impl Fn(&str, Function, PreparedLaunch) -> T + Sync) -> Vec<T> {
    Walk::corpus().with_launch().run(|file| {
        file.kernel()
            .map(|(func, prepared)| check(&file.name, func, prepared))
    })
}

/// The corpus kernel in `file` with its launch.
pub fn load(file: &str) -> (String, Function, PreparedLaunch) {
    let path = repo_root().join("tests/corpus").join(file);
    let (func, prepared) = TestFile::load(&path)
        .and_then(|f| f.kernel())
        .unwrap_or_else(|e| panic!("{file}: {}", e.message));
    (file.to_string(), func, prepared)
}
