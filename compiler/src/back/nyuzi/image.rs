//! Launch images: one self-contained memory image per launch, holding the runtime
//! ([`super::runtime`]: start-up stub, block scheduler, barrier fibers, trampoline),
//! the module's code with every relocation resolved, its data, the arguments and the
//! buffers, and the per-thread areas, all initialized. [`build_image`] computes the
//! [`Layout`] (see [`super::layout`] for the memory map) and the bytes; the image runs
//! on the functional simulator, the timing model or the upstream emulator alike.
//!
//! Arguments are passed as the ABI says ([`super::abi`]): uniform scalars in `s0`–`s7`
//! in parameter order, a 64-bit value in two consecutive registers (low word first),
//! the hidden mask (the gang's existing lanes) as the last scalar argument when the
//! entry takes one; what does not fit goes on the stack, one word per 4 bytes from
//! `sp` at the call. A value narrower than 32 bits is passed zero-extended (the
//! interpreter's canonical form); a buffer is passed as its address.
//!
//! The lowest [`STACK_CANARY_BYTES`] of every gang stack hold [`STACK_CANARY`]; the
//! run checks them, so a stack overflow (into the context records below the stacks)
//! is reported rather than silently corrupting the scheduler's state.

use sim::nyuzi::{encode, AluOp, BranchOp, IFmt, Inst};
use sim::Dim3;

use super::abi::{self, ctx};
use super::layout::{BufferLayout, Layout, Range, ScalarLayout};
use super::object::{Object, RelocKind, RelocTarget};
use super::runtime::{self, sched, ArgWord, RuntimeParams};
use crate::diag::{codes, Diagnostic};
use crate::launch::{self, ArgValue, ElemType, ErrorKind, LaunchError};

/// Bytes left unused after every buffer, as the interpreter leaves a gap after every
/// allocation: a checked run ([`super::protection`]) traps on an access running off
/// a buffer's end by up to this much (a stencil's row too many, say) instead of
/// reading or writing the next buffer.
pub const BUFFER_RED_ZONE: u64 = 256;

/// The hardware the image is planned for (`-p` cores × `-t` threads per core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineShape {
    pub cores: u32,
    pub threads_per_core: u32,
}

impl Default for MachineShape {
    /// The upstream emulator's default: 1 core of 4 threads.
    fn default() -> Self {
        MachineShape {
            cores: 1,
            threads_per_core: 4,
        }
    }
}

impl MachineShape {
    /// The largest machine the emulator supports has 32 threads in all.
    pub const MAX_THREADS: u32 = 32;

    pub fn threads(&self) -> u32 {
        self.cores.saturating_mul(self.threads_per_core)
    }

    /// The hardware threads a grid of `blocks` blocks runs on: one block a thread
    /// first (thread `t` starts with block `t`), as many as the machine has.
    pub fn threads_used(&self, blocks: u64) -> u64 {
        u64::from(self.threads().clamp(1, Self::MAX_THREADS)).min(blocks)
    }

    /// The threads of the busiest core among [`MachineShape::threads_used`]: thread
    /// `t` is on core `t / threads_per_core`, so core 0's fill first.
    pub fn busiest_core_threads(&self, blocks: u64) -> u32 {
        let core = u64::from(self.threads_per_core.max(1));
        self.threads_used(blocks).clamp(1, core) as u32
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageOptions {
    /// Bytes of each gang's stack (a multiple of 64).
    pub gang_stack: u32,
    /// Memory of the machine.
    pub memory_size: u32,
}

impl Default for ImageOptions {
    fn default() -> Self {
        ImageOptions {
            gang_stack: abi::DEFAULT_GANG_STACK,
            memory_size: abi::MEMORY_SIZE,
        }
    }
}

/// One argument as the image holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum ImageArg {
    Scalar {
        name: String,
        ty: ElemType,
        /// The value's bytes zero-extended ([`launch::Value::to_bits`]).
        bits: u64,
    },
    Buffer {
        name: String,
        elem: ElemType,
        bytes: Vec<u8>,
        read_only: bool,
    },
}

impl ImageArg {
    fn words(&self) -> u32 {
        match self {
            ImageArg::Scalar { ty, .. } if ty.size() == 8 => 2,
            _ => 1,
        }
    }
}

/// What the image launches: the shape, the arguments in parameter order and whether
/// the entry takes the hidden mask.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageLaunch {
    pub grid: Dim3,
    pub block: Dim3,
    pub args: Vec<ImageArg>,
    pub takes_mask: bool,
    /// Bytes of dynamic shared memory per block, after the static shared variables.
    pub dynamic_shared: u32,
}

