//! The functional dac-gpu machine: global memory as named buffers with bounds checks,
//! the launch of a grid of blocks, faults, and [`run_functional`], which runs every
//! block to completion without timing.
//!
//! Blocks run one after the other in linear block order (x fastest), and the warps of
//! a block run round robin, each until it reaches a barrier or finishes, so a run is
//! deterministic. Block-level parallelism on the host is deliberately not used: a
//! kernel's blocks may race on global memory (plain stores or atomics), and running
//! them in a fixed order is what makes results reproducible.

use super::exec::{step, Code, CtaInfo, Env, Flow, StepBuffers, WarpState, WARP};
use super::isa::{Guard, KernelKind, Program};
use super::stats::{StatValue, Stats};
use crate::record::{Recorder, TraceStep};
use std::fmt;

/// First address handed out to a buffer: below 4 GiB so that 32-bit address registers
/// (zero-extended) can reach buffers too.
const GLOBAL_BASE: u64 = 0x1000_0000;
/// Buffers start at this alignment and are separated by at least this gap, so an
/// access just past one buffer faults instead of reading the next.
const BUFFER_ALIGN: u64 = 256;

/// One named device buffer.
#[derive(Clone, Debug)]
struct Buffer {
    base: u64,
    name: String,
    data: Vec<u8>,
}

/// Device memory: the launch's buffers at fixed addresses; any address outside them
/// is out of bounds.
#[derive(Clone, Debug, Default)]
pub struct GlobalMemory {
    buffers: Vec<Buffer>,
    /// Index of the buffer the last access hit (accesses of a warp cluster).
    last: usize,
    /// While a range of blocks runs on a copy in parallel: the bytes it read and wrote.
    log: Option<Box<AccessLog>>,
}

/// Per buffer, one bit per byte read (when `track_reads`) and per byte written.
#[derive(Clone, Debug, Default)]
struct AccessLog {
    track_reads: bool,
    reads: Vec<Vec<u64>>,
    writes: Vec<Vec<u64>>,
}

/// Sets bits `from .. from + len`, a word at a time.
fn mark(bits: &mut [u64], from: usize, len: usize) {
    let (mut i, end) = (from, from + len);
    while i < end {
        let (w, b) = (i / 64, i % 64);
        let n = (64 - b).min(end - i);
        let m = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << b
        };
        if let Some(x) = bits.get_mut(w) {
            *x |= m;
        }
        i += n;
    }
}

impl GlobalMemory {
    pub fn new() -> GlobalMemory {
        GlobalMemory::default()
    }

    /// Adds a buffer holding `bytes`; returns its device address.
    pub fn add_buffer(&mut self, bytes: Vec<u8>, name: &str) -> u64 {
        let base = match self.buffers.last() {
            None => GLOBAL_BASE,
            Some(b) => {
                (b.base + b.data.len() as u64 + BUFFER_ALIGN).div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN
            }
        };
        self.buffers.push(Buffer {
            base,
            name: name.to_string(),
            data: bytes,
        });
        base
    }

    /// Adds a buffer of `len` zero bytes.
    pub fn add_zeroed(&mut self, len: usize, name: &str) -> u64 {
        self.add_buffer(vec![0; len], name)
    }

    fn find(&self, addr: u64) -> Option<usize> {
        if let Some(b) = self.buffers.get(self.last) {
            if addr >= b.base && addr < b.base + b.data.len() as u64 {
                return Some(self.last);
            }
        }
        let i = self
            .buffers
            .partition_point(|b| b.base <= addr)
            .checked_sub(1)?;
        let b = &self.buffers[i];
        (addr < b.base + b.data.len() as u64).then_some(i)
    }

    /// The contents of the buffer that starts at `addr`.
    pub fn buffer(&self, addr: u64) -> Option<&[u8]> {
        self.buffers
            .iter()
            .find(|b| b.base == addr)
            .map(|b| &b.data[..])
    }

    pub fn buffer_mut(&mut self, addr: u64) -> Option<&mut [u8]> {
        self.buffers
            .iter_mut()
            .find(|b| b.base == addr)
            .map(|b| &mut b.data[..])
    }

