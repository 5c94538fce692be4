//! Tests of the region analyses: the paper's figures as hand-made graphs and as corpus
//! kernels, structured graphs, and invariants on random graphs.

use super::super::testgraph::{graph, random_graphs, Graph, N};
use super::*;
use crate::entities::Block;
use crate::function::Function;

/// Every analysis of one graph.
struct Analyses<M: EntityRef> {
    cfg: ControlFlowGraph<M>,
    dt: DominatorTree<M>,
    pdt: PostDominatorTree<M>,
    loops: LoopForest<M>,
    ue: UnstructuredEdges<M>,
}

fn analyze_cfg<M: EntityRef + Copy + Eq + Hash + Debug>(cfg: ControlFlowGraph<M>) -> Analyses<M> {
    let dt = DominatorTree::compute(&cfg);
    let pdt = PostDominatorTree::compute(&cfg);
    let loops = LoopForest::compute(&cfg);
    let ue = UnstructuredEdges::compute(&cfg, &dt, &pdt, &loops);
    Analyses {
        cfg,
        dt,
        pdt,
        loops,
        ue,
    }
}

fn analyze(edges: &[&[u32]]) -> Analyses<N> {
    analyze_cfg(ControlFlowGraph::compute(&graph(edges)))
}

impl<M: EntityRef + Copy + Eq + Hash + Debug> Analyses<M> {
    fn regions(&self) -> Vec<Region<M>> {
        find_unstructured_regions(&self.cfg, &self.dt, &self.pdt, &self.ue)
    }

    /// The regions by the unbounded search, as Algorithm 2 is written.
    fn regions_exhaustively(&self) -> Vec<Region<M>> {
        find_unstructured_regions_exhaustively(&self.cfg, &self.dt, &self.pdt, &self.ue)
    }

    fn minimal(&self, from: M, to: M) -> Region<M> {
        let e = self
            .ue
            .edges()
            .iter()
            .find(|e| e.from == from && e.to == to)
            .expect("an unstructured edge");
        minimal_region(&self.cfg, &self.dt, &self.pdt, e)
    }

