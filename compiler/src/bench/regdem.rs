//! `spmdc bench regdem`: register demotion to shared memory (RegDem, paper 001;
//! issue 19) on the register-limited kernels of `tests/regdem_bench/`.
//!
//! For each kernel, at the launch its header suggests, `--regalloc auto` lists the
//! allocations it weighs ([`dac_gpu::regdem::allocate`]): the build under the
//! machine's register limit, spilling to local memory only if the limit is too small
//! (the *baseline*, what nvcc gives without `-maxrregcount`), and for the nearest
//! occupancy cliffs below its register count the kernel spilled to local memory,
//! demoted to shared memory, and mixed. Every one of them runs in
//! the timing model, and each run's buffers must equal the interpreter's bit for bit.
//! A row per allocation gives its registers, shared bytes, blocks per SM, cycles and
//! predicted cycles, and marks the predictor's choice and the fastest (the
//! exhaustive search's choice).
//!
//! A summary row per kernel compares:
//! * `demoted/local`: the fastest demoted (shared or mixed) allocation against the
//!   fastest local-spilling one at the same cliffs (cycles of local over demoted);
//! * `choice/base`: the predictor's choice against the baseline (no demotion);
//! * `choice/best`: the predictor's choice against the exhaustive best (1 = found it).
//!
//! Geomean rows combine them. The suite runs kernels in parallel on all cores; each
//! kernel's numbers do not depend on the order.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::dac::geomean;
use super::gpu::{compare, count, front, run_error};
use super::{BenchError, BenchOptions, Cell, Table};
use crate::back::dac_gpu::alloc::Placement;
use crate::back::dac_gpu::regdem::Candidate;
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::driver::{self, FrontResult, RunRequest};
use crate::launch::RunResult;

/// The table's columns.
pub const COLUMNS: &[&str] = &[
    "kernel",
    "variant",
    "budget",
    "registers",
    "shared B",
    "local spill B",
    "blocks/SM",
    "cycles",
    "predicted",
    "vs base",
    "choice",
    "fastest",
    "check",
];

/// The kernels: file in `tests/regdem_bench/` (the launch is its header's).
pub const KERNELS: &[&str] = &[
    "lj_forces",
    "sha256",
    "euler_flux",
    "roe_flux_f64",
    "deriche",
    "qtc_candidate",
    "knn",
    "conv_sep17",
    "nbody",
    "sgemm4x4",
    "stencil25",
];

/// The suite's kernels directory.
pub fn kernels_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/regdem_bench")
}

/// A launch as a kernel's header suggests it (`// spmdc run FILE --entry ...`,
/// continued with `\`), without its `--print` options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeaderLaunch {
    pub entry: String,
    pub grid: Option<String>,
    pub block: Option<String>,
    pub dynamic_shared: Option<String>,
    pub args: Vec<String>,
}

/// The first `spmdc run` command of `text`'s comments.
pub fn header_launch(text: &str) -> Option<HeaderLaunch> {
    let mut lines = text.lines().map(|l| l.trim_start_matches("//").trim());
    let first = lines.find(|l| l.starts_with("spmdc run "))?;
    let mut command = first.to_string();
    while command.ends_with('\\') {
        command.pop();
        command.push(' ');
        command.push_str(lines.next()?);
    }
    let words = crate::launch::shell_words(&command);
    let mut launch = HeaderLaunch::default();
    let mut it = words.iter().skip(3); // spmdc run FILE
    while let Some(w) = it.next() {
        let value = || it.clone().next().cloned();
        match w.as_str() {
            "--entry" => launch.entry = value()?,
            "--grid" => launch.grid = value(),
            "--block" => launch.block = value(),
            "--dynamic-shared" => launch.dynamic_shared = value(),
            "--arg" => launch.args.push(value()?),
            "--print" => {}
            _ => continue,
        }
        it.next();
    }
    (!launch.entry.is_empty()).then_some(launch)
}

/// One timed allocation of a kernel.
struct Variant {
    candidate: Candidate,
    result: RunResult,
    mismatch: Option<String>,
}

impl Variant {
    fn cycles(&self) -> f64 {
        count(&self.result, "cycles") as f64
    }

    fn spills(&self) -> bool {
        self.candidate.spill_slots + self.candidate.demoted_slots > 0
    }

    fn demoted(&self) -> bool {
        self.candidate.demoted_slots > 0
    }
}

/// What one kernel's summary row and the geomeans need.
#[derive(Clone, Copy, Debug)]
struct Summary {
    /// Local cycles over demoted cycles (best of each), when both exist.
    demoted_vs_local: Option<f64>,
    /// Baseline cycles over the choice's.
    choice_vs_base: f64,
    /// Best cycles over the choice's (1: the predictor found the fastest).
    choice_vs_best: f64,
}

/// Runs the suite on `opts.config` (every kernel of [`KERNELS`]).
pub fn run(opts: &BenchOptions) -> Result<Table, BenchError> {
    run_kernels(opts, &kernels_dir(), KERNELS)
}

