//! The playground's JSON API: `POST /api/compile` (diagnostics with spans, tokens,
//! AST, the IR after each pass, both assemblies with source lines) and
//! `POST /api/run` (output, buffers, statistics, profile and mask trace). It calls
//! the same library functions as the command line; the request's fields are the
//! CLI's switches, so every answer can be reproduced with `spmdc`.

use serde_json::{json, Value};

use super::{Config, Reply};
use crate::back::{dac_gpu, nyuzi};
use crate::diag::render_json_line;
use crate::driver::{self, FrontOptions, FrontResult, RunError, RunRequest, Stage};
use crate::passes::Switches;
use crate::profile::run::{Machine, Wanted};
use crate::profile::InstDesc;

/// The name of the edited file in diagnostics and line tables.
const FILE_NAME: &str = "playground.spmd";

/// Answers a POST to `path` with its JSON body.
pub fn dispatch(path: &str, body: &Value, config: &Config) -> Reply {
    let answer = match path {
        "/api/compile" => CompileRequest::parse(body).map(|r| compile(&r)),
        "/api/run" => RunRequestJson::parse(body, config).map(|r| run(&r)),
        _ => return Reply::json(404, &request_error(&format!("no API {path}"))),
    };
    match answer {
        Ok(v) => Reply::json(200, &v),
        Err(msg) => Reply::json(400, &request_error(&msg)),
    }
}

fn request_error(message: &str) -> Value {
    json!({ "error": { "kind": "request", "message": message } })
}

/// A field of the request: `default` when absent, an error when of the wrong type.
fn field<T: serde::de::DeserializeOwned>(body: &Value, key: &str, default: T) -> Result<T, String> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("field `{key}`: {e}")),
    }
}

/// What every request shares: the program and how to compile it.
#[derive(Clone, Debug)]
struct Program {
    source: String,
    target: String,
    optimize: bool,
    switches: Switches,
    /// dac-gpu: `gtx480` or `maxwell`.
    config: String,
    /// dac-gpu: compile the baseline SIMT code (`--no-dac`).
    no_dac: bool,
}

impl Program {
    fn parse(body: &Value) -> Result<Program, String> {
        if !body.is_object() {
            return Err("the body must be a JSON object".into());
        }
        let source: String = field(body, "source", String::new())?;
        let target: String = field(body, "target", "interp".to_string())?;
        if !["interp", "nyuzi", "dac-gpu"].contains(&target.as_str()) {
            return Err(format!(
                "unknown target `{target}` (interp, nyuzi or dac-gpu)"
            ));
        }
        let config: String = field(body, "config", "gtx480".to_string())?;
        if !["gtx480", "maxwell"].contains(&config.as_str()) {
            return Err(format!(
                "unknown dac-gpu machine `{config}` (gtx480 or maxwell)"
            ));
        }
        let s: Value = field(body, "switches", json!({}))?;
        let flag = |k: &str| field(&s, k, false);
        let no_scalar_datapath = flag("no_scalar_datapath")?;
        Ok(Program {
            source,
            target,
            optimize: field(body, "optimize", true)?,
            switches: Switches {
                no_uniformity: flag("no_uniformity")? || no_scalar_datapath,
                no_skip_empty: flag("no_skip_empty")?,
                force_cfg_opts: flag("force_cfg_opts")?,
                no_inline: flag("no_inline")?,
                no_scalar_datapath,
                unroll: flag("unroll")?,
                shuffle: if flag("shuffle")? {
                    crate::passes::ShuffleMode::All
                } else {
                    crate::passes::ShuffleMode::Off
                },
            },
            config,
            no_dac: field(body, "no_dac", false)?,
        })
    }

    /// The front end for `target`, up to checking.
    fn front(&self, target: &str) -> FrontResult {
        let mut options = FrontOptions::default();
        options.target = match target {
            "nyuzi" => nyuzi::TARGET,
            "dac-gpu" => dac_gpu::TARGET,
            _ => options.target,
        };
        options.include_dirs = vec![super::examples::include_dir()];
        let mut front =
            driver::run_front(FILE_NAME, None, self.source.clone(), &options, Stage::Check);
        front.switches = self.switches;
        front
    }

