//! `spmdc run --target dac-gpu`: compile for the dac-gpu, place the arguments and the
//! hidden buffers (globals, per-block shared variables, per-gang frames) in the
//! simulator's global memory, run functionally or with the timing model, and read the
//! buffers back into the same [`RunResult`] the interpreter gives.
//!
//! A fault becomes a [`RunError::Trap`] whose span is the source line of the faulting
//! instruction (from [`Compiled::lines`]).

use sim::gpu::{self, GlobalMemory, GpuConfig, GpuFault, SchedulerKind, StatValue};

use super::{compile_module, isel, Compiled, Options};
use crate::driver::{self, FrontResult, RunError, RunRequest};
use crate::interp::RuntimeError;
use crate::ir;
use crate::launch::{self, RunResult, Stats};

/// How to run on the dac-gpu.
#[derive(Clone, Debug)]
pub struct DacRunOptions {
    /// Run the timing model instead of the functional simulator.
    pub timing: bool,
    /// The machine of the timing model (`gtx480`, `maxwell` or a file).
    pub config: String,
    pub scheduler: SchedulerKind,
    pub codegen: Options,
    /// Warp instructions before the run is stopped.
    pub max_warp_insts: u64,
    /// `--regalloc exhaustive`: every allocation `--regalloc auto` weighs for the
    /// entry is run with the timing model, and the fastest is the one run.
    pub exhaustive: bool,
}

impl Default for DacRunOptions {
    fn default() -> Self {
        DacRunOptions {
            timing: false,
            config: "gtx480".into(),
            scheduler: SchedulerKind::Gto,
            codegen: Options::default(),
            max_warp_insts: gpu::Limits::default().max_warp_insts,
            exhaustive: false,
        }
    }
}

/// Compiles a checked program for the dac-gpu.
pub fn compile(
    front: &FrontResult,
    optimize: bool,
    options: &Options,
) -> Result<Compiled, RunError> {
    let lowered = driver::lower_front_with(front, optimize).map_err(RunError::Compile)?;
    compile_lowered(front, lowered, optimize, options)
}

/// [`compile`] from the module [`driver::lower_front_with`] made of `front`.
pub fn compile_lowered(
    front: &FrontResult,
    lowered: ir::Module,
    optimize: bool,
    options: &Options,
) -> Result<Compiled, RunError> {
    let legal = driver::LegalTarget::DacGpu;
    let module = driver::finish_for_target(front, lowered, optimize, legal, &front.switches)
        .map_err(RunError::Compile)?;
    // `--no-uniformity` (the front end's switches) turns the analysis off in code
    // generation too: only uniform-typed values use the uniform datapath.
    let sw = &front.switches;
    let options = Options {
        uniformity: options.uniformity && !sw.no_uniformity && !sw.no_scalar_datapath,
        shuffle: if options.shuffle.is_on() {
            options.shuffle
        } else {
            sw.shuffle
        },
        ..options.clone()
    };
    let mut compiled = compile_module(&module, &options).map_err(RunError::Compile)?;
    if sw.no_scalar_datapath {
        without_uniform_datapath(&mut compiled);
    }
    Ok(compiled)
}

/// Moves the warps' uniform-datapath instructions to the vector datapath
/// (`--no-scalar-datapath`): every `.uni` of the non-affine stream is dropped. A
/// `.uni` instruction's lanes all compute the same value, so the vector one gives the
/// same results; the affine stream is left as it is.
fn without_uniform_datapath(compiled: &mut Compiled) {
    for k in &mut compiled.program.kernels {
        for i in &mut k.insts {
            i.uni = false;
        }
    }
}

/// Runs `req` on the dac-gpu simulator.
pub fn run_on_dac_gpu(
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &DacRunOptions,
) -> Result<RunResult, RunError> {
    let codegen = launch_codegen(front, req, opts)?;
    let compiled = compile(front, req.optimize, &codegen)?;
    run_compiled(front, &compiled, req, opts)
}

/// The code generation options a run of `req` compiles with: `opts.codegen` for the
/// launch ([`for_launch`]), with the fastest allocation under `--regalloc exhaustive`.
pub fn launch_codegen(
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &DacRunOptions,
) -> Result<super::Options, RunError> {
    let codegen = for_launch(&opts.codegen, req);
    if opts.exhaustive {
        return fastest_allocation(front, req, opts, codegen);
    }
    Ok(codegen)
}