/// Runs the suite on the kernels `names` of `dir` (`NAME.spmd`, entry `NAME`, the
/// launch in its header).
pub fn run_kernels(opts: &BenchOptions, dir: &Path, names: &[&str]) -> Result<Table, BenchError> {
    let machine = sim::gpu::GpuConfig::load(&opts.config).map_err(BenchError::Options)?;
    let outcomes = parallel_map(names, |name| run_kernel(dir, name, opts, &machine));
    let mut table = Table::new("regdem", COLUMNS);
    let mut summaries = Vec::new();
    for outcome in outcomes {
        let (rows, failures, summary) = outcome?;
        table.rows.extend(rows);
        table.failures.extend(failures);
        summaries.extend(summary);
    }
    table.rows.push(geomean_row(&summaries));
    Ok(table)
}

/// `f` over `items` on all cores, results in `items`' order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers.min(items.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                if let Ok(mut all) = results.lock() {
                    all[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

type KernelOutcome = Result<(Vec<Vec<Cell>>, Vec<String>, Option<Summary>), BenchError>;

fn run_kernel(
    dir: &Path,
    name: &str,
    opts: &BenchOptions,
    machine: &sim::gpu::GpuConfig,
) -> KernelOutcome {
    let path = dir.join(format!("{name}.spmd"));
    let front = front(&path, name)?;
    let launch = read_launch(&path, name)?;
    let req = RunRequest {
        optimize: driver::OPTIMIZE_BY_DEFAULT,
        entry: &launch.entry,
        args: &launch.args,
        grid: launch.grid.as_deref(),
        block: launch.block.as_deref(),
        dynamic_shared: launch.dynamic_shared.as_deref(),
        limits: crate::interp::Limits::default(),
    };
    let want =
        driver::run_on_interp(&front, &req).map_err(|e| run_error(name, "interpreter", e))?;
    let codegen = dac_gpu::Options {
        max_regs: machine
            .max_registers_per_thread
            .min(dac_gpu::alloc::MAX_BUDGET),
        predict: true,
        machine: machine.clone(),
        ..dac_gpu::Options::default()
    };
    let dopts = DacRunOptions {
        timing: true,
        config: opts.config.clone(),
        codegen,
        ..DacRunOptions::default()
    };
    let codegen = dac_gpu::run::for_launch(&dopts.codegen, &req);
    let auto = dac_gpu::run::compile(&front, req.optimize, &codegen)
        .map_err(|e| run_error(name, "compile (auto)", e))?;
    let candidates = auto
        .program
        .kernels
        .iter()
        .position(|k| k.name == launch.entry)
        .and_then(|k| auto.candidates.get(k).cloned())
        .unwrap_or_default();
    let mut variants = Vec::new();
    for c in candidates {
        let result = timed(&front, &req, &dopts, &codegen, &c)
            .map_err(|e| run_error(name, &variant_name(&c), e))?;
        let mismatch =
            compare(&want, &result).map(|m| format!("{name} ({}): {m}", variant_name(&c)));
        variants.push(Variant {
            candidate: c,
            result,
            mismatch,
        });
    }
    Ok(rows(name, &variants))
}

fn read_launch(path: &Path, name: &str) -> Result<HeaderLaunch, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::Kernel {
        kernel: name.into(),
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    header_launch(&text).ok_or_else(|| BenchError::Kernel {
        kernel: name.into(),
        message: "no `spmdc run` launch in its header".into(),
    })
}

/// Compiles `codegen` with candidate `c`'s budget and placement fixed, and runs it.
#[allow(clippy::result_large_err)] // the driver's shared error type
fn timed(
    front: &FrontResult,
    req: &RunRequest<'_>,
    dopts: &DacRunOptions,
    codegen: &dac_gpu::Options,
    c: &Candidate,
) -> Result<RunResult, driver::RunError> {
    let fixed = c.fixed(codegen);
    let compiled = dac_gpu::run::compile(front, req.optimize, &fixed)?;
    dac_gpu::run::run_compiled(front, &compiled, req, dopts)
}

fn variant_name(c: &Candidate) -> String {
    let place = match c.placement {
        Placement::Local if c.spill_slots == 0 => "spill-free",
        Placement::Local => "local",
        Placement::Shared => "shared",
        Placement::Mixed => "mixed",
    };
    format!("{place} @{}", c.budget)
}

/// The rows of one kernel: one per variant (the predictor's choice first, as the
/// candidates come), then its summary; its failed checks; its summary's numbers.
fn rows(name: &str, variants: &[Variant]) -> (Vec<Vec<Cell>>, Vec<String>, Option<Summary>) {
    let failures: Vec<String> = variants.iter().filter_map(|v| v.mismatch.clone()).collect();
    // The build without demotion: local spilling (if any) under the machine's limit.
    let top = variants.iter().map(|v| v.candidate.budget).max();
    let base = variants
        .iter()
        .find(|v| v.candidate.placement == Placement::Local && Some(v.candidate.budget) == top);
    let best = variants
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.cycles().total_cmp(&b.1.cycles()).then(a.0.cmp(&b.0)))
        .map(|(i, _)| i);
    let base_cycles = base.map_or(f64::NAN, Variant::cycles);
    let mut rows: Vec<Vec<Cell>> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| variant_row(name, v, base_cycles, i == 0, Some(i) == best))
        .collect();
    let (Some(choice), Some(best)) = (variants.first(), best) else {
        return (rows, failures, None);
    };
    let fastest = |pick: fn(&Variant) -> bool| {
        variants
            .iter()
            .filter(|v| pick(v))
            .map(Variant::cycles)
            .min_by(f64::total_cmp)
    };
    let local = fastest(|v| v.spills() && !v.demoted());
    let demoted = fastest(Variant::demoted);
    let summary = Summary {
        demoted_vs_local: local.zip(demoted).map(|(l, d)| l / d),
        choice_vs_base: base_cycles / choice.cycles(),
        choice_vs_best: variants[best].cycles() / choice.cycles(),
    };
    rows.push(summary_row(name, &summary, failures.is_empty()));
    (rows, failures, Some(summary))
}

