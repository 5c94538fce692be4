//! Use lists: the instructions reading each value, so that replacing a value after a move
//! costs its uses, not a sweep over the kernel (the pass stays `O(m n²)` over `m` regions,
//! Section 3.3).
//!
//! Every use is one entry of a shared pool, chained to the value's other uses, as LLVM
//! keeps its use lists: the heads and tails are dense tables indexed by value number, and
//! no value owns an allocation. Building the lists of a kernel of 100k instructions is
//! then a pass over it that only appends to the pool (one list per value, each with its
//! own vector, was a tenth of the pass), and replacing a value relinks its chain onto the
//! new value's without copying it.

use cranelift_entity::SecondaryMap;
use warplift_ir::{Function, Inst, Value};

/// The end of a chain.
const NIL: u32 = u32::MAX;

/// The instructions that read each value. Removed instructions may linger in the lists
/// until the value is replaced; callers check placement where it matters.
#[derive(Clone, Debug)]
pub struct Uses {
    /// The first and last entry of each value's chain.
    ends: SecondaryMap<Value, (u32, u32)>,
    /// The reader of each entry.
    reader: Vec<Inst>,
    /// The next entry of the same value's chain.
    next: Vec<u32>,
}

impl Default for Uses {
    fn default() -> Self {
        Uses {
            ends: SecondaryMap::with_default((NIL, NIL)),
            reader: Vec::new(),
            next: Vec::new(),
        }
    }
}

impl Uses {
    /// The use lists of every placed instruction of `func`.
    pub fn compute(func: &Function) -> Uses {
        let mut uses = Uses::default();
        // Sized once, with room for the values the pass makes (a few per moved pair):
        // growing the table by one entry per new value cost more than the room.
        let values = func.dfg.num_values();
        uses.ends.resize(values + values / 2);
        // About two reads per instruction, and room for the instructions the pass adds.
        let reads = 3 * func.dfg.num_insts();
        uses.reader.reserve(reads);
        uses.next.reserve(reads);
        for inst in func.layout.insts() {
            uses.add(func, inst);
        }
        uses
    }

    /// Records the reads of `inst`.
    pub fn add(&mut self, func: &Function, inst: Inst) {
        let data = &func.dfg.insts[inst];
        for &v in data.args() {
            self.push(v, inst);
        }
        for call in data.branch_destinations() {
            for &v in &call.args {
                self.push(v, inst);
            }
        }
    }

    /// Records that `inst` reads `v`, unless it was the last reader recorded.
    fn push(&mut self, v: Value, inst: Inst) {
        let (first, last) = self.ends[v];
        if last != NIL && self.reader[last as usize] == inst {
            return;
        }
        let entry = self.reader.len() as u32;
        self.reader.push(inst);
        self.next.push(NIL);
        if last == NIL {
            self.ends[v] = (entry, entry);
        } else {
            self.next[last as usize] = entry;
            self.ends[v] = (first, entry);
        }
    }

    /// The entries of `v`'s chain, in order.
    fn chain(&self, v: Value) -> impl Iterator<Item = u32> + '_ {
        let first = self.ends.get(v).map_or(NIL, |e| e.0);
        core::iter::successors((first != NIL).then_some(first), |&e| {
            let n = self.next[e as usize];
            (n != NIL).then_some(n)
        })
    }

    /// The placed instructions reading `v`, each once.
    pub fn of(&self, func: &Function, v: Value) -> impl Iterator<Item = Inst> {
        let mut out: Vec<Inst> = self
            .chain(v)
            .map(|e| self.reader[e as usize])
            .filter(|&i| func.layout.inst_block(i).is_some())
            .collect();
        // A reader appears twice when it read both values of a replacement.
        if out.len() <= 16 {
            let mut k = 0;
            while k < out.len() {
                if out[..k].contains(&out[k]) {
                    out.remove(k);
                } else {
                    k += 1;
                }
            }
        } else {
            let mut seen = rustc_hash::FxHashSet::default();
            out.retain(|&i| seen.insert(i));
        }
        out.into_iter()
    }

    /// Does `f` hold for every placed instruction reading `v`? A reader may be asked
    /// twice (see [`Uses::of`]), so `f` must not count; nothing is allocated, for the
    /// checks the pass makes on every matched pair.
    pub fn all_readers(&self, func: &Function, v: Value, f: impl FnMut(Inst) -> bool) -> bool {
        self.chain(v)
            .map(|e| self.reader[e as usize])
            .filter(|&i| func.layout.inst_block(i).is_some())
            .all(f)
    }

    /// Makes every reader of `old` read `new` instead. Readers no longer placed are
    /// dropped from the lists here, so that a value that many moves replace into does not
    /// drag the dead ones along.
    pub fn replace(&mut self, func: &mut Function, old: Value, new: Value) {
        let (mut first, mut last) = (NIL, NIL);
        let mut e = self.ends.get(old).map_or(NIL, |e| e.0);
        if e != NIL {
            self.ends[old] = (NIL, NIL);
        }
        // Keep the placed readers' entries, in order, as one chain.
        while e != NIL {
            let next = self.next[e as usize];
            let inst = self.reader[e as usize];
            if func.layout.inst_block(inst).is_some() {
                func.dfg.insts[inst].map_values(|v| if v == old { new } else { v });
                self.next[e as usize] = NIL;
                if last == NIL {
                    first = e;
                } else {
                    self.next[last as usize] = e;
                }
                last = e;
            }
            e = next;
        }
        if first == NIL {
            return;
        }
        let (head, tail) = self.ends[new];
        if tail == NIL {
            self.ends[new] = (first, last);
        } else {
            self.next[tail as usize] = first;
            self.ends[new] = (head, last);
        }
    }
}
