//! The kernel generator: bytes in, a valid, terminating, race-free kernel and its launch out.
//!
//! Every choice is read from an [`Unstructured`], so the fuzzer's mutations of the bytes
//! become mutations of the kernel, and running out of bytes only makes the remaining choices
//! their smallest ones (generation never fails for lack of data).
//!
//! # Shape of a kernel
//!
//! ```text
//! entry: geometry, own slots, variables initialised
//!   ─▶ region 0 (random CFG) ─▶ spine 1 (barrier, uniform diamond) ─▶ region 1 ─▶ …
//!   ─▶ last region (may return early) ─▶ dump every variable to the thread's slots, return
//! ```
//!
//! A *region* is a random CFG of a few blocks in a fixed order: forward edges go to any
//! later block or to the region's exit, back edges to any block at or before the source —
//! so loops with several entries (irreducible ones, entered in the middle) are common.
//! Terminators are `jump`, `brif` and `br_table`; branch conditions are thread-varying
//! (divergent) or read only block-uniform values (uniform).
//!
//! # Why the kernels are valid, terminate and are race-free
//!
//! - **Validity**: values flow through typed [`Variable`]s of the SSA-constructing
//!   [`FunctionBuilder`], so dominance and block parameters are right by construction; every
//!   instruction is built with operands of the types the verifier asks for.
//! - **Termination**: each region has a *fuel* counter, initialised before the region from
//!   the thread's id (so trip counts differ per thread) and capped by a small constant. A
//!   block that has a back edge decrements the fuel first, and its back edges are taken only
//!   while the fuel stays positive. Forward progress is bounded by the region's size, so a
//!   thread runs at most `(fuel + 1) * blocks` blocks of a region.
//! - **Defined results**: the IR defines every operation on every input (division by zero,
//!   oversized shifts, NaN, saturation), so operands are not restricted; every memory access
//!   is naturally aligned (8-byte slots, any access type) and in bounds (indices masked or
//!   reduced modulo the length before scaling).
//! - **No races**: a thread writes global memory only in its own slots of `out`
//!   (`index = global thread id * SLOTS + j`); the only other global writes are atomics
//!   whose results are discarded, into an `acc` slot reserved for one operation and width,
//!   so their order does not matter. In shared memory, phase `p` (the code between two
//!   spine barriers) writes only the thread's own slots of region `p` of the shared window;
//!   slots of other threads are read only in regions written in earlier phases, i.e.
//!   behind a barrier, and never written again.
//! - **Barriers** sit only in spine blocks, which every thread of a block reaches (no
//!   thread returns before the last region), or in the arms of a *uniform* diamond whose
//!   condition reads only the block id, the grid shape and kernel arguments.

use arbitrary::{Result, Unstructured};
use std::path::Path;
use std::sync::LazyLock;
use warplift_ir::builder::InstBuilder;
use warplift_ir::frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use warplift_ir::launch::Launch;
use warplift_ir::{
    AddrSpace, AtomicRmwOp, Block, BlockCall, Dim, FloatCC, Function, InstructionFormat, IntCC,
    LocalVar, Opcode, Param, ResultType, SharedVar, Signature, Type, TypeClass, Value,
};

/// Variables per type, in the order of [`Type::ALL`] (`i1 i8 i16 i32 i64 f32 f64`). Every
/// variable is stored to its own slot of `out` at the end of the kernel.
const VARS_PER_TYPE: [usize; 7] = [2, 2, 2, 3, 3, 2, 2];
/// Variables in all.
const NUM_VARS: usize = 16;
/// Slots of `out` per thread that instructions store to, load from and update atomically,
/// after the [`NUM_VARS`] slots of the final dump.
const SCRATCH_SLOTS: usize = 4;
/// Slots (8 bytes each) of `out` per thread.
pub const OUT_SLOTS: usize = NUM_VARS + SCRATCH_SLOTS;
/// Elements of the read-only input buffer `inp` (a power of two: indices are masked).
const INP_LEN: u64 = 64;
/// Slots of the atomic accumulator `acc`: one per (operation, width).
const ACC_SLOTS: usize = 16;
/// Commutative atomic operations: applied in any order they give the same result, so the
/// accumulator is race-free. Slot `k` takes operation `k` in 64 bits, slot `8 + k` in 32.
const ACC_OPS: [AtomicRmwOp; 8] = [
    AtomicRmwOp::Add,
    AtomicRmwOp::Smin,
    AtomicRmwOp::Smax,
    AtomicRmwOp::Umin,
    AtomicRmwOp::Umax,
    AtomicRmwOp::And,
    AtomicRmwOp::Or,
    AtomicRmwOp::Xor,
];
/// Shared-memory slots (8 bytes) per thread in each phase's region of the shared window.
const SHARED_SLOTS: u32 = 2;
/// Slots (8 bytes) of the per-thread local variable (a power of two: indices are masked).
const LOCAL_SLOTS: u64 = 8;
/// The most threads in one block and in the whole grid: keeps a case fast to run.
const MAX_BLOCK_THREADS: u32 = 96;
const MAX_GRID_BLOCKS: u32 = 6;

const INT_TYPES: [Type; 4] = [Type::I8, Type::I16, Type::I32, Type::I64];
const FLOAT_TYPES: [Type; 2] = [Type::F32, Type::F64];
const DIMS: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];

