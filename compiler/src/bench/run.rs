//! Running a suite's runs: each [`RunSpec`] is compiled for its configuration's
//! target with its switches, run once in timing mode, and its buffers compared bit
//! for bit with the reference interpreter's run of the same launch. Runs go to all
//! cores ([`parallel_map`]); each run's record depends only on the run, so the
//! results are the same whatever the order or the number of workers. A progress bar
//! with an ETA goes to standard error when it is a terminal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use super::gpu::{compare, thread_cpu_seconds};
use super::record::{stats_of, Check, Host, RunRecord, Share};
use super::suite::{Config, RunSpec, Suite, Target};
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::back::nyuzi::run::{run_on_nyuzi, NyuziRunOptions};
use crate::driver::{self, FrontOptions, FrontResult, RunError, RunRequest, Stage};
use crate::launch::RunResult;
use crate::passes::{ShuffleMode, Switches};

/// Which slice of a suite's runs to do: runs whose index is `index` modulo `count`
/// (interleaved, so each shard gets a share of every kernel's runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `I/N` with `I < N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}` is not a shard `I/N` (0 <= I < N)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index < count {
            Ok(Shard { index, count })
        } else {
            Err(bad())
        }
    }

    pub fn contains(self, run: usize) -> bool {
        run % self.count == self.index
    }
}

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub shard: Shard,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// Show a progress bar (only drawn on a terminal).
    pub progress: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            shard: Shard::WHOLE,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            progress: false,
        }
    }
}

/// Runs the suite's runs of `opts.shard`, in the suite's order.
pub fn run_suite(suite: &Suite, opts: &RunOptions) -> Vec<RunRecord> {
    let runs: Vec<RunSpec> = suite
        .runs()
        .into_iter()
        .filter(|r| opts.shard.contains(r.index))
        .collect();
    let bar = progress_bar(runs.len() as u64, opts.progress);
    let records = parallel_map(&runs, opts.jobs, |r| {
        let record = run_one(suite, r);
        bar.inc(1);
        bar.set_message(format!("{} ({})", record.kernel, record.config));
        record
    });
    bar.finish_and_clear();
    records
}

fn progress_bar(len: u64, show: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:30} {pos}/{len} runs, {elapsed} elapsed, ETA {eta}  {wide_msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// `f` over `items` on `jobs` threads, results in `items`' order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(items.len()) {
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

/// The compiler switches of a configuration.
pub fn switches_of(c: &Config) -> (Switches, bool) {
    let has = |s: &str| c.switches.iter().any(|x| x == s);
    let switches = Switches {
        no_uniformity: has("--no-uniformity") || has("--no-scalar-datapath"),
        no_skip_empty: has("--no-skip-empty"),
        force_cfg_opts: has("--force-cfg-opts"),
        no_inline: has("--no-inline"),
        no_scalar_datapath: has("--no-scalar-datapath"),
        unroll: has("--unroll"),
        shuffle: shuffle_of(c),
    };
    (switches, !has("--no-opt"))
}

/// The configuration's shuffle synthesis (`--shuffle=all|auto`; off without either).
/// Suites take no ablation: its results are wrong by design.
fn shuffle_of(c: &Config) -> ShuffleMode {
    let has = |s: &str| c.switches.iter().any(|x| x == s);
    if has("--shuffle=all") {
        ShuffleMode::All
    } else if has("--shuffle=auto") {
        ShuffleMode::Auto
    } else {
        ShuffleMode::Off
    }
}

/// Runs one run; failures are recorded, never raised.
pub fn run_one(suite: &Suite, spec: &RunSpec) -> RunRecord {
    let (k, c) = (&suite.kernels[spec.kernel], &suite.configs[spec.config]);
    let mut record = RunRecord {
        suite: suite.name.clone(),
        index: spec.index,
        kernel: k.name.clone(),
        class: k.class.clone(),
        config: c.name.clone(),
        target: c.target.name().to_string(),
        machine: c.machine.clone(),
        switches: c.switches.clone(),
        size: spec.size,
        launch: spec.launch.clone(),
        check: Check::Ok,
        message: None,
        stats: Default::default(),
        share: None,
        variants: Vec::new(),
        host: Host::default(),
    };
    if let Err(e) = fill(suite, spec, &mut record) {
        record.check = Check::Error;
        record.message = Some(e);
    }
    record
}

fn fill(suite: &Suite, spec: &RunSpec, record: &mut RunRecord) -> Result<(), String> {
    let (k, c) = (&suite.kernels[spec.kernel], &suite.configs[spec.config]);
    let front = front_for(&k.path, c)?;
    let l = &spec.launch;
    let (_, optimize) = switches_of(c);
    let req = RunRequest {
        optimize,
        entry: &l.entry,
        args: &l.args,
        grid: l.grid.as_deref(),
        block: l.block.as_deref(),
        dynamic_shared: l.dynamic_shared.as_deref(),
        limits: crate::interp::Limits::default(),
    };
    if c.target == Target::Interp {
        let start = (Instant::now(), thread_cpu_seconds());
        let got = driver::run_on_interp(&front, &req).map_err(|e| describe("interpreter", e))?;
        record.stats = stats_of(&got);
        record.host = elapsed(start);
        record.host.compile_s = compile_seconds(&k.path, &req, c)?;
        return Ok(());
    }
    let want = driver::run_on_interp(&front, &req).map_err(|e| describe("interpreter", e))?;
    if suite.layout == super::suite::Layout::Regdem {
        record.variants = super::regdem::time_variants(&front, &req, &c.machine, &want)?;
        return Ok(());
    }
    let (got, host) = timed(&front, &req, c)?;
    record.stats = stats_of(&got);
    record.host = host;
    record.host.compile_s = compile_seconds(&k.path, &req, c)?;
    if let Some(m) = compare(&want, &got) {
        record.check = Check::Mismatch;
        record.message = Some(m);
    }
    if c.profile {
        let s = super::uniformity::share_of(&front, &req).map_err(|e| format!("profile: {e}"))?;
        record.share = Some(Share {
            uniform_percent: s.uniform_percent(),
            analysis_percent: s.analysis_percent(),
        });
    }
    Ok(())
}

/// The checked front end of `path` for `c`'s target, with its switches.
fn front_for(path: &std::path::Path, c: &Config) -> Result<FrontResult, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let target = match c.target {
        Target::Nyuzi => crate::front::sema::Target {
            program_count: 16,
            pointer_size: 4,
        },
        Target::DacGpu | Target::Interp => dac_gpu::TARGET,
    };
    let options = FrontOptions {
        target,
        ..FrontOptions::default()
    };
    let name = path.display().to_string();
    let mut front = driver::run_front(
        &name,
        Some(path.to_path_buf()),
        text,
        &options,
        Stage::Check,
    );
    if front.diags.has_errors() || front.checked.is_none() {
        let m: Vec<String> = front.diags.iter().map(|d| d.message.clone()).collect();
        return Err(format!("does not compile: {}", m.join("; ")));
    }
    front.switches = switches_of(c).0;
    Ok(front)
}

