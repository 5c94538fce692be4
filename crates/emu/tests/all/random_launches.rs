//! Randomized differential test (fixed seeds): launches drawn at random — reseeded random
//! buffers for the corpus kernels, and random grid and block shapes, sizes and contents
//! for a few kernels written to accept any shape — run on the emulator at warp widths 1,
//! 7, 32 and 64, compiled once through a SIMT object with the full register file and once
//! with a register file small enough to spill, leave the reference interpreter's memory
//! (and fault where it faults).

use warplift_codegen::isa::simt::load_object;
use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{run, MachineConfig, Program};
use warplift_filetests::{Failure, Walk};
use warplift_ir::interp::InterpConfig;
use warplift_ir::launch::{BufferInit, Launch};
use warplift_ir::parser::parse_functions;
use warplift_ir::Function;

/// A register file small enough that most kernels spill.
const TINY: RegisterFile = RegisterFile {
    b32: 4,
    b64: 3,
    pred: 2,
};

const WIDTHS: [u32; 4] = [1, 7, 32, 64];

/// SplitMix64: a tiny, fixed pseudo-random sequence (no dependency needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
}

/// The two programs of a kernel: from its SIMT object (full register file) and from
/// machine IR allocated with [`TINY`].
fn programs(func: &Function) -> [Program; 2] {
    let isa = lookup_by_name("simt", Settings::default()).unwrap();
    let module = Context::new()
        .compile_module(core::slice::from_ref(func), isa.as_ref(), Some("k.wir"))
        .unwrap_or_else(|e| panic!("%{}: {e}", func.name));
    let object = load_object(&module.code).unwrap();
    let full = Program::from_loaded(&object.kernels[0], &object.source_name).unwrap();
    let mir = lower(func).unwrap();
    let tiny = allocate(&mir, &TINY, &ReservationRequest::none()).unwrap();
    [
        full,
        Program::from_code(&warplift_codegen::isa::simt::encode(&tiny.func).unwrap()).unwrap(),
    ]
}

/// Runs `launch` on the interpreter and on both programs at every width; returns the runs.
/// With `must_succeed`, the interpreter must not fault (so that memory is compared).
fn check(
    what: &str,
    func: &Function,
    programs: &[Program; 2],
    launch: &Launch,
    must_succeed: bool,
) -> usize {
    let prepared = launch
        .prepare(func)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut runs = 0;
    for width in WIDTHS {
        let mut reference = prepared.clone();
        let config = InterpConfig {
            warp_width: width,
            ..Default::default()
        };
        let interp = warplift_ir::interp::run(func, &mut reference, &config);
        if must_succeed {
            if let Err(e) = &interp {
                panic!("{what}: the interpreter faults: {e}");
            }
        }
        // Room for a block of up to 210 one-thread warps.
        let machine = MachineConfig::builder()
            .warp_width(width)
            .warp_slots(256)
            .build()
            .unwrap();
        for (p, prog) in programs.iter().enumerate() {
            let mut emulated = prepared.clone();
            let result = run(prog, &mut emulated, &machine);
            match (&interp, &result) {
                (Ok(_), Ok(_)) => {
                    for (a, b) in reference
                        .memory
                        .buffers
                        .iter()
                        .zip(&emulated.memory.buffers)
                    {
                        assert!(
                            a.bytes == b.bytes,
                            "{what}: buffer {} differs at width {width} (program {p}), \
                             grid {:?} block {:?}\ninterpreter: {}\nemulator: {}",
                            a.name,
                            launch.grid,
                            launch.block,
                            reference.memory.results_json(),
                            emulated.memory.results_json()
                        );
                    }
                }
                (Err(_), Err(_)) => {}
                (Ok(_), Err(e)) => panic!("{what}: width {width} (program {p}): {e}"),
                (Err(e), Ok(_)) => panic!("{what}: the interpreter faults ({e}), the emulator not"),
            }
            runs += 1;
        }
    }
    runs
}

