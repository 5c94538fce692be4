//! Generic control-flow-graph analyses: predecessors, reverse post-order, dominators,
//! post-dominators and loop nesting forests.
//!
//! The analyses are written once, over the small [`Cfg`] trait, rather than over
//! [`Function`] directly: the machine IR of the code generator implements the same trait
//! and reuses them unchanged. A [`ControlFlowGraph`] snapshots the edges once (successors
//! *and* predecessors), and every later analysis reads that snapshot, so analyses never
//! depend on how a particular IR stores its terminators:
//!
//! ```text
//!   IR (Function, machine IR, ...) --Cfg--> ControlFlowGraph<N> --+--> DominatorTree<N>
//!                                                                 +--> PostDominatorTree<N>
//!                                                                 +--> LoopForest<N>
//! ```
//!
//! - [`domtree`]: dominators (Cooper, Harvey and Kennedy), with constant-time queries.
//! - [`postdom`]: post-dominators on the reversed graph with a virtual exit, which also
//!   covers kernels with several returns and infinite loops; gives the reconvergence point
//!   of a divergent branch.
//! - [`loops`]: the loop nesting forest of reducible *and* irreducible graphs (natural
//!   loops have one entry, irreducible cycles several).
//! - [`ipdom_stack`]: the depth of a SIMT machine's reconvergence stack over this CFG,
//!   given the blocks each lane runs (a model, for measuring on the IR's own graph).
//! - [`regions`]: unstructured edges and the minimal single-entry, single-exit regions
//!   around them (Anantpur and Govindarajan, 2014), which the linearizer transforms.
//!
//! Every traversal is iterative with an explicit stack: the graphs come from user input
//! and may be chains of hundreds of thousands of blocks, which must not overflow the call
//! stack.

pub mod domtree;
pub mod ipdom_stack;
pub mod loops;
pub mod postdom;
pub mod regions;
pub mod structure;

#[cfg(test)]
mod testgraph;

pub use domtree::DominatorTree;
pub use loops::{Loop, LoopForest};
pub use postdom::PostDominatorTree;
pub use regions::{
    find_unstructured_regions, minimal_region, select_regions, Conditions, MinimalRegions, Region,
    RegionSelection, StructuredRegion, UnstructuredEdge, UnstructuredEdges,
};
pub use structure::{classify, Classification, StructureClass, UnstructuredSubgraph};

use crate::entities::Block;
use crate::function::Function;
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::EntityRef;

/// A directed graph with an entry node: what the analyses of this module need to know of
/// an IR.
pub trait Cfg {
    /// The node type (a basic block).
    type Node: EntityRef + Copy + Eq + Hash + Debug;

    /// The entry node, or `None` for an empty graph.
    fn entry(&self) -> Option<Self::Node>;

    /// An upper bound of the node indices (`node.index() < num_nodes()` for every node),
    /// used to size side tables.
    fn num_nodes(&self) -> usize;

    /// Appends the successors of `node` to `out`, in the order the node's terminator
    /// names them. Duplicates are allowed; edges to nodes outside the graph must not be
    /// reported.
    fn successors(&self, node: Self::Node, out: &mut Vec<Self::Node>);

    /// The nodes of the graph, in layout order.
    fn nodes(&self) -> impl Iterator<Item = Self::Node> + '_;
}

impl Cfg for Function {
    type Node = Block;

    fn entry(&self) -> Option<Block> {
        self.entry_block()
    }

    fn num_nodes(&self) -> usize {
        self.dfg.num_blocks()
    }

    /// The destinations of the block's terminator that are blocks of the layout; edges to
    /// anything else (which the verifier reports) are left out so that analyses can run on
    /// unverified functions without panicking.
    fn successors(&self, block: Block, out: &mut Vec<Block>) {
        let Some(last) = self.layout.last_inst(block) else {
            return;
        };
        if !self.dfg.insts.is_valid(last) {
            return;
        }
        for call in self.dfg.insts[last].branch_destinations() {
            if self.dfg.block_is_valid(call.block) && self.layout.is_block_inserted(call.block) {
                out.push(call.block);
            }
        }
    }

    fn nodes(&self) -> impl Iterator<Item = Block> + '_ {
        self.layout.blocks().iter().copied()
    }
}