/// `--regalloc exhaustive`: the options of the fastest, in the timing model, of the
/// allocations the predictor weighs for the entry (`codegen` with its choice fixed).
fn fastest_allocation(
    front: &FrontResult,
    req: &RunRequest<'_>,
    opts: &DacRunOptions,
    codegen: Options,
) -> Result<Options, RunError> {
    let auto = Options {
        predict: true,
        ..codegen.clone()
    };
    let compiled = compile(front, req.optimize, &auto)?;
    let candidates = kernel_index(&compiled, req.entry)
        .and_then(|k| compiled.candidates.get(k).cloned())
        .unwrap_or_default();
    let timed = DacRunOptions {
        timing: true,
        exhaustive: false,
        ..opts.clone()
    };
    let mut best: Option<(u64, Options)> = None;
    for c in candidates {
        let fixed = c.fixed(&codegen);
        let variant = compile(front, req.optimize, &fixed)?;
        let result = run_compiled(front, &variant, req, &timed)?;
        let cycles = match result.stats.get(Stats::CYCLES) {
            Some(launch::StatValue::Count(c)) => c,
            _ => u64::MAX,
        };
        if best.as_ref().is_none_or(|(b, _)| cycles < *b) {
            best = Some((cycles, fixed));
        }
    }
    Ok(best.map_or(codegen, |(_, o)| o))
}

/// `options` for the launch `req` asks for: shared-memory spill slots are laid out
/// for its block, unless the options fix one, and after its dynamic shared memory.
/// A malformed launch is left for [`launch::prepare`] to report.
pub fn for_launch(options: &Options, req: &RunRequest<'_>) -> Options {
    let config =
        launch::LaunchConfig::from_args(req.grid, req.block, super::TARGET.program_count).ok();
    let dynamic_shared = launch::LaunchConfig::single_gang(1)
        .with_dynamic_shared(req.dynamic_shared)
        .map_or(0, |c| c.dynamic_shared);
    Options {
        block_threads: options.block_threads.or(config.map(|c| c.block_size())),
        grid_blocks: options
            .grid_blocks
            .or(config.map(|c| u64::from(c.block_count()))),
        dynamic_shared,
        ..options.clone()
    }
}

/// Runs `req` with a program already compiled from `front` (`req.optimize` unused).
pub fn run_compiled(
    front: &FrontResult,
    compiled: &Compiled,
    req: &RunRequest<'_>,
    opts: &DacRunOptions,
) -> Result<RunResult, RunError> {
    run_compiled_recorded(front, compiled, req, opts, None)
}

