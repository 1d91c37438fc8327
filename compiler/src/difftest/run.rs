//! Running one program under one configuration, through the library (no
//! subprocess): the front end for the configuration's gang width, then the
//! interpreter or a simulator, each bounded by a step limit, with any panic caught.
//! What a run observed is its buffers as `--print` prints them (so NaNs compare
//! equal whatever their payload) and its printed output.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::config::{Config, Target};
use crate::back::{dac_gpu, nyuzi};
use crate::diag::codes;
use crate::driver::{self, FrontOptions, RunError, RunRequest, Stage};

/// The launch a program's header gives on its `// spmdc run` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchLine {
    pub entry: String,
    pub grid: Option<String>,
    pub block: Option<String>,
    /// `NAME=SPEC`, one per parameter.
    pub args: Vec<String>,
}

impl LaunchLine {
    /// The first `// spmdc run ...` line of `text`'s leading comments.
    pub fn from_source(text: &str) -> Result<LaunchLine, String> {
        let line = text
            .lines()
            .take_while(|l| l.trim_start().starts_with("//"))
            .find_map(|l| {
                l.trim_start()
                    .trim_start_matches('/')
                    .trim()
                    .strip_prefix("spmdc run")
            })
            .ok_or("no `// spmdc run --entry NAME ...` line in the header comment")?;
        let mut words = line.split_whitespace();
        let mut launch = LaunchLine {
            entry: String::new(),
            grid: None,
            block: None,
            args: Vec::new(),
        };
        while let Some(w) = words.next() {
            let value = words
                .next()
                .ok_or_else(|| format!("`{w}` without a value in the `spmdc run` line"))?
                .to_string();
            match w {
                "--entry" => launch.entry = value,
                "--grid" => launch.grid = Some(value),
                "--block" => launch.block = Some(value),
                "--arg" => launch.args.push(value),
                other => return Err(format!("`{other}` is not an option the harness reads")),
            }
        }
        if launch.entry.is_empty() {
            return Err("the `spmdc run` line has no `--entry`".into());
        }
        Ok(launch)
    }
}

/// What one run gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The buffers as printed, then the printed output.
    Ran(String),
    /// The program did not compile: the diagnostics' codes and messages.
    Compile(String),
    /// The launch was refused (a resource the configuration cannot give).
    Launch(String),
    Trap(String),
    Panic(String),
}

impl Outcome {
    /// A configuration that cannot run the program by design rather than by a bug:
    /// a launch refused for resources, or a register budget too small (E0904).
    pub fn is_unsupported(&self) -> bool {
        match self {
            Outcome::Launch(_) => true,
            Outcome::Compile(m) => m.contains(codes::REGISTER_BUDGET.as_str()),
            _ => false,
        }
    }

    /// One line that says what happened, for reports.
    pub fn summary(&self) -> String {
        let first = |s: &str| s.lines().next().unwrap_or_default().to_string();
        match self {
            Outcome::Ran(_) => "ran".into(),
            Outcome::Compile(m) => format!("compile error: {}", first(m)),
            Outcome::Launch(m) => format!("launch refused: {}", first(m)),
            Outcome::Trap(m) => format!("trap: {}", first(m)),
            Outcome::Panic(m) => format!("panic: {}", first(m)),
        }
    }
}

/// The step limit of a run on the interpreter or dac-gpu: generated programs execute
/// well under a million steps or warp instructions, so reaching it means a hang.
pub const MAX_STEPS: u64 = 50_000_000;

/// The step limit on nyuzi, which has no double-precision unit: every `double`
/// operation is a runtime routine, and unoptimized (`--no-opt`) code calls rather than
/// inlines them. A varying `atan(double)` takes 141,725 instructions unoptimized
/// (27,247 optimized), so seed 202847 (a `foreach_active` calling it in a loop, in
/// seven gangs) needs 79 million instructions, matching the interpreter. Eight times
/// [`MAX_STEPS`] is a few seconds of a release build.
pub const NYUZI_MAX_STEPS: u64 = 8 * MAX_STEPS;

/// The step limit on nyuzi at `--no-opt`, where nothing is inlined, folded or kept
/// in registers: seed 325659 (size 6, `double` work in nested loops over 192 threads)
/// executes 984,726,930 instructions unoptimized against 10,997,754 optimized (90
/// times as many), matching the interpreter, about a minute of a release build.
/// Forty times [`MAX_STEPS`] leaves that twice the room.
pub const NYUZI_NO_OPT_MAX_STEPS: u64 = 40 * MAX_STEPS;

