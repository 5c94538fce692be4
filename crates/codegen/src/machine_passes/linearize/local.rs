//! The guard optimisations of one region, run on the region alone.
//!
//! [`opt::optimize`](super::opt::optimize) reads a region's blocks, its entry and exit,
//! and the layout around the region's linearized sequence; it tries batches of changes
//! and rolls them back by copying its state. Run on the whole kernel once per region, that
//! copy, the layout's index and the structure check's graph would each cost the whole
//! kernel per region: quadratic in kernels of many regions. Instead each region is cut
//! out into a small function of its own (its blocks' instructions moved, not copied, and
//! renumbered), optimised there and moved back, so a region costs what it holds.
//!
//! # The layout without placing
//!
//! The optimisations see the layout that placing the regions linearized so far would
//! give (each region's sequence where its first block was, the return blocks made as
//! exits at the end; see `place_regions`). [`Layout`] keeps that order as sortable keys
//! and an ordered index instead of placing the kernel once per region: a region's
//! sequence takes the keys just after its first member's, so comparing keys compares
//! positions, and the kernel is placed once at the end.
//!
//! # What the small function holds
//!
//! Its order is the part of the layout the optimisations can tell apart from the whole
//! (the structure pre-check looks at most `LOCAL_SCAN` placed blocks from a block, and
//! compares positions with the edge's new target):
//! - the region's entry and exit where they lie before the sequence (only their order
//!   matters there: nothing before the sequence is a guard);
//! - the sequence;
//! - after it, when the entry or the exit lies after it, the next `LOCAL_SCAN + 1`
//!   blocks of the layout: the entry and exit themselves, every other block as an empty
//!   stand-in that jumps to a block placed after everything exactly when one of its
//!   successors lies after the exit (the one fact the pre-check reads of it); then the
//!   entry and exit if they lie further on.
//!
//! Edges to blocks outside the region go to empty stand-ins too, which map back to the
//! blocks they stand for. The result is the same, block for block, as optimising with the
//! whole kernel at hand.

use super::{opt, GuardRegs, Linearized, Placed};
use crate::mir::{MBlock, MBlockData, MirFunction};
use cranelift_entity::EntityRef;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// Keys between two blocks of the layout before linearization: room for any sequence.
const GAP: u64 = 1 << 24;
/// Keys from here on are at the end of the layout (return blocks made as exits, and
/// sequences of regions none of whose blocks was laid out).
const END: u64 = 1 << 62;

/// The layout of the kernel with the regions linearized so far placed, as sortable keys.
pub(super) struct Layout {
    /// Each block's key, by block index (`None`: not laid out).
    key: Vec<Option<u64>>,
    /// The laid-out blocks by key.
    by_key: BTreeMap<u64, MBlock>,
    /// The next key at the end of the layout.
    next_end: u64,
}

impl Layout {
    /// The layout of `func` as it is.
    pub(super) fn new(func: &MirFunction) -> Self {
        let mut key = vec![None; func.blocks.len()];
        let mut by_key = BTreeMap::new();
        for (i, &b) in func.order.iter().enumerate() {
            let k = (i as u64 + 1) * GAP;
            key[b.index()] = Some(k);
            by_key.insert(k, b);
        }
        Layout {
            key,
            by_key,
            next_end: END,
        }
    }

    fn key(&self, b: MBlock) -> Option<u64> {
        self.key.get(b.index()).copied().flatten()
    }

    fn set(&mut self, b: MBlock, k: u64) {
        if self.key.len() <= b.index() {
            self.key.resize(b.index() + 1, None);
        }
        self.key[b.index()] = Some(k);
        self.by_key.insert(k, b);
    }

    fn unset(&mut self, b: MBlock) {
        if let Some(k) = self.key(b) {
            self.by_key.remove(&k);
            self.key[b.index()] = None;
        }
    }

    /// Places `p` as `place_regions` would: its sequence where its first laid-out member
    /// was (at the end if none was), its new exit at the end.
    fn place(&mut self, p: &Placed) {
        let first = p.members.iter().filter_map(|&b| self.key(b)).min();
        for &b in &p.members {
            self.unset(b);
        }
        let start = first.unwrap_or_else(|| {
            let k = self.next_end;
            self.next_end += GAP;
            k
        });
        for (i, &b) in p.sequence.iter().enumerate() {
            self.set(b, start + i as u64);
        }
        if let Some(exit) = p.new_exit {
            let k = self.next_end;
            self.next_end += GAP;
            self.set(exit, k);
        }
    }
}

