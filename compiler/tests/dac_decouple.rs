//! Tests of the decoupling pass (`back::dac_gpu::decouple`, `Options::dac`).
//!
//! * GPU-style kernels with one-dimensional blocks, decoupled: the buffers equal the
//!   interpreter's bit for bit, the non-affine warps issue fewer instructions than the
//!   baseline, and loads go through `[deq.data]` (timing runs, with the DAC
//!   statistics). Kernels the pass does not decouple (loops some warps skip)
//!   must run unchanged; uniform loops are replicated in the affine stream; 2-D and
//!   3-D blocks decouple, launched in their real shape.
//! * Every example launch and every ISPC-style and conformance program gives the
//!   interpreter's results with decoupling on (through `common::launches`, as
//!   `tests/dac_gpu.rs` does for the baseline), multi-dimensional blocks included.

mod common;

use std::path::Path;

use common::launches::*;

use spmdc::back::dac_gpu::run::{self as dac, DacRunOptions};
use spmdc::back::dac_gpu::Options;
use spmdc::driver::{self, FrontResult};
use spmdc::launch::{RunResult, StatValue};

const MAX_STEPS: u64 = 100_000_000;

fn front_of(path: &Path) -> FrontResult {
    common::check_file_for(path, common::DAC_GPU)
}

/// The front end's result for source `text` (named `name`).
fn front_of_text(name: &str, text: &str) -> FrontResult {
    common::check_source_for(name, text, common::DAC_GPU)
}

fn run(front: &FrontResult, spec: &LaunchSpec, dac_on: bool, timing: bool) -> RunResult {
    let opts = DacRunOptions {
        timing,
        codegen: Options {
            dac: dac_on,
            ..Options::default()
        },
        ..DacRunOptions::default()
    };
    dac::run_on_dac_gpu(front, &spec.request(MAX_STEPS), &opts)
        .unwrap_or_else(|e| panic!("{}: {}", spec.entry, run_error(e, front)))
}

fn stat(r: &RunResult, k: &str) -> f64 {
    match r.stats.get(k) {
        Some(StatValue::Count(v)) => v as f64,
        Some(StatValue::Ratio(v)) => v,
        None => 0.0,
    }
}

/// What the first version does to a kernel.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// Loads (and maybe stores) decoupled.
    Loads,
    /// Only stores decoupled (loads in loops stay baseline).
    StoresOnly,
}

/// (file, launch, what the first version does to it).
const KERNELS: &[(&str, &str, Expect)] = &[
    (
        "examples/saxpy_gpu.spmd",
        "--entry saxpy_gpu --grid 4 --block 256 --arg n=1000 --arg a=2 \
         --arg x='range(1000)' --arg y='fill(1000,1)'",
        Expect::Loads,
    ),
    (
        "examples/jacobi2d_gpu.spmd",
        "--entry jacobi2d_gpu --grid 1,32 --block 64 --arg nx=64 --arg ny=32 --arg c0=0.5 \
         --arg c1=0.1 --arg c2=0.025 --arg w0='random(2048,3)' --arg w1='zeros(2048)'",
        Expect::Loads,
    ),
    (
        "examples/wave13pt_gpu.spmd",
        "--entry wave13pt_gpu --grid 1,16,16 --block 16 --arg nx=16 --arg ny=16 --arg nz=16 \
         --arg c0=1.5 --arg c1=0.1 --arg c2=-0.05 --arg w0='random(4096,5)' \
         --arg w1='random(4096,6)' --arg w2='zeros(4096)'",
        Expect::Loads,
    ),
    (
        "examples/laplacian3d.spmd",
        "--entry laplacian3d --grid 1,32,32 --block 32 --arg n=32 --arg alpha=-6 --arg beta=1 \
         --arg w0='random(32768,9)' --arg w1='zeros(32768)'",
        Expect::Loads,
    ),
    (
        "examples/stencil1d.spmd",
        "--entry stencil1d --grid 4 --block 256 --arg n=1000 --arg src='random(1000,8)' \
         --arg dst='zeros(1000)'",
        Expect::Loads,
    ),
    (
        // A `for (int i ..)` loop (a varying counter proved uniform): replicated.
        "examples/strided_copy.spmd",
        "--entry strided_copy --grid 2 --block 64 --arg n=32 --arg stride=3 \
         --arg src='range(12288)' --arg dst='zeros(4096)'",
        Expect::Loads,
    ),
    (
        "examples/matmul_tiled.spmd",
        "--entry matmul_tiled --grid 3,3 --block 16,16 --arg n=40 --arg a='random(1600,1)' \
         --arg b='random(1600,2)' --arg c='zeros(1600)'",
        Expect::Loads, // a 2-D block, launched in its real shape
    ),
    (
        // The halving loop (`s = blockDim.x / 2; s > 0; s >>= 1`, with barriers):
        // its bound is uniform scalar work the affine stream replays.
        "examples/block_reduce.spmd",
        "--entry block_reduce --grid 4 --block 128 --arg n=1000 --arg x='random(1000,4)' \
         --arg partial='zeros(4)'",
        Expect::Loads,
    ),
    (
        "examples/mandelbrot_gpu.spmd",
        "--entry mandelbrot_gpu --grid 2,48 --block 32 --arg x0=-2 --arg y0=-1 --arg x1=1 \
         --arg y1=1 --arg width=64 --arg height=48 --arg maxIter=64 --arg out='zeros(3072)'",
        Expect::StoresOnly, // the store after the loop
    ),
];

