//! The renaming chains of a multi-way hoist across a `br_table`, chosen together.
//!
//! A hoisted tuple whose operand differs between the table's arms reads it through a
//! *chain*: a value `x` (the *base*), and over it one `select t_S, y, (...)` per group `S`
//! of arms whose lanes must get another operand `y`, `t_S` a test of the table's index
//! that holds exactly where it leads to one of `S`'s arms ([`super::Table`]). Lanes of one
//! arm get one value, so the groups of a chain are disjoint and their order is free.
//!
//! What a chain costs is its `select`s, and the tests it reads that no other chain made:
//! a test (and each constant it reads) is made once for the whole table. A choice made
//! chain by chain takes the cheapest for each chain given the tests made before it, and
//! with several chains that is not the cheapest in all: the first chain's fallback may
//! be exactly the test the next one needs. So the choice is made for all of them at once.
//!
//! **Options of one chain.** The base is either one of the chain's own operands (every
//! arm reading another gets a `select`: choosing which is choosing the *fallback* group,
//! whose test is never needed), or the value of an earlier chain (built before it): the
//! arms where that chain's operand differs from this one's get `select`s, the others
//! share all of its `select`s. The groups laid over a base are the arms that differ from
//! it, grouped by the operand they read.
//!
//! **Search.** The cost of an assignment of options to chains is the number of `select`s
//! plus the instructions of the distinct tests, each constant counted once and not at all
//! when the table's block has it (what [`super::Tests`] then makes). When the product of
//! the chains' option counts is at most [`EXACT_LIMIT`] every assignment is tried: the
//! choice is exact. Above it, the chain-by-chain choice is improved one chain at a time
//! (each chain's option that lowers the total, holding the others; rounds until none
//! does), which is a local optimum. Either way the chain-by-chain choice is kept unless
//! another is strictly cheaper, so where joining gains nothing the code is the same.

use super::Table;
use warplift_ir::Value;

/// Assignments tried one by one at most; above, a local search (see the module doc).
pub const EXACT_LIMIT: usize = 4096;

/// Rounds of the local search above [`EXACT_LIMIT`] (each round tries every option of
/// every chain once; each accepted change lowers the cost, so it ends anyway).
const ROUNDS: usize = 8;

/// What a chain is built on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Base {
    /// An operand (the fallback group's).
    Value(Value),
    /// The value of the chain of this index (an earlier one).
    Chain(usize),
}

/// How one chain is built: its base, and the groups laid over it, each an operand and
/// the arms (ascending) whose lanes get it, outermost `select` first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainPlan {
    pub base: Base,
    pub overlays: Vec<(Value, Vec<usize>)>,
}

impl ChainPlan {
    /// The chain for the operands `vs` (arm by arm) built on `base`, whose operands arm by
    /// arm are `under`.
    fn over(base: Base, under: &[Value], vs: &[Value]) -> ChainPlan {
        let mut overlays: Vec<(Value, Vec<usize>)> = Vec::new();
        for (k, (&v, &u)) in vs.iter().zip(under).enumerate() {
            if v == u {
                continue;
            }
            match overlays.iter_mut().find(|(x, _)| *x == v) {
                Some((_, arms)) => arms.push(k),
                None => overlays.push((v, vec![k])),
            }
        }
        ChainPlan { base, overlays }
    }
}

/// The chains' cost: their `select`s and the instructions of the distinct tests they read
/// (`has`: does the table's block already have this `iconst.i32`?).
pub fn cost(table: &Table, plans: &[&ChainPlan], has: &impl Fn(u32) -> bool) -> i64 {
    let mut tests: Vec<&[usize]> = Vec::new();
    let mut selects = 0;
    for plan in plans {
        for (_, arms) in &plan.overlays {
            selects += 1;
            if !tests.contains(&arms.as_slice()) {
                tests.push(arms);
            }
        }
    }
    selects + table.tests_cost(&tests, has)
}

