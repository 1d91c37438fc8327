//! `spmdc bench dac`: Decoupled Affine Computation against the baseline on the
//! dac-gpu timing model (issue 7, point 5).
//!
//! Each kernel is compiled twice for `dac-gpu`, without and with the decoupling pass
//! ([`dac_gpu::Options::dac`]), and both programs run the same launch in timing mode
//! on the chosen machine (`gtx480` by default). The interpreter runs the launch once
//! and both runs' buffers must equal its buffers bit for bit; a mismatch (or a DAC run
//! that fails) is a failure row, and the suite still reports every kernel.
//!
//! A row compares the two runs: dynamic warp instructions (the baseline's, and the
//! DAC run's affine + non-affine total), their reduction, the share of global/local
//! loads decoupled (`deq.data` loads over all loads, as the simulator counts it, so
//! drains of skipping warps can push it past 100%), cycles and speedup, and the DAC
//! run's stall breakdown as shares of its scheduler cycles. Geomean rows summarize
//! the memory-bound kernels, the compute-bound ones and all of them.
//!
//! Kernels launched with a 2-D block decouple too (launched in the block's real
//! shape, [`dac_gpu::decouple`]). Kernels are sized to
//! [`BenchOptions::min_threads`] / [`SCALE_DIV`] threads (128K at the default 1M,
//! so the suite's 2 x 15 timing runs take minutes in release), some heavier kernels
//! to fewer (see each launch).

use std::path::PathBuf;

use super::gpu::{
    compare, count, cube_side, front, launch, ratio, run_error, square_side, up, GpuLaunch,
};
use super::{BenchError, BenchOptions, Cell, Table};
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::driver::{self, FrontResult, RunRequest};
use crate::launch::RunResult;

/// Kernels get `min_threads / SCALE_DIV` threads (at least 1).
pub const SCALE_DIV: u64 = 8;

/// The table's columns.
pub const COLUMNS: &[&str] = &[
    "kernel",
    "class",
    "threads",
    "dac",
    "warp instr base",
    "warp instr dac",
    "reduction %",
    "loads decoupled %",
    "cycles base",
    "cycles dac",
    "speedup",
    "stall mem %",
    "stall dep %",
    "stall barrier %",
    "stall queue %",
    "stall idle %",
    "check",
];

/// Memory-bound or compute-bound, as the paper groups its programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Memory,
    Compute,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Memory => "memory",
            Class::Compute => "compute",
        }
    }
}

/// Where a kernel's file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// [`BenchOptions::examples`].
    Examples,
    /// The repository's `tests/dac_bench/`.
    DacBench,
}

/// A kernel of the suite.
pub struct DacKernel {
    pub name: &'static str,
    pub class: Class,
    pub dir: Dir,
    pub file: &'static str,
    pub entry: &'static str,
    /// The launch for a thread target.
    pub launch: fn(u64) -> GpuLaunch,
}

const fn k(
    name: &'static str,
    class: Class,
    dir: Dir,
    file: &'static str,
    entry: &'static str,
    launch: fn(u64) -> GpuLaunch,
) -> DacKernel {
    DacKernel {
        name,
        class,
        dir,
        file,
        entry,
        launch,
    }
}

use Class::{Compute, Memory};
use Dir::{DacBench, Examples};

/// The suite: streaming kernels and KernelGen stencils (memory-bound), then tiled
/// matrix multiply, convolution and Rodinia-like kernels (compute-bound).
pub const KERNELS: &[DacKernel] = &[
    k(
        "saxpy",
        Memory,
        Examples,
        "saxpy_gpu.spmd",
        "saxpy_gpu",
        saxpy,
    ),
    k("vecadd", Memory, DacBench, "vecadd.spmd", "vecadd", vecadd),
    k(
        "scale+copy (grid-stride)",
        Memory,
        DacBench,
        "scale_copy.spmd",
        "scale_copy",
        scale_copy,
    ),
    k(
        "jacobi 2-D 9-point",
        Memory,
        Examples,
        "jacobi2d_gpu.spmd",
        "jacobi2d_gpu",
        jacobi2d,
    ),
    k(
        "laplacian 3-D 7-point",
        Memory,
        Examples,
        "laplacian3d.spmd",
        "laplacian3d",
        laplacian3d,
    ),
    k(
        "wave 3-D 13-point",
        Memory,
        Examples,
        "wave13pt_gpu.spmd",
        "wave13pt_gpu",
        wave13pt,
    ),
    k(
        "hotspot",
        Memory,
        DacBench,
        "hotspot.spmd",
        "hotspot",
        hotspot,
    ),
    k("srad pass 1", Memory, DacBench, "srad.spmd", "srad1", srad1),
    k("srad pass 2", Memory, DacBench, "srad.spmd", "srad2", srad2),
    k(
        "matmul (tiled, 2-D block)",
        Compute,
        Examples,
        "matmul_rect.spmd",
        "matmul_rect",
        matmul,
    ),
    k(
        "conv2d 5x5",
        Compute,
        DacBench,
        "conv2d.spmd",
        "conv2d",
        conv2d,
    ),
    k(
        "pathfinder",
        Compute,
        DacBench,
        "pathfinder.spmd",
        "pathfinder",
        pathfinder,
    ),
    k(
        "backprop forward",
        Compute,
        DacBench,
        "backprop.spmd",
        "backprop",
        backprop,
    ),
    k("nw (anti-diagonal)", Compute, DacBench, "nw.spmd", "nw", nw),
    k(
        "lud internal",
        Compute,
        DacBench,
        "lud.spmd",
        "lud_internal",
        lud,
    ),
];

