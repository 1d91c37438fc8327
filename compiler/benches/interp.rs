//! Interpreter throughput on a stencil-like kernel: `cargo bench -p spmdc --bench interp`.
//!
//! The kernel is the 1-D three-point stencil of lang-spec/memory.md written directly in
//! IR: `out[i] = (src[i-1] + src[i] + src[i+1]) / 3` for `0 < i < n-1`, one thread per
//! element, blocks of 128 threads in gangs of 16. Criterion's "elements" are lane
//! operations (the interpreter's `lane_operations` statistic), so the reported rate is
//! lane operations per second; the target is at least 50M/s.
//!
//! A second benchmark runs `examples/stencil1d.spmd` as the compiler lowers it (5-point
//! stencil through `shared` memory with a `barrier()`, locals in private slots): the
//! rate a user's kernel sees today.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sim::Dim3;
use spmdc::interp::{self, i32_arg, Launch, Limits, Memory};
use spmdc::ir::builder::FuncBuilder;
use spmdc::ir::{
    BinaryOp, ConvOp, FuncRef, Function, InstData, IntCC, Linkage, Module, Scalar, Signature,
    Space, SpecialReg, Type, Value,
};

const LANES: u32 = 16;
const N: usize = 1 << 16;

/// `base + i * 4` for a uniform pointer and a varying i32 index.
fn elem(b: &mut FuncBuilder, base: Value, i: Value) -> Value {
    let i = b.value(InstData::Convert {
        op: ConvOp::Sext,
        arg: i,
        to: Type::varying(Scalar::Ptr),
    });
    let four = b.iconst(Type::varying(Scalar::Ptr), 4);
    let off = b.binary(BinaryOp::Imul, i, four);
    let base = b.value(InstData::Splat { arg: base });
    b.binary(BinaryOp::Iadd, base, off)
}

fn stencil() -> (Module, FuncRef) {
    let mut m = Module::new(LANES, 8);
    let sig = Signature {
        params: vec![Type::I32, Type::PTR, Type::PTR],
        ret: None,
        takes_mask: false,
    };
    let mut f = Function::new("stencil", Linkage::Task, sig);
    let entry = f.create_block();
    let n = f.append_block_param(entry, Type::I32);
    let src = f.append_block_param(entry, Type::PTR);
    let out = f.append_block_param(entry, Type::PTR);
    let mut b = FuncBuilder::new(&mut f);
    b.switch_to(entry);
    let bi = b.value(InstData::Special {
        reg: SpecialReg::BlockIdxX,
    });
    let bd = b.value(InstData::Special {
        reg: SpecialReg::BlockDimX,
    });
    let t = b.value(InstData::Special {
        reg: SpecialReg::ThreadIdxX,
    });
    let base = b.binary(BinaryOp::Imul, bi, bd);
    let base = b.value(InstData::Splat { arg: base });
    let i = b.binary(BinaryOp::Iadd, base, t);
    let vi32 = Type::varying(Scalar::I32);
    let one = b.iconst(vi32, 1);
    let lo = b.binary(BinaryOp::Isub, i, one);
    let hi = b.binary(BinaryOp::Iadd, i, one);
    let nv = b.value(InstData::Splat { arg: n });
    let zero = b.iconst(vi32, 0);
    let above = b.value(InstData::Icmp {
        cond: IntCC::Sgt,
        args: [i, zero],
    });
    let below = b.value(InstData::Icmp {
        cond: IntCC::Slt,
        args: [hi, nv],
    });
    let mask = b.binary(BinaryOp::Band, above, below);
    let vf32 = Type::varying(Scalar::F32);
    let mut sum = None;
    for j in [lo, i, hi] {
        let a = elem(&mut b, src, j);
        let x = b.value(InstData::Load {
            ty: vf32,
            space: Space::Global,
            addr: a,
            mask: Some(mask),
        });
        sum = Some(match sum {
            None => x,
            Some(s) => b.binary(BinaryOp::Fadd, s, x),
        });
    }
    let three = b.fconst(vf32, 3.0);
    let r = b.binary(BinaryOp::Fdiv, sum.unwrap(), three);
    let a = elem(&mut b, out, i);
    b.ins(InstData::Store {
        space: Space::Global,
        addr: a,
        value: r,
        mask: Some(mask),
    });
    b.ret(None);
    let func = m.functions.push(f);
    (m, func)
}

fn bench(c: &mut Criterion) {
    let (module, func) = stencil();
    let mut memory = Memory::new();
    let src: Vec<u8> = (0..N).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let src = memory.add_buffer(src, "src");
    let out = memory.add_buffer(vec![0; N * 4], "out");
    let launch = Launch::new(
        Dim3::new((N / 128) as u32, 1, 1),
        Dim3::new(128, 1, 1),
        vec![i32_arg(N as i32), src, out],
    );
    let probe = interp::run(&module, func, &launch, &mut memory, Limits::default()).unwrap();
    println!(
        "stencil over {N} elements: {} gang instructions, {} lane operations",
        probe.stats.dynamic_instructions, probe.stats.lane_operations
    );
    let mut group = c.benchmark_group("interp");
    group.throughput(Throughput::Elements(probe.stats.lane_operations));
    group.sample_size(20);
    group.bench_function("stencil", |bench| {
        bench.iter(|| interp::run(&module, func, &launch, &mut memory, Limits::default()).unwrap())
    });
    group.finish();
    bench_compiled_stencil(c);
}

/// `examples/stencil1d.spmd`, compiled at 16 lanes, over 65536 elements in blocks of 256.
fn bench_compiled_stencil(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/stencil1d.spmd");
    let text = std::fs::read_to_string(path).expect("examples/stencil1d.spmd");
    let front = spmdc::driver::run_front(
        "stencil1d.spmd",
        None,
        text,
        &spmdc::driver::FrontOptions::default(),
        spmdc::driver::Stage::Check,
    );
    let module = spmdc::driver::lower_front(&front).expect("stencil1d lowers");
    let func = module.function_by_name("stencil1d").expect("entry");
    let mut memory = Memory::new();
    let src: Vec<u8> = (0..N).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let src = memory.add_buffer(src, "src");
    let dst = memory.add_buffer(vec![0; N * 4], "dst");
    let launch = Launch::new(
        Dim3::new((N / 256) as u32, 1, 1),
        Dim3::new(256, 1, 1),
        vec![i32_arg(N as i32), src, dst],
    );
    let probe = interp::run(&module, func, &launch, &mut memory, Limits::default()).unwrap();
    println!(
        "compiled stencil1d over {N} elements: {} gang instructions, {} lane operations",
        probe.stats.dynamic_instructions, probe.stats.lane_operations
    );
    let mut group = c.benchmark_group("interp");
    group.throughput(Throughput::Elements(probe.stats.lane_operations));
    group.sample_size(20);
    group.bench_function("compiled_stencil1d", |bench| {
        bench.iter(|| interp::run(&module, func, &launch, &mut memory, Limits::default()).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
