//! A cycle model of Nyuzi (notes §8) driving the functional [`Machine`].
//!
//! What it computes: how many cycles a program takes on a Nyuzi-like processor, and
//! where the cycles went, per hardware thread. The functional machine executes each
//! instruction when the model *issues* it ([`Machine::step`]); the model only decides
//! when that may happen. Results are therefore exactly the functional ones (for
//! race-free programs), and the timing is a deterministic function of the program.
//!
//! The modelled machine, per core: single issue, in order per thread, one instruction
//! per cycle from the ready hardware threads chosen round-robin (barrel-style); a
//! per-thread scoreboard of result-ready cycles for s0–s31 and v0–v31 stalls an
//! instruction until its sources *and its destination* (no bypass, in-order writeback)
//! are ready; results take `int_latency` (3) cycles, `fp_latency` (7) for float ops,
//! int↔float conversions, float compares and integer multiplies (Nyuzi's FP pipe), and
//! `mem_latency` (4) for loads that hit the L1 (getcr goes through the memory pipe
//! too). Memory goes through [`crate::mem`]: per core an L1I and a write-through,
//! no-write-allocate L1D, a shared write-back L2 and DRAM.
//!
//! Events and their costs (all configurable in [`TimingConfig`]):
//! * **D-cache miss** (or a hit on a line whose fill is still in flight): the load is
//!   rolled back and the thread suspended until the fill arrives; the load then
//!   re-issues (taking an issue slot) and completes like a hit.
//! * **Stores** are write-through: each goes to the L2; a thread has one pending store
//!   (Nyuzi's `l1_store_queue`), so its next store (or `membar`) waits until the
//!   previous one is accepted by the L2. `store_sync`'s result is ready then too.
//! * **Gather/scatter** takes one cycle per active lane (at least one) on the core's
//!   memory pipeline; the issue slot is held for those cycles (the RTL re-issues the
//!   instruction once per lane), so no thread of that core issues meanwhile. Each lane
//!   is one cache access, in its own cycle; a gather's result is ready when the slowest
//!   lane's data is (lanes that miss suspend the thread, without a separate re-issue).
//! * **Taken branches** roll back the thread's younger instructions: its next
//!   instruction issues `branch_penalty` cycles later than it otherwise could (default
//!   4: the branch resolves in int_execute, two stages after thread select, then
//!   fetch restarts through ifetch tag, data and decode). Not-taken branches are free
//!   (Nyuzi predicts not-taken).
//! * **I-cache misses** delay the thread's next instruction until the line arrives;
//!   hits are hidden by the fetch pipeline.
//! * **MMIO** (addresses from 0xffff0000) bypasses the caches and takes
//!   `io_latency` cycles.
//!
//! Not modelled: TLBs, the per-thread instruction FIFO depth, L1 coherence traffic
//! (Nyuzi's L2 updates other L1s on a store; no data is modelled, so other cores simply
//! keep their lines), interrupts, the issue slot a scatter/gather lane re-issue or a
//! replay would give up to other threads in the RTL. Approximations: the L2 port and
//! DRAM queues keep one next-free time each, so a gather lane's request (made for its
//! own later cycle) can delay another core's earlier request by up to the gather's
//! length; the cores of one cycle access memory in core order.
//!
//! Defaults ([`TimingConfig::default`]): Nyuzi's config.svh caches (L1I, L1D 16 KiB
//! 4-way, L2 128 KiB 8-way, 64-byte lines); an L2 hit 5 cycles after it is accepted
//! and one L2 request accepted per cycle (notes §8: "an L2 hit response takes 5
//! cycles"; 32 contending threads see ~29 cycles per store); DRAM latency 6 cycles and
//! 2.4 bytes/cycle, chosen so that the two memory-bandwidth measurements of notes §8
//! (50 MHz SDRAM) come out: a single thread streaming block loads (load, pointer
//! increment, count, branch) gets one line per ~48 cycles (5 + 6 + 64/2.4 ≈ 38 cycles
//! of miss, then the re-issue, the loop and the branch rollback), and several streams
//! saturate DRAM at one line per ~27 cycles (a test checks both). At most 16 L2 misses
//! are outstanding (the L2's pending-miss CAM).
//!
//! Stall accounting: every cycle of every thread is either an issue or exactly one
//! [`StallCause`]; when several hold, the first in this order is charged: halted,
//! D-cache, branch rollback, I-cache, memory pipe, store queue, dependency, and
//! otherwise "not selected" (ready, but another thread had the issue slot). So per
//! thread `issued + Σ stalls = cycles`.

use std::fmt;

use super::energy::{self, InstCost};
use super::exec::{self, Effects};
use super::isa::{decode, AluOp, BranchOp, CacheOp, IFmt, Inst, MemOp, Reg};
use super::machine::{Fault, Machine, MemAccess};
use crate::energy::{Energy, Events};
use crate::mem::{
    AccessKind, CacheConfig, CacheStats, ConfigError, DramConfig, DramStats, Level, MemConfig,
    MemorySystem,
};

/// Device addresses (notes §6): uncached.
const MMIO_BASE: u32 = 0xffff_0000;

/// A register in the scoreboard's numbering: 0–31 are s0–s31, 32–63 are v0–v31.
pub type RegId = u8;

/// The scoreboard number of scalar register `r`.
pub const fn sreg(r: Reg) -> RegId {
    r & 31
}

/// The scoreboard number of vector register `r`.
pub const fn vreg(r: Reg) -> RegId {
    32 + (r & 31)
}

/// The registers an instruction reads and writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegSet {
    srcs: [RegId; 4],
    n_srcs: u8,
    dest: Option<RegId>,
}

