//! Use lists: the instructions reading each value, so that replacing a value after a move
//! costs its uses, not a sweep over the kernel (the pass stays `O(m n²)` over `m` regions,
//! Section 3.3).

use std::collections::HashMap;
use warplift_ir::{Function, Inst, Value};

/// The instructions that read each value. Removed instructions may linger in the lists;
/// callers check placement where it matters.
#[derive(Clone, Debug, Default)]
pub struct Uses {
    map: HashMap<Value, Vec<Inst>>,
}

impl Uses {
    /// The use lists of every placed instruction of `func`.
    pub fn compute(func: &Function) -> Uses {
        let mut uses = Uses::default();
        for inst in func.layout.insts() {
            uses.add(func, inst);
        }
        uses
    }

    /// Records the reads of `inst`.
    pub fn add(&mut self, func: &Function, inst: Inst) {
        for v in func.dfg.insts[inst].all_values() {
            let list = self.map.entry(v).or_default();
            if list.last() != Some(&inst) {
                list.push(inst);
            }
        }
    }

    /// The placed instructions reading `v`.
    pub fn of<'a>(&'a self, func: &'a Function, v: Value) -> impl Iterator<Item = Inst> + 'a {
        let mut seen = std::collections::HashSet::new();
        self.map
            .get(&v)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&i| func.layout.inst_block(i).is_some() && seen.insert(i))
    }

    /// Makes every reader of `old` read `new` instead.
    pub fn replace(&mut self, func: &mut Function, old: Value, new: Value) {
        let Some(readers) = self.map.remove(&old) else {
            return;
        };
        for &inst in &readers {
            func.dfg.insts[inst].map_values(|v| if v == old { new } else { v });
        }
        self.map.entry(new).or_default().extend(readers);
    }
}