    fn subregions(&self, r: &Region<M>) -> Vec<StructuredRegion<M>> {
        r.structured_subregions(&self.cfg, &self.dt, &self.pdt, &self.ue)
    }
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// The unstructured edges of a test graph as sorted number pairs.
/// The example, beyond Definition 1: `B0 -> {B1, B4}, B1 -> {B2, B5}, B2 -> {B3,
/// B4}, B3 -> B4, B4 -> B5`. No edge meets Definition 1, yet `B4` is reached from both arms
/// of `B0` before its post-dominator `B5`: the edges entering it from `B0` and from the
/// `B1` arm (`B2 -> B4`, `B3 -> B4`) are the early-join edges, and one region `{B1, B2,
/// B3, B4}` between `B0` and `B5` holds them.
#[test]
fn a_join_no_edge_of_definition_1_enters_gets_a_region() {
    let g = Graph {
        edges: vec![vec![1, 4], vec![2, 5], vec![3, 4], vec![4], vec![5], vec![]],
    };
    let a = analyze_cfg(ControlFlowGraph::compute(&g));
    assert_eq!(edge_numbers(&a.ue), vec![(0, 4), (2, 4), (3, 4)]);
    assert!(a
        .ue
        .edges()
        .iter()
        .all(|e| e.conditions.joins_before_ipdom && !e.conditions.branch_to_join));
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    assert_eq!(numbers(regions[0].blocks()), vec![1, 2, 3, 4]);
    assert_eq!(regions[0].entry(), Some(N(0)));
    assert_eq!(regions[0].exit(), Some(N(5)));
}

fn edge_numbers(ue: &UnstructuredEdges<N>) -> Vec<(u32, u32)> {
    sorted(ue.edges().iter().map(|e| (e.from.0, e.to.0)).collect())
}

fn numbers(blocks: &[N]) -> Vec<u32> {
    sorted(blocks.iter().map(|b| b.0).collect())
}

/// Figure 1(b): `Entry` = 0, `B1`..`B6` = 1..6, `Exit` = 7. `B1` branches to `B3` when
/// `c1()` holds and to `B2` otherwise; `B2` to `B3` or `B5`; `B3` to `B4` or `B5`.
const FIG1: &[&[u32]] = &[&[1], &[3, 2], &[3, 5], &[4, 5], &[6], &[6], &[7], &[]];

/// Figure 5(b): `Entry` = 0, `B1`..`B6` = 1..6, `Exit` = 7. `B1: i = 0`, `B2: i < N`,
/// `B3: S1; c1 == 1` (the `goto L1` to `B6`), `B4: S2; i++` (back to `B2`), `B5: S3`,
/// `B6: S4`.
const FIG5: &[&[u32]] = &[&[1], &[2], &[3, 5], &[4, 6], &[2], &[6], &[7], &[]];

/// Figure 6(b): `Entry` = 0, `B1`..`B6` = 1..6, `Exit` = 7. `B1: c1 == 1` (the `goto L1`
/// to `B5`), `B2: i = 0`, the loop `B3: i < N`, `B4: S1`, `B5 (L1): S2; i++` (back to
/// `B3`), and `B6: S3` after it. (The extracted figure is garbled; this is the graph of
/// Figure 6(a)'s code whose loop is "formed by blocks B3, B4 and B5", as the text says.)
const FIG6B: &[&[u32]] = &[&[1], &[2, 5], &[3], &[4, 6], &[5], &[3], &[7], &[]];

/// Figure 6(c): `B1`..`B3` = 0..2, `Exit` = 3; `B2` and `B3` branch to each other.
const FIG6C: &[&[u32]] = &[&[1, 2], &[2], &[1, 3], &[]];

#[test]
fn figure_1_edges() {
    // "in Figure 1(b), edges B2→B3, B2→B5 and B3→B5 are unstructured edges as they
    // satisfy the first condition."
    let a = analyze(FIG1);
    assert_eq!(edge_numbers(&a.ue), vec![(2, 3), (2, 5), (3, 5)]);
    for e in a.ue.edges() {
        assert_eq!(
            e.conditions,
            Conditions {
                branch_to_join: true,
                enters_loop: None,
                exits_loop: None,
                joins_before_ipdom: false,
            }
        );
        assert!(!e.retreating);
    }
    assert!(a.ue.contains(N(2), N(3)));
    assert!(!a.ue.contains(N(1), N(3)));
    assert_eq!(a.ue.len(), 3);
}

#[test]
fn figure_1_region() {
    let a = analyze(FIG1);
    // Each edge alone: CIDOM B1, CIPDOM B6, blocks B2..B5.
    for (u, v) in [(2, 3), (2, 5), (3, 5)] {
        let r = a.minimal(N(u), N(v));
        assert_eq!((r.entry(), r.exit()), (Some(N(1)), Some(N(6))));
        assert_eq!(numbers(r.blocks()), vec![2, 3, 4, 5]);
    }
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!((r.entry(), r.exit()), (Some(N(1)), Some(N(6))));
    // Reverse post-order: B1 visits B3 (then B4) before B2.
    let rpo: Vec<N> =
        a.dt.rpo()
            .iter()
            .copied()
            .filter(|&b| r.contains(b))
            .collect();
    assert_eq!(r.blocks(), &rpo[..]);
    assert_eq!(numbers(r.blocks()), vec![2, 3, 4, 5]);
    assert_eq!(r.unstructured_edges(), a.ue.edges());
    assert!(r.holds_edge(N(1), N(2)) && r.holds_edge(N(4), N(6)));
    assert!(!r.holds_edge(N(0), N(1)) && !r.contains(N(1)));
    // No structured sub-region: B3's post-dominator B6 lies outside.
    assert!(a.subregions(r).is_empty());
}

#[test]
fn figure_5_jump_out_of_a_loop() {
    // "In Figure 5(b), edge B3→B6 and B2→B5 are unstructured edges as they jump out of
    // the loop formed by blocks B2, B3 and B4."
    let a = analyze(FIG5);
    assert_eq!(edge_numbers(&a.ue), vec![(2, 5), (3, 6)]);
    let l = a.loops.top_level()[0];
    assert_eq!(numbers(a.loops.blocks(l)), vec![2, 3, 4]);
    for e in a.ue.edges() {
        assert_eq!(
            e.conditions,
            Conditions {
                branch_to_join: false,
                enters_loop: None,
                exits_loop: Some(l),
                joins_before_ipdom: false,
            }
        );
    }
    // The paper's Figure 5(c) linearizes B2..B5 and leaves B6 as it is: both edges
    // have that region, between B1 and B6.
    for (u, v) in [(2, 5), (3, 6)] {
        let r = a.minimal(N(u), N(v));
        assert_eq!((r.entry(), r.exit()), (Some(N(1)), Some(N(6))));
        assert_eq!(numbers(r.blocks()), vec![2, 3, 4, 5]);
    }
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].unstructured_edges().len(), 2);
    // The retreating edge B4 -> B2 is in the region (Algorithm 1 gives it B4_1_G).
    assert!(regions[0].holds_edge(N(4), N(2)));
}

