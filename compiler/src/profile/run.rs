//! Recorded runs on every target: compile, run with a [`sim::record::Recorder`],
//! describe the code that ran ([`InstDesc`]) and map the recording to source lines.
//! The CLI's `spmdc run --profile/--trace` and the playground both call [`run`].

use sim::record::{Profile, Recorder, Trace};

use super::{InstDesc, InstTable, Recording, SourceProfile, TraceListing};
use crate::back::dac_gpu::{self, DacRunOptions};
use crate::back::nyuzi::run::{self as nyuzi_run, BuiltLaunch, NyuziRunOptions};
use crate::driver::{self, FrontResult, RunError, RunRequest};
use crate::ir::write::Names;
use crate::ir::Module;
use crate::launch::RunResult;

/// Where a recorded run runs.
#[derive(Clone, Debug)]
pub enum Machine {
    Interp,
    Nyuzi(NyuziRunOptions),
    DacGpu(Box<DacRunOptions>),
}

impl Machine {
    /// The target's name, as `--target` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Machine::Interp => "interp",
            Machine::Nyuzi(_) => "nyuzi",
            Machine::DacGpu(_) => "dac-gpu",
        }
    }

    /// Runs `req` on this machine without recording: the plain `spmdc run`.
    pub fn run_plain(
        &self,
        front: &FrontResult,
        req: &RunRequest<'_>,
    ) -> Result<RunResult, RunError> {
        match self {
            Machine::Interp => driver::run_on_interp(front, req),
            Machine::Nyuzi(opts) => nyuzi_run::run_on_nyuzi(front, req, opts),
            Machine::DacGpu(opts) => dac_gpu::run_on_dac_gpu(front, req, opts),
        }
    }

    /// What the trace's unit is on this machine.
    pub fn unit_kind(&self) -> &'static str {
        match self {
            Machine::Interp => "gang",
            Machine::Nyuzi(_) => "hardware thread",
            Machine::DacGpu(_) => "warp",
        }
    }
}

/// What to record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub profile: bool,
    /// Trace this unit (Nyuzi hardware thread, interpreter gang, GPU warp, counted
    /// over the launch), at most this many instructions.
    pub trace: Option<(u64, usize)>,
}

/// A recorded run's results. A run that stopped with an error (a trap, the
/// instruction limit) still has what was recorded up to there: the trace then
/// leads to the error.
#[derive(Debug)]
pub struct Recorded {
    pub result: Result<RunResult, RunError>,
    pub profile: Option<SourceProfile>,
    pub trace: Option<TraceListing>,
}

/// Runs `req` on `machine`, recording what `wanted` asks for.
pub fn run(
    front: &FrontResult,
    req: &RunRequest<'_>,
    machine: &Machine,
    wanted: Wanted,
) -> Recorded {
    let mut rec = Recording {
        recorder: Recorder {
            profile: wanted.profile.then(Profile::default),
            trace: wanted.trace.map(|(unit, limit)| Trace::new(unit, 0, limit)),
        },
        ..Recording::default()
    };
    let result = match machine {
        Machine::Interp => run_interp(front, req, &mut rec),
        Machine::Nyuzi(opts) => run_nyuzi(front, req, opts, &mut rec),
        Machine::DacGpu(opts) => run_dac(front, req, opts, &mut rec),
    };
    if rec.insts.is_empty() {
        // It stopped before anything ran (a compile or launch error).
        return Recorded {
            result,
            profile: None,
            trace: None,
        };
    }
    if let Some(t) = rec.recorder.trace.as_mut() {
        t.width = rec.lanes;
    }
    let sources = &front.sources;
    Recorded {
        profile: rec
            .recorder
            .profile
            .as_ref()
            .map(|p| SourceProfile::new(machine.name(), &rec, p, sources)),
        trace: rec
            .recorder
            .trace
            .as_ref()
            .map(|t| TraceListing::new(machine.name(), machine.unit_kind(), &rec, t, sources)),
        result,
    }
}