/// The chain-by-chain choice: each chain, in order, on its own operands, its fallback the
/// group whose test would cost the most given the tests made before (a made one costs
/// nothing more; on ties the default's group, whose test must catch the indices past the
/// table).
pub fn greedy(table: &Table, chains: &[Vec<Value>]) -> Vec<ChainPlan> {
    let mut made: Vec<Vec<usize>> = Vec::new();
    let mut plans = Vec::with_capacity(chains.len());
    for vs in chains {
        // The groups of arms by the operand they read, in order of first arm.
        let mut groups: Vec<(Value, Vec<usize>)> = Vec::new();
        for (k, &v) in vs.iter().enumerate() {
            match groups.iter_mut().find(|(x, _)| *x == v) {
                Some((_, arms)) => arms.push(k),
                None => groups.push((v, vec![k])),
            }
        }
        let price = |arms: &Vec<usize>| {
            if made.contains(arms) {
                0
            } else {
                table.test(arms).cost()
            }
        };
        let fallback = (0..groups.len())
            .max_by_key(|&g| (price(&groups[g].1), groups[g].1.contains(&table.default)))
            .expect("an operand list is not empty");
        let (x, _) = groups.remove(fallback);
        for (_, arms) in &groups {
            if !made.contains(arms) {
                made.push(arms.clone());
            }
        }
        plans.push(ChainPlan {
            base: Base::Value(x),
            overlays: groups,
        });
    }
    plans
}

/// Every way chain `c` of `chains` can be built: on each of its distinct operands, and
/// on each earlier chain.
fn options(chains: &[Vec<Value>], c: usize) -> Vec<ChainPlan> {
    let vs = &chains[c];
    let mut out = Vec::new();
    let mut seen: Vec<Value> = Vec::new();
    for &x in vs {
        if !seen.contains(&x) {
            seen.push(x);
            out.push(ChainPlan::over(Base::Value(x), &vec![x; vs.len()], vs));
        }
    }
    for (d, under) in chains[..c].iter().enumerate() {
        out.push(ChainPlan::over(Base::Chain(d), under, vs));
    }
    out
}