/// Limits of the generator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GenOptions {
    /// The most phases (regions separated by spine blocks).
    pub max_phases: u32,
    /// The most blocks in one region.
    pub max_region_blocks: u32,
    /// The most instructions drawn for one block (before its terminator).
    pub max_block_insts: u32,
    /// The largest initial fuel of a region (bounds every region's back edges).
    pub max_fuel: u32,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            max_phases: 3,
            max_region_blocks: 8,
            max_block_insts: 6,
            max_fuel: 6,
        }
    }
}

/// A generated kernel and its launch.
#[derive(Clone, Debug)]
pub struct GeneratedCase {
    /// The kernel; it passes the verifier.
    pub func: Function,
    /// Its launch (parsed from [`GeneratedCase::launch_text`]).
    pub launch: Launch,
    /// The kernel as `.wir` text.
    pub text: String,
    /// The launch as a `.launch.toml` file.
    pub launch_text: String,
}

impl GeneratedCase {
    /// The case generated from the bytes of a ChaCha8 generator seeded with `seed`: a fixed
    /// case per seed, for tests.
    pub fn from_seed(seed: u64) -> GeneratedCase {
        use rand::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut bytes = vec![0u8; 16 * 1024];
        rng.fill_bytes(&mut bytes);
        generate(&mut Unstructured::new(&bytes))
            .expect("generation reads no choice from an empty list, so it cannot fail")
    }
}

/// Generates a kernel and its launch from `u`, with the default [`GenOptions`].
pub fn generate(u: &mut Unstructured) -> Result<GeneratedCase> {
    generate_with(u, &GenOptions::default())
}

/// Generates a kernel and its launch from `u`.
///
/// Fails only with the errors of `arbitrary` itself; running out of bytes is not one.
pub fn generate_with(u: &mut Unstructured, options: &GenOptions) -> Result<GeneratedCase> {
    let shape = Shape::arbitrary(u)?;
    let sig = Signature {
        params: PARAMS.iter().map(|&(n, t)| Param::new(n, t)).collect(),
    };
    let mut func = Function::with_name_signature("fuzz", sig);
    let mut ctx = FunctionBuilderContext::new();
    {
        let b = FunctionBuilder::new(&mut func, &mut ctx);
        let mut g = Gen::new(u, b, options, &shape)?;
        g.kernel()?;
        g.b.seal_all_blocks();
        g.b.finalize();
    }
    let text = func.to_string();
    let launch_text = shape.launch_toml(u)?;
    let launch = Launch::from_toml_str(&launch_text, Path::new("generated.launch.toml"))
        .expect("the generator writes valid launch files");
    Ok(GeneratedCase {
        func,
        launch,
        text,
        launch_text,
    })
}

/// The kernel's parameters: three buffers and one scalar of each other type.
const PARAMS: [(&str, Type); 10] = [
    ("out", Type::I64),
    ("inp", Type::I64),
    ("acc", Type::I64),
    ("n", Type::I32),
    ("s", Type::I64),
    ("f", Type::F32),
    ("d", Type::F64),
    ("c", Type::I8),
    ("h", Type::I16),
    ("p", Type::I1),
];

/// The launch geometry, chosen first: the shared window's size depends on it.
struct Shape {
    grid: [u32; 3],
    block: [u32; 3],
}

impl Shape {
    fn arbitrary(u: &mut Unstructured) -> Result<Shape> {
        let mut block = [1u32; 3];
        let dims = u.int_in_range(1..=3)?;
        block[0] = *u.choose(&[1, 2, 3, 5, 7, 8, 13, 16, 31, 32, 33, 48, 64, 65, 96])?;
        if dims >= 2 {
            block[1] = u.int_in_range(1..=4)?;
        }
        if dims >= 3 {
            block[2] = u.int_in_range(1..=3)?;
        }
        while block.iter().product::<u32>() > MAX_BLOCK_THREADS {
            block[0] = block[0].div_ceil(2);
        }
        let mut grid = [1u32; 3];
        grid[0] = u.int_in_range(1..=4)?;
        grid[1] = u.int_in_range(1..=2)?;
        grid[2] = u.int_in_range(1..=2)?;
        while grid.iter().product::<u32>() > MAX_GRID_BLOCKS {
            grid[0] = grid[0].div_ceil(2);
            grid[2] = 1;
        }
        Ok(Shape { grid, block })
    }

    fn block_threads(&self) -> u32 {
        self.block.iter().product()
    }

    fn threads(&self) -> u64 {
        u64::from(self.block_threads()) * u64::from(self.grid.iter().product::<u32>())
    }