/// The region cut out: the small function and how its blocks map to the kernel's.
struct Cut {
    func: MirFunction,
    /// The kernel's block of every small block (`None`: the block after everything).
    global: Vec<Option<MBlock>>,
    /// The small block of every kernel block it holds or stands in for.
    local: FxHashMap<MBlock, MBlock>,
    /// The small blocks that hold a region block's instructions.
    real: Vec<MBlock>,
}

impl Cut {
    fn add(&mut self, global: Option<MBlock>, data: MBlockData) -> MBlock {
        let b = self.func.blocks.push(data);
        self.global.push(global);
        if let Some(g) = global {
            self.local.insert(g, b);
        }
        b
    }

    /// The small block standing in for kernel block `g` (made empty when new).
    fn stand_in(&mut self, g: MBlock) -> MBlock {
        match self.local.get(&g) {
            Some(&b) => b,
            None => self.add(Some(g), MBlockData::default()),
        }
    }
}

/// Runs the guard optimisations of `lin` (placed as `placed`, which is updated: the
/// blocks they remove leave its sequence) on the region alone, and moves the result back
/// into `func`. `layout` is updated to the kernel's layout with this region placed.
pub(super) fn optimize_region(
    func: &mut MirFunction,
    lin: &Linearized,
    placed: &mut Placed,
    layout: &mut Layout,
    regs: GuardRegs,
    level: u32,
    predicate: u32,
) -> Result<opt::OptStats, String> {
    layout.place(placed);
    // Room for the region's blocks and about as many stand-ins, window included: the
    // tables grow once rather than step by step, in every region.
    let size = 2 + lin.blocks.len() + lin.guards.len() + lin.back_edge_guards.len();
    let room = 2 * size + opt::LOCAL_SCAN + 2;
    let mut small = MirFunction::new(func.name.clone(), Vec::new());
    small.blocks = cranelift_entity::PrimaryMap::with_capacity(room);
    let mut cut = Cut {
        func: small,
        global: Vec::with_capacity(room),
        local: FxHashMap::with_capacity_and_hasher(room, Default::default()),
        real: Vec::with_capacity(size),
    };
    // Every block the optimisations read or change, its instructions moved out.
    let mut region: Vec<MBlock> = Vec::with_capacity(size);
    region.push(lin.entry);
    region.extend(lin.blocks.iter().copied());
    region.extend(lin.guards.iter().copied());
    region.extend(lin.back_edge_guards.iter().flatten().copied());
    region.push(lin.exit);
    for &g in &region {
        if cut.local.contains_key(&g) {
            continue;
        }
        let data = &mut func.blocks[g];
        let moved = MBlockData {
            params: std::mem::take(&mut data.params),
            insts: std::mem::take(&mut data.insts),
            origin: data.origin,
            kind: data.kind,
        };
        let b = cut.add(Some(g), moved);
        cut.real.push(b);
    }

    // The order (see the module's documentation).
    let key = |b: MBlock| layout.key(b);
    let (first, last) = match (
        placed.sequence.first().and_then(|&b| key(b)),
        placed.sequence.last().and_then(|&b| key(b)),
    ) {
        (Some(f), Some(l)) => (f, l),
        _ => return Err("a linearized region has no place in the layout".into()),
    };
    let mut ends: Vec<(u64, MBlock)> = [lin.entry, lin.exit]
        .into_iter()
        .filter_map(|b| key(b).map(|k| (k, b)))
        .collect();
    ends.sort_unstable();
    ends.dedup();
    let exit_after = key(lin.exit).filter(|&k| k > last);
    let mut order: Vec<MBlock> = ends
        .iter()
        .filter(|&&(k, _)| k < first)
        .map(|&(_, b)| cut.local[&b])
        .collect();
    order.extend(placed.sequence.iter().map(|b| cut.local[b]));
    let mut far: Vec<MBlock> = ends
        .iter()
        .filter(|&&(k, _)| k > last)
        .map(|&(_, b)| b)
        .collect();
    let mut beyond_jumps: Vec<MBlock> = Vec::new();
    if !far.is_empty() {
        let window: Vec<MBlock> = layout
            .by_key
            .range(last + 1..)
            .take(opt::LOCAL_SCAN + 1)
            .map(|(_, &b)| b)
            .collect();
        for g in window {
            if g == lin.entry || g == lin.exit {
                far.retain(|&x| x != g);
                order.push(cut.local[&g]);
                continue;
            }
            let b = cut.stand_in(g);
            let beyond_exit =
                exit_after.is_some_and(|e| func.succs(g).any(|s| key(s).is_some_and(|k| k > e)));
            if beyond_exit {
                beyond_jumps.push(b);
            }
            order.push(b);
        }
        order.extend(far.iter().map(|b| cut.local[b]));
    }
    // Edges of the region's blocks, renumbered; edges leaving it go to stand-ins, placed
    // before or after everything as their blocks lie before or after the exit.
    let mut front: Vec<MBlock> = Vec::new();
    let mut back: Vec<MBlock> = Vec::new();
    // One buffer for every block's targets: a list of its own per block was an
    // allocation per block of every region.
    let mut targets: Vec<MBlock> = Vec::with_capacity(2);
    for i in 0..cut.real.len() {
        let b = cut.real[i];
        let Some(mut term) = cut.func.blocks[b].insts.pop() else {
            continue;
        };
        targets.clear();
        term.kind.for_each_target(|t| targets.push(t.block));
        for &g in &targets {
            if !cut.local.contains_key(&g) {
                let s = cut.stand_in(g);
                let after = matches!((key(g), key(lin.exit)), (Some(k), Some(e)) if k > e);
                if after {
                    back.push(s);
                } else {
                    front.push(s);
                }
            }
        }
        term.kind
            .for_each_target_mut(|t| t.block = cut.local[&t.block]);
        cut.func.blocks[b].insts.push(term);
    }
    if !beyond_jumps.is_empty() {
        let beyond = cut.add(None, MBlockData::default());
        for &b in &beyond_jumps {
            cut.func.blocks[b].insts.push(crate::mir::MInst::new(
                crate::mir::MInstKind::Jump {
                    dest: crate::mir::BlockTarget::new(beyond),
                },
                Default::default(),
            ));
        }
        back.push(beyond);
    }
    front.extend(order);
    front.extend(back);
    cut.func.order = front;

    let to_local = |b: &MBlock| cut.local[b];
    let small = Linearized {
        entry: to_local(&lin.entry),
        order: lin.order.iter().map(to_local).collect(),
        tails: lin.tails.iter().map(to_local).collect(),
        blocks: lin.blocks.iter().map(to_local).collect(),
        guards: lin.guards.iter().map(to_local).collect(),
        back_edge_guards: lin
            .back_edge_guards
            .iter()
            .map(|g| g.as_ref().map(to_local))
            .collect(),
        back_edge_targets: lin.back_edge_targets.clone(),
        exit: to_local(&lin.exit),
        exit_id: lin.exit_id,
        stats: lin.stats,
    };
    let stats = opt::optimize(&mut cut.func, &small, regs, level, predicate);

    // Back into the kernel: the instructions, renumbered, and the sequence less what the
    // optimisations took out of the order.
    let kept: FxHashSet<MBlock> = cut.func.order.iter().copied().collect();
    let mut lost = false;
    for &b in &cut.real {
        let data = std::mem::take(&mut cut.func.blocks[b]);
        let mut insts = data.insts;
        if let Some(term) = insts.last_mut() {
            term.kind
                .for_each_target_mut(|t| match cut.global[t.block.index()] {
                    Some(g) => t.block = g,
                    None => lost = true,
                });
        }
        if let Some(g) = cut.global[b.index()] {
            let dst = &mut func.blocks[g];
            dst.params = data.params;
            dst.insts = insts;
        }
    }
    if lost {
        return Err("the guard optimisations sent an edge outside the kernel".into());
    }
    let removed: Vec<MBlock> = placed
        .sequence
        .iter()
        .copied()
        .filter(|b| !kept.contains(&cut.local[b]))
        .collect();
    if !removed.is_empty() {
        let gone: FxHashSet<MBlock> = removed.iter().copied().collect();
        placed.sequence.retain(|b| !gone.contains(b));
        for b in removed {
            layout.unset(b);
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::super::{linearize_kernel, Linearize, OptScope};
    use crate::lower::lower;
    use crate::passes::MachinePass;
    use crate::regalloc::{allocate_with, AllocOptions, RegisterFile};
    use crate::settings::Settings;
    use warplift_ir::parser::parse_functions;

    /// The corpus's kernels, allocated for the pass (those that compile).
    fn allocated_corpus(settings: &Settings) -> Vec<(String, crate::regalloc::AllocatedFunction)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("the corpus is readable")
            .map(|e| e.expect("a corpus entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "wir"))
            .collect();
        paths.sort();
        let request = Linearize.reservation_bound(settings);
        let mut out = Vec::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("a corpus kernel is readable");
            for func in parse_functions(&text).expect("corpus kernels parse") {
                let Ok(mir) = lower(&func) else { continue };
                let options = AllocOptions::default();
                if let Ok(a) = allocate_with(&mir, &RegisterFile::MAX, &request, &options) {
                    out.push((format!("{}:{}", path.display(), func.name), a));
                }
            }
        }
        out
    }

    /// Optimising each region cut out of the kernel gives the machine IR, layout and
    /// statistics that optimising with the whole kernel at hand gives, on every corpus
    /// kernel, in every region mode and level, and in layouts that put regions' entries
    /// and exits after their blocks (reversed and rotated block orders).
    #[test]
    fn region_local_optimisation_matches_the_whole_kernel() {
        let configs: [&[(&str, &str)]; 4] = [
            &[("linearize_opt", "1")],
            &[("linearize_opt", "3"), ("linearize_regions", "all")],
            &[("linearize_opt", "2"), ("linearize_regions", "kernel")],
            &[
                ("linearize_opt", "3"),
                ("linearize_regions", "kernel"),
                ("linearize_interleave", "true"),
            ],
        ];
        let mut optimised = 0;
        let mut less_informed = 0;
        for config in configs {
            let mut builder = Settings::builder();
            for (name, value) in config {
                builder.set(name, value).expect("a valid setting");
            }
            let settings = builder.finish();
            for (name, allocated) in allocated_corpus(&settings) {
                for layout in 0..3 {
                    let mut func = allocated.func.clone();
                    let n = func.order.len();
                    match layout {
                        1 => func.order[1..].reverse(),
                        2 if n > 2 => func.order[1..].rotate_left((n - 1) / 2),
                        _ => {}
                    }
                    let input = func.to_string();
                    let mut whole = func.clone();
                    let local = linearize_kernel(
                        &mut func,
                        &allocated.reserved,
                        &settings,
                        OptScope::Region,
                        None,
                    );
                    let oracle = linearize_kernel(
                        &mut whole,
                        &allocated.reserved,
                        &settings,
                        OptScope::Kernel,
                        None,
                    );
                    let (Ok(local), Ok(oracle)) = (local, oracle) else {
                        panic!("{name} {config:?} layout {layout}: the pass failed");
                    };
                    if local != oracle {
                        // O3's two whole-function guard analyses (unread assignments,
                        // tests folded across blocks) read the function they are given:
                        // with the whole kernel at hand they see the assignments the
                        // region's predecessors make and the other regions' uses of the
                        // guard predicate, cut out they see the region alone. So the
                        // folds may differ, in either direction; nothing else may. That
                        // both results run right is the emulator tests' job.
                        assert_only_cross_block_folds_differ(&local, &oracle, &name, config);
                        less_informed += 1;
                        continue;
                    }
                    assert_eq!(func.order, whole.order, "{name} {config:?} layout {layout}");
                    assert_eq!(
                        func.to_string(),
                        whole.to_string(),
                        "{name} {config:?} layout {layout}"
                    );
                    optimised += usize::from(func.to_string() != input);
                }
            }
        }
        // The corpus has unstructured regions in every mode: the comparison saw them.
        assert!(optimised > 100, "only {optimised} kernels were linearized");
        // The exception above stays an exception.
        assert!(
            less_informed * 20 < optimised,
            "{less_informed} of {optimised} kernels differ"
        );
    }

    /// `local` differs from `oracle` only in the counts of O3's analyses that read the
    /// whole function (guard tests folded, guard assignments removed).
    fn assert_only_cross_block_folds_differ(
        local: &crate::passes::PassReport,
        oracle: &crate::passes::PassReport,
        name: &str,
        config: &[(&str, &str)],
    ) {
        const FOLDS: [&str; 3] = [
            "guard tests",
            "guard tests folded",
            "guard assignments removed",
        ];
        assert!(
            config.contains(&("linearize_opt", "3")),
            "{name} {config:?}: only O3 reads the whole function\n{local:?}\n{oracle:?}"
        );
        for ((n, l), (m, o)) in local.counts.iter().zip(&oracle.counts) {
            assert_eq!(n, m);
            if !FOLDS.contains(n) {
                assert_eq!(l, o, "{name} {config:?}: {n} differs ({FOLDS:?} may)");
            }
        }
    }
}
