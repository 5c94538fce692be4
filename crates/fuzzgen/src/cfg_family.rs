//! Every small acyclic control-flow graph, as kernels whose branches all diverge: the
//! synthetic CFG family of Reissmann et al., "Efficient Control Flow Restructuring for
//! GPUs" (Section V-A, Fig. 6), used to test and compare the transformations that remove
//! redundant block executions (linearization, restructuring) on every shape at once.
//!
//! # The family
//!
//! The paper generates "the incidence matrices for all acyclic CFGs with binary branches
//! for a given dimension" and keeps the *minimal unstructured* ones. [`acyclic_cfgs`]
//! enumerates exactly those matrices: a graph of `n` nodes is numbered in a topological
//! order (every edge goes from a lower to a higher number, so the matrix is upper
//! triangular), node 0 is the entry, node `n - 1` the exit, every other node has one
//! successor or a two-way branch to two distinct later nodes, and every node but the entry
//! has a predecessor. Graphs are counted as matrices, not up to isomorphism: two
//! numberings of one shape are two graphs, as two matrices are.
//!
//! [`minimal_unstructured`] keeps the graphs that are *minimal* (Definition 4: no edge
//! `a -> b` where `b` is `a`'s only successor and `a` is `b`'s only predecessor) and not
//! *tail-structured* (Definition 2: they do not contract to one node under the rules 1 and
//! 2 of Definition 1; rules 3 and 4 concern loops, which these graphs have none of).
//!
//! Counted this way, the graphs of 2 to 7 nodes are 1744; under an IPDOM reconvergence
//! stack with one thread per path ([`SmallCfg::ipdom_executions`]), 143 of them run no
//! block twice, 449 run exactly one block execution redundantly, two run twelve and one
//! fourteen, the most of any. The paper reports the same 449, the same two with twelve and
//! the same maximum of fourteen, but 1447 graphs in all; it does not say which further
//! graphs its filter removed, and this module does not guess.
//!
//! # The kernels
//!
//! [`SmallCfg::kernel`] turns a graph into a kernel with one IR block per node and one
//! thread per entry-to-exit path, all in one thread block: thread `t` reads the direction
//! it takes at each branch from row `t` of the buffer `dirs`, so each branch is divergent
//! wherever two paths through it part. The other blocks compute nothing, as in the paper,
//! unless [`KernelStyle::trace`] asks each block to append its number to a per-thread
//! trace, which the exit stores to `out` (the launch's expected output), so a transformation
//! that sends a thread the wrong way is caught by the result, not only by the counts.

use crate::GeneratedCase;
use std::fmt::Write as _;
use std::path::Path;
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_function;

/// The most nodes [`acyclic_cfgs`] enumerates: the count grows about tenfold per node, and
/// a trace of eight octal digits still fits an `i32`.
pub const MAX_NODES: usize = 8;

/// An acyclic control-flow graph with one entry (node 0), one exit (the last node) and
/// branches of at most two ways, its nodes numbered in a topological order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SmallCfg {
    succs: Vec<Vec<usize>>,
}

impl SmallCfg {
    /// The graph whose node `i` has the successors `succs[i]`, in branch order (for a
    /// two-way branch, the `false` successor first). `None` unless the graph is one of the
    /// family's: at least two nodes, every edge from a lower to a higher node, one or two
    /// distinct successors for every node but the last, which has none, and a predecessor
    /// for every node but the first.
    pub fn new(succs: Vec<Vec<usize>>) -> Option<SmallCfg> {
        let n = succs.len();
        if !(2..=MAX_NODES).contains(&n) || !succs[n - 1].is_empty() {
            return None;
        }
        let mut has_pred = vec![false; n];
        for (node, s) in succs[..n - 1].iter().enumerate() {
            let distinct = s.len() != 2 || s[0] != s[1];
            if !(1..=2).contains(&s.len()) || !distinct || s.iter().any(|&t| t <= node || t >= n) {
                return None;
            }
            for &t in s {
                has_pred[t] = true;
            }
        }
        has_pred[1..]
            .iter()
            .all(|&p| p)
            .then_some(SmallCfg { succs })
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.succs.len()
    }

    /// Whether the graph has no nodes (never: every graph has an entry and an exit).
    pub fn is_empty(&self) -> bool {
        self.succs.is_empty()
    }

    /// The successors of `node`, in branch order.
    pub fn succs(&self, node: usize) -> &[usize] {
        &self.succs[node]
    }