impl RegSet {
    fn src(&mut self, r: RegId) {
        self.srcs[self.n_srcs as usize] = r;
        self.n_srcs += 1;
    }

    /// The registers read (a masked form reads its mask and its old destination).
    pub fn srcs(&self) -> &[RegId] {
        &self.srcs[..self.n_srcs as usize]
    }

    /// The register written, if any.
    pub fn dest(&self) -> Option<RegId> {
        self.dest
    }
}

/// The register read and write sets of an instruction, for the scoreboard (notes §3).
pub fn regs(inst: &Inst) -> RegSet {
    let mut s = RegSet::default();
    match *inst {
        Inst::Reg {
            fmt,
            op,
            dest,
            src1,
            src2,
            mask,
        } => {
            if op == AluOp::Break {
                return s;
            }
            let v = fmt.vector();
            if !op.is_unary() {
                s.src(if v { vreg(src1) } else { sreg(src1) });
            }
            s.src(if fmt.vector_src2() {
                vreg(src2)
            } else {
                sreg(src2)
            });
            alu_dest(&mut s, op, v, fmt.masked().then_some(mask), dest);
        }
        Inst::Imm {
            fmt,
            op,
            dest,
            src1,
            ..
        } => {
            if op == AluOp::Syscall {
                return s;
            }
            let v = fmt == IFmt::V;
            if !op.is_unary() {
                s.src(if v { vreg(src1) } else { sreg(src1) });
            }
            alu_dest(&mut s, op, v, None, dest);
        }
        Inst::ImmMasked {
            op,
            dest,
            src1,
            mask,
            ..
        } => {
            if !op.is_unary() {
                s.src(vreg(src1));
            }
            alu_dest(&mut s, op, true, Some(mask), dest);
        }
        Inst::MoveHi { dest, .. } => s.dest = Some(sreg(dest)),
        Inst::Mem {
            op,
            load,
            srcdest,
            ptr,
            mask,
            ..
        } => mem_regs(&mut s, op, load, srcdest, ptr, mask),
        Inst::Cache { op, ptr, phys, .. } => match op {
            CacheOp::DtlbInsert | CacheOp::ItlbInsert => {
                s.src(sreg(ptr));
                s.src(sreg(phys));
            }
            CacheOp::DInvalidate | CacheOp::DFlush | CacheOp::TlbInval | CacheOp::IInvalidate => {
                s.src(sreg(ptr))
            }
            CacheOp::Membar | CacheOp::TlbInvalAll => {}
        },
        Inst::Branch { op, reg, .. } => match op {
            BranchOp::Reg | BranchOp::Bz | BranchOp::Bnz => s.src(sreg(reg)),
            BranchOp::Jump | BranchOp::Eret => {}
            BranchOp::Call => s.dest = Some(sreg(31)),
            BranchOp::CallReg => {
                s.src(sreg(reg));
                s.dest = Some(sreg(31));
            }
        },
    }
    s
}

/// The destination of an arithmetic op: compares and `getlane` write a scalar even in
/// vector forms; a masked vector destination is merged, so its old value is read.
fn alu_dest(s: &mut RegSet, op: AluOp, vector: bool, mask: Option<Reg>, dest: Reg) {
    if let Some(m) = mask {
        s.src(sreg(m));
    }
    if vector && !op.scalar_dest() {
        if mask.is_some() {
            s.src(vreg(dest));
        }
        s.dest = Some(vreg(dest));
    } else {
        s.dest = Some(sreg(dest));
    }
}

fn mem_regs(s: &mut RegSet, op: MemOp, load: bool, srcdest: Reg, ptr: Reg, mask: Reg) {
    if op == MemOp::ControlReg {
        // `ptr` is the control-register index, not a register.
        if load {
            s.dest = Some(sreg(srcdest));
        } else {
            s.src(sreg(srcdest));
        }
        return;
    }
    s.src(if op.vector_ptr() {
        vreg(ptr)
    } else {
        sreg(ptr)
    });
    if op.masked() {
        s.src(sreg(mask));
    }
    let data = if op.vector_data() {
        vreg(srcdest)
    } else {
        sreg(srcdest)
    };
    if load {
        if op.masked() {
            s.src(data);
        }
        s.dest = Some(data);
    } else {
        s.src(data);
        if op == MemOp::Sync {
            // store_sync writes its success flag back to srcdest.
            s.dest = Some(data);
        }
    }
}

/// Whether an op runs in Nyuzi's 5-stage floating-point pipe (integer multiplies do
/// too); everything else in the single integer stage.
fn fp_pipe(op: AluOp) -> bool {
    use AluOp::*;
    matches!(
        op,
        AddF | SubF
            | MulF
            | Itof
            | Ftoi
            | CmpGtF
            | CmpGeF
            | CmpLtF
            | CmpLeF
            | CmpEqF
            | CmpNeF
            | MullI
            | MulhU
            | MulhI
    )
}

/// Timing parameters. See the module documentation for the defaults' sources.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingConfig {
    pub l1i: CacheConfig,
    pub l1d: CacheConfig,
    pub l2: CacheConfig,
    /// Cycles from the L2 accepting a request to a hit's response.
    pub l2_hit_latency: u32,
    /// Cycles between two requests the L2 accepts (1: one per cycle).
    pub l2_port_cycles: u32,
    /// Cycles from an L2 miss's DRAM request to the start of its data transfer.
    pub dram_latency: u32,
    pub dram_bytes_per_cycle: f64,
    /// Result latency of integer ops (and branches' link register).
    pub int_latency: u32,
    /// Result latency of float ops and integer multiplies.
    pub fp_latency: u32,
    /// Result latency of a load that hits the L1D (and of getcr).
    pub mem_latency: u32,
    /// Extra cycles before a thread issues again after a taken branch.
    pub branch_penalty: u32,
    /// Latency of an uncached device (MMIO) access.
    pub io_latency: u32,
    /// The run fails with [`TimingError::CycleLimit`] past this many cycles.
    pub max_cycles: u64,
}

