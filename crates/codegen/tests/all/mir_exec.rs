//! Runs lowered MIR and compares it with the IR's reference interpreter on the corpus.
//!
//! A small, test-only MIR interpreter: one thread at a time, scalar, from the entry to
//! `ret`, every operation computed by the IR's own scalar rules
//! (`warplift_ir::interp::ops`). Threads run one after another, so kernels with barriers
//! are skipped. To catch lowerings that rely on the unspecified upper bits of `i8`/`i16`
//! registers, every sub-word result is written with garbage in its upper bits.

use std::collections::HashMap;
use std::path::Path;
use warplift_codegen::lower::lower;
use warplift_codegen::mir::*;
use warplift_filetests::{Failure, Walk};
use warplift_ir::interp::{ops, InterpConfig};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::{AddrSpace, Opcode};

/// What goes in the upper bits of sub-word results.
const GARBAGE: u64 = 0xa5a5_a5a5;

/// One thread's position in the grid.
struct ThreadCtx {
    tid: [u32; 3],
    ctaid: [u32; 3],
    ntid: [u32; 3],
    nctaid: [u32; 3],
    lane: u32,
}

struct Thread<'a> {
    mir: &'a MirFunction,
    regs: HashMap<Reg, u64>,
    local: Vec<u8>,
}

