//! Speed of the dac-gpu simulator in thread instructions per second (criterion
//! `Throughput::Elements` = thread instructions of one run), functional
//! ([`sim::gpu::run_functional`]) and timing ([`sim::gpu::run_timing`], GTX 480 preset,
//! GTO), on two kernels over 2^20 threads (4096 blocks of 256): saxpy and a 1-D
//! 3-point stencil that stages a tile with halo in shared memory across `bar.sync`.
//! Each iteration copies fresh global memory (outside the measurement) and runs the
//! whole grid.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sim::gpu::*;

const N: u32 = 1 << 20;
const BLOCK: u32 = 256;

const SAXPY: &str = r#"
.entry saxpy(.param .u32 n, .param .f32 a, .param .u64 x, .param .u64 y)
{
    .reg 9;
    .pred 1;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r0, %r0, %r1, %tid.x;
    ld.param.u32 %r1, [n];
    setp.ge.u32 %p0, %r0, %r1;
    @%p0 bra DONE;
    cvt.u64.u32 %rd2, %r0;
    shl.b64 %rd2, %rd2, 2;
    ld.param.u64 %rd4, [x];
    add.u64 %rd4, %rd4, %rd2;
    ld.global.f32 %r6, [%rd4];
    ld.param.u64 %rd4, [y];
    add.u64 %rd4, %rd4, %rd2;
    ld.global.f32 %r7, [%rd4];
    ld.param.f32 %r8, [a];
    mad.f32 %r7, %r8, %r6, %r7;
    st.global.f32 [%rd4], %r7;
DONE:
    exit;
}
"#;

/// out[i] = (in[i-1] + in[i] + in[i+1]) / 3 with zero outside 0..n; the block's 256
/// inputs and two halo values are staged in shared memory.
const STENCIL: &str = r#"
.entry stencil(.param .u32 n, .param .u64 in, .param .u64 out)
{
    .reg 16;
    .pred 2;
    .shared 1040;
    mov.u32 %r0, %tid.x;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.u32 %r3, %r1, %r2, %r0;          // i
    ld.param.u32 %r4, [n];
    ld.param.u64 %rd6, [in];
    cvt.u64.u32 %rd8, %r3;
    shl.b64 %rd8, %rd8, 2;
    add.u64 %rd10, %rd6, %rd8;           // &in[i]
    ld.global.f32 %r12, [%rd10];
    shl.b32 %r13, %r0, 2;
    st.shared.f32 [%r13+4], %r12;        // s[t + 1]
    setp.ne.u32 %p0, %r0, 0;
    @%p0 bra RIGHT;
    mov.f32 %r12, 0f00000000;
    setp.eq.u32 %p1, %r3, 0;
    @!%p1 ld.global.f32 %r12, [%rd10-4];
    st.shared.f32 [0], %r12;             // left halo
RIGHT:
    sub.u32 %r14, %r2, 1;
    setp.ne.u32 %p0, %r0, %r14;
    @%p0 bra SYNC;
    mov.f32 %r12, 0f00000000;
    add.u32 %r15, %r3, 1;
    setp.ge.u32 %p1, %r15, %r4;
    @!%p1 ld.global.f32 %r12, [%rd10+4];
    st.shared.f32 [%r13+8], %r12;        // right halo
SYNC:
    bar.sync 0;
    ld.shared.f32 %r12, [%r13];
    ld.shared.f32 %r14, [%r13+4];
    add.f32 %r12, %r12, %r14;
    ld.shared.f32 %r14, [%r13+8];
    add.f32 %r12, %r12, %r14;
    mul.f32 %r12, %r12, 0f3EAAAAAB;
    ld.param.u64 %rd6, [out];
    add.u64 %rd10, %rd6, %rd8;
    st.global.f32 [%rd10], %r12;
    exit;
}
"#;

fn floats(n: u32, f: impl Fn(u32) -> f32) -> Vec<u8> {
    (0..n).flat_map(|i| f(i).to_le_bytes()).collect()
}

fn setup(p: &Program, name: &str) -> (Launch, GlobalMemory) {
    let mut mem = GlobalMemory::new();
    let k = p.kernel(name).expect("kernel");
    let params = if name == "saxpy" {
        let x = mem.add_buffer(floats(N, |i| i as f32), "x");
        let y = mem.add_buffer(floats(N, |i| (i % 13) as f32), "y");
        pack_params(k, &[u64::from(N), u64::from(1.5f32.to_bits()), x, y])
    } else {
        let a = mem.add_buffer(floats(N, |i| (i % 17) as f32), "in");
        let b = mem.add_zeroed(N as usize * 4, "out");
        pack_params(k, &[u64::from(N), a, b])
    };
    let l = Launch {
        kernel: name.into(),
        grid: (N / BLOCK, 1, 1),
        block: (BLOCK, 1, 1),
        params,
    };
    (l, mem)
}

fn bench_kernel(c: &mut Criterion, text: &str, name: &str) {
    let p = parse(text).expect("assembles");
    let (l, mem) = setup(&p, name);
    let cfg = GpuConfig::gtx480();
    let f = run_functional(&p, &l, &mut mem.clone(), Limits::default()).expect("runs");
    let t = run_timing(
        &p,
        &l,
        &mut mem.clone(),
        &cfg,
        Limits::default(),
        SchedulerKind::Gto,
    )
    .expect("runs");
    eprintln!(
        "{name}: {} thread instructions, {} warp instructions, {} cycles, ipc {:.1}, l2 hit rate {:.2}, bank conflicts {}",
        t.thread_insts,
        t.warp_insts,
        t.cycles,
        t.stats.ipc(),
        t.stats.l2_hit_rate(),
        t.stats.shared_bank_conflicts
    );
    let mut g = c.benchmark_group("gpu");
    g.throughput(Throughput::Elements(f.thread_insts));
    g.sample_size(10);
    g.bench_function(format!("{name}_functional"), |b| {
        b.iter_batched(
            || mem.clone(),
            |mut m| {
                run_functional(&p, &l, &mut m, Limits::default())
                    .expect("runs")
                    .warp_insts
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function(format!("{name}_timing"), |b| {
        b.iter_batched(
            || mem.clone(),
            |mut m| {
                run_timing(&p, &l, &mut m, &cfg, Limits::default(), SchedulerKind::Gto)
                    .expect("runs")
                    .cycles
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_kernel(c, SAXPY, "saxpy");
    bench_kernel(c, STENCIL, "stencil");
}

criterion_group!(gpu, benches);
criterion_main!(gpu);