#[test]
fn figure_6_jump_into_a_loop() {
    // "Edges B1→B5 and B2→B3 in Figure 6(b) are marked as unstructured edges as they
    // jump into the loop formed by blocks B3, B4 and B5."
    let a = analyze(FIG6B);
    assert_eq!(edge_numbers(&a.ue), vec![(1, 5), (2, 3)]);
    let l = a.loops.top_level()[0];
    assert_eq!(numbers(a.loops.blocks(l)), vec![3, 4, 5]);
    for e in a.ue.edges() {
        assert_eq!(
            e.conditions,
            Conditions {
                branch_to_join: false,
                enters_loop: Some(l),
                exits_loop: None,
                joins_before_ipdom: false,
            }
        );
    }
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!((r.entry(), r.exit()), (Some(N(1)), Some(N(6))));
    assert_eq!(numbers(r.blocks()), vec![2, 3, 4, 5]);
    assert_eq!(r.unstructured_edges().len(), 2);
    assert_eq!(a.minimal(N(1), N(5)), {
        let mut m = r.clone();
        m.edges.truncate(1);
        m
    });
}

#[test]
fn figure_6_irreducible() {
    // Figure 6(c): both edges from B1 enter the cycle {B2, B3} at a block that does not
    // dominate the other; Figure 6(d) linearizes B2 and B3.
    let a = analyze(FIG6C);
    assert_eq!(edge_numbers(&a.ue), vec![(0, 1), (0, 2)]);
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!((r.entry(), r.exit()), (Some(N(0)), Some(N(3))));
    assert_eq!(numbers(r.blocks()), vec![1, 2]);
    // B3 -> B2 is retreating but structured (B3 post-dominates B2).
    assert!(!a.ue.contains(N(2), N(1)));
}

#[test]
fn structured_graphs_have_no_unstructured_edges() {
    let cases: &[&[&[u32]]] = &[
        // a diamond
        &[&[1, 2], &[3], &[3], &[]],
        // if without else
        &[&[1, 2], &[2], &[]],
        // Figure 3: B1..B10 = 0..9, nested if/else three deep
        &[
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
        ],
        // while loop: 0 -> 1 (header) -> 2 (body) -> 1, 1 -> 3
        &[&[1], &[2, 3], &[1], &[]],
        // do-while with an if/else in the body: 1 -> 2, 3 -> 4 -> 1 | 5
        &[&[1], &[2, 3], &[4], &[4], &[1, 5], &[]],
        // nested loops, each exiting at its header
        &[&[1], &[2, 5], &[3, 4], &[2], &[1], &[]],
        // self loop
        &[&[1], &[1, 2], &[]],
        // an early return from one arm
        &[&[1, 2], &[], &[]],
        // an infinite loop
        &[&[1], &[2], &[1]],
        // a chain
        &[&[1], &[2], &[]],
    ];
    for (i, edges) in cases.iter().enumerate() {
        let a = analyze(edges);
        assert!(a.ue.is_empty(), "case {i}: {:?}", edge_numbers(&a.ue));
        assert!(a.regions().is_empty());
    }
}

#[test]
fn early_return_into_a_join_is_unstructured() {
    // `if (c) { if (d) return; } S; return;`: 0 -> 1 | 2, 1 -> 3 (return) | 4, 2 -> 4.
    // The arms of 0 meet only at the virtual exit, so 4 runs once for the threads from
    // 1 and again for those from 2: 1 -> 4 satisfies the first condition.
    let a = analyze(&[&[1, 2], &[3, 4], &[4], &[], &[]]);
    assert_eq!(edge_numbers(&a.ue), vec![(1, 4)]);
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    assert_eq!((regions[0].entry(), regions[0].exit()), (Some(N(0)), None));
    assert_eq!(numbers(regions[0].blocks()), vec![1, 2, 3, 4]);
}