    /// The name of the buffer containing `addr`.
    pub fn name_at(&self, addr: u64) -> Option<&str> {
        self.find(addr).map(|i| &self.buffers[i].name[..])
    }

    /// `n` bytes at `addr`, when they lie within one buffer.
    pub fn slice_mut(&mut self, addr: u64, n: usize) -> Option<&mut [u8]> {
        let i = self.find(addr)?;
        self.last = i;
        let b = &mut self.buffers[i];
        let off = (addr - b.base) as usize;
        b.data.get_mut(off..off.checked_add(n)?)
    }

    /// [`Self::slice_mut`] for an access that reads (`read`) the bytes, noted in the
    /// access log when one is kept. Writes are noted exactly with [`Self::note_write`].
    #[inline]
    pub(crate) fn access(&mut self, addr: u64, n: usize, read: bool) -> Option<&mut [u8]> {
        if read && self.log.as_ref().is_some_and(|l| l.track_reads) {
            let i = self.find(addr)?;
            let off = (addr - self.buffers[i].base) as usize;
            if let Some(log) = self.log.as_mut() {
                mark(&mut log.reads[i], off, n);
            }
        }
        self.slice_mut(addr, n)
    }

    /// True while an access log is kept.
    #[inline]
    pub(crate) fn logging(&self) -> bool {
        self.log.is_some()
    }

    /// Notes that `n` bytes at `addr` were written (when a log is kept).
    pub(crate) fn note_write(&mut self, addr: u64, n: usize) {
        let Some(i) = self.find(addr) else {
            return;
        };
        let off = (addr - self.buffers[i].base) as usize;
        if let Some(log) = self.log.as_mut() {
            mark(&mut log.writes[i], off, n);
        }
    }

    /// Starts logging the bytes written (and read, when `reads`).
    fn start_log(&mut self, reads: bool) {
        let bits = |b: &Buffer| vec![0u64; b.data.len().div_ceil(64)];
        self.log = Some(Box::new(AccessLog {
            track_reads: reads,
            reads: self
                .buffers
                .iter()
                .map(|b| if reads { bits(b) } else { Vec::new() })
                .collect(),
            writes: self.buffers.iter().map(bits).collect(),
        }));
    }
}

/// A kernel launch: the kernel's name, the grid and block extents and the parameter
/// block (bytes laid out as [`super::Kernel::params`] says; see `Kernel::add_param`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub kernel: String,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub params: Vec<u8>,
}

/// Stops a run that does not end: `max_warp_insts` warp instructions in all, or (timing
/// model only) `max_cycles` cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_warp_insts: u64,
    pub max_cycles: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_warp_insts: 10_000_000_000,
            max_cycles: 10_000_000_000,
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// An access outside its space (no buffer there, past `.shared`/`.local`/params).
    OutOfBounds,
    /// An access not aligned to its size.
    Misaligned,
    /// Every unfinished warp of a block waits at a barrier, not all at the same one.
    BarrierDeadlock,
    /// The instruction or cycle limit was reached, or calls nested too deep.
    Runaway,
    /// A `bra.uni` whose active lanes disagree.
    DivergentUniformBranch,
    /// A `.uni` (uniform datapath) instruction whose operands differ across its lanes.
    NonUniformOperand,
    /// An instruction this simulator does not run (the DAC queues, affine registers).
    Unsupported,
    /// An instruction that is not well formed (an undefined type combination, a
    /// register past the declared count); `asm::check` rejects these up front.
    Invalid,
    /// The launch itself is wrong: no such kernel, an empty grid, short parameters, a
    /// block the machine cannot hold.
    BadLaunch,
    /// DAC: a `deq` on an empty queue, a `deq` of the wrong kind or width, entries
    /// left over when a block ends (enq/deq counts differ), or an affine stream that
    /// is not affine (see `sim::gpu::affine`).
    DacQueue,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::OutOfBounds => "out-of-bounds access",
            FaultKind::Misaligned => "misaligned access",
            FaultKind::BarrierDeadlock => "barrier deadlock",
            FaultKind::Runaway => "runaway",
            FaultKind::DivergentUniformBranch => "divergent uniform branch",
            FaultKind::NonUniformOperand => "non-uniform operand of a uniform instruction",
            FaultKind::Unsupported => "unsupported instruction",
            FaultKind::Invalid => "invalid instruction",
            FaultKind::BadLaunch => "bad launch",
            FaultKind::DacQueue => "DAC queue fault",
        })
    }
}