impl Default for TimingConfig {
    fn default() -> TimingConfig {
        TimingConfig {
            l1i: CacheConfig::NYUZI_L1,
            l1d: CacheConfig::NYUZI_L1,
            l2: CacheConfig::NYUZI_L2,
            l2_hit_latency: 5,
            l2_port_cycles: 1,
            dram_latency: 6,
            dram_bytes_per_cycle: 2.4,
            int_latency: 3,
            fp_latency: 7,
            mem_latency: 4,
            branch_penalty: 4,
            io_latency: 5,
            max_cycles: 1_000_000_000,
        }
    }
}

impl TimingConfig {
    /// The memory system of a machine with `cores` cores: L1 `2c` is core c's L1I and
    /// `2c + 1` its L1D.
    pub fn mem_config(&self, cores: usize) -> MemConfig {
        let mut l1 = Vec::with_capacity(2 * cores);
        for _ in 0..cores {
            l1.push(self.l1i);
            l1.push(self.l1d);
        }
        MemConfig {
            l1,
            l2: self.l2,
            l2_hit_latency: self.l2_hit_latency,
            l2_banks: 1,
            l2_port_cycles: self.l2_port_cycles,
            // A thread has at most one miss outstanding (it is suspended), so the
            // L1 needs no bound; the L2's pending-miss CAM has 16 entries.
            l1_mshrs: 0,
            l2_mshrs: 16,
            dram: DramConfig {
                latency: self.dram_latency,
                bytes_per_cycle: self.dram_bytes_per_cycle,
                channels: 1,
            },
        }
    }

    /// The scoreboard latency of an instruction's result.
    pub fn result_latency(&self, inst: &Inst) -> u32 {
        match *inst {
            Inst::Reg { op, .. } | Inst::Imm { op, .. } | Inst::ImmMasked { op, .. } => {
                if fp_pipe(op) {
                    self.fp_latency
                } else {
                    self.int_latency
                }
            }
            Inst::Mem { .. } => self.mem_latency,
            _ => self.int_latency,
        }
    }
}

/// Why a thread did not issue in a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StallCause {
    /// Not running (halted, or not yet started).
    Halted,
    /// Waiting for a D-cache fill.
    DCache,
    /// Rolled back by a taken branch.
    Branch,
    /// Waiting for an I-cache fill.
    ICache,
    /// A gather/scatter holds the core's memory pipeline.
    MemPipe,
    /// A store (or membar) waits for the thread's previous store.
    StoreQueue,
    /// A source or destination register is not ready (scoreboard).
    Dependency,
    /// Ready, but another thread of the core issued.
    NotSelected,
}

impl StallCause {
    pub const ALL: [StallCause; 8] = [
        StallCause::Halted,
        StallCause::DCache,
        StallCause::Branch,
        StallCause::ICache,
        StallCause::MemPipe,
        StallCause::StoreQueue,
        StallCause::Dependency,
        StallCause::NotSelected,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StallCause::Halted => "halted",
            StallCause::DCache => "dcache",
            StallCause::Branch => "branch",
            StallCause::ICache => "icache",
            StallCause::MemPipe => "mem_pipe",
            StallCause::StoreQueue => "store_queue",
            StallCause::Dependency => "dependency",
            StallCause::NotSelected => "not_selected",
        }
    }
}

const N_CAUSES: usize = StallCause::ALL.len();

/// One hardware thread's cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadReport {
    /// Issue slots used, including re-issues of loads after a miss.
    pub issued: u64,
    /// Instructions executed.
    pub retired: u64,
    /// Stall cycles, indexed like [`StallCause::ALL`].
    pub stalls: [u64; N_CAUSES],
}

impl ThreadReport {
    pub fn stall(&self, c: StallCause) -> u64 {
        self.stalls[c as usize]
    }

    /// Issue cycles plus stall cycles: the run's cycle count.
    pub fn cycles(&self) -> u64 {
        self.issued + self.stalls.iter().sum::<u64>()
    }
}

/// The result of [`run_timing`].
#[derive(Clone, Debug, PartialEq)]
pub struct TimingReport {
    pub cycles: u64,
    /// Instructions executed (a gather/scatter counts once).
    pub instructions: u64,
    /// Issue slots used (instructions plus load re-issues after misses).
    pub issued: u64,
    pub ipc: f64,
    /// L1 counters summed over cores.
    pub l1i: CacheStats,
    pub l1d: CacheStats,
    pub l2: CacheStats,
    /// Cycles requests waited for the L2 to accept them.
    pub l2_queue_cycles: u64,
    /// Cycles L2 misses waited for a free pending-miss entry.
    pub l2_mshr_wait_cycles: u64,
    pub dram: DramStats,
    /// Per hardware thread (core-major, as thread ids are).
    pub threads: Vec<ThreadReport>,
    /// Per core: its L1I and L1D counters (the totals above are their sums).
    pub cores: Vec<CoreCaches>,
    /// The events the energy model prices, and their energy
    /// ([`super::energy`]).
    pub events: Events,
    pub energy: Energy,
}

/// One core's L1 caches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreCaches {
    pub l1i: CacheStats,
    pub l1d: CacheStats,
}

impl TimingReport {
    /// Stall cycles of one cause summed over threads.
    pub fn stall(&self, c: StallCause) -> u64 {
        self.threads.iter().map(|t| t.stall(c)).sum()
    }

