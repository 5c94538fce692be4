//! SSA repair after linearization: rebuilds SSA form over the restructured control-flow
//! graph for the *variables* the restructuring made.
//!
//! Linearization rewrites a region's branches into assignments of a guard variable and
//! chains the region's blocks behind guard blocks. Afterwards a definition in a region
//! block no longer dominates its uses in other blocks (the guard chain bypasses it), and
//! a block parameter's incoming values no longer arrive on the branch into its block
//! (that branch became an assignment of `g`). The restructuring therefore describes what
//! it did in terms of mutable variables:
//!
//! - a *value* variable per value defined in a region block and used in another block:
//!   defined where the value is defined;
//! - a *parameter* variable per parameter of a region block: defined at the end of every
//!   block whose branch passed it an argument (the branch is gone, the assignment stays;
//!   where a lane taking the branch's other arm may still read the parameter, the
//!   assignment is a `select` keeping its value on that arm);
//! - a *slot* variable per parameter of the region's exit (which keeps its parameters,
//!   its new edges from the guard chain pass the variable), and the guard variable `g`;
//! - every variable but `g` is defined as zero at the end of the region's entry: on paths
//!   of the new graph no lane takes, a variable may otherwise be undefined. (After every
//!   execution of the entry, a lane that reaches a use of a value has run the value's
//!   definition again, because the definition dominated the use: so the zero is never
//!   read by a lane, it only extends live ranges, which is the register cost of
//!   linearizing before allocation.) A zero is made only where one is read. The
//!   linearizer places it in the region's entry; the restructuring asks for it near its
//!   reads instead ([`Repair::place_zeros_near_reads`]), since with the whole kernel as
//!   one region the entry's zeros were live across the kernel.
//!
//! [`Repair::run`] then builds pruned SSA form by the classic construction of Cytron et
//! al.: block parameters at the iterated dominance frontier of each variable's definitions,
//! restricted to the blocks where the variable is live, each use reading the nearest
//! definition up the dominator tree, and finally removes the parameters that turn out to
//! be trivial (every incoming value the same), as Braun et al. do. Every walk is
//! iterative.

use cranelift_entity::SecondaryMap;
use rustc_hash::{FxHashMap, FxHashSet};
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree, LoopForest};
use warplift_ir::{Block, Function, Inst, InstructionData, Type, Value, ValueDef};

/// A variable of the repair.
pub(crate) type Var = usize;

/// What a variable stands for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum VarKind {
    /// A value defined by an instruction in `def_block`: its uses there stay, every other
    /// use reads the variable.
    Value { value: Value, def_block: Block },
    /// A parameter of a region block: every use reads the variable and the parameter is
    /// removed.
    Param(Value),
    /// A variable with no value of its own (the guard variable, an exit parameter): read
    /// only where [`Repair::use_slot`] says.
    Slot,
}

/// Where an end-of-block definition takes its value from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Src {
    /// Zero of the variable's type.
    Zero,
    /// A value of the function as it was: if it stands for a variable, the variable's
    /// value before the block's end-of-block definitions (they are parallel, as branch
    /// arguments are).
    Old(Value),
    /// A value made for this definition, taken as it is.
    Fresh(Value),
}

/// An operand of an instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The instruction's `i`-th own operand.
    Arg(usize),
    /// Argument `i` of branch destination `d`.
    BranchArg(usize, usize),
}

/// Counts of one repair.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RepairStats {
    /// Block parameters made by SSA construction and kept.
    pub params_added: u64,
    /// Block parameters made and then removed as trivial.
    pub trivial_params: u64,
    /// Zero constants placed in the region's entry.
    pub zeros: u64,
    /// Region block parameters removed (their values became variables).
    pub params_removed: u64,
}

struct VarData {
    ty: Type,
    kind: VarKind,
    /// Where the variable's zero is defined: its region's entry.
    zero_block: Block,
}

