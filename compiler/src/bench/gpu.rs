//! `spmdc bench gpu`: the GPU-style example kernels on the dac-gpu timing model.
//!
//! Each kernel is compiled for `dac-gpu`, launched with a grid of at least
//! [`BenchOptions::min_threads`] threads (1M by default) and run with the timing
//! model of the chosen machine (`gtx480` by default). The same launch then runs on
//! the reference interpreter, and every buffer must come back bit for bit the same
//! (the interpreter is fast enough for that at 1M threads: a few seconds for the
//! whole suite). A row reports the simulator's statistics and its speed: the wall and
//! CPU time of the timing run and the thread instructions it simulated per CPU second
//! (the machine this runs on is shared, so wall time alone says little).

use std::path::Path;
use std::time::Instant;

use super::{BenchError, BenchOptions, Cell, Table};
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::driver::{self, FrontOptions, FrontResult, RunError, RunRequest, Stage};
use crate::launch::{RunResult, StatValue};

/// The table's columns.
pub const COLUMNS: &[&str] = &[
    "kernel",
    "threads",
    "warp instr",
    "thread instr",
    "cycles",
    "IPC",
    "occupancy (achieved / theoretical)",
    "L1 hit",
    "L2 hit",
    "wall s",
    "cpu s",
    "sim M thread-instr/s",
    "check",
];

/// One launch of a kernel: the grid and block (`X,Y,Z`), the arguments as
/// `spmdc run --arg` specs, and the number of threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuLaunch {
    pub grid: String,
    pub block: String,
    pub args: Vec<String>,
    pub threads: u64,
}

/// A benchmark kernel: its example file, its entry, and its launch for a thread count.
pub struct GpuKernel {
    /// The row's name.
    pub name: &'static str,
    /// The file under `examples/`.
    pub file: &'static str,
    pub entry: &'static str,
    /// The launch with at least the given number of threads.
    pub launch: fn(u64) -> GpuLaunch,
}

/// The suite: saxpy, a tiled matrix multiply through shared memory, 2-D and 3-D
/// KernelGen stencils, a block reduction with shared memory and barriers, a
/// histogram with atomics and a kernel with heavy divergence.
pub const KERNELS: &[GpuKernel] = &[
    GpuKernel {
        name: "saxpy",
        file: "saxpy_gpu.spmd",
        entry: "saxpy_gpu",
        launch: saxpy,
    },
    GpuKernel {
        name: "matmul (tiled, shared)",
        file: "matmul_rect.spmd",
        entry: "matmul_rect",
        launch: matmul,
    },
    GpuKernel {
        name: "jacobi 2-D 9-point",
        file: "jacobi2d_gpu.spmd",
        entry: "jacobi2d_gpu",
        launch: jacobi2d,
    },
    GpuKernel {
        name: "laplacian 3-D 7-point",
        file: "laplacian3d.spmd",
        entry: "laplacian3d",
        launch: laplacian3d,
    },
    GpuKernel {
        name: "wave 3-D 13-point",
        file: "wave13pt_gpu.spmd",
        entry: "wave13pt_gpu",
        launch: wave13pt,
    },
    GpuKernel {
        name: "block reduce (shared, barriers)",
        file: "block_reduce.spmd",
        entry: "block_reduce",
        launch: block_reduce,
    },
    GpuKernel {
        name: "histogram (atomics)",
        file: "histogram.spmd",
        entry: "histogram",
        launch: histogram,
    },
    GpuKernel {
        name: "mandelbrot (divergent)",
        file: "mandelbrot_gpu.spmd",
        entry: "mandelbrot_gpu",
        launch: mandelbrot,
    },
];

/// The smallest multiple of `m` that is at least `x`.
pub(super) fn up(x: u64, m: u64) -> u64 {
    x.div_ceil(m) * m
}

/// The side of a square of at least `t` points, a multiple of `m`.
pub(super) fn square_side(t: u64, m: u64) -> u64 {
    up((t as f64).sqrt().ceil() as u64, m)
}