    /// Every counter as `(name, value)`, for JSON output: totals, cache and DRAM
    /// counters (`l1d.read_misses`, `dram.bytes`, ...), stalls summed over threads
    /// (`stall.dependency`, ...), then per thread (`thread3.issued`,
    /// `thread3.stall.dcache`, ...).
    pub fn stat_pairs(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = vec![
            ("cycles".into(), self.cycles),
            ("instructions".into(), self.instructions),
            ("issued".into(), self.issued),
        ];
        for (name, s) in [("l1i", &self.l1i), ("l1d", &self.l1d), ("l2", &self.l2)] {
            for (k, x) in [
                ("read_hits", s.read_hits),
                ("read_misses", s.read_misses),
                ("write_hits", s.write_hits),
                ("write_misses", s.write_misses),
                ("pending_hits", s.pending_hits),
                ("evictions", s.evictions),
                ("writebacks", s.writebacks),
            ] {
                v.push((format!("{name}.{k}"), x));
            }
        }
        v.push(("l2.queue_cycles".into(), self.l2_queue_cycles));
        v.push(("l2.mshr_wait_cycles".into(), self.l2_mshr_wait_cycles));
        let d = &self.dram;
        for (k, x) in [
            ("reads", d.reads),
            ("writes", d.writes),
            ("bytes", d.bytes),
            ("busy_cycles", d.busy_cycles),
            ("queue_cycles", d.queue_cycles),
        ] {
            v.push((format!("dram.{k}"), x));
        }
        for c in StallCause::ALL {
            v.push((format!("stall.{}", c.name()), self.stall(c)));
        }
        v.extend(self.energy_event_pairs());
        for (i, t) in self.threads.iter().enumerate() {
            v.push((format!("thread{i}.issued"), t.issued));
            v.push((format!("thread{i}.retired"), t.retired));
            for c in StallCause::ALL {
                v.push((format!("thread{i}.stall.{}", c.name()), t.stall(c)));
            }
        }
        v
    }
}

impl TimingReport {
    /// The energy model's own event counts (`rf_reads`, `alu_fp_mul`,
    /// `dram.read_bursts`, ...): those the cache counters and `issued` do not
    /// already give.
    fn energy_event_pairs(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        self.events
            .pairs()
            .into_iter()
            .filter(|(n, _)| {
                energy::applies(n)
                    && *n != "fetched_instructions"
                    && !n.starts_with("l1_")
                    && !n.starts_with("l2_")
            })
            .map(|(n, x)| (n.replacen("dram_", "dram.", 1), x))
    }

    /// The energy estimate by component, in nanojoules (`energy_rf_nj`, ...,
    /// `energy_dynamic_nj`).
    pub fn energy_pairs(&self) -> Vec<(&'static str, f64)> {
        self.energy
            .pairs()
            .into_iter()
            .filter(|(n, _)| energy::applies(n))
            .collect()
    }
}

/// Why a timing run stopped early.
#[derive(Clone, Debug, PartialEq)]
pub enum TimingError {
    /// The program faulted (including the machine's instruction limit).
    Fault(Fault),
    /// More than [`TimingConfig::max_cycles`] cycles.
    CycleLimit {
        limit: u64,
        instructions: u64,
    },
    Config(ConfigError),
}

impl fmt::Display for TimingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimingError::Fault(e) => e.fmt(f),
            TimingError::CycleLimit {
                limit,
                instructions,
            } => write!(
                f,
                "cycle limit of {limit} cycles reached (max_cycles) after {instructions} instructions"
            ),
            TimingError::Config(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TimingError {}

impl From<Fault> for TimingError {
    fn from(f: Fault) -> TimingError {
        TimingError::Fault(f)
    }
}

/// One issue, for [`run_timing_traced`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Issue {
    pub cycle: u64,
    pub thread: usize,
    /// The instruction's pc.
    pub pc: u32,
    /// A re-issue of a load after its miss (not a new instruction).
    pub replay: bool,
}

/// Runs the machine's enabled threads in the timing model until every thread has
/// halted. Errors: a fault, or [`TimingError::CycleLimit`].
pub fn run_timing(m: &mut Machine, cfg: &TimingConfig) -> Result<TimingReport, TimingError> {
    Sim::new(m, cfg, None)?.run()
}

/// [`run_timing`], also recording every issue in `trace` (for tests and debugging).
pub fn run_timing_traced(
    m: &mut Machine,
    cfg: &TimingConfig,
    trace: &mut Vec<Issue>,
) -> Result<TimingReport, TimingError> {
    Sim::new(m, cfg, Some(trace))?.run()
}

/// What the scheduler needs to know of an instruction before issuing it.
#[derive(Clone, Copy, Debug, Default)]
struct Info {
    regs: RegSet,
    /// Result latency of its destination.
    latency: u32,
    /// A store or membar: waits for the thread's pending store.
    waits_store: bool,
    /// Its energy events.
    cost: InstCost,
}

/// Entries of the direct-mapped pc -> [`Info`] cache (a power of two).
const INFO_CACHE: usize = 4096;

/// Per-thread timing state. Each `*_until` is the first cycle at which that
/// constraint on the thread's next issue no longer holds.
#[derive(Clone, Debug)]
struct Th {
    core: usize,
    running: bool,
    /// Cycles before this have been charged to `rep`.
    acc: u64,
    dcache_until: u64,
    branch_until: u64,
    icache_until: u64,
    pipe_until: u64,
    /// When the pending store is accepted.
    store_free: u64,
    /// `store_free` if the next instruction is a store or membar, else 0.
    store_until: u64,
    dep_until: u64,
    /// Result-ready cycle per register ([`RegId`]).
    sb: [u64; 64],
    /// The next instruction.
    next: Info,
    /// A load that missed waits to re-issue: its pc and destination.
    replay: Option<(u32, Option<RegId>)>,
    rep: ThreadReport,
}