/// The variables of the linearized regions of a kernel and their definitions and uses
/// (see the [module documentation](self)); each variable belongs to one region.
pub(crate) struct Repair {
    vars: Vec<VarData>,
    /// The variable each old value stands for (value and parameter variables).
    var_of: FxHashMap<Value, Var>,
    /// Definitions at the end of blocks, in order (later ones win).
    end_defs: FxHashMap<Block, Vec<(Var, Src)>>,
    /// Operands that read a slot variable at the end of their block.
    slot_uses: Vec<(Inst, Slot, Var)>,
    /// Where the zeros of the variables added next are defined: their region's entry.
    zero_block: Option<Block>,
    /// Place each zero near its reads instead of in its region's entry (see
    /// [`Repair::place_zeros_near_reads`]).
    zeros_near_reads: bool,
}

impl Repair {
    /// A repair with no variables yet.
    pub(crate) fn new() -> Self {
        Repair {
            vars: Vec::new(),
            var_of: FxHashMap::default(),
            end_defs: FxHashMap::default(),
            slot_uses: Vec::new(),
            zero_block: None,
            zeros_near_reads: false,
        }
    }

    /// Places each variable's zero at the nearest common dominator of the places that
    /// read it, moved out of any loop below its region's entry, rather than in the
    /// region's entry. A zero is read only on paths no lane takes, so any place that
    /// dominates its reads gives the same program; the entry is the worst for the
    /// register allocator when the region is large. Restructuring the whole kernel as one
    /// region put every variable's zero in the kernel's first block, live from there to
    /// its unit of the kernel: as many values live at once as the kernel has variables,
    /// which made allocation quadratic and spilled (1617 spills at 37k instructions).
    /// Out of loops, because a zero inside one would run once per iteration; a zero
    /// that reads nowhere stays in the region's entry.
    pub(crate) fn place_zeros_near_reads(&mut self) {
        self.zeros_near_reads = true;
    }

    /// The variables added from now on belong to the region entered at `block`, where
    /// their zeros are defined.
    pub(crate) fn set_zero_block(&mut self, block: Block) {
        self.zero_block = Some(block);
    }

    /// A new variable of type `ty` (after [`Repair::set_zero_block`]).
    pub(crate) fn add_var(&mut self, ty: Type, kind: VarKind) -> Var {
        let v = self.vars.len();
        let zero_block = self
            .zero_block
            .expect("set_zero_block comes before the first variable");
        self.vars.push(VarData {
            ty,
            kind,
            zero_block,
        });
        match kind {
            VarKind::Value { value, .. } | VarKind::Param(value) => {
                self.var_of.insert(value, v);
            }
            VarKind::Slot => {}
        }
        v
    }

    /// The variable an old value stands for.
    pub(crate) fn var_of(&self, value: Value) -> Option<Var> {
        self.var_of.get(&value).copied()
    }

    /// Defines `var` at the end of `block` (before its terminator).
    pub(crate) fn def_at_end(&mut self, block: Block, var: Var, src: Src) {
        self.end_defs.entry(block).or_default().push((var, src));
    }

    /// Operand `slot` of `inst` reads `var` as it is at the end of the instruction's
    /// block (the operand's current value is a placeholder of the right type).
    pub(crate) fn use_slot(&mut self, inst: Inst, slot: Slot, var: Var) {
        self.slot_uses.push((inst, slot, var));
    }

    /// The number of variables.
    pub(crate) fn num_vars(&self) -> usize {
        self.vars.len()
    }

    /// Rebuilds SSA form in `func` for every variable, rewrites every use, and removes
    /// the parameters that parameter variables replaced.
    pub(crate) fn run(self, func: &mut Function) -> Result<RepairStats, String> {
        Builder::new(self, func).run()
    }
}

/// A use to rewrite: an operand of an instruction in a block, reading a variable at the
/// instruction (`at_end: false`, before any end-of-block definition) or at the end of the
/// block.
#[derive(Copy, Clone, Debug)]
struct Use {
    inst: Inst,
    block: Block,
    slot: Slot,
    var: Var,
    at_end: bool,
}