fn a(pieces: &[String]) -> Vec<String> {
    pieces.to_vec()
}

fn stream(t: u64, extra: &[String]) -> GpuLaunch {
    let n = up(t, 256);
    let mut v = vec![format!("n={n}")];
    v.extend(extra.iter().map(|s| s.replace("{n}", &n.to_string())));
    launch([n / 256, 1, 1], [256, 1, 1], v)
}

fn saxpy(t: u64) -> GpuLaunch {
    stream(
        t,
        &a(&[
            "a=2.5".into(),
            "x=random({n},1)".into(),
            "y=random({n},2)".into(),
        ]),
    )
}

fn vecadd(t: u64) -> GpuLaunch {
    stream(
        t,
        &a(&[
            "a=random({n},3)".into(),
            "b=random({n},4)".into(),
            "c=zeros({n})".into(),
        ]),
    )
}

/// Four elements per thread (the grid-stride loop runs four times).
fn scale_copy(t: u64) -> GpuLaunch {
    let threads = up(t, 256);
    let n = 4 * threads;
    launch(
        [threads / 256, 1, 1],
        [256, 1, 1],
        a(&[
            format!("n={n}"),
            "s=3".into(),
            format!("a=random({n},5)"),
            format!("b=zeros({n})"),
            format!("c=zeros({n})"),
        ]),
    )
}

/// The widest of 128, 64, 32 and 16 threads that divides `side` (the x extent of a
/// kernel's 1-D blocks).
fn block_x(side: u64) -> u64 {
    [128, 64, 32, 16]
        .into_iter()
        .find(|b| side.is_multiple_of(*b))
        .unwrap_or(1)
}

/// A square image of side `s` (a multiple of 32) as 1-D blocks along x.
fn image(t: u64) -> u64 {
    square_side(t, 32)
}

fn image_launch(s: u64, args: Vec<String>) -> GpuLaunch {
    let b = block_x(s);
    launch([s / b, s, 1], [b, 1, 1], args)
}

fn jacobi2d(t: u64) -> GpuLaunch {
    let s = image(t);
    image_launch(
        s,
        a(&[
            format!("nx={s}"),
            format!("ny={s}"),
            "c0=0.5".into(),
            "c1=0.1".into(),
            "c2=0.025".into(),
            format!("w0=random({},6)", s * s),
            format!("w1=zeros({})", s * s),
        ]),
    )
}

/// A cube of side `c` (a multiple of 16) as 1-D blocks along x (at most 64 wide).
fn cube_launch(c: u64, args: Vec<String>) -> GpuLaunch {
    let b = block_x(c).min(64);
    launch([c / b, c, c], [b, 1, 1], args)
}

fn laplacian3d(t: u64) -> GpuLaunch {
    let c = cube_side(t, 16);
    cube_launch(
        c,
        a(&[
            format!("n={c}"),
            "alpha=-6".into(),
            "beta=1".into(),
            format!("w0=random({},7)", c * c * c),
            format!("w1=zeros({})", c * c * c),
        ]),
    )
}

fn wave13pt(t: u64) -> GpuLaunch {
    let c = cube_side(t, 16);
    let n = c * c * c;
    cube_launch(
        c,
        a(&[
            format!("nx={c}"),
            format!("ny={c}"),
            format!("nz={c}"),
            "c0=1.5".into(),
            "c1=0.1".into(),
            "c2=-0.05".into(),
            format!("w0=random({n},8)"),
            format!("w1=random({n},9)"),
            format!("w2=zeros({n})"),
        ]),
    )
}