impl ImageLaunch {
    /// From a prepared launch; `takes_mask` is the IR entry's `sig.takes_mask`.
    pub fn from_launch(l: &launch::Launch, takes_mask: bool) -> ImageLaunch {
        let args = l
            .signature
            .params
            .iter()
            .zip(&l.args)
            .map(|(p, a)| match (a, p.kind) {
                (ArgValue::Buffer(b), kind) => ImageArg::Buffer {
                    name: p.name.clone(),
                    elem: b.elem(),
                    bytes: b.bytes().to_vec(),
                    read_only: kind.read_only(),
                },
                (ArgValue::Scalar(v), _) => ImageArg::Scalar {
                    name: p.name.clone(),
                    ty: v.elem_type(),
                    bits: v.to_bits(),
                },
            })
            .collect();
        ImageLaunch {
            grid: l.config.grid,
            block: l.config.block,
            args,
            takes_mask,
            dynamic_shared: l.config.dynamic_shared,
        }
    }
}

/// The word repeated over the lowest [`STACK_CANARY_BYTES`] of every gang stack. A
/// run that changed it overflowed the stack (into the context records below it).
pub const STACK_CANARY: u32 = 0x5350_4d44;
pub const STACK_CANARY_BYTES: u32 = 64;

/// A built image: memory from address 0 to [`Layout::image_end`], word by word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub words: Vec<u32>,
    pub layout: Layout,
}

impl Image {
    /// The image in the upstream hex format (one word per line from address 0).
    pub fn to_hex(&self) -> String {
        let pairs: Vec<(u32, u32)> = self
            .words
            .iter()
            .enumerate()
            .map(|(i, &w)| (i as u32, w))
            .collect();
        sim::nyuzi::hex::write(&pairs)
    }

    /// The lowest address of each gang stack, as (hardware thread, gang, address).
    pub fn stack_bottoms(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        let l = &self.layout;
        (0..l.threads_used).flat_map(move |w| {
            let base = l.stacks.start + w * l.thread_area_bytes;
            let t = l.worker_threads.get(w as usize).copied().unwrap_or(w);
            (0..l.gangs_per_block).map(move |g| (t, g, base + g * l.gang_stack_bytes))
        })
    }

    /// The bytes of `[addr, addr+len)` as the image initializes them.
    pub fn bytes(&self, addr: u32, len: u32) -> Option<Vec<u8>> {
        let end = addr.checked_add(len)?;
        if end > self.layout.image_end {
            return None;
        }
        Some(
            (addr..end)
                .map(|a| self.words[(a / 4) as usize].to_le_bytes()[(a % 4) as usize])
                .collect(),
        )
    }
}

/// Why no image was built.
#[derive(Clone, Debug, PartialEq)]
pub enum ImageError {
    /// The launch does not fit the machine (memory, threads): the user must shrink it.
    Launch(LaunchError),
    /// The object cannot be linked (a missing symbol, a branch out of range): a
    /// compiler bug or a program too large.
    Link(Vec<Diagnostic>),
}

fn link_error(msg: String) -> ImageError {
    ImageError::Link(vec![Diagnostic::error(codes::INTERNAL_ERROR, msg)])
}

fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a.max(1)) * a.max(1)
}

/// Where each argument word goes (see the module docs), and the stack bytes reserved.
fn assign_args(launch: &ImageLaunch, params_base: u32) -> (Vec<ArgWord>, u32) {
    let mut words = Vec::new();
    let mut next_reg = 0u8;
    let mut stack = 0u32;
    let mut offset = params_base + 8;
    let regs = abi::SCALAR_ARGS.len() as u8;
    for a in &launch.args {
        let n = a.words();
        let in_regs = u32::from(next_reg) + n <= u32::from(regs);
        for i in 0..n {
            let param_offset = offset - params_base + 4 * i;
            if in_regs {
                words.push(ArgWord::Reg {
                    reg: abi::SCALAR_ARGS[(next_reg as u32 + i) as usize].index,
                    param_offset,
                });
            } else {
                words.push(ArgWord::Stack {
                    stack_offset: stack,
                    param_offset,
                });
                stack += 4;
            }
        }
        if in_regs {
            next_reg += n as u8;
        } else {
            next_reg = regs;
        }
        offset += 4 * n;
    }
    if launch.takes_mask {
        if next_reg < regs {
            words.push(ArgWord::MaskReg {
                reg: abi::SCALAR_ARGS[next_reg as usize].index,
            });
        } else {
            words.push(ArgWord::MaskStack {
                stack_offset: stack,
            });
            stack += 4;
        }
    }
    (words, align(u64::from(stack), 64) as u32)
}