struct Builder<'f> {
    r: Repair,
    func: &'f mut Function,
    cfg: ControlFlowGraph<Block>,
    domtree: DominatorTree<Block>,
    /// The parameter made for a variable in a block.
    params: FxHashMap<(Var, Block), Value>,
    /// Parameters made, per block in order of creation.
    new_params: FxHashMap<Block, Vec<(Var, Value)>>,
    /// The last end-of-block definition of a variable in a block, with its value
    /// (`None`: zero, placed when first read). Keyed by both, so that a block defining
    /// many variables (a region's entry holds every variable's zero) is not searched
    /// once per variable, which made a whole-kernel repair quadratic.
    resolved: FxHashMap<(Block, Var), Option<Value>>,
    /// The blocks with an end-of-block definition of each variable, for the same reason.
    defined: FxHashSet<(Var, Block)>,
    /// Per variable, a block that dominates every definition and parameter of it (`None`:
    /// not known): no block above it defines the variable, so a search for its value on
    /// entry to a block stops there instead of walking the dominator tree to the top,
    /// once per variable (quadratic in a kernel restructured as one region).
    top: Vec<Option<Block>>,
    /// The value of a variable on entry to a block.
    entry_cache: FxHashMap<(Var, Block), Value>,
    /// The zero of each variable, once made.
    zeros: FxHashMap<Var, Value>,
    /// Zeros made but not yet placed ([`Repair::place_zeros_near_reads`]), in order.
    unplaced: Vec<(Var, Inst, Value)>,
    /// The loop forest of the kernel, once computed.
    forest: Option<LoopForest<Block>>,
    /// The depth of every reachable block in the dominator tree.
    depth: FxHashMap<Block, u32>,
    stats: RepairStats,
}

impl<'f> Builder<'f> {
    fn new(r: Repair, func: &'f mut Function) -> Self {
        let cfg = ControlFlowGraph::compute(&*func);
        let domtree = DominatorTree::compute(&cfg);
        Builder {
            r,
            func,
            cfg,
            domtree,
            params: FxHashMap::default(),
            new_params: FxHashMap::default(),
            resolved: FxHashMap::default(),
            defined: FxHashSet::default(),
            top: Vec::new(),
            entry_cache: FxHashMap::default(),
            zeros: FxHashMap::default(),
            unplaced: Vec::new(),
            forest: None,
            depth: FxHashMap::default(),
            stats: RepairStats::default(),
        }
    }

    fn run(mut self) -> Result<RepairStats, String> {
        for (&block, defs) in &self.r.end_defs {
            self.defined
                .extend(defs.iter().map(|&(var, _)| (var, block)));
        }
        let uses = self.collect_uses();
        for &b in self.domtree.rpo() {
            let d = self
                .domtree
                .idom(b)
                .map_or(0, |i| self.depth.get(&i).map_or(0, |&d| d + 1));
            self.depth.insert(b, d);
        }
        let places = self.def_places();
        let cuts = self.liveness_cuts(&places);
        self.place_params(&uses, &cuts);
        self.find_tops(places);
        self.resolve_end_defs();
        // Uses first (they read the function as the restructuring left it), then the
        // new parameters' arguments.
        let mut writes: Vec<(Inst, Slot, Value)> = Vec::with_capacity(uses.len());
        for u in &uses {
            let value = if u.at_end {
                self.end_value(u.var, u.block)
            } else {
                self.entry_value(u.var, u.block)
            };
            writes.push((u.inst, u.slot, value));
        }
        for (inst, slot, value) in writes {
            set_slot(&mut self.func.dfg.insts[inst], slot, value)?;
        }
        self.pass_new_params();
        self.remove_trivial_params();
        self.place_zeros();
        self.remove_replaced_params()?;
        Ok(self.stats)
    }

    /// Every use of a variable: operands holding a value or parameter variable's old
    /// value (except a value's uses in its own block), and the slot uses.
    fn collect_uses(&self) -> Vec<Use> {
        let mut out = Vec::new();
        for &block in self.func.layout.blocks() {
            for &inst in self.func.layout.block_insts(block) {
                let data = &self.func.dfg.insts[inst];
                let mut note = |slot: Slot, v: Value| {
                    let Some(var) = self.r.var_of(v) else { return };
                    if let VarKind::Value { def_block, .. } = self.r.vars[var].kind {
                        if def_block == block {
                            return;
                        }
                    }
                    out.push(Use {
                        inst,
                        block,
                        slot,
                        var,
                        at_end: false,
                    });
                };
                for (i, &v) in data.args().iter().enumerate() {
                    note(Slot::Arg(i), v);
                }
                for (d, call) in data.branch_destinations().iter().enumerate() {
                    for (i, &v) in call.args.iter().enumerate() {
                        note(Slot::BranchArg(d, i), v);
                    }
                }
            }
        }
        for &(inst, slot, var) in &self.r.slot_uses {
            if let Some(block) = self.func.layout.inst_block(inst) {
                out.push(Use {
                    inst,
                    block,
                    slot,
                    var,
                    at_end: true,
                });
            }
        }
        out
    }