/// Runs `source` as `launch` says under `config`.
pub fn run(source: &str, launch: &LaunchLine, config: &Config) -> Outcome {
    catch_unwind(AssertUnwindSafe(|| run_unguarded(source, launch, config))).unwrap_or_else(
        |panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            Outcome::Panic(message)
        },
    )
}

fn run_unguarded(source: &str, launch: &LaunchLine, config: &Config) -> Outcome {
    let mut options = FrontOptions::default();
    options.target = match config.target {
        Target::Interp { program_count } => {
            let mut t = options.target;
            t.program_count = program_count;
            t
        }
        Target::Nyuzi => nyuzi::TARGET,
        Target::DacGpu => dac_gpu::TARGET,
    };
    let mut front = driver::run_front(
        "generated.spmd",
        None,
        source.to_string(),
        &options,
        Stage::Check,
    );
    if front.diags.has_errors() {
        let text: Vec<String> = front
            .diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code, d.message))
            .collect();
        return Outcome::Compile(text.join("\n"));
    }
    front.switches = config.switches;
    let request = RunRequest {
        optimize: config.optimize,
        entry: &launch.entry,
        args: &launch.args,
        grid: launch.grid.as_deref(),
        block: launch.block.as_deref(),
        dynamic_shared: None,
        limits: crate::interp::Limits {
            max_steps: match config.target {
                Target::Nyuzi if !config.optimize => NYUZI_NO_OPT_MAX_STEPS,
                Target::Nyuzi => NYUZI_MAX_STEPS,
                _ => MAX_STEPS,
            },
            ..Default::default()
        },
    };
    let result = match config.target {
        Target::Interp { .. } => driver::run_on_interp(&front, &request),
        Target::Nyuzi => nyuzi::run::run_on_nyuzi(&front, &request, &nyuzi_options(config)),
        Target::DacGpu => match dac_options(config) {
            Ok(o) => dac_gpu::run_on_dac_gpu(&front, &request, &o),
            Err(e) => return Outcome::Launch(e),
        },
    };
    match result {
        Ok(r) => {
            let mut observed = String::new();
            for (name, buffer) in &r.buffers {
                observed.push_str(&buffer.format_print(name));
            }
            observed.push_str(&r.output);
            Outcome::Ran(observed)
        }
        Err(RunError::Compile(diags)) => Outcome::Compile(
            diags
                .iter()
                .map(|d| format!("{}: {}", d.code, d.message))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Err(RunError::Launch(errors)) => Outcome::Launch(
            errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Err(RunError::Trap(t)) => Outcome::Trap(t.message),
    }
}

/// The stack of each nyuzi gang: unoptimized code (`--no-opt`, `--no-inline`) keeps a
/// slot per variable and generated programs declare many varying arrays and structs,
/// more than the default 16 KiB holds.
pub const NYUZI_GANG_STACK: u32 = 64 << 10;

fn nyuzi_options(config: &Config) -> nyuzi::run::NyuziRunOptions {
    nyuzi::run::NyuziRunOptions {
        image: nyuzi::image::ImageOptions {
            gang_stack: NYUZI_GANG_STACK,
            ..Default::default()
        },
        timing: config.timing,
        machine: nyuzi::image::MachineShape {
            cores: config.cores,
            threads_per_core: config.threads,
        },
        ..Default::default()
    }
}

/// The dac-gpu options of `config`, as `spmdc run` builds them from its flags.
fn dac_options(config: &Config) -> Result<dac_gpu::DacRunOptions, String> {
    let machine_name = if config.maxwell { "maxwell" } else { "gtx480" };
    let machine = sim::gpu::GpuConfig::load(machine_name)?;
    let machine_regs = machine
        .max_registers_per_thread
        .min(dac_gpu::alloc::MAX_BUDGET);
    let placement = match config.regalloc {
        "shared" => dac_gpu::alloc::Placement::Shared,
        "mixed" => dac_gpu::alloc::Placement::Mixed,
        _ => dac_gpu::alloc::Placement::Local,
    };
    let codegen = dac_gpu::Options {
        max_regs: config.max_regs.unwrap_or(machine_regs),
        fixed_budget: config.max_regs.is_some(),
        predict: config.regalloc == "auto",
        placement,
        machine,
        uniformity: !config.switches.no_uniformity,
        dac: !config.no_dac,
        // `Config::parse` takes no ablation: those give wrong results by design.
        shuffle: config.switches.shuffle,
        ..Default::default()
    };
    Ok(dac_gpu::DacRunOptions {
        timing: config.timing,
        config: machine_name.into(),
        scheduler: if config.lrr {
            sim::gpu::SchedulerKind::Lrr
        } else {
            sim::gpu::SchedulerKind::Gto
        },
        codegen,
        max_warp_insts: MAX_STEPS,
        exhaustive: false,
    })
}
