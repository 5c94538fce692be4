//! The kernel corpus: every `tests/corpus/NAME.wir` with its `NAME.launch.toml`.
//!
//! Each kernel must parse, verify, survive a print/parse round trip unchanged, and run in
//! the reference interpreter to the results it is known to produce. Those results come
//! from two independent places: the `[expect]` table of the launch file, where the values
//! are easy to write down, and the Rust references in [`references`], which recompute
//! what each kernel computes, per thread, from the buffers' initial contents, without
//! the interpreter. Every kernel must be checked by at least one of them.
//!
//! The corpus is also a coverage contract: [`corpus_covers_every_opcode`] and its siblings
//! fail when some opcode, condition code, atomic operation or memory access type is used by
//! no kernel, so a new opcode cannot land without a kernel exercising it.
//!
//! Race-free kernels must not depend on the warp width unless they read `lane_id`, so
//! each kernel also runs with warps of 1, 7, 32 and 64 threads; the kernels that use
//! `lane_id` get the warp width passed to their reference.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use warplift::ir::interp::{self, InterpConfig};
use warplift::ir::launch::{GlobalMemory, Launch, PreparedLaunch};
use warplift::ir::parser::parse_functions;
use warplift::ir::verifier::verify_function;
use warplift::ir::{
    AddrSpace, AtomicRmwOp, FloatCC, Function, InstructionData, IntCC, Opcode, Type,
};
use warplift_filetests::Walk;

/// The warp widths every kernel runs with.
const WARP_SIZES: [u32; 4] = [1, 7, 32, 64];

/// The fewest kernels the corpus may hold.
const MIN_KERNELS: usize = 28;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The `.wir` files of the corpus, sorted by name.
fn kernel_files() -> Vec<PathBuf> {
    Walk::corpus().at_least(MIN_KERNELS).files()
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One corpus kernel, parsed, with its launch description.
struct Case {
    name: String,
    text: String,
    funcs: Vec<Function>,
    launch: Launch,
}

impl Case {
    fn load(path: &Path) -> Result<Case, String> {
        let name = stem(path);
        let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        let funcs = parse_functions(&text).map_err(|e| format!("{name}.wir:{e}"))?;
        let launch_path = Launch::path_next_to(path);
        let launch = Launch::from_file(&launch_path).map_err(|e| format!("{name}: {e}"))?;
        Ok(Case {
            name,
            text,
            funcs,
            launch,
        })
    }

    fn func(&self) -> Result<&Function, String> {
        self.launch
            .select_kernel(&self.funcs)
            .map_err(|e| format!("{}: {e}", self.name))
    }

    fn prepare(&self) -> Result<PreparedLaunch, String> {
        self.launch
            .prepare(self.func()?)
            .map_err(|e| format!("{}: {e}", self.name))
    }

    /// Runs the kernel with warps of `warp_width`; returns the memory before and after.
    fn run(&self, warp_width: u32) -> Result<(GlobalMemory, GlobalMemory), String> {
        let func = self.func()?;
        let mut prepared = self.prepare()?;
        let before = prepared.memory.clone();
        let config = InterpConfig {
            warp_width,
            ..InterpConfig::default()
        };
        interp::run(func, &mut prepared, &config)
            .map_err(|e| format!("{} (warp width {warp_width}): {e}", self.name))?;
        Ok((before, prepared.memory))
    }
}

/// Every corpus kernel, loaded (in parallel; a file that fails to load fails the test).
fn load_all() -> Vec<Case> {
    Walk::corpus()
        .at_least(MIN_KERNELS)
        .run(|file| Case::load(&file.path))
}

#[test]
fn corpus_is_large_enough_and_every_kernel_has_a_launch_file() {
    let files = kernel_files();
    assert!(
        files.len() >= MIN_KERNELS,
        "the corpus holds {} kernels, fewer than {MIN_KERNELS}",
        files.len()
    );
    for f in &files {
        let launch = Launch::path_next_to(f);
        assert!(
            launch.exists(),
            "{} has no {}",
            f.display(),
            launch.display()
        );
    }
    // And no launch file without its kernel.
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(kernel) = name.strip_suffix(".launch.toml") {
            assert!(
                corpus_dir().join(format!("{kernel}.wir")).exists(),
                "{name} has no kernel"
            );
        }
    }
}

