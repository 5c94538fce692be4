//! Hand-written kernels, one per rule of the analysis.

use super::*;
use crate::parser::parse_function;

fn analyze_text(text: &str) -> (Function, Divergence) {
    let func = parse_function(text).expect("parse");
    if let Err(e) = crate::verifier::verify_function(&func) {
        panic!(
            "invalid IR: {}",
            format!("{e:?}").chars().take(500).collect::<String>()
        );
    }
    let div = analyze(&func);
    (func, div)
}

fn v(n: u32) -> Value {
    Value::from_u32(n)
}

fn b(n: u32) -> Block {
    Block::from_u32(n)
}

/// The values among `0..n` that are divergent.
fn divergent_among(div: &Divergence, n: u32) -> Vec<u32> {
    (0..n).filter(|&i| div.is_divergent(v(i))).collect()
}

#[test]
fn thread_id_spreads_by_data_dependence() {
    let (_, div) = analyze_text(
        "kernel %k(p: i64) {
        block0(v0: i64):
            v1 = thread_id x
            v2 = thread_id y
            v3 = thread_id z
            v4 = lane_id
            v5 = iconst.i32 4
            v6 = imul v1, v5
            v7 = uextend.i64 v6
            v8 = iadd v0, v7
            v9 = icmp eq v5, v5
            v10 = select v9, v5, v5
            v11 = icmp eq v2, v5
            v12 = select v11, v5, v5
            store global v6, v8
            return
        }",
    );
    assert_eq!(divergent_among(&div, 13), [1, 2, 3, 4, 6, 7, 8, 11, 12]);
    assert_eq!(
        div.divergent_values(),
        &[1, 2, 3, 4, 6, 7, 8, 11, 12].map(v)
    );
    assert!(div.is_uniform(v(0)));
    assert!(div.divergent_branches().is_empty());
}

#[test]
fn block_geometry_and_parameters_are_uniform() {
    let (_, div) = analyze_text(
        "kernel %k(p: i64, n: i32) {
            smem0 = shared 16, align 4
        block0(v0: i64, v1: i32):
            v2 = block_id x
            v3 = block_dim x
            v4 = grid_dim y
            v5 = imul v2, v3
            v6 = iadd v5, v1
            v7 = shared_addr smem0
            v8 = f32const 1.5
            v9 = icmp slt v6, v4
            brif v9, block1, block2
        block1:
            return
        block2:
            return
        }",
    );
    assert!(div.divergent_values().is_empty());
    assert!(!div.is_divergent_branch(b(0)));
}

const DIAMOND: &str = "kernel %k(p: i64) {
    block0(v0: i64):
        v1 = SOURCE
        v2 = iconst.i32 0
        v8 = icmp eq v1, v2
        brif v8, block1, block2
    block1:
        v3 = iconst.i32 1
        jump block3(v3)
    block2:
        v4 = iconst.i32 2
        jump block3(v4)
    block3(v5: i32):
        v6 = iadd v5, v5
        v7 = iconst.i32 7
        store global v6, v0
        return
    }";

#[test]
fn diamond_join_is_divergent_only_under_a_divergent_branch() {
    let (_, div) = analyze_text(&DIAMOND.replace("SOURCE", "thread_id x"));
    assert!(div.is_divergent_branch(b(0)));
    assert_eq!(divergent_among(&div, 9), [1, 5, 6, 8]);

    let (_, div) = analyze_text(&DIAMOND.replace("SOURCE", "block_id x"));
    assert!(!div.is_divergent_branch(b(0)));
    assert!(div.divergent_values().is_empty());
}

#[test]
fn triangle_and_same_target_joins() {
    // block0 -> block1 -> block2 and block0 -> block2: block2 joins.
    let (_, div) = analyze_text(
        "kernel %k() {
        block0:
            v0 = thread_id x
            v1 = iconst.i32 1
            v3 = icmp eq v0, v1
            brif v3, block1, block2(v1)
        block1:
            v4 = iconst.i32 2
            jump block2(v4)
        block2(v2: i32):
            return
        }",
    );
    assert!(div.is_divergent(v(2)));
    assert_eq!(
        div.value_reason(v(2)),
        Some(&Reason::Join {
            branch: b(0),
            join: b(2)
        })
    );

    // Both arms go to the same block with different arguments.
    let (_, div) = analyze_text(
        "kernel %k() {
        block0:
            v0 = lane_id
            v1 = iconst.i32 1
            v2 = iconst.i32 2
            v4 = icmp eq v0, v1
            brif v4, block1(v1), block1(v2)
        block1(v3: i32):
            return
        }",
    );
    assert!(div.is_divergent(v(3)));
}