    /// The launch file: the geometry, arguments drawn from `u`, and the buffers.
    fn launch_toml(&self, u: &mut Unstructured) -> Result<String> {
        let dims = |d: [u32; 3]| format!("[{}, {}, {}]", d[0], d[1], d[2]);
        let float = |u: &mut Unstructured| -> Result<String> {
            Ok(match u.int_in_range(0..=9)? {
                0 => "\"nan\"".to_string(),
                1 => "\"inf\"".to_string(),
                2 => "\"-inf\"".to_string(),
                3 => "-0.0".to_string(),
                _ => format!("{:?}", f64::from(u.int_in_range(-4000i32..=4000)?) / 8.0),
            })
        };
        let n: i32 = match u.int_in_range(0..=3)? {
            0 => u.arbitrary()?,
            _ => u.int_in_range(-8..=100)?,
        };
        let s: i64 = match u.int_in_range(0..=3)? {
            0 => u.arbitrary()?,
            _ => u.int_in_range(-1000..=1000)?,
        };
        let (f, d) = (float(u)?, float(u)?);
        let c: i8 = u.arbitrary()?;
        let h: i16 = u.arbitrary()?;
        let p: bool = u.arbitrary()?;
        let seed: u32 = u.arbitrary()?;
        let acc_init = if u.arbitrary()? {
            "init = \"random\"\nseed = 11\n".to_string()
        } else {
            String::new()
        };
        Ok(format!(
            "grid = {grid}\nblock = {block}\n\n[args]\nn = {n}\ns = {s}\nf = {f}\nd = {d}\n\
             c = {c}\nh = {h}\np = {p}\n\n\
             [buffers.out]\ntype = \"i64\"\nlen = {out_len}\n\n\
             [buffers.inp]\ntype = \"i64\"\nlen = {INP_LEN}\ninit = \"random\"\nseed = {seed}\n\n\
             [buffers.acc]\ntype = \"i64\"\nlen = {ACC_SLOTS}\n{acc_init}",
            grid = dims(self.grid),
            block = dims(self.block),
            out_len = self.threads() * OUT_SLOTS as u64,
        ))
    }
}

/// Values computed in the entry block, which dominates every reachable block.
struct Ctx {
    /// Start of the thread's own slots of `out`.
    out_base: Value,
    inp: Value,
    acc: Value,
    /// Linear thread index within the block (i32).
    tlin: Value,
    /// Linear block index (i32).
    blin: Value,
    /// Global thread index (i32).
    gtid: Value,
    /// Scalar kernel arguments, all block-uniform: `n s f d c h p`.
    scalars: Vec<Value>,
}

/// A region's control-flow target: one of its blocks, or its exit.
#[derive(Copy, Clone, PartialEq, Eq)]
struct Target {
    block: Block,
    back: bool,
}

struct Gen<'u, 'd, 'f> {
    u: &'u mut Unstructured<'d>,
    b: FunctionBuilder<'f>,
    options: GenOptions,
    vars: Vec<Vec<Variable>>,
    ctx: Ctx,
    shared: SharedVar,
    local: LocalVar,
    block_threads: u32,
    phases: u32,
    /// The phase being generated: the shared region it may write.
    phase: u32,
}

fn type_index(ty: Type) -> usize {
    Type::ALL.iter().position(|&t| t == ty).unwrap_or(0)
}

impl<'u, 'd, 'f> Gen<'u, 'd, 'f> {
    fn new(
        u: &'u mut Unstructured<'d>,
        mut b: FunctionBuilder<'f>,
        options: &GenOptions,
        shape: &Shape,
    ) -> Result<Self> {
        let phases = u.int_in_range(1..=options.max_phases.max(1))?;
        let block_threads = shape.block_threads();
        let shared = b.declare_shared(phases * block_threads * SHARED_SLOTS * 8, 8);
        let local = b.declare_local(LOCAL_SLOTS as u32 * 8, 8);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let params = b.block_params(entry).to_vec();
        // Linear indices from the geometry, as the interpreter defines them.
        let tlin = linear(&mut b, true);
        let blin = linear(&mut b, false);
        let tpb = {
            let x = b.ins().block_dim(Dim::X);
            let y = b.ins().block_dim(Dim::Y);
            let z = b.ins().block_dim(Dim::Z);
            let xy = b.ins().imul(x, y);
            b.ins().imul(xy, z)
        };
        let base = b.ins().imul(blin, tpb);
        let gtid = b.ins().iadd(base, tlin);
        let g64 = b.ins().uextend(Type::I64, gtid);
        let stride = b.ins().iconst(Type::I64, (OUT_SLOTS * 8) as i64);
        let off = b.ins().imul(g64, stride);
        let out_base = b.ins().iadd(params[0], off);
        let ctx = Ctx {
            out_base,
            inp: params[1],
            acc: params[2],
            tlin,
            blin,
            gtid,
            scalars: params[3..].to_vec(),
        };
        let vars = Type::ALL
            .iter()
            .zip(VARS_PER_TYPE)
            .map(|(&ty, n)| (0..n).map(|_| b.declare_var(ty)).collect())
            .collect();
        Ok(Gen {
            u,
            b,
            options: *options,
            vars,
            ctx,
            shared,
            local,
            block_threads,
            phases,
            phase: 0,
        })
    }

    // ---- choices ----

    fn pick<T: Copy>(&mut self, items: &[T]) -> Result<T> {
        Ok(*self.u.choose(items)?)
    }

    fn chance(&mut self, num: u8, den: u8) -> Result<bool> {
        self.u.ratio(num, den)
    }

    fn var(&mut self, ty: Type) -> Result<Variable> {
        let list = &self.vars[type_index(ty)];
        let i = self.u.choose_index(list.len())?;
        Ok(self.vars[type_index(ty)][i])
    }

    /// The current value of a random variable of type `ty`.
    fn get(&mut self, ty: Type) -> Result<Value> {
        let v = self.var(ty)?;
        Ok(self.b.use_var(v))
    }

    /// Assigns `value` to a random variable of its type.
    fn set(&mut self, value: Value) -> Result<()> {
        let ty = self.b.func().dfg.value_type(value);
        let v = self.var(ty)?;
        self.b.def_var(v, value);
        Ok(())
    }

    fn any_type(&mut self) -> Result<Type> {
        self.pick(&Type::ALL)
    }