    fn dac_options(&self) -> Result<dac_gpu::Options, String> {
        let machine = sim::gpu::GpuConfig::load(&self.config)?;
        Ok(dac_gpu::Options {
            max_regs: machine
                .max_registers_per_thread
                .min(dac_gpu::alloc::MAX_BUDGET),
            machine,
            uniformity: !self.switches.no_uniformity,
            dac: !self.no_dac,
            ..Default::default()
        })
    }
}

fn diagnostics_json(front: &FrontResult, diags: &[crate::diag::Diagnostic]) -> Value {
    Value::Array(
        diags
            .iter()
            .filter_map(|d| serde_json::from_str(&render_json_line(&front.sources, d)).ok())
            .collect(),
    )
}

fn front_diagnostics(front: &FrontResult) -> Value {
    let diags: Vec<_> = front.diags.iter().cloned().collect();
    diagnostics_json(front, &diags)
}

struct CompileRequest {
    program: Program,
}

impl CompileRequest {
    fn parse(body: &Value) -> Result<CompileRequest, String> {
        Ok(CompileRequest {
            program: Program::parse(body)?,
        })
    }
}

/// Tokens, AST, diagnostics, the IR after each pass and both assemblies.
fn compile(req: &CompileRequest) -> Value {
    let p = &req.program;
    let front = p.front(&p.target);
    let mut answer = json!({
        "diagnostics": front_diagnostics(&front),
        "tokens": driver::tokens::token_rows(&front),
        "ast": crate::front::dump::dump_unit(&front.unit, &front.interner, &front.sources, front.stdlib_file),
    });
    if front.diags.has_errors() {
        return answer;
    }
    let mut passes = Vec::new();
    let lowered = driver::lower_front_observed(&front, p.optimize, &p.switches, &mut |name, m| {
        passes.push(json!({ "name": name, "ir": crate::ir::write::module_to_string(m) }));
    });
    answer["passes"] = Value::Array(passes);
    if let Err(diags) = lowered {
        answer["diagnostics"] = diagnostics_json(&front, &diags);
        return answer;
    }
    answer["asm"] = json!({
        "nyuzi": nyuzi_asm(p),
        "dac-gpu": dac_asm(p),
    });
    answer
}

/// Instruction rows with their source lines, for the assembly tabs.
fn asm_rows(front: &FrontResult, descs: &[InstDesc]) -> Value {
    Value::Array(
        descs
            .iter()
            .map(|d| {
                let line = d
                    .span
                    .filter(|s| s.file == front.main_file)
                    .map(|s| front.sources.get(s.file).line_col(s.start).0);
                json!({ "function": d.function, "address": d.address, "text": d.text, "line": line })
            })
            .collect(),
    )
}

fn compile_error(front: &FrontResult, e: RunError) -> Value {
    match e {
        RunError::Compile(diags) => json!({ "diagnostics": diagnostics_json(front, &diags) }),
        other => json!({ "error": format!("{other:?}") }),
    }
}

fn nyuzi_asm(p: &Program) -> Value {
    let front = p.front("nyuzi");
    match nyuzi::run::compile(&front, p.optimize) {
        Ok((_, obj)) => {
            json!({ "rows": asm_rows(&front, &crate::profile::run::describe_object(&obj)) })
        }
        Err(e) => compile_error(&front, e),
    }
}

fn dac_asm(p: &Program) -> Value {
    let front = p.front("dac-gpu");
    let options = match p.dac_options() {
        Ok(o) => o,
        Err(e) => return json!({ "error": e }),
    };
    match dac_gpu::run::compile(&front, p.optimize, &options) {
        Ok(c) => {
            let rows: Vec<InstDesc> = dac_gpu::describe_program(&c)
                .into_iter()
                .flatten()
                .collect();
            json!({ "rows": asm_rows(&front, &rows) })
        }
        Err(e) => compile_error(&front, e),
    }
}

/// `POST /api/run`'s fields.
struct RunRequestJson {
    program: Program,
    entry: String,
    args: Vec<String>,
    grid: Option<String>,
    block: Option<String>,
    timing: bool,
    max_steps: u64,
    profile: bool,
    trace: Option<(u64, usize)>,
}

/// The most steps a trace may ask for.
const MAX_TRACE: usize = 100_000;

