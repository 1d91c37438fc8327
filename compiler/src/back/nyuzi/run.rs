//! `spmdc run --target nyuzi`: compile for Nyuzi, build the launch image, run it on
//! the simulator (functional, or the timing model with `--timing`) and read the
//! buffers back into the same [`RunResult`] the interpreter gives, with the machine's
//! statistics.
//!
//! Faults become [`RunError::Trap`] errors whose message names the fault, the pc, the
//! hardware thread, the faulting address, and the block and gang that was running; the
//! error's span is the source line of the faulting instruction (from the object's line
//! table), so the CLI prints `file:line:col: runtime error: ...`; a trap inside a
//! runtime routine (integer division, ...) is reported at its caller's line. A barrier
//! deadlock (recorded by the runtime in the scheduler record) is reported like the
//! interpreter's, with the first barrier's line. A gang whose stack overflowed (its
//! canary changed, or its `sp` left the stack when it faulted) is reported as a stack
//! overflow, and a runaway kernel stops at the instruction (`--max-steps`) or cycle
//! limit with a message saying so.

use cranelift_entity::EntityRef;
use sim::nyuzi::timing::{self, StallCause, TimingConfig, TimingError};
use sim::nyuzi::{Config, Fault, FaultKind, Machine};
use sim::Dim3;

use super::image::{
    build_image, Image, ImageError, ImageLaunch, ImageOptions, MachineShape, STACK_CANARY,
    STACK_CANARY_BYTES,
};
use super::isel::ScalarUse;
use super::object::Object;
use super::runtime::sched;
use crate::diag::{codes, Diagnostic};
use crate::driver::{self, FrontResult, LegalTarget, RunError, RunRequest};
use crate::interp::RuntimeError;
use crate::ir::{FuncRef, Module};
use crate::launch::{self, ElemType, Value};
use crate::passes::legalize::RUNTIME_PREFIX;

/// How to run on Nyuzi.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NyuziRunOptions {
    /// Run the timing model instead of the functional simulator.
    pub timing: bool,
    /// The machine the image is built for and run on.
    pub machine: MachineShape,
    pub image: ImageOptions,
    /// The timing model's cycle limit.
    pub max_cycles: u64,
    /// Check every data access against the launch's buffers, stacks and shared memory
    /// ([`super::protection`]); off, the machine is the bare hardware.
    pub bounds_check: bool,
}

impl Default for NyuziRunOptions {
    fn default() -> Self {
        NyuziRunOptions {
            timing: false,
            machine: MachineShape::default(),
            image: ImageOptions::default(),
            max_cycles: TimingConfig::default().max_cycles,
            bounds_check: true,
        }
    }
}

/// A launch compiled and placed, ready to run or to write out.
pub struct BuiltLaunch {
    pub module: Module,
    pub object: Object,
    pub launch: launch::Launch,
    pub image: Image,
}

/// The IR and object code of a checked program for Nyuzi.
pub fn compile(front: &FrontResult, optimize: bool) -> Result<(Module, Object), RunError> {
    compile_for(front, optimize, None)
}

/// [`compile`] for a launch that runs on `threads` hardware threads of a core, when
/// known ([`super::isel::SelectOptions::threads`]).
pub fn compile_for(
    front: &FrontResult,
    optimize: bool,
    threads: Option<u32>,
) -> Result<(Module, Object), RunError> {
    let lowered = driver::lower_front_with(front, optimize).map_err(RunError::Compile)?;
    compile_lowered(front, lowered, optimize, threads)
}

/// [`compile_for`] from the module [`driver::lower_front_with`] made of `front`.
pub fn compile_lowered(
    front: &FrontResult,
    lowered: Module,
    optimize: bool,
    threads: Option<u32>,
) -> Result<(Module, Object), RunError> {
    let sw = &front.switches;
    let module = driver::finish_for_target(front, lowered, optimize, LegalTarget::Nyuzi, sw)
        .map_err(RunError::Compile)?;
    let scalars = if sw.no_scalar_datapath {
        ScalarUse::Minimal
    } else if sw.no_uniformity {
        ScalarUse::Types
    } else {
        ScalarUse::Analysis
    };
    let opts = super::isel::SelectOptions {
        scalars,
        shuffle: sw.shuffle,
        threads,
    };
    let object =
        super::codegen::compile_module_options(&module, opts).map_err(RunError::Compile)?;
    Ok((module, object))
}