    /// Does `block` define `var` (at the end, or a value variable's own definition)?
    fn defines(&self, var: Var, block: Block) -> bool {
        if let VarKind::Value { def_block, .. } = self.r.vars[var].kind {
            if def_block == block {
                return true;
            }
        }
        self.defined.contains(&(var, block))
    }

    /// Places a parameter for each variable at the blocks of the iterated dominance
    /// frontier of its definitions where it is live on entry (pruned SSA).
    /// `cuts`: per variable, a block whose predecessors the liveness search need not
    /// visit ([`Builder::liveness_cuts`]); without it, a variable read after a join that
    /// one path reaches without defining it (it reads the zero there) was live on that
    /// path back to its region's entry, the kernel's entry when the region is the whole
    /// kernel: a walk of the kernel per variable.
    fn place_params(&mut self, uses: &[Use], cuts: &[Option<Block>]) {
        let nvars = self.r.num_vars();
        // Blocks where each variable is read before any definition in the block.
        let mut upward: Vec<Vec<Block>> = vec![Vec::new(); nvars];
        for u in uses {
            if !(u.at_end && self.defines(u.var, u.block)) {
                upward[u.var].push(u.block);
            }
        }
        for (&block, defs) in &self.r.end_defs {
            for &(_, src) in defs {
                if let Src::Old(v) = src {
                    if let Some(var) = self.r.var_of(v) {
                        let own = matches!(self.r.vars[var].kind,
                            VarKind::Value { def_block, .. } if def_block == block);
                        if !own {
                            upward[var].push(block);
                        }
                    }
                }
            }
        }
        let mut def_blocks: Vec<Vec<Block>> = vec![Vec::new(); nvars];
        for (var, data) in self.r.vars.iter().enumerate() {
            if let VarKind::Value { def_block, .. } = data.kind {
                def_blocks[var].push(def_block);
            }
        }
        for (&block, defs) in &self.r.end_defs {
            for &(var, _) in defs {
                def_blocks[var].push(block);
            }
        }
        let df = self.dominance_frontiers();
        let mut order: Vec<(Block, Var)> = Vec::new();
        for var in 0..nvars {
            // Liveness: backwards from the upward-exposed uses, stopping at definitions.
            let mut live_in: FxHashSet<Block> = FxHashSet::default();
            let mut work: Vec<Block> = Vec::new();
            for &b in &upward[var] {
                if live_in.insert(b) {
                    work.push(b);
                }
            }
            while let Some(b) = work.pop() {
                if cuts[var] == Some(b) {
                    continue;
                }
                for &p in self.cfg.preds(b) {
                    if !self.defines(var, p) && live_in.insert(p) {
                        work.push(p);
                    }
                }
            }
            // The iterated dominance frontier of the definitions.
            let mut placed: FxHashSet<Block> = FxHashSet::default();
            let mut work: Vec<Block> = def_blocks[var].clone();
            let mut queued: FxHashSet<Block> = work.iter().copied().collect();
            while let Some(b) = work.pop() {
                for &f in df.get(&b).map(Vec::as_slice).unwrap_or(&[]) {
                    if live_in.contains(&f) && placed.insert(f) {
                        order.push((f, var));
                    }
                    if queued.insert(f) {
                        work.push(f);
                    }
                }
            }
        }
        // Deterministic parameter order: by block, then variable.
        order.sort_by_key(|&(b, v)| (b, v));
        for (block, var) in order {
            let p = self.func.dfg.append_block_param(block, self.r.vars[var].ty);
            self.params.insert((var, block), p);
            self.new_params.entry(block).or_default().push((var, p));
        }
    }

