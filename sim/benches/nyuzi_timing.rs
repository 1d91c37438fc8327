//! Timing-mode speed of the Nyuzi simulator ([`sim::nyuzi::timing::run_timing`]), in
//! retired instructions per second (criterion `Throughput::Elements`), on hand-assembled
//! programs: (a) a vector float loop (`load_v`, `mul_f`, `add_f`, `store_v`) with one
//! and with four hardware threads, each thread streaming over its own 64 KiB buffer;
//! (b) a 1-D 3-point stencil whose neighbours come from gathers, four threads.
//! Each iteration builds a fresh machine (outside the measurement) and runs it to the end.
//! With `NYUZI_TIMING_STATS=1` every counter of each program's report is printed too
//! (`cargo bench -p sim --bench nyuzi_timing -- --test`), so a speed change of the
//! model can be checked to leave its results exactly as they were.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sim::nyuzi::asm::{cr, li, mem, rr as r, si, stream_passes, vi};
use sim::nyuzi::timing::{run_timing, TimingConfig};
use sim::nyuzi::*;

/// Thread t's source buffer is at SRC + t * REGION, its destination DST + t * REGION.
const SRC: u32 = 0x10_0000;
const DST: u32 = 0x50_0000;
const REGION: u32 = 0x1_0000;
/// Floats per thread buffer (64 KiB).
const N: u32 = 16 * 1024;
const PASSES: i32 = 10;
/// Lane offsets 0, 4, ..., 60 for gather addresses.
const LANE_OFFSETS: u32 = 0x8000;

/// Starts every thread; each computes s9 = its buffer offset, runs `PASSES` passes of
/// `body` over its buffer (s1 = src, s3 = dst, both advanced by 64 while s1 < s2;
/// `pass_setup` runs before each pass), then halts itself.
fn program(pass_setup: &[Inst], body: &[Inst]) -> Vec<Inst> {
    use AluOp::*;
    let mut p = vec![si(Move, 0, 0, -1), cr(false, 0, 21), cr(true, 8, 0)];
    p.push(si(Shl, 9, 8, REGION.trailing_zeros() as i32));
    p.push(si(Move, 20, 0, PASSES));
    let outer = p.len();
    p.extend(li(1, SRC));
    p.push(r(RFmt::Sss, AddI, 1, 1, 9));
    p.extend(li(2, 4 * N));
    p.push(r(RFmt::Sss, AddI, 2, 2, 1));
    p.extend(li(3, DST));
    p.push(r(RFmt::Sss, AddI, 3, 3, 9));
    p.extend_from_slice(pass_setup);
    stream_passes(&mut p, outer, body);
    // Halt this thread.
    p.extend([
        si(Move, 5, 0, 1),
        r(RFmt::Sss, Shl, 5, 5, 8),
        cr(false, 5, 20),
    ]);
    p
}

/// dst[i] = src[i] * 1.5 + src[i], sixteen lanes at a time.
fn float_loop() -> Vec<Inst> {
    use AluOp::*;
    let setup = [li(10, 1.5f32.to_bits()).to_vec()].concat();
    let body = [
        mem(MemOp::Block, true, 1, 1, 0),
        r(RFmt::Vvs, MulF, 2, 1, 10),
        r(RFmt::Vvv, AddF, 2, 2, 1),
        mem(MemOp::Block, false, 2, 3, 0),
    ];
    program(&setup, &body)
}

/// dst[i] = (src[i-1] + src[i] + src[i+1]) * (1/3): the centre from a block load,
/// the neighbours from gathers at offsets -4 and +4 of the lane addresses in v10.
fn stencil() -> Vec<Inst> {
    use AluOp::*;
    let mut setup = li(11, (1.0f32 / 3.0).to_bits()).to_vec();
    setup.extend(li(12, LANE_OFFSETS));
    setup.push(mem(MemOp::Block, true, 10, 12, 0));
    setup.push(r(RFmt::Vvs, AddI, 10, 10, 1)); // v10 = s1 + lane * 4
    let body = [
        mem(MemOp::Block, true, 1, 1, 0),
        mem(MemOp::Gather, true, 2, 10, -4),
        mem(MemOp::Gather, true, 3, 10, 4),
        r(RFmt::Vvv, AddF, 4, 1, 2),
        r(RFmt::Vvv, AddF, 4, 4, 3),
        r(RFmt::Vvs, MulF, 4, 4, 11),
        mem(MemOp::Block, false, 4, 3, 0),
        vi(AddI, 10, 10, 64),
    ];
    program(&setup, &body)
}

fn machine(prog: &[Inst], threads: u32) -> Machine {
    let mut m = Machine::new(Config {
        cores: 1,
        threads_per_core: threads,
        memory_size: 0x100_0000,
        max_instructions: u64::MAX,
    });
    let words: Vec<u32> = prog.iter().map(encode).collect();
    m.load_words(0, &words).expect("program fits");
    let offsets: Vec<u8> = (0..16u32).flat_map(|i| (4 * i).to_le_bytes()).collect();
    m.write_bytes(LANE_OFFSETS, &offsets).expect("offsets fit");
    // Source values: a ramp, so the float ops see ordinary numbers.
    for t in 0..threads {
        let data: Vec<u8> = (0..N + 32)
            .flat_map(|i| (i as f32).to_bits().to_le_bytes())
            .collect();
        m.write_bytes(SRC + t * REGION - 64, &data)
            .expect("data fits");
    }
    m
}

fn bench_one(c: &mut Criterion, name: &str, prog: &[Inst], threads: u32) {
    let cfg = TimingConfig::default();
    let report = run_timing(&mut machine(prog, threads), &cfg).expect("runs");
    eprintln!(
        "{name}: {} instructions, {} cycles, ipc {:.3}, l1d misses {}",
        report.instructions, report.cycles, report.ipc, report.l1d.read_misses
    );
    // NYUZI_TIMING_STATS=1 prints every counter, to check that a speed change of
    // the model leaves its results exactly as they were.
    if std::env::var_os("NYUZI_TIMING_STATS").is_some() {
        for (k, v) in report.stat_pairs() {
            eprintln!("{name}.{k} = {v}");
        }
    }
    let mut g = c.benchmark_group("nyuzi_timing");
    g.throughput(Throughput::Elements(report.instructions));
    g.sample_size(10);
    g.bench_function(name, |b| {
        b.iter_batched(
            || machine(prog, threads),
            |mut m| run_timing(&mut m, &cfg).expect("runs").cycles,
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_one(c, "float_loop_1t", &float_loop(), 1);
    bench_one(c, "float_loop_4t", &float_loop(), 4);
    bench_one(c, "stencil_4t", &stencil(), 4);
}

criterion_group!(timing, benches);
criterion_main!(timing);