fn hotspot(t: u64) -> GpuLaunch {
    let s = image(t);
    let n = s * s;
    image_launch(
        s,
        a(&[
            format!("cols={s}"),
            format!("rows={s}"),
            "step=0.5".into(),
            "rx=0.1".into(),
            "ry=0.1".into(),
            "rz=0.01".into(),
            "amb=80".into(),
            format!("power=random({n},10)"),
            format!("temp=random({n},11,60,100)"),
            format!("result=zeros({n})"),
        ]),
    )
}

/// The five per-pixel arrays of srad after `j`, random (pass 2 reads them).
fn srad_arrays(n: u64) -> Vec<String> {
    ["dn", "ds", "dw", "de", "c"]
        .iter()
        .enumerate()
        .map(|(i, name)| format!("{name}=random({n},{})", 20 + i))
        .collect()
}

fn srad1(t: u64) -> GpuLaunch {
    let s = image(t);
    let n = s * s;
    let mut v = a(&[
        format!("cols={s}"),
        format!("rows={s}"),
        "q0sqr=0.05".into(),
        format!("j=random({n},12,1,2)"),
    ]);
    v.extend(srad_arrays(n));
    image_launch(s, v)
}

fn srad2(t: u64) -> GpuLaunch {
    let s = image(t);
    let n = s * s;
    let mut v = a(&[
        format!("cols={s}"),
        format!("rows={s}"),
        "lambda=0.5".into(),
        format!("j=random({n},13,1,2)"),
    ]);
    v.extend(srad_arrays(n));
    image_launch(s, v)
}

/// C (s x s) = A (s x 32) * B (32 x s); the kernel needs 16 x 16 blocks.
fn matmul(t: u64) -> GpuLaunch {
    let (s, k) = (square_side(t, 16), 32);
    launch(
        [s / 16, s / 16, 1],
        [16, 16, 1],
        a(&[
            format!("m={s}"),
            format!("n={s}"),
            format!("k={k}"),
            format!("a=random({},14)", s * k),
            format!("b=random({},15)", k * s),
            format!("c=zeros({})", s * s),
        ]),
    )
}

fn conv2d(t: u64) -> GpuLaunch {
    let s = image(t);
    image_launch(
        s,
        a(&[
            format!("w={s}"),
            format!("h={s}"),
            format!("img=random({},16)", s * s),
            "filt=random(25,17)".into(),
            format!("out=zeros({})", s * s),
        ]),
    )
}

/// One column per thread, 16 rows.
fn pathfinder(t: u64) -> GpuLaunch {
    let cols = up(t, 256);
    let steps = 16;
    launch(
        [cols / 256, 1, 1],
        [256, 1, 1],
        a(&[
            format!("cols={cols}"),
            format!("steps={steps}"),
            format!("wall=random({},18,0,10)", cols * steps),
            format!("src=random({cols},19,0,10)"),
            format!("dst=zeros({cols})"),
        ]),
    )
}

/// 256 inputs, one output unit per thread; a quarter of the thread target (each
/// thread does 256 multiply-adds and the weights grow with the outputs).
fn backprop(t: u64) -> GpuLaunch {
    let nout = up((t / 4).max(1), 128);
    let nin = 256;
    launch(
        [nout / 128, 1, 1],
        [128, 1, 1],
        a(&[
            format!("nin={nin}"),
            format!("nout={nout}"),
            format!("inp=random({nin},30)"),
            format!("w=random({},31,-1,1)", nin * nout),
            format!("out=zeros({nout})"),
        ]),
    )
}

/// A batch of 128 x 128 alignments (8 x 8 blocks of 16), the longest block
/// anti-diagonal (8 blocks of 16 threads) of each; an eighth of the thread target
/// (each thread runs 31 barrier-separated steps and copies 2 x 16 values).
fn nw(t: u64) -> GpuLaunch {
    let (n, nb) = (128u64, 8u64);
    let batch = (t / 8).div_ceil(nb * 16).max(1);
    let len = batch * (n + 1) * (n + 1);
    launch(
        [nb, batch, 1],
        [16, 1, 1],
        a(&[
            format!("n={n}"),
            format!("diag={}", nb - 1),
            "penalty=2".into(),
            format!("ref=random({len},32,-4,4)"),
            format!("score=random({len},33,-8,8)"),
        ]),
    )
}

