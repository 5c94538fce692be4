//! The analyses of the kernel the IR passes transform, computed on demand and kept until
//! a pass changes what they describe.
//!
//! The analyses themselves live in `warplift-ir` (they run on IR, machine IR and
//! bytecode alike, over the [`Cfg`](warplift_ir::cfg::Cfg) trait); this is the cache the
//! pipeline keeps of them for one kernel, in the manner of the `cfg`, `domtree` and
//! `loop_analysis` fields of Cranelift's compilation context:
//!
//! ```text
//!   pass 1 ── asks for divergence ──▶ computed (CFG too), kept
//!          ── reports: nothing changed ──▶ preserved: ALL
//!   pass 2 ── asks for divergence ──▶ the kept one, no work
//!          ── reports: rewrote the CFG ──▶ preserved: NOTHING, everything dropped
//!   pass 3 ── asks for the dominator tree ──▶ computed again, on the new CFG
//! ```
//!
//! Every analysis is computed at most once between two passes that invalidate it. After
//! each IR pass the pipeline asks the pass what it [preserved](crate::passes::IrPass::preserved)
//! and drops the rest; a pass that does not say preserves nothing, so a pass written
//! without the cache in mind is always safe. Within a pass, an analysis asked for after
//! the pass changed the kernel would be stale: a pass asks for what it needs before it
//! transforms, or computes its own afterwards.
//!
//! Analyses are handed out as [`Arc`]s, so that a pass can hold several at once (and
//! keep them while it changes the function) without borrowing the cache.
//! [`AnalysisCache::computations`] counts the computations, for tests and statistics.

use std::sync::Arc;
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree, LoopForest, PostDominatorTree};
use warplift_ir::divergence::{Divergence, Reconvergence};
use warplift_ir::{Block, Function};

/// What a pass left valid.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Preserved {
    cfg: bool,
    divergence: bool,
}

impl Preserved {
    /// Nothing: the pass may have changed blocks, edges and values.
    pub const NOTHING: Preserved = Preserved {
        cfg: false,
        divergence: false,
    };
    /// The control-flow graph and what depends on it alone (dominators, post-dominators,
    /// loops): the pass changed instructions but no block and no edge.
    pub const CFG: Preserved = Preserved {
        cfg: true,
        divergence: false,
    };
    /// Everything: the pass did not change the function.
    pub const ALL: Preserved = Preserved {
        cfg: true,
        divergence: true,
    };

    /// Are the control-flow graph, dominators, post-dominators and loops still valid?
    pub fn cfg(self) -> bool {
        self.cfg
    }

    /// Is the divergence analysis still valid?
    pub fn divergence(self) -> bool {
        self.divergence
    }
}

/// How many times each analysis was computed since the cache was made or
/// [reset](AnalysisCache::reset).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Computations {
    /// Control-flow graphs.
    pub cfg: u32,
    /// Dominator trees.
    pub domtree: u32,
    /// Post-dominator trees.
    pub postdom: u32,
    /// Loop forests.
    pub loops: u32,
    /// Divergence analyses.
    pub divergence: u32,
}

/// The analyses of one function, each computed when first asked for and kept until
/// [`AnalysisCache::invalidate`] drops it.
#[derive(Default)]
pub struct AnalysisCache {
    cfg: Option<Arc<ControlFlowGraph<Block>>>,
    domtree: Option<Arc<DominatorTree<Block>>>,
    postdom: Option<Arc<PostDominatorTree<Block>>>,
    loops: Option<Arc<LoopForest<Block>>>,
    divergence: Option<Arc<Divergence>>,
    computations: Computations,
}