/// Planned sizes of the memory regions, before anything is written.
struct Plan {
    runtime_len: u32,
    code: Range,
    data: Range,
    data_offsets: Vec<u32>,
    params: Range,
    thread_table: u32,
    buffers: Vec<u32>,
    threads: Range,
    thread_area: u32,
    threads_used: u32,
    gangs: u32,
    shared: u32,
    end: u64,
}

fn plan(
    obj: &Object,
    launch: &ImageLaunch,
    runtime_len: u32,
    machine: MachineShape,
    opts: &ImageOptions,
) -> Plan {
    let lanes = u64::from(abi::LANES);
    let code_start = runtime_len * 4;
    let code_end = code_start as u64 + obj.code.len() as u64 * 4;
    let mut at = align(code_end, 64);
    let data_start = at;
    let mut data_offsets = Vec::new();
    for d in &obj.data {
        at = align(at, u64::from(d.align.max(1)));
        data_offsets.push(at as u32);
        at += u64::from(d.size);
    }
    let data_end = at;
    at = align(at, 64);
    let params_start = at;
    at += 8 + 4 * launch
        .args
        .iter()
        .map(|a| u64::from(a.words()))
        .sum::<u64>();
    let params_end = at;
    at = align(at, 64);
    let thread_table = at;
    at += 4 * u64::from(runtime::THREAD_TABLE_LEN);
    let mut buffers = Vec::new();
    for a in &launch.args {
        if let ImageArg::Buffer { bytes, .. } = a {
            at = align(at, 64);
            buffers.push(at.min(u64::from(u32::MAX)) as u32);
            at += (bytes.len() as u64).max(64) + BUFFER_RED_ZONE;
        }
    }
    at = align(at, 64);
    let threads_start = at;
    let blocks = launch.grid.count();
    let threads_used = machine.threads_used(blocks);
    let gangs = launch.block.count().div_ceil(lanes);
    let shared =
        align(u64::from(obj.shared_size), 64) + align(u64::from(launch.dynamic_shared), 64);
    let thread_area = u64::from(sched::SIZE)
        + shared
        + gangs * u64::from(ctx::SIZE)
        + gangs * align(u64::from(opts.gang_stack), 64);
    let end = threads_start + threads_used * thread_area;
    let clamp = |x: u64| x.min(u64::from(u32::MAX)) as u32;
    Plan {
        runtime_len,
        code: Range {
            start: code_start,
            end: clamp(code_end),
        },
        data: Range {
            start: clamp(data_start),
            end: clamp(data_end),
        },
        data_offsets,
        params: Range {
            start: clamp(params_start),
            end: clamp(params_end),
        },
        thread_table: clamp(thread_table),
        buffers,
        threads: Range {
            start: clamp(threads_start),
            end: clamp(end),
        },
        thread_area: clamp(thread_area),
        threads_used: threads_used as u32,
        gangs: clamp(gangs),
        shared: clamp(shared),
        end,
    }
}

/// The "does not fit" error, saying what takes the space and what to shrink.
fn too_large(p: &Plan, launch: &ImageLaunch, opts: &ImageOptions) -> ImageError {
    let buffers: u64 = launch
        .args
        .iter()
        .map(|a| match a {
            ImageArg::Buffer { bytes, .. } => bytes.len() as u64,
            _ => 0,
        })
        .sum();
    let threads = u64::from(p.threads_used) * u64::from(p.thread_area);
    let err = LaunchError::new(
        ErrorKind::TooLarge,
        format!(
            "the launch image needs {} bytes but the Nyuzi machine has {} ({} MiB)",
            p.end,
            opts.memory_size,
            opts.memory_size >> 20
        ),
    )
    .with_note(format!(
        "code and data take {} bytes, buffers {buffers} bytes, and the areas of {} hardware \
         thread(s) with {} gang(s) per block take {threads} bytes ({} bytes of stack per gang)",
        p.params.start, p.threads_used, p.gangs, opts.gang_stack
    ));
    let help = if buffers >= threads {
        "use smaller buffers"
    } else {
        "use smaller blocks (fewer gangs per block), fewer hardware threads (--threads, --cores) \
         or smaller gang stacks (--gang-stack)"
    };
    ImageError::Launch(err.with_help(help))
}