/// [`run_compiled`], recording into `recording` when given: the simulator's
/// counters and trace ([`gpu::run_functional_recorded`], [`gpu::run_timing_recorded`])
/// and the description of every instruction of the program that ran (which is not
/// `compiled` when a split kernel's launch falls back to the baseline).
pub fn run_compiled_recorded(
    front: &FrontResult,
    compiled: &Compiled,
    req: &RunRequest<'_>,
    opts: &DacRunOptions,
    mut recording: Option<&mut crate::profile::Recording>,
) -> Result<RunResult, RunError> {
    let checked = front
        .checked
        .as_ref()
        .expect("a lowered program was checked");
    let request = launch::LaunchRequest {
        entry: req.entry,
        args: req.args,
        grid: req.grid,
        block: req.block,
        dynamic_shared: req.dynamic_shared,
        program_count: checked.target.program_count,
    };
    let mut prepared =
        launch::prepare(checked, &front.interner, &request).map_err(RunError::Launch)?;
    let name = prepared.signature.name.clone();
    // A kernel split in a virtual block (`decouple::x_split`) whose launch the split
    // does not fit runs the baseline instead.
    let baseline;
    let compiled = match split_of(compiled, &name) {
        Some(c) if virtual_block(c, prepared.config.block).is_none() => {
            let codegen = super::Options {
                dac: false,
                ..opts.codegen.clone()
            };
            baseline = compile(front, req.optimize, &codegen)?;
            &baseline
        }
        _ => compiled,
    };
    let k = kernel_index(compiled, &name)
        .ok_or_else(|| trap(format!("entry `{name}` was not compiled")))?;
    let (grid, block) = (prepared.config.grid, prepared.config.block);
    let blocks = u64::from(grid.x) * u64::from(grid.y) * u64::from(grid.z);
    let threads = u64::from(block.x) * u64::from(block.y) * u64::from(block.z);
    let gangs = threads.div_ceil(32);
    check_shared_slots(compiled, k, gangs * 32)?;
    check_dynamic_shared(compiled, k, prepared.config.dynamic_shared)?;
    let hidden_sizes = [
        compiled.globals.len().max(8) as u64,
        (blocks * u64::from(compiled.shared_bytes[k])).max(8),
        (blocks * gangs * u64::from(compiled.frame_bytes[k])).max(8),
    ];
    check_reservation(&name, blocks, hidden_sizes[1] + hidden_sizes[2])?;
    let mut mem = GlobalMemory::new();
    let mut bits: Vec<u64> = prepared
        .signature
        .params
        .iter()
        .zip(&prepared.args)
        .map(|(p, a)| match a {
            launch::ArgValue::Scalar(v) => v.to_bits(),
            launch::ArgValue::Buffer(b) => mem.add_buffer(b.bytes().to_vec(), &p.name),
        })
        .collect();
    let arg_count = bits.len();
    let globals_base = mem.add_zeroed(hidden_sizes[0] as usize, "__globals");
    let globals = compiled.globals_at(globals_base);
    if let Some(image) = mem.buffer_mut(globals_base) {
        image[..globals.len()].copy_from_slice(&globals);
    }
    bits.push(globals_base);
    bits.push(mem.add_zeroed(hidden_sizes[1] as usize, "__shared"));
    bits.push(mem.add_zeroed(hidden_sizes[2] as usize, "__frames"));
    bits.extend([block.x, block.y, block.z].map(u64::from));
    // The console (only for a kernel that prints) and the entry's return value.
    let console_bytes = if compiled.reads_param(k, "__console") {
        (isel::CONSOLE_TEXT + isel::CONSOLE_CAPACITY) as usize
    } else {
        8
    };
    let console = mem.add_zeroed(console_bytes, "__console");
    let result = mem.add_zeroed(8, "__result");
    bits.extend([console, result, u64::from(compiled.dynamic_shared)]);
    let kernel = &compiled.program.kernels[k];
    let gl = gpu::Launch {
        kernel: name.clone(),
        grid: (grid.x, grid.y, grid.z),
        block: match compiled.dac_split.get(k).copied().flatten() {
            Some(c) if kernel.affine.is_some() => virtual_block(c, block)
                .ok_or_else(|| trap(format!("entry `{name}`: the block does not fit its split")))?,
            _ => launch_block(kernel.affine.is_some(), (block.x, block.y, block.z), gangs),
        },
        params: gpu::pack_params(kernel, &bits),
    };
    let limits = gpu::Limits {
        max_warp_insts: opts.max_warp_insts,
        ..gpu::Limits::default()
    };
    let mut stats = Stats::new();
    if let Some(r) = recording.as_deref_mut() {
        r.insts = super::describe_program(compiled);
        r.lanes = gpu::exec::WARP as u32;
        if let Some(p) = r.recorder.profile.as_mut() {
            p.stall_causes = if opts.timing {
                gpu::STALL_NAMES.to_vec()
            } else {
                Vec::new()
            };
        }
    }
    let mut recorder = recording.map(|r| &mut r.recorder);
    let mut breakdown = launch::Breakdown::default();
    if opts.timing {
        let config = GpuConfig::load(&opts.config).map_err(trap)?;
        let report = crate::timing::stage("simulate (timing)", || {
            gpu::run_timing_recorded(
                &compiled.program,
                &gl,
                &mut mem,
                &config,
                limits,
                opts.scheduler,
                recorder.as_deref_mut(),
            )
        })
        .map_err(|f| fault(compiled, f))?;
        stats.set(Stats::DYNAMIC_INSTRUCTIONS, report.warp_insts);
        stats.set(Stats::CYCLES, report.cycles);
        copy_stats(&mut stats, &report.pairs);
        breakdown = super::run_stats::per_sm(&report, &config);
    } else {
        let report = crate::timing::stage("simulate", || {
            gpu::run_functional_recorded(&compiled.program, &gl, &mut mem, limits, recorder)
        })
        .map_err(|f| fault(compiled, f))?;
        stats.set(Stats::DYNAMIC_INSTRUCTIONS, report.warp_insts);
        copy_stats(&mut stats, &report.stats);
    }
    stats.set("registers", u64::from(kernel.num_regs));
    if let Some(r) = compiled.regs.get(k) {
        // Static: the spill code register allocation put in the kernel.
        stats.set("spilled_values", u64::from(r.spilled_values));
        stats.set("spill_bytes", u64::from(r.spill_bytes));
        stats.set("spill_stores", u64::from(r.spill_stores));
        stats.set("spill_loads", u64::from(r.spill_loads));
        stats.set("rematerialized_values", u64::from(r.rematerialized_values));
        // Register demotion: slots in shared memory, and the shared bytes per block
        // they add to the kernel's own.
        stats.set("demoted_slots", u64::from(r.demoted_slots));
        stats.set("demoted_shared_bytes", u64::from(r.demoted_bytes));
        stats.set("demoted_stores", u64::from(r.demoted_stores));
        stats.set("demoted_loads", u64::from(r.demoted_loads));
    }
    if let Some(Some(c)) = compiled.shuffles.get(k) {
        // Static, under `--shuffle`: the entry's varying loads and those served from
        // another load's register.
        c.record(&mut stats);
    }
    stats.set("shared_bytes_per_block", u64::from(kernel.shared_bytes));
    if let Some(chosen) = compiled.candidates.get(k).and_then(|c| c.first()) {
        // `--regalloc auto`: what the predictor chose among how many.
        stats.set("regalloc_candidates", compiled.candidates[k].len() as u64);
        stats.set("regalloc_budget", u64::from(chosen.budget));
        stats.set("predicted_cycles", chosen.prediction.cycles.round() as u64);
    }
    for (arg, addr) in prepared.args.iter_mut().zip(&bits[..arg_count]) {
        if let launch::ArgValue::Buffer(b) = arg {
            if let Some(bytes) = mem.buffer(*addr) {
                b.bytes_mut().copy_from_slice(bytes);
            }
        }
    }
    let ret = prepared.signature.ret.map(|ty| {
        let b = mem.buffer(result).unwrap_or(&[0; 8]);
        let bits = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        launch::Value::from_bits(ty, bits)
    });
    let output = console_text(&mem, console);
    let mut result = RunResult::from_launch(&prepared, "dac-gpu", ret, output, stats);
    result.breakdown = breakdown;
    result.machine = super::run_stats::machine_settings(opts)?;
    result.compiler = driver::compiler_settings(front, req.optimize);
    result
        .compiler
        .extend(super::run_stats::codegen_settings(&opts.codegen));
    Ok(result)
}