#[test]
fn gpu_kernels_decouple_bit_for_bit_with_fewer_warp_instructions() {
    let root = common::repo_root();
    let mut failures = Vec::new();
    for &(file, launch, expect) in KERNELS {
        let front = front_of(&root.join(file));
        check_kernel(file, &front, launch, expect, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Uniform loops (the affine stream replicates their control): (name, source,
/// launch, expectation).
const LOOP_KERNELS: &[(&str, &str, &str, Expect)] = &[
    (
        "column_sums",
        "task void column_sums(uniform int n, uniform int m, uniform float a[], \
                               uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            float s = 0;
            for (uniform int k = 0; k < m; k++) {
                s += a[i + k * n];
            }
            out[i] = s;
        }",
        "--entry column_sums --grid 4 --block 128 --arg n=512 --arg m=9 \
         --arg a='random(4608,3)' --arg out='zeros(512)'",
        Expect::Loads,
    ),
    (
        "scale_columns",
        // A store in the loop, a bound from a parameter and a step of 2.
        "task void scale_columns(uniform int n, uniform int m, uniform float a[], \
                                 uniform float b[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            for (uniform int k = 1; k < m; k += 2) {
                b[i + k * n] = 2 * a[i + k * n] + a[i + (k - 1) * n];
            }
        }",
        "--entry scale_columns --grid 2 --block 96 --arg n=192 --arg m=7 \
         --arg a='random(1344,4)' --arg b='zeros(1344)'",
        Expect::Loads,
    ),
    (
        "varying_counter",
        // ISPC-style: `int k` is varying, the loop is controlled by `any` of its mask.
        "task void varying_counter(uniform int n, uniform int m, uniform float a[], \
                                   uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            float s = 0;
            for (int k = 0; k < m; k++) {
                s += a[i + k * n] * k;
            }
            out[i] = s;
        }",
        "--entry varying_counter --grid 3 --block 160 --arg n=480 --arg m=6 \
         --arg a='random(2880,6)' --arg out='zeros(480)'",
        Expect::Loads,
    ),
    (
        "barrier_loop",
        // Barriers inside a uniform loop (pathfinder's row steps), replicated in both
        // streams; a masked global load in the loop.
        "task void barrier_loop(uniform int n, uniform int steps, uniform int w[], \
                                uniform int out[]) {
            shared uniform int row[64];
            int tx = threadIdx.x;
            int x = blockIdx.x * 64 + tx;
            row[tx] = 0;
            barrier();
            for (uniform int r = 0; r < steps; r++) {
                int c = x < n ? w[r * n + x] : 0;
                int nb = row[63 - tx];
                barrier();
                row[tx] = nb + c;
                barrier();
            }
            if (x < n) out[x] = row[tx];
        }",
        "--entry barrier_loop --grid 3 --block 64 --arg n=170 --arg steps=6 \
         --arg w='random(1020,7)' --arg out='zeros(170)'",
        Expect::Loads,
    ),
    (
        "grid_stride",
        // A grid-stride loop whose body is a skip region (scale+copy).
        "task void grid_stride(uniform int n, uniform float a[], uniform float b[]) {
            uniform int stride = gridDim.x * blockDim.x;
            int i0 = blockIdx.x * blockDim.x + threadIdx.x;
            for (uniform int base = 0; base < n; base += stride) {
                int i = base + i0;
                if (i < n) b[i] = 3 * a[i];
            }
        }",
        "--entry grid_stride --grid 2 --block 96 --arg n=500 \
         --arg a='random(500,8)' --arg b='zeros(500)'",
        Expect::Loads,
    ),
    (
        "nested_loops",
        // Nested uniform loops (a filter window), both replicated.
        "task void nested_loops(uniform int n, uniform int m, uniform float a[], \
                                uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            float s = 0;
            for (uniform int r = 0; r < m; r++)
                for (uniform int c = 0; c < 3; c++)
                    s += a[i + r * n + c] * (c + 1);
            out[i] = s;
        }",
        "--entry nested_loops --grid 2 --block 128 --arg n=256 --arg m=4 \
         --arg a='random(1300,9)' --arg out='zeros(256)'",
        Expect::Loads,
    ),
    (
        "skipped_filter",
        // Filter loops with constant trip counts after a bound check's `return`
        // (conv2d): replicated; warps past the end drain them with counted loops.
        "task void skipped_filter(uniform int n, uniform float a[], uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            float s = 0;
            for (uniform int r = -1; r <= 1; r++)
                for (uniform int c = 0; c < 3; c++)
                    s += a[i + r * 3 + c + 3] * (c + r);
            out[i] = s;
        }",
        "--entry skipped_filter --grid 3 --block 128 --arg n=300 \
         --arg a='random(320,10)' --arg out='zeros(384)'",
        Expect::Loads,
    ),
    (
        "guarded_loop",
        // The loop under a bound check that whole warps may skip: not replicated.
        "task void guarded_loop(uniform int n, uniform int m, uniform float a[], \
                                uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) {
                float s = 0;
                for (uniform int k = 0; k < m; k++) {
                    s += a[i + k * n];
                }
                out[i] = s;
            }
        }",
        "--entry guarded_loop --grid 3 --block 128 --arg n=300 --arg m=5 \
         --arg a='random(1500,5)' --arg out='zeros(300)'",
        Expect::StoresOnly,
    ),
];