#[test]
fn structured_subregions_are_guarded_whole() {
    // Figure 1 with S1 an if/else followed by another if/else:
    // B4 = 4 -> 8 | 9 -> 10 -> 11 | 12 -> 13 -> B6.
    let g: &[&[u32]] = &[
        &[1],
        &[3, 2],
        &[3, 5],
        &[4, 5],
        &[8, 9],
        &[6],
        &[7],
        &[],
        &[10],
        &[10],
        &[11, 12],
        &[13],
        &[13],
        &[6],
    ];
    let a = analyze(g);
    assert_eq!(edge_numbers(&a.ue), vec![(2, 3), (2, 5), (3, 5)]);
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(numbers(r.blocks()), vec![2, 3, 4, 5, 8, 9, 10, 11, 12, 13]);
    let subs = a.subregions(r);
    assert_eq!(subs.len(), 1);
    // The two diamonds share block 10, so they are one sub-region from 4 to 13.
    assert_eq!((subs[0].entry(), subs[0].exit()), (N(4), N(13)));
    assert_eq!(numbers(subs[0].blocks()), vec![4, 8, 9, 10, 11, 12, 13]);
    assert_eq!(subs[0].blocks()[0], N(4));
}

#[test]
fn subregion_stops_at_an_unstructured_edge() {
    // Inside a region, 3 -> 4 | 5, 4 -> 5 | 6, 5 -> 6 is itself unstructured (4 -> 5),
    // so 3 starts no sub-region, but the diamond 7 -> 8 | 9 -> 10 after it does.
    // 0 -> 1 | 2 (1 -> 2 unstructured, making the region), 2 -> 3.
    let g: &[&[u32]] = &[
        &[1, 2],
        &[2, 3],
        &[3],
        &[4, 5],
        &[5, 6],
        &[6],
        &[7],
        &[8, 9],
        &[10],
        &[10],
        &[11],
        &[],
    ];
    let a = analyze(g);
    assert!(a.ue.contains(N(4), N(5)));
    let regions = a.regions();
    for r in &regions {
        for s in a.subregions(r) {
            assert!(!s.blocks().contains(&N(4)));
        }
    }
}

#[test]
fn selection() {
    let a = analyze(FIG1);
    let regions = a.regions();
    let none = |_: N| false;
    let at_b1 = |n: N| n == N(1);
    let at_b6 = |n: N| n == N(6);
    let sel = |s, f: &dyn Fn(N) -> bool| select_regions(&a.dt, &a.ue, &regions, s, f);
    assert_eq!(
        RegionSelection::default(),
        RegionSelection::DivergentUnstructured
    );
    assert!(sel(RegionSelection::DivergentUnstructured, &none).is_empty());
    // A divergent branch at the entry B1 splits the warp before the region.
    assert_eq!(sel(RegionSelection::DivergentUnstructured, &at_b1), regions);
    assert!(sel(RegionSelection::DivergentUnstructured, &at_b6).is_empty());
    assert_eq!(sel(RegionSelection::AllUnstructured, &none), regions);
    let whole = sel(RegionSelection::WholeKernel, &none);
    assert_eq!(whole.len(), 1);
    assert_eq!((whole[0].entry(), whole[0].exit()), (None, None));
    assert_eq!(whole[0].blocks(), a.dt.rpo());
    assert_eq!(whole[0].unstructured_edges().len(), 3);
    // A structured kernel is linearized only when asked for the whole kernel.
    let d = analyze(&[&[1, 2], &[3], &[3], &[]]);
    let dr = find_unstructured_regions(&d.cfg, &d.dt, &d.pdt, &d.ue);
    assert!(select_regions(&d.dt, &d.ue, &dr, RegionSelection::AllUnstructured, none).is_empty());
    assert_eq!(
        select_regions(&d.dt, &d.ue, &dr, RegionSelection::WholeKernel, none)[0].blocks(),
        d.dt.rpo()
    );
    let e = analyze(&[]);
    assert!(select_regions(&e.dt, &e.ue, &[], RegionSelection::WholeKernel, none).is_empty());
}

#[test]
fn region_holding_the_kernel_entry() {
    // A loop back to the entry block with a jump out of it: 0 -> 1 | 2, 1 -> 0 | 3,
    // 2 -> 3. The region holds block 0, so its entry is the virtual entry.
    let a = analyze(&[&[1, 2], &[0, 3], &[3], &[]]);
    assert_eq!(edge_numbers(&a.ue), vec![(0, 2), (1, 3)]);
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].entry(), None);
    assert_eq!(regions[0].exit(), Some(N(3)));
    assert_eq!(numbers(regions[0].blocks()), vec![0, 1, 2]);
}

// ---- corpus kernels ----

fn kernel(text: &str) -> Function {
    let mut funcs = crate::parser::parse_functions(text).expect("corpus kernel parses");
    funcs.remove(0)
}

/// The block printed as `name`.
fn blk(func: &Function, name: &str) -> Block {
    func.layout
        .blocks()
        .iter()
        .copied()
        .find(|b| b.to_string() == name)
        .expect("block exists")
}