/// Compiles, prepares the launch of `req` and builds its image.
pub fn build_launch(
    front: &FrontResult,
    req: &RunRequest<'_>,
    machine: MachineShape,
    image: &ImageOptions,
) -> Result<BuiltLaunch, RunError> {
    let prepared = prepare(front, req)?;
    let threads = machine.busiest_core_threads(prepared.config.grid.count());
    let (module, object) = compile_for(front, req.optimize, Some(threads))?;
    crate::timing::stage("launch image", || {
        place(prepared, module, object, machine, image)
    })
}

/// The launch of `req` (its entry, arguments and shape) for Nyuzi's 16 lanes.
pub fn prepare(front: &FrontResult, req: &RunRequest<'_>) -> Result<launch::Launch, RunError> {
    let checked = front.checked.as_ref().ok_or_else(|| {
        RunError::Compile(
            front
                .diags
                .iter()
                .filter(|d| d.is_error())
                .cloned()
                .collect(),
        )
    })?;
    if checked.target.program_count != super::abi::LANES {
        return Err(RunError::Compile(vec![Diagnostic::error(
            codes::UNSUPPORTED_EMIT,
            format!(
                "the Nyuzi target runs gangs of {} program instances, not {}",
                super::abi::LANES,
                checked.target.program_count
            ),
        )]));
    }
    let request = launch::LaunchRequest {
        entry: req.entry,
        args: req.args,
        grid: req.grid,
        block: req.block,
        dynamic_shared: req.dynamic_shared,
        program_count: super::abi::LANES,
    };
    launch::prepare(checked, &front.interner, &request).map_err(RunError::Launch)
}

/// Builds the image of a prepared launch of a compiled module (so one compilation can
/// serve several launches).
pub fn place(
    prepared: launch::Launch,
    module: Module,
    object: Object,
    machine: MachineShape,
    image: &ImageOptions,
) -> Result<BuiltLaunch, RunError> {
    let entry = module
        .function_by_name(&prepared.signature.name)
        .map(|f| &module.functions[f])
        .ok_or_else(|| {
            RunError::Compile(vec![Diagnostic::error(
                codes::NO_SUCH_ENTRY,
                format!("entry `{}` was not lowered", prepared.signature.name),
            )])
        })?;
    let image_launch = ImageLaunch::from_launch(&prepared, entry.sig.takes_mask);
    let image =
        build_image(&object, &entry.name, &image_launch, machine, image).map_err(|e| match e {
            ImageError::Launch(e) => RunError::Launch(vec![e]),
            ImageError::Link(d) => RunError::Compile(d),
        })?;
    Ok(BuiltLaunch {
        module,
        object,
        launch: prepared,
        image,
    })
}

/// Runs an entry of a checked program on the Nyuzi simulator.
pub fn run_on_nyuzi(
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &NyuziRunOptions,
) -> Result<launch::RunResult, RunError> {
    let mut built = build_launch(front, req, opts.machine, &opts.image)?;
    let mut result = run_built(&mut built, req.limits.max_steps, opts)?;
    result.compiler = driver::compiler_settings(front, req.optimize);
    Ok(result)
}

/// A machine of `shape` with the image loaded.
pub fn load(image: &Image, shape: MachineShape, max_instructions: u64) -> Result<Machine, Fault> {
    let mut m = Machine::new(Config {
        cores: shape.cores,
        threads_per_core: shape.threads_per_core,
        memory_size: image.layout.memory_size,
        max_instructions,
    });
    m.load_words(0, &image.words)?;
    Ok(m)
}

/// Runs a built launch; its buffers are updated in `built.launch`.
pub fn run_built(
    built: &mut BuiltLaunch,
    max_steps: u64,
    opts: &NyuziRunOptions,
) -> Result<launch::RunResult, RunError> {
    run_built_recorded(built, max_steps, opts, None)
}

