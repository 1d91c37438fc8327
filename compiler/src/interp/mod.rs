//! The reference interpreter: runs an IR [`Module`] exactly as the IR documentation
//! and lang-spec define it. It is the oracle of the differential tests, so wherever
//! the documents leave a choice it makes one deterministic choice, written down here.
//!
//! # Launch model
//!
//! [`run`] launches one entry function over a grid of blocks ([`Launch`]). Each block's
//! threads are numbered `t = x + y*bx + z*bx*by` and cut into gangs of
//! `module.lane_count` consecutive threads; lanes past the block's thread count do not
//! exist: they are off in every mask, including masks the program computes (every mask
//! operand is limited to the existing lanes), and a takes-mask entry function receives
//! the existing lanes as its mask.
//!
//! Blocks run one after another in `x`, then `y`, then `z` order. Within a block the
//! gangs run in index order, each until it reaches a `barrier` or returns from the
//! entry function. When every gang that has not returned waits at a barrier, all are
//! released together; gangs that have returned no longer count (as exited threads on a
//! GPU). Gangs must wait at the *same* barrier instruction: if they wait at different
//! ones, each waits for gangs that can never arrive, and the launch stops with a
//! "barrier deadlock" error naming both places.
//!
//! # Values
//!
//! Each value is a `u64` per lane (see [`ops`] for the canonical form). Integer
//! arithmetic wraps at the type's width; shift counts are taken modulo the width.
//! Floats are IEEE binary32/binary64, each operation rounded in its own type (an f32
//! operation never goes through f64), no FMA contraction, no flush to zero; `fmin` and
//! `fmax` return the other operand for a NaN and order `-0 < +0`. Conversions follow
//! [`crate::ir::ConvOp`]: float to integer truncates and saturates, NaN to 0.
//! Integer division or remainder by zero traps (lang-spec/expressions.md lets a
//! target trap; the IR docs say the interpreter does) when the divisor is uniform or
//! belongs to an existing lane. Because varying arithmetic is not masked, the lowering
//! must keep divisors of inactive lanes nonzero (`select mask, d, 1`). `INT_MIN / -1`
//! wraps to `INT_MIN` (and its remainder is 0).
//!
//! # Memory
//!
//! See [`Memory`] for the regions. Accesses that are out of bounds, misaligned, in the
//! null page, to a constant, through the wrong `space`, or into another gang's private
//! memory stop the launch with an error naming the instruction's span, the function,
//! the lane and the address. Lanes off in the mask never access memory (a masked-off
//! load yields 0) and never fault. A varying `load`/`store` has a varying address and
//! gathers/scatters lane by lane (the IR has no implicit consecutive form: a varying
//! value at a uniform address is malformed); uniform with uniform is one access.
//! Scatters and atomics go lane by lane in increasing lane order, so when lanes store
//! to one address the highest active lane's value remains. Module globals are
//! allocated (from `GlobalData::init`, zero-filled) by the first launch on a `Memory`
//! and keep their values across launches; shared variables are fresh and zeroed per
//! block; stack slots are zeroed when their frame is pushed and unmapped when it pops.
//!
//! # Calls, print, limits
//!
//! A call pushes a frame; a callee that takes a mask receives the call's mask (limited
//! to existing lanes; all existing lanes when the call has none) as its hidden last
//! parameter. The call stack is limited by [`Limits::max_call_depth`] and the total
//! work by [`Limits::max_steps`] (instructions, counted once per gang instruction);
//! both stop the launch with an error, never a hang. `print` follows ISPC (see
//! [`print`]) and prints nothing when no lane of its mask is on; the text collects in
//! [`Outcome::output`]. Cross-lane operations are described in [`lanes`].

mod decode;
mod error;
mod exec;
pub mod lanes;
mod memory;
pub mod ops;
pub mod print;

use sim::Dim3;

pub use error::RuntimeError;
pub use exec::MAX_LANES;
pub use memory::{
    Memory, GLOBAL_BASE, MAX_GANGS, PRIVATE_BASE, PRIVATE_STRIDE, SHARED_BASE, STACK_CAPACITY,
};

use cranelift_entity::SecondaryMap;
use sim::record::Recorder;

use crate::ir::{FuncRef, Inst, Module};
use exec::{Gang, Geometry, Machine, Stop};

/// The shape and arguments of a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub grid: Dim3,
    pub block: Dim3,
    /// One value per declared parameter of the entry function (the hidden mask is not
    /// passed), as canonical bits: an integer's low bits, a float's IEEE bits
    /// (`f32::to_bits`), a pointer's address, a bool 0 or 1.
    pub args: Vec<u64>,
    /// Bytes of dynamic shared memory per block: the unsized `shared` array's size.
    pub dynamic_shared: u32,
}

impl Launch {
    /// A launch of `grid` blocks of `block` threads, without dynamic shared memory.
    pub fn new(grid: Dim3, block: Dim3, args: Vec<u64>) -> Self {
        Launch {
            grid,
            block,
            args,
            dynamic_shared: 0,
        }
    }