#[derive(Clone, Copy, Debug, Default)]
struct Core {
    /// The issue slot is held (by a gather/scatter) until this cycle.
    busy_until: u64,
    /// The core-local index of the thread that issued last.
    last: usize,
}

struct Sim<'a> {
    m: &'a mut Machine,
    cfg: &'a TimingConfig,
    mem: MemorySystem,
    th: Vec<Th>,
    cores: Vec<Core>,
    tpc: usize,
    trace: Option<&'a mut Vec<Issue>>,
    /// Decoded instructions by pc: `(pc, word, info)`, checked against the word in
    /// memory so that self-modifying code is seen.
    info: Vec<(u32, u32, Info)>,
    /// Threads running.
    running: usize,
    /// A thread started during the current cycle.
    woke: bool,
    /// Per thread, the earliest cycle it can issue (the maximum of its constraints),
    /// `u64::MAX` when it is not running. Kept apart from [`Th`] so that the
    /// scheduler's scan touches one small array.
    ready: Vec<u64>,
    /// The memory access and branch of the instruction being issued (reused).
    eff: Effects,
    /// [`Sim::sync_running`] ran since the scheduler last cleared this.
    synced: bool,
    /// The energy events of the instructions executed so far.
    events: Events,
}

impl<'a> Sim<'a> {
    fn new(
        m: &'a mut Machine,
        cfg: &'a TimingConfig,
        trace: Option<&'a mut Vec<Issue>>,
    ) -> Result<Sim<'a>, TimingError> {
        let cores = m.config().cores as usize;
        let tpc = m.config().threads_per_core as usize;
        if cores * tpc != m.hw_threads() {
            // The machine keeps at most 64 threads (its enable mask is a u64).
            return Err(TimingError::Config(ConfigError(
                "the timing model supports at most 64 hardware threads",
            )));
        }
        let mem = MemorySystem::new(cfg.mem_config(cores)).map_err(TimingError::Config)?;
        let m_threads = m.hw_threads();
        let th = (0..m.hw_threads())
            .map(|t| Th {
                core: t / tpc.max(1),
                running: false,
                acc: 0,
                dcache_until: 0,
                branch_until: 0,
                icache_until: 0,
                pipe_until: 0,
                store_free: 0,
                store_until: 0,
                dep_until: 0,
                sb: [0; 64],
                next: Info::default(),
                replay: None,
                rep: ThreadReport::default(),
            })
            .collect();
        let mut sim = Sim {
            m,
            cfg,
            mem,
            th,
            cores: vec![Core::default(); cores],
            tpc,
            trace,
            info: vec![(u32::MAX, 0, Info::default()); INFO_CACHE],
            running: 0,
            woke: false,
            ready: vec![u64::MAX; m_threads],
            eff: Effects::default(),
            synced: false,
            events: Events::default(),
        };
        sim.sync_running(0);
        Ok(sim)
    }

    fn run(mut self) -> Result<TimingReport, TimingError> {
        let mut now = 0u64;
        let mut next_report = 0u64;
        while self.running > 0 {
            if now >= next_report {
                crate::progress::report_cycles(now);
                next_report = now + (1 << 16);
            }
            if now >= self.cfg.max_cycles {
                return Err(TimingError::CycleLimit {
                    limit: self.cfg.max_cycles,
                    instructions: self.th.iter().map(|t| t.rep.retired).sum(),
                });
            }
            self.woke = false;
            let mut next = u64::MAX;
            for c in 0..self.cores.len() {
                if self.cores[c].busy_until > now {
                    next = next.min(self.cores[c].busy_until);
                    continue;
                }
                match self.pick(c, now) {
                    Ok((t, others)) => {
                        self.synced = false;
                        self.issue(t, now)?;
                        // Threads that were ready stay ready unless the running set
                        // changed: the core can issue again next cycle, or when its
                        // issue slot frees.
                        let wake = if others && !self.synced {
                            self.cores[c].busy_until.max(now + 1)
                        } else {
                            self.core_wake(c, now)
                        };
                        next = next.min(wake);
                    }
                    Err(wake) => next = next.min(wake),
                }
            }
            // Skip to the first cycle at which some thread can issue; a thread started
            // in this cycle (on a core already scanned) may issue in the next.
            now = if self.woke || next == u64::MAX {
                now + 1
            } else {
                next.max(now + 1)
            };
        }
        Ok(self.report(now))
    }

    /// The first cycle a thread of core `c` can issue (after its issue slot frees), or
    /// some cycle no later than `now + 1` when that is at most `now + 1` (the loop
    /// goes on at `now + 1` either way).
    fn core_wake(&self, c: usize, now: u64) -> u64 {
        let base = c * self.tpc;
        let busy = self.cores[c].busy_until;
        let (first, soon) = scan(&self.ready[base..base + self.tpc], now + 1);
        if soon != 0 {
            busy.max(now + 1)
        } else {
            first.max(busy)
        }
    }

    /// The next ready thread of core `c` after the last one that issued, and whether
    /// another of its threads is ready too; or else the earliest cycle one of its
    /// running threads can issue.
    fn pick(&self, c: usize, now: u64) -> Result<(usize, bool), u64> {
        let base = c * self.tpc;
        let (first, mask) = scan(&self.ready[base..base + self.tpc], now);
        if mask == 0 {
            return Err(first);
        }
        // Round robin: the first ready thread after the last one that issued.
        let last = self.cores[c].last + 1;
        let start = if last == self.tpc { 0 } else { last };
        let after = mask >> start;
        let i = if after != 0 {
            start + after.trailing_zeros() as usize
        } else {
            mask.trailing_zeros() as usize
        };
        Ok((base + i, mask & (mask - 1) != 0))
    }

    /// Charges thread `t`'s cycles up to `end` (exclusive) to its current constraints.
    #[inline]
    fn account(&mut self, t: usize, end: u64) {
        if end > self.th[t].acc {
            if self.m.is_recording() {
                self.charge_recorded(t, end);
            } else {
                self.charge(t, end);
            }
        }
    }

    /// [`Sim::charge`], also charging the cycles to the instruction the thread waits
    /// to issue in the machine's profile.
    #[inline(never)]
    fn charge_recorded(&mut self, t: usize, end: u64) {
        let before = self.th[t].rep.stalls;
        self.charge(t, end);
        let after = self.th[t].rep.stalls;
        let mut charged = [0u64; N_CAUSES];
        for (c, (a, b)) in charged.iter_mut().zip(after.iter().zip(before)) {
            *c = a - b;
        }
        self.m.record_stalls(t, &charged);
    }

    /// [`Sim::account`] when there are cycles to charge.
    #[inline(never)]
    fn charge(&mut self, t: usize, end: u64) {
        let busy = self.cores[self.th[t].core].busy_until;
        let th = &mut self.th[t];
        let s = &mut th.rep.stalls;
        if !th.running {
            s[StallCause::Halted as usize] += end - th.acc;
            th.acc = end;
            return;
        }
        let mut cur = th.acc;
        if th.replay.is_some() {
            // Only the fill (and a gather holding the core) holds back a load
            // waiting to re-issue.
            let fill = th.dcache_until.clamp(cur, end);
            let pipe = busy.clamp(fill, end);
            s[StallCause::DCache as usize] += fill - cur;
            s[StallCause::MemPipe as usize] += pipe - fill;
            s[StallCause::NotSelected as usize] += end - pipe;
            th.acc = end;
            return;
        }
        for (cause, until) in [
            (StallCause::DCache, th.dcache_until),
            (StallCause::Branch, th.branch_until),
            (StallCause::ICache, th.icache_until),
            (StallCause::MemPipe, th.pipe_until.max(busy)),
            (StallCause::StoreQueue, th.store_until),
            (StallCause::Dependency, th.dep_until),
        ] {
            // Branch-free: a constraint already past (or the same) charges nothing.
            let stop = until.min(end).max(cur);
            s[cause as usize] += stop - cur;
            cur = stop;
        }
        s[StallCause::NotSelected as usize] += end - cur;
        th.acc = end;
    }

    /// Updates every thread's running state from the machine's enable mask at the end
    /// of cycle `now`; a thread that starts fetches its first instruction in the next.
    fn sync_running(&mut self, now: u64) {
        self.synced = true;
        let mask = self.m.enable_mask();
        for t in 0..self.th.len() {
            let on = t < 64 && mask >> t & 1 == 1;
            if on == self.th[t].running {
                continue;
            }
            // Charge the cycles so far under the old state.
            let upto = if now == 0 && on { 0 } else { now + 1 };
            self.account(t, upto);
            self.th[t].running = on;
            if on {
                self.running += 1;
                self.woke = true;
            } else {
                self.running -= 1;
                self.ready[t] = u64::MAX;
            }
            if on {
                self.prepare(t, upto, true);
            }
        }
    }

    /// Makes thread `t` ready to issue its next instruction from cycle `at` on: fetches
    /// it through the L1I (when `fetch`) and reads its registers' readiness.
    #[inline(always)]
    fn prepare(&mut self, t: usize, at: u64, fetch: bool) {
        if fetch {
            let pc = self.m.pc(t);
            let core = self.th[t].core;
            // The fetch starts at once (after a taken branch, when it resolves; the
            // rollback penalty is charged separately). Requests are kept in cycle
            // order, which the L2 port and DRAM queues rely on.
            let o = self
                .mem
                .access(2 * core, u64::from(pc), 4, AccessKind::Read, at);
            // A hit is hidden by the fetch pipeline; a miss waits for the line.
            self.th[t].icache_until = if o.level == Level::L1 && o.ready <= at {
                0
            } else {
                o.ready
            };
            let next = self.info_at(pc);
            let th = &mut self.th[t];
            th.next = next;
            th.store_until = if next.waits_store { th.store_free } else { 0 };
        }
        let th = &mut self.th[t];
        if th.replay.is_some() {
            // The missed load re-issues first; its operands were read already.
            th.dep_until = 0;
            self.ready[t] = at.max(th.dcache_until);
            return;
        }
        let mut dep = 0;
        for &r in th.next.regs.srcs() {
            dep = dep.max(th.sb[r as usize]);
        }
        if let Some(d) = th.next.regs.dest {
            dep = dep.max(th.sb[d as usize]);
        }
        th.dep_until = dep;
        self.ready[t] = at
            .max(th.dcache_until)
            .max(th.branch_until)
            .max(th.icache_until)
            .max(th.pipe_until)
            .max(th.store_until)
            .max(dep);
    }

    /// The scheduling facts of the instruction at `pc` (empty if it cannot be
    /// fetched: the fault surfaces when the instruction is stepped).
    #[inline(always)]
    fn info_at(&mut self, pc: u32) -> Info {
        let Ok(bytes) = self.m.read_bytes(pc, 4) else {
            return Info::default();
        };
        let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let slot = &self.info[(pc >> 2) as usize & (INFO_CACHE - 1)];
        if slot.0 == pc && slot.1 == word {
            return slot.2;
        }
        self.decode_info(pc, word)
    }

    /// Decodes `word` (at `pc`) for [`Sim::info_at`] and caches the result.
    #[cold]
    fn decode_info(&mut self, pc: u32, word: u32) -> Info {
        let info = match decode(word) {
            Ok(i) => Info {
                regs: regs(&i),
                latency: self.cfg.result_latency(&i),
                waits_store: waits_for_store(&i),
                cost: InstCost::of(&i),
            },
            Err(_) => Info::default(),
        };
        self.info[(pc >> 2) as usize & (INFO_CACHE - 1)] = (pc, word, info);
        info
    }

    fn issue(&mut self, t: usize, now: u64) -> Result<(), TimingError> {
        self.account(t, now);
        let core = self.th[t].core;
        self.cores[core].last = t - core * self.tpc;
        {
            let th = &mut self.th[t];
            th.acc = now + 1;
            th.rep.issued += 1;
        }
        if let Some((pc, dest)) = self.th[t].replay.take() {
            // The missed load re-issues and now hits.
            if let Some(d) = dest {
                self.th[t].sb[d as usize] = now + u64::from(self.cfg.mem_latency);
            }
            self.trace_issue(now, t, pc, true);
            self.prepare(t, now + 1, false);
            return Ok(());
        }
        let mask = self.m.enable_mask();
        // Only the fields an instruction produces are written: reset the rest.
        self.eff.mem = None;
        self.eff.branch_taken = false;
        let (pc, u) = self.m.step_uop(t, &mut self.eff)?;
        self.trace_issue(now, t, pc, false);
        self.th[t].rep.retired += 1;
        // `next` was prepared from the word at this pc, which `step` just executed.
        let info = self.th[t].next;
        info.cost.count(&mut self.events);
        if let Some(d) = info.regs.dest {
            self.th[t].sb[d as usize] = now + u64::from(info.latency);
        }
        if let Some(acc) = self.eff.mem.take() {
            let sync = exec::uop_class(u) == exec::class::STORE_SYNC;
            self.memory(t, now, pc, sync, &acc, info.regs.dest);
        }
        if self.eff.branch_taken {
            self.th[t].branch_until = now + 1 + u64::from(self.cfg.branch_penalty);
        }
        if self.m.enable_mask() != mask {
            self.sync_running(now);
        }
        if self.th[t].running {
            self.prepare(t, now + 1, true);
        }
        Ok(())
    }

    fn trace_issue(&mut self, cycle: u64, thread: usize, pc: u32, replay: bool) {
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.push(Issue {
                cycle,
                thread,
                pc,
                replay,
            });
        }
    }

    /// The timing of a memory instruction's access, issued at `now`.
    fn memory(
        &mut self,
        t: usize,
        now: u64,
        pc: u32,
        sync: bool,
        acc: &MemAccess,
        dest: Option<RegId>,
    ) {
        let l1d = 2 * self.th[t].core + 1;
        match *acc {
            MemAccess::Scalar { addr, bytes, store } => {
                let width = u32::from(bytes);
                self.single(t, now, (addr, width), store, dest, (pc, sync))
            }
            MemAccess::Block { addr, store } => {
                self.single(t, now, (addr, 64), store, dest, (pc, sync))
            }
            MemAccess::Lanes {
                ref addrs,
                mask,
                store,
            } => {
                let lanes = mask.count_ones().max(1);
                let done = now + u64::from(lanes);
                // The issue slot and memory pipe are held: charge the core's other
                // threads under the old state first.
                let core = self.th[t].core;
                for u in core * self.tpc..(core + 1) * self.tpc {
                    if u != t {
                        self.account(u, now + 1);
                    }
                }
                self.cores[core].busy_until = done;
                self.th[t].pipe_until = done;
                let (data, fill) = self.lanes(l1d, now, addrs, mask, store);
                if store {
                    let th = &mut self.th[t];
                    th.store_free = th.store_free.max(data);
                } else {
                    let th = &mut self.th[t];
                    th.dcache_until = th.dcache_until.max(fill);
                    if let Some(d) = dest {
                        th.sb[d as usize] = th.sb[d as usize].max(data);
                    }
                }
            }
        }
    }

    /// The cache accesses of a gather (`store` false) or scatter issued at `now`: one
    /// per active lane, in lane order, lane k of them in cycle `now + k`. Returns when
    /// the last datum is ready (a gather's result, with the hit latency) or the last
    /// store accepted, and the latest fill a gather lane waits for (0 if none).
    fn lanes(
        &mut self,
        l1d: usize,
        now: u64,
        addrs: &[u32; 16],
        mask: u16,
        store: bool,
    ) -> (u64, u64) {
        let lat = if store {
            0
        } else {
            u64::from(self.cfg.mem_latency)
        };
        let kind = if store {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        let shift = self.cfg.l1d.line_bytes.trailing_zeros();
        let (mut data, mut fill) = (0u64, 0u64);
        let mut at = now;
        let mut left = u32::from(mask);
        while left != 0 {
            let a = addrs[left.trailing_zeros() as usize];
            left &= left - 1;
            if a >= MMIO_BASE {
                data = data.max(at + u64::from(self.cfg.io_latency) + lat);
                at += 1;
                continue;
            }
            let o = self.mem.access(l1d, u64::from(a), 4, kind, at);
            if !store && o.ready > at {
                fill = fill.max(o.ready);
            }
            data = data.max(o.ready.max(at) + lat);
            at += 1;
            if store {
                continue;
            }
            // The next active lanes in the same line are hits on the line just used
            // (now the most recently used one): account for them in one step.
            let line = a >> shift;
            let mut n = 0u64;
            while left != 0 && addrs[left.trailing_zeros() as usize] >> shift == line {
                left &= left - 1;
                n += 1;
            }
            if n == 0 {
                continue;
            }
            match self.mem.read_mru_repeat(l1d, u64::from(a), n, at) {
                Some(ready) => {
                    if ready > at {
                        fill = fill.max(ready);
                    }
                    data = data.max(ready.max(at + n - 1) + lat);
                    at += n;
                }
                None => {
                    // Not expected (the line was just accessed), but exact anyway.
                    for _ in 0..n {
                        let o = self.mem.access(l1d, u64::from(a), 4, kind, at);
                        if o.ready > at {
                            fill = fill.max(o.ready);
                        }
                        data = data.max(o.ready.max(at) + lat);
                        at += 1;
                    }
                }
            }
        }
        (data, fill)
    }

    /// A scalar or block access of `bytes` at `addr` (one L1 line for aligned
    /// accesses) by the instruction at `pc` (`sync`: a `store_sync`).
    fn single(
        &mut self,
        t: usize,
        now: u64,
        (addr, bytes): (u32, u32),
        store: bool,
        dest: Option<RegId>,
        (pc, sync): (u32, bool),
    ) {
        let l1d = 2 * self.th[t].core + 1;
        let mem_lat = u64::from(self.cfg.mem_latency);
        let (ready, cached) = if addr >= MMIO_BASE {
            (now + u64::from(self.cfg.io_latency), false)
        } else {
            let kind = if store {
                AccessKind::Write
            } else {
                AccessKind::Read
            };
            let o = self.mem.access(l1d, u64::from(addr), bytes, kind, now);
            (o.ready, true)
        };
        let th = &mut self.th[t];
        if store {
            th.store_free = ready;
            // store_sync's success flag arrives with the store's acknowledgement.
            if let (Some(d), true) = (dest, sync) {
                th.sb[d as usize] = ready.max(now + mem_lat);
            }
        } else if cached && ready > now {
            // Miss (or fill in flight): roll back, suspend until the fill, re-issue.
            th.dcache_until = ready;
            th.replay = Some((pc, dest));
            if let Some(d) = dest {
                th.sb[d as usize] = ready + mem_lat;
            }
        } else if let Some(d) = dest {
            th.sb[d as usize] = ready.max(now) + if cached { mem_lat } else { 0 };
        }
    }

    fn report(mut self, cycles: u64) -> TimingReport {
        for t in 0..self.th.len() {
            self.account(t, cycles);
        }
        let cores: Vec<CoreCaches> = (0..self.cores.len())
            .map(|c| CoreCaches {
                l1i: self.mem.l1_stats(2 * c).copied().unwrap_or_default(),
                l1d: self.mem.l1_stats(2 * c + 1).copied().unwrap_or_default(),
            })
            .collect();
        let mut l1i = CacheStats::default();
        let mut l1d = CacheStats::default();
        for c in &cores {
            l1i.add(&c.l1i);
            l1d.add(&c.l1d);
        }
        let threads: Vec<ThreadReport> = self.th.iter().map(|t| t.rep).collect();
        let instructions = threads.iter().map(|t| t.retired).sum();
        let issued = threads.iter().map(|t| t.issued).sum();
        let events = self.energy_events(issued, &l1d);
        let table = energy::table_for(&self.cfg.l1d, &self.cfg.l2);
        TimingReport {
            cycles,
            instructions,
            issued,
            ipc: if cycles == 0 {
                0.0
            } else {
                instructions as f64 / cycles as f64
            },
            l1i,
            l1d,
            l2: *self.mem.l2_stats(),
            l2_queue_cycles: self.mem.l2_queue_cycles(),
            l2_mshr_wait_cycles: self.mem.l2_mshr_wait_cycles(),
            dram: self.mem.dram_stats(),
            threads,
            cores,
            energy: Energy::of(&events, cycles, &table),
            events,
        }
    }

    /// The run's energy events: the instructions' counts, every issue slot's fetch,
    /// and the L1D, L2 and DRAM traffic.
    fn energy_events(&self, issued: u64, l1d: &CacheStats) -> Events {
        let mut e = self.events.clone();
        e.instructions = issued;
        e.add_l1(l1d);
        e.set_l2_and_dram(self.mem.l2_stats(), &self.mem.dram_stats());
        e
    }
}