/// Builds the image of `launch` running `entry` of `obj` on `machine`.
pub fn build_image(
    obj: &Object,
    entry: &str,
    launch: &ImageLaunch,
    machine: MachineShape,
    opts: &ImageOptions,
) -> Result<Image, ImageError> {
    if machine.threads() == 0 || machine.threads() > MachineShape::MAX_THREADS {
        return Err(ImageError::Launch(LaunchError::new(
            ErrorKind::BadConfig,
            format!(
                "a Nyuzi machine of {} cores × {} threads: between 1 and {} hardware threads are supported",
                machine.cores,
                machine.threads_per_core,
                MachineShape::MAX_THREADS
            ),
        )));
    }
    if !opts.gang_stack.is_multiple_of(64) || opts.gang_stack == 0 {
        return Err(link_error(format!(
            "gang stack size {} is not a positive multiple of 64",
            opts.gang_stack
        )));
    }
    let entry_sym = obj
        .symbol(entry)
        .ok_or_else(|| link_error(format!("the object has no function `{entry}`")))?;
    // Size the runtime with placeholder addresses (its size does not depend on them).
    let (probe_args, stack_args_bytes) = assign_args(launch, 0);
    let mut params = RuntimeParams {
        resume_mask: 1,
        args: probe_args,
        stack_args_bytes,
        ..Default::default()
    };
    let runtime_len = runtime::generate(&params).code.len() as u32;
    let p = plan(obj, launch, runtime_len, machine, opts);
    if p.end > u64::from(opts.memory_size) {
        return Err(too_large(&p, launch, opts));
    }
    let (args, stack_args_bytes) = assign_args(launch, p.params.start);
    if stack_args_bytes + 64 > opts.gang_stack {
        return Err(link_error("too many arguments for the gang stack".into()));
    }
    let entry_address = p.code.start + entry_sym.offset * 4;
    let workers = worker_threads(machine, p.threads_used);
    params = RuntimeParams {
        resume_mask: workers.iter().fold(0, |m, &t| m | (1 << t)),
        thread_table: p.thread_table,
        params: p.params.start,
        entry: entry_address,
        args,
        stack_args_bytes,
    };
    let rt = runtime::generate(&params);
    if rt.code.len() as u32 != p.runtime_len {
        return Err(link_error("the runtime changed size between passes".into()));
    }
    let code = link(obj, &p, &rt)?;
    let mut mem = Memory::new(p.end as usize);
    for (i, inst) in rt.code.iter().chain(&code).enumerate() {
        mem.word(i as u32 * 4, encode(inst));
    }
    for (d, &at) in obj.data.iter().zip(&p.data_offsets) {
        let n = d.init.len().min(d.size as usize);
        mem.bytes(at, &d.init[..n]);
        for r in &d.relocs {
            let target = p.data_offsets.get(r.data).ok_or_else(|| {
                link_error(format!("data `{}` points to a missing object", d.name))
            })?;
            mem.word(at + r.offset, target.wrapping_add_signed(r.addend));
        }
    }
    let (scalars, buffers) = write_args(&mut mem, launch, &p);
    for (w, &t) in workers.iter().enumerate() {
        mem.word(p.thread_table + 4 * t, thread_base(&p, w as u32));
    }
    write_thread_areas(&mut mem, launch, &p, opts);
    let layout = Layout {
        format: Layout::FORMAT.to_string(),
        version: 1,
        entry: entry.to_string(),
        cores: machine.cores,
        threads_per_core: machine.threads_per_core,
        threads_used: p.threads_used,
        worker_threads: workers,
        thread_table: p.thread_table,
        memory_size: opts.memory_size,
        grid: [launch.grid.x, launch.grid.y, launch.grid.z],
        block: [launch.block.x, launch.block.y, launch.block.z],
        lanes: abi::LANES,
        gangs_per_block: p.gangs,
        gang_stack_bytes: opts.gang_stack,
        shared_bytes: p.shared,
        runtime: Range {
            start: 0,
            end: p.runtime_len * 4,
        },
        code: p.code,
        entry_address,
        data: p.data,
        params: p.params,
        result_address: p.params.start,
        scalars,
        buffers,
        threads: p.threads,
        thread_area_bytes: p.thread_area,
        scheduler_base: p.threads.start,
        stacks: Range {
            start: stack_base(&p, 0),
            end: stack_base(&p, 0) + p.gangs * opts.gang_stack,
        },
        image_end: p.end as u32,
    };
    Ok(Image {
        words: mem.words,
        layout,
    })
}