#[test]
fn uniform_loops_decouple_bit_for_bit_with_fewer_warp_instructions() {
    let mut failures = Vec::new();
    for &(name, source, launch, expect) in LOOP_KERNELS {
        let front = front_of_text(name, source);
        check_kernel(name, &front, launch, expect, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `launch` of `front` on the interpreter, the baseline and decoupled, and
/// records in `failures` what differs from the interpreter or from `expect`.
fn check_kernel(
    file: &str,
    front: &FrontResult,
    launch: &str,
    expect: Expect,
    failures: &mut Vec<String>,
) {
    let spec = parse_command(launch);
    let want = driver::run_on_interp(front, &spec.request(MAX_STEPS))
        .unwrap_or_else(|e| panic!("{file}: interp: {}", run_error(e, front)));
    let base = run(front, &spec, false, true);
    let got = run(front, &spec, true, true);
    if let Err(e) = compare("dac-gpu --dac", &want, &got) {
        failures.push(format!("{file}: {e}"));
        return;
    }
    let (bi, di) = (
        stat(&base, "warp_instructions"),
        stat(&got, "warp_instructions"),
    );
    let deq = stat(&got, "deq_data_instructions");
    let share = stat(&got, "loads_decoupled");
    eprintln!(
        "{file}: non-affine warp insts {bi} -> {di}, affine {}, loads decoupled {share:.3}, \
             cycles {} -> {}",
        stat(&got, "affine_warp_instructions"),
        stat(&base, "cycles"),
        stat(&got, "cycles"),
    );
    let deq_addr = stat(&got, "deq_addr_instructions");
    let ok = match expect {
        Expect::Loads => di < bi && deq > 0.0 && share > 0.0,
        Expect::StoresOnly => di < bi && deq == 0.0 && deq_addr > 0.0,
    };
    if !ok {
        failures.push(format!(
            "{file}: not as expected ({bi} -> {di} insts, {deq} deq.data, \
                 {deq_addr} deq.addr)"
        ));
    }
}

/// Kernels with 2-D and 3-D blocks, launched in their real shape: `tid.x` wraps inside
/// warps (the AEU's row and plane steps), blocks whose x extent is not a multiple of
/// 32 and partial last warps (20 x 3 = 60 threads). (name, source, launch.)
const MULTI_DIM_KERNELS: &[(&str, &str, &str)] = &[
    (
        "transpose_2d",
        // A 2-D block reading rows and writing columns (a stride per tid.y).
        "task void transpose_2d(uniform int w, uniform int h, uniform float a[], \
                                uniform float b[]) {
            int x = blockIdx.x * blockDim.x + threadIdx.x;
            int y = blockIdx.y * blockDim.y + threadIdx.y;
            if (x < w && y < h) b[x * h + y] = 2 * a[y * w + x] + a[y * w];
        }",
        "--entry transpose_2d --grid 3,4 --block 20,3 --arg w=55 --arg h=12 \
         --arg a='random(660,11)' --arg b='zeros(660)'",
    ),
    (
        "copy_2d",
        "task void copy_2d(uniform int w, uniform float a[], uniform float b[]) {
            int x = blockIdx.x * blockDim.x + threadIdx.x;
            int y = blockIdx.y * blockDim.y + threadIdx.y;
            b[y * w + x] = a[y * w + x] + 1;
        }",
        "--entry copy_2d --grid 2,3 --block 16,16 --arg w=32 \
         --arg a='random(1536,12)' --arg b='zeros(1536)'",
    ),
    (
        "returns_2d",
        // An `export` entry's return value: stored by the first thread only.
        "export uniform int returns_2d(uniform int w, uniform float a[], \
                                       uniform float b[]) {
            int i = threadIdx.y * w + threadIdx.x;
            b[i] = a[i] * 2;
            return w + 1;
        }",
        "--entry returns_2d --block 8,4 --arg w=8 --arg a='random(32,14)' \
         --arg b='zeros(32)'",
    ),
    (
        "scale_3d",
        "task void scale_3d(uniform int nx, uniform int ny, uniform float a[], \
                            uniform float b[]) {
            int x = threadIdx.x;
            int y = threadIdx.y;
            int z = blockIdx.x * blockDim.z + threadIdx.z;
            int i = (z * ny + y) * nx + x;
            b[i] = 3 * a[i] - a[z * nx * ny];
        }",
        "--entry scale_3d --grid 3 --block 6,5,2 --arg nx=6 --arg ny=5 \
         --arg a='random(180,13)' --arg b='zeros(180)'",
    ),
];