/// [`run_built`], recording into `recorder` ([`Machine::set_recorder`]; the
/// instructions of the launch runtime and the program one by one) when given; the
/// timing model's stall causes are [`StallCause::ALL`]'s names.
pub fn run_built_recorded(
    built: &mut BuiltLaunch,
    max_steps: u64,
    opts: &NyuziRunOptions,
    mut recorder: Option<&mut sim::record::Recorder>,
) -> Result<launch::RunResult, RunError> {
    let mut m = load(&built.image, opts.machine, max_steps)
        .map_err(|f| RunError::Trap(RuntimeError::new(format!("cannot load the image: {f}"))))?;
    if opts.bounds_check {
        m.set_protection(Some(super::protection::of_layout(&built.image.layout)));
    }
    let recording = recorder.is_some();
    if let Some(r) = recorder.as_deref_mut() {
        let mut r = std::mem::take(r);
        if let Some(p) = r.profile.as_mut() {
            p.stall_causes = if opts.timing {
                StallCause::ALL.iter().map(|c| c.name()).collect()
            } else {
                Vec::new()
            };
        }
        m.set_recorder(Some(r), built.image.layout.code.end);
    }
    let outcome = run_machine(built, &mut m, max_steps, opts);
    if let (true, Some(r), Some(got)) = (recording, recorder, m.take_recorder()) {
        *r = got;
    }
    outcome
}

/// Runs a loaded machine to the end and reads the launch's results.
fn run_machine(
    built: &mut BuiltLaunch,
    m: &mut Machine,
    max_steps: u64,
    opts: &NyuziRunOptions,
) -> Result<launch::RunResult, RunError> {
    let report = if opts.timing {
        let cfg = TimingConfig {
            max_cycles: opts.max_cycles,
            ..TimingConfig::default()
        };
        match crate::timing::stage("simulate (timing)", || timing::run_timing(m, &cfg)) {
            Ok(r) => Some(r),
            Err(TimingError::Fault(f)) => {
                return Err(RunError::Trap(fault_error(built, m, f, max_steps)))
            }
            Err(TimingError::CycleLimit { limit, instructions }) => {
                return Err(RunError::Trap(RuntimeError::new(format!(
                    "the kernel did not finish within {limit} cycles ({instructions} instructions executed); \
                     it may loop forever"
                ))))
            }
            Err(TimingError::Config(e)) => {
                return Err(RunError::Trap(RuntimeError::new(format!(
                    "the timing model cannot run this machine: {e:?}"
                ))))
            }
        }
    } else {
        crate::timing::stage("simulate", || m.run())
            .map_err(|f| RunError::Trap(fault_error(built, m, f, max_steps)))?;
        None
    };
    if let Some(e) = stack_overflow(built, m, None) {
        return Err(RunError::Trap(e));
    }
    let layout = &built.image.layout;
    for (arg, b) in built
        .launch
        .args
        .iter_mut()
        .filter_map(|a| match a {
            launch::ArgValue::Buffer(b) => Some(b),
            _ => None,
        })
        .zip(&layout.buffers)
    {
        let bytes = m.read_bytes(b.address, b.bytes).map_err(|f| {
            RunError::Trap(RuntimeError::new(format!(
                "cannot read buffer `{}` back: {f}",
                b.name
            )))
        })?;
        arg.bytes_mut().copy_from_slice(bytes);
    }
    let ret = built
        .launch
        .signature
        .ret
        .map(|ty| read_result(m, layout.result_address, ty));
    let stats = super::run_stats::statistics(m, built, report.as_ref());
    let output = String::from_utf8_lossy(m.console()).into_owned();
    let mut result = launch::RunResult::from_launch(&built.launch, "nyuzi", ret, output, stats);
    result.breakdown = super::run_stats::per_core(m, built, report.as_ref());
    result.machine = super::run_stats::machine_settings(opts);
    Ok(result)
}