impl RunRequestJson {
    fn parse(body: &Value, config: &Config) -> Result<RunRequestJson, String> {
        let program = Program::parse(body)?;
        let entry: String = field(body, "entry", String::new())?;
        if entry.is_empty() {
            return Err("field `entry`: the function to launch is missing".into());
        }
        let args: Vec<String> = field(body, "args", Vec::new())?;
        if let Some(a) = args.iter().find(|a| a.contains('@')) {
            return Err(format!(
                "argument `{a}` reads a file, which the playground does not (use zeros, fill, range or random)"
            ));
        }
        let elements: u64 = args.iter().filter_map(|a| buffer_elements(a)).sum();
        if elements > config.max_elements {
            return Err(format!(
                "the buffers hold {elements} elements; a playground run takes at most {}",
                config.max_elements
            ));
        }
        let trace: Option<Value> = field(body, "trace", None)?;
        let trace = match trace {
            Some(t) => Some((
                field(&t, "gang", 0u64)?,
                field(&t, "limit", 1000usize)?.min(MAX_TRACE),
            )),
            None => None,
        };
        Ok(RunRequestJson {
            program,
            entry,
            args,
            grid: field(body, "grid", None)?,
            block: field(body, "block", None)?,
            timing: field(body, "timing", false)?,
            max_steps: field(body, "max_steps", config.max_steps)?.min(config.max_steps),
            profile: field(body, "profile", false)?,
            trace,
        })
    }

    fn machine(&self) -> Result<Machine, String> {
        let p = &self.program;
        Ok(match p.target.as_str() {
            "nyuzi" => Machine::Nyuzi(nyuzi::run::NyuziRunOptions {
                timing: self.timing,
                ..Default::default()
            }),
            "dac-gpu" => Machine::DacGpu(Box::new(dac_gpu::DacRunOptions {
                timing: self.timing,
                config: p.config.clone(),
                codegen: p.dac_options()?,
                max_warp_insts: self.max_steps,
                ..Default::default()
            })),
            _ => Machine::Interp,
        })
    }
}

/// The element count `N` of a buffer argument `NAME=zeros(N)` (or `fill`, `range`,
/// `random`); `None` for a scalar.
fn buffer_elements(arg: &str) -> Option<u64> {
    let (_, spec) = arg.split_once('=')?;
    let (func, rest) = spec.trim().split_once('(')?;
    if !["zeros", "fill", "range", "random"].contains(&func.trim()) {
        return None;
    }
    let count = rest.split([',', ')']).next()?.trim();
    // A count that does not parse is left to the launch layer's error.
    count.parse().ok()
}

/// Compiles and runs, with the profile and trace asked for.
fn run(req: &RunRequestJson) -> Value {
    let front = req.program.front(&req.program.target);
    if front.diags.has_errors() {
        return json!({ "diagnostics": front_diagnostics(&front), "error": {"kind": "compile", "message": "the program does not compile"} });
    }
    let machine = match req.machine() {
        Ok(m) => m,
        Err(e) => return json!({ "error": {"kind": "launch", "message": e} }),
    };
    let request = RunRequest {
        optimize: req.program.optimize,
        entry: &req.entry,
        args: &req.args,
        grid: req.grid.as_deref(),
        block: req.block.as_deref(),
        dynamic_shared: None,
        limits: crate::interp::Limits {
            max_steps: req.max_steps,
            ..Default::default()
        },
    };
    let wanted = Wanted {
        profile: req.profile,
        trace: req.trace,
    };
    let recorded = crate::profile::run::run(&front, &request, &machine, wanted);
    let mut answer = json!({
        "diagnostics": front_diagnostics(&front),
        "profile": recorded.profile,
        "trace": recorded.trace,
    });
    match recorded.result {
        Ok(mut r) => {
            if let Some(p) = &recorded.profile {
                r.breakdown.functions = p.per_function();
            }
            // The readable report, as `spmdc run --stats=full` prints it.
            let text =
                r.stats.format_text() + &crate::launch::stats_text::render_breakdown(&r.breakdown);
            answer["stats_text"] = json!(text);
            answer["result"] = r.to_json();
        }
        Err(e) => {
            let error = match e {
                RunError::Compile(diags) => {
                    answer["diagnostics"] = diagnostics_json(&front, &diags);
                    json!({"kind": "compile", "message": "the program does not compile"})
                }
                RunError::Launch(errors) => json!({
                    "kind": "launch",
                    "message": errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "),
                }),
                RunError::Trap(trap) => {
                    let mut t = trap.to_json(&front.sources);
                    t["kind"] = json!("trap");
                    t
                }
            };
            answer["error"] = error;
        }
    }
    answer
}