/// The first step's internal update of an n x n matrix: (s x s) blocks of 256.
fn lud(t: u64) -> GpuLaunch {
    let s = ((t.div_ceil(256)) as f64).sqrt().ceil() as u64;
    let n = 16 * (s + 1);
    launch(
        [s, s, 1],
        [256, 1, 1],
        a(&[
            format!("n={n}"),
            "off=0".into(),
            format!("a=random({},34)", n * n),
        ]),
    )
}

/// Runs the suite.
pub fn run(opts: &BenchOptions) -> Result<Table, BenchError> {
    sim::gpu::GpuConfig::load(&opts.config).map_err(BenchError::Options)?;
    if opts.min_threads == 0 {
        return Err(BenchError::Options("--threads must be at least 1".into()));
    }
    let mut table = Table::new("dac", COLUMNS);
    let mut results = Vec::new();
    for k in KERNELS {
        let (row, failure, result) = run_kernel(k, opts)?;
        table.rows.push(row);
        table.failures.extend(failure);
        results.extend(result.map(|r| (k.class, r)));
    }
    for (label, class) in [
        ("geomean memory-bound", Some(Memory)),
        ("geomean compute-bound", Some(Compute)),
        ("geomean all", None),
    ] {
        let picked: Vec<&Compared> = results
            .iter()
            .filter(|(c, _)| class.is_none_or(|x| x == *c))
            .map(|(_, r)| r)
            .collect();
        table.rows.push(summary_row(label, &picked));
    }
    Ok(table)
}

/// The numbers of one kernel that the geomean rows combine.
#[derive(Clone, Copy, Debug)]
struct Compared {
    /// DAC warp instructions over the baseline's.
    insts: f64,
    /// Baseline cycles over DAC cycles.
    speedup: f64,
    decoupled: f64,
}

fn kernel_path(k: &DacKernel, opts: &BenchOptions) -> PathBuf {
    match k.dir {
        Dir::Examples => opts.examples.join(k.file),
        Dir::DacBench => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/dac_bench")
            .join(k.file),
    }
}

/// One timing run with DAC on or off.
fn timed(
    k: &DacKernel,
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &BenchOptions,
    dac: bool,
) -> Result<RunResult, BenchError> {
    let dopts = DacRunOptions {
        timing: true,
        config: opts.config.clone(),
        codegen: dac_gpu::Options {
            dac,
            ..dac_gpu::Options::default()
        },
        ..DacRunOptions::default()
    };
    let what = if dac {
        "dac-gpu DAC"
    } else {
        "dac-gpu baseline"
    };
    let compiled = dac_gpu::run::compile(front, req.optimize, &dopts.codegen)
        .map_err(|e| run_error(k.name, &format!("{what} compile"), e))?;
    dac_gpu::run::run_compiled(front, &compiled, req, &dopts)
        .map_err(|e| run_error(k.name, &format!("{what} timing run"), e))
}

type KernelOutcome = (Vec<Cell>, Option<String>, Option<Compared>);

/// Runs one kernel: baseline and DAC timing runs and the interpreter. A failing DAC
/// run is a failure row (the baseline and the interpreter must work).
fn run_kernel(k: &DacKernel, opts: &BenchOptions) -> Result<KernelOutcome, BenchError> {
    let front = front(&kernel_path(k, opts), k.name)?;
    let l = (k.launch)((opts.min_threads / SCALE_DIV).max(1));
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: k.entry,
        args: &l.args,
        grid: Some(&l.grid),
        block: Some(&l.block),
        dynamic_shared: None,
        limits: crate::interp::Limits::default(),
    };
    let applies = true; // every block shape decouples (dac_gpu::decouple)
    let base = timed(k, &front, &req, opts, false)?;
    let want =
        driver::run_on_interp(&front, &req).map_err(|e| run_error(k.name, "interpreter", e))?;
    let dac = match timed(k, &front, &req, opts, applies) {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("{} (DAC run): {e}", k.name);
            return Ok((failed_row(k, &l, "DAC RUN FAILED"), Some(msg), None));
        }
    };
    let mismatch = compare(&want, &base)
        .map(|m| format!("{} (baseline): {m}", k.name))
        .or_else(|| compare(&want, &dac).map(|m| format!("{} (DAC): {m}", k.name)));
    let c = compared(&base, &dac);
    let row = row(k, &l, applies, (&base, &dac), c, mismatch.is_none());
    Ok((row, mismatch.clone(), mismatch.is_none().then_some(c)))
}

