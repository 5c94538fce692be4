//! Pins the exact timing of the emulator: for every corpus kernel, at several warp widths,
//! both scheduler policies and a small and the default machine, the statistics (every
//! field), the global memory and the trace must hash to the values recorded in
//! `tests/golden/stats.txt`.
//!
//! The emulator's speed work must not move a single cycle or stall; this file is what
//! proves it. A deliberate change of the timing model regenerates the file with
//! `WARPLIFT_BLESS=1 cargo test -p warplift-emu --test all stats_golden::`, and the diff shows
//! every run it changed.

use std::fmt::Write as _;
use std::path::Path;
use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::{run_traced, MachineConfig, Program, SchedulerPolicy, Trace};
use warplift_filetests::{bless_requested, Failure, Walk};

/// A register file small enough that most corpus kernels spill (local memory traffic).
const TINY: RegisterFile = RegisterFile {
    b32: 4,
    b64: 3,
    pred: 2,
};

/// 64-bit FNV-1a: a stable digest, independent of the standard library's hasher.
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0100_0000_01b3);
    }
}

/// One line per run: the headline numbers readable, everything else in the digest.
fn golden_lines() -> String {
    let lines = Walk::corpus().with_launch().run(|file| {
        let name = file.stem();
        let funcs = file.functions()?;
        let launch = file.launch()?;
        let func = launch.select_kernel(&funcs).unwrap();
        let prepared = launch.prepare(func).unwrap();
        let mut out = String::new();
        let mir = lower(func).unwrap();
        for (regs_name, regs) in [("max", RegisterFile::MAX), ("tiny", TINY)] {
            let allocated = allocate(&mir, &regs, &ReservationRequest::none()).unwrap();
            let prog =
                Program::from_code(&warplift_codegen::isa::simt::encode(&allocated.func).unwrap())
                    .unwrap();
            for width in [1, 7, 32, 64] {
                for (sched_name, sched) in
                    [("gto", SchedulerPolicy::Gto), ("lrr", SchedulerPolicy::Lrr)]
                {
                    // The default machine, and a small one (one SM, two block slots) whose
                    // blocks queue.
                    for (machine, sms, blocks) in [("default", 4, 32), ("small", 1, 2)] {
                        let Ok(config) = MachineConfig::builder()
                            .warp_width(width)
                            .scheduler(sched)
                            .sms(sms)
                            .block_slots(blocks)
                            .build()
                        else {
                            continue;
                        };
                        let mut memory = prepared.clone();
                        let mut trace = Trace::new();
                        let result = run_traced(&prog, &mut memory, &config, &mut trace);
                        let mut h = 0xcbf2_9ce4_8422_2325u64;
                        let headline = match &result {
                            Ok(stats) => {
                                fnv(&mut h, &serde_json::to_vec(stats).unwrap());
                                format!(
                                    "cycles={} warp_insts={} stalls={}",
                                    stats.cycles,
                                    stats.warp_instructions,
                                    stats.stalls.total()
                                )
                            }
                            Err(e) => {
                                fnv(&mut h, e.to_string().as_bytes());
                                "error".to_string()
                            }
                        };
                        for b in &memory.memory.buffers {
                            fnv(&mut h, &b.bytes);
                        }
                        fnv(&mut h, trace.to_json().to_string().as_bytes());
                        writeln!(
                            out,
                            "{name} {regs_name} w{width} {sched_name} {machine}: {headline} \
                             digest={h:016x}"
                        )
                        .unwrap();
                    }
                }
            }
        }
        Ok::<_, Failure>(out)
    });
    lines.concat()
}

#[test]
fn timing_statistics_memory_and_traces_match_the_recorded_ones() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/stats.txt");
    let got = golden_lines();
    if bless_requested() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).expect("tests/golden/stats.txt exists");
    let mut bad = 0;
    for (g, w) in got.lines().zip(want.lines()) {
        if g != w {
            bad += 1;
            if bad <= 20 {
                eprintln!("want {w}\n got {g}");
            }
        }
    }
    assert_eq!(got.lines().count(), want.lines().count(), "number of runs");
    assert_eq!(bad, 0, "{bad} runs differ from tests/golden/stats.txt");
}
