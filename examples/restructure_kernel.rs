//! Writes the kernel of the restructuring bench (`benches/restructure.rs`), Figure 1's
//! short circuit `UNITS` times in sequence (about 37 IR instructions each: 27, 270 and
//! 2700 units make the bench's 1k, 10k and 100k), to a file, for timing a whole compile
//! on it, e.g. `warplift compile -t ptx --passes restructure --set
//! restructure_regions=kernel --set verify=false FILE -o /dev/null`
//! (docs/restructuring.md, Speed).
//!
//! Usage: `cargo run --release --example restructure_kernel -- FILE UNITS`.

#[path = "../benches/common/short_circuit.rs"]
mod short_circuit;

use anyhow::{Context as _, Result};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: restructure_kernel FILE UNITS";
    let path = args.next().context(usage)?;
    let units: usize = args
        .next()
        .context(usage)?
        .parse()
        .context("UNITS is a number")?;
    std::fs::write(&path, short_circuit::short_circuit_kernel(units))
        .with_context(|| format!("writing {path}"))?;
    Ok(())
}
