//! The checker of the `restructure` pass, used by the tests: what a run promises.
//!
//! - On the whole kernel (`restructure_regions=kernel`, loops and branches restructured),
//!   the result is tail-structured (Definition 2 of the paper): rules 1–3 contract it.
//! - In selective mode (`divergent`, the default), no unstructured region holding a
//!   divergent branch remains; with `all`, no unstructured region remains.
//!
//! Regions the pass reported as skipped, or that the cost model declined, are exempt:
//! they were left as they were.

use super::{find_regions, LoopMode, Options, Outcome};
use crate::settings::RegionMode;
use warplift_ir::cfg::classify;
use warplift_ir::Function;

/// Checks `func`, the result of a run of the pass with `options` that reported
/// `outcome`.
pub fn check(func: &Function, options: &Options, outcome: &Outcome) -> Result<(), String> {
    if !outcome.skipped.is_empty() {
        return Ok(());
    }
    let full = options.loops != LoopMode::None && options.branches;
    match options.regions {
        RegionMode::Kernel if full => {
            let c = classify(func);
            if !c.class.is_tail_structured() {
                return Err(format!(
                    "%{} is {} after restructuring, not tail-structured",
                    func.name, c.class
                ));
            }
        }
        RegionMode::Kernel => {}
        mode if full => {
            let left = find_regions(func, mode);
            let declined = |entry| outcome.declined.iter().any(|&(b, _)| b == entry);
            if let Some(r) = left.iter().find(|r| !declined(r.entry)) {
                return Err(format!(
                    "%{}: an unstructured region entered from {} ({} blocks) remains",
                    func.name,
                    r.entry,
                    r.blocks.len()
                ));
            }
        }
        _ => {}
    }
    Ok(())
}