/// The hardware thread id of each of `n` workers: spread over the cores first (worker
/// `w` is thread `w / cores` of core `w % cores`), so a few blocks use every core.
pub fn worker_threads(machine: MachineShape, n: u32) -> Vec<u32> {
    let cores = machine.cores.max(1);
    (0..n)
        .map(|w| (w % cores) * machine.threads_per_core + w / cores)
        .collect()
}

/// The module's code with every relocation resolved.
fn link(obj: &Object, p: &Plan, rt: &runtime::Runtime) -> Result<Vec<Inst>, ImageError> {
    let mut code = obj.code.clone();
    for r in &obj.relocs {
        let target = match &r.target {
            RelocTarget::Function(name) => obj
                .symbol(name)
                .map(|s| p.code.start + s.offset * 4)
                .ok_or_else(|| {
                    link_error(format!(
                        "call of `{name}`, which the object does not define"
                    ))
                })?,
            RelocTarget::Data(i) => *p.data_offsets.get(*i).ok_or_else(|| {
                link_error(format!(
                    "reference to data object {i}, which does not exist"
                ))
            })?,
            RelocTarget::Runtime(abi::RuntimeFn::Barrier) => rt.barrier,
        };
        let value = (i64::from(target) + i64::from(r.addend)) as u32;
        let at = r.at as usize;
        let here = p.code.start + r.at * 4;
        match r.kind {
            RelocKind::Branch => {
                let Some(Inst::Branch { op, reg, .. }) = code.get(at).copied() else {
                    return Err(link_error(format!(
                        "branch relocation at word {at} is not a branch"
                    )));
                };
                let offset = (i64::from(value) - i64::from(here)) / 4;
                let patched = Inst::Branch {
                    op,
                    reg,
                    offset: offset as i32,
                };
                if patched.check().is_err() {
                    return Err(link_error(format!(
                        "a {} at {here:#x} cannot reach {value:#x}",
                        if op == BranchOp::Call {
                            "call"
                        } else {
                            "branch"
                        }
                    )));
                }
                code[at] = patched;
            }
            RelocKind::AbsHiLo => {
                let (Some(Inst::MoveHi { dest, .. }), Some(Inst::Imm { dest: d2, src1, .. })) =
                    (code.get(at).copied(), code.get(at + 1).copied())
                else {
                    return Err(link_error(format!(
                        "address relocation at word {at} is not movehi + or"
                    )));
                };
                code[at] = Inst::MoveHi {
                    dest,
                    imm: value >> 13,
                };
                code[at + 1] = Inst::Imm {
                    fmt: IFmt::S,
                    op: AluOp::Or,
                    dest: d2,
                    src1,
                    imm: (value & 0x1fff) as i32,
                };
            }
        }
    }
    Ok(code)
}

/// The parameter block and the buffers; their layouts.
fn write_args(
    mem: &mut Memory,
    launch: &ImageLaunch,
    p: &Plan,
) -> (Vec<ScalarLayout>, Vec<BufferLayout>) {
    let mut scalars = Vec::new();
    let mut buffers = Vec::new();
    let mut slot = p.params.start + 8;
    let mut next_buffer = p.buffers.iter();
    for a in &launch.args {
        match a {
            ImageArg::Scalar { name, ty, bits } => {
                let words: Vec<u32> = if a.words() == 2 {
                    vec![*bits as u32, (*bits >> 32) as u32]
                } else {
                    vec![*bits as u32]
                };
                for (i, w) in words.iter().enumerate() {
                    mem.word(slot + 4 * i as u32, *w);
                }
                scalars.push(ScalarLayout {
                    name: name.clone(),
                    address: slot,
                    ty: ty.name().to_string(),
                    words,
                });
            }
            ImageArg::Buffer {
                name,
                elem,
                bytes,
                read_only,
            } => {
                let addr = next_buffer.next().copied().unwrap_or(0);
                mem.bytes(addr, bytes);
                mem.word(slot, addr);
                buffers.push(BufferLayout {
                    name: name.clone(),
                    address: addr,
                    elem: elem.name().to_string(),
                    length: (bytes.len() / elem.size().max(1)) as u32,
                    bytes: bytes.len() as u32,
                    read_only: *read_only,
                });
            }
        }
        slot += 4 * a.words();
    }
    (scalars, buffers)
}

fn thread_base(p: &Plan, t: u32) -> u32 {
    p.threads.start + t * p.thread_area
}