/// The earliest of `ready` cycles, and a mask with bit i set when `ready[i] <= by`
/// (the first 64). Without a branch per thread (which thread is ready is
/// unpredictable); the mask's shift chain also keeps the loop scalar, since the
/// compiler would otherwise turn the minimum into a slow 64-bit SSE2 sequence.
#[inline(always)]
fn scan(ready: &[u64], by: u64) -> (u64, u64) {
    // Fixed sizes for the common shapes, so the loop unrolls.
    if let Ok(r) = <&[u64; 4]>::try_from(ready) {
        return scan_slice(r, by);
    }
    if let Ok(r) = <&[u64; 1]>::try_from(ready) {
        return scan_slice(r, by);
    }
    scan_slice(ready, by)
}

#[inline(always)]
fn scan_slice(ready: &[u64], by: u64) -> (u64, u64) {
    let mut first = u64::MAX;
    let mut mask = 0u64;
    for &r in ready.iter().rev() {
        first = first.min(r);
        mask = mask << 1 | u64::from(r <= by);
    }
    (first, mask)
}

/// Stores and `membar` wait for the thread's pending store.
fn waits_for_store(inst: &Inst) -> bool {
    match *inst {
        Inst::Mem { op, load, .. } => !load && op != MemOp::ControlReg,
        Inst::Cache { op, .. } => op == CacheOp::Membar,
        _ => false,
    }
}

#[cfg(test)]
#[path = "timing_tests.rs"]
mod tests;