/// A kernel whose spill slots are in shared memory, laid out for blocks of at most
/// `n` threads, cannot run blocks of more (`hardware_threads`, whole warps): their
/// threads' slots would overlap.
fn check_shared_slots(
    compiled: &Compiled,
    k: usize,
    hardware_threads: u64,
) -> Result<(), RunError> {
    let n = compiled.regs.get(k).map_or(0, |r| r.shared_threads);
    if n == 0 || hardware_threads <= u64::from(n) {
        return Ok(());
    }
    let name = &compiled.program.kernels[k].name;
    Err(RunError::Launch(vec![launch::LaunchError::new(
        launch::ErrorKind::BadConfig,
        format!(
            "kernel `{name}` keeps spilled registers in shared memory laid out for blocks of \
             at most {n} threads; this launch has {hardware_threads} per block"
        ),
    )
    .with_help("compile it for this launch's block (`--block`)")]))
}

/// The `.shared` layout (and the demoted slots after it) of a compiled kernel counts
/// the dynamic shared bytes it was compiled for: a launch must give exactly those.
fn check_dynamic_shared(compiled: &Compiled, k: usize, launched: u32) -> Result<(), RunError> {
    if compiled.dynamic_shared == launched {
        return Ok(());
    }
    let name = &compiled.program.kernels[k].name;
    Err(RunError::Launch(vec![launch::LaunchError::new(
        launch::ErrorKind::BadConfig,
        format!(
            "kernel `{name}` was compiled for {} bytes of dynamic shared memory; this launch \
             gives {launched}",
            compiled.dynamic_shared
        ),
    )
    .with_help("compile it for this launch's `--dynamic-shared`")]))
}

/// The most bytes a launch may reserve for its blocks' shared memory and stack frames
/// together (256 MiB): the simulator keeps one area per block of the grid (and the
/// parallel functional run a copy of it per worker), so this bounds the grid of a
/// kernel that uses them.
pub const MAX_BLOCK_RESERVATION: u64 = 1 << 28;

/// Refuses, before allocating anything, a launch whose per-block areas would exceed
/// [`MAX_BLOCK_RESERVATION`].
fn check_reservation(name: &str, blocks: u64, bytes: u64) -> Result<(), RunError> {
    if bytes <= MAX_BLOCK_RESERVATION {
        return Ok(());
    }
    Err(RunError::Launch(vec![launch::LaunchError::new(
        launch::ErrorKind::BadConfig,
        format!(
            "kernel `{name}` launched on {blocks} blocks needs {bytes} bytes of shared memory \
             and stack frames; the simulator reserves at most {MAX_BLOCK_RESERVATION}"
        ),
    )
    .with_help(
        "launch fewer blocks (`--grid`) and loop inside the kernel",
    )]))
}

/// What the kernel printed: the console buffer's text up to its cursor.
fn console_text(mem: &GlobalMemory, console: u64) -> String {
    let Some(b) = mem.buffer(console) else {
        return String::new();
    };
    let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let text = &b[isel::CONSOLE_TEXT as usize..];
    String::from_utf8_lossy(&text[..n.min(text.len())]).into_owned()
}