#[test]
fn blocks_after_the_reconvergence_point_are_not_joins() {
    // The divergent diamond reconverges at block3; block5 merges a uniform branch after
    // it and stays uniform.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v5 = icmp eq v1, v0
            brif v5, block1, block2
        block1:
            jump block3
        block2:
            jump block3
        block3:
            v2 = iconst.i32 1
            v3 = iconst.i32 2
            v6 = icmp eq v0, v2
            brif v6, block4, block5(v2)
        block4:
            jump block5(v3)
        block5(v4: i32):
            return
        }",
    );
    assert!(div.is_divergent_branch(b(0)));
    assert!(!div.is_divergent_branch(b(3)));
    assert!(div.is_uniform(v(4)));
}

#[test]
fn loop_with_uniform_trip_count_stays_uniform() {
    let (_, div) = analyze_text(
        "kernel %k(p: i64, n: i32) {
        block0(v0: i64, v1: i32):
            v2 = iconst.i32 0
            jump block1(v2, v2)
        block1(v3: i32, v4: i32):
            v5 = icmp slt v3, v1
            brif v5, block2, block3(v4)
        block2:
            v6 = iadd v4, v3
            v7 = iconst.i32 1
            v8 = iadd v3, v7
            jump block1(v8, v6)
        block3(v9: i32):
            v10 = iadd v9, v3
            store global v10, v0
            return
        }",
    );
    assert!(div.divergent_values().is_empty());
    assert!(!div.is_divergent_branch(b(1)));
}

#[test]
fn divergent_exit_makes_live_outs_divergent_but_not_the_induction_variable() {
    // for (i = 0; i < tid; i++) {}: i is uniform inside the loop (the threads still in it
    // agree), but every thread leaves with its own i.
    let (_, div) = analyze_text(
        "kernel %k(p: i64) {
        block0(v0: i64):
            v1 = thread_id x
            v2 = iconst.i32 0
            jump block1(v2)
        block1(v3: i32):
            v4 = icmp slt v3, v1
            brif v4, block2, block3(v3)
        block2:
            v5 = iconst.i32 1
            v6 = iadd v3, v5
            jump block1(v6)
        block3(v7: i32):
            v8 = iadd v3, v2
            v9 = icmp eq v3, v2
            brif v9, block4, block5
        block4:
            return
        block5:
            return
        }",
    );
    assert!(div.is_divergent_branch(b(1)));
    assert!(
        div.is_uniform(v(3)),
        "the induction variable inside the loop"
    );
    assert!(div.is_uniform(v(6)));
    assert!(div.is_divergent(v(7)), "the live-out through the exit edge");
    assert!(div.is_divergent(v(8)), "a direct use after the loop");
    assert!(div.is_divergent(v(9)));
    assert!(div.is_divergent_branch(b(3)), "a branch on a live-out");
}

#[test]
fn divergent_branch_inside_a_loop_joins_at_the_latch() {
    // A divergent if/else inside a uniform loop: the join's parameter is divergent, the
    // loop's own exit stays uniform, and the loop has no divergent exit.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 0
            jump block1(v2)
        block1(v3: i32):
            v4 = icmp slt v3, v0
            brif v4, block2, block5
        block2:
            v5 = iconst.i32 1
            v6 = iconst.i32 2
            v11 = icmp eq v1, v6
            brif v11, block3(v5), block4(v6)
        block3(v7: i32):
            jump block4(v7)
        block4(v8: i32):
            v9 = iadd v3, v5
            jump block1(v9)
        block5:
            v10 = iadd v3, v3
            return
        }",
    );
    assert!(div.is_divergent_branch(b(2)));
    assert!(div.is_divergent(v(8)));
    assert!(!div.is_divergent_branch(b(1)));
    assert!(div.is_uniform(v(3)));
    assert!(div.is_uniform(v(10)));
}