#[test]
fn corpus_kernels_with_reseeded_random_buffers() {
    let runs: usize = Walk::corpus()
        .with_launch()
        .run(|file| {
            let name = file.name.clone();
            let funcs = file.functions()?;
            let base = file.launch()?;
            if !base
                .buffers
                .values()
                .any(|b| matches!(b.init, BufferInit::Random { .. }))
            {
                return Ok(0);
            }
            // Each kernel's own sequence of seeds (from its name), so that the kernels run in
            // parallel and a kernel added to the corpus changes no other kernel's buffers.
            let mut rng = Rng(name.bytes().fold(0x5eed_0001, |h: u64, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            }));
            let func = base
                .select_kernel(&funcs)
                .map_err(|e| Failure::new(e.to_string()))?;
            let programs = programs(func);
            let mut runs = 0;
            for _ in 0..3 {
                let mut launch = base.clone();
                // The results no longer match the file's expectations; the interpreter's
                // memory is the reference.
                launch.expect.clear();
                for spec in launch.buffers.values_mut() {
                    if let BufferInit::Random { seed, .. } = &mut spec.init {
                        *seed = rng.next();
                    }
                }
                runs += check(&name, func, &programs, &launch, false);
            }
            Ok::<_, Failure>(runs)
        })
        .into_iter()
        .sum();
    assert!(runs >= 100, "only {runs} runs");
}

/// Kernels that accept any grid and block shape (2-D blocks, 1-D or 2-D grids).
const SHAPELESS: &str = "
; Collatz steps of each input (at most 100): a data-dependent loop with a divergent
; branch in its body, behind a divergent bounds check.
kernel %collatz(input: i64, out: i64, n: i32) {
block0(v0: i64, v1: i64, v2: i32):
    v3 = thread_id x
    v4 = thread_id y
    v5 = block_dim x
    v6 = block_dim y
    v7 = block_id x
    v8 = imul v4, v5
    v9 = iadd v3, v8
    v10 = imul v5, v6
    v11 = imul v7, v10
    v12 = iadd v11, v9
    v13 = icmp ult v12, v2
    brif v13, block1, block7
block1:
    v14 = uextend.i64 v12
    v15 = iconst.i64 2
    v16 = ishl v14, v15
    v17 = iadd v0, v16
    v18 = load.i32 global v17
    v19 = iconst.i32 0
    jump block2(v18, v19)
block2(v20: i32, v21: i32):
    v22 = iconst.i32 1
    v23 = icmp ule v20, v22
    v24 = iconst.i32 100
    v25 = icmp uge v21, v24
    v26 = bor v23, v25
    brif v26, block6, block3
block3:
    v27 = band v20, v22
    v28 = icmp eq v27, v19
    brif v28, block4, block5
block4:
    v29 = ushr v20, v22
    v30 = iadd v21, v22
    jump block2(v29, v30)
block5:
    v31 = iconst.i32 3
    v32 = imul v20, v31
    v33 = iadd v32, v22
    v34 = iadd v21, v22
    jump block2(v33, v34)
block6:
    v35 = iadd v1, v16
    store global v21, v35
    jump block7
block7:
    return
}

; Each block reverses its inputs through shared memory (a barrier between the store and
; the load), then mixes in the lane id on odd lanes only.
kernel %shared_reverse(input: i64, out: i64) {
    smem0 = shared 4096, align 4

block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = thread_id y
    v4 = block_dim x
    v5 = block_dim y
    v6 = block_id x
    v7 = block_id y
    v8 = grid_dim x
    v9 = imul v3, v4
    v10 = iadd v2, v9
    v11 = imul v4, v5
    v12 = imul v7, v8
    v13 = iadd v6, v12
    v14 = imul v13, v11
    v15 = iadd v14, v10
    v16 = uextend.i64 v15
    v17 = iconst.i64 2
    v18 = ishl v16, v17
    v19 = iadd v0, v18
    v20 = load.i32 global v19
    v21 = shared_addr smem0
    v22 = iconst.i32 2
    v23 = ishl v10, v22
    v24 = iadd v21, v23
    store shared v20, v24
    barrier
    v25 = iconst.i32 1
    v26 = isub v11, v25
    v27 = isub v26, v10
    v28 = ishl v27, v22
    v29 = iadd v21, v28
    v30 = load.i32 shared v29
    v31 = lane_id
    v32 = iconst.i32 3
    v33 = imul v30, v32
    v34 = band v31, v25
    v35 = iconst.i32 0
    v36 = icmp ne v34, v35
    brif v36, block1, block2(v33)
block1:
    v37 = bxor v33, v31
    v38 = iadd v37, v10
    jump block2(v38)
block2(v39: i32):
    v40 = iadd v1, v18
    store global v39, v40
    return
}