fn block_pairs(func: &Function, pairs: &[(&str, &str)]) -> Vec<(Block, Block)> {
    sorted(
        pairs
            .iter()
            .map(|&(u, v)| (blk(func, u), blk(func, v)))
            .collect(),
    )
}

fn blocks(func: &Function, names: &[&str]) -> Vec<Block> {
    sorted(names.iter().map(|n| blk(func, n)).collect())
}

#[test]
fn corpus_figure_1() {
    // block0 is the paper's Entry, blockK is BK.
    let f = kernel(include_str!(
        "../../../../../tests/corpus/short_circuit_fig1.wir"
    ));
    let a = analyze_cfg(ControlFlowGraph::compute(&f));
    assert_eq!(
        sorted(a.ue.pairs()),
        block_pairs(
            &f,
            &[
                ("block2", "block3"),
                ("block2", "block5"),
                ("block3", "block5")
            ]
        )
    );
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(r.entry(), Some(blk(&f, "block1")));
    assert_eq!(r.exit(), Some(blk(&f, "block6")));
    assert_eq!(
        sorted(r.blocks().to_vec()),
        blocks(&f, &["block2", "block3", "block4", "block5"])
    );
    // c1 is loaded per thread: the branch of B1 is divergent, so the region is selected.
    let div = crate::divergence::Divergence::compute(&f);
    assert!(div.is_divergent_branch(blk(&f, "block1")));
    let sel = select_regions(&a.dt, &a.ue, &regions, RegionSelection::default(), |b| {
        div.is_divergent_branch(b)
    });
    assert_eq!(sel, regions);
}

/// The bounded region search finds the same regions as the unbounded one on every
/// kernel of the corpus.
#[test]
fn corpus_regions_equal_the_unbounded_search() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "wir"))
        .collect();
    paths.sort();
    let mut with_regions = 0;
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("corpus kernel reads");
        let funcs = crate::parser::parse_functions(&text).expect("corpus kernel parses");
        for f in &funcs {
            let a = analyze_cfg(ControlFlowGraph::compute(f));
            let regions = a.regions();
            assert_eq!(regions, a.regions_exhaustively(), "{}", path.display());
            with_regions += usize::from(!regions.is_empty());
        }
    }
    assert!(
        paths.len() > 40 && with_regions > 5,
        "{with_regions} of {}",
        paths.len()
    );
}

/// Many unstructured regions in a chain, inside and between loops (the shape whose
/// search used to walk the whole kernel per region): the bounded search agrees with the
/// unbounded one.
#[test]
fn chains_of_regions_in_loops_equal_the_unbounded_search() {
    let mut edges: Vec<Vec<u32>> = Vec::new();
    for k in 0..40u32 {
        let b = 7 * k;
        // Figure 1 (b..b+5), then a latch b+6 that loops back to b every third copy.
        edges.push(vec![b + 2, b + 1]);
        edges.push(vec![b + 2, b + 4]);
        edges.push(vec![b + 3, b + 4]);
        edges.push(vec![b + 5]);
        edges.push(vec![b + 5]);
        edges.push(vec![b + 6]);
        edges.push(if k % 3 == 2 {
            vec![b + 7, b]
        } else {
            vec![b + 7]
        });
    }
    edges.push(vec![]);
    let a = analyze_cfg(ControlFlowGraph::compute(&Graph { edges }));
    let regions = a.regions();
    assert!(regions.len() >= 20, "{} regions", regions.len());
    assert_eq!(regions, a.regions_exhaustively());
}

#[test]
fn corpus_figure_3_is_structured() {
    let f = kernel(include_str!(
        "../../../../../tests/corpus/nested_branches_fig3.wir"
    ));
    let a = analyze_cfg(ControlFlowGraph::compute(&f));
    assert!(a.ue.is_empty());
    assert!(a.regions().is_empty());
}

#[test]
fn corpus_figure_5() {
    // block0 = B1, block1 = B2, block2 = B3, block3 = B4, block4 = B5, block5 = B6.
    let f = kernel(include_str!(
        "../../../../../tests/corpus/loop_jump_out_fig5.wir"
    ));
    let a = analyze_cfg(ControlFlowGraph::compute(&f));
    // B3 -> B6 and B2 -> B5.
    assert_eq!(
        sorted(a.ue.pairs()),
        block_pairs(&f, &[("block1", "block4"), ("block2", "block5")])
    );
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(r.entry(), Some(blk(&f, "block0")));
    assert_eq!(r.exit(), Some(blk(&f, "block5")));
    assert_eq!(
        sorted(r.blocks().to_vec()),
        blocks(&f, &["block1", "block2", "block3", "block4"])
    );
}