/// Multi-dimensional blocks decouple (loads through `[deq.data]`) and match the
/// interpreter bit for bit.
#[test]
fn multi_dimensional_blocks_decouple_bit_for_bit() {
    let mut failures = Vec::new();
    for &(name, source, launch) in MULTI_DIM_KERNELS {
        let front = front_of_text(name, source);
        check_kernel(name, &front, launch, Expect::Loads, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Compares of an affine value that decouple (`enq.pred` / `deq.pred`): the masks
/// come from the predicate expansion unit and the index arithmetic that only fed
/// them leaves the non-affine stream. (name, source, launch.)
const PREDICATE_KERNELS: &[(&str, &str, &str)] = &[
    (
        "bound_check",
        // `i < n` with a partial last block (250 of 288 threads) and 3-warp blocks.
        "task void bound_check(uniform int n, uniform float a, uniform float x[], \
                               uniform float y[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i] + y[i];
        }",
        "--entry bound_check --grid 3 --block 96 --arg n=250 --arg a=2 \
         --arg x='range(250)' --arg y='fill(250,1)'",
    ),
    (
        "loop_bound",
        // A replicated loop whose iterations are bounded per thread (`j < n`, the
        // last iteration partial): one enq.pred per iteration, the masks differ.
        "task void loop_bound(uniform int n, uniform int m, uniform float a[], \
                              uniform float out[]) {
            float s = 0;
            for (uniform int k = 0; k < m; k++) {
                int j = k * blockDim.x + threadIdx.x;
                if (j < n) s += a[j];
            }
            out[blockIdx.x * blockDim.x + threadIdx.x] = s;
        }",
        "--entry loop_bound --grid 2 --block 64 --arg n=300 --arg m=5 \
         --arg a='random(300,15)' --arg out='zeros(128)'",
    ),
    (
        "skipped_pred",
        // Compares inside a region whole warps skip (`i < n`): those warps drain
        // the inner compares' masks; two affine operands (`i > k - i`).
        "task void skipped_pred(uniform int n, uniform int k, uniform float x[], \
                                uniform float y[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) {
                float v = x[i];
                if (i > k - i) v = v * 2;
                if (i % 3 == 0) v = v + 1;
                y[i] = v;
            }
        }",
        "--entry skipped_pred --grid 4 --block 64 --arg n=150 --arg k=100 \
         --arg x='random(256,16)' --arg y='zeros(256)'",
    ),
    (
        "skipped_loop_pred",
        // A bound check inside constant-trip loops after a `return` (conv2d's edge
        // test): the warps past `n` drain it with a counted loop of `deq.pred`.
        "task void skipped_loop_pred(uniform int n, uniform int w, uniform float a[], \
                                     uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            float s = 0;
            for (uniform int r = 0; r < 3; r++)
                for (uniform int c = -1; c <= 1; c++)
                    if (i + c >= 0 && i + c < w) s += a[r * w + i + c];
            out[i] = s;
        }",
        "--entry skipped_loop_pred --grid 3 --block 64 --arg n=150 --arg w=150 \
         --arg a='random(450,17)' --arg out='zeros(192)'",
    ),
];