/// A fault with where it happened. `kernel` names the kernel or `.func` whose
/// instruction `pc` (an index into its `insts`) faulted; the compiler maps that to a
/// source line with its own line table. `lane` and `address` are given when one lane's
/// access faulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuFault {
    pub kind: FaultKind,
    pub kernel: String,
    pub pc: usize,
    pub cta: (u32, u32, u32),
    pub warp: u32,
    pub lane: Option<u32>,
    pub address: Option<u64>,
    pub message: String,
}

impl GpuFault {
    pub(crate) fn launch(kernel: &str, message: String) -> GpuFault {
        GpuFault {
            kind: FaultKind::BadLaunch,
            kernel: kernel.to_string(),
            pc: 0,
            cta: (0, 0, 0),
            warp: 0,
            lane: None,
            address: None,
            message,
        }
    }
}

impl fmt::Display for GpuFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (x, y, z) = self.cta;
        write!(
            f,
            "{} in `{}` at pc {}, block ({x},{y},{z}), warp {}",
            self.kind, self.kernel, self.pc, self.warp
        )?;
        if let Some(l) = self.lane {
            write!(f, ", lane {l}")?;
        }
        if let Some(a) = self.address {
            write!(f, ", address {a:#x}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for GpuFault {}

/// The result of a functional run.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionalReport {
    /// Warp instructions issued.
    pub warp_insts: u64,
    /// Sum over warp instructions of their active lanes.
    pub thread_insts: u64,
    pub blocks: u64,
    /// Every statistic as (name, value), for JSON.
    pub stats: Vec<(String, StatValue)>,
}

/// A checked launch: the kernel index, per-kernel control-flow facts and geometry.
pub(crate) struct Prepared {
    pub entry: u32,
    pub codes: Vec<Code>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub threads_per_block: u32,
    pub warps_per_block: u32,
    pub num_ctas: u64,
    /// DAC: what the entry's affine stream enqueues (see [`super::affine`]).
    pub dac: Option<std::sync::Arc<super::affine::AffineTrace>>,
}

/// The most threads a block may have, whatever the machine configuration says.
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// Checks a launch against the program.
pub(crate) fn prepare(program: &Program, launch: &Launch) -> Result<Prepared, GpuFault> {
    let name = &launch.kernel;
    let bad = |m: String| Err(GpuFault::launch(name, m));
    let Some(entry) = program
        .kernels
        .iter()
        .position(|k| k.name == *name && k.kind == KernelKind::Entry)
    else {
        return bad(format!("no kernel `{name}` (.entry) in the program"));
    };
    let k = &program.kernels[entry];
    let grid = [launch.grid.0, launch.grid.1, launch.grid.2];
    let block = [launch.block.0, launch.block.1, launch.block.2];
    if grid.contains(&0) || block.contains(&0) {
        return bad("grid and block extents must be at least 1".into());
    }
    let threads = u64::from(block[0]) * u64::from(block[1]) * u64::from(block[2]);
    if threads > u64::from(MAX_BLOCK_THREADS) {
        return bad(format!(
            "{threads} threads per block (at most {MAX_BLOCK_THREADS})"
        ));
    }
    if (launch.params.len() as u64) < u64::from(k.param_bytes()) {
        return bad(format!(
            "the parameter block has {} bytes, `{name}` needs {}",
            launch.params.len(),
            k.param_bytes()
        ));
    }
    // Before any warp state is allocated: a hand-written kernel may name any index.
    for k in &program.kernels {
        k.check_register_files()
            .map_err(|m| GpuFault::launch(name, m))?;
    }
    let threads = threads as u32;
    Ok(Prepared {
        entry: entry as u32,
        codes: program.kernels.iter().map(Code::new).collect(),
        grid,
        block,
        threads_per_block: threads,
        warps_per_block: threads.div_ceil(WARP as u32),
        num_ctas: u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]),
        dac: None,
    })
}