#[test]
fn corpus_parses_and_verifies() {
    let mut errors = Vec::new();
    for case in load_all() {
        for func in &case.funcs {
            if let Err(e) = verify_function(func) {
                errors.push(format!("{}.wir: kernel %{}:\n{e}", case.name, func.name));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn corpus_round_trips_through_the_printer() {
    for case in load_all() {
        let printed: String = case
            .funcs
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        let reparsed = parse_functions(&printed).unwrap_or_else(|e| {
            panic!("{}: printed text does not parse: {e}\n{printed}", case.name)
        });
        assert_eq!(reparsed.len(), case.funcs.len(), "{}", case.name);
        for (a, b) in case.funcs.iter().zip(&reparsed) {
            assert!(
                a.structurally_eq(b),
                "{}: kernel %{} changed in a print/parse round trip:\n{a}\n---\n{b}",
                case.name,
                a.name
            );
            // Printing is deterministic, so a second round prints the same text.
            assert_eq!(a.to_string(), b.to_string(), "{}", case.name);
        }
        // The source text itself must mention every kernel the parser found.
        for f in &case.funcs {
            assert!(
                case.text.contains(&format!("%{}(", f.name)),
                "{}",
                case.name
            );
        }
    }
}

/// The kernels whose results depend on the warp width.
fn uses_lane_id(func: &Function) -> bool {
    insts(func).any(|d| d.opcode() == Opcode::LaneId)
}

#[test]
fn corpus_runs_to_the_expected_results() {
    let refs = references::all();
    Walk::corpus().at_least(MIN_KERNELS).run(|file| {
        let case = Case::load(&file.path)?;
        let mut failures = Vec::new();
        let has_expect = !case.launch.expect.is_empty();
        let reference = refs.get(case.name.as_str());
        if !has_expect && reference.is_none() {
            failures.push(format!(
                "{}: neither [expect] in its launch file nor a Rust reference",
                case.name
            ));
            return Err(failures.join("\n"));
        }
        let func = case.func()?;
        let lane_dependent = uses_lane_id(func);
        let mut baseline: Option<GlobalMemory> = None;
        for ws in WARP_SIZES {
            let (before, after) = match case.run(ws) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            if let Err(e) = after.check_expectations() {
                failures.push(format!("{} (warp width {ws}): [expect]:\n{e}", case.name));
            }
            if let Some(check) = reference {
                let mut mem = Mem::new(&before, &after);
                check(&mut mem, ws);
                for f in mem.failures {
                    failures.push(format!("{} (warp width {ws}): reference: {f}", case.name));
                }
            }
            if !lane_dependent {
                match &baseline {
                    None => baseline = Some(after),
                    Some(base) => {
                        for (a, b) in base.buffers.iter().zip(&after.buffers) {
                            if a.bytes != b.bytes {
                                failures.push(format!(
                                    "{}: buffer {} differs between warp widths {} and {ws}",
                                    case.name, a.name, WARP_SIZES[0]
                                ));
                            }
                        }
                    }
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("\n"))
        }
    });
}

fn insts(func: &Function) -> impl Iterator<Item = &InstructionData> + '_ {
    func.layout
        .blocks()
        .iter()
        .flat_map(move |&b| func.layout.block_insts(b).iter())
        .map(move |&i| func.inst(i))
}

/// Every instruction of every kernel of the corpus, with its result type.
fn corpus_insts() -> Vec<(InstructionData, Option<Type>)> {
    let mut all = Vec::new();
    for case in load_all() {
        for func in &case.funcs {
            for &b in func.layout.blocks() {
                for &i in func.layout.block_insts(b) {
                    let ty = func.dfg.inst_result(i).map(|v| func.dfg.value_type(v));
                    all.push((func.inst(i).clone(), ty));
                }
            }
        }
    }
    all
}

fn missing<T: Ord + core::fmt::Debug>(
    want: impl IntoIterator<Item = T>,
    have: &BTreeSet<T>,
) -> Vec<T> {
    want.into_iter().filter(|x| !have.contains(x)).collect()
}

#[test]
fn corpus_covers_every_opcode() {
    let have: BTreeSet<Opcode> = corpus_insts().iter().map(|(d, _)| d.opcode()).collect();
    let gaps = missing(Opcode::ALL.iter().copied(), &have);
    assert!(gaps.is_empty(), "no corpus kernel uses {gaps:?}");
}

#[test]
fn corpus_covers_every_condition_code_and_atomic_operation() {
    let all = corpus_insts();
    let int: BTreeSet<String> = all
        .iter()
        .filter_map(|(d, _)| match d {
            InstructionData::IntCompare { cond, .. } => Some(cond.to_string()),
            _ => None,
        })
        .collect();
    let float: BTreeSet<String> = all
        .iter()
        .filter_map(|(d, _)| match d {
            InstructionData::FloatCompare { cond, .. } => Some(cond.to_string()),
            _ => None,
        })
        .collect();
    let gaps = missing(IntCC::ALL.iter().map(|c| c.to_string()), &int);
    assert!(gaps.is_empty(), "no corpus kernel uses icmp {gaps:?}");
    let gaps = missing(FloatCC::ALL.iter().map(|c| c.to_string()), &float);
    assert!(gaps.is_empty(), "no corpus kernel uses fcmp {gaps:?}");

    // Every atomic_rmw operation in both spaces that have atomics, at both widths.
    let rmw: BTreeSet<(String, String, Type)> = all
        .iter()
        .filter_map(|(d, ty)| match d {
            InstructionData::AtomicRmw { op, space, .. } => {
                Some((op.to_string(), space.to_string(), (*ty)?))
            }
            _ => None,
        })
        .collect();
    let want = AtomicRmwOp::ALL.iter().flat_map(|op| {
        [AddrSpace::Global, AddrSpace::Shared]
            .into_iter()
            .flat_map(move |space| {
                [Type::I32, Type::I64]
                    .into_iter()
                    .map(move |ty| (op.to_string(), space.to_string(), ty))
            })
    });
    let gaps = missing(want, &rmw);
    assert!(gaps.is_empty(), "no corpus kernel uses atomic_rmw {gaps:?}");

    let cas: BTreeSet<(String, Type)> = all
        .iter()
        .filter_map(|(d, ty)| match d {
            InstructionData::AtomicCas { space, .. } => Some((space.to_string(), (*ty)?)),
            _ => None,
        })
        .collect();
    let want = [AddrSpace::Global, AddrSpace::Shared]
        .into_iter()
        .flat_map(|space| {
            [Type::I32, Type::I64]
                .into_iter()
                .map(move |ty| (space.to_string(), ty))
        });
    let gaps = missing(want, &cas);
    assert!(gaps.is_empty(), "no corpus kernel uses atomic_cas {gaps:?}");
}

#[test]
fn corpus_covers_every_geometry_read() {
    let have: BTreeSet<String> = corpus_insts()
        .iter()
        .filter_map(|(d, _)| match d {
            InstructionData::Geometry { opcode, dim } => Some(format!("{opcode} {dim}")),
            _ => None,
        })
        .collect();
    let want = [
        Opcode::ThreadId,
        Opcode::BlockId,
        Opcode::BlockDim,
        Opcode::GridDim,
    ]
    .into_iter()
    .flat_map(|op| ["x", "y", "z"].map(|d| format!("{op} {d}")));
    let gaps = missing(want, &have);
    assert!(gaps.is_empty(), "no corpus kernel reads {gaps:?}");
}

#[test]
fn corpus_loads_and_stores_every_type_in_every_space() {
    let all = corpus_insts();
    let mut loads = BTreeSet::new();
    let mut stores = BTreeSet::new();
    for case in load_all() {
        for func in &case.funcs {
            for &b in func.layout.blocks() {
                for &i in func.layout.block_insts(b) {
                    match *func.inst(i) {
                        InstructionData::Load { space, .. } => {
                            let v = func.dfg.inst_result(i).expect("a load has a result");
                            loads.insert((space.to_string(), func.dfg.value_type(v)));
                        }
                        InstructionData::Store { space, args, .. } => {
                            stores.insert((space.to_string(), func.dfg.value_type(args[0])));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(!all.is_empty());
    let want: Vec<(String, Type)> = AddrSpace::ALL
        .iter()
        .flat_map(|s| Type::ALL.iter().map(move |&t| (s.to_string(), t)))
        .collect();
    let gaps = missing(want.clone(), &loads);
    assert!(gaps.is_empty(), "no corpus kernel loads {gaps:?}");
    let gaps = missing(want, &stores);
    assert!(gaps.is_empty(), "no corpus kernel stores {gaps:?}");
}

#[test]
fn corpus_covers_every_launch_shape() {
    // 1-, 2- and 3-D blocks and grids, and several blocks per grid.
    let cases = load_all();
    let dims = |d: [u32; 3]| d.iter().rposition(|&x| x > 1).map_or(1, |i| i + 1);
    let block_dims: BTreeSet<usize> = cases.iter().map(|c| dims(c.launch.block)).collect();
    let grid_dims: BTreeSet<usize> = cases.iter().map(|c| dims(c.launch.grid)).collect();
    assert_eq!(block_dims, BTreeSet::from([1, 2, 3]), "block shapes");
    assert!(
        grid_dims.is_superset(&BTreeSet::from([1, 2, 3])),
        "grid shapes"
    );
}

/// The memory before and after a run, read by element, and the mismatches found.
struct Mem<'a> {
    before: &'a GlobalMemory,
    after: &'a GlobalMemory,
    failures: Vec<String>,
}

impl<'a> Mem<'a> {
    fn new(before: &'a GlobalMemory, after: &'a GlobalMemory) -> Self {
        Mem {
            before,
            after,
            failures: Vec::new(),
        }
    }

    fn bits_of(mem: &GlobalMemory, name: &str) -> Vec<u64> {
        let buf = mem
            .buffer(name)
            .unwrap_or_else(|| panic!("the launch has no buffer `{name}`"));
        (0..buf.len()).map(|i| buf.elem_bits(i)).collect()
    }

    /// The initial element bits of buffer `name`, zero-extended.
    fn input(&self, name: &str) -> Vec<u64> {
        Self::bits_of(self.before, name)
    }

    /// The initial elements of `name`, sign-extended from `bits` wide elements.
    fn input_signed(&self, name: &str, bits: u32) -> Vec<i64> {
        self.input(name)
            .into_iter()
            .map(|x| sext(x, bits))
            .collect()
    }

    /// The initial elements of an `f32` buffer.
    fn input_f32(&self, name: &str) -> Vec<f32> {
        self.input(name)
            .into_iter()
            .map(|x| f32::from_bits(x as u32))
            .collect()
    }

    /// The initial elements of an `f64` buffer.
    fn input_f64(&self, name: &str) -> Vec<f64> {
        self.input(name).into_iter().map(f64::from_bits).collect()
    }

    /// Checks that buffer `name` ends up holding exactly `want` (element bits, compared
    /// after masking to the element width).
    fn expect_bits(&mut self, name: &str, want: &[u64]) {
        let have = Self::bits_of(self.after, name);
        if have.len() != want.len() {
            self.failures.push(format!(
                "buffer {name}: {} elements, the reference has {}",
                have.len(),
                want.len()
            ));
            return;
        }
        let width = self.after.buffer(name).map_or(8, |b| b.elem.bytes()) as u32 * 8;
        let mask = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let bad: Vec<usize> = (0..want.len())
            .filter(|&i| have[i] != want[i] & mask)
            .collect();
        if let Some(&i) = bad.first() {
            self.failures.push(format!(
                "buffer {name}: element [{i}] is {:#x}, the reference says {:#x} ({} of {} differ)",
                have[i],
                want[i] & mask,
                bad.len(),
                want.len()
            ));
        }
    }

    fn expect_ints(&mut self, name: &str, want: &[i64]) {
        let bits: Vec<u64> = want.iter().map(|&x| x as u64).collect();
        self.expect_bits(name, &bits);
    }
}

/// Sign-extends the low `bits` bits of `x`.
fn sext(x: u64, bits: u32) -> i64 {
    let s = 64 - bits;
    ((x << s) as i64) >> s
}

/// The bits of an `f32` result of an arithmetic operation: NaN becomes the canonical NaN.
fn canon32(x: f32) -> u64 {
    if x.is_nan() {
        u64::from(warplift::ir::write::CANONICAL_NAN_F32)
    } else {
        u64::from(x.to_bits())
    }
}

/// The bits of an `f64` result of an arithmetic operation: NaN becomes the canonical NaN.
fn canon64(x: f64) -> u64 {
    if x.is_nan() {
        warplift::ir::write::CANONICAL_NAN_F64
    } else {
        x.to_bits()
    }
}

/// Independent Rust re-implementations of what the corpus kernels compute, thread by
/// thread, from the buffers' initial contents. They encode the semantics of `docs/ir.md`
/// directly (RISC-V division, clamped shifts, canonical NaNs, saturating conversions)
/// rather than sharing any code with the interpreter.
mod references {
    use super::*;

    /// A reference: checks the memory after a run with the given warp width.
    pub type Check = fn(&mut Mem<'_>, u32);

    pub fn all() -> BTreeMap<&'static str, Check> {
        let list: &[(&'static str, Check)] = &[
            ("saxpy", saxpy),
            ("short_circuit_and_or", short_circuit_and_or),
            ("irreducible_loop", irreducible_loop),
            ("transpose_shared", transpose_shared),
            ("grid_3d", grid_3d),
            ("atomic_cas_global", atomic_cas_global),
            ("int_div_edge", int_div_edge),
            ("shifts_edge", shifts_edge),
            ("bit_count_ops", bit_count_ops),
            ("mulhi_minmax", mulhi_minmax),
            ("icmp_all_conds", icmp_all_conds),
            ("icmp_all_conds_i8", icmp_all_conds_i8),
            ("icmp_all_conds_i64", icmp_all_conds_i64),
            ("float_nan_minmax", float_nan_minmax),
            ("float_convert_sat", float_convert_sat),
            ("newton_sqrt_f64", newton_sqrt_f64),
            ("local_memory_sort", local_memory_sort),
            ("local_all_types", local_all_types),
            ("shared_all_types", shared_all_types),
            ("lane_id_warp", lane_id_warp),
            ("grid_stride_loop", grid_stride_loop),
            ("histogram_shared_atomic", histogram_shared_atomic),
            ("prefix_scan_shared", prefix_scan_shared),
            ("constants_literals", constants_literals),
            ("block_reduce_shared", block_reduce_shared),
            ("loop_merge_fig2b", loop_merge_fig2b),
        ];
        list.iter().copied().collect()
    }

    fn saxpy(m: &mut Mem<'_>, _: u32) {
        let (x, mut y) = (m.input_f32("x"), m.input_f32("y"));
        let (a, n) = (2.5f32, 100);
        for i in 0..n {
            y[i] = a.mul_add(x[i], y[i]);
        }
        let want: Vec<u64> = y.iter().map(|&v| canon32(v)).collect();
        m.expect_bits("y", &want);
    }

    fn short_circuit_and_or(m: &mut Mem<'_>, _: u32) {
        let want: Vec<i64> = (0..64i64)
            .map(|t| {
                let (a, b, c) = (t % 3 == 0, t % 5 == 0, t & 4 != 0);
                let mut evaluated = 1; // a is always evaluated
                let mut p = 0;
                let first = a && {
                    evaluated |= 2;
                    b
                };
                let first = first || {
                    evaluated |= 4;
                    c
                };
                if first {
                    p += 1;
                }
                evaluated |= 8;
                let second = a || {
                    evaluated |= 16;
                    b
                };
                let second = second && {
                    evaluated |= 32;
                    !c
                };
                if second {
                    p += 2;
                }
                (p << 6) | evaluated
            })
            .collect();
        m.expect_ints("out", &want);
    }

    fn irreducible_loop(m: &mut Mem<'_>, _: u32) {
        let want: Vec<i64> = m
            .input_signed("input", 32)
            .into_iter()
            .map(|mut x| {
                let (mut steps, mut odd) = (0, 0);
                while x != 1 {
                    if x % 2 == 0 {
                        x /= 2;
                    } else {
                        x = 3 * x + 1;
                        odd += 1;
                    }
                    steps += 1;
                }
                steps + 1000 * odd
            })
            .collect();
        m.expect_ints("out", &want);
    }

    fn transpose_shared(m: &mut Mem<'_>, _: u32) {
        let input = m.input("input");
        let w = 16;
        let mut want = vec![0u64; w * w];
        for r in 0..w {
            for c in 0..w {
                want[c * w + r] = input[r * w + c];
            }
        }
        m.expect_bits("out", &want);
    }

    fn grid_3d(m: &mut Mem<'_>, _: u32) {
        let (grid, block) = ([2i64, 1, 2], [4i64, 2, 3]);
        let (w, h) = (grid[0] * block[0], grid[1] * block[1]);
        let n = (w * h * grid[2] * block[2]) as usize;
        let mut code = vec![0i64; n];
        let mut linear = vec![0i64; n];
        for bz in 0..grid[2] {
            for by in 0..grid[1] {
                for bx in 0..grid[0] {
                    for tz in 0..block[2] {
                        for ty in 0..block[1] {
                            for tx in 0..block[0] {
                                let (gx, gy, gz) =
                                    (bx * block[0] + tx, by * block[1] + ty, bz * block[2] + tz);
                                let idx = ((gz * h + gy) * w + gx) as usize;
                                let ids =
                                    ((((bz * 10 + by) * 10 + bx) * 10 + tz) * 10 + ty) * 10 + tx;
                                code[idx] = (grid[2] * 10 + block[2]) * 1_000_000 + ids;
                                linear[idx] = tx + ty * block[0] + tz * block[0] * block[1];
                            }
                        }
                    }
                }
            }
        }
        m.expect_ints("code", &code);
        m.expect_ints("linear", &linear);
    }

    fn atomic_cas_global(m: &mut Mem<'_>, _: u32) {
        let keys = m.input_signed("keys", 64);
        let threads = keys.len() as i64;
        m.expect_ints("counter", &[1000 + threads * (threads + 1) / 2]);
        m.expect_ints("maximum", &[keys.iter().copied().max().unwrap_or(i64::MIN)]);
    }

    /// `sdiv`, `udiv`, `srem`, `urem` at `bits` wide, as `docs/ir.md` defines them.
    fn divisions(a: i64, b: i64, bits: u32) -> [i64; 4] {
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let (ua, ub) = (a as u64 & mask, b as u64 & mask);
        let min = sext(1u64 << (bits - 1), bits);
        let sdiv = if b == 0 {
            -1
        } else if a == min && b == -1 {
            min
        } else {
            a / b
        };
        let srem = if b == 0 {
            a
        } else if a == min && b == -1 {
            0
        } else {
            a % b
        };
        let udiv = ua.checked_div(ub).unwrap_or(mask);
        let urem = ua.checked_rem(ub).unwrap_or(ua);
        [sdiv, sext(udiv, bits), srem, sext(urem, bits)]
    }

    fn int_div_edge(m: &mut Mem<'_>, _: u32) {
        for (bits, a, b, out) in [(32, "a32", "b32", "out32"), (64, "a64", "b64", "out64")] {
            let (xs, ys) = (m.input_signed(a, bits), m.input_signed(b, bits));
            let want: Vec<i64> = xs
                .iter()
                .zip(&ys)
                .flat_map(|(&x, &y)| divisions(x, y, bits))
                .collect();
            m.expect_ints(out, &want);
        }
    }

    /// `ishl`, `ushr`, `sshr` of `x` by `amt` at `bits` wide: the amount reads as unsigned
    /// and amounts of the width or more clamp.
    fn shifts(x: u64, amt: u64, bits: u32) -> [u64; 3] {
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let (x, amt) = (x & mask, amt & mask);
        let sx = sext(x, bits);
        if amt >= u64::from(bits) {
            [0, 0, if sx < 0 { mask } else { 0 }]
        } else {
            [(x << amt) & mask, x >> amt, ((sx >> amt) as u64) & mask]
        }
    }

    fn shifts_edge(m: &mut Mem<'_>, _: u32) {
        let amts = m.input("amt");
        let cases: [(u32, u64, &str); 4] = [
            (8, 0x81, "out8"),
            (16, 0x8101, "out16"),
            (32, 0x8000_0f01, "out32"),
            (64, 0x8000_0000_0000_0f01, "out64"),
        ];
        for (bits, x, out) in cases {
            // The kernel narrows the i32 amount with ireduce, or widens it with uextend.
            let want: Vec<u64> = amts.iter().flat_map(|&a| shifts(x, a, bits)).collect();
            m.expect_bits(out, &want);
        }
    }

    fn bit_count_ops(m: &mut Mem<'_>, _: u32) {
        let xs = m.input("x");
        let mut counts = Vec::new();
        let mut neg = Vec::new();
        for &x in &xs {
            for bits in [8u32, 16, 32, 64] {
                let v = if bits == 64 {
                    x
                } else {
                    x & ((1u64 << bits) - 1)
                };
                let pop = v.count_ones();
                let clz = if v == 0 {
                    bits
                } else {
                    v.leading_zeros() - (64 - bits)
                };
                let ctz = if v == 0 { bits } else { v.trailing_zeros() };
                counts.extend([pop, clz, ctz].map(i64::from));
            }
            neg.push(!x as i64);
            neg.push((x as i64).wrapping_neg());
        }
        m.expect_ints("counts", &counts);
        m.expect_ints("neg", &neg);
    }

    fn mulhi_minmax(m: &mut Mem<'_>, _: u32) {
        let (a, b) = (m.input("a"), m.input("b"));
        let mut out32 = Vec::new();
        let mut out64 = Vec::new();
        for (&x, &y) in a.iter().zip(&b) {
            let (x32, y32) = (x as u32, y as u32);
            let (sx, sy) = (x32 as i32, y32 as i32);
            out32.extend([
                ((i64::from(sx) * i64::from(sy)) >> 32),
                ((u64::from(x32) * u64::from(y32)) >> 32) as u32 as i32 as i64,
                i64::from(sx.min(sy)),
                i64::from(sx.max(sy)),
                i64::from(x32.min(y32) as i32),
                i64::from(x32.max(y32) as i32),
            ]);
            let (sx, sy) = (x as i64, y as i64);
            out64.extend([
                ((i128::from(sx) * i128::from(sy)) >> 64) as i64,
                ((u128::from(x) * u128::from(y)) >> 64) as u64 as i64,
                sx.min(sy),
                sx.max(sy),
                x.min(y) as i64,
                x.max(y) as i64,
            ]);
        }
        m.expect_ints("out32", &out32);
        m.expect_ints("out64", &out64);
    }

    /// The ten integer conditions, in `IntCC` order, on operands sign-extended from their
    /// width and their unsigned readings.
    fn int_conds(s: (i64, i64), u: (u64, u64)) -> u32 {
        let (a, b) = s;
        let (ua, ub) = u;
        [
            a == b,
            a != b,
            a < b,
            a <= b,
            a > b,
            a >= b,
            ua < ub,
            ua <= ub,
            ua > ub,
            ua >= ub,
        ]
        .iter()
        .enumerate()
        .map(|(k, &c)| u32::from(c) << k)
        .sum()
    }

    /// The mask of `icmp_all_conds*`: the i32 inputs viewed at `bits` wide (narrowed by
    /// truncation, widened by sign extension).
    fn icmp_masks(m: &mut Mem<'_>, bits: u32) {
        let (a, b) = (m.input("a"), m.input("b"));
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let want: Vec<i64> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| {
                let (vx, vy) = (sext(x, 32) as u64 & mask, sext(y, 32) as u64 & mask);
                i64::from(int_conds((sext(vx, bits), sext(vy, bits)), (vx, vy)))
            })
            .collect();
        m.expect_ints("out", &want);
    }

    fn icmp_all_conds(m: &mut Mem<'_>, _: u32) {
        icmp_masks(m, 32);
    }

    fn icmp_all_conds_i8(m: &mut Mem<'_>, _: u32) {
        icmp_masks(m, 8);
    }

    fn icmp_all_conds_i64(m: &mut Mem<'_>, _: u32) {
        icmp_masks(m, 64);
    }

    /// `fmin`/`fmax` as `docs/ir.md` defines them, on bits.
    fn fminmax32(a: f32, b: f32, max: bool) -> u64 {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => canon32(f32::NAN),
            (true, false) => u64::from(b.to_bits()),
            (false, true) => u64::from(a.to_bits()),
            _ if a == b => {
                // Equal, possibly zeros of different signs: min takes -0, max +0.
                let neg_one = if a.is_sign_negative() { a } else { b };
                let pos_one = if a.is_sign_negative() { b } else { a };
                u64::from(if max { pos_one } else { neg_one }.to_bits())
            }
            _ => u64::from(if (a < b) != max { a } else { b }.to_bits()),
        }
    }

    fn fminmax64(a: f64, b: f64, max: bool) -> u64 {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => canon64(f64::NAN),
            (true, false) => b.to_bits(),
            (false, true) => a.to_bits(),
            _ if a == b => {
                let neg_one = if a.is_sign_negative() { a } else { b };
                let pos_one = if a.is_sign_negative() { b } else { a };
                if max { pos_one } else { neg_one }.to_bits()
            }
            _ => if (a < b) != max { a } else { b }.to_bits(),
        }
    }

    fn float_nan_minmax(m: &mut Mem<'_>, _: u32) {
        let (a32, b32) = (m.input("a32"), m.input("b32"));
        let mut want = Vec::new();
        for (&x, &y) in a32.iter().zip(&b32) {
            let (a, b) = (f32::from_bits(x as u32), f32::from_bits(y as u32));
            want.extend([
                canon32(a + b),
                canon32(a - b),
                canon32(a * b),
                canon32(a / b),
                fminmax32(a, b, false),
                fminmax32(a, b, true),
                x ^ 0x8000_0000,
                x & 0x7fff_ffff,
                canon32(a.sqrt()),
                canon32(a.mul_add(b, a)),
            ]);
        }
        m.expect_bits("out32", &want);
        let (a64, b64) = (m.input("a64"), m.input("b64"));
        let mut want = Vec::new();
        for (&x, &y) in a64.iter().zip(&b64) {
            let (a, b) = (f64::from_bits(x), f64::from_bits(y));
            want.extend([
                canon64(a + b),
                canon64(a - b),
                canon64(a * b),
                canon64(a / b),
                fminmax64(a, b, false),
                fminmax64(a, b, true),
                x ^ (1 << 63),
                x & !(1 << 63),
                canon64(a.sqrt()),
                canon64(a.mul_add(b, a)),
            ]);
        }
        m.expect_bits("out64", &want);
    }

    fn float_convert_sat(m: &mut Mem<'_>, _: u32) {
        let xs = m.input("x");
        let (mut o32, mut o64, mut o16, mut o8) = (vec![], vec![], vec![], vec![]);
        let (mut of32, mut of64) = (vec![], vec![]);
        for &bits in &xs {
            // Rust's `as` from float to integer truncates, saturates and maps NaN to 0,
            // and from integer to float rounds to nearest even: the IR's rules.
            let x = f64::from_bits(bits);
            let demoted = f32::from_bits(canon32(x as f32) as u32);
            o32.extend([
                i64::from(x as i32),
                i64::from(x as u32 as i32),
                i64::from(demoted as i32),
                i64::from(demoted as u32 as i32),
            ]);
            o64.extend([x as i64, x as u64 as i64]);
            o16.extend([i64::from(x as i16), i64::from(x as u16)]);
            o8.extend([i64::from(x as i8), i64::from(x as u8)]);
            of32.extend([
                canon32(demoted),
                canon32((x as i64) as f32),
                canon32((x as u32) as f32),
            ]);
            of64.extend([
                canon64(f64::from(demoted)),
                canon64(bits as f64),
                canon64(f64::from(x as i32)),
            ]);
        }
        m.expect_ints("o32", &o32);
        m.expect_ints("o64", &o64);
        m.expect_ints("o16", &o16);
        m.expect_ints("o8", &o8);
        m.expect_bits("of32", &of32);
        m.expect_bits("of64", &of64);
    }

    fn newton_sqrt_f64(m: &mut Mem<'_>, _: u32) {
        let xs = m.input_f64("x");
        let eps = f64::from_bits(0x3cb0_0000_0000_0000);
        let (mut root, mut err, mut steps) = (vec![], vec![], vec![]);
        for &x in &xs {
            let mut y = if x > 1.0 { x } else { 1.0 };
            let mut k = 0i64;
            loop {
                let next = (y + x / y) * 0.5;
                k += 1;
                let done = (y - next).abs() <= next * eps || k >= 64;
                y = next;
                if done {
                    break;
                }
            }
            root.push(canon64(y));
            err.push(canon64((y - x.sqrt()).abs()));
            steps.push(k);
        }
        m.expect_bits("root", &root);
        m.expect_bits("err", &err);
        m.expect_ints("steps", &steps);
    }

    fn local_memory_sort(m: &mut Mem<'_>, _: u32) {
        let data = m.input_signed("data", 32);
        let mut out = Vec::new();
        let mut moves = Vec::new();
        for row in data.chunks(8) {
            let mut a = row.to_vec();
            let mut count = 0;
            for i in 1..a.len() {
                let key = a[i];
                let mut j = i;
                while j > 0 && a[j - 1] > key {
                    a[j] = a[j - 1];
                    count += 1;
                    j -= 1;
                }
                a[j] = key;
            }
            out.extend(a);
            moves.push(count);
        }
        m.expect_ints("out", &out);
        m.expect_ints("moves", &moves);
    }

    fn local_all_types(m: &mut Mem<'_>, _: u32) {
        let of32: Vec<u64> = (0..8).map(|t| canon32(t as f32 * 0.1f32)).collect();
        let of64: Vec<u64> = (0..8).map(|t| canon64(f64::from(t) / 3.0)).collect();
        m.expect_bits("of32", &of32);
        m.expect_bits("of64", &of64);
    }

    fn shared_all_types(m: &mut Mem<'_>, _: u32) {
        let n = 32;
        let blocks = 2;
        let src = |g: usize| (g / n) * n + (g % n + 1) % n;
        let ib = m.input("ib");
        let i8in = m.input("i8in");
        let i16in = m.input("i16in");
        let i32in = m.input("i32in");
        let i64in = m.input("i64in");
        let f32in = m.input("f32in");
        let f64in = m.input_f64("f64in");
        let g = 0..n * blocks;
        let map = |f: &dyn Fn(usize) -> u64| g.clone().map(f).collect::<Vec<u64>>();
        m.expect_bits("ob", &map(&|g| u64::from(ib[src(g)] == 0)));
        m.expect_bits("o8", &map(&|g| i8in[src(g)].wrapping_add(1)));
        m.expect_bits("o16", &map(&|g| i16in[src(g)].wrapping_mul(3)));
        m.expect_bits("o32", &map(&|g| i32in[src(g)] ^ 0x5555));
        m.expect_bits("o64", &map(&|g| i64in[src(g)].wrapping_neg()));
        m.expect_bits("of32", &map(&|g| f32in[src(g)] ^ 0x8000_0000));
        m.expect_bits("of64", &map(&|g| canon64(f64in[src(g)] * 2.0)));
    }

    fn lane_id_warp(m: &mut Mem<'_>, ws: u32) {
        let (threads, blocks) = (40i64, 2i64);
        let ws = i64::from(ws);
        let mut lanes = Vec::new();
        let mut sums = Vec::new();
        for _ in 0..blocks {
            for l in 0..threads {
                let lane = l % ws;
                let start = l - lane;
                lanes.push(lane);
                sums.push((start..(start + ws).min(threads)).sum());
            }
        }
        m.expect_ints("lanes", &lanes);
        m.expect_ints("sums", &sums);
        let warps = (threads + ws - 1) / ws;
        m.expect_ints("counters", &[blocks * warps, (threads - 1) / ws * ws]);
    }

    fn grid_stride_loop(m: &mut Mem<'_>, _: u32) {
        let input = m.input_signed("input", 64);
        let want: Vec<i64> = input
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                if i < 250 {
                    x.wrapping_mul(x).wrapping_sub(i as i64)
                } else {
                    0
                }
            })
            .collect();
        m.expect_ints("out", &want);
    }

    fn histogram_shared_atomic(m: &mut Mem<'_>, _: u32) {
        let data = m.input("data");
        let mut hist = vec![0i64; 16];
        for &v in &data[..250] {
            hist[(v % 16) as usize] += 1;
        }
        m.expect_ints("hist", &hist);
    }

    fn prefix_scan_shared(m: &mut Mem<'_>, _: u32) {
        let input = m.input_signed("input", 64);
        let want: Vec<i64> = input
            .chunks(32)
            .flat_map(|block| {
                block.iter().scan(0i64, |acc, &x| {
                    *acc = acc.wrapping_add(x);
                    Some(*acc)
                })
            })
            .collect();
        m.expect_ints("out", &want);
    }

    fn constants_literals(m: &mut Mem<'_>, _: u32) {
        m.expect_bits(
            "of32",
            &[
                0x3fc0_0000,
                0x8000_0000,
                0x7f80_0000,
                0xff80_0000,
                0x7fff_ffff,
                0x7fc0_0001,
                0x0000_0001,
                0x7f7f_ffff,
            ],
        );
        m.expect_bits(
            "of64",
            &[
                0.1f64.to_bits(),
                0xfff0_0000_0000_0000,
                0x7fff_ffff_ffff_ffff,
                0x7ff0_0000_0000_0001,
                0x0010_0000_0000_0000,
                0x0000_0000_0000_0001,
                0xffef_ffff_ffff_ffff,
            ],
        );
    }

    fn block_reduce_shared(m: &mut Mem<'_>, _: u32) {
        let input = m.input_signed("input", 32);
        let want: Vec<i64> = input
            .chunks(64)
            .map(|c| i64::from(c.iter().map(|&x| x as i32).fold(0i32, i32::wrapping_add)))
            .collect();
        m.expect_ints("out", &want);
    }

    fn loop_merge_fig2b(m: &mut Mem<'_>, _: u32) {
        let cond = m.input_signed("cond", 32);
        let threads = cond.len() / 2;
        let want: Vec<i64> = (0..threads)
            .map(|t| {
                let mut acc = 0i64;
                for i in 0..2 {
                    acc = acc * 3 + 1;
                    for j in 0..cond[i * threads + t] {
                        acc += j;
                    }
                    acc ^= i as i64 + 7;
                }
                acc
            })
            .collect();
        m.expect_ints("out", &want);
    }
}