fn read_bytes(mem: &[u8], addr: u64, size: u32) -> Result<u64, String> {
    let end = addr
        .checked_add(u64::from(size))
        .ok_or("address overflow")?;
    let bytes = mem
        .get(addr as usize..end as usize)
        .ok_or_else(|| format!("access at {addr} outside the window"))?;
    Ok(bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

fn write_bytes(mem: &mut [u8], addr: u64, size: u32, bits: u64) -> Result<(), String> {
    let end = addr
        .checked_add(u64::from(size))
        .ok_or("address overflow")?;
    let bytes = mem
        .get_mut(addr as usize..end as usize)
        .ok_or_else(|| format!("access at {addr} outside the window"))?;
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (bits >> (8 * i)) as u8;
    }
    Ok(())
}

impl Thread<'_> {
    fn get(&self, r: Reg) -> Result<u64, String> {
        self.regs
            .get(&r)
            .copied()
            .ok_or_else(|| format!("{r} read before written"))
    }

    /// An operand's value at type `ty` (its low bits, zero-extended).
    fn val(&self, o: Operand, ty: MType) -> Result<u64, String> {
        let bits = match o {
            Operand::Reg(r) => self.get(r)?,
            Operand::Imm(k) => k,
        };
        Ok(bits & MType::to_ir(ty).mask())
    }

    fn reg(&self, r: Reg, ty: MType) -> Result<u64, String> {
        self.val(Operand::Reg(r), ty)
    }

    /// Writes a result of type `ty`; sub-word results get garbage upper bits.
    fn set(&mut self, r: Reg, ty: MType, bits: u64) {
        let bits = bits & MType::to_ir(ty).mask();
        let bits = match ty {
            MType::I8 | MType::I16 => (bits | (GARBAGE << ty.bits())) & 0xffff_ffff,
            _ => bits,
        };
        self.regs.insert(r, bits);
    }

    fn addr(&self, space: AddrSpace, a: Address) -> Result<u64, String> {
        let base = match a.base {
            Some(r) if space == AddrSpace::Global => self.get(r)?,
            Some(r) => self.get(r)? & 0xffff_ffff,
            None => 0,
        };
        let sum = base.wrapping_add(a.offset as i64 as u64);
        Ok(if space == AddrSpace::Global {
            sum
        } else {
            sum & 0xffff_ffff
        })
    }

    fn load(
        &self,
        launch: &PreparedLaunch,
        shared: &[u8],
        space: AddrSpace,
        addr: u64,
        size: u32,
    ) -> Result<u64, String> {
        match space {
            AddrSpace::Global => launch.memory.read(addr, size).map_err(|e| format!("{e:?}")),
            AddrSpace::Shared => read_bytes(shared, addr, size),
            AddrSpace::Local => read_bytes(&self.local, addr, size),
        }
    }

    fn store(
        &mut self,
        launch: &mut PreparedLaunch,
        shared: &mut [u8],
        space: AddrSpace,
        addr: u64,
        size: u32,
        bits: u64,
    ) -> Result<(), String> {
        match space {
            AddrSpace::Global => launch
                .memory
                .write(addr, size, bits)
                .map_err(|e| format!("{e:?}")),
            AddrSpace::Shared => write_bytes(shared, addr, size, bits),
            AddrSpace::Local => write_bytes(&mut self.local, addr, size, bits),
        }
    }

    fn run(
        &mut self,
        ctx: &ThreadCtx,
        launch: &mut PreparedLaunch,
        shared: &mut [u8],
    ) -> Result<(), String> {
        let mir = self.mir;
        let mut block = mir.entry().ok_or("no entry")?;
        let mut steps = 0u64;
        loop {
            let mut next = None;
            for inst in &mir.blocks[block].insts {
                steps += 1;
                if steps > 10_000_000 {
                    return Err("too many steps".into());
                }
                if inst.guard.is_some() {
                    return Err("guards are not lowered".into());
                }
                use MInstKind::*;
                match inst.kind {
                    Bin { op, ty, dst, a, b } => {
                        let (a, b) = (self.reg(a, ty)?, self.val(b, ty)?);
                        let r = ops::binary(BinOp::ir_opcode(op), MType::to_ir(ty), a, b)
                            .ok_or_else(|| format!("{} at {ty}", op.name()))?;
                        self.set(dst, ty, r);
                    }
                    Un { op, ty, dst, src } => {
                        let t = MType::to_ir(ty);
                        let r = ops::unary(UnOp::ir_opcode(op), t, t, self.reg(src, ty)?)
                            .ok_or_else(|| format!("{} at {ty}", op.name()))?;
                        self.set(dst, ty, r);
                    }
                    Mad { ty, dst, a, b, c } => {
                        let r = self
                            .reg(a, ty)?
                            .wrapping_mul(self.val(b, ty)?)
                            .wrapping_add(self.val(c, ty)?);
                        self.set(dst, ty, r);
                    }
                    Fma { ty, dst, a, b, c } => {
                        let r = ops::fma(
                            MType::to_ir(ty),
                            self.reg(a, ty)?,
                            self.reg(b, ty)?,
                            self.reg(c, ty)?,
                        )
                        .ok_or("fma type")?;
                        self.set(dst, ty, r);
                    }
                    Tern {
                        op,
                        ty,
                        dst,
                        a,
                        b,
                        c,
                    } => {
                        let (a, b, c) = (self.reg(a, ty)?, self.reg(b, ty)?, self.val(c, ty)?);
                        let r = ops::ternary(op.ir_opcode(), MType::to_ir(ty), a, b, c)
                            .ok_or_else(|| format!("{} at {ty}", op.name()))?;
                        self.set(dst, ty, r);
                    }
                    Setp {
                        cond,
                        ty,
                        dst,
                        a,
                        b,
                    } => {
                        let (a, b) = (self.reg(a, ty)?, self.val(b, ty)?);
                        let r = match cond {
                            Cond::Int(cc) => ops::icmp(cc, MType::to_ir(ty), a, b),
                            Cond::Float(cc) => {
                                ops::fcmp(cc, MType::to_ir(ty), a, b).ok_or("fcmp type")?
                            }
                        };
                        self.set(dst, MType::Pred, u64::from(r));
                    }
                    Selp {
                        ty,
                        dst,
                        a,
                        b,
                        pred,
                    } => {
                        let r = if self.reg(pred, MType::Pred)? != 0 {
                            self.val(a, ty)?
                        } else {
                            self.val(b, ty)?
                        };
                        self.set(dst, ty, r);
                    }
                    Cvt {
                        op,
                        to,
                        from,
                        dst,
                        src,
                    } => {
                        let r = ops::unary(
                            CvtOp::ir_opcode(op),
                            MType::to_ir(from),
                            MType::to_ir(to),
                            self.reg(src, from)?,
                        )
                        .ok_or_else(|| format!("cvt.{}.{to}.{from}", op.name()))?;
                        // Extensions give a full result; the rest follow the type's rule.
                        if matches!(op, CvtOp::Zext | CvtOp::Sext) {
                            self.regs.insert(dst, r);
                        } else {
                            self.set(dst, to, r);
                        }
                    }
                    Mov { ty, dst, src } => {
                        let r = self.val(src, ty)?;
                        self.set(dst, ty, r);
                    }
                    ReadSpecial { dst, sreg } => {
                        let r = match sreg {
                            SpecialReg::Tid(d) => ctx.tid[d.index()],
                            SpecialReg::Ctaid(d) => ctx.ctaid[d.index()],
                            SpecialReg::Ntid(d) => ctx.ntid[d.index()],
                            SpecialReg::Nctaid(d) => ctx.nctaid[d.index()],
                            SpecialReg::LaneId => ctx.lane,
                        };
                        self.set(dst, MType::I32, u64::from(r));
                    }
                    LdParam { ty, dst, index } => {
                        let r = *launch.args.get(index as usize).ok_or("no such argument")?;
                        self.set(dst, ty, r);
                    }
                    Ld {
                        space,
                        ty,
                        dst,
                        addr,
                    } => {
                        let a = self.addr(space, addr)?;
                        let r = self.load(launch, shared, space, a, ty.bytes())?;
                        self.set(dst, ty, r);
                    }
                    St {
                        space,
                        ty,
                        src,
                        addr,
                    } => {
                        let a = self.addr(space, addr)?;
                        let v = self.val(src, ty)?;
                        self.store(launch, shared, space, a, ty.bytes(), v)?;
                    }
                    Atom {
                        op,
                        space,
                        ty,
                        dst,
                        addr,
                        src,
                    } => {
                        let a = self.addr(space, addr)?;
                        let old = self.load(launch, shared, space, a, ty.bytes())?;
                        let new = ops::atomic_rmw(op, MType::to_ir(ty), old, self.val(src, ty)?);
                        self.store(launch, shared, space, a, ty.bytes(), new)?;
                        self.set(dst, ty, old);
                    }
                    Cas {
                        space,
                        ty,
                        dst,
                        addr,
                        expected,
                        replacement,
                    } => {
                        let a = self.addr(space, addr)?;
                        let old = self.load(launch, shared, space, a, ty.bytes())?;
                        if old == self.val(expected, ty)? {
                            let new = self.val(replacement, ty)?;
                            self.store(launch, shared, space, a, ty.bytes(), new)?;
                        }
                        self.set(dst, ty, old);
                    }
                    Bar => return Err("barriers need the whole block".into()),
                    Spill { .. } | Reload { .. } => return Err("not lowered MIR".into()),
                    Jump { ref dest } => next = Some(dest),
                    Branch {
                        pred,
                        negated,
                        ref taken,
                        ref not_taken,
                        ..
                    } => {
                        let p = (self.reg(pred, MType::Pred)? != 0) != negated;
                        next = Some(if p { taken } else { not_taken });
                    }
                    Ret => return Ok(()),
                }
            }
            let target = next.ok_or("fell off a block")?;
            // Parallel copy into the destination's parameters.
            let values: Vec<u64> = target
                .args
                .iter()
                .map(|&r| self.get(r))
                .collect::<Result<_, _>>()?;
            for (&p, v) in mir.blocks[target.block].params.iter().zip(values) {
                self.regs.insert(p, v);
            }
            block = target.block;
        }
    }
}