/// Successors and predecessors of every node, computed once.
///
/// Each list is free of duplicates (a `brif` whose two arms go to the same block makes a
/// single edge here) and in the order edges were first seen: successors in terminator
/// order, predecessors in layout order of their source.
///
/// The lists are kept in two flat arrays indexed by node (compressed rows): the graph of
/// a large kernel costs a few allocations, not two per block.
#[derive(Clone, Debug)]
pub struct ControlFlowGraph<N: EntityRef> {
    entry: Option<N>,
    num_nodes: usize,
    nodes: Vec<N>,
    /// The successors of node `n` are `succ_list[succ_start[n]..succ_start[n + 1]]`;
    /// `succ_start` has `num_nodes + 1` entries.
    succ_start: Vec<u32>,
    succ_list: Vec<N>,
    /// The same for predecessors.
    pred_start: Vec<u32>,
    pred_list: Vec<N>,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> ControlFlowGraph<N> {
    /// Snapshots the edges of `graph`.
    pub fn compute<G: Cfg<Node = N> + ?Sized>(graph: &G) -> Self {
        let num_nodes = graph.num_nodes();
        let nodes: Vec<N> = graph.nodes().collect();
        // The distinct successors of each node, grouped by node in layout order.
        let mut edges: Vec<(N, N)> = Vec::with_capacity(nodes.len() * 2);
        let mut out = Vec::new();
        for &n in &nodes {
            out.clear();
            graph.successors(n, &mut out);
            let first = edges.len();
            for &s in &out {
                // Nodes are below `num_nodes` by the trait's contract; an edge that breaks
                // it is left out rather than indexed out of bounds.
                if n.index() >= num_nodes || s.index() >= num_nodes {
                    continue;
                }
                // Out-degrees are tiny (a br_table has the most), so a linear scan beats
                // a hash set here.
                if !edges[first..].iter().any(|&(_, t)| t == s) {
                    edges.push((n, s));
                }
            }
        }
        let rows = |key: &dyn Fn(&(N, N)) -> N, val: &dyn Fn(&(N, N)) -> N| {
            let mut start = vec![0u32; num_nodes + 1];
            for e in &edges {
                start[key(e).index() + 1] += 1;
            }
            for i in 0..num_nodes {
                start[i + 1] += start[i];
            }
            let mut next = start[..num_nodes].to_vec();
            let mut list = Vec::with_capacity(edges.len());
            list.resize(edges.len(), val(&edges[0]));
            // Edges in order: each row keeps the order its edges were seen in.
            for e in &edges {
                let slot = &mut next[key(e).index()];
                list[*slot as usize] = val(e);
                *slot += 1;
            }
            (start, list)
        };
        let ((succ_start, succ_list), (pred_start, pred_list)) = if edges.is_empty() {
            let empty = || (vec![0u32; num_nodes + 1], Vec::new());
            (empty(), empty())
        } else {
            (rows(&|e| e.0, &|e| e.1), rows(&|e| e.1, &|e| e.0))
        };
        ControlFlowGraph {
            entry: graph.entry(),
            num_nodes,
            nodes,
            succ_start,
            succ_list,
            pred_start,
            pred_list,
        }
    }

    /// `list[start[n]..start[n + 1]]`, empty for a node out of range.
    fn row<'a>(start: &[u32], list: &'a [N], n: N) -> &'a [N] {
        match (start.get(n.index()), start.get(n.index() + 1)) {
            (Some(&a), Some(&b)) => &list[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The entry node.
    pub fn entry(&self) -> Option<N> {
        self.entry
    }

    /// The nodes, in layout order.
    pub fn nodes(&self) -> &[N] {
        &self.nodes
    }

    /// The distinct successors of `n`.
    pub fn succs(&self, n: N) -> &[N] {
        Self::row(&self.succ_start, &self.succ_list, n)
    }

    /// The distinct predecessors of `n`.
    pub fn preds(&self, n: N) -> &[N] {
        Self::row(&self.pred_start, &self.pred_list, n)
    }

    /// An upper bound of the node indices.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// The nodes reachable from the entry, in reverse post-order of a depth-first search
    /// that visits successors in order. Every node comes before its successors, back
    /// edges excepted.
    pub fn reverse_post_order(&self) -> Vec<N> {
        let mut po = Vec::with_capacity(self.nodes.len());
        let Some(entry) = self.entry else {
            return po;
        };
        // Sized once: a map grown node by node costs a call per node. Edges to nodes out of
        // range are never stored, so the entry alone may need the extra room.
        let mut visited = vec![false; self.num_nodes.max(entry.index() + 1)];
        // Each frame is a node and the index of the next successor to visit.
        let mut stack: Vec<(N, usize)> = vec![(entry, 0)];
        visited[entry.index()] = true;
        while let Some(top) = stack.last_mut() {
            let (n, i) = *top;
            if let Some(&s) = self.succs(n).get(i) {
                top.1 += 1;
                if !visited[s.index()] {
                    visited[s.index()] = true;
                    stack.push((s, 0));
                }
            } else {
                po.push(n);
                stack.pop();
            }
        }
        po.reverse();
        po
    }
}

/// Sentinel for "no node" in the index-based tables of the analyses.
const NONE: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::testgraph::{graph, N};
    use super::*;

    #[test]
    fn snapshot_of_a_diamond() {
        // 0 -> 1, 2; 1 -> 3; 2 -> 3
        let cfg = ControlFlowGraph::compute(&graph(&[&[1, 2], &[3], &[3], &[]]));
        assert_eq!(cfg.preds(N(3)), &[N(1), N(2)]);
        assert_eq!(cfg.succs(N(0)), &[N(1), N(2)]);
        assert_eq!(cfg.reverse_post_order(), vec![N(0), N(2), N(1), N(3)]);
        assert_eq!(cfg.nodes().len(), 4);
    }

    #[test]
    fn duplicate_edges_collapse() {
        let cfg = ControlFlowGraph::compute(&graph(&[&[1, 1], &[]]));
        assert_eq!(cfg.succs(N(0)), &[N(1)]);
        assert_eq!(cfg.preds(N(1)), &[N(0)]);
    }

    #[test]
    fn unreachable_nodes_are_not_in_rpo() {
        let cfg = ControlFlowGraph::compute(&graph(&[&[1], &[], &[1], &[]]));
        assert_eq!(cfg.preds(N(1)), &[N(0), N(2)]);
        assert_eq!(cfg.reverse_post_order(), vec![N(0), N(1)]);
    }

    #[test]
    fn empty_graph() {
        let cfg = ControlFlowGraph::compute(&graph(&[]));
        assert_eq!(cfg.entry(), None);
        assert!(cfg.reverse_post_order().is_empty());
    }

    #[test]
    fn analyses_of_a_function() {
        use crate::builder::InstBuilder;
        use crate::frontend::{FunctionBuilder, FunctionBuilderContext};
        use crate::{IntCC, Param, Signature, Type};

        // if (n < 0) return; while (n < 0) {} return;
        let sig = Signature {
            params: vec![Param::new("n", Type::I32)],
        };
        let mut func = Function::with_name_signature("k", sig);
        let mut ctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut func, &mut ctx);
        let [entry, header, body, after, early] = [(); 5].map(|_| b.create_block());
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let n = b.block_params(entry)[0];
        let zero = b.ins().iconst(Type::I32, 0);
        let c = b.ins().icmp(IntCC::SignedLessThan, n, zero);
        b.ins().brif(c, early, &[], header, &[]);
        b.switch_to_block(header);
        b.ins().brif(c, body, &[], after, &[]);
        b.switch_to_block(body);
        b.ins().jump(header, &[]);
        b.switch_to_block(after);
        b.ins().return_();
        b.switch_to_block(early);
        b.ins().return_();
        b.seal_all_blocks();
        b.finalize();

        let cfg = ControlFlowGraph::compute(&func);
        assert_eq!(cfg.succs(entry), &[early, header]);
        assert_eq!(cfg.preds(header), &[entry, body]);

        let dt = DominatorTree::compute(&cfg);
        assert_eq!(dt.idom(after), Some(header));
        assert_eq!(dt.idom(early), Some(entry));

        let pdt = PostDominatorTree::compute(&cfg);
        assert_eq!(pdt.exits(), &[after, early]);
        assert_eq!(pdt.reconvergence_point(entry), None);
        assert_eq!(pdt.reconvergence_point(header), Some(after));
        assert_eq!(pdt.ipdom(body), Some(header));

        let loops = LoopForest::compute(&cfg);
        assert_eq!(loops.len(), 1);
        let l = loops.top_level()[0];
        assert_eq!(loops.header(l), header);
        assert_eq!(loops.blocks(l), &[header, body]);
        assert_eq!(loops.latches(l), &[body]);
        assert_eq!(loops.exits(l), &[after]);
        assert_eq!(loops.exiting(l), &[header]);
        assert_eq!(loops.loop_depth(body), 1);
        assert_eq!(loops.loop_depth(early), 0);
    }
}