/// The DAC run's warp instructions: affine + non-affine when it has an affine stream.
fn dac_insts(r: &RunResult) -> u64 {
    match r.stats.get("total_warp_instructions") {
        Some(_) => count(r, "total_warp_instructions"),
        None => count(r, "warp_instructions"),
    }
}

/// The share of loads decoupled (0 when the run has no affine stream).
fn decoupled(r: &RunResult) -> f64 {
    let x = ratio(r, "loads_decoupled");
    if x.is_nan() {
        0.0
    } else {
        x
    }
}

fn compared(base: &RunResult, dac: &RunResult) -> Compared {
    let b = count(base, "warp_instructions").max(1) as f64;
    Compared {
        insts: dac_insts(dac) as f64 / b,
        speedup: count(base, "cycles") as f64 / count(dac, "cycles").max(1) as f64,
        decoupled: decoupled(dac),
    }
}

/// The stall counters as shares (%) of all scheduler cycles (issue + stalls).
fn stall_shares(r: &RunResult) -> [f64; 5] {
    let keys = [
        "stall_memory",
        "stall_dependency",
        "stall_barrier",
        "stall_queue",
        "stall_idle",
    ];
    let total = (count(r, "issue_cycles") + keys.iter().map(|k| count(r, k)).sum::<u64>()).max(1);
    keys.map(|k| 100.0 * count(r, k) as f64 / total as f64)
}

fn row(
    k: &DacKernel,
    l: &GpuLaunch,
    applies: bool,
    (base, dac): (&RunResult, &RunResult),
    c: Compared,
    ok: bool,
) -> Vec<Cell> {
    let mut v = vec![
        Cell::Text(k.name.into()),
        Cell::Text(k.class.name().into()),
        Cell::Count(l.threads),
        Cell::Text(if applies { "on" } else { "n/a: 2-D block" }.into()),
        Cell::Count(count(base, "warp_instructions")),
        Cell::Count(dac_insts(dac)),
        Cell::Real(100.0 * (1.0 - c.insts), 1),
        Cell::Real(100.0 * c.decoupled, 1),
        Cell::Count(count(base, "cycles")),
        Cell::Count(count(dac, "cycles")),
        Cell::Real(c.speedup, 3),
    ];
    v.extend(stall_shares(dac).map(|x| Cell::Real(x, 1)));
    v.push(Cell::Text(if ok { "ok" } else { "MISMATCH" }.into()));
    v
}

fn failed_row(k: &DacKernel, l: &GpuLaunch, check: &str) -> Vec<Cell> {
    let mut v = vec![
        Cell::Text(k.name.into()),
        Cell::Text(k.class.name().into()),
        Cell::Count(l.threads),
    ];
    v.extend((3..COLUMNS.len() - 1).map(|_| Cell::Text("-".into())));
    v.push(Cell::Text(check.into()));
    v
}

/// The geometric mean of `xs` (NaN when there are none).
pub(super) fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

/// A geomean row: speedup and instruction ratio as geomeans over the kernels that
/// matched; the decoupled share as their arithmetic mean (a geomean is 0 as soon as
/// one kernel decouples nothing).
fn summary_row(label: &str, rs: &[&Compared]) -> Vec<Cell> {
    let insts = geomean(rs.iter().map(|r| r.insts));
    let speedup = geomean(rs.iter().map(|r| r.speedup));
    let mean = rs.iter().map(|r| r.decoupled).sum::<f64>() / rs.len().max(1) as f64;
    let blank = || Cell::Text(String::new());
    let mut v = vec![
        Cell::Text(label.into()),
        Cell::Text(format!("{} kernels", rs.len())),
        blank(),
        blank(),
        blank(),
        blank(),
        Cell::Real(100.0 * (1.0 - insts), 1),
        Cell::Real(100.0 * mean, 1),
        blank(),
        blank(),
        Cell::Real(speedup, 3),
    ];
    v.extend((0..5).map(|_| blank()));
    v.push(blank());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every launch reaches its thread target (or the documented fraction of it).
    #[test]
    fn launches_reach_their_targets() {
        for t in [1, 1000, 1 << 17] {
            for k in KERNELS {
                let l = (k.launch)(t);
                assert!(8 * l.threads >= t, "{} at {t}: {}", k.name, l.threads);
            }
        }
    }

    #[test]
    fn geomean_of_equal_values_is_that_value() {
        assert!((geomean([2.0, 2.0, 2.0].into_iter()) - 2.0).abs() < 1e-12);
        assert!((geomean([1.0, 4.0].into_iter()) - 2.0).abs() < 1e-12);
        assert!(geomean(std::iter::empty()).is_nan());
    }
}
