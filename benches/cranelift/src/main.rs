//! Builds the compile-time comparison's "straight", "branchy" or "loops" kernel (the shapes of
//! warplift's `benches/common/shapes.rs`) as a Cranelift function and compiles it for
//! x86-64, as `scripts/compile-time.sh` runs it beside `warplift compile` and `llc`.
//!
//! The function mirrors the warplift kernel instruction for instruction: the thread id,
//! which x86-64 has no register for, is the function's second parameter, so the
//! conditions stay data-dependent and nothing folds away; the float-to-integer conversion
//! saturates, as PTX's `cvt.rzi` does. Settings are Cranelift's defaults with
//! `opt_level=speed` and the verifier off (warplift's whole-process time includes its
//! verifier; Cranelift's embedders usually run without it).
//!
//! Usage: `cranelift-shapes SHAPE SIZE [REPS]`. Prints one line:
//! `INSTS BUILD_S COMPILE_S CODE_BYTES`: the function's instructions, the median wall-clock
//! seconds over REPS in-process repetitions (default 1) of building the function and of
//! `Context::compile` (lowering, register allocation, emission), and the code's size.
//! `scripts/compile-time.sh` reads the instruction count and times the whole process in
//! CPU seconds, as it times `warplift compile`; the wall-clock figures are for a quiet
//! machine.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Function, InstBuilder, MemFlagsData, UserFuncName};
use cranelift_codegen::isa::{self, OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_control::ControlPlane;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use std::process::ExitCode;
use std::time::Instant;

fn isa() -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
    flags
        .set("enable_verifier", "false")
        .map_err(|e| e.to_string())?;
    let builder = isa::lookup(target_lexicon::triple!("x86_64-unknown-linux-gnu"))
        .map_err(|e| e.to_string())?;
    builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())
}

/// A function `(out: i64, tid: i32)` with nothing in it yet.
fn signature_function(name: &str) -> Function {
    let mut func = Function::new();
    func.name = UserFuncName::testcase(name);
    func.signature.params.push(AbiParam::new(types::I64));
    func.signature.params.push(AbiParam::new(types::I32));
    func
}