fn variant_row(name: &str, v: &Variant, base: f64, choice: bool, fastest: bool) -> Vec<Cell> {
    let c = &v.candidate;
    let mark = |b: bool| Cell::Text(if b { "*" } else { "" }.into());
    vec![
        Cell::Text(name.into()),
        Cell::Text(variant_name(c)),
        Cell::Count(u64::from(c.budget)),
        Cell::Count(u64::from(c.num_regs)),
        Cell::Count(count(&v.result, "shared_bytes_per_block")),
        Cell::Count(count(&v.result, "spill_bytes")),
        Cell::Count(u64::from(c.prediction.blocks_per_sm)),
        Cell::Count(count(&v.result, "cycles")),
        Cell::Count(c.prediction.cycles.round() as u64),
        Cell::Real(base / v.cycles(), 3),
        mark(choice),
        mark(fastest),
        Cell::Text(
            if v.mismatch.is_none() {
                "ok"
            } else {
                "MISMATCH"
            }
            .into(),
        ),
    ]
}

/// A kernel's summary: the three ratios, in the `vs base` column's place and the
/// variant column's text.
fn summary_row(name: &str, s: &Summary, ok: bool) -> Vec<Cell> {
    let blank = || Cell::Text(String::new());
    let demoted = s
        .demoted_vs_local
        .map_or("no local spill to compare".to_string(), |r| {
            format!("demoted/local {r:.3}")
        });
    vec![
        Cell::Text(format!("{name}: summary")),
        Cell::Text(format!(
            "{demoted}; choice/base {:.3}; choice/best {:.3}",
            s.choice_vs_base, s.choice_vs_best
        )),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        blank(),
        Cell::Real(s.choice_vs_base, 3),
        blank(),
        blank(),
        Cell::Text(if ok { "ok" } else { "MISMATCH" }.into()),
    ]
}

fn geomean_row(summaries: &[Summary]) -> Vec<Cell> {
    let demoted: Vec<f64> = summaries
        .iter()
        .filter_map(|s| s.demoted_vs_local)
        .collect();
    let text = format!(
        "demoted/local {:.3} ({} kernels, best {:.3}); choice/base {:.3} (worst {:.3}); \
         choice/best {:.3}",
        geomean(demoted.iter().copied()),
        demoted.len(),
        demoted.iter().copied().fold(f64::NAN, f64::max),
        geomean(summaries.iter().map(|s| s.choice_vs_base)),
        summaries
            .iter()
            .map(|s| s.choice_vs_base)
            .fold(f64::NAN, f64::min),
        geomean(summaries.iter().map(|s| s.choice_vs_best)),
    );
    let mut row = vec![Cell::Text("geomean".into()), Cell::Text(text)];
    row.resize(COLUMNS.len(), Cell::Text(String::new()));
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_launch_is_read_with_its_continuations_and_quotes() {
        let text = "// Suggested launch:\n\
                    //   spmdc run tests/x.spmd --entry k --grid 4,2 \\\n\
                    //       --block 128 --arg n=8 --arg x='random(8,1,0,5)' \\\n\
                    //       --print x\n\
                    // Expected: ...\n";
        let l = header_launch(text).expect("a launch");
        assert_eq!(l.entry, "k");
        assert_eq!(l.grid.as_deref(), Some("4,2"));
        assert_eq!(l.block.as_deref(), Some("128"));
        assert_eq!(l.args, ["n=8", "x=random(8,1,0,5)"]);
        assert_eq!(header_launch("// no launch here\n"), None);
    }

    #[test]
    fn every_kernel_of_the_suite_has_a_launch() {
        for name in KERNELS {
            let path = kernels_dir().join(format!("{name}.spmd"));
            let launch = read_launch(&path, name).expect("a launch");
            assert_eq!(&launch.entry, name, "{name}");
        }
    }
}
