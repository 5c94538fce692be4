//! The reconvergence-stack depth of a compiled kernel on its *linearized CFG*: the
//! kernel's own blocks and linearization's guard blocks, without the register allocator's
//! edge-split blocks.
//!
//! # Why
//!
//! The emulator counts its stack on the machine CFG it runs. There, a group of lanes that
//! a divergent branch sends through an edge-split block on its way to the branch's
//! reconvergence point gets an entry of its own, where on the program's graph it would
//! already stand at the reconvergence point: Anantpur and Govindarajan ("Taming Control
//! Divergence in GPUs through Control Flow Linearization", CC 2014) count the stack of
//! their Figure 3 on the program's graph (Section 5.3: after linearization "the stack
//! depth does not increase"). For a kernel compiled without a machine pass the program's
//! graph is the IR's, and the reference interpreter's per-thread paths replayed on it
//! give the depth; after the machine-level `linearize` there is no IR of the linearized
//! kernel, so this module takes the graph from the machine code instead.
//!
//! # How
//!
//! The graph is the machine CFG with its forwarding blocks (the edge blocks of
//! critical-edge splitting: one predecessor, a jump) contracted, as region selection sees
//! it ([`super::regions`]): every other block — a kernel block, a part of one (a
//! branch-table test), a guard block, a return block the pass made — is a node. The lanes'
//! paths are those the emulator recorded (`warplift_emu::LanePaths`: each lane's machine
//! blocks in order), with the forwarding blocks dropped; an IPDOM stack model with the
//! emulator's rules (`warplift_ir::cfg::ipdom_stack`) replays each warp's lanes over the
//! graph. Without linearization the graph is the IR's own (up to branch-table tests), and
//! the depth is the one the interpreter's paths give on the IR CFG.

use super::regions::Contracted;
use crate::mir::{MBlock, MirFunction};
use warplift_ir::cfg::ipdom_stack::max_depth;
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};

/// The deepest reconvergence stack, on the linearized CFG of `func`, of the warps whose
/// lanes ran `warps`: per warp, per lane, indices into `func.order` (the blocks in
/// layout order, as the SIMT bytecode numbers them) of the blocks the lane entered. An
/// error when a path names a block the function lacks or does not follow the graph.
pub fn max_depth_on_linearized_cfg(
    func: &MirFunction,
    warps: &[Vec<Vec<u32>>],
) -> Result<u64, String> {
    let view = Contracted::new(func);
    let cfg = ControlFlowGraph::compute(&view);
    let pdt = PostDominatorTree::compute(&cfg);
    let block = |i: u32| -> Result<MBlock, String> {
        func.order
            .get(i as usize)
            .copied()
            .ok_or_else(|| format!("block index {i} of a lane's path is not in {}", func.name))
    };
    let mut depth = 0;
    for lanes in warps {
        let paths = lanes
            .iter()
            .map(|path| {
                let mut out = Vec::with_capacity(path.len());
                for &i in path {
                    let b = block(i)?;
                    if !view.forwarding.contains(&b) {
                        out.push(b);
                    }
                }
                Ok(out)
            })
            .collect::<Result<Vec<_>, String>>()?;
        depth = depth.max(max_depth(&cfg, &pdt, &paths)?);
    }
    Ok(depth)
}