/// Decoupled compares: exact against the interpreter, `deq.pred` in the non-affine
/// stream (and `enq.pred` in the affine one), counted by the simulator, and fewer
/// non-affine warp instructions than the baseline.
#[test]
fn predicates_decouple_bit_for_bit() {
    let mut failures = Vec::new();
    for &(name, source, launch) in PREDICATE_KERNELS {
        let front = front_of_text(name, source);
        let c = dac::compile(
            &front,
            true,
            &Options {
                dac: true,
                ..Options::default()
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {}", run_error(e, &front)));
        let asm = spmdc::back::dac_gpu::listing(&c, None);
        if !asm.contains("deq.pred") || !asm.contains("enq.pred") {
            failures.push(format!("{name}: no deq.pred / enq.pred in\n{asm}"));
            continue;
        }
        check_kernel(name, &front, launch, Expect::Loads, &mut failures);
        let got = run(&front, &parse_command(launch), true, true);
        if stat(&got, "deq_pred_instructions") == 0.0 {
            failures.push(format!("{name}: no deq.pred counted"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `threadIdx.x % 16` and `/ 16` (lud's thread layout), and `% 12`, `/ 12`: the kernel
/// launches in the virtual block (c, blockDim.x / c) and decouples; a block c does not
/// divide runs the baseline. (name, source, launch, decoupled.)
const SPLIT_KERNELS: &[(&str, &str, &str, bool)] = &[
    (
        "split_256",
        "task void split(uniform float a[], uniform float b[]) {
            int tx = threadIdx.x % 16;
            int ty = threadIdx.x / 16;
            b[ty * 16 + tx] = a[ty * 32 + tx] * 2 + a[tx];
        }",
        "--entry split --grid 2 --block 256 --arg a='random(512,18)' --arg b='zeros(512)'",
        true,
    ),
    (
        "split_48",
        // Three rows of 16: a partial second warp.
        "task void split(uniform float a[], uniform float b[]) {
            int tx = threadIdx.x % 16;
            int ty = threadIdx.x / 16;
            b[ty * 16 + tx] = a[ty * 32 + tx] * 2 + a[tx];
        }",
        "--entry split --block 48 --arg a='random(512,19)' --arg b='zeros(512)'",
        true,
    ),
    (
        "split_40",
        // 16 does not divide 40: the baseline runs.
        "task void split(uniform float a[], uniform float b[]) {
            int tx = threadIdx.x % 16;
            int ty = threadIdx.x / 16;
            b[ty * 16 + tx] = a[ty * 32 + tx] * 2 + a[tx];
        }",
        "--entry split --block 40 --arg a='random(512,20)' --arg b='zeros(512)'",
        false,
    ),
    (
        "split_12x5",
        // Not a power of two: rows of 12 in a block of 60 (two warps, the second
        // partial, rows straddling the warps).
        "task void split(uniform float a[], uniform float b[]) {
            int tx = threadIdx.x % 12;
            int ty = threadIdx.x / 12;
            b[blockIdx.x * 60 + ty * 12 + tx] = a[ty * 24 + tx] * 2 + a[tx];
        }",
        "--entry split --grid 3 --block 60 --arg a='random(512,22)' --arg b='zeros(512)'",
        true,
    ),
    (
        "split_12_50",
        // 12 does not divide 50: the baseline runs.
        "task void split(uniform float a[], uniform float b[]) {
            int tx = threadIdx.x % 12;
            int ty = threadIdx.x / 12;
            b[ty * 12 + tx] = a[ty * 24 + tx] * 2 + a[tx];
        }",
        "--entry split --block 50 --arg a='random(512,23)' --arg b='zeros(512)'",
        false,
    ),
];

/// Split thread indices: exact against the interpreter; decoupled (loads through
/// `[deq.data]`) when 16 divides the block, the baseline otherwise. lud itself too.
#[test]
fn split_thread_indices_decouple_bit_for_bit() {
    let mut failures = Vec::new();
    for &(name, source, launch, decoupled) in SPLIT_KERNELS {
        let front = front_of_text(name, source);
        let spec = parse_command(launch);
        let want = driver::run_on_interp(&front, &spec.request(MAX_STEPS))
            .unwrap_or_else(|e| panic!("{name}: interp: {}", run_error(e, &front)));
        let got = run(&front, &spec, true, true);
        if let Err(e) = compare("dac-gpu --dac", &want, &got) {
            failures.push(format!("{name}: {e}"));
        }
        if (stat(&got, "deq_data_instructions") > 0.0) != decoupled {
            failures.push(format!("{name}: decoupled is not {decoupled}"));
        }
    }
    let lud = front_of(&common::repo_root().join("tests/dac_bench/lud.spmd"));
    check_kernel(
        "lud",
        &lud,
        "--entry lud_internal --grid 3,3 --block 256 --arg n=64 --arg off=0 \
         --arg a='random(4096,21)'",
        Expect::Loads,
        &mut failures,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------
// Every example and program, decoupling on

struct DacOn;

impl BackEnd for DacOn {
    type Compiled = ();
    const NAME: &'static str = "dac-gpu --dac";
    const KNOWN: &'static [(&'static str, &'static str, &'static str)] = &[];
    fn front_of(path: &Path) -> FrontResult {
        front_of(path)
    }
    fn compile(_: &FrontResult) -> Result<(), String> {
        Ok(())
    }
    fn differential(
        front: &FrontResult,
        _: &Result<(), String>,
        spec: &LaunchSpec,
    ) -> Result<RunResult, String> {
        let want = driver::run_on_interp(front, &spec.request(MAX_STEPS))
            .map_err(|e| format!("interp failed: {}", run_error(e, front)))?;
        let opts = DacRunOptions {
            codegen: Options {
                dac: true,
                ..Options::default()
            },
            ..DacRunOptions::default()
        };
        let got = dac::run_on_dac_gpu(front, &spec.request(MAX_STEPS), &opts)
            .map_err(|e| run_error(e, front))?;
        compare("dac-gpu --dac", &want, &got)?;
        if want.output != got.output {
            return Err("printed text differs".into());
        }
        Ok(got)
    }
}

#[test]
fn examples_match_the_interpreter_with_dac() {
    examples_match::<DacOn>();
}

#[test]
fn ispc_programs_match_the_interpreter_with_dac() {
    ispc_programs_match::<DacOn>();
}

#[test]
fn conformance_programs_match_the_interpreter_with_dac_0() {
    conformance_half::<DacOn>(0);
}

#[test]
fn conformance_programs_match_the_interpreter_with_dac_1() {
    conformance_half::<DacOn>(1);
}

/// Clamped neighbours (hotspot, srad): addresses that are *select tuples* of an
/// affine compare (`r > 0 ? i - cols : i`) decouple as `enq.data.sel` /
/// `enq.addr.sel`. Warps straddle the predicate's boundary (the column tests in the
/// edge warps), blocks are 2-D and partial, compares are signed and unsigned, and one
/// arm wraps around `i32::MAX` (the wrapped arm is never the one taken where it would
/// be out of range); `min`/`max` clamps, signed and unsigned, are select tuples on
/// their own compare. (name, source, launch, select enqueues expected.)
const SELECT_KERNELS: &[(&str, &str, &str, bool)] = &[
    (
        "hotspot_like",
        "task void hotspot_like(uniform int cols, uniform int rows, uniform float t[], \
                                uniform float out[]) {
            int c = blockIdx.x * blockDim.x + threadIdx.x;
            int r = blockIdx.y * blockDim.y + threadIdx.y;
            if (c >= cols || r >= rows) return;
            int i = r * cols + c;
            int n = r > 0 ? i - cols : i;
            int s = r < rows - 1 ? i + cols : i;
            int w = c > 0 ? i - 1 : i;
            int e = c < cols - 1 ? i + 1 : i;
            out[i] = t[n] + 2 * t[s] + 3 * t[w] + 5 * t[e] - t[i];
        }",
        // 20 x 3 blocks: `tid.x` wraps inside warps, partial last warps, and the
        // grid's edge columns and rows inside blocks.
        "--entry hotspot_like --grid 3,4 --block 20,3 --arg cols=50 --arg rows=11 \
         --arg t='random(550,21)' --arg out='zeros(550)'",
        true,
    ),
    (
        "select_store",
        // A select address on a store (`enq.addr.sel`), 1-D, partial last block.
        "task void select_store(uniform int n, uniform int k, uniform float a[], \
                                uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            int j = i < k ? 2 * i : 2 * i + 1;
            out[j] = a[i < k ? i + k : i - k];
        }",
        "--entry select_store --grid 3 --block 64 --arg n=150 --arg k=77 \
         --arg a='random(300,22)' --arg out='zeros(300)'",
        true,
    ),
    (
        "unsigned_select",
        // An unsigned compare: `i - k` read as unsigned is huge below `k`.
        "task void unsigned_select(uniform int n, uniform int k, uniform float a[], \
                                   uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            unsigned int d = (unsigned int)(i - k);
            out[i] = a[d < (unsigned int)40 ? i + 1 : i];
        }",
        "--entry unsigned_select --grid 2 --block 96 --arg n=180 --arg k=50 \
         --arg a='random(200,23)' --arg out='zeros(200)'",
        true,
    ),
    (
        "wrapping_arm",
        // `t = i + big` wraps past i32::MAX from lane `2^31 - big` on; the then arm
        // `t - big` is `i` again (exact modulo 2^32), taken exactly where it wrapped.
        "task void wrapping_arm(uniform int n, uniform int big, uniform float a[], \
                                uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            int t = i + big;
            out[i] = a[t < 0 ? t - big : i + 1];
        }",
        "--entry wrapping_arm --grid 2 --block 64 --arg n=120 --arg big=2147483600 \
         --arg a='random(130,24)' --arg out='zeros(130)'",
        true,
    ),
    (
        "min_max_clamps",
        // Clamps written with min/max (signed and unsigned): select tuples on the
        // min/max's own compare.
        "task void min_max_clamps(uniform int n, uniform float a[], uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            int lo = max(i - 1, 0);
            int hi = min(i + 1, n - 1);
            unsigned int u = min((unsigned int)(i + 3), (unsigned int)(n - 1));
            out[i] = a[lo] + 2 * a[hi] + 4 * a[(int)u];
        }",
        "--entry min_max_clamps --grid 2 --block 64 --arg n=100 \
         --arg a='random(100,25)' --arg out='zeros(128)'",
        true,
    ),
    (
        "wrapping_min",
        // `t = i + big` wraps past i32::MAX from lane 48 on: `min(t, big + 10)` picks
        // the wrapped (negative) `t` there, and `- big` wraps it back to `i`; an
        // unsigned max near the top of its range too.
        "task void wrapping_min(uniform int n, uniform int big, uniform float a[], \
                                uniform float out[]) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            int t = i + big;
            unsigned int u = (unsigned int)(i + 7);
            out[i] = a[min(t, big + 10) - big]
                   + 2 * a[(int)max(u, (unsigned int)(n - 1)) - (n - 1)];
        }",
        "--entry wrapping_min --grid 2 --block 64 --arg n=120 --arg big=2147483600 \
         --arg a='random(130,26)' --arg out='zeros(128)'",
        true,
    ),
];