/// The side of a cube of at least `t` points, a multiple of `m`.
pub(super) fn cube_side(t: u64, m: u64) -> u64 {
    let mut s = (t as f64).cbrt().floor() as u64;
    while s * s * s < t {
        s += 1;
    }
    up(s, m)
}

pub(super) fn launch(grid: [u64; 3], block: [u64; 3], args: Vec<String>) -> GpuLaunch {
    let dims = |d: [u64; 3]| format!("{},{},{}", d[0], d[1], d[2]);
    GpuLaunch {
        grid: dims(grid),
        block: dims(block),
        threads: grid.iter().chain(&block).product(),
        args,
    }
}

/// `args` from `NAME=SPEC` pieces.
fn args(pieces: &[String]) -> Vec<String> {
    pieces.to_vec()
}

fn saxpy(t: u64) -> GpuLaunch {
    let n = up(t, 256);
    let a = args(&[
        format!("n={n}"),
        "a=2.5".into(),
        format!("x=random({n},1)"),
        format!("y=random({n},2)"),
    ]);
    launch([n / 256, 1, 1], [256, 1, 1], a)
}

/// C (s x s) = A (s x 32) * B (32 x s): one thread per element of C, two tiles of k.
fn matmul(t: u64) -> GpuLaunch {
    let (s, k) = (square_side(t, 16), 32);
    let a = args(&[
        format!("m={s}"),
        format!("n={s}"),
        format!("k={k}"),
        format!("a=random({},3)", s * k),
        format!("b=random({},4)", k * s),
        format!("c=zeros({})", s * s),
    ]);
    launch([s / 16, s / 16, 1], [16, 16, 1], a)
}

fn jacobi2d(t: u64) -> GpuLaunch {
    let s = square_side(t, 32);
    let a = args(&[
        format!("nx={s}"),
        format!("ny={s}"),
        "c0=0.5".into(),
        "c1=0.1".into(),
        "c2=0.025".into(),
        format!("w0=random({},5)", s * s),
        format!("w1=zeros({})", s * s),
    ]);
    launch([s / 32, s / 8, 1], [32, 8, 1], a)
}

/// A cube of side `c` (a multiple of 8) as blocks of 32 x 4 threads, block z = k.
fn cube_launch(c: u64, a: Vec<String>) -> GpuLaunch {
    launch([c.div_ceil(32), c / 4, c], [32, 4, 1], a)
}

fn laplacian3d(t: u64) -> GpuLaunch {
    let c = cube_side(t, 8);
    let a = args(&[
        format!("n={c}"),
        "alpha=-6".into(),
        "beta=1".into(),
        format!("w0=random({},6)", c * c * c),
        format!("w1=zeros({})", c * c * c),
    ]);
    cube_launch(c, a)
}

fn wave13pt(t: u64) -> GpuLaunch {
    let c = cube_side(t, 8);
    let n = c * c * c;
    let a = args(&[
        format!("nx={c}"),
        format!("ny={c}"),
        format!("nz={c}"),
        "c0=1.5".into(),
        "c1=0.1".into(),
        "c2=-0.05".into(),
        format!("w0=random({n},7)"),
        format!("w1=random({n},8)"),
        format!("w2=zeros({n})"),
    ]);
    cube_launch(c, a)
}

/// Blocks of 256 threads, each summing 512 elements.
fn block_reduce(t: u64) -> GpuLaunch {
    let blocks = t.div_ceil(256);
    let n = blocks * 512;
    let a = args(&[
        format!("n={n}"),
        format!("x=random({n},9)"),
        format!("partial=zeros({blocks})"),
    ]);
    launch([blocks, 1, 1], [256, 1, 1], a)
}