pub(super) fn copy_stats(stats: &mut Stats, pairs: &[(String, StatValue)]) {
    for (k, v) in pairs {
        if k == Stats::DYNAMIC_INSTRUCTIONS || k == Stats::CYCLES {
            continue;
        }
        match *v {
            StatValue::U64(x) => stats.set(k, x),
            StatValue::F64(x) => stats.set(k, x),
        };
    }
}

fn trap(message: String) -> RunError {
    RunError::Trap(RuntimeError::new(message))
}

/// A simulator fault as a runtime error at the faulting instruction's source line.
fn fault(compiled: &Compiled, f: GpuFault) -> RunError {
    if f.kind == gpu::FaultKind::BadLaunch {
        // The machine cannot take this launch at all (a block or its resources too
        // large for it): a request spmdc cannot honour, not a fault of the kernel.
        return RunError::Launch(vec![launch::LaunchError::new(
            launch::ErrorKind::BadConfig,
            format!("cannot launch `{}`: {}", f.kernel, f.message),
        )]);
    }
    let message = match compiled.trap_at(&f.kernel, f.pc) {
        Some(what) => what.to_string(),
        None => f.to_string(),
    };
    let mut e = RuntimeError::new(message);
    e.span = compiled.span_of(&f.kernel, f.pc);
    e.lane = f.lane;
    e.function = Some(f.kernel);
    RunError::Trap(e)
}

/// The index of entry `name` among the compiled kernels.
fn kernel_index(compiled: &Compiled, name: &str) -> Option<usize> {
    compiled.program.kernels.iter().position(|k| k.name == name)
}

/// The virtual block split `c` (`decouple::x_split`) of entry `name`, if any.
fn split_of(compiled: &Compiled, name: &str) -> Option<u32> {
    let k = kernel_index(compiled, name)?;
    compiled.dac_split.get(k).copied().flatten()
}

/// The virtual block `(c, block.x / c, 1)` of a kernel split by `c`: the same threads
/// with the same linear ids, `%tid.x` and `%tid.y` being `thread_idx.x % c` and
/// `/ c`. `None` unless the block is one-dimensional and `c` divides its extent.
fn virtual_block(c: u32, block: sim::Dim3) -> Option<(u32, u32, u32)> {
    (c > 0 && block.y == 1 && block.z == 1 && block.x.is_multiple_of(c))
        .then(|| (c, block.x / c, 1))
}

/// The hardware block of a launch of `block` threads in `gangs` warps. One dimension,
/// whole warps: the kernel computes thread indices from the real extents and keeps
/// lanes past the block from having effects. A decoupled kernel (`decoupled`) with a
/// 2-D or 3-D block launches in the real shape instead, which the AEU needs to step
/// addresses where `tid.x` wraps (paper §4.2); its code reads `%tid.y/z` then
/// ([`super::decouple`]). So does a decoupled 1-D block that is not whole warps: the
/// AEU expands the affine stream's `%tid.x` for every lane of the hardware block, and
/// padding lanes would make it fetch (and lock in L1) lines no thread reads (nw's
/// 16-thread blocks: 32 lines per column load instead of 16).
fn launch_block(decoupled: bool, block: (u32, u32, u32), gangs: u64) -> (u32, u32, u32) {
    if decoupled && ((block.1, block.2) != (1, 1) || !block.0.is_multiple_of(32)) {
        block
    } else {
        ((gangs * 32) as u32, 1, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::launch_block;

    #[test]
    fn decoupled_blocks_launch_in_their_real_shape_unless_whole_1d_warps() {
        // The baseline pads every block to whole warps in one dimension.
        assert_eq!(launch_block(false, (16, 1, 1), 1), (32, 1, 1));
        assert_eq!(launch_block(false, (16, 16, 1), 8), (256, 1, 1));
        // Decoupled: 2-D/3-D blocks and partial-warp 1-D blocks keep their shape,
        // so the AEU expands only the threads that exist.
        assert_eq!(launch_block(true, (16, 16, 1), 8), (16, 16, 1));
        assert_eq!(launch_block(true, (8, 4, 2), 2), (8, 4, 2));
        assert_eq!(launch_block(true, (16, 1, 1), 1), (16, 1, 1));
        assert_eq!(launch_block(true, (100, 1, 1), 4), (100, 1, 1));
        // Whole warps in one dimension: the same either way.
        assert_eq!(launch_block(true, (256, 1, 1), 8), (256, 1, 1));
    }
}