    /// ISPC's default shape: one block of exactly one gang of `lanes` threads.
    pub fn single_gang(lanes: u32, args: Vec<u64>) -> Self {
        Launch::new(Dim3::ONE, Dim3::new(lanes, 1, 1), args)
    }
}

/// The default [`Limits::max_output_bytes`]: 16 MiB of printed text.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 << 20;

/// Bounds that turn runaway programs into errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Instructions executed over the whole launch, counted once per gang instruction.
    pub max_steps: u64,
    /// Frames on one gang's call stack, the entry function's included.
    pub max_call_depth: usize,
    /// Bytes of `print` output kept for [`Outcome::output`]; a launch that prints
    /// more stops with a trap instead of growing the buffer without bound.
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 1_000_000_000,
            max_call_depth: 1024,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// What a launch did, for performance comparisons between targets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Instructions executed, once per gang instruction.
    pub dynamic_instructions: u64,
    /// Active lanes summed over varying instructions: those with a mask count the lanes
    /// on in it, the others every existing lane of the gang.
    pub lane_operations: u64,
    /// Block-wide barrier releases.
    pub barriers: u64,
    /// Memory elements read by loads and atomics (a 16-lane gather counts 16).
    pub loads: u64,
    /// Memory elements written by stores and atomics.
    pub stores: u64,
    /// Atomic lane operations.
    pub atomics: u64,
    pub calls: u64,
    pub blocks: u64,
    pub gangs: u64,
}

/// The result of a launch that ran to completion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Everything `print` wrote.
    pub output: String,
    pub stats: Stats,
    /// The entry function's return value in gang 0 of block 0 (its canonical bits, as
    /// in [`Launch::args`]; lane 0 of a varying value), if it returns one.
    pub ret: Option<u64>,
}

/// Runs `entry` of `module` over `launch`, reading and writing `memory` (where the
/// host registered its buffers with [`Memory::add_buffer`]). Errors stop the launch:
/// faults, traps, deadlocks and exceeded limits, and malformed IR or launches found
/// before anything runs. Memory keeps whatever the launch wrote before an error.
pub fn run(
    module: &Module,
    entry: FuncRef,
    launch: &Launch,
    memory: &mut Memory,
    limits: Limits,
) -> Result<Outcome, RuntimeError> {
    run_launch(module, entry, launch, memory, limits, false, None).map(|(o, _)| o)
}

/// [`run`], also recording into `recorder` ([`sim::record`], as the simulators do):
/// every op's executions and lanes with code = the function's index and index = the
/// op's number in its decoded form ([`op_origin`] maps it back to the IR), and the
/// path of gang [`sim::record::Trace::unit`] (gangs numbered block by block in
/// launch order). What was recorded before an error stays in `recorder`.
pub fn run_recorded(
    module: &Module,
    entry: FuncRef,
    launch: &Launch,
    memory: &mut Memory,
    limits: Limits,
    recorder: &mut Recorder,
) -> Result<Outcome, RuntimeError> {
    run_launch(module, entry, launch, memory, limits, false, Some(recorder)).map(|(o, _)| o)
}