/// Select tuples: exact against the interpreter (functional and timing runs), with
/// `enq.*.sel` in the affine stream where expected, fewer non-affine warp
/// instructions and every load decoupled.
#[test]
fn select_tuples_decouple_bit_for_bit() {
    let mut failures = Vec::new();
    for &(name, source, launch, sel) in SELECT_KERNELS {
        let front = front_of_text(name, source);
        let c = dac::compile(
            &front,
            true,
            &Options {
                dac: true,
                ..Options::default()
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {}", run_error(e, &front)));
        let asm = spmdc::back::dac_gpu::listing(&c, None);
        if sel && !asm.contains(".sel.global") {
            failures.push(format!("{name}: no enq.*.sel in\n{asm}"));
            continue;
        }
        let spec = parse_command(launch);
        let want = driver::run_on_interp(&front, &spec.request(MAX_STEPS))
            .unwrap_or_else(|e| panic!("{name}: interp: {}", run_error(e, &front)));
        let functional = run(&front, &spec, true, false);
        if let Err(e) = compare("dac-gpu --dac (functional)", &want, &functional) {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        if !sel {
            let got = run(&front, &spec, true, true);
            if let Err(e) = compare("dac-gpu --dac (timing)", &want, &got) {
                failures.push(format!("{name}: {e}"));
            }
            continue;
        }
        check_kernel(name, &front, launch, Expect::Loads, &mut failures);
        {
            let got = run(&front, &spec, true, true);
            let share = stat(&got, "loads_decoupled");
            if share < 1.0 {
                failures.push(format!("{name}: only {share} of the loads decoupled"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