#[test]
fn divergent_exit_of_an_inner_loop_only() {
    // The inner loop (block2) exits divergently to block3, which is still inside the
    // outer loop: the outer loop's counter stays uniform, the inner live-out does not.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 0
            v3 = iconst.i32 1
            jump block1(v2)
        block1(v4: i32):
            jump block2(v2)
        block2(v5: i32):
            v6 = iadd v5, v3
            v7 = icmp slt v6, v1
            brif v7, block2(v6), block3
        block3:
            v8 = iadd v4, v3
            v9 = iadd v6, v3
            v10 = icmp slt v8, v0
            brif v10, block1(v8), block4
        block4:
            return
        }",
    );
    assert!(div.is_divergent_branch(b(2)));
    assert!(div.is_uniform(v(5)));
    assert!(div.is_uniform(v(6)));
    assert!(div.is_divergent(v(9)));
    assert!(div.is_uniform(v(4)));
    assert!(div.is_uniform(v(8)));
    assert!(!div.is_divergent_branch(b(3)));
}

#[test]
fn irreducible_cycle_entered_divergently() {
    // block1 and block2 form a cycle entered at both; the entry branch is divergent, so
    // threads run the cycle out of step and both entries' parameters are divergent.
    let text = "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = COND
            v2 = iconst.i32 0
            v8 = icmp eq v1, v2
            brif v8, block1(v2), block2(v2)
        block1(v3: i32):
            v4 = iconst.i32 1
            v5 = iadd v3, v4
            jump block2(v5)
        block2(v6: i32):
            v7 = icmp slt v6, v0
            brif v7, block1(v6), block3
        block3:
            return
        }";
    let (_, div) = analyze_text(&text.replace("COND", "thread_id x"));
    assert!(div.is_divergent(v(3)));
    assert!(div.is_divergent(v(6)));
    assert!(div.is_divergent(v(5)));
    assert!(div.is_divergent_branch(b(2)));

    let (_, div) = analyze_text(&text.replace("COND", "block_id x"));
    assert!(div.divergent_values().is_empty());
}

#[test]
fn br_table_index() {
    let text = "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = INDEX
            v2 = iconst.i32 1
            v3 = iconst.i32 2
            br_table v1, block1(v2), [block1(v3), block2]
        block1(v4: i32):
            return
        block2:
            return
        }";
    let (_, div) = analyze_text(&text.replace("INDEX", "lane_id"));
    assert!(div.is_divergent_branch(b(0)));
    assert!(div.is_divergent(v(4)));

    let (_, div) = analyze_text(&text.replace("INDEX", "iadd v0, v0"));
    assert!(!div.is_divergent_branch(b(0)));
    assert!(div.is_uniform(v(4)));
}

#[test]
fn atomics_are_divergent() {
    let (_, div) = analyze_text(
        "kernel %k(p: i64) {
            smem0 = shared 16, align 4
        block0(v0: i64):
            v1 = iconst.i32 1
            v2 = atomic_rmw add global v0, v1
            v3 = shared_addr smem0
            v4 = atomic_cas shared v3, v1, v1
            v5 = iadd v2, v4
            return
        }",
    );
    assert_eq!(divergent_among(&div, 6), [2, 4, 5]);
}

#[test]
fn local_memory_is_divergent() {
    let (_, div) = analyze_text(
        "kernel %k() {
            lmem0 = local 16, align 4
        block0:
            v0 = local_addr lmem0
            v1 = load.i32 local v0
            v2 = iconst.i32 8
            v3 = load.i32 local v2
            return
        }",
    );
    assert_eq!(divergent_among(&div, 4), [0, 1, 3]);
}

#[test]
fn loads_are_uniform_only_from_unwritten_spaces() {
    let text = "kernel %k(p: i64) {
            smem0 = shared 16, align 4
        block0(v0: i64):
            v1 = load.i32 global v0
            v2 = shared_addr smem0
            v3 = load.i32 shared v2
            v4 = thread_id x
            v5 = uextend.i64 v4
            v6 = iadd v0, v5
            v7 = load.i8 global v6
            STORE
            return
        }";
    // Nothing written: uniform addresses load uniform values.
    let (_, div) = analyze_text(&text.replace("STORE", ""));
    assert_eq!(divergent_among(&div, 8), [4, 5, 6, 7]);
    // A store to global memory makes global loads divergent, not shared ones.
    let (_, div) = analyze_text(&text.replace("STORE", "store global v1, v0"));
    assert_eq!(divergent_among(&div, 8), [1, 4, 5, 6, 7]);
    // An atomic on shared memory makes shared loads divergent.
    let (_, div) = analyze_text(&text.replace("STORE", "v8 = atomic_rmw add shared v2, v3"));
    assert_eq!(divergent_among(&div, 8), [3, 4, 5, 6, 7]);
}