/// The "straight" shape: one block of integer and float arithmetic over a sliding window
/// of earlier values, three integer operations for every float one, ending in one store.
fn straight(insts: usize, fctx: &mut FunctionBuilderContext, isa: &dyn TargetIsa) -> Function {
    let mut func = signature_function("straight");
    let mut b = FunctionBuilder::new(&mut func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let out = b.block_params(entry)[0];
    let tid = b.block_params(entry)[1];
    let f0 = b.ins().fcvt_from_sint(types::F32, tid);
    let seven = b.ins().iconst(types::I32, 7);
    let i4 = b.ins().iadd(tid, seven);
    let mut ints = vec![tid, i4];
    let mut floats = vec![f0];
    let body = insts.saturating_sub(12).max(4);
    for k in 0..body {
        if k % 4 == 3 {
            let x = floats[floats.len() - 1];
            let y = floats[floats.len().saturating_sub(3)];
            let v = if k % 8 == 3 {
                b.ins().fadd(x, y)
            } else {
                b.ins().fmul(x, y)
            };
            floats.push(v);
        } else {
            let x = ints[ints.len() - 1];
            let y = ints[ints.len().saturating_sub(3)];
            let v = match k % 3 {
                0 => b.ins().iadd(x, y),
                1 => b.ins().imul(x, y),
                _ => b.ins().bxor(x, y),
            };
            ints.push(v);
        }
    }
    let (i, f) = (ints[ints.len() - 1], floats[floats.len() - 1]);
    store_result(&mut b, out, tid, i, f);
    b.finalize(isa.frontend_config());
    func
}

/// The kernel's end: `out[tid] = a + (int) f`, then return.
fn store_result(
    b: &mut FunctionBuilder,
    out: cranelift_codegen::ir::Value,
    tid: cranelift_codegen::ir::Value,
    a: cranelift_codegen::ir::Value,
    f: cranelift_codegen::ir::Value,
) {
    let fi = b.ins().fcvt_to_sint_sat(types::I32, f);
    let sum = b.ins().iadd(a, fi);
    let wide = b.ins().uextend(types::I64, tid);
    let two = b.ins().iconst(types::I64, 2);
    let offset = b.ins().ishl(wide, two);
    let addr = b.ins().iadd(out, offset);
    b.ins().store(MemFlagsData::trusted(), sum, addr, 0);
    b.ins().return_(&[]);
}

/// The "branchy" shape: a chain alternating diamonds (`if c then A else B`) and
/// short-circuit regions (`if c1 && c2 then A else B`), every condition depending on the
/// thread id, the running values `(a: i32, f: f32)` carried through block parameters.
fn branchy(insts: usize, fctx: &mut FunctionBuilderContext, isa: &dyn TargetIsa) -> Function {
    let mut func = signature_function("branchy");
    let mut b = FunctionBuilder::new(&mut func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let out = b.block_params(entry)[0];
    let tid = b.block_params(entry)[1];
    let seven = b.ins().iconst(types::I32, 7);
    let one_half = b.ins().f32const(1.5);
    let three = b.ins().iconst(types::I32, 3);
    let f0 = b.ins().fcvt_from_sint(types::F32, tid);
    // Each region's head takes the running values as parameters.
    let region_head = |b: &mut FunctionBuilder| {
        let h = b.create_block();
        b.append_block_param(h, types::I32);
        b.append_block_param(h, types::F32);
        h
    };
    let mut head = region_head(&mut b);
    b.ins().jump(head, &[tid.into(), f0.into()]);
    let regions = insts / 16 + 1;
    for r in 0..regions {
        b.switch_to_block(head);
        b.seal_block(head);
        let a = b.block_params(head)[0];
        let f = b.block_params(head)[1];
        let t = b.ins().band(a, seven);
        let c = b.ins().icmp(IntCC::UnsignedLessThan, t, three);
        let left = b.create_block();
        let right = b.create_block();
        let join = region_head(&mut b);
        if r % 2 == 0 {
            b.ins().brif(c, left, &[], right, &[]);
        } else {
            let test = b.create_block();
            b.ins().brif(c, test, &[], right, &[]);
            b.switch_to_block(test);
            b.seal_block(test);
            let t2 = b.ins().bxor(a, tid);
            let c2 = b.ins().icmp(IntCC::UnsignedGreaterThan, t2, seven);
            b.ins().brif(c2, left, &[], right, &[]);
        }
        b.seal_block(left);
        b.seal_block(right);
        for arm in [left, right] {
            b.switch_to_block(arm);
            let x = if arm == left {
                b.ins().iadd(a, seven)
            } else {
                b.ins().isub(a, seven)
            };
            let y = b.ins().imul(x, a);
            let g = b.ins().fadd(f, one_half);
            let h = b.ins().fmul(g, one_half);
            b.ins().jump(join, &[y.into(), h.into()]);
        }
        b.switch_to_block(join);
        b.seal_block(join);
        let ja = b.block_params(join)[0];
        let jf = b.block_params(join)[1];
        let shifted = b.ins().ushr(ja, three);
        head = region_head(&mut b);
        b.ins().jump(head, &[shifted.into(), jf.into()]);
    }
    b.switch_to_block(head);
    b.seal_block(head);
    let a = b.block_params(head)[0];
    let f = b.block_params(head)[1];
    store_result(&mut b, out, tid, a, f);
    b.finalize(isa.frontend_config());
    func
}

/// The "loops" shape: `insts / 8` counted loops in sequence, each a preheader taking the
/// running sum and a header-latch block running four times: `sum += (tid * 3 + 1) ^ 2`,
/// `i += 1`, `i < 4`, the sum passed on to the next loop's preheader.
fn loops(insts: usize, fctx: &mut FunctionBuilderContext, isa: &dyn TargetIsa) -> Function {
    let mut func = signature_function("loops");
    let mut b = FunctionBuilder::new(&mut func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let out = b.block_params(entry)[0];
    let tid = b.block_params(entry)[1];
    let one = b.ins().iconst(types::I32, 1);
    let zero = b.ins().iconst(types::I32, 0);
    let three = b.ins().iconst(types::I32, 3);
    let two = b.ins().iconst(types::I32, 2);
    let four = b.ins().iconst(types::I32, 4);
    // The block the next loop starts in, taking the running sum.
    let preheader = |b: &mut FunctionBuilder| {
        let p = b.create_block();
        b.append_block_param(p, types::I32);
        p
    };
    let mut pre = preheader(&mut b);
    b.ins().jump(pre, &[tid.into()]);
    for _ in 0..insts / 8 {
        b.switch_to_block(pre);
        b.seal_block(pre);
        let x = b.block_params(pre)[0];
        let head = b.create_block();
        b.append_block_param(head, types::I32);
        b.append_block_param(head, types::I32);
        b.ins().jump(head, &[zero.into(), x.into()]);
        b.switch_to_block(head);
        let i = b.block_params(head)[0];
        let acc = b.block_params(head)[1];
        let t = b.ins().imul(tid, three);
        let t = b.ins().iadd(t, one);
        let t = b.ins().bxor(t, two);
        let sum = b.ins().iadd(acc, t);
        let next_i = b.ins().iadd(i, one);
        let again = b.ins().icmp(IntCC::SignedLessThan, next_i, four);
        pre = preheader(&mut b);
        b.ins().brif(
            again,
            head,
            &[next_i.into(), sum.into()],
            pre,
            &[sum.into()],
        );
        b.seal_block(head);
    }
    b.switch_to_block(pre);
    b.seal_block(pre);
    let sum = b.block_params(pre)[0];
    let wide = b.ins().uextend(types::I64, tid);
    let two64 = b.ins().iconst(types::I64, 2);
    let offset = b.ins().ishl(wide, two64);
    let addr = b.ins().iadd(out, offset);
    b.ins().store(MemFlagsData::trusted(), sum, addr, 0);
    b.ins().return_(&[]);
    b.finalize(isa.frontend_config());
    func
}

fn build(
    shape: &str,
    insts: usize,
    fctx: &mut FunctionBuilderContext,
    isa: &dyn TargetIsa,
) -> Option<Function> {
    match shape {
        "straight" => Some(straight(insts, fctx, isa)),
        "branchy" => Some(branchy(insts, fctx, isa)),
        "loops" => Some(loops(insts, fctx, isa)),
        _ => None,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn run() -> Result<(), String> {
    let usage = "usage: cranelift-shapes straight|branchy|loops SIZE [REPS]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (shape, size) = match &args[..] {
        [shape, size, ..] => (shape.as_str(), size),
        _ => return Err(usage.into()),
    };
    let size: usize = size.parse().map_err(|_| format!("bad size {size:?}"))?;
    let reps: usize = match args.get(2) {
        Some(r) => r.parse().map_err(|_| format!("bad repetitions {r:?}"))?,
        None => 1,
    }
    .max(1);
    let isa = isa()?;
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = Context::new();
    let (mut builds, mut compiles) = (Vec::new(), Vec::new());
    let (mut insts, mut bytes) = (0, 0);
    for _ in 0..reps {
        let start = Instant::now();
        let func = build(shape, size, &mut fctx, &*isa).ok_or_else(|| usage.to_string())?;
        builds.push(start.elapsed().as_secs_f64());
        insts = func
            .layout
            .blocks()
            .map(|b| func.layout.block_insts(b).count())
            .sum();
        ctx.clear();
        ctx.func = func;
        let start = Instant::now();
        let code = ctx
            .compile(&*isa, &mut ControlPlane::default())
            .map_err(|e| format!("{:?}", e.inner))?;
        compiles.push(start.elapsed().as_secs_f64());
        bytes = code.code_buffer().len();
    }
    println!(
        "{insts} {:.6} {:.6} {bytes}",
        median(builds),
        median(compiles)
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cranelift-shapes: {e}");
            ExitCode::FAILURE
        }
    }
}