; A grid-stride loop adding every input's low 4 bits into a 16-bin histogram with atomics.
kernel %histogram(input: i64, hist: i64, n: i32) {
block0(v0: i64, v1: i64, v2: i32):
    v3 = thread_id x
    v4 = thread_id y
    v5 = block_dim x
    v6 = block_dim y
    v7 = block_id x
    v8 = grid_dim x
    v9 = imul v4, v5
    v10 = iadd v3, v9
    v11 = imul v5, v6
    v12 = imul v7, v11
    v13 = iadd v12, v10
    v14 = imul v8, v11
    jump block1(v13)
block1(v15: i32):
    v16 = icmp ult v15, v2
    brif v16, block2, block3
block2:
    v17 = uextend.i64 v15
    v18 = iconst.i64 2
    v19 = ishl v17, v18
    v20 = iadd v0, v19
    v21 = load.i32 global v20
    v22 = iconst.i32 15
    v23 = band v21, v22
    v24 = uextend.i64 v23
    v25 = ishl v24, v18
    v26 = iadd v1, v25
    v27 = iconst.i32 1
    v28 = atomic_rmw add global v26, v27
    v29 = iadd v15, v14
    jump block1(v29)
block3:
    return
}
";

#[test]
fn shapeless_kernels_at_random_grid_and_block_shapes() {
    let funcs = parse_functions(SHAPELESS).unwrap();
    for f in &funcs {
        warplift_ir::verifier::verify_function(f).unwrap_or_else(|e| panic!("{e:?}"));
    }
    let mut rng = Rng(0x5eed_0002);
    let mut runs = 0;
    for func in &funcs {
        let programs = programs(func);
        for _ in 0..4 {
            let bx = rng.range(1, 70);
            let by = rng.range(1, 3);
            let gx = rng.range(1, 4);
            let gy = if func.name == "shared_reverse" {
                rng.range(1, 2)
            } else {
                1
            };
            let threads = bx * by * gx * gy;
            let mut launch = Launch::default();
            launch.set_grid(&format!("{gx},{gy}")).unwrap();
            launch.set_block(&format!("{bx},{by}")).unwrap();
            let seed = rng.next();
            match func.name.as_str() {
                "collatz" => {
                    // Some threads beyond n, and some inputs beyond the step limit.
                    let n = rng.range(1, threads);
                    launch.add_arg(&format!("n={n}")).unwrap();
                    let spec = format!("input=i32[{threads}]:random:{seed}:1:2000");
                    launch.add_buffer(&spec).unwrap();
                    launch
                        .add_buffer(&format!("out=i32[{threads}]:zeros"))
                        .unwrap();
                }
                "shared_reverse" => {
                    let spec = format!("input=i32[{threads}]:random:{seed}");
                    launch.add_buffer(&spec).unwrap();
                    launch
                        .add_buffer(&format!("out=i32[{threads}]:zeros"))
                        .unwrap();
                }
                _ => {
                    let n = rng.range(0, 3 * threads);
                    launch.add_arg(&format!("n={n}")).unwrap();
                    let len = n.max(1);
                    launch
                        .add_buffer(&format!("input=i32[{len}]:random:{seed}"))
                        .unwrap();
                    launch.add_buffer("hist=i32[16]:zeros").unwrap();
                }
            }
            runs += check(&func.name, func, &programs, &launch, true);
        }
    }
    assert_eq!(runs, 3 * 4 * WIDTHS.len() * 2);
}