    /// The dominance frontier of every reachable block (Cooper, Harvey and Kennedy).
    fn dominance_frontiers(&self) -> FxHashMap<Block, Vec<Block>> {
        let mut df: FxHashMap<Block, Vec<Block>> = FxHashMap::default();
        for &b in self.domtree.rpo() {
            let preds: Vec<Block> = self
                .cfg
                .preds(b)
                .iter()
                .copied()
                .filter(|&p| self.domtree.is_reachable(p))
                .collect();
            if preds.len() < 2 {
                continue;
            }
            let Some(idom) = self.domtree.idom(b) else {
                continue;
            };
            for p in preds {
                let mut runner = p;
                while runner != idom {
                    let list = df.entry(runner).or_default();
                    if !list.contains(&b) {
                        list.push(b);
                    }
                    match self.domtree.idom(runner) {
                        Some(d) => runner = d,
                        None => break,
                    }
                }
            }
        }
        df
    }

    /// The blocks defining each variable other than by the zero at its region's entry:
    /// its end-of-block definitions and a value's own block, the entry included only where
    /// it defines the variable other than as zero.
    fn def_places(&self) -> Vec<Vec<Block>> {
        let nvars = self.r.num_vars();
        // Variables their region's entry defines other than as zero.
        let mut entry_value = vec![false; nvars];
        for (&block, defs) in &self.r.end_defs {
            for &(var, src) in defs {
                if src != Src::Zero && self.r.vars[var].zero_block == block {
                    entry_value[var] = true;
                }
            }
        }
        let mut places: Vec<Vec<Block>> = vec![Vec::new(); nvars];
        for &(var, block) in &self.defined {
            if block != self.r.vars[var].zero_block || entry_value[var] {
                places[var].push(block);
            }
        }
        for (var, data) in self.r.vars.iter().enumerate() {
            if let VarKind::Value { def_block, .. } = data.kind {
                places[var].push(def_block);
            }
        }
        places
    }

    /// The nearest common dominator of `blocks` (`None`: no block, or one unreachable),
    /// climbing from the deeper block; they lie close together, so this is cheap.
    fn common_dominator(&self, blocks: &[Block]) -> Option<Block> {
        let mut lca: Option<Block> = None;
        for &b in blocks {
            let db = *self.depth.get(&b)?;
            let Some(mut a) = lca else {
                lca = Some(b);
                continue;
            };
            let (mut b, mut da, mut db) = (b, self.depth[&a], db);
            while a != b {
                if da >= db {
                    (a, da) = (self.domtree.idom(a)?, da.saturating_sub(1));
                } else {
                    (b, db) = (self.domtree.idom(b)?, db.saturating_sub(1));
                }
            }
            lca = Some(a);
        }
        lca
    }

    /// Where the liveness of each variable need not be followed further up (see
    /// [`Builder::place_params`]): the nearest common dominator of its definitions but the
    /// zero, when that block lies on no cycle. No path from the kernel's entry to it then
    /// passes a definition (each lies below it), so the variable is the zero on entry to
    /// it on every path, no block above it joins two of its values, and none needs a
    /// parameter for it.
    fn liveness_cuts(&mut self, places: &[Vec<Block>]) -> Vec<Option<Block>> {
        let forest = LoopForest::compute(&self.cfg);
        let cuts = places
            .iter()
            .map(|blocks| {
                self.common_dominator(blocks)
                    .filter(|&b| forest.innermost_loop(b).is_none())
            })
            .collect();
        self.forest = Some(forest);
        cuts
    }

    /// Sets [`Builder::top`]: per variable, the nearest common dominator of its
    /// definitions and parameters, which lie close together (a predicate's assignments and
    /// joins, a parameter's edges). The zero every variable gets at its region's entry
    /// does not count when it is the entry's only definition of the variable: above the
    /// top the variable is zero, and a block the top does not dominate has no definition
    /// above it but that zero. Counting it made the top of every variable the region's
    /// entry, so a read of the zero on a path no lane takes (an argument of a parameter on
    /// an edge where the variable is not defined) walked the dominator tree up to the
    /// entry: once per variable, quadratic in a kernel restructured as one region.
    fn find_tops(&mut self, mut places: Vec<Vec<Block>>) {
        for &(var, block) in self.params.keys() {
            places[var].push(block);
        }
        let mut top: Vec<Option<Block>> = Vec::with_capacity(places.len());
        for (var, blocks) in places.iter().enumerate() {
            let zero_block = self.r.vars[var].zero_block;
            top.push(if blocks.is_empty() {
                // Only the zero (or nothing at all).
                self.domtree.is_reachable(zero_block).then_some(zero_block)
            } else {
                self.common_dominator(blocks)
            });
        }
        self.top = top;
    }