    /// The predecessors of every node, in increasing order.
    pub fn preds(&self) -> Vec<Vec<usize>> {
        let mut preds = vec![Vec::new(); self.len()];
        for (node, s) in self.succs.iter().enumerate() {
            for &t in s {
                preds[t].push(node);
            }
        }
        preds
    }

    /// The edges, as `(source, target)` pairs in node order.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.succs
            .iter()
            .enumerate()
            .flat_map(|(node, s)| s.iter().map(move |&t| (node, t)))
    }

    /// Every path from the entry to the exit, as the nodes it visits, in the order of a
    /// depth-first walk that takes each branch's successors in branch order.
    pub fn paths(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut stack = vec![vec![0]];
        while let Some(path) = stack.pop() {
            let last = *path.last().expect("paths are never empty");
            if self.succs[last].is_empty() {
                out.push(path);
                continue;
            }
            for &t in self.succs[last].iter().rev() {
                let mut next = path.clone();
                next.push(t);
                stack.push(next);
            }
        }
        out
    }

    /// Definition 4: no edge `a -> b` where `b` is `a`'s only successor and `a` is `b`'s only
    /// predecessor.
    pub fn is_minimal(&self) -> bool {
        let preds = self.preds();
        self.succs
            .iter()
            .all(|s| s.len() != 1 || preds[s[0]].len() != 1)
    }

    /// Definition 2 for acyclic graphs: the graph contracts to a single node under rule 1
    /// (merge a node with its only successor when it is that successor's only predecessor)
    /// and rule 2 (merge a branch `a`, its arms `a_i`, each with `a` as its only predecessor
    /// and one successor `b`, and `b`, when `b`'s predecessors are only the arms and
    /// possibly `a`).
    pub fn is_tail_structured(&self) -> bool {
        let n = self.len();
        let mut alive = vec![true; n];
        let mut succs: Vec<Vec<usize>> = self.succs.clone();
        let mut preds = self.preds();
        let mut left = n;
        'contract: while left > 1 {
            for a in (0..n).filter(|&a| alive[a]) {
                // Rule 1.
                if let [b] = succs[a][..] {
                    if preds[b] == [a] {
                        merge_into(a, b, &[], &mut succs, &mut preds, &mut alive);
                        left -= 1;
                        continue 'contract;
                    }
                }
                // Rule 2: every successor of `a` is an arm or the join `b`.
                let arm = |x: usize| preds[x] == [a] && succs[x].len() == 1;
                let join = succs[a].iter().find(|&&x| arm(x)).map(|&x| succs[x][0]);
                let Some(b) = join else { continue };
                let arms: Vec<usize> = succs[a].iter().copied().filter(|&x| x != b).collect();
                let arms_ok = arms.iter().all(|&x| arm(x) && succs[x] == [b]);
                let join_ok = preds[b].iter().all(|&p| p == a || arms.contains(&p));
                if arms_ok && join_ok {
                    merge_into(a, b, &arms, &mut succs, &mut preds, &mut alive);
                    left -= arms.len() + 1;
                    continue 'contract;
                }
            }
            return false;
        }
        true
    }

    /// How often each node runs on a warp that holds one thread per path (in the order of
    /// [`SmallCfg::paths`]), under a reconvergence stack that pushes at a divergent branch
    /// and reconverges at the branch's immediate post-dominator: an independent model of
    /// what the emulator does, for checking it and the transformations.
    pub fn ipdom_executions(&self) -> Vec<u32> {
        let paths = self.paths();
        let ipdom = self.immediate_post_dominators();
        let mut runs = vec![0u32; self.len()];
        // Where each thread stands on its path.
        let mut at = vec![0usize; paths.len()];
        // (block to run, reconvergence point, threads)
        let mut stack: Vec<(usize, Option<usize>, Vec<usize>)> =
            vec![(0, None, (0..paths.len()).collect())];
        while let Some((pc, reconverge, threads)) = stack.last().cloned() {
            if Some(pc) == reconverge {
                stack.pop();
                continue;
            }
            runs[pc] += 1;
            if self.succs[pc].is_empty() {
                stack.pop();
                continue;
            }
            let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
            for &t in &threads {
                at[t] += 1;
                let next = paths[t][at[t]];
                match groups.iter_mut().find(|(b, _)| *b == next) {
                    Some((_, g)) => g.push(t),
                    None => groups.push((next, vec![t])),
                }
            }
            let top = stack.len() - 1;
            if let [(next, _)] = groups[..] {
                stack[top].0 = next;
                continue;
            }
            let join = ipdom[pc];
            stack[top].0 = join;
            // The first successor in branch order runs first.
            for &s in self.succs[pc].iter().rev() {
                if let Some((_, g)) = groups.iter().find(|(b, _)| *b == s) {
                    stack.push((s, Some(join), g.clone()));
                }
            }
        }
        runs
    }

    /// Redundant block executions under [`SmallCfg::ipdom_executions`]: runs beyond the one
    /// that an acyclic graph needs of each node it runs.
    pub fn ipdom_redundancy(&self) -> u32 {
        self.ipdom_executions()
            .iter()
            .map(|&r| r.saturating_sub(1))
            .sum()
    }

    /// The immediate post-dominator of every node (the exit's is itself).
    fn immediate_post_dominators(&self) -> Vec<usize> {
        let n = self.len();
        // Post-dominator sets as bit masks, computed in reverse topological order.
        let mut pdom = vec![0u32; n];
        pdom[n - 1] = 1 << (n - 1);
        for node in (0..n - 1).rev() {
            let common = self.succs[node]
                .iter()
                .fold(u32::MAX, |acc, &s| acc & pdom[s]);
            pdom[node] = common | (1 << node);
        }
        (0..n)
            .map(|node| {
                let strict = pdom[node] & !(1 << node);
                if strict == 0 {
                    return node;
                }
                // The nearest strict post-dominator is the one with the most post-dominators.
                (0..n)
                    .filter(|&c| strict & (1 << c) != 0)
                    .max_by_key(|&c| pdom[c].count_ones())
                    .expect("a nonempty set")
            })
            .collect()
    }

    /// The graph as a kernel and its launch: see the module documentation.
    pub fn kernel(&self, style: KernelStyle) -> GeneratedCase {
        let text = self.kernel_text(style);
        let func = parse_function(&text).expect("the family's kernels are valid text");
        let launch_text = self.launch_text(style);
        let launch = Launch::from_toml_str(&launch_text, Path::new("cfg.launch.toml"))
            .expect("the family's launches are valid");
        GeneratedCase {
            func,
            launch,
            text,
            launch_text,
        }
    }

    /// A name for the graph: its successor lists, e.g. `cfg_1.2_2.3_3` for
    /// `0 -> {1, 2}, 1 -> {2, 3}, 2 -> 3`.
    pub fn name(&self) -> String {
        let lists: Vec<String> = self.succs[..self.len() - 1]
            .iter()
            .map(|s| s.iter().map(usize::to_string).collect::<Vec<_>>().join("."))
            .collect();
        format!("cfg_{}", lists.join("_"))
    }

    fn kernel_text(&self, style: KernelStyle) -> String {
        let n = self.len();
        let mut t = String::new();
        let _ = writeln!(t, "; {}: {}", self.name(), self.describe());
        let _ = writeln!(t, "kernel %{}(dirs: i64, out: i64) {{", self.name());
        // The entry block is node 0; values it defines dominate every node.
        let _ = writeln!(t, "block0(v0: i64, v1: i64):");
        let _ = writeln!(t, "    v2 = thread_id x");
        let _ = writeln!(t, "    v3 = uextend.i64 v2");
        let _ = writeln!(t, "    v4 = iconst.i64 {n}");
        let _ = writeln!(t, "    v5 = imul v3, v4");
        let _ = writeln!(t, "    v6 = iadd v0, v5");
        let _ = writeln!(t, "    v7 = iconst.i8 0");
        let _ = writeln!(t, "    v8 = iconst.i32 8");
        let _ = writeln!(t, "    v9 = iconst.i32 1");
        let mut next = 10usize;
        let mut fresh = || {
            next += 1;
            next - 1
        };
        for node in 0..n {
            // The trace so far: a block parameter, except in the entry.
            let trace_in = if node == 0 {
                9
            } else if style.trace {
                let v = fresh();
                let _ = writeln!(t, "block{node}(v{v}: i32):");
                v
            } else {
                let _ = writeln!(t, "block{node}:");
                0
            };
            let trace = if style.trace {
                let (m, k, s) = (fresh(), fresh(), fresh());
                let _ = writeln!(t, "    v{m} = imul v{trace_in}, v8");
                let _ = writeln!(t, "    v{k} = iconst.i32 {node}");
                let _ = writeln!(t, "    v{s} = iadd v{m}, v{k}");
                s
            } else {
                0
            };
            let args = |target: usize| {
                if style.trace {
                    format!("block{target}(v{trace})")
                } else {
                    format!("block{target}")
                }
            };
            match self.succs[node][..] {
                [] => {
                    // Untraced, every thread stores the entry's constant 1 (`v9`).
                    let value = if style.trace { trace } else { 9 };
                    let (sh, amount, addr) = (fresh(), fresh(), fresh());
                    let _ = writeln!(t, "    v{amount} = iconst.i64 2");
                    let _ = writeln!(t, "    v{sh} = ishl v3, v{amount}");
                    let _ = writeln!(t, "    v{addr} = iadd v1, v{sh}");
                    let _ = writeln!(t, "    store global v{value}, v{addr}");
                    let _ = writeln!(t, "    return");
                }
                [only] => {
                    let _ = writeln!(t, "    jump {}", args(only));
                }
                [no, yes] => {
                    let (off, addr, dir, cond) = (fresh(), fresh(), fresh(), fresh());
                    let _ = writeln!(t, "    v{off} = iconst.i64 {node}");
                    let _ = writeln!(t, "    v{addr} = iadd v6, v{off}");
                    let _ = writeln!(t, "    v{dir} = load.i8 global v{addr}");
                    let _ = writeln!(t, "    v{cond} = icmp ne v{dir}, v7");
                    let _ = writeln!(t, "    brif v{cond}, {}, {}", args(yes), args(no));
                }
                _ => unreachable!("nodes have at most two successors"),
            }
        }
        let _ = writeln!(t, "}}");
        t
    }

    fn launch_text(&self, style: KernelStyle) -> String {
        let n = self.len();
        let paths = self.paths();
        let mut dirs = vec![0i32; paths.len() * n];
        let mut expect = Vec::with_capacity(paths.len());
        for (thread, path) in paths.iter().enumerate() {
            let mut trace = 1i32;
            for (i, &node) in path.iter().enumerate() {
                trace = trace * 8 + node as i32;
                if let Some(&next) = path.get(i + 1) {
                    let way = self.succs[node].iter().position(|&s| s == next);
                    dirs[thread * n + node] = way.expect("paths follow edges") as i32;
                }
            }
            expect.push(if style.trace { trace } else { 1 });
        }
        let list = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
        format!(
            "grid = [1]\nblock = [{threads}]\n\n\
             [buffers.dirs]\ntype = \"i8\"\nlen = {len}\ninit = \"values\"\nvalues = [{dirs}]\n\n\
             [buffers.out]\ntype = \"i32\"\nlen = {threads}\ninit = \"zeros\"\n\n\
             [expect]\nout = [{expect}]\n",
            threads = paths.len(),
            len = dirs.len(),
            dirs = list(&dirs),
            expect = list(&expect),
        )
    }

    fn describe(&self) -> String {
        let edges: Vec<String> = self.edges().map(|(a, b)| format!("B{a}->B{b}")).collect();
        edges.join(", ")
    }
}

