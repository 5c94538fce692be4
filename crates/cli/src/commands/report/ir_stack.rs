//! The reconvergence-stack depth on the IR's own CFG, for the columns whose pipeline ends
//! in IR (no optional pass, or IR passes only, as `linearize_ssa`): the kernel after the
//! column's IR passes runs on the reference interpreter, which records every thread's
//! blocks, and an IPDOM stack model (`warplift_ir::cfg::ipdom_stack`) replays each warp's
//! lanes over the IR CFG. The emulator's own `stack` column counts the machine CFG, with
//! the register allocator's edge-split blocks and linearization's guards; a column with
//! a machine pass has no IR CFG after it, and shows `-` here.

use warplift_codegen::analysis::AnalysisCache;
use warplift_codegen::passes::Pipeline;
use warplift_codegen::Settings;
use warplift_ir::cfg::ipdom_stack::max_depth_in_warps;
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::Launch;
use warplift_ir::Function;

/// The deepest IR-CFG stack of any warp of `width` lanes running `func`, as the column of
/// `settings` compiles it, launched by `launch`; `None` when the column's pipeline has a
/// machine pass.
pub fn ir_stack_depth(
    func: &Function,
    launch: &Launch,
    settings: &Settings,
    width: u32,
) -> Option<Result<u64, String>> {
    let pipeline = Pipeline::for_settings(settings).ok()?;
    if !pipeline.machine.is_empty() {
        return None;
    }
    Some(measure(func, launch, settings, &pipeline, width))
}

fn measure(
    func: &Function,
    launch: &Launch,
    settings: &Settings,
    pipeline: &Pipeline,
    width: u32,
) -> Result<u64, String> {
    let mut func = func.clone();
    for pass in &pipeline.ir {
        pass.run(&mut func, &mut AnalysisCache::new(), settings)
            .map_err(|e| e.to_string())?;
    }
    let cfg = ControlFlowGraph::compute(&func);
    let pdt = PostDominatorTree::compute(&cfg);
    let mut prepared = launch.prepare(&func).map_err(|e| e.to_string())?;
    let config = InterpConfig {
        warp_width: width,
        ..InterpConfig::default()
    };
    let mut depth = Ok(0u64);
    let mut observe = |paths: &[Vec<warplift_ir::Block>]| {
        if let Ok(d) = depth {
            depth = max_depth_in_warps(&cfg, &pdt, paths, width as usize).map(|e| e.max(d));
        }
    };
    interp::run_with_paths(&func, &mut prepared, &config, &mut observe)
        .map_err(|e| e.to_string())?;
    depth
}