impl AnalysisCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The control-flow graph of `func`.
    pub fn cfg(&mut self, func: &Function) -> Arc<ControlFlowGraph<Block>> {
        if let Some(c) = &self.cfg {
            return c.clone();
        }
        self.computations.cfg += 1;
        let c = Arc::new(ControlFlowGraph::compute(func));
        self.cfg = Some(c.clone());
        c
    }

    /// The dominator tree of `func`.
    pub fn domtree(&mut self, func: &Function) -> Arc<DominatorTree<Block>> {
        if let Some(d) = &self.domtree {
            return d.clone();
        }
        let cfg = self.cfg(func);
        self.computations.domtree += 1;
        let d = Arc::new(DominatorTree::compute(&cfg));
        self.domtree = Some(d.clone());
        d
    }

    /// The post-dominator tree of `func`.
    pub fn postdom(&mut self, func: &Function) -> Arc<PostDominatorTree<Block>> {
        if let Some(p) = &self.postdom {
            return p.clone();
        }
        let cfg = self.cfg(func);
        self.computations.postdom += 1;
        let p = Arc::new(PostDominatorTree::compute(&cfg));
        self.postdom = Some(p.clone());
        p
    }

    /// The loop forest of `func`.
    pub fn loops(&mut self, func: &Function) -> Arc<LoopForest<Block>> {
        if let Some(l) = &self.loops {
            return l.clone();
        }
        let cfg = self.cfg(func);
        self.computations.loops += 1;
        let l = Arc::new(LoopForest::compute(&cfg));
        self.loops = Some(l.clone());
        l
    }

    /// Which values and branches of `func` are divergent (for the IPDOM reconvergence the
    /// IR passes assume, [`Divergence::compute`]). The analysis runs on the cache's
    /// control-flow graph, dominator and post-dominator trees and loop forest (computed
    /// here when no pass asked for them yet, and then kept for the passes that do),
    /// rather than building its own copies.
    pub fn divergence(&mut self, func: &Function) -> Arc<Divergence> {
        if let Some(d) = &self.divergence {
            return d.clone();
        }
        let cfg = self.cfg(func);
        let domtree = self.domtree(func);
        let postdom = self.postdom(func);
        let loops = self.loops(func);
        self.computations.divergence += 1;
        let d = Arc::new(Divergence::compute_with_all(
            func,
            Reconvergence::Ipdom,
            &cfg,
            &domtree,
            &postdom,
            &loops,
        ));
        self.divergence = Some(d.clone());
        d
    }

    /// Drops every analysis `preserved` does not keep.
    pub fn invalidate(&mut self, preserved: Preserved) {
        if !preserved.cfg {
            self.cfg = None;
            self.domtree = None;
            self.postdom = None;
            self.loops = None;
        }
        if !preserved.divergence {
            self.divergence = None;
        }
    }

    /// Drops every analysis, for another function; the counts stay.
    pub fn clear(&mut self) {
        self.invalidate(Preserved::NOTHING);
    }

    /// How many times each analysis was computed.
    pub fn computations(&self) -> Computations {
        self.computations
    }

    /// Drops every analysis and zeroes the counts.
    pub fn reset(&mut self) {
        self.clear();
        self.computations = Computations::default();
    }
}

impl core::fmt::Debug for AnalysisCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AnalysisCache")
            .field("cfg", &self.cfg.is_some())
            .field("domtree", &self.domtree.is_some())
            .field("postdom", &self.postdom.is_some())
            .field("loops", &self.loops.is_some())
            .field("divergence", &self.divergence.is_some())
            .field("computations", &self.computations)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::parser::parse_function;

    const DIAMOND: &str = "kernel %k(n: i32) {
block0(v0: i32):
    v1 = thread_id x
    v2 = icmp slt v1, v0
    brif v2, block1, block2
block1:
    jump block2
block2:
    return
}";

    #[test]
    fn divergence_runs_on_the_cached_graph_trees_and_loops() {
        let func = parse_function(DIAMOND).unwrap();
        let mut cache = AnalysisCache::new();
        let d = cache.divergence(&func);
        // The graph, trees and loops it needed were computed once, into the cache, and
        // serve the passes that ask for them next.
        let cfg = cache.cfg(&func);
        cache.domtree(&func);
        cache.postdom(&func);
        cache.loops(&func);
        assert_eq!(
            cache.computations(),
            Computations {
                cfg: 1,
                domtree: 1,
                postdom: 1,
                loops: 1,
                divergence: 1,
            }
        );
        // The same answer as the analysis building its own.
        let own = Divergence::compute(&func);
        for &b in cfg.reverse_post_order().iter() {
            assert_eq!(d.is_divergent_branch(b), own.is_divergent_branch(b));
        }
        assert_eq!(d.divergent_values(), own.divergent_values());
        assert!(d.is_divergent_branch(func.layout.entry_block().unwrap()));
    }

    #[test]
    fn analyses_are_computed_once_until_invalidated() {
        let func = parse_function(DIAMOND).unwrap();
        let mut cache = AnalysisCache::new();
        let d1 = cache.domtree(&func);
        let d2 = cache.domtree(&func);
        assert!(Arc::ptr_eq(&d1, &d2));
        cache.postdom(&func);
        cache.loops(&func);
        cache.divergence(&func);
        cache.divergence(&func);
        let once = Computations {
            cfg: 1,
            domtree: 1,
            postdom: 1,
            loops: 1,
            divergence: 1,
        };
        assert_eq!(cache.computations(), once);

        // Everything kept: nothing recomputed.
        cache.invalidate(Preserved::ALL);
        cache.domtree(&func);
        cache.divergence(&func);
        assert_eq!(cache.computations(), once);

        // The CFG kept, the values changed: divergence alone is recomputed.
        cache.invalidate(Preserved::CFG);
        cache.divergence(&func);
        cache.loops(&func);
        assert_eq!(
            cache.computations(),
            Computations {
                divergence: 2,
                ..once
            }
        );

        // Nothing kept: the CFG and the dominator tree built on it are recomputed; what
        // nobody asks for is not.
        cache.invalidate(Preserved::NOTHING);
        cache.domtree(&func);
        assert_eq!(
            cache.computations(),
            Computations {
                cfg: 2,
                domtree: 2,
                divergence: 2,
                ..once
            }
        );
        assert!(!Arc::ptr_eq(&d1, &cache.domtree(&func)));

        cache.reset();
        assert_eq!(cache.computations(), Computations::default());
    }
}