/// What the blocks of [`SmallCfg::kernel`] compute besides their branches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelStyle {
    /// Every block appends its number to the thread's trace (`trace * 8 + node`, starting
    /// from 1), and the exit stores the trace to `out`; otherwise blocks are empty and the
    /// exit stores 2.
    pub trace: bool,
}

/// Merges `arms` and `b` into `a`, which takes `b`'s successors.
fn merge_into(
    a: usize,
    b: usize,
    arms: &[usize],
    succs: &mut [Vec<usize>],
    preds: &mut [Vec<usize>],
    alive: &mut [bool],
) {
    let after = std::mem::take(&mut succs[b]);
    for &s in &after {
        for p in preds[s].iter_mut() {
            if *p == b {
                *p = a;
            }
        }
        preds[s].sort_unstable();
        preds[s].dedup();
    }
    succs[a] = after;
    alive[b] = false;
    preds[b].clear();
    for &x in arms {
        alive[x] = false;
        succs[x].clear();
        preds[x].clear();
    }
}

/// Every graph of the family with 2 to `max_nodes` nodes (at most [`MAX_NODES`]), as
/// incidence matrices in topological order (see the module documentation), by number of
/// nodes and then in lexicographic order of the successor lists.
pub fn acyclic_cfgs(max_nodes: usize) -> Vec<SmallCfg> {
    let mut out = Vec::new();
    for n in 2..=max_nodes.min(MAX_NODES) {
        // The choices of each node: one later node, or two distinct later nodes.
        let choices: Vec<Vec<Vec<usize>>> = (0..n - 1)
            .map(|node| {
                let later = node + 1..n;
                let ones = later.clone().map(|t| vec![t]);
                let twos = later
                    .clone()
                    .flat_map(move |a| (a + 1..n).map(move |b| vec![a, b]));
                ones.chain(twos).collect()
            })
            .collect();
        let mut pick = vec![0usize; n - 1];
        'odometer: loop {
            let mut succs: Vec<Vec<usize>> = pick
                .iter()
                .enumerate()
                .map(|(node, &c)| choices[node][c].clone())
                .collect();
            succs.push(Vec::new());
            if let Some(cfg) = SmallCfg::new(succs) {
                out.push(cfg);
            }
            // Advance the choices like an odometer, the last node's fastest.
            let mut i = n - 1;
            loop {
                if i == 0 {
                    break 'odometer;
                }
                i -= 1;
                pick[i] += 1;
                if pick[i] < choices[i].len() {
                    break;
                }
                pick[i] = 0;
            }
        }
    }
    out
}