#[test]
fn unreachable_and_unknown_entities_do_not_panic() {
    let (_, div) = analyze_text(
        "kernel %k() {
        block0:
            return
        block1:
            v0 = thread_id x
            v1 = icmp eq v0, v0
            brif v1, block2, block1
        block2:
            return
        }",
    );
    assert!(div.is_divergent(v(0)));
    assert!(div.is_divergent(v(1000)), "unknown values are divergent");
    assert!(!div.is_divergent_branch(b(1000)));
}

#[test]
fn long_chains_do_not_overflow_the_stack() {
    // 20 000 divergent diamonds in a row, and a value threaded through all of them.
    let mut text = String::from(
        "kernel %k() {\nblock0:\n v0 = thread_id x\n v1 = icmp eq v0, v0\n jump block1(v1)\n",
    );
    let n = 20_000;
    for i in 0..n {
        let (h, t, e, next) = (1 + 3 * i, 2 + 3 * i, 3 + 3 * i, 4 + 3 * i);
        text.push_str(&format!(
            "block{h}(v{a}: i1):\n brif v{a}, block{t}, block{e}\nblock{t}:\n jump block{next}(v{a})\nblock{e}:\n jump block{next}(v{a})\n",
            a = 2 + i
        ));
    }
    text.push_str(&format!(
        "block{}(v{}: i1):\n return\n}}\n",
        1 + 3 * n,
        2 + n
    ));
    let (_, div) = analyze_text(&text);
    assert_eq!(div.divergent_values().len(), n as usize + 3);
    assert_eq!(div.divergent_branches().len(), n as usize);
}

#[test]
fn an_inner_cycle_left_divergently_inside_a_loop_with_two_latches() {
    // block1 is the header of one natural loop with two back edges (from block2 and from
    // block3). The cycle block1 -> block2 -> block1 is left at block2 by a divergent branch
    // whose reconvergence point, block3, is inside the same loop: threads reach block3
    // after different numbers of turns, carrying different values of the header's `v4`
    // although every value passed to it is uniform. The loop forest sees no exit here;
    // the cycle through the branch does. (Found by the differential harness, seed 2485.)
    let (_, div) = analyze_text(
        "kernel %k(n: i32, p: i1) {
        block0(v0: i32, v1: i1):
            v2 = thread_id x
            v3 = iconst.i1 0
            jump block1(v1, v2)
        block1(v4: i1, v5: i32):
            v6 = iconst.i32 1
            v7 = isub v5, v6
            jump block2
        block2:
            v8 = iconst.i32 0
            v9 = icmp sgt v7, v8
            brif v9, block1(v3, v7), block3
        block3:
            brif v4, block4, block5
        block4:
            jump block5
        block5:
            v10 = icmp eq v0, v0
            brif v10, block6, block1(v4, v7)
        block6:
            return
        }",
    );
    assert!(div.is_divergent_branch(b(2)), "the inner exit");
    assert!(
        div.is_divergent_branch(b(3)),
        "block3 tests a temporally divergent value"
    );
}

#[test]
fn threads_meeting_in_a_loop_after_a_self_loop_on_its_header_are_divergent() {
    // block1 is the header of one natural loop with two back edges: its own and block2's.
    // The branch of block1 is divergent and its reconvergence point, block2, is inside the
    // loop: threads that went round the self-loop meet the others there with another
    // `v9`, although `v9` is uniform among the threads computing it together. Sync
    // dependence sees no join at block2 (the paths round the header are cut at one
    // iteration), so without the reconvergence rule `v10` and block2's branch were called
    // uniform and a `br.uni` split the warp.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 1
            v3 = band v1, v2
            v4 = icmp eq v3, v2
            v5 = iconst.i32 0
            jump block1(v0)
        block1(v6: i32):
            v7 = icmp sgt v6, v5
            v8 = band v7, v4
            v9 = isub v6, v2
            brif v8, block1(v9), block2
        block2:
            v10 = isub v9, v2
            v11 = icmp sgt v10, v5
            brif v11, block1(v10), block3
        block3:
            return
        }",
    );
    assert!(div.is_divergent_branch(b(1)));
    assert!(div.is_divergent(v(10)), "v10 reads v9 of different turns");
    assert!(
        div.is_divergent_branch(b(2)),
        "block2 tests a temporally divergent value"
    );
}