#[test]
fn corpus_figure_6() {
    // The kernel places the loop test at the bottom (a do-while after rotation), so the
    // paper's B3 (the test) is merged into B5: block0 = B1 (with the entry), block1 =
    // B2, block2 = B4, block3 = B5 (and the test of B3), block4 = B6 (S3). The paper's
    // B1 -> B5 is block0 -> block3, and its B2 -> B3, the edge from B2 into the loop,
    // is block1 -> block2.
    let f = kernel(include_str!(
        "../../../../../tests/corpus/loop_jump_in_fig6.wir"
    ));
    let a = analyze_cfg(ControlFlowGraph::compute(&f));
    assert_eq!(
        sorted(a.ue.pairs()),
        block_pairs(&f, &[("block0", "block3"), ("block1", "block2")])
    );
    for e in a.ue.edges() {
        assert!(e.conditions.enters_loop.is_some());
        assert!(!e.conditions.branch_to_join && e.conditions.exits_loop.is_none());
    }
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(r.entry(), Some(blk(&f, "block0")));
    assert_eq!(r.exit(), Some(blk(&f, "block4")));
    assert_eq!(
        sorted(r.blocks().to_vec()),
        blocks(&f, &["block1", "block2", "block3"])
    );
}

#[test]
fn corpus_irreducible_loop() {
    // block0 = B1 enters the cycle {block1, block2, block3, block4} at block3 and at
    // block1; block1 and block3 both leave it to block5, and block2 leaves the inner
    // cycle {block1, block2} for block3, which block2 does not post-dominate.
    let f = kernel(include_str!(
        "../../../../../tests/corpus/irreducible_loop.wir"
    ));
    let a = analyze_cfg(ControlFlowGraph::compute(&f));
    assert_eq!(
        sorted(a.ue.pairs()),
        block_pairs(
            &f,
            &[
                ("block0", "block1"),
                ("block0", "block3"),
                ("block1", "block5"),
                ("block2", "block3"),
                ("block3", "block5"),
            ]
        )
    );
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(r.entry(), Some(blk(&f, "block0")));
    assert_eq!(r.exit(), Some(blk(&f, "block5")));
    assert_eq!(
        sorted(r.blocks().to_vec()),
        blocks(&f, &["block1", "block2", "block3", "block4"])
    );
    assert_eq!(r.unstructured_edges().len(), 5);
}

// ---- random graphs ----

/// Definition 1 checked the slow way: every loop and every block of it.
fn brute_force_edges(a: &Analyses<N>) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for &u in a.dt.rpo() {
        for &v in a.cfg.succs(u) {
            let preds = a
                .cfg
                .preds(v)
                .iter()
                .filter(|&&p| a.dt.is_reachable(p))
                .count();
            let c1 = a.cfg.succs(u).len() > 1
                && preds > 1
                && !a.dt.dominates(u, v)
                && !a.dt.dominates(v, u)
                && !a.pdt.post_dominates(u, v)
                && !a.pdt.post_dominates(v, u);
            let c2 = a.loops.loops().any(|l| {
                a.loops.contains(l, v)
                    && !a.loops.contains(l, u)
                    && a.loops.blocks(l).iter().any(|&b| !a.dt.dominates(v, b))
            });
            let c3 = a.loops.loops().any(|l| {
                a.loops.contains(l, u)
                    && !a.loops.contains(l, v)
                    && a.loops
                        .blocks(l)
                        .iter()
                        .any(|&b| !a.pdt.post_dominates(u, b))
            });
            if c1 || c2 || c3 {
                out.push((u.0, v.0));
            }
        }
    }
    sorted(out)
}

fn check_region(a: &Analyses<N>, r: &Region<N>) {
    assert!(!r.blocks().is_empty());
    for &b in r.blocks() {
        if let Some(d) = r.entry() {
            assert!(a.dt.strictly_dominates(d, b), "entry {d:?} of {b:?}");
        }
        if let Some(p) = r.exit() {
            assert!(a.pdt.strictly_post_dominates(p, b), "exit {p:?} of {b:?}");
        }
        // Definition 4: single entry, single exit.
        for &k in a.cfg.preds(b) {
            if a.dt.is_reachable(k) {
                assert!(r.contains(k) || r.entry() == Some(k));
            }
        }
        for &s in a.cfg.succs(b) {
            assert!(r.contains(s) || r.exit() == Some(s));
        }
    }
    for d in [r.entry(), r.exit()].into_iter().flatten() {
        assert!(!r.contains(d));
    }
    // The bounds are the nearest ones: no block of the region dominates (post-dominates)
    // all the others... checked through the definition of the bounds: D is the CIDOM.
    let cd = common_dominator(&a.dt, r.blocks().iter().copied());
    let expect_d = match cd {
        Some(x) if r.contains(x) => a.dt.idom(x),
        other => other,
    };
    assert_eq!(r.entry(), expect_d);
}