pub(super) fn word(m: &Machine, addr: u32) -> u32 {
    m.read_bytes(addr, 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(0)
}

fn read_result(m: &Machine, addr: u32, ty: ElemType) -> Value {
    let bits = u64::from(word(m, addr)) | (u64::from(word(m, addr + 4)) << 32);
    Value::from_bits(ty, bits)
}

/// The first gang (hardware thread, gang) whose stack canary changed: its stack
/// overflowed.
pub fn overflowed_stack(image: &Image, m: &Machine) -> Option<(u32, u32)> {
    image
        .stack_bottoms()
        .find(|&(_, _, bottom)| {
            (0..STACK_CANARY_BYTES / 4).any(|i| word(m, bottom + 4 * i) != STACK_CANARY)
        })
        .map(|(t, g, _)| (t, g))
}

/// The (hardware thread, gang) whose stack pointer is outside its stack when `f`
/// happened in the kernel: a frame too large for the stack faulted before touching
/// the canary.
fn sp_below_stack(image: &Image, m: &Machine, f: &Fault) -> Option<(u32, u32)> {
    let l = &image.layout;
    let w = l.worker_of(f.thread)?;
    let rec = l.scheduler(w);
    let g = word(m, rec + sched::CURRENT_GANG as u32);
    let bottom = l.stacks.start + w * l.thread_area_bytes + g * l.gang_stack_bytes;
    let sp = m.scalar_reg(f.thread as usize, super::abi::SP.index);
    // Below the bottom, or wrapped around past address 0.
    let outside = !(bottom..=bottom + l.gang_stack_bytes).contains(&sp);
    (outside && (l.code.start..l.code.end).contains(&f.pc)).then_some((f.thread, g))
}

/// A stack overflow as an error (`fault`: the fault it may have caused).
fn stack_overflow(built: &BuiltLaunch, m: &Machine, fault: Option<&Fault>) -> Option<RuntimeError> {
    let (t, g) = overflowed_stack(&built.image, m)
        .or_else(|| fault.and_then(|f| sp_below_stack(&built.image, m, f)))?;
    Some(RuntimeError::new(format!(
        "stack overflow: a gang used more than its {} bytes of stack (hardware thread {t}, gang {g}); \
         deep recursion or large local arrays (`--gang-stack BYTES` gives each gang more)",
        built.image.layout.gang_stack_bytes
    )))
}

/// A fault as a runtime error: what, where in the machine, where in the source.
fn fault_error(built: &BuiltLaunch, m: &Machine, f: Fault, max_steps: u64) -> RuntimeError {
    if let Some(e) = stack_overflow(built, m, Some(&f)) {
        return e;
    }
    let layout = &built.image.layout;
    let rec = layout.worker_of(f.thread).map(|w| layout.scheduler(w));
    let field = |off: i32| rec.map(|r| word(m, r + off as u32)).unwrap_or(0);
    if f.kind == FaultKind::InstructionLimit {
        return RuntimeError::new(format!(
            "the kernel executed more than {max_steps} instructions (--max-steps); it may loop forever"
        ));
    }
    let mut e = RuntimeError::new(String::new());
    if rec.is_some() {
        e.gang = Some((
            Dim3::new(
                field(sched::BLOCK_X),
                field(sched::BLOCK_Y),
                field(sched::BLOCK_Z),
            ),
            field(sched::CURRENT_GANG),
        ));
    }
    if f.kind == FaultKind::Breakpoint && field(sched::STATUS) == sched::STATUS_DEADLOCK {
        let place = |id: u32| barrier_place(&built.module, id);
        e.message = format!(
            "barrier deadlock: gang {} waits at a barrier ({}) while gang {} waits at another one ({})",
            field(sched::DEADLOCK_GANG_A),
            place(field(sched::DEADLOCK_ID_A)),
            field(sched::DEADLOCK_GANG_B),
            place(field(sched::DEADLOCK_ID_B)),
        );
        e.gang = e.gang.map(|(b, _)| (b, field(sched::DEADLOCK_GANG_A)));
        e.span = barrier_span(&built.module, field(sched::DEADLOCK_ID_A));
        return e;
    }
    let code = layout.code;
    let obj = &built.object;
    let located = (code.start..code.end)
        .contains(&f.pc)
        .then(|| locate(obj, (f.pc - code.start) / 4));
    let mut routine = None;
    if let Some((func, span)) = &located {
        e.function = func.clone();
        e.span = *span;
        // A trap inside a runtime routine (division, ...) is reported at its caller's
        // line when the return address leads back to user code.
        if func
            .as_deref()
            .is_some_and(|n| n.starts_with(RUNTIME_PREFIX))
        {
            routine = func.clone();
            let ra = m.scalar_reg(f.thread as usize, super::abi::RA.index);
            if (code.start + 4..code.end).contains(&ra) {
                if let (Some(caller), span @ Some(_)) = locate(obj, (ra - 4 - code.start) / 4) {
                    if !caller.starts_with(RUNTIME_PREFIX) {
                        e.function = Some(caller);
                        e.span = span;
                    }
                }
            }
        }
    }
    let trap = located
        .is_some()
        .then(|| trap_at(obj, (f.pc - code.start) / 4))
        .flatten();
    let what = match (f.kind, trap) {
        (FaultKind::Breakpoint, _) => match (routine.as_deref(), trap) {
            // The runtime's division routines stop on a zero divisor with an `assert`.
            (Some(r), _) if r.contains("div") || r.contains("rem") => {
                format!("integer division or remainder by zero (in @{r})")
            }
            (Some(r), Some(t)) => format!("{} (in @{r})", t.message()),
            (Some(r), None) => format!("the kernel trapped (in @{r})"),
            (None, Some(t)) => t.message().to_string(),
            // The only `break` that is not a `trap`: a lane check the selector adds.
            (None, None) => "the kernel trapped (a lane index outside the gang)".to_string(),
        },
        (FaultKind::Misaligned, _) => "misaligned memory access".to_string(),
        (FaultKind::OutOfRange, _) => "memory access outside the machine's memory".to_string(),
        (FaultKind::Protection, _) => match f.address {
            Some(a) => format!(
                "out-of-bounds access: {},",
                super::protection::describe_outside(layout, a)
            ),
            None => "out-of-bounds access".to_string(),
        },
        (k, _) => k.to_string(),
    };
    let place = if located.is_some() {
        String::new()
    } else if f.pc < layout.runtime.end {
        " in the launch runtime".to_string()
    } else {
        " outside the code".to_string()
    };
    e.message = format!(
        "{what} at pc {:#010x}{place} on hardware thread {}",
        f.pc, f.thread
    );
    e.address = f.address.map(u64::from);
    e
}

/// The function holding code word `offset` and the source span of its last line entry
/// at or before it (within that function).
/// The cause of the `break` at word `offset` of the module's code, if it is an IR
/// `trap` or an `alloca`'s.
fn trap_at(obj: &Object, offset: u32) -> Option<crate::ir::TrapCode> {
    let i = obj
        .traps
        .binary_search_by_key(&offset, |&(at, _)| at)
        .ok()?;
    Some(obj.traps[i].1)
}

pub fn locate(obj: &Object, offset: u32) -> (Option<String>, Option<crate::source::Span>) {
    let sym = obj
        .symbols
        .iter()
        .find(|s| (s.offset..s.offset + s.len).contains(&offset));
    let start = sym.map_or(0, |s| s.offset);
    let span = obj
        .lines
        .iter()
        .take_while(|l| l.offset <= offset)
        .last()
        .filter(|l| l.offset >= start)
        .map(|l| l.span)
        .filter(|s| *s != crate::source::Span::default());
    (sym.map(|s| s.name.clone()), span)
}

/// The source span of the barrier with this id, if the IR has one.
fn barrier_span(module: &Module, id: u32) -> Option<crate::source::Span> {
    let f = module.functions.get(FuncRef::new((id >> 16) as usize))?;
    let inst = crate::ir::Inst::new((id & 0xffff) as usize);
    let span = *f.spans.get(inst)?;
    (span != crate::source::Span::default()).then_some(span)
}

/// `@f inst7` for a barrier id (the IR instruction's index plus the function's index ×
/// 65536, see [`super::abi::RuntimeFn::Barrier`]).
fn barrier_place(module: &Module, id: u32) -> String {
    let func = (id >> 16) as usize;
    match module.functions.get(FuncRef::new(func)) {
        Some(f) => format!("in @{} inst{}", f.name, id & 0xffff),
        None => format!("id {id:#x}"),
    }
}