    fn iconst(&mut self, ty: Type, x: i64) -> Value {
        self.b.ins().iconst(ty, x)
    }

    // ---- the kernel ----

    fn kernel(&mut self) -> Result<()> {
        for ty in Type::ALL {
            for i in 0..self.vars[type_index(ty)].len() {
                let value = self.source(ty)?;
                let var = self.vars[type_index(ty)][i];
                self.b.def_var(var, value);
            }
        }
        for phase in 0..self.phases {
            self.phase = phase;
            if phase > 0 {
                self.spine()?;
            }
            let last = phase + 1 == self.phases;
            self.region(last)?;
        }
        // The dump: every variable to its own slot.
        let mut slot = 0;
        for ty in Type::ALL {
            for i in 0..self.vars[type_index(ty)].len() {
                let var = self.vars[type_index(ty)][i];
                let v = self.b.use_var(var);
                self.b
                    .ins()
                    .store(AddrSpace::Global, v, self.ctx.out_base, slot * 8);
                slot += 1;
            }
        }
        self.b.ins().return_();
        Ok(())
    }

    /// A spine point between two phases: a barrier every thread of the block reaches, and
    /// sometimes a uniform diamond with a barrier in one or both arms.
    fn spine(&mut self) -> Result<()> {
        self.b.ins().barrier();
        if self.chance(1, 3)? {
            let cond = self.uniform_cond()?;
            let (a, bb, join) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.ins().brif(cond, a, &[], bb, &[]);
            for (arm, barrier) in [(a, true), (bb, self.chance(1, 2)?)] {
                self.b.switch_to_block(arm);
                self.block_body()?;
                if barrier {
                    self.b.ins().barrier();
                }
                self.block_body()?;
                self.b.ins().jump(join, &[]);
            }
            self.b.switch_to_block(join);
        }
        Ok(())
    }

