//! The reconvergence-stack depth on the program's own CFG (the `IR stack` column), as
//! opposed to the emulator's `stack` column, which counts the machine CFG with the
//! register allocator's edge-split blocks and linearization's guards:
//!
//! - a column whose pipeline ends in IR (no optional pass, or IR passes only, as
//!   `linearize_ssa`): the kernel after the column's IR passes runs on the reference
//!   interpreter, which records every thread's blocks, and an IPDOM stack model
//!   (`warplift_ir::cfg::ipdom_stack`) replays each warp's lanes over the IR CFG;
//! - a column with a machine pass (`linearize` at O0-O3): there is no IR of the result, so
//!   the compiled kernel runs on the emulator recording every lane's machine blocks, and
//!   the same model replays them over the *linearized CFG*: the machine CFG without its
//!   edge-split blocks, that is the kernel's blocks and linearization's guards
//!   (`warplift_codegen::linearize::stack`). It is the graph `linearize_ssa` leaves in IR.

use warplift_codegen::analysis::AnalysisCache;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::linearize::stack::max_depth_on_linearized_cfg;
use warplift_codegen::passes::Pipeline;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{run_with, LanePaths, MachineConfig, Program, RunOptions};
use warplift_ir::cfg::ipdom_stack::max_depth_in_warps;
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::Launch;
use warplift_ir::Function;

/// The deepest stack on the program's CFG of any warp running `func` on `config`, as the
/// column of `settings` compiles it, launched by `launch`: on the IR CFG when the column's
/// pipeline ends in IR, on the linearized CFG when it has a machine pass; `None` when the
/// settings name no pipeline.
pub fn ir_stack_depth(
    func: &Function,
    launch: &Launch,
    settings: &Settings,
    config: &MachineConfig,
) -> Option<Result<u64, String>> {
    let pipeline = Pipeline::for_settings(settings).ok()?;
    if !pipeline.machine.is_empty() {
        return Some(on_linearized_cfg(func, launch, settings, config));
    }
    Some(measure(
        func,
        launch,
        settings,
        &pipeline,
        config.warp_width,
    ))
}

/// The machine pipeline's depth: the compiled kernel's lanes, as the emulator runs them,
/// replayed on its linearized CFG.
fn on_linearized_cfg(
    func: &Function,
    launch: &Launch,
    settings: &Settings,
    config: &MachineConfig,
) -> Result<u64, String> {
    let isa = lookup_by_name("simt", settings.clone()).map_err(|e| e.to_string())?;
    let compiled = Context::new()
        .compile_kernel(func, &*isa)
        .map_err(|e| e.to_string())?;
    let code = encode(&compiled.mir).map_err(|e| e.to_string())?;
    let program = Program::from_code(&code).map_err(|e| e.to_string())?;
    let mut prepared = launch.prepare(func).map_err(|e| e.to_string())?;
    let mut paths = LanePaths::default();
    let options = RunOptions {
        lane_paths: Some(&mut paths),
        ..RunOptions::default()
    };
    run_with(&program, &mut prepared, config, options).map_err(|e| e.to_string())?;
    max_depth_on_linearized_cfg(&compiled.mir, &paths.warps)
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