fn ctx_base(p: &Plan, t: u32) -> u32 {
    thread_base(p, t) + sched::SIZE + p.shared
}

fn stack_base(p: &Plan, t: u32) -> u32 {
    ctx_base(p, t) + p.gangs * ctx::SIZE
}

/// Scheduler records and the static fields of every context record.
fn write_thread_areas(mem: &mut Memory, launch: &ImageLaunch, p: &Plan, opts: &ImageOptions) {
    let (grid, block) = (launch.grid, launch.block);
    let threads_in_block = block.count();
    let lanes = abi::LANES;
    for t in 0..p.threads_used {
        let s = thread_base(p, t);
        // Thread t's first block is block t.
        let (bx, by, bz) = (t % grid.x, t / grid.x % grid.y, t / grid.x / grid.y);
        for (off, v) in [
            (sched::BLOCK, t),
            (sched::BLOCK_X, bx),
            (sched::BLOCK_Y, by),
            (sched::BLOCK_Z, bz),
            (sched::BLOCKS, grid.count().min(u64::from(u32::MAX)) as u32),
            (sched::STRIDE, p.threads_used),
            (sched::GRID_X, grid.x),
            (sched::GRID_Y, grid.y),
            (sched::GANGS, p.gangs),
            (sched::CTX_BASE, ctx_base(p, t)),
            (sched::STACK_BASE, stack_base(p, t)),
            (sched::STACK_SIZE, opts.gang_stack),
            (sched::SHARED_BASE, s + sched::SIZE),
            (sched::SHARED_SIZE, p.shared),
        ] {
            mem.word(s + off as u32, v);
        }
        for g in 0..p.gangs {
            let bottom = stack_base(p, t) + g * opts.gang_stack;
            for i in 0..STACK_CANARY_BYTES / 4 {
                mem.word(bottom + 4 * i, STACK_CANARY);
            }
            let c = ctx_base(p, t) + g * ctx::SIZE;
            mem.word(c + ctx::STACK_LIMIT as u32, bottom + STACK_CANARY_BYTES);
            let mut exists = 0u32;
            for l in 0..lanes {
                let tid = u64::from(g * lanes + l);
                if tid < threads_in_block {
                    exists |= 1 << l;
                }
                let (x, y) = (u64::from(block.x), u64::from(block.y));
                let idx = [tid % x, tid / x % y, tid / (x * y)];
                for (k, base) in [ctx::THREAD_IDX_X, ctx::THREAD_IDX_Y, ctx::THREAD_IDX_Z]
                    .into_iter()
                    .enumerate()
                {
                    mem.word(c + base as u32 + 4 * l, idx[k] as u32);
                }
                mem.word(c + ctx::LANE_INDEX as u32 + 4 * l, l);
            }
            let next = ctx_base(p, t) + (g + 1) % p.gangs * ctx::SIZE;
            for (off, v) in [
                (ctx::EXISTS, exists),
                (ctx::GANG_INDEX, g),
                (ctx::BLOCK_DIM_X, block.x),
                (ctx::BLOCK_DIM_Y, block.y),
                (ctx::BLOCK_DIM_Z, block.z),
                (ctx::GRID_DIM_X, grid.x),
                (ctx::GRID_DIM_Y, grid.y),
                (ctx::GRID_DIM_Z, grid.z),
                (ctx::DYN_SHARED_BYTES, launch.dynamic_shared),
                (ctx::SHARED_BASE, s + sched::SIZE),
                (ctx::NEXT, next),
                (ctx::SCHEDULER, s),
            ] {
                mem.word(c + off as u32, v);
            }
        }
    }
}

/// The image's memory while it is built: zero everywhere nothing is written.
struct Memory {
    words: Vec<u32>,
}

impl Memory {
    fn new(bytes: usize) -> Memory {
        Memory {
            words: vec![0; bytes.div_ceil(4)],
        }
    }

    fn word(&mut self, addr: u32, v: u32) {
        if let Some(w) = self.words.get_mut((addr / 4) as usize) {
            *w = v;
        }
    }

    fn bytes(&mut self, addr: u32, bytes: &[u8]) {
        for (i, &b) in bytes.iter().enumerate() {
            let a = addr as usize + i;
            if let Some(w) = self.words.get_mut(a / 4) {
                let shift = 8 * (a % 4);
                *w = (*w & !(0xff << shift)) | (u32::from(b) << shift);
            }
        }
    }
}

#[cfg(test)]
mod tests;