fn check_graph(edges: &[Vec<u32>]) {
    let g = Graph {
        edges: edges.to_vec(),
    };
    let a = analyze_cfg(ControlFlowGraph::compute(&g));
    // Definition 1's edges, exactly; the early joins beyond it are checked below.
    let definition_1: Vec<(u32, u32)> = sorted(
        a.ue.edges()
            .iter()
            .filter(|e| {
                let c = e.conditions;
                c.branch_to_join || c.enters_loop.is_some() || c.exits_loop.is_some()
            })
            .map(|e| (e.from.0, e.to.0))
            .collect(),
    );
    assert_eq!(definition_1, brute_force_edges(&a), "{edges:?}");
    let regions = a.regions();
    assert_eq!(regions, a.regions_exhaustively(), "{edges:?}");
    for e in a.ue.edges() {
        let holding: Vec<&Region<N>> = regions
            .iter()
            .filter(|r| r.holds_edge(e.from, e.to))
            .collect();
        assert_eq!(holding.len(), 1, "{e:?} in {edges:?}");
        assert!(holding[0].unstructured_edges().contains(e));
        // The minimal region of the edge alone is a valid region too.
        check_region(&a, &a.minimal(e.from, e.to));
    }
    let total: usize = regions.iter().map(|r| r.unstructured_edges().len()).sum();
    assert_eq!(total, a.ue.len());
    let mut owner = vec![usize::MAX; edges.len()];
    for (i, r) in regions.iter().enumerate() {
        check_region(&a, r);
        for &b in r.blocks() {
            assert_eq!(owner[b.0 as usize], usize::MAX, "regions overlap");
            owner[b.0 as usize] = i;
        }
        for s in a.subregions(r) {
            assert!(s.blocks().len() >= 2);
            for &b in s.blocks() {
                assert!(r.contains(b));
                assert!(a.dt.dominates(s.entry(), b));
                assert!(a.pdt.post_dominates(s.exit(), b));
                if b != s.exit() {
                    for &t in a.cfg.succs(b) {
                        assert!(s.blocks().contains(&t));
                        assert!(!a.ue.contains(b, t));
                    }
                }
                if b != s.entry() {
                    for &k in a.cfg.preds(b) {
                        assert!(!a.dt.is_reachable(k) || s.blocks().contains(&k));
                    }
                }
            }
        }
    }
    // No region holds the entry of another.
    for r in &regions {
        for q in &regions {
            if !core::ptr::eq(r, q) {
                assert!(r.entry() != q.entry());
                if let Some(d) = r.entry() {
                    assert!(!q.contains(d));
                }
            }
        }
    }
}

#[test]
fn random_graph_invariants() {
    for edges in random_graphs(0x5eed_2014, 3000, 12) {
        check_graph(&edges);
    }
    for edges in random_graphs(7, 300, 40) {
        check_graph(&edges);
    }
}

#[test]
fn long_chains_do_not_overflow() {
    // 60 copies of Figure 1 in a row, then a chain: one region per copy, deep trees.
    let mut edges: Vec<Vec<u32>> = Vec::new();
    for k in 0..60u32 {
        let b = 6 * k;
        // b: B1, b+1: B2, b+2: B3, b+3: B4, b+4: B5, b+5: B6 = next B1's predecessor
        edges.push(vec![b + 2, b + 1]);
        edges.push(vec![b + 2, b + 4]);
        edges.push(vec![b + 3, b + 4]);
        edges.push(vec![b + 5]);
        edges.push(vec![b + 5]);
        edges.push(vec![b + 6]);
    }
    let n = edges.len() as u32;
    for i in n..n + 50_000 {
        edges.push(vec![i + 1]);
    }
    edges.push(vec![]);
    let a = analyze_cfg(ControlFlowGraph::compute(&Graph { edges }));
    assert_eq!(a.ue.len(), 180);
    let regions = a.regions();
    assert_eq!(regions.len(), 60);
    for (k, r) in regions.iter().enumerate() {
        let b = 6 * k as u32;
        assert_eq!((r.entry(), r.exit()), (Some(N(b)), Some(N(b + 5))));
        assert_eq!(r.blocks().len(), 4);
    }
}

