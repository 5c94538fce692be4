//! The DARM benchmark kernels (`tests/corpus/darm_*.wir`) compute what their CPU
//! references in `darm/mod.rs` compute: on the reference interpreter, and compiled for
//! the SIMT target and emulated at warp widths 1, 7, 32 and 64, each at its launch's block
//! size and at a second one (the tile size of every kernel is its block size).

use crate::common;
use crate::darm;

use common::compile;
use warplift_emu::{run_functional, MachineConfig, Program};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::{GlobalMemory, Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;
use warplift_ir::Function;

/// The kernel of `tests/corpus/NAME.wir` with its launch, the block size set to `block`.
fn load(name: &str, block: Option<u32>) -> (Function, PreparedLaunch) {
    let path = warplift_filetests::repo_root()
        .join("tests/corpus")
        .join(format!("{name}.wir"));
    let text = std::fs::read_to_string(&path).unwrap();
    let funcs = parse_functions(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut launch = Launch::from_file(&Launch::path_next_to(&path)).unwrap();
    if let Some(b) = block {
        launch.block[0] = b;
    }
    let func = launch.select_kernel(&funcs).unwrap().clone();
    let prepared = launch.prepare(&func).unwrap();
    (func, prepared)
}

/// The value of scalar parameter `i` (in signature order) as an `i32`.
fn arg_i32(p: &PreparedLaunch, i: usize) -> i32 {
    p.args[i] as u32 as i32
}

/// What one kernel's reference says: each buffer's expected contents, by name.
type Expected = Vec<(&'static str, Vec<u8>)>;

fn bytes_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn bytes_i16(v: &[i16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The CPU reference's memory for kernel `name` from the launch's initial memory.
fn reference(name: &str, p: &PreparedLaunch) -> Expected {
    let m = &p.memory;
    let block = p.block[0];
    let i32s = |b: &str| m.read_buffer::<i32>(b).unwrap();
    if let Some(rest) = name.strip_prefix("darm_sb") {
        let pattern: u32 = rest[..1].parse().unwrap();
        let random = rest.ends_with("_r");
        let s = darm::Sb {
            a: i32s("a"),
            b: i32s("b"),
            p: i32s("p"),
            q: i32s("q"),
        };
        let (n, iters) = (arg_i32(p, 4) as u32, arg_i32(p, 5));
        let s = darm::sb(pattern, random, s, n, iters, block);
        return vec![
            ("a", bytes_i32(&s.a)),
            ("b", bytes_i32(&s.b)),
            ("p", bytes_i32(&s.p)),
            ("q", bytes_i32(&s.q)),
        ];
    }
    match name {
        "darm_bit" | "darm_bit_llvm" | "darm_ms" | "darm_pcm" => {
            let n = arg_i32(p, 1) as u32;
            vec![(
                "data",
                bytes_i32(&darm::sort_buckets(i32s("data"), n, block)),
            )]
        }
        "darm_lud" => {
            let dim = arg_i32(p, 1) as u32;
            let out = darm::lud(m.read_buffer::<f32>("m").unwrap(), dim, block);
            vec![("m", bytes_f32(&out))]
        }
        "darm_nqu" => {
            let n = arg_i32(p, 1) as u32;
            let mut out = darm::nqu(n);
            out.resize(i32s("results").len(), 0);
            vec![("results", bytes_i32(&out))]
        }
        "darm_srad" => {
            let (rows, cols) = (arg_i32(p, 2) as u32, arg_i32(p, 3) as u32);
            let q0sqr = f32::from_bits(p.args[4] as u32);
            let j = m.read_buffer::<f32>("J").unwrap();
            let c = m.read_buffer::<f32>("C").unwrap();
            let out = darm::srad(&j, c, rows, cols, q0sqr, block);
            vec![("J", bytes_f32(&j)), ("C", bytes_f32(&out))]
        }
        "darm_dct" => {
            let (stride, rows) = (arg_i32(p, 2) as u32, arg_i32(p, 3) as u32);
            let plane = m.read_buffer::<i16>("plane").unwrap();
            let q = m.read_buffer::<i16>("q").unwrap();
            let out = darm::dct(plane, &q, stride, rows, block);
            vec![("plane", bytes_i16(&out)), ("q", bytes_i16(&q))]
        }
        _ => panic!("no reference for {name}"),
    }
}

/// Asserts that `memory` holds what the reference expects.
fn check(name: &str, what: &str, memory: &GlobalMemory, expected: &Expected) {
    for (buffer, bytes) in expected {
        let actual = memory
            .buffers
            .iter()
            .find(|b| b.name == *buffer)
            .unwrap_or_else(|| panic!("{name}: no buffer {buffer}"));
        if actual.bytes != *bytes {
            let differ = actual
                .bytes
                .iter()
                .zip(bytes)
                .filter(|(a, b)| a != b)
                .count();
            panic!(
                "{name} ({what}): buffer {buffer} differs from the CPU reference in {differ} bytes"
            );
        }
    }
}

/// Runs kernel `name` at its launch's block size and at `other_block`: the interpreter
/// and the emulator at four warp widths must both match the CPU reference, and the
/// reference must change memory (a kernel that does nothing fails).
fn check_kernel(name: &str, other_block: u32) {
    for block in [None, Some(other_block)] {
        let (func, prepared) = load(name, block);
        let expected = reference(name, &prepared);
        let before: Vec<_> = prepared.memory.buffers.iter().map(|b| &b.bytes).collect();
        assert!(
            expected.iter().any(|(b, bytes)| {
                before[prepared
                    .memory
                    .buffers
                    .iter()
                    .position(|x| x.name == *b)
                    .unwrap()]
                    != bytes
            }),
            "{name}: the reference leaves memory unchanged"
        );
        let block = prepared.block[0];

        let mut interpreted = prepared.clone();
        let config = InterpConfig {
            warp_width: 32,
            ..Default::default()
        };
        interp::run(&func, &mut interpreted, &config)
            .unwrap_or_else(|e| panic!("{name}: interpreter: {e}"));
        check(
            name,
            &format!("interpreter, block {block}"),
            &interpreted.memory,
            &expected,
        );

        let kernel = compile(&func, &[]);
        let prog =
            Program::from_code(&warplift_codegen::isa::simt::encode(&kernel.mir).unwrap()).unwrap();
        for width in [1, 7, 32, 64] {
            let config = MachineConfig::builder().warp_width(width).build().unwrap();
            let mut emulated = prepared.clone();
            run_functional(&prog, &mut emulated, &config)
                .unwrap_or_else(|e| panic!("{name}: emulator at width {width}: {e}"));
            check(
                name,
                &format!("emulator, width {width}, block {block}"),
                &emulated.memory,
                &expected,
            );
        }
    }
}

#[test]
fn sb1() {
    check_kernel("darm_sb1", 64);
    check_kernel("darm_sb1_r", 64);
}

#[test]
fn sb2() {
    check_kernel("darm_sb2", 64);
    check_kernel("darm_sb2_r", 64);
}

#[test]
fn sb3() {
    check_kernel("darm_sb3", 64);
    check_kernel("darm_sb3_r", 64);
}

#[test]
fn sb4() {
    check_kernel("darm_sb4", 64);
    check_kernel("darm_sb4_r", 64);
}

#[test]
fn bitonic_sort() {
    check_kernel("darm_bit", 64);
    check_kernel("darm_bit_llvm", 64);
}

#[test]
fn partition_and_concurrent_merge() {
    check_kernel("darm_pcm", 64);
}

#[test]
fn merge_sort() {
    check_kernel("darm_ms", 64);
}

#[test]
fn lud_perimeter() {
    check_kernel("darm_lud", 32);
}

#[test]
fn n_queens() {
    check_kernel("darm_nqu", 64);
}

#[test]
fn srad() {
    check_kernel("darm_srad", 32);
}

#[test]
fn dct_quantization() {
    check_kernel("darm_dct", 64);
}

/// The N-Queens reference itself: 4 solutions of 6 queens, 92 of 8.
#[test]
fn n_queens_reference_counts_the_known_solutions() {
    assert_eq!(darm::nqu(6).iter().sum::<i32>(), 4);
    assert_eq!(darm::nqu(8).iter().sum::<i32>(), 92);
}