/// The wall and CPU seconds since `start`.
fn elapsed(start: (Instant, Option<f64>)) -> Host {
    Host {
        wall_s: start.0.elapsed().as_secs_f64(),
        cpu_s: thread_cpu_seconds().zip(start.1).map(|(b, a)| b - a),
        compile_s: 0.0,
    }
}

/// Wall seconds of compiling the kernel again: the front end, the IR pipeline and,
/// on dac-gpu, code generation (the front end is run anew so that it counts).
fn compile_seconds(
    path: &std::path::Path,
    req: &RunRequest<'_>,
    c: &Config,
) -> Result<f64, String> {
    let start = Instant::now();
    let again = front_for(path, c)?;
    match c.target {
        Target::DacGpu => {
            dac_gpu::run::compile(&again, req.optimize, &dac_codegen(c)?)
                .map_err(|e| describe("dac-gpu compile", e))?;
        }
        _ => {
            driver::lower_front_with(&again, req.optimize)
                .map_err(|d| describe("lower", RunError::Compile(d)))?;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The code generation options of `c`: its switches, for its machine (the register
/// budget and the `--shuffle=auto` cost model), as `spmdc run --config` compiles.
fn dac_codegen(c: &Config) -> Result<dac_gpu::Options, String> {
    let has = |s: &str| c.switches.iter().any(|x| x == s);
    let machine = sim::gpu::GpuConfig::load(&c.machine)?;
    Ok(dac_gpu::Options {
        dac: !has("--no-dac"),
        shuffle: shuffle_of(c),
        ..dac_gpu::Options::for_machine(machine)
    })
}

/// Compiles and runs (timing or functional), timing the run (not the compile).
fn timed(
    front: &FrontResult,
    req: &RunRequest<'_>,
    c: &Config,
) -> Result<(RunResult, Host), String> {
    let start = (Instant::now(), thread_cpu_seconds());
    match c.target {
        Target::Interp => Err("the interpreter is not timed here".into()),
        Target::Nyuzi => {
            let opts = NyuziRunOptions {
                timing: c.timing,
                ..NyuziRunOptions::default()
            };
            let r = run_on_nyuzi(front, req, &opts).map_err(|e| describe("nyuzi", e))?;
            Ok((r, elapsed(start)))
        }
        Target::DacGpu => {
            let dopts = DacRunOptions {
                timing: c.timing,
                config: c.machine.clone(),
                codegen: dac_codegen(c)?,
                ..DacRunOptions::default()
            };
            let compiled = dac_gpu::run::compile(front, req.optimize, &dopts.codegen)
                .map_err(|e| describe("dac-gpu compile", e))?;
            let start = (Instant::now(), thread_cpu_seconds());
            let r = dac_gpu::run::run_compiled(front, &compiled, req, &dopts)
                .map_err(|e| describe("dac-gpu", e))?;
            Ok((r, elapsed(start)))
        }
    }
}

/// A run error as one line.
pub fn describe(what: &str, e: RunError) -> String {
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
    format!("{what}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_runs() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["3/3", "1", "a/2", "1/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        for n in [1, 3, 7] {
            for run in 0..50 {
                let owners = (0..n)
                    .filter(|&i| Shard { index: i, count: n }.contains(run))
                    .count();
                assert_eq!(owners, 1);
            }
        }
    }

    #[test]
    fn parallel_map_keeps_the_order() {
        let items: Vec<u64> = (0..100).collect();
        assert_eq!(
            parallel_map(&items, 3, |x| x * 2),
            (0..100).map(|x| x * 2).collect::<Vec<_>>()
        );
    }
}