/// The reasons of the divergent values among `0..n`, as text.
fn reasons(div: &Divergence, n: u32) -> Vec<String> {
    (0..n)
        .filter_map(|i| div.value_reason(v(i)).map(|r| format!("v{i}: {r}")))
        .collect()
}

#[test]
fn precision_a_a_block_after_a_divergent_loop_exit_is_no_join() {
    // block2, inside the loop, lets threads leave for block4, which a uniform bypass from
    // block0 also reaches. Threads leave in different iterations (block4 is a divergent
    // exit), but no two disjoint paths from the branch meet at block4 (the path round the
    // back edge goes through block2 again), and the loop passes it one value defined
    // before the branch: v10 and the branch on it stay uniform. v11 carries the induction
    // variable out: temporally divergent. (tests/divergence/loop_divergent_exit.wir.)
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 0
            v3 = iconst.i32 7
            v12 = icmp slt v0, v3
            brif v12, block1(v2), block4(v2, v2)
        block1(v4: i32):
            v5 = icmp slt v4, v0
            brif v5, block2, block5
        block2:
            v14 = icmp slt v4, v1
            v9 = iconst.i32 3
            brif v14, block3, block4(v9, v4)
        block3:
            v6 = iconst.i32 1
            v7 = iadd v4, v6
            jump block1(v7)
        block4(v10: i32, v11: i32):
            v13 = icmp eq v10, v2
            brif v13, block5, block6
        block5:
            return
        block6:
            return
        }",
    );
    assert!(div.is_divergent_branch(b(2)));
    assert!(
        div.is_uniform(v(4)),
        "the induction variable inside the loop"
    );
    assert!(div.is_uniform(v(10)), "one value from the loop, no join");
    assert!(!div.is_divergent_branch(b(4)));
    assert_eq!(
        div.value_reason(v(11)),
        Some(&Reason::Temporal {
            value: v(4),
            header: b(1)
        })
    );
    assert_eq!(div.loops_with_divergent_exit(), &[b(1)]);
    assert_eq!(
        reasons(&div, 15),
        [
            "v1: source: thread_id",
            "v11: temporal divergence of v4 out of loop block1",
            "v14: data dependence on v1"
        ]
    );
}

#[test]
fn precision_a_two_exits_reached_in_one_iteration_still_join() {
    // The same loop, but the divergent branch's two sides leave by different blocks that
    // meet at block4 with different constants: a real join.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 0
            jump block1(v2)
        block1(v4: i32):
            v5 = icmp slt v4, v1
            brif v5, block2, block3
        block2:
            v6 = iconst.i32 1
            v7 = iadd v4, v6
            v8 = icmp slt v7, v0
            brif v8, block1(v7), block4(v6)
        block3:
            v9 = iconst.i32 3
            jump block4(v9)
        block4(v10: i32):
            return
        }",
    );
    assert_eq!(
        div.value_reason(v(10)),
        Some(&Reason::Join {
            branch: b(1),
            join: b(4)
        })
    );
}