    /// Gives every end-of-block definition its value, dominators first, so that a
    /// definition reading another variable finds that variable's definitions above it
    /// resolved.
    fn resolve_end_defs(&mut self) {
        let rpo: Vec<Block> = self.domtree.rpo().to_vec();
        for block in rpo {
            let Some(defs) = self.r.end_defs.get(&block).cloned() else {
                continue;
            };
            // In order: a later definition of a variable replaces an earlier one.
            for (var, src) in defs {
                let value = match src {
                    Src::Zero => None,
                    Src::Fresh(v) => Some(v),
                    Src::Old(v) => Some(self.before_end_defs(v, block)),
                };
                self.resolved.insert((block, var), value);
            }
        }
    }

    /// An old value as read by an end-of-block definition in `block`.
    fn before_end_defs(&mut self, v: Value, block: Block) -> Value {
        let Some(var) = self.r.var_of(v) else {
            return v;
        };
        match self.r.vars[var].kind {
            VarKind::Value { def_block, .. } if def_block == block => v,
            _ => self.entry_value(var, block),
        }
    }

    /// The value of `var` at the end of `block`'s own definitions, if it has any. A zero
    /// is placed only when read, so that a variable every path defines costs none.
    fn last_def(&mut self, var: Var, block: Block) -> Option<Value> {
        if let Some(&v) = self.resolved.get(&(block, var)) {
            return Some(v.unwrap_or_else(|| self.zero(var)));
        }
        match self.r.vars[var].kind {
            VarKind::Value { value, def_block } if def_block == block => Some(value),
            _ => None,
        }
    }

    /// The value of `var` on entry to `block`: its parameter there, or the value at the
    /// end of the nearest dominator that defines it; zero where no definition dominates
    /// (unreachable code).
    fn entry_value(&mut self, var: Var, block: Block) -> Value {
        // Every definition but the region entry's zero lies below the top: a block the top
        // does not dominate sees that zero.
        if let Some(top) = self.top.get(var).copied().flatten() {
            if !self.domtree.dominates(top, block) && self.domtree.is_reachable(block) {
                return self.zero(var);
            }
        }
        let mut path = Vec::new();
        let mut cur = block;
        let result = loop {
            if let Some(&v) = self.entry_cache.get(&(var, cur)) {
                break v;
            }
            if let Some(&p) = self.params.get(&(var, cur)) {
                break p;
            }
            path.push(cur);
            // Nothing above the variable's top defines it.
            if self.top.get(var).copied().flatten() == Some(cur) {
                break self.zero(var);
            }
            match self.domtree.idom(cur) {
                None => break self.zero(var),
                Some(d) => {
                    if let Some(v) = self.last_def(var, d) {
                        break v;
                    }
                    cur = d;
                }
            }
        };
        for b in path {
            self.entry_cache.insert((var, b), result);
        }
        result
    }

    /// The value of `var` at the end of `block`.
    fn end_value(&mut self, var: Var, block: Block) -> Value {
        match self.last_def(var, block) {
            Some(v) => v,
            None => self.entry_value(var, block),
        }
    }

    /// The zero of `var`'s type, placed in its region's entry before its terminator (or,
    /// with [`Repair::place_zeros_near_reads`], made now and placed by
    /// [`Builder::place_zeros`] once every read is known).
    fn zero(&mut self, var: Var) -> Value {
        if let Some(&z) = self.zeros.get(&var) {
            return z;
        }
        let ty = self.r.vars[var].ty;
        let data = InstructionData::zero(ty);
        let inst = self.func.dfg.make_inst(data, Some(ty));
        let z = self
            .func
            .dfg
            .inst_result(inst)
            .expect("constants have a result");
        if self.r.zeros_near_reads {
            self.unplaced.push((var, inst, z));
        } else {
            self.place_zero_at_end(inst, self.r.vars[var].zero_block);
        }
        self.zeros.insert(var, z);
        self.stats.zeros += 1;
        z
    }

    /// Places `inst` in `block` before its terminator.
    fn place_zero_at_end(&mut self, inst: Inst, block: Block) {
        let at = self.func.layout.block_insts(block).len().saturating_sub(1);
        self.func.layout.insert_inst(inst, block, at);
    }