/// The IR instruction of each decoded op of each function (`[function][op]`), the
/// coordinates [`run_recorded`] records under; a function the interpreter cannot
/// decode has none.
pub fn op_origin(module: &Module) -> Vec<Vec<Inst>> {
    match decode::decode_module(module) {
        Ok(funcs) => funcs
            .iter()
            .map(|f| f.origin.iter().map(|&(_, inst)| inst).collect())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// How many times each IR instruction ran (once per gang instruction, as
/// [`Stats::dynamic_instructions`] counts), per function.
pub type InstCounts = SecondaryMap<FuncRef, SecondaryMap<Inst, u64>>;

/// [`run`], also counting the executions of every instruction: what a profile of the
/// kernel's dynamic work by kind needs (`spmdc bench uniformity`'s uniform share).
pub fn run_profiled(
    module: &Module,
    entry: FuncRef,
    launch: &Launch,
    memory: &mut Memory,
    limits: Limits,
) -> Result<(Outcome, InstCounts), RuntimeError> {
    let (outcome, per_op) = run_launch(module, entry, launch, memory, limits, true, None)?;
    let funcs = decode::decode_module(module)?;
    let mut counts = InstCounts::new();
    for ((fref, _), (decoded, ops)) in module.functions.iter().zip(funcs.iter().zip(per_op)) {
        for (&(_, inst), n) in decoded.origin.iter().zip(ops) {
            counts[fref][inst] += n;
        }
    }
    Ok((outcome, counts))
}

/// Runs the launch; with `profile`, also the executions per op of every function.
fn run_launch(
    module: &Module,
    entry: FuncRef,
    launch: &Launch,
    memory: &mut Memory,
    limits: Limits,
    profile: bool,
    recorder: Option<&mut Recorder>,
) -> Result<(Outcome, Vec<Vec<u64>>), RuntimeError> {
    let lanes = check_launch(module, entry, launch)?;
    let funcs = decode::decode_module(module)?;
    memory.bind_module(module).map_err(RuntimeError::new)?;
    let gangs_per_block = launch.block.count().div_ceil(lanes as u64) as usize;
    let mut machine = Machine {
        module,
        funcs: &funcs,
        memory,
        lanes,
        limits,
        stats: Stats::default(),
        output: String::new(),
        entry_return: None,
        profile: profile.then(|| funcs.iter().map(|f| vec![0; f.ops.len()]).collect()),
        recorder,
        gangs_per_block: gangs_per_block as u64,
        geo: Geometry {
            block_idx: Dim3::new(0, 0, 0),
            block_dim: launch.block,
            grid_dim: launch.grid,
            dynamic_shared: launch.dynamic_shared,
        },
    };
    let mut gangs: Vec<Gang> = (0..gangs_per_block)
        .map(|g| Gang::new(g, lanes, launch.block))
        .collect();
    let grid = launch.grid;
    for z in 0..grid.z {
        for y in 0..grid.y {
            for x in 0..grid.x {
                machine.geo.block_idx = Dim3::new(x, y, z);
                run_block(&mut machine, &mut gangs, entry, &launch.args)?;
            }
        }
    }
    let per_op = machine.profile.take().unwrap_or_default();
    Ok((
        Outcome {
            output: machine.output,
            stats: machine.stats,
            ret: machine.entry_return,
        },
        per_op,
    ))
}

/// Checks the launch against the module; returns the gang width.
fn check_launch(module: &Module, entry: FuncRef, launch: &Launch) -> Result<usize, RuntimeError> {
    let lanes = module.lane_count as usize;
    if !(1..=MAX_LANES).contains(&lanes) {
        return Err(RuntimeError::new(format!(
            "lane count {lanes} is not between 1 and {MAX_LANES}"
        )));
    }
    let func = module
        .functions
        .get(entry)
        .ok_or_else(|| RuntimeError::new(format!("no entry function {entry}")))?;
    if func.sig.params.len() != launch.args.len() {
        return Err(RuntimeError::new(format!(
            "@{} takes {} arguments, the launch passes {}",
            func.name,
            func.sig.params.len(),
            launch.args.len()
        )));
    }
    if launch.grid.count() == 0 || launch.block.count() == 0 {
        return Err(RuntimeError::new("empty grid or block"));
    }
    if launch.block.count().div_ceil(lanes as u64) > MAX_GANGS {
        return Err(RuntimeError::new(format!(
            "a block of {} threads has more than {MAX_GANGS} gangs",
            launch.block.count()
        )));
    }
    Ok(lanes)
}

/// Runs one block to completion: gangs in turn until each returns or waits at a
/// barrier, then releases the barrier, until every gang has returned.
fn run_block(
    m: &mut Machine<'_>,
    gangs: &mut [Gang],
    entry: FuncRef,
    args: &[u64],
) -> Result<(), RuntimeError> {
    m.memory
        .begin_block(m.module, gangs.len(), m.geo.dynamic_shared)
        .map_err(RuntimeError::new)?;
    m.stats.blocks += 1;
    for g in gangs.iter_mut() {
        m.start(g, entry, args).map_err(|mut e| {
            e.function = Some(m.module.functions[entry].name.clone());
            e
        })?;
        m.stats.gangs += 1;
    }
    loop {
        let mut waiting: Option<usize> = None;
        for (gi, gang) in gangs.iter_mut().enumerate() {
            if gang.finished() {
                continue;
            }
            if m.run_gang(gang)? == Stop::Barrier {
                waiting.get_or_insert(gi);
            }
        }
        let Some(first) = waiting else {
            return Ok(());
        };
        let at = gangs[first].waiting_at;
        if let Some(other) = gangs.iter().find(|g| !g.finished() && g.waiting_at != at) {
            let there = m.waiting_error(other, String::new());
            let msg = format!(
                "barrier deadlock: gang {first} waits at this barrier while gang {} waits \
                 at another one (in @{} {})",
                other.index,
                there.function.unwrap_or_default(),
                there.inst.map(|i| i.to_string()).unwrap_or_default(),
            );
            return Err(m.waiting_error(&gangs[first], msg));
        }
        m.stats.barriers += 1;
    }
}

/// `f32` argument bits for [`Launch::args`].
pub fn f32_arg(x: f32) -> u64 {
    u64::from(x.to_bits())
}

/// `f64` argument bits for [`Launch::args`].
pub fn f64_arg(x: f64) -> u64 {
    x.to_bits()
}

/// `i32` argument bits for [`Launch::args`].
pub fn i32_arg(x: i32) -> u64 {
    u64::from(x as u32)
}