impl Prepared {
    /// The block index of linear block `i` (x fastest).
    pub fn ctaid(&self, i: u64) -> [u32; 3] {
        let gx = u64::from(self.grid[0]);
        let gy = u64::from(self.grid[1]);
        [
            (i % gx) as u32,
            ((i / gx) % gy) as u32,
            (i / (gx * gy)) as u32,
        ]
    }

    /// A fresh block `i` of the launch and its warps.
    pub fn new_cta(&self, program: &Program, i: u64) -> (CtaInfo, Vec<WarpState>) {
        let k = &program.kernels[self.entry as usize];
        let cta = CtaInfo {
            ctaid: self.ctaid(i),
            ntid: self.block,
            nctaid: self.grid,
            shared: vec![0; k.shared_bytes as usize],
        };
        let mut warps: Vec<WarpState> = (0..self.warps_per_block)
            .map(|w| WarpState::new(k, self.entry, w, self.block))
            .collect();
        if let Some(t) = &self.dac {
            super::affine::attach(&mut warps, t, cta.ctaid);
        }
        (cta, warps)
    }
}

/// The fault of a block whose unfinished warps all wait at barriers, not the same.
pub(crate) fn deadlock(
    program: &Program,
    cta: &CtaInfo,
    warp: &WarpState,
    ids: (u32, u32),
) -> GpuFault {
    let (code, pc) = warp.next_pc().unwrap_or((0, 1));
    GpuFault {
        kind: FaultKind::BarrierDeadlock,
        kernel: program.kernels[code as usize].name.clone(),
        pc: pc.saturating_sub(1) as usize,
        cta: (cta.ctaid[0], cta.ctaid[1], cta.ctaid[2]),
        warp: warp.warp_id,
        lane: None,
        address: None,
        message: format!(
            "every unfinished warp waits at a barrier, but at different ones (bar.sync {} and bar.sync {})",
            ids.0, ids.1
        ),
    }
}

pub(crate) fn runaway(
    program: &Program,
    cta: &CtaInfo,
    warp: &WarpState,
    what: String,
) -> GpuFault {
    let (code, pc) = warp.next_pc().unwrap_or((0, 0));
    GpuFault {
        kind: FaultKind::Runaway,
        kernel: program.kernels[code as usize].name.clone(),
        pc: pc as usize,
        cta: (cta.ctaid[0], cta.ctaid[1], cta.ctaid[2]),
        warp: warp.warp_id,
        lane: None,
        address: None,
        message: what,
    }
}

/// Runs the launch functionally. Global memory holds the results afterwards.
///
/// The result is always that of running every block in linear order, each warp until
/// it waits at a barrier or finishes. On a host with several cores the blocks are
/// split into contiguous ranges run at the same time: the first range on `mem`
/// itself, each later one on its own copy of global memory that logs the bytes it
/// reads and writes. The ranges are then merged in order: a range's writes are
/// copied into `mem` (a later range's writes win, as in order) unless it read a byte
/// that an earlier range wrote, faulted or ran past the instruction limit; from that
/// range on the blocks are simply run again in order on `mem`, which holds exactly
/// the in-order result of the blocks before. So results never depend on the host's
/// thread scheduling, and kernels whose blocks communicate (atomics on shared
/// counters, a block reading another's output) just lose the parallel speed-up.
pub fn run_functional(
    program: &Program,
    launch: &Launch,
    mem: &mut GlobalMemory,
    limits: Limits,
) -> Result<FunctionalReport, GpuFault> {
    run_functional_on(program, launch, mem, limits, host_threads())
}

/// [`run_functional`] that also records into `recorder` when given
/// ([`crate::record`]): every warp instruction per (kernel, pc), and the path of warp
/// [`crate::record::Trace::unit`] (block by block in linear order, then warp by
/// warp). A recorded run's blocks run strictly in order on one host thread.
pub fn run_functional_recorded(
    program: &Program,
    launch: &Launch,
    mem: &mut GlobalMemory,
    limits: Limits,
    recorder: Option<&mut Recorder>,
) -> Result<FunctionalReport, GpuFault> {
    run_functional_with(program, launch, mem, limits, host_threads(), recorder)
}