/// Whether the regions of `edges` can run a block twice per pass of a warp, when the
/// branches of `divergent` (every branch: `None`) split warps; one answer per region.
fn twice(edges: &[&[u32]], divergent: Option<&[u32]>) -> Vec<bool> {
    let a = analyze(edges);
    let regions = a.regions();
    assert!(!regions.is_empty(), "no region in {edges:?}");
    regions
        .iter()
        .map(|r| {
            r.can_run_a_block_twice(&a.cfg, &a.pdt, |n| {
                a.cfg.succs(n).len() > 1 && divergent.is_none_or(|d| d.contains(&n.0))
            })
        })
        .collect()
}

#[test]
fn a_region_runs_a_block_twice_only_where_two_groups_of_lanes_reach_it() {
    // Figure 1 (B1..B6 as 0..5): B3 and B5 are reached from both arms of B1 and of B2.
    let fig1: &[&[u32]] = &[&[2, 1], &[2, 4], &[3, 4], &[5], &[5], &[]];
    assert_eq!(twice(fig1, None), [true]);
    assert_eq!(twice(fig1, Some(&[1])), [true]); // B2 alone: B5 from B2 and via B3
    assert_eq!(twice(fig1, Some(&[2])), [false]); // B3 alone: a plain if/else
    assert_eq!(twice(fig1, Some(&[])), [false]);
    // A loop left from its header and its latch, both to the block after it (its
    // post-dominator): lanes leaving at different iterations meet there, nothing else
    // runs twice.
    let two_exits: &[&[u32]] = &[&[1], &[3, 2], &[1, 3], &[]];
    assert!(twice(two_exits, None).iter().all(|&t| !t));
    // A goto out of a loop (Figure 5: B2 → {B3, B4}, B3 → {B6, B5}, B5 → B2, B4 → B6,
    // as 1 → {2, 4}, 2 → {5, 3}, 3 → 1, 4 → 5): lanes that leave by the loop's test at
    // different iterations run B4 once each group — only if that test is divergent.
    let fig5: &[&[u32]] = &[&[1], &[2, 4], &[5, 3], &[1], &[5], &[]];
    assert_eq!(twice(fig5, None), [true]);
    assert_eq!(twice(fig5, Some(&[2])), [false]);
    // A jump into a loop (Figure 6, irreducible): lanes that enter at the top run the
    // block before the second entry a pass ahead of those that jump in.
    let fig6: &[&[u32]] = &[&[3, 1], &[2], &[3], &[2, 4], &[]];
    assert_eq!(twice(fig6, None), [true]);
    assert_eq!(twice(fig6, Some(&[3])), [false]);
    // A branch table's range check (0) and search tree (5, 6, 7) whose default (4) is
    // also its last entry: the default edge makes the region; it matters only where the
    // range check can split the warp.
    let table: &[&[u32]] = &[
        &[5, 4],
        &[8],
        &[8],
        &[8],
        &[8],
        &[6, 7],
        &[1, 2],
        &[3, 4],
        &[],
    ];
    assert_eq!(twice(table, None), [true]);
    assert_eq!(twice(table, Some(&[5, 6, 7])), [false]);
}

#[test]
fn reruns_weigh_each_block_by_the_groups_of_lanes_that_can_reach_it() {
    // Figure 1 (B1..B6 as 0..5), every branch divergent: from B1's two arms B3 (2 here)
    // and B5 (4) can each be reached once more, and so can S1 (3), behind B3; from B2's
    // arms B5 once more; B3's arms meet only at B6. The paper's 4 threads run B3 twice
    // and B5 three times: the bound is met there (S1 runs once with them).
    let fig1: &[&[u32]] = &[&[2, 1], &[2, 4], &[3, 4], &[5], &[5], &[]];
    let a = analyze(fig1);
    let regions = a.regions();
    assert_eq!(regions.len(), 1);
    let reruns = regions[0].reruns(&a.cfg, &a.pdt, |n| a.cfg.succs(n).len() > 1);
    let mut got: Vec<(u32, u32)> = reruns.iter().map(|&(b, n)| (b.0, n)).collect();
    got.sort();
    assert_eq!(got, [(2, 1), (3, 1), (4, 2)]);
    // Only B3 divergent: a plain if/else, nothing runs twice.
    assert!(regions[0].reruns(&a.cfg, &a.pdt, |n| n.0 == 2).is_empty());
}