#[test]
fn precision_b_an_inner_exit_leaving_both_loops_makes_no_outer_join() {
    // The inner loop (block2, block3) is left divergently for block4, the outer latch, and
    // uniformly for block6, out of both loops: the divergent branch's post-dominator,
    // block6, lies outside the outer loop. Every path from the branch back to the outer
    // header goes through block4, and the inner header is reached again only through the
    // branch: neither header is a join, and the counters and both loops' other branches
    // stay uniform. (tests/divergence/nested_loops.wir.)
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 0
            v3 = iconst.i32 1
            jump block1(v2)
        block1(v4: i32):
            v10 = icmp slt v4, v0
            brif v10, block2(v2), block6
        block2(v5: i32):
            v6 = icmp slt v5, v1
            brif v6, block3, block4
        block3:
            v7 = iadd v5, v3
            v13 = icmp slt v7, v0
            brif v13, block2(v7), block6
        block4:
            v9 = iadd v4, v3
            v12 = iadd v5, v9
            jump block1(v9)
        block6:
            return
        }",
    );
    assert!(div.is_divergent_branch(b(2)));
    assert_eq!(
        reasons(&div, 14),
        [
            "v1: source: thread_id",
            "v6: data dependence on v1",
            "v12: temporal divergence of v5 out of loop block2"
        ]
    );
    assert_eq!(div.divergent_branches(), [b(2)]);
    assert_eq!(div.loops_with_divergent_exit(), &[b(1), b(2)]);
}

#[test]
fn precision_c_equal_incoming_values_are_uniform() {
    // A divergent diamond whose arms pass the same value, equal constants, and different
    // constants: only the last parameter is divergent.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = icmp eq v1, v0
            brif v2, block1, block2
        block1:
            v3 = iconst.i32 5
            v4 = f32const 1.5
            jump block3(v0, v3, v4, v3)
        block2:
            v5 = iconst.i32 5
            v6 = f32const 1.5
            v7 = iconst.i32 6
            jump block3(v0, v5, v6, v7)
        block3(v8: i32, v9: i32, v10: f32, v11: i32):
            return
        }",
    );
    assert!(div.is_uniform(v(8)), "the same value on both edges");
    assert!(div.is_uniform(v(9)), "equal integer constants");
    assert!(div.is_uniform(v(10)), "equal float constants");
    assert_eq!(
        div.value_reason(v(11)),
        Some(&Reason::Join {
            branch: b(0),
            join: b(3)
        })
    );
    // A divergent value passed on every edge stays divergent by data dependence.
    let (_, div) = analyze_text(
        "kernel %k() {
        block0:
            v1 = thread_id x
            v2 = icmp eq v1, v1
            brif v2, block1(v1), block1(v1)
        block1(v3: i32):
            return
        }",
    );
    assert_eq!(div.value_reason(v(3)), Some(&Reason::Data(v(1))));
}

/// An irreducible cycle {block1, block2} entered by a divergent branch at both entries;
/// `v9` is computed inside from uniform values only and tested by block2's branch.
const IRREDUCIBLE: &str = "kernel %k(n: i32) {
    block0(v0: i32):
        v1 = thread_id x
        v2 = iconst.i32 0
        v8 = icmp eq v1, v2
        brif v8, block1, block2
    block1:
        jump block2
    block2:
        v9 = iadd v0, v0
        v7 = icmp slt v9, v0
        brif v7, block1, block3
    block3:
        return
    }";

#[test]
fn soundness_irreducible_cycle_entered_divergently_under_independent_scheduling() {
    let func = parse_function(IRREDUCIBLE).unwrap();
    // Under the IPDOM model the groups of threads run the cycle one after the other:
    // values computed from uniform ones stay uniform, the inner branch too.
    let ipdom = Divergence::compute_for(&func, Reconvergence::Ipdom);
    assert!(ipdom.is_uniform(v(9)));
    assert!(!ipdom.is_divergent_branch(b(2)));
    assert!(ipdom.cycles_assumed_divergent().is_empty());
    // With independent scheduling nothing says when they run it together again: every
    // value of the cycle is divergent, and so is the branch it tests.
    let independent = Divergence::compute_for(&func, Reconvergence::Independent);
    assert_eq!(
        independent.value_reason(v(9)),
        Some(&Reason::Irreducible {
            header: b(1),
            branch: b(0)
        })
    );
    assert!(independent.is_divergent_branch(b(2)));
    assert_eq!(independent.cycles_assumed_divergent(), &[b(1)]);
    // Entered uniformly, the cycle is uniform under both models.
    let uniform = IRREDUCIBLE.replace("thread_id x", "block_id x");
    let func = parse_function(&uniform).unwrap();
    for model in [Reconvergence::Ipdom, Reconvergence::Independent] {
        let div = Divergence::compute_for(&func, model);
        assert!(div.divergent_values().is_empty(), "{model:?}");
    }
}