fn run_interp(
    front: &FrontResult,
    req: &RunRequest<'_>,
    rec: &mut Recording,
) -> Result<RunResult, RunError> {
    let module = driver::lower_front_with(front, req.optimize).map_err(RunError::Compile)?;
    rec.insts = describe_ir(&module);
    rec.lanes = module.lane_count;
    driver::record_module_on_interp(front, &module, req, &mut rec.recorder)
}

fn run_nyuzi(
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &NyuziRunOptions,
    rec: &mut Recording,
) -> Result<RunResult, RunError> {
    let mut built = nyuzi_run::build_launch(front, req, opts.machine, &opts.image)?;
    rec.insts = describe_nyuzi(&built);
    rec.lanes = crate::back::nyuzi::abi::LANES;
    nyuzi_run::run_built_recorded(
        &mut built,
        req.limits.max_steps,
        opts,
        Some(&mut rec.recorder),
    )
    .map(|mut r| {
        r.compiler = driver::compiler_settings(front, req.optimize);
        r
    })
}

fn run_dac(
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &DacRunOptions,
    rec: &mut Recording,
) -> Result<RunResult, RunError> {
    let codegen = dac_gpu::run::launch_codegen(front, req, opts)?;
    let compiled = dac_gpu::run::compile(front, req.optimize, &codegen)?;
    dac_gpu::run::run_compiled_recorded(front, &compiled, req, opts, Some(rec))
}

/// Every decoded op of every function of `module` as its IR instruction.
pub fn describe_ir(module: &Module) -> InstTable {
    let origins = crate::interp::op_origin(module);
    module
        .functions
        .values()
        .zip(origins)
        .map(|(func, ops)| {
            let names = Names::new(func);
            ops.into_iter()
                .enumerate()
                .map(|(op, inst)| {
                    let mut text = String::new();
                    let _ = crate::ir::write::write_inst(&mut text, func, inst, module, &names);
                    let span = func.spans.get(inst).copied();
                    InstDesc {
                        function: func.name.clone(),
                        address: op as u64,
                        text,
                        span: span.filter(|s| *s != Default::default()),
                        place: "no source line",
                    }
                })
                .collect()
        })
        .collect()
}

/// Every instruction of a Nyuzi object, at its byte offset from the code's start.
pub fn describe_object(obj: &crate::back::nyuzi::object::Object) -> Vec<InstDesc> {
    obj.code
        .iter()
        .enumerate()
        .map(|(at, inst)| {
            let (function, span) = nyuzi_run::locate(obj, at as u32);
            InstDesc {
                function: function.unwrap_or_default(),
                address: at as u64 * 4,
                text: inst.to_string(),
                span,
                place: "no source line",
            }
        })
        .collect()
}

/// Every word of a Nyuzi image's runtime and code, by word address.
pub fn describe_nyuzi(built: &BuiltLaunch) -> InstTable {
    let layout = &built.image.layout;
    let words = &built.image.words;
    let code = layout.code;
    let descs = (0..code.end / 4)
        .map(|w| {
            let pc = w * 4;
            let text = words
                .get(w as usize)
                .and_then(|&word| sim::nyuzi::decode(word).ok())
                .map_or_else(|| ".word".to_string(), |i| i.to_string());
            let (function, span) = if (code.start..code.end).contains(&pc) {
                nyuzi_run::locate(&built.object, (pc - code.start) / 4)
            } else {
                (None, None)
            };
            let in_runtime = pc < code.start;
            InstDesc {
                function: function
                    .unwrap_or_else(|| if in_runtime { "launch runtime" } else { "" }.to_string()),
                address: u64::from(pc),
                text,
                span,
                place: if in_runtime {
                    "launch runtime"
                } else {
                    "no source line"
                },
            }
        })
        .collect();
    vec![descs]
}