    /// Places the zeros made but not placed ([`Repair::place_zeros_near_reads`]): each at
    /// the nearest common dominator of the blocks that read it, at the start of that
    /// block; where that block lies in a loop below the region's entry, at the end of the
    /// block that dominates the outermost such loop instead. A zero read nowhere, or
    /// read where the dominator tree does not reach, goes to its region's entry.
    fn place_zeros(&mut self) {
        if self.unplaced.is_empty() {
            return;
        }
        let index: FxHashMap<Value, usize> = self
            .unplaced
            .iter()
            .enumerate()
            .map(|(i, &(_, _, z))| (z, i))
            .collect();
        let mut reads: Vec<Vec<Block>> = vec![Vec::new(); self.unplaced.len()];
        for &block in self.func.layout.blocks() {
            for &inst in self.func.layout.block_insts(block) {
                for v in self.func.dfg.insts[inst].all_values() {
                    if let Some(&i) = index.get(&v) {
                        if reads[i].last() != Some(&block) {
                            reads[i].push(block);
                        }
                    }
                }
            }
        }
        for (i, (var, inst, _)) in std::mem::take(&mut self.unplaced).into_iter().enumerate() {
            let zero_block = self.r.vars[var].zero_block;
            let near = self
                .common_dominator(&reads[i])
                .filter(|&b| self.domtree.dominates(zero_block, b));
            match near {
                Some(b) if b != zero_block => match self.out_of_loops(b, zero_block) {
                    Some(above) => self.place_zero_at_end(inst, above),
                    None => self.func.layout.insert_inst(inst, b, 0),
                },
                _ => self.place_zero_at_end(inst, zero_block),
            }
        }
    }

    /// When `block` lies in a loop whose blocks `zero_block` strictly dominates, a block
    /// dominating `block` outside every such loop (the immediate dominator of the
    /// outermost one's entries' common dominator); `None` when no such loop holds it.
    fn out_of_loops(&self, block: Block, zero_block: Block) -> Option<Block> {
        let forest = self.forest.as_ref()?;
        let mut out = None;
        let mut cur = block;
        while let Some(l) = forest.innermost_loop(cur) {
            let head = self.common_dominator(forest.entries(l))?;
            if head == zero_block || !self.domtree.dominates(zero_block, head) {
                break;
            }
            let mut above = self.domtree.idom(head)?;
            // The entries' common dominator of an irreducible loop may lie inside it.
            while forest.contains(l, above) && above != zero_block {
                above = self.domtree.idom(above)?;
            }
            if forest.contains(l, above) {
                break;
            }
            out = Some(above);
            cur = above;
        }
        out
    }

    /// Passes every new parameter its argument on every edge into its block.
    fn pass_new_params(&mut self) {
        let blocks: Vec<Block> = self.func.layout.blocks().to_vec();
        for block in blocks {
            let Some(term) = self.func.terminator(block) else {
                continue;
            };
            let dests: Vec<Block> = self.func.dfg.insts[term]
                .branch_destinations()
                .iter()
                .map(|c| c.block)
                .collect();
            for (d, dest) in dests.into_iter().enumerate() {
                let Some(list) = self.new_params.get(&dest).cloned() else {
                    continue;
                };
                let args: Vec<Value> = list
                    .iter()
                    .map(|&(var, _)| self.end_value(var, block))
                    .collect();
                if let Some(call) = self.func.dfg.insts[term]
                    .branch_destinations_mut()
                    .get_mut(d)
                {
                    call.args.extend(args);
                }
            }
        }
    }