/// Runs every thread of the grid, one after another.
fn run_mir(mir: &MirFunction, launch: &mut PreparedLaunch, warp: u32) -> Result<(), String> {
    let [gx, gy, gz] = launch.grid;
    let [bx, by, bz] = launch.block;
    for cz in 0..gz {
        for cy in 0..gy {
            for cx in 0..gx {
                let mut shared = vec![0u8; mir.shared_size as usize];
                for tz in 0..bz {
                    for ty in 0..by {
                        for tx in 0..bx {
                            let linear = tx + ty * bx + tz * bx * by;
                            let ctx = ThreadCtx {
                                tid: [tx, ty, tz],
                                ctaid: [cx, cy, cz],
                                ntid: [bx, by, bz],
                                nctaid: [gx, gy, gz],
                                lane: linear % warp,
                            };
                            let mut thread = Thread {
                                mir,
                                regs: HashMap::new(),
                                local: vec![0u8; mir.local_frame_size() as usize],
                            };
                            thread.run(&ctx, launch, &mut shared)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[test]
fn lowered_corpus_kernels_compute_what_the_ir_computes() {
    let compared: usize = Walk::corpus()
        .with_launch()
        .run(|file| {
            let path = &file.path;
            let funcs = file.functions()?;
            let launch = file.launch()?;
            let func = launch.select_kernel(&funcs).unwrap();
            let has_barrier = func
                .layout
                .insts()
                .any(|i| func.dfg.insts[i].opcode() == Opcode::Barrier);
            if has_barrier {
                return Ok(0);
            }
            let mut ir_run = launch.prepare(func).unwrap();
            let config = InterpConfig::default();
            if warplift_ir::interp::run(func, &mut ir_run, &config).is_err() {
                // Kernels that fault on purpose are the interpreter's business.
                return Ok(0);
            }
            let mir = lower(func).unwrap();
            let mut mir_run = launch.prepare(func).unwrap();
            run_mir(&mir, &mut mir_run, config.warp_width)
                .unwrap_or_else(|e| panic!("{}: {e}\n{mir}", path.display()));
            for (a, b) in ir_run.memory.buffers.iter().zip(&mir_run.memory.buffers) {
                assert!(
                    a.bytes == b.bytes,
                    "{}: buffer {} differs\nIR:  {:?}\nMIR: {:?}\n{mir}",
                    path.display(),
                    a.name,
                    a.values(),
                    b.values()
                );
            }
            Ok::<_, Failure>(1)
        })
        .into_iter()
        .sum();
    assert!(compared >= 20, "only {compared} kernels compared");
}

/// Runs `kernel` under the launch description `toml` with the IR interpreter and as
/// lowered MIR, and asserts both leave the same memory.
fn compare(kernel: &str, toml: &str) {
    let func = warplift_ir::parser::parse_function(kernel).unwrap();
    warplift_ir::verifier::verify_function(&func).unwrap();
    let launch = Launch::from_toml_str(toml, Path::new("edge.launch.toml")).unwrap();
    let mut ir_run = launch.prepare(&func).unwrap();
    warplift_ir::interp::run(&func, &mut ir_run, &InterpConfig::default()).unwrap();
    let mir = lower(&func).unwrap();
    let mut mir_run = launch.prepare(&func).unwrap();
    run_mir(&mir, &mut mir_run, 32).unwrap_or_else(|e| panic!("{e}\n{mir}"));
    for (a, b) in ir_run.memory.buffers.iter().zip(&mir_run.memory.buffers) {
        assert!(
            a.bytes == b.bytes,
            "buffer {} differs\nIR:  {:?}\nMIR: {:?}\n{kernel}\n{mir}",
            a.name,
            a.values(),
            b.values()
        );
    }
}

/// Edge values of each integer type, as launch-file literals.
fn edges(ty: &str) -> Vec<String> {
    let bits: u32 = ty[1..].parse().unwrap();
    let min = -(1i128 << (bits - 1));
    let max = (1i128 << (bits - 1)) - 1;
    let b = i128::from(bits);
    [
        0,
        1,
        2,
        3,
        7,
        -1,
        -2,
        -7,
        min,
        max,
        min + 1,
        b - 1,
        b,
        b + 1,
        100 % (max + 1),
        -100 % (max + 1),
    ]
    .iter()
    .map(|v| v.to_string())
    .collect()
}

/// Every integer operation at every width, on all pairs of edge values: the sub-word
/// lowerings (extensions, the 32-bit forms of mulhi, clz and ctz) must agree with the IR.
#[test]
fn integer_operations_agree_with_the_ir_on_edge_values() {
    let binary = [
        "iadd", "isub", "imul", "smulhi", "umulhi", "sdiv", "udiv", "srem", "urem", "smin", "smax",
        "umin", "umax", "band", "bor", "bxor", "ishl", "ushr", "sshr",
    ];
    let unary = ["ineg", "bnot", "popcnt", "clz", "ctz"];
    let conds = [
        "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
    ];
    for ty in ["i8", "i16", "i32", "i64"] {
        let values = edges(ty);
        let n = values.len();
        let a: Vec<&str> = (0..n * n).map(|i| values[i / n].as_str()).collect();
        let b: Vec<&str> = (0..n * n).map(|i| values[i % n].as_str()).collect();
        let toml = format!(
            "grid = [1]\nblock = [{}]\n[buffers.a]\ntype = \"{ty}\"\ninit = \"values\"\nvalues = [{}]\n[buffers.b]\ntype = \"{ty}\"\ninit = \"values\"\nvalues = [{}]\n[buffers.out]\ntype = \"i64\"\nlen = {}\ninit = \"zeros\"\n",
            n * n,
            a.join(", "),
            b.join(", "),
            n * n,
        );
        let bytes = &ty[1..].parse::<u32>().unwrap() / 8;
        let mut ops: Vec<String> = binary
            .iter()
            .map(|op| format!("v9 = {op} v7, v8"))
            .collect();
        ops.extend(unary.iter().map(|op| format!("v9 = {op} v7")));
        // Comparisons with a register and with a constant operand, on either side.
        for cc in conds {
            ops.push(format!("v20 = icmp {cc} v7, v8\n    v9 = uextend.{ty} v20"));
            ops.push(format!(
                "v19 = iconst.{ty} -3\n    v20 = icmp {cc} v7, v19\n    v9 = sextend.{ty} v20"
            ));
            ops.push(format!(
                "v19 = iconst.{ty} 5\n    v20 = icmp {cc} v19, v8\n    v9 = select v20, v7, v8"
            ));
        }
        for op in ops {
            // The result is widened to i64 through every path the rules take: sextend
            // for sub-word types, as is for i64.
            let widen = if ty == "i64" {
                "v10 = bor v9, v9".to_string()
            } else {
                "v10 = sextend.i64 v9".to_string()
            };
            let kernel = format!(
                "kernel %k(a: i64, b: i64, out: i64) {{
block0(v0: i64, v1: i64, v2: i64):
    v3 = thread_id x
    v4 = uextend.i64 v3
    v5 = iconst.i64 {bytes}
    v6 = imul v4, v5
    v11 = iadd v0, v6
    v7 = load.{ty} global v11
    v12 = iadd v1, v6
    v8 = load.{ty} global v12
    {op}
    {widen}
    v13 = iconst.i64 8
    v14 = imul v4, v13
    v15 = iadd v2, v14
    store global v10, v15
    return
}}
"
            );
            compare(&kernel, &toml);
        }
    }
}