    /// A random CFG of a few blocks, entered at its first block and left to a new block,
    /// which becomes the current block.
    fn region(&mut self, last: bool) -> Result<()> {
        let n = self
            .u
            .int_in_range(1..=self.options.max_region_blocks.max(1))? as usize;
        let blocks: Vec<Block> = (0..n).map(|_| self.b.create_block()).collect();
        let exit = self.b.create_block();
        // The fuel: differs per thread, bounded by `cap`.
        let fuel = self.b.declare_var(Type::I32);
        let cap = self.u.int_in_range(1..=self.options.max_fuel.max(1))?;
        let mul = self.u.int_in_range(1..=7)?;
        let source = match self.u.int_in_range(0..=3)? {
            0 => self.ctx.gtid,
            1 => self.get(Type::I32)?,
            _ => self.ctx.tlin,
        };
        let m = self.iconst(Type::I32, mul);
        let scaled = self.b.ins().imul(source, m);
        let capv = self.iconst(Type::I32, i64::from(cap));
        let init = self.b.ins().urem(scaled, capv);
        self.b.def_var(fuel, init);
        self.b.ins().jump(blocks[0], &[]);

        for i in 0..n {
            self.b.switch_to_block(blocks[i]);
            self.block_body()?;
            self.terminator(&blocks, i, exit, fuel, last)?;
        }
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// A target for a branch out of block `i`: forward (mostly the next block), or back
    /// when `back` allows.
    fn target(&mut self, blocks: &[Block], i: usize, exit: Block, back: bool) -> Result<Target> {
        let n = blocks.len();
        if back && self.chance(1, 3)? {
            let j = self.u.int_in_range(0..=i)?;
            return Ok(Target {
                block: blocks[j],
                back: true,
            });
        }
        let j = if self.chance(1, 2)? {
            i + 1
        } else {
            self.u.int_in_range(i + 1..=n)?
        };
        Ok(Target {
            block: if j == n { exit } else { blocks[j] },
            back: false,
        })
    }

    fn terminator(
        &mut self,
        blocks: &[Block],
        i: usize,
        exit: Block,
        fuel: Variable,
        last: bool,
    ) -> Result<()> {
        let kind = self.u.int_in_range(0..=9)?;
        if last && kind == 9 && self.chance(1, 3)? {
            // An early, divergent return; the next block stays reachable (see below).
            let ret = self.b.create_block();
            let next = blocks.get(i + 1).copied().unwrap_or(exit);
            let c = self.cond()?;
            self.b.ins().brif(c, ret, &[], next, &[]);
            self.b.switch_to_block(ret);
            self.block_body()?;
            self.b.ins().return_();
            return Ok(());
        }
        let may_loop = self.chance(1, 2)?;
        let mut targets = Vec::new();
        let n_targets = match kind {
            0..=2 => 1,
            3..=7 => 2,
            _ => self.u.int_in_range(2..=5)?,
        };
        for _ in 0..n_targets {
            let t = self.target(blocks, i, exit, may_loop)?;
            targets.push(t);
        }
        let any_back = targets.iter().any(|t| t.back);
        // A block with a back edge spends fuel on every execution, and takes a back edge
        // only while the fuel stays positive.
        let guard = if any_back {
            let f = self.b.use_var(fuel);
            let one = self.iconst(Type::I32, 1);
            let f2 = self.b.ins().isub(f, one);
            self.b.def_var(fuel, f2);
            let zero = self.iconst(Type::I32, 0);
            Some(self.b.ins().icmp(IntCC::SignedGreaterThan, f2, zero))
        } else {
            None
        };
        // Every block branches to the next one (among other targets), so every block is
        // reachable: the SSA construction cannot resolve variables through an unreachable
        // cycle of single-predecessor blocks.
        let forward = Target {
            block: blocks.get(i + 1).copied().unwrap_or(exit),
            back: false,
        };
        match targets.len() {
            1 => {
                let t = targets[0];
                match guard {
                    Some(g) => self.b.ins().brif(g, t.block, &[], forward.block, &[]),
                    None if t == forward => self.b.ins().jump(t.block, &[]),
                    None => {
                        let c = self.cond()?;
                        self.b.ins().brif(c, t.block, &[], forward.block, &[])
                    }
                };
            }
            2 => {
                let t = targets[0];
                // Two back edges: one becomes forward, so fuel running out leaves the loop.
                let e = if t.back && targets[1].back {
                    forward
                } else {
                    targets[1]
                };
                let mut c = self.cond()?;
                if let Some(g) = guard {
                    if t.back {
                        c = self.b.ins().band(c, g);
                    } else if e.back {
                        let ng = self.b.ins().bnot(g);
                        c = self.b.ins().bor(c, ng);
                    }
                }
                let (t, e) = if t == forward || e == forward {
                    (t, e)
                } else if e.back {
                    (forward, e)
                } else {
                    (t, forward)
                };
                self.b.ins().brif(c, t.block, &[], e.block, &[]);
            }
            _ => {
                let mut idx = if self.chance(1, 3)? {
                    self.uniform_i32()?
                } else {
                    self.get(Type::I32)?
                };
                if self.chance(2, 3)? {
                    let m = self.iconst(Type::I32, targets.len() as i64 + 1);
                    idx = self.b.ins().urem(idx, m);
                }
                if let Some(g) = guard {
                    let out = self.iconst(Type::I32, -1);
                    idx = self.b.ins().select(g, idx, out);
                }
                let calls: Vec<BlockCall> = targets
                    .iter()
                    .map(|t| BlockCall::new(t.block, []))
                    .collect();
                self.b
                    .ins()
                    .br_table(idx, BlockCall::new(forward.block, []), &calls);
            }
        }
        Ok(())
    }

    /// A branch condition: thread-varying mostly, block-uniform sometimes.
    fn cond(&mut self) -> Result<Value> {
        if self.chance(1, 4)? {
            self.uniform_cond()
        } else {
            self.get(Type::I1)
        }
    }

    /// An `i32` that is the same for every thread of a block.
    fn uniform_i32(&mut self) -> Result<Value> {
        Ok(match self.u.int_in_range(0..=4)? {
            0 => {
                let d = self.pick(&DIMS)?;
                self.b.ins().block_id(d)
            }
            1 => {
                let d = self.pick(&DIMS)?;
                self.b.ins().grid_dim(d)
            }
            2 => self.ctx.blin,
            3 => self.ctx.scalars[0],
            _ => {
                let d = self.pick(&DIMS)?;
                self.b.ins().block_dim(d)
            }
        })
    }

    /// A condition that is the same for every thread of a block.
    fn uniform_cond(&mut self) -> Result<Value> {
        if self.chance(1, 4)? {
            return Ok(self.ctx.scalars[6]);
        }
        let a = self.uniform_i32()?;
        let k = self.u.int_in_range(-1..=4)?;
        let k = self.iconst(Type::I32, k);
        let cc = self.pick(IntCC::ALL)?;
        Ok(self.b.ins().icmp(cc, a, k))
    }

    fn block_body(&mut self) -> Result<()> {
        let n = self.u.int_in_range(0..=self.options.max_block_insts)?;
        for _ in 0..n {
            self.inst()?;
        }
        Ok(())
    }

    // ---- values ----

    /// An initial value of type `ty`: mostly thread-varying.
    fn source(&mut self, ty: Type) -> Result<Value> {
        Ok(match self.u.int_in_range(0..=5)? {
            0 => self.constant(ty)?,
            1 => {
                let v = self.param_of(ty);
                match v {
                    Some(v) => v,
                    None => self.constant(ty)?,
                }
            }
            2 => self.load_inp(ty)?,
            3 => {
                let g = self.ctx.gtid;
                self.convert(g, ty)?
            }
            _ => {
                let t = self.ctx.tlin;
                self.convert(t, ty)?
            }
        })
    }

    fn param_of(&self, ty: Type) -> Option<Value> {
        PARAMS[3..]
            .iter()
            .position(|&(_, t)| t == ty)
            .map(|i| self.ctx.scalars[i])
    }

    /// A constant of type `ty`, often an edge case.
    fn constant(&mut self, ty: Type) -> Result<Value> {
        Ok(match ty {
            Type::F32 => {
                let x = self.pick(&[
                    0.0f32,
                    -0.0,
                    1.0,
                    -1.5,
                    0.1,
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                    f32::NAN,
                    f32::MAX,
                    f32::MIN_POSITIVE,
                    1e-45,
                    2147483648.0,
                    -2147483904.0,
                    4294967296.0,
                ])?;
                let x = if self.chance(1, 3)? {
                    f32::from_bits(self.u.arbitrary()?)
                } else {
                    x
                };
                self.b.ins().f32const(x)
            }
            Type::F64 => {
                let x = self.pick(&[
                    0.0f64,
                    -0.0,
                    1.0,
                    -2.5,
                    0.1,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::NAN,
                    f64::MAX,
                    f64::MIN_POSITIVE,
                    5e-324,
                    9.223372036854776e18,
                    -9.223372036854778e18,
                    1.8446744073709552e19,
                ])?;
                let x = if self.chance(1, 3)? {
                    f64::from_bits(self.u.arbitrary()?)
                } else {
                    x
                };
                self.b.ins().f64const(x)
            }
            _ => {
                let bits = ty.bits();
                let min = if bits >= 64 {
                    i64::MIN
                } else {
                    -(1i64 << (bits - 1).min(62))
                };
                let x = match self.u.int_in_range(0..=6)? {
                    0 => 0,
                    1 => 1,
                    2 => -1,
                    3 => min,
                    4 => !min,
                    5 => self.u.int_in_range(-70..=70)?,
                    _ => self.u.arbitrary()?,
                };
                self.iconst(ty, x)
            }
        })
    }

    /// `v` converted to `ty` by the conversion instruction that fits (any pair of types).
    fn convert(&mut self, v: Value, to: Type) -> Result<Value> {
        let from = self.b.func().dfg.value_type(v);
        if from == to {
            return Ok(v);
        }
        Ok(match (from.is_float(), to.is_float()) {
            (false, false) => {
                if to.bits() > from.bits() {
                    if self.chance(1, 2)? {
                        self.b.ins().sextend(to, v)
                    } else {
                        self.b.ins().uextend(to, v)
                    }
                } else {
                    self.b.ins().ireduce(to, v)
                }
            }
            (false, true) => {
                let v = if from == Type::I1 {
                    self.b.ins().uextend(Type::I8, v)
                } else {
                    v
                };
                if self.u.int_in_range(0..=4)? == 0 && v_bits(self, v) == to.bits() {
                    self.b.ins().bitcast(to, v)
                } else if self.chance(1, 2)? {
                    self.b.ins().fcvt_from_sint(to, v)
                } else {
                    self.b.ins().fcvt_from_uint(to, v)
                }
            }
            (true, false) => {
                if self.u.int_in_range(0..=4)? == 0 && from.bits() == to.bits() {
                    self.b.ins().bitcast(to, v)
                } else {
                    let wide = if to == Type::I1 { Type::I8 } else { to };
                    let r = if self.chance(1, 2)? {
                        self.b.ins().fcvt_to_sint(wide, v)
                    } else {
                        self.b.ins().fcvt_to_uint(wide, v)
                    };
                    if to == Type::I1 {
                        self.b.ins().ireduce(Type::I1, r)
                    } else {
                        r
                    }
                }
            }
            (true, true) => {
                if to == Type::F64 {
                    self.b.ins().fpromote(v)
                } else {
                    self.b.ins().fdemote(v)
                }
            }
        })
    }

    /// A random integer variable as an `i64`, for an index.
    fn index64(&mut self) -> Result<Value> {
        let ty = self.pick(&[Type::I8, Type::I16, Type::I32, Type::I32, Type::I64])?;
        let v = self.get(ty)?;
        self.convert(v, Type::I64)
    }

    /// A random integer variable as an `i32`, for an index.
    fn index32(&mut self) -> Result<Value> {
        let ty = self.pick(&[Type::I8, Type::I16, Type::I32, Type::I32, Type::I64])?;
        let v = self.get(ty)?;
        self.convert(v, Type::I32)
    }

    /// A load of type `ty` from a data-dependent element of `inp`.
    fn load_inp(&mut self, ty: Type) -> Result<Value> {
        let i = self.index64()?;
        let mask = self.iconst(Type::I64, (INP_LEN - 1) as i64);
        let i = self.b.ins().band(i, mask);
        let three = self.iconst(Type::I64, 3);
        let off = self.b.ins().ishl(i, three);
        let addr = self.b.ins().iadd(self.ctx.inp, off);
        Ok(self.b.ins().load(ty, AddrSpace::Global, addr, 0))
    }

    /// The address of slot `slot` of this thread in phase region `region` of the shared
    /// window, or of the thread `thread` (an `i32` below the block size) when given.
    fn shared_slot(&mut self, region: u32, thread: Option<Value>, slot: u32) -> Value {
        let base = self.b.ins().shared_addr(self.shared);
        let t = thread.unwrap_or(self.ctx.tlin);
        let k = self.iconst(Type::I32, i64::from(SHARED_SLOTS * 8));
        let off = self.b.ins().imul(t, k);
        let addr = self.b.ins().iadd(base, off);
        let region_off = region * self.block_threads * SHARED_SLOTS * 8 + slot * 8;
        let r = self.iconst(Type::I32, i64::from(region_off));
        self.b.ins().iadd(addr, r)
    }

    // ---- instructions ----

    fn inst(&mut self) -> Result<()> {
        match self.u.int_in_range(0..=21)? {
            0..=3 => {
                let ty = self.pick(&INT_TYPES)?;
                let op = self.pick(&OPS.int)?;
                let r = self.operation(op, ty, 4)?;
                self.set(r)
            }
            4 => {
                let ty = self.pick(&INT_TYPES)?;
                let op = self.pick(&OPS.int_unary)?;
                let r = self.operation(op, ty, 0)?;
                self.set(r)
            }
            5 => {
                let op = self.pick(&OPS.bool)?;
                let r = self.operation(op, Type::I1, 0)?;
                self.set(r)
            }
            6 => {
                let ty = self.pick(&INT_TYPES)?;
                let a = self.get(ty)?;
                let b = if self.chance(1, 3)? {
                    self.constant(ty)?
                } else {
                    self.get(ty)?
                };
                let cc = self.pick(IntCC::ALL)?;
                let r = self.b.ins().icmp(cc, a, b);
                self.set(r)
            }
            7 | 8 => {
                let ty = self.pick(&FLOAT_TYPES)?;
                let op = self.pick(&OPS.float)?;
                let r = self.operation(op, ty, 0)?;
                self.set(r)
            }
            9 => {
                let ty = self.pick(&FLOAT_TYPES)?;
                let a = self.get(ty)?;
                let b = self.get(ty)?;
                let cc = self.pick(FloatCC::ALL)?;
                let r = self.b.ins().fcmp(cc, a, b);
                self.set(r)
            }
            10 => {
                let ty = self.any_type()?;
                let c = self.cond()?;
                let a = self.get(ty)?;
                let b = self.get(ty)?;
                let r = self.b.ins().select(c, a, b);
                self.set(r)
            }
            11 | 12 => {
                let (from, to) = (self.any_type()?, self.any_type()?);
                let v = self.get(from)?;
                let r = self.convert(v, to)?;
                self.set(r)
            }
            13 => {
                let ty = self.any_type()?;
                let r = self.constant(ty)?;
                self.set(r)
            }
            14 => {
                let d = self.pick(&DIMS)?;
                let r = match self.u.int_in_range(0..=4)? {
                    0 => self.b.ins().thread_id(d),
                    1 => self.b.ins().block_id(d),
                    2 => self.b.ins().block_dim(d),
                    3 => self.b.ins().grid_dim(d),
                    _ => self.b.ins().lane_id(),
                };
                self.set(r)
            }
            15 => {
                let ty = self.any_type()?;
                let r = self.load_inp(ty)?;
                self.set(r)
            }
            16 => self.own_global(),
            17 => self.accumulate(),
            18 | 19 => self.shared_access(),
            20 => self.local_access(),
            _ => {
                let ty = self.any_type()?;
                let r = self.param_of(ty);
                match r {
                    Some(r) => self.set(r),
                    None => Ok(()),
                }
            }
        }
    }

    /// An instruction of `op` (format `Unary`, `Binary` or `Ternary`) on variables of type
    /// `ty`; with `const_odds` above 0, the last operand is a constant with a chance of one
    /// in `const_odds`.
    fn operation(&mut self, op: Opcode, ty: Type, const_odds: u8) -> Result<Value> {
        let arity = arity(op).unwrap_or(1);
        let mut args = Vec::with_capacity(arity);
        for i in 0..arity {
            let constant = i + 1 == arity && const_odds > 0 && self.chance(1, const_odds)?;
            args.push(if constant {
                self.constant(ty)?
            } else {
                self.get(ty)?
            });
        }
        let ins = self.b.ins();
        Ok(match args[..] {
            [a, b, c] => ins.ternary(op, a, b, c),
            [a, b] => ins.binary(op, a, b),
            _ => ins.unary(op, args[0]),
        })
    }

    /// A store, load or atomic on one of the thread's own scratch slots of `out`.
    fn own_global(&mut self) -> Result<()> {
        let slot = self.u.int_in_range(0..=SCRATCH_SLOTS - 1)?;
        let offset = ((NUM_VARS + slot) * 8) as i32;
        let base = self.ctx.out_base;
        match self.u.int_in_range(0..=3)? {
            0 => {
                let ty = self.any_type()?;
                let v = self.get(ty)?;
                self.b.ins().store(AddrSpace::Global, v, base, offset);
                Ok(())
            }
            1 => {
                let ty = self.any_type()?;
                let r = self.b.ins().load(ty, AddrSpace::Global, base, offset);
                self.set(r)
            }
            _ => {
                let r = self.atomic(AddrSpace::Global, base, offset)?;
                self.set(r)
            }
        }
    }

    /// Any atomic read-modify-write or compare-and-swap at `addr + offset`, which only
    /// this thread touches.
    fn atomic(&mut self, space: AddrSpace, addr: Value, offset: i32) -> Result<Value> {
        let ty = self.pick(&[Type::I32, Type::I64])?;
        let v = self.get(ty)?;
        Ok(if self.chance(1, 4)? {
            let e = if self.chance(1, 2)? {
                self.b.ins().load(ty, space, addr, offset)
            } else {
                self.get(ty)?
            };
            self.b.ins().atomic_cas(space, addr, offset, e, v)
        } else {
            let op = self.pick(AtomicRmwOp::ALL)?;
            self.b.ins().atomic_rmw(op, space, addr, offset, v)
        })
    }

    /// A commutative atomic into the slot of `acc` reserved for its operation and width;
    /// the old value is discarded, as its order-dependent.
    fn accumulate(&mut self) -> Result<()> {
        let k = self.u.choose_index(ACC_OPS.len())?;
        let wide = self.chance(1, 2)?;
        let (ty, slot) = if wide {
            (Type::I64, k)
        } else {
            (Type::I32, 8 + k)
        };
        let v = self.get(ty)?;
        let acc = self.ctx.acc;
        self.b
            .ins()
            .atomic_rmw(ACC_OPS[k], AddrSpace::Global, acc, (slot * 8) as i32, v);
        Ok(())
    }

    /// A shared-memory access: write or update the thread's own slot of the current
    /// phase's region, read its own slot of any region, or read another thread's slot of
    /// a region written before the last barrier.
    fn shared_access(&mut self) -> Result<()> {
        let slot = self.u.int_in_range(0..=SHARED_SLOTS - 1)?;
        match self.u.int_in_range(0..=4)? {
            0 => {
                let addr = self.shared_slot(self.phase, None, slot);
                let ty = self.any_type()?;
                let v = self.get(ty)?;
                self.b.ins().store(AddrSpace::Shared, v, addr, 0);
                Ok(())
            }
            1 => {
                let addr = self.shared_slot(self.phase, None, slot);
                let r = self.atomic(AddrSpace::Shared, addr, 0)?;
                self.set(r)
            }
            2 => {
                let region = self.u.int_in_range(0..=self.phases - 1)?;
                let addr = self.shared_slot(region, None, slot);
                let ty = self.any_type()?;
                let r = self.b.ins().load(ty, AddrSpace::Shared, addr, 0);
                self.set(r)
            }
            _ if self.phase > 0 => {
                let region = self.u.int_in_range(0..=self.phase - 1)?;
                let i = self.index32()?;
                let n = self.iconst(Type::I32, i64::from(self.block_threads));
                let t = self.b.ins().urem(i, n);
                let addr = self.shared_slot(region, Some(t), slot);
                let ty = self.any_type()?;
                let r = self.b.ins().load(ty, AddrSpace::Shared, addr, 0);
                self.set(r)
            }
            _ => Ok(()),
        }
    }

    /// A store or load at a data-dependent slot of the thread's local variable.
    fn local_access(&mut self) -> Result<()> {
        let i = self.index32()?;
        let mask = self.iconst(Type::I32, (LOCAL_SLOTS - 1) as i64);
        let i = self.b.ins().band(i, mask);
        let three = self.iconst(Type::I32, 3);
        let off = self.b.ins().ishl(i, three);
        let base = self.b.ins().local_addr(self.local);
        let addr = self.b.ins().iadd(base, off);
        let ty = self.any_type()?;
        if self.chance(1, 2)? {
            let v = self.get(ty)?;
            self.b.ins().store(AddrSpace::Local, v, addr, 0);
            Ok(())
        } else {
            let r = self.b.ins().load(ty, AddrSpace::Local, addr, 0);
            self.set(r)
        }
    }
}

/// The width in bits of `v`'s type.
fn v_bits(g: &Gen, v: Value) -> u32 {
    g.b.func().dfg.value_type(v).bits()
}

/// The linear thread index within the block (`threads`) or block index within the grid.
fn linear(b: &mut FunctionBuilder, threads: bool) -> Value {
    let id = |b: &mut FunctionBuilder, d| {
        if threads {
            b.ins().thread_id(d)
        } else {
            b.ins().block_id(d)
        }
    };
    let dim = |b: &mut FunctionBuilder, d| {
        if threads {
            b.ins().block_dim(d)
        } else {
            b.ins().grid_dim(d)
        }
    };
    let (x, y, z) = (id(b, Dim::X), id(b, Dim::Y), id(b, Dim::Z));
    let (dx, dy) = (dim(b, Dim::X), dim(b, Dim::Y));
    let ydx = b.ins().imul(y, dx);
    let dxdy = b.ins().imul(dx, dy);
    let zdxdy = b.ins().imul(z, dxdy);
    let xy = b.ins().iadd(x, ydx);
    b.ins().iadd(xy, zdxdy)
}

/// The value operands of an opcode of format `Unary`, `Binary` or `Ternary`.
fn arity(op: Opcode) -> Option<usize> {
    match op.format() {
        InstructionFormat::Unary => Some(1),
        InstructionFormat::Binary => Some(2),
        InstructionFormat::Ternary => Some(3),
        _ => None,
    }
}

/// The opcodes the generator picks from, by kind, taken from the IR's opcode table (so a
/// new arithmetic opcode is generated without an edit here): every opcode whose operands
/// and result share one type of its class.
struct OpLists {
    /// Integer operations of two or three operands (`iadd` … `sshr`, `fshl`, `fshr`).
    int: Vec<Opcode>,
    /// Integer operations of one operand (`ineg`, `bnot`, `popcnt`, `clz`, `ctz`).
    int_unary: Vec<Opcode>,
    /// The operations defined on `i1` (`band`, `bor`, `bxor`, `bnot`).
    bool: Vec<Opcode>,
    /// Float operations (`fadd` … `fma`).
    float: Vec<Opcode>,
}

static OPS: LazyLock<OpLists> = LazyLock::new(|| {
    let ops = |keep: &dyn Fn(TypeClass, usize) -> bool| -> Vec<Opcode> {
        Opcode::ALL
            .iter()
            .copied()
            .filter(|&op| {
                let class = op.type_class();
                class != TypeClass::Special
                    && op.result_type() == ResultType::Operand(0)
                    && arity(op).is_some_and(|n| keep(class, n))
            })
            .collect()
    };
    let int = |c| matches!(c, TypeClass::Int | TypeClass::IntOrBool);
    OpLists {
        int: ops(&|c, n| int(c) && n >= 2),
        int_unary: ops(&|c, n| int(c) && n == 1),
        bool: ops(&|c, _| c == TypeClass::IntOrBool),
        float: ops(&|c, _| c == TypeClass::Float),
    }
});