/// The graphs of [`acyclic_cfgs`] that are minimal and not tail-structured: the ones the
/// paper's experiment keeps.
pub fn minimal_unstructured(max_nodes: usize) -> Vec<SmallCfg> {
    acyclic_cfgs(max_nodes)
        .into_iter()
        .filter(|g| g.is_minimal() && !g.is_tail_structured())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(succs: &[&[usize]]) -> SmallCfg {
        SmallCfg::new(succs.iter().map(|s| s.to_vec()).collect()).expect("a family graph")
    }

    #[test]
    fn the_short_circuit_is_the_smallest_unstructured_graph() {
        let short_circuit = cfg(&[&[1, 2], &[2, 3], &[3], &[]]);
        assert!(short_circuit.is_minimal());
        assert!(!short_circuit.is_tail_structured());
        assert_eq!(short_circuit.ipdom_executions(), vec![1, 1, 2, 1]);
        let diamond = cfg(&[&[1, 2], &[3], &[3], &[]]);
        assert!(diamond.is_tail_structured());
        assert_eq!(diamond.ipdom_redundancy(), 0);
        let nested = cfg(&[&[1, 4], &[2, 3], &[3], &[4], &[]]);
        assert!(nested.is_tail_structured());
        assert!(nested.is_minimal());
        assert!(!cfg(&[&[1], &[2], &[]]).is_minimal());
    }

    #[test]
    fn malformed_graphs_are_refused() {
        assert!(SmallCfg::new(vec![vec![]]).is_none());
        assert!(SmallCfg::new(vec![vec![1, 1], vec![]]).is_none());
        assert!(SmallCfg::new(vec![vec![2], vec![2], vec![]]).is_none());
        assert!(SmallCfg::new(vec![vec![1], vec![0], vec![]]).is_none());
        assert!(SmallCfg::new(vec![vec![1], vec![2], vec![1]]).is_none());
    }

    #[test]
    fn the_family_reproduces_the_papers_counts() {
        let graphs = minimal_unstructured(7);
        assert_eq!(graphs.len(), 1744);
        let mut by_redundancy = [0usize; 16];
        for g in &graphs {
            by_redundancy[g.ipdom_redundancy() as usize] += 1;
        }
        assert_eq!(
            by_redundancy,
            [143, 449, 382, 328, 185, 116, 60, 38, 21, 11, 5, 3, 2, 0, 1, 0]
        );
    }

    #[test]
    fn kernels_verify_and_carry_their_paths() {
        let g = cfg(&[&[1, 2], &[2, 3], &[3], &[]]);
        assert_eq!(
            g.paths(),
            vec![vec![0, 1, 2, 3], vec![0, 1, 3], vec![0, 2, 3]]
        );
        for trace in [false, true] {
            let case = g.kernel(KernelStyle { trace });
            warplift_ir::verifier::verify_function(&case.func).expect("verifies");
        }
        let traced = g.kernel(KernelStyle { trace: true });
        assert!(traced
            .launch_text
            .contains("values = [0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0]"));
        assert!(traced.launch_text.contains("out = [4179, 523, 531]"));
        let plain = g.kernel(KernelStyle { trace: false });
        assert!(plain.text.contains("store global v9,"), "{}", plain.text);
        assert!(plain.launch_text.contains("out = [1, 1, 1]"));
    }
}