#[test]
fn soundness_irreducible_cycle_with_a_divergent_branch_inside() {
    // The divergent branch in block2 is inside the irreducible cycle {1, 2, 3}, entered
    // uniformly; its paths meet at block1, which the cycle's header (block1) does not
    // strictly dominate, so under independent scheduling the cycle is divergent. A
    // reducible loop around a divergent branch is never assumed divergent as a whole
    // (see the loop tests above).
    let text = "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = icmp slt v0, v0
            brif v2, block1, block2
        block1:
            v3 = iadd v0, v0
            jump block2
        block2:
            v4 = icmp slt v1, v0
            brif v4, block3, block1
        block3:
            v5 = iadd v0, v0
            v6 = icmp eq v5, v0
            brif v6, block1, block4
        block4:
            return
        }";
    let func = parse_function(text).unwrap();
    let div = Divergence::compute_for(&func, Reconvergence::Independent);
    assert_eq!(div.cycles_assumed_divergent(), &[b(1)]);
    assert!(div.is_divergent(v(5)));
    assert!(div.is_divergent_branch(b(3)));
    let div = Divergence::compute_for(&func, Reconvergence::Ipdom);
    assert!(div.cycles_assumed_divergent().is_empty());
}

#[test]
fn the_cycle_order_keeps_loops_contiguous() {
    // block1's loop {1, 2} is exited to block3, which block0 also reaches; block3 comes
    // after the whole loop whatever the reverse post-order says.
    let func = parse_function(
        "kernel %k(n: i32) {
        block0(v0: i32):
            brif v0, block3, block1
        block1:
            brif v0, block3, block2
        block2:
            jump block1
        block3:
            return
        }",
    )
    .unwrap();
    let cfg = ControlFlowGraph::compute(&func);
    let domtree = DominatorTree::compute(&cfg);
    let loops = LoopForest::compute(&cfg);
    let order = CycleOrder::compute(&cfg, &domtree, &loops);
    assert_eq!(order.blocks(), &[b(0), b(1), b(2), b(3)]);
}

#[test]
fn the_text_format() {
    let (func, div) = analyze_text(&DIAMOND.replace("SOURCE", "thread_id x"));
    assert_eq!(
        div.display(&func).to_string(),
        "kernel %k (reconvergence: ipdom)
block0:
  v0 uniform
  v1 divergent (source: thread_id)
  v2 uniform
  v8 divergent (data dependence on v1)
  brif divergent (data dependence on v8)
block1:
  v3 uniform
block2:
  v4 uniform
block3:
  v5 divergent (join of branch block0 at block3)
  v6 divergent (data dependence on v5)
  v7 uniform
loops with a divergent exit: none
cycles assumed divergent: none
values: 4 divergent of 9; branches: 1 divergent of 1
"
    );
}

#[test]
fn a_value_leaving_by_different_exits_in_different_iterations_is_divergent() {
    // The case LLVM's divergent-cycle-exit-phi.ll records as a known bug: threads leave
    // the loop {1, 2, 3, 5} at block2 (divergently) or, in a later iteration, at block3
    // (uniformly), bringing different constants defined before the loop to block4. Only
    // the path back through the header reaches block3, so block4 is a divergent cycle
    // exit, not a join; its parameter still differs between threads.
    let (_, div) = analyze_text(
        "kernel %k(n: i32) {
        block0(v0: i32):
            v1 = thread_id x
            v2 = iconst.i32 0
            v3 = iconst.i32 1
            v4 = iconst.i32 2
            jump block1(v2)
        block1(v5: i32):
            v6 = icmp slt v5, v0
            brif v6, block2, block3
        block2:
            v7 = icmp slt v5, v1
            brif v7, block4(v3), block5
        block3:
            v10 = icmp eq v5, v0
            brif v10, block4(v4), block5
        block5:
            v8 = iadd v5, v3
            jump block1(v8)
        block4(v9: i32):
            return
        }",
    );
    assert!(div.is_divergent_branch(b(2)));
    assert!(
        !div.is_divergent_branch(b(1)),
        "the header's branch is uniform"
    );
    assert_eq!(
        div.value_reason(v(9)),
        Some(&Reason::Join {
            branch: b(2),
            join: b(4)
        })
    );
}