/// [`run_functional`] on `threads` host threads (1: strictly in order).
pub(crate) fn run_functional_on(
    program: &Program,
    launch: &Launch,
    mem: &mut GlobalMemory,
    limits: Limits,
    threads: u64,
) -> Result<FunctionalReport, GpuFault> {
    run_functional_with(program, launch, mem, limits, threads, None)
}

fn run_functional_with(
    program: &Program,
    launch: &Launch,
    mem: &mut GlobalMemory,
    limits: Limits,
    threads: u64,
    recorder: Option<&mut Recorder>,
) -> Result<FunctionalReport, GpuFault> {
    let mut prep = prepare(program, launch)?;
    prep.dac = super::affine::trace_for(program, prep.entry, launch, limits.max_warp_insts, false)?;
    let all = 0..prep.num_ctas;
    let (warp_insts, thread_insts) = match recorder {
        Some(r) => run_blocks(program, launch, &prep, mem, all, limits, (0, 0), Some(r))?,
        None if threads >= 2 && prep.num_ctas >= 4 * threads => {
            run_parallel(program, launch, &prep, mem, limits, threads)?
        }
        None => run_blocks(program, launch, &prep, mem, all, limits, (0, 0), None)?,
    };
    let stats = Stats {
        warp_insts,
        thread_insts,
        blocks: prep.num_ctas,
        ..Stats::default()
    };
    Ok(FunctionalReport {
        warp_insts,
        thread_insts,
        blocks: prep.num_ctas,
        stats: stats.functional_pairs(),
    })
}