fn histogram(t: u64) -> GpuLaunch {
    let n = up(t, 256);
    let a = args(&[
        format!("n={n}"),
        format!("x=random({n},10,0,100)"),
        "lo=0".into(),
        "hi=100".into(),
        "bins=zeros(64)".into(),
    ]);
    launch([n / 256, 1, 1], [256, 1, 1], a)
}

/// A square image around the set's boundary, at most 64 iterations per pixel.
fn mandelbrot(t: u64) -> GpuLaunch {
    let s = square_side(t, 32);
    let a = args(&[
        "x0=-2".into(),
        "y0=-1.25".into(),
        "x1=0.5".into(),
        "y1=1.25".into(),
        format!("width={s}"),
        format!("height={s}"),
        "maxIter=64".into(),
        format!("out=zeros({})", s * s),
    ]);
    launch([s / 32, s / 8, 1], [32, 8, 1], a)
}

/// Runs the suite.
pub fn run(opts: &BenchOptions) -> Result<Table, BenchError> {
    sim::gpu::GpuConfig::load(&opts.config).map_err(BenchError::Options)?;
    if opts.min_threads == 0 {
        return Err(BenchError::Options("--threads must be at least 1".into()));
    }
    let mut table = Table::new("gpu", COLUMNS);
    for k in KERNELS {
        let (row, failure) = run_kernel(k, opts)?;
        table.rows.push(row);
        table.failures.extend(failure);
    }
    Ok(table)
}

/// The checked front end of an example for the dac-gpu (32 lanes, 64-bit pointers).
pub(super) fn front(path: &Path, kernel: &str) -> Result<FrontResult, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::Kernel {
        kernel: kernel.into(),
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    let options = FrontOptions {
        target: crate::front::sema::Target {
            program_count: 32,
            pointer_size: 8,
        },
        ..FrontOptions::default()
    };
    let name = path.display().to_string();
    let front = driver::run_front(
        &name,
        Some(path.to_path_buf()),
        text,
        &options,
        Stage::Check,
    );
    if front.diags.has_errors() || front.checked.is_none() {
        let message = front
            .diags
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(BenchError::Kernel {
            kernel: kernel.into(),
            message: format!("does not compile: {message}"),
        });
    }
    Ok(front)
}

pub(super) fn run_error(kernel: &str, what: &str, e: RunError) -> BenchError {
    let message = match e {
        RunError::Compile(d) => d
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; "),
        RunError::Launch(l) => l
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; "),
        RunError::Trap(t) => t.to_string(),
    };
    BenchError::Kernel {
        kernel: kernel.into(),
        message: format!("{what}: {message}"),
    }
}

/// Compiles and runs one kernel (timing model, then the interpreter); its row and
/// the reference mismatch, if any.
fn run_kernel(
    k: &GpuKernel,
    opts: &BenchOptions,
) -> Result<(Vec<Cell>, Option<String>), BenchError> {
    let front = front(&opts.examples.join(k.file), k.name)?;
    let l = (k.launch)(opts.min_threads);
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: k.entry,
        args: &l.args,
        grid: Some(&l.grid),
        block: Some(&l.block),
        dynamic_shared: None,
        limits: crate::interp::Limits::default(),
    };
    let dopts = DacRunOptions {
        timing: true,
        config: opts.config.clone(),
        ..DacRunOptions::default()
    };
    let compiled = dac_gpu::run::compile(&front, req.optimize, &dopts.codegen)
        .map_err(|e| run_error(k.name, "dac-gpu compile", e))?;
    let (start, cpu0) = (Instant::now(), thread_cpu_seconds());
    let got = dac_gpu::run::run_compiled(&front, &compiled, &req, &dopts)
        .map_err(|e| run_error(k.name, "dac-gpu timing run", e))?;
    let wall = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    let want =
        driver::run_on_interp(&front, &req).map_err(|e| run_error(k.name, "interpreter", e))?;
    let mismatch = compare(&want, &got).map(|m| format!("{}: {m}", k.name));
    Ok((row(k, &l, &got, (wall, cpu), mismatch.is_none()), mismatch))
}