    /// Removes new parameters whose incoming values are all one value (or the parameter
    /// itself), replacing them by that value, until none is left.
    fn remove_trivial_params(&mut self) {
        // Incoming values of each new parameter: (block, index) -> values.
        let mut replaced: FxHashMap<Value, Value> = FxHashMap::default();
        let resolve = |replaced: &FxHashMap<Value, Value>, mut v: Value| {
            while let Some(&r) = replaced.get(&v) {
                v = r;
            }
            v
        };
        let mut incoming: FxHashMap<Value, Vec<Value>> = FxHashMap::default();
        for &block in self.func.layout.blocks() {
            let Some(term) = self.func.terminator(block) else {
                continue;
            };
            for call in self.func.dfg.insts[term].branch_destinations() {
                if let Some(list) = self.new_params.get(&call.block) {
                    let base = self.func.dfg.block_params(call.block).len() - list.len();
                    for (k, &(_, p)) in list.iter().enumerate() {
                        if let Some(&a) = call.args.get(base + k) {
                            incoming.entry(p).or_default().push(a);
                        }
                    }
                }
            }
        }
        loop {
            let mut changed = false;
            for list in self.new_params.values() {
                for &(_, p) in list {
                    if replaced.contains_key(&p) {
                        continue;
                    }
                    let mut only = None;
                    let mut trivial = true;
                    for &a in incoming.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
                        let a = resolve(&replaced, a);
                        if a == p || only == Some(a) {
                            continue;
                        }
                        if only.is_some() {
                            trivial = false;
                            break;
                        }
                        only = Some(a);
                    }
                    if let (true, Some(v)) = (trivial, only) {
                        replaced.insert(p, v);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        if replaced.is_empty() {
            self.stats.params_added = self.params.len() as u64;
            return;
        }
        // Rewrite every use, then drop the parameters and their arguments.
        let blocks: Vec<Block> = self.func.layout.blocks().to_vec();
        for &block in &blocks {
            let insts: Vec<Inst> = self.func.layout.block_insts(block).to_vec();
            for inst in insts {
                self.func.dfg.insts[inst].map_values(|v| resolve(&replaced, v));
            }
        }
        let mut drop: FxHashMap<Block, Vec<usize>> = FxHashMap::default();
        for (&block, list) in &self.new_params {
            let base = self.func.dfg.block_params(block).len() - list.len();
            for (k, &(_, p)) in list.iter().enumerate() {
                if replaced.contains_key(&p) {
                    drop.entry(block).or_default().push(base + k);
                }
            }
        }
        remove_params(self.func, &drop);
        self.stats.trivial_params = replaced.len() as u64;
        self.stats.params_added = (self.params.len() - replaced.len()) as u64;
    }

    /// Removes the parameters whose values became variables.
    fn remove_replaced_params(&mut self) -> Result<(), String> {
        let mut drop: FxHashMap<Block, Vec<usize>> = FxHashMap::default();
        for data in &self.r.vars {
            if let VarKind::Param(v) = data.kind {
                match self.func.dfg.value_def(v) {
                    ValueDef::Param(block, n) => drop.entry(block).or_default().push(n as usize),
                    ValueDef::Result(_) => {
                        return Err(format!("{v} is no block parameter"));
                    }
                }
            }
        }
        self.stats.params_removed = drop.values().map(|l| l.len() as u64).sum();
        remove_params(self.func, &drop);
        Ok(())
    }
}

/// Removes the given parameters (by index) of each block, and the matching argument of
/// every branch to it.
fn remove_params(func: &mut Function, drop: &FxHashMap<Block, Vec<usize>>) {
    let mut sorted: SecondaryMap<Block, Vec<usize>> = SecondaryMap::new();
    for (&block, list) in drop {
        let mut list = list.clone();
        list.sort_unstable_by(|a, b| b.cmp(a));
        list.dedup();
        sorted[block] = list;
    }
    let blocks: Vec<Block> = func.layout.blocks().to_vec();
    for &block in &blocks {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        for call in func.dfg.insts[term].branch_destinations_mut() {
            for &i in &sorted[call.block] {
                if i < call.args.len() {
                    call.args.remove(i);
                }
            }
        }
    }
    for &block in drop.keys() {
        for &i in &sorted[block] {
            func.dfg.remove_block_param(block, i);
        }
    }
}

/// Writes `value` into operand `slot` of `data`.
fn set_slot(data: &mut InstructionData, slot: Slot, value: Value) -> Result<(), String> {
    let target = match slot {
        Slot::Arg(i) => data.args_mut().get_mut(i),
        Slot::BranchArg(d, i) => data
            .branch_destinations_mut()
            .get_mut(d)
            .and_then(|c| c.args.get_mut(i)),
    };
    match target {
        Some(t) => {
            *t = value;
            Ok(())
        }
        None => Err(format!("no operand {slot:?} to rewrite")),
    }
}