/// How to build `chains` (each a list of operands, arm by arm, not all one value) across
/// `table`, cheapest first: chosen jointly when `joint`, else chain by chain.
pub fn choose(
    table: &Table,
    chains: &[Vec<Value>],
    joint: bool,
    has: &impl Fn(u32) -> bool,
) -> Vec<ChainPlan> {
    let mut best = greedy(table, chains);
    if !joint || chains.len() < 2 {
        // One chain: its cheapest fallback given no other test is the greedy's.
        return best;
    }
    let all: Vec<Vec<ChainPlan>> = (0..chains.len()).map(|c| options(chains, c)).collect();
    let total = |pick: &[usize]| {
        let plans: Vec<&ChainPlan> = pick.iter().zip(&all).map(|(&o, opts)| &opts[o]).collect();
        cost(table, &plans, has)
    };
    let of = |plans: &[ChainPlan]| cost(table, &plans.iter().collect::<Vec<_>>(), has);
    let mut best_cost = of(&best);
    let combos = all
        .iter()
        .try_fold(1usize, |n, o| n.checked_mul(o.len()))
        .unwrap_or(usize::MAX);
    let mut pick = vec![0; chains.len()];
    let mut chosen: Option<Vec<usize>> = None;
    if combos <= EXACT_LIMIT {
        // Every assignment, as an odometer over the chains' options.
        loop {
            let c = total(&pick);
            if c < best_cost {
                best_cost = c;
                chosen = Some(pick.clone());
            }
            let Some(d) = (0..pick.len()).find(|&d| pick[d] + 1 < all[d].len()) else {
                break;
            };
            pick[d] += 1;
            pick[..d].iter_mut().for_each(|p| *p = 0);
        }
    } else {
        // From the chain-by-chain choice, one chain's option at a time.
        pick = best
            .iter()
            .zip(&all)
            .map(|(plan, opts)| opts.iter().position(|o| o == plan).unwrap_or(0))
            .collect();
        let mut current = total(&pick);
        for _ in 0..ROUNDS {
            let mut improved = false;
            for d in 0..pick.len() {
                for o in 0..all[d].len() {
                    let was = pick[d];
                    pick[d] = o;
                    let c = total(&pick);
                    if c < current {
                        current = c;
                        improved = true;
                    } else {
                        pick[d] = was;
                    }
                }
            }
            if !improved {
                break;
            }
        }
        if current < best_cost {
            chosen = Some(pick);
        }
    }
    if let Some(pick) = chosen {
        best = pick
            .iter()
            .zip(all)
            .map(|(&o, mut opts)| opts.swap_remove(o))
            .collect();
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of `n` arms, arm `k` taking index `k`, the last the default's (also every
    /// index past the table).
    fn table(n: u32) -> Table {
        Table {
            index: Value::from_u32(1000),
            indices: (0..n).map(|k| vec![k]).collect(),
            default: n as usize - 1,
            len: n,
        }
    }

    fn v(n: u32) -> Value {
        Value::from_u32(n)
    }

    /// What chain `c` of `plans` gives the lanes of arm `k`.
    fn eval(plans: &[ChainPlan], c: usize, k: usize) -> Value {
        let plan = &plans[c];
        if let Some((x, _)) = plan.overlays.iter().find(|(_, arms)| arms.contains(&k)) {
            return *x;
        }
        match plan.base {
            Base::Value(x) => x,
            Base::Chain(d) => {
                assert!(d < c, "chain {c} built on a later one");
                eval(plans, d, k)
            }
        }
    }

    fn total(t: &Table, plans: &[ChainPlan], has: &impl Fn(u32) -> bool) -> i64 {
        cost(t, &plans.iter().collect::<Vec<_>>(), has)
    }

    /// `csc_micro_tables`' two chains: four bases, and one scale for arms 0-2 and another
    /// for arm 3 (the default's). The block has the constant 3. Chain by chain: three
    /// selects and `== 0, 1, 2` (three compares, three constants) for the bases, one
    /// select and `< 3` for the scale: 11. Together: the bases fall back to arm 0's,
    /// tested `== 1`, `== 2`, `>= 3` (two new constants), the scale reads `>= 3`: 9.
    #[test]
    fn chains_chosen_together_share_a_test_the_greedy_choice_makes_twice() {
        let t = table(4);
        let has = |c| c == 3;
        let chains = vec![vec![v(1), v(2), v(3), v(4)], vec![v(5), v(5), v(5), v(6)]];
        let greedy = choose(&t, &chains, false, &has);
        assert_eq!(total(&t, &greedy, &has), 4 + 7);
        let joint = choose(&t, &chains, true, &has);
        assert_eq!(total(&t, &joint, &has), 4 + 5);
        assert_eq!(joint[0].base, Base::Value(v(1)));
        assert_eq!(joint[1].base, Base::Value(v(5)));
        assert_eq!(joint[1].overlays, [(v(6), vec![3])]);
        // Two chains agreeing on arms 0-2: the second is the first plus one select.
        let chains = vec![vec![v(1), v(2), v(3), v(4)], vec![v(1), v(2), v(3), v(7)]];
        assert_eq!(total(&t, &choose(&t, &chains, false, &has), &has), 6 + 6);
        let joint = choose(&t, &chains, true, &has);
        assert_eq!(total(&t, &joint, &has), 4 + 5);
        assert_eq!(joint[1].base, Base::Chain(0));
    }

    /// On pseudo-random chains over tables of 3 to 6 arms, few (searched exhaustively)
    /// and many (past [`EXACT_LIMIT`]: the local search): every chain gives every arm's
    /// lanes exactly that arm's operand, and the joint choice never costs more than the
    /// chain-by-chain one.
    #[test]
    fn every_chain_gives_each_arm_its_operand_and_the_joint_choice_never_costs_more() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(m)) as u32
        };
        let mut gained = 0;
        for round in 0..300 {
            let n = 3 + next(4);
            let t = table(n);
            let count = if round % 10 == 0 {
                9
            } else {
                1 + next(4) as usize
            };
            // At least 3 operands: 3^3 - 3 lists for 9 distinct chains of 3 arms.
            let pool = 3 + next(4);
            let mut chains: Vec<Vec<Value>> = Vec::new();
            while chains.len() < count {
                let vs: Vec<Value> = (0..n).map(|_| v(next(pool))).collect();
                if vs.iter().any(|&x| x != vs[0]) && !chains.contains(&vs) {
                    chains.push(vs);
                }
            }
            let has = |c| c == 1;
            let greedy = choose(&t, &chains, false, &has);
            let joint = choose(&t, &chains, true, &has);
            for plans in [&greedy, &joint] {
                for (c, vs) in chains.iter().enumerate() {
                    for (k, &want) in vs.iter().enumerate() {
                        assert_eq!(eval(plans, c, k), want, "{chains:?} {plans:?}");
                    }
                }
            }
            let (g, j) = (total(&t, &greedy, &has), total(&t, &joint, &has));
            assert!(j <= g, "{chains:?}: joint {j} > greedy {g}");
            gained += i64::from(j < g);
        }
        assert!(gained > 0, "the joint choice never gained");
    }
}
