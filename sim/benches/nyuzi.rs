//! Functional-mode speed of the Nyuzi simulator, in retired instructions per second
//! (criterion `Throughput::Elements`): (a) a vector float loop (`load_v`, `mul_f`,
//! `add_f`, `store_v` over a buffer) and (b) a 1-D 3-point stencil whose neighbours
//! come from gathers. Both are hand-assembled from `Inst` values.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sim::nyuzi::asm::{li, mem as m, rr as r, si, stream_passes};
use sim::nyuzi::*;

const SRC: u32 = 0x1_0000;
const DST: u32 = 0x5_0000;
/// Floats per buffer (64 KiB).
const N: u32 = 16 * 1024;
/// Passes over the buffer per run.
const PASSES: i32 = 20;

/// Wraps a loop body (which advances s1 = src and s3 = dst by 64 and runs while
/// s1 < s2) in `PASSES` passes over the buffer, then halts.
fn program(setup: &[Inst], body: &[Inst]) -> Vec<Inst> {
    use AluOp::*;
    let mut p: Vec<Inst> = setup.to_vec();
    p.push(si(Move, 20, 0, PASSES));
    let outer = p.len();
    p.extend(li(1, SRC));
    p.extend(li(2, SRC + 4 * N));
    p.extend(li(3, DST));
    stream_passes(&mut p, outer, body);
    p.extend([si(Move, 21, 0, -1), m(MemOp::ControlReg, false, 21, 20, 0)]);
    p
}

fn vector_float_loop() -> Vec<Inst> {
    use AluOp::*;
    let mut setup = li(5, 1.5f32.to_bits()).to_vec();
    setup.push(r(RFmt::Vvs, Move, 0, 0, 5));
    program(
        &setup,
        &[
            m(MemOp::Block, true, 1, 1, 0),
            r(RFmt::Vvv, MulF, 2, 1, 0),
            r(RFmt::Vvv, AddF, 2, 2, 1),
            m(MemOp::Block, false, 2, 3, 0),
        ],
    )
}

fn stencil() -> Vec<Inst> {
    use AluOp::*;
    let mut setup = li(5, (1.0f32 / 3.0).to_bits()).to_vec();
    // v9 = lane byte offsets [0, 4, ..., 60], from a table at SRC - 64.
    setup.extend(li(6, SRC - 64));
    setup.push(m(MemOp::Block, true, 9, 6, 0));
    program(
        &setup,
        &[
            r(RFmt::Vvs, AddI, 10, 9, 1),
            m(MemOp::Gather, true, 1, 10, -4),
            m(MemOp::Block, true, 2, 1, 0),
            m(MemOp::Gather, true, 3, 10, 4),
            r(RFmt::Vvv, AddF, 4, 1, 2),
            r(RFmt::Vvv, AddF, 4, 4, 3),
            r(RFmt::Vvs, MulF, 4, 4, 5),
            m(MemOp::Block, false, 4, 3, 0),
        ],
    )
}

fn machine(prog: &[Inst]) -> Machine {
    let mut mach = Machine::new(Config {
        memory_size: 0x10_0000,
        ..Config::default()
    });
    let words: Vec<u32> = prog.iter().map(encode).collect();
    mach.load_words(0, &words).expect("program fits");
    let lanes: Vec<u32> = (0..16).map(|i| 4 * i).collect();
    mach.load_words(SRC - 64, &lanes).expect("table fits");
    // The stencil reads one word past the buffer: keep it inside memory.
    let data: Vec<u32> = (0..N + 16).map(|i| (i as f32 * 0.5).to_bits()).collect();
    mach.load_words(SRC, &data).expect("buffer fits");
    mach
}

fn bench(c: &mut Criterion, name: &str, prog: Vec<Inst>) {
    let mut probe = machine(&prog);
    let summary = probe.run().expect("benchmark program runs");
    let mut g = c.benchmark_group("nyuzi_functional");
    g.throughput(Throughput::Elements(summary.instructions));
    g.bench_function(name, |bch| {
        bch.iter_batched_ref(
            || machine(&prog),
            |mach| mach.run().expect("runs"),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench(c, "vector_float_loop", vector_float_loop());
    bench(c, "stencil_3pt", stencil());
}

criterion_group!(nyuzi, benches);
criterion_main!(nyuzi);
