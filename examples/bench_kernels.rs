//! Writes the generated kernels of the compile-time benches (`benches/codegen.rs`) to a
//! folder, each as warplift text (`SHAPE-SIZE.wir`) and as the equivalent LLVM function
//! (`SHAPE-SIZE.ll`), for `scripts/compile-time.sh` to time `warplift compile` against
//! `llc`.
//!
//! Usage: `cargo run --release --example bench_kernels -- DIR [SIZE...]` (sizes in IR
//! instructions; default 1000 10000 100000).

#[path = "../benches/common/shapes.rs"]
mod shapes;

use anyhow::{Context as _, Result};
use std::path::PathBuf;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().context("usage: bench_kernels DIR [SIZE...]")?);
    let mut sizes: Vec<usize> = args
        .map(|a| a.parse().with_context(|| format!("bad size {a:?}")))
        .collect::<Result<_>>()?;
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for shape in shapes::SHAPES {
        for &size in &sizes {
            let k = shapes::kernel(shape, size);
            for (ext, text) in [("wir", &k.wir), ("ll", &k.ll)] {
                let path = dir.join(format!("{}-{size}.{ext}", k.name));
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(())
}