/// The first difference between the interpreter's buffers and the simulator's.
pub(super) fn compare(want: &RunResult, got: &RunResult) -> Option<String> {
    for (name, w) in &want.buffers {
        let Some(g) = got.buffer(name) else {
            return Some(format!("buffer `{name}` missing on dac-gpu"));
        };
        if w.bytes() != g.bytes() {
            let i = (0..w.len()).find(|&i| w.get(i) != g.get(i)).unwrap_or(0);
            let show =
                |b: &crate::launch::Buffer| b.get(i).map_or("-".into(), |v| format!("{v:?}"));
            return Some(format!(
                "`{name}`[{i}] is {} on dac-gpu, {} in the interpreter",
                show(g),
                show(w)
            ));
        }
    }
    None
}

pub(super) fn count(r: &RunResult, key: &str) -> u64 {
    match r.stats.get(key) {
        Some(StatValue::Count(n)) => n,
        Some(StatValue::Ratio(x)) => x as u64,
        None => 0,
    }
}

pub(super) fn ratio(r: &RunResult, key: &str) -> f64 {
    match r.stats.get(key) {
        Some(StatValue::Count(n)) => n as f64,
        Some(StatValue::Ratio(x)) => x,
        None => f64::NAN,
    }
}

/// The CPU time this thread has used (user + system), from `/proc/thread-self/stat`
/// in clock ticks of 1/100 s (Linux's fixed `USER_HZ`); `None` where that file is
/// missing. The timing model runs on the calling thread, so on a busy host this is
/// the simulator's own time, which the wall time is not.
pub fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// A table row; `time` is (wall, CPU) seconds of the timing run. The rate uses the
/// CPU time when it was measured (at least a tick), else the wall time.
fn row(
    k: &GpuKernel,
    l: &GpuLaunch,
    r: &RunResult,
    time: (f64, Option<f64>),
    ok: bool,
) -> Vec<Cell> {
    let (wall, cpu) = time;
    let busy = cpu.filter(|&c| c > 0.0).unwrap_or(wall);
    let thread_insts = count(r, "thread_instructions");
    let occupancy = format!(
        "{:.2} / {:.2}",
        ratio(r, "achieved_occupancy"),
        ratio(r, "theoretical_occupancy")
    );
    vec![
        Cell::Text(k.name.into()),
        Cell::Count(l.threads),
        Cell::Count(count(r, "warp_instructions")),
        Cell::Count(thread_insts),
        Cell::Count(count(r, "cycles")),
        Cell::Real(ratio(r, "ipc"), 1),
        Cell::Text(occupancy),
        Cell::Real(ratio(r, "l1_hit_rate"), 2),
        Cell::Real(ratio(r, "l2_hit_rate"), 2),
        Cell::Real(wall, 2),
        Cell::Real(cpu.unwrap_or(f64::NAN), 2),
        Cell::Real(thread_insts as f64 / busy.max(1e-9) / 1e6, 1),
        Cell::Text(if ok { "ok" } else { "MISMATCH" }.into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread's CPU time is readable on Linux and never goes back.
    #[test]
    fn thread_cpu_time_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let a = thread_cpu_seconds().expect("/proc/thread-self/stat");
            let b = thread_cpu_seconds().expect("/proc/thread-self/stat");
            assert!(a >= 0.0 && b >= a, "{a} then {b}");
        }
    }

    /// Every launch has at least the requested threads, and at 1M not much more.
    #[test]
    fn launches_reach_the_thread_count() {
        for t in [1, 1000, 4096, 1 << 20] {
            for k in KERNELS {
                let l = (k.launch)(t);
                assert!(l.threads >= t, "{} at {t}: {}", k.name, l.threads);
                if t >= 1 << 20 {
                    assert!(2 * l.threads <= 3 * t, "{} at {t}: {}", k.name, l.threads);
                }
            }
        }
    }
}
