//! The depth of an IPDOM reconvergence stack over a control-flow graph, driven by the
//! blocks each lane of a warp runs: a model of the SIMT machine on the IR's own CFG.
//!
//! The emulator measures its stack on the machine CFG it runs, which holds blocks the IR
//! does not (edge-split blocks of the register allocator, guards of linearization): a
//! lane group that a divergent branch sends to an edge-split block on the way to the
//! branch's reconvergence point gets an entry of its own there, where on the IR's graph it
//! would already be at the reconvergence point and get none. Anantpur and Govindarajan,
//! "Taming Control Divergence in GPUs through Control Flow Linearization" (CC 2014),
//! count the stack of their Figure 3 on the program's CFG; this model counts there too.
//!
//! The machine modelled is the emulator's (docs/emulator.md): one entry per group of
//! lanes, `(block, reconvergence block, lanes)`; at a branch whose lanes go more than one
//! way the top entry becomes the wait at the branch's immediate post-dominator and one
//! entry per way is pushed, the first successor's on top (it runs first); an entry pops
//! when it reaches its reconvergence block (or its lanes have all returned). The
//! emulator's two economies are kept: when the top entry already reconverges where the
//! new branch does, its halves replace it; and a way that starts at the reconvergence
//! block gets no entry. The depth counts the bottom entry: 1 is a warp that never
//! diverged.

use super::postdom::PostDominatorTree;
use super::ControlFlowGraph;
use cranelift_entity::EntityRef;
use std::fmt::Debug;
use std::hash::Hash;

/// One entry: the block its lanes run next, where they reconverge (`None`: the exit),
/// and the lanes (indices into the warp's paths).
struct Entry<N> {
    block: Option<N>,
    reconverge: Option<N>,
    lanes: Vec<usize>,
}

/// The deepest reconvergence stack of a warp whose lanes run `paths` (each the blocks one
/// lane enters, in order, starting at the entry) over `cfg`; an error when the paths do
/// not follow the graph's edges.
pub fn max_depth<N>(
    cfg: &ControlFlowGraph<N>,
    pdt: &PostDominatorTree<N>,
    paths: &[Vec<N>],
) -> Result<u64, String>
where
    N: EntityRef + Copy + Eq + Hash + Debug,
{
    let lanes: Vec<usize> = (0..paths.len()).filter(|&l| !paths[l].is_empty()).collect();
    let Some(&first) = lanes.first() else {
        return Ok(0);
    };
    // Where each lane stands on its path: the index of the block it runs next.
    let mut at = vec![0usize; paths.len()];
    let mut stack = vec![Entry {
        block: Some(paths[first][0]),
        reconverge: None,
        lanes,
    }];
    let mut depth = 1u64;
    let mut done = vec![false; paths.len()];
    while let Some(top) = stack.last_mut() {
        top.lanes.retain(|&l| !done[l]);
        if top.lanes.is_empty() || (top.block.is_some() && top.block == top.reconverge) {
            stack.pop();
            continue;
        }
        let Some(block) = top.block else {
            // Waiting at the exit for lanes that all returned.
            stack.pop();
            continue;
        };
        // The lanes run `block`; group them by the block each enters next.
        let mut ways: Vec<(N, Vec<usize>)> = Vec::new();
        for &l in &top.lanes {
            if paths[l].get(at[l]) != Some(&block) {
                return Err(format!(
                    "lane {l} runs {:?} where its warp runs {block:?}",
                    paths[l].get(at[l])
                ));
            }
            at[l] += 1;
            match paths[l].get(at[l]) {
                None => done[l] = true,
                Some(&next) => {
                    if !cfg.succs(block).contains(&next) {
                        return Err(format!("lane {l} goes from {block:?} to {next:?}: no edge"));
                    }
                    match ways.iter_mut().find(|(b, _)| *b == next) {
                        Some((_, g)) => g.push(l),
                        None => ways.push((next, vec![l])),
                    }
                }
            }
        }
        match ways.len() {
            0 => {
                stack.pop();
            }
            1 => {
                let (next, group) = ways.pop().expect("one way");
                let top = stack.last_mut().expect("the entry just run");
                top.block = Some(next);
                top.lanes = group;
            }
            _ => {
                let reconverge = pdt.reconvergence_point(block);
                let n = stack.len();
                if n > 1 && stack[n - 1].reconverge == reconverge {
                    stack.pop();
                } else {
                    stack[n - 1].block = reconverge;
                }
                // The first successor's lanes run first: pushed last.
                let order = cfg.succs(block);
                ways.sort_by_key(|(b, _)| std::cmp::Reverse(order.iter().position(|s| s == b)));
                for (next, group) in ways {
                    if Some(next) != reconverge {
                        stack.push(Entry {
                            block: Some(next),
                            reconverge,
                            lanes: group,
                        });
                    }
                }
                depth = depth.max(stack.len() as u64);
            }
        }
    }
    Ok(depth)
}

/// [`max_depth`] over every warp of `width` lanes among `paths` (one path per thread of a
/// thread block, warps taking consecutive threads): the deepest stack of any.
pub fn max_depth_in_warps<N>(
    cfg: &ControlFlowGraph<N>,
    pdt: &PostDominatorTree<N>,
    paths: &[Vec<N>],
    width: usize,
) -> Result<u64, String>
where
    N: EntityRef + Copy + Eq + Hash + Debug,
{
    let mut depth = 0;
    for warp in paths.chunks(width.max(1)) {
        depth = depth.max(max_depth(cfg, pdt, warp)?);
    }
    Ok(depth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfg::testgraph::{graph, N};

    /// The paper's Figure 3: three nested if-else, one lane taking each else and the rest
    /// the then path; 7 entries while S1 runs.
    #[test]
    fn figure_3_nests_seven_entries() {
        // B1(0) -> B2(1) | B3(2); B2 -> B4(3) | B5(4); B4 -> B6(5) | B7(6); B6, B7 -> B8(7);
        // B8, B5 -> B9(8); B9, B3 -> B10(9).
        let g = graph(&[
            &[1, 2],
            &[3, 4],
            &[9],
            &[5, 6],
            &[8],
            &[7],
            &[7],
            &[8],
            &[9],
            &[],
        ]);
        let cfg = ControlFlowGraph::compute(&g);
        let pdt = PostDominatorTree::compute(&cfg);
        let path = |p: &[u32]| p.iter().map(|&i| N(i)).collect::<Vec<_>>();
        let paths = [
            path(&[0, 1, 3, 5, 7, 8, 9]),
            path(&[0, 1, 3, 6, 7, 8, 9]),
            path(&[0, 1, 4, 8, 9]),
            path(&[0, 2, 9]),
        ];
        assert_eq!(max_depth(&cfg, &pdt, &paths), Ok(7));
        // One lane alone never diverges; lanes that agree neither.
        assert_eq!(max_depth(&cfg, &pdt, &paths[..1]), Ok(1));
        assert_eq!(
            max_depth(&cfg, &pdt, &[paths[0].clone(), paths[0].clone()]),
            Ok(1)
        );
        // A path off the graph's edges is refused.
        assert!(max_depth(&cfg, &pdt, &[path(&[0, 9])]).is_err());
    }
}