/// Host threads for functional runs: `SPMDC_SIM_THREADS` when set (1 turns the
/// parallel split off), else the available cores, at most 8.
fn host_threads() -> u64 {
    let env = std::env::var("SPMDC_SIM_THREADS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    env.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u64))
        .clamp(1, 8)
}

/// Runs `threads` contiguous block ranges at once (the first on `mem`, the others on
/// logged copies), then merges them in order; see [`run_functional`].
fn run_parallel(
    program: &Program,
    launch: &Launch,
    prep: &Prepared,
    mem: &mut GlobalMemory,
    limits: Limits,
    threads: u64,
) -> Result<(u64, u64), GpuFault> {
    let n = prep.num_ctas;
    let range = |c: u64| c * n / threads..(c + 1) * n / threads;
    let mut copies: Vec<GlobalMemory> = (1..threads)
        .map(|_| {
            let mut m = GlobalMemory {
                buffers: mem.buffers.clone(),
                last: 0,
                log: None,
            };
            m.start_log(true);
            m
        })
        .collect();
    mem.start_log(false);
    let (first, rest) = std::thread::scope(|s| {
        let handles: Vec<_> = copies
            .iter_mut()
            .enumerate()
            .map(|(c, m)| {
                let r = range(c as u64 + 1);
                s.spawn(move || run_blocks(program, launch, prep, m, r, limits, (0, 0), None))
            })
            .collect();
        let first = run_blocks(program, launch, prep, mem, range(0), limits, (0, 0), None);
        let rest: Vec<_> = handles.into_iter().map(|h| h.join().ok()).collect();
        (first, rest)
    });
    let mut written = mem.log.take().map(|l| l.writes).unwrap_or_default();
    // The first range ran in order on `mem`: its fault is the in-order run's.
    let mut counts = first?;
    for (c, (copy, res)) in copies.iter().zip(rest).enumerate() {
        let ok = match res {
            Some(Ok((w, t))) if counts.0 + w <= limits.max_warp_insts => {
                merge_range(mem, copy, &mut written).then_some((w, t))
            }
            _ => None,
        };
        match ok {
            Some((w, t)) => counts = (counts.0 + w, counts.1 + t),
            None => {
                let rest = range(c as u64 + 1).start..n;
                return run_blocks(program, launch, prep, mem, rest, limits, counts, None);
            }
        }
    }
    Ok(counts)
}

/// Merges a later range's copy into `mem` (which holds the in-order result of the
/// ranges before, whose written bytes `written` marks): copies its written bytes and
/// marks them. False, changing nothing, when the range read a byte written before.
fn merge_range(mem: &mut GlobalMemory, copy: &GlobalMemory, written: &mut [Vec<u64>]) -> bool {
    let Some(log) = copy.log.as_ref() else {
        return false;
    };
    let conflict = log
        .reads
        .iter()
        .zip(written.iter())
        .any(|(r, w)| r.iter().zip(w).any(|(r, w)| r & w != 0));
    if conflict {
        return false;
    }
    for (b, w) in written.iter_mut().enumerate() {
        let (dst, src) = (&mut mem.buffers[b].data, &copy.buffers[b].data);
        for (k, &bits) in log.writes[b].iter().enumerate() {
            w[k] |= bits;
            let at = k * 64;
            if bits == u64::MAX {
                dst[at..at + 64].copy_from_slice(&src[at..at + 64]);
                continue;
            }
            let mut m = bits;
            while m != 0 {
                let i = at + m.trailing_zeros() as usize;
                m &= m - 1;
                dst[i] = src[i];
            }
        }
    }
    true
}

/// Runs blocks `range` in linear order on `mem`; returns the (warp, thread)
/// instructions counted on from `start` (the counts of the blocks before, so the
/// instruction limit applies to the whole launch). Records each instruction into
/// `recorder` when there is one.
#[allow(clippy::too_many_arguments)]
fn run_blocks(
    program: &Program,
    launch: &Launch,
    prep: &Prepared,
    mem: &mut GlobalMemory,
    range: std::ops::Range<u64>,
    limits: Limits,
    start: (u64, u64),
    mut recorder: Option<&mut Recorder>,
) -> Result<(u64, u64), GpuFault> {
    let mut env = Env {
        program,
        codes: &prep.codes,
        entry: prep.entry,
        params: &launch.params,
        global: mem,
    };
    let mut trace = StepBuffers::functional();
    let (mut warp_insts, mut thread_insts) = start;
    let mut blocks: Option<(CtaInfo, Vec<WarpState>)> = None;
    let mut waiting: Vec<Option<u32>> = Vec::new();
    for i in range {
        // One block's state is allocated once and reset for the next block (same
        // kernel, same geometry): no per-block allocation.
        let (cta, warps) = match blocks {
            None => blocks.insert(prep.new_cta(program, i)),
            Some(ref mut b) => {
                b.0.ctaid = prep.ctaid(i);
                super::exec::zero(&mut b.0.shared);
                b.1.iter_mut().for_each(|w| w.reset(prep.entry));
                if let Some(t) = &prep.dac {
                    super::affine::attach(&mut b.1, t, b.0.ctaid);
                }
                b
            }
        };
        waiting.clear();
        waiting.resize(warps.len(), None);
        loop {
            for (w, warp) in warps.iter_mut().enumerate() {
                if waiting[w].is_some() {
                    continue;
                }
                while !warp.done() {
                    if warp_insts >= limits.max_warp_insts {
                        return Err(runaway(
                            program,
                            cta,
                            warp,
                            format!("more than {} warp instructions", limits.max_warp_insts),
                        ));
                    }
                    warp_insts += 1;
                    thread_insts += u64::from(warp.active_mask().count_ones());
                    if let Some(r) = recorder.as_deref_mut() {
                        let unit = i * u64::from(prep.warps_per_block) + w as u64;
                        record_warp_inst(r, program, unit, warp);
                    }
                    warp.clock += 1; // `%clock64`: this warp's instructions, this one included
                    match step(&mut env, warp, cta, &mut trace)? {
                        Flow::Continue => {}
                        Flow::Barrier(id) => {
                            waiting[w] = Some(id);
                            break;
                        }
                        Flow::Done => break,
                    }
                }
            }
            if !release_barrier(program, cta, warps, &mut waiting)? {
                break;
            }
        }
        if prep.dac.is_some() {
            for w in warps.iter() {
                super::affine::check_drained(w, &launch.kernel, cta.ctaid)?;
            }
        }
    }
    Ok((warp_insts, thread_insts))
}

/// The lanes whose guard holds (all without a guard). Generated code keeps masks in
/// guards rather than in the active mask, so lane utilization counts these.
pub(crate) fn guard_lanes(state: &WarpState, guard: Option<Guard>) -> u32 {
    match guard {
        None => u32::MAX,
        Some(g) => {
            let p = state.preds.get(g.pred as usize).copied().unwrap_or(0);
            if g.negate {
                !p
            } else {
                p
            }
        }
    }
}

/// Records the instruction warp `unit` of the launch is about to execute, with the
/// lanes that execute it: active, and for a guarded instruction with the guard true
/// (the code keeps most masks in guards, so the active mask alone would show every
/// lane on).
#[inline(never)]
pub(crate) fn record_warp_inst(r: &mut Recorder, program: &Program, unit: u64, warp: &WarpState) {
    let Some((code, pc)) = warp.next_pc() else {
        return;
    };
    let mask = warp.active_mask();
    let guard = program
        .kernels
        .get(code as usize)
        .and_then(|k| k.insts.get(pc as usize))
        .and_then(|i| i.guard);
    let executing = mask & guard_lanes(warp, guard);
    if let Some(p) = r.profile.as_mut() {
        p.executed(code, pc, u32::MAX, WARP as u32, executing.count_ones());
    }
    if let Some(t) = r.trace.as_mut().filter(|t| t.unit == unit) {
        t.push(TraceStep {
            code,
            index: pc,
            mask: Some(u64::from(executing)),
        });
    }
}

/// After every warp of a block ran as far as it can: opens the barrier when every
/// unfinished warp waits at the same one (`Ok(true)`: run again), reports the block
/// finished (`Ok(false)`), or a deadlock.
pub(crate) fn release_barrier(
    program: &Program,
    cta: &CtaInfo,
    warps: &[WarpState],
    waiting: &mut [Option<u32>],
) -> Result<bool, GpuFault> {
    let mut id: Option<(u32, usize)> = None;
    for (w, warp) in warps.iter().enumerate() {
        if warp.done() {
            continue;
        }
        match (waiting[w], id) {
            (None, _) => return Ok(true),
            (Some(b), None) => id = Some((b, w)),
            (Some(b), Some((a, _))) if a != b => {
                return Err(deadlock(program, cta, warp, (a, b)));
            }
            _ => {}
        }
    }
    if id.is_none() {
        return Ok(false);
    }
    waiting.iter_mut().for_each(|x| *x = None);
    Ok(true)
}

/// Packs a parameter block for `kernel`: `values[i]` (the bit pattern, e.g.
/// `f32::to_bits`, a buffer address) goes at parameter `i`'s offset with its size.
pub fn pack_params(kernel: &super::Kernel, values: &[u64]) -> Vec<u8> {
    let mut out = vec![0u8; kernel.param_bytes() as usize];
    for (p, &v) in kernel.params.iter().zip(values) {
        let n = p.ty.bytes() as usize;
        let o = p.offset as usize;
        out[o..o + n].copy_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::parse;

    /// Block b adds its ctaid to what block b-1 stored (a chain through global
    /// memory: every later range reads what an earlier one wrote), plus an atomic
    /// counter and an independent store per thread.
    const CHAIN: &str = r"
.entry chain(.param .u64 buf, .param .u64 cnt, .param .u64 own)
{
    .reg 12;
    .pred 2;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r2, %r0, %r1, %tid.x;
    ld.param.u64 %rd4, [own];
    cvt.u64.u32 %rd6, %r2;
    shl.b64 %rd6, %rd6, 2;
    add.u64 %rd4, %rd4, %rd6;
    mul.u32 %r3, %r2, 3;
    st.global.u32 [%rd4], %r3;
    ld.param.u64 %rd4, [cnt];
    atom.global.add.u32 %r3, [%rd4], 1;
    setp.ne.u32 %p0, %tid.x, 0;
    @%p0 bra DONE;
    setp.eq.u32 %p1, %r0, 0;
    mov.u32 %r8, 0;
    ld.param.u64 %rd4, [buf];
    cvt.u64.u32 %rd6, %r0;
    shl.b64 %rd6, %rd6, 2;
    add.u64 %rd4, %rd4, %rd6;
    @!%p1 ld.global.u32 %r8, [%rd4-4];
    add.u32 %r8, %r8, %r0;
    st.global.u32 [%rd4], %r8;
DONE:
    exit;
}
";

    /// Runs 40 blocks of 64 threads of kernel `name` on `threads` host threads with
    /// the buffers (buf, cnt, own); returns their contents and the report.
    fn run(threads: u64, text: &str, name: &str) -> (Vec<Vec<u8>>, FunctionalReport) {
        let p = parse(text).expect("assembles");
        let k = p.kernel(name).expect("kernel");
        let blocks = 40u32;
        let mut mem = GlobalMemory::new();
        let bufs = [
            mem.add_zeroed(blocks as usize * 4, "buf"),
            mem.add_zeroed(4, "cnt"),
            mem.add_zeroed(blocks as usize * 64 * 4, "own"),
        ];
        let l = Launch {
            kernel: name.into(),
            grid: (blocks, 1, 1),
            block: (64, 1, 1),
            params: pack_params(k, &bufs),
        };
        let r = run_functional_on(&p, &l, &mut mem, Limits::default(), threads).expect("runs");
        let get = |a| mem.buffer(a).expect("buffer").to_vec();
        (bufs.map(get).to_vec(), r)
    }

    /// Every host thread count gives the in-order result, whether the ranges
    /// communicate (the chain and the atomic counter force the in-order rerun) or not
    /// (their writes are merged).
    #[test]
    fn parallel_runs_equal_the_in_order_run() {
        let indep = CHAIN.replace("chain(", "indep(").replace(
            "    ld.param.u64 %rd4, [cnt];\n    atom.global.add.u32 %r3, [%rd4], 1;\n",
            "",
        );
        let indep = indep.replace(
            "setp.ne.u32 %p0, %tid.x, 0;",
            "setp.ne.u32 %p0, %tid.x, 99;",
        );
        for (text, name) in [(CHAIN, "chain"), (&indep[..], "indep")] {
            let want = run(1, text, name);
            for threads in [2, 3, 8] {
                assert_eq!(
                    run(threads, text, name),
                    want,
                    "{name} on {threads} threads"
                );
            }
            let word = |b: &[u8], i: usize| {
                u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"))
            };
            assert_eq!(word(&want.0[2], 2559), 2559 * 3, "{name}: own stores");
            if name == "chain" {
                assert_eq!(
                    word(&want.0[0], 39),
                    (0..40).sum::<u32>(),
                    "the chain sums every ctaid"
                );
                assert_eq!(word(&want.0[1], 0), 40 * 64, "atomic count");
            } else {
                assert_eq!(
                    want.0[..2],
                    [vec![0; 160], vec![0; 4]],
                    "indep writes only own"
                );
            }
        }
    }

    /// A fault in a later range is the in-order run's fault, with the same memory.
    #[test]
    fn parallel_fault_equals_in_order_fault() {
        let p = parse(CHAIN).expect("assembles");
        let k = p.kernel("chain").expect("kernel");
        let run = |threads| {
            let mut mem = GlobalMemory::new();
            let buf = mem.add_zeroed(40 * 4, "buf");
            let cnt = mem.add_zeroed(4, "cnt");
            // `own` holds 30 blocks' stores: block 30 faults.
            let own = mem.add_zeroed(30 * 64 * 4, "own");
            let l = Launch {
                kernel: "chain".into(),
                grid: (40, 1, 1),
                block: (64, 1, 1),
                params: pack_params(k, &[buf, cnt, own]),
            };
            let r = run_functional_on(&p, &l, &mut mem, Limits::default(), threads);
            (
                r,
                mem.buffer(buf).map(<[u8]>::to_vec),
                mem.buffer(own).map(<[u8]>::to_vec),
            )
        };
        let want = run(1);
        assert_eq!(want.0.as_ref().map_err(|f| f.cta), Err((30, 0, 0)));
        for threads in [2, 4] {
            assert_eq!(run(threads), want, "{threads} threads");
        }
    }
}
